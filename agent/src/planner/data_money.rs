//! A data answer in another currency: "What is the total revenue in EUR?", "the average product
//! price in GBP", "the most expensive product, and what does it cost in euros?". The data rule
//! answers in the data's own currency, then the exchange-rate tool converts its figure, and the
//! answer gives both with the rate and its date. Pure: the answer and the rate tool's result in,
//! the answer with the conversion out.

use serde_json::{Map, Value, json};

use super::rates::{self, RateAsk};
use super::words;

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

    #[test]
    fn a_money_answer_gets_its_conversion() {
        let ask = RateAsk {
            from: "USD".into(),
            to: "EUR".into(),
            amount: Some(1000.5),
            date: None,
        };
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
}
