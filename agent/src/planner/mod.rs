//! The offline backend: a deterministic planner that plays the model's part by rules.
//!
//! It is an [`LlmBackend`] like the others, so a run with it goes through the same loop, guards,
//! events and trace, with zero tokens. Each turn it re-reads the conversation (its own earlier
//! calls and their results, exactly what a model would see) and decides the next call or the
//! final answer; it holds no state of its own. It discovers everything live through the tools:
//! the database schema through `describe_schema` (or `sqlite_master`), the filesystem's allowed
//! directories for a relative path. When no rule fits the task, or a call fails, it answers
//! with [`LlmError::NoPlan`] and a reason, so the run fails honestly instead of inventing an
//! answer.

mod ask;
mod compute;
mod countries;
mod data_money;
mod dates;
mod direct;
mod documents;
mod files;
mod finance;
mod general;
mod parse;
mod rates;
mod sql;
mod tools;
mod words;
mod writes;

use serde_json::{Map, Value, json};

use crate::backend::{
    ExposedTool, LlmBackend, LlmError, LlmRequest, LlmResponse, LlmToolCall, ResponseIdentity,
    StopReason, ToolResultTurn, Turn,
};
use crate::cost::Usage;
use crate::host::BoxFuture;
use parse::Intent;

/// The deterministic rule-based planner.
#[derive(Debug, Default, Clone)]
pub struct OfflinePlanner;

impl OfflinePlanner {
    /// The planner.
    pub fn new() -> Self {
        Self
    }
}

/// The model id the planner reports (priced at zero).
pub const OFFLINE_MODEL: &str = "offline-planner";

/// What to do next.
enum Action<'a> {
    Call {
        tool: &'a ExposedTool,
        arguments: Value,
    },
    Finish {
        answer: String,
        key_facts: Map<String, Value>,
    },
}

/// One earlier call and its answer.
struct Past<'a> {
    call: &'a LlmToolCall,
    result: Option<&'a ToolResultTurn>,
}

impl Past<'_> {
    /// The result value when the call succeeded; the error text otherwise.
    fn value(&self) -> Result<&Value, String> {
        match self.result {
            Some(result) if !result.is_error => result
                .result
                .as_ref()
                .ok_or_else(|| "the call returned nothing".to_owned()),
            Some(result) => Err(crate::summary::one_line(&result.content)),
            None => Err("the call has no result".to_owned()),
        }
    }
}

fn history<'a>(turns: &'a [Turn]) -> Vec<Past<'a>> {
    let mut past = Vec::new();
    for (index, turn) in turns.iter().enumerate() {
        if let Turn::Assistant { tool_calls, .. } = turn {
            let results = match turns.get(index + 1) {
                Some(Turn::ToolResults(results)) => results.as_slice(),
                _ => &[],
            };
            for call in tool_calls {
                past.push(Past {
                    call,
                    result: results.iter().find(|r| r.call_id == call.id),
                });
            }
        }
    }
    past
}

impl LlmBackend for OfflinePlanner {
    fn name(&self) -> &str {
        "offline"
    }

    fn model(&self) -> &str {
        OFFLINE_MODEL
    }

    fn input_token_bound(&self, _request: &LlmRequest<'_>) -> u64 {
        0
    }

    fn complete<'a>(
        &'a self,
        request: LlmRequest<'a>,
    ) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        Box::pin(async move {
            let past = history(request.turns);
            let action = decide(&request, &past).map_err(LlmError::NoPlan)?;
            Ok(match action {
                Action::Call { tool, arguments } => LlmResponse {
                    text: String::new(),
                    tool_calls: vec![LlmToolCall {
                        id: format!("plan_{}", past.len() + 1),
                        name: tool.name.clone(),
                        arguments,
                    }],
                    usage: Usage::default(),
                    stop: StopReason::ToolUse,
                    raw_stop: "tool_use".into(),
                    identity: ResponseIdentity::default(),
                },
                Action::Finish { answer, key_facts } => LlmResponse {
                    text: json!({"answer": answer, "keyFacts": key_facts}).to_string(),
                    tool_calls: Vec::new(),
                    usage: Usage::default(),
                    stop: StopReason::EndTurn,
                    raw_stop: "end_turn".into(),
                    identity: ResponseIdentity::default(),
                },
            })
        })
    }
}

fn decide<'a>(request: &LlmRequest<'a>, past: &[Past<'a>]) -> Result<Action<'a>, String> {
    if let Some(last) = past.last()
        && let Ok(value) = last.value()
        && value.get("executed") == Some(&Value::Bool(false))
    {
        return Ok(dry_run_finish(last, value));
    }
    if let Some(refusal) = general::refusal(request) {
        return Ok(refusal);
    }
    match parse::intent(request.task())? {
        Some(Intent::OrderTotal {
            customer,
            threshold,
            currency,
        }) => {
            if sql_tool(request.tools).is_none() {
                return Ok(general::cannot(
                    request,
                    "the task needs a SQL tool (one like sql_query taking a \"sql\" string) and \
                     none is available to this run",
                ));
            }
            orders(
                request.tools,
                past,
                &customer,
                threshold,
                currency.as_deref(),
            )
        }
        Some(Intent::LineCount { path }) => {
            if files::read_tool(request.tools, request.task()).is_none() {
                return Ok(general::cannot(
                    request,
                    "the task needs a file-reading tool (read_text_file or read_file of a \
                     filesystem server) and none is available to this run",
                ));
            }
            line_count(request.tools, request.task(), past, &path)
        }
        None => general::decide(request, past),
    }
}

/// In a dry-run the first call's answer is all there is: report the plan so far.
fn dry_run_finish<'a>(last: &Past<'_>, value: &Value) -> Action<'a> {
    let mut key_facts = Map::new();
    key_facts.insert("dry_run".into(), json!(true));
    key_facts.insert(
        "planned_call".into(),
        json!({"tool": value.get("tool").cloned().unwrap_or_else(|| json!(last.call.name)),
               "server": value.get("server"), "arguments": last.call.arguments}),
    );
    if let Some(reason) = value.get("wouldBlockBecause") {
        key_facts.insert("would_block_because".into(), reason.clone());
    }
    Action::Finish {
        answer: format!(
            "Dry run: the first call would be {} with {}; the next steps depend on its result, \
             so the plan stops here.",
            last.call.name, last.call.arguments
        ),
        key_facts,
    }
}

/// A tool that takes one SQL statement: its exposed tool and the argument name.
fn sql_tool(tools: &[ExposedTool]) -> Option<(&ExposedTool, &'static str)> {
    tools.iter().find_map(|tool| {
        let name = tool.tool.to_lowercase();
        if !(name.contains("sql") || name.contains("query")) {
            return None;
        }
        ["sql", "query"]
            .into_iter()
            .find(|param| {
                tool.input_schema
                    .pointer(&format!("/properties/{param}/type"))
                    .and_then(Value::as_str)
                    == Some("string")
            })
            .map(|param| (tool, param))
    })
}

/// Result rows of a SQL tool: `structuredContent.rows` (objects, or arrays with `columns`), or
/// the same inside the text content.
fn rows(value: &Value) -> Option<Vec<Map<String, Value>>> {
    let from = |page: &Value| -> Option<Vec<Map<String, Value>>> {
        let rows = page.get("rows")?.as_array()?;
        let columns: Vec<&str> = page
            .get("columns")
            .and_then(Value::as_array)
            .map(|c| c.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        rows.iter()
            .map(|row| match row {
                Value::Object(object) => Some(object.clone()),
                Value::Array(cells) => Some(
                    columns
                        .iter()
                        .zip(cells)
                        .map(|(c, v)| ((*c).to_owned(), v.clone()))
                        .collect(),
                ),
                _ => None,
            })
            .collect()
    };
    if let Some(structured) = value.get("structuredContent")
        && let Some(rows) = from(structured)
    {
        return Some(rows);
    }
    let text = crate::summary::result_text(value, usize::MAX);
    serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|page| from(&page))
}

fn orders<'a>(
    tools: &'a [ExposedTool],
    past: &[Past<'_>],
    customer: &str,
    threshold: Option<f64>,
    currency: Option<&str>,
) -> Result<Action<'a>, String> {
    let (sql_tool, param) = sql_tool(tools).ok_or(
        "the task needs a SQL tool (one like sql_query taking a \"sql\" string) and none is \
         available to this run",
    )?;
    let query = |sql: String| Action::Call {
        tool: sql_tool,
        arguments: json!({ param: sql }),
    };
    let describe = tools.iter().find(|t| t.tool == "describe_schema");
    let Some(schema_call) = past.first() else {
        return Ok(match describe {
            Some(tool) => Action::Call {
                tool,
                arguments: json!({}),
            },
            None => query(
                "SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'view') \
                 AND name NOT LIKE 'sqlite_%'"
                    .into(),
            ),
        });
    };
    let schema = schema_call
        .value()
        .map_err(|error| format!("reading the schema failed: {error}"))?;
    let tables = if schema_call.call.name == sql_tool.name {
        sql::tables_from_create_statements(&rows(schema).unwrap_or_default())
    } else {
        let description = schema
            .get("structuredContent")
            .cloned()
            .or_else(|| serde_json::from_str(&crate::summary::result_text(schema, usize::MAX)).ok())
            .unwrap_or(Value::Null);
        sql::tables_from_description(&description)
    };
    let plan = sql::plan(&tables)?;
    let Some(customer_call) = past.get(1) else {
        return Ok(query(plan.customer_query(customer)));
    };
    let matches = rows(
        customer_call
            .value()
            .map_err(|error| format!("looking up the customer failed: {error}"))?,
    )
    .ok_or("the customer lookup returned no rows I can read")?;
    let exact: Vec<&Map<String, Value>> = matches
        .iter()
        .filter(|row| {
            row.get("name")
                .and_then(Value::as_str)
                .is_some_and(|name| name.eq_ignore_ascii_case(customer))
        })
        .collect();
    let chosen = match (exact.as_slice(), matches.as_slice()) {
        ([one], _) => *one,
        ([], [one]) => one,
        ([], []) => {
            return Ok(declined(&format!(
                "there is no customer named {customer:?} in the {} table",
                plan.customers
            )));
        }
        (_, _) => {
            let names: Vec<String> = matches
                .iter()
                .filter_map(|row| row.get("name").and_then(Value::as_str).map(str::to_owned))
                .collect();
            return Ok(declined(&format!(
                "{customer:?} matches several customers ({}); name one exactly",
                names.join(", ")
            )));
        }
    };
    let name = chosen
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or(customer)
        .to_owned();
    let id = chosen.get("id").cloned().unwrap_or(Value::Null);
    let Some(totals_call) = past.get(2) else {
        return Ok(query(plan.totals_query(&id)));
    };
    let totals = rows(
        totals_call
            .value()
            .map_err(|error| format!("summing the orders failed: {error}"))?,
    )
    .ok_or("the order totals came back in a form I cannot read")?;
    let (mut answer, mut key_facts) = sql::facts(
        &name,
        threshold,
        &sql::status_totals(&totals),
        plan.status_expr.is_some(),
    );
    key_facts.insert("customer_id".into(), id);
    // In another currency: one more call, to the exchange-rate tool, with the total.
    if let (Some(currency), Some(rate_tool)) = (currency, tools::rate_tool(tools)) {
        let total = key_facts
            .get("order_total")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let ask = rates::RateAsk {
            from: "USD".into(),
            to: currency.to_owned(),
            amount: Some(total),
            date: None,
        };
        let Some(converted) = past.get(3) else {
            return Ok(Action::Call {
                tool: rate_tool.tool,
                arguments: general::rate_arguments(&rate_tool, &ask),
            });
        };
        let value = converted
            .value()
            .map_err(|error| format!("converting the total to {currency} failed: {error}"))?;
        let (conversion, facts) = rates::facts(&ask, value)?;
        answer.push(' ');
        answer.push_str(&conversion);
        for (key, fact) in facts {
            key_facts.insert(format!("conversion_{key}"), fact);
        }
    }
    Ok(Action::Finish { answer, key_facts })
}

/// A "cannot" answer about the data: the reason, as the answer and in `keyFacts`.
fn declined<'a>(reason: &str) -> Action<'a> {
    let mut key_facts = Map::new();
    key_facts.insert("cannot".into(), json!(true));
    key_facts.insert("reason".into(), json!(reason));
    Action::Finish {
        answer: format!("I can't answer that from the data: {reason}."),
        key_facts,
    }
}

fn line_count<'a>(
    tools: &'a [ExposedTool],
    task: &str,
    past: &[Past<'_>],
    path: &str,
) -> Result<Action<'a>, String> {
    let reader = files::read_tool(tools, task).ok_or(
        "the task needs a file-reading tool (read_text_file or read_file of the filesystem \
         server) and none is available to this run",
    )?;
    let lister = tools.iter().find(|t| {
        t.tool == "list_allowed_directories" && t.servers.iter().any(|s| reader.servers.contains(s))
    });
    let mut past = past.iter();
    let mut resolved = path.to_owned();
    if !path.starts_with('/')
        && let Some(lister) = lister
    {
        let Some(listing) = past.next() else {
            return Ok(Action::Call {
                tool: lister,
                arguments: json!({}),
            });
        };
        let listing = listing
            .value()
            .map_err(|error| format!("listing the allowed directories failed: {error}"))?;
        let directories =
            files::allowed_directories(&crate::summary::result_text(listing, usize::MAX));
        resolved = files::resolve(path, &directories);
    }
    let Some(read) = past.next() else {
        return Ok(Action::Call {
            tool: reader,
            arguments: json!({"path": resolved}),
        });
    };
    let value = read
        .value()
        .map_err(|error| format!("reading {resolved} failed: {error}"))?;
    let text =
        files::file_text(value).ok_or_else(|| format!("reading {resolved} returned no text"))?;
    let server = value
        .pointer("/_meta/tool-cli~1selection/server")
        .and_then(Value::as_str)
        .or(reader.server.as_deref());
    let (answer, key_facts) = files::facts(&resolved, &text, reader, server);
    Ok(Action::Finish { answer, key_facts })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_from_structured_content_or_text() {
        let structured = json!({"structuredContent": {"columns": ["a"], "rows": [{"a": 1}]}});
        assert_eq!(rows(&structured).map(|r| r.len()), Some(1));
        let arrays = json!({"structuredContent": {"columns": ["a", "b"], "rows": [[1, 2]]}});
        assert_eq!(
            rows(&arrays).and_then(|r| r[0].get("b").cloned()),
            Some(json!(2))
        );
        let text = json!({"content": [{"type": "text", "text": "{\"rows\": [{\"x\": true}]}"}]});
        assert_eq!(
            rows(&text).and_then(|r| r[0].get("x").cloned()),
            Some(json!(true))
        );
        assert!(rows(&json!({"content": []})).is_none());
    }
}
