//! The offline planner on the tasks a user would plausibly give the bundled toolkit
//! (`eval_tasks.json`, phrased as users write, typos included), run through the public `Agent`
//! API over a real `tool-cli-daemon` serving the demo server. Each expected figure is computed
//! independently from the same real tools (our own SQL, our own exchange-rate or Python call, the
//! resource read through the daemon), never written into the test.

use serde::Deserialize;
use serde_json::{Value, json};
use tool_cli_agent::request::{AgentRequest, RunStatus};
use tool_cli_tests::Daemon;

use crate::common::DaemonHost;
use crate::offline::run_offline;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    task: String,
    /// The tools called, in order.
    #[serde(default)]
    tools: Option<Vec<String>>,
    /// Where the expected figure comes from.
    #[serde(default)]
    truth: Option<Truth>,
    /// The task cannot be done with the toolkit: a "cannot" answer.
    #[serde(default)]
    cannot: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Truth {
    /// A query over the demo database; its first row's `v` is the figure.
    #[serde(default)]
    sql: Option<String>,
    /// Or a call of this demo tool…
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
    /// …and where in its result the figure is.
    #[serde(default)]
    pointer: Option<String>,
    /// Or a resource whose lines containing this text must be in the answer.
    #[serde(default)]
    resource: Option<String>,
    #[serde(default)]
    lines_with: Option<String>,
    /// How the answer writes the figure: `money` ($1,234.50 → 1234.50), `2dp`, `trim`.
    #[serde(default)]
    format: Option<String>,
    /// The figure is a list joined by this separator; every item must be in the answer.
    #[serde(default)]
    split: Option<String>,
}

/// The texts the answer must contain, from the real tools.
fn expected(daemon: &Daemon, truth: &Truth) -> Vec<String> {
    if let (Some(uri), Some(needle)) = (&truth.resource, &truth.lines_with) {
        let read = daemon.call("readResource", json!({"server": "demo", "uri": uri}));
        let text = read["contents"][0]["text"]
            .as_str()
            .expect("resource text")
            .to_owned();
        let lines: Vec<String> = text
            .lines()
            .filter(|line| line.contains(needle.as_str()))
            .map(|line| line.trim_end().to_owned())
            .collect();
        assert!(!lines.is_empty(), "{uri} has no line with {needle}");
        return lines;
    }
    let value = match (&truth.sql, &truth.tool) {
        (Some(sql), _) => {
            daemon.call_tool("demo", "sql_query", json!({"sql": sql}))["structuredContent"]["rows"]
                [0]["v"]
                .clone()
        }
        (None, Some(tool)) => {
            let result =
                daemon.call_tool("demo", tool, truth.arguments.clone().unwrap_or(json!({})));
            result
                .pointer(truth.pointer.as_deref().expect("a pointer with a tool"))
                .cloned()
                .unwrap_or(Value::Null)
        }
        (None, None) => panic!("a truth needs sql, a tool or a resource"),
    };
    assert!(!value.is_null(), "the truth query found nothing: {truth:?}");
    let text = match (&value, truth.format.as_deref()) {
        (Value::Number(n), Some("money" | "2dp")) => format!("{:.2}", n.as_f64().expect("number")),
        (Value::String(s), Some("trim")) => s.trim().to_owned(),
        (Value::String(s), _) => s.clone(),
        (other, _) => other.to_string(),
    };
    match &truth.split {
        Some(separator) => text.split(separator.as_str()).map(str::to_owned).collect(),
        None => vec![text],
    }
}

#[tokio::test]
async fn the_planner_answers_user_tasks_with_figures_from_the_real_tools() {
    let cases: Vec<Case> =
        serde_json::from_str(include_str!("eval_tasks.json")).expect("eval_tasks.json");
    let host = DaemonHost::new(Daemon::start_demo());
    let mut failures = Vec::new();
    for case in &cases {
        let request = AgentRequest {
            task: case.task.clone(),
            ..AgentRequest::default()
        };
        let (result, _) = run_offline(host.clone(), request).await;
        let called: Vec<&str> = result.tool_calls.iter().map(|c| c.tool.as_str()).collect();
        let mut problems = Vec::new();
        if result.status != RunStatus::Completed {
            problems.push(format!("status {:?}: {:?}", result.status, result.error));
        }
        if let Some(tools) = &case.tools
            && called != *tools
        {
            problems.push(format!("called {called:?}, expected {tools:?}"));
        }
        if case.cannot {
            if result.key_facts.get("cannot") != Some(&json!(true))
                || !result
                    .answer
                    .starts_with("I can't do that with the available tools")
            {
                problems.push("expected a \"cannot\" answer".into());
            }
            if result
                .tool_calls
                .iter()
                .any(|c| c.tool == "run_python" || c.tool == "rest_exchange_rate")
            {
                problems.push("a cannot answer made an action call".into());
            }
        }
        if let Some(truth) = &case.truth {
            for text in expected(&host.daemon, truth) {
                if !result.answer.contains(&text) {
                    problems.push(format!("the answer lacks {text:?}"));
                }
            }
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{:?}: {} (answer: {:?})",
                case.task,
                problems.join("; "),
                result.answer
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} tasks failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
