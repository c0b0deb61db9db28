//! The per-server subreaper: `tool-cli-daemon subreaper -- COMMAND ARGS…`, the process every
//! stdio server runs under, so that nothing a server starts outlives it.
//!
//! Killing a server's process group misses whatever it put in a new session (`setsid`, a
//! "daemonized" helper), and such a process, orphaned, is adopted by init and lives on. On Linux a
//! process can be a *child subreaper* (`PR_SET_CHILD_SUBREAPER`): orphans anywhere below it are
//! re-parented to it instead of init. So the daemon starts each server under this small process
//! (same process group, same environment, stdio passed straight through). It
//!
//! - runs the server and waits for it, reaping every orphan it adopts on the way;
//! - when the server exits, kills every process still below it (whatever session or group it is
//!   in) and exits with the server's own status, so the daemon learns how the server ended;
//! - on SIGTERM, SIGINT or SIGHUP (the daemon stopping the group, or its parent-death signal when
//!   the daemon is killed), sends SIGTERM to every process below it, gives the server
//!   [`TERMINATION_GRACE`] to exit, then SIGKILLs whatever is left and exits.
//!
//! The process tree is read from `/proc`; a server's descendants are found by parent links, so
//! a process that double-forks is still found (it is re-parented to us, not to init). What
//! remains out of reach: a process started on the server's behalf by someone else (a systemd
//! user unit, a D-Bus activated service, an `ssh-agent` started by a login shell), and everything
//! below this process if it is itself SIGKILLed (then the server dies by its parent-death signal,
//! but its own descendants go to init). cgroups would cover those, but per-server cgroups need a
//! delegated cgroup v2 tree (systemd), which a user's daemon cannot count on.
//!
//! This runs before any thread or runtime exists, with the signals it waits for blocked and
//! taken synchronously (`sigtimedwait`), so there is no signal handler to get wrong.

use std::collections::HashMap;
use std::ffi::OsString;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

/// How long the server gets between SIGTERM and SIGKILL. Shorter than the daemon's own wait
/// after its SIGTERM (`pool/stdio.rs`), so this process has cleaned up before the daemon
/// escalates.
pub const TERMINATION_GRACE: Duration = Duration::from_millis(1000);

/// The start of the one stderr line this process writes when it cannot start the server; the
/// daemon turns it back into its usual "cannot start" error.
pub const SPAWN_FAILED: &str = "tool-cli-daemon subreaper: cannot start";

/// The exit code when the server could not be started (a shell's "command not found").
const EXIT_CANNOT_START: u8 = 127;

/// How long killing the leftovers may take before we give up on a process that will not die
/// (uninterruptible sleep) rather than hang the daemon's restart.
const KILL_DEADLINE: Duration = Duration::from_secs(5);

/// Runs `command` as described in the module documentation; returns (or, for a server killed by
/// a signal, dies by) the server's exit status.
pub fn run(command: &[OsString]) -> ExitCode {
    let Some((program, args)) = command.split_first() else {
        eprintln!("tool-cli-daemon subreaper: expected a command to run after `--`");
        return ExitCode::from(2);
    };
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with integer arguments touches no memory of ours.
    unsafe {
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            eprintln!(
                "tool-cli-daemon subreaper: cannot become a child subreaper ({}); processes the \
                 server detaches may outlive it",
                std::io::Error::last_os_error()
            );
        }
    }
    let signals = SignalSet::waited();
    signals.block();

    let mut server = Command::new(program);
    server.args(args);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt as _;
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            server.pre_exec(|| {
                // If this process is SIGKILLed, the server goes with it.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    // std's spawn clears the signal mask in the child, so the server starts with ours unblocked.
    let server_pid = match server.spawn() {
        Ok(child) => child.id() as i32,
        Err(err) => {
            eprintln!(
                "{SPAWN_FAILED} \"{}\": {}",
                program.to_string_lossy(),
                spawn_failure(std::path::Path::new(&program), &err)
            );
            return ExitCode::from(EXIT_CANNOT_START);
        }
    };
    // From here on the pipes are the server's alone: the daemon sees end-of-file on stdout as
    // soon as the server's tree lets go of it, not when we exit.
    release_stdin_and_stdout();

    let mut status = None;
    let mut terminating_since: Option<Instant> = None;
    while status.is_none() {
        reap(server_pid, &mut status);
        if status.is_some() {
            break;
        }
        let wait = match terminating_since {
            Some(since) => match TERMINATION_GRACE.checked_sub(since.elapsed()) {
                Some(left) => left,
                None => break,
            },
            None => Duration::from_secs(3600),
        };
        if let Some(signal) = signals.wait(wait)
            && signal != libc::SIGCHLD
            && terminating_since.is_none()
        {
            terminating_since = Some(Instant::now());
            signal_descendants(libc::SIGTERM);
        }
    }
    kill_descendants(server_pid, &mut status);
    exit_like(status)
}

/// Reaps every child that has exited; records the server's status when it is among them.
fn reap(server_pid: i32, status: &mut Option<i32>) {
    loop {
        let mut raw_status = 0;
        // SAFETY: waitpid writes only to the status integer we pass.
        let pid = unsafe { libc::waitpid(-1, &mut raw_status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        if pid == server_pid {
            *status = Some(raw_status);
        }
    }
}

/// Sends `signal` to every process below us.
fn signal_descendants(signal: i32) {
    let me = std::process::id() as i32;
    for pid in descendants(me, &process_table()) {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

/// SIGKILLs every process below us until none is left (a process forking as we kill is caught
/// by the next round, its orphans being re-parented to us), reaping them all.
fn kill_descendants(server_pid: i32, status: &mut Option<i32>) {
    let me = std::process::id() as i32;
    let deadline = Instant::now() + KILL_DEADLINE;
    let child_exited = SignalSet::only(libc::SIGCHLD);
    loop {
        reap(server_pid, status);
        let left = descendants(me, &process_table());
        if left.is_empty() || Instant::now() >= deadline {
            return;
        }
        for pid in left {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        child_exited.wait(Duration::from_millis(20));
    }
}

/// Ends this process the way the server ended: its exit code, or its death by a signal.
fn exit_like(status: Option<i32>) -> ExitCode {
    let Some(status) = status else {
        // Never reaped (it outlived KILL_DEADLINE): say it was killed.
        return ExitCode::from(128 + libc::SIGKILL as u8);
    };
    if libc::WIFEXITED(status) {
        return ExitCode::from(libc::WEXITSTATUS(status) as u8);
    }
    let signal = libc::WTERMSIG(status);
    // SAFETY: resetting a disposition to the default, unblocking it and raising it have no
    // memory-safety preconditions; nothing else runs in this process any more.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        let only = SignalSet::only(signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &only.0, std::ptr::null_mut());
        libc::raise(signal);
    }
    ExitCode::from(128 + signal as u8)
}

/// Points stdin and stdout at /dev/null.
fn release_stdin_and_stdout() {
    if let Ok(devnull) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        use std::os::fd::AsRawFd as _;
        // SAFETY: dup2 onto fds 0 and 1 with a valid, open descriptor.
        unsafe {
            libc::dup2(devnull.as_raw_fd(), libc::STDIN_FILENO);
            libc::dup2(devnull.as_raw_fd(), libc::STDOUT_FILENO);
        }
    }
}

/// A set of signals taken synchronously.
struct SignalSet(libc::sigset_t);

impl SignalSet {
    /// What this process waits for: a child's exit, and the requests to stop.
    fn waited() -> SignalSet {
        let mut set = SignalSet::only(libc::SIGCHLD);
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            // SAFETY: the set is initialised.
            unsafe {
                libc::sigaddset(&mut set.0, signal);
            }
        }
        set
    }

    fn only(signal: i32) -> SignalSet {
        // SAFETY: sigemptyset initialises the set before sigaddset uses it.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            SignalSet(set)
        }
    }

    /// Blocks the set, so its signals wait for [`SignalSet::wait`] instead of acting.
    fn block(&self) {
        // SAFETY: a valid set; the old mask is not asked for.
        unsafe {
            libc::sigprocmask(libc::SIG_BLOCK, &self.0, std::ptr::null_mut());
        }
    }

    /// Waits up to `timeout` for one of the set's signals; returns it, or `None`.
    fn wait(&self, timeout: Duration) -> Option<i32> {
        let timeout = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: a valid set and timespec; no siginfo is asked for.
        let signal = unsafe { libc::sigtimedwait(&self.0, std::ptr::null_mut(), &timeout) };
        (signal > 0).then_some(signal)
    }
}

/// One row of the process table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcessRow {
    pub(crate) pid: i32,
    pub(crate) parent: i32,
    pub(crate) group: i32,
    /// Exited but not reaped yet: it runs nothing.
    pub(crate) zombie: bool,
}

/// Every process we can see, from `/proc/<pid>/stat`.
pub(crate) fn process_table() -> Vec<ProcessRow> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (state, parent, group) = parse_stat(&stat)?;
            Some(ProcessRow {
                pid,
                parent,
                group,
                zombie: state == 'Z',
            })
        })
        .collect()
}

/// The state, parent pid and process group from the text of `/proc/<pid>/stat`. The command
/// name in parentheses may itself contain spaces and parentheses, so parsing starts after the
/// last `)`.
fn parse_stat(stat: &str) -> Option<(char, i32, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    Some((state, parent, group))
}

/// The live (non-zombie) processes below `root` in `table`.
fn descendants(root: i32, table: &[ProcessRow]) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<&ProcessRow>> = HashMap::new();
    for row in table {
        children.entry(row.parent).or_default().push(row);
    }
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for row in children.get(&parent).into_iter().flatten() {
            // A pid reused as its own ancestor cannot happen, but a bad read must not loop.
            if row.pid == root || found.contains(&row.pid) {
                continue;
            }
            frontier.push(row.pid);
            if !row.zombie {
                found.push(row.pid);
            }
        }
    }
    found
}

/// Why `program` could not be started, saying what would work where the OS error alone does
/// not ("Permission denied" for a directory or a script without its executable bit).
fn spawn_failure(program: &std::path::Path, err: &std::io::Error) -> String {
    use std::os::unix::fs::PermissionsExt as _;
    // A bare name is looked up on PATH; only a path names a file we can look at.
    let is_path = program.as_os_str().to_string_lossy().contains('/');
    let meta = is_path.then(|| std::fs::metadata(program).ok()).flatten();
    match (err.kind(), meta) {
        (_, Some(meta)) if meta.is_dir() => {
            format!("{err}: it is a directory, not a program; name the program to run")
        }
        (std::io::ErrorKind::PermissionDenied, Some(meta))
            if meta.is_file() && meta.permissions().mode() & 0o111 == 0 =>
        {
            format!(
                "{err}: the file is not executable (mode {:o}); make it executable \
                 (chmod +x) or name its interpreter as the command and the file in args",
                meta.permissions().mode() & 0o777
            )
        }
        (std::io::ErrorKind::NotFound, _) if !is_path => {
            format!("{err}: no such program on the daemon's PATH; give its absolute path")
        }
        _ => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_server_that_cannot_start_is_told_why_in_words_that_help() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let denied = std::io::Error::from_raw_os_error(libc::EACCES);
        let message = super::spawn_failure(dir.path(), &denied);
        assert!(
            message.contains("it is a directory, not a program"),
            "{message}"
        );
        let script = dir.path().join("server.sh");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
        let message = super::spawn_failure(&script, &denied);
        assert!(message.contains("not executable (mode 644)"), "{message}");
        assert!(message.contains("chmod +x"), "{message}");
        let missing = std::io::Error::from_raw_os_error(libc::ENOENT);
        let message = super::spawn_failure(std::path::Path::new("no-such-mcp-server"), &missing);
        assert!(message.contains("PATH"), "{message}");
        let message = super::spawn_failure(&dir.path().join("gone"), &missing);
        assert_eq!(message, missing.to_string());
    }

    use super::*;

    #[test]
    fn stat_lines_are_parsed_after_the_command_name() {
        assert_eq!(parse_stat("42 (node) S 7 40 42 0 -1"), Some(('S', 7, 40)));
        assert_eq!(
            parse_stat("43 (a) b (c)) Z 1 43 43 0 -1"),
            Some(('Z', 1, 43)),
            "a name with spaces and parentheses"
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("44 (x) R 1"), None);
    }

    #[test]
    fn descendants_follow_parent_links_and_leave_out_zombies() {
        let row = |pid, parent, zombie| ProcessRow {
            pid,
            parent,
            group: 0,
            zombie,
        };
        let table = [
            row(1, 0, false),
            row(10, 1, false),  // us
            row(11, 10, false), // the server
            row(12, 11, false), // its child
            row(13, 12, true),  // a zombie grandchild: not alive, but its children count
            row(14, 13, false),
            row(15, 10, false), // an orphan we adopted
            row(20, 1, false),  // someone else's
            row(21, 20, false),
        ];
        let mut found = descendants(10, &table);
        found.sort_unstable();
        assert_eq!(found, vec![11, 12, 14, 15]);
        assert!(descendants(99, &table).is_empty());
    }
}
