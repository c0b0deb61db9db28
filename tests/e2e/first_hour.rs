//! What a newcomer runs in the first hour, as they would type it (issue 26).
//!
//! - a bare value where `key=value` belongs (`tool-cli demo sql_query 'SELECT 1'`) is refused
//!   with the parameter it is for, read from the tool's schema, and nothing is sent:
//!   `a_bare_value_is_refused_with_the_parameter_it_is_for`
//! - `tool-cli help [COMMAND]` prints the help (it was taken for a server named `help`):
//!   `help_prints_the_usage_and_needs_no_daemon`

use tool_cli_tests::{Daemon, client_command, run_with_timeout};

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
    let health = daemon.call("health", serde_json::json!({}));
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
    let output = run_with_timeout(command, std::time::Duration::from_secs(60));
    assert!(output.status.success(), "{output:?}");
    let stdout = text(&output.stdout);
    assert!(stdout.contains("Usage: tool-cli"), "{stdout}");
    assert!(stdout.contains("tool-cli help [COMMAND]"), "{stdout}");

    let mut command = client_command();
    command.args(["help", "agent"]);
    let output = run_with_timeout(command, std::time::Duration::from_secs(60));
    assert!(output.status.success(), "{output:?}");
    assert!(
        text(&output.stdout).contains("Usage: tool-cli agent"),
        "{output:?}"
    );
}
