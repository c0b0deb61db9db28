//! The daemon's pin check, live (`docs/pinning.md`): a real server pinned with `tool-cli pin`
//! changes one tool's description at run time (one zero-width space) and announces
//! `list_changed`; the daemon holds the tool back from `listTools`, `describeTool`, search,
//! `listServers` and the gateway's `tools/list`, refuses its calls with `pinRefused` naming the
//! approve command (over JSON-RPC and the CLI, exit 9), lets it through once approved, reports
//! a pinned tool that vanished, and fails closed on a corrupt or world-writable store.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_cli_tests::{Daemon, assert_pin_refused_changed, eventually, fault_server};

/// The fault server's `echo` description, as it lists it.
const ECHO_DESCRIPTION: &str =
    "Answers with the nonce it was given, as text and as structured content.";

fn text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn listed_tools(daemon: &Daemon, server: &str) -> Vec<String> {
    daemon.call("listTools", json!({"server": server}))["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

fn warnings(daemon: &Daemon, server: &str) -> String {
    let servers = daemon.call("listServers", Value::Null);
    servers["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["name"] == server)
        .map(|entry| entry["warnings"].to_string())
        .unwrap_or_default()
}

/// The gateway's `tools/list` names, over a fresh session.
fn gateway_names(daemon: &Daemon) -> Vec<String> {
    let session = daemon.open_mcp_session();
    let listed = daemon.post_mcp(
        &[("Mcp-Session-Id", session.as_str())],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    let answer: Value = serde_json::from_slice(&listed.body).unwrap();
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

fn pins_path(daemon: &Daemon) -> std::path::PathBuf {
    daemon.runtime_dir.with_file_name("pins.json")
}

#[test]
fn a_pinned_tool_that_changes_by_one_zero_width_space_is_held_back_until_approved() {
    let daemon = Daemon::start(json!({"mcpServers": {
        "flaky": fault_server(&[]),
        "other": fault_server(&[]),
    }}));
    let store = pins_path(&daemon);
    let output = daemon.run_client(&["pin", "flaky"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    // The client and the daemon read one store: no warning that they differ.
    assert!(!text(&output).contains("not hold"), "{}", text(&output));
    assert!(listed_tools(&daemon, "flaky").contains(&"echo".to_owned()));

    // The rug pull: one zero-width space at the end of the description, then list_changed.
    let changed_at = Instant::now();
    daemon.call_tool(
        "flaky",
        "change_tools",
        json!({"describe": "echo", "description": format!("{ECHO_DESCRIPTION}\u{200b}")}),
    );
    assert!(
        eventually(Duration::from_secs(10), || !listed_tools(&daemon, "flaky")
            .contains(&"echo".to_owned())),
        "the changed tool is still listed"
    );
    eprintln!(
        "held back {} ms after the change was answered",
        changed_at.elapsed().as_millis()
    );

    // Hidden everywhere a model could see it; the unpinned server's echo is untouched.
    let refused = daemon.call_err("describeTool", json!({"server": "flaky", "tool": "echo"}));
    assert_eq!(refused.code, -32012, "{refused:?}");
    let search = daemon.call("searchTools", json!({"query": "answers with the nonce"}));
    let found: Vec<String> = search["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| {
            format!(
                "{}/{}",
                hit["server"].as_str().unwrap(),
                hit["tool"].as_str().unwrap()
            )
        })
        .collect();
    assert!(!found.contains(&"flaky/echo".to_owned()), "{found:?}");
    assert!(found.contains(&"other/echo".to_owned()), "{found:?}");
    let gateway = gateway_names(&daemon);
    assert!(!gateway.contains(&"flaky__echo".to_owned()), "{gateway:?}");
    assert!(gateway.contains(&"other__echo".to_owned()), "{gateway:?}");
    assert!(gateway.contains(&"flaky__sleep".to_owned()), "{gateway:?}");
    assert!(
        warnings(&daemon, "flaky").contains("1 tool held back"),
        "{}",
        warnings(&daemon, "flaky")
    );

    // Its calls are refused by the pipeline with the typed error, nothing sent.
    let refused = daemon.call_err(
        "callTool",
        json!({"server": "flaky", "tool": "echo", "arguments": {"nonce": "n"}}),
    );
    assert_pin_refused_changed(
        &refused,
        json!(["description"]),
        "`tool-cli pin approve flaky --tool echo`",
    );
    let output = daemon.run_client(&["flaky", "echo", "nonce=n"], &[]);
    assert_eq!(output.status.code(), Some(9), "{}", text(&output));
    assert!(
        text(&output).contains("tool-cli pin approve flaky --tool echo"),
        "{}",
        text(&output)
    );
    // The other server's echo still answers.
    daemon.call_tool("other", "echo", json!({"nonce": "still"}));

    // The diff shows the invisible character; approving lets the tool through at once.
    let output = daemon.run_client(&["pin", "diff", "flaky"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("⟨U+200B⟩"), "{}", text(&output));
    let output = daemon.run_client(&["pin", "approve", "flaky", "--tool", "echo"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(listed_tools(&daemon, "flaky").contains(&"echo".to_owned()));
    let answer = daemon.call_tool("flaky", "echo", json!({"nonce": "approved"}));
    assert!(answer.to_string().contains("approved"), "{answer}");

    // A pinned tool that vanishes is reported, not crashed on.
    daemon.call_tool("flaky", "change_tools", json!({"remove": "sleep"}));
    assert!(
        eventually(Duration::from_secs(10), || warnings(&daemon, "flaky")
            .contains("\\\"sleep\\\" is no longer listed")),
        "{}",
        warnings(&daemon, "flaky")
    );
    daemon.call_tool("flaky", "echo", json!({"nonce": "after"}));

    // On reconnect the check runs again: the restarted server lists the original description,
    // which differs from the approved one (with the zero-width space), so echo is held back.
    daemon.call("restartServer", json!({"server": "flaky"}));
    assert!(
        eventually(Duration::from_secs(10), || {
            let tools = listed_tools(&daemon, "flaky");
            tools.contains(&"sleep".to_owned()) && !tools.contains(&"echo".to_owned())
        }),
        "{:?}",
        listed_tools(&daemon, "flaky")
    );
    assert!(store.exists());
}

#[test]
fn a_corrupt_or_world_writable_pin_store_fails_closed_until_restored() {
    let daemon = Daemon::start(json!({"mcpServers": {"flaky": fault_server(&[])}}));
    let store = pins_path(&daemon);
    let output = daemon.run_client(&["pin"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let good = std::fs::read_to_string(&store).unwrap();
    let call_echo = || {
        daemon.rpc(
            "callTool",
            Some(json!({"server": "flaky", "tool": "echo", "arguments": {"nonce": "n"}})),
        )
    };
    assert!(call_echo().is_ok());

    let reload = |daemon: &Daemon| daemon.call("reloadPins", Value::Null);
    // Truncated: not JSON.
    write_private(&store, &good[..good.len() / 2]);
    let status = reload(&daemon);
    assert!(
        status["error"].as_str().unwrap().contains("pins.json"),
        "{status}"
    );
    let refused = call_echo().unwrap_err();
    assert_eq!(refused.code, -32012, "{refused:?}");
    assert_eq!(refused.data.as_ref().unwrap()["reason"], "storeUntrusted");
    assert!(refused.message.contains("cannot be trusted"), "{refused:?}");
    assert!(listed_tools(&daemon, "flaky").is_empty());

    // Restored but writable by everyone: still refused, and the message says chmod.
    write_private(&store, &good);
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o666)).unwrap();
    let status = reload(&daemon);
    assert!(
        status["error"].as_str().unwrap().contains("chmod"),
        "{status}"
    );
    assert_eq!(call_echo().unwrap_err().code, -32012);

    // Fixed: calls and listings are back.
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o600)).unwrap();
    let status = reload(&daemon);
    assert!(status.get("error").is_none(), "{status}");
    assert_eq!(status["servers"][0]["server"], "flaky", "{status}");
    assert!(call_echo().is_ok());
    assert!(listed_tools(&daemon, "flaky").contains(&"echo".to_owned()));
}

fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}
