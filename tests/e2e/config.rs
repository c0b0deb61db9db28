//! The config file, as the daemon reads it: every bad config stops the daemon with exit code 2
//! before it binds, and the message names the file, the server and the field; the good parts of
//! a config (`${VAR}` substitution, `description`, `tags`, `enabled: false`, `TOOL_CLI_CONFIG`)
//! reach `listServers` as written.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::methods::{ListServersResult, ServerState};
use tool_cli_tests::{
    Daemon, DaemonOptions, HttpPeer, daemon_command, everything_stdio, run_with_timeout, scratch,
};

/// Runs the daemon on `config_text` and asserts it refused to start: exit 2, no `export` lines,
/// no runtime file, and every one of `mentions` in its stderr.
fn assert_refused(config_path: &Path, mentions: &[&str]) {
    let dir = config_path.parent().expect("config dir");
    let runtime_dir = dir.join("runtime");
    let mut command = daemon_command(&runtime_dir);
    command.arg("--config").arg(config_path).arg("--print-env");
    let output = run_with_timeout(command, Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(2),
        "exit status; stderr:\n{stderr}"
    );
    assert!(!stdout.contains("export"), "no export lines: {stdout:?}");
    assert!(
        !runtime_dir.join("daemon.json").exists(),
        "no runtime file for a daemon that never bound"
    );
    for mention in mentions {
        assert!(
            stderr.contains(mention),
            "stderr names {mention:?}:\n{stderr}"
        );
    }
}

fn refused_config(text: &str, mentions: &[&str]) {
    let dir = scratch();
    let path = dir.path().join("servers.json");
    std::fs::write(&path, text).expect("write config");
    let path_text = path.to_string_lossy().into_owned();
    let mut all = vec![path_text.as_str()];
    all.extend_from_slice(mentions);
    assert_refused(&path, &all);
}

fn refused_json(config: Value, mentions: &[&str]) {
    refused_config(
        &serde_json::to_string_pretty(&config).expect("serialize"),
        mentions,
    );
}

#[test]
fn a_missing_file_is_refused() {
    let dir = scratch();
    let path = dir.path().join("does-not-exist.json");
    assert_refused(&path, &[path.to_string_lossy().as_ref()]);
}

#[test]
fn invalid_json_is_refused() {
    refused_config(r#"{"mcpServers": {"demo": {"command": "x",}}"#, &[]);
}

#[test]
fn the_sse_transport_is_refused() {
    refused_json(
        json!({"mcpServers": {"legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"}}}),
        &["legacy", "type"],
    );
}

#[test]
fn a_server_without_command_or_url_is_refused() {
    refused_json(
        json!({"mcpServers": {"empty": {"args": ["--stdio"]}}}),
        &["empty", "command"],
    );
}

#[test]
fn an_unset_variable_is_refused() {
    refused_json(
        json!({"mcpServers": {"keyed": {
            "command": "/bin/true",
            "env": {"API_KEY": "${UNSET_E2E_VARIABLE_OF_TOOL_CLI_TESTS}"}
        }}}),
        &["keyed", "API_KEY", "UNSET_E2E_VARIABLE_OF_TOOL_CLI_TESTS"],
    );
    refused_json(
        json!({"mcpServers": {"remote": {
            "url": "http://127.0.0.1:9/mcp",
            "headers": {"Authorization": "Bearer ${UNSET_E2E_VARIABLE_OF_TOOL_CLI_TESTS}"}
        }}}),
        &[
            "remote",
            "Authorization",
            "UNSET_E2E_VARIABLE_OF_TOOL_CLI_TESTS",
        ],
    );
}

#[test]
fn description_tags_and_disabled_servers_are_listed() {
    let daemon = Daemon::start_with_dir(|dir| {
        let mut demo = tool_cli_tests::demo_server(dir);
        demo["description"] = json!("Sample shop database");
        demo["tags"] = json!(["sql", "sample"]);
        json!({"mcpServers": {
            "demo": demo,
            "off": {"command": "/nonexistent/never-started", "enabled": false},
        }})
    });
    let servers: ListServersResult =
        serde_json::from_value(daemon.call("listServers", Value::Null)).expect("listServers");
    let demo = &servers.servers[0];
    assert_eq!(demo.name, "demo");
    assert_eq!(demo.description.as_deref(), Some("Sample shop database"));
    assert_eq!(demo.tags, ["sql", "sample"]);
    let off = &servers.servers[1];
    assert_eq!(off.name, "off");
    assert_eq!(off.state, ServerState::Disabled, "{off:?}");
    assert_eq!(off.tool_count, 0);
}

#[test]
fn variables_are_substituted_from_the_daemon_environment() {
    let peer = HttpPeer::everything();
    let mut stdio = everything_stdio();
    stdio["env"] = json!({"E2E_GREETING": "hello ${E2E_SUBSTITUTED_VALUE}, costs $$5"});
    let daemon = Daemon::start_with(
        json!({"mcpServers": {
            "local": stdio,
            "remote": {"url": "http://127.0.0.1:${E2E_PEER_PORT}/mcp"},
        }}),
        DaemonOptions {
            env: vec![
                ("E2E_SUBSTITUTED_VALUE".into(), "from the daemon".into()),
                ("E2E_PEER_PORT".into(), peer.port().to_string()),
            ],
            ..DaemonOptions::default()
        },
    );
    // server-everything's get-env returns its environment as JSON text.
    let env = daemon.call_tool("local", "get-env", json!({}));
    let text = tool_cli_tests::text_content(&env);
    assert!(
        text.contains("hello from the daemon, costs $5"),
        "env substituted: {text}"
    );
    let echoed = daemon.call_tool("remote", "echo", json!({"message": "via url"}));
    assert_eq!(tool_cli_tests::text_content(&echoed), "Echo: via url");
}

#[test]
fn the_config_path_can_come_from_tool_cli_config() {
    // No --config: TOOL_CLI_CONFIG names a broken file, and the daemon refusing it by name proves
    // the variable is read, without leaving a daemon running.
    let dir = scratch();
    let path = dir.path().join("from-env.json");
    std::fs::write(&path, "{ not json").expect("write config");
    let mut command = daemon_command(&dir.path().join("runtime"));
    command
        .env(tool_cli_protocol::env::CONFIG, &path)
        .arg("--print-env");
    let output = run_with_timeout(command, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr:\n{stderr}");
    assert!(stderr.contains(path.to_string_lossy().as_ref()), "{stderr}");
}
