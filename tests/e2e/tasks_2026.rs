//! MCP tasks in the 2026-07-28 era: the `io.modelcontextprotocol/tasks` extension, against
//! the 2026-only test server (`daemon/examples/stateless_server.rs`, rmcp's server side of the
//! extension). The pool declares the extension in each request's client capabilities (the
//! server refuses its task tools with `-32021` otherwise), recognises a `resultType: "task"`
//! answer to `tools/call` and follows it with `tasks/get` until the task ends.
//!
//! Input → test:
//! - a task tool from the CLI prints the tool's result, with one trace line naming the task,
//!   and the server saw the task complete:
//!   `a_2026_task_runs_from_the_cli_and_prints_its_result`
//! - a deadline passing while the task works: one timeout answer and trace line, the task
//!   cancelled at the
//!   server: `a_deadline_passing_mid_task_cancels_it_at_the_server`
//! - Ctrl-C of the CLI while the task works cancels it at the server, and the call's one
//!   trace line (abandoned) names the task:
//!   `ctrl_c_of_the_cli_mid_task_cancels_the_2026_task_at_the_server`
//! - a task that fails: the call's error is the task's:
//!   `a_failed_task_answers_its_error`
//! - a task id the server then does not know: one clear error naming it, and the daemon
//!   keeps serving: `a_task_id_the_server_does_not_know_is_one_clear_error`

use std::os::unix::process::ExitStatusExt as _;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::code;
use tool_cli_protocol::methods::name;
use tool_cli_tests::{Daemon, eventually_some, example_bin};

/// Longest wait for any one event.
const WAIT: Duration = Duration::from_secs(30);

/// A daemon with the 2026-only server as `modern`, tracing to a file in its dir, once ready.
fn modern_daemon() -> Daemon {
    let daemon = Daemon::start_with_dir(|dir| {
        json!({
            "mcpServers": {"modern": {"command": example_bin("stateless_server")}},
            "traces": {"path": dir.join("traces.jsonl")},
        })
    });
    daemon.wait_servers_ready(&["modern"], WAIT);
    daemon
}

/// The trace file's lines once the writer says it wrote `count`.
fn trace_lines(daemon: &Daemon, count: u64) -> Vec<Value> {
    eventually_some(WAIT, || {
        let health = daemon.call(name::HEALTH, Value::Null);
        (health["traces"]["written"] == count).then_some(())
    })
    .expect("never happened: the trace writer wrote the lines");
    std::fs::read_to_string(daemon.dir().join("traces.jsonl"))
        .expect("read the trace file")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

/// The server's own account of its tasks' statuses, by task id.
fn server_task_log(daemon: &Daemon) -> Value {
    let logged = daemon.call(
        name::CALL_TOOL,
        json!({"server": "modern", "tool": "task_log", "arguments": {}}),
    );
    logged["structuredContent"]["tasks"].clone()
}

/// Waits until the server says task `task_id` is `status`.
fn wait_for_server_status(daemon: &Daemon, task_id: &str, status: &str) {
    eventually_some(WAIT, || {
        (server_task_log(daemon)[task_id] == status).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "task {task_id} never {status} at the server: {:#}",
            server_task_log(daemon)
        )
    });
}

#[test]
fn a_2026_task_runs_from_the_cli_and_prints_its_result() {
    let daemon = modern_daemon();
    let output = daemon.run_client(&["modern", "slow_sum", r#"{"a":2,"b":40,"ms":300}"#], &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "exit {:?}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("42"), "{stdout}");
    // One call, one line, naming the task it ran as.
    let lines = trace_lines(&daemon, 1);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["tool"], "slow_sum");
    assert_eq!(lines[0]["success"], true, "{lines:#?}");
    assert_eq!(lines[0]["taskId"], "modern:task-1", "{lines:#?}");
    // It ran as a task (the server refuses the tool without the extension declared).
    assert_eq!(server_task_log(&daemon), json!({"task-1": "completed"}));
    // And through JSON-RPC the result is the tool's, structured content included.
    let result = daemon.call(
        name::CALL_TOOL,
        json!({"server": "modern", "tool": "slow_sum", "arguments": {"a": 1, "b": 2, "ms": 50}}),
    );
    assert_eq!(
        result["structuredContent"],
        json!({"sum": 3.0}),
        "{result:#}"
    );
    assert!(
        result
            .get("resultType")
            .is_none_or(|kind| kind == "complete"),
        "{result:#}"
    );
}

#[test]
fn a_deadline_passing_mid_task_cancels_it_at_the_server() {
    let daemon = modern_daemon();
    let error = daemon.call_err(
        name::CALL_TOOL,
        json!({"server": "modern", "tool": "wait_forever", "arguments": {}, "timeoutMs": 1000}),
    );
    assert_eq!(error.code, code::TIMEOUT, "{error:?}");
    let lines = trace_lines(&daemon, 1);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["error"]["kind"], "timeout", "{lines:#?}");
    assert_eq!(lines[0]["taskId"], "modern:task-1", "{lines:#?}");
    wait_for_server_status(&daemon, "task-1", "cancelled");
}

#[test]
fn ctrl_c_of_the_cli_mid_task_cancels_the_2026_task_at_the_server() {
    let daemon = modern_daemon();
    let mut command = daemon.client_command();
    command
        .args(["modern", "wait_forever", "{}"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut client = command.spawn().expect("spawn tool-cli");
    wait_for_server_status(&daemon, "task-1", "working");
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our unreaped child.
    let rc = unsafe { libc::kill(client.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0);
    let status = eventually_some(WAIT, || client.try_wait().expect("try_wait"))
        .expect("tool-cli exited after SIGINT");
    assert!(
        status.signal() == Some(libc::SIGINT) || status.code() == Some(130),
        "interrupted, not finished: {status:?}"
    );
    wait_for_server_status(&daemon, "task-1", "cancelled");
    // The abandoned call's line names the task the server ran it as (the pool's note, not
    // only a task the caller created).
    let abandoned = eventually_some(WAIT, || {
        let traces = std::fs::read_to_string(daemon.dir().join("traces.jsonl")).ok()?;
        traces
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("a JSON line"))
            .find(|line| line["tool"] == "wait_forever")
    })
    .expect("the interrupted call was traced");
    assert_eq!(abandoned["error"]["kind"], "cancelled", "{abandoned:#}");
    assert_eq!(abandoned["taskId"], "modern:task-1", "{abandoned:#}");
}

#[test]
fn a_task_id_the_server_does_not_know_is_one_clear_error() {
    let daemon = modern_daemon();
    let error = daemon.call_err(
        name::CALL_TOOL,
        json!({"server": "modern", "tool": "lost_task", "arguments": {}}),
    );
    assert_eq!(error.code, code::UPSTREAM_ERROR, "{error:?}");
    assert!(
        error.message.contains("task \"forgotten\"")
            && error.message.contains("refused tasks/get")
            && error.message.contains("unknown task id"),
        "{error:?}"
    );
    // The daemon keeps serving the server.
    let echoed = daemon.call(
        name::CALL_TOOL,
        json!({"server": "modern", "tool": "echo", "arguments": {"text": "still here"}}),
    );
    assert_eq!(echoed["content"][0]["text"], "still here");
}

#[test]
fn a_failed_task_answers_its_error() {
    let daemon = modern_daemon();
    let error = daemon.call_err(
        name::CALL_TOOL,
        json!({"server": "modern", "tool": "failing_task", "arguments": {}}),
    );
    assert_eq!(error.code, code::UPSTREAM_ERROR, "{error:?}");
    assert!(
        error.message.contains("the task failed on purpose"),
        "{error:?}"
    );
    assert_eq!(server_task_log(&daemon), json!({"task-1": "failed"}));
}
