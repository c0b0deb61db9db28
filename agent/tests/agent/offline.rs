//! The offline planner end to end: the public `Agent` API over a real `tool-cli-daemon` serving
//! the bundled demo server and the real `@modelcontextprotocol/server-filesystem`, with the
//! expected figures computed independently through SQL and the file system.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use tool_cli_agent::config::AgentConfig;
use tool_cli_agent::events::ChannelSink;
use tool_cli_agent::{Agent, new_run_id};
use tool_cli_protocol::agent::{AgentEventKind, RunAgentParams, RunAgentResult, RunStatus};
use tool_cli_tests::{Daemon, filesystem_server};

use crate::common::DaemonHost;

pub(crate) async fn run_offline(
    host: Arc<DaemonHost>,
    request: RunAgentParams,
) -> (RunAgentResult, Vec<AgentEventKind>) {
    let agent = Agent::new(AgentConfig::default()).expect("default config");
    let prepared = agent
        .prepare(request, new_run_id(), |_| None)
        .expect("valid request");
    assert_eq!(prepared.backend_name(), "offline");
    let (sink, mut receiver) = ChannelSink::new(256);
    let result = prepared
        .run(host, Arc::new(sink), CancellationToken::new())
        .await;
    let mut events = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        events.push(event.kind);
    }
    (result, events)
}

fn task(text: String) -> RunAgentParams {
    RunAgentParams {
        task: text,
        ..RunAgentParams::default()
    }
}

/// The customer with the most completed orders, and their completed total in dollars, computed
/// with our own SQL (not the planner's) over the demo database's current schema.
fn expected_demo_figures(daemon: &Daemon) -> (String, f64, u64) {
    let result = daemon.call_tool(
        "demo",
        "sql_query",
        json!({"sql": "SELECT c.name AS name, COUNT(*) AS n, ROUND(SUM(p.price_usd * o.quantity), 2) AS total \
                       FROM customers c JOIN orders o ON o.customer_id = c.id \
                       JOIN products p ON p.id = o.product_id \
                       WHERE lower(o.status) IN ('completed', 'complete', 'delivered', 'fulfilled', \
                                                 'done', 'closed', 'paid') \
                       GROUP BY c.id ORDER BY n DESC, c.id LIMIT 1"}),
    );
    let row = &result["structuredContent"]["rows"][0];
    (
        row["name"].as_str().expect("name").to_owned(),
        row["total"].as_f64().expect("a total in USD"),
        row["n"].as_u64().expect("count"),
    )
}

#[tokio::test]
async fn a_customers_order_total_against_a_threshold_over_the_demo_server() {
    let daemon = Daemon::start_demo();
    let (customer, total, completed) = expected_demo_figures(&daemon);
    assert!(
        total > 1.0 && completed > 0,
        "the demo data has completed orders"
    );
    let host = DaemonHost::new(daemon);
    for (threshold, exceeds) in [(total - 1.0, true), (total + 1.0, false)] {
        let threshold = threshold.floor();
        let (result, events) = run_offline(host.clone(), task(format!(
            "Look up customer {customer}'s orders, sum their total, and tell me if it exceeds ${threshold}"
        )))
        .await;
        assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
        let facts = &result.key_facts;
        assert_eq!(facts["customer_name"], json!(customer));
        assert!(
            (facts["order_total"].as_f64().expect("total") - total).abs() < 0.005,
            "{} vs {total}",
            facts["order_total"]
        );
        assert_eq!(facts["threshold"], json!(threshold));
        assert_eq!(facts["exceeds_threshold"], json!(exceeds));
        assert_eq!(facts["num_completed_orders"], json!(completed));
        assert!(
            result.answer.contains(&format!("{total:.2}")),
            "{}",
            result.answer
        );
        // The schema was discovered live, then the customer found, then the orders summed.
        let tools: Vec<&str> = result.tool_calls.iter().map(|c| c.tool.as_str()).collect();
        assert_eq!(tools, ["describe_schema", "sql_query", "sql_query"]);
        assert!(
            result
                .tool_calls
                .iter()
                .all(|c| !c.is_error && c.server == "demo")
        );
        assert!(
            result
                .tool_calls
                .iter()
                .all(|c| c.selection_rule.as_deref() == Some("named"))
        );
        // Zero tokens, the same event shape as a model.
        assert_eq!(result.usage.tokens_in + result.usage.tokens_out, 0);
        assert_eq!(result.usage.cost_usd, Some(0.0));
        assert_eq!(result.usage.llm_calls, 4);
        assert!(matches!(
            events.first(),
            Some(AgentEventKind::Started { .. })
        ));
        assert!(matches!(
            events.last(),
            Some(AgentEventKind::Final {
                status: RunStatus::Completed,
                ..
            })
        ));
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, AgentEventKind::LlmCall { .. }))
                .count(),
            4
        );
    }
}

#[tokio::test]
async fn an_unknown_customer_is_cannot_with_the_reason_not_an_invented_total() {
    let host = DaemonHost::new(Daemon::start_demo());
    let (result, events) = run_offline(host, task(
        "Look up customer Nobody Atall's orders, sum their total, and tell me if it exceeds $10".into(),
    ))
    .await;
    assert_eq!(result.status, RunStatus::Cannot, "{result:#?}");
    assert!(
        result.answer.contains("no customer named \"Nobody Atall\""),
        "{result:#?}"
    );
    assert_eq!(result.key_facts["cannot"], json!(true));
    assert!(matches!(
        events.last(),
        Some(AgentEventKind::Final {
            status: RunStatus::Cannot,
            ..
        })
    ));
}

/// The bad input of issue 24, each over the real demo server: never a confident answer.
#[tokio::test]
async fn bad_tasks_end_in_cannot_or_refused_naming_what_was_wrong() {
    let host = DaemonHost::new(Daemon::start_demo());
    let run = |text: &str| run_offline(host.clone(), task(text.into()));

    // Another language: nothing of it is placed, and the answer names it.
    let (result, _) = run("¿Cuántos clientes hay en Alemania?").await;
    assert_eq!(result.status, RunStatus::Cannot, "{result:#?}");
    assert!(result.answer.contains("Cuántos"), "{}", result.answer);

    // Only words that carry no meaning.
    let (result, _) = run("the of and is to a").await;
    assert_eq!(result.status, RunStatus::Cannot, "{result:#?}");

    // SQL inside a quoted name is a name to look up (written as a literal), never SQL: no
    // such customer, and the orders table is still there.
    let (result, _) =
        run("How many orders has customer \"x'; DROP TABLE orders; --\" placed?").await;
    assert_eq!(result.status, RunStatus::Cannot, "{result:#?}");
    assert!(
        result.answer.contains("x'; DROP TABLE orders; --"),
        "{}",
        result.answer
    );
    for call in &result.tool_calls {
        let sql = call.arguments["sql"].as_str().unwrap_or("");
        assert!(!sql.contains("DROP TABLE orders; --'"), "{sql}");
    }
    let count = host.daemon.call_tool(
        "demo",
        "sql_query",
        json!({"sql": "SELECT count(*) AS n FROM orders"}),
    );
    assert_eq!(count["structuredContent"]["rows"][0]["n"], json!(500));

    // A tool that does not exist.
    let (result, _) = run("Use the frobnicate_widgets tool to tidy the orders").await;
    assert_eq!(result.status, RunStatus::Cannot, "{result:#?}");
    assert!(
        result.answer.contains("frobnicate_widgets"),
        "{}",
        result.answer
    );
    assert!(
        result
            .tool_calls
            .iter()
            .all(|c| c.tool != "frobnicate_widgets"),
        "{result:#?}"
    );

    // A write, in SQL or in words: refused before any call.
    for text in [
        "Run the query DELETE FROM orders WHERE status = 'cancelled'",
        "Set the price of the Wireless Mouse to $19.99",
    ] {
        let (result, events) = run(text).await;
        assert_eq!(result.status, RunStatus::Refused, "{text}: {result:#?}");
        assert!(result.answer.starts_with("Refused:"), "{}", result.answer);
        assert!(result.tool_calls.is_empty(), "nothing was run: {result:#?}");
        assert!(matches!(
            events.last(),
            Some(AgentEventKind::Final {
                status: RunStatus::Refused,
                ..
            })
        ));
    }
}

#[tokio::test]
async fn a_dry_run_plans_without_executing() {
    let host = DaemonHost::new(Daemon::start_demo());
    let request = RunAgentParams {
        dry_run: true,
        ..task(
            "Look up customer Ada Okafor's orders, sum their total, and tell me if it exceeds $100"
                .into(),
        )
    };
    let (result, _) = run_offline(host.clone(), request).await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    assert_eq!(result.key_facts["dry_run"], json!(true));
    let calls = host.calls.lock().expect("calls").clone();
    assert_eq!(calls.len(), 1);
    assert!(calls[0].dry_run);
    assert_eq!(
        result.tool_calls[0]
            .result
            .as_ref()
            .and_then(|r| r.get("executed")),
        Some(&json!(false))
    );
}

fn write_lines(dir: &Path, name: &str, lines: usize) -> String {
    std::fs::create_dir_all(dir).expect("files dir");
    let text: Vec<String> = (1..=lines)
        .map(|i| format!("line {i}: some text"))
        .collect();
    let path = dir.join(name);
    // No newline after the last line: it still counts.
    std::fs::write(&path, text.join("\n")).expect("write file");
    path.to_string_lossy().into_owned()
}

#[tokio::test]
async fn a_line_count_over_the_real_filesystem_server() {
    let mut file = String::new();
    let daemon = Daemon::start_with_dir(|dir| {
        let root = dir.join("files");
        file = write_lines(&root, "notes.txt", 17);
        json!({"mcpServers": {"filesystem": filesystem_server(&root)}})
    });
    let host = DaemonHost::new(daemon);
    let (result, _) = run_offline(
        host.clone(),
        task(format!(
            "Read {file} with the filesystem server and tell me how many lines it has"
        )),
    )
    .await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    assert_eq!(result.key_facts["line_count"], json!(17));
    assert_eq!(result.key_facts["tool"], json!("read_text_file"));
    assert_eq!(result.answer, format!("{file} has 17 lines."));

    // A relative path is resolved against the server's allowed directory, found live.
    let (result, _) = run_offline(
        host.clone(),
        task("Read notes.txt with the filesystem server and tell me how many lines it has".into()),
    )
    .await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    let tools: Vec<&str> = result.tool_calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, ["list_allowed_directories", "read_text_file"]);
    assert_eq!(result.key_facts["line_count"], json!(17));

    // A file that is not there: the run fails with the server's reason.
    let (result, _) = run_offline(
        host,
        task("Read /nowhere/missing.txt and tell me how many lines it has".into()),
    )
    .await;
    assert_eq!(result.status, RunStatus::Failed, "{result:#?}");
    assert!(
        result
            .error
            .as_deref()
            .unwrap_or("")
            .contains("reading /nowhere/missing.txt failed")
    );
}

/// Two servers offer `read_text_file` with the same schema: the agent names no server and the
/// daemon's routing decides, reporting the rule.
#[tokio::test]
async fn a_tool_on_two_servers_is_routed_by_the_daemon() {
    let mut file = String::new();
    let daemon = Daemon::start_with_dir(|dir| {
        let root = dir.join("shared");
        file = write_lines(&root, "report.md", 5);
        json!({"mcpServers": {"docs": filesystem_server(&root), "archive": filesystem_server(&root)}})
    });
    let host = DaemonHost::new(daemon);
    let (result, events) = run_offline(
        host.clone(),
        task(format!("Read {file} and tell me how many lines it has")),
    )
    .await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    assert_eq!(result.key_facts["line_count"], json!(5));
    assert!(
        result
            .available_tools
            .contains(&"*/read_text_file".to_owned()),
        "{:?}",
        result.available_tools
    );
    let calls = host.calls.lock().expect("calls").clone();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].server, None,
        "the planner leaves the choice to the daemon"
    );
    let record = &result.tool_calls[0];
    let rule = record
        .selection_rule
        .as_deref()
        .expect("the daemon reports its rule");
    assert!(
        [
            "explicit-mention",
            "argument-type",
            "session-recency",
            "similarity",
            "priority"
        ]
        .contains(&rule),
        "{rule}"
    );
    assert!(
        ["docs", "archive"].contains(&record.server.as_str()),
        "{}",
        record.server
    );
    assert_eq!(result.key_facts["server"], json!(record.server));
    let traced = events.iter().any(|event| {
        matches!(event,
        AgentEventKind::ToolResult { selection_rule: Some(r), .. } if r == rule)
    });
    assert!(traced, "the tool_result event carries the rule");
    assert_eq!(
        calls[0].hint.as_deref(),
        Some(format!("Read {file} and tell me how many lines it has").as_str())
    );

    // The task names a server: the agent still names none, and the daemon's routing follows
    // the task it is given as the hint.
    let (result, _) = run_offline(
        host.clone(),
        task(format!(
            "Read {file} with the archive server and tell me how many lines it has"
        )),
    )
    .await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    let record = &result.tool_calls[0];
    assert_eq!(record.selection_rule.as_deref(), Some("explicit-mention"));
    assert_eq!(record.server, "archive");
    assert_eq!(result.key_facts["line_count"], json!(5));
}
