//! One-shot servers from the command line (issue 27, item 4): `tool-cli --stdio "CMD ARGS" TOOL
//! ARGS_JSON` and `--url URL` reach a server that is not in the config through the daemon's
//! `addServer`, so its calls are validated, pinned and traced like any other, and the server is
//! gone afterwards. Bad input: a command that exits at once, one that never answers, a bad URL.

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, HttpFaultServer, assert_budget_exceeded, eventually, fault_server_bin,
};

fn text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn server_names(daemon: &Daemon) -> Vec<String> {
    daemon.call("listServers", Value::Null)["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|server| server["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_stdio_one_shot_call_is_validated_traced_and_leaves_nothing_behind() {
    let daemon = Daemon::start(json!({"mcpServers": {}}));
    let command = format!("{} --extra-tools 1", fault_server_bin().display());
    let output = daemon.run_client(
        &["--stdio", &command, "echo", r#"{"nonce": "one-shot"}"#],
        &[],
    );
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("one-shot"), "{}", text(&output));
    assert!(
        server_names(&daemon).is_empty(),
        "{:?}",
        server_names(&daemon)
    );

    // Validation is the daemon's: a wrong argument type is refused with the schema's words.
    let output = daemon.run_client(&["--stdio", &command, "echo", r#"{"nonce": 7}"#], &[]);
    assert_eq!(output.status.code(), Some(5), "{}", text(&output));
    assert!(text(&output).contains("nonce"), "{}", text(&output));

    // Without a tool: its tools are listed.
    let output = daemon.run_client(&["--stdio", &command], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("extra_0"), "{}", text(&output));

    // Traced like a configured server, under its stable one-shot name.
    let traces = daemon
        .runtime_dir
        .with_file_name("state")
        .join("tool-cli/traces.jsonl");
    assert!(
        eventually(Duration::from_secs(10), || {
            std::fs::read_to_string(&traces)
                .is_ok_and(|text| text.contains("\"oneshot-tool-cli-fault-server-"))
        }),
        "no trace line names the one-shot server"
    );
    assert!(server_names(&daemon).is_empty());
}

#[test]
fn a_url_one_shot_reaches_a_streamable_http_server() {
    let peer = HttpFaultServer::start(&[]);
    let daemon = Daemon::start(json!({"mcpServers": {}}));
    let output = daemon.run_client(
        &["--url", &peer.url("/mcp"), "echo", "nonce=over-http"],
        &[],
    );
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("over-http"), "{}", text(&output));
    assert!(server_names(&daemon).is_empty());
}

#[test]
fn bad_one_shot_servers_get_clear_errors_and_leave_nothing_behind() {
    let daemon = Daemon::start(json!({"mcpServers": {}}));
    // Exits at once.
    let output = daemon.run_client(&["--stdio", "false", "anything"], &[]);
    assert!(!output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("did not start"), "{}", text(&output));
    // Never answers: the daemon's connect deadline (30 s) ends the start, and nothing is kept.
    let before = daemon.children();
    let output = daemon.run_client(&["--stdio", "sleep 600", "anything"], &[]);
    assert!(!output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("did not start"), "{}", text(&output));
    assert!(
        server_names(&daemon).is_empty(),
        "{:?}",
        server_names(&daemon)
    );
    assert!(
        eventually(Duration::from_secs(10), || daemon.children() == before),
        "{:?} (before: {before:?})",
        daemon.children()
    );
    // Not a URL.
    let output = daemon.run_client(&["--url", "localhost:3000", "x"], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("http:// or https://"),
        "{}",
        text(&output)
    );
    // Both at once.
    let output = daemon.run_client(&["--url", "http://127.0.0.1:1/mcp", "--stdio", "x"], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    // A URL nobody serves: the daemon's start error.
    let output = daemon.run_client(&["--url", "http://127.0.0.1:1/mcp", "x"], &[]);
    assert!(!output.status.success(), "{}", text(&output));
    assert!(server_names(&daemon).is_empty());
}

#[test]
fn tool_cli_skill_writes_a_skill_file_within_its_budget_per_server() {
    let daemon = Daemon::start(json!({"mcpServers": {
        "flaky": tool_cli_tests::fault_server(&["--extra-tools", "300"]),
    }}));
    let dir = tool_cli_tests::scratch();
    let file = dir.path().join("SKILL.md");
    let output = daemon.run_client(&["skill", "--out", file.to_str().unwrap()], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let skill = std::fs::read_to_string(&file).unwrap();
    assert!(skill.starts_with("---\nname: tool-cli"), "{skill}");
    let section = &skill[skill.find("## flaky").expect("a section per server")..];
    // The budget: 400 tokens estimated as characters / 4.
    assert!(section.chars().count().div_ceil(4) <= 400, "{section}");
    assert!(section.contains("- `echo`:"), "{section}");
    assert!(
        section.contains("more: `tool-cli flaky` lists them all"),
        "{section}"
    );
    let output = daemon.run_client(&["skill", "nope"], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
}

#[test]
fn a_sessions_own_watchdog_caps_refuse_its_calls_live() {
    let daemon = Daemon::start(json!({"mcpServers": {"flaky": tool_cli_tests::fault_server(&[])}}));
    let echo = |session: &str| {
        daemon.rpc(
            "callTool",
            Some(
                json!({"server": "flaky", "tool": "echo", "arguments": {"nonce": "n"},
                        "sessionId": session}),
            ),
        )
    };
    // Two calls allowed: the third is refused before anything is sent.
    daemon.call("openSession", json!({"sessionId": "capped", "maxCalls": 2}));
    assert!(echo("capped").is_ok());
    assert!(echo("capped").is_ok());
    assert_budget_exceeded(&echo("capped").unwrap_err(), "calls", 2);
    // Another session is not capped.
    daemon.call("openSession", json!({"sessionId": "free"}));
    for _ in 0..3 {
        assert!(echo("free").is_ok());
    }
    // A wall-time cap of 1 ms: spent by the time the first call arrives.
    daemon.call(
        "openSession",
        json!({"sessionId": "brief", "maxWallTimeMs": 1}),
    );
    assert!(eventually(Duration::from_secs(5), || echo("brief")
        .is_err_and(
            |error| error.data.as_ref().unwrap()["budget"] == "wallTimeMs"
        )));
    // A cap of 0 is refused with what would be right.
    let zero = daemon.call_err("openSession", json!({"maxCalls": 0}));
    assert_eq!(zero.code, -32602, "{zero:?}");
    assert!(zero.message.contains("at least 1"), "{zero:?}");
}
