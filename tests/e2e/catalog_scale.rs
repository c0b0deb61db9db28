//! A server of 10,000 tools (the fault server's `--extra-tools 10000`): everything that names
//! or lists tools stays small (issue 13, P6).
//!
//! - `describeTool` and a routed `callTool` of an unknown name → an error under 4 KB naming the
//!   closest tools first and the count, never the whole list;
//! - `listTools` of the server with `limit` → pages whose cursors visit every tool once, with
//!   the count; bad `limit` and cursor → `-32602` saying what is expected;
//! - `tool-cli SERVER` → the first 200 tools and a note on stderr with how many more and how to
//!   see them; `--all` → every tool.

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::code;
use tool_cli_tests::{Daemon, DaemonOptions, eventually, fault_server};

/// Generated tools; the fault server adds its 16 built-in ones.
const GENERATED: usize = 10_000;
const BUILT_IN: usize = 16;

/// How long discovering the 10,000 tools may take: a debug build on a loaded machine is slow,
/// and this is a bound on a wait for an event, not a timing.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(300);

/// The daemon of a 10,000-tool server. It prints its address at once (`--ready-when none`), and
/// it is handed out once it lists every tool, so the start-up timeout of the harness does not
/// bound the discovery.
fn big_daemon() -> Daemon {
    let daemon = Daemon::start_with(
        json!({"mcpServers": {
            "big": fault_server(&["--extra-tools", &GENERATED.to_string()])
        }}),
        DaemonOptions {
            args: vec!["--ready-when".into(), "none".into()],
            ..DaemonOptions::default()
        },
    );
    let discovered = eventually(DISCOVERY_TIMEOUT, || {
        let servers = daemon.call("listServers", Value::Null);
        servers["servers"][0]["toolCount"] == GENERATED + BUILT_IN
    });
    assert!(
        discovered,
        "the daemon never listed every tool:\n{}",
        daemon.stderr()
    );
    daemon
}

/// Discovering 10,000 tools is the slow part, so one test starts one daemon and runs every check
/// on it; the daemon (and its server) stop when it is dropped, whether the checks pass or panic.
/// (A daemon shared through a `static` was never dropped: each test process left one running.)
#[test]
fn a_server_of_ten_thousand_tools_keeps_every_answer_small() {
    let daemon = big_daemon();
    an_unknown_tool_in_describe_tool_names_the_closest_and_the_count(&daemon);
    an_unknown_tool_in_a_routed_call_names_the_closest_and_the_count(&daemon);
    list_tools_pages_visit_every_tool_once(&daemon);
    the_cli_prints_a_page_of_a_huge_server_and_says_how_to_see_more(&daemon);
}

fn encoded_size(value: &impl serde::Serialize) -> usize {
    serde_json::to_vec(value).expect("encodes").len()
}

fn an_unknown_tool_in_describe_tool_names_the_closest_and_the_count(daemon: &Daemon) {
    let error = daemon.call_err(
        "describeTool",
        json!({"server": "big", "tool": "extra_77777"}),
    );
    let size = encoded_size(&error);
    assert!(size < 4096, "{size} bytes: {error:?}");
    assert_eq!(error.code, code::INVALID_PARAMS, "{error:?}");
    let data = error.data.expect("the error has data");
    assert_eq!(data["kind"], "unknownTool");
    assert_eq!(data["toolCount"], GENERATED + BUILT_IN);
    let known = data["knownTools"].as_array().expect("knownTools");
    assert!(!known.is_empty() && known.len() <= 10, "{known:?}");
    assert_eq!(known[0], "extra_7777", "the nearest first: {known:?}");
    assert!(error.message.contains("extra_7777"), "{}", error.message);
}

fn an_unknown_tool_in_a_routed_call_names_the_closest_and_the_count(daemon: &Daemon) {
    let error = daemon.call_err(
        "callTool",
        json!({"tool": "extar_4242", "arguments": {"nonce": "n"}}),
    );
    let size = encoded_size(&error);
    assert!(size < 4096, "{size} bytes: {error:?}");
    let data = error.data.expect("the error has data");
    assert_eq!(data["kind"], "unknownTool", "{data}");
    assert_eq!(data["toolCount"], GENERATED + BUILT_IN);
    let known = data["knownTools"].as_array().expect("knownTools");
    assert!(!known.is_empty() && known.len() <= 10, "{known:?}");
    assert_eq!(known[0], "big/extra_4242", "the nearest first: {known:?}");
}

fn list_tools_pages_visit_every_tool_once(daemon: &Daemon) {
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut params = json!({"server": "big", "limit": 3000});
        if let Some(cursor) = &cursor {
            params["cursor"] = json!(cursor);
        }
        let page = daemon.call("listTools", params);
        pages += 1;
        assert_eq!(
            page["toolCount"],
            GENERATED + BUILT_IN,
            "{}",
            page["toolCount"]
        );
        let tools = page["tools"].as_array().expect("tools");
        assert!(tools.len() <= 3000);
        names.extend(
            tools
                .iter()
                .map(|tool| tool["name"].as_str().unwrap().to_owned()),
        );
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
        assert!(pages < 10, "the cursors do not end");
    }
    assert_eq!(pages, 4);
    assert_eq!(names.len(), GENERATED + BUILT_IN);
    let whole = daemon.call("listTools", json!({"server": "big"}));
    let whole: Vec<&str> = whole["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, whole, "the pages are the whole list, in order");

    for (params, expected) in [
        (json!({"server": "big", "limit": 0}), "expected 1 to 5000"),
        (
            json!({"server": "big", "limit": 5001}),
            "expected 1 to 5000",
        ),
        (
            json!({"server": "big", "cursor": "page 2"}),
            "pass the nextCursor",
        ),
    ] {
        let error = daemon.call_err("listTools", params.clone());
        assert_eq!(error.code, code::INVALID_PARAMS, "{params}: {error:?}");
        assert!(
            error.message.contains(expected),
            "{params}: {}",
            error.message
        );
    }
}

fn the_cli_prints_a_page_of_a_huge_server_and_says_how_to_see_more(daemon: &Daemon) {
    let output = daemon.run_client(&["big"], &[]);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    let listed: Vec<&str> = stdout.lines().take_while(|line| !line.is_empty()).collect();
    assert_eq!(listed.len(), 200, "{stdout}");
    assert!(
        listed[199].starts_with("extra_183 "),
        "the server's order: {}",
        listed[199]
    );
    let left = GENERATED + BUILT_IN - 200;
    assert!(
        stderr.contains(&format!(
            "{left} more tools not shown (200 of {})",
            GENERATED + BUILT_IN
        )),
        "{stderr}"
    );
    assert!(stderr.contains("`tool-cli big --all`"), "{stderr}");
    assert!(stderr.contains("tool-cli search"), "{stderr}");

    let output = daemon.run_client(&["big", "--all"], &[]);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let listed = stdout.lines().take_while(|line| !line.is_empty()).count();
    assert_eq!(listed, GENERATED + BUILT_IN);
    assert!(String::from_utf8(output.stderr).unwrap().is_empty());
}
