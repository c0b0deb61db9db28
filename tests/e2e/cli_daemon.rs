//! `tool-cli daemon start|stop|status` end to end: the real client starts the real daemon in the
//! background (found next to it), reports it, lets every other command find it through the
//! runtime file, stops it and waits for its exit; a daemon that cannot start is reported with the
//! end of its log.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::runtime::{RUNTIME_FILE_NAME, RuntimeFile};
use tool_cli_tests::output::{assert_exit, stderr, stdout};
use tool_cli_tests::{client_command, demo_server, run_with_timeout, scratch};

/// How long one `tool-cli daemon ...` may take: `start` waits for the demo server to settle.
const DAEMON_COMMAND_TIMEOUT: Duration = Duration::from_secs(90);

/// `tool-cli args…` with only a runtime dir to find the daemon by.
fn tool_cli(runtime_dir: &Path, args: &[&str]) -> Output {
    let mut command = client_command();
    command.env("TOOL_CLI_RUNTIME_DIR", runtime_dir).args(args);
    run_with_timeout(command, DAEMON_COMMAND_TIMEOUT)
}

fn runtime_file(runtime_dir: &Path) -> Option<RuntimeFile> {
    let text = std::fs::read_to_string(runtime_dir.join(RUNTIME_FILE_NAME)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Whether `pid` is a live process (a zombie does not count).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state != 'Z'),
        Err(_) => false,
    }
}

/// Kills the daemon of a runtime dir when dropped, so a failing test leaves none behind (it is
/// detached, so nothing else would).
struct KillOnDrop(PathBuf);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(file) = runtime_file(&self.0)
            && alive(file.pid)
        {
            // SAFETY: kill(2) has no memory-safety preconditions; the pid is the daemon's.
            unsafe { libc::kill(file.pid as libc::pid_t, libc::SIGKILL) };
        }
    }
}

/// A config with the demo server, 0600 as the daemon requires.
fn demo_config(dir: &Path) -> PathBuf {
    let path = dir.join("servers.json");
    let config = json!({"mcpServers": {"demo": demo_server(dir)}});
    std::fs::write(&path, config.to_string()).expect("write the config");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path
}

#[test]
fn start_status_stop() {
    let dir = scratch();
    let runtime = dir.path().join("runtime");
    let _cleanup = KillOnDrop(runtime.clone());
    let config = demo_config(dir.path());
    let config_text = config.to_string_lossy().into_owned();

    let none = tool_cli(&runtime, &["daemon", "status"]);
    assert_exit(&none, 3);
    assert!(
        stderr(&none).contains("no daemon is running"),
        "{}",
        stderr(&none)
    );

    let started = tool_cli(&runtime, &["daemon", "start", "--config", &config_text]);
    assert_exit(&started, 0);
    let file = runtime_file(&runtime).expect("the daemon wrote its runtime file");
    let report = stdout(&started);
    assert!(
        report.starts_with(&format!("started tool-cli-daemon (pid {})\n", file.pid)),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "is running: pid {}, 127.0.0.1:{}",
            file.pid, file.port
        )),
        "{report}"
    );
    assert!(report.contains("\nservers: 1 of 1 ready\n"), "{report}");
    let log = runtime.join("daemon.log");
    assert!(
        report.contains(&format!("log: {}", log.display())),
        "{report}"
    );
    assert!(log.is_file());

    // Every other command finds it through the runtime file.
    let servers = tool_cli(&runtime, &[]);
    assert_exit(&servers, 0);
    assert!(
        stdout(&servers).starts_with("demo "),
        "{}",
        stdout(&servers)
    );

    // Starting again starts nothing.
    let again = tool_cli(&runtime, &["daemon", "start", "--config", &config_text]);
    assert_exit(&again, 0);
    assert!(
        stderr(&again).contains("already running"),
        "{}",
        stderr(&again)
    );
    assert_eq!(runtime_file(&runtime).map(|file| file.pid), Some(file.pid));

    let status = tool_cli(&runtime, &["daemon", "status", "--json"]);
    assert_exit(&status, 0);
    let status: Value = serde_json::from_str(&stdout(&status)).expect("JSON status");
    assert_eq!(status["running"], true);
    assert_eq!(status["pid"], file.pid);
    assert_eq!(status["port"], file.port);
    assert_eq!(status["servers"][0]["name"], "demo");
    assert_eq!(status["servers"][0]["state"], "ready");
    assert!(status["uptimeMs"].is_u64(), "{status}");

    let stopped = tool_cli(&runtime, &["daemon", "stop"]);
    assert_exit(&stopped, 0);
    assert_eq!(
        stdout(&stopped),
        format!("stopped tool-cli-daemon (pid {})\n", file.pid)
    );
    // `stop` returned after the exit: the process is gone and so is its runtime file.
    assert!(!alive(file.pid), "pid {} still runs", file.pid);
    assert!(runtime_file(&runtime).is_none());

    assert_exit(&tool_cli(&runtime, &["daemon", "status"]), 3);
    let stop_again = tool_cli(&runtime, &["daemon", "stop"]);
    assert_exit(&stop_again, 3);
}

#[test]
fn a_daemon_that_cannot_start_is_reported_with_its_log() {
    let dir = scratch();
    let runtime = dir.path().join("runtime");
    let _cleanup = KillOnDrop(runtime.clone());
    let missing = dir.path().join("no-such-config.json");
    let output = tool_cli(
        &runtime,
        &["daemon", "start", "--config", &missing.to_string_lossy()],
    );
    assert_exit(&output, 1);
    let message = stderr(&output);
    assert!(message.contains("exited during start-up"), "{message}");
    assert!(message.contains("the end of its log"), "{message}");
    assert!(message.contains("no-such-config.json"), "{message}");
    assert!(runtime_file(&runtime).is_none());
}

/// A daemon started with `--print-env` (here the harness's) is not the runtime file's, so
/// `tool-cli daemon stop` does not touch it; with its variables in the environment the "no
/// daemon is running" error says why, and how to stop it, instead of denying the daemon the
/// user is talking to.
#[test]
fn stop_without_a_runtime_file_names_the_print_env_daemon_it_leaves_alone() {
    let daemon = tool_cli_tests::Daemon::start_demo();
    let pid = daemon.pid();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the daemon's stat");
    let ticks = tool_cli_protocol::runtime::start_ticks_from_stat(&stat).expect("start ticks");
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").expect("boot id");
    let empty = scratch();
    let mut command = client_command();
    command
        .env("TOOL_CLI_RUNTIME_DIR", empty.path())
        .env("TOOL_CLI_PORT", daemon.port.to_string())
        .env("TOOL_CLI_TOKEN", &daemon.token)
        .env(
            "TOOL_CLI_DAEMON_ID",
            format!("1:{pid}:{ticks}:{}", boot_id.trim()),
        )
        .args(["daemon", "stop"]);
    let refused = run_with_timeout(command, DAEMON_COMMAND_TIMEOUT);
    assert_exit(&refused, 3);
    let message = stderr(&refused);
    assert!(
        message.contains("no daemon is running")
            && message.contains(&format!("pid {pid}, started with --print-env"))
            && message.contains(&format!("`kill {pid}`")),
        "{message}"
    );
    // Left alone: it still answers.
    assert!(alive(pid));
    let servers = daemon.call("listServers", json!({}));
    assert!(servers.to_string().contains("demo"), "{servers}");
}
