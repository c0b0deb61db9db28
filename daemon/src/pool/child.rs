//! A stdio server's child process: spawning it (its own process group, an allow-listed
//! environment, a parent-death signal, optionally under the daemon's subreaper), learning how it
//! ended, and stopping its whole group.
//!
//! rmcp's own child-process transport would inherit our whole environment and hide the exit
//! status, so the pool spawns children here; the transport over their pipes is `stdio.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use super::stderr::StderrRing;

/// Variables a child inherits from the daemon's environment; everything else (and every
/// `TOOL_CLI_*` variable in particular) is withheld unless the config sets it.
pub(crate) const ENV_ALLOW_LIST: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
];

/// How long a child gets after its stdin closes before SIGTERM, and after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_millis(1500);

/// How a child process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExitInfo {
    /// `exit code 1`, `signal 9 (SIGKILL)`, …
    pub(crate) description: String,
}

/// A running child: its process group and how to learn of its exit.
pub(crate) struct ChildProcess {
    /// Process id of the child, which is also its process group id.
    pid: i32,
    exit: watch::Receiver<Option<ExitInfo>>,
    pub(crate) stderr: Arc<StderrRing>,
}

/// What to run for a stdio server.
pub(crate) struct Launch<'a> {
    pub(crate) command: &'a str,
    pub(crate) args: &'a [String],
    pub(crate) env: &'a BTreeMap<String, String>,
    pub(crate) cwd: Option<&'a PathBuf>,
    /// Run it under `tool-cli-daemon subreaper` from this executable.
    pub(crate) subreaper: Option<&'a Path>,
}

/// The program a config's `record` or `replay` runs (`config/recording.rs`), taken from beside
/// the daemon's executable `exe` when it is there (an install keeps them together), so it runs
/// the version built with this daemon; `None` for any other command (looked up as written).
pub(crate) fn bundled_program(command: &str, exe: &Path) -> Option<PathBuf> {
    if command != crate::config::recording::REPLAY_COMMAND {
        return None;
    }
    let sibling = exe.with_file_name(command);
    sibling.is_file().then_some(sibling)
}

impl ChildProcess {
    /// Spawns the server for `server`, returning the child and its stdout/stdin. Under a
    /// subreaper, the child is the subreaper, in the same process group as the server it runs.
    pub(crate) fn spawn(
        server: &str,
        launch: &Launch<'_>,
    ) -> std::io::Result<(ChildProcess, ChildStdout, ChildStdin)> {
        let bundled = std::env::current_exe()
            .ok()
            .and_then(|exe| bundled_program(launch.command, &exe));
        let command = bundled
            .as_deref()
            .map_or(std::ffi::OsStr::new(launch.command), Path::as_os_str);
        let mut cmd = match launch.subreaper {
            Some(exe) => {
                let mut cmd = Command::new(exe);
                cmd.arg("subreaper")
                    .arg("--")
                    .arg(command)
                    .args(launch.args);
                cmd
            }
            None => {
                let mut cmd = Command::new(command);
                cmd.args(launch.args);
                cmd
            }
        };
        cmd.env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so stopping it also stops whatever it spawned (`npx` and
            // `uvx` put the real server in a grandchild).
            .process_group(0)
            .kill_on_drop(true);
        for name in ENV_ALLOW_LIST {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        cmd.envs(launch.env);
        if let Some(cwd) = launch.cwd {
            cmd.current_dir(cwd);
        }
        #[cfg(target_os = "linux")]
        {
            // A subreaper is told of the daemon's death with a signal it can act on (stop
            // everything below it); a bare server is simply killed.
            let death_signal = if launch.subreaper.is_some() {
                libc::SIGTERM
            } else {
                libc::SIGKILL
            };
            // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
            unsafe {
                cmd.pre_exec(move || {
                    // If the daemon dies without cleaning up (SIGKILL), the child learns of it.
                    if libc::prctl(libc::PR_SET_PDEATHSIG, death_signal) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn()?;
        let pid = child.id().map(|id| id as i32).unwrap_or(0);
        crate::reaper::register(pid);
        let stdout = child.stdout.take().expect("stdout is piped");
        let stdin = child.stdin.take().expect("stdin is piped");
        let stderr_pipe = child.stderr.take().expect("stderr is piped");

        let stderr = Arc::new(StderrRing::new(server));
        tokio::spawn(Arc::clone(&stderr).drain(stderr_pipe));

        let (exit_tx, exit_rx) = watch::channel(None);
        let server = server.to_owned();
        tokio::spawn(async move {
            let description = match child.wait().await {
                Ok(status) => describe_exit(status),
                Err(err) => format!("unknown exit ({err})"),
            };
            tracing::info!(server, exit = %description, "server process exited");
            // Whatever the leader left behind in its group goes too, and the server counts as
            // stopped only once it has gone: a SIGKILL is delivered when the process next runs,
            // which on a loaded machine is not at once.
            kill_group(pid, libc::SIGKILL);
            wait_for_group_to_empty(pid, GROUP_DEATH_LIMIT).await;
            crate::reaper::unregister(pid);
            let _ = exit_tx.send(Some(ExitInfo { description }));
        });
        Ok((
            ChildProcess {
                pid,
                exit: exit_rx,
                stderr,
            },
            stdout,
            stdin,
        ))
    }

    /// A receiver that holds how the child ended once it has.
    pub(crate) fn exit_watch(&self) -> watch::Receiver<Option<ExitInfo>> {
        self.exit.clone()
    }

    /// How the child ended, if it has.
    pub(crate) fn exit_info(&self) -> Option<ExitInfo> {
        self.exit.borrow().clone()
    }

    /// Waits up to `limit` for the child to exit and returns how it ended.
    pub(crate) async fn wait_exit(&self, limit: Duration) -> Option<ExitInfo> {
        let mut exit = self.exit.clone();
        match tokio::time::timeout(limit, exit.wait_for(Option::is_some)).await {
            Ok(Ok(info)) => info.clone(),
            _ => None,
        }
    }

    /// Stops the child's whole process group: the caller has closed its stdin already; give it a
    /// moment to exit on its own, then SIGTERM, then SIGKILL.
    pub(crate) async fn stop(&self) {
        if self.wait_exit(STOP_GRACE / 3).await.is_some() {
            return;
        }
        kill_group(self.pid, libc::SIGTERM);
        if self.wait_exit(STOP_GRACE).await.is_some() {
            return;
        }
        kill_group(self.pid, libc::SIGKILL);
        self.wait_exit(STOP_GRACE).await;
    }
}

impl Drop for ChildProcess {
    /// A child nobody holds any more is never left running: this is what stops a server whose
    /// connection attempt was abandoned (on shutdown, say).
    fn drop(&mut self) {
        if self.exit.borrow().is_none() {
            kill_group(self.pid, libc::SIGKILL);
        }
    }
}

/// How long a SIGKILLed group may take to disappear before the server is reported stopped
/// anyway (a process in uninterruptible sleep dies only when its I/O ends).
const GROUP_DEATH_LIMIT: Duration = Duration::from_secs(2);

/// Waits until no live process is left in group `pgid`, or `limit` has passed. A group led by a
/// subreaper that exited normally is empty already (it reaped everything below it), so this
/// costs one `kill(2)`; only a group whose leader was killed is watched through `/proc`.
async fn wait_for_group_to_empty(pgid: i32, limit: Duration) {
    let deadline = tokio::time::Instant::now() + limit;
    while pgid > 0 && crate::reaper::group_exists(pgid) {
        if tokio::time::Instant::now() >= deadline {
            tracing::warn!(
                pgid,
                "processes of a stopped server are still alive after SIGKILL"
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn kill_group(pgid: i32, signal: i32) {
    if pgid > 0 {
        // SAFETY: kill has no memory-safety preconditions; a group that is gone gives ESRCH.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        format!("exit code {code}")
    } else if let Some(signal) = status.signal() {
        format!("signal {signal} ({})", signal_name(signal))
    } else {
        status.to_string()
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_replay_program_is_taken_from_beside_the_daemon() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("tool-cli-daemon");
        let replay = crate::config::recording::REPLAY_COMMAND;
        assert_eq!(bundled_program(replay, &exe), None, "not installed: PATH");
        std::fs::write(dir.path().join(replay), b"").unwrap();
        assert_eq!(bundled_program(replay, &exe), Some(dir.path().join(replay)));
        assert_eq!(
            bundled_program("npx", &exe),
            None,
            "other commands as written"
        );
    }
}
