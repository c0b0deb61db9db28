//! Running one confined process: rlimits, namespaces and the pids cgroup applied between `fork`
//! and `exec`, its output captured up to a cap, a wall-clock deadline, and a cleanup that leaves
//! nothing behind.
//!
//! The child gets its own process group, an empty environment, a fresh working directory, and in
//! `pre_exec`: `PR_SET_PDEATHSIG` (it dies with us), the run's pids cgroup, a new network
//! namespace (plus a user namespace when we are not root), and the rlimits. Only async-signal-safe
//! calls happen there, on values prepared before `fork`. When the deadline passes, the output cap
//! is exceeded or the caller cancels, the whole group is sent SIGKILL; after any ending the group
//! and the cgroup are killed again (grandchildren outlive their parent) and every orphan that was
//! re-parented to us is reaped, so when [`run`] returns no process of the run exists.

use std::{
    ffi::CString,
    future::Future,
    io,
    os::unix::process::ExitStatusExt as _,
    path::Path,
    process::Stdio,
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::{
    io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _},
    process::Command,
    sync::Notify,
};

use super::cgroup::RunCgroup;

/// How the child is cut off from the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NetworkIsolation {
    /// A new network namespace: only a loopback device, and it is down (needs CAP_SYS_ADMIN).
    Namespace,
    /// A new user namespace first, which lets an unprivileged user make the network namespace.
    UserAndNetworkNamespace,
    /// The platform allowed neither: the child shares our network.
    None,
}

impl NetworkIsolation {
    fn unshare_flags(self) -> libc::c_int {
        match self {
            Self::Namespace => libc::CLONE_NEWNET,
            Self::UserAndNetworkNamespace => libc::CLONE_NEWUSER | libc::CLONE_NEWNET,
            Self::None => 0,
        }
    }
}

/// The resource limits of one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) wall_clock: Duration,
    /// RLIMIT_CPU soft limit (SIGXCPU); the hard limit, one second later, is SIGKILL.
    pub(crate) cpu_seconds: u64,
    /// RLIMIT_AS: address space, which caps what Python can allocate.
    pub(crate) address_space_bytes: u64,
    /// RLIMIT_FSIZE: the largest file it may write.
    pub(crate) file_size_bytes: u64,
    /// RLIMIT_NOFILE.
    pub(crate) open_files: u64,
    /// Bytes of stdout and of stderr kept; more stops the process.
    pub(crate) output_bytes: usize,
}

/// Why we stopped the process ourselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    Timeout,
    OutputLimit,
    Cancelled,
}

/// One output stream as captured.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Captured {
    pub(crate) bytes: Vec<u8>,
    /// More was written than kept.
    pub(crate) truncated: bool,
}

/// How a run ended.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) exit_code: Option<i32>,
    pub(crate) signal: Option<i32>,
    pub(crate) stopped_by: Option<StopReason>,
    pub(crate) stdout: Captured,
    pub(crate) stderr: Captured,
    /// From spawn to the child's exit.
    pub(crate) duration: Duration,
    /// The process group the run had (the child's pid), gone when `run` returns.
    pub(crate) process_group: i32,
}

/// What to run and where.
#[derive(Debug)]
pub(crate) struct Confined<'a> {
    pub(crate) program: &'a Path,
    pub(crate) args: &'a [&'a str],
    pub(crate) input: Vec<u8>,
    pub(crate) work_dir: &'a Path,
    pub(crate) limits: Limits,
    pub(crate) network: NetworkIsolation,
    pub(crate) cgroup: Option<&'a RunCgroup>,
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type Resource = libc::c_int;

fn set_limit(resource: Resource, soft: u64, hard: u64) -> io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: soft as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: setrlimit reads the struct we pass and nothing else; it is async-signal-safe.
    if unsafe { libc::setrlimit(resource, &limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Runs in the child between fork and exec: no allocation, no locks, only system calls.
fn confine_child(
    cgroup_procs: Option<&CString>,
    unshare_flags: libc::c_int,
    limits: Limits,
) -> io::Result<()> {
    // SAFETY (whole function): each call is a plain system call on values built before fork.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some(path) = cgroup_procs {
            // Join before exec, so nothing the snippet starts can begin outside the cgroup.
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let written = libc::write(fd, b"0".as_ptr().cast(), 1);
            let error = io::Error::last_os_error();
            libc::close(fd);
            if written != 1 {
                return Err(error);
            }
        }
        if unshare_flags != 0 && libc::unshare(unshare_flags) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    set_limit(libc::RLIMIT_CORE, 0, 0)?;
    set_limit(
        libc::RLIMIT_CPU,
        limits.cpu_seconds,
        limits.cpu_seconds.saturating_add(1),
    )?;
    set_limit(
        libc::RLIMIT_AS,
        limits.address_space_bytes,
        limits.address_space_bytes,
    )?;
    set_limit(
        libc::RLIMIT_FSIZE,
        limits.file_size_bytes,
        limits.file_size_bytes,
    )?;
    set_limit(libc::RLIMIT_NOFILE, limits.open_files, limits.open_files)?;
    // Zero new processes or threads for the user: binding for a non-root daemon (the kernel
    // counts per user and exempts root, for whom the pids cgroup is the limit instead).
    set_limit(libc::RLIMIT_NPROC, 0, 0)?;
    Ok(())
}

/// Spawns and supervises one confined process until it and everything it started are gone.
/// `cancelled` resolves when the caller gives up (the MCP request was cancelled).
pub(crate) async fn run(
    confined: Confined<'_>,
    cancelled: impl Future<Output = ()>,
) -> io::Result<Finished> {
    let mut command = Command::new(confined.program);
    command
        .args(confined.args)
        .env_clear()
        .current_dir(confined.work_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let cgroup_procs = confined.cgroup.map(|cgroup| cgroup.procs_path().clone());
    let unshare_flags = confined.network.unshare_flags();
    let limits = confined.limits;
    // SAFETY: the closure only makes async-signal-safe system calls (see `confine_child`).
    unsafe {
        command.pre_exec(move || confine_child(cgroup_procs.as_ref(), unshare_flags, limits));
    }
    let started = Instant::now();
    let mut child = command.spawn()?;
    let process_group = child.id().map_or(0, |id| id as i32);

    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = confined.input;
    let writer = tokio::spawn(async move {
        // A child that exits without reading makes this fail with EPIPE, which is fine.
        let _ = stdin.write_all(&input).await;
    });
    let overflow = Arc::new(Notify::new());
    let stdout_reader = tokio::spawn(capture(
        child.stdout.take().expect("stdout is piped"),
        limits.output_bytes,
        overflow.clone(),
    ));
    let stderr_reader = tokio::spawn(capture(
        child.stderr.take().expect("stderr is piped"),
        limits.output_bytes,
        overflow.clone(),
    ));

    let deadline = tokio::time::sleep(limits.wall_clock);
    tokio::pin!(deadline);
    tokio::pin!(cancelled);
    let (status, stopped_by) = tokio::select! {
        status = child.wait() => (Some(status?), None),
        () = &mut deadline => (None, Some(StopReason::Timeout)),
        () = overflow.notified() => (None, Some(StopReason::OutputLimit)),
        () = &mut cancelled => (None, Some(StopReason::Cancelled)),
    };
    if stopped_by.is_some() {
        kill_group(process_group);
    }
    let status = match status {
        Some(status) => status,
        None => child.wait().await?,
    };
    let duration = started.elapsed();

    // The child is gone; whatever it started is not necessarily.
    kill_group(process_group);
    let signalled = confined
        .cgroup
        .map(|cgroup| cgroup.kill_all(Duration::from_secs(2)))
        .unwrap_or_default();
    tokio::task::spawn_blocking(move || reap(process_group, &signalled))
        .await
        .map_err(io::Error::other)?;

    // Every writer is dead, so the pipes are at end of file; the bound only guards against a
    // process that escaped both the group and the cgroup keeping them open.
    let collect = async {
        let stdout = stdout_reader.await.unwrap_or_default();
        let stderr = stderr_reader.await.unwrap_or_default();
        (stdout, stderr)
    };
    let (stdout, stderr) = tokio::time::timeout(Duration::from_secs(2), collect)
        .await
        .unwrap_or_default();
    writer.abort();
    Ok(Finished {
        exit_code: status.code(),
        signal: status.signal(),
        stopped_by,
        stdout,
        stderr,
        duration,
        process_group,
    })
}

/// Reads a stream to its end, keeping the first `cap` bytes and signalling `overflow` once when
/// more arrives. It keeps draining after that so the writer never blocks before it is stopped.
async fn capture(
    mut stream: impl AsyncRead + Unpin,
    cap: usize,
    overflow: Arc<Notify>,
) -> Captured {
    let mut captured = Captured::default();
    let mut buffer = vec![0; 16 * 1024];
    loop {
        let read = match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return captured,
            Ok(read) => read,
        };
        let room = cap.saturating_sub(captured.bytes.len());
        captured.bytes.extend_from_slice(&buffer[..read.min(room)]);
        if read > room && !captured.truncated {
            captured.truncated = true;
            overflow.notify_one();
        }
    }
}

/// SIGKILL to a whole process group; a group that is already gone is fine.
pub(crate) fn kill_group(process_group: i32) {
    if process_group > 0 {
        // SAFETY: killpg has no memory effects.
        unsafe { libc::killpg(process_group, libc::SIGKILL) };
    }
}

/// Whether any process (zombies included) is still in the group.
pub(crate) fn group_exists(process_group: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    process_group > 0 && unsafe { libc::killpg(process_group, 0) } == 0
}

/// Waits for every killed process of the run to be gone. Orphans were re-parented to us (we are
/// a child subreaper), so we reap them; if we are not, init does, and we wait until it has.
fn reap(process_group: i32, signalled: &[i32]) {
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes only the status we pass.
        let reaped = unsafe { libc::waitpid(-process_group, &mut status, 0) };
        if reaped > 0
            || (reaped < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted)
        {
            continue;
        }
        break;
    }
    for &pid in signalled {
        // SAFETY: as above; a pid that is not our child is refused with ECHILD.
        unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    }
    let started = Instant::now();
    while group_exists(process_group) && started.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(5));
    }
}
