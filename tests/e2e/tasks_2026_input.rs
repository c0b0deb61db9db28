//! A 2026-07-28 task that asks for input mid-task, against the 2026-only test server's
//! `ask_in_task` (`daemon/examples/stateless_server.rs`): the task turns `input_required` with
//! an elicitation (the user's name), then, once answered, with a `roots/list`; it completes
//! with a greeting made of the answers. The pool answers each request through the same relay
//! as a plain call's input round and sends them with `tasks/update`, following the task on.
//!
//! Input → test:
//! - a watching caller accepts the question: the answer reaches the server through
//!   `tasks/update` and shapes the result, the config's roots answer the second request, the
//!   task completes at the server:
//!   `an_accepted_answer_reaches_the_task_and_shapes_its_result`
//! - the caller declines, and a call nobody watches is declined by the daemon with its
//!   reason: the declines reach the task, which completes:
//!   `declined_answers_go_back_to_the_task`
//! - the call's deadline passing while the question is open: one timeout answer, the
//!   question closed at the caller, the task cancelled at the server:
//!   `a_deadline_passing_while_the_task_asks_cancels_it_at_the_server`
//! - the CLI's form (`--elicitation ask`) answers a task's question:
//!   `the_clis_form_answers_a_tasks_question`
//! - an MCP host through the gateway (the official Python SDK client, its elicitation handler)
//!   answers a task's question on the call's stream:
//!   `a_gateway_host_answers_a_tasks_question`
//! - a task asking for a sampling: answered by the gateway host's model, and, with no host
//!   model and no backend, the call fails saying why and the task is cancelled at the server:
//!   `a_tasks_sampling_request_goes_to_the_host_or_fails_the_call_with_the_reason`
//! - Ctrl-C of the CLI while its form waits for the answer cancels the task at the server:
//!   `ctrl_c_of_the_cli_while_the_task_asks_cancels_it_at_the_server`

use std::os::unix::process::ExitStatusExt as _;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::code;
use tool_cli_protocol::methods::name;
use tool_cli_tests::{Daemon, eventually_some, example_bin};

/// Longest wait for any one event.
const WAIT: Duration = Duration::from_secs(30);

/// A daemon with the 2026-only server as `modern` (questions relayed to the caller, sampling
/// allowed, roots configured), once ready.
fn asking_daemon() -> Daemon {
    let daemon = Daemon::start(json!({"mcpServers": {"modern": {
        "command": example_bin("stateless_server"),
        "elicitation": "ask",
        "allowSampling": true,
        "roots": ["/srv/tasks"],
    }}}));
    daemon.wait_servers_ready(&["modern"], WAIT);
    daemon
}

/// The params of an `ask_in_task` call watched under `progress_id`, with `timeout_ms` when
/// given.
fn watched_call(progress_id: &str, timeout_ms: Option<u64>) -> Value {
    let mut params = json!({"server": "modern", "tool": "ask_in_task", "arguments": {},
                            "progressId": progress_id});
    if let Some(timeout_ms) = timeout_ms {
        params["timeoutMs"] = json!(timeout_ms);
    }
    params
}

/// Answers question `id` of the call `progress_id`.
fn answer(daemon: &Daemon, progress_id: &str, id: &str, action: &str, content: Option<Value>) {
    let mut params = json!({"progressId": progress_id, "elicitationId": id, "action": action});
    if let Some(content) = content {
        params["content"] = content;
    }
    daemon.call(name::ANSWER_ELICITATION, params);
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
fn an_accepted_answer_reaches_the_task_and_shapes_its_result() {
    let daemon = asking_daemon();
    std::thread::scope(|scope| {
        let params = watched_call("task-ask-1", None);
        let call = scope.spawn(|| daemon.call(name::CALL_TOOL, params));
        let question = daemon.next_call_event("task-ask-1", &mut 0, "elicitation");
        assert_eq!(question["server"], "modern", "{question:#}");
        assert_eq!(
            question["message"], "What is your name, for the task?",
            "{question:#}"
        );
        assert_eq!(question["requestedSchema"]["required"], json!(["name"]));
        // The task waits for the answer at the server meanwhile.
        assert_eq!(server_task_log(&daemon)["task-1"], "input_required");
        let id = question["elicitationId"].as_str().unwrap();
        answer(
            &daemon,
            "task-ask-1",
            id,
            "accept",
            Some(json!({"name": "Ada"})),
        );
        let result = call.join().unwrap();
        assert_eq!(
            result["structuredContent"]["greeting"], "hello Ada",
            "{result:#}"
        );
        assert_eq!(result["content"][0]["text"], "hello Ada", "{result:#}");
        let answers = &result["structuredContent"]["answers"];
        assert_eq!(answers["name"]["action"], "accept", "{answers:#}");
        assert_eq!(answers["name"]["content"], json!({"name": "Ada"}));
        // The second request, the roots, answered from the config in its own update.
        assert!(
            answers["roots"].to_string().contains("/srv/tasks"),
            "{answers:#}"
        );
    });
    assert_eq!(server_task_log(&daemon), json!({"task-1": "completed"}));
}

#[test]
fn declined_answers_go_back_to_the_task() {
    let daemon = asking_daemon();
    std::thread::scope(|scope| {
        let params = watched_call("task-ask-2", None);
        let call = scope.spawn(|| daemon.call(name::CALL_TOOL, params));
        let question = daemon.next_call_event("task-ask-2", &mut 0, "elicitation");
        let id = question["elicitationId"].as_str().unwrap();
        answer(&daemon, "task-ask-2", id, "decline", None);
        let result = call.join().unwrap();
        assert_eq!(
            result["structuredContent"]["greeting"], "hello stranger (decline)",
            "{result:#}"
        );
        assert_eq!(
            result["structuredContent"]["answers"]["name"]["action"],
            "decline"
        );
    });
    // Nobody watches a plain call: the daemon declines, saying why, and the task goes on.
    let result = daemon.call_tool("modern", "ask_in_task", json!({}));
    let name = &result["structuredContent"]["answers"]["name"];
    assert_eq!(name["action"], "decline", "{result:#}");
    assert!(
        name["_meta"]["tool-cli/reason"]
            .as_str()
            .is_some_and(|reason| reason.contains("no caller is watching the call")),
        "{result:#}"
    );
    assert_eq!(
        server_task_log(&daemon),
        json!({"task-1": "completed", "task-2": "completed"})
    );
}

#[test]
fn a_deadline_passing_while_the_task_asks_cancels_it_at_the_server() {
    let daemon = asking_daemon();
    std::thread::scope(|scope| {
        let params = watched_call("task-ask-3", Some(1500));
        let call = scope.spawn(|| daemon.call_err(name::CALL_TOOL, params));
        let mut after = 0;
        let question = daemon.next_call_event("task-ask-3", &mut after, "elicitation");
        let id = question["elicitationId"].as_str().unwrap().to_owned();
        // Never answered: the deadline passes with the question open.
        let closed = daemon.next_call_event("task-ask-3", &mut after, "elicitationClosed");
        assert_eq!(closed["elicitationId"], id.as_str(), "{closed:#}");
        // Said as what happened: the deadline, not the server (it was the daemon that gave up).
        assert_eq!(
            closed["reason"], "the call's deadline passed before an answer came",
            "{closed:#}"
        );
        let error = call.join().unwrap();
        assert_eq!(error.code, code::TIMEOUT, "{error:?}");
    });
    wait_for_server_status(&daemon, "task-1", "cancelled");
    // The daemon keeps serving the server.
    let echoed = daemon.call_tool("modern", "echo", json!({"text": "still here"}));
    assert_eq!(echoed["content"][0]["text"], "still here");
}

#[test]
fn the_clis_form_answers_a_tasks_question() {
    let daemon = asking_daemon();
    let (stdout, stderr) = daemon.answer_cli_form(&["modern", "ask_in_task", "{}"], "y\nGrace\n");
    assert!(
        stderr.contains("modern asks: What is your name, for the task?"),
        "{stderr}"
    );
    assert!(stdout.contains("hello Grace"), "{stdout}");
    assert_eq!(server_task_log(&daemon), json!({"task-1": "completed"}));
}

#[test]
fn ctrl_c_of_the_cli_while_the_task_asks_cancels_it_at_the_server() {
    let daemon = asking_daemon();
    let mut command = daemon.client_command();
    command
        .args(["modern", "ask_in_task", "{}", "--elicitation", "ask"])
        // A pipe nobody writes to: the form waits for its answer.
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut client = command.spawn().expect("spawn tool-cli");
    // The form is on stderr: the pool is answering the task's question.
    let stderr = client.stderr.take().unwrap();
    let (asked, asking) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)) {
            let Ok(line) = line else { break };
            if line.contains("modern asks:") {
                let _ = asked.send(line);
            }
        }
    });
    let line = asking
        .recv_timeout(WAIT)
        .expect("the CLI showed the task's question");
    assert!(line.contains("What is your name, for the task?"), "{line}");
    assert_eq!(server_task_log(&daemon)["task-1"], "input_required");
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our unreaped child.
    let rc = unsafe { libc::kill(client.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0);
    let status = eventually_some(WAIT, || client.try_wait().expect("try_wait"))
        .expect("tool-cli exited after SIGINT");
    assert!(
        status.signal() == Some(libc::SIGINT) || status.code() == Some(130),
        "interrupted, not finished: {status:?}"
    );
    drop(client.stdin.take());
    reader.join().unwrap();
    wait_for_server_status(&daemon, "task-1", "cancelled");
}

/// The official Python SDK client's report of `calls` through the gateway over HTTP, with
/// its handlers set by `extra`.
fn host_report(daemon: &Daemon, calls: &Value, extra: &[&str]) -> Value {
    let mut args = vec![
        "--url".to_owned(),
        format!("http://127.0.0.1:{}/mcp", daemon.port),
        "--token".to_owned(),
        daemon.token.clone(),
        "--calls".to_owned(),
        calls.to_string(),
    ];
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    tool_cli_tests::python_driver_report(
        "mcp_gateway_stream_client.py",
        &args,
        &[],
        Duration::from_secs(120),
    )
}

#[test]
fn a_gateway_host_answers_a_tasks_question() {
    let daemon = asking_daemon();
    let calls = json!([{"name": "modern__ask_in_task"}]);
    let report = host_report(&daemon, &calls, &["--elicit", "accept"]);
    // The question reached the SDK's handler (which fills a text field with "Ada"), and its
    // answer the task.
    assert_eq!(
        report["questions"][0]["message"], "What is your name, for the task?",
        "{report}"
    );
    let result = &report["calls"][0]["result"];
    assert_eq!(result["content"][0]["text"], "hello Ada", "{report}");
    assert_eq!(server_task_log(&daemon), json!({"task-1": "completed"}));
}

#[test]
fn a_tasks_sampling_request_goes_to_the_host_or_fails_the_call_with_the_reason() {
    let daemon = asking_daemon();
    let calls = json!([{"name": "modern__ask_in_task", "arguments": {"sample": true}}]);
    let report = host_report(&daemon, &calls, &["--sample", "hello from the host"]);
    let asked = report["sampled"][0][0].as_str().unwrap_or_default();
    assert_eq!(asked, "say hi from the task", "{report}");
    let result = &report["calls"][0]["result"];
    assert_eq!(
        result["content"][0]["text"], "the model said: hello from the host",
        "{report}"
    );
    // A JSON-RPC caller has no model and the daemon no backend: the task cannot go on, so the
    // call fails saying why and the task is cancelled at the server.
    let error = daemon.call_err(
        name::CALL_TOOL,
        json!({"server": "modern", "tool": "ask_in_task", "arguments": {"sample": true}}),
    );
    assert_eq!(error.code, code::UPSTREAM_ERROR, "{error:?}");
    assert!(
        error.message.contains("task \"task-2\" asked for input")
            && error.message.contains("sampling request \"reply\" failed"),
        "{error:?}"
    );
    wait_for_server_status(&daemon, "task-2", "cancelled");
    assert_eq!(server_task_log(&daemon)["task-1"], "completed");
}
