//! The pool and process side of the hardening issue (issue 7): defects found by attacking the
//! daemon with hostile MCP servers. Each test stages one misbehaviour with a real server (the
//! fault-injection fixture over stdio, or its Streamable HTTP mode on loopback) and the real
//! daemon binary, and checks what callers, logs and the process table show.
//!
//! Defect → test:
//! - 7, a rejected message's content is returned:
//!   `hardening_forged_answers_before_the_real_one_are_never_returned`,
//!   `hardening_a_malformed_tool_result_is_an_error_naming_the_server`
//! - 1, a dead server stays `ready` (also `pool/stdio.rs` and `daemon/tests/in_process.rs`, where
//!   no subreaper helps):
//!   `hardening_a_server_that_exits_leaving_a_detached_process_is_restarted_and_the_process_killed`
//! - 2, orphans escape:
//!   `hardening_sigkill_of_the_daemon_leaves_no_process_of_a_servers_tree`,
//!   `hardening_sigterm_of_the_daemon_leaves_no_process_of_a_servers_tree`
//! - 4, secrets in a server's `url` and headers leak into logs, statuses and errors:
//!   `hardening_secrets_in_a_servers_url_and_headers_never_reach_logs_statuses_or_errors`
//! - 10, an oversized SSE event reads as "server exited" and trips the breaker:
//!   `hardening_an_oversized_sse_event_is_a_size_error_and_does_not_trip_the_breaker`
//! - 9, `down` is forever: `hardening_server_restart_restarts_a_server_and_clears_its_breakers`
//!   (probing of parked servers: `daemon/tests/in_process.rs`)

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::{ErrorData, code};
use tool_cli_tests::{
    Daemon, DaemonOptions, HttpFaultServer, KillMarkedOnDrop, SHUTDOWN_TIMEOUT, error_data,
    eventually, fault_server, process_is_alive, processes_with_marker, random_hex, text_content,
    unique_marker,
};

// ---------------------------------------------------------------------------------------------
// 7. Only validated messages are delivered.

#[test]
fn hardening_forged_answers_before_the_real_one_are_never_returned() {
    let daemon = Daemon::start(json!({"mcpServers": {"forger": fault_server(&[])}}));
    // Each line is rejected by JSON-RPC validation (or, for the string id, is not an answer to
    // our numeric request); the valid answer that follows is the one the caller must get.
    let forged = [
        r#"{"jsonrpc":"1.0","id":$ID,"result":{"content":[{"type":"text","text":"forged: 1.0"}]}}"#,
        r#"{"id":$ID,"result":{"content":[{"type":"text","text":"forged: no jsonrpc"}]}}"#,
        r#"{"jsonrpc":"2.0","id":$ID,"result":{"content":[{"type":"text","text":"forged: both"}]},"error":{"code":1,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":$ID_STRING,"result":{"content":[{"type":"text","text":"forged: string id"}]}}"#,
        r#"{"jsonrpc":"2.0","id":$ID_STRING,"error":{"code":-1,"message":"forged: string id error"}}"#,
    ];
    for line in forged {
        let result = daemon.call_tool(
            "forger",
            "raw_lines",
            json!({"lines": [line], "answer": "the real answer"}),
        );
        assert_eq!(
            text_content(&result),
            "the real answer",
            "after {line}: {result:#}"
        );
    }
}

#[test]
fn hardening_a_malformed_tool_result_is_an_error_naming_the_server() {
    let daemon = Daemon::start(json!({"mcpServers": {"sloppy": fault_server(&[])}}));
    let malformed = [
        (r#"{"content":"oops"}"#, "`content` is a string"),
        (r#"{"isError":false}"#, "no `content` array"),
        (
            r#"{"content":[{"text":"untyped"}]}"#,
            "content[0] has no string `type`",
        ),
        (r#"{"content":[],"isError":"no"}"#, "`isError` is a string"),
        (
            r#"{"content":[],"structuredContent":3}"#,
            "`structuredContent` is a number",
        ),
    ];
    for (result, why) in malformed {
        let line = format!(r#"{{"jsonrpc":"2.0","id":$ID,"result":{result}}}"#);
        let error = daemon.call_err(
            "callTool",
            json!({"server": "sloppy", "tool": "raw_lines", "arguments": {"lines": [line]}}),
        );
        assert_eq!(error.code, code::UPSTREAM_ERROR, "{error:?}");
        match error_data(&error) {
            ErrorData::InvalidResult {
                server,
                method,
                message,
            } => {
                assert_eq!(server, "sloppy");
                assert_eq!(method, "raw_lines");
                assert!(message.contains(why), "{message:?} should say {why:?}");
            }
            other => panic!("expected invalidResult, got {other:?}"),
        }
        assert!(
            error.message.contains("sloppy"),
            "the message names the server: {error:?}"
        );
    }

    // The CLI says so too, and fails, instead of printing nothing with exit 0.
    let line = r#"{"jsonrpc":"2.0","id":$ID,"result":{"content":"oops"}}"#;
    let arguments = json!({ "lines": [line] }).to_string();
    let output = daemon.run_client(&["sloppy", "raw_lines", &arguments], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "stderr: {stderr}");
    assert!(
        stderr.contains("sloppy") && stderr.contains("not valid MCP"),
        "{stderr}"
    );

    // The server answered, so it is not counted as failing.
    let health = daemon.call("health", Value::Null);
    assert_eq!(health["servers"][0]["state"], "ready", "{health:#}");
}

// ---------------------------------------------------------------------------------------------
// 1 and 2. A server's exit is noticed whoever holds its stdout, and nothing it starts survives it.

/// Starts a process with `marker` in its command line under `server`, detached from the
/// server's session; returns the pid the tool reported.
fn detach(daemon: &Daemon, server: &str, marker: &str, options: Value) -> i64 {
    let mut arguments = json!({ "marker": marker });
    if let (Some(arguments), Some(options)) = (arguments.as_object_mut(), options.as_object()) {
        arguments.extend(options.clone());
    }
    let result = daemon.call_tool(server, "detach", arguments);
    result["structuredContent"]["pid"]
        .as_i64()
        .unwrap_or_else(|| panic!("detach answers a pid: {result:#}"))
}

#[test]
fn hardening_a_server_that_exits_leaving_a_detached_process_is_restarted_and_the_process_killed() {
    let marker = unique_marker("exit-detached");
    let _cleanup = KillMarkedOnDrop(marker.clone());
    let daemon = Daemon::start(json!({"mcpServers": {"detacher": fault_server(&[])}}));
    // The detached process holds the server's stdout and ignores SIGTERM. Before the fix, this
    // call timed out after its two minutes, and the server stayed `ready` with 0 restarts.
    let error = daemon.call_err(
        "callTool",
        json!({"server": "detacher", "tool": "detach", "timeoutMs": 120_000,
               "arguments": {"marker": marker, "exit": 0, "ignore_sigterm": true}}),
    );
    match error_data(&error) {
        ErrorData::ServerExited { server, exit, .. } => {
            assert_eq!(server, "detacher");
            assert!(exit.contains("exit code 0"), "{exit}");
        }
        other => panic!("expected serverExited, got {other:?}"),
    }
    let mut left = Vec::new();
    assert!(
        eventually(Duration::from_secs(15), || {
            left = processes_with_marker(&marker);
            left.is_empty()
        }),
        "the detached process outlived the server that started it: {left:?}"
    );
    let restarted = eventually(Duration::from_secs(30), || {
        let servers = daemon.call("listServers", Value::Null);
        let health = daemon.call("health", Value::Null);
        servers["servers"][0]["state"] == "ready" && health["servers"][0]["restarts"] == 1
    });
    assert!(restarted, "{:#}", daemon.call("health", Value::Null));
    let result = daemon.call_tool("detacher", "echo", json!({"nonce": "back"}));
    assert_eq!(text_content(&result), "back");
}

/// A server with three kinds of descendants: a plain child in its process group, a process in
/// a new session, and a double-forked orphan in a new session that ignores SIGTERM.
fn server_with_escaping_descendants(marker: &str) -> (Daemon, Vec<i32>) {
    let daemon = Daemon::start(json!({"mcpServers": {"leaky": fault_server(&[])}}));
    let result = daemon.call_tool("leaky", "spawn_grandchild", json!({}));
    let grandchild = result["structuredContent"]["pid"].as_i64().unwrap() as i32;
    let env = daemon.call_tool("leaky", "env", json!({}));
    let server = env["structuredContent"]["pid"].as_i64().unwrap() as i32;
    detach(&daemon, "leaky", marker, json!({}));
    let intermediate = detach(
        &daemon,
        "leaky",
        marker,
        json!({"double_fork": true, "ignore_sigterm": true}),
    ) as i32;
    // Wait for the double fork to finish: its intermediate gone, two marked processes left.
    assert!(
        eventually(Duration::from_secs(10), || !process_is_alive(intermediate)
            && processes_with_marker(marker).len() == 2),
        "the double fork did not settle: {:?}",
        processes_with_marker(marker)
    );
    let mut tree = vec![server, grandchild];
    tree.extend(processes_with_marker(marker));
    (daemon, tree)
}

fn assert_all_gone(tree: &[i32], marker: &str, after: &str) {
    let mut left = Vec::new();
    let gone = eventually(Duration::from_secs(15), || {
        left = tree
            .iter()
            .copied()
            .filter(|pid| process_is_alive(*pid))
            .chain(processes_with_marker(marker))
            .collect();
        left.is_empty()
    });
    assert!(
        gone,
        "processes of the server's tree survived {after}: {left:?}"
    );
}

#[test]
fn hardening_sigkill_of_the_daemon_leaves_no_process_of_a_servers_tree() {
    let marker = unique_marker("sigkill");
    let _cleanup = KillMarkedOnDrop(marker.clone());
    let (mut daemon, tree) = server_with_escaping_descendants(&marker);
    daemon.signal(libc::SIGKILL);
    daemon
        .wait_for_exit(Duration::from_secs(5))
        .expect("a killed daemon exits");
    assert_all_gone(&tree, &marker, "SIGKILL of the daemon");
}

#[test]
fn hardening_sigterm_of_the_daemon_leaves_no_process_of_a_servers_tree() {
    let marker = unique_marker("sigterm");
    let _cleanup = KillMarkedOnDrop(marker.clone());
    let (mut daemon, tree) = server_with_escaping_descendants(&marker);
    daemon.signal(libc::SIGTERM);
    let status = daemon
        .wait_for_exit(SHUTDOWN_TIMEOUT)
        .expect("the daemon exits on SIGTERM");
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert_all_gone(&tree, &marker, "SIGTERM of the daemon");
}

// ---------------------------------------------------------------------------------------------
// 9. `down` is not forever: `restartServer` / `tool-cli server restart` (the probing of parked
// servers is in `daemon/tests/in_process.rs`, where the schedule can be shortened).

#[test]
fn hardening_server_restart_restarts_a_server_and_clears_its_breakers() {
    let daemon = Daemon::start(json!({"mcpServers": {"flaky": fault_server(&[])}}));
    let pid_of = |daemon: &Daemon| {
        daemon.call_tool("flaky", "env", json!({}))["structuredContent"]["pid"]
            .as_i64()
            .unwrap()
    };
    let first_pid = pid_of(&daemon);
    // Crashes count against the server's breaker (and the tool's) until it opens.
    let mut codes = Vec::new();
    while codes.last() != Some(&code::CIRCUIT_OPEN) && codes.len() < 10 {
        let error = daemon.call_err(
            "callTool",
            json!({"server": "flaky", "tool": "crash", "arguments": {}}),
        );
        codes.push(error.code);
    }
    assert_eq!(codes.last(), Some(&code::CIRCUIT_OPEN), "{codes:?}");
    let refused = daemon.call_err(
        "callTool",
        json!({"server": "flaky", "tool": "echo", "arguments": {"nonce": "x"}}),
    );
    assert_eq!(refused.code, code::CIRCUIT_OPEN, "{refused:?}");
    let restarts_before = daemon.call("health", Value::Null)["servers"][0]["restarts"]
        .as_u64()
        .unwrap();

    // A scoped token may not restart servers (exit 9, not permitted).
    let minted = daemon.call("mintToken", json!({"servers": ["flaky"]}));
    let scoped = minted["token"].as_str().unwrap();
    let output = daemon.run_client(
        &["server", "restart", "flaky"],
        &[(tool_cli_protocol::env::TOKEN, scoped)],
    );
    assert_eq!(
        output.status.code(),
        Some(9),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let output = daemon.run_client(&["server", "restart", "flaky"], &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(stdout.trim(), "restarted flaky: ready");

    // Breakers closed, a new process, one more restart.
    let result = daemon.call_tool("flaky", "echo", json!({"nonce": "after"}));
    assert_eq!(text_content(&result), "after");
    let health = daemon.call("health", Value::Null);
    let server = &health["servers"][0];
    assert_eq!(server["breaker"]["state"], "closed", "{health:#}");
    assert!(
        server["restarts"].as_u64().unwrap() > restarts_before,
        "{health:#}"
    );
    assert_ne!(pid_of(&daemon), first_pid);
    let crash_admitted = daemon.call_err(
        "callTool",
        json!({"server": "flaky", "tool": "crash", "arguments": {}}),
    );
    assert_eq!(
        crash_admitted.code,
        code::SERVER_UNAVAILABLE,
        "the tool's breaker was cleared too: {crash_admitted:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// 10. An oversized SSE event is a size error, not a dead server.

#[test]
fn hardening_an_oversized_sse_event_is_a_size_error_and_does_not_trip_the_breaker() {
    const LIMIT: u64 = 1024 * 1024;
    let peer = HttpFaultServer::start(&[]);
    let daemon = Daemon::start_with(
        json!({"mcpServers": {"remote": {"url": peer.url("/mcp")}}}),
        DaemonOptions {
            args: vec!["--max-message-bytes".into(), LIMIT.to_string()],
            ..DaemonOptions::default()
        },
    );
    // More oversized answers than it takes to open a breaker (5 failures in its window).
    for attempt in 0..7 {
        let error = daemon.call_err(
            "callTool",
            json!({"server": "remote", "tool": "huge_event", "arguments": {"bytes": 2 * LIMIT}}),
        );
        assert_eq!(
            error.code,
            code::UPSTREAM_ERROR,
            "attempt {attempt}: {error:?}"
        );
        match error_data(&error) {
            ErrorData::ResultTooLarge {
                server,
                method,
                bytes,
                limit_bytes,
                hint,
            } => {
                assert_eq!(server, "remote");
                assert_eq!(method, "huge_event");
                // rmcp stops reading at the limit: the whole size is not known.
                assert_eq!(bytes, None);
                assert_eq!(limit_bytes, LIMIT);
                assert!(hint.contains("ask for less"), "{hint}");
            }
            other => panic!("attempt {attempt}: expected resultTooLarge, got {other:?}"),
        }
    }
    // A plain JSON body over rmcp's fixed 16 MiB cap is that call's size error too.
    const JSON_LIMIT: u64 = 16 * 1024 * 1024;
    let error = daemon.call_err(
        "callTool",
        json!({"server": "remote", "tool": "huge_json", "arguments": {"bytes": JSON_LIMIT + 1024}}),
    );
    match error_data(&error) {
        ErrorData::ResultTooLarge {
            method,
            bytes,
            limit_bytes,
            ..
        } => {
            assert_eq!((method.as_str(), bytes), ("huge_json", None));
            assert_eq!(limit_bytes, JSON_LIMIT);
        }
        other => panic!("expected resultTooLarge for a JSON body, got {other:?}"),
    }
    let health = daemon.call("health", Value::Null);
    let server = &health["servers"][0];
    assert_eq!(server["state"], "ready", "{health:#}");
    assert_eq!(server["breaker"]["state"], "closed", "{health:#}");
    assert_eq!(server["restarts"], 0, "{health:#}");
    // An answer within the limit still arrives, over the same connection.
    let result = daemon.call_tool("remote", "huge_event", json!({"bytes": LIMIT / 2}));
    assert_eq!(text_content(&result).len() as u64, LIMIT / 2);
    let result = daemon.call_tool("remote", "echo", json!({"nonce": "still here"}));
    assert_eq!(text_content(&result), "still here");
}

// ---------------------------------------------------------------------------------------------
// 4. Configured secrets never leave the daemon: not in logs, statuses or errors.

#[test]
fn hardening_secrets_in_a_servers_url_and_headers_never_reach_logs_statuses_or_errors() {
    let key = format!("sk-{}", random_hex(12));
    let token = format!("tok-{}", random_hex(12));
    let working = HttpFaultServer::start(&[]);
    let rejecting = HttpFaultServer::start(&["--http-status", "400"]);
    let resetting = HttpFaultServer::start(&["--http-reset"]);
    let with_secrets = |peer: &HttpFaultServer| {
        json!({"url": peer.url("/mcp?api_key=${HARDENING_KEY}&v=1"),
               "headers": {"Authorization": "Bearer ${HARDENING_TOKEN}"}})
    };
    let daemon = Daemon::start_with(
        json!({"mcpServers": {
            "echoer": with_secrets(&working),
            "rejecter": with_secrets(&rejecting),
            "resetter": with_secrets(&resetting),
        }}),
        DaemonOptions {
            env: vec![
                ("HARDENING_KEY".into(), key.clone()),
                ("HARDENING_TOKEN".into(), token.clone()),
                // Debug, to show that even the chattiest lines are redacted.
                ("RUST_LOG".into(), "debug".into()),
            ],
            ..DaemonOptions::default()
        },
    );
    let minted = daemon.call("mintToken", json!({"readOnly": true}));
    let read_only = minted["token"].as_str().unwrap().to_owned();
    let as_read_only = |method: &str, params: Value| -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let auth = format!("Bearer {read_only}");
        let (status, body) = daemon.raw_post(
            &[("Authorization", auth.as_str())],
            body.to_string().as_bytes(),
        );
        assert_eq!(status, 200);
        serde_json::from_slice(&body).unwrap()
    };

    let mut seen: Vec<(String, String)> = Vec::new();
    let mut keep = |what: &str, value: &Value| seen.push((what.to_owned(), value.to_string()));
    keep("listServers", &as_read_only("listServers", json!({})));
    keep("health", &as_read_only("health", json!({})));
    for server in ["rejecter", "resetter"] {
        keep(
            &format!("callTool on {server}"),
            &as_read_only(
                "callTool",
                json!({"server": server, "tool": "echo", "arguments": {"nonce": "n"},
                       "timeoutMs": 3000}),
            ),
        );
    }
    // An upstream that reflects the request (URL, headers) in its JSON-RPC error, then a long
    // tail with a terminal escape.
    let reflected = as_read_only(
        "callTool",
        json!({"server": "echoer", "tool": "echo_request", "arguments": {"pad": 20_000}}),
    );
    keep("a reflected JSON-RPC error", &reflected);
    // And one that reflects it in an HTTP error body.
    let body_error = as_read_only(
        "callTool",
        json!({"server": "echoer", "tool": "status", "arguments": {"code": 403, "pad": 20_000}}),
    );
    keep("a reflected HTTP error body", &body_error);
    keep("health afterwards", &daemon.call("health", Value::Null));

    for (what, text) in &seen {
        assert!(
            !text.contains(&key) && !text.contains(&token),
            "a secret leaked in {what}: {text}"
        );
        assert!(
            !text.contains("\\u001b"),
            "a terminal escape passed in {what}: {text}"
        );
    }
    // Not vacuous: the URL and the headers were there, redacted.
    let health = &seen[1].1;
    assert!(health.contains("api_key=[redacted]"), "{health}");
    let message = reflected["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("api_key=[redacted]") && message.contains("authorization: [redacted]"),
        "{message}"
    );
    // Capped: 20 kB of padding do not come through.
    for error in [&reflected, &body_error] {
        assert!(
            error.to_string().len() < 8 * 1024,
            "an upstream error body is capped: {} bytes",
            error.to_string().len()
        );
    }

    let log = daemon.stderr();
    assert!(!log.is_empty());
    for secret in [&key, &token] {
        if let Some(line) = log.lines().find(|line| line.contains(secret.as_str())) {
            panic!("a secret leaked in the log: {line}");
        }
    }
    assert!(
        log.contains("[redacted]"),
        "the log mentioned the URL at all"
    );
}
