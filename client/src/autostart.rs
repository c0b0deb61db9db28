//! Auto-start: the first `tool-cli` command on a machine with no daemon starts one, so a user
//! (or an MCP host running `tool-cli mcp`) never has to.
//!
//! It applies only when the daemon would be found through the runtime file (none of
//! `TOOL_CLI_PORT`, `TOOL_CLI_TOKEN`, `TOOL_CLI_SOCKET` is set: a daemon named by hand belongs to
//! whoever named it) and `TOOL_CLI_NO_AUTOSTART` is not `1`. A runtime file whose pid is not a
//! live `tool-cli-daemon` is stale (a crash, a reboot): that is one `/proc` read, far inside the
//! one second issue 27 allows. Racing first calls take an exclusive `flock` on `daemon.lock`
//! beside the runtime file; the first starts the daemon and waits for its runtime file, the
//! others find it when they get the lock, so twenty parallel first calls start exactly one.
//! The daemon is started as `tool-cli daemon start` starts it (`run/daemon.rs`), with
//! `--idle-shutdown-secs` (default [`DEFAULT_IDLE_SECS`], `TOOL_CLI_AUTOSTART_IDLE_SECS`, `0`
//! keeps it running), so a daemon nobody asked for by name does not outlive its use.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::time::{Duration, Instant};

use tool_cli_protocol::env;
use tool_cli_protocol::runtime::RUNTIME_FILE_NAME;

use crate::error::Error;
use crate::run::daemon::{
    create_runtime_dir, is_daemon, log_tail, read_runtime_file, spawn_detached,
};

use env::{AUTOSTART_IDLE_SECS, NO_AUTOSTART};

/// How long an auto-started daemon stays up with nothing to do: long enough that an agent's
/// pauses between calls never pay a start, short enough that it does not linger for days.
pub(crate) const DEFAULT_IDLE_SECS: u64 = 30 * 60;

/// The lock racing first calls take, beside the runtime file.
const LOCK_FILE_NAME: &str = "daemon.lock";

/// How long a start may take before the client gives up (the daemon listens before its
/// servers have connected, so this is the binary's start-up, not the servers').
const START_DEADLINE: Duration = Duration::from_secs(20);

/// How often the runtime file is looked for while the daemon starts.
const POLL: Duration = Duration::from_millis(5);

/// What the environment says about auto-starting, read once (pure input of [`should_start`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct AutostartEnv {
    /// Whether an address or token is set by hand.
    pub(crate) named_by_hand: bool,
    /// `TOOL_CLI_NO_AUTOSTART`.
    pub(crate) no_autostart: Option<String>,
}

impl AutostartEnv {
    /// From this process's environment.
    pub(crate) fn from_process() -> AutostartEnv {
        let set = |name: &str| std::env::var(name).is_ok_and(|value| !value.trim().is_empty());
        AutostartEnv {
            named_by_hand: set(env::PORT) || set(env::TOKEN) || set(env::SOCKET),
            no_autostart: std::env::var(NO_AUTOSTART).ok(),
        }
    }
}

/// Whether this invocation may start a daemon.
pub(crate) fn may_start(environment: &AutostartEnv) -> bool {
    !environment.named_by_hand
        && !matches!(
            environment.no_autostart.as_deref().map(str::trim),
            Some("1" | "true" | "yes")
        )
}

/// Whether the runtime file at `path` names a live daemon (`false`: none, or stale).
fn daemon_is_running(path: &Path) -> bool {
    matches!(read_runtime_file(path), Ok(Some((file, _))) if is_daemon(file.pid))
}

/// Starts the daemon of `runtime_dir` unless one runs there or auto-start does not apply;
/// answers whether one was started.
pub(crate) fn ensure_daemon(runtime_dir: &Path, environment: &AutostartEnv) -> Result<bool, Error> {
    if !may_start(environment) {
        return Ok(false);
    }
    let runtime_file = runtime_dir.join(RUNTIME_FILE_NAME);
    if daemon_is_running(&runtime_file) {
        return Ok(false);
    }
    create_runtime_dir(runtime_dir)?;
    let _lock = lock(&runtime_dir.join(LOCK_FILE_NAME))?;
    // Another first call may have started it while this one waited for the lock.
    if daemon_is_running(&runtime_file) {
        return Ok(false);
    }
    let idle = std::env::var(AUTOSTART_IDLE_SECS)
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .unwrap_or(DEFAULT_IDLE_SECS);
    let args = vec!["--idle-shutdown-secs".to_owned(), idle.to_string()];
    let (mut child, log_path, log_start) = spawn_detached(runtime_dir, None, &args)?;
    let pid = child.id();
    let deadline = Instant::now() + START_DEADLINE;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Error::Other(format!(
                "tool-cli-daemon, started because none was running, exited at once ({status}); \
                 {} (set {NO_AUTOSTART}=1 to not start one)",
                log_tail(&log_path, log_start)
            )));
        }
        if let Ok(Some((file, _))) = read_runtime_file(&runtime_file)
            && file.pid == pid
        {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            // SAFETY: kill(2) has no memory-safety preconditions; the pid is our child's.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
            return Err(Error::Other(format!(
                "tool-cli-daemon, started because none was running, wrote no runtime file at {} \
                 within {} s, so it was stopped; {}",
                runtime_file.display(),
                START_DEADLINE.as_secs(),
                log_tail(&log_path, log_start)
            )));
        }
        std::thread::sleep(POLL);
    }
}

/// An exclusive `flock` on `path`, held until the file is dropped.
fn lock(path: &Path) -> Result<File, Error> {
    let file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|source| Error::Io {
            action: format!("open the start lock {}", path.display()),
            source,
        })?;
    loop {
        // SAFETY: flock(2) on a descriptor this function owns; no memory is passed.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(file);
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(Error::Io {
                action: format!("lock {}", path.display()),
                source: error,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_start_applies_only_without_a_daemon_named_by_hand_or_an_opt_out() {
        assert!(may_start(&AutostartEnv::default()));
        let by_hand = AutostartEnv {
            named_by_hand: true,
            ..AutostartEnv::default()
        };
        assert!(!may_start(&by_hand));
        for off in ["1", "true", " yes "] {
            let opted_out = AutostartEnv {
                no_autostart: Some(off.to_owned()),
                ..AutostartEnv::default()
            };
            assert!(!may_start(&opted_out), "{off}");
        }
        let zero = AutostartEnv {
            no_autostart: Some("0".to_owned()),
            ..AutostartEnv::default()
        };
        assert!(may_start(&zero));
    }

    #[test]
    fn a_runtime_file_of_a_dead_pid_is_stale() {
        let dir = std::env::temp_dir().join(format!("tool-cli-autostart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(RUNTIME_FILE_NAME);
        assert!(!daemon_is_running(&path));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let file = tool_cli_protocol::runtime::RuntimeFile {
            host: "127.0.0.1".to_owned(),
            port: 1,
            token: "t".to_owned(),
            pid,
            version: "0".to_owned(),
            socket: None,
            daemon_id: None,
        };
        std::fs::write(&path, serde_json::to_string(&file).unwrap()).unwrap();
        let running = daemon_is_running(&path);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(!running);
    }
}
