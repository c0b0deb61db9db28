//! The daemon's security boundary, input by input: the HTTP gate in front of the JSON-RPC
//! endpoint (method, `Host`, `Origin`, `Content-Type`, query string, path, bearer token, body
//! size, header-read timeout, connection cap), the identity challenge, hostile JSON-RPC bodies,
//! scoped tokens, the config's tool policy and destructive-call confirmation, secrets in logs and
//! process listings, file modes, and the Unix socket transport. Every test asserts the exact HTTP
//! status or JSON-RPC error, and that the daemon still answers a good request afterwards. No
//! response of any kind may carry a CORS header (every exchange here checks it).
//!
//! Input → test:
//! - `GET`, `PUT`, `DELETE`, `OPTIONS` preflight → 405: `only_post_is_served`
//! - `Host` missing, `evil.example`, `localhost.evil.example`, `127.0.0.1:<other port>`,
//!   `localhost` without port (valid token) → 403; `127.0.0.1:<port>`, `localhost:<port>`,
//!   `[::1]:<port>` → 200: `host_must_name_our_loopback_port`
//! - `Origin: http://evil.example`, `null`, `http://localhost:<other port>`, our own origin → 403:
//!   `a_foreign_origin_is_403`
//! - `--allow-origin URL` admits exactly that origin: `allow_origin_admits_only_the_listed_origin`
//! - no `access-control-*` header in a 200, 400, 401, 403, 404, 405, 413 or 501:
//!   `no_response_carries_cors_headers`
//! - `Content-Type` missing, `text/plain`, form, multipart, `application/jsonp`,
//!   `charset=utf-16` with a JSON body → 200; a UTF-16 or form body → -32700:
//!   `any_content_type_with_a_json_body_is_served`
//! - `/?token=<token>` (with and without the header), `/?x=1` → 400:
//!   `a_query_string_is_400_and_the_token_is_never_read_from_the_url`
//! - `/rpc`, `/identity/x`, `//`, `/index.html`, `/%2F` → 404: `unknown_paths_are_404`
//! - the gate's order, each refusal answered without the body being sent:
//!   `the_gate_answers_in_order_before_reading_the_body`
//! - `Authorization` missing, wrong, `Bearer` only, length ±1, wrong case, lowercase scheme,
//!   whitespace-padded, tab, duplicated, comma-joined → 401: `every_malformed_authorization_is_401`
//! - body over 4 MiB by `Content-Length`, not sent → 413: `a_body_over_the_default_limit_is_413_unread`
//! - `--max-body-bytes`: exactly the limit → 200, one byte over → 413:
//!   `max_body_bytes_is_inclusive`
//! - chunked body growing past the limit → 413: `a_chunked_body_over_the_limit_is_413`
//! - `Content-Length` longer than the body, then close → 400 or closed:
//!   `a_lying_content_length_is_refused_and_the_daemon_keeps_serving`
//! - slow-loris header trickle → dropped by the header-read timeout:
//!   `a_slow_loris_connection_is_dropped`
//! - 1,100 idle connections (over the cap of 1,024) → released, no descriptor leak:
//!   `connections_over_the_cap_do_not_take_the_daemon_down`
//! - `POST /identity` → HMAC proof bound to nonce and `Host`: `identity_proves_the_token`;
//!   for a minted token: `identity_proves_a_minted_token`; unknown or revoked token id → 403
//!   `{"error": "unknownTokenId"}`: `identity_with_an_unknown_token_id_is_403`; malformed headers → 400:
//!   `identity_with_malformed_headers_is_400`
//! - malformed JSON → -32700: `malformed_json_is_a_parse_error_and_the_daemon_keeps_serving`
//! - invalid UTF-8 → -32700: `invalid_utf8_is_a_parse_error`
//! - 100k nested `[` / `{"a":` → -32700: `deep_nesting_is_a_parse_error`
//! - `jsonrpc: "1.0"` or missing → -32600: `a_wrong_jsonrpc_version_is_invalid_request`
//! - object and array ids → -32600; float and huge ids → echoed or -32600, one response:
//!   `odd_ids_get_exactly_one_answer`
//! - `[]` → -32600: `an_empty_batch_is_invalid_request`
//! - 10k-element batch → one error; 100 → 100 answers; 101 → one error:
//!   `batches_over_100_are_refused_with_one_error`
//! - notification-only batch, single notification → no body:
//!   `notifications_get_no_response_body`
//! - a panic in a handler → -32603: tested in the daemon (`edge/dispatch/tests.rs`, the `panic` bodies); no handler can be made to panic from outside
//! - `mintToken` → `{token, tokenId, scope, expiresAt}`: `mint_token_returns_a_working_token`
//! - `servers` scope: `a_server_scoped_token_sees_and_calls_only_its_servers`
//! - `tools` glob scope: `a_tool_scoped_token_sees_and_calls_only_matching_tools`
//! - `readOnly` scope: `a_read_only_token_sees_only_read_only_tools`
//! - expiry → 401: `an_expired_token_is_401`
//! - `revokeToken` → 401, `listTokens` without secrets: `a_revoked_token_is_401`
//! - scoped token calling `mintToken`/`revokeToken`/`listTokens` → -32006:
//!   `a_scoped_token_cannot_manage_tokens`
//! - `tool-cli` with the owner token unchanged, with a scoped token narrowed:
//!   `tool_cli_works_with_owner_and_scoped_tokens`
//! - `denyTools`/`allowTools`: `config_policy_hides_and_refuses_tools`
//! - `destructiveHint` without/with `confirm`: `a_destructive_tool_needs_confirmation`
//! - `destructiveTools` glob, `confirmDestructive: false`:
//!   `destructive_tools_globs_and_confirm_destructive_false`
//! - token in the log at `RUST_LOG=trace`: `tokens_never_reach_the_log_even_at_trace`
//! - token in `/proc/<pid>/cmdline` (daemon, children) or a child's environment:
//!   `the_token_is_not_in_any_command_line_or_child_environment`
//! - config writable by group or others → exit 2: `a_config_writable_by_others_is_refused`
//! - `--token-file` writable by group or others → exit 2; 0600 works:
//!   `a_token_file_writable_by_others_is_refused`
//! - `--socket PATH`: 0600 socket in a 0700 dir, runtime file `socket`, `TOOL_CLI_SOCKET`
//!   client: `the_unix_socket_serves_tool_cli`; pre-existing path:
//!   `the_socket_refuses_an_existing_path`; symlinked dir: `the_socket_refuses_a_symlinked_directory`

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_cli_protocol::methods::{ListServersResult, MintTokenResult, name};
use tool_cli_protocol::runtime::{RUNTIME_FILE_NAME, RuntimeFile};
use tool_cli_protocol::{ErrorData, ErrorObject, code, env, identity};
use tool_cli_tests::{
    CLIENT_TIMEOUT, Daemon, DaemonOptions, HttpResponse, STARTUP_TIMEOUT, children_of,
    client_command, count_recorded, daemon_command, error_data, eventually, fault_server,
    fault_server_recording, http_post, http_request_bytes, identity_proof, parse_response,
    random_hex, raw_http_exchange, read_http_response, run_with_timeout, scratch, token_id,
};

const BRIDGE_INFO: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"getBridgeInfo"}"#;

/// How long a refusal may take to arrive when the body was never sent: far longer than any
/// answer takes, far shorter than a daemon waiting for the body would hold the connection.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the daemon may hold a connection whose headers never finish: its header-read
/// timeout (about 10 s) and a generous margin.
const SLOW_LORIS_BOUND: Duration = Duration::from_secs(40);

// ---------------------------------------------------------------------------------------------
// Helpers.

/// A daemon whose only server is the fault fixture (it starts in milliseconds).
fn start_fault_daemon() -> Daemon {
    Daemon::start(json!({"mcpServers": {"alpha": fault_server(&[])}}))
}

fn start_with_args(args: &[&str]) -> Daemon {
    Daemon::start_with(
        json!({"mcpServers": {"alpha": fault_server(&[])}}),
        DaemonOptions {
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            ..DaemonOptions::default()
        },
    )
}

fn our_host(daemon: &Daemon) -> String {
    format!("127.0.0.1:{}", daemon.port)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn assert_no_cors(response: &HttpResponse) {
    let cors: Vec<_> = response
        .headers
        .iter()
        .filter(|(name, _)| name.to_ascii_lowercase().starts_with("access-control-"))
        .collect();
    assert!(cors.is_empty(), "CORS headers in a response: {cors:?}");
}

/// One request with exactly `headers` (plus `Content-Length` and `Connection: close`).
fn exchange(
    daemon: &Daemon,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    let request = http_request_bytes(method, target, headers, body);
    let response = raw_http_exchange(daemon.port, &request)
        .unwrap_or_else(|err| panic!("{method} {target} with {headers:?}: {err}"));
    assert_no_cors(&response);
    response
}

/// The headers of a good authenticated request, then `changes` applied: each replaces (or with
/// `None` removes) every header of that name, or adds it.
fn headers_with(daemon: &Daemon, changes: &[(&str, Option<&str>)]) -> Vec<(String, String)> {
    let mut headers = vec![
        ("Host".to_owned(), our_host(daemon)),
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("Authorization".to_owned(), bearer(&daemon.token)),
    ];
    for (name, value) in changes {
        headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(name));
        if let Some(value) = value {
            headers.push(((*name).to_owned(), (*value).to_owned()));
        }
    }
    headers
}

fn as_refs(headers: &[(String, String)]) -> Vec<(&str, &str)> {
    headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect()
}

/// `POST /` of `getBridgeInfo` with the good headers changed by `changes`.
fn post_with(daemon: &Daemon, changes: &[(&str, Option<&str>)]) -> HttpResponse {
    let headers = headers_with(daemon, changes);
    exchange(daemon, "POST", "/", &as_refs(&headers), BRIDGE_INFO)
}

/// The daemon still answers a good request with a result.
fn assert_still_serving(daemon: &Daemon) {
    let (status, body) = daemon.post(BRIDGE_INFO);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert!(
        parse_response(&body).result.is_some(),
        "getBridgeInfo after the bad input: {}",
        String::from_utf8_lossy(&body)
    );
}

/// Sends only the headers of a request claiming a `claimed_length` body and reads the answer,
/// which must arrive without the body being sent.
fn refusal_without_body(
    daemon: &Daemon,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    claimed_length: usize,
) -> HttpResponse {
    let mut request = format!("{method} {target} HTTP/1.1\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Length: {claimed_length}\r\nConnection: close\r\n\r\n"
    ));
    let mut stream = TcpStream::connect(("127.0.0.1", daemon.port)).expect("connect");
    stream
        .set_read_timeout(Some(REFUSAL_TIMEOUT))
        .expect("read timeout");
    stream.write_all(request.as_bytes()).expect("send headers");
    let response = read_http_response(&mut std::io::BufReader::new(stream)).unwrap_or_else(|err| {
        panic!(
            "{method} {target} {headers:?} claiming {claimed_length} bytes was not answered \
             before its body was sent: {err}"
        )
    });
    assert_no_cors(&response);
    response
}

fn status_as(daemon: &Daemon, token: &str) -> u16 {
    let auth = bearer(token);
    http_post(daemon.port, "/", &[("Authorization", &auth)], BRIDGE_INFO).0
}

/// Posts `body` with the right token and returns the parsed JSON answer. The HTTP status of a
/// JSON-RPC error is not part of the contract (jsonrpsee answers some parse errors with 400), so
/// 200 and 400 both pass; the body decides.
fn post_json(daemon: &Daemon, body: &[u8]) -> Value {
    let (status, response) = daemon.post(body);
    assert!(
        status == 200 || status == 400,
        "HTTP {status}: {}",
        String::from_utf8_lossy(&response)
    );
    serde_json::from_slice(&response).unwrap_or_else(|err| {
        panic!(
            "answer is not JSON ({err}): {}",
            String::from_utf8_lossy(&response)
        )
    })
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected one JSON-RPC error object, got {answer}"))
}

fn mint(daemon: &Daemon, params: Value) -> MintTokenResult {
    serde_json::from_value(daemon.call(name::MINT_TOKEN, params)).expect("mintToken result")
}

fn server_names(daemon: &Daemon, token: &str) -> Vec<String> {
    let result = daemon
        .rpc_as(token, name::LIST_SERVERS, None)
        .expect("listServers");
    let result: ListServersResult = serde_json::from_value(result).expect("listServers result");
    result.servers.into_iter().map(|s| s.name).collect()
}

fn tool_names(daemon: &Daemon, token: &str, server: &str) -> Vec<String> {
    let result = daemon
        .rpc_as(token, name::LIST_TOOLS, Some(json!({"server": server})))
        .unwrap_or_else(|err| panic!("listTools {server}: {err:?}"));
    result["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("listTools result {result}"))
        .iter()
        .map(|tool| tool["name"].as_str().expect("tool name").to_owned())
        .collect()
}

/// Asserts `-32006` `notPermitted` for `server` (and `tool`, when given).
fn assert_not_permitted(error: &ErrorObject, server: &str, tool: Option<&str>) {
    assert_eq!(error.code, code::FORBIDDEN, "{error:?}");
    match error_data(error) {
        ErrorData::NotPermitted {
            server: reported,
            tool: reported_tool,
            reason,
        } => {
            assert_eq!(reported, server, "{error:?}");
            if let Some(tool) = tool {
                assert_eq!(reported_tool.as_deref(), Some(tool), "{error:?}");
            }
            assert!(!reason.is_empty(), "a reason in words: {error:?}");
        }
        other => panic!("expected notPermitted, got {other:?}"),
    }
}

fn assert_confirmation_required(error: &ErrorObject, server: &str, tool: &str) {
    assert_eq!(error.code, code::FORBIDDEN, "{error:?}");
    assert_eq!(
        error_data(error),
        ErrorData::ConfirmationRequired {
            server: server.into(),
            tool: tool.into(),
        },
        "{error:?}"
    );
}

fn call_params(server: &str, tool: &str, arguments: Value) -> Value {
    json!({"server": server, "tool": tool, "arguments": arguments})
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|err| panic!("stat {}: {err}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

// ---------------------------------------------------------------------------------------------
// The HTTP gate.

#[test]
fn only_post_is_served() {
    let daemon = start_fault_daemon();
    let host = our_host(&daemon);
    let auth = bearer(&daemon.token);
    for method in ["GET", "PUT", "DELETE", "PATCH"] {
        let response = exchange(
            &daemon,
            method,
            "/",
            &[
                ("Host", &host),
                ("Content-Type", "application/json"),
                ("Authorization", &auth),
            ],
            BRIDGE_INFO,
        );
        assert_eq!(response.status, 405, "{method}");
    }
    // A browser's CORS preflight.
    let response = exchange(
        &daemon,
        "OPTIONS",
        "/",
        &[
            ("Host", &host),
            ("Origin", "http://evil.example"),
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "authorization, content-type",
            ),
        ],
        b"",
    );
    assert_eq!(response.status, 405, "OPTIONS preflight");
    assert_still_serving(&daemon);
}

#[test]
fn host_must_name_our_loopback_port() {
    let daemon = start_fault_daemon();
    let other_port = if daemon.port == 65535 {
        1
    } else {
        daemon.port + 1
    };
    for good in [
        format!("127.0.0.1:{}", daemon.port),
        format!("localhost:{}", daemon.port),
        format!("[::1]:{}", daemon.port),
    ] {
        let response = post_with(&daemon, &[("Host", Some(&good))]);
        assert_eq!(response.status, 200, "Host: {good}");
    }
    for bad in [
        "evil.example".to_owned(),
        format!("evil.example:{}", daemon.port),
        "localhost.evil.example".to_owned(),
        format!("localhost.evil.example:{}", daemon.port),
        format!("127.0.0.1:{other_port}"),
        format!("localhost:{other_port}"),
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
    ] {
        let response = post_with(&daemon, &[("Host", Some(&bad))]);
        assert_eq!(response.status, 403, "Host: {bad} (with a valid token)");
    }
    let response = post_with(&daemon, &[("Host", None)]);
    assert_eq!(response.status, 403, "no Host header (with a valid token)");
    assert_still_serving(&daemon);
}

#[test]
fn a_foreign_origin_is_403() {
    let daemon = start_fault_daemon();
    let other_port = if daemon.port == 65535 {
        1
    } else {
        daemon.port + 1
    };
    for origin in [
        "http://evil.example".to_owned(),
        "null".to_owned(),
        format!("http://localhost:{other_port}"),
        // The allow-list is empty by default: not even our own origin is a browser we serve.
        format!("http://127.0.0.1:{}", daemon.port),
    ] {
        let response = post_with(&daemon, &[("Origin", Some(&origin))]);
        assert_eq!(
            response.status, 403,
            "Origin: {origin} (with a valid token)"
        );
    }
    assert_still_serving(&daemon);
}

#[test]
fn allow_origin_admits_only_the_listed_origin() {
    let daemon = start_with_args(&[
        "--allow-origin",
        "http://app.example",
        "--allow-origin",
        "http://localhost:5173",
    ]);
    for allowed in ["http://app.example", "http://localhost:5173"] {
        let response = post_with(&daemon, &[("Origin", Some(allowed))]);
        assert_eq!(response.status, 200, "Origin: {allowed}");
        assert!(parse_response(&response.body).result.is_some());
    }
    for refused in [
        "http://evil.example",
        "http://app.example.evil.example",
        "https://app.example",
        "http://localhost:5174",
        "null",
    ] {
        let response = post_with(&daemon, &[("Origin", Some(refused))]);
        assert_eq!(response.status, 403, "Origin: {refused}");
    }
    // An allowed origin does not replace the token.
    let response = post_with(
        &daemon,
        &[
            ("Origin", Some("http://app.example")),
            ("Authorization", None),
        ],
    );
    assert_eq!(response.status, 401);
    assert_still_serving(&daemon);
}

#[test]
fn no_response_carries_cors_headers() {
    let daemon = start_with_args(&["--max-body-bytes", "1024"]);
    let host = our_host(&daemon);
    let auth = bearer(&daemon.token);
    let good = [
        ("Host", host.as_str()),
        ("Content-Type", "application/json"),
        ("Authorization", auth.as_str()),
        ("Origin", "http://evil.example"),
    ];
    let headers = headers_with(&daemon, &[]);
    // `exchange` asserts the absence of CORS headers on every one of these.
    let statuses = [
        post_with(&daemon, &[]).status,
        exchange(&daemon, "OPTIONS", "/", &good, b"").status,
        post_with(&daemon, &[("Origin", Some("http://evil.example"))]).status,
        post_with(&daemon, &[("Authorization", None)]).status,
        post_with(&daemon, &[("Transfer-Encoding", Some("gzip, chunked"))]).status,
        exchange(&daemon, "POST", "/?x=1", &as_refs(&headers), BRIDGE_INFO).status,
        exchange(&daemon, "POST", "/nope", &as_refs(&headers), BRIDGE_INFO).status,
        exchange(&daemon, "POST", "/", &as_refs(&headers), &[b' '; 2048]).status,
    ];
    assert_eq!(statuses, [200, 405, 403, 401, 501, 400, 404, 413]);
}

#[test]
fn any_content_type_with_a_json_body_is_served() {
    let daemon = start_fault_daemon();
    // What `curl -d` sends, what `fetch` with a string body sends, and more: the reference
    // bridge serves them all, and the token, `Host` and `Origin` checks stop browsers anyway.
    for content_type in [
        None,
        Some("application/json"),
        Some("application/json; charset=utf-8"),
        Some("application/x-www-form-urlencoded"),
        Some("text/plain;charset=UTF-8"),
        Some("multipart/form-data; boundary=x"),
        Some("application/jsonp"),
        Some("text/json"),
        Some("application/json; charset=utf-16"),
    ] {
        let response = post_with(&daemon, &[("Content-Type", content_type)]);
        assert_eq!(response.status, 200, "Content-Type: {content_type:?}");
        assert!(
            parse_response(&response.body).result.is_some(),
            "Content-Type: {content_type:?}: {}",
            String::from_utf8_lossy(&response.body)
        );
    }
    // The body still has to be UTF-8 JSON, whatever the label says.
    let headers = headers_with(&daemon, &[("Content-Type", Some("text/plain"))]);
    let utf16: Vec<u8> = String::from_utf8_lossy(BRIDGE_INFO)
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    let response = exchange(&daemon, "POST", "/", &as_refs(&headers), &utf16);
    let answer: Value = serde_json::from_slice(&response.body).expect("a JSON-RPC answer");
    assert_eq!(
        error_code(&answer),
        i64::from(code::PARSE_ERROR),
        "{answer}"
    );
    let response = exchange(&daemon, "POST", "/", &as_refs(&headers), b"name=value");
    let answer: Value = serde_json::from_slice(&response.body).expect("a JSON-RPC answer");
    assert_eq!(
        error_code(&answer),
        i64::from(code::PARSE_ERROR),
        "{answer}"
    );
    assert_still_serving(&daemon);
}

#[test]
fn a_query_string_is_400_and_the_token_is_never_read_from_the_url() {
    let daemon = start_fault_daemon();
    let with_token = headers_with(&daemon, &[]);
    let without_token = headers_with(&daemon, &[("Authorization", None)]);
    let token_in_url = format!("/?token={}", daemon.token);
    let access_token_in_url = format!("/?access_token={}", daemon.token);
    for (target, headers) in [
        (token_in_url.as_str(), &without_token),
        (access_token_in_url.as_str(), &without_token),
        (token_in_url.as_str(), &with_token),
        ("/?x=1", &with_token),
    ] {
        let response = exchange(&daemon, "POST", target, &as_refs(headers), BRIDGE_INFO);
        assert_eq!(
            response.status,
            400,
            "POST {target} (Authorization: {})",
            headers.iter().any(|(name, _)| name == "Authorization")
        );
    }
    assert_still_serving(&daemon);
}

#[test]
fn unknown_paths_are_404() {
    let daemon = start_fault_daemon();
    let headers = headers_with(&daemon, &[]);
    for path in ["/rpc", "/identity/x", "//", "/index.html", "/%2F", "/.."] {
        let response = exchange(&daemon, "POST", path, &as_refs(&headers), BRIDGE_INFO);
        assert_eq!(response.status, 404, "POST {path}");
    }
    assert_still_serving(&daemon);
}

/// A request line, its headers, and the status the gate must answer.
type GateCase<'a> = (&'a str, &'a str, Vec<(&'a str, &'a str)>, u16);

#[test]
fn the_gate_answers_in_order_before_reading_the_body() {
    let daemon = start_fault_daemon();
    let host = our_host(&daemon);
    let claimed = 1_000_000;
    // Each request breaks the rule its status is for *and* every rule after it, so the status
    // proves the order; none of their bodies is ever sent.
    let cases: [GateCase<'_>; 7] = [
        ("GET", "/nope?x=1", vec![("Host", "evil.example")], 405),
        (
            "POST",
            "/nope?x=1",
            vec![("Host", "evil.example"), ("Origin", "http://evil.example")],
            403,
        ),
        (
            "POST",
            "/nope?x=1",
            vec![("Host", &host), ("Origin", "http://evil.example")],
            403,
        ),
        (
            "POST",
            "/nope?x=1",
            vec![("Host", &host), ("Transfer-Encoding", "gzip, chunked")],
            501,
        ),
        (
            "POST",
            "/nope?x=1",
            vec![("Host", &host), ("Content-Type", "application/json")],
            400,
        ),
        (
            "POST",
            "/nope",
            vec![("Host", &host), ("Content-Type", "application/json")],
            404,
        ),
        (
            "POST",
            "/",
            vec![("Host", &host), ("Content-Type", "application/json")],
            401,
        ),
    ];
    for (method, target, headers, expected) in cases {
        let response = refusal_without_body(&daemon, method, target, &headers, claimed);
        assert_eq!(response.status, expected, "{method} {target} {headers:?}");
    }
    assert_still_serving(&daemon);
}

#[test]
fn every_malformed_authorization_is_401() {
    let daemon = start_fault_daemon();
    let token = daemon.token.clone();
    let mut near = token.clone();
    let last = if near.ends_with('0') { "1" } else { "0" };
    near.replace_range(near.len() - 1.., last);
    let cases: Vec<(String, Vec<String>)> = vec![
        ("missing".into(), vec![]),
        ("wrong".into(), vec![bearer(&"0".repeat(64))]),
        ("one character off".into(), vec![bearer(&near)]),
        ("scheme only".into(), vec!["Bearer".into()]),
        ("scheme and space".into(), vec!["Bearer ".into()]),
        ("prefix of the token".into(), vec![bearer(&token[..32])]),
        ("one short".into(), vec![bearer(&token[..token.len() - 1])]),
        ("one long".into(), vec![bearer(&format!("{token}0"))]),
        (
            "token upper-cased".into(),
            vec![bearer(&token.to_uppercase())],
        ),
        ("scheme lower-cased".into(), vec![format!("bearer {token}")]),
        ("scheme upper-cased".into(), vec![format!("BEARER {token}")]),
        ("other scheme".into(), vec![format!("Basic {token}")]),
        ("no scheme".into(), vec![token.clone()]),
        ("two spaces".into(), vec![format!("Bearer  {token}")]),
        ("tab".into(), vec![format!("Bearer\t{token}")]),
        (
            "space inside".into(),
            vec![format!("Bearer {} {}", &token[..32], &token[32..])],
        ),
        ("duplicated".into(), vec![bearer(&token), bearer(&token)]),
        (
            "duplicated, one wrong".into(),
            vec![bearer(&token), bearer(&near)],
        ),
        (
            "comma-joined".into(),
            vec![format!("{}, {}", bearer(&token), bearer(&token))],
        ),
    ];
    let host = our_host(&daemon);
    for (what, values) in cases {
        let mut headers = vec![
            ("Host", host.as_str()),
            ("Content-Type", "application/json"),
        ];
        for value in &values {
            headers.push(("Authorization", value.as_str()));
        }
        let response = exchange(&daemon, "POST", "/", &headers, BRIDGE_INFO);
        assert_eq!(response.status, 401, "Authorization {what}: {values:?}");
        let body = String::from_utf8_lossy(&response.body);
        assert!(
            !body.contains(&token) && !body.contains("bridgeProtocol"),
            "a 401 reveals nothing ({what}): {body:?}"
        );
    }
    assert_still_serving(&daemon);
}

#[test]
fn a_body_over_the_default_limit_is_413_unread() {
    let daemon = start_fault_daemon();
    let host = our_host(&daemon);
    let auth = bearer(&daemon.token);
    let headers = [
        ("Host", host.as_str()),
        ("Content-Type", "application/json"),
        ("Authorization", auth.as_str()),
    ];
    let response = refusal_without_body(&daemon, "POST", "/", &headers, 4 * 1024 * 1024 + 1);
    assert_eq!(response.status, 413);
    assert_still_serving(&daemon);
}

#[test]
fn max_body_bytes_is_inclusive() {
    let limit = 4096;
    let daemon = start_with_args(&["--max-body-bytes", &limit.to_string()]);
    // Valid JSON padded with whitespace to exactly the limit, then one byte more.
    let mut body = BRIDGE_INFO.to_vec();
    body.resize(limit, b' ');
    let response = post_with_body(&daemon, &body);
    assert_eq!(response.status, 200, "a body of exactly --max-body-bytes");
    assert!(parse_response(&response.body).result.is_some());
    body.push(b' ');
    let response = post_with_body(&daemon, &body);
    assert_eq!(response.status, 413, "one byte over --max-body-bytes");
    assert_still_serving(&daemon);
}

fn post_with_body(daemon: &Daemon, body: &[u8]) -> HttpResponse {
    let headers = headers_with(daemon, &[]);
    exchange(daemon, "POST", "/", &as_refs(&headers), body)
}

#[test]
fn a_chunked_body_over_the_limit_is_413() {
    let daemon = start_with_args(&["--max-body-bytes", "65536"]);
    let mut stream = TcpStream::connect(("127.0.0.1", daemon.port)).expect("connect");
    stream
        .set_read_timeout(Some(REFUSAL_TIMEOUT))
        .expect("read timeout");
    stream
        .set_write_timeout(Some(REFUSAL_TIMEOUT))
        .expect("write timeout");
    let head = format!(
        "POST / HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAuthorization: {}\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        our_host(&daemon),
        bearer(&daemon.token)
    );
    stream.write_all(head.as_bytes()).expect("send headers");
    // Up to 1 MiB in 8 KiB chunks, 16 times the limit; the daemon may answer and close early.
    let chunk = [b' '; 8192];
    for _ in 0..128 {
        let mut frame = format!("{:x}\r\n", chunk.len()).into_bytes();
        frame.extend_from_slice(&chunk);
        frame.extend_from_slice(b"\r\n");
        if stream.write_all(&frame).is_err() {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    let response = read_http_response(&mut std::io::BufReader::new(stream))
        .expect("an answer to the oversized chunked body");
    assert_no_cors(&response);
    assert_eq!(response.status, 413);
    assert_still_serving(&daemon);
}

#[test]
fn a_lying_content_length_is_refused_and_the_daemon_keeps_serving() {
    let daemon = start_fault_daemon();
    let mut stream = TcpStream::connect(("127.0.0.1", daemon.port)).expect("connect");
    stream
        .set_read_timeout(Some(REFUSAL_TIMEOUT))
        .expect("read timeout");
    let head = format!(
        "POST / HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAuthorization: {}\r\n\
         Content-Length: 1000\r\nConnection: close\r\n\r\n",
        our_host(&daemon),
        bearer(&daemon.token)
    );
    stream.write_all(head.as_bytes()).expect("send headers");
    stream.write_all(BRIDGE_INFO).expect("send the short body");
    stream.shutdown(Shutdown::Write).expect("half-close");
    match read_http_response(&mut std::io::BufReader::new(stream)) {
        Ok(response) => assert_eq!(response.status, 400, "{response:?}"),
        // Closed or reset without an answer is the other acceptable outcome.
        Err(err) => assert!(
            matches!(
                err.kind(),
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
            ),
            "neither 400 nor a closed connection: {err}"
        ),
    }
    assert_still_serving(&daemon);
}

#[test]
fn a_slow_loris_connection_is_dropped() {
    let daemon = start_fault_daemon();
    let mut stream = TcpStream::connect(("127.0.0.1", daemon.port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("read timeout");
    let head = format!("POST / HTTP/1.1\r\nHost: {}\r\n", our_host(&daemon));
    stream
        .write_all(head.as_bytes())
        .expect("send a partial head");
    // One more header line every half second, never the blank line that ends the head. The
    // loop is bounded; the daemon must close the connection well before it ends.
    let started = Instant::now();
    let mut closed = false;
    let mut served_meanwhile = false;
    for line in 0.. {
        if started.elapsed() > SLOW_LORIS_BOUND {
            break;
        }
        let mut buffer = [0u8; 512];
        match stream.read(&mut buffer) {
            // EOF, or an answer such as 408 before the close: either way the daemon gave up.
            Ok(_) => {
                closed = true;
                break;
            }
            Err(err)
                if matches!(
                    err.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => {
                closed = true;
                break;
            }
        }
        if stream
            .write_all(format!("X-Slow-{line}: a\r\n").as_bytes())
            .is_err()
        {
            closed = true;
            break;
        }
        if line == 2 {
            // A real client is served while the slow one hangs on.
            assert_still_serving(&daemon);
            served_meanwhile = true;
        }
    }
    assert!(
        closed,
        "a connection trickling its headers was still open after {SLOW_LORIS_BOUND:?}"
    );
    assert!(served_meanwhile);
    assert_still_serving(&daemon);
}

fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|entries| entries.count())
        .unwrap_or(0)
}

#[test]
fn connections_over_the_cap_do_not_take_the_daemon_down() {
    const CONNECTIONS: usize = 1100;
    let daemon = start_fault_daemon();
    assert_still_serving(&daemon);
    let baseline = open_descriptors(daemon.pid());
    let mut idle = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        match TcpStream::connect(("127.0.0.1", daemon.port)) {
            Ok(stream) => idle.push(stream),
            // A full accept backlog may refuse some; that is the cap doing its job.
            Err(_) => break,
        }
    }
    assert!(
        idle.len() >= 1024,
        "only {} connections could be opened",
        idle.len()
    );
    drop(idle);
    // Once the idle connections are gone, requests are served and no descriptor is kept.
    assert!(
        eventually(Duration::from_secs(30), || {
            let auth = bearer(&daemon.token);
            let request = http_request_bytes(
                "POST",
                "/",
                &[
                    ("Host", &our_host(&daemon)),
                    ("Content-Type", "application/json"),
                    ("Authorization", &auth),
                ],
                BRIDGE_INFO,
            );
            matches!(raw_http_exchange(daemon.port, &request), Ok(r) if r.status == 200)
        }),
        "the daemon does not serve again after the idle connections closed"
    );
    assert!(
        eventually(Duration::from_secs(30), || open_descriptors(daemon.pid())
            <= baseline + 16),
        "descriptors: {baseline} before, {} after closing {CONNECTIONS} connections",
        open_descriptors(daemon.pid())
    );
    assert_still_serving(&daemon);
}

// ---------------------------------------------------------------------------------------------
// The identity challenge.

fn identity_request(daemon: &Daemon, host: &str, nonce: &str, id: &str) -> HttpResponse {
    exchange(
        daemon,
        "POST",
        identity::PATH,
        &[
            ("Host", host),
            ("Content-Type", "application/json"),
            (identity::NONCE_HEADER, nonce),
            (identity::TOKEN_ID_HEADER, id),
        ],
        b"",
    )
}

fn proof_of(response: &HttpResponse) -> String {
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    let body: Value = serde_json::from_slice(&response.body).expect("identity answer is JSON");
    body["proof"]
        .as_str()
        .unwrap_or_else(|| panic!("no proof in {body}"))
        .to_owned()
}

#[test]
fn identity_proves_the_token() {
    let daemon = start_fault_daemon();
    let id = token_id(&daemon.token);
    for host in [our_host(&daemon), format!("localhost:{}", daemon.port)] {
        let nonce = random_hex(32);
        let response = identity_request(&daemon, &host, &nonce, &id);
        let proof = proof_of(&response);
        assert_eq!(
            proof,
            identity_proof(&daemon.token, &nonce, &host),
            "the proof is HMAC-SHA256(token, message(nonce, {host:?}))"
        );
        // Bound to the nonce and to the Host dialed.
        assert_ne!(proof, identity_proof(&daemon.token, &random_hex(32), &host));
        assert_ne!(proof, identity_proof(&daemon.token, &nonce, "127.0.0.1:1"));
        assert!(!String::from_utf8_lossy(&response.body).contains(&daemon.token));
    }
    assert_still_serving(&daemon);
}

#[test]
fn identity_proves_a_minted_token() {
    let daemon = start_fault_daemon();
    let minted = mint(&daemon, json!({"servers": ["alpha"]}));
    assert_eq!(minted.token_id, token_id(&minted.token), "tokenId rule");
    let nonce = random_hex(32);
    let host = our_host(&daemon);
    let proof = proof_of(&identity_request(&daemon, &host, &nonce, &minted.token_id));
    assert_eq!(proof, identity_proof(&minted.token, &nonce, &host));
}

#[test]
fn identity_with_an_unknown_token_id_is_403() {
    let daemon = start_fault_daemon();
    // Never minted, and minted then revoked: the same answer, which names the reason and
    // nothing else (no proof, no other token's id).
    let revoked = mint(&daemon, json!({"servers": ["alpha"]}));
    daemon.call(name::REVOKE_TOKEN, json!({"tokenId": revoked.token_id}));
    for unknown in [token_id(&random_hex(32)), revoked.token_id] {
        let response = identity_request(&daemon, &our_host(&daemon), &random_hex(32), &unknown);
        assert_eq!(response.status, 403);
        let body: Value = serde_json::from_slice(&response.body).expect("a JSON body");
        assert_eq!(body, json!({"error": identity::UNKNOWN_TOKEN_ID}));
    }
    assert_still_serving(&daemon);
}

#[test]
fn identity_with_malformed_headers_is_400() {
    let daemon = start_fault_daemon();
    let host = our_host(&daemon);
    let id = token_id(&daemon.token);
    let nonce = random_hex(32);
    let cases = [
        ("short nonce", nonce[..63].to_owned(), id.clone()),
        ("long nonce", format!("{nonce}0"), id.clone()),
        ("upper-case nonce", nonce.to_uppercase(), id.clone()),
        ("non-hex nonce", "g".repeat(64), id.clone()),
        ("empty nonce", String::new(), id.clone()),
        ("short token id", nonce.clone(), id[..15].to_owned()),
        ("long token id", nonce.clone(), format!("{id}0")),
        ("non-hex token id", nonce.clone(), "z".repeat(16)),
        ("the token as its id", nonce.clone(), daemon.token.clone()),
    ];
    for (what, nonce, id) in cases {
        let response = identity_request(&daemon, &host, &nonce, &id);
        assert_eq!(response.status, 400, "{what}");
    }
    for missing in [identity::NONCE_HEADER, identity::TOKEN_ID_HEADER] {
        let mut headers = vec![
            ("Host", host.as_str()),
            ("Content-Type", "application/json"),
            (identity::NONCE_HEADER, nonce.as_str()),
            (identity::TOKEN_ID_HEADER, id.as_str()),
        ];
        headers.retain(|(name, _)| *name != missing);
        let response = exchange(&daemon, "POST", identity::PATH, &headers, b"");
        assert_eq!(response.status, 400, "without {missing}");
    }
    assert_still_serving(&daemon);
}

// ---------------------------------------------------------------------------------------------
// Hostile JSON-RPC bodies.

#[test]
fn malformed_json_is_a_parse_error_and_the_daemon_keeps_serving() {
    let daemon = start_fault_daemon();
    for body in [
        &br#"{"jsonrpc":"2.0","id":1,"method":"#[..],
        b"{",
        b"}",
        br#"{"jsonrpc":"2.0","id":1,"method":"getBridgeInfo",}"#,
        br#"[{"jsonrpc":"2.0","id":1,"method":"getBridgeInfo"}"#,
        b"\0",
    ] {
        let answer = post_json(&daemon, body);
        assert_eq!(
            error_code(&answer),
            i64::from(code::PARSE_ERROR),
            "{}",
            String::from_utf8_lossy(body)
        );
        assert_eq!(answer["id"], Value::Null);
    }
    assert_still_serving(&daemon);
}

#[test]
fn invalid_utf8_is_a_parse_error() {
    let daemon = start_fault_daemon();
    for body in [
        &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getBridge\xffInfo\"}"[..],
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"listTools\",\"params\":{\"server\":\"\xc3\x28\"}}",
        b"\xfe\xff",
    ] {
        let answer = post_json(&daemon, body);
        assert_eq!(error_code(&answer), i64::from(code::PARSE_ERROR), "{answer}");
    }
    assert_still_serving(&daemon);
}

#[test]
fn deep_nesting_is_a_parse_error() {
    let daemon = start_fault_daemon();
    let brackets = "[".repeat(100_000);
    let objects = r#"{"a":"#.repeat(100_000);
    let in_params = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"listTools","params":{}}}"#,
        "[".repeat(100_000)
    );
    for body in [brackets, objects, in_params] {
        let answer = post_json(&daemon, body.as_bytes());
        assert_eq!(
            error_code(&answer),
            i64::from(code::PARSE_ERROR),
            "{}…",
            &body[..40]
        );
    }
    assert_still_serving(&daemon);
}

#[test]
fn a_wrong_jsonrpc_version_is_invalid_request() {
    let daemon = start_fault_daemon();
    for body in [
        r#"{"jsonrpc":"1.0","id":1,"method":"getBridgeInfo"}"#,
        r#"{"jsonrpc":"3.0","id":1,"method":"getBridgeInfo"}"#,
        r#"{"jsonrpc":2.0,"id":1,"method":"getBridgeInfo"}"#,
        r#"{"id":1,"method":"getBridgeInfo"}"#,
    ] {
        let answer = post_json(&daemon, body.as_bytes());
        assert_eq!(
            error_code(&answer),
            i64::from(code::INVALID_REQUEST),
            "{body}"
        );
        assert!(answer.get("result").is_none(), "{answer}");
    }
    assert_still_serving(&daemon);
}

#[test]
fn odd_ids_get_exactly_one_answer() {
    let daemon = start_fault_daemon();
    for id in [r#"{"a":1}"#, "[1]", "true"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"getBridgeInfo"}}"#);
        let answer = post_json(&daemon, body.as_bytes());
        assert!(answer.is_object(), "one answer for id {id}: {answer}");
        assert_eq!(
            error_code(&answer),
            i64::from(code::INVALID_REQUEST),
            "id {id}"
        );
    }
    for id in ["1.5", "-1", "123456789012345678901234567890", "1e400"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"getBridgeInfo"}}"#);
        let answer = post_json(&daemon, body.as_bytes());
        assert!(answer.is_object(), "one answer for id {id}: {answer}");
        if answer.get("error").is_some() {
            assert_eq!(
                error_code(&answer),
                i64::from(code::INVALID_REQUEST),
                "id {id}: {answer}"
            );
        } else {
            assert!(answer.get("result").is_some(), "id {id}: {answer}");
            let sent: f64 = id.parse().expect("numeric id");
            assert_eq!(
                answer["id"].as_f64(),
                Some(sent),
                "id {id} echoed: {answer}"
            );
        }
    }
    assert_still_serving(&daemon);
}

#[test]
fn an_empty_batch_is_invalid_request() {
    let daemon = start_fault_daemon();
    let answer = post_json(&daemon, b"[]");
    assert!(answer.is_object(), "one error, not an array: {answer}");
    assert_eq!(error_code(&answer), i64::from(code::INVALID_REQUEST));
    assert_still_serving(&daemon);
}

fn batch_of(count: usize) -> Vec<u8> {
    let requests: Vec<Value> = (0..count)
        .map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "getBridgeInfo"}))
        .collect();
    serde_json::to_vec(&requests).expect("serialize batch")
}

#[test]
fn batches_over_100_are_refused_with_one_error() {
    let daemon = start_fault_daemon();
    for count in [10_000, 101] {
        let answer = post_json(&daemon, &batch_of(count));
        assert!(
            answer.is_object(),
            "a batch of {count} is refused with one error, not {} answers",
            answer.as_array().map_or(0, Vec::len)
        );
        assert!(answer.get("error").is_some(), "{answer}");
        assert_eq!(answer["id"], Value::Null, "{answer}");
    }
    let answer = post_json(&daemon, &batch_of(100));
    let answers = answer.as_array().expect("a batch of 100 is answered");
    assert_eq!(answers.len(), 100);
    let mut ids: Vec<u64> = answers
        .iter()
        .map(|a| a["id"].as_u64().expect("numeric id"))
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..100).collect::<Vec<u64>>());
    assert_still_serving(&daemon);
}

#[test]
fn notifications_get_no_response_body() {
    let daemon = start_fault_daemon();
    for body in [
        &br#"[{"jsonrpc":"2.0","method":"getBridgeInfo"},{"jsonrpc":"2.0","method":"health"}]"#[..],
        br#"{"jsonrpc":"2.0","method":"getBridgeInfo"}"#,
    ] {
        let (status, response) = daemon.post(body);
        assert!(
            status == 200 || status == 204,
            "status {status} for {}",
            String::from_utf8_lossy(body)
        );
        assert!(
            response.iter().all(u8::is_ascii_whitespace),
            "notifications get no answer: {}",
            String::from_utf8_lossy(&response)
        );
    }
    assert_still_serving(&daemon);
}

// ---------------------------------------------------------------------------------------------
// Scoped tokens.

fn two_server_daemon() -> Daemon {
    Daemon::start(json!({"mcpServers": {
        "alpha": fault_server(&[]),
        "beta": fault_server(&[]),
    }}))
}

fn now_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

#[test]
fn mint_token_returns_a_working_token() {
    let daemon = two_server_daemon();
    let before = now_seconds();
    let minted = mint(
        &daemon,
        json!({"servers": ["alpha"], "ttlSeconds": 3600, "label": "sub-agent"}),
    );
    assert_ne!(minted.token, daemon.token);
    assert!(minted.token.len() >= 32, "{}", minted.token);
    assert_eq!(minted.token_id, token_id(&minted.token));
    assert!(!minted.scope.is_empty());
    let expires = minted.expires_at.expect("expiresAt with a ttl");
    assert!(
        (before + 3600..=now_seconds() + 3600).contains(&expires),
        "expiresAt {expires}, minted at {before}"
    );
    // Without a ttl it lives as long as the daemon.
    let forever = mint(&daemon, json!({}));
    assert_eq!(forever.expires_at, None);
    assert_eq!(status_as(&daemon, &minted.token), 200);
    assert_eq!(status_as(&daemon, &forever.token), 200);
    // The owner token still works.
    assert_still_serving(&daemon);
}

#[test]
fn a_server_scoped_token_sees_and_calls_only_its_servers() {
    let daemon = two_server_daemon();
    let scoped = mint(&daemon, json!({"servers": ["alpha"]})).token;
    assert_eq!(server_names(&daemon, &scoped), ["alpha"]);
    assert_eq!(server_names(&daemon, &daemon.token), ["alpha", "beta"]);
    assert!(tool_names(&daemon, &scoped, "alpha").contains(&"echo".to_owned()));
    let result = daemon
        .rpc_as(
            &scoped,
            name::CALL_TOOL,
            Some(call_params("alpha", "echo", json!({"nonce": "n1"}))),
        )
        .expect("a call inside the scope");
    assert_eq!(result["content"][0]["text"], "n1");

    for (method, params, tool) in [
        (name::LIST_TOOLS, json!({"server": "beta"}), None),
        (
            name::DESCRIBE_TOOL,
            json!({"server": "beta", "tool": "echo"}),
            None,
        ),
        (
            name::CALL_TOOL,
            call_params("beta", "echo", json!({"nonce": "n2"})),
            None,
        ),
        (name::LIST_RESOURCES, json!({"server": "beta"}), None),
        (
            name::LIST_RESOURCE_TEMPLATES,
            json!({"server": "beta"}),
            None,
        ),
        (
            name::READ_RESOURCE,
            json!({"server": "beta", "uri": "fault://x"}),
            None,
        ),
    ] {
        // A refusal of the whole server may or may not name the tool (`tool?`).
        let error = daemon
            .rpc_as(&scoped, method, Some(params))
            .expect_err("outside the scope is refused");
        assert_not_permitted(&error, "beta", tool);
    }
    assert_eq!(status_as(&daemon, &scoped), 200);
}

#[test]
fn a_tool_scoped_token_sees_and_calls_only_matching_tools() {
    let daemon = two_server_daemon();
    let scoped = mint(&daemon, json!({"tools": ["alpha/ech?", "alpha/en*"]})).token;
    assert_eq!(server_names(&daemon, &scoped), ["alpha"]);
    let servers: ListServersResult = serde_json::from_value(
        daemon
            .rpc_as(&scoped, name::LIST_SERVERS, None)
            .expect("listServers"),
    )
    .expect("listServers result");
    assert_eq!(servers.servers[0].tool_count, 2, "{servers:?}");
    assert_eq!(tool_names(&daemon, &scoped, "alpha"), ["echo", "env"]);
    daemon
        .rpc_as(
            &scoped,
            name::DESCRIBE_TOOL,
            Some(json!({"server": "alpha", "tool": "echo"})),
        )
        .expect("describe a matching tool");
    let error = daemon
        .rpc_as(
            &scoped,
            name::DESCRIBE_TOOL,
            Some(json!({"server": "alpha", "tool": "crash"})),
        )
        .expect_err("describe a tool outside the globs");
    assert_not_permitted(&error, "alpha", Some("crash"));
    let error = daemon
        .rpc_as(
            &scoped,
            name::CALL_TOOL,
            Some(call_params("alpha", "crash", json!({}))),
        )
        .expect_err("call a tool outside the globs");
    assert_not_permitted(&error, "alpha", Some("crash"));
    let error = daemon
        .rpc_as(
            &scoped,
            name::CALL_TOOL,
            Some(call_params("beta", "echo", json!({"nonce": "x"}))),
        )
        .expect_err("the same tool on another server");
    assert_not_permitted(&error, "beta", Some("echo"));
    // The server is still alive: the refused crash never reached it.
    let result = daemon
        .rpc_as(
            &scoped,
            name::CALL_TOOL,
            Some(call_params("alpha", "echo", json!({"nonce": "still"}))),
        )
        .expect("echo");
    assert_eq!(result["content"][0]["text"], "still");
}

#[test]
fn a_read_only_token_sees_only_read_only_tools() {
    let daemon = two_server_daemon();
    let read_only = mint(&daemon, json!({"readOnly": true})).token;
    let all = tool_names(&daemon, &daemon.token, "alpha");
    let expected: Vec<String> = all
        .iter()
        .filter(|tool| {
            let described = daemon.call(
                name::DESCRIBE_TOOL,
                json!({"server": "alpha", "tool": tool}),
            );
            described["annotations"]["readOnlyHint"] == true
        })
        .cloned()
        .collect();
    assert!(expected.contains(&"echo".to_owned()), "{expected:?}");
    assert!(expected.len() < all.len(), "{expected:?} of {all:?}");
    assert_eq!(tool_names(&daemon, &read_only, "alpha"), expected);
    let result = daemon
        .rpc_as(
            &read_only,
            name::CALL_TOOL,
            Some(call_params("alpha", "echo", json!({"nonce": "ro"}))),
        )
        .expect("a read-only tool");
    assert_eq!(result["content"][0]["text"], "ro");
    for tool in ["destructive", "crash", "hang"] {
        let error = daemon
            .rpc_as(
                &read_only,
                name::CALL_TOOL,
                Some(call_params("alpha", tool, json!({}))),
            )
            .expect_err("a tool without readOnlyHint");
        assert_not_permitted(&error, "alpha", Some(tool));
    }
}

#[test]
fn an_expired_token_is_401() {
    let daemon = two_server_daemon();
    let minted = mint(&daemon, json!({"ttlSeconds": 1}));
    assert!(minted.expires_at.is_some());
    // It may already be past its second by the time it is used; it must be refused soon after.
    assert!(
        eventually(Duration::from_secs(10), || status_as(
            &daemon,
            &minted.token
        ) == 401),
        "a token minted with ttlSeconds 1 still works after 10 s"
    );
    assert_still_serving(&daemon);
}

#[test]
fn a_revoked_token_is_401() {
    let daemon = two_server_daemon();
    let minted = mint(&daemon, json!({"servers": ["alpha"], "label": "to revoke"}));
    let kept = mint(&daemon, json!({"label": "to keep"}));
    assert_eq!(status_as(&daemon, &minted.token), 200);

    let listed = daemon.call(name::LIST_TOKENS, Value::Null);
    let text = listed.to_string();
    assert!(
        !text.contains(&minted.token) && !text.contains(&kept.token),
        "listTokens shows no secret: {text}"
    );
    assert!(text.contains(&minted.token_id) && text.contains("to revoke"));

    let revoked = daemon.call(name::REVOKE_TOKEN, json!({"tokenId": minted.token_id}));
    assert_eq!(revoked, json!({"revoked": true}));
    assert_eq!(status_as(&daemon, &minted.token), 401);
    assert_eq!(status_as(&daemon, &kept.token), 200, "others stay valid");
    let again = daemon.call(name::REVOKE_TOKEN, json!({"tokenId": minted.token_id}));
    assert_eq!(again, json!({"revoked": false}));
    let listed = daemon.call(name::LIST_TOKENS, Value::Null).to_string();
    assert!(!listed.contains(&minted.token_id), "{listed}");
    assert!(listed.contains(&kept.token_id), "{listed}");
    assert_still_serving(&daemon);
}

#[test]
fn a_scoped_token_cannot_manage_tokens() {
    let daemon = two_server_daemon();
    // Even a minted token without restrictions is not the owner.
    let unrestricted = mint(&daemon, json!({}));
    let scoped = mint(&daemon, json!({"servers": ["alpha"]}));
    for token in [&unrestricted.token, &scoped.token] {
        for (method, params) in [
            (name::MINT_TOKEN, Some(json!({}))),
            (name::MINT_TOKEN, Some(json!({"servers": ["alpha"]}))),
            (
                name::REVOKE_TOKEN,
                Some(json!({"tokenId": unrestricted.token_id})),
            ),
            (name::LIST_TOKENS, None),
        ] {
            let error = daemon
                .rpc_as(token, method, params)
                .expect_err("token management by a child");
            assert_eq!(error.code, code::FORBIDDEN, "{method}: {error:?}");
        }
    }
    // Nothing was revoked along the way.
    assert_eq!(status_as(&daemon, &unrestricted.token), 200);
    assert_eq!(status_as(&daemon, &scoped.token), 200);
}

#[test]
fn tool_cli_works_with_owner_and_scoped_tokens() {
    let daemon = two_server_daemon();
    let output = daemon.run_client(&[], &[]);
    assert!(output.status.success(), "{output:?}");
    let listing = String::from_utf8_lossy(&output.stdout);
    assert!(
        listing.contains("alpha") && listing.contains("beta"),
        "{listing}"
    );
    let output = daemon.run_client(&["alpha", "echo", r#"{"nonce":"via-cli"}"#], &[]);
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("via-cli"));

    let scoped = mint(&daemon, json!({"servers": ["alpha"]})).token;
    let output = daemon.run_client(&[], &[(env::TOKEN, &scoped)]);
    assert!(output.status.success(), "{output:?}");
    let listing = String::from_utf8_lossy(&output.stdout);
    assert!(
        listing.contains("alpha") && !listing.contains("beta"),
        "{listing}"
    );
    let output = daemon.run_client(
        &["beta", "echo", r#"{"nonce":"x"}"#],
        &[(env::TOKEN, &scoped)],
    );
    assert!(!output.status.success(), "{output:?}");
}

// ---------------------------------------------------------------------------------------------
// Policy in the config.

#[test]
fn config_policy_hides_and_refuses_tools() {
    let daemon = Daemon::start(json!({"mcpServers": {
        "denied": {
            "command": tool_cli_tests::fault_server_bin(),
            "denyTools": ["crash", "h*"],
        },
        "allowed": {
            "command": tool_cli_tests::fault_server_bin(),
            "allowTools": ["echo", "env", "crash"],
            "denyTools": ["crash"],
        },
    }}));
    let denied = tool_names(&daemon, &daemon.token, "denied");
    assert!(denied.contains(&"echo".to_owned()), "{denied:?}");
    for hidden in ["crash", "hang", "huge"] {
        assert!(!denied.contains(&hidden.to_owned()), "{denied:?}");
    }
    // Deny wins over allow.
    assert_eq!(
        tool_names(&daemon, &daemon.token, "allowed"),
        ["echo", "env"]
    );
    for (server, tool) in [
        ("denied", "crash"),
        ("denied", "hang"),
        ("allowed", "crash"),
        ("allowed", "sleep"),
    ] {
        let error = daemon.call_err(name::DESCRIBE_TOOL, json!({"server": server, "tool": tool}));
        assert_not_permitted(&error, server, Some(tool));
        let error = daemon.call_err(name::CALL_TOOL, call_params(server, tool, json!({})));
        assert_not_permitted(&error, server, Some(tool));
    }
    // The refused crash never reached the server.
    let result = daemon.call_tool("denied", "echo", json!({"nonce": "alive"}));
    assert_eq!(result["content"][0]["text"], "alive");
}

#[test]
fn a_destructive_tool_needs_confirmation() {
    let dir = scratch();
    let record = dir.path().join("record.jsonl");
    let daemon = Daemon::start(json!({"mcpServers": {
        "alpha": fault_server_recording(&record, &[]),
    }}));
    for confirm in [None, Some(false)] {
        let mut params = call_params("alpha", "destructive", json!({}));
        if let Some(confirm) = confirm {
            params["confirm"] = json!(confirm);
        }
        let error = daemon.call_err(name::CALL_TOOL, params);
        assert_confirmation_required(&error, "alpha", "destructive");
    }
    assert_eq!(
        count_recorded(&record, "tools/call", Some("destructive")),
        0,
        "an unconfirmed destructive call never reaches the server"
    );
    let mut params = call_params("alpha", "destructive", json!({}));
    params["confirm"] = json!(true);
    let result = daemon.call(name::CALL_TOOL, params);
    assert_ne!(result["isError"], true, "{result:#}");
    assert_eq!(
        count_recorded(&record, "tools/call", Some("destructive")),
        1
    );
    // A tool that is not destructive needs no confirmation.
    let result = daemon.call_tool("alpha", "echo", json!({"nonce": "plain"}));
    assert_eq!(result["content"][0]["text"], "plain");
}

#[test]
fn destructive_tools_globs_and_confirm_destructive_false() {
    let daemon = Daemon::start(json!({"mcpServers": {
        "marked": {
            "command": tool_cli_tests::fault_server_bin(),
            "destructiveTools": ["ec*"],
        },
        "waived": {
            "command": tool_cli_tests::fault_server_bin(),
            "destructiveTools": ["echo"],
            "confirmDestructive": false,
        },
    }}));
    let error = daemon.call_err(
        name::CALL_TOOL,
        call_params("marked", "echo", json!({"nonce": "m"})),
    );
    assert_confirmation_required(&error, "marked", "echo");
    let mut params = call_params("marked", "echo", json!({"nonce": "m"}));
    params["confirm"] = json!(true);
    assert_eq!(
        daemon.call(name::CALL_TOOL, params)["content"][0]["text"],
        "m"
    );
    // The server's own destructiveHint still counts where the glob does not match.
    let error = daemon.call_err(
        name::CALL_TOOL,
        call_params("marked", "destructive", json!({})),
    );
    assert_confirmation_required(&error, "marked", "destructive");

    let result = daemon.call_tool("waived", "echo", json!({"nonce": "w"}));
    assert_eq!(result["content"][0]["text"], "w");
    let result = daemon.call_tool("waived", "destructive", json!({}));
    assert_ne!(result["isError"], true, "{result:#}");
}

// ---------------------------------------------------------------------------------------------
// Secrets.

#[test]
fn tokens_never_reach_the_log_even_at_trace() {
    let daemon = Daemon::start_with(
        json!({"mcpServers": {"alpha": fault_server(&[])}}),
        DaemonOptions {
            env: vec![("RUST_LOG".into(), "trace".into())],
            ..DaemonOptions::default()
        },
    );
    let minted = mint(&daemon, json!({"servers": ["alpha"], "label": "logged?"}));
    daemon
        .rpc_as(
            &minted.token,
            name::CALL_TOOL,
            Some(call_params("alpha", "echo", json!({"nonce": "t"}))),
        )
        .expect("call with the minted token");
    daemon.call_tool("alpha", "echo", json!({"nonce": "owner"}));
    // Near misses are logged as refusals, never with the presented or the expected token.
    let mut near = daemon.token.clone();
    near.replace_range(..1, if near.starts_with('a') { "b" } else { "a" });
    assert_eq!(status_as(&daemon, &near), 401);
    let _ = identity_request(
        &daemon,
        &our_host(&daemon),
        &random_hex(32),
        &token_id(&daemon.token),
    );
    let revoked = daemon.call(name::REVOKE_TOKEN, json!({"tokenId": minted.token_id}));
    assert_eq!(revoked["revoked"], true);
    assert_eq!(status_as(&daemon, &minted.token), 401);
    // A last call whose own log line marks the end: everything before it is in the log once the
    // marker is, so the absence checked below is checked on the whole log, not on a part of it.
    let marker = format!("end-of-test-{}", random_hex(8));
    daemon.call(
        name::CALL_TOOL,
        json!({"server": "alpha", "tool": "echo", "arguments": {"nonce": "last"},
               "sessionId": marker}),
    );
    assert!(
        eventually(STARTUP_TIMEOUT, || daemon.stderr().contains(&marker)),
        "the marker call was never logged; log:\n{}",
        daemon.stderr()
    );
    let log = daemon.stderr();
    assert!(
        log.contains("TRACE") || log.contains("trace"),
        "RUST_LOG=trace took effect; log:\n{log}"
    );
    for (what, secret) in [
        ("owner token", daemon.token.as_str()),
        ("minted token", minted.token.as_str()),
        ("near-miss token", near.as_str()),
    ] {
        // Even half of a token is too much.
        let half = &secret[..secret.len() / 2];
        let line = log.lines().find(|line| line.contains(half));
        assert!(line.is_none(), "the {what} is in the trace log: {line:?}");
    }
}

fn descendants(pid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    // Bounded: a daemon, its reaper, its servers and their children are a few levels deep.
    for _ in 0..4 {
        let next: Vec<i32> = frontier
            .iter()
            .flat_map(|&parent| children_of(parent).into_iter().map(|(child, _)| child))
            .collect();
        found.extend(&next);
        frontier = next;
    }
    found
}

#[test]
fn the_token_is_not_in_any_command_line_or_child_environment() {
    let daemon = Daemon::start(json!({"mcpServers": {
        "alpha": fault_server(&[]),
        "beta": fault_server(&[]),
    }}));
    daemon.call_tool("alpha", "echo", json!({"nonce": "up"}));
    let minted = mint(&daemon, json!({}));
    let children = descendants(daemon.pid() as i32);
    assert!(
        children.len() >= 2,
        "the servers are children: {children:?}"
    );
    for pid in std::iter::once(daemon.pid() as i32).chain(children.iter().copied()) {
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        for secret in [&daemon.token, &minted.token] {
            assert!(
                !cmdline.contains(secret.as_str()),
                "a token in /proc/{pid}/cmdline: {cmdline}"
            );
        }
    }
    for pid in children {
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        let environ = String::from_utf8_lossy(&environ);
        assert!(
            !environ.contains(&daemon.token) && !environ.contains(&minted.token),
            "a token in the environment of child {pid}"
        );
    }
}

/// Runs the daemon on `config` with `args` and expects it to refuse to start with exit 2.
fn expect_refusal(config: &Path, args: &[&str]) -> String {
    let runtime = scratch();
    let mut command = daemon_command(runtime.path());
    command
        .arg("--config")
        .arg(config)
        .args(args)
        .stdin(Stdio::null());
    let output = run_with_timeout(command, STARTUP_TIMEOUT);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    stderr
}

fn write_config(dir: &Path, mode: u32) -> PathBuf {
    let path = dir.join("servers.json");
    let config = json!({"mcpServers": {"alpha": fault_server(&[])}});
    std::fs::write(&path, config.to_string()).expect("write config");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    path
}

fn names_the_mode(message: &str, mode: u32) -> bool {
    let octal = format!("{mode:o}");
    let symbolic: String = (0..9)
        .map(|bit| {
            let set = mode & (0o400 >> bit) != 0;
            match (set, bit % 3) {
                (false, _) => '-',
                (true, 0) => 'r',
                (true, 1) => 'w',
                (true, _) => 'x',
            }
        })
        .collect();
    message.contains(&octal) || message.contains(&symbolic)
}

#[test]
fn a_config_writable_by_others_is_refused() {
    for mode in [0o664, 0o646, 0o666, 0o620] {
        let dir = scratch();
        let config = write_config(dir.path(), mode);
        let stderr = expect_refusal(&config, &[]);
        assert!(
            stderr.contains(&config.to_string_lossy().into_owned()),
            "the message names the file: {stderr}"
        );
        assert!(
            names_the_mode(&stderr, mode),
            "the message names the mode {mode:o}: {stderr}"
        );
    }
}

#[test]
fn a_token_file_writable_by_others_is_refused() {
    let dir = scratch();
    let config = write_config(dir.path(), 0o600);
    let token_file = dir.path().join("token");
    let token = random_hex(32);
    std::fs::write(&token_file, format!("{token}\n")).expect("write token file");
    for mode in [0o660, 0o602] {
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(mode))
            .expect("chmod");
        let token_arg = token_file.to_string_lossy().into_owned();
        let stderr = expect_refusal(&config, &["--token-file", &token_arg]);
        assert!(stderr.contains(&token_arg), "names the file: {stderr}");
        assert!(names_the_mode(&stderr, mode), "names {mode:o}: {stderr}");
        assert!(!stderr.contains(&token), "never prints the token: {stderr}");
    }
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let daemon = Daemon::start_with(
        json!({"mcpServers": {"alpha": fault_server(&[])}}),
        DaemonOptions {
            args: vec!["--token-file".into(), token_file.to_string_lossy().into()],
            ..DaemonOptions::default()
        },
    );
    assert_eq!(daemon.token, token);
    assert_still_serving(&daemon);
}

// ---------------------------------------------------------------------------------------------
// The Unix socket.

/// A daemon on a Unix socket, started without `--print-env` and found by its runtime file;
/// SIGTERM then SIGKILL on drop.
struct SocketDaemon {
    child: Child,
    runtime: RuntimeFile,
}

impl SocketDaemon {
    fn start(dir: &Path, socket: &Path) -> SocketDaemon {
        let config = write_config(dir, 0o600);
        let runtime_dir = dir.join("runtime");
        let mut command = daemon_command(&runtime_dir);
        command
            .arg("--config")
            .arg(&config)
            .arg("--socket")
            .arg(socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = command.spawn().expect("spawn tool-cli-daemon --socket");
        let runtime_file = runtime_dir.join(RUNTIME_FILE_NAME);
        let mut runtime = None;
        let found = eventually(STARTUP_TIMEOUT, || {
            if child.try_wait().ok().flatten().is_some() {
                return true;
            }
            runtime = std::fs::read_to_string(&runtime_file)
                .ok()
                .and_then(|text| serde_json::from_str::<RuntimeFile>(&text).ok());
            runtime.is_some()
        });
        let exited = child.try_wait().ok().flatten();
        assert!(
            found && exited.is_none(),
            "the daemon on {} wrote no runtime file (exit: {exited:?})",
            socket.display()
        );
        SocketDaemon {
            child,
            runtime: runtime.expect("runtime file"),
        }
    }
}

impl Drop for SocketDaemon {
    fn drop(&mut self) {
        // SAFETY: kill(2) has no memory-safety preconditions; the pid is our unreaped child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let exited = eventually(Duration::from_secs(15), || {
            self.child.try_wait().ok().flatten().is_some()
        });
        if !exited {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn the_unix_socket_serves_tool_cli() {
    let dir = scratch();
    let socket_dir = dir.path().join("sock");
    std::fs::create_dir(&socket_dir).expect("mkdir");
    std::fs::set_permissions(&socket_dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let socket = socket_dir.join("daemon.sock");
    let daemon = SocketDaemon::start(dir.path(), &socket);

    assert_eq!(
        daemon.runtime.socket.as_deref(),
        Some(socket.to_string_lossy().as_ref())
    );
    assert_eq!(daemon.runtime.port, 0, "no TCP port in socket mode");
    let metadata = std::fs::metadata(&socket).expect("the socket exists");
    assert!(metadata.file_type().is_socket());
    assert_eq!(mode_of(&socket), 0o600, "socket mode");
    assert_eq!(mode_of(&socket_dir), 0o700, "socket directory mode");

    // The client finds it by TOOL_CLI_SOCKET alone (an empty runtime dir hides the file).
    let elsewhere = scratch();
    let mut command = client_command();
    command
        .env(env::SOCKET, &socket)
        .env(env::TOKEN, &daemon.runtime.token)
        .env(env::RUNTIME_DIR, elsewhere.path())
        .args(["alpha", "echo", r#"{"nonce":"over-the-socket"}"#]);
    let output = run_with_timeout(command, CLIENT_TIMEOUT);
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("over-the-socket"));

    // A wrong token is refused over the socket too.
    let mut command = client_command();
    command
        .env(env::SOCKET, &socket)
        .env(env::TOKEN, random_hex(32))
        .env(env::RUNTIME_DIR, elsewhere.path());
    let output = run_with_timeout(command, CLIENT_TIMEOUT);
    assert!(!output.status.success(), "{output:?}");
}

fn expect_socket_refusal(dir: &Path, socket: &Path) -> String {
    let config = write_config(dir, 0o600);
    let runtime = dir.join("runtime");
    let mut command = daemon_command(&runtime);
    command
        .arg("--config")
        .arg(&config)
        .arg("--socket")
        .arg(socket)
        .stdin(Stdio::null());
    let output = run_with_timeout(command, STARTUP_TIMEOUT);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        !output.status.success(),
        "--socket {} was accepted: {stderr}",
        socket.display()
    );
    assert!(
        stderr.contains(&socket.to_string_lossy().into_owned())
            || stderr.contains(
                &socket
                    .parent()
                    .expect("parent")
                    .to_string_lossy()
                    .into_owned()
            ),
        "the message names the path: {stderr}"
    );
    stderr
}

#[test]
fn the_socket_refuses_an_existing_path() {
    let dir = scratch();
    let socket = dir.path().join("taken");
    std::fs::write(&socket, "not a socket").expect("write");
    expect_socket_refusal(dir.path(), &socket);
    assert_eq!(
        std::fs::read_to_string(&socket).expect("still there"),
        "not a socket",
        "the existing file is left alone"
    );
}

#[test]
fn the_socket_refuses_a_symlinked_directory() {
    let dir = scratch();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).expect("mkdir");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    expect_socket_refusal(dir.path(), &link.join("daemon.sock"));
    assert!(
        std::fs::read_dir(&real).expect("read dir").next().is_none(),
        "nothing was created through the symlink"
    );
}
