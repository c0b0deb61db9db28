//! Running one sandboxed interpreter: spawn it through `confine.rs`, learn from the report pipe
//! that it is running (or which setup step failed), feed its stdin, capture its output up to a
//! cap, enforce the wall-clock deadline, and clean up so that nothing is left behind.
//!
//! The process the daemon spawns is the sandbox's intermediate; it is the leader of a new
//! process group and mirrors the exit status of the sandbox process (pid 1 of the run's pid
//! namespace). When the deadline passes, the output cap is exceeded or the caller cancels, the
//! whole group is sent SIGKILL: the intermediate dies, the sandbox process gets its parent-death
//! signal, and the kernel then kills everything in the pid namespace, including processes that
//! left the group with `setsid`. After any ending the group and the cgroups are killed again and
//! every process of the run that was re-parented to us (we are a child subreaper) is reaped, so
//! when [`run`] returns no process of the run exists.

use std::{
    future::Future,
    io::{self, Read as _},
    os::{
        fd::{AsRawFd as _, FromRawFd as _, OwnedFd},
        unix::process::ExitStatusExt as _,
    },
    path::Path,
    process::Stdio,
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::{
    io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _},
    process::{Child, Command},
    sync::Notify,
};

use super::{
    cgroup::RunCgroups,
    confine::{self, Report, Stage},
    plan::{Limits, PlanError, SandboxPlan},
};

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
    /// The memory cgroup killed a process of the run.
    pub(crate) out_of_memory: bool,
    pub(crate) stdout: Captured,
    pub(crate) stderr: Captured,
    /// From spawn to the interpreter's exit.
    pub(crate) duration: Duration,
    /// The process group the run had (the intermediate's pid), gone when `run` returns.
    pub(crate) process_group: i32,
}

/// A setup step that failed in the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SetupFailure {
    pub(crate) stage: Stage,
    pub(crate) errno: i32,
    pub(crate) step: u32,
}

impl std::fmt::Display for SetupFailure {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{} failed: {}",
            self.stage.describe(),
            io::Error::from_raw_os_error(self.errno)
        )
    }
}

/// Why a run could not be supervised to its end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum RunError {
    #[error("cannot start the sandbox: {0}")]
    Io(#[from] io::Error),
    #[error("cannot prepare the sandbox: {0}")]
    Plan(#[from] PlanError),
    #[error("the sandbox could not be set up: {0}")]
    Setup(SetupFailure),
    #[error("the sandbox did not start within {0:?}")]
    SetupTimedOut(Duration),
}

/// What to run and where.
#[derive(Debug)]
pub(crate) struct Confined<'a> {
    pub(crate) plan: &'a SandboxPlan,
    /// The run's own host directory: the new root is mounted on it (inside the sandbox's
    /// mount namespace only), and the intermediate's working directory.
    pub(crate) run_directory: &'a Path,
    /// The interpreter's arguments (after its path).
    pub(crate) arguments: &'a [&'a str],
    pub(crate) limits: Limits,
    pub(crate) cgroups: Option<&'a RunCgroups>,
}

/// A sandbox whose interpreter is running (its setup is over).
#[derive(Debug)]
pub(crate) struct Started {
    child: Child,
    process_group: i32,
    sandbox_pid: i32,
    started: Instant,
}

/// Kills and reaps a run whose future was dropped before it finished (the server shutting down,
/// a handler dropped): the intermediate dies (`kill_on_drop`), and this takes the group and the
/// sandbox process, which would otherwise stay a zombie re-parented to us.
#[derive(Debug)]
struct DropGuard {
    process_group: i32,
    sandbox_pid: i32,
    armed: bool,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        kill_group(self.process_group);
        let (process_group, sandbox_pid) = (self.process_group, self.sandbox_pid);
        // Reaping waits for the dying processes; not on an async thread.
        let _ = std::thread::Builder::new()
            .name("run-python-reaper".to_owned())
            .spawn(move || reap(process_group, sandbox_pid, &[]));
    }
}

impl Started {
    /// The sandbox process's pid as the daemon sees it.
    pub(crate) fn sandbox_pid(&self) -> i32 {
        self.sandbox_pid
    }
}

/// Spawns the sandbox and waits until its interpreter runs: the report pipe's end of file (its
/// last writer, the sandbox process, closed it by `exec`), at most `limits.wall_clock`.
pub(crate) async fn start(confined: &Confined<'_>) -> Result<Started, RunError> {
    let mut ends = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error().into());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    let (report_reader, report_writer) =
        unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    let prepared = confined.plan.prepare(
        confined.run_directory,
        report_writer.as_raw_fd(),
        &confined.limits,
        confined.cgroups,
        confined.arguments,
    )?;
    let mut command = Command::new(&confined.plan.layout.executable);
    command
        .env_clear()
        .current_dir(confined.run_directory)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let child_plan = prepared.child;
    // SAFETY: the hook only makes async-signal-safe system calls on data prepared before the
    // fork (see `confine.rs`).
    unsafe {
        command.pre_exec(move || confine::intermediate(&child_plan));
    }
    let started = Instant::now();
    let spawned = command.spawn();
    // Our copies: the children have theirs now, and the pipe's end of file needs ours closed.
    drop(report_writer);
    drop(prepared.ruleset);
    let child = spawned?;
    let process_group = child.id().map_or(0, |id| id as i32);

    let reading = tokio::task::spawn_blocking(move || {
        let mut file = std::fs::File::from(report_reader);
        let mut bytes = Vec::new();
        let _ = file.read_to_end(&mut bytes);
        Report::decode_all(&bytes)
    });
    let reports = match tokio::time::timeout(confined.limits.wall_clock, reading).await {
        Ok(Ok(reports)) => reports,
        Ok(Err(panic)) => return Err(io::Error::other(panic).into()),
        Err(_) => {
            let started = Started {
                child,
                process_group,
                sandbox_pid: 0,
                started,
            };
            cleanup(started, confined.cgroups).await?;
            return Err(RunError::SetupTimedOut(confined.limits.wall_clock));
        }
    };
    let sandbox_pid = reports
        .iter()
        .find_map(|report| match report {
            Report::Started { pid } => Some(*pid),
            Report::Failed { .. } => None,
        })
        .unwrap_or(0);
    let failure = reports.iter().find_map(|report| match *report {
        Report::Failed { stage, errno, step } => Some(SetupFailure { stage, errno, step }),
        Report::Started { .. } => None,
    });
    let started = Started {
        child,
        process_group,
        sandbox_pid,
        started,
    };
    if let Some(failure) = failure {
        cleanup(started, confined.cgroups).await?;
        return Err(RunError::Setup(failure));
    }
    if sandbox_pid == 0 {
        // Neither a pid nor a failure: the intermediate died before reporting (killed).
        cleanup(started, confined.cgroups).await?;
        return Err(
            io::Error::other("the sandbox's intermediate process ended during setup").into(),
        );
    }
    Ok(started)
}

/// Kills and reaps a run that did not get to supervision.
async fn cleanup(mut started: Started, cgroups: Option<&RunCgroups>) -> io::Result<()> {
    kill_group(started.process_group);
    started.child.wait().await?;
    finish_cleanup(started.process_group, started.sandbox_pid, cgroups).await
}

/// Runs `input` through a started sandbox to its end. `cancelled` resolves when the caller gives
/// up (the MCP request was cancelled).
pub(crate) async fn supervise(
    started: Started,
    input: Vec<u8>,
    limits: Limits,
    cgroups: Option<&RunCgroups>,
    cancelled: impl Future<Output = ()>,
) -> io::Result<Finished> {
    let Started {
        mut child,
        process_group,
        sandbox_pid,
        started,
    } = started;
    let mut guard = DropGuard {
        process_group,
        sandbox_pid,
        armed: true,
    };
    let mut stdin = child.stdin.take().expect("stdin is piped");
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

    let deadline = tokio::time::sleep_until((started + limits.wall_clock).into());
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
    guard.armed = false;
    finish_cleanup(process_group, sandbox_pid, cgroups).await?;
    let out_of_memory = cgroups.is_some_and(|cgroups| cgroups.out_of_memory_kills() > 0);

    // Every writer is dead, so the pipes are at end of file; the bound only guards against a
    // process that escaped the group, the namespace and the cgroup keeping them open.
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
        out_of_memory,
        stdout,
        stderr,
        duration,
        process_group,
    })
}

/// Starts and supervises one run.
pub(crate) async fn run(
    confined: Confined<'_>,
    input: Vec<u8>,
    cancelled: impl Future<Output = ()>,
) -> Result<Finished, RunError> {
    let started = start(&confined).await?;
    Ok(supervise(started, input, confined.limits, confined.cgroups, cancelled).await?)
}

/// After the intermediate is gone: kill what may be left (the group, the cgroups) and reap what
/// was re-parented to us.
async fn finish_cleanup(
    process_group: i32,
    sandbox_pid: i32,
    cgroups: Option<&RunCgroups>,
) -> io::Result<()> {
    kill_group(process_group);
    let signalled = cgroups
        .map(|cgroups| cgroups.kill_all(Duration::from_secs(2)))
        .unwrap_or_default();
    tokio::task::spawn_blocking(move || reap(process_group, sandbox_pid, &signalled))
        .await
        .map_err(io::Error::other)
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

/// The parent pid of `pid`, from `/proc`.
fn parent_of(pid: i32) -> Option<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("PPid:"))?
        .trim()
        .parse()
        .ok()
}

/// Waits for every killed process of the run to be gone. The sandbox process is re-parented to
/// us (a child subreaper) when the intermediate dies first, so we reap it by its pid (it dies of
/// its parent-death signal); other orphans in the group or the cgroups likewise; if we are not
/// their reaper, init is, and we wait until it has.
fn reap(process_group: i32, sandbox_pid: i32, signalled: &[i32]) {
    let mut status = 0;
    if sandbox_pid > 0 && parent_of(sandbox_pid) == Some(std::process::id() as i32) {
        // Only when it is ours: normally the intermediate reaped it already.
        // SAFETY: waitpid writes only the status we pass.
        while unsafe { libc::waitpid(sandbox_pid, &mut status, libc::__WALL) } < 0
            && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
        {}
    }
    loop {
        // SAFETY: as above.
        let reaped = unsafe { libc::waitpid(-process_group, &mut status, libc::__WALL) };
        if reaped > 0
            || (reaped < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted)
        {
            continue;
        }
        break;
    }
    for &pid in signalled {
        // SAFETY: as above; a pid that is not our child is refused with ECHILD.
        unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG | libc::__WALL) };
    }
    let started = Instant::now();
    while group_exists(process_group) && started.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(5));
    }
}
