//! The offline planner's evaluation: `tasks.jsonl` holds questions about the bundled demo shop
//! written the way people ask them (misspellings, names and categories that do not exist,
//! future periods, requests to change the data, ambiguous superlatives, computations, group-bys,
//! percentages, …), each with the way to find its truth at test time: a SQL query over the
//! demo's real database (through the daemon's own `sql_query`, never a stored answer), a rate
//! lookup, or a resource's lines. Every task runs through the public `Agent` API over a real
//! `tool-cli-daemon` serving the demo server, and is scored:
//!
//! - **right**: a completed answer that contains every figure or name of the truth (numbers
//!   compared as numbers, so `$1,234.50` meets 1234.5) and none of the values it must not name;
//!   or, for a task that must be declined (a name that is not in the data, a future period, an
//!   ambiguous superlative, a write), a run that declined (`cannot` or `refused`);
//! - **wrong**: a completed answer that lacks the truth or names what it must not, or a completed
//!   answer to a task that must be declined: a confident wrong answer;
//! - **cannot**: any other ending (the planner said it could not, or failed).
//!
//! Half the tasks are marked `held`: they are never used to tune the planner, and the report
//! gives both halves. `scripts/planner-eval.sh` prints the table; the test
//! `the_planner_is_never_confidently_wrong` fails on any wrong answer.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::{Value, json};
use tool_cli_protocol::agent::{RunAgentParams, RunAgentResult};
use tool_cli_tests::Daemon;

use crate::common::DaemonHost;
use crate::offline::run_offline;

/// One task of `tasks.jsonl`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Task {
    pub(crate) id: String,
    /// `tune` (the planner may be tuned on it) or `held` (never looked at while tuning).
    pub(crate) half: String,
    pub(crate) category: String,
    pub(crate) task: String,
    /// A named set the task belongs to: `issue-24` for the questions issue 24 reported wrong
    /// (`scripts/planner-eval.sh --set issue-24` runs those alone).
    #[serde(default)]
    pub(crate) set: Option<String>,
    /// `answer` (the default) or `decline` / `refused`.
    #[serde(default)]
    expect: Option<String>,
    /// The truth: rows with `v` (and `k` for a group's label), each of which the answer names.
    #[serde(default)]
    sql: Option<String>,
    /// Values (column `v`) the answer must not name: the runner-up, the rows a filter excludes.
    #[serde(default)]
    not: Option<String>,
    /// For a task to decline: a query whose `v` must be 0, proving the thing named is absent.
    #[serde(default)]
    check: Option<String>,
    /// For a task to decline: text the answer must mention (the name it could not find).
    #[serde(default)]
    mention: Option<String>,
    /// The truth is an amount (from SQL) converted by the demo's exchange-rate tool.
    #[serde(default)]
    convert: Option<Conversion>,
    /// The truth is the demo's exchange rate on a day.
    #[serde(default)]
    rate: Option<RateTruth>,
    /// The truth is the lines of a resource containing some text.
    #[serde(default)]
    resource: Option<ResourceTruth>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Conversion {
    sql: String,
    base: String,
    quote: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RateTruth {
    base: String,
    quote: String,
    date: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceTruth {
    uri: String,
    lines_with: String,
}

/// Every task.
pub(crate) fn tasks() -> Vec<Task> {
    include_str!("tasks.jsonl")
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// How a task was scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Score {
    Right,
    Wrong,
    Cannot,
}

/// A task's score and why.
#[derive(Debug, Clone)]
pub(crate) struct Scored {
    pub(crate) task: Task,
    pub(crate) score: Score,
    pub(crate) why: String,
    pub(crate) status: String,
    pub(crate) answer: String,
    pub(crate) tools: Vec<String>,
}

/// What the truth says the answer must hold.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Number(f64),
    Text(String),
}

#[derive(Debug, Clone)]
struct Truth {
    /// Each row: an optional label and a value.
    rows: Vec<(Option<Cell>, Cell)>,
    not: Vec<Cell>,
}

fn cell(value: &Value) -> Option<Cell> {
    match value {
        Value::Number(n) => n.as_f64().map(Cell::Number),
        Value::String(s) => Some(Cell::Text(s.clone())),
        _ => None,
    }
}

fn query(daemon: &Daemon, sql: &str) -> Vec<serde_json::Map<String, Value>> {
    let result = daemon.call_tool("demo", "sql_query", json!({"sql": sql, "page_size": 200}));
    assert_ne!(
        result["isError"],
        json!(true),
        "the truth query failed: {sql}: {result}"
    );
    result["structuredContent"]["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| row.as_object().expect("a row object").clone())
        .collect()
}

fn truth(daemon: &Daemon, task: &Task) -> Option<Truth> {
    let not = task
        .not
        .as_deref()
        .map(|sql| {
            query(daemon, sql)
                .iter()
                .filter_map(|row| row.get("v").and_then(cell))
                .collect()
        })
        .unwrap_or_default();
    if let Some(sql) = &task.sql {
        let rows = query(daemon, sql)
            .iter()
            .filter_map(|row| Some((row.get("k").and_then(cell), row.get("v").and_then(cell)?)))
            .collect();
        return Some(Truth { rows, not });
    }
    if let Some(conversion) = &task.convert {
        let amount = query(daemon, &conversion.sql)[0]["v"]
            .as_f64()
            .expect("an amount");
        let converted = daemon.call_tool(
            "demo",
            "rest_exchange_rate",
            json!({"base": conversion.base, "quote": conversion.quote, "amount": amount}),
        );
        let value = converted["structuredContent"]["converted"]
            .as_f64()
            .expect("a converted amount");
        return Some(Truth {
            rows: vec![(None, Cell::Number((value * 100.0).round() / 100.0))],
            not,
        });
    }
    if let Some(rate) = &task.rate {
        let answer = daemon.call_tool(
            "demo",
            "rest_exchange_rate",
            json!({"base": rate.base, "quote": rate.quote, "date": rate.date}),
        );
        return Some(Truth {
            rows: vec![(
                None,
                cell(&answer["structuredContent"]["rate"]).expect("a rate"),
            )],
            not,
        });
    }
    if let Some(resource) = &task.resource {
        let read = daemon.call(
            "readResource",
            json!({"server": "demo", "uri": resource.uri}),
        );
        let text = read["contents"][0]["text"].as_str().expect("text");
        let rows: Vec<(Option<Cell>, Cell)> = text
            .lines()
            .filter(|line| line.contains(resource.lines_with.as_str()))
            .map(|line| (None, Cell::Text(line.trim_end().to_owned())))
            .collect();
        assert!(
            !rows.is_empty(),
            "{} has no line with the text",
            resource.uri
        );
        return Some(Truth { rows, not });
    }
    None
}

/// The numbers written in a text: `$1,234.50` is 1234.5, `4.8%` is 4.8; the parts of a date
/// (`2025-03-01`) or of a word (`A5`) are not numbers.
pub(crate) fn numbers_in(text: &str) -> Vec<f64> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut index = 0;
    while index < chars.len() {
        let glued_before =
            index > 0 && (chars[index - 1].is_alphanumeric() || chars[index - 1] == '-');
        if !chars[index].is_ascii_digit() || glued_before {
            index += 1;
            continue;
        }
        let begin = index;
        while index < chars.len()
            && (chars[index].is_ascii_digit()
                || (matches!(chars[index], ',' | '.')
                    && chars.get(index + 1).is_some_and(char::is_ascii_digit)))
        {
            index += 1;
        }
        if chars
            .get(index)
            .is_some_and(|c| c.is_alphabetic() || *c == '-')
        {
            continue;
        }
        let number: String = chars[begin..index].iter().filter(|c| **c != ',').collect();
        let negative = begin > 0 && chars[begin - 1] == '-';
        if let Ok(value) = number.parse::<f64>() {
            found.push(if negative { -value } else { value });
        }
    }
    found
}

fn number_matches(found: f64, truth: f64) -> bool {
    if truth.fract() == 0.0 && found.fract() == 0.0 {
        return found == truth;
    }
    (found - truth).abs() < 0.006
}

fn contains_cell(text: &str, cell: &Cell) -> bool {
    match cell {
        Cell::Number(n) => numbers_in(text).iter().any(|f| number_matches(*f, *n)),
        Cell::Text(t) => contains_words(text, t),
    }
}

/// Whether `text` holds `wanted` as whole words ("DE" is not in "orders"), case aside.
fn contains_words(text: &str, wanted: &str) -> bool {
    let lower = text.to_lowercase();
    let wanted = wanted.to_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find(&wanted).map(|at| at + from) {
        let before = lower[..at].chars().next_back();
        let after = lower[at + wanted.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
        if boundary(before) && boundary(after) {
            return true;
        }
        from = at + wanted.len();
    }
    false
}

/// Whether the answer holds the label and, shortly after it, the value.
fn contains_pair(answer: &str, label: &Cell, value: &Cell) -> bool {
    let Cell::Text(label) = label else {
        return contains_cell(answer, label) && contains_cell(answer, value);
    };
    let lower = answer.to_lowercase();
    let needle = label.to_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find(&needle).map(|at| at + from) {
        let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
        if !boundary(lower[..at].chars().next_back())
            || !boundary(lower[at + needle.len()..].chars().next())
        {
            from = at + needle.len();
            continue;
        }
        let after = &answer[at + needle.len()..];
        // The label's own entry: up to the next separator of a list.
        let window: String = after
            .chars()
            .take(60)
            .take_while(|c| !matches!(c, ';' | '\n' | '|'))
            .collect();
        if contains_cell(&window, value) {
            return true;
        }
        from = at + needle.len();
    }
    false
}

/// How the run ended, in the eval's words: `completed`, `cannot`, `refused`, `failed`, `halted`.
pub(crate) fn ending(result: &RunAgentResult) -> String {
    let declared = result.key_facts.get("cannot") == Some(&json!(true));
    match serde_json::to_value(result.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
    {
        Some(status) if status == "completed" && declared => "cannot".into(),
        Some(status) => status,
        None => format!("{:?}", result.status),
    }
}

fn score(daemon: &Daemon, task: &Task, result: &RunAgentResult) -> (Score, String) {
    let ending = ending(result);
    let answer = &result.answer;
    let expect = task.expect.as_deref().unwrap_or("answer");
    if let Some(check) = &task.check {
        let absent = query(daemon, check)[0]["v"].clone();
        assert_eq!(absent, json!(0), "{}: the check must find nothing", task.id);
    }
    match expect {
        "decline" | "refused" => {
            let declined = matches!(ending.as_str(), "cannot" | "refused");
            if ending == "completed" {
                return (Score::Wrong, "answered a task it must decline".into());
            }
            if !declined {
                return (Score::Cannot, format!("ended {ending}, not declined"));
            }
            if expect == "refused" && ending != "refused" {
                return (Score::Cannot, "declined without saying refused".into());
            }
            if let Some(mention) = &task.mention
                && !answer.to_lowercase().contains(&mention.to_lowercase())
            {
                return (
                    Score::Cannot,
                    format!("declined without naming {mention:?}"),
                );
            }
            (Score::Right, String::new())
        }
        _ => {
            let truth = truth(daemon, task).expect("an answer task has a truth");
            if ending != "completed" {
                return (Score::Cannot, format!("ended {ending}"));
            }
            let mut problems = Vec::new();
            if truth.rows.is_empty() {
                let lower = answer.to_lowercase();
                let says_none = ["no ", "none", "nobody", "no one", " 0 "]
                    .iter()
                    .any(|w| format!(" {lower} ").contains(w));
                if !says_none {
                    problems.push("the truth is empty and the answer does not say so".to_owned());
                }
            }
            for (label, value) in &truth.rows {
                let present = match label {
                    Some(label) => contains_pair(answer, label, value),
                    None => contains_cell(answer, value),
                };
                if !present {
                    problems.push(format!("lacks {label:?} {value:?}"));
                }
            }
            for excluded in &truth.not {
                if contains_cell(answer, excluded) && !truth.rows.iter().any(|(_, v)| v == excluded)
                {
                    problems.push(format!("names {excluded:?}"));
                }
            }
            if problems.is_empty() {
                (Score::Right, String::new())
            } else {
                (Score::Wrong, problems.join("; "))
            }
        }
    }
}

/// Runs the tasks (of one half, or all) and scores them.
pub(crate) async fn evaluate(
    half: Option<&str>,
    only: Option<&str>,
    set: Option<&str>,
) -> Vec<Scored> {
    let host = DaemonHost::new(Daemon::start_demo());
    let mut scored = Vec::new();
    for task in tasks() {
        if half.is_some_and(|half| half != task.half)
            || only.is_some_and(|only| !task.id.contains(only))
            || set.is_some_and(|set| task.set.as_deref() != Some(set))
        {
            continue;
        }
        let request = RunAgentParams {
            task: task.task.clone(),
            ..RunAgentParams::default()
        };
        let (result, _) = run_offline(host.clone(), request).await;
        let (score, why) = score(&host.daemon, &task, &result);
        scored.push(Scored {
            status: ending(&result),
            answer: match &result.error {
                Some(error) if result.answer.is_empty() => format!("error: {error}"),
                _ => result.answer.clone(),
            },
            tools: result.tool_calls.iter().map(|c| c.tool.clone()).collect(),
            task,
            score,
            why,
        });
    }
    scored
}

/// The table: right / wrong / cannot per category, for each half, and the share of the
/// answerable tasks answered right.
pub(crate) fn table(scored: &[Scored]) -> String {
    let mut by_category: BTreeMap<&str, [[usize; 3]; 2]> = BTreeMap::new();
    let mut answerable = [[0usize; 2]; 2];
    for s in scored {
        let half = usize::from(s.task.half == "held");
        let column = match s.score {
            Score::Right => 0,
            Score::Wrong => 1,
            Score::Cannot => 2,
        };
        by_category.entry(&s.task.category).or_default()[half][column] += 1;
        if s.task.expect.as_deref().unwrap_or("answer") == "answer" {
            answerable[half][0] += 1;
            answerable[half][1] += usize::from(s.score == Score::Right);
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| category | tune right | tune wrong | tune cannot | held right | held wrong | held cannot |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    let mut totals = [[0usize; 3]; 2];
    for (category, halves) in &by_category {
        let _ = writeln!(
            out,
            "| {category} | {} | {} | {} | {} | {} | {} |",
            halves[0][0], halves[0][1], halves[0][2], halves[1][0], halves[1][1], halves[1][2]
        );
        for half in 0..2 {
            for column in 0..3 {
                totals[half][column] += halves[half][column];
            }
        }
    }
    let _ = writeln!(
        out,
        "| **all** | {} | {} | {} | {} | {} | {} |",
        totals[0][0], totals[0][1], totals[0][2], totals[1][0], totals[1][1], totals[1][2]
    );
    let percent = |right: usize, all: usize| {
        if all == 0 {
            0.0
        } else {
            100.0 * right as f64 / all as f64
        }
    };
    let _ = writeln!(
        out,
        "\nanswerable tasks answered right: tune {}/{} ({:.1} %), held {}/{} ({:.1} %)",
        answerable[0][1],
        answerable[0][0],
        percent(answerable[0][1], answerable[0][0]),
        answerable[1][1],
        answerable[1][0],
        percent(answerable[1][1], answerable[1][0]),
    );
    out
}

/// Each task that was not right (or every task with `all`), with its answer.
pub(crate) fn details(scored: &[Scored], all: bool) -> String {
    let mut out = String::new();
    for s in scored {
        if !all && s.score == Score::Right {
            continue;
        }
        let _ = writeln!(
            out,
            "[{:?}] {} ({}, {}) {:?}\n    ended {} after {:?}: {}\n    {}",
            s.score,
            s.task.id,
            s.task.category,
            s.task.half,
            s.task.task,
            s.status,
            s.tools,
            s.answer.chars().take(600).collect::<String>(),
            s.why
        );
    }
    out
}

#[tokio::test]
async fn the_planner_is_never_confidently_wrong() {
    let half = std::env::var("PLANNER_EVAL_HALF").ok();
    let only = std::env::var("PLANNER_EVAL_ONLY").ok();
    let show = std::env::var("PLANNER_EVAL_SHOW").ok();
    let set = std::env::var("PLANNER_EVAL_SET").ok();
    let scored = evaluate(
        half.as_deref().filter(|h| *h != "all"),
        only.as_deref(),
        set.as_deref(),
    )
    .await;
    eprintln!("{}", table(&scored));
    match show.as_deref() {
        Some("all") => eprintln!("{}", details(&scored, true)),
        Some(_) => eprintln!("{}", details(&scored, false)),
        None => {}
    }
    let wrong: Vec<&Scored> = scored.iter().filter(|s| s.score == Score::Wrong).collect();
    assert!(
        wrong.is_empty(),
        "{} confidently wrong answers:\n{}",
        wrong.len(),
        details(
            &wrong.iter().map(|s| (*s).clone()).collect::<Vec<_>>(),
            true
        )
    );
}

#[test]
fn numbers_are_read_as_written() {
    assert_eq!(numbers_in("$1,234.50 and 4.8% of 12"), [1234.5, 4.8, 12.0]);
    assert_eq!(
        numbers_in("on 2025-03-01 the A5 notebook"),
        Vec::<f64>::new()
    );
    assert!(contains_pair(
        "US: 11 customers; DE: 4",
        &Cell::Text("DE".into()),
        &Cell::Number(4.0)
    ));
    assert!(!contains_pair(
        "US: 11 customers; DE: 4",
        &Cell::Text("DE".into()),
        &Cell::Number(11.0)
    ));
    assert!(!contains_cell("3 orders", &Cell::Text("DE".into())));
    assert!(contains_cell("US (America)", &Cell::Text("us".into())));
}
