//! What the daemon answers when a server asks it something, against real servers: `roots/list`
//! from the config (server-everything's `get-roots-list`), elicitation declined with a reason
//! (server-everything's `trigger-elicitation-request`, and a Python `mcp` server asking 1,000
//! times in one call), sampling declined with a reason when no agent backend is configured
//! (`trigger-sampling-request`; `sampling.rs` has it answered by one), and server
//! log messages (`notifications/message`) in the daemon's log under the server's name.

use std::time::Duration;

use serde_json::json;
use tool_cli_tests::{Daemon, asking_fixture, eventually, everything_stdio, text_content};

fn everything_with(extra: serde_json::Value) -> Daemon {
    let mut entry = everything_stdio();
    for (key, value) in extra.as_object().unwrap() {
        entry[key] = value.clone();
    }
    Daemon::start(json!({"mcpServers": {"everything": entry}}))
}

#[test]
fn roots_come_from_the_config_and_server_logs_reach_the_daemon_log() {
    let daemon = everything_with(json!({
        "roots": ["/srv/project one", {"uri": "file:///data", "name": "data"}]
    }));
    let listed = daemon.call_tool("everything", "get-roots-list", json!({}));
    let text = text_content(&listed);
    assert!(text.contains("Current MCP Roots (2 total)"), "{text}");
    assert!(text.contains("file:///srv/project%20one"), "{text}");
    assert!(text.contains("file:///data"), "{text}");
    // The server tells its client, through notifications/message, that it received the roots.
    assert!(
        eventually(Duration::from_secs(10), || {
            let log = daemon.stderr();
            log.lines().any(|line| {
                line.contains("Roots updated: 2 root(s) received from client")
                    && line.contains("server=\"everything\" logger=\"everything-server\"")
                    && line.contains(" INFO ")
            })
        }),
        "no server log line in the daemon's log:\n{}",
        daemon.stderr()
    );
}

#[test]
fn a_config_without_roots_answers_an_empty_list() {
    let daemon = everything_with(json!({}));
    let listed = daemon.call_tool("everything", "get-roots-list", json!({}));
    let text = text_content(&listed);
    assert!(text.contains("no roots are currently configured"), "{text}");
}

#[test]
fn elicitation_and_sampling_are_declined_with_a_reason() {
    // `allowSampling` so the server is offered sampling (and registers its sampling tool); with
    // no agent backend configured, the request is declined with a reason.
    let daemon = everything_with(json!({"allowSampling": true}));
    let elicited = daemon.call_tool("everything", "trigger-elicitation-request", json!({}));
    let text = text_content(&elicited);
    assert!(text.contains("declined"), "{text}");
    assert!(
        text.contains("has the elicitation policy \\\"decline\\\"")
            || text.contains("has the elicitation policy \"decline\""),
        "the reason reaches the server: {text}"
    );

    let sampled = daemon.rpc(
        "callTool",
        Some(
            json!({"server": "everything", "tool": "trigger-sampling-request",
                    "arguments": {"prompt": "hello"}}),
        ),
    );
    let reason = "may sample, but no LLM backend is configured";
    match sampled {
        Ok(result) => {
            let text = text_content(&result);
            assert_eq!(result["isError"], true, "{result:#}");
            assert!(text.contains(reason), "{text}");
        }
        Err(error) => assert!(error.message.contains(reason), "{error:?}"),
    }
    // The daemon's stderr is read by another thread: wait for the line rather than race it.
    assert!(
        eventually(Duration::from_secs(10), || daemon
            .stderr()
            .contains("sampling request declined")),
        "{}",
        daemon.stderr()
    );
}

#[test]
fn a_server_asking_a_thousand_times_is_bounded_and_the_daemon_stays_responsive() {
    let daemon = Daemon::start(json!({"mcpServers": {"asker": asking_fixture()}}));
    let result = daemon.call(
        "callTool",
        json!({"server": "asker", "tool": "ask_many", "arguments": {"count": 1000},
               "timeoutMs": 120000}),
    );
    assert_eq!(text_content(&result), "accept=0 decline=1000 cancel=0");
    // The daemon's stderr is read by another thread: wait for the warning before counting.
    assert!(eventually(Duration::from_secs(10), || daemon
        .stderr()
        .contains("server is asking too often")));
    let log = daemon.stderr();
    // Twenty are looked at and logged; the rest are refused unread, with one warning.
    assert_eq!(
        log.matches("elicitation declined: no one to ask").count(),
        20,
        "{log}"
    );
    assert_eq!(
        log.matches("server is asking too often").count(),
        1,
        "{log}"
    );
    // The daemon still answers.
    let servers = daemon.call("listServers", serde_json::Value::Null);
    assert_eq!(servers["servers"][0]["state"], "ready");
}
