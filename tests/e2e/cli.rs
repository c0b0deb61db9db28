//! The `tool-cli` binary end to end: progressive discovery one word at a time, calls whose output
//! pipes into a JSON parser, `--json`, `--out`, resources, finding the daemon through the runtime
//! file, and the documented exit codes for every kind of failure (a dead port fails fast with 3).

use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, client_command, free_port, python_fixture, run_with_timeout, scratch,
};

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts the exit code, showing both streams when it differs.
fn assert_exit(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "exit code\nstdout:\n{}\nstderr:\n{}",
        stdout(output),
        stderr(output)
    );
}

fn run_ok(daemon: &Daemon, args: &[&str]) -> String {
    let output = daemon.run_client(args, &[]);
    assert_exit(&output, 0);
    stdout(&output)
}

#[test]
fn progressive_discovery() {
    let daemon = Daemon::start_demo();

    let servers = run_ok(&daemon, &[]);
    assert!(servers.contains("demo"), "{servers}");

    let tools = run_ok(&daemon, &["demo"]);
    assert!(
        tools.contains("sql_query") && tools.contains("describe_schema"),
        "{tools}"
    );

    let schema = run_ok(&daemon, &["demo", "sql_query"]);
    for parameter in ["sql", "page_size", "offset"] {
        assert!(
            schema.contains(parameter),
            "schema shows {parameter}:\n{schema}"
        );
    }

    let call = run_ok(
        &daemon,
        &[
            "demo",
            "sql_query",
            r#"{"sql": "SELECT id, name FROM customers ORDER BY id", "page_size": 3}"#,
        ],
    );
    // Human output of a tool with structuredContent is that JSON: it pipes straight into jq.
    let parsed: Value = serde_json::from_str(&call)
        .unwrap_or_else(|err| panic!("stdout of a call is JSON ({err}):\n{call}"));
    assert_eq!(
        parsed["rows"].as_array().map(Vec::len),
        Some(3),
        "{parsed:#}"
    );
    assert_eq!(parsed["has_more"], true);
}

#[test]
fn arguments_can_come_from_stdin() {
    let daemon = Daemon::start_demo();
    let mut command = daemon.client_command();
    command.args(["demo", "sql_query", "-"]);
    let dir = scratch();
    let input = dir.path().join("args.json");
    std::fs::write(&input, r#"{"sql": "SELECT 7 AS seven"}"#).expect("write args");
    command.stdin(std::fs::File::open(&input).expect("open args"));
    let output = run_with_timeout(command, Duration::from_secs(60));
    assert_exit(&output, 0);
    assert!(stdout(&output).contains('7'), "{}", stdout(&output));
}

#[test]
fn json_output_is_lossless() {
    let daemon = Daemon::start_demo();

    let servers: Value = serde_json::from_str(&run_ok(&daemon, &["--json"])).expect("JSON");
    assert_eq!(servers["servers"][0]["name"], "demo");

    let schema: Value =
        serde_json::from_str(&run_ok(&daemon, &["--json", "demo", "sql_query"])).expect("JSON");
    assert_eq!(
        schema,
        daemon.call(
            "describeTool",
            json!({"server": "demo", "tool": "sql_query"})
        ),
        "--json of a schema is describeTool's result"
    );

    let call: Value = serde_json::from_str(&run_ok(
        &daemon,
        &[
            "--json",
            "demo",
            "sql_query",
            r#"{"sql": "SELECT 1 AS one"}"#,
        ],
    ))
    .expect("JSON");
    assert!(
        call["content"].is_array(),
        "the complete CallToolResult: {call:#}"
    );
    assert!(call["structuredContent"].is_object(), "{call:#}");
}

#[test]
fn out_writes_the_body_to_a_file() {
    let daemon = Daemon::start_demo();
    let dir = scratch();
    let file = dir.path().join("result.json");
    let file_text = file.to_string_lossy().into_owned();
    let printed = run_ok(
        &daemon,
        &[
            "--out",
            &file_text,
            "demo",
            "sql_query",
            r#"{"sql": "SELECT 1 AS one"}"#,
        ],
    );
    assert!(
        printed.contains(&file_text),
        "the summary names the file: {printed}"
    );
    assert_eq!(printed.trim().lines().count(), 1, "one line: {printed}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("read --out file"))
            .expect("the file holds JSON");
    assert_eq!(written["total_rows_matched"], 1, "{written:#}");
}

#[test]
fn resources_list_templates_and_read() {
    let daemon = Daemon::start_demo();
    let listed = run_ok(&daemon, &["resource", "list"]);
    assert!(listed.contains("demo://docs/readme"), "{listed}");
    let templates = run_ok(&daemon, &["resource", "templates", "--server", "demo"]);
    assert!(templates.contains("demo://tables/{table}"), "{templates}");
    let readme = run_ok(
        &daemon,
        &["resource", "read", "--server", "demo", "demo://docs/readme"],
    );
    assert!(readme.contains("sql_query"), "{readme}");
    // With a single connected server, --server may be left out.
    let table = run_ok(&daemon, &["resource", "read", "demo://tables/customers"]);
    assert!(!table.trim().is_empty());
}

#[test]
fn the_runtime_file_is_enough_to_find_the_daemon() {
    let daemon = Daemon::start_demo();
    let mut command = client_command();
    command.env(tool_cli_protocol::env::RUNTIME_DIR, &daemon.runtime_dir);
    let output = run_with_timeout(command, Duration::from_secs(60));
    assert_exit(&output, 0);
    assert!(stdout(&output).contains("demo"));
}

#[test]
fn exit_codes_say_what_went_wrong() {
    let daemon = Daemon::start_demo();

    let unknown_server = daemon.run_client(&["nope"], &[]);
    assert_exit(&unknown_server, 5);
    assert!(
        stderr(&unknown_server).contains("demo"),
        "lists known servers"
    );
    assert!(stdout(&unknown_server).is_empty(), "stdout stays clean");

    let unknown_tool = daemon.run_client(&["demo", "drop_table"], &[]);
    assert_exit(&unknown_tool, 5);
    assert!(
        stderr(&unknown_tool).contains("sql_query"),
        "lists known tools"
    );

    let invalid = daemon.run_client(&["demo", "sql_query", r#"{"sql": 5}"#], &[]);
    assert_exit(&invalid, 5);
    assert!(stderr(&invalid).contains("sql"), "{}", stderr(&invalid));

    let not_an_object = daemon.run_client(&["demo", "sql_query", "[1, 2]"], &[]);
    assert_exit(&not_an_object, 2);

    let tool_error = daemon.run_client(
        &["demo", "sql_query", r#"{"sql": "DELETE FROM orders"}"#],
        &[],
    );
    assert_exit(&tool_error, 6);

    let wrong_token = "f".repeat(64);
    // A token the daemon does not know is never sent: the daemon cannot prove it holds it.
    let refused = daemon.run_client(&[], &[("TOOL_CLI_TOKEN", wrong_token.as_str())]);
    assert_exit(&refused, 8);
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("token was not sent"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

#[test]
fn a_timeout_exits_7() {
    let daemon = Daemon::start(json!({"mcpServers": {"py": python_fixture()}}));
    let output = daemon.run_client(
        &["--timeout", "300", "py", "sleep", r#"{"ms": 10000}"#],
        &[],
    );
    assert_exit(&output, 7);
}

#[test]
fn a_dead_port_exits_3_quickly_with_a_clear_message() {
    let port = free_port().to_string();
    let mut command = client_command();
    command
        .env(tool_cli_protocol::env::PORT, &port)
        .env(tool_cli_protocol::env::TOKEN, "0".repeat(64))
        .env(tool_cli_protocol::env::RUNTIME_DIR, scratch().path());
    // Bounded well below the default request timeout: a refused connection must not wait it out.
    let output = run_with_timeout(command, Duration::from_secs(10));
    assert_exit(&output, 3);
    let message = stderr(&output);
    assert!(
        message.contains(&port),
        "the message names the port: {message}"
    );
    assert!(stdout(&output).is_empty());
}

#[test]
fn no_daemon_and_no_runtime_file_exits_3() {
    let dir = scratch();
    let mut command = client_command();
    command.env(tool_cli_protocol::env::RUNTIME_DIR, dir.path());
    let output = run_with_timeout(command, Duration::from_secs(10));
    assert_exit(&output, 3);
    assert!(!stderr(&output).is_empty());
}

#[test]
fn help_and_version_need_no_daemon() {
    for flag in ["--help", "--version"] {
        let mut command = client_command();
        command.arg(flag);
        let output = run_with_timeout(command, Duration::from_secs(10));
        assert_exit(&output, 0);
        assert!(!stdout(&output).is_empty(), "{flag} prints something");
    }
}
