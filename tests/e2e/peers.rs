//! The daemon against real MCP servers written by others: the reference `server-everything` over
//! stdio and over Streamable HTTP, `server-filesystem`, `server-memory`, `mcp-server-time` (Python)
//! and our own Python fixture built on the `mcp` 2.x SDK. These are the servers users actually
//! configure; each test checks discovery, a call and its result as the peer really sends them.

use serde_json::{Value, json};
use tool_cli_protocol::methods::{ListServersResult, ListToolsResult, ServerState, TransportKind};
use tool_cli_tests::{
    Daemon, HttpPeer, everything_stdio, filesystem_server, memory_server, python_fixture, scratch,
    text_content, time_server,
};

fn server_summary(daemon: &Daemon, server: &str) -> tool_cli_protocol::methods::ServerSummary {
    let servers: ListServersResult =
        serde_json::from_value(daemon.call("listServers", Value::Null)).expect("listServers");
    servers
        .servers
        .into_iter()
        .find(|s| s.name == server)
        .unwrap_or_else(|| panic!("{server} missing from listServers"))
}

fn tools_of(daemon: &Daemon, server: &str) -> ListToolsResult {
    serde_json::from_value(daemon.call("listTools", json!({"server": server}))).expect("listTools")
}

/// Discovery and calls every transport of server-everything must support.
fn exercise_everything(daemon: &Daemon, transport: TransportKind) {
    let summary = server_summary(daemon, "everything");
    assert_eq!(
        summary.state,
        ServerState::Ready,
        "everything not ready: {summary:?}\ndaemon stderr:\n{}",
        daemon.stderr()
    );
    assert_eq!(summary.transport, transport);

    let tools = tools_of(daemon, "everything");
    assert_eq!(summary.tool_count, tools.tools.len());
    let names: Vec<&str> = tools.tools.iter().map(|t| t.name.as_str()).collect();
    for expected in ["echo", "get-sum", "get-structured-content"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let structured = tools
        .tools
        .iter()
        .find(|t| t.name == "get-structured-content")
        .expect("get-structured-content");
    assert!(structured.has_structured_output);
    let echo = tools.tools.iter().find(|t| t.name == "echo").expect("echo");
    assert!(!echo.has_structured_output);

    let described = daemon.call(
        "describeTool",
        json!({"server": "everything", "tool": "echo"}),
    );
    assert_eq!(described["name"], "echo");
    assert_eq!(
        described["inputSchema"]["properties"]["message"]["type"],
        "string"
    );
    assert_eq!(described["inputSchema"]["required"], json!(["message"]));

    let echoed = daemon.call_tool("everything", "echo", json!({"message": "hello, peer"}));
    assert_eq!(text_content(&echoed), "Echo: hello, peer");
    assert_ne!(echoed["isError"], true);

    let sum = daemon.call_tool("everything", "get-sum", json!({"a": 2, "b": 40}));
    assert!(text_content(&sum).contains("42"), "get-sum 2 + 40: {sum:#}");

    let weather = daemon.call_tool(
        "everything",
        "get-structured-content",
        json!({"location": "Chicago"}),
    );
    let structured = &weather["structuredContent"];
    assert!(
        structured["temperature"].is_number() && structured["conditions"].is_string(),
        "structuredContent passed through unnarrowed: {weather:#}"
    );
    // The text content is the same object serialised, per the MCP spec's recommendation.
    let text: Value = serde_json::from_str(&text_content(&weather)).expect("text is JSON");
    assert_eq!(&text, structured);

    // The schema is draft-07 with an enum; a value outside it never reaches the server.
    let invalid = daemon.call_err(
        "callTool",
        json!({"server": "everything", "tool": "get-structured-content",
               "arguments": {"location": "Atlantis"}}),
    );
    assert_eq!(invalid.code, tool_cli_protocol::code::INVALID_PARAMS);
    match tool_cli_tests::error_data(&invalid) {
        tool_cli_protocol::ErrorData::InvalidArguments { errors, .. } => {
            assert!(
                errors.iter().any(|e| e.path == "/location"),
                "errors name /location: {errors:?}"
            );
        }
        other => panic!("expected invalidArguments, got {other:?}"),
    }
}

#[test]
fn everything_over_stdio() {
    let daemon = Daemon::start(json!({"mcpServers": {"everything": everything_stdio()}}));
    exercise_everything(&daemon, TransportKind::Stdio);
}

#[test]
fn everything_over_streamable_http() {
    let peer = HttpPeer::everything();
    let daemon = Daemon::start(json!({"mcpServers": {"everything": peer.server_config()}}));
    exercise_everything(&daemon, TransportKind::Http);
}

#[test]
fn everything_resources_pass_through() {
    let daemon = Daemon::start(json!({"mcpServers": {"everything": everything_stdio()}}));
    let resources = daemon.call("listResources", json!({"server": "everything"}));
    let list = resources["resources"].as_array().expect("resources array");
    assert!(
        !list.is_empty(),
        "everything lists resources: {resources:#}"
    );
    let uri = list[0]["uri"].as_str().expect("uri").to_owned();
    let read = daemon.call("readResource", json!({"server": "everything", "uri": uri}));
    assert_eq!(read["contents"][0]["uri"], uri);
    let templates = daemon.call("listResourceTemplates", json!({"server": "everything"}));
    assert!(templates["templates"].is_array(), "{templates:#}");
}

#[test]
fn filesystem_lists_and_reads_inside_its_root_only() {
    let root = scratch();
    std::fs::write(root.path().join("hello.txt"), "hello from the test\n").expect("write file");
    std::fs::create_dir(root.path().join("sub")).expect("mkdir");
    let root_path = root.path().canonicalize().expect("canonical root");
    let daemon = Daemon::start(json!({"mcpServers": {"fs": filesystem_server(&root_path)}}));

    let listing = daemon.call_tool("fs", "list_directory", json!({"path": root_path}));
    let text = text_content(&listing);
    assert!(text.contains("[FILE] hello.txt"), "{text}");
    assert!(text.contains("[DIR] sub"), "{text}");

    let read = daemon.call_tool(
        "fs",
        "read_text_file",
        json!({"path": root_path.join("hello.txt")}),
    );
    assert_eq!(text_content(&read), "hello from the test\n");

    // Outside the root the server refuses with a tool error, which is passed through as is.
    let outside = daemon.call_tool("fs", "read_text_file", json!({"path": "/etc/hostname"}));
    assert_eq!(outside["isError"], true, "{outside:#}");
}

#[test]
fn memory_keeps_a_graph_across_calls() {
    let dir = scratch();
    let file = dir.path().join("memory.jsonl");
    let daemon = Daemon::start(json!({"mcpServers": {"memory": memory_server(&file)}}));
    daemon.call_tool(
        "memory",
        "create_entities",
        json!({"entities": [{"name": "tool-cli", "entityType": "project",
                             "observations": ["written in Rust"]}]}),
    );
    let graph = daemon.call_tool("memory", "read_graph", json!({}));
    let dump = serde_json::to_string(&graph).expect("serialize");
    assert!(
        dump.contains("tool-cli") && dump.contains("written in Rust"),
        "{graph:#}"
    );
    assert!(file.exists(), "the memory server wrote {}", file.display());
}

#[test]
fn time_reports_utc() {
    let daemon = Daemon::start(json!({"mcpServers": {"time": time_server()}}));
    let tools = tools_of(&daemon, "time");
    assert!(tools.tools.iter().any(|t| t.name == "get_current_time"));
    let now = daemon.call_tool("time", "get_current_time", json!({"timezone": "UTC"}));
    assert_ne!(now["isError"], true, "{now:#}");
    let reported: Value = match now.get("structuredContent") {
        Some(structured) => structured.clone(),
        None => serde_json::from_str(&text_content(&now)).expect("time result is JSON"),
    };
    assert_eq!(reported["timezone"], "UTC", "{now:#}");
    let datetime = reported["datetime"].as_str().expect("datetime");
    assert!(datetime.ends_with("+00:00"), "{datetime}");

    // An unknown zone is the server's own error; it reaches the caller, not a daemon fault.
    let bad = daemon.rpc(
        "callTool",
        Some(json!({"server": "time", "tool": "get_current_time",
                    "arguments": {"timezone": "Mars/Olympus_Mons"}})),
    );
    match bad {
        Ok(result) => assert_eq!(result["isError"], true, "{result:#}"),
        Err(error) => assert_eq!(
            error.code,
            tool_cli_protocol::code::UPSTREAM_ERROR,
            "{error:?}"
        ),
    }
}

/// Structured output as the Python SDK produces it.
fn exercise_python_fixture(daemon: &Daemon) {
    let tools = tools_of(daemon, "py");
    let flag = |name: &str| {
        tools
            .tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} missing: {tools:?}"))
            .has_structured_output
    };
    assert!(flag("weather"));
    assert!(!flag("echo"));

    let described = daemon.call("describeTool", json!({"server": "py", "tool": "weather"}));
    let output_schema = &described["outputSchema"];
    assert_eq!(output_schema["type"], "object", "{described:#}");
    for field in ["city", "temperature_c", "conditions"] {
        assert!(
            output_schema["properties"][field].is_object(),
            "outputSchema has {field}: {output_schema:#}"
        );
    }

    let weather = daemon.call_tool("py", "weather", json!({"city": "Oslo"}));
    assert_eq!(
        weather["structuredContent"],
        json!({"city": "Oslo", "temperature_c": 29, "conditions": "cloudy"}),
        "{weather:#}"
    );
    assert_eq!(weather["isError"], false);

    let echoed = daemon.call_tool("py", "echo", json!({"text": "plain text"}));
    assert_eq!(text_content(&echoed), "plain text");
    assert!(echoed.get("structuredContent").is_none(), "{echoed:#}");
}

#[test]
fn python_fixture_structured_output_over_stdio() {
    let daemon = Daemon::start(json!({"mcpServers": {"py": python_fixture()}}));
    exercise_python_fixture(&daemon);
}

#[test]
fn python_fixture_structured_output_over_streamable_http() {
    let peer = HttpPeer::python_fixture();
    let daemon = Daemon::start(json!({"mcpServers": {"py": peer.server_config()}}));
    exercise_python_fixture(&daemon);
}

#[test]
fn many_peers_in_one_daemon_are_listed_in_config_order() {
    let root = scratch();
    let daemon = Daemon::start_with_dir(|dir| {
        json!({"mcpServers": {
            "demo": tool_cli_tests::demo_server(dir),
            "everything": everything_stdio(),
            "fs": filesystem_server(root.path()),
            "time": time_server(),
            "py": python_fixture(),
        }})
    });
    let servers: ListServersResult =
        serde_json::from_value(daemon.call("listServers", Value::Null)).expect("listServers");
    let names: Vec<&str> = servers.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["demo", "everything", "fs", "time", "py"]);
    for server in &servers.servers {
        assert_eq!(server.state, ServerState::Ready, "{server:?}");
        assert!(server.tool_count > 0, "{server:?}");
        assert!(
            !server.examples.is_empty() && server.examples.len() <= 3,
            "{server:?}"
        );
        assert_eq!(server.error, None);
    }
}
