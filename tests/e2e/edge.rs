//! The daemon's HTTP edge and its compatibility with the reference 1.x bridge: what a request
//! may look like to be served (any content type with a JSON body, `--allow-host` names, absolute
//! request targets, transfer codings), what every refusal looks like (an empty body), how answers
//! too large for one response travel (spilled to a file and paged), what a batch answers, how a
//! call outliving the shutdown grace is answered, the error `data` fields the reference's scripts
//! read, and how quiet the default log is.
//!
//! Input → test:
//! - default logging, 30 requests of every kind → no per-request log line, the startup line
//!   present; `RUST_LOG` still overrides: `the_default_log_has_nothing_per_request`

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, DaemonOptions, SHUTDOWN_TIMEOUT, STARTUP_TIMEOUT, eventually, fault_server,
};

/// A daemon whose only server is the fault fixture (it starts in milliseconds).
fn fault_daemon() -> Daemon {
    Daemon::start(json!({"mcpServers": {"alpha": fault_server(&[])}}))
}

fn fault_daemon_with(options: DaemonOptions) -> Daemon {
    Daemon::start_with(json!({"mcpServers": {"alpha": fault_server(&[])}}), options)
}

fn echo(daemon: &Daemon, nonce: &str) -> Value {
    daemon.call_tool("alpha", "echo", json!({"nonce": nonce}))
}

// ---------------------------------------------------------------------------------------------
// Logging.

/// Stops `daemon` with SIGTERM and returns its whole log: the daemon's last line (`stopped`) is
/// written after every request was handled, so waiting for it means nothing is still on its way.
fn whole_log_after_stop(mut daemon: Daemon) -> String {
    daemon.signal(libc::SIGTERM);
    let status = daemon.wait_for_exit(SHUTDOWN_TIMEOUT);
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{}", daemon.stderr());
    assert!(
        eventually(STARTUP_TIMEOUT, || daemon.stderr().contains("stopped")),
        "no `stopped` line; log:\n{}",
        daemon.stderr()
    );
    daemon.stderr()
}

#[test]
fn the_default_log_has_nothing_per_request() {
    let daemon = fault_daemon_with(DaemonOptions {
        remove_env: vec!["RUST_LOG".into()],
        ..DaemonOptions::default()
    });
    let requests = 30;
    for round in 0..requests / 3 {
        daemon.call("listServers", Value::Null);
        echo(&daemon, &format!("n{round}"));
        // A refused request and a failed call are requests too.
        let (status, _) = tool_cli_tests::http_post(daemon.port, "/", &[], b"{}");
        assert_eq!(status, 401);
    }
    let log = whole_log_after_stop(daemon);
    assert!(
        log.contains("tool-cli-daemon starting"),
        "the startup line is logged by default; log:\n{log}"
    );
    for per_request in [
        "Accepting new connection",
        "call finished",
        "DEBUG",
        "TRACE",
    ] {
        let line = log.lines().find(|line| line.contains(per_request));
        assert!(line.is_none(), "a per-request line at the default level: {line:?}");
    }
    let lines = log.lines().count();
    assert!(
        lines < requests,
        "{lines} log lines for {requests} requests; log:\n{log}"
    );

    // RUST_LOG still decides: the per-call trace line is there when asked for.
    let daemon = fault_daemon_with(DaemonOptions {
        env: vec![("RUST_LOG".into(), "warn,tool_cli::trace=info".into())],
        ..DaemonOptions::default()
    });
    echo(&daemon, "traced");
    assert!(
        eventually(STARTUP_TIMEOUT, || daemon.stderr().contains("call finished")),
        "RUST_LOG took effect; log:\n{}",
        daemon.stderr()
    );
}
