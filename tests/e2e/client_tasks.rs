//! Client-side MCP tasks (2025-11-25): server-everything asks the pool, its client, to run a
//! question (`trigger-elicitation-request-async`) or a sampling request
//! (`trigger-sampling-request-async`) as a task, and polls the pool with `tasks/get` and
//! `tasks/result`. The pool declares the capability only where it honours it (the tools exist
//! only then), answers `CreateTaskResult` at once, relays the question to the caller as any
//! other, and the server reads the caller's answer (given, declined) from the task; a call whose
//! deadline passes while the question is open cancels the task and tells the server. Also: a
//! question a server-side task asks mid-way (`simulate-research-query` with `ambiguous`)
//! reaches the caller and its answer gets back, from the JSON-RPC API and from the CLI's form.

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::code;
use tool_cli_protocol::methods::name;
use tool_cli_tests::scripted_llm::{LlmReply, ScriptedLlm, agent_config, final_turn};
use tool_cli_tests::{Daemon, DaemonOptions, eventually, everything_stdio, text_content};

const ASYNC_ELICITATION: &str = "trigger-elicitation-request-async";
const ASYNC_SAMPLING: &str = "trigger-sampling-request-async";

/// Longest wait for the daemon's log to say something.
const WAIT: Duration = Duration::from_secs(30);

/// server-everything whose questions go to the caller, with `extra` in its entry and, when
/// given, the scripted LLM as the agent backend.
fn daemon_with(extra: Value, llm: Option<&ScriptedLlm>) -> Daemon {
    let mut entry = everything_stdio();
    entry["elicitation"] = json!("ask");
    for (key, value) in extra.as_object().unwrap() {
        entry[key] = value.clone();
    }
    let mut config = json!({"mcpServers": {"everything": entry}});
    if let Some(llm) = llm {
        config["agent"] = agent_config(llm, 10.0);
    }
    Daemon::start_with(
        config,
        DaemonOptions {
            env: vec![
                ("SCRIPTED_LLM_KEY".into(), "sk-client-tasks-e2e".into()),
                // The server's polls, for a test to wait on.
                (
                    "RUST_LOG".into(),
                    "info,tool_cli_daemon::pool::connection::client_tasks=debug".into(),
                ),
            ],
            ..DaemonOptions::default()
        },
    )
}

fn tool_names(daemon: &Daemon) -> Vec<String> {
    let listed = daemon.call(name::LIST_TOOLS, json!({"server": "everything"}));
    listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect()
}

/// Calls `tool` watched as `progress_id`, answers its one question with `action` (and
/// `content`), and returns the call's outcome.
fn call_and_answer(
    daemon: &Daemon,
    tool: &str,
    arguments: Value,
    progress_id: &str,
    (action, content): (&str, Option<Value>),
) -> Result<Value, tool_cli_protocol::ErrorObject> {
    std::thread::scope(|scope| {
        let call = scope.spawn(|| {
            daemon.rpc(
                name::CALL_TOOL,
                Some(
                    json!({"server": "everything", "tool": tool, "arguments": arguments,
                            "progressId": progress_id}),
                ),
            )
        });
        let question = daemon.next_call_event(progress_id, &mut 0, "elicitation");
        assert_eq!(question["server"], "everything", "{question:#}");
        let mut params = json!({"progressId": progress_id,
            "elicitationId": question["elicitationId"], "action": action});
        if let Some(content) = content {
            params["content"] = content;
        }
        daemon
            .rpc(name::ANSWER_ELICITATION, Some(params))
            .expect("the answer is taken");
        call.join().unwrap()
    })
}

#[test]
fn an_async_question_runs_as_a_client_task_and_the_server_reads_the_answer_from_it() {
    let daemon = daemon_with(json!({}), None);
    // Declared for questions (they go to the caller), not for sampling (not allowed).
    let tools = tool_names(&daemon);
    assert!(
        tools.iter().any(|tool| tool == ASYNC_ELICITATION),
        "{tools:?}"
    );
    assert!(
        !tools.iter().any(|tool| tool == ASYNC_SAMPLING),
        "{tools:?}"
    );

    let answered = call_and_answer(
        &daemon,
        ASYNC_ELICITATION,
        json!({}),
        "async-1",
        (
            "accept",
            Some(json!({"name": "Ada Lovelace", "favoriteColor": "Blue", "agreeToTerms": true})),
        ),
    )
    .expect("the tool answers");
    let text = text_content(&answered);
    for expected in [
        "[COMPLETED] User provided the requested information!",
        "- Name: Ada Lovelace",
        "- Favorite Color: Blue",
        "- Agreed to terms: true",
        // The server got a task back, not the answer itself, and read the answer from it.
        "Task created: client-1",
        "io.modelcontextprotocol/related-task",
    ] {
        assert!(text.contains(expected), "{expected}: {text}");
    }
    assert!(!text.contains("[SYNC]"), "{text}");

    // Declined once the server has polled the open question's task (`input_required`): the
    // task completes with the decline, which the server reads.
    let polled = "tasks/get answered server=everything task_id=client-2 status=\"input_required\"";
    let declined = std::thread::scope(|scope| {
        let call = scope.spawn(|| {
            daemon.rpc(
                name::CALL_TOOL,
                Some(json!({"server": "everything", "tool": ASYNC_ELICITATION,
                            "arguments": {}, "progressId": "async-2"})),
            )
        });
        let question = daemon.next_call_event("async-2", &mut 0, "elicitation");
        assert!(
            eventually(WAIT, || daemon.stderr().contains(polled)),
            "{}",
            daemon.stderr()
        );
        let params = json!({"progressId": "async-2",
            "elicitationId": question["elicitationId"], "action": "decline"});
        daemon
            .rpc(name::ANSWER_ELICITATION, Some(params))
            .expect("the answer is taken");
        call.join().unwrap().expect("the tool answers")
    });
    let text = text_content(&declined);
    assert!(text.contains("[DECLINED]"), "{text}");
    assert!(text.contains("Task created: client-2"), "{text}");
    assert!(text.contains("Poll 1: input_required"), "{text}");
}

#[test]
fn a_deadline_passing_while_the_question_is_open_cancels_the_client_task_and_tells_the_server() {
    let daemon = daemon_with(json!({}), None);
    let error = std::thread::scope(|scope| {
        let call = scope.spawn(|| {
            daemon.rpc(
                name::CALL_TOOL,
                Some(json!({"server": "everything", "tool": ASYNC_ELICITATION,
                            "arguments": {}, "progressId": "late-1", "timeoutMs": 3000})),
            )
        });
        // Asked, and never answered.
        daemon.next_call_event("late-1", &mut 0, "elicitation");
        call.join().unwrap().expect_err("the deadline passes")
    });
    assert_eq!(error.code, code::TIMEOUT, "{error:?}");
    let told = "client task ended; telling the server";
    assert!(
        eventually(WAIT, || daemon
            .stderr()
            .lines()
            .any(|line| line.contains(told) && line.contains("cancelled"))),
        "{}",
        daemon.stderr()
    );
    // The connection and the server are fine.
    let echoed = daemon.call_tool("everything", "echo", json!({"message": "still here"}));
    assert_eq!(echoed["content"][0]["text"], "Echo: still here");
}

#[test]
fn an_async_sampling_request_is_answered_by_the_backend_through_a_client_task() {
    // One scripted answer; the second request gets HTTP 500 from the script's end.
    let llm = ScriptedLlm::start(vec![LlmReply::Stream(final_turn(
        "the scripted completion",
        30,
        6,
    ))]);
    let daemon = daemon_with(json!({"allowSampling": true}), Some(&llm));
    let output = daemon.run_client(
        &["everything", ASYNC_SAMPLING, r#"{"prompt":"hello tasks"}"#],
        &[],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for expected in [
        "[COMPLETED] Async sampling completed!",
        "Task created: client-1",
        "the scripted completion",
        "io.modelcontextprotocol/related-task",
    ] {
        assert!(stdout.contains(expected), "{expected}: {stdout}");
    }
    let requests = llm.requests();
    assert!(
        requests
            .iter()
            .any(|request| request.to_string().contains("hello tasks")),
        "{requests:?}"
    );

    // The backend failing: the task fails with the reason, which the server reads.
    let failed = daemon.run_client(
        &["everything", ASYNC_SAMPLING, r#"{"prompt":"again"}"#],
        &[],
    );
    let stdout = String::from_utf8_lossy(&failed.stdout);
    assert!(
        stdout.contains("[FAILED] sampling failed in the tool-cli daemon"),
        "{stdout}"
    );
}

#[test]
fn the_cli_answers_an_async_question_from_its_form() {
    let daemon = daemon_with(json!({}), None);
    // Answer it; name; favourite colour (the second choice); agree to terms.
    let (stdout, stderr) = daemon.answer_cli_form(
        &["everything", ASYNC_ELICITATION, "{}"],
        "y\nGrace Hopper\n2\nyes\n",
    );
    assert!(
        stderr.contains("everything asks: Please provide inputs"),
        "{stderr}"
    );
    assert!(
        stdout.contains("- Name: Grace Hopper"),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("Task created: client-1"), "{stdout}");
}

#[test]
fn a_question_a_server_task_asks_mid_way_reaches_the_caller_and_the_answer_gets_back() {
    let daemon = daemon_with(json!({}), None);
    let answered = call_and_answer(
        &daemon,
        "simulate-research-query",
        json!({"topic": "python", "ambiguous": true}),
        "mid-1",
        ("accept", Some(json!({"interpretation": "snake"}))),
    )
    .expect("the task finishes");
    let text = text_content(&answered);
    assert!(text.contains("Research Report: python (snake)"), "{text}");
    assert!(text.contains("**Clarification**: snake"), "{text}");
}

#[test]
fn the_cli_answers_a_question_a_server_task_asks_mid_way() {
    let daemon = daemon_with(json!({}), None);
    // Answer it; the third interpretation.
    let (stdout, stderr) = daemon.answer_cli_form(
        &[
            "everything",
            "simulate-research-query",
            r#"{"topic":"python","ambiguous":true}"#,
        ],
        "y\n3\n",
    );
    assert!(
        stderr.contains("could have multiple interpretations"),
        "{stderr}"
    );
    assert!(
        stdout.contains("Research Report: python (comedy)"),
        "{stdout}\n{stderr}"
    );
}

/// The official Python SDK client as a 2025-era MCP host on the gateway (Streamable HTTP, its
/// questions and sampling over the call's stream), answering questions with `elicit` and, when
/// given, sampling with `sample`; its report (`tests/fixtures/mcp_gateway_stream_client.py`).
fn host_calls(daemon: &Daemon, calls: &Value, elicit: &str, sample: Option<&str>) -> Value {
    let mut args = vec![
        "--url".to_owned(),
        format!("http://127.0.0.1:{}/mcp", daemon.port),
        "--token".to_owned(),
        daemon.token.clone(),
        "--calls".to_owned(),
        calls.to_string(),
        "--elicit".to_owned(),
        elicit.to_owned(),
    ];
    if let Some(sample) = sample {
        args.extend(["--sample".to_owned(), sample.to_owned()]);
    }
    tool_cli_tests::python_driver_report(
        "mcp_gateway_stream_client.py",
        &args,
        &[],
        Duration::from_secs(120),
    )
}

fn host_text(call: &Value) -> String {
    call["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content: {call}"))
        .iter()
        .filter_map(|item| item["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_gateway_host_answers_async_questions_and_sampling_run_as_client_tasks() {
    // Sampling allowed, no backend: the host samples.
    let daemon = daemon_with(json!({"allowSampling": true}), None);
    let calls = json!([
        {"name": format!("everything__{ASYNC_ELICITATION}")},
        {"name": format!("everything__{ASYNC_SAMPLING}"), "arguments": {"prompt": "say hi"}},
    ]);
    let report = host_calls(&daemon, &calls, "accept", Some("hello from the host"));
    let questions = report["questions"].as_array().unwrap();
    assert_eq!(questions.len(), 1, "{report}");
    assert_eq!(
        questions[0]["fields"],
        json!(["agreeToTerms", "favoriteColor", "name"])
    );
    let answered = host_text(&report["calls"][0]);
    for expected in [
        "[COMPLETED] User provided the requested information!",
        "- Name: Ada",
        "- Favorite Color: Red",
        "Task created: client-1",
    ] {
        assert!(answered.contains(expected), "{expected}: {answered}");
    }
    let sampled = host_text(&report["calls"][1]);
    for expected in [
        "[COMPLETED] Async sampling completed!",
        "hello from the host",
        "scripted-host",
        "Task created: client-2",
    ] {
        assert!(sampled.contains(expected), "{expected}: {sampled}");
    }
    assert!(
        report["sampled"][0][0]
            .as_str()
            .is_some_and(|asked| asked.contains("say hi")),
        "{report}"
    );

    // A host that declines: the task completes with the decline, which the server reads.
    let calls = json!([{"name": format!("everything__{ASYNC_ELICITATION}")}]);
    let report = host_calls(&daemon, &calls, "decline", None);
    assert!(
        host_text(&report["calls"][0]).contains("[DECLINED]"),
        "{report}"
    );
}

#[test]
fn a_question_a_server_task_asks_mid_way_reaches_a_gateway_host_and_its_answer_gets_back() {
    let daemon = daemon_with(json!({}), None);
    let calls = json!([{"name": "everything__simulate-research-query",
                        "arguments": {"topic": "python", "ambiguous": true}}]);
    let report = host_calls(&daemon, &calls, "decline", None);
    let questions = report["questions"].as_array().unwrap();
    assert_eq!(questions.len(), 1, "{report}");
    assert!(
        questions[0]["message"]
            .as_str()
            .unwrap()
            .contains("could have multiple interpretations"),
        "{report}"
    );
    let text = host_text(&report["calls"][0]);
    assert!(
        text.contains("Research Report: python (User declined - using default interpretation)"),
        "{text}"
    );
}

/// A daemon serving `tests/fixtures/client_tasks_server.py` as `probe`, its questions asked.
fn probing_daemon() -> Daemon {
    let fixture = tool_cli_tests::repo_root().join("tests/fixtures/client_tasks_server.py");
    Daemon::start(json!({"mcpServers": {"probe": {
        "command": tool_cli_tests::peer_python(),
        "args": [fixture],
        "elicitation": "ask",
    }}}))
}

fn report_of(result: &Value) -> Value {
    serde_json::from_str(&text_content(result)).expect("the fixture reports JSON")
}

#[test]
fn a_server_lists_gets_and_cancels_its_client_task_and_is_told_of_the_cancellation() {
    let daemon = probing_daemon();
    // Watched, so the question stays open (the task `input_required`) until cancelled.
    let result = daemon.call(
        name::CALL_TOOL,
        json!({"server": "probe", "tool": "probe_cancel", "arguments": {},
               "progressId": "probe-1"}),
    );
    let report = report_of(&result);
    assert_eq!(
        report["declared"],
        json!({"list": {}, "cancel": {}, "requests": {"elicitation": {"create": {}}}}),
        "sampling is not allowed, so not declared: {report:#}"
    );
    let task = &report["created"]["result"]["task"];
    assert_eq!(task["taskId"], "client-1", "{report:#}");
    assert_eq!(task["status"], "input_required", "{report:#}");
    assert_eq!(task["ttl"], 60000, "{report:#}");
    assert!(task["createdAt"].as_str().unwrap().ends_with('Z'), "{task}");
    assert_eq!(
        report["list"]["result"]["tasks"][0]["taskId"], "client-1",
        "{report:#}"
    );
    let cancelled = &report["cancel"]["result"];
    assert_eq!(cancelled["status"], "cancelled", "{report:#}");
    assert_eq!(cancelled["statusMessage"], "cancelled by the server");
    assert_eq!(report["get"]["result"]["status"], "cancelled", "{report:#}");
    let result_error = report["result"]["error"]["message"].as_str().unwrap();
    assert!(result_error.contains("was cancelled"), "{report:#}");
    let again = &report["cancel_again"]["error"];
    assert_eq!(again["code"], -32602, "{report:#}");
    assert!(
        again["message"]
            .as_str()
            .unwrap()
            .contains("has already ended (cancelled)"),
        "{report:#}"
    );
    let unknown = report["unknown"]["error"]["message"].as_str().unwrap();
    assert!(
        unknown.contains("no task \"no-such-task\"") && unknown.contains("client-1"),
        "{unknown}"
    );
    assert!(
        report["statuses"]
            .as_array()
            .unwrap()
            .iter()
            .any(|status| status["taskId"] == "client-1" && status["status"] == "cancelled"),
        "{report:#}"
    );
}

#[test]
fn a_server_gets_at_most_32_client_tasks_at_once_with_a_reason_for_the_next() {
    let daemon = probing_daemon();
    // Unwatched: each question is declined at once, and its finished task is kept for its ttl.
    let result = daemon.call_tool("probe", "probe_bound", json!({"count": 34}));
    let report = report_of(&result);
    assert_eq!(report["created"], 32, "{report:#}");
    let refused = report["refused"]["message"].as_str().unwrap();
    assert!(
        refused.contains("keeps at most 32 tasks for server \"probe\""),
        "{refused}"
    );
}

#[test]
fn the_server_hears_its_client_task_cancelled_when_the_calls_deadline_passes() {
    let daemon = probing_daemon();
    let record = daemon.dir().join("statuses.jsonl");
    // Watched, so the question stays open until the deadline passes.
    let error = daemon.call_err(
        name::CALL_TOOL,
        json!({"server": "probe", "tool": "probe_deadline",
               "arguments": {"record": record}, "progressId": "deadline-1", "timeoutMs": 1500}),
    );
    assert_eq!(error.code, code::TIMEOUT, "{error:?}");
    // What the server was told, as it wrote it down.
    let told = tool_cli_tests::eventually_some(WAIT, || {
        let text = std::fs::read_to_string(&record).ok()?;
        text.lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("a JSON line"))
            .find(|status| status["status"] == "cancelled")
    })
    .expect("the server was told its task was cancelled");
    assert_eq!(told["taskId"], "client-1", "{told}");
    assert!(
        told["statusMessage"]
            .as_str()
            .unwrap()
            .contains("the call that caused it ended before an answer came"),
        "{told}"
    );
}

#[test]
fn a_streamable_http_server_is_not_offered_client_tasks_it_could_not_ask_for() {
    // rmcp's HTTP client can neither declare `tasks` nor hand `params.task` over: not offered.
    let upstream = tool_cli_tests::HttpPeer::everything();
    let mut server = upstream.server_config();
    server["elicitation"] = json!("ask");
    let daemon = Daemon::start(json!({"mcpServers": {"everything": server}}));
    // The tools it registers once it knows the client's capabilities are there…
    assert!(
        eventually(WAIT, || tool_names(&daemon)
            .iter()
            .any(|tool| tool == "trigger-elicitation-request")),
        "{:?}",
        tool_names(&daemon)
    );
    // …but not the one that needs client tasks.
    let tools = tool_names(&daemon);
    assert!(
        !tools.iter().any(|tool| tool == ASYNC_ELICITATION),
        "{tools:?}"
    );
}
