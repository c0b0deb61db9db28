//! The MCP gateway (`daemon/src/gateway/`, `tool-cli mcp`) driven by the official MCP Python
//! SDK client (`tests/fixtures/mcp_gateway_client.py`, PyPI `mcp`) and by raw HTTP, against the
//! demo server and `@modelcontextprotocol/server-everything`.
//!
//! Input → test:
//! - the SDK over Streamable HTTP, pass-through: every tool as `server__tool`, a demo and an
//!   everything call, resources and prompts, and bad names and a 10 MB argument answered as
//!   MCP errors: `the_python_sdk_lists_and_calls_in_pass_through_mode`
//! - the SDK, progressive: six meta-tools, search, a call before `describe_tool` refused with
//!   the schema, then made: `the_python_sdk_finds_describes_and_calls_in_progressive_mode`
//! - a scoped token's SDK session sees and calls only its scope; a token minted with
//!   `gatewayMode` gets that mode unless the host names one: `a_scoped_token_sees_only_its_scope`
//! - `tools/list` byte-identical across calls, each tool's JSON the server's but for its name,
//!   a dead and a hanging server never failing or holding it up; no session, a foreign session, a bad `Origin`, no token,
//!   `GET`, a batch, an unknown query: `the_endpoint_holds_its_sessions_and_the_gate`
//! - `tool-cli mcp` launched by the SDK over stdio, both modes, with the 10 MB argument:
//!   `tool_cli_mcp_relays_stdio_for_the_python_sdk`
//! - the TypeScript SDK client (`tests/fixtures/mcp_gateway_client.mjs`) over HTTP and over
//!   `tool-cli mcp`: `the_typescript_sdk_lists_and_calls_over_http_and_stdio`
//! - `tool-cli mcp` across a daemon restart opens a new session with the host's initialize:
//!   `tool_cli_mcp_opens_a_new_session_when_the_daemon_restarts`
//! - `tool-cli mcp` with no daemon: `tool_cli_mcp_without_a_daemon_says_how_to_start_one`
//! - a call still running when the shutdown grace ends gets `-32007`:
//!   `a_gateway_call_running_past_the_shutdown_grace_gets_a_shutdown_error`
//! - `tool-cli pin`, `pin diff`, `pin verify [--lock]`, `pin approve`, `pin remove`, a changed
//!   server and an edited store:
//!   `tool_cli_pin_records_diffs_and_verifies`
//! - `tool-cli export openai|anthropic|openapi [--server S]`: `tool_cli_export_writes_each_format`

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, DaemonOptions, client_bin, count_recorded, demo_server, eventually, everything_stdio,
    fault_server, fault_server_recording, free_port, http_request_bytes, raw_http_exchange,
    repo_root, run_with_timeout,
};

/// How long one SDK scenario may take (it starts the SDK and makes about a dozen requests).
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(120);

fn python() -> String {
    tool_cli_tests::peer_python()
}

/// Runs the SDK driver with `args` and returns its JSON report.
fn sdk(args: &[String], env: &[(&str, String)]) -> Value {
    tool_cli_tests::python_driver_report("mcp_gateway_client.py", args, env, SCENARIO_TIMEOUT)
}

fn over_http(daemon: &Daemon, token: &str, headers: &[&str], calls: &Value) -> Value {
    let mut args = vec![
        "--url".to_owned(),
        format!("http://127.0.0.1:{}/mcp", daemon.port),
        "--token".to_owned(),
        token.to_owned(),
        "--calls".to_owned(),
        calls.to_string(),
    ];
    for header in headers {
        args.push("--header".to_owned());
        args.push((*header).to_owned());
    }
    sdk(&args, &[])
}

fn demo_and_everything(dir: &Path) -> Value {
    json!({"mcpServers": {"demo": demo_server(dir), "everything": everything_stdio()}})
}

fn names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .unwrap_or_else(|| panic!("not a tool list: {tools}"))
        .iter()
        .map(|tool| tool["name"].as_str().expect("a name").to_owned())
        .collect()
}

fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|block| block["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn is_gateway_name(name: &str) -> bool {
    (1..=48).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The calls every pass-through scenario makes, in order.
fn pass_through_calls() -> Value {
    json!([
        {"name": "demo__sql_query", "arguments": {"sql": "SELECT 41 + 1 AS answer"}},
        {"name": "everything__echo", "arguments": {"message": "through the gateway"}},
        {"name": "not ours at all", "arguments": {}},
        {"name": "nobody__nothing", "arguments": {}},
        {"name": "everything__echo", "big_argument_bytes": 10_000_000},
        {"name": "everything__echo", "arguments": {"message": "still serving"}},
    ])
}

/// Checks a pass-through report made with [`pass_through_calls`].
fn check_pass_through(report: &Value) {
    assert_eq!(
        report["initialize"]["protocolVersion"], "2025-11-25",
        "{report}"
    );
    let tools = names(&report["tools"]);
    assert!(tools.contains(&"demo__sql_query".to_owned()), "{tools:?}");
    assert!(tools.contains(&"everything__echo".to_owned()), "{tools:?}");
    assert!(tools.iter().all(|name| is_gateway_name(name)), "{tools:?}");
    assert_eq!(report["tools"], report["tools_again"]);
    let calls = &report["calls"];
    assert!(text_of(&calls[0]).contains("42"), "{}", calls[0]);
    assert_ne!(calls[0]["isError"], json!(true), "{}", calls[0]);
    assert!(
        text_of(&calls[1]).contains("through the gateway"),
        "{}",
        calls[1]
    );
    assert_eq!(calls[2]["error"]["code"], -32602, "{}", calls[2]);
    assert!(
        calls[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a tool name of this gateway"),
        "{}",
        calls[2]
    );
    assert_eq!(calls[3]["error"]["code"], -32602, "{}", calls[3]);
    assert!(
        calls[3]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no tool is named \"nobody__nothing\""),
        "{}",
        calls[3]
    );
    assert_eq!(calls[4]["error"]["code"], -32600, "{}", calls[4]);
    assert!(
        calls[4]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("over the daemon's limit"),
        "{}",
        calls[4]
    );
    assert!(text_of(&calls[5]).contains("still serving"), "{}", calls[5]);
}

#[test]
fn the_python_sdk_lists_and_calls_in_pass_through_mode() {
    let daemon = Daemon::start_with_dir(demo_and_everything);
    let report = over_http(&daemon, &daemon.token, &[], &pass_through_calls());
    check_pass_through(&report);
    // The instructions are the progressive mode's; pass-through has none.
    assert_eq!(report["initialize"]["instructions"], Value::Null);
    // Aggregated resources keep their URIs; prompts are named like tools.
    let resources = report["resources"].as_array().expect("resources listed");
    assert!(
        resources
            .iter()
            .any(|uri| uri.as_str().unwrap().starts_with("demo://")),
        "{resources:?}"
    );
    let prompts = names(&json!(
        report["prompts"]
            .as_array()
            .expect("prompts listed")
            .iter()
            .map(|name| json!({"name": name}))
            .collect::<Vec<_>>()
    ));
    assert!(
        prompts.iter().any(|name| name.starts_with("everything__")),
        "{prompts:?}"
    );
    assert_eq!(report["ping"]["ok"], true);
    // The calls took the one pipeline: the daemon's own statistics counted them.
    let health = daemon.call("health", json!({"tools": true}));
    assert!(health.to_string().contains("sql_query"), "{health}");
}

#[test]
fn the_python_sdk_finds_describes_and_calls_in_progressive_mode() {
    let daemon = Daemon::start_with_dir(demo_and_everything);
    let calls = json!([
        {"name": "list_servers", "arguments": {}},
        {"name": "search_tools", "arguments": {"query": "run a SQL query on the shop database", "server": ""}},
        {"name": "call_read_only_tool", "arguments": {"tool": "demo__sql_query", "arguments": "{\"sql\": \"SELECT 6 * 7 AS answer\"}"}},
        {"name": "describe_tool", "arguments": {"tool": "demo__sql_query"}},
        {"name": "call_read_only_tool", "arguments": {"tool": "demo__sql_query", "arguments": "{\"sql\": \"SELECT 6 * 7 AS answer\"}"}},
        {"name": "call_read_only_tool", "arguments": {"tool": "demo__sql_query", "arguments": "{\"nope\": 1}"}},
        {"name": "call_read_only_tool", "arguments": {"tool": "demo__sql_query", "arguments": "[1]"}},
        {"name": "delete_everything", "arguments": {}},
        {"name": "search_tools", "arguments": {"query": "search the web", "server": ""}},
    ]);
    let report = over_http(
        &daemon,
        &daemon.token,
        &["Tool-Cli-Gateway-Mode: progressive"],
        &calls,
    );
    let tools = names(&report["tools"]);
    assert_eq!(
        tools,
        [
            "list_servers",
            "search_tools",
            "describe_tool",
            "call_read_only_tool",
            "call_write_tool",
            "call_destructive_tool"
        ]
    );
    let instructions = report["initialize"]["instructions"]
        .as_str()
        .expect("instructions");
    assert!(instructions.contains("search_tools"), "{instructions}");
    let calls = &report["calls"];
    let servers = text_of(&calls[0]);
    assert!(
        servers.contains("demo") && servers.contains("everything"),
        "{servers}"
    );
    let found = text_of(&calls[1]);
    assert!(found.contains("demo__sql_query [read]"), "{found}");
    // Not described yet: refused with the schema, nothing called.
    assert_eq!(calls[2]["isError"], true, "{}", calls[2]);
    let refusal = text_of(&calls[2]);
    assert!(refusal.contains("describe_tool"), "{refusal}");
    assert!(refusal.contains("\"sql\""), "{refusal}");
    let described = text_of(&calls[3]);
    assert!(
        described.contains("demo__sql_query") && described.contains("\"sql\""),
        "{described}"
    );
    assert_ne!(calls[4]["isError"], json!(true), "{}", calls[4]);
    assert!(text_of(&calls[4]).contains("42"), "{}", calls[4]);
    // Arguments the schema refuses: the refusal carries the schema again.
    assert_eq!(calls[5]["isError"], true, "{}", calls[5]);
    assert!(text_of(&calls[5]).contains("\"sql\""), "{}", calls[5]);
    assert_eq!(calls[6]["isError"], true, "{}", calls[6]);
    assert!(text_of(&calls[6]).contains("JSON object"), "{}", calls[6]);
    assert_eq!(calls[7]["error"]["code"], -32602, "{}", calls[7]);
    // No tool searches the web: the best hit is shown, and the search says it is not sure.
    let loose = text_of(&calls[8]);
    assert!(loose.contains("Not sure"), "{loose}");
    assert!(!found.contains("Not sure"), "{found}");
}

#[test]
fn a_scoped_token_sees_only_its_scope() {
    let daemon = Daemon::start_with_dir(demo_and_everything);
    let minted = daemon.call(
        "mintToken",
        json!({"servers": ["demo"], "label": "gateway"}),
    );
    let token = minted["token"].as_str().expect("a token");
    let calls = json!([
        {"name": "demo__sql_query", "arguments": {"sql": "SELECT 1 AS one"}},
        {"name": "everything__echo", "arguments": {"message": "out of scope"}},
    ]);
    let report = over_http(&daemon, token, &[], &calls);
    let tools = names(&report["tools"]);
    assert!(!tools.is_empty());
    assert!(
        tools.iter().all(|name| name.starts_with("demo__")),
        "{tools:?}"
    );
    assert_ne!(report["calls"][0]["isError"], json!(true), "{report}");
    assert_eq!(report["calls"][1]["error"]["code"], -32602, "{report}");
    // Progressive: the server list and search stay within the scope too.
    let calls = json!([
        {"name": "list_servers", "arguments": {}},
        {"name": "search_tools", "arguments": {"query": "echo a message back", "server": ""}},
    ]);
    let report = over_http(
        &daemon,
        token,
        &["Tool-Cli-Gateway-Mode: progressive"],
        &calls,
    );
    let servers = text_of(&report["calls"][0]);
    assert!(
        servers.contains("demo") && !servers.contains("everything"),
        "{servers}"
    );
    assert!(
        !text_of(&report["calls"][1]).contains("everything__"),
        "{report}"
    );
    // A token minted with a gateway mode gets it when the host names none.
    let minted = daemon.call(
        "mintToken",
        json!({"servers": ["demo"], "gatewayMode": "progressive"}),
    );
    let progressive_token = minted["token"].as_str().expect("a token");
    let report = over_http(&daemon, progressive_token, &[], &json!([]));
    assert_eq!(names(&report["tools"]).len(), 6, "{report}");
    let report = over_http(
        &daemon,
        progressive_token,
        &["Tool-Cli-Gateway-Mode: pass-through"],
        &json!([]),
    );
    assert!(
        names(&report["tools"]).contains(&"demo__sql_query".to_owned()),
        "{report}"
    );
    let refused = daemon.call_err("mintToken", json!({"gatewayMode": "fast"}));
    assert_eq!(refused.code, -32602, "{refused:?}");
    assert!(refused.message.contains("progressive"), "{refused:?}");
}

/// One raw exchange with the gateway.
fn exchange(
    daemon: &Daemon,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> tool_cli_tests::HttpResponse {
    let host = format!("127.0.0.1:{}", daemon.port);
    let mut all = vec![
        ("Host", host.as_str()),
        ("Content-Type", "application/json"),
    ];
    all.extend_from_slice(headers);
    let body = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    raw_http_exchange(
        daemon.port,
        &http_request_bytes(method, target, &all, &body),
    )
    .expect("an answer")
}

fn initialize_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

#[test]
fn the_endpoint_holds_its_sessions_and_the_gate() {
    // One server never starts, one hangs in its handshake for ten minutes: neither holds up or
    // fails the list.
    let daemon = Daemon::start_with_dir_and(
        |dir| {
            json!({"mcpServers": {
                "demo": demo_server(dir),
                "everything": everything_stdio(),
                "dead": {"command": "/nonexistent/tool-cli-gateway-test-server"},
                "hanging": fault_server(&["--slow-start", "600000"]),
            }})
        },
        DaemonOptions {
            args: vec!["--ready-when".to_owned(), "first".to_owned()],
            ..DaemonOptions::default()
        },
    );
    let ready = |name: &str| {
        daemon.call("listServers", json!({}))["servers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|server| server["name"] == name && server["state"] == "ready")
    };
    assert!(eventually(Duration::from_secs(60), || ready("demo")
        && ready("everything")));
    assert!(!ready("hanging"));
    let auth = format!("Bearer {}", daemon.token);
    let bearer = ("Authorization", auth.as_str());
    let opened = exchange(&daemon, "POST", "/mcp", &[bearer], &initialize_body());
    assert_eq!(opened.status, 200);
    let session = opened
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let with_session = [bearer, ("Mcp-Session-Id", session.as_str())];
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let first = exchange(&daemon, "POST", "/mcp", &with_session, &list);
    let second = exchange(&daemon, "POST", "/mcp", &with_session, &list);
    assert_eq!(first.status, 200);
    assert_eq!(first.body, second.body, "tools/list must be byte-identical");
    let listed: Value = serde_json::from_slice(&first.body).unwrap();
    let echo = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "everything__echo")
        .expect("everything__echo listed")
        .clone();
    // The server's own JSON, but for the name.
    let mut original = daemon.call(
        "describeTool",
        json!({"server": "everything", "tool": "echo"}),
    );
    original["name"] = json!("everything__echo");
    assert_eq!(echo, original);
    let listed_names = names(&listed["result"]["tools"]);
    assert!(listed_names.iter().any(|name| name.starts_with("demo__")));
    assert!(
        !listed_names
            .iter()
            .any(|name| name.starts_with("hanging__") || name.starts_with("dead__"))
    );
    // Its tools are not listed, so a call by a made-up name is refused at once.
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "hanging__echo", "arguments": {}}});
    let answer: Value =
        serde_json::from_slice(&exchange(&daemon, "POST", "/mcp", &with_session, &call).body)
            .unwrap();
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    // Prompts by their gateway names, resources by their URIs, each read from its server.
    let ask = |method: &str, params: Value| -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": params});
        serde_json::from_slice(&exchange(&daemon, "POST", "/mcp", &with_session, &body).body)
            .unwrap()
    };
    let prompts = ask("prompts/list", json!({}));
    let simple = names(&prompts["result"]["prompts"])
        .into_iter()
        .find(|name| name.starts_with("everything__") && name.contains("simple"))
        .unwrap_or_else(|| panic!("no simple prompt: {prompts}"));
    let rendered = ask("prompts/get", json!({"name": simple}));
    assert!(rendered["result"]["messages"].is_array(), "{rendered}");
    let unknown = ask("prompts/get", json!({"name": "nobody__nothing"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let resources = ask("resources/list", json!({}));
    let uri = resources["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|resource| resource["uri"].as_str())
        .find(|uri| uri.starts_with("demo://"))
        .unwrap_or_else(|| panic!("no demo resource: {resources}"))
        .to_owned();
    let read = ask("resources/read", json!({"uri": uri}));
    assert!(read["result"]["contents"].is_array(), "{read}");
    let missing = ask("resources/read", json!({"uri": "demo://no/such/thing"}));
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    // A URI no server listed but one of everything's resource templates fits is read there.
    let templates = ask("resources/templates/list", json!({}));
    let template = templates["result"]["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|template| template["uriTemplate"].as_str())
        .find(|template| template.starts_with("demo://resource/dynamic/text/{"))
        .unwrap_or_else(|| panic!("no dynamic text template: {templates}"))
        .to_owned();
    let templated = template.split('{').next().unwrap().to_owned() + "7";
    let read = ask("resources/read", json!({"uri": templated}));
    assert_eq!(read["result"]["contents"][0]["uri"], templated, "{read}");
    // A notification is taken without an answer.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        exchange(&daemon, "POST", "/mcp", &with_session, &note).status,
        202
    );
    // No session, a made-up session, another token's session.
    let no_session = exchange(&daemon, "POST", "/mcp", &[bearer], &list);
    assert_eq!(no_session.status, 400);
    assert!(String::from_utf8_lossy(&no_session.body).contains("initialize first"));
    let made_up = [
        bearer,
        ("Mcp-Session-Id", "0123456789abcdef0123456789abcdef"),
    ];
    assert_eq!(
        exchange(&daemon, "POST", "/mcp", &made_up, &list).status,
        404
    );
    let minted = daemon.call("mintToken", json!({"servers": ["demo"]}));
    let other = format!("Bearer {}", minted["token"].as_str().unwrap());
    let stolen = [
        ("Authorization", other.as_str()),
        ("Mcp-Session-Id", session.as_str()),
    ];
    assert_eq!(
        exchange(&daemon, "POST", "/mcp", &stolen, &list).status,
        404
    );
    // The gate: a foreign Origin, no token, GET without Accept: text/event-stream (406; the
    // standalone stream is `gateway_notices.rs`'s), a query other than the mode.
    let foreign = [bearer, ("Origin", "http://evil.example")];
    assert_eq!(
        exchange(&daemon, "POST", "/mcp", &foreign, &initialize_body()).status,
        403
    );
    // The daemon's own loopback origin is no browser page's (it serves none): accepted, as
    // the MCP conformance suite's DNS-rebinding scenario expects; another local port's is not.
    let own_origin = format!("http://localhost:{}", daemon.port);
    let own = [bearer, ("Origin", own_origin.as_str())];
    assert_eq!(
        exchange(&daemon, "POST", "/mcp", &own, &initialize_body()).status,
        200
    );
    let other_port = format!("http://localhost:{}", daemon.port.wrapping_add(1));
    let neighbour = [bearer, ("Origin", other_port.as_str())];
    assert_eq!(
        exchange(&daemon, "POST", "/mcp", &neighbour, &initialize_body()).status,
        403
    );
    assert_eq!(
        exchange(&daemon, "POST", "/mcp", &[], &initialize_body()).status,
        401
    );
    assert_eq!(
        exchange(&daemon, "GET", "/mcp", &[bearer], &Value::Null).status,
        406
    );
    let token_in_url = format!("/mcp?token={}", daemon.token);
    assert_eq!(
        exchange(
            &daemon,
            "POST",
            &token_in_url,
            &[bearer],
            &initialize_body()
        )
        .status,
        400
    );
    // The mode in the query.
    let progressive = exchange(
        &daemon,
        "POST",
        "/mcp?mode=progressive",
        &[bearer],
        &initialize_body(),
    );
    let answer: Value = serde_json::from_slice(&progressive.body).unwrap();
    assert!(answer["result"]["instructions"].is_string(), "{answer}");
    // A batch is not MCP since 2025-06-18.
    let batch = exchange(&daemon, "POST", "/mcp", &with_session, &json!([list]));
    let answer: Value = serde_json::from_slice(&batch.body).unwrap();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    // An unknown method.
    let unknown = json!({"jsonrpc": "2.0", "id": 3, "method": "roots/list"});
    let answer: Value =
        serde_json::from_slice(&exchange(&daemon, "POST", "/mcp", &with_session, &unknown).body)
            .unwrap();
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    // DELETE ends the session.
    assert_eq!(
        exchange(&daemon, "DELETE", "/mcp", &with_session, &Value::Null).status,
        200
    );
    assert_eq!(
        exchange(&daemon, "POST", "/mcp", &with_session, &list).status,
        404
    );
    // JSON-RPC on `/` is as before.
    assert!(daemon.call("listServers", json!({}))["servers"].is_array());
}

#[test]
fn tool_cli_mcp_relays_stdio_for_the_python_sdk() {
    let daemon = Daemon::start_with_dir(demo_and_everything);
    let env = [
        ("TOOL_CLI_PORT", daemon.port.to_string()),
        ("TOOL_CLI_TOKEN", daemon.token.clone()),
        (
            "TOOL_CLI_RUNTIME_DIR",
            daemon.runtime_dir.to_string_lossy().into_owned(),
        ),
    ];
    let client = client_bin().to_string_lossy().into_owned();
    let args = |extra: &[&str], calls: &Value| {
        let mut args = vec![
            "--command".to_owned(),
            client.clone(),
            "--arg".to_owned(),
            "mcp".to_owned(),
        ];
        for arg in extra {
            // `--arg=--progressive`: argparse would take a bare `--progressive` for a flag.
            args.push(format!("--arg={arg}"));
        }
        args.push("--calls".to_owned());
        args.push(calls.to_string());
        args
    };
    let report = sdk(&args(&[], &pass_through_calls()), &env);
    check_pass_through(&report);
    let calls =
        json!([{"name": "search_tools", "arguments": {"query": "echo a message", "server": ""}}]);
    let report = sdk(&args(&["--progressive"], &calls), &env);
    assert_eq!(names(&report["tools"]).len(), 6, "{report}");
    assert!(
        text_of(&report["calls"][0]).contains("everything__echo"),
        "{report}"
    );
}

#[test]
fn tool_cli_mcp_without_a_daemon_says_how_to_start_one() {
    let runtime_dir = tool_cli_tests::scratch();
    let mut command = Command::new(client_bin());
    command
        .arg("mcp")
        .env("TOOL_CLI_PORT", free_port().to_string())
        .env("TOOL_CLI_TOKEN", "ab".repeat(32))
        .env("TOOL_CLI_RUNTIME_DIR", runtime_dir.path())
        .stdin(std::process::Stdio::null());
    let output = run_with_timeout(command, Duration::from_secs(30));
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "nothing for the host on stdout");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("tool-cli daemon start"), "{stderr}");
    assert!(stderr.contains("none was reachable or started"), "{stderr}");
    assert_eq!(output.status.code(), Some(3), "{stderr}");
}

#[test]
fn tool_cli_export_writes_each_format() {
    let daemon = Daemon::start_with_dir(|dir| {
        json!({"mcpServers": {
            "demo": demo_server(dir),
            "schemas": {"command": python(), "args": [repo_root().join("tests/fixtures/schema_server.py")]},
        }})
    });
    let export = |args: &[&str]| {
        let output = daemon.run_client(args, &[]);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "{args:?}: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_str::<Value>(&stdout).unwrap_or_else(|error| panic!("{error}: {stdout}"))
    };
    let openai = export(&["export", "openai"]);
    let functions = openai.as_array().expect("an array of tools");
    let openai_names: Vec<&str> = functions
        .iter()
        .map(|tool| {
            assert_eq!(tool["type"], "function", "{tool}");
            assert_eq!(tool["function"]["parameters"]["type"], "object", "{tool}");
            tool["function"]["name"].as_str().unwrap()
        })
        .collect();
    assert!(
        openai_names.contains(&"demo__sql_query"),
        "{openai_names:?}"
    );
    assert!(openai_names.contains(&"schemas__order"), "{openai_names:?}");
    // The unicode tool gets a hashed name, valid for both providers.
    assert!(
        openai_names
            .iter()
            .all(|name| is_gateway_name(name) && name.contains("__")),
        "{openai_names:?}"
    );
    // The same names as the gateway's pass-through list.
    let anthropic = export(&["export", "anthropic", "--server", "demo"]);
    let anthropic_tools = anthropic.as_array().unwrap();
    assert!(!anthropic_tools.is_empty());
    assert!(
        anthropic_tools
            .iter()
            .all(|tool| tool["name"].as_str().unwrap().starts_with("demo__")
                && tool["input_schema"]["type"] == "object"),
        "{anthropic}"
    );
    let openapi = export(&["export", "openapi", "--base-url", "http://127.0.0.1:9/"]);
    assert_eq!(openapi["openapi"], "3.1.0", "{openapi}");
    assert!(openapi["paths"]["/tools/demo__sql_query"]["post"].is_object());
    assert_eq!(openapi["servers"][0]["url"], "http://127.0.0.1:9/");
    // An unknown server is the daemon's error, with its exit code.
    let output = daemon.run_client(&["export", "openai", "--server", "nope"], &[]);
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
}

#[test]
fn tool_cli_pin_records_diffs_and_verifies() {
    let daemon = Daemon::start_with_dir(
        |dir| json!({"mcpServers": {"demo": demo_server(dir), "flaky": fault_server(&[])}}),
    );
    let store_dir = tool_cli_tests::scratch();
    let store = store_dir.path().join("pins.json");
    let store_text = store.to_string_lossy().into_owned();
    let pin = |args: &[&str]| {
        let mut all = vec!["pin"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--pins", &store_text]);
        daemon.run_client(&all, &[])
    };
    let text = |output: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    };
    // Nothing pinned yet: verify says so (bad input, exit 2).
    let output = pin(&["verify"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("nothing is pinned"),
        "{}",
        text(&output)
    );

    let output = pin(&[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains("pinned 2 servers"),
        "{}",
        text(&output)
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&store).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&store).unwrap()).unwrap();
    assert!(
        saved["servers"]["demo"]["tools"]["sql_query"]["digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256/v1:")
    );

    let output = pin(&["verify", "--lock"]);
    assert!(output.status.success(), "{}", text(&output));
    let output = pin(&["diff"]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains("server \"demo\": every pinned item is unchanged"),
        "{}",
        text(&output)
    );

    // The gateway's cached tools/list follows the catalog: listed before the change, then after.
    let auth = format!("Bearer {}", daemon.token);
    let opened = exchange(
        &daemon,
        "POST",
        "/mcp",
        &[("Authorization", auth.as_str())],
        &initialize_body(),
    );
    let session = opened
        .header("mcp-session-id")
        .expect("a session")
        .to_owned();
    let gateway_names = || {
        let headers = [
            ("Authorization", auth.as_str()),
            ("Mcp-Session-Id", session.as_str()),
        ];
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let answer: Value =
            serde_json::from_slice(&exchange(&daemon, "POST", "/mcp", &headers, &list).body)
                .unwrap();
        names(&answer["result"]["tools"])
    };
    assert!(gateway_names().contains(&"flaky__fail".to_owned()));

    // The server adds a tool and drops one: a rug pull's shape.
    daemon.call_tool(
        "flaky",
        "change_tools",
        json!({"add": "exfiltrate", "remove": "fail"}),
    );
    assert!(eventually(Duration::from_secs(10), || {
        daemon
            .call("listTools", json!({"server": "flaky"}))
            .to_string()
            .contains("exfiltrate")
    }));
    let listed = gateway_names();
    assert!(
        listed.contains(&"flaky__exfiltrate".to_owned()),
        "{listed:?}"
    );
    assert!(!listed.contains(&"flaky__fail".to_owned()), "{listed:?}");
    let output = pin(&["verify"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("exfiltrate"), "{}", text(&output));
    let output = pin(&["diff", "flaky"]);
    assert!(output.status.success(), "{}", text(&output));
    let diff = text(&output);
    assert!(diff.contains("tool \"exfiltrate\": new"), "{diff}");
    assert!(diff.contains("tool \"fail\": vanished"), "{diff}");

    // Approving the new tool and the vanished one makes the pins hold again.
    for item in ["exfiltrate", "fail"] {
        let output = pin(&["approve", "flaky", "--tool", item]);
        assert!(output.status.success(), "{}", text(&output));
        assert!(text(&output).contains("approved tool"), "{}", text(&output));
    }
    let output = pin(&["verify"]);
    assert!(output.status.success(), "{}", text(&output));
    let output = pin(&["approve", "flaky", "--tool", "never_was"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let output = pin(&["approve", "flaky"]);
    assert_eq!(output.status.code(), Some(2), "one item must be named");
    // A server no longer pinned fails the lock, not the plain verify.
    let output = pin(&["remove", "flaky"]);
    assert!(output.status.success(), "{}", text(&output));
    let output = pin(&["verify", "--lock"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("\"flaky\" is not pinned"),
        "{}",
        text(&output)
    );
    assert!(pin(&["verify"]).status.success());

    // A store edited in place fails closed.
    let mut edited: Value =
        serde_json::from_str(&std::fs::read_to_string(&store).unwrap()).unwrap();
    edited["servers"]["demo"]["tools"]["sql_query"]["fields"]["description"]["value"] =
        json!("Run any SQL you like.");
    std::fs::write(&store, edited.to_string()).unwrap();
    let output = pin(&["verify"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("nothing pinned is trusted"),
        "{}",
        text(&output)
    );
}

#[test]
fn a_gateway_call_running_past_the_shutdown_grace_gets_a_shutdown_error() {
    let record_dir = tool_cli_tests::scratch();
    let record = record_dir.path().join("record.jsonl");
    let mut daemon = Daemon::start_with(
        json!({"mcpServers": {"flaky": fault_server_recording(&record, &[])}}),
        DaemonOptions {
            args: vec!["--shutdown-grace-ms".to_owned(), "200".to_owned()],
            ..DaemonOptions::default()
        },
    );
    let auth = format!("Bearer {}", daemon.token);
    let opened = exchange(
        &daemon,
        "POST",
        "/mcp",
        &[("Authorization", auth.as_str())],
        &initialize_body(),
    );
    let session = opened
        .header("mcp-session-id")
        .expect("a session")
        .to_owned();
    let port = daemon.port;
    let call = std::thread::spawn(move || {
        let host = format!("127.0.0.1:{port}");
        let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "flaky__hang", "arguments": {}}})
        .to_string();
        let headers = [
            ("Host", host.as_str()),
            ("Authorization", auth.as_str()),
            ("Mcp-Session-Id", session.as_str()),
        ];
        raw_http_exchange(
            port,
            &http_request_bytes("POST", "/mcp", &headers, body.as_bytes()),
        )
    });
    assert!(eventually(Duration::from_secs(30), || {
        count_recorded(&record, "tools/call", Some("hang")) == 1
    }));
    daemon.signal(libc::SIGTERM);
    let answer = call
        .join()
        .unwrap()
        .expect("an answer before the connection closed");
    let answer: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(answer["id"], 9, "{answer}");
    assert_eq!(answer["error"]["code"], -32007, "{answer}");
    assert!(daemon.wait_for_exit(Duration::from_secs(30)).is_some());
}

/// Runs the TypeScript SDK driver with `args` and returns its JSON report.
fn typescript_sdk(args: &[String], env: &[(&str, String)]) -> Value {
    let mut command = Command::new(tool_cli_tests::which("node"));
    command
        .arg(repo_root().join("tests/fixtures/mcp_gateway_client.mjs"))
        .args(args)
        .current_dir(repo_root())
        .envs(env.iter().map(|(name, value)| (*name, value.as_str())));
    let output = run_with_timeout(command, SCENARIO_TIMEOUT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the TypeScript SDK driver failed: {}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}

#[test]
fn the_typescript_sdk_lists_and_calls_over_http_and_stdio() {
    let daemon = Daemon::start_with_dir(demo_and_everything);
    let calls = json!([
        {"name": "everything__echo", "arguments": {"message": "from typescript"}},
        {"name": "demo__sql_query", "arguments": {"sql": "SELECT 2 * 21 AS answer"}},
        {"name": "not ours", "arguments": {}},
    ])
    .to_string();
    let check = |report: &Value| {
        let tools = report["tools"].as_array().expect("tools");
        assert!(tools.contains(&json!("everything__echo")), "{report}");
        assert!(
            text_of(&report["calls"][0]).contains("from typescript"),
            "{report}"
        );
        assert!(text_of(&report["calls"][1]).contains("42"), "{report}");
        assert_eq!(report["calls"][2]["error"]["code"], -32602, "{report}");
    };
    let over_http = typescript_sdk(
        &[
            "--url".to_owned(),
            format!("http://127.0.0.1:{}/mcp", daemon.port),
            "--token".to_owned(),
            daemon.token.clone(),
            "--calls".to_owned(),
            calls.clone(),
        ],
        &[],
    );
    assert_eq!(
        over_http["serverVersion"]["name"], "tool-cli",
        "{over_http}"
    );
    check(&over_http);
    let env = [
        ("TOOL_CLI_PORT", daemon.port.to_string()),
        ("TOOL_CLI_TOKEN", daemon.token.clone()),
        (
            "TOOL_CLI_RUNTIME_DIR",
            daemon.runtime_dir.to_string_lossy().into_owned(),
        ),
    ];
    let over_stdio = typescript_sdk(
        &[
            "--command".to_owned(),
            client_bin().to_string_lossy().into_owned(),
            "--arg".to_owned(),
            "mcp".to_owned(),
            "--calls".to_owned(),
            calls,
        ],
        &env,
    );
    check(&over_stdio);
}

#[test]
fn tool_cli_mcp_opens_a_new_session_when_the_daemon_restarts() {
    use std::io::{BufRead as _, Write as _};
    let token = "ef".repeat(32);
    let start = |args: Vec<String>| {
        Daemon::try_start_with(
            json!({"mcpServers": {"flaky": fault_server(&[])}}),
            DaemonOptions {
                token: Some(token.clone()),
                args,
                ..DaemonOptions::default()
            },
        )
        .unwrap_or_else(|failure| panic!("{failure}"))
    };
    let first = start(Vec::new());
    let port = first.port;
    let runtime_dir = tool_cli_tests::scratch();
    let mut relay = Command::new(client_bin())
        .arg("mcp")
        .env("TOOL_CLI_PORT", port.to_string())
        .env("TOOL_CLI_TOKEN", &token)
        .env("TOOL_CLI_RUNTIME_DIR", runtime_dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn tool-cli mcp");
    let mut stdin = relay.stdin.take().unwrap();
    let stdout = relay.stdout.take().unwrap();
    let (lines, answers) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut ask = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        if message.get("id").is_none() {
            return Value::Null;
        }
        let line = answers
            .recv_timeout(Duration::from_secs(30))
            .expect("an answer from tool-cli mcp");
        serde_json::from_str::<Value>(&line).unwrap()
    };
    let opened = ask(initialize_body());
    assert_eq!(
        opened["result"]["serverInfo"]["name"], "tool-cli",
        "{opened}"
    );
    ask(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let list = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
    let before = ask(list(2));
    assert!(names(&before["result"]["tools"]).contains(&"flaky__echo".to_owned()));
    // The daemon restarts on the same port with the same token; its sessions are gone.
    drop(first);
    let _second = start(vec!["--port".to_owned(), port.to_string()]);
    let after = ask(list(3));
    assert_eq!(after["id"], 3, "{after}");
    assert!(
        names(&after["result"]["tools"]).contains(&"flaky__echo".to_owned()),
        "{after}"
    );
    drop(stdin);
    let status = relay.wait().expect("tool-cli mcp exits when stdin closes");
    assert!(status.success(), "{status}");
}
