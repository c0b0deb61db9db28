//! MCP tasks through the `/mcp` gateway, driven by the official TypeScript SDK client's
//! experimental tasks API (`tests/fixtures/mcp_gateway_tasks_client.mjs`; the installed Python
//! SDK, 2.x, has no 2025-11-25 tasks client) against server-everything's task-only
//! `simulate-research-query`:
//!
//! - the gateway advertises `tasks` and lists the tool's `execution.taskSupport` unchanged; the
//!   SDK's `callToolStream` creates the task, polls `tasks/get` and reads `tasks/result`
//!   through it; a second task is listed and cancelled, a finished one refuses cancellation;
//! - another session of the same token finds none of the first session's tasks, and an unknown
//!   id is not found, in the same words; the server's `notifications/tasks/status` reach the
//!   owning session's standalone stream only: `a_host_runs_tasks_through_the_gateway_with_the_typescript_sdk`
//! - a `task` that is not an object is a JSON-RPC error saying what would be right:
//!   `a_malformed_task_member_is_refused_with_what_would_be_right`
//! - a daemon pooling this gateway over HTTP (plain JSON answers) keeps the tool's `execution`
//!   in its own listing and runs the task-only tool as a task:
//!   `a_plain_json_listing_keeps_a_tools_execution_through_a_daemon_behind_a_gateway`

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{Daemon, everything_stdio, repo_root, run_with_timeout};

/// How long the SDK scenario may take (two tasks of four one-second stages each, at most).
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(120);

fn everything_daemon() -> Daemon {
    Daemon::start(json!({"mcpServers": {"everything": everything_stdio()}}))
}

fn typescript_tasks_client(daemon: &Daemon) -> Value {
    let mut command = Command::new(tool_cli_tests::which("node"));
    command
        .arg(repo_root().join("tests/fixtures/mcp_gateway_tasks_client.mjs"))
        .args(["--url", &format!("http://127.0.0.1:{}/mcp", daemon.port)])
        .args(["--token", &daemon.token])
        .args(["--tool", "everything__simulate-research-query"])
        .args(["--arguments", r#"{"topic":"gateways"}"#])
        .current_dir(repo_root());
    let output = run_with_timeout(command, SCENARIO_TIMEOUT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the TypeScript SDK tasks driver failed: {}\nstdout: {stdout}\nstderr: {}\ndaemon:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
        daemon.stderr()
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}

#[test]
fn a_host_runs_tasks_through_the_gateway_with_the_typescript_sdk() {
    let daemon = everything_daemon();
    let report = typescript_tasks_client(&daemon);

    assert_eq!(
        report["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        "{report:#}"
    );
    assert_eq!(
        report["listedExecution"],
        json!({"taskSupport": "required"})
    );

    // The SDK's flow: created, polled at least once, then the tool's own result.
    let stream = report["stream"].as_array().expect("the stream's messages");
    let types: Vec<&str> = stream
        .iter()
        .map(|message| message["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(types.first(), Some(&"taskCreated"), "{report:#}");
    assert!(types.contains(&"taskStatus"), "{report:#}");
    assert_eq!(types.last(), Some(&"result"), "{report:#}");
    let task_id = report["taskId"].as_str().expect("a task id");
    assert!(task_id.starts_with("everything:"), "{task_id}");
    let polled = stream
        .iter()
        .filter(|message| message["type"] == "taskStatus")
        .all(|message| message["task"]["taskId"] == task_id);
    assert!(polled, "every status names the host's task id: {report:#}");
    let result = &stream.last().unwrap()["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Research Report: gateways"), "{result:#}");

    // Both tasks listed for this session; the working one cancelled; the finished one not.
    let second = report["secondTaskId"].as_str().expect("a second task");
    let listed: Vec<&str> = report["listed"]["answer"]["tasks"]
        .as_array()
        .expect("listed")
        .iter()
        .filter_map(|task| task["taskId"].as_str())
        .collect();
    assert_eq!(listed, vec![task_id, second], "{report:#}");
    assert_eq!(
        report["cancelSecond"]["answer"]["status"], "cancelled",
        "{report:#}"
    );
    let refused = &report["cancelFinished"]["error"];
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|message| message.contains("terminal")),
        "{report:#}"
    );

    // Another session: not found, in the words an unknown id gets (after the method's name).
    let reason = |message: &str| -> String {
        message
            .split_once("no task")
            .map(|(_, reason)| reason.to_owned())
            .unwrap_or_else(|| panic!("not a not-found error: {message}"))
    };
    let unknown = reason(
        report["unknown"]["error"]["message"]
            .as_str()
            .expect("an unknown id is refused"),
    )
    .replace("everything:no-such-task", "ID");
    for step in ["otherGet", "otherResult"] {
        let error = &report[step]["error"];
        assert_eq!(error["code"], -32602, "{step}: {report:#}");
        let message = error["message"].as_str().unwrap_or_default();
        assert_eq!(reason(message).replace(task_id, "ID"), unknown, "{step}");
    }
    assert_eq!(report["otherCancel"]["error"]["code"], -32602, "{report:#}");
    assert_eq!(
        report["otherListed"]["answer"]["tasks"],
        json!([]),
        "{report:#}"
    );

    // The server's status notifications reached the session that owns the task, by its id,
    // on its standalone stream, and the other session none of them.
    assert_eq!(report["heardCompleted"], true, "{report:#}");
    let notices = report["statusNotices"].as_array().expect("notices");
    let completed = notices
        .iter()
        .any(|notice| notice["taskId"] == task_id && notice["status"] == "completed");
    assert!(completed, "{notices:#?}");
    assert!(
        notices
            .iter()
            .all(|notice| notice["taskId"] == task_id || notice["taskId"] == second),
        "{notices:#?}"
    );
    assert_eq!(report["otherStatusNotices"], json!([]), "{report:#}");
}

#[test]
fn a_malformed_task_member_is_refused_with_what_would_be_right() {
    let daemon = everything_daemon();
    let session = daemon.open_mcp_session();
    let answer = daemon.post_mcp(
        &[("Mcp-Session-Id", session.as_str())],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "everything__simulate-research-query",
            "arguments": {"topic": "x"}, "task": 60000}}),
    );
    let body = tool_cli_tests::mcp_answer(&answer.body);
    assert_eq!(body["error"]["code"], -32602, "{body:#}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("\"task\" is") && message.contains("{\"ttl\": 60000}"),
        "{message}"
    );
}

/// A daemon pooled behind another daemon's gateway: the gateway answers `tools/list` as one plain
/// JSON body (no SSE), which the pool used to read only through rmcp's types, dropping a tool's
/// `execution` (rmcp 3.9's `Tool` has none), so a task-only tool read as taking no tasks and was
/// called plainly (the upstream then refused it). Failed before: `execution` missing.
#[test]
fn a_plain_json_listing_keeps_a_tools_execution_through_a_daemon_behind_a_gateway() {
    let upstream = everything_daemon();
    let daemon = Daemon::start(json!({"mcpServers": {
        "gateway": {
            "url": format!("http://127.0.0.1:{}/mcp", upstream.port),
            "headers": {"Authorization": format!("Bearer {}", upstream.token)},
        },
    }}));
    // The outer daemon's own gateway lists the tool as its pool read it.
    let session = daemon.open_mcp_session();
    let answer = daemon.post_mcp(
        &[("Mcp-Session-Id", session.as_str())],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
    );
    let listed = tool_cli_tests::mcp_answer(&answer.body);
    let research = listed["result"]["tools"]
        .as_array()
        .and_then(|tools| {
            tools
                .iter()
                .find(|tool| tool["name"] == "gateway__everything__simulate-research-query")
        })
        .unwrap_or_else(|| panic!("the task-only tool is not listed: {listed:#}"));
    assert_eq!(
        research["execution"]["taskSupport"], "required",
        "{research:#}"
    );
    // Read as task-only, the tool is run as a task at the upstream gateway (it was called
    // plainly before, and refused there).
    let called = daemon.call_tool(
        "gateway",
        "everything__simulate-research-query",
        json!({"topic": "gateways"}),
    );
    assert!(
        called["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("Research Report: gateways")),
        "{called:#}"
    );
    assert!(
        called["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
            .as_str()
            .is_some_and(|id| id.starts_with("gateway:")),
        "{called:#}"
    );
}
