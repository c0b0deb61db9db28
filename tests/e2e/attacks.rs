//! Attacks an outside team would try first, each found to get a wrong answer from the daemon
//! before its fix (or to have no test yet): JSON-RPC ids that are `null` or hold a lone UTF-16
//! surrogate, a request body trickled in forever, client text that forges daemon log lines, params by position, and
//! tool names probed by a scoped token. The HTTP requests are written byte by byte over loopback; the
//! daemon, its log and the fault server are the real ones.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_cli_protocol::code;
use tool_cli_tests::{Daemon, eventually, fault_server, fault_server_recording, scratch};

const BRIDGE_INFO: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"getBridgeInfo"}"#;

/// How long a connection trickling its body may stay open before the test gives up on the
/// daemon closing it: far above the daemon's body-read timeout.
const TRICKLE_BOUND: Duration = Duration::from_secs(40);

fn fault_daemon() -> Daemon {
    Daemon::start(json!({"mcpServers": {"alpha": fault_server(&[])}}))
}

fn post_json(daemon: &Daemon, body: &[u8]) -> (u16, Value) {
    let (status, answer) = daemon.post(body);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let value = serde_json::from_slice(&answer)
        .unwrap_or_else(|error| panic!("status {status}, not JSON ({error}): {text:?}"));
    (status, value)
}

fn assert_still_serving(daemon: &Daemon) {
    let (status, answer) = post_json(daemon, BRIDGE_INFO);
    assert_eq!(status, 200);
    assert!(answer["result"].is_object(), "{answer}");
}

#[test]
fn a_request_with_a_null_id_is_run_and_answered_under_a_null_id() {
    let dir = scratch();
    let record = dir.path().join("received.jsonl");
    let daemon =
        Daemon::start(json!({"mcpServers": {"alpha": fault_server_recording(&record, &[])}}));
    // JSON-RPC 2.0: a request is a notification only when it has no `id` member at all; an
    // `id` of null is a request (discouraged, but answered), as docs/protocol.md says.
    let request = json!({"jsonrpc": "2.0", "id": null, "method": "callTool",
        "params": {"server": "alpha", "tool": "echo", "arguments": {"nonce": "null-id"}}});
    let (status, answer) = post_json(&daemon, request.to_string().as_bytes());
    assert_eq!(status, 200);
    assert!(answer["id"].is_null(), "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["nonce"], "null-id",
        "{answer}"
    );
    let calls = tool_cli_tests::count_recorded(&record, "tools/call", Some("echo"));
    assert_eq!(calls, 1, "the call ran once");

    // In a batch, beside a notification that is still not run.
    let batch = json!([
        {"jsonrpc": "2.0", "id": null, "method": "getBridgeInfo"},
        {"jsonrpc": "2.0", "method": "callTool",
         "params": {"server": "alpha", "tool": "echo", "arguments": {"nonce": "ghost"}}},
    ]);
    let (status, answer) = post_json(&daemon, batch.to_string().as_bytes());
    assert_eq!(status, 200);
    let answers = answer.as_array().expect("a batch answer is an array");
    assert_eq!(answers.len(), 1, "{answer}");
    assert!(answers[0]["id"].is_null() && answers[0]["result"].is_object());
    assert_eq!(
        tool_cli_tests::count_recorded(&record, "tools/call", Some("echo")),
        1
    );
}

#[test]
fn an_id_holding_a_lone_surrogate_is_an_invalid_request() {
    let daemon = fault_daemon();
    // `"\ud800"` is valid JSON text but no Unicode string: it cannot be echoed back as an id.
    let single = br#"{"jsonrpc":"2.0","id":"\ud800","method":"getBridgeInfo"}"#;
    let (status, answer) = post_json(&daemon, single);
    assert_eq!(status, 200);
    assert!(answer.is_object(), "{answer}");
    assert_eq!(answer["error"]["code"], code::INVALID_REQUEST, "{answer}");
    assert!(answer["id"].is_null(), "{answer}");

    let batch = br#"[{"jsonrpc":"2.0","id":"\ud800","method":"getBridgeInfo"},{"jsonrpc":"2.0","id":"\ud800\udc00","method":"getBridgeInfo"}]"#;
    let (status, answer) = post_json(&daemon, batch);
    assert_eq!(status, 200);
    let answers = answer.as_array().expect("a batch answer is an array");
    assert_eq!(answers.len(), 2, "{answer}");
    assert_eq!(
        answers[0]["error"]["code"],
        code::INVALID_REQUEST,
        "{answer}"
    );
    // A surrogate pair is a real character (U+10000) and an ordinary id.
    assert_eq!(answers[1]["id"], "\u{10000}", "{answer}");
    assert!(answers[1]["result"].is_object(), "{answer}");
    assert_still_serving(&daemon);
}

#[test]
fn a_body_trickled_in_forever_is_cut_off() {
    let daemon = fault_daemon();
    let mut stream = TcpStream::connect(("127.0.0.1", daemon.port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("read timeout");
    // A complete, authorized head promising a body within the size limit, then one byte of it
    // every half second: each byte arrives long before any per-read timeout, the whole never.
    let head = format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\
         Content-Length: 100000\r\n\r\n",
        daemon.port, daemon.token
    );
    stream.write_all(head.as_bytes()).expect("send the head");
    let started = Instant::now();
    let mut answer = Vec::new();
    let mut closed = false;
    let mut served_meanwhile = false;
    for byte in 0.. {
        if started.elapsed() > TRICKLE_BOUND {
            break;
        }
        let mut buffer = [0u8; 512];
        match stream.read(&mut buffer) {
            Ok(0) => {
                closed = true;
                break;
            }
            Ok(read) => answer.extend_from_slice(&buffer[..read]),
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => {
                closed = true;
                break;
            }
        }
        if stream.write_all(b" ").is_err() {
            closed = true;
            break;
        }
        if byte == 2 {
            assert_still_serving(&daemon);
            served_meanwhile = true;
        }
    }
    assert!(
        closed,
        "a connection trickling its body was still open after {TRICKLE_BOUND:?}"
    );
    assert!(served_meanwhile);
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "either closed or told 408: {answer:?}"
    );
    assert_still_serving(&daemon);
}

#[test]
fn client_text_cannot_forge_daemon_log_lines_or_reach_its_terminal() {
    let daemon = fault_daemon();
    // A tool name (any client may send one) and a server name, each with a line break that
    // would start a forged log line and escape sequences that would retitle and clear the
    // terminal the daemon logs to.
    let forged_tool = "nope\n2026-01-01T00:00:00Z ERROR FORGED-BY-TOOL\u{1b}]0;pwned\u{7}\u{1b}[2J";
    let forged_server = "alpha\rFORGED-BY-SERVER\u{1b}[8m\u{9b}31m";
    for (server, tool) in [("alpha", forged_tool), (forged_server, "echo")] {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "callTool",
            "params": {"server": server, "tool": tool, "arguments": {}}});
        let (_, answer) = post_json(&daemon, request.to_string().as_bytes());
        assert!(answer["error"].is_object(), "{answer}");
    }
    assert!(
        eventually(Duration::from_secs(10), || {
            let log = daemon.stderr();
            log.contains("FORGED-BY-TOOL") && log.contains("FORGED-BY-SERVER")
        }),
        "both calls are logged: {}",
        daemon.stderr()
    );
    let log = daemon.stderr();
    for line in log.lines() {
        assert!(
            !line.starts_with("2026-01-01") && !line.starts_with("FORGED"),
            "a forged log line: {line:?}"
        );
    }
    assert!(!log.contains('\r'), "a carriage return reached the log");
    assert!(
        !log.contains('\u{1b}') && !log.contains('\u{7}') && !log.contains('\u{9b}'),
        "an escape sequence reached the log: {log:?}"
    );
}

#[test]
fn params_by_position_follow_the_documented_member_order() {
    let dir = scratch();
    let record = dir.path().join("received.jsonl");
    let daemon =
        Daemon::start(json!({"mcpServers": {"alpha": fault_server_recording(&record, &[])}}));
    // docs/protocol.md, "Compatibility rules": positional params are accepted in member order,
    // the order of each method's heading (`callTool`: server, tool, arguments, …).
    let request = json!({"jsonrpc": "2.0", "id": 7, "method": "callTool",
        "params": ["alpha", "echo", {"nonce": "positional"}]});
    let (status, answer) = post_json(&daemon, request.to_string().as_bytes());
    assert_eq!(status, 200);
    assert_eq!(
        answer["result"]["structuredContent"]["nonce"], "positional",
        "{answer}"
    );
    // A value in the wrong position is a type error naming the member, and nothing runs.
    let request = json!({"jsonrpc": "2.0", "id": 8, "method": "callTool",
        "params": [{"nonce": "swapped"}, "alpha", "echo"]});
    let (_, answer) = post_json(&daemon, request.to_string().as_bytes());
    assert_eq!(answer["error"]["code"], code::INVALID_PARAMS, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(r#""tool": string"#), "{message}");
    assert_eq!(
        tool_cli_tests::count_recorded(&record, "tools/call", None),
        1,
        "only the well-formed call ran"
    );
}

/// The error a token gets, as `(code, message)` with the tool's name replaced by `TOOL`, so two
/// answers can be compared for what they reveal beyond the name the caller chose.
fn refusal(daemon: &Daemon, token: &str, method: &str, params: Value, tool: &str) -> (i32, String) {
    let error = daemon
        .rpc_as(token, method, Some(params))
        .expect_err("refused");
    (error.code, error.message.replace(tool, "TOOL"))
}

#[test]
fn a_scoped_token_cannot_tell_hidden_tools_from_missing_ones() {
    let daemon = Daemon::start(json!({"mcpServers": {
        "alpha": fault_server(&[]),
    }}));
    let globbed = daemon.call("mintToken", json!({"tools": ["alpha/echo"]}))["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let read_only =
        daemon.call("mintToken", json!({"servers": ["alpha"], "readOnly": true}))["token"]
            .as_str()
            .unwrap()
            .to_owned();
    // `crash` exists (outside the glob, and not read-only); `no_such_tool` does not.
    for token in [&globbed, &read_only] {
        for method in ["describeTool", "callTool"] {
            let ask = |tool: &str| {
                let params = json!({"server": "alpha", "tool": tool, "arguments": {}});
                refusal(&daemon, token, method, params, tool)
            };
            let hidden = ask("crash");
            let missing = ask("no_such_tool");
            assert_eq!(hidden.0, code::FORBIDDEN, "{method}: {hidden:?}");
            assert_eq!(hidden, missing, "{method}: the answers must not differ");
        }
    }
    // The owner is still told a tool does not exist, with the closest names.
    let error = daemon.call_err(
        "callTool",
        json!({"server": "alpha", "tool": "ecko", "arguments": {}}),
    );
    assert_eq!(error.code, code::INVALID_PARAMS);
    assert!(error.message.contains("echo"), "{}", error.message);
    // A scoped token is told a tool does not exist when the name is within its scope, with
    // the closest names it may see.
    let prefixed = daemon.call("mintToken", json!({"tools": ["alpha/e*"]}))["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let error = daemon
        .rpc_as(
            &prefixed,
            "callTool",
            Some(json!({"server": "alpha", "tool": "ech", "arguments": {}})),
        )
        .expect_err("unknown");
    assert_eq!(error.code, code::INVALID_PARAMS, "{}", error.message);
    assert!(error.message.contains("echo"), "{}", error.message);
    assert!(!error.message.contains("crash"), "{}", error.message);
}

#[test]
fn a_cancel_agent_error_names_cancel_agent() {
    let daemon = fault_daemon();
    let error = daemon.call_err("cancelAgent", json!({"runId": "never-started"}));
    assert_eq!(error.code, code::INVALID_PARAMS);
    assert!(
        error.message.starts_with("invalid params for cancelAgent:"),
        "{}",
        error.message
    );
}

#[test]
fn an_endless_argument_file_is_refused_not_read_until_memory_runs_out() {
    let dir = scratch();
    let record = dir.path().join("received.jsonl");
    let daemon =
        Daemon::start(json!({"mcpServers": {"alpha": fault_server_recording(&record, &[])}}));
    for args in [
        &["alpha", "echo", "nonce=@/dev/zero"][..],
        &["alpha", "echo", "--args-file", "/dev/zero"][..],
    ] {
        // Within the harness's client timeout, or the test fails: it used to read forever.
        let output = daemon.run_client(args, &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("/dev/zero") && stderr.contains("larger than 64 MiB"),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(
        tool_cli_tests::count_recorded(&record, "tools/call", None),
        0,
        "nothing was called"
    );
}

/// Writes `request` on a fresh connection and reads until the daemon closes it (or 10 s pass).
fn exchange_until_closed(daemon: &Daemon, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", daemon.port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    // The daemon may answer and close before reading everything; what it answered counts.
    let _ = stream.write_all(request);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

fn request_bytes(daemon: &Daemon, extra_headers: &str, body: &[u8], token: bool) -> Vec<u8> {
    let authorization = if token {
        format!("Authorization: Bearer {}\r\n", daemon.token)
    } else {
        String::new()
    };
    let mut bytes = format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{authorization}{extra_headers}\r\n",
        daemon.port
    )
    .into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

#[test]
fn a_request_with_both_content_length_and_chunked_cannot_smuggle_a_second_one() {
    let daemon = fault_daemon();
    // Framed by Transfer-Encoding (which wins), the body is the bridge-info request and the
    // smuggled request follows; framed by the Content-Length of 4, everything after the first
    // 4 bytes would be a second request. Either the daemon refuses the message or it answers
    // the one request and closes: the smuggled one is never answered.
    let smuggled = format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\
         Content-Length: {}\r\n\r\n{}",
        daemon.port,
        daemon.token,
        BRIDGE_INFO.len(),
        String::from_utf8_lossy(BRIDGE_INFO)
    );
    let mut body = format!("{:x}\r\n", BRIDGE_INFO.len()).into_bytes();
    body.extend_from_slice(BRIDGE_INFO);
    body.extend_from_slice(b"\r\n0\r\n\r\n");
    body.extend_from_slice(smuggled.as_bytes());
    let request = request_bytes(
        &daemon,
        "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n",
        &body,
        true,
    );
    let answer = exchange_until_closed(&daemon, &request);
    assert_eq!(
        answer.matches("HTTP/1.1 ").count(),
        1,
        "exactly one response, then the connection closed: {answer}"
    );
    assert_still_serving(&daemon);
}

#[test]
fn pipelined_requests_are_each_authorized_on_their_own() {
    let daemon = fault_daemon();
    let listing =
        |id: u32| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"listServers"}}"#).into_bytes();
    let length = |body: &[u8]| format!("Content-Length: {}\r\n", body.len());
    let mut request = Vec::new();
    for (id, token) in [(1, true), (2, false), (3, true)] {
        let body = listing(id);
        let close = if id == 3 { "Connection: close\r\n" } else { "" };
        request.extend(request_bytes(
            &daemon,
            &format!("{}{close}", length(&body)),
            &body,
            token,
        ));
    }
    let answer = exchange_until_closed(&daemon, &request);
    let statuses: Vec<&str> = answer
        .match_indices("HTTP/1.1 ")
        .map(|(at, _)| &answer[at + 9..at + 12])
        .collect();
    assert_eq!(statuses, ["200", "401", "200"], "{answer}");
    assert!(answer.contains(r#""id":1"#) && answer.contains(r#""id":3"#));
    assert!(!answer.contains(r#""id":2"#), "{answer}");
}

#[test]
fn an_http2_prior_knowledge_preface_is_closed_unanswered() {
    let daemon = fault_daemon();
    // The client preface and an empty SETTINGS frame: the daemon speaks HTTP/1.1 only.
    let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
    let answer = exchange_until_closed(&daemon, preface);
    assert!(
        !answer.contains("HTTP/1.1 200") && !answer.contains("jsonrpc"),
        "{answer}"
    );
    assert_still_serving(&daemon);
}

#[test]
fn a_server_flooding_log_notifications_cannot_flood_the_daemon_log() {
    let daemon = fault_daemon();
    let line = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"FLOOD-LINE"}}"#;
    let result = daemon.call_tool(
        "alpha",
        "raw_lines",
        json!({"lines": vec![line; 2000], "answer": "after the flood"}),
    );
    assert_eq!(result["content"][0]["text"], "after the flood");
    let logged = daemon.stderr().matches("FLOOD-LINE").count();
    assert!(
        logged < 500,
        "{logged} of 2000 log notifications of one server reached the daemon's log"
    );
}
