//! `runAgent`, `agentEvents` and `cancelAgent` through the daemon's JSON-RPC: the offline planner
//! over the real demo server and two real filesystem peers, a scoped token, the cost ceiling and
//! cancellation with an OpenAI-compatible backend replayed by a scripted loopback server, the
//! bad inputs of each method, and the wire of results and events read back through the
//! protocol's types unchanged.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tool_cli_protocol::agent::{AgentEventKind, AgentEventsResult, RunAgentResult, RunStatus};
use tool_cli_tests::scripted_llm::{LlmReply, ScriptedLlm, agent_config, tool_call_turn};
use tool_cli_tests::{Daemon, DaemonOptions, demo_server, error_data, filesystem_server};

/// Lines of a file that has no newline after its last line (which still counts).
fn write_lines(dir: &Path, name: &str, lines: usize) -> String {
    std::fs::create_dir_all(dir).expect("create the files dir");
    let text: Vec<String> = (1..=lines).map(|i| format!("line {i} of {name}")).collect();
    let path = dir.join(name);
    std::fs::write(&path, text.join("\n")).expect("write the file");
    path.to_string_lossy().into_owned()
}

/// The demo server and two filesystem servers (`docs`, `archive`) serving the same directory,
/// which holds `notes.txt` (11 lines); returns the daemon and the file's path.
fn demo_and_two_filesystems() -> (Daemon, String) {
    let mut file = String::new();
    let daemon = Daemon::start_with_dir(|dir| {
        let root = dir.join("shared");
        file = write_lines(&root, "notes.txt", 11);
        json!({"mcpServers": {
            "demo": demo_server(dir),
            "docs": filesystem_server(&root),
            "archive": filesystem_server(&root),
        }})
    });
    (daemon, file)
}

/// The customer with the most completed orders, their completed total and count, by our own SQL.
fn expected_order_figures(daemon: &Daemon) -> (String, f64, u64) {
    let result = daemon.call_tool(
        "demo",
        "sql_query",
        json!({"sql": "SELECT c.name AS name, COUNT(*) AS n, \
                       ROUND(SUM(p.price_usd * o.quantity), 2) AS total \
                       FROM customers c JOIN orders o ON o.customer_id = c.id \
                       JOIN products p ON p.id = o.product_id \
                       WHERE lower(o.status) IN ('completed', 'complete', 'delivered', \
                       'fulfilled', 'done', 'closed', 'paid') \
                       GROUP BY c.id ORDER BY n DESC, c.id LIMIT 1"}),
    );
    let row = &result["structuredContent"]["rows"][0];
    (
        row["name"].as_str().expect("a name").to_owned(),
        row["total"].as_f64().expect("a total"),
        row["n"].as_u64().expect("a count"),
    )
}

/// Every event of a run, fetched at once after it ended.
fn all_events(daemon: &Daemon, run_id: &str) -> Value {
    daemon.call(
        "agentEvents",
        json!({"runId": run_id, "after": 0, "waitMs": 0}),
    )
}

fn event_types(events: &Value) -> Vec<String> {
    events["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|event| event["type"].as_str().expect("a type").to_owned())
        .collect()
}

#[test]
fn three_offline_tasks_run_through_the_daemon_with_their_events() {
    let (daemon, file) = demo_and_two_filesystems();

    // (a) The order total over the demo server, against our own SQL.
    let (customer, total, completed) = expected_order_figures(&daemon);
    let threshold = (total - 1.0).floor();
    let result = daemon.call(
        "runAgent",
        json!({"task": format!("Look up customer {customer}'s orders, sum their total, and tell \
                                me if it exceeds ${threshold}"),
               "runId": "orders-1", "sessionId": "agent-e2e"}),
    );
    assert_eq!(result["status"], "completed", "{result:#}");
    assert_eq!(result["runId"], "orders-1");
    assert_eq!(result["keyFacts"]["customer_name"], json!(customer));
    let order_total = result["keyFacts"]["order_total"].as_f64().expect("total");
    assert!(
        (order_total - total).abs() < 0.005,
        "{order_total} vs {total}"
    );
    assert_eq!(result["keyFacts"]["exceeds_threshold"], json!(true));
    assert_eq!(result["keyFacts"]["num_completed_orders"], json!(completed));
    let calls = result["toolCalls"].as_array().expect("toolCalls");
    assert!(
        calls
            .iter()
            .all(|call| call["server"] == "demo" && call["selectionRule"] == "named"),
        "{calls:#?}"
    );
    assert_eq!(result["backend"], "offline");
    assert_eq!(result["usage"]["costUsd"], json!(0.0));

    // Its events: numbered 1, 2, 3, … without a gap, started first and final last, one
    // llm_call per LLM call and a tool_call and a tool_result per tool call.
    let events = all_events(&daemon, "orders-1");
    assert_eq!(events["done"], json!(true));
    assert_eq!(events["dropped"], json!(0));
    let seqs: Vec<u64> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["seq"].as_u64().expect("seq"))
        .collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(events["lastSeq"], json!(seqs.len()));
    let types = event_types(&events);
    assert_eq!(types.first().map(String::as_str), Some("started"));
    assert_eq!(types.last().map(String::as_str), Some("final"));
    let count = |kind: &str| types.iter().filter(|t| *t == kind).count();
    assert_eq!(
        count("llm_call") as u64,
        result["usage"]["llmCalls"].as_u64().unwrap()
    );
    assert_eq!(count("tool_call"), calls.len());
    assert_eq!(count("tool_result"), calls.len());
    // Asking after the last event answers at once, with nothing.
    let after = daemon.call(
        "agentEvents",
        json!({"runId": "orders-1", "after": seqs.len(), "waitMs": 60000}),
    );
    assert_eq!(after["events"], json!([]));
    assert_eq!(after["done"], json!(true));

    // The run's tool calls went into the session it named.
    let summary = daemon.call("sessionSummary", json!({"sessionId": "agent-e2e"}));
    let used = summary["toolsUsed"].as_array().expect("toolsUsed");
    assert!(
        used.iter()
            .any(|tool| tool["server"] == "demo" && tool["tool"] == "sql_query"),
        "{summary:#}"
    );

    // (b) A line count over the real filesystem peer; two servers offer the tool, so the daemon
    // routes the call and reports its rule.
    let result = daemon.call(
        "runAgent",
        json!({"task": format!("Read {file} and tell me how many lines it has")}),
    );
    assert_eq!(result["status"], "completed", "{result:#}");
    assert_eq!(result["keyFacts"]["line_count"], json!(11));
    assert_eq!(result["answer"], json!(format!("{file} has 11 lines.")));
    let call = &result["toolCalls"][0];
    assert!(
        ["docs", "archive"].contains(&call["server"].as_str().unwrap()),
        "{call:#}"
    );
    assert!(
        ["argument-type", "session-recency", "similarity", "priority"]
            .contains(&call["selectionRule"].as_str().unwrap()),
        "{call:#}"
    );
    assert!(
        result["availableTools"]
            .as_array()
            .unwrap()
            .contains(&json!("*/read_text_file")),
        "{result:#}"
    );
    // The daemon named the run, and its events name the rule too.
    let run_id = result["runId"].as_str().expect("runId");
    let events = all_events(&daemon, run_id);
    let traced = events["events"].as_array().unwrap().iter().any(|event| {
        event["type"] == "tool_result" && event["selectionRule"] == call["selectionRule"]
    });
    assert!(traced, "{events:#}");

    // (c) The task names a server: routing follows it (explicit mention), the agent names none.
    let result = daemon.call(
        "runAgent",
        json!({"task": format!("Read {file} with the archive server and tell me how many \
                                lines it has")}),
    );
    assert_eq!(result["status"], "completed", "{result:#}");
    assert_eq!(result["toolCalls"][0]["server"], "archive");
    assert_eq!(result["toolCalls"][0]["selectionRule"], "explicit-mention");
    assert_eq!(result["keyFacts"]["line_count"], json!(11));

    // A dry run plans without executing: every call is a dry-run answer.
    let result = daemon.call(
        "runAgent",
        json!({"task": format!("Look up customer {customer}'s orders, sum their total, and tell \
                                me if it exceeds $10"), "dryRun": true}),
    );
    assert_eq!(result["status"], "completed", "{result:#}");
    assert_eq!(result["keyFacts"]["dry_run"], json!(true));
    assert_eq!(result["toolCalls"][0]["result"]["executed"], json!(false));
}

#[test]
fn a_scoped_token_sees_and_uses_only_its_own_tools_in_a_run() {
    let (daemon, file) = demo_and_two_filesystems();
    let minted = daemon.call("mintToken", json!({"servers": ["demo"], "label": "agent"}));
    let token = minted["token"].as_str().expect("token");

    let (customer, total, _) = expected_order_figures(&daemon);
    let result = daemon
        .rpc_as(
            token,
            "runAgent",
            Some(
                json!({"task": format!("Look up customer {customer}'s orders, sum their total, \
                                         and tell me if it exceeds $1"), "runId": "scoped-1"}),
            ),
        )
        .expect("runAgent with a scoped token");
    assert_eq!(result["status"], "completed", "{result:#}");
    let order_total = result["keyFacts"]["order_total"].as_f64().unwrap();
    assert!((order_total - total).abs() < 0.005);
    let available: Vec<&str> = result["availableTools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool.as_str().unwrap())
        .collect();
    assert!(!available.is_empty());
    assert!(
        available.iter().all(|tool| tool.starts_with("demo/")),
        "{available:?}"
    );

    // The filesystem servers are out of its reach: the line count cannot even be attempted.
    let result = daemon
        .rpc_as(
            token,
            "runAgent",
            Some(json!({"task": format!("Read {file} and tell me how many lines it has")})),
        )
        .expect("runAgent with a scoped token");
    // The planner says it cannot, naming what is missing, and calls nothing outside its scope.
    assert_eq!(result["status"], "cannot", "{result:#}");
    assert_eq!(result["keyFacts"]["cannot"], json!(true), "{result:#}");
    assert!(
        result["answer"]
            .as_str()
            .unwrap_or("")
            .contains("needs a file-reading tool"),
        "{result:#}"
    );
    assert!(
        result["toolCalls"]
            .as_array()
            .unwrap()
            .iter()
            .all(|call| call["server"] == "demo"),
        "{result:#}"
    );
    // The owner's token runs the same task.
    let result = daemon.call(
        "runAgent",
        json!({"task": format!("Read {file} and tell me how many lines it has")}),
    );
    assert_eq!(result["status"], "completed", "{result:#}");

    // Runs belong to their token: the owner cannot follow or cancel the scoped token's run,
    // and the scoped token cannot see the owner's.
    let error = daemon.call_err("agentEvents", json!({"runId": "scoped-1"}));
    assert_eq!(error.code, -32602);
    let owner_run = result["runId"].as_str().unwrap();
    let error = daemon
        .rpc_as(token, "cancelAgent", Some(json!({"runId": owner_run})))
        .expect_err("another token's run");
    assert_eq!(error.code, -32602);
}

/// A daemon whose agent backend is the scripted server, with the key in its environment.
fn daemon_with_llm(llm: &ScriptedLlm, rate: f64) -> Daemon {
    Daemon::start_with_dir_and(
        |dir| {
            json!({"mcpServers": {"demo": demo_server(dir)},
                   "agent": agent_config(llm, rate)})
        },
        DaemonOptions {
            env: vec![("SCRIPTED_LLM_KEY".into(), SCRIPTED_KEY.into())],
            ..DaemonOptions::default()
        },
    )
}

/// A model that calls `describe_schema` once and reports 8,500 input and 100 output tokens, and a
/// daemon pricing them at $10 per million: the call costs $0.086.
fn one_describe_call_at_ten_dollars() -> (ScriptedLlm, Daemon) {
    let llm = ScriptedLlm::start(vec![LlmReply::Stream(tool_call_turn(
        "describe_schema",
        &json!({}),
        8_500,
        100,
    ))]);
    let daemon = daemon_with_llm(&llm, 10.0);
    (llm, daemon)
}

const SCRIPTED_KEY: &str = "sk-scripted-e2e-5c1f0a";

#[test]
fn the_cost_ceiling_halts_a_run_before_it_could_be_passed() {
    // The model calls a tool and reports 8,500 input and 100 output tokens at $10 per million:
    // $0.086 of a $0.10 ceiling. The next call's worst case does not fit, so it is never made.
    let (llm, daemon) = one_describe_call_at_ten_dollars();
    let result = daemon.call(
        "runAgent",
        json!({"task": "Describe the shop's tables", "costCeilingUsd": 0.10,
               "tools": ["demo/describe_schema"], "runId": "ceiling-1",
               "sessionId": "ceiling-session"}),
    );
    assert_eq!(result["status"], "halted", "{result:#}");
    assert_eq!(result["haltReason"], "cost_ceiling");
    let cost = result["usage"]["costUsd"].as_f64().expect("a cost");
    assert!((cost - 0.086).abs() < 1e-9, "{cost}");
    assert!(cost <= 0.10);
    assert_eq!(result["usage"]["tokensIn"], json!(8_500));
    assert_eq!(result["usage"]["llmCalls"], json!(1));
    assert_eq!(llm.requests().len(), 1, "no second LLM call was made");
    assert_eq!(result["toolCalls"][0]["tool"], "describe_schema");
    assert_eq!(result["toolCalls"][0]["isError"], json!(false));

    // The bill is in the run's session too, and the key is nowhere in the daemon's log.
    let summary = daemon.call("sessionSummary", json!({"sessionId": "ceiling-session"}));
    assert_eq!(summary["tokensIn"], json!(8_500));
    assert!((summary["costUsd"].as_f64().unwrap() - 0.086).abs() < 1e-9);
    let types = event_types(&all_events(&daemon, "ceiling-1"));
    assert!(types.contains(&"error".to_owned()), "{types:?}");
    assert_eq!(types.last().map(String::as_str), Some("final"));
    assert!(!daemon.stderr().contains(SCRIPTED_KEY));
}

#[test]
fn cancel_agent_stops_a_run_mid_call_and_a_long_poll_sees_the_end() {
    let llm = ScriptedLlm::start(vec![LlmReply::Hang]);
    let daemon = &daemon_with_llm(&llm, 1.0);
    std::thread::scope(|scope| {
        let run = scope.spawn(move || {
            daemon.rpc(
                "runAgent",
                Some(json!({"task": "Describe the shop's tables", "runId": "cancel-1"})),
            )
        });
        // The run is in its first LLM call, which the server holds.
        assert!(llm.wait_for_request(Duration::from_secs(60)), "no LLM call");
        let so_far = all_events(daemon, "cancel-1");
        assert_eq!(so_far["done"], json!(false));
        assert_eq!(event_types(&so_far), ["started"]);
        let last = so_far["lastSeq"].as_u64().unwrap();
        // A long-poll from here waits for the next event, which only the cancellation brings.
        let poll = scope.spawn(move || {
            daemon.call(
                "agentEvents",
                json!({"runId": "cancel-1", "after": last, "waitMs": 60000}),
            )
        });

        let cancelled = daemon.call("cancelAgent", json!({"runId": "cancel-1"}));
        assert_eq!(cancelled, json!({"cancelled": true}));
        let result = run
            .join()
            .expect("the run thread")
            .expect("runAgent answers");
        assert_eq!(result["status"], "halted", "{result:#}");
        assert_eq!(result["haltReason"], "cancelled");
        // The held LLM request was abandoned.
        assert!(llm.wait_for_hang_up(Duration::from_secs(60)));

        let polled = poll.join().expect("the poll thread");
        assert!(
            polled["events"]
                .as_array()
                .unwrap()
                .iter()
                .all(|event| { event["seq"].as_u64().unwrap() > last }),
            "{polled:#}"
        );
        let events = all_events(daemon, "cancel-1");
        assert_eq!(events["done"], json!(true));
        let end = events["events"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(end["type"], "final");
        assert_eq!(end["haltReason"], "cancelled");
    });
    // Cancelling an ended run is acknowledged, and says it was no longer going.
    let again = daemon.call("cancelAgent", json!({"runId": "cancel-1"}));
    assert_eq!(again, json!({"cancelled": false}));
}

#[test]
fn bad_agent_inputs_are_refused_with_the_reason() {
    let daemon = Daemon::start_demo();
    let refused = |params: Value, expected: &str| {
        let error = daemon.call_err("runAgent", params.clone());
        assert_eq!(error.code, -32602, "{params}: {error:?}");
        assert!(
            error.message.contains(expected),
            "{params}: {:?} lacks {expected:?}",
            error.message
        );
        // The structured data says which method's params were wrong.
        let data = format!("{:?}", error_data(&error));
        assert!(data.contains("runAgent"), "{data}");
    };
    refused(json!({"task": ""}), "task is empty");
    refused(json!({"task": "   "}), "task is empty");
    refused(json!({"task": "x", "backend": "nope"}), "\"offline\"");
    refused(
        json!({"task": "x", "costCeilingUsd": -0.5}),
        "must be a positive number",
    );
    refused(json!({"task": "x", "runId": "no spaces"}), "runId must be");
    refused(json!({"backend": "offline"}), "task");

    // A run that does not exist (or not for this token) cannot be followed or cancelled.
    for method in ["agentEvents", "cancelAgent"] {
        let error = daemon.call_err(method, json!({"runId": "never-started"}));
        assert_eq!(error.code, -32602, "{method}");
        assert!(error.message.contains("never-started"), "{error:?}");
    }
    let error = daemon.call_err("agentEvents", json!({}));
    assert_eq!(error.code, -32602);
    assert!(error.message.contains("runId"), "{error:?}");

    // A runId already taken is refused rather than mixing two runs' events.
    let first = daemon.call("runAgent", json!({"task": "unsolvable", "runId": "taken"}));
    assert_eq!(first["keyFacts"]["cannot"], json!(true), "{first:#}");
    let error = daemon.call_err("runAgent", json!({"task": "unsolvable", "runId": "taken"}));
    assert!(error.message.contains("exists already"), "{error:?}");
}

/// A stream whose error event echoes the key, after usage was reported (the call was billed).
fn echoing_error_stream(prompt_tokens: u64) -> String {
    let usage = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
                       "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 7,
                                 "total_tokens": prompt_tokens + 7}});
    let error = json!({"error": {"type": "invalid_request_error",
                       "message": format!("key {SCRIPTED_KEY} may not use this model")}});
    format!("data: {usage}\n\ndata: {error}\n\n")
}

#[test]
fn a_provider_error_echoing_the_key_reaches_no_result_event_log_or_cli_output() {
    let llm = ScriptedLlm::start(vec![
        LlmReply::Stream(echoing_error_stream(900)),
        LlmReply::Stream(echoing_error_stream(900)),
    ]);
    let daemon = daemon_with_llm(&llm, 1.0);
    let result = daemon.call(
        "runAgent",
        json!({"task": "Describe the shop's tables", "runId": "echo-1",
               "sessionId": "echo-session"}),
    );
    assert_eq!(result["status"], "failed", "{result:#}");
    let error = result["error"].as_str().expect("an error");
    assert!(!error.contains(SCRIPTED_KEY), "{error}");
    assert!(error.contains("[redacted]"), "{error}");
    let events = all_events(&daemon, "echo-1");
    assert!(!events.to_string().contains(SCRIPTED_KEY), "{events:#}");

    // The billed call that failed is in the run's session and its trace like any other.
    let summary = daemon.call("sessionSummary", json!({"sessionId": "echo-session"}));
    assert_eq!(summary["tokensIn"], json!(900), "{summary:#}");
    let types = event_types(&events);
    assert!(types.contains(&"llm_call".to_owned()), "{types:?}");
    let failed_call = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|event| event["type"] == "llm_call")
        .expect("the llm_call event");
    assert_eq!(failed_call["usage"]["tokensIn"], json!(900));
    assert!(failed_call["error"].as_str().is_some(), "{failed_call:#}");

    // Through the CLI: the key is on neither stream.
    let output = daemon.run_client(&["agent", "Describe the shop's tables"], &[]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!all.contains(SCRIPTED_KEY), "{all}");
    assert!(all.contains("[redacted]"), "{all}");
    assert!(!daemon.stderr().contains(SCRIPTED_KEY));
}

/// `wire` read into `T` and written back: the same JSON, member for member.
fn round_trip<T: Serialize + DeserializeOwned>(wire: &Value) -> T {
    let typed: T =
        serde_json::from_value(wire.clone()).unwrap_or_else(|error| panic!("{error}: {wire:#}"));
    let written = serde_json::to_value(&typed).expect("serialize");
    assert_eq!(written, *wire, "written back differently");
    typed
}

#[test]
fn agent_results_and_events_read_back_through_the_protocol_types_unchanged() {
    // A scripted model's run halted by the cost ceiling (priced calls, an error event, a halt
    // with its detail), and offline runs: one completed, one dry-run, one out of steps.
    let (_llm, daemon) = one_describe_call_at_ten_dollars();
    let task = "Which customer has the most completed orders, and what is their completed total?";
    let runs = [
        json!({"task": "Describe the shop's tables", "costCeilingUsd": 0.10,
               "tools": ["demo/describe_schema"], "runId": "wire-ceiling"}),
        json!({"task": task, "backend": "offline", "runId": "wire-completed"}),
        json!({"task": task, "backend": "offline", "dryRun": true, "runId": "wire-dry"}),
        json!({"task": task, "backend": "offline", "maxSteps": 1, "runId": "wire-steps"}),
    ];
    let mut seen = Vec::new();
    let mut statuses = Vec::new();
    for params in runs {
        let run_id = params["runId"].as_str().unwrap().to_owned();
        let result: RunAgentResult = round_trip(&daemon.call("runAgent", params));
        assert_eq!(result.run_id, run_id);
        statuses.push(result.status);
        let page: AgentEventsResult = round_trip(&all_events(&daemon, &run_id));
        assert!(page.done);
        for event in &page.events {
            assert_eq!(event.run_id, run_id);
            assert_ne!(event.kind, AgentEventKind::Unknown, "{event:?}");
            let wire = serde_json::to_value(event).unwrap();
            seen.push(wire["type"].as_str().unwrap().to_owned());
        }
        // The typed final event agrees with the typed result.
        let Some(AgentEventKind::Final { status, usage, .. }) =
            page.events.last().map(|event| &event.kind)
        else {
            panic!("the last event is not the final one: {page:?}");
        };
        assert_eq!((*status, *usage), (result.status, result.usage));
    }
    assert_eq!(
        statuses,
        [
            RunStatus::Halted,
            RunStatus::Completed,
            RunStatus::Completed,
            RunStatus::Halted
        ]
    );
    for kind in [
        "started",
        "llm_call",
        "tool_call",
        "tool_result",
        "error",
        "final",
    ] {
        assert!(
            seen.iter().any(|seen| seen == kind),
            "no {kind} in {seen:?}"
        );
    }
}
