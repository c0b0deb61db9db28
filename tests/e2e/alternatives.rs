//! `callTool {alternatives: true}` when the server is down or its breaker open: a read-only
//! tool is tried once on the best other server offering the same tool with a schema that
//! accepts the arguments (rule `alternative`, in the result's selection and in the trace); any
//! other failure, or a tool that is not read-only, only names alternatives.
//!
//! Real child processes: two fault servers, `flaky` and `steady`, both offering the read-only
//! `echo` and `sleep` and the not read-only `crash`. `flaky`'s breaker is opened by timeouts.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_cli_protocol::{ErrorData, code};
use tool_cli_tests::{Daemon, count_recorded, fault_server_recording};

/// A daemon over `flaky` and `steady` (each recording what it is sent), tracing to a file in
/// its dir; returns it and the trace file.
fn flaky_and_steady() -> (Daemon, std::path::PathBuf) {
    let daemon = Daemon::start_with_dir(|dir| {
        json!({
            "mcpServers": {
                "flaky": fault_server_recording(&dir.join("flaky.jsonl"), &[]),
                "steady": fault_server_recording(&dir.join("steady.jsonl"), &[]),
            },
            "traces": {"path": dir.join("traces.jsonl")},
        })
    });
    let traces = daemon.dir().join("traces.jsonl");
    (daemon, traces)
}

/// Times out `sleep` calls on `flaky` until `health` says its breaker is open (five suffice on
/// a quiet machine; a call whose time ran out before it was sent does not count, so at most 30).
fn open_flaky_breaker(daemon: &Daemon) {
    let open = |daemon: &Daemon| {
        daemon.call("health", Value::Null)["servers"]
            .as_array()
            .expect("servers")
            .iter()
            .any(|server| server["name"] == "flaky" && server["breaker"]["state"] == "open")
    };
    let mut calls = 0;
    while !open(daemon) {
        assert!(calls < 30, "flaky's breaker never opened");
        calls += 1;
        let error = daemon.call_err(
            "callTool",
            json!({"server": "flaky", "tool": "sleep", "arguments": {"ms": 2000},
                   "timeoutMs": 100}),
        );
        assert!(
            error.code == code::TIMEOUT || error.code == code::CIRCUIT_OPEN,
            "{error:?}"
        );
    }
}

/// Waits until `server`'s catalog in the daemon lists `tool`.
fn wait_for_tool(daemon: &Daemon, server: &str, tool: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while daemon
        .rpc(
            "describeTool",
            Some(json!({"server": server, "tool": tool})),
        )
        .is_err()
    {
        assert!(Instant::now() < deadline, "{server}/{tool} never listed");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn recorded(daemon: &Daemon, server: &str, tool: &str) -> usize {
    count_recorded(
        &daemon.dir().join(format!("{server}.jsonl")),
        "tools/call",
        Some(tool),
    )
}

/// The trace lines once one of them is the stand-in's (rule `alternative`).
fn trace_lines(daemon: &Daemon, path: &Path) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        // Only whole lines: the daemon may be writing the next one as this reads the file.
        let whole = text.rfind('\n').map_or("", |end| &text[..end]);
        let lines: Vec<Value> = whole
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON trace line"))
            .collect();
        if lines
            .iter()
            .any(|line| line["selectionRule"] == "alternative")
        {
            return lines;
        }
        assert!(
            Instant::now() < deadline,
            "no stand-in among {} trace lines: {:#}",
            lines.len(),
            daemon.call("health", Value::Null)["traces"]
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_read_only_call_to_a_down_server_runs_on_another_that_offers_it() {
    let (daemon, traces) = flaky_and_steady();
    open_flaky_breaker(&daemon);
    let flaky_echoes = recorded(&daemon, "flaky", "echo");

    // Without the flag: the open circuit is the answer.
    let error = daemon.call_err(
        "callTool",
        json!({"server": "flaky", "tool": "echo", "arguments": {"nonce": "plain"}}),
    );
    assert_eq!(error.code, code::CIRCUIT_OPEN, "{error:?}");

    // With it: `steady` answers, and the selection says why.
    let result = daemon.call(
        "callTool",
        json!({"server": "flaky", "tool": "echo", "arguments": {"nonce": "moved"},
               "alternatives": true}),
    );
    assert_eq!(result["structuredContent"]["nonce"], "moved", "{result:#}");
    let selection = &result["_meta"]["tool-cli/selection"];
    assert_eq!(selection["rule"], "alternative", "{selection:#}");
    assert_eq!(selection["server"], "steady", "{selection:#}");
    assert_eq!(
        selection["alternatives"],
        json!([{"server": "flaky", "rejectedBy": "alternative"}]),
        "{selection:#}"
    );
    assert_eq!(recorded(&daemon, "steady", "echo"), 1);
    assert_eq!(
        recorded(&daemon, "flaky", "echo"),
        flaky_echoes,
        "nothing reaches a server whose circuit is open"
    );

    // The trace has the refused call and, as its child, the call that ran instead.
    let lines = trace_lines(&daemon, &traces);
    let refused = lines
        .iter()
        .rev()
        .find(|line| line["server"] == "flaky" && line["tool"] == "echo")
        .expect("the refused call's line");
    assert_eq!(refused["success"], false, "{refused:#}");
    assert_eq!(refused["executed"], false, "{refused:#}");
    let moved = lines
        .iter()
        .find(|line| line["selectionRule"] == "alternative")
        .expect("the stand-in's line");
    assert_eq!(moved["server"], "steady", "{moved:#}");
    assert_eq!(moved["success"], true, "{moved:#}");
    assert_eq!(moved["parentCallId"], refused["callId"], "{moved:#}");
    assert_eq!(moved["depth"], 1, "{moved:#}");
}

#[test]
fn only_read_only_tools_another_server_offers_move_and_other_failures_only_suggest() {
    let (daemon, _traces) = flaky_and_steady();
    // A read-only tool of flaky's alone (an echo copy), listed before its breaker opens.
    let changed = daemon.call_tool("flaky", "change_tools", json!({"add": "only_flaky"}));
    assert_eq!(changed["content"][0]["text"], "changed", "{changed:#}");
    wait_for_tool(&daemon, "flaky", "only_flaky");
    open_flaky_breaker(&daemon);

    // `crash` is not read-only: it is not run elsewhere; the answer names alternatives.
    let error = daemon.call_err(
        "callTool",
        json!({"server": "flaky", "tool": "crash", "arguments": {"code": 1},
               "alternatives": true}),
    );
    assert_eq!(error.code, code::CIRCUIT_OPEN, "{error:?}");
    let data = error.data.clone().expect("error data");
    assert!(data["alternatives"].is_array(), "{data:#}");
    assert_eq!(recorded(&daemon, "steady", "crash"), 0);

    // A tool no other server offers: nothing runs, the circuit is the answer.
    let error = daemon.call_err(
        "callTool",
        json!({"server": "flaky", "tool": "only_flaky", "arguments": {"nonce": "x"},
               "alternatives": true}),
    );
    assert_eq!(error.code, code::CIRCUIT_OPEN, "{error:?}");
    assert_eq!(recorded(&daemon, "steady", "only_flaky"), 0);
    assert_eq!(recorded(&daemon, "steady", "echo"), 0);

    // A timeout (the call may have had effects) is not moved either.
    let error = daemon.call_err(
        "callTool",
        json!({"server": "steady", "tool": "sleep", "arguments": {"ms": 2000},
               "timeoutMs": 100, "alternatives": true}),
    );
    assert_eq!(error.code, code::TIMEOUT, "{error:?}");
    match serde_json::from_value::<ErrorData>(error.data.clone().unwrap()) {
        Ok(ErrorData::Timeout { server, .. }) => assert_eq!(server, "steady"),
        other => panic!("expected a timeout on steady: {other:?} {error:?}"),
    }
}
