//! The client's fast path: a daemon id that names a live daemon lets a call go in one request
//! (no identity round trip, no `getBridgeInfo`), and one that does not still gets the identity
//! check before the token leaves.
//!
//! - a live daemon's own id (from its runtime file) → the call works: `the_daemons_own_id_works`
//! - a live id → the first request on the wire is the call itself, with the token:
//!   `a_live_daemon_id_sends_the_call_as_the_first_request`
//! - a stale id (the process it names is gone or is another one) → `POST /identity` first and
//!   no token: `a_stale_daemon_id_still_gets_the_identity_check`

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::time::Duration;

use serde_json::json;
use tool_cli_protocol::runtime::{DaemonId, start_ticks_from_stat};
use tool_cli_tests::{Daemon, client_command, fault_server, run_with_timeout, scratch};

const TOKEN_HEX: &str = "ab";

fn token() -> String {
    TOKEN_HEX.repeat(32)
}

/// The id of this test process: a live process, so it vouches for whatever address it is
/// put beside (which is exactly the trust the id carries).
fn this_process_id(start_ticks_offset: u64) -> String {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").expect("boot_id");
    DaemonId {
        bridge_major: tool_cli_protocol::BRIDGE_PROTOCOL_MAJOR,
        pid: std::process::id(),
        start_ticks: start_ticks_from_stat(&stat).expect("start time") + start_ticks_offset,
        boot_id: boot.trim().to_owned(),
    }
    .to_string()
}

/// Reads one HTTP request (head and `Content-Length` body) as text.
fn read_request(reader: &mut BufReader<std::net::TcpStream>) -> String {
    let mut head = String::new();
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).expect("read a header line") == 0 {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().expect("a length");
        }
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("read the body");
    head + &String::from_utf8_lossy(&body)
}

/// Runs `tool-cli alpha echo` against a listener of ours with `daemon_id`; returns the first
/// request it received and the client's output. The listener answers a JSON-RPC request with
/// a text result and anything else by closing.
fn first_request_with(daemon_id: &str) -> (String, std::process::Output) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let request = read_request(&mut reader);
        if request.starts_with("POST / ") {
            let body = json!({"jsonrpc": "2.0", "id": 1,
                              "result": {"content": [{"type": "text", "text": "one trip"}]}})
            .to_string();
            let mut stream = stream;
            write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )
            .expect("answer");
        }
        request
    });
    let mut command = client_command();
    command
        .args(["alpha", "echo", r#"{"nonce": "n"}"#])
        .env("TOOL_CLI_PORT", port.to_string())
        .env("TOOL_CLI_TOKEN", token())
        .env("TOOL_CLI_DAEMON_ID", daemon_id)
        .env("TOOL_CLI_RUNTIME_DIR", scratch().path());
    let output = run_with_timeout(command, Duration::from_secs(30));
    (server.join().expect("the listener thread"), output)
}

#[test]
fn a_live_daemon_id_sends_the_call_as_the_first_request() {
    let (request, output) = first_request_with(&this_process_id(0));
    assert!(request.starts_with("POST / "), "{request}");
    assert!(
        request.contains(&format!("Bearer {}", token())),
        "{request}"
    );
    assert!(request.contains(r#""method":"callTool""#), "{request}");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "one trip");
}

#[test]
fn a_stale_daemon_id_still_gets_the_identity_check() {
    // Same pid, another start time: the process the id named is gone.
    let (request, output) = first_request_with(&this_process_id(1));
    assert!(request.starts_with("POST /identity "), "{request}");
    assert!(!request.contains(&token()), "the token left: {request}");
    assert_ne!(output.status.code(), Some(0));
    // A garbled id is no id at all.
    let (request, _) = first_request_with("not-an-id");
    assert!(request.starts_with("POST /identity "), "{request}");
    assert!(!request.contains(&token()), "the token left: {request}");
}

#[test]
fn the_daemons_own_id_works() {
    let daemon = Daemon::start(json!({"mcpServers": {"alpha": fault_server(&[])}}));
    let daemon_id = daemon
        .read_runtime_file()
        .daemon_id
        .expect("the daemon writes its id in the runtime file");
    let id = DaemonId::parse(&daemon_id).expect("a well-formed id");
    assert_eq!(id.pid, daemon.pid());
    let output = daemon.run_client(
        &["alpha", "echo", r#"{"nonce": "fast"}"#],
        &[("TOOL_CLI_DAEMON_ID", daemon_id.as_str())],
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("fast"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}
