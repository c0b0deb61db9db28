//! The bundled toolkit end to end: every demo-server tool through the real daemon over JSON-RPC
//! (`callTool`) and through the real `tool-cli` binary, with the demo server started by the daemon
//! as in the default config. The sandbox's runs are pointed at a directory of the test's own
//! (`TMPDIR` in the server's `env`), so "no process left behind" is checked by looking for any
//! process working in it or naming it on its command line.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use tool_cli_protocol::methods::name;
use tool_cli_tests::output::stdout;
use tool_cli_tests::{Daemon, daemon_bin, free_port, text_content};

/// All tools the demo server offers, in listing order.
const TOOLS: [&str; 8] = [
    "describe_schema",
    "list_resources",
    "open_resource",
    "read_resource",
    "release_resource",
    "rest_exchange_rate",
    "run_python",
    "sql_query",
];

/// The demo server as the daemon runs it, with its runs' directories under `dir/runs` and
/// `extra` merged into its config entry.
fn demo_entry(dir: &Path, extra: Value) -> Value {
    let runs = dir.join("runs");
    std::fs::create_dir_all(&runs).expect("create the runs directory");
    let mut entry = json!({
        "command": daemon_bin(),
        "args": ["demo-server", "--db", dir.join("demo.sqlite")],
        "env": {"TMPDIR": runs},
    });
    if let (Some(entry), Value::Object(extra)) = (entry.as_object_mut(), extra) {
        entry.extend(extra);
    }
    entry
}

fn start(extra: Value) -> Daemon {
    Daemon::start_with_dir(|dir| json!({"mcpServers": {"demo": demo_entry(dir, extra)}}))
}

/// Processes of a run in the daemon's runs directory: the sandbox's intermediate works there,
/// and the interpreter (whose own root is a tmpfs in its mount namespace) names its run
/// directory on its command line.
fn processes_in_runs(daemon: &Daemon) -> Vec<String> {
    let runs: PathBuf = daemon.dir().join("runs");
    let runs_name = runs.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .expect("read /proc")
        .flatten()
        .filter_map(|entry| {
            let cwd = std::fs::read_link(entry.path().join("cwd")).unwrap_or_default();
            let command_line = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            (cwd.starts_with(&runs) || String::from_utf8_lossy(&command_line).contains(&runs_name))
                .then(|| {
                    format!(
                        "{} in {}",
                        entry.file_name().to_string_lossy(),
                        cwd.display()
                    )
                })
        })
        .collect()
}

/// Runs `tool-cli demo TOOL ARGUMENTS` and checks the exit code.
fn cli(daemon: &Daemon, tool: &str, arguments: Value, exit_code: i32) -> Output {
    let output = daemon.run_client(&["demo", tool, &arguments.to_string()], &[]);
    assert_eq!(
        output.status.code(),
        Some(exit_code),
        "tool-cli demo {tool} {arguments}\nstdout:\n{}\nstderr:\n{}",
        stdout(&output),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A `callTool` that must answer with a tool error; its text.
fn tool_error(daemon: &Daemon, tool: &str, arguments: Value) -> String {
    let result = daemon.call_tool("demo", tool, arguments);
    assert_eq!(result["isError"], true, "{result:#}");
    text_content(&result)
}

#[test]
fn toolkit_tools_are_listed_over_rpc_and_by_the_cli() {
    let daemon = start(json!({}));
    let listed = daemon.call(name::LIST_TOOLS, json!({"server": "demo"}));
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(names, TOOLS);
    let output = daemon.run_client(&["demo"], &[]);
    assert_eq!(output.status.code(), Some(0));
    for tool in TOOLS {
        assert!(
            stdout(&output).contains(tool),
            "{tool}:\n{}",
            stdout(&output)
        );
    }
    let described = daemon.call(
        name::DESCRIBE_TOOL,
        json!({"server": "demo", "tool": "run_python"}),
    );
    assert_eq!(described["annotations"]["readOnlyHint"], false);
    assert_eq!(
        described["_meta"]["tool-cli/tags"],
        json!(["code-execution", "sandboxed"])
    );
}

#[test]
fn toolkit_exchange_rate_over_rpc_and_cli() {
    let daemon = start(json!({}));
    let result = daemon.call_tool(
        "demo",
        "rest_exchange_rate",
        json!({"base": "USD", "quote": "EUR", "amount": 619.88}),
    );
    let rate = &result["structuredContent"];
    assert_eq!(
        (rate["rate"].as_f64(), rate["converted"].as_f64()),
        (Some(0.925926), Some(573.963009)),
        "{result:#}"
    );
    let output = cli(
        &daemon,
        "rest_exchange_rate",
        json!({"base": "EUR", "quote": "USD"}),
        0,
    );
    let printed: Value = serde_json::from_str(&stdout(&output)).expect("JSON on stdout");
    assert_eq!(printed["rate"], 1.08);
    assert_eq!(printed["date"], "2025-06-30");

    let message = tool_error(
        &daemon,
        "rest_exchange_rate",
        json!({"base": "USD", "quote": "XYZ"}),
    );
    assert!(message.contains("no rate from USD to XYZ"), "{message}");
    let output = cli(
        &daemon,
        "rest_exchange_rate",
        json!({"base": "USD", "quote": "XYZ"}),
        6,
    );
    let both = format!(
        "{}{}",
        stdout(&output),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(both.contains("no rate from USD to XYZ"), "{both}");
}

#[test]
fn toolkit_rates_url_from_the_config_reaches_the_service_it_names() {
    // The config's `env` route: a service that is not there is a clear tool error.
    let port = free_port();
    let daemon = start(json!({"env": {"DEMO_RATES_URL": format!("http://127.0.0.1:{port}/v1")}}));
    let message = tool_error(
        &daemon,
        "rest_exchange_rate",
        json!({"base": "USD", "quote": "EUR"}),
    );
    assert!(
        message.starts_with(&format!(
            "cannot reach the rates service at http://127.0.0.1:{port}/v1"
        )),
        "{message}"
    );
    // The other tools are unaffected.
    let result = daemon.call_tool("demo", "sql_query", json!({"sql": "SELECT 1 AS one"}));
    assert_eq!(result["isError"], false);
}

#[test]
fn toolkit_run_python_over_rpc_and_cli() {
    let daemon = start(json!({}));
    let result = daemon.call_tool(
        "demo",
        "run_python",
        json!({"code": "import json\nprint(sum(json.loads(STDIN)))", "stdin": "[339.89, 280.0]"}),
    );
    assert_eq!(
        result["structuredContent"]["stdout"], "619.89\n",
        "{result:#}"
    );
    assert_eq!(result["structuredContent"]["exitCode"], 0);

    let output = cli(&daemon, "run_python", json!({"code": "print(6 * 7)"}), 0);
    let printed: Value = serde_json::from_str(&stdout(&output)).expect("JSON on stdout");
    assert_eq!(printed["stdout"], "42\n");

    // The bad inputs, through the daemon: each a bounded, clear answer.
    let looped = daemon.call_tool(
        "demo",
        "run_python",
        json!({"code": "while True: pass", "timeoutMs": 1000}),
    );
    assert_eq!(looped["structuredContent"]["timedOut"], true, "{looped:#}");
    let big = daemon.call_tool(
        "demo",
        "run_python",
        json!({"code": "x = ' ' * (10 * 1024 ** 3)"}),
    );
    assert!(
        big["structuredContent"]["stderr"]
            .as_str()
            .unwrap()
            .contains("MemoryError"),
        "{big:#}"
    );
    let loud = daemon.call_tool(
        "demo",
        "run_python",
        json!({"code": "print('x' * 100_000_000)"}),
    );
    assert_eq!(loud["structuredContent"]["stdoutTruncated"], true);
    for code in [
        "import os\nwhile True:\n    os.fork()",
        "open('big', 'w').write('x' * 2 ** 30)",
        "print(open('/etc/passwd').read())",
        "import socket\nsocket.socket()",
        "__builtins__['__import__']('os')",
        "import importlib\nimportlib.import_module('os')",
    ] {
        let message = tool_error(&daemon, "run_python", json!({ "code": code }));
        assert!(
            message.starts_with("the code was refused before running"),
            "{code}: {message}"
        );
    }
    let output = cli(
        &daemon,
        "run_python",
        json!({"code": "import subprocess"}),
        6,
    );
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("import of 'subprocess' is not allowed")
            || stdout(&output).contains("import of 'subprocess' is not allowed")
    );
    assert_eq!(processes_in_runs(&daemon), Vec::<String>::new());
    let runs = std::fs::read_dir(daemon.dir().join("runs"))
        .expect("runs")
        .count();
    assert_eq!(runs, 0, "every run directory is removed");
}

/// Issue 22: the escape chain that read the daemon's runtime file (the owner token) through a
/// demo-scoped call, against the real daemon and its real runtime file: refused before it runs,
/// and nothing of the token in the answer. (Past the guard the kernel stops it: the demo
/// server's `escape_chain_is_contained_by_the_kernel_once_past_the_guard`.)
#[test]
fn toolkit_run_python_escape_chain_does_not_reach_the_daemon() {
    let daemon = start(json!({}));
    let described = daemon.call(
        name::DESCRIBE_TOOL,
        json!({"server": "demo", "tool": "run_python"}),
    );
    assert_eq!(
        described["_meta"]["tool-cli/sandbox"]["health"], "complete",
        "CI grants every layer (root, user namespaces, seccomp, Landlock, cgroup v1): {described:#}"
    );
    let target = json!({"runtime_file": daemon.runtime_file(), "daemon_pid": daemon.pid()});
    let result = daemon.call_tool(
        "demo",
        "run_python",
        json!({"code": include_str!("../../demo-server/src/sandbox/escape_chain.py"),
               "stdin": target.to_string()}),
    );
    assert_eq!(result["isError"], true, "{result:#}");
    assert!(
        text_content(&result).starts_with("the code was refused before running"),
        "{result:#}"
    );
    assert!(!result.to_string().contains(&daemon.token));
    assert_eq!(processes_in_runs(&daemon), Vec::<String>::new());
}

#[test]
fn toolkit_policy_can_deny_run_python() {
    let daemon = start(json!({"denyTools": ["run_python"]}));
    let listed = daemon.call(name::LIST_TOOLS, json!({"server": "demo"}));
    assert!(!listed.to_string().contains("run_python"), "{listed:#}");
    let error = daemon.call_err(
        name::CALL_TOOL,
        json!({"server": "demo", "tool": "run_python", "arguments": {"code": "print(1)"}}),
    );
    assert!(error.message.contains("run_python"), "{error:?}");
}

#[test]
fn toolkit_resource_handles_over_rpc_and_cli() {
    let daemon = start(json!({}));
    let listed = daemon.call_tool("demo", "list_resources", json!({}));
    assert!(listed.to_string().contains("demo://docs/returns-policy"));

    let opened = daemon.call_tool(
        "demo",
        "open_resource",
        json!({"uri": "demo://docs/returns-policy"}),
    );
    let handle = opened["structuredContent"]["handle"]
        .as_str()
        .expect("handle")
        .to_owned();
    let size = opened["structuredContent"]["size"].as_u64().expect("size");
    let first = daemon.call_tool(
        "demo",
        "read_resource",
        json!({"handle": handle, "length": 100}),
    );
    assert_eq!(first["structuredContent"]["offset"], 0);
    assert_eq!(first["structuredContent"]["nextOffset"], 100);
    // The daemon holds one MCP session with the demo server, so a handle from one call is
    // usable by the next, even from another client process.
    let output = cli(
        &daemon,
        "read_resource",
        json!({"handle": handle, "offset": 100, "length": 65536}),
        0,
    );
    let rest: Value = serde_json::from_str(&stdout(&output)).expect("JSON on stdout");
    assert_eq!(rest["eof"], true);
    assert_eq!(
        first["structuredContent"]["length"].as_u64().unwrap() + rest["length"].as_u64().unwrap(),
        size
    );
    assert!(rest["data"].as_str().unwrap().contains("Return window"));

    cli(&daemon, "release_resource", json!({ "handle": handle }), 0);
    let message = tool_error(&daemon, "read_resource", json!({ "handle": handle }));
    assert!(message.contains("already released"), "{message}");
    cli(&daemon, "read_resource", json!({ "handle": handle }), 6);
}

#[test]
fn toolkit_a_cancelled_run_is_killed_with_its_group() {
    let daemon = start(json!({}));
    // The daemon gives up after 1 s and sends notifications/cancelled; the snippet's own limit
    // is 10 s, so its processes vanishing well before that shows the cancellation stopped them.
    let started = std::time::Instant::now();
    let error = daemon.call_err(
        name::CALL_TOOL,
        json!({"server": "demo", "tool": "run_python", "timeoutMs": 1000,
               "arguments": {"code": "while True: pass", "timeoutMs": 10000}}),
    );
    assert!(
        error
            .message
            .contains("did not answer within 1000 ms; the call was cancelled"),
        "{error:?}"
    );
    let gone = tool_cli_tests::eventually(std::time::Duration::from_secs(6), || {
        processes_in_runs(&daemon).is_empty()
            && std::fs::read_dir(daemon.dir().join("runs")).map_or(0, |runs| runs.count()) == 0
    });
    assert!(
        gone,
        "the run was still there {:?} after the call: {:?}",
        started.elapsed(),
        processes_in_runs(&daemon)
    );
    // The server still runs snippets afterwards.
    let result = daemon.call_tool("demo", "run_python", json!({"code": "print(2 + 2)"}));
    assert_eq!(result["structuredContent"]["stdout"], "4\n");
}
