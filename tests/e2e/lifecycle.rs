//! The daemon's life: the runtime file it writes for clients, the token it takes from the
//! environment, and a clean end on SIGTERM or SIGINT (exit 0, in-flight calls answered, runtime
//! file removed, not one process left in any server's process group).

use std::os::unix::fs::PermissionsExt;
use std::thread;

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, DaemonOptions, SHUTDOWN_TIMEOUT, STARTUP_TIMEOUT, count_recorded, eventually,
    everything_stdio, fault_server_recording, live_processes_in_group, python_fixture, scratch,
    text_content,
};

#[test]
fn the_runtime_file_describes_the_running_daemon() {
    let daemon = Daemon::start_demo();
    let runtime = daemon.read_runtime_file();
    assert_eq!(runtime.host, "127.0.0.1");
    assert_eq!(runtime.port, daemon.port);
    assert_eq!(runtime.token, daemon.token);
    assert_eq!(runtime.pid, daemon.pid());
    assert_eq!(runtime.version, env!("CARGO_PKG_VERSION"));
    let mode = std::fs::metadata(daemon.runtime_file())
        .expect("runtime file metadata")
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "runtime file is private: {mode:o}");
}

#[test]
fn tool_cli_token_sets_the_token() {
    let token = "ab".repeat(32);
    let daemon = Daemon::start_with(
        json!({"mcpServers": {}}),
        DaemonOptions {
            token: Some(token.clone()),
            ..DaemonOptions::default()
        },
    );
    assert_eq!(daemon.token, token);
    daemon.call("listServers", Value::Null);
}

/// The Python fixture started by a shell that first puts a `sleep` in the background.
fn forking_server() -> Value {
    let fixture = python_fixture();
    let command = format!(
        "sleep 300 & exec '{}' '{}'",
        fixture["command"].as_str().expect("command"),
        fixture["args"][0].as_str().expect("script path"),
    );
    json!({"command": "/bin/sh", "args": ["-c", command]})
}

fn assert_clean_exit(mut daemon: Daemon, signal: i32) {
    let children = daemon.children();
    assert!(
        !children.is_empty(),
        "the stdio servers are children of the daemon"
    );
    let runtime_file = daemon.runtime_file();
    assert!(runtime_file.exists());

    daemon.signal(signal);
    let status = daemon
        .wait_for_exit(SHUTDOWN_TIMEOUT)
        .unwrap_or_else(|| panic!("daemon still running {SHUTDOWN_TIMEOUT:?} after the signal"));
    assert_eq!(
        status.code(),
        Some(0),
        "exit status {status:?}; stderr:\n{}",
        daemon.stderr()
    );
    assert!(!runtime_file.exists(), "runtime file removed");
    for (pid, pgid) in children {
        let left = live_processes_in_group(pgid);
        assert!(
            left.is_empty(),
            "processes {left:?} left in the group {pgid} of server process {pid}"
        );
    }
}

#[test]
fn sigterm_stops_everything_and_exits_zero() {
    let daemon = Daemon::start_with_dir(|dir| {
        json!({"mcpServers": {
            "demo": tool_cli_tests::demo_server(dir),
            "everything": everything_stdio(),
            "py": python_fixture(),
            // A server that leaves a grandchild behind in its process group: killing only the
            // direct child would leave the `sleep` running.
            "forker": forking_server(),
        }})
    });
    assert_clean_exit(daemon, libc::SIGTERM);
}

#[test]
fn sigint_is_a_clean_exit_too() {
    let daemon = Daemon::start_demo();
    assert_clean_exit(daemon, libc::SIGINT);
}

#[test]
fn an_in_flight_call_is_answered_during_shutdown() {
    let dir = scratch();
    let record = dir.path().join("received.jsonl");
    let mut daemon =
        Daemon::start(json!({"mcpServers": {"slow": fault_server_recording(&record, &[])}}));
    let answer = thread::scope(|scope| {
        let call = scope.spawn(|| daemon.call_tool("slow", "sleep", json!({"ms": 1500})));
        // The signal goes once the server has the call: the order is an event, not a delay.
        let received = eventually(STARTUP_TIMEOUT, || {
            count_recorded(&record, "tools/call", Some("sleep")) == 1
        });
        assert!(received, "the call never reached the server");
        daemon.signal(libc::SIGTERM);
        call.join().expect("caller thread")
    });
    assert_eq!(text_content(&answer), "slept 1500");
    let status = daemon
        .wait_for_exit(SHUTDOWN_TIMEOUT)
        .expect("daemon exits after the in-flight call");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn an_explicit_port_is_used() {
    // A port found free can be taken by another test before the daemon binds it; the daemon then
    // exits saying so, and the test tries another port rather than failing.
    const ATTEMPTS: usize = 5;
    for _ in 0..ATTEMPTS {
        let port = tool_cli_tests::free_port();
        let started = Daemon::try_start_with(
            json!({"mcpServers": {}}),
            DaemonOptions {
                args: vec!["--port".into(), port.to_string()],
                ..DaemonOptions::default()
            },
        );
        match started {
            Ok(daemon) => {
                assert_eq!(daemon.port, port);
                daemon.call("getBridgeInfo", Value::Null);
                return;
            }
            Err(failure) if failure.contains("Address already in use") => continue,
            Err(failure) => panic!("{failure}"),
        }
    }
    panic!("every one of {ATTEMPTS} free ports was taken before the daemon could bind it");
}

#[test]
fn token_file_sets_the_token() {
    let dir = tool_cli_tests::scratch();
    let token = "cd".repeat(32);
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{token}\n")).expect("write token file");
    let daemon = Daemon::start_with(
        json!({"mcpServers": {}}),
        DaemonOptions {
            args: vec![
                "--token-file".into(),
                token_file.to_string_lossy().into_owned(),
            ],
            ..DaemonOptions::default()
        },
    );
    assert_eq!(daemon.token, token);
    daemon.call("listServers", Value::Null);
}

#[test]
fn the_daemons_variables_never_reach_a_server() {
    let token = "9f".repeat(32);
    let daemon = Daemon::start_with(
        json!({"mcpServers": {"everything": everything_stdio()}}),
        DaemonOptions {
            token: Some(token.clone()),
            ..DaemonOptions::default()
        },
    );
    // server-everything's get-env returns its whole environment.
    let env = text_content(&daemon.call_tool("everything", "get-env", json!({})));
    assert!(
        !env.contains(&token),
        "the bearer token leaked to a server: {env}"
    );
    assert!(
        !env.contains("TOOL_CLI_"),
        "TOOL_CLI_* variables leaked to a server: {env}"
    );
}
