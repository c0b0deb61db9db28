//! Both MCP protocol eras: the pool connects servers that speak only the stateless revision
//! 2026-07-28 (`daemon/examples/stateless_server.rs`, rmcp's server narrowed to that version)
//! beside today's 2025-era peers, and the gateway answers 2026-era hosts statelessly on the
//! same `/mcp` endpoint where 2025-era hosts keep their sessions.
//!
//! Input → test:
//! - a 2026-only server under `protocol: auto` (the default) and under `"2026-07-28"`,
//!   listed and called with the version and our capabilities in each request's `_meta`, beside
//!   the demo server and server-everything (2025 era, still connected by the handshake);
//!   the same server forced to `"2025-11-25"` is down with the server's refusal:
//!   `the_pool_connects_stateless_servers_beside_todays_peers`

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{Daemon, bin_dir, demo_server, eventually, everything_stdio};

/// The 2026-only test server (built with the workspace's examples).
fn stateless_server() -> PathBuf {
    let example = bin_dir().join("examples").join("stateless_server");
    assert!(
        example.exists(),
        "{} is built with the workspace's examples (`cargo build --examples`)",
        example.display()
    );
    example
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
            "modern": {"command": stateless_server()},
            "pinned": {"command": stateless_server(), "protocol": "2026-07-28"},
            "forced": {"command": stateless_server(), "protocol": "2025-11-25"},
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
