//! The MCP gateway over the daemon's Unix socket (`tool-cli-daemon --socket PATH`): `/mcp` is
//! served there behind the same gate as on TCP (only a peer of our own user is accepted, then
//! the bearer token decides, and no `Origin` passes since no page the daemon served can reach a
//! socket), driven by the official MCP Python SDK client over httpx's UDS transport, by
//! `tool-cli mcp` finding the socket (named by `TOOL_CLI_SOCKET`, and from the runtime file
//! alone), and by raw HTTP over the socket.
//!
//! Input → test:
//! - the Python SDK over the socket: a tool list, every progress step, a question answered:
//!   `the_python_sdk_reaches_the_gateway_over_the_socket`
//! - `tool-cli mcp` over the socket, found by `TOOL_CLI_SOCKET` and by the runtime file:
//!   `tool_cli_mcp_relays_over_the_socket`
//! - no token, a wrong token, a foreign `Origin`, then the owner token over raw HTTP on the
//!   socket: `the_socket_gateway_keeps_the_gate`

use std::io::{BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, DaemonOptions, HttpResponse, client_bin, http_request_bytes, random_hex,
    read_http_response, repo_root, scratch,
};

/// How long one SDK run may take.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(120);

/// Longest wait for one raw answer.
const WAIT: Duration = Duration::from_secs(30);

/// A daemon on a Unix socket in `sockets` (a directory it creates 0700), serving the
/// conformance upstream, which may ask the caller.
fn socket_daemon(sockets: &Path) -> (Daemon, PathBuf) {
    let socket = sockets.join("run").join("gw.sock");
    let daemon = Daemon::start_with_dir_and(
        |_| {
            json!({"mcpServers": {"conformance": {
                "command": tool_cli_tests::peer_python(),
                "args": [repo_root().join("tests/fixtures/conformance_server.py")],
                "elicitation": "ask",
            }}})
        },
        DaemonOptions {
            args: vec!["--socket".to_owned(), socket.to_string_lossy().into_owned()],
            ..DaemonOptions::default()
        },
    );
    assert_eq!(daemon.socket.as_deref(), Some(socket.as_path()));
    assert_eq!(daemon.port, 0, "no TCP port in socket mode");
    (daemon, socket)
}

fn progress_and_question() -> Value {
    json!([
        {"name": "conformance__test_tool_with_progress"},
        {"name": "conformance__test_elicitation", "arguments": {"message": "over the socket?"}},
    ])
}

/// Asserts the report of `progress_and_question`: every step, the question, its answer.
fn assert_progress_and_question(report: &Value) {
    let progress = report["calls"][0]["progress"]
        .as_array()
        .unwrap_or_else(|| panic!("no progress: {report}"));
    assert_eq!(
        progress,
        &[json!(0.0), json!(50.0), json!(100.0)],
        "every step, the last one too: {report}"
    );
    assert_eq!(
        report["questions"][0]["message"], "over the socket?",
        "{report}"
    );
    let said = report["calls"][1]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(said.contains("action=accept"), "{report}");
}

fn stream_client(args: &[String], env: &[(&str, String)]) -> Value {
    tool_cli_tests::python_driver_report(
        "mcp_gateway_stream_client.py",
        args,
        env,
        SCENARIO_TIMEOUT,
    )
}

#[test]
fn the_python_sdk_reaches_the_gateway_over_the_socket() {
    let sockets = scratch();
    let (daemon, socket) = socket_daemon(sockets.path());
    let args = vec![
        "--uds".to_owned(),
        socket.to_string_lossy().into_owned(),
        "--url".to_owned(),
        "http://localhost/mcp".to_owned(),
        "--token".to_owned(),
        daemon.token.clone(),
        "--calls".to_owned(),
        progress_and_question().to_string(),
    ];
    let report = stream_client(&args, &[]);
    assert_progress_and_question(&report);
}

#[test]
fn tool_cli_mcp_relays_over_the_socket() {
    let sockets = scratch();
    let (daemon, socket) = socket_daemon(sockets.path());
    let args = vec![
        "--command".to_owned(),
        client_bin().to_string_lossy().into_owned(),
        "--arg".to_owned(),
        "mcp".to_owned(),
        "--calls".to_owned(),
        progress_and_question().to_string(),
    ];
    // Named by hand: the socket and the token, with a runtime directory that holds nothing.
    let empty = scratch();
    let by_variable = [
        ("TOOL_CLI_SOCKET", socket.to_string_lossy().into_owned()),
        ("TOOL_CLI_TOKEN", daemon.token.clone()),
        (
            "TOOL_CLI_RUNTIME_DIR",
            empty.path().to_string_lossy().into_owned(),
        ),
    ];
    assert_progress_and_question(&stream_client(&args, &by_variable));
    // Found: the runtime file names the socket (and the token); nothing else is set.
    let by_runtime_file = [(
        "TOOL_CLI_RUNTIME_DIR",
        daemon.runtime_dir.to_string_lossy().into_owned(),
    )];
    assert_progress_and_question(&stream_client(&args, &by_runtime_file));
}

/// One raw HTTP exchange with the daemon over its socket.
fn socket_exchange(
    socket: &Path,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    let mut stream = UnixStream::connect(socket).expect("connect to the socket");
    stream.set_read_timeout(Some(WAIT)).expect("read timeout");
    stream
        .write_all(&http_request_bytes(method, "/mcp", headers, body))
        .expect("write the request");
    read_http_response(&mut BufReader::new(stream)).expect("an HTTP answer")
}

#[test]
fn the_socket_gateway_keeps_the_gate() {
    let sockets = scratch();
    let (daemon, socket) = socket_daemon(sockets.path());
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let bearer = format!("Bearer {}", daemon.token);
    let wrong = format!("Bearer {}", random_hex(32));
    let json_type = ("Content-Type", "application/json");

    let anonymous = socket_exchange(&socket, "POST", &[json_type], initialize.as_bytes());
    assert_eq!(anonymous.status, 401, "no token: {anonymous:?}");
    let forged = socket_exchange(
        &socket,
        "POST",
        &[json_type, ("Authorization", wrong.as_str())],
        initialize.as_bytes(),
    );
    assert_eq!(forged.status, 401, "a wrong token: {forged:?}");
    let page = socket_exchange(
        &socket,
        "POST",
        &[
            json_type,
            ("Authorization", bearer.as_str()),
            ("Origin", "http://localhost"),
        ],
        initialize.as_bytes(),
    );
    assert_eq!(page.status, 403, "an Origin: {page:?}");

    // The owner token opens a session; its tools are listed with server prefixes.
    let opened = socket_exchange(
        &socket,
        "POST",
        &[json_type, ("Authorization", bearer.as_str())],
        initialize.as_bytes(),
    );
    assert_eq!(opened.status, 200, "{opened:?}");
    let session = opened
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session: {opened:?}"))
        .to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let listed = socket_exchange(
        &socket,
        "POST",
        &[
            json_type,
            ("Authorization", bearer.as_str()),
            ("Mcp-Session-Id", session.as_str()),
        ],
        list.as_bytes(),
    );
    assert_eq!(listed.status, 200, "{listed:?}");
    let answer: Value = serde_json::from_slice(&listed.body).expect("a JSON answer");
    let names: Vec<&str> = answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {answer}"))
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(
        names.contains(&"conformance__test_simple_text"),
        "{names:?}"
    );
}
