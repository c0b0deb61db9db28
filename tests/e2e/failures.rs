//! Servers that misbehave: one that cannot start, one that dies in the middle of a call, one that
//! is too slow. In each case the caller gets an error naming the server, and the other servers of
//! the same daemon keep answering; one broken server never takes the bridge down. A server that
//! cannot start is supervised like one that exits: `restarting` with a backoff, then parked `down`
//! (`resilience.rs` covers the supervision itself).

use std::thread;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::methods::{ListServersResult, ServerState};
use tool_cli_protocol::{ErrorData, code};
use tool_cli_tests::{Daemon, error_data, eventually, python_fixture, text_content};

fn servers(daemon: &Daemon) -> ListServersResult {
    serde_json::from_value(daemon.call("listServers", Value::Null)).expect("listServers")
}

/// A server that never got connected is `restarting` (waiting out its backoff) or, once it has
/// failed often enough, `down`; either way it is not `ready` and says why.
fn is_restarting_or_down(state: ServerState) -> bool {
    matches!(state, ServerState::Restarting | ServerState::Down)
}

fn demo_still_answers(daemon: &Daemon) {
    let result = daemon.call_tool(
        "demo",
        "sql_query",
        json!({"sql": "SELECT COUNT(*) AS n FROM customers"}),
    );
    assert_ne!(result["isError"], true, "{result:#}");
}

#[test]
fn a_server_that_cannot_start_is_restarting_or_down_while_others_work() {
    let missing = "/nonexistent/tool-cli-e2e/no-such-mcp-server";
    let daemon = Daemon::start_with_dir(|dir| {
        json!({"mcpServers": {
            "demo": tool_cli_tests::demo_server(dir),
            "broken": {"command": missing, "args": ["--stdio"]},
        }})
    });

    let listed = servers(&daemon);
    let broken = listed
        .servers
        .iter()
        .find(|s| s.name == "broken")
        .expect("broken listed");
    assert!(is_restarting_or_down(broken.state), "{broken:?}");
    assert_eq!(broken.tool_count, 0);
    let why = broken
        .error
        .as_deref()
        .expect("a server that cannot start says why");
    assert!(
        why.contains(missing),
        "the error names the command: {why:?}"
    );
    let demo = listed
        .servers
        .iter()
        .find(|s| s.name == "demo")
        .expect("demo");
    assert_eq!(demo.state, ServerState::Ready);

    for (method, params) in [
        ("listTools", json!({"server": "broken"})),
        (
            "callTool",
            json!({"server": "broken", "tool": "anything", "arguments": {}}),
        ),
    ] {
        let error = daemon.call_err(method, params);
        assert_eq!(error.code, code::SERVER_UNAVAILABLE, "{method}: {error:?}");
        match error_data(&error) {
            ErrorData::ServerUnavailable { server, state, .. } => {
                assert_eq!(server, "broken");
                assert!(
                    state == "restarting" || state == "down",
                    "{method}: state {state:?}"
                );
            }
            other => panic!("{method}: expected serverUnavailable, got {other:?}"),
        }
    }
    demo_still_answers(&daemon);
}

/// A remote server nothing listens on says why in plain words: what could not be sent and the
/// connection's own error, not rmcp's wrapper naming Rust types.
#[test]
fn a_remote_server_nothing_listens_on_says_the_connection_was_refused() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let daemon = Daemon::start(json!({"mcpServers": {
        "gone": {"url": format!("http://127.0.0.1:{port}/mcp")},
    }}));
    let listed = servers(&daemon);
    let gone = &listed.servers[0];
    assert!(is_restarting_or_down(gone.state), "{gone:?}");
    let why = gone.error.as_deref().expect("it says why");
    assert!(
        why.contains("could not send initialize request")
            && why.contains(&format!("http://127.0.0.1:{port}/mcp"))
            && why.contains("Connection refused"),
        "{why}"
    );
    assert!(!why.contains("rmcp::"), "no Rust type names: {why}");

    // A call gets the next attempt's outcome, not a wait through the whole crash loop until
    // the server is parked (ten restarts, half a minute, when it waited before).
    let error = daemon.call_err(
        "callTool",
        json!({"server": "gone", "tool": "anything", "arguments": {}}),
    );
    assert_eq!(error.code, code::SERVER_UNAVAILABLE, "{error:?}");
    match error_data(&error) {
        ErrorData::ServerUnavailable {
            state, last_error, ..
        } => {
            assert_eq!(state, "restarting", "not parked yet: {error:?}");
            assert!(
                last_error.is_some_and(|e| e.contains("Connection refused")),
                "{error:?}"
            );
        }
        other => panic!("expected serverUnavailable, got {other:?}"),
    }
}

#[test]
fn a_server_that_exits_during_the_handshake_is_restarting_or_down_with_its_stderr() {
    let daemon = Daemon::start_with_dir(|dir| {
        json!({"mcpServers": {
            "demo": tool_cli_tests::demo_server(dir),
            "quitter": {"command": "/bin/sh",
                        "args": ["-c", "echo 'quitter: missing API key' >&2; exit 4"]},
        }})
    });
    // The restart loop passes through `connecting` on each attempt, so a single look may land
    // on one (it did on a loaded machine): wait for the state between attempts.
    let mut last = None;
    let settled = eventually(Duration::from_secs(60), || {
        let listed = servers(&daemon);
        let quitter = listed
            .servers
            .into_iter()
            .find(|s| s.name == "quitter")
            .expect("quitter listed");
        let done = is_restarting_or_down(quitter.state);
        last = Some(quitter);
        done
    });
    let quitter = last.expect("listed at least once");
    assert!(settled, "never restarting or down: {quitter:?}");
    let why = quitter.error.as_deref().unwrap_or_default();
    assert!(
        why.contains("missing API key") || why.contains('4'),
        "the error says how it ended: {why:?}"
    );
    demo_still_answers(&daemon);
}

#[test]
fn a_server_that_exits_mid_call_fails_that_call_and_no_other() {
    let daemon = Daemon::start_with_dir(|dir| {
        json!({"mcpServers": {
            "demo": tool_cli_tests::demo_server(dir),
            "py": python_fixture(),
        }})
    });
    // Prove the server works first, so the failure below is the exit and nothing else.
    let before = daemon.call_tool("py", "echo", json!({"text": "alive"}));
    assert_eq!(text_content(&before), "alive");

    let error = daemon.call_err(
        "callTool",
        json!({"server": "py", "tool": "crash", "arguments": {"delay_ms": 100, "code": 3}}),
    );
    assert_eq!(error.code, code::SERVER_UNAVAILABLE, "{error:?}");
    assert!(
        error.message.contains("py"),
        "message names the server: {error:?}"
    );
    match error_data(&error) {
        ErrorData::ServerExited {
            server,
            exit,
            stderr_tail,
        } => {
            assert_eq!(server, "py");
            assert!(exit.contains('3'), "exit status reported: {exit:?}");
            assert!(
                stderr_tail
                    .iter()
                    .any(|line| line.contains("crashing on purpose")),
                "stderr tail kept: {stderr_tail:?}"
            );
        }
        other => panic!("expected serverExited, got {other:?}"),
    }

    demo_still_answers(&daemon);
    assert!(
        eventually(Duration::from_secs(10), || {
            servers(&daemon)
                .servers
                .iter()
                .any(|s| s.name == "py" && s.state != ServerState::Ready)
        }),
        "listServers no longer reports py ready: {:?}",
        servers(&daemon)
    );
    // A later call to the dead server is refused with the server's name, not hung.
    let later = daemon.rpc(
        "callTool",
        Some(json!({"server": "py", "tool": "echo", "arguments": {"text": "anyone?"}})),
    );
    match later {
        Err(error) => {
            assert_eq!(error.code, code::SERVER_UNAVAILABLE, "{error:?}");
            let data = serde_json::to_string(&error.data).expect("serialize");
            assert!(data.contains("\"py\""), "{error:?}");
        }
        // A daemon that restarts the server transparently is also within the contract.
        Ok(result) => assert_eq!(text_content(&result), "anyone?"),
    }
}

#[test]
fn concurrent_calls_pending_when_a_server_dies_all_fail_promptly() {
    let daemon = Daemon::start(json!({"mcpServers": {"py": python_fixture()}}));
    thread::scope(|scope| {
        let sleepers: Vec<_> = (0..5)
            .map(|_| {
                scope.spawn(|| {
                    daemon.rpc(
                        "callTool",
                        Some(json!({"server": "py", "tool": "sleep",
                                    "arguments": {"ms": 20_000}})),
                    )
                })
            })
            .collect();
        // Crash only once all five calls are executing: on a loaded machine a sleeper could
        // otherwise arrive after the crash and meet a restarted server instead.
        assert!(
            eventually(Duration::from_secs(30), || {
                daemon.call("health", json!({}))["servers"][0]["inFlight"] == 5
            }),
            "the five sleeps never all reached the execution stage"
        );
        let crash = daemon.call_err(
            "callTool",
            json!({"server": "py", "tool": "crash", "arguments": {"delay_ms": 300}}),
        );
        assert_eq!(crash.code, code::SERVER_UNAVAILABLE, "{crash:?}");
        for sleeper in sleepers {
            let outcome = sleeper.join().expect("caller thread");
            let error = outcome.expect_err("a call pending on a dead server fails");
            assert_eq!(error.code, code::SERVER_UNAVAILABLE, "{error:?}");
        }
    });
}

#[test]
fn a_slow_call_times_out_and_the_server_keeps_working() {
    let daemon = Daemon::start(json!({"mcpServers": {"py": python_fixture()}}));
    let error = daemon.call_err(
        "callTool",
        json!({"server": "py", "tool": "sleep", "arguments": {"ms": 10_000}, "timeoutMs": 300}),
    );
    assert_eq!(error.code, code::TIMEOUT, "{error:?}");
    match error_data(&error) {
        ErrorData::Timeout {
            server,
            tool,
            timeout_ms,
        } => {
            assert_eq!((server.as_str(), tool.as_str()), ("py", "sleep"));
            assert_eq!(timeout_ms, 300);
        }
        other => panic!("expected timeout, got {other:?}"),
    }
    let after = daemon.call_tool("py", "echo", json!({"text": "still here"}));
    assert_eq!(text_content(&after), "still here");
}

#[test]
fn the_config_timeout_applies_when_the_call_gives_none() {
    let mut server = python_fixture();
    server["timeoutMs"] = json!(300);
    let daemon = Daemon::start(json!({"mcpServers": {"py": server}}));
    let error = daemon.call_err(
        "callTool",
        json!({"server": "py", "tool": "sleep", "arguments": {"ms": 10_000}}),
    );
    assert_eq!(error.code, code::TIMEOUT, "{error:?}");
    let fast = daemon.call_tool("py", "sleep", json!({"ms": 1}));
    assert_eq!(text_content(&fast), "slept 1 ms");
}
