//! Fast paths: a daemon id that names a live daemon lets a call go in one request (no identity
//! round trip, no `getBridgeInfo`), and one that does not still gets the identity check before
//! the token leaves; `--ready-when` lets a harness stop waiting for slow servers.
//!
//! - a live daemon's own id (from its runtime file) → the call works: `the_daemons_own_id_works`
//! - a live id → the first request on the wire is the call itself, with the token:
//!   `a_live_daemon_id_sends_the_call_as_the_first_request`
//! - a stale id (the process it names is gone or is another one) → `POST /identity` first and
//!   no token: `a_stale_daemon_id_still_gets_the_identity_check`
//! - `--print-env --ready-when first|none` prints before a slow server settles; a bad value is
//!   refused: `ready_when_first_or_none_does_not_wait_for_slow_servers`

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

/// Starts a daemon with `--print-env --ready-when WHEN` over `config`, reads what it prints up
/// to the end of its stdout, and returns the child, the port and the token.
fn start_printing(
    when: &str,
    config: &serde_json::Value,
) -> (std::process::Child, u16, String, tempfile::TempDir) {
    let dir = scratch();
    let config_path = dir.path().join("servers.json");
    std::fs::write(&config_path, config.to_string()).expect("write the config");
    let mut command = tool_cli_tests::daemon_command(&dir.path().join("runtime"));
    command
        .args(["--print-env", "--ready-when", when, "--config"])
        .arg(&config_path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = command.spawn().expect("start the daemon");
    let mut printed = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut printed)
        .expect("read what it printed");
    let value = |name: &str| {
        printed
            .lines()
            .find_map(|line| line.strip_prefix(&format!("export {name}=")))
            .unwrap_or_else(|| panic!("no {name} in {printed:?}"))
            .to_owned()
    };
    (
        child,
        value("TOOL_CLI_PORT").parse().expect("a port"),
        value("TOOL_CLI_TOKEN"),
        dir,
    )
}

/// The state of each server, from `listServers`.
fn states(port: u16, token: &str) -> Vec<(String, String)> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "listServers"}).to_string();
    let auth = format!("Bearer {token}");
    let (status, answer) = tool_cli_tests::http_post(
        port,
        "/",
        &[("Authorization", auth.as_str())],
        body.as_bytes(),
    );
    assert_eq!(status, 200);
    let answer: serde_json::Value = serde_json::from_slice(&answer).expect("JSON");
    answer["result"]["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .map(|server| {
            (
                server["name"].as_str().unwrap_or_default().to_owned(),
                server["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn stop(mut child: std::process::Child) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let _ = child.wait();
}

/// `--ready-when first` prints as soon as one server settled, while a server that takes ten
/// minutes to start is still connecting; `none` prints before any has; a bad value is refused
/// with the accepted ones. (`all`, the default, is what every other test waits for.)
#[test]
fn ready_when_first_or_none_does_not_wait_for_slow_servers() {
    let config = json!({"mcpServers": {
        "slow": fault_server(&["--slow-start", "600000"]),
        "fast": fault_server(&[]),
    }});
    let (child, port, token, _dir) = start_printing("first", &config);
    let seen = states(port, &token);
    assert!(
        seen.contains(&("fast".to_owned(), "ready".to_owned())),
        "{seen:?}"
    );
    let slow = seen
        .iter()
        .find(|(name, _)| name == "slow")
        .expect("slow listed");
    assert_ne!(slow.1, "ready", "{seen:?}");
    stop(child);

    let only_slow = json!({"mcpServers": {"slow": fault_server(&["--slow-start", "600000"])}});
    let (child, port, token, _dir) = start_printing("none", &only_slow);
    let seen = states(port, &token);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_ne!(seen[0].1, "ready", "{seen:?}");
    stop(child);

    let output = run_with_timeout(
        {
            let mut command = tool_cli_tests::daemon_command(&scratch().path().join("runtime"));
            command.args(["--print-env", "--ready-when", "soon"]);
            command
        },
        Duration::from_secs(30),
    );
    assert_eq!(output.status.code(), Some(2));
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(
        message.contains("first") && message.contains("none"),
        "{message}"
    );
}
