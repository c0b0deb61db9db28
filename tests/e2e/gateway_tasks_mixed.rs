//! MCP tasks across the protocol eras through the `/mcp` gateway: a host on a 2025-11-25
//! session calling, with `task`, the tools of a 2026-07-28 upstream
//! (`daemon/examples/stateless_server.rs`, rmcp's server side of the tasks extension). The
//! gateway runs such a call in the background and words it as a 2025 task. The host is raw
//! HTTP on a session here, so nothing hides what the gateway answers.
//!
//! Input → test:
//! - the session's `initialize` declares `tasks`; its `tools/list` marks the 2026 server's
//!   tools `execution.taskSupport: "optional"` while a stateless host's listing does not;
//!   `tools/call` with `task` answers `CreateTaskResult` (`{"task": {…}}`) at once; `tasks/get`
//!   reads it working then completed; `tasks/result` waits for the end and answers the tool's
//!   result with its related task; the server saw its own task complete; a second run is
//!   cancelled (`tasks/cancel` answers the cancelled task, the server's log shows its task
//!   cancelled, `tasks/result` says it has no result, a second cancel is refused); a failing
//!   run's `tasks/result` is the server's error; `tasks/list` lists the three; an unknown id,
//!   another session's and a stateless host's asking for a run are refused in the words an id
//!   never issued gets; a call without `task` is answered in one call:
//!   `a_2025_session_runs_a_2026_servers_task_through_the_gateway`
//! - the official TypeScript SDK client's experimental tasks API
//!   (`tests/fixtures/mcp_gateway_tasks_client.mjs`, which parses every answer with the SDK's
//!   schemas) runs `slow_sum` as a task: created, polled, its result read; a second one listed
//!   and cancelled; a finished one refuses cancellation; another session finds none; the
//!   owning session hears the run's end as `notifications/tasks/status` on its standalone
//!   stream, the other session nothing:
//!   `the_typescript_sdk_runs_a_2026_servers_task_on_a_2025_session`

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, eventually_some, example_bin, mcp_answer, repo_root, run_with_timeout,
};

/// Longest wait for a task to reach a status.
const WAIT: Duration = Duration::from_secs(60);

/// A daemon whose pool holds the 2026-only example server as `modern`, ready.
fn modern_daemon() -> Daemon {
    let server = example_bin("stateless_server");
    let daemon = Daemon::start(json!({"mcpServers": {"modern": {"command": server}}}));
    daemon.wait_servers_ready(&["modern"], WAIT);
    daemon
}

/// A 2025 session on `daemon`: requests by method and params, answered as JSON-RPC.
struct Session<'a> {
    daemon: &'a Daemon,
    id: String,
}

impl Session<'_> {
    fn request(&self, method: &str, params: Value) -> Value {
        let answer = self.daemon.post_mcp(
            &[
                ("Mcp-Session-Id", self.id.as_str()),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
            &json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}),
        );
        assert_eq!(
            answer.status,
            200,
            "{}",
            String::from_utf8_lossy(&answer.body)
        );
        mcp_answer(&answer.body)
    }

    /// `tools/call` of `tool` with `task`; the created task's id.
    fn start(&self, tool: &str, arguments: Value) -> String {
        let created = self.request(
            "tools/call",
            json!({"name": tool, "arguments": arguments, "task": {"ttl": 60000}}),
        );
        let task = &created["result"]["task"];
        assert_eq!(task["status"], "working", "{created:#}");
        assert!(task["createdAt"].is_string(), "{created:#}");
        assert!(task["lastUpdatedAt"].is_string(), "{created:#}");
        assert!(task.get("ttl").is_some(), "{created:#}");
        task["taskId"].as_str().expect("a task id").to_owned()
    }

    /// The 2026 server's own account of its tasks' statuses, by its task ids (a plain call).
    fn server_task_log(&self) -> Value {
        let logged = self.request(
            "tools/call",
            json!({"name": "modern__task_log", "arguments": {}}),
        );
        logged["result"]["structuredContent"]["tasks"].clone()
    }
}

/// The reason of a not-found error, with the id replaced (the same words for any id).
fn not_found_reason(answer: &Value, task_id: &str) -> String {
    assert_eq!(answer["error"]["code"], -32602, "{answer:#}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    message
        .split_once("no task")
        .map(|(_, reason)| reason.replace(task_id, "ID"))
        .unwrap_or_else(|| panic!("not a not-found error: {message}"))
}

/// One 2026-07-28 (stateless) request to `/mcp` with the tasks extension declared.
fn stateless(daemon: &Daemon, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026-host", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let answer = daemon.post_mcp(
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
        ],
        &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
    );
    mcp_answer(&answer.body)
}

/// The listed tool `name` of a `tools/list` answer.
fn listed<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|tool| tool["name"] == name))
        .unwrap_or_else(|| panic!("{name} not listed: {list:#}"))
}

#[test]
fn a_2025_session_runs_a_2026_servers_task_through_the_gateway() {
    let daemon = modern_daemon();
    let opened = daemon.post_mcp(
        &[],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"tasks": {}},
            "clientInfo": {"name": "raw-2025-host", "version": "1"}}}),
    );
    let initialized = mcp_answer(&opened.body);
    assert_eq!(
        initialized["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"],
        json!({}),
        "{initialized:#}"
    );
    let session = Session {
        daemon: &daemon,
        id: opened
            .header("mcp-session-id")
            .expect("a session id")
            .to_owned(),
    };

    // Listed as tools that may run as tasks, for the session only.
    let list = session.request("tools/list", json!({}));
    assert_eq!(
        listed(&list, "modern__slow_sum")["execution"]["taskSupport"],
        "optional",
        "{list:#}"
    );
    let stateless_list = stateless(&daemon, "tools/list", json!({}));
    assert!(
        listed(&stateless_list, "modern__slow_sum")
            .get("execution")
            .is_none(),
        "{stateless_list:#}"
    );

    // Success: the task at once, its status, then its result once the server's task ended.
    let summed = session.start("modern__slow_sum", json!({"a": 1, "b": 2, "ms": 300}));
    assert!(summed.starts_with("modern:run-"), "{summed}");
    let got = session.request("tasks/get", json!({"taskId": summed}));
    assert_eq!(got["result"]["taskId"], summed.as_str(), "{got:#}");
    assert!(
        matches!(
            got["result"]["status"].as_str(),
            Some("working" | "completed")
        ),
        "{got:#}"
    );
    let result = session.request("tasks/result", json!({"taskId": summed}));
    assert_eq!(
        result["result"]["structuredContent"]["sum"], 3.0,
        "{result:#}"
    );
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        summed.as_str(),
        "{result:#}"
    );
    let done = session.request("tasks/get", json!({"taskId": summed}));
    assert_eq!(done["result"]["status"], "completed", "{done:#}");
    assert!(done["result"].get("result").is_none(), "{done:#}");
    assert_eq!(session.server_task_log()["task-1"], "completed");

    // Cancel: the cancelled task answered, and the server's own task cancelled.
    let waiting = session.start("modern__wait_forever", json!({}));
    eventually_some(WAIT, || {
        (session.server_task_log()["task-2"] == "working").then_some(())
    })
    .expect("the server started the second task");
    let cancelled = session.request("tasks/cancel", json!({"taskId": waiting}));
    assert_eq!(
        cancelled["result"]["taskId"],
        waiting.as_str(),
        "{cancelled:#}"
    );
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled:#}");
    eventually_some(WAIT, || {
        (session.server_task_log()["task-2"] == "cancelled").then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "not cancelled at the server: {:#}",
            session.server_task_log()
        )
    });
    let no_result = session.request("tasks/result", json!({"taskId": waiting}));
    assert_eq!(no_result["error"]["code"], -32602, "{no_result:#}");
    assert!(
        no_result["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("was cancelled")),
        "{no_result:#}"
    );
    let again = session.request("tasks/cancel", json!({"taskId": waiting}));
    assert_eq!(again["error"]["code"], -32602, "{again:#}");

    // A failing run: its result is the server's error.
    let failing = session.start("modern__failing_task", json!({}));
    let failed = session.request("tasks/result", json!({"taskId": failing}));
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("the task failed on purpose"), "{failed:#}");
    let status = session.request("tasks/get", json!({"taskId": failing}));
    assert_eq!(status["result"]["status"], "failed", "{status:#}");

    // Listed for the session, oldest first, as 2025 tasks.
    let list = session.request("tasks/list", json!({}));
    let statuses: Vec<(&str, &str)> = list["result"]["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter_map(|task| Some((task["taskId"].as_str()?, task["status"].as_str()?)))
        .collect();
    assert_eq!(
        statuses,
        [
            (summed.as_str(), "completed"),
            (waiting.as_str(), "cancelled"),
            (failing.as_str(), "failed")
        ],
        "{list:#}"
    );
    assert!(
        list["result"]["tasks"][0].get("ttlMs").is_none(),
        "{list:#}"
    );

    // Unknown: an id never issued, and the runs asked for by another session of the same
    // token and by a stateless host, all in the same words.
    let unknown = session.request("tasks/get", json!({"taskId": "modern:run-999"}));
    let unknown = not_found_reason(&unknown, "modern:run-999");
    let other = Session {
        daemon: &daemon,
        id: daemon.open_mcp_session(),
    };
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let refused = other.request(method, json!({"taskId": summed}));
        assert_eq!(not_found_reason(&refused, &summed), unknown, "{method}");
    }
    let others = other.request("tasks/list", json!({}));
    assert_eq!(others["result"]["tasks"], json!([]), "{others:#}");
    let from_stateless = stateless(&daemon, "tasks/get", json!({"taskId": summed}));
    assert_eq!(
        not_found_reason(&from_stateless, &summed),
        unknown,
        "{from_stateless:#}"
    );

    // Without `task`: one call, answered with the tool's result.
    let plain = session.request(
        "tools/call",
        json!({"name": "modern__slow_sum", "arguments": {"a": 2, "b": 3, "ms": 20}}),
    );
    assert_eq!(
        plain["result"]["structuredContent"]["sum"], 5.0,
        "{plain:#}"
    );
}

#[test]
fn the_typescript_sdk_runs_a_2026_servers_task_on_a_2025_session() {
    let daemon = modern_daemon();
    let mut command = std::process::Command::new(tool_cli_tests::which("node"));
    command
        .arg(repo_root().join("tests/fixtures/mcp_gateway_tasks_client.mjs"))
        .args(["--url", &format!("http://127.0.0.1:{}/mcp", daemon.port)])
        .args(["--token", &daemon.token])
        .args(["--tool", "modern__slow_sum"])
        // Long enough that the second run still works when it is cancelled.
        .args(["--arguments", r#"{"a":1,"b":2,"ms":3000}"#])
        .current_dir(repo_root());
    let output = run_with_timeout(command, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the TypeScript SDK tasks driver failed: {}\nstdout: {stdout}\nstderr: {}\ndaemon:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
        daemon.stderr()
    );
    let report: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|error| panic!("{error}: {stdout}"));
    assert_eq!(
        report["capabilities"]["tasks"]["requests"]["tools"]["call"],
        json!({}),
        "{report:#}"
    );
    assert_eq!(
        report["listedExecution"],
        json!({"taskSupport": "optional"})
    );
    let stream = report["stream"].as_array().expect("the stream's messages");
    let types: Vec<&str> = stream
        .iter()
        .map(|message| message["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(types.first(), Some(&"taskCreated"), "{report:#}");
    assert_eq!(types.last(), Some(&"result"), "{report:#}");
    let task_id = report["taskId"].as_str().expect("a task id");
    assert!(task_id.starts_with("modern:run-"), "{task_id}");
    let result = &stream.last().unwrap()["result"];
    assert_eq!(result["structuredContent"]["sum"], 3.0, "{report:#}");

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
    assert_eq!(
        report["cancelFinished"]["error"]["code"], -32602,
        "{report:#}"
    );
    for step in ["otherGet", "otherResult", "otherCancel"] {
        assert_eq!(report[step]["error"]["code"], -32602, "{step}: {report:#}");
    }
    assert_eq!(
        report["otherListed"]["answer"]["tasks"],
        json!([]),
        "{report:#}"
    );
    assert_eq!(report["heardCompleted"], true, "{report:#}");
    let notices = report["statusNotices"].as_array().expect("notices");
    assert!(
        notices
            .iter()
            .any(|notice| notice["taskId"] == task_id && notice["status"] == "completed"),
        "{notices:#?}"
    );
    assert_eq!(report["otherStatusNotices"], json!([]), "{report:#}");
}
