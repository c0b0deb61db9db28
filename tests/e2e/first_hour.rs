//! What a newcomer runs in the first hour, as they would type it (issue 26).
//!
//! - a bare value where `key=value` belongs (`tool-cli demo sql_query 'SELECT 1'`) is refused
//!   with the parameter it is for, read from the tool's schema, and nothing is sent:
//!   `a_bare_value_is_refused_with_the_parameter_it_is_for`
//! - `tool-cli help [COMMAND]` prints the help (it was taken for a server named `help`):
//!   `help_prints_the_usage_and_needs_no_daemon`
//! - `config import --write` on the quick start's daemon (no config file) writes a new file that
//!   keeps the bundled demo server, and `tool-cli server reload` on that daemon adopts the new
//!   file (it failed with exit 5, and the written file had dropped `demo`):
//!   `an_import_on_the_quick_start_daemon_keeps_demo_and_reload_adopts_the_file`
//! - a second daemon that no client could find (another live daemon owns the runtime file) exits
//!   3 saying so, instead of running unreachable; with `--print-env` a harness may still run one:
//!   `a_second_daemon_no_client_could_find_is_refused`

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, DaemonOptions, client_command, daemon_command, fault_server, run_with_timeout, scratch,
};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_bare_value_is_refused_with_the_parameter_it_is_for() {
    let daemon = Daemon::start_demo();
    let output = daemon.run_client(&["demo", "sql_query", "SELECT name FROM customers"], &[]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("demo/sql_query takes it as sql: write sql='SELECT name FROM customers'"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "{output:?}");
    // Nothing reached the server: no call was counted.
    let health = daemon.call("health", json!({}));
    let calls: u64 = health["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .map(|server| server["calls"].as_u64().expect("calls"))
        .sum();
    assert_eq!(calls, 0, "{health}");

    // Written as the message says, the same line works.
    let output = daemon.run_client(&["demo", "sql_query", "sql=SELECT 1 AS one"], &[]);
    assert!(output.status.success(), "{output:?}");

    // An unknown tool is the first thing to fix, so its error wins.
    let output = daemon.run_client(&["demo", "no_such_tool", "SELECT 1"], &[]);
    assert_ne!(output.status.code(), Some(0), "{output:?}");
    assert!(text(&output.stderr).contains("has no tool"), "{output:?}");
}

#[test]
fn help_prints_the_usage_and_needs_no_daemon() {
    let mut command = client_command();
    command.arg("help");
    let output = run_with_timeout(command, Duration::from_secs(60));
    assert!(output.status.success(), "{output:?}");
    let stdout = text(&output.stdout);
    assert!(stdout.contains("Usage: tool-cli"), "{stdout}");
    assert!(stdout.contains("tool-cli help [COMMAND]"), "{stdout}");

    let mut command = client_command();
    command.args(["help", "agent"]);
    let output = run_with_timeout(command, Duration::from_secs(60));
    assert!(output.status.success(), "{output:?}");
    assert!(
        text(&output.stdout).contains("Usage: tool-cli agent"),
        "{output:?}"
    );
}

fn server_names(daemon: &Daemon) -> Vec<String> {
    let listed = daemon.call("listServers", Value::Null);
    listed["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .map(|server| server["name"].as_str().expect("name").to_owned())
        .collect()
}

#[test]
fn an_import_on_the_quick_start_daemon_keeps_demo_and_reload_adopts_the_file() {
    let dir = scratch();
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(home.join(".config/Claude")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        home.join(".config/Claude/claude_desktop_config.json"),
        json!({"mcpServers": {"faults": fault_server(&[])}}).to_string(),
    )
    .unwrap();
    // The quick start: no --config, no config file in the (fake) home.
    let daemon = Daemon::start_with(
        json!({}),
        DaemonOptions {
            no_config_flag: true,
            env: vec![("HOME".into(), home.display().to_string())],
            ..DaemonOptions::default()
        },
    );
    assert_eq!(server_names(&daemon), ["demo"]);

    let mut import = client_command();
    import
        .args(["config", "import", "--from", "claude-desktop", "--write"])
        .current_dir(&project)
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME");
    let output = run_with_timeout(import, Duration::from_secs(60));
    assert!(output.status.success(), "{output:?}");
    let report = text(&output.stdout);
    assert!(
        report.contains("with the bundled demo server too"),
        "{report}"
    );
    let written = home.join(".config/tool-cli/servers.json");
    let config: Value = serde_json::from_slice(&std::fs::read(&written).unwrap()).unwrap();
    assert!(
        config["mcpServers"]["demo"].is_object(),
        "demo kept: {config}"
    );
    assert!(config["mcpServers"]["faults"].is_object(), "{config}");

    // The advice the import gives works on this daemon.
    let reloaded = daemon.run_client(&["server", "reload"], &[]);
    assert!(reloaded.status.success(), "{reloaded:?}");
    let stdout = text(&reloaded.stdout);
    assert!(stdout.contains("added: faults"), "{stdout}");
    assert!(stdout.contains("it now runs"), "{stdout}");
    let mut names = server_names(&daemon);
    names.sort();
    assert_eq!(names, ["demo", "faults"]);
    let echoed = daemon.call_tool("faults", "echo", json!({"nonce": "imported"}));
    assert_eq!(echoed["structuredContent"]["nonce"], "imported", "{echoed}");
    let rows = daemon.call_tool("demo", "sql_query", json!({"sql": "SELECT 1 AS one"}));
    assert_ne!(rows["isError"], true, "{rows}");

    // From now on the daemon runs that file: a second reload reads it again.
    let again = daemon.run_client(&["server", "reload"], &[]);
    assert!(again.status.success(), "{again:?}");
    assert!(!text(&again.stdout).contains("it now runs"), "{again:?}");
}

#[test]
fn a_second_daemon_no_client_could_find_is_refused() {
    let first = Daemon::start(json!({"mcpServers": {}}));
    let owner = std::fs::read_to_string(first.runtime_dir.join("daemon.json"))
        .expect("the first daemon wrote the runtime file");

    let dir = scratch();
    std::fs::write(dir.path().join("servers.json"), r#"{"mcpServers": {}}"#).unwrap();
    let mut second = daemon_command(&first.runtime_dir);
    second
        .arg("--config")
        .arg(dir.path().join("servers.json"))
        .env("XDG_STATE_HOME", dir.path().join("state"));
    let output = run_with_timeout(second, Duration::from_secs(60));
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("another tool-cli-daemon (pid ")
            && stderr.contains("no client would find this one")
            && stderr.contains("tool-cli daemon stop"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(first.runtime_dir.join("daemon.json")).unwrap(),
        owner,
        "the first daemon keeps its runtime file"
    );
    let health = first.call("health", json!({}));
    assert!(
        health["servers"].is_array(),
        "the first keeps serving: {health}"
    );

    // A harness that reads the address from --print-env may run a second one beside it.
    let beside = Daemon::start_with(
        json!({"mcpServers": {}}),
        DaemonOptions {
            env: vec![(
                "TOOL_CLI_RUNTIME_DIR".into(),
                first.runtime_dir.display().to_string(),
            )],
            ..DaemonOptions::default()
        },
    );
    assert!(beside.call("listServers", Value::Null)["servers"].is_array());
}
