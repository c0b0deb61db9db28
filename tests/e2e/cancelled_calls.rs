//! Calls whose caller goes away before the answer still leave exactly one trace line and a
//! count in `health` (ARCHITECTURE: every call produces exactly one `CallRecord`):
//!
//! - a real `tool-cli` process interrupted with SIGINT (Ctrl-C) mid-call:
//!   `a_tool_cli_call_interrupted_with_ctrl_c_leaves_one_cancelled_trace_line_and_a_count`
//! - a raw HTTP client that drops its connection mid-call:
//!   `a_dropped_connection_mid_call_leaves_one_cancelled_trace_line`
//!
//! Each waits on events (the fault server's record of the `tools/call`, the client's exit, the
//! trace writer's count in `health`), never on fixed sleeps.

use std::io::Write as _;
use std::net::TcpStream;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::code;
use tool_cli_protocol::methods::name;
use tool_cli_tests::{Daemon, count_recorded, eventually_some, fault_server_recording};

/// Longest wait for any one event.
const WAIT: Duration = Duration::from_secs(30);

/// A daemon serving the fault server as `fault` (recording what reaches it), tracing to a file
/// in its dir; returns it, the trace file and the record file.
fn traced_fault_daemon() -> (Daemon, PathBuf, PathBuf) {
    let daemon = Daemon::start_with_dir(|dir| {
        json!({
            "mcpServers": {"fault": fault_server_recording(&dir.join("record.jsonl"), &[])},
            "traces": {"path": dir.join("traces.jsonl")},
        })
    });
    let traces = daemon.dir().join("traces.jsonl");
    let record = daemon.dir().join("record.jsonl");
    (daemon, traces, record)
}

/// The trace file's lines, once the writer says it wrote `count`.
fn trace_lines(daemon: &Daemon, path: &Path, count: u64) -> Vec<Value> {
    eventually_some(WAIT, || {
        let health = daemon.call(name::HEALTH, Value::Null);
        (health["traces"]["written"] == count).then_some(())
    })
    .expect("never happened: the trace writer wrote the line");
    std::fs::read_to_string(path)
        .expect("read the trace file")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

/// What both cases check once the caller is gone: one cancelled line, the server told, the
/// counts in `health`.
fn assert_one_cancelled_call(daemon: &Daemon, traces: &Path, record: &Path) {
    // The daemon cancels the abandoned request at the server.
    eventually_some(WAIT, || {
        (count_recorded(record, "notifications/cancelled", None) == 1).then_some(())
    })
    .expect("never happened: notifications/cancelled reached the server");
    let lines = trace_lines(daemon, traces, 1);
    assert_eq!(lines.len(), 1, "exactly one line: {lines:#?}");
    let line = &lines[0];
    assert_eq!(line["server"], "fault");
    assert_eq!(line["tool"], "sleep");
    assert_eq!(line["success"], false);
    assert_eq!(line["executed"], true, "it had reached the server: {line}");
    assert_eq!(line["attempt"], 1);
    assert_eq!(line["error"]["kind"], "cancelled");
    assert_eq!(line["error"]["code"], code::CANCELLED);
    assert!(
        line["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the caller went away before the answer"),
        "{line}"
    );

    let health = daemon.call(name::HEALTH, json!({"tools": true}));
    let server = &health["servers"][0];
    assert_eq!(server["name"], "fault");
    assert_eq!(server["cancelled"], 1, "{server:#}");
    // The caller left; the server did nothing wrong.
    assert_eq!(server["errors"], 0, "{server:#}");
    assert_eq!(server["tools"][0]["name"], "sleep");
    assert_eq!(server["tools"][0]["calls"], 1);
    assert_eq!(server["tools"][0]["successes"], 0);
    eventually_some(WAIT, || {
        let health = daemon.call(name::HEALTH, Value::Null);
        (health["servers"][0]["inFlight"] == 0).then_some(())
    })
    .expect("never happened: the slot was given back");
}

#[test]
fn a_tool_cli_call_interrupted_with_ctrl_c_leaves_one_cancelled_trace_line_and_a_count() {
    let (daemon, traces, record) = traced_fault_daemon();
    let mut command = daemon.client_command();
    command
        .args(["fault", "sleep", r#"{"ms": 600000}"#])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut client = command.spawn().expect("spawn tool-cli");
    // The call has started once the server has it.
    eventually_some(WAIT, || {
        (count_recorded(&record, "tools/call", Some("sleep")) == 1).then_some(())
    })
    .expect("never happened: the server received the tools/call");
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our unreaped child.
    let rc = unsafe { libc::kill(client.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0);
    let status = eventually_some(WAIT, || client.try_wait().expect("try_wait"))
        .expect("never happened: tool-cli exited after SIGINT");
    assert!(
        status.signal() == Some(libc::SIGINT) || status.code() == Some(130),
        "interrupted, not finished: {status:?}"
    );
    assert_one_cancelled_call(&daemon, &traces, &record);
}

#[test]
fn a_dropped_connection_mid_call_leaves_one_cancelled_trace_line() {
    let (daemon, traces, record) = traced_fault_daemon();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": name::CALL_TOOL,
                      "params": {"server": "fault", "tool": "sleep", "arguments": {"ms": 600000}}})
    .to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", daemon.port)).expect("connect");
    write!(
        stream,
        "POST / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        daemon.port,
        daemon.token,
        body.len()
    )
    .expect("send the request");
    eventually_some(WAIT, || {
        (count_recorded(&record, "tools/call", Some("sleep")) == 1).then_some(())
    })
    .expect("never happened: the server received the tools/call");
    drop(stream);
    assert_one_cancelled_call(&daemon, &traces, &record);
}
