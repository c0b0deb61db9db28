//! The commands end to end against scripted daemons on loopback: the requests each one sends,
//! what it prints, and its exit code.

use serde_json::json;

use super::*;
use crate::args::{ArgsEnv, parse};
use crate::error::exit;
use crate::test_support::{
    IdentityScript, TOKEN, bridge_info, endpoint, fake_daemon, fake_listener,
    reference_bridge_info, result, rpc_error,
};

/// The client `tool-cli` makes for this invocation, for a daemon on `port`.
fn client_for(port: u16, invocation: &Invocation) -> Client {
    let client =
        Client::from_endpoint(endpoint(port)).with_identity_required(invocation.require_identity);
    match invocation.timeout_ms {
        Some(timeout_ms) => client.with_timeout(std::time::Duration::from_millis(timeout_ms)),
        None => client,
    }
}

/// Runs a command line against a scripted daemon; returns the outcome, stdout, and the
/// requests the daemon saw.
async fn run_against(
    args: &[&str],
    answers: Vec<(u16, String)>,
) -> (Result<(), Error>, String, Vec<String>) {
    let (port, daemon) = fake_daemon(answers).await;
    let argv = std::iter::once("tool-cli").chain(args.iter().copied());
    let invocation = parse(argv, &ArgsEnv::default(), || Ok(String::new())).unwrap();
    let mut stdout = Vec::new();
    let client = client_for(port, &invocation);
    let outcome = run(invocation, client, &mut stdout, false).await;
    let seen = daemon.await.unwrap();
    (outcome, String::from_utf8(stdout).unwrap(), seen)
}

fn servers(states: &[(&str, &str)]) -> (u16, String) {
    let servers: Vec<Value> = states
        .iter()
        .map(|(name, state)| {
            json!({"name": name, "toolCount": 1, "examples": ["t"], "state": state,
                   "transport": "stdio"})
        })
        .collect();
    result(json!({ "servers": servers }))
}

#[tokio::test]
async fn incompatible_bridge_is_refused_before_the_command() {
    let answers = vec![result(json!({
        "bridgeProtocol": {"name": "tool-cli-bridge", "major": 2, "version": "2.0"}
    }))];
    let (outcome, stdout, seen) = run_against(&["demo"], answers).await;
    let error = outcome.unwrap_err();
    assert!(
        matches!(error, Error::IncompatibleBridge { major: 2, .. }),
        "{error:?}"
    );
    assert_eq!(error.exit_code(), exit::OTHER);
    assert_eq!(stdout, "");
    assert_eq!(seen.len(), 1, "nothing is sent after a refused handshake");
}

#[tokio::test]
async fn call_passes_timeout_and_prints_structured_content() {
    let answers = vec![
        bridge_info(),
        result(json!({"content": [{"type": "text", "text": "{}"}],
                      "structuredContent": {"n": 1}})),
    ];
    let (outcome, stdout, seen) =
        run_against(&["demo", "t", r#"{"a": 1}"#, "--timeout", "1234"], answers).await;
    outcome.unwrap();
    assert_eq!(stdout, "{\n  \"n\": 1\n}\n");
    assert!(
        seen[0].contains(r#""method":"getBridgeInfo""#),
        "{}",
        seen[0]
    );
    assert!(
        seen[1].contains(
            r#""params":{"server":"demo","tool":"t","arguments":{"a":1},"timeoutMs":1234}"#
        ),
        "{}",
        seen[1]
    );
}

#[tokio::test]
async fn tool_error_goes_to_stderr_with_its_exit_code_and_json_still_prints() {
    let error_result = json!({"content": [{"type": "text", "text": "boom"}], "isError": true});
    let (outcome, stdout, _) = run_against(
        &["demo", "t", "{}"],
        vec![bridge_info(), result(error_result.clone())],
    )
    .await;
    let error = outcome.unwrap_err();
    assert_eq!(error.exit_code(), exit::TOOL_ERROR);
    assert_eq!(error.to_string(), "demo/t reported an error:\nboom");
    assert_eq!(stdout, "");
    let (outcome, stdout, _) = run_against(
        &["demo", "t", "{}", "--json"],
        vec![bridge_info(), result(error_result.clone())],
    )
    .await;
    assert_eq!(outcome.unwrap_err().exit_code(), exit::TOOL_ERROR);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap(),
        error_result
    );
}

#[tokio::test]
async fn invalid_arguments_exit_with_invalid_params() {
    let data = json!({"kind": "invalidArguments", "server": "demo", "tool": "t",
        "errors": [{"path": "/a", "schemaPath": "/properties/a/type", "message": "bad"}]});
    let answers = vec![bridge_info(), rpc_error(-32602, "invalid arguments", data)];
    let (outcome, _, _) = run_against(&["demo", "t", r#"{"a": 1}"#], answers).await;
    let error = outcome.unwrap_err();
    assert_eq!(error.exit_code(), exit::INVALID_PARAMS);
    assert!(error.to_string().contains("/a: bad"), "{error}");
}

fn health_entry(name: &str, state: &str) -> Value {
    json!({"name": name, "state": state, "transport": "stdio", "restarts": 0,
           "calls": 0, "errors": 0, "inFlight": 0, "queued": 0,
           "breaker": {"state": "closed"}})
}

#[tokio::test]
async fn health_exits_zero_when_every_enabled_server_is_ready() {
    let answers = vec![
        bridge_info(),
        result(json!({"servers": [
            health_entry("demo", "ready"),
            health_entry("off", "disabled"),
        ]})),
    ];
    let (outcome, stdout, seen) = run_against(&["health"], answers).await;
    outcome.unwrap();
    assert!(seen[1].contains(r#""method":"health""#), "{}", seen[1]);
    assert!(stdout.starts_with("  SERVER  STATE"), "{stdout}");
    assert!(stdout.contains("\n  demo    ready"), "{stdout}");
    assert!(!stdout.contains('!'), "{stdout}");
}

#[tokio::test]
async fn health_prints_the_table_then_exits_one_for_unhealthy_servers() {
    let mut down = health_entry("gh", "down");
    down["lastError"] = json!("spawn npx: not found");
    let health = json!({"servers": [
        health_entry("demo", "ready"),
        down,
        health_entry("off", "disabled"),
    ]});
    let (outcome, stdout, _) =
        run_against(&["health"], vec![bridge_info(), result(health.clone())]).await;
    let error = outcome.unwrap_err();
    assert_eq!(error.exit_code(), exit::OTHER);
    assert_eq!(
        error.to_string(),
        "1 of 2 enabled servers is not ready: gh (down)"
    );
    assert!(stdout.contains("\n! gh      down"), "{stdout}");
    assert!(
        stdout.contains("\n    last error: spawn npx: not found\n"),
        "{stdout}"
    );

    // --json prints the raw result, and the exit code is the same.
    let (outcome, stdout, _) = run_against(
        &["health", "--json"],
        vec![bridge_info(), result(health.clone())],
    )
    .await;
    assert_eq!(outcome.unwrap_err().exit_code(), exit::OTHER);
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap(), health);
}

#[tokio::test]
async fn health_on_an_older_daemon_says_so() {
    let answers = vec![
        bridge_info(),
        rpc_error(-32601, "Method not found", json!(null)),
    ];
    let (outcome, stdout, _) = run_against(&["health"], answers).await;
    let error = outcome.unwrap_err();
    assert_eq!(error.exit_code(), exit::OTHER);
    assert!(
        error.to_string().contains("does not serve `health`"),
        "{error}"
    );
    assert_eq!(stdout, "");
}

/// The issue: `health` against the reference bridge said "this daemon is older"; it is a 1.x
/// bridge, which has no such method at any version.
#[tokio::test]
async fn health_on_a_reference_bridge_says_it_is_one() {
    let answers = vec![
        reference_bridge_info(),
        rpc_error(-32601, "Method not found: health", json!(null)),
    ];
    let (outcome, stdout, _) = run_against(&["health"], answers).await;
    let error = outcome.unwrap_err();
    assert_eq!(error.exit_code(), exit::OTHER);
    let message = error.to_string();
    assert!(!message.contains("older"), "{message}");
    assert!(
        message.contains("@sammorrowdrums/tool-cli 0.6.0")
            && message.contains("tool-cli 1.x bridge")
            && message.contains("`health`"),
        "{message}"
    );
    assert_eq!(stdout, "");
}

#[tokio::test]
async fn degraded_result_still_prints_on_stdout() {
    let cached = json!({
        "content": [{"type": "text", "text": "cached rows"}],
        "_meta": {"tool-cli/degraded": {"reason": "server down", "ageMs": 5000}}
    });
    let (outcome, stdout, _) = run_against(
        &["demo", "t", "{}"],
        vec![bridge_info(), result(cached.clone())],
    )
    .await;
    outcome.unwrap();
    assert_eq!(stdout, "cached rows\n");
    let (outcome, stdout, _) = run_against(
        &["demo", "t", "{}", "--json"],
        vec![bridge_info(), result(cached.clone())],
    )
    .await;
    outcome.unwrap();
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap(), cached);
}

#[tokio::test]
async fn busy_and_circuit_open_exit_one_with_a_retry_hint() {
    for (code, data) in [
        (
            -32004,
            json!({"kind": "busy", "server": "demo", "inFlight": 1, "queued": 0,
                   "retryAfterMs": 100}),
        ),
        (
            -32005,
            json!({"kind": "circuitOpen", "server": "demo", "retryAfterMs": 100}),
        ),
    ] {
        let answers = vec![bridge_info(), rpc_error(code, "refused", data)];
        let (outcome, stdout, _) = run_against(&["demo", "t", "{}"], answers).await;
        let error = outcome.unwrap_err();
        assert_eq!(error.exit_code(), exit::OTHER);
        let message = error.to_string();
        assert!(
            message.contains("retry in") && message.contains("100 ms"),
            "{message}"
        );
        assert_eq!(stdout, "");
    }
}

#[tokio::test]
async fn resource_list_across_servers_reports_partial_failure() {
    let unavailable = json!({"kind": "serverUnavailable", "server": "b", "state": "exited"});
    let answers = vec![
        bridge_info(),
        servers(&[("a", "ready"), ("b", "ready"), ("c", "failed")]),
        result(json!({"server": "a", "resources": [
            {"uri": "a://one", "name": "one"},
            {"uri": "skill://hidden/SKILL.md", "name": "skill"},
        ]})),
        rpc_error(-32001, "server unavailable", unavailable),
    ];
    let (outcome, stdout, seen) = run_against(&["resource", "list", "--json"], answers).await;
    outcome.unwrap();
    assert_eq!(seen.len(), 4, "the failed server c is not asked");
    let printed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(printed["status"], "partial");
    assert_eq!(
        printed["results"][0],
        json!({"server": "a", "resources": [{"uri": "a://one", "name": "one"}]})
    );
    assert_eq!(printed["results"][1]["server"], "b");
    assert!(
        printed["results"][1]["error"]
            .as_str()
            .unwrap()
            .contains("exited")
    );
}

#[tokio::test]
async fn resource_list_fails_when_every_server_fails() {
    let upstream = |server: &str| {
        rpc_error(
            -32003,
            "upstream",
            json!({"kind": "upstream", "server": server, "code": -32603, "message": "x"}),
        )
    };
    let answers = vec![
        bridge_info(),
        servers(&[("a", "ready"), ("b", "ready")]),
        upstream("a"),
        upstream("b"),
    ];
    let (outcome, stdout, _) = run_against(&["resource", "templates"], answers).await;
    let error = outcome.unwrap_err();
    assert_ne!(error.exit_code(), exit::OK);
    assert!(
        error.to_string().contains("failed on every server"),
        "{error}"
    );
    assert_eq!(stdout, "");
}

#[tokio::test]
async fn server_without_resources_is_an_empty_group_not_a_failure() {
    let not_found = json!({"kind": "upstream", "server": "b", "code": -32601,
                           "message": "Method not found"});
    let answers = vec![
        bridge_info(),
        servers(&[("a", "ready"), ("b", "ready")]),
        result(json!({"server": "a", "resources": []})),
        rpc_error(-32003, "upstream", not_found),
    ];
    let (outcome, stdout, _) = run_against(&["--json", "resource", "list"], answers).await;
    outcome.unwrap();
    let printed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(printed["status"], "ok");
    assert_eq!(
        printed["results"][1],
        json!({"server": "b", "resources": []})
    );
}

#[tokio::test]
async fn read_picks_the_only_ready_server_and_refuses_binary_without_out() {
    let blob = json!({"contents": [{"uri": "a://logo", "mimeType": "image/png",
                                    "blob": "iVBORw0KGgo="}]});
    let answers = vec![
        bridge_info(),
        servers(&[("a", "ready"), ("b", "failed")]),
        result(blob.clone()),
    ];
    let (outcome, stdout, seen) = run_against(&["resource", "read", "a://logo"], answers).await;
    let error = outcome.unwrap_err();
    assert_eq!(error.exit_code(), exit::USAGE);
    assert!(error.to_string().contains("--out FILE"), "{error}");
    assert_eq!(stdout, "");
    assert!(
        seen[2].contains(r#""params":{"server":"a","uri":"a://logo"}"#),
        "{}",
        seen[2]
    );

    let directory = std::env::temp_dir().join(format!("tool-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let path = directory.join("logo.png");
    let path_text = path.to_str().unwrap();
    let answers = vec![bridge_info(), result(blob)];
    let (outcome, stdout, _) = run_against(
        &[
            "resource", "read", "--server", "a", "a://logo", "--out", path_text,
        ],
        answers,
    )
    .await;
    outcome.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"\x89PNG\r\n\x1a\n");
    assert_eq!(stdout, format!("wrote 8 bytes to {path_text}\n"));
    std::fs::remove_dir_all(&directory).unwrap();
}

#[tokio::test]
async fn read_without_server_needs_exactly_one_ready() {
    let answers = vec![bridge_info(), servers(&[("a", "ready"), ("b", "ready")])];
    let (outcome, _, _) = run_against(&["resource", "read", "x://y"], answers).await;
    let error = outcome.unwrap_err();
    assert_eq!(error.exit_code(), exit::USAGE);
    assert!(
        error
            .to_string()
            .contains("several servers are ready (a, b)"),
        "{error}"
    );
}

#[tokio::test]
async fn yes_sends_confirm_and_its_absence_sends_nothing() {
    let done = || result(json!({"content": [{"type": "text", "text": "dropped"}]}));
    let (outcome, stdout, seen) =
        run_against(&["db", "drop", "{}", "--yes"], vec![bridge_info(), done()]).await;
    outcome.unwrap();
    assert_eq!(stdout, "dropped\n");
    assert!(seen[1].contains(r#""confirm":true"#), "{}", seen[1]);
    let (_, _, seen) = run_against(&["db", "drop", "{}"], vec![bridge_info(), done()]).await;
    assert!(!seen[1].contains("confirm"), "{}", seen[1]);
}

#[tokio::test]
async fn destructive_tool_without_yes_exits_nine() {
    let data = json!({"kind": "confirmationRequired", "server": "db", "tool": "drop"});
    let answers = vec![
        bridge_info(),
        rpc_error(-32006, "confirmation required", data),
    ];
    let (outcome, stdout, _) = run_against(&["db", "drop", "{}"], answers).await;
    let error = outcome.unwrap_err();
    assert_eq!(error.exit_code(), exit::FORBIDDEN);
    assert_eq!(
        error.to_string(),
        "tool \"drop\" of server \"db\" is destructive; to run it, pass \"confirm\": true in \
         callTool (tool-cli: --yes)"
    );
    assert_eq!(stdout, "");
}

fn minted() -> Value {
    json!({"token": "f".repeat(64), "tokenId": "0011223344556677",
           "scope": "servers demo; read-only tools", "expiresAt": 4_102_444_800_u64})
}

#[tokio::test]
async fn mint_prints_only_the_token_on_stdout() {
    let (outcome, stdout, seen) = run_against(
        &[
            "token",
            "mint",
            "--server",
            "demo",
            "--read-only",
            "--ttl",
            "60",
        ],
        vec![bridge_info(), result(minted())],
    )
    .await;
    outcome.unwrap();
    assert_eq!(stdout, format!("{}\n", "f".repeat(64)));
    assert!(
        seen[1].contains(
            r#""method":"mintToken","params":{"servers":["demo"],"readOnly":true,"ttlSeconds":60}"#
        ),
        "{}",
        seen[1]
    );
    // --json: the whole result.
    let (outcome, stdout, _) = run_against(
        &["token", "mint", "--json"],
        vec![bridge_info(), result(minted())],
    )
    .await;
    outcome.unwrap();
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap(), minted());
}

#[tokio::test]
async fn mint_with_a_minted_token_is_not_permitted() {
    let data = json!({"kind": "notPermitted", "server": "",
                      "reason": "only the owner token may mint tokens"});
    let answers = vec![bridge_info(), rpc_error(-32006, "not permitted", data)];
    let (outcome, stdout, _) = run_against(&["token", "mint"], answers).await;
    let error = outcome.unwrap_err();
    assert_eq!(error.exit_code(), exit::FORBIDDEN);
    assert!(
        error.to_string().contains("only the owner token may mint"),
        "{error}"
    );
    assert_eq!(stdout, "");
}

#[tokio::test]
async fn revoke_says_revoked_or_exits_one_when_unknown() {
    let (outcome, stdout, seen) = run_against(
        &["token", "revoke", "0011223344556677"],
        vec![bridge_info(), result(json!({"revoked": true}))],
    )
    .await;
    outcome.unwrap();
    assert_eq!(stdout, "revoked 0011223344556677\n");
    assert!(
        seen[1].contains(r#""params":{"tokenId":"0011223344556677"}"#),
        "{}",
        seen[1]
    );
    let (outcome, stdout, _) = run_against(
        &["token", "revoke", "0011223344556677"],
        vec![bridge_info(), result(json!({"revoked": false}))],
    )
    .await;
    let error = outcome.unwrap_err();
    assert_eq!(error.exit_code(), exit::OTHER);
    assert!(
        error
            .to_string()
            .starts_with("no live token has id 0011223344556677"),
        "{error}"
    );
    assert_eq!(stdout, "");
}

#[tokio::test]
async fn token_list_prints_a_table() {
    let listed = json!({"tokens": [{"tokenId": "0011223344556677", "scope": "every server",
                                    "label": "ci"}]});
    let (outcome, stdout, seen) =
        run_against(&["token", "list"], vec![bridge_info(), result(listed)]).await;
    outcome.unwrap();
    assert!(seen[1].contains(r#""method":"listTokens""#), "{}", seen[1]);
    assert_eq!(
        stdout,
        "ID                LABEL  EXPIRES  SCOPE\n0011223344556677  ci     never    every server\n"
    );
}

#[tokio::test]
async fn token_commands_on_an_older_daemon_say_so() {
    let answers = vec![
        bridge_info(),
        rpc_error(-32601, "Method not found", json!(null)),
    ];
    let (outcome, _, _) = run_against(&["token", "list"], answers).await;
    let error = outcome.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("does not serve `tool-cli token list`"),
        "{error}"
    );
}

#[tokio::test]
async fn a_listener_that_cannot_prove_its_identity_never_gets_the_token() {
    let wrong = json!({"proof": "ab".repeat(32)}).to_string();
    let (port, listener) =
        fake_listener(IdentityScript::Answer(200, wrong), vec![bridge_info()]).await;
    let invocation = parse(
        ["tool-cli", "demo", "t", "{}", "--yes"],
        &ArgsEnv::default(),
        || Ok(String::new()),
    )
    .unwrap();
    let mut stdout = Vec::new();
    let client = client_for(port, &invocation);
    let error = run(invocation, client, &mut stdout, false)
        .await
        .unwrap_err();
    assert_eq!(error.exit_code(), exit::IDENTITY);
    assert!(
        error.to_string().starts_with(&format!(
            "the listener at 127.0.0.1:{port} did not prove it holds the token, so the \
             token was not sent"
        )),
        "{error}"
    );
    assert_eq!(stdout, b"");
    let seen = listener.await.unwrap();
    assert_eq!(seen.len(), 1, "only the identity check was sent: {seen:?}");
    assert!(seen[0].starts_with("POST /identity "), "{}", seen[0]);
    assert!(!seen[0].contains(TOKEN), "{}", seen[0]);
}

#[tokio::test]
async fn a_call_without_a_timeout_leaves_the_servers_own() {
    let answers = vec![
        bridge_info(),
        result(json!({"content": [{"type": "text", "text": "ok"}]})),
    ];
    let (outcome, stdout, seen) = run_against(&["demo", "t", "{}"], answers).await;
    outcome.unwrap();
    assert_eq!(stdout, "ok\n");
    assert!(
        seen[1].contains(r#""params":{"server":"demo","tool":"t","arguments":{}}"#),
        "no timeoutMs: {}",
        seen[1]
    );
}

#[tokio::test]
async fn a_long_call_without_a_timeout_is_not_cut_short() {
    use tokio::io::AsyncWriteExt as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let slow_daemon = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        // The handshake at once; the call's request is read, then answered 40 s later: longer
        // than the 30 s default request timeout, as a server configured with a long timeoutMs
        // may take.
        crate::test_support::serve(&mut socket, IdentityScript::Honest, vec![bridge_info()]).await;
        tokio::time::sleep(std::time::Duration::from_secs(40)).await;
        let body = json!({"jsonrpc": "2.0", "id": 2,
                          "result": {"content": [{"type": "text", "text": "done"}]}})
        .to_string();
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(response.as_bytes()).await.unwrap();
        socket
    });
    let invocation = parse(
        ["tool-cli", "demo", "slow", "{}"],
        &ArgsEnv::default(),
        || Ok(String::new()),
    )
    .unwrap();
    let client = client_for(port, &invocation);
    // Real sockets for the connection; the paused clock lets 40 s pass without waiting.
    let mut stdout = Vec::new();
    {
        let call = run(invocation, client, &mut stdout, false);
        tokio::pin!(call);
        tokio::select! {
            biased;
            outcome = &mut call => panic!("finished before the clock was paused: {outcome:?}"),
            () = tokio::task::yield_now() => {}
        }
        tokio::time::pause();
        call.await.unwrap();
    }
    assert_eq!(stdout, b"done\n");
    drop(slow_daemon.await.unwrap());
}

#[tokio::test]
async fn no_servers_says_whether_none_is_configured_or_the_token_sees_none() {
    let empty = || result(json!({"servers": []}));
    let answers = vec![bridge_info(), empty(), result(json!({"tokens": []}))];
    let (outcome, stdout, seen) = run_against(&[], answers).await;
    outcome.unwrap();
    assert!(stdout.starts_with("no servers are configured"), "{stdout}");
    assert!(seen[2].contains(r#""method":"listTokens""#), "{}", seen[2]);

    let not_owner = json!({"kind": "notPermitted", "server": "",
                           "reason": "only the owner token may list tokens"});
    let answers = vec![
        bridge_info(),
        empty(),
        rpc_error(-32006, "not permitted", not_owner),
    ];
    let (outcome, stdout, _) = run_against(&[], answers).await;
    outcome.unwrap();
    assert!(
        stdout.starts_with("this token can see no server: its scope matches none"),
        "{stdout}"
    );
    assert!(!stdout.contains("add some"), "{stdout}");
}

#[tokio::test]
async fn server_help_shows_the_servers_tools() {
    let tools = json!({"server": "demo", "tools": [
        {"name": "sql_query", "description": "Run SQL.", "hasStructuredOutput": true}
    ]});
    let (outcome, stdout, seen) =
        run_against(&["demo", "--help"], vec![bridge_info(), result(tools)]).await;
    outcome.unwrap();
    assert!(seen[1].contains(r#""method":"listTools""#), "{}", seen[1]);
    assert!(stdout.starts_with("Usage: tool-cli demo TOOL"), "{stdout}");
    assert!(
        stdout.contains("Tools of demo:\nsql_query  Run SQL."),
        "{stdout}"
    );
}

#[tokio::test]
async fn out_writes_the_bytes_of_a_binary_result() {
    let directory = std::env::temp_dir().join(format!("tool-cli-image-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let path = directory.join("tiny.png");
    let path_text = path.to_str().unwrap();
    let image = json!({"content": [
        {"type": "text", "text": "here is an image"},
        {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
    ]});
    let (outcome, stdout, _) = run_against(
        &["demo", "img", "{}", "--out", path_text],
        vec![bridge_info(), result(image)],
    )
    .await;
    outcome.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"\x89PNG\r\n\x1a\n");
    assert_eq!(stdout, format!("wrote 8 bytes to {path_text}\n"));
    // A text result still writes its text.
    let text = json!({"content": [{"type": "text", "text": "plain"}]});
    let (outcome, _, _) = run_against(
        &["demo", "t", "{}", "--out", path_text],
        vec![bridge_info(), result(text)],
    )
    .await;
    outcome.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"plain\n");
    std::fs::remove_dir_all(&directory).unwrap();
}

#[tokio::test]
async fn server_text_is_sanitised_in_listings_but_results_stay_data() {
    let hostile = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J";
    let tools = json!({"server": "demo", "tools": [
        {"name": format!("t{hostile}\nfake_line"), "description": hostile,
         "hasStructuredOutput": false}
    ]});
    let (outcome, stdout, _) = run_against(&["demo"], vec![bridge_info(), result(tools)]).await;
    outcome.unwrap();
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\u{7}'),
        "{stdout:?}"
    );
    assert!(
        stdout.starts_with("tevil^[]0;pwned^G^[[2J^Jfake_line  evil^["),
        "{stdout:?}"
    );
    // A text result to a pipe (this buffer) is the tool's data, byte for byte.
    let answer = json!({"content": [{"type": "text", "text": hostile}]});
    let (outcome, stdout, _) =
        run_against(&["demo", "t", "{}"], vec![bridge_info(), result(answer)]).await;
    outcome.unwrap();
    assert_eq!(stdout, format!("{hostile}\n"));
}
