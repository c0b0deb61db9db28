//! The daemon's HTTP edge and its compatibility with the reference 1.x bridge: what a request
//! may look like to be served (any content type with a JSON body, `--allow-host` names, absolute
//! request targets, transfer codings), what every refusal looks like (an empty body), how answers
//! too large for one response travel (spilled to a file and paged), what a batch answers, how a
//! call outliving the shutdown grace is answered, the error `data` fields the reference's scripts
//! read, and how quiet the default log is.
//!
//! Input → test:
//! - default logging, 30 requests of every kind → no per-request log line, the startup line
//!   present; `RUST_LOG` still overrides: `the_default_log_has_nothing_per_request`
//! - `Host: host.docker.internal:<port>` → 403 by default; 200 with `--allow-host
//!   host.docker.internal` or `TOOL_CLI_ALLOW_HOSTS`, other names still 403, the identity proof
//!   bound to that name: `allow_host_admits_exactly_the_named_host`
//! - `POST http://evil.example/ HTTP/1.1` with a good `Host` → 403; an absolute target naming
//!   us → 200: `an_absolute_form_target_must_name_us`
//! - `Transfer-Encoding: gzip, chunked` (a real gzip body) → 501, empty:
//!   `a_transfer_coding_other_than_chunked_is_501`
//! - every refusal (405, 403 ×3, 400 ×2, 404, 401, 501, a lying `Content-Length`) has an
//!   empty body, and 413 (×2: declared, chunked) a JSON-RPC error naming the limit; a websocket `Upgrade` and `charset=utf-16` are served, not refused with a text
//!   body: `every_refusal_but_413_has_an_empty_body`
//! - a config copied from Cline/Roo/Windsurf/VS Code (`autoApprove`, `alwaysAllow`,
//!   `disabled`, `timeout`, `transportType`, `serverUrl`, `envFile`, `disabledTools`) starts,
//!   with a warning naming each ignored field and the file; `disabled` and `disabledTools` take
//!   effect; an unknown field is still refused with its path (exit 2):
//!   `a_config_copied_from_another_client_starts_with_warnings`
//! - a `callTool` result over `--max-response-bytes` → a reference to a 0600 file in a 0700
//!   directory holding the whole result, paged back by `readSpilled` to the same bytes and
//!   SHA-256; another token cannot page it; the file goes at shutdown:
//!   `a_result_too_large_to_send_is_spilled_not_lost`
//! - an 11 MiB result (which jsonrpsee's 10 MiB cap used to lose after the tool ran) arrives
//!   whole with the default limits; a 17 MiB one with `--max-message-bytes` raised:
//!   `an_eleven_mib_result_arrives_whole_with_the_default_limits`
//! - `tool-cli --out FILE` and `--json` on a spilled result write the whole result, fetched
//!   with `readSpilled`: `tool_cli_fetches_a_spilled_result`
//! - spilled answers expire after `--spill-ttl-ms`: `spilled_answers_expire`
//! - `readResource` over the limit → a `ReadResourceResult` reference; `listTools` and
//!   `getBridgeInfo` over it → `-32008 responseTooLarge`:
//!   `only_results_that_ran_something_are_spilled`
//! - a batch whose answers together exceed the limit → every request its own answer (spilled
//!   results, per-entry `-32008` for the rest), never one error for all:
//!   `every_request_of_a_batch_over_the_limit_gets_its_own_answer`
//! - a `callChain` with a destructive step and a 2 MB result, and a `callMany` of 4 × 400 kB,
//!   over a 1 MB limit → every call answered (large results spilled), never `-32008` after a
//!   call ran: `a_chain_or_fan_out_over_the_limit_answers_every_call_that_ran`
//! - a call still running when the SIGTERM grace ends → `-32007 shuttingDown` before its
//!   connection closes: `a_call_outliving_the_grace_period_gets_a_shutdown_error`
//! - a notification (`callTool` without `id`) → 204, and the tool is not run:
//!   `notifications_are_not_run`
//! - arguments nested 120 levels → the call runs; 126, 130, 500 levels → `-32602` saying the
//!   nesting is too deep, not naming a shape: `deeply_nested_arguments_get_an_accurate_message`

use std::io::Write as _;
use std::net::TcpStream;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::thread;

use serde_json::{Value, json};
use tool_cli_protocol::methods::SpilledAnswer;
use tool_cli_protocol::{ErrorData, code};
use tool_cli_tests::{
    Daemon, DaemonOptions, HttpResponse, SHUTDOWN_TIMEOUT, STARTUP_TIMEOUT, count_recorded,
    error_data, eventually, fault_server, fault_server_recording, hex, http_post,
    http_request_bytes, identity_proof, parse_response, random_hex, raw_http_exchange,
    read_http_response, scratch, text_content, token_id,
};

const BRIDGE_INFO: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"getBridgeInfo"}"#;

/// A daemon whose only server is the fault fixture (it starts in milliseconds).
fn fault_daemon() -> Daemon {
    Daemon::start(json!({"mcpServers": {"alpha": fault_server(&[])}}))
}

fn fault_daemon_with(options: DaemonOptions) -> Daemon {
    Daemon::start_with(json!({"mcpServers": {"alpha": fault_server(&[])}}), options)
}

fn echo(daemon: &Daemon, nonce: &str) -> Value {
    daemon.call_tool("alpha", "echo", json!({"nonce": nonce}))
}

// ---------------------------------------------------------------------------------------------
// Logging.

/// Stops `daemon` with SIGTERM and returns its whole log: the daemon's last line (`stopped`) is
/// written after every request was handled, so waiting for it means nothing is still on its way.
fn whole_log_after_stop(mut daemon: Daemon) -> String {
    daemon.signal(libc::SIGTERM);
    let status = daemon.wait_for_exit(SHUTDOWN_TIMEOUT);
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "{}",
        daemon.stderr()
    );
    assert!(
        eventually(STARTUP_TIMEOUT, || daemon.stderr().contains("stopped")),
        "no `stopped` line; log:\n{}",
        daemon.stderr()
    );
    daemon.stderr()
}

#[test]
fn the_default_log_has_nothing_per_request() {
    let daemon = fault_daemon_with(DaemonOptions {
        remove_env: vec!["RUST_LOG".into()],
        ..DaemonOptions::default()
    });
    let requests = 30;
    for round in 0..requests / 3 {
        daemon.call("listServers", Value::Null);
        echo(&daemon, &format!("n{round}"));
        // A refused request and a failed call are requests too.
        let (status, _) = tool_cli_tests::http_post(daemon.port, "/", &[], b"{}");
        assert_eq!(status, 401);
    }
    let log = whole_log_after_stop(daemon);
    assert!(
        log.contains("tool-cli-daemon starting"),
        "the startup line is logged by default; log:\n{log}"
    );
    for per_request in [
        "Accepting new connection",
        "call finished",
        "DEBUG",
        "TRACE",
    ] {
        let line = log.lines().find(|line| line.contains(per_request));
        assert!(
            line.is_none(),
            "a per-request line at the default level: {line:?}"
        );
    }
    let lines = log.lines().count();
    assert!(
        lines < requests,
        "{lines} log lines for {requests} requests; log:\n{log}"
    );

    // RUST_LOG still decides: the per-call trace line is there when asked for.
    let daemon = fault_daemon_with(DaemonOptions {
        env: vec![("RUST_LOG".into(), "warn,tool_cli::trace=info".into())],
        ..DaemonOptions::default()
    });
    echo(&daemon, "traced");
    assert!(
        eventually(STARTUP_TIMEOUT, || daemon
            .stderr()
            .contains("call finished")),
        "RUST_LOG took effect; log:\n{}",
        daemon.stderr()
    );
}

// ---------------------------------------------------------------------------------------------
// The HTTP gate.

fn bearer(daemon: &Daemon) -> String {
    format!("Bearer {}", daemon.token)
}

/// `POST target` of `getBridgeInfo` with exactly `headers` over a raw socket.
fn post_raw(daemon: &Daemon, target: &str, headers: &[(&str, &str)]) -> HttpResponse {
    let request = http_request_bytes("POST", target, headers, BRIDGE_INFO);
    raw_http_exchange(daemon.port, &request)
        .unwrap_or_else(|err| panic!("POST {target} {headers:?}: {err}"))
}

fn assert_bridge_info(response: &HttpResponse) {
    assert_eq!(response.status, 200, "{response:?}");
    let answer = parse_response(&response.body);
    assert!(answer.result.is_some(), "{answer:?}");
}

#[test]
fn allow_host_admits_exactly_the_named_host() {
    let check = |daemon: &Daemon, allowed: bool| {
        let auth = bearer(daemon);
        let docker = format!("host.docker.internal:{}", daemon.port);
        let response = post_raw(daemon, "/", &[("Host", &docker), ("Authorization", &auth)]);
        if allowed {
            assert_bridge_info(&response);
        } else {
            assert_eq!(response.status, 403, "{response:?}");
            assert!(response.body.is_empty(), "{response:?}");
        }
        // Another name, or the allowed name with another port, is never admitted.
        for host in [
            format!("evil.example:{}", daemon.port),
            format!("host.docker.internal:{}", daemon.port.wrapping_add(1)),
            "host.docker.internal".to_owned(),
        ] {
            let response = post_raw(daemon, "/", &[("Host", &host), ("Authorization", &auth)]);
            assert_eq!(response.status, 403, "Host: {host}");
        }
        // The loopback names keep working.
        let ours = format!("127.0.0.1:{}", daemon.port);
        assert_bridge_info(&post_raw(
            daemon,
            "/",
            &[("Host", &ours), ("Authorization", &auth)],
        ));
    };
    check(&fault_daemon(), false);

    let by_flag = fault_daemon_with(DaemonOptions {
        args: vec!["--allow-host".into(), "host.docker.internal".into()],
        ..DaemonOptions::default()
    });
    check(&by_flag, true);
    // The identity proof is bound to the name the client dialed, allowed name included.
    let docker = format!("host.docker.internal:{}", by_flag.port);
    let nonce = random_hex(32);
    let id = token_id(&by_flag.token);
    let request = http_request_bytes(
        "POST",
        "/identity",
        &[
            ("Host", &docker),
            (tool_cli_protocol::identity::NONCE_HEADER, &nonce),
            (tool_cli_protocol::identity::TOKEN_ID_HEADER, &id),
        ],
        b"",
    );
    let response = raw_http_exchange(by_flag.port, &request).expect("identity exchange");
    assert_eq!(response.status, 200, "{response:?}");
    let proof: Value = serde_json::from_slice(&response.body).expect("proof JSON");
    assert_eq!(
        proof["proof"],
        identity_proof(&by_flag.token, &nonce, &docker)
    );

    let by_env = fault_daemon_with(DaemonOptions {
        env: vec![(
            tool_cli_protocol::env::ALLOW_HOSTS.into(),
            "gateway.local,host.docker.internal".into(),
        )],
        ..DaemonOptions::default()
    });
    check(&by_env, true);
}

#[test]
fn allow_host_refuses_what_is_not_a_host_name() {
    for bad in ["http://host.docker.internal", "host:80", "a b", ""] {
        let dir = tool_cli_tests::scratch();
        let mut command = tool_cli_tests::daemon_command(&dir.path().join("runtime"));
        command.args(["--allow-host", bad]);
        let output = tool_cli_tests::run_with_timeout(command, STARTUP_TIMEOUT);
        assert_eq!(output.status.code(), Some(2), "--allow-host {bad:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("not a host name"), "{stderr}");
    }
}

#[test]
fn an_absolute_form_target_must_name_us() {
    let daemon = fault_daemon();
    let auth = bearer(&daemon);
    let ours = format!("127.0.0.1:{}", daemon.port);
    let good = [("Host", ours.as_str()), ("Authorization", auth.as_str())];
    for target in [
        "http://evil.example/".to_owned(),
        format!("http://evil.example:{}/", daemon.port),
        format!("http://127.0.0.1:{}/", daemon.port.wrapping_add(1)),
        format!("http://x@127.0.0.1:{}/", daemon.port),
    ] {
        let response = post_raw(&daemon, &target, &good);
        assert_eq!(response.status, 403, "POST {target}: {response:?}");
        assert!(response.body.is_empty(), "POST {target}: {response:?}");
    }
    assert_bridge_info(&post_raw(
        &daemon,
        &format!("http://127.0.0.1:{}/", daemon.port),
        &good,
    ));
}

/// `body` as one HTTP/1.1 chunk and the last chunk.
fn chunked(body: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n0\r\n\r\n");
    out
}

/// Sends `head` (which must end with the blank line) and `body` over a raw socket.
fn exchange_raw(daemon: &Daemon, head: &str, body: &[u8]) -> HttpResponse {
    let mut request = head.as_bytes().to_vec();
    request.extend_from_slice(body);
    raw_http_exchange(daemon.port, &request).unwrap_or_else(|err| panic!("{head}: {err}"))
}

#[test]
fn a_transfer_coding_other_than_chunked_is_501() {
    let daemon = fault_daemon();
    // A gzip stream (RFC 1952) of `getBridgeInfo`: the daemon must not mistake it for anything.
    let gzip = gzip_stored(BRIDGE_INFO);
    for coding in ["gzip, chunked", "gzip,chunked", "deflate, chunked"] {
        let head = format!(
            "POST / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: {}\r\n\
             Transfer-Encoding: {coding}\r\nConnection: close\r\n\r\n",
            daemon.port,
            bearer(&daemon)
        );
        let response = exchange_raw(&daemon, &head, &chunked(&gzip));
        assert_eq!(
            response.status, 501,
            "Transfer-Encoding: {coding}: {response:?}"
        );
        assert!(response.body.is_empty(), "{response:?}");
    }
    // Plain chunked is served.
    let head = format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: {}\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        daemon.port,
        bearer(&daemon)
    );
    assert_bridge_info(&exchange_raw(&daemon, &head, &chunked(BRIDGE_INFO)));
}

/// A gzip member holding `data` in one stored (uncompressed) deflate block: a real gzip body
/// without a compression library.
fn gzip_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    let length = u16::try_from(data.len()).expect("a small body");
    out.push(1); // final block, stored
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(&(!length).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn every_refusal_but_413_has_an_empty_body() {
    let daemon = fault_daemon_with(DaemonOptions {
        args: vec!["--max-body-bytes".into(), "1024".into()],
        ..DaemonOptions::default()
    });
    let auth = bearer(&daemon);
    let ours = format!("127.0.0.1:{}", daemon.port);
    let good = vec![("Host", ours.as_str()), ("Authorization", auth.as_str())];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut headers = good.clone();
        headers.extend_from_slice(extra);
        headers
    };
    let big = vec![b' '; 2048];
    let send = |method: &str, target: &str, headers: &[(&str, &str)], body: &[u8]| {
        let request = http_request_bytes(method, target, headers, body);
        raw_http_exchange(daemon.port, &request)
            .unwrap_or_else(|err| panic!("{method} {target} {headers:?}: {err}"))
    };
    let refusals = [
        ("GET", send("GET", "/", &good, b""), 405),
        (
            "foreign Host",
            send(
                "POST",
                "/",
                &[("Host", "evil.example"), ("Authorization", &auth)],
                BRIDGE_INFO,
            ),
            403,
        ),
        (
            "foreign Origin",
            send(
                "POST",
                "/",
                &with(&[("Origin", "http://evil.example")]),
                BRIDGE_INFO,
            ),
            403,
        ),
        (
            "absolute target",
            send("POST", "http://evil.example/", &good, BRIDGE_INFO),
            403,
        ),
        ("query", send("POST", "/?x=1", &good, BRIDGE_INFO), 400),
        ("path", send("POST", "/nope", &good, BRIDGE_INFO), 404),
        (
            "no token",
            send("POST", "/", &[("Host", &ours)], BRIDGE_INFO),
            401,
        ),
        (
            "gzip, chunked",
            send(
                "POST",
                "/",
                &with(&[("Transfer-Encoding", "gzip, chunked")]),
                BRIDGE_INFO,
            ),
            501,
        ),
        // Not ending in `chunked`, the length is unknowable: hyper refuses it before us.
        (
            "gzip alone",
            send(
                "POST",
                "/",
                &with(&[("Transfer-Encoding", "gzip")]),
                BRIDGE_INFO,
            ),
            400,
        ),
    ];
    for (what, response, status) in &refusals {
        assert_eq!(response.status, *status, "{what}: {response:?}");
        // A 401 says what the reference bridge says; every other refusal is empty.
        let expected: &[u8] = if *status == 401 {
            br#"{"error":"Unauthorized"}"#
        } else {
            b""
        };
        assert_eq!(
            response.body,
            expected,
            "{what}: a refusal with another body: {:?}",
            String::from_utf8_lossy(&response.body)
        );
    }

    // The one refusal with a body: a caller with a live token whose body is too large is told
    // the limit in a JSON-RPC error (id null: the request was never read).
    let too_large = |response: &HttpResponse| {
        assert_eq!(response.status, 413, "{response:?}");
        let answer: serde_json::Value = serde_json::from_slice(&response.body)
            .unwrap_or_else(|_| panic!("a JSON-RPC error: {response:?}"));
        assert_eq!(answer["id"], serde_json::Value::Null, "{answer}");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("limit of 1024 bytes") && message.contains("--max-body-bytes"),
            "{message}"
        );
    };
    too_large(&send("POST", "/", &good, &big));

    // A chunked body that grows past the cap while being read.
    let head = format!(
        "POST / HTTP/1.1\r\nHost: {ours}\r\nAuthorization: {auth}\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    too_large(&exchange_raw(&daemon, &head, &chunked(&big)));

    // A Content-Length longer than the body, then the client stops writing.
    let mut stream = TcpStream::connect(("127.0.0.1", daemon.port)).expect("connect");
    stream
        .set_read_timeout(Some(STARTUP_TIMEOUT))
        .expect("read timeout");
    let head = format!(
        "POST / HTTP/1.1\r\nHost: {ours}\r\nAuthorization: {auth}\r\n\
         Content-Length: 100\r\n\r\n{{\"jsonrpc\""
    );
    stream.write_all(head.as_bytes()).expect("send");
    stream
        .shutdown(std::net::Shutdown::Write)
        .expect("half-close");
    if let Ok(response) = read_http_response(&mut std::io::BufReader::new(stream)) {
        assert_eq!(response.status, 400, "{response:?}");
        assert!(response.body.is_empty(), "{response:?}");
    }

    // What jsonrpsee itself would have refused with a text body is served instead.
    for extra in [
        [("Connection", "Upgrade"), ("Upgrade", "websocket")],
        [
            ("Content-Type", "application/json; charset=utf-16"),
            ("X-Test", "1"),
        ],
    ] {
        assert_bridge_info(&send("POST", "/", &with(&extra), BRIDGE_INFO));
    }
}

// ---------------------------------------------------------------------------------------------
// Params.

fn call_with_nesting(daemon: &Daemon, depth: usize) -> Value {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"callTool","params":{{"server":"alpha","tool":"echo","arguments":{{"nonce":"deep","extra":{}1{}}}}}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let (status, response) = daemon.post(body.as_bytes());
    assert!(status == 200 || status == 400, "HTTP {status}");
    serde_json::from_slice(&response).expect("a JSON-RPC answer")
}

#[test]
fn deeply_nested_arguments_get_an_accurate_message() {
    let daemon = fault_daemon();
    let answer = call_with_nesting(&daemon, 120);
    assert_eq!(answer["result"]["content"][0]["text"], "deep", "{answer}");
    for depth in [126, 130, 500] {
        let answer = call_with_nesting(&daemon, depth);
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(answer["error"]["code"], -32602, "depth {depth}: {answer}");
        assert!(message.contains("levels deep"), "depth {depth}: {message}");
        assert!(!message.contains("expected {"), "depth {depth}: {message}");
    }
}

// ---------------------------------------------------------------------------------------------
// Configs written for other clients.

#[test]
fn a_config_copied_from_another_client_starts_with_warnings() {
    let daemon = Daemon::start_with(
        json!({"mcpServers": {
            "cline": {
                "command": tool_cli_tests::fault_server_bin(), "args": [],
                "autoApprove": ["echo"], "disabled": false, "timeout": 30,
                "transportType": "stdio", "disabledTools": ["destructive"]
            },
            "roo": {
                "command": tool_cli_tests::fault_server_bin(), "alwaysAllow": [],
                "watchPaths": ["x"], "disabled": true
            },
            "vscode": {
                "type": "stdio", "command": tool_cli_tests::fault_server_bin(),
                "envFile": "${workspaceFolder}/.env"
            }
        }}),
        DaemonOptions {
            // Warnings are logged at the default level.
            remove_env: vec!["RUST_LOG".into()],
            ..DaemonOptions::default()
        },
    );
    let config = daemon.config_path.display().to_string();
    for (server, field) in [
        ("cline", "autoApprove"),
        ("roo", "alwaysAllow"),
        ("roo", "watchPaths"),
        ("vscode", "envFile"),
    ] {
        let warning = format!(r#"config {config}: server "{server}": field "{field}" ignored"#);
        // Logged at start-up, on stderr, which is read apart from the stdout lines that said
        // the daemon was ready: wait for it rather than assume it is there.
        let logged = eventually(STARTUP_TIMEOUT, || {
            daemon
                .stderr()
                .lines()
                .any(|line| line.contains("WARN") && line.contains(&warning))
        });
        assert!(logged, "no warning {warning:?}; log:\n{}", daemon.stderr());
    }
    // What has a meaning here took effect.
    let servers = daemon.call("listServers", Value::Null);
    let state = |name: &str| {
        servers["servers"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["name"] == name))
            .map(|s| s["state"].clone())
    };
    assert_eq!(state("roo"), Some(json!("disabled")), "{servers}");
    assert_eq!(state("cline"), Some(json!("ready")), "{servers}");
    let tools = daemon.call("listTools", json!({"server": "cline"}));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(
        names.contains(&"echo") && !names.contains(&"destructive"),
        "{names:?}"
    );

    // A field nobody writes is still a mistake, reported with its path.
    let dir = tool_cli_tests::scratch();
    let path = dir.path().join("servers.json");
    std::fs::write(
        &path,
        json!({"mcpServers": {"s": {"command": "x", "autoApprov": []}}}).to_string(),
    )
    .expect("write config");
    let mut command = tool_cli_tests::daemon_command(&dir.path().join("runtime"));
    command.arg("--config").arg(&path);
    let output = tool_cli_tests::run_with_timeout(command, STARTUP_TIMEOUT);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(r#"server "s": field "autoApprov""#),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------------------
// Answers too large for one response.

fn with_args(args: &[&str]) -> DaemonOptions {
    DaemonOptions {
        args: args.iter().map(|arg| (*arg).to_owned()).collect(),
        ..DaemonOptions::default()
    }
}

fn spilled_of(result: &Value) -> SpilledAnswer {
    serde_json::from_value(result["_meta"]["tool-cli/spilled"].clone())
        .unwrap_or_else(|err| panic!("no spilled reference ({err}) in {result:#}"))
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex(&sha2::Sha256::digest(bytes))
}

/// Every page of a spilled answer, joined, read with `token`.
fn read_all_pages(daemon: &Daemon, token: &str, id: &str, length: u64) -> Result<String, Value> {
    let mut text = String::new();
    let mut offset = 0u64;
    loop {
        let body = json!({"jsonrpc": "2.0", "id": offset, "method": "readSpilled",
                          "params": {"id": id, "offset": offset, "length": length}});
        let auth = format!("Bearer {token}");
        let (status, response) = http_post(
            daemon.port,
            "/",
            &[("Authorization", &auth)],
            body.to_string().as_bytes(),
        );
        assert_eq!(status, 200);
        let answer: Value = serde_json::from_slice(&response).expect("JSON answer");
        if answer.get("error").is_some() {
            return Err(answer["error"].clone());
        }
        let page = &answer["result"];
        assert_eq!(page["offset"], offset);
        text.push_str(page["text"].as_str().expect("page text"));
        match page["nextOffset"].as_u64() {
            Some(next) => offset = next,
            None => return Ok(text),
        }
    }
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn a_result_too_large_to_send_is_spilled_not_lost() {
    let mut daemon = fault_daemon_with(with_args(&["--max-response-bytes", "100000"]));
    let result = daemon.call_tool("alpha", "huge", json!({"bytes": 300_000}));
    let spilled = spilled_of(&result);
    assert!(
        text_content(&result).starts_with("result of "),
        "{}",
        text_content(&result)
    );
    assert!(serde_json::to_vec(&result).expect("encode").len() < 2_000);

    // The whole result is in a private file under the runtime directory.
    let path = Path::new(&spilled.path);
    let dir = path.parent().expect("spill dir");
    assert!(dir.starts_with(&daemon.runtime_dir), "{}", path.display());
    assert_eq!(mode_of(path), 0o600);
    assert_eq!(mode_of(dir), 0o700);
    let saved = std::fs::read(path).expect("read the spilled file");
    assert_eq!(saved.len() as u64, spilled.bytes);
    assert_eq!(sha256_hex(&saved), spilled.sha256);
    let whole: Value = serde_json::from_slice(&saved).expect("the file is the result's JSON");
    assert_eq!(text_content(&whole), "a".repeat(300_000));

    // readSpilled pages it back, byte for byte, to the token that made the call only.
    let paged = read_all_pages(&daemon, &daemon.token, &spilled.id, 64 * 1024).expect("pages");
    assert_eq!(paged.as_bytes(), saved.as_slice());
    let minted = daemon.call("mintToken", json!({}));
    let other = minted["token"].as_str().expect("minted token");
    let refused = read_all_pages(&daemon, other, &spilled.id, 1024).expect_err("refused");
    assert_eq!(refused["code"], code::INVALID_PARAMS, "{refused}");

    // Stopping the daemon removes the file and its directory.
    daemon.signal(libc::SIGTERM);
    assert_eq!(
        daemon
            .wait_for_exit(SHUTDOWN_TIMEOUT)
            .and_then(|s| s.code()),
        Some(0)
    );
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn an_eleven_mib_result_arrives_whole_with_the_default_limits() {
    // Between jsonrpsee's old 10 MiB response cap and the 16 MiB message cap: the tool ran, and
    // its answer used to be replaced by -32008. By default the response limit is the message
    // cap, so whatever a server may send is sent whole.
    let daemon = fault_daemon();
    let bytes = 11 * 1024 * 1024;
    let result = daemon.call_tool("alpha", "huge", json!({"bytes": bytes}));
    assert!(result["_meta"].get("tool-cli/spilled").is_none());
    assert_eq!(text_content(&result).len(), bytes);

    // Raising the message cap raises the response limit with it.
    let raised = fault_daemon_with(with_args(&["--max-message-bytes", "20000000"]));
    let bytes = 17 * 1024 * 1024;
    let result = raised.call_tool("alpha", "huge", json!({"bytes": bytes}));
    assert_eq!(text_content(&result).len(), bytes);
}

#[test]
fn tool_cli_fetches_a_spilled_result() {
    let daemon = fault_daemon_with(with_args(&["--max-response-bytes", "100000"]));
    let dir = scratch();
    let file = dir.path().join("out.txt");
    let file_text = file.to_string_lossy().into_owned();
    let arguments = r#"{"bytes": 300000}"#;
    let output = daemon.run_client(&["--out", &file_text, "alpha", "huge", arguments], &[]);
    assert!(output.status.success(), "{output:?}");
    let written = std::fs::read_to_string(&file).expect("read --out file");
    assert_eq!(written.trim_end().len(), 300_000);
    assert!(written.trim_end().bytes().all(|byte| byte == b'a'));

    let output = daemon.run_client(&["--json", "alpha", "huge", arguments], &[]);
    assert!(output.status.success(), "{output:?}");
    let result: Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(text_content(&result).len(), 300_000);
    assert!(
        result["_meta"].get("tool-cli/spilled").is_none(),
        "{:?}",
        result["_meta"]
    );
}

#[test]
fn spilled_answers_expire() {
    let daemon = fault_daemon_with(with_args(&[
        "--max-response-bytes",
        "1000",
        "--spill-ttl-ms",
        "200",
    ]));
    let result = daemon.call_tool("alpha", "huge", json!({"bytes": 5000}));
    let spilled = spilled_of(&result);
    assert!(
        eventually(STARTUP_TIMEOUT, || !Path::new(&spilled.path).exists()),
        "{} still there",
        spilled.path
    );
    let refused = read_all_pages(&daemon, &daemon.token, &spilled.id, 1024).expect_err("gone");
    assert_eq!(refused["code"], code::INVALID_PARAMS, "{refused}");
}

#[test]
fn only_results_that_ran_something_are_spilled() {
    // The demo's database in the daemon's own temp dir: a `scratch()` dropped at once was
    // created again by the demo server and outlived the test.
    let daemon = Daemon::start_with_dir_and(
        |dir| json!({"mcpServers": {"demo": tool_cli_tests::demo_server(dir)}}),
        with_args(&["--max-response-bytes", "300"]),
    );
    let contents = daemon.call(
        "readResource",
        json!({"server": "demo", "uri": "demo://docs/readme"}),
    );
    assert_eq!(contents["contents"][0]["uri"], "demo://docs/readme");
    let spilled = spilled_of(&contents);
    let saved: Value =
        serde_json::from_slice(&std::fs::read(&spilled.path).expect("read")).expect("JSON");
    assert!(
        saved["contents"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("sql_query")),
        "{saved:#}"
    );
    for (method, params) in [
        ("listTools", json!({"server": "demo"})),
        ("getBridgeInfo", Value::Null),
    ] {
        let error = daemon.call_err(method, params);
        assert_eq!(error.code, code::RESPONSE_TOO_LARGE, "{method}: {error:?}");
        match error_data(&error) {
            ErrorData::ResponseTooLarge {
                method: named,
                bytes,
                limit_bytes,
            } => {
                assert_eq!(named, method);
                assert!(bytes > 300 && limit_bytes == 300, "{bytes} {limit_bytes}");
            }
            other => panic!("{method}: expected responseTooLarge, got {other:?}"),
        }
    }
}

#[test]
fn a_chain_or_fan_out_over_the_limit_answers_every_call_that_ran() {
    let scratch = scratch();
    let record = scratch.path().join("alpha.jsonl");
    let daemon = Daemon::start_with(
        json!({"mcpServers": {"alpha": fault_server_recording(&record, &[])}}),
        with_args(&["--max-response-bytes", "1000000"]),
    );
    // A destructive step, then a result of 2 MB: the chain's answer is over the limit after
    // something was changed. It used to be -32008 "nothing was changed".
    let chain = daemon.call(
        "callChain",
        json!({"confirm": true, "steps": [
            {"server": "alpha", "tool": "destructive"},
            {"server": "alpha", "tool": "huge", "arguments": {"bytes": 2_000_000}},
        ]}),
    );
    assert_eq!(chain["completed"], true, "{chain:#}");
    let steps = chain["steps"].as_array().expect("steps");
    assert_eq!(text_content(&steps[0]["result"]), "done");
    let spilled = spilled_of(&steps[1]["result"]);
    let saved: Value =
        serde_json::from_slice(&std::fs::read(&spilled.path).expect("read")).expect("JSON");
    assert_eq!(text_content(&saved).len(), 2_000_000, "the whole result");
    assert!(serde_json::to_vec(&chain).unwrap().len() < 1_000_000);

    // Four results of 400 kB: each answered, the ones that do not fit spilled.
    let many = daemon.call(
        "callMany",
        json!({"calls": (0..4).map(|_| json!({"server": "alpha", "tool": "huge",
                                              "arguments": {"bytes": 400_000}}))
                               .collect::<Vec<_>>()}),
    );
    let results = many["results"].as_array().expect("results");
    assert_eq!(results.len(), 4);
    let mut spilled_count = 0;
    for (index, entry) in results.iter().enumerate() {
        assert_eq!(entry["index"], index);
        let result = &entry["result"];
        if result["_meta"].get("tool-cli/spilled").is_some() {
            spilled_count += 1;
        } else {
            assert_eq!(text_content(result).len(), 400_000, "{index}");
        }
    }
    assert!(spilled_count >= 2, "{spilled_count} of 4 spilled");
    assert!(serde_json::to_vec(&many).unwrap().len() < 1_000_000);
    // Each call ran exactly once.
    assert_eq!(count_recorded(&record, "tools/call", Some("huge")), 5);
    assert_eq!(
        count_recorded(&record, "tools/call", Some("destructive")),
        1
    );
}

#[test]
fn every_request_of_a_batch_over_the_limit_gets_its_own_answer() {
    let daemon = fault_daemon();
    // Three results of 4 MiB and an echo: over jsonrpsee's old 10 MiB cap together, and each
    // huge one over its quarter of the 16 MiB limit.
    let bytes = 4 * 1024 * 1024;
    let mut batch: Vec<Value> = (0..3)
        .map(|i| {
            json!({"jsonrpc": "2.0", "id": format!("huge-{i}"), "method": "callTool",
                   "params": {"server": "alpha", "tool": "huge", "arguments": {"bytes": bytes}}})
        })
        .collect();
    batch.push(json!({"jsonrpc": "2.0", "id": "echo", "method": "callTool",
                      "params": {"server": "alpha", "tool": "echo",
                                 "arguments": {"nonce": "small"}}}));
    let (status, response) = daemon.post(serde_json::to_string(&batch).unwrap().as_bytes());
    assert_eq!(status, 200);
    let answers: Vec<Value> = serde_json::from_slice(&response).unwrap_or_else(|err| {
        panic!(
            "not a batch answer ({err}): {}",
            String::from_utf8_lossy(&response[..response.len().min(500)])
        )
    });
    assert_eq!(answers.len(), 4, "{answers:#?}");
    let mut ids = Vec::new();
    for answer in &answers {
        let id = answer["id"]
            .as_str()
            .expect("each answer has its request's id");
        ids.push(id.to_owned());
        let result = &answer["result"];
        if id == "echo" {
            assert_eq!(text_content(result), "small");
            continue;
        }
        let spilled = spilled_of(result);
        let saved = std::fs::read(&spilled.path).expect("read");
        let whole: Value = serde_json::from_slice(&saved).expect("JSON");
        assert_eq!(text_content(&whole).len(), bytes);
    }
    ids.sort();
    assert_eq!(ids, ["echo", "huge-0", "huge-1", "huge-2"]);

    // What cannot be spilled gets its own error, entry by entry.
    let batch: Vec<Value> = (0..4)
        .map(|i| {
            json!({"jsonrpc": "2.0", "id": i, "method": "listTools",
                        "params": {"server": "alpha"}})
        })
        .collect();
    let small = fault_daemon_with(with_args(&["--max-response-bytes", "4000"]));
    let (status, response) = small.post(serde_json::to_string(&batch).unwrap().as_bytes());
    assert_eq!(status, 200);
    let answers: Vec<Value> = serde_json::from_slice(&response).expect("a batch answer");
    assert_eq!(answers.len(), 4);
    for answer in &answers {
        assert_eq!(
            answer["error"]["code"],
            code::RESPONSE_TOO_LARGE,
            "{answer}"
        );
        assert_eq!(answer["error"]["data"]["limitBytes"], 1000, "{answer}");
    }
    // Alone, the same request fits.
    small.call("listTools", json!({"server": "alpha"}));
}

#[test]
fn a_call_outliving_the_grace_period_gets_a_shutdown_error() {
    let dir = scratch();
    let record = dir.path().join("received.jsonl");
    let mut daemon = Daemon::start_with(
        json!({"mcpServers": {"alpha": fault_server_recording(&record, &[])}}),
        with_args(&["--shutdown-grace-ms", "200"]),
    );
    let answer = thread::scope(|scope| {
        let call = scope.spawn(|| {
            daemon.rpc(
                "callTool",
                Some(json!({"server": "alpha", "tool": "hang", "arguments": {}})),
            )
        });
        let received = eventually(STARTUP_TIMEOUT, || {
            count_recorded(&record, "tools/call", Some("hang")) == 1
        });
        assert!(received, "the call never reached the server");
        daemon.signal(libc::SIGTERM);
        call.join().expect("the caller got one answer")
    });
    let error = answer.expect_err("a hanging call cannot succeed");
    assert_eq!(error.code, code::SHUTTING_DOWN, "{error:?}");
    assert_eq!(
        error_data(&error),
        ErrorData::ShuttingDown { grace_ms: 200 }
    );
    let status = daemon.wait_for_exit(SHUTDOWN_TIMEOUT);
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "{}",
        daemon.stderr()
    );
}

#[test]
fn notifications_are_not_run() {
    let dir = scratch();
    let record = dir.path().join("received.jsonl");
    let daemon =
        Daemon::start(json!({"mcpServers": {"alpha": fault_server_recording(&record, &[])}}));
    let notification = json!({"jsonrpc": "2.0", "method": "callTool",
        "params": {"server": "alpha", "tool": "echo", "arguments": {"nonce": "ghost"}}});
    let (status, body) = daemon.post(notification.to_string().as_bytes());
    assert_eq!((status, body.len()), (204, 0));
    // A call after it: once it is recorded, the notification would have been too.
    echo(&daemon, "marker");
    let calls: Vec<Value> = tool_cli_tests::recorded_messages(&record)
        .into_iter()
        .filter(|message| message["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(calls[0]["params"]["arguments"]["nonce"], "marker");
}
