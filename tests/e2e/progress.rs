//! Progress and server logs relayed to the caller: `callTool` with `progress: true` and a
//! `progressId`, `callEvents` long-polled on another connection while the call runs, against
//! server-everything's `trigger-long-running-operation` (progress notifications) and
//! `toggle-simulated-logging`; a flood of progress stays bounded; bad params are named. And the
//! same through `tool-cli --progress`: one line per event on stderr, the result alone on stdout.
//! `resetTimeoutOnProgress`: a call reporting progress more often than its timeout runs past it,
//! within `maxTotalTimeoutMs`.

use serde_json::{Value, json};
use std::process::Output;
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
    // How many of the 5000 are relayed depends on scheduling (a step whose turn does not come
    // within its wait is relayed out of order and then dropped as stale); that at least the
    // buffer's 256 were is asserted above; the count itself is not (the log holds other events
    // beside the progress steps, so `seq` may pass 5000).
    assert!(
        events
            .iter()
            .filter_map(|event| event["progress"].as_f64())
            .all(|progress| (1.0..=5000.0).contains(&progress)),
        "only steps the server sent"
    );
    // However the notifications were scheduled on the way in, the relayed progress never goes
    // backwards (a stale one arriving late is not relayed).
    let progress: Vec<f64> = events
        .iter()
        .filter_map(|event| event["progress"].as_f64())
        .collect();
    assert!(
        progress.windows(2).all(|pair| pair[0] < pair[1]),
        "relayed progress only moves forward"
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

fn output_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn succeeded(output: &Output) -> (String, String) {
    let (stdout, stderr) = (output_text(&output.stdout), output_text(&output.stderr));
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (stdout, stderr)
}

/// The `N` of each `progress N/TOTAL` line on stderr, in order, checking the total.
fn progress_lines(stderr: &str, total: u64) -> Vec<u64> {
    stderr
        .lines()
        .filter_map(|line| line.strip_prefix("progress "))
        .map(|rest| {
            let (done, of) = rest.split_once('/').unwrap_or_else(|| panic!("{rest}"));
            assert_eq!(of.trim(), total.to_string(), "{stderr}");
            done.parse().unwrap()
        })
        .collect()
}

#[test]
fn the_cli_prints_progress_lines_on_stderr_in_order_and_the_result_on_stdout() {
    let daemon = everything();
    let args = r#"{"duration": 1, "steps": 5}"#;
    let output = daemon.run_client(
        &[
            "--progress",
            "everything",
            "trigger-long-running-operation",
            args,
        ],
        &[],
    );
    let (stdout, stderr) = succeeded(&output);
    assert_eq!(
        stdout.trim_end(),
        "Long running operation completed. Duration: 1 seconds, Steps: 5.",
        "stdout is the result alone"
    );
    let seen = progress_lines(&stderr, 5);
    // The last notification may race the result; the first four cannot.
    assert!(seen.len() >= 4, "{stderr}");
    assert_eq!(
        seen,
        (1..=seen.len() as u64).collect::<Vec<_>>(),
        "{stderr}"
    );

    // Without --progress and without a terminal nothing is asked for; --no-progress likewise.
    for flags in [&[][..], &["--no-progress"][..]] {
        let mut words = flags.to_vec();
        words.extend(["everything", "trigger-long-running-operation", args]);
        let (stdout, stderr) = succeeded(&daemon.run_client(&words, &[]));
        assert!(
            stdout.starts_with("Long running operation completed"),
            "{stdout}"
        );
        assert!(!stderr.contains("progress "), "{flags:?}: {stderr}");
    }
    // The two flags together are a usage error.
    let both = daemon.run_client(
        &[
            "--progress",
            "--no-progress",
            "everything",
            "echo",
            "message=x",
        ],
        &[],
    );
    assert_eq!(both.status.code(), Some(2), "{}", output_text(&both.stderr));
}

#[test]
fn a_progress_flood_through_the_cli_is_bounded_and_ordered() {
    let daemon = everything();
    let output = daemon.run_client(
        &[
            "--progress",
            "everything",
            "trigger-long-running-operation",
            r#"{"duration": 0, "steps": 5000}"#,
        ],
        &[],
    );
    let (stdout, stderr) = succeeded(&output);
    assert!(stdout.contains("Steps: 5000"), "{stdout}");
    assert_eq!(stdout.lines().count(), 1, "stdout is the result alone");
    let seen = progress_lines(&stderr, 5000);
    assert!(!seen.is_empty(), "{stderr}");
    assert!(
        seen.windows(2).all(|pair| pair[0] < pair[1]),
        "progress only moves forward"
    );
    // What was not shown was dropped by the daemon's bounded buffer (and said so) or was
    // overtaken by a later notification.
    let dropped: u64 = stderr
        .lines()
        .filter_map(|line| line.strip_prefix("tool-cli: note: "))
        .filter_map(|line| line.split_once(" progress events were dropped"))
        .map(|(count, _)| count.parse::<u64>().unwrap())
        .sum();
    // Server log lines (server-everything logs the roots on a session's first call) share
    // the seqs.
    let logs = stderr.lines().filter(|line| line.starts_with('[')).count() as u64;
    assert!(
        seen.len() as u64 + dropped <= 5000 + logs && *seen.last().unwrap() <= 5000,
        "shown {} + dropped {dropped}\n{stderr}",
        seen.len()
    );
}

#[test]
fn server_log_lines_reach_the_cli_with_the_server_name() {
    let daemon = everything();
    // Logging is turned on first; its messages then go to every call that asked for events.
    let toggled = daemon.call_tool("everything", "toggle-simulated-logging", json!({}));
    assert!(text_content(&toggled).contains("Started"), "{toggled:#}");
    let output = daemon.run_client(
        &[
            "--progress",
            "everything",
            "trigger-long-running-operation",
            r#"{"duration": 6, "steps": 3}"#,
        ],
        &[],
    );
    let (stdout, stderr) = succeeded(&output);
    assert!(
        stdout.starts_with("Long running operation completed"),
        "{stdout}"
    );
    assert!(
        stderr.lines().any(|line| line.starts_with("[everything ")
            && (line.contains("-level message") || line.contains("level-message"))),
        "{stderr}"
    );
}

/// server-everything's long operation of 4 steps of 1 s each, with a 2.5 s timeout, and `extra`
/// params.
fn four_second_operation(
    daemon: &Daemon,
    extra: Value,
) -> Result<Value, tool_cli_protocol::ErrorObject> {
    let mut params = json!({"server": "everything", "tool": "trigger-long-running-operation",
                            "arguments": {"duration": 4, "steps": 4}, "timeoutMs": 2500});
    for (key, value) in extra.as_object().unwrap() {
        params[key] = value.clone();
    }
    daemon.rpc(name::CALL_TOOL, Some(params))
}

#[test]
fn reset_timeout_on_progress_lets_a_reporting_call_outlive_its_timeout_within_max_total() {
    let daemon = everything();
    // Each step (1 s) is shorter than the timeout (2.5 s), the whole (4 s) longer.
    let finished = four_second_operation(&daemon, json!({"resetTimeoutOnProgress": true}))
        .expect("progress restarts the timeout");
    assert_eq!(
        text_content(&finished),
        "Long running operation completed. Duration: 4 seconds, Steps: 4."
    );
    // With a progressId as well, the events are still relayed.
    let followed = four_second_operation(
        &daemon,
        json!({"resetTimeoutOnProgress": true, "progressId": "reset-1"}),
    )
    .expect("progress restarts the timeout");
    assert!(text_content(&followed).starts_with("Long running operation completed"));
    let page = daemon.call(
        name::CALL_EVENTS,
        json!({"progressId": "reset-1", "after": 0, "waitMs": 0}),
    );
    assert!(
        page["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "progress")
            .count()
            >= 3,
        "{page:#}"
    );

    // Without the flag the same call times out at 2.5 s.
    let timed_out = four_second_operation(&daemon, json!({})).unwrap_err();
    assert_eq!(timed_out.code, code::TIMEOUT, "{timed_out:?}");
    assert_eq!(timed_out.data.as_ref().unwrap()["timeoutMs"], 2500);

    // maxTotalTimeoutMs still cuts it: 3 s of progress every second is not enough for 4 s.
    let cut = four_second_operation(
        &daemon,
        json!({"resetTimeoutOnProgress": true, "maxTotalTimeoutMs": 3000}),
    )
    .unwrap_err();
    assert_eq!(cut.code, code::TIMEOUT, "{cut:?}");
    assert_eq!(cut.data.as_ref().unwrap()["timeoutMs"], 3000, "{cut:?}");

    // Bad combinations are named.
    let alone = four_second_operation(&daemon, json!({"maxTotalTimeoutMs": 3000})).unwrap_err();
    assert_eq!(alone.code, code::INVALID_PARAMS);
    assert!(
        alone.message.contains("applies only with"),
        "{}",
        alone.message
    );
    let zero = four_second_operation(
        &daemon,
        json!({"resetTimeoutOnProgress": true, "maxTotalTimeoutMs": 0}),
    )
    .unwrap_err();
    assert!(
        zero.message
            .contains("maxTotalTimeoutMs must be a positive"),
        "{}",
        zero.message
    );
    let wrong_type =
        four_second_operation(&daemon, json!({"resetTimeoutOnProgress": "yes"})).unwrap_err();
    assert!(
        wrong_type
            .message
            .contains(r#""resetTimeoutOnProgress"?: boolean"#),
        "{}",
        wrong_type.message
    );
}
