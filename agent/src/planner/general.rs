//! The offline planner's general rules, tried in order when no named rule (order totals, line
//! counts) fits: code the task gives, a SQL statement it gives, a currency conversion,
//! arithmetic, a question about the database's structure, a document, a question about the
//! data, a tool the task names by its name (`direct.rs`); and when none fits, an honest
//! "cannot" answer naming the nearest tools.
//!
//! Each rule finds its tools by what they take ([`super::tools`]), discovers before it acts
//! (the schema and the values in the data before a query, the resource list before a read),
//! and reads only its own calls: a rule that turns out not to apply after its discovery call
//! (a schema that has nothing the task names) passes the rest of the conversation on to the
//! next rule. Every step is a pure decision over the conversation so far.

use serde_json::{Map, Value, json};

use super::{
    Action, Past, ask, compute, direct, documents, finance, rates, rows, sql, tools, words, writes,
};
use crate::backend::{ExposedTool, LlmRequest};

/// What a rule decided.
pub(super) enum Step<'a> {
    /// The next call or the answer.
    Act(Action<'a>),
    /// The rule does not apply; it used this many of the calls.
    Pass(usize),
}

/// The general rules in order, then the "cannot" answer.
pub(super) fn decide<'a>(
    request: &LlmRequest<'a>,
    past: &[Past<'a>],
) -> Result<Action<'a>, String> {
    let task = request.task();
    let tools = request.tools;
    if let Some(refusal) = refusal(request) {
        return Ok(refusal);
    }
    if let Some(verb) = unsupported_action(task, tools) {
        return Ok(cannot(
            request,
            &format!("the task asks to {verb}, and no tool here does that (none names it)"),
        ));
    }
    let mut used = 0;
    for rule in 0..10 {
        let rest = &past[used.min(past.len())..];
        let step = match rule {
            0 => given_code(task, tools, rest)?,
            1 => given_sql(task, tools, rest)?,
            2 => conversion(task, tools, rest)?,
            3 => money_computation(task, tools, rest)?,
            4 => arithmetic(task, tools, rest)?,
            5 => structure(task, tools, rest)?,
            6 => named_document(task, tools, rest)?,
            7 => ask::step(task, tools, rest)?,
            8 => any_document(task, tools, rest)?,
            _ => direct::step(task, tools, request.ranked_tools, rest)?,
        };
        match step {
            Step::Act(action) => return Ok(action),
            Step::Pass(calls) => used += calls,
        }
    }
    Ok(cannot(request, "none of the planner's rules fits the task"))
}

/// Verbs that change the world or reach outside it. A task that starts with one ("Send an
/// email…", "Delete all…", "Book a flight…") needs a tool that does it; reading tools only
/// look things up.
const ACTIONS: [&str; 24] = [
    "order",
    "translate",
    "send",
    "email",
    "delete",
    "remove",
    "drop",
    "update",
    "insert",
    "modify",
    "change",
    "book",
    "buy",
    "purchase",
    "cancel",
    "refund",
    "pay",
    "transfer",
    "post",
    "publish",
    "schedule",
    "call",
    "create",
    "write",
];

/// The action verb the task opens with (after "please", "can you", …) when no tool's name has
/// it. Names, not descriptions: a description speaks of the nouns it reads ("orders").
fn unsupported_action(task: &str, tools: &[ExposedTool]) -> Option<String> {
    let task_words = words::words(task);
    let verb = task_words.iter().find(|w| {
        !matches!(
            w.as_str(),
            "please"
                | "can"
                | "could"
                | "would"
                | "you"
                | "kindly"
                | "go"
                | "ahead"
                | "and"
                | "now"
                | "i"
                | "want"
                | "to"
                | "need"
                | "help"
                | "me"
        )
    })?;
    if !ACTIONS.contains(&verb.as_str()) {
        return None;
    }
    let stem = words::stem(verb);
    let offered = tools.iter().any(|tool| {
        words::words(&tool.tool.replace(['_', '-', '.'], " "))
            .iter()
            .any(|w| words::stem(w) == stem)
    });
    (!offered).then(|| verb.clone())
}

/// A change to the data no tool offers: refused before anything runs.
pub(super) fn refusal<'a>(request: &LlmRequest<'a>) -> Option<Action<'a>> {
    let write = writes::write_request(request.task())?;
    (!offered(&write.verb, request.tools)).then(|| refused(request, &write))
}

/// Whether some tool's name offers the verb ("delete_order" offers "delete").
fn offered(verb: &str, tools: &[ExposedTool]) -> bool {
    let stem = words::stem(verb);
    tools.iter().any(|tool| {
        words::words(&tool.tool.replace(['_', '-', '.'], " "))
            .iter()
            .any(|w| words::stem(w) == stem)
    })
}

/// The "refused" answer to a change of data: what was asked, why not, and that nothing ran.
fn refused<'a>(request: &LlmRequest<'a>, write: &writes::WriteRequest) -> Action<'a> {
    let readers: Vec<String> = request
        .tools
        .iter()
        .filter(|t| {
            let name = t.tool.to_lowercase();
            name.contains("sql") || name.contains("query")
        })
        .map(|t| t.name.clone())
        .collect();
    let what = match &write.statement {
        Some(statement) => format!("runs the statement {statement:?}, which writes"),
        None => format!("asks to {} data", write.verb),
    };
    let reason = format!(
        "the task {what}, and the tools here only read the data{}; no tool offers that change",
        if readers.is_empty() {
            String::new()
        } else {
            format!(" ({} runs read-only queries)", readers.join(", "))
        }
    );
    let mut key_facts = Map::new();
    key_facts.insert("refused".into(), json!(true));
    key_facts.insert("reason".into(), json!(reason));
    key_facts.insert("verb".into(), json!(write.verb));
    if let Some(statement) = &write.statement {
        key_facts.insert("statement".into(), json!(statement));
    }
    Action::Finish {
        answer: format!(
            "Refused: {reason}. Nothing was run and nothing was changed. To see the rows it \
             would touch, ask a question about them instead (\"How many … are there?\")."
        ),
        key_facts,
    }
}

/// The "cannot" answer: what is missing and the nearest tools.
pub(super) fn cannot<'a>(request: &LlmRequest<'a>, reason: &str) -> Action<'a> {
    let nearest = tools::nearest(request.tools, request.ranked_tools, request.task(), 3);
    let mut answer = format!(
        "I can't do that with the available tools: {reason}. The {} tool{} here cover other things",
        request.tools.len(),
        if request.tools.len() == 1 { "" } else { "s" }
    );
    if nearest.is_empty() {
        answer.push('.');
    } else {
        answer.push_str(&format!("; the nearest are {}.", nearest.join(", ")));
    }
    let mut key_facts = Map::new();
    key_facts.insert("cannot".into(), json!(true));
    key_facts.insert("reason".into(), json!(reason));
    key_facts.insert("nearest_tools".into(), json!(nearest));
    Action::Finish { answer, key_facts }
}

fn call<'a>(tool: &'a ExposedTool, arguments: Value) -> Result<Step<'a>, String> {
    Ok(Step::Act(Action::Call { tool, arguments }))
}

fn finish<'a>(answer: String, key_facts: Map<String, Value>) -> Result<Step<'a>, String> {
    Ok(Step::Act(Action::Finish { answer, key_facts }))
}

fn code_output<'a>(
    tool: &'a ExposedTool,
    code: String,
    past: &[Past<'_>],
    what: &str,
) -> Result<Step<'a>, String> {
    let Some(run) = past.first() else {
        return call(tool, json!({"code": code}));
    };
    let value = run
        .value()
        .map_err(|error| format!("running the code failed: {error}"))?;
    let data = value
        .get("structuredContent")
        .cloned()
        .unwrap_or(Value::Null);
    let stdout = data
        .get("stdout")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| crate::summary::result_text(value, 4000));
    let stderr = data.get("stderr").and_then(Value::as_str).unwrap_or("");
    let exit = data.get("exitCode").cloned().unwrap_or(Value::Null);
    if exit != json!(0) && !exit.is_null() {
        return Err(format!(
            "the code exited with {exit}: {}",
            crate::summary::one_line(stderr)
        ));
    }
    let output = stdout.trim().to_owned();
    let mut key_facts = Map::new();
    key_facts.insert("code".into(), json!(code));
    key_facts.insert("output".into(), json!(output));
    let answer = if what.is_empty() {
        format!("The code printed: {output}")
    } else {
        key_facts.insert("expression".into(), json!(what));
        key_facts.insert("result".into(), json!(output));
        format!("{what} = {output}")
    };
    finish(answer, key_facts)
}

fn given_code<'a>(
    task: &str,
    tools: &'a [ExposedTool],
    past: &[Past<'_>],
) -> Result<Step<'a>, String> {
    match (compute::given_code(task), tools::code_tool(tools)) {
        (Some(code), Some(tool)) => code_output(tool, code, past, ""),
        _ => Ok(Step::Pass(0)),
    }
}

/// A SELECT (or WITH) statement written in the task.
fn statement(task: &str) -> Option<String> {
    let lower = task.to_lowercase();
    let start = ["select ", "with "]
        .iter()
        .filter_map(|keyword| lower.find(keyword))
        .min()?;
    let sql = task[start..]
        .trim()
        .trim_end_matches(['`', '"', '\'', '\u{201d}'])
        .trim_end_matches(';')
        .trim();
    let lower = sql.to_lowercase();
    (lower.contains(" from ") || lower.starts_with("select "))
        .then(|| sql.to_owned())
        .filter(|sql| sql.split_whitespace().count() >= 3 && lower.contains(" from "))
}

fn given_sql<'a>(
    task: &str,
    tools: &'a [ExposedTool],
    past: &[Past<'_>],
) -> Result<Step<'a>, String> {
    let (Some(sql), Some((tool, param))) = (statement(task), super::sql_tool(tools)) else {
        return Ok(Step::Pass(0));
    };
    let Some(run) = past.first() else {
        return call(
            tool,
            json!({ param: sql, "page_size": 50 })
                .as_object()
                .map(|o| {
                    // Only the arguments the tool takes.
                    let properties = tools::properties(tool);
                    Value::Object(
                        o.iter()
                            .filter(|(k, _)| properties.contains(&k.as_str()))
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect(),
                    )
                })
                .unwrap_or_default(),
        );
    };
    let value = run
        .value()
        .map_err(|error| format!("the query failed: {error}"))?;
    let found = rows(value).ok_or("the query returned no rows I can read")?;
    let shown: Vec<String> = found
        .iter()
        .take(20)
        .map(|row| {
            row.iter()
                .map(|(k, v)| {
                    format!(
                        "{k}: {}",
                        v.as_str().map_or_else(|| v.to_string(), str::to_owned)
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect();
    let mut key_facts = Map::new();
    key_facts.insert("sql".into(), json!(sql));
    key_facts.insert("row_count".into(), json!(found.len()));
    key_facts.insert(
        "rows".into(),
        json!(found.iter().take(50).collect::<Vec<_>>()),
    );
    finish(
        format!(
            "The query returned {} row{}{}{}",
            found.len(),
            if found.len() == 1 { "" } else { "s" },
            if shown.is_empty() { "." } else { ": " },
            shown.join("; ")
        ),
        key_facts,
    )
}

fn conversion<'a>(
    task: &str,
    tools: &'a [ExposedTool],
    past: &[Past<'_>],
) -> Result<Step<'a>, String> {
    let corrected = words::corrected(task, &["convert", "exchange", "currency", "rate"]);
    let (true, Some(tool), Some(ask)) = (
        rates::is_rate_task(&corrected),
        tools::rate_tool(tools),
        rates::ask(&corrected),
    ) else {
        return Ok(Step::Pass(0));
    };
    // "The total revenue in EUR" is a question about the data in euros, not about a rate: no
    // amount and no word for a rate leaves it to the data rule, which converts its figure.
    let asks_rate = words::mentions(
        &words::words(&corrected),
        &[
            "exchange",
            "rate",
            "rates",
            "convert",
            "conversion",
            "currency",
        ],
    );
    // A year of the task's period ("in March 2025") is no amount of money.
    let year_only = ask.amount.is_some_and(|amount| {
        super::dates::range(&corrected).is_some()
            && amount.fract() == 0.0
            && (1900.0..2200.0).contains(&amount)
    });
    if (ask.amount.is_none() || year_only) && !asks_rate {
        return Ok(Step::Pass(0));
    }
    let Some(done) = past.first() else {
        return call(tool.tool, rate_arguments(&tool, &ask));
    };
    let value = done
        .value()
        .map_err(|error| format!("the exchange-rate lookup failed: {error}"))?;
    let (answer, key_facts) = rates::facts(&ask, value)?;
    finish(answer, key_facts)
}

/// The exchange-rate tool's arguments for an ask.
pub(super) fn rate_arguments(tool: &tools::RateTool<'_>, ask: &rates::RateAsk) -> Value {
    let mut arguments = Map::new();
    arguments.insert(tool.from.into(), json!(ask.from));
    arguments.insert(tool.to.into(), json!(ask.to));
    if let (Some(name), Some(amount)) = (tool.amount, ask.amount) {
        arguments.insert(name.into(), json!(amount));
    }
    if let (Some(name), Some(date)) = (tool.date, &ask.date) {
        arguments.insert(name.into(), json!(date));
    }
    Value::Object(arguments)
}

/// Compound interest, a loan's payment, a split bill: a program for the code tool.
fn money_computation<'a>(
    task: &str,
    tools: &'a [ExposedTool],
    past: &[Past<'_>],
) -> Result<Step<'a>, String> {
    match (finance::computation(task), tools::code_tool(tools)) {
        (Some(computation), Some(tool)) => {
            code_output(tool, computation.code, past, &computation.what)
        }
        _ => Ok(Step::Pass(0)),
    }
}

fn arithmetic<'a>(
    task: &str,
    tools: &'a [ExposedTool],
    past: &[Past<'_>],
) -> Result<Step<'a>, String> {
    match (compute::expression(task), tools::code_tool(tools)) {
        (Some(expression), Some(tool)) => {
            code_output(tool, compute::program(&expression), past, &expression)
        }
        _ => Ok(Step::Pass(0)),
    }
}

/// The database's tables as the schema tool (or `sqlite_master`) describes them.
pub(super) fn tables_of(
    schema: &Past<'_>,
    sql_tool: Option<&ExposedTool>,
) -> Result<Vec<sql::Table>, String> {
    let value = schema
        .value()
        .map_err(|error| format!("reading the schema failed: {error}"))?;
    if sql_tool.is_some_and(|tool| tool.name == schema.call.name) {
        return Ok(sql::tables_from_create_statements(
            &rows(value).unwrap_or_default(),
        ));
    }
    let description = value
        .get("structuredContent")
        .cloned()
        .or_else(|| serde_json::from_str(&crate::summary::result_text(value, usize::MAX)).ok())
        .unwrap_or(Value::Null);
    Ok(sql::tables_from_description(&description))
}

fn structure<'a>(
    task: &str,
    tools: &'a [ExposedTool],
    past: &[Past<'_>],
) -> Result<Step<'a>, String> {
    // The words outside quotes, as written: a quoted name is no question about tables, and
    // "the orders table" in a question about orders is no question about the structure.
    let unquoted: String = ask::text::tokens(task)
        .iter()
        .filter(|t| !matches!(t.kind, ask::text::Kind::Quoted(_)))
        .map(|t| t.lower.clone())
        .collect::<Vec<_>>()
        .join(" ");
    let task_words = words::words(&unquoted);
    let has = |list: &[&str]| task_words.iter().any(|w| list.contains(&w.as_str()));
    let asks = has(&[
        "tables",
        "schema",
        "schemas",
        "columns",
        "structure",
        "fields",
    ]) || (has(&["describe"]) && has(&["table"]));
    let (true, Some(tool)) = (asks, tools::schema_tool(tools)) else {
        return Ok(Step::Pass(0));
    };
    let Some(schema) = past.first() else {
        return call(tool, json!({}));
    };
    let tables = tables_of(schema, None)?;
    let rows_of = |name: &str| -> Option<u64> {
        schema
            .value()
            .ok()?
            .pointer("/structuredContent/tables")?
            .as_array()?
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))?
            .get("row_count")?
            .as_u64()
    };
    let named: Vec<&sql::Table> = tables
        .iter()
        .filter(|table| {
            task_words
                .iter()
                .any(|w| words::stem(w) == words::stem(&table.name))
        })
        .collect();
    let shown: Vec<&sql::Table> = if named.is_empty() {
        tables.iter().collect()
    } else {
        named
    };
    let describe = |table: &sql::Table| {
        let keys: Vec<String> = table
            .foreign_keys
            .iter()
            .map(|(column, referenced)| format!("{column} → {referenced}"))
            .collect();
        format!(
            "{}{} ({}{})",
            table.name,
            rows_of(&table.name)
                .map(|n| format!(", {n} rows"))
                .unwrap_or_default(),
            table.columns.join(", "),
            if keys.is_empty() {
                String::new()
            } else {
                format!("; keys {}", keys.join(", "))
            }
        )
    };
    let mut key_facts = Map::new();
    key_facts.insert(
        "tables".into(),
        json!(
            shown
                .iter()
                .map(|t| json!({"name": t.name, "columns": t.columns, "rows": rows_of(&t.name)}))
                .collect::<Vec<_>>()
        ),
    );
    let answer = format!(
        "The database has {} table{}: {}.",
        shown.len(),
        if shown.len() == 1 { "" } else { "s" },
        shown
            .iter()
            .map(|t| describe(t))
            .collect::<Vec<_>>()
            .join("; ")
    );
    finish(answer, key_facts)
}

fn named_document<'a>(
    task: &str,
    tools: &'a [ExposedTool],
    past: &[Past<'_>],
) -> Result<Step<'a>, String> {
    if documents::about_documents(task) || documents::asks_for_the_list(task) {
        document(task, tools, past, true)
    } else {
        Ok(Step::Pass(0))
    }
}

fn any_document<'a>(
    task: &str,
    tools: &'a [ExposedTool],
    past: &[Past<'_>],
) -> Result<Step<'a>, String> {
    document(task, tools, past, false)
}

/// List the resources, choose one by the task's words, open it, read it to the end, release
/// it, and answer with the part that answers the task.
fn document<'a>(
    task: &str,
    tools: &'a [ExposedTool],
    past: &[Past<'_>],
    named: bool,
) -> Result<Step<'a>, String> {
    let Some(resource_tools) = tools::resource_tools(tools) else {
        return Ok(Step::Pass(0));
    };
    let Some(listing) = past.first() else {
        return call(resource_tools.list, json!({}));
    };
    let listed = documents::listed(
        listing
            .value()
            .map_err(|error| format!("listing the documents failed: {error}"))?,
    );
    if documents::asks_for_the_list(task) {
        let mut key_facts = Map::new();
        key_facts.insert(
            "resources".into(),
            json!(listed.iter().map(|r| &r.uri).collect::<Vec<_>>()),
        );
        let answer = format!(
            "{} documents are available: {}.",
            listed.len(),
            listed
                .iter()
                .map(|r| format!("{} ({})", r.uri, r.label))
                .collect::<Vec<_>>()
                .join("; ")
        );
        return finish(answer, key_facts);
    }
    let Some(chosen) = documents::choose(task, &listed, if named { 1 } else { 2 }) else {
        return if named {
            Err(format!(
                "no document fits the task; the documents are {}",
                listed
                    .iter()
                    .map(|r| r.uri.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        } else {
            Ok(Step::Pass(1))
        };
    };
    let Some(opened) = past.get(1) else {
        return call(resource_tools.open, json!({"uri": chosen.uri}));
    };
    let opened = opened
        .value()
        .map_err(|error| format!("opening {} failed: {error}", chosen.uri))?;
    let handle = opened
        .pointer("/structuredContent/handle")
        .and_then(Value::as_str)
        .ok_or("opening the document gave no handle")?
        .to_owned();
    let mut text = String::new();
    let mut next = Some(0u64);
    let mut calls = past[2..].iter();
    let mut released = false;
    for later in calls.by_ref() {
        if later.call.name == resource_tools.read.name {
            let chunk = later
                .value()
                .map_err(|error| format!("reading {} failed: {error}", chosen.uri))?;
            let data = chunk
                .get("structuredContent")
                .cloned()
                .unwrap_or(Value::Null);
            text.push_str(data.get("data").and_then(Value::as_str).unwrap_or(""));
            next = data
                .get("nextOffset")
                .and_then(Value::as_u64)
                .filter(|_| data.get("eof") != Some(&json!(true)));
        } else {
            released = true;
        }
    }
    if let Some(offset) = next {
        return call(
            resource_tools.read,
            json!({"handle": handle, "offset": offset}),
        );
    }
    if let (Some(release), false) = (resource_tools.release, released) {
        return call(release, json!({"handle": handle}));
    }
    let excerpt = documents::excerpt(task, chosen, &text);
    let excerpt = crate::summary::truncate(&excerpt, 3000);
    let mut key_facts = Map::new();
    key_facts.insert("uri".into(), json!(chosen.uri));
    key_facts.insert("characters".into(), json!(text.chars().count()));
    key_facts.insert("excerpt".into(), json!(excerpt));
    finish(format!("From {}:\n{excerpt}", chosen.uri), key_facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_no_tool_offers_are_refused() {
        let tools = super::super::tools::tests::toolkit();
        assert_eq!(
            unsupported_action("Send an email to Ada", &tools).as_deref(),
            Some("send")
        );
        assert_eq!(
            unsupported_action("Please delete all cancelled orders", &tools).as_deref(),
            Some("delete")
        );
        assert_eq!(
            unsupported_action("Book a flight to Tokyo", &tools).as_deref(),
            Some("book")
        );
        assert_eq!(
            unsupported_action("How many books are there?", &tools),
            None
        );
        // A description that speaks of orders does not make a tool that places them.
        let mut described = tools.clone();
        described[1].description = "Read the orders and customers".into();
        assert_eq!(
            unsupported_action("Order 3 Yoga Mats for me", &described).as_deref(),
            Some("order")
        );
        // A verb some tool offers is left to the rules.
        assert_eq!(
            unsupported_action("Run this Python: `print(1)`", &tools),
            None
        );
        let mut mailer = tools.clone();
        mailer.push(super::super::tools::tests::tool(
            "send_email",
            "Send an email",
            json!({}),
        ));
        assert_eq!(unsupported_action("Send an email to Ada", &mailer), None);
    }

    #[test]
    fn statements_are_found_in_the_task() {
        assert_eq!(
            statement(
                "Run the query SELECT country, count(*) AS n FROM customers GROUP BY country;"
            )
            .as_deref(),
            Some("SELECT country, count(*) AS n FROM customers GROUP BY country")
        );
        assert_eq!(
            statement("run `select * from orders limit 3`").as_deref(),
            Some("select * from orders limit 3")
        );
        assert_eq!(statement("Select the cheapest product"), None);
        assert_eq!(statement("How many customers are there?"), None);
    }
}
