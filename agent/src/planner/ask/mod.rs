//! The offline planner's rule for questions about the data ("How many customers are from
//! Germany?", "Which country's customers generated the most revenue?", "What percentage of
//! orders were returned?", "Who bought the Ergonomic Chair?"): understood whole, or answered
//! "cannot" naming the part that was not.
//!
//! The calls, each a pure decision over the conversation so far:
//! 1. the schema tool: the tables, columns and keys ([`schema`] reads what they hold);
//! 2. one discovery query ([`values`]): the span of every date column and the values of the
//!    columns that name or group rows, so that every name, category, status or country the
//!    question uses is checked against the data *before* it is used;
//! 3. the question read against both ([`reading`]: every token placed or named as unplaced),
//!    planned ([`plan`]: every claim used, or "cannot" with the reason), written as one SELECT
//!    ([`render`]) and answered in words with its basis ([`answer`]);
//! 4. when the question asks for it, the exchange-rate tool on the money figure, or the Python
//!    tool on a change to it ("if its price went up by 15%").
//!
//! A question this rule cannot answer ends the run as `cannot` (`keyFacts.cannot`), with a
//! sentence naming what it could not place and what would work. Nothing about the demo shop is
//! assumed: a schema's own names, types and values drive every step.

mod answer;
mod honoured;
mod periods;
mod plan;
mod reading;
mod render;
pub(crate) mod schema;
pub(crate) mod text;
mod values;

use serde_json::{Map, Value, json};

use super::general::{Step, rate_arguments};
use super::{Action, Past, rates, rows, tools};
use crate::backend::ExposedTool;
use reading::Claim;

/// The rule: the next call, the answer, or not a question about the data.
pub(super) fn step<'a>(
    task: &str,
    tools: &'a [ExposedTool],
    past: &[Past<'_>],
) -> Result<Step<'a>, String> {
    let (Some(schema_tool), Some((sql_tool, param))) =
        (tools::schema_tool(tools), super::sql_tool(tools))
    else {
        return Ok(Step::Pass(0));
    };
    let Some(schema_call) = past.first() else {
        return call(schema_tool, json!({}));
    };
    let tables = super::general::tables_of(schema_call, Some(sql_tool))?;
    let schema = schema::understand(&tables);
    // A question that names nothing of the data is another rule's.
    let first_reading = reading::read(task, &schema, &values::Values::default());
    let names = names_in(&first_reading);
    // "the return rate": a percentage whose value only the data can place.
    let rate = first_reading.tokens.iter().any(|t| t.is("rate"))
        || first_reading.has(|c| *c == Claim::Percent);
    if !about_the_data(&first_reading) && names.is_empty() && !rate {
        return Ok(Step::Pass(1));
    }
    let run = |sql: String, offset: Option<u64>| {
        let mut arguments = Map::new();
        arguments.insert(param.into(), json!(sql));
        let properties = tools::properties(sql_tool);
        if properties.contains(&"page_size") {
            arguments.insert("page_size".into(), json!(200));
        }
        if let Some(offset) = offset
            && properties.contains(&"offset")
        {
            arguments.insert("offset".into(), json!(offset));
        }
        call(sql_tool, Value::Object(arguments))
    };
    // Discovery, page by page.
    let mut used = 1;
    let mut discovered: Vec<Map<String, Value>> = Vec::new();
    if let Some(discovery) = values::discovery_sql(&schema, &names) {
        loop {
            let Some(page) = past.get(used) else {
                let offset = (used > 1).then_some(discovered.len() as u64);
                return run(discovery, offset);
            };
            used += 1;
            let value = page
                .value()
                .map_err(|error| format!("looking up the values in the data failed: {error}"))?;
            discovered.extend(rows(value).unwrap_or_default());
            let more = value
                .pointer("/structuredContent/has_more")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if !more || used > 6 {
                break;
            }
        }
    }
    let values = values::read(&schema, &discovered);
    let reading = reading::read(task, &schema, &values);
    // Names that turned out to be nothing of the data, in a question naming nothing else of it:
    // another rule's.
    if !about_the_data(&reading)
        && !reading.has(|c| matches!(c, Claim::Value { .. } | Claim::Ambiguous { .. }))
    {
        return Ok(Step::Pass(used));
    }
    let plan = match plan::plan(task, &reading, &schema, &values) {
        Ok(plan) => plan,
        Err(cannot) => return finish_cannot(&cannot.reason, &cannot.parts),
    };
    let query = render::render(&schema, &plan)
        .map_err(|error| format!("the question could not be written as SQL: {error}"))?;
    let Some(answered) = past.get(used) else {
        return run(query.sql.clone(), None);
    };
    used += 1;
    let value = answered
        .value()
        .map_err(|error| format!("the query failed: {error}"))?;
    let result_rows = rows(value).ok_or("the query returned no rows I can read")?;
    let (mut answer_text, mut key_facts) = answer::facts(&schema, &plan, &query, &result_rows);
    let figure = answer::money_figure(&schema, &plan, &query, &result_rows);
    // "2 Desk Lamps and 3 Yoga Mats": the total computed by the Python tool.
    if !plan.basket.is_empty() {
        let (code, terms) = answer::basket_code(&schema, &plan, &query, &result_rows)
            .map_err(|error| format!("the basket could not be priced: {error}"))?;
        let Some(code_tool) = tools::code_tool(tools) else {
            return finish_cannot(
                "the question needs a computation and no tool here runs code",
                &[],
            );
        };
        let Some(ran) = past.get(used) else {
            return call(code_tool, json!({"code": code}));
        };
        used += 1;
        let output = code_output(ran)?;
        answer_text = format!(
            "{} Altogether: {terms} = {} (computed by {}: {code}).",
            answer_text.trim_end(),
            output
                .parse::<f64>()
                .map_or(output.clone(), |n| format!("${n:.2}")),
            code_tool.tool
        );
        key_facts.insert("code".into(), json!(code));
        key_facts.insert("computed".into(), json!(output));
    }
    // "if its price went up by 15%": the change computed by the Python tool.
    if let Some((percent, up)) = plan.adjust {
        let Some(figure) = figure else {
            return finish_cannot(
                "the question asks to change a figure by a percentage, and its answer has no one \
                 amount of money to change",
                &[],
            );
        };
        let Some(code_tool) = tools::code_tool(tools) else {
            return finish_cannot(
                "the question needs a computation and no tool here runs code",
                &[],
            );
        };
        let factor = if up {
            format!("(1 + {} / 100)", super::words::plain_number(percent))
        } else {
            format!("(1 - {} / 100)", super::words::plain_number(percent))
        };
        let code = format!(
            "print(round({} * {factor}, 2))",
            super::words::plain_number(figure)
        );
        let Some(ran) = past.get(used) else {
            return call(code_tool, json!({"code": code}));
        };
        used += 1;
        let output = code_output(ran)?;
        answer_text = format!(
            "{} With {} {}% {}: {} (computed by {}: {code}).",
            answer_text.trim_end(),
            if up {
                "an increase of"
            } else {
                "a decrease of"
            },
            super::words::plain_number(percent),
            if up { "added" } else { "taken off" },
            output
                .parse::<f64>()
                .map_or(output.clone(), |n| format!("${n:.2}")),
            code_tool.tool
        );
        key_facts.insert("code".into(), json!(code));
        key_facts.insert("computed".into(), json!(output));
    }
    // "… in euros": the money figure converted by the exchange-rate tool.
    if let Some(currency) = &plan.currency
        && currency != "USD"
    {
        let (Some(figure), Some(rate_tool)) = (figure, tools::rate_tool(tools)) else {
            return finish_cannot(
                &format!(
                    "the question asks for the answer in {currency}, and {}",
                    if figure.is_none() {
                        "its answer is no single amount of money to convert"
                    } else {
                        "no exchange-rate tool is available"
                    }
                ),
                &[],
            );
        };
        let ask = rates::RateAsk {
            from: "USD".into(),
            to: currency.clone(),
            amount: Some(figure),
            date: None,
        };
        let Some(rate) = past.get(used) else {
            return call(rate_tool.tool, rate_arguments(&rate_tool, &ask));
        };
        let rate = rate
            .value()
            .map_err(|error| format!("the exchange-rate lookup failed: {error}"))?;
        let (converted, facts) =
            super::data_money::converted_answer(&answer_text, key_facts, &ask, rate)?;
        answer_text = converted;
        key_facts = facts;
    }
    Ok(Step::Act(Action::Finish {
        answer: answer_text,
        key_facts,
    }))
}

/// What a code run printed.
fn code_output(ran: &Past<'_>) -> Result<String, String> {
    let value = ran
        .value()
        .map_err(|error| format!("running the code failed: {error}"))?;
    if let Some(code) = value.pointer("/structuredContent/exitCode")
        && code != &json!(0)
        && !code.is_null()
    {
        return Err(format!(
            "the code exited with {code}: {}",
            value
                .pointer("/structuredContent/stderr")
                .and_then(Value::as_str)
                .unwrap_or("")
        ));
    }
    Ok(value
        .pointer("/structuredContent/stdout")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| crate::summary::result_text(value, 200))
        .trim()
        .to_owned())
}

fn call<'a>(tool: &'a ExposedTool, arguments: Value) -> Result<Step<'a>, String> {
    Ok(Step::Act(Action::Call { tool, arguments }))
}

/// The "cannot" answer of a data question.
fn finish_cannot<'a>(reason: &str, parts: &[String]) -> Result<Step<'a>, String> {
    let mut key_facts = Map::new();
    key_facts.insert("cannot".into(), json!(true));
    key_facts.insert("reason".into(), json!(reason));
    if !parts.is_empty() {
        key_facts.insert("unplaced".into(), json!(parts));
    }
    Ok(Step::Act(Action::Finish {
        answer: format!("I can't answer that from the data: {reason}."),
        key_facts,
    }))
}

/// Whether a reading names something of the data: a table, a column, a measure.
fn about_the_data(reading: &reading::Reading) -> bool {
    reading.has(|c| {
        matches!(
            c,
            Claim::Table { .. }
                | Claim::Column { .. }
                | Claim::Id { table: Some(_), .. }
                | Claim::Worth
                | Claim::Revenue
                | Claim::Sold
                | Claim::OutOfStock
                | Claim::Rank {
                    by: reading::Ranked::Units | reading::Ranked::Price | reading::Ranked::Revenue,
                    ..
                }
        )
    })
}

/// The names and quoted texts of a reading done without the data's values: looked up in the
/// columns with too many values to list.
fn names_in(reading: &reading::Reading) -> Vec<String> {
    let mut names: Vec<String> = reading
        .claims
        .iter()
        .filter_map(|c| match &c.claim {
            Claim::Unknown { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    names.dedup();
    names.truncate(8);
    names
}

#[cfg(test)]
mod tests;
