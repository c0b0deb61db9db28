//! MCP tasks (protocol 2025-11-25) against server-everything, whose `simulate-research-query`
//! runs only as a task (`execution.taskSupport: "required"`, four stages of a second each):
//!
//! - from the CLI it just works: the daemon creates the task, waits for `tasks/result` and
//!   prints the final result, with one trace line naming the task;
//! - a caller may follow a task itself (`callTool` with `task`, then `getTask`,
//!   `getTaskResult`, `listTasks`, `cancelTask`), and no other token or session finds it;
//! - a deadline that expires while the task runs cancels it at the server (one answer, one
//!   trace line), as does Ctrl-C of the CLI, and a server dying mid-task is one clear error;
//! - a caller following progress sees the task's status as it changes; a task that asks a
//!   question mid-way (elicitation through `tasks/result`) is declined with a reason and finishes;
//! - the same over Streamable HTTP (server-everything in `streamableHttp` mode).

use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::code;
use tool_cli_protocol::methods::name;
use tool_cli_tests::{Daemon, HttpPeer, eventually_some, everything_stdio};

/// Longest wait for any one event.
const WAIT: Duration = Duration::from_secs(30);

/// A daemon serving server-everything as `everything`, tracing to a file in its dir.
fn traced_everything() -> Daemon {
    Daemon::start_with_dir(|dir| {
        json!({
            "mcpServers": {"everything": everything_stdio()},
            "traces": {"path": dir.join("traces.jsonl")},
        })
    })
}

/// The trace file's lines once the writer says it wrote `count`.
fn trace_lines(daemon: &Daemon, count: u64) -> Vec<Value> {
    eventually_some(WAIT, || {
        let health = daemon.call(name::HEALTH, Value::Null);
        (health["traces"]["written"] == count).then_some(())
    })
    .expect("never happened: the trace writer wrote the lines");
    read_lines(&daemon.dir().join("traces.jsonl"))
}

fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("read the trace file")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

/// The status of task `task_id` in the caller's `listTasks`, once it is `status`.
fn wait_for_listed_status(daemon: &Daemon, task_id: &str, status: &str) -> Value {
    eventually_some(WAIT, || {
        let listed = daemon.call(name::LIST_TASKS, json!({}));
        listed["tasks"]
            .as_array()
            .and_then(|tasks| tasks.iter().find(|task| task["taskId"] == task_id))
            .filter(|task| task["status"] == status)
            .cloned()
    })
    .unwrap_or_else(|| {
        panic!(
            "task {task_id} never listed as {status}: {:#}",
            daemon.call(name::LIST_TASKS, json!({}))
        )
    })
}

#[test]
fn a_task_only_tool_runs_from_the_cli_and_prints_its_final_result() {
    let daemon = traced_everything();
    let output = daemon.run_client(
        &[
            "everything",
            "simulate-research-query",
            r#"{"topic":"rust"}"#,
        ],
        &[],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "exit {:?}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("Research Report: rust"), "{stdout}");
    assert!(stdout.contains("Generating report ✓"), "{stdout}");

    // One call, one line, naming the task it ran as; the task is the caller's, completed.
    let lines = trace_lines(&daemon, 1);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let line = &lines[0];
    assert_eq!(line["tool"], "simulate-research-query");
    assert_eq!(line["success"], true, "{line:#}");
    let task_id = line["taskId"].as_str().expect("the line names its task");
    assert!(task_id.starts_with("everything:"), "{task_id}");
    // Through the CLI the client uses its own session-less token, like `listTasks` here.
    wait_for_listed_status(&daemon, task_id, "completed");
}

#[test]
fn a_task_the_caller_follows_is_created_got_listed_and_its_result_fetched() {
    let daemon = traced_everything();
    let created = daemon.call(
        name::CALL_TOOL,
        json!({"server": "everything", "tool": "simulate-research-query",
               "arguments": {"topic": "tasks"}, "task": {"ttl": 60000}}),
    );
    let task = &created["task"];
    let task_id = task["taskId"]
        .as_str()
        .expect("a CreateTaskResult")
        .to_owned();
    assert!(task_id.starts_with("everything:"), "{created:#}");
    assert_eq!(task["status"], "working", "{created:#}");
    // The server decides the ttl (server-everything keeps its tasks five minutes).
    assert!(task["ttl"].is_u64(), "{created:#}");

    let status = daemon.call(name::GET_TASK, json!({"taskId": task_id}));
    assert_eq!(status["taskId"], task_id.as_str());
    assert!(
        matches!(status["status"].as_str(), Some("working" | "completed")),
        "{status:#}"
    );

    // Held by the server until the task is terminal, then the tool's own result.
    let result = daemon.call(name::GET_TASK_RESULT, json!({"taskId": task_id}));
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Research Report: tasks"), "{result:#}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task_id.as_str(),
        "{result:#}"
    );
    wait_for_listed_status(&daemon, &task_id, "completed");

    // Cancelling a finished task: the server's refusal, passed on as such.
    let refused = daemon.call_err(name::CANCEL_TASK, json!({"taskId": task_id}));
    assert_eq!(refused.code, code::UPSTREAM_ERROR, "{refused:?}");
    assert!(refused.message.contains("terminal"), "{}", refused.message);

    // The creating call is the one trace line (no line per follow-up).
    let lines = trace_lines(&daemon, 1);
    assert_eq!(lines[0]["taskId"], task_id.as_str(), "{lines:#?}");
}

#[test]
fn no_other_token_or_session_finds_a_task_and_an_unknown_id_is_not_found() {
    let daemon = traced_everything();
    let created = daemon.call(
        name::CALL_TOOL,
        json!({"server": "everything", "tool": "simulate-research-query",
               "arguments": {"topic": "mine"}, "task": {}}),
    );
    let task_id = created["task"]["taskId"].as_str().unwrap().to_owned();

    let unknown = daemon.call_err(name::GET_TASK, json!({"taskId": "everything:nope"}));
    assert_eq!(unknown.code, code::INVALID_PARAMS, "{unknown:?}");
    assert!(unknown.message.contains("no task"), "{}", unknown.message);

    // Another session of the same token: not found, in the same words.
    let other_session = daemon.call_err(
        name::GET_TASK,
        json!({"taskId": task_id, "sessionId": "someone-else"}),
    );
    assert_eq!(other_session.code, code::INVALID_PARAMS);
    assert_eq!(
        other_session.message.replace(&task_id, "ID"),
        unknown.message.replace("everything:nope", "ID")
    );
    let listed = daemon.call(name::LIST_TASKS, json!({"sessionId": "someone-else"}));
    assert_eq!(listed["tasks"], json!([]), "{listed:#}");

    // Another token, even one that may see the server.
    let minted = daemon.call("mintToken", json!({"servers": ["everything"]}));
    let token = minted["token"].as_str().unwrap();
    for method in [name::GET_TASK, name::GET_TASK_RESULT, name::CANCEL_TASK] {
        let error = daemon
            .rpc_as(token, method, Some(json!({"taskId": task_id})))
            .expect_err("another token's task");
        assert_eq!(error.code, code::INVALID_PARAMS, "{method}: {error:?}");
        assert!(error.message.contains("no task"), "{}", error.message);
    }
    let theirs = daemon
        .rpc_as(token, name::LIST_TASKS, None)
        .expect("listTasks");
    assert_eq!(theirs["tasks"], json!([]), "{theirs:#}");

    // The owner still has it, and may cancel it while it runs.
    let cancelled = daemon.call(name::CANCEL_TASK, json!({"taskId": task_id}));
    assert_eq!(cancelled["status"], "cancelled", "{cancelled:#}");
    assert_eq!(cancelled["taskId"], task_id.as_str());
}

#[test]
fn a_task_asked_of_a_tool_that_does_not_run_as_one_is_refused_before_sending() {
    let daemon = traced_everything();
    let error = daemon.call_err(
        name::CALL_TOOL,
        json!({"server": "everything", "tool": "echo", "arguments": {"message": "hi"},
               "task": {"ttl": 1000}}),
    );
    assert_eq!(error.code, code::INVALID_PARAMS, "{error:?}");
    assert!(
        error.message.contains("does not run as an MCP task")
            && error.message.contains("nothing was sent"),
        "{}",
        error.message
    );
    let lines = trace_lines(&daemon, 1);
    assert_eq!(lines[0]["executed"], false, "{lines:#?}");
    // The same tool without `task` is unaffected.
    let echoed = daemon.call_tool("everything", "echo", json!({"message": "still here"}));
    assert_eq!(echoed["content"][0]["text"], "Echo: still here");
}

#[test]
fn a_deadline_expiring_while_a_task_runs_cancels_it_at_the_server() {
    let daemon = traced_everything();
    // Four stages of a second each cannot finish in 1.5 s.
    let error = daemon.call_err(
        name::CALL_TOOL,
        json!({"server": "everything", "tool": "simulate-research-query",
               "arguments": {"topic": "slow"}, "timeoutMs": 1500}),
    );
    assert_eq!(error.code, code::TIMEOUT, "{error:?}");

    let lines = trace_lines(&daemon, 1);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["error"]["kind"], "timeout", "{lines:#?}");
    let task_id = lines[0]["taskId"]
        .as_str()
        .expect("the line names the task");
    // The daemon cancelled it rather than leave it working for no one.
    let task = wait_for_listed_status(&daemon, task_id, "cancelled");
    assert_eq!(task["statusMessage"], "Client cancelled task execution.");
}

#[test]
fn a_server_dying_mid_task_is_one_clear_error_and_one_trace_line() {
    let daemon = traced_everything();
    let caller = std::thread::scope(|scope| {
        let call = scope.spawn(|| {
            daemon.rpc(
                name::CALL_TOOL,
                Some(
                    json!({"server": "everything", "tool": "simulate-research-query",
                            "arguments": {"topic": "doomed"}, "timeoutMs": 60000}),
                ),
            )
        });
        // Once the task exists, the server dies.
        eventually_some(WAIT, || {
            let listed = daemon.call(name::LIST_TASKS, json!({}));
            (listed["tasks"]
                .as_array()
                .is_some_and(|tasks| !tasks.is_empty()))
            .then_some(())
        })
        .expect("the task was created");
        for (pid, _group) in daemon.children() {
            // SAFETY: kill(2) has no memory-safety preconditions; the pid is the daemon's child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        call.join().expect("the caller thread")
    });
    let error = caller.expect_err("the server died mid-task");
    assert_eq!(error.code, code::SERVER_UNAVAILABLE, "{error:?}");
    let lines = trace_lines(&daemon, 1);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["success"], false);
    assert!(lines[0]["taskId"].is_string(), "{lines:#?}");
    // The daemon keeps serving, and the server comes back.
    let echoed = eventually_some(WAIT, || {
        daemon
            .rpc(
                name::CALL_TOOL,
                Some(json!({"server": "everything", "tool": "echo",
                            "arguments": {"message": "back"}})),
            )
            .ok()
    })
    .expect("the server restarted");
    assert_eq!(echoed["content"][0]["text"], "Echo: back");
}

#[test]
fn ctrl_c_of_the_cli_mid_task_cancels_the_task_at_the_server() {
    let daemon = traced_everything();
    let mut command = daemon.client_command();
    command
        .args([
            "everything",
            "simulate-research-query",
            r#"{"topic":"interrupted"}"#,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut client = command.spawn().expect("spawn tool-cli");
    let task_id = eventually_some(WAIT, || {
        let listed = daemon.call(name::LIST_TASKS, json!({}));
        listed["tasks"][0]["taskId"].as_str().map(str::to_owned)
    })
    .expect("the task was created");
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our unreaped child.
    let rc = unsafe { libc::kill(client.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0);
    let status = eventually_some(WAIT, || client.try_wait().expect("try_wait"))
        .expect("tool-cli exited after SIGINT");
    assert!(
        status.signal() == Some(libc::SIGINT) || status.code() == Some(130),
        "interrupted, not finished: {status:?}"
    );
    wait_for_listed_status(&daemon, &task_id, "cancelled");
    let lines = trace_lines(&daemon, 1);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["error"]["kind"], "cancelled", "{lines:#?}");
    assert_eq!(lines[0]["taskId"], task_id.as_str());
}

#[test]
fn a_caller_following_progress_sees_the_tasks_status_as_it_changes() {
    let daemon = traced_everything();
    let (result, events) = std::thread::scope(|scope| {
        let poller = scope.spawn(|| {
            let mut after = 0;
            let mut events = Vec::new();
            loop {
                let page = daemon.call(
                    name::CALL_EVENTS,
                    json!({"progressId": "research-1", "after": after, "waitMs": 20000}),
                );
                for event in page["events"].as_array().unwrap() {
                    after = event["seq"].as_u64().unwrap();
                    events.push(event.clone());
                }
                if page["done"] == true {
                    return events;
                }
            }
        });
        let result = daemon.call(
            name::CALL_TOOL,
            json!({"server": "everything", "tool": "simulate-research-query",
                   "arguments": {"topic": "progress"},
                   "progress": true, "progressId": "research-1"}),
        );
        (result, poller.join().unwrap())
    });
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Research Report: progress"), "{result:#}");
    let messages: Vec<&str> = events
        .iter()
        .filter(|event| event["type"] == "progress")
        .filter_map(|event| event["message"].as_str())
        .collect();
    assert!(
        messages
            .first()
            .is_some_and(|first| first.starts_with("task working: ")),
        "{events:#?}"
    );
    // Four stages of a second each, polled every second: more than one status is seen.
    assert!(messages.len() >= 2, "{messages:#?}");
    let mut distinct = messages.clone();
    distinct.dedup();
    assert_eq!(
        distinct, messages,
        "only changes are reported: {messages:#?}"
    );
}

#[test]
fn tasks_run_the_same_over_streamable_http() {
    let upstream = HttpPeer::everything();
    let daemon = Daemon::start(json!({"mcpServers": {"remote": upstream.server_config()}}));
    let result = daemon.call_tool(
        "remote",
        "simulate-research-query",
        json!({"topic": "http"}),
    );
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Research Report: http"), "{result:#}");

    let created = daemon.call(
        name::CALL_TOOL,
        json!({"server": "remote", "tool": "simulate-research-query",
               "arguments": {"topic": "followed"}, "task": {}}),
    );
    let task_id = created["task"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    assert!(task_id.starts_with("remote:"), "{created:#}");
    let status = daemon.call(name::GET_TASK, json!({"taskId": task_id}));
    assert_eq!(status["taskId"], task_id.as_str(), "{status:#}");
    assert!(
        status["createdAt"].is_string(),
        "the task whole: {status:#}"
    );
    let cancelled = daemon.call(name::CANCEL_TASK, json!({"taskId": task_id}));
    assert_eq!(cancelled["status"], "cancelled", "{cancelled:#}");
    let listed = daemon.call(name::LIST_TASKS, json!({}));
    let statuses: Vec<&str> = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|task| task["status"].as_str())
        .collect();
    assert_eq!(statuses, vec!["completed", "cancelled"], "{listed:#}");
}

#[test]
fn a_task_that_asks_a_question_mid_way_gets_the_daemons_answer_and_finishes() {
    // An ambiguous query makes the task ask (elicitation, delivered through `tasks/result`);
    // without a watcher the daemon declines with a reason, and the task goes on with its default.
    let daemon = traced_everything();
    let result = daemon.call_tool(
        "everything",
        "simulate-research-query",
        json!({"topic": "python", "ambiguous": true}),
    );
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Research Report: python"), "{result:#}");
    assert!(
        text.contains("**Clarification**: User declined - using default interpretation"),
        "{result:#}"
    );
}
