//! A data answer in another currency: "What is the total revenue in EUR?", "the average product
//! price in GBP", "the most expensive product, and what does it cost in euros?". The data rule
//! answers in the data's own currency (a column's `_usd` suffix; US dollars when none says),
//! then the exchange-rate tool converts that figure, and the answer gives both with the rate
//! and its date. Pure: the shape, the rows and the task in; the rate ask and the answer out.

use serde_json::{Map, Value, json};

use super::query::{Measure, Operation, Shape};
use super::rates::{self, RateAsk};
use super::sql::Table;
use super::words;

/// The conversion the task asks of the data answer: from the data's currency to the one the
/// task names, for the figure the rows give. `None` when the task names no other currency or
/// the answer is no amount of money.
pub(crate) fn ask(
    task: &str,
    shape: &Shape,
    tables: &[Table],
    rows: &[Map<String, Value>],
) -> Option<RateAsk> {
    if !is_money(shape) {
        return None;
    }
    let from = data_currency(shape, tables);
    let to = rates::currencies(task)
        .into_iter()
        .find(|code| *code != from)?;
    let figure = figure(shape, rows)?;
    Some(RateAsk {
        from,
        to,
        amount: Some(figure),
        date: None,
    })
}

/// Whether the measure is an amount of money: revenue, or a price, cost, amount or total.
fn is_money(shape: &Shape) -> bool {
    match &shape.measure {
        Some(Measure::Revenue) => true,
        Some(Measure::Column { column, .. }) => {
            let lower = column.to_lowercase();
            ["price", "cost", "amount", "total", "revenue", "usd", "eur"]
                .iter()
                .any(|word| lower.contains(word))
        }
        _ => false,
    }
}

/// The currency the data is kept in: the one a money column's name says (`price_usd`), else
/// US dollars.
fn data_currency(shape: &Shape, tables: &[Table]) -> String {
    let named = |column: &str| {
        rates::currencies(&column.replace(['_', '-'], " "))
            .into_iter()
            .next()
    };
    if let Some(Measure::Column { column, .. }) = &shape.measure
        && let Some(code) = named(column)
    {
        return code;
    }
    tables
        .iter()
        .flat_map(|table| &table.columns)
        .filter(|column| {
            let lower = column.to_lowercase();
            lower.contains("price") || lower.contains("amount") || lower.contains("total")
        })
        .find_map(|column| named(column))
        .unwrap_or_else(|| "USD".to_owned())
}

/// The money figure of the answer: the aggregate, or the first ranked row's value.
fn figure(shape: &Shape, rows: &[Map<String, Value>]) -> Option<f64> {
    let first = rows.first()?;
    match &shape.operation {
        Operation::Aggregate(function) => first.get(*function)?.as_f64(),
        Operation::Top { .. } => first.get("value").and_then(Value::as_f64).or_else(|| {
            let Some(Measure::Column { column, .. }) = &shape.measure else {
                return None;
            };
            first.get(column)?.as_f64()
        }),
        _ => None,
    }
}

/// The data answer with the converted figure added, from the rate tool's result.
pub(crate) fn converted_answer(
    answer: &str,
    mut key_facts: Map<String, Value>,
    ask: &RateAsk,
    rate_result: &Value,
) -> Result<(String, Map<String, Value>), String> {
    let (_, rate_facts) = rates::facts(ask, rate_result)?;
    let converted = rate_facts
        .get("converted")
        .and_then(Value::as_f64)
        .ok_or("the exchange-rate tool gave no converted amount")?;
    let rate = rate_facts.get("rate").cloned().unwrap_or(Value::Null);
    let day = rate_facts
        .get("date")
        .and_then(Value::as_str)
        .unwrap_or("latest")
        .to_owned();
    let amount = ask.amount.unwrap_or_default();
    let answer = answer.trim_end();
    let stop = if answer.ends_with('.') { "" } else { "." };
    let answer = format!(
        "{answer}{stop} In {to}: {converted:.2} {to} ({} {from} at {} {to} per {from}, rate of \
         {day}).",
        words::plain_number(amount),
        rate.as_f64()
            .map_or_else(|| rate.to_string(), words::plain_number),
        from = ask.from,
        to = ask.to,
    );
    key_facts.insert("currency".into(), json!(ask.from));
    key_facts.insert("conversion_currency".into(), json!(ask.to));
    key_facts.insert("conversion_rate".into(), rate);
    key_facts.insert("conversion_date".into(), json!(day));
    key_facts.insert("conversion_amount".into(), json!(amount));
    key_facts.insert("conversion_converted".into(), json!(converted));
    Ok((answer, key_facts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::query::shape;
    use crate::planner::query::tests::shop;

    fn row(pairs: Value) -> Vec<Map<String, Value>> {
        vec![pairs.as_object().cloned().expect("a row")]
    }

    #[test]
    fn a_money_answer_is_converted_from_the_datas_currency() {
        let tables = shop();
        let total = shape("What is the total revenue in EUR of all orders?", &tables).unwrap();
        let ask = ask(
            "What is the total revenue in EUR of all orders?",
            &total,
            &tables,
            &row(json!({"sum": 1000.5})),
        )
        .expect("a conversion");
        assert_eq!(
            (ask.from.as_str(), ask.to.as_str(), ask.amount),
            ("USD", "EUR", Some(1000.5))
        );
        let top = shape(
            "What is the most expensive product, and what does it cost in euros?",
            &tables,
        )
        .unwrap();
        let ask_top = ask_for(
            &top,
            "in euros",
            &row(json!({"name": "TV", "price_usd": 899.0})),
        );
        assert_eq!(ask_top.map(|a| a.amount), Some(Some(899.0)));
        let average = shape("What is the average product price in GBP?", &tables).unwrap();
        let ask_avg = ask_for(&average, "in GBP", &row(json!({"avg": 41.5})));
        assert_eq!(ask_avg.map(|a| a.to), Some("GBP".to_owned()));
        // No other currency, or no money: nothing to convert.
        assert!(ask_for(&total, "in USD", &row(json!({"sum": 1.0}))).is_none());
        let count = shape("How many orders in EUR?", &tables).unwrap();
        assert!(ask_for(&count, "in EUR", &row(json!({"count": 3}))).is_none());

        let (answer, facts) = converted_answer(
            "The total revenue over orders is 1000.5.",
            Map::new(),
            &ask,
            &json!({"structuredContent": {"rate": 0.9, "date": "2025-06-30", "converted": 900.45}}),
        )
        .unwrap();
        assert_eq!(
            answer,
            "The total revenue over orders is 1000.5. In EUR: 900.45 EUR (1000.5 USD at 0.9 EUR \
             per USD, rate of 2025-06-30)."
        );
        assert_eq!(facts["conversion_converted"], json!(900.45));
    }

    fn ask_for(shape: &Shape, task: &str, rows: &[Map<String, Value>]) -> Option<RateAsk> {
        ask(task, shape, &shop(), rows)
    }
}
