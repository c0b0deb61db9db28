//! Both MCP protocol eras: the pool connects servers that speak only the stateless revision
//! 2026-07-28 (`daemon/examples/stateless_server.rs`, rmcp's server narrowed to that version)
//! beside today's 2025-era peers, and the gateway answers 2026-era hosts statelessly on the
//! same `/mcp` endpoint where 2025-era hosts keep their sessions.
//!
//! Input → test:
//! - a 2026-only server under `protocol: auto` (the default) and under `"2026-07-28"`,
//!   listed and called with the version and our capabilities in each request's `_meta`, beside
//!   the demo server and server-everything (2025 era, still connected by the handshake);
//!   `input_required` rounds answered (elicitation declined, the config's roots) and a server
//!   asking at every round refused after the last; the same server forced to
//!   `"2025-11-25"` is down with the server's refusal:
//!   `the_pool_connects_stateless_servers_beside_todays_peers`
//! - rmcp's client in discover mode (`daemon/examples/stateless_host.rs`) against `/mcp`:
//!   discover, tools, resources, prompts and calls answered without a session, through the
//!   pipeline (validation, traces) to a 2025 peer and to a 2026-only upstream, a missing
//!   resource as `-32602`; the same host over stdio through `tool-cli mcp`; progressive mode
//!   describes then calls across stateless requests:
//!   `a_2026_host_is_answered_statelessly_through_the_pipeline`
//! - the pool over Streamable HTTP with `protocol: "2026-07-28"`, its upstream another daemon's
//!   gateway (so both ends of the stateless HTTP exchange are tested against each other); under
//!   `auto` the same upstream is reached with the handshake:
//!   `the_pool_reaches_a_stateless_http_server_another_daemons_gateway`
//! - raw HTTP: a 2026 request naming a 2025 session, a 2025 header on a 2026 request, a 2026
//!   header without the `_meta`, a session-less 2025 request, an unknown version; the 2025
//!   session still serves: `requests_mixing_the_eras_are_refused_with_what_would_be_right`

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{
    CLIENT_TIMEOUT, Daemon, demo_server, eventually, everything_stdio, example_bin,
    run_with_timeout,
};

/// Runs the 2026-era host against `/mcp{query}` with `calls`; its JSON report.
fn stateless_host(daemon: &Daemon, query: &str, calls: &[String]) -> Value {
    let mut command = std::process::Command::new(example_bin("stateless_host"));
    command
        .arg(format!("http://127.0.0.1:{}/mcp{query}", daemon.port))
        .arg(&daemon.token)
        .args(calls);
    let output = run_with_timeout(command, CLIENT_TIMEOUT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the host failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|_| panic!("not a report: {stdout}"))
}

/// Runs the 2026-era host through `tool-cli mcp` over stdio (launched with the environment
/// that finds `daemon`); its JSON report.
fn stateless_host_over_stdio(daemon: &Daemon, calls: &[String]) -> Value {
    let client = daemon.client_command();
    let mut command = std::process::Command::new(example_bin("stateless_host"));
    command.arg("stdio").arg(client.get_program()).args(calls);
    for (name, value) in client.get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    let output = run_with_timeout(command, CLIENT_TIMEOUT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the host failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|_| panic!("not a report: {stdout}"))
}

fn call(tool: &str, arguments: Value) -> String {
    format!("{tool}={arguments}")
}

fn server_entry(daemon: &Daemon, name: &str) -> Value {
    daemon.call("listServers", Value::Null)["servers"]
        .as_array()
        .expect("a server list")
        .iter()
        .find(|server| server["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} is not listed"))
}

#[test]
fn the_pool_connects_stateless_servers_beside_todays_peers() {
    let daemon = Daemon::start_with_dir(|dir| {
        json!({"mcpServers": {
            "demo": demo_server(dir),
            "everything": everything_stdio(),
            "modern": {"command": example_bin("stateless_server"), "roots": ["/srv/era"]},
            "pinned": {"command": example_bin("stateless_server"), "protocol": "2026-07-28"},
            "forced": {"command": example_bin("stateless_server"), "protocol": "2025-11-25"},
        }})
    });
    for name in ["demo", "everything", "modern", "pinned"] {
        assert!(
            eventually(
                Duration::from_secs(60),
                || server_entry(&daemon, name)["state"] == "ready"
            ),
            "{name} never became ready: {}",
            server_entry(&daemon, name)
        );
    }
    for name in ["modern", "pinned"] {
        let tools = daemon.call("listTools", json!({"server": name}));
        let listed = tools.to_string();
        for tool in ["add", "echo", "request_meta"] {
            assert!(listed.contains(&format!("\"{tool}\"")), "{name}: {listed}");
        }
        let sum = daemon.call_tool(name, "add", json!({"a": 2, "b": 40}));
        assert_eq!(sum["structuredContent"]["sum"], 42.0, "{name}: {sum}");
        // Every request carries the version, our identity and our capabilities in `_meta`.
        let meta = daemon.call_tool(name, "request_meta", json!({}));
        let seen = &meta["structuredContent"];
        assert_eq!(seen["protocolVersion"], "2026-07-28", "{name}: {meta}");
        assert_eq!(seen["clientName"], "tool-cli-daemon-rs", "{name}: {meta}");
        assert_eq!(seen["capabilitiesSent"], true, "{name}: {meta}");
        assert_eq!(seen["elicitation"], true, "{name}: {meta}");
        // Validation is the pipeline's, before the server sees the call.
        let refused = daemon.call_err(
            "callTool",
            json!({"server": name, "tool": "add", "arguments": {"a": "two"}}),
        );
        assert!(refused.message.contains("b"), "{name}: {refused:?}");
    }
    // A server asking for input the 2026 way gets the answers a 2025 server's requests get
    // (elicitation declined with the reason, the config's roots) in the call sent again.
    let asked = daemon.call_tool("modern", "ask_name", json!({}));
    assert_eq!(asked["structuredContent"]["action"], "decline", "{asked}");
    let roots = daemon.call_tool("modern", "roots", json!({}));
    assert!(roots.to_string().contains("/srv/era"), "{roots}");
    // One that keeps asking is refused once the rounds run out.
    let endless = daemon.call_err(
        "callTool",
        json!({"server": "modern", "tool": "ask_forever", "arguments": {}}),
    );
    assert!(endless.message.contains("still asking"), "{endless:?}");
    assert!(
        endless.message.contains("elicitation/create"),
        "{endless:?}"
    );
    // Today's peers are untouched: the handshake, as before.
    let echoed = daemon.call_tool("everything", "echo", json!({"message": "both eras"}));
    assert!(echoed.to_string().contains("both eras"), "{echoed}");
    let answer = daemon.call_tool("demo", "sql_query", json!({"sql": "SELECT 41 + 1 AS n"}));
    assert!(answer.to_string().contains("42"), "{answer}");
    // Forced to the handshake, the 2026-only server says why it cannot connect.
    assert!(
        eventually(Duration::from_secs(30), || {
            let forced = server_entry(&daemon, "forced");
            forced["state"] != "connecting" && forced["error"].is_string()
        }),
        "{}",
        server_entry(&daemon, "forced")
    );
    let forced = server_entry(&daemon, "forced");
    let why = forced["error"].as_str().unwrap_or_default();
    assert!(why.contains("Unsupported protocol version"), "{forced}");
}

fn demo_everything_and_modern(dir: &std::path::Path) -> Value {
    json!({
        "mcpServers": {
            "demo": demo_server(dir),
            "everything": everything_stdio(),
            "modern": {"command": example_bin("stateless_server")},
        },
        "traces": {"path": dir.join("traces.jsonl")},
    })
}

#[test]
fn a_2026_host_is_answered_statelessly_through_the_pipeline() {
    let daemon = Daemon::start_with_dir(demo_everything_and_modern);
    daemon.wait_servers_ready(&["demo", "everything", "modern"], Duration::from_secs(60));
    let report = stateless_host(
        &daemon,
        "",
        &[
            call("demo__sql_query", json!({"sql": "SELECT 41 + 1 AS answer"})),
            call("modern__add", json!({"a": 2, "b": 40})),
            call("modern__request_meta", json!({})),
            call("modern__add", json!({"a": "two"})),
            call("nobody__nothing", json!({})),
        ],
    );
    assert_eq!(report["protocolVersion"], "2026-07-28", "{report}");
    assert_eq!(report["serverName"], "tool-cli", "{report}");
    let tools = report["tools"].as_array().expect("tools").clone();
    for name in ["demo__sql_query", "everything__echo", "modern__add"] {
        assert!(tools.contains(&json!(name)), "{name}: {report}");
    }
    let calls = &report["calls"];
    assert!(calls[0].to_string().contains("42"), "{report}");
    assert_ne!(calls[0]["isError"], true, "{report}");
    // 2026 host → gateway → pool → 2026-only upstream, each hop stateless.
    assert_eq!(calls[1]["structuredContent"]["sum"], 42.0, "{report}");
    assert_eq!(
        calls[2]["structuredContent"]["protocolVersion"], "2026-07-28",
        "{report}"
    );
    // The pipeline validates before the server sees the call.
    let invalid = calls[3].to_string();
    assert!(
        calls[3]["isError"] == true || calls[3]["error"].is_string(),
        "{report}"
    );
    assert!(
        invalid.contains("\"b\"") || invalid.contains("b is"),
        "{invalid}"
    );
    assert!(calls[4].to_string().contains("nobody__nothing"), "{report}");
    // Resources and prompts, aggregated; a missing resource is -32602 in this revision.
    assert!(
        report["resources"]["resources"]
            .as_array()
            .is_some_and(|r| !r.is_empty()),
        "{report}"
    );
    assert!(
        report["firstResourceRead"]["contents"]
            .as_array()
            .is_some_and(|c| !c.is_empty()),
        "{report}"
    );
    assert!(
        report["prompts"]["prompts"]
            .as_array()
            .is_some_and(|p| !p.is_empty()),
        "{report}"
    );
    let missing = report["missingResource"]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(missing.contains("-32602"), "{report}");
    // Every call went through the pipeline, and so into the trace.
    assert!(
        eventually(Duration::from_secs(10), || {
            std::fs::read_to_string(daemon.dir().join("traces.jsonl"))
                .is_ok_and(|text| text.contains("\"modern\"") && text.contains("\"add\""))
        }),
        "no trace line for modern add"
    );

    // The same host launching `tool-cli mcp`, as a desktop host does: no session either.
    let report =
        stateless_host_over_stdio(&daemon, &[call("modern__add", json!({"a": 40, "b": 2}))]);
    assert_eq!(report["protocolVersion"], "2026-07-28", "{report}");
    assert_eq!(
        report["calls"][0]["structuredContent"]["sum"], 42.0,
        "{report}"
    );

    // Progressive: describe in one stateless request, call in the next.
    let sql = r#"{"sql": "SELECT 6 * 7 AS answer"}"#;
    let query = json!({"tool": "demo__sql_query", "arguments": sql});
    let report = stateless_host(
        &daemon,
        "?mode=progressive",
        &[
            call("call_read_only_tool", query.clone()),
            call("describe_tool", json!({"tool": "demo__sql_query"})),
            call("call_read_only_tool", query),
        ],
    );
    assert!(
        report["instructions"]
            .as_str()
            .is_some_and(|text| !text.is_empty()),
        "{report}"
    );
    let tools = report["tools"].as_array().expect("tools");
    assert!(tools.contains(&json!("describe_tool")), "{report}");
    assert!(!tools.contains(&json!("modern__add")), "{report}");
    let calls = &report["calls"];
    assert_eq!(
        calls[0]["isError"], true,
        "a call before describe_tool: {report}"
    );
    assert!(calls[1].to_string().contains("sql"), "{report}");
    assert!(calls[2].to_string().contains("42"), "{report}");
    assert_ne!(calls[2]["isError"], true, "{report}");
}

/// One raw POST to `/mcp` with the daemon's token.
fn post(daemon: &Daemon, headers: &[(&str, &str)], body: &Value) -> (u16, Value, Option<String>) {
    let response = daemon.post_mcp(headers, body);
    let session = response.header("mcp-session-id").map(str::to_owned);
    let body = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    (response.status, body, session)
}

fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

#[test]
fn requests_mixing_the_eras_are_refused_with_what_would_be_right() {
    let daemon = Daemon::start_demo();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let (status, answer, session) = post(&daemon, &[], &initialize);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["result"]["protocolVersion"], "2025-11-25",
        "{answer}"
    );
    let session = session.expect("a session id");
    // The headers each era's requests carry: the 2025 session's, and the bare version headers.
    let on_the_session = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let header_2025 = [("MCP-Protocol-Version", "2025-11-25")];
    let header_2026 = [("MCP-Protocol-Version", "2026-07-28")];
    let list_2026 = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                           "params": {"_meta": meta_2026()}});

    // A 2026-era request on the 2025 session.
    let (status, answer, _) = post(&daemon, &on_the_session, &list_2026);
    assert_eq!(status, 400, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("without Mcp-Session-Id"), "{answer}");
    assert!(message.contains("out of _meta"), "{answer}");

    // The reverse: a 2025 request (header, no 2026 `_meta`) with no session, and a 2025 header
    // on a 2026 request.
    let list_2025 = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let (status, answer, _) = post(&daemon, &header_2025, &list_2025);
    assert_eq!(status, 400, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("send initialize first"), "{answer}");
    assert!(message.contains("stateless 2026-07-28"), "{answer}");
    let (status, answer, _) = post(&daemon, &header_2025, &list_2026);
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32020, "{answer}");
    // A 2026 header without the `_meta` the revision requires.
    let (status, answer, _) = post(&daemon, &header_2026, &list_2025);
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    // A revision we do not speak.
    let mut later = list_2026.clone();
    later["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2027-01-01");
    let (status, answer, _) = post(&daemon, &[], &later);
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32022, "{answer}");
    assert_eq!(
        answer["error"]["data"]["supported"][0], "2026-07-28",
        "{answer}"
    );

    // Right, each way: the 2026 request alone, and the session with its own.
    let (status, answer, session_header) = post(&daemon, &header_2026, &list_2026);
    assert_eq!(status, 200, "{answer}");
    assert!(
        session_header.is_none(),
        "a stateless answer opens no session"
    );
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert!(answer.to_string().contains("demo__sql_query"), "{answer}");
    let (status, answer, _) = post(&daemon, &on_the_session, &list_2025);
    assert_eq!(status, 200, "{answer}");
    assert!(answer["result"].get("resultType").is_none(), "{answer}");
    assert!(answer.to_string().contains("demo__sql_query"), "{answer}");
}

#[test]
fn the_pool_reaches_a_stateless_http_server_another_daemons_gateway() {
    let upstream = Daemon::start_demo();
    upstream.wait_servers_ready(&["demo"], Duration::from_secs(60));
    let url = format!("http://127.0.0.1:{}/mcp", upstream.port);
    let authorization = format!("Bearer {}", upstream.token);
    let daemon = Daemon::start(json!({"mcpServers": {
        "stateless": {"url": url, "headers": {"Authorization": authorization},
                      "protocol": "2026-07-28"},
        "auto": {"url": url, "headers": {"Authorization": authorization}},
    }}));
    daemon.wait_servers_ready(&["stateless", "auto"], Duration::from_secs(60));
    for name in ["stateless", "auto"] {
        let tools = daemon
            .call("listTools", json!({"server": name}))
            .to_string();
        assert!(tools.contains("demo__sql_query"), "{name}: {tools}");
        let answer = daemon.call_tool(
            name,
            "demo__sql_query",
            json!({"sql": "SELECT 41 + 1 AS answer"}),
        );
        assert!(answer.to_string().contains("42"), "{name}: {answer}");
        assert_ne!(answer["isError"], true, "{name}: {answer}");
    }
    // The stateless one went without a session (its answers carried resultType); the auto one
    // used the handshake, so the upstream gave it plain 2025 results.
    let stateless = daemon.call_tool("stateless", "demo__sql_query", json!({"sql": "SELECT 1"}));
    assert_eq!(stateless["resultType"], "complete", "{stateless}");
    let auto = daemon.call_tool("auto", "demo__sql_query", json!({"sql": "SELECT 1"}));
    assert!(auto.get("resultType").is_none(), "{auto}");
}
