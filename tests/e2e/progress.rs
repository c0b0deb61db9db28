//! Progress and server logs relayed to the caller: `callTool` with `progress: true` and a
//! `progressId`, `callEvents` long-polled on another connection while the call runs, against
//! server-everything's `trigger-long-running-operation` (progress notifications) and
//! `toggle-simulated-logging`; a flood of progress stays bounded; bad params are named.

use serde_json::{Value, json};
use tool_cli_protocol::code;
use tool_cli_protocol::methods::name;
use tool_cli_tests::{Daemon, everything_stdio, text_content};

fn everything() -> Daemon {
    Daemon::start(json!({"mcpServers": {"everything": everything_stdio()}}))
}

/// Polls `callEvents` until the call is done; every event, in order, and the dropped count.
fn follow(daemon: &Daemon, progress_id: &str) -> (Vec<Value>, u64) {
    let mut after = 0;
    let mut events = Vec::new();
    loop {
        let page = daemon.call(
            name::CALL_EVENTS,
            json!({"progressId": progress_id, "after": after, "waitMs": 20000}),
        );
        for event in page["events"].as_array().unwrap() {
            let seq = event["seq"].as_u64().unwrap();
            assert!(seq > after, "seqs increase: {page}");
            after = seq;
            events.push(event.clone());
        }
        if page["done"] == true {
            return (events, page["dropped"].as_u64().unwrap());
        }
    }
}

#[test]
fn progress_reaches_a_poller_on_another_connection_while_the_call_runs() {
    let daemon = everything();
    std::thread::scope(|scope| {
        // The poller may start before the call: it waits for the id to be used.
        let poller = scope.spawn(|| follow(&daemon, "long-1"));
        let result = daemon.call(
            name::CALL_TOOL,
            json!({"server": "everything", "tool": "trigger-long-running-operation",
                   "arguments": {"duration": 1, "steps": 5},
                   "progress": true, "progressId": "long-1"}),
        );
        assert!(
            text_content(&result).starts_with("Long running operation completed"),
            "{result:#}"
        );
        let (events, dropped) = poller.join().unwrap();
        assert_eq!(dropped, 0);
        // server-everything also logs, on a session's first call, the roots it received.
        let progress: Vec<&Value> = events.iter().filter(|e| e["type"] == "progress").collect();
        // The last notification may race the result; the first four cannot.
        assert!(progress.len() >= 4, "{events:#?}");
        for (index, event) in progress.iter().enumerate() {
            assert_eq!(event["type"], "progress", "{event}");
            assert_eq!(event["progress"], (index + 1) as f64, "{event}");
            assert_eq!(event["total"], 5.0, "{event}");
        }
    });
}

#[test]
fn a_progress_flood_is_bounded_and_does_not_hold_the_call() {
    let daemon = everything();
    let result = daemon.call(
        name::CALL_TOOL,
        json!({"server": "everything", "tool": "trigger-long-running-operation",
               "arguments": {"duration": 0, "steps": 5000},
               "progress": true, "progressId": "flood"}),
    );
    assert!(text_content(&result).contains("Steps: 5000"), "{result:#}");
    let page = daemon.call(
        name::CALL_EVENTS,
        json!({"progressId": "flood", "after": 0, "waitMs": 0}),
    );
    let events = page["events"].as_array().unwrap();
    assert_eq!(page["done"], true);
    assert_eq!(events.len(), 256, "the buffer keeps the newest 256");
    let dropped = page["dropped"].as_u64().unwrap();
    let last_seq = events.last().unwrap()["seq"].as_u64().unwrap();
    assert_eq!(
        dropped + 256,
        last_seq,
        "every event is returned or counted"
    );
    assert!(
        last_seq >= 4000,
        "most of the 5000 notifications were relayed: {last_seq}"
    );
    // The daemon still answers promptly afterwards.
    let servers = daemon.call("listServers", Value::Null);
    assert_eq!(servers["servers"][0]["state"], "ready");
}

#[test]
fn server_log_messages_reach_a_running_call_that_asked_for_events() {
    let daemon = everything();
    std::thread::scope(|scope| {
        let long = scope.spawn(|| {
            daemon.call(
                name::CALL_TOOL,
                json!({"server": "everything", "tool": "trigger-long-running-operation",
                       "arguments": {"duration": 4, "steps": 2},
                       "progressId": "with-logs"}),
            )
        });
        // Once the call is surely running (its first progress event, at 2 s of 4, has arrived),
        // turn the server's simulated logging on with a plain call: its first log message is
        // sent at once, to every call of the server that asked for events.
        let mut after = 0;
        loop {
            let page = daemon.call(
                name::CALL_EVENTS,
                json!({"progressId": "with-logs", "after": after, "waitMs": 20000}),
            );
            assert_eq!(page["done"], false, "{page}");
            let events = page["events"].as_array().unwrap();
            if events.iter().any(|event| event["type"] == "progress") {
                break;
            }
            if let Some(last) = events.last() {
                after = last["seq"].as_u64().unwrap();
            }
        }
        let toggled = daemon.call_tool("everything", "toggle-simulated-logging", json!({}));
        assert!(text_content(&toggled).contains("Started"), "{toggled:#}");
        long.join().unwrap();
    });
    let page = daemon.call(
        name::CALL_EVENTS,
        json!({"progressId": "with-logs", "after": 0, "waitMs": 0}),
    );
    let events = page["events"].as_array().unwrap();
    assert!(
        events.iter().any(|event| event["type"] == "log"
            && event["logger"].is_null()
            && event["data"].as_str().is_some_and(
                |data| data.contains("-level message") || data.contains("level-message")
            )),
        "{page:#}"
    );
}

#[test]
fn bad_progress_params_are_named() {
    let daemon = everything();
    let no_id = daemon.call_err(
        name::CALL_TOOL,
        json!({"server": "everything", "tool": "echo", "arguments": {"message": "x"},
               "progress": true}),
    );
    assert_eq!(no_id.code, code::INVALID_PARAMS);
    assert!(
        no_id.message.contains("needs a progressId"),
        "{}",
        no_id.message
    );
    let empty = daemon.call_err(name::CALL_EVENTS, json!({"progressId": ""}));
    assert_eq!(empty.code, code::INVALID_PARAMS);
    assert!(
        empty
            .message
            .contains("progressId must be 1-128 characters"),
        "{}",
        empty.message
    );
    let wrong_type = daemon.call_err(name::CALL_EVENTS, json!({"progressId": 5}));
    assert!(
        wrong_type.message.contains(r#"{"progressId": string"#),
        "{}",
        wrong_type.message
    );
    // A plain call is unchanged.
    let echoed = daemon.call_tool("everything", "echo", json!({"message": "plain"}));
    assert_eq!(echoed["content"][0]["text"], "Echo: plain");
}
