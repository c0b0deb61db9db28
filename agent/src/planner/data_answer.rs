//! The answer of the data rule ([`super::query`]): the figure or the rows of the final query in
//! words, and the key facts. Pure.

use serde_json::{Map, Value, json};

use super::query::{Measure, Operation, Shape};
use super::words;

/// The answer and key facts from the final query's rows.
pub(crate) fn facts(
    shape: &Shape,
    said: &[String],
    sql: &str,
    rows: &[Map<String, Value>],
) -> (String, Map<String, Value>) {
    let condition = if said.is_empty() {
        String::new()
    } else {
        format!(" ({})", said.join("; "))
    };
    let mut key_facts = Map::new();
    key_facts.insert("table".into(), json!(shape.table));
    key_facts.insert("sql".into(), json!(sql));
    let first = |key: &str| {
        rows.first()
            .and_then(|row| row.get(key))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let answer = match &shape.operation {
        Operation::Count => {
            let count = first("count");
            key_facts.insert("count".into(), count.clone());
            if count == json!(1) {
                let one = shape.table.strip_suffix('s').unwrap_or(&shape.table);
                format!("There is 1 {one}{condition}.")
            } else {
                format!("There are {count} {}{condition}.", shape.table)
            }
        }
        Operation::Aggregate(function) => {
            let value = first(function);
            key_facts.insert((*function).into(), value.clone());
            let what = match function {
                &"avg" => "average",
                _ => "total",
            };
            let shown = value
                .as_f64()
                .map_or_else(|| value.to_string(), words::plain_number);
            let mut answer = format!(
                "The {what} {} over {} is {shown}{condition}",
                measure_words(shape),
                shape.table
            );
            for (operator, number) in &shape.comparisons {
                if let Some(value) = value.as_f64() {
                    let holds = match *operator {
                        ">" => value > *number,
                        ">=" => value >= *number,
                        "<" => value < *number,
                        _ => value <= *number,
                    };
                    answer.push_str(&format!(
                        "; {shown} {} {operator} {}",
                        if holds { "is" } else { "is not" },
                        words::plain_number(*number)
                    ));
                    key_facts.insert("comparison_holds".into(), json!(holds));
                }
            }
            answer.push('.');
            answer
        }
        Operation::CountBy(..) | Operation::Top { .. } | Operation::List => {
            key_facts.insert("row_count".into(), json!(rows.len()));
            key_facts.insert(
                "rows".into(),
                json!(rows.iter().take(20).collect::<Vec<_>>()),
            );
            if rows.is_empty() {
                format!("No {} match{condition}.", shape.table)
            } else {
                let shown: Vec<String> = rows
                    .iter()
                    .take(10)
                    .map(|row| describe_row(shape, row))
                    .collect();
                format!(
                    "{} row{} from {}{condition}: {}{}",
                    rows.len(),
                    if rows.len() == 1 { "" } else { "s" },
                    shape.table,
                    shown.join("; "),
                    if rows.len() > 10 { "; …" } else { "" }
                )
            }
        }
    };
    (answer, key_facts)
}

fn measure_words(shape: &Shape) -> String {
    match &shape.measure {
        Some(Measure::Column { column, .. }) => column.clone(),
        Some(Measure::Revenue) => "revenue (quantity × price)".into(),
        Some(Measure::CountOf(table)) => format!("number of {table}"),
        None => "value".into(),
    }
}

/// A row in words: its name first, then the columns the task named and the ranked value, else
/// every column.
fn describe_row(shape: &Shape, row: &Map<String, Value>) -> String {
    let cell = |value: &Value| match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let name = ["name", "title", "full_name"]
        .iter()
        .find_map(|key| row.get(*key))
        .map(cell);
    let mut shown: Vec<String> = shape
        .named_columns
        .iter()
        .chain(std::iter::once(&"value".to_owned()))
        .filter_map(|column| row.get(column).map(|v| format!("{column} {}", cell(v))))
        .collect();
    if let Some(Measure::Column { column, .. }) = &shape.measure
        && !shape.named_columns.contains(column)
        && let Some(v) = row.get(column)
    {
        shown.insert(0, format!("{column} {}", cell(v)));
    }
    if let Some(Measure::Column { column, .. }) = &shape.measure {
        if row.contains_key(column) {
            // The ranked value is the measure's column, already shown.
            shown.retain(|s| !s.starts_with("value "));
        } else if let Some(at) = shown.iter().position(|s| s.starts_with("value ")) {
            // Added up from another table's rows: say what it is ("total quantity 93").
            shown[at] = format!("total {column} {}", &shown[at]["value ".len()..]);
        }
    }
    if shown.is_empty() || name.is_none() {
        shown = row
            .iter()
            .filter(|(key, _)| !["name", "title", "full_name"].contains(&key.as_str()))
            .filter(|(key, _)| {
                !(key.as_str() == "value"
                    && matches!(&shape.measure, Some(Measure::Column { column, .. }) if row.contains_key(column)))
            })
            .map(|(key, v)| format!("{key} {}", cell(v)))
            .collect();
    }
    match name {
        Some(name) => format!("{name} ({})", shown.join(", ")),
        None => shown.join(", "),
    }
}
