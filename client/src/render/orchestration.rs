//! Renderings of the orchestrator's answers: a dry-run's plan, how a routed call was routed,
//! a session's summary and the session list, per-tool health rows, and the agent's progress
//! lines. Pure: values in, text out; the caller sanitises before a terminal.

use std::fmt::Write as _;

use serde_json::Value;
use tool_cli_protocol::agent::{AgentEvent, AgentEventKind};
use tool_cli_protocol::methods::HealthResult;
use tool_cli_protocol::orchestration::{
    DryRunResult, ListSessionsResult, SelectionInfo, SessionSummary,
};

use super::health::{breaker, human_milliseconds, latency, table, utc_timestamp};
use super::{NAME_COLUMN_MAX, SUMMARY_WIDTH, compact, one_line, truncate};
use crate::sanitize;

/// A server-supplied name on one line, owned.
fn clean(text: &str) -> String {
    sanitize::line(text).into_owned()
}

/// `server (rule …)` and the alternatives with the rule that rejected each.
fn selection(selection: &SelectionInfo) -> String {
    let mut text = format!("{} (rule {})", clean(&selection.server), selection.rule);
    if !selection.alternatives.is_empty() {
        let rejected: Vec<String> = selection
            .alternatives
            .iter()
            .map(|alternative| {
                format!(
                    "{} (rejected by {})",
                    clean(&alternative.server),
                    alternative.rejected_by
                )
            })
            .collect();
        let _ = write!(text, "; not {}", rejected.join(", "));
    }
    text
}

/// Why a rule chose the server, in words, for the plan of a dry-run.
fn why(rule: &str) -> &'static str {
    match rule {
        "named" => "the call named the server",
        "explicit-mention" => "the session's task or the hint names the server or one of its tags",
        "argument-type" => "only this server's input schema accepts the arguments",
        "session-recency" => "this session used this server for the tool most recently",
        "similarity" => "its tool description is closest to the session's task or the hint",
        "priority" => "no earlier rule separated the servers: highest priority, then config order",
        _ => "the daemon's routing chose it",
    }
}

/// `tool-cli ... --dry-run`: what the call would do, and whether it would run.
pub(crate) fn dry_run(plan: &DryRunResult) -> String {
    let mut text = String::new();
    let verdict = match &plan.would_block_because {
        None => "would run".to_owned(),
        Some(reason) => format!("would be refused ({})", reason.code),
    };
    let _ = writeln!(
        text,
        "dry run of {}/{}: {verdict}; nothing was sent to any server",
        clean(&plan.server),
        clean(&plan.tool)
    );
    let _ = writeln!(text, "server:      {}", selection(&plan.selection));
    let _ = writeln!(text, "why:         {}", why(&plan.selection.rule));
    let arguments = Value::Object(plan.arguments.clone());
    let _ = writeln!(
        text,
        "arguments:   {}",
        truncate(&compact(&arguments), SUMMARY_WIDTH * 2)
    );
    let _ = writeln!(text, "timeout:     {} ms", plan.timeout_ms);
    let mut hints = Vec::new();
    if plan.hints.read_only {
        hints.push("read-only");
    }
    if plan.hints.destructive {
        hints.push("destructive (needs --yes)");
    }
    if plan.hints.idempotent {
        hints.push("idempotent");
    }
    if hints.is_empty() {
        hints.push("none");
    }
    let _ = writeln!(text, "hints:       {}", hints.join(", "));
    match &plan.would_block_because {
        None => {
            let _ = writeln!(
                text,
                "validation:  passed (arguments, policy, guards, breakers and bulkhead admit it)"
            );
        }
        Some(reason) => {
            let kind = serde_json::to_value(&reason.data)
                .ok()
                .and_then(|data| data.get("kind").and_then(Value::as_str).map(str::to_owned))
                .map(|kind| format!(" {kind}"))
                .unwrap_or_default();
            let _ = writeln!(
                text,
                "refused by:  {}{kind}: {}",
                reason.code,
                one_line(&reason.message, SUMMARY_WIDTH * 2)
            );
        }
    }
    text
}

/// The routing of a call made without naming its server, from its
/// `_meta["tool-cli/selection"]`: `routed to fs-a (rule argument-type; not fs-b (rejected by
/// argument-type))`.
pub(crate) fn routed_note(result: &Value) -> Option<String> {
    let info = result
        .get("_meta")?
        .get(tool_cli_protocol::meta::SELECTION)?;
    let info: SelectionInfo = serde_json::from_value(info.clone()).ok()?;
    Some(format!("routed to {}", selection(&info)))
}

/// `tool-cli session summary ID`.
pub(crate) fn session_summary(summary: &SessionSummary) -> String {
    let mut text = String::new();
    let mut line = |label: &str, value: String| {
        let _ = writeln!(text, "{label:<14}{value}");
    };
    line("session", clean(&summary.session_id));
    if let Some(task) = &summary.task {
        line("task", one_line(task, SUMMARY_WIDTH));
    }
    if !summary.labels.is_empty() {
        let labels: Vec<String> = summary.labels.iter().map(|label| clean(label)).collect();
        line("labels", labels.join(", "));
    }
    line("created", utc_timestamp(summary.created_at_ms / 1000));
    line("last used", utc_timestamp(summary.last_used_at_ms / 1000));
    line(
        "calls",
        format!(
            "{} ({} executed, {} errors)",
            summary.calls, summary.executed, summary.errors
        ),
    );
    line(
        "success rate",
        format!("{:.1}%", summary.success_rate * 100.0),
    );
    line(
        "latency",
        match &summary.latency_ms {
            Some(latency) if latency.samples > 0 => format!(
                "p50 {}, p95 {} ({} calls)",
                human_milliseconds(latency.p50),
                human_milliseconds(latency.p95),
                latency.samples
            ),
            _ => "-".to_owned(),
        },
    );
    line(
        "tokens",
        format!("{} in, {} out", summary.tokens_in, summary.tokens_out),
    );
    line("cost", format!("${:.6}", summary.cost_usd));
    if summary.tools_used.is_empty() {
        line("tools used", "none".to_owned());
    } else {
        let rows: Vec<Vec<String>> = summary
            .tools_used
            .iter()
            .map(|tool| {
                vec![
                    truncate(
                        &format!("{}/{}", clean(&tool.server), clean(&tool.tool)),
                        NAME_COLUMN_MAX * 2,
                    ),
                    tool.calls.to_string(),
                    tool.errors.to_string(),
                ]
            })
            .collect();
        text.push_str("\ntools used:\n");
        for row in table(&["TOOL", "CALLS", "ERRORS"], &rows).lines() {
            let _ = writeln!(text, "  {row}");
        }
    }
    if summary.rules_fired.is_empty() {
        text.push_str("\nrules fired:  none\n");
    } else {
        let rows: Vec<Vec<String>> = summary
            .rules_fired
            .iter()
            .map(|(rule, count)| vec![clean(rule), count.to_string()])
            .collect();
        text.push_str("\nrules fired:\n");
        for row in table(&["RULE", "CALLS"], &rows).lines() {
            let _ = writeln!(text, "  {row}");
        }
    }
    text
}

/// `tool-cli session list`.
pub(crate) fn sessions(result: &ListSessionsResult) -> String {
    if result.sessions.is_empty() {
        return "no sessions for this token; open one with `tool-cli session open --task TEXT`\n"
            .to_owned();
    }
    let rows: Vec<Vec<String>> = result
        .sessions
        .iter()
        .map(|session| {
            vec![
                clean(&session.session_id),
                session.calls.to_string(),
                utc_timestamp(session.last_used_at_ms / 1000),
                session
                    .labels
                    .iter()
                    .map(|label| clean(label))
                    .collect::<Vec<_>>()
                    .join(","),
                session
                    .task
                    .as_deref()
                    .map(|task| one_line(task, SUMMARY_WIDTH / 2))
                    .unwrap_or_default(),
            ]
        })
        .collect();
    table(&["SESSION", "CALLS", "LAST USED", "LABELS", "TASK"], &rows)
}

/// The per-tool rows of `tool-cli health --tools`: every tool the daemon has seen called, under
/// its server, with that server's breaker (the wire carries breakers per server).
pub(crate) fn tool_health(result: &HealthResult) -> String {
    let rows: Vec<Vec<String>> = result
        .servers
        .iter()
        .flat_map(|server| {
            server.tools.iter().flatten().map(move |tool| {
                vec![
                    truncate(&clean(&server.name), NAME_COLUMN_MAX),
                    truncate(&clean(&tool.name), NAME_COLUMN_MAX),
                    tool.calls.to_string(),
                    tool.successes.to_string(),
                    latency(tool.latency_ms.as_ref()),
                    tool.last_used_ms
                        .map(|ms| utc_timestamp(ms / 1000))
                        .unwrap_or_else(|| "-".to_owned()),
                    breaker(&server.breaker),
                ]
            })
        })
        .collect();
    if rows.is_empty() {
        return "no tool has been called since the daemon started\n".to_owned();
    }
    table(
        &[
            "SERVER",
            "TOOL",
            "CALLS",
            "OK",
            "P50/P95",
            "LAST USED",
            "BREAKER",
        ],
        &rows,
    )
}

/// What the agent's progress display has seen so far.
#[derive(Debug, Default)]
pub(crate) struct AgentProgress {
    /// The run's cost so far in USD, summed from `llm_call` events.
    pub(crate) cost_usd: f64,
    /// Whether some LLM call was unpriced (`costUsd: null`).
    pub(crate) unpriced: bool,
}

impl AgentProgress {
    fn cost(&self) -> String {
        if self.unpriced {
            "cost unknown".to_owned()
        } else {
            format!("${:.4} so far", self.cost_usd)
        }
    }

    /// The progress line of one `agentEvents` event, `None` for a type shown by no line.
    pub(crate) fn line(&mut self, event: &AgentEvent) -> Option<String> {
        let target = |server: Option<&str>, tool: &str| {
            format!("{}/{}", clean(server.unwrap_or("*")), clean(tool))
        };
        match &event.kind {
            AgentEventKind::Started {
                backend,
                model,
                available_tools,
                ..
            } => Some(format!(
                "run {} started: backend {}, model {}, {} tools",
                clean(&event.run_id),
                clean(backend),
                clean(model),
                available_tools.len()
            )),
            AgentEventKind::LlmCall {
                step,
                usage,
                stop_reason,
                ..
            } => {
                match usage.cost_usd {
                    Some(cost) => self.cost_usd += cost,
                    None => self.unpriced = true,
                }
                Some(format!(
                    "step {step}: llm {} ({} in, {} out tokens), {}",
                    clean(stop_reason),
                    usage.tokens_in,
                    usage.tokens_out,
                    self.cost()
                ))
            }
            AgentEventKind::ToolCall {
                step,
                server,
                tool,
                arguments,
                dry_run,
            } => {
                let dry = if *dry_run { " (dry run)" } else { "" };
                Some(format!(
                    "step {step}: call {}{dry} {}",
                    target(server.as_deref(), tool),
                    truncate(&compact(arguments), SUMMARY_WIDTH)
                ))
            }
            AgentEventKind::ToolResult {
                step,
                server,
                tool,
                is_error,
                result_summary,
                latency_ms,
                selection_rule,
            } => {
                let outcome = if *is_error {
                    format!("error: {}", one_line(result_summary, SUMMARY_WIDTH))
                } else {
                    "ok".to_owned()
                };
                let rule = selection_rule
                    .as_deref()
                    .map(|rule| format!(", rule {}", clean(rule)))
                    .unwrap_or_default();
                Some(format!(
                    "step {step}: {} {outcome} in {}{rule}, {}",
                    target(Some(server), tool),
                    human_milliseconds(*latency_ms as f64),
                    self.cost()
                ))
            }
            AgentEventKind::Final {
                status,
                halt_reason,
                halt_detail,
                usage,
                ..
            } => {
                let halt = halt_reason
                    .map(|reason| match halt_detail {
                        Some(detail) => {
                            format!(" ({}: {})", reason.as_str(), clean(&detail.message))
                        }
                        None => format!(" ({})", reason.as_str()),
                    })
                    .unwrap_or_default();
                let total = match usage.cost_usd {
                    Some(cost) => format!("${cost:.4}"),
                    None => "unknown cost".to_owned(),
                };
                Some(format!("run {}{halt}, {total} in all", status.as_str()))
            }
            AgentEventKind::Error { step, message } => {
                let at = step
                    .filter(|step| *step > 0)
                    .map(|step| format!("step {step}: "))
                    .unwrap_or_default();
                Some(format!(
                    "{at}error: {}",
                    one_line(message, SUMMARY_WIDTH * 2)
                ))
            }
            AgentEventKind::Unknown => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_dry_run_names_the_server_the_rule_why_and_the_verdict() {
        let plan: DryRunResult = serde_json::from_value(json!({
            "executed": false, "server": "fs-a", "tool": "read_file",
            "arguments": {"path": "/tmp/x"},
            "selection": {"rule": "argument-type", "server": "fs-a",
                          "alternatives": [{"server": "gh", "rejectedBy": "argument-type"}]},
            "timeoutMs": 60000,
            "hints": {"readOnly": true, "destructive": false, "idempotent": false}
        }))
        .unwrap();
        let text = dry_run(&plan);
        assert!(
            text.starts_with("dry run of fs-a/read_file: would run;"),
            "{text}"
        );
        assert!(
            text.contains(
                "server:      fs-a (rule argument-type); not gh (rejected by argument-type)"
            ),
            "{text}"
        );
        assert!(
            text.contains("only this server's input schema accepts"),
            "{text}"
        );
        assert!(text.contains(r#"arguments:   {"path":"/tmp/x"}"#), "{text}");
        assert!(text.contains("hints:       read-only"), "{text}");
        assert!(text.contains("validation:  passed"), "{text}");

        let blocked: DryRunResult = serde_json::from_value(json!({
            "executed": false, "server": "demo", "tool": "sql_query", "arguments": {},
            "selection": {"rule": "named", "server": "demo", "alternatives": []},
            "timeoutMs": 1000, "hints": {"readOnly": false, "destructive": true, "idempotent": false},
            "wouldBlockBecause": {"code": -32602, "message": "sql is required",
                                  "data": {"kind": "invalidArguments", "server": "demo", "tool": "sql_query",
                                           "errors": []}}
        }))
        .unwrap();
        let text = dry_run(&blocked);
        assert!(text.contains("would be refused (-32602)"), "{text}");
        assert!(text.contains("destructive (needs --yes)"), "{text}");
        assert!(
            text.contains("refused by:  -32602 invalidArguments"),
            "{text}"
        );
        assert!(text.contains("sql is required"), "{text}");
    }

    #[test]
    fn a_session_summary_is_a_readable_table() {
        let summary: SessionSummary = serde_json::from_value(json!({
            "sessionId": "s1", "task": "read the notes", "labels": ["ci"],
            "createdAtMs": 0, "lastUsedAtMs": 86_400_000u64,
            "calls": 4, "executed": 3, "errors": 1, "successRate": 0.75,
            "latencyMs": {"p50": 2.5, "p95": 40.0, "samples": 3},
            "tokensIn": 120, "tokensOut": 30, "costUsd": 0.0123,
            "toolsUsed": [{"server": "fs", "tool": "read_file", "calls": 3, "errors": 1}],
            "rulesFired": {"argument-type": 2, "named": 1}
        }))
        .unwrap();
        let text = session_summary(&summary);
        for expected in [
            "session       s1",
            "task          read the notes",
            "labels        ci",
            "last used     1970-01-02 00:00:00 UTC",
            "calls         4 (3 executed, 1 errors)",
            "success rate  75.0%",
            "latency       p50 2.5ms, p95 40ms (3 calls)",
            "tokens        120 in, 30 out",
            "cost          $0.012300",
            "  fs/read_file  3      1",
            "  argument-type  2",
        ] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
    }

    /// An event as the daemon sends it, read into the protocol's type.
    fn event(wire: Value) -> AgentEvent {
        serde_json::from_value(wire.clone()).unwrap_or_else(|error| panic!("{wire}: {error}"))
    }

    #[test]
    fn agent_progress_counts_the_cost_so_far() {
        let mut progress = AgentProgress::default();
        let started = progress
            .line(&event(
                json!({"runId": "r1", "seq": 1, "type": "started", "task": "t",
                       "backend": "openai", "model": "m", "availableTools": ["demo/a", "demo/b"]}),
            ))
            .unwrap();
        assert_eq!(started, "run r1 started: backend openai, model m, 2 tools");
        let llm = progress
            .line(&event(
                json!({"runId": "r1", "seq": 2, "type": "llm_call", "step": 1,
                       "stopReason": "tool_use", "toolCalls": 1, "latencyMs": 40,
                       "usage": {"tokensIn": 10, "tokensOut": 2, "cacheRead": 0,
                                 "cacheWrite": 0, "costUsd": 0.25, "llmCalls": 1}}),
            ))
            .unwrap();
        assert_eq!(
            llm,
            "step 1: llm tool_use (10 in, 2 out tokens), $0.2500 so far"
        );
        let call = progress
            .line(&event(
                json!({"runId": "r1", "seq": 3, "type": "tool_call", "step": 1, "server": null,
                       "tool": "read", "arguments": {"path": "x"}, "dryRun": false}),
            ))
            .unwrap();
        assert_eq!(call, r#"step 1: call */read {"path":"x"}"#);
        let result = progress
            .line(&event(
                json!({"runId": "r1", "seq": 4, "type": "tool_result", "step": 1,
                       "server": "fs", "tool": "read", "isError": true,
                       "resultSummary": "no such file", "latencyMs": 12,
                       "selectionRule": "priority"}),
            ))
            .unwrap();
        assert_eq!(
            result,
            "step 1: fs/read error: no such file in 12ms, rule priority, $0.2500 so far"
        );
        let last = progress
            .line(&event(
                json!({"runId": "r1", "seq": 5, "type": "final", "status": "halted",
                       "answer": "", "haltReason": "cost_ceiling",
                       "usage": {"tokensIn": 10, "tokensOut": 2, "cacheRead": 0,
                                 "cacheWrite": 0, "costUsd": 0.25, "llmCalls": 1}}),
            ))
            .unwrap();
        assert_eq!(last, "run halted (cost_ceiling), $0.2500 in all");
        // A type a newer daemon may send is read, and shown by no line.
        let newer = event(json!({"runId": "r1", "seq": 6, "type": "something_new", "x": 1}));
        assert_eq!(newer.kind, AgentEventKind::Unknown);
        assert_eq!(progress.line(&newer), None);
    }
}
