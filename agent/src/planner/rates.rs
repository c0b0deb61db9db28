//! The offline planner's currency rule: which currencies, which amount and which day a task
//! asks about ("convert 250 US dollars to yen", "usd to gbp rate on 2024-03-15", "€100 in
//! pounds"), and the answer from an exchange-rate tool's result. Currencies are ISO 4217 codes,
//! or the common names and symbols of the major ones. Pure.

use serde_json::{Map, Value, json};

use super::words;

/// Common ISO 4217 codes, recognised in any case.
pub(crate) const CODES: [&str; 32] = [
    "USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "SEK", "INR", "BRL", "CNY", "NZD", "NOK",
    "DKK", "PLN", "MXN", "KRW", "SGD", "HKD", "ZAR", "TRY", "CZK", "HUF", "ILS", "RUB", "THB",
    "IDR", "PHP", "MYR", "AED", "SAR", "ISK",
];

/// Names and symbols of the major currencies, longest first so "canadian dollar" wins over
/// "dollar".
pub(crate) const NAMES: [(&str, &str); 33] = [
    ("australian dollar", "AUD"),
    ("canadian dollar", "CAD"),
    ("new zealand dollar", "NZD"),
    ("hong kong dollar", "HKD"),
    ("singapore dollar", "SGD"),
    ("swiss franc", "CHF"),
    ("swedish krona", "SEK"),
    ("swedish kronor", "SEK"),
    ("norwegian krone", "NOK"),
    ("danish krone", "DKK"),
    ("british pound", "GBP"),
    ("pound sterling", "GBP"),
    ("us dollar", "USD"),
    ("u.s. dollar", "USD"),
    ("american dollar", "USD"),
    ("indian rupee", "INR"),
    ("brazilian real", "BRL"),
    ("japanese yen", "JPY"),
    ("chinese yuan", "CNY"),
    ("sterling", "GBP"),
    ("dollar", "USD"),
    ("euro", "EUR"),
    ("pound", "GBP"),
    ("yen", "JPY"),
    ("franc", "CHF"),
    ("rupee", "INR"),
    ("reais", "BRL"),
    ("yuan", "CNY"),
    ("renminbi", "CNY"),
    ("krona", "SEK"),
    ("kronor", "SEK"),
    ("zloty", "PLN"),
    ("peso", "MXN"),
];

/// Currency symbols.
const SYMBOLS: [(char, &str); 5] = [
    ('$', "USD"),
    ('€', "EUR"),
    ('£', "GBP"),
    ('¥', "JPY"),
    ('₹', "INR"),
];

/// What a currency task asks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RateAsk {
    pub(crate) from: String,
    pub(crate) to: String,
    pub(crate) amount: Option<f64>,
    pub(crate) date: Option<String>,
}

/// The currencies a text names, in the order they appear: codes (any case, or an unknown
/// three-letter code in capitals), names, symbols.
pub(crate) fn currencies(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut found: Vec<(usize, String)> = Vec::new();
    let mut taken = vec![false; lower.len()];
    for (name, code) in NAMES {
        let mut from = 0;
        while let Some(at) = lower[from..].find(name).map(|at| at + from) {
            from = at + name.len();
            let before_ok = at == 0 || !lower[..at].ends_with(char::is_alphanumeric);
            let after = &lower[at + name.len()..];
            let after_ok = after.is_empty()
                || after.starts_with(|c: char| !c.is_alphanumeric())
                || after.starts_with('s');
            if before_ok && after_ok && !taken[at] {
                taken[at..at + name.len()]
                    .iter_mut()
                    .for_each(|t| *t = true);
                found.push((at, code.to_owned()));
            }
        }
    }
    let mut offset = 0;
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        let at = text[offset..].find(word).map_or(offset, |at| at + offset);
        offset = at + word.len();
        if word.chars().count() != 3 || !word.chars().all(|c| c.is_ascii_alphabetic()) {
            continue;
        }
        let upper = word.to_uppercase();
        let capitals = word.chars().all(|c| c.is_ascii_uppercase());
        // "try" is a word before it is the Turkish lira.
        let known = CODES.contains(&upper.as_str()) && (capitals || upper != "TRY");
        if (known || capitals) && !taken.get(at).copied().unwrap_or(false) {
            found.push((at, upper));
        }
    }
    // An unknown code in capitals (XYZ) counts only beside a known currency: alone it is more
    // likely an acronym (SQL, API).
    if !found.iter().any(|(_, code)| CODES.contains(&code.as_str())) {
        found.clear();
    }
    for (at, c) in text.char_indices() {
        if let Some((_, code)) = SYMBOLS.iter().find(|(symbol, _)| *symbol == c) {
            found.push((at, (*code).to_owned()));
        }
    }
    found.sort_by_key(|(at, _)| *at);
    let mut codes: Vec<String> = Vec::new();
    for (_, code) in found {
        if !codes.contains(&code) {
            codes.push(code);
        }
    }
    codes
}

/// The first `YYYY-MM-DD` in the text.
pub(crate) fn date(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .find(|word| {
            let parts: Vec<&str> = word.split('-').collect();
            parts.len() == 3
                && parts[0].len() == 4
                && parts[1].len() == 2
                && parts[2].len() == 2
                && parts.iter().all(|p| p.chars().all(|c| c.is_ascii_digit()))
        })
        .map(str::to_owned)
}

/// Whether the task is about a currency conversion or a rate.
pub(crate) fn is_rate_task(task: &str) -> bool {
    let lower = task.to_lowercase();
    let task_words = words::words(task);
    let asks = words::mentions(
        &task_words,
        &[
            "exchange",
            "rate",
            "convert",
            "conversion",
            "currency",
            "worth",
        ],
    ) || lower.contains("how much is")
        || lower.contains(" in ");
    asks && !currencies(task).is_empty()
}

/// The conversion asked: "A to B" / "from A into B" / "N A in B"; with one currency named, the
/// other is US dollars.
pub(crate) fn ask(task: &str) -> Option<RateAsk> {
    let mut codes = currencies(task);
    if codes.is_empty() {
        return None;
    }
    if codes.len() == 1 {
        if codes[0] == "USD" {
            return None;
        }
        codes.insert(0, "USD".to_owned());
    }
    let amount = words::numbers(task)
        .into_iter()
        .find(|n| *n > 0.0)
        .filter(|_| task.chars().any(|c| c.is_ascii_digit()));
    Some(RateAsk {
        from: codes[0].clone(),
        to: codes[1].clone(),
        amount,
        date: date(task),
    })
}

/// The answer from the tool's result (`{base, quote, date, rate, amount, converted}`).
pub(crate) fn facts(ask: &RateAsk, result: &Value) -> Result<(String, Map<String, Value>), String> {
    let data = result
        .get("structuredContent")
        .cloned()
        .or_else(|| serde_json::from_str(&crate::summary::result_text(result, usize::MAX)).ok())
        .ok_or("the exchange-rate tool answered no data I can read")?;
    let rate = data
        .get("rate")
        .and_then(Value::as_f64)
        .ok_or("the exchange-rate tool's answer has no rate")?;
    let day = data.get("date").and_then(Value::as_str).unwrap_or("latest");
    let (from, to) = (&ask.from, &ask.to);
    let mut key_facts = Map::new();
    key_facts.insert("from".into(), json!(from));
    key_facts.insert("to".into(), json!(to));
    key_facts.insert("rate".into(), json!(rate));
    key_facts.insert("date".into(), json!(day));
    let answer = match ask.amount {
        Some(amount) => {
            let converted = data
                .get("converted")
                .and_then(Value::as_f64)
                .unwrap_or(amount * rate);
            let converted = (converted * 100.0).round() / 100.0;
            key_facts.insert("amount".into(), json!(amount));
            key_facts.insert("converted".into(), json!(converted));
            format!(
                "{} {from} is {converted:.2} {to} at {} {to} per {from} (rate of {day}).",
                words::plain_number(amount),
                words::plain_number(rate)
            )
        }
        None => format!(
            "1 {from} = {} {to} (rate of {day}).",
            words::plain_number(rate)
        ),
    };
    if let Some(source) = data.get("source") {
        key_facts.insert("source".into(), source.clone());
    }
    Ok((answer, key_facts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn currencies_by_code_name_and_symbol_in_order() {
        assert_eq!(
            currencies("Convert 250 US dollars to Japanese yen"),
            ["USD", "JPY"]
        );
        assert_eq!(
            currencies("How much is 100 euros in British pounds?"),
            ["EUR", "GBP"]
        );
        assert_eq!(currencies("usd to gbp rate"), ["USD", "GBP"]);
        assert_eq!(currencies("€100 in canadian dollars"), ["EUR", "CAD"]);
        assert_eq!(currencies("from USD to XYZ"), ["USD", "XYZ"]);
        assert!(currencies("how are you today").is_empty());
        assert!(currencies("The rate of the app").is_empty());
    }

    #[test]
    fn the_ask_has_amount_and_date() {
        assert_eq!(
            ask("usd to gbp rate on 2024-03-15"),
            Some(RateAsk {
                from: "USD".into(),
                to: "GBP".into(),
                amount: None,
                date: Some("2024-03-15".into())
            })
        );
        assert_eq!(
            ask("Convert 1,250 euros to yen").map(|a| (a.from, a.to, a.amount)),
            Some(("EUR".into(), "JPY".into(), Some(1250.0)))
        );
        assert_eq!(
            ask("What is the euro worth?").map(|a| (a.from, a.to)),
            Some(("USD".into(), "EUR".into()))
        );
        assert!(is_rate_task("convert 50 usd to eur"));
        assert!(is_rate_task("what's the exchange rate from usd to eur?"));
        assert!(!is_rate_task("how many customers are in the us?"));
    }

    #[test]
    fn facts_from_the_tool_result() {
        let result = json!({"structuredContent": {"base": "USD", "quote": "JPY", "date": "2025-06-30",
            "rate": 148.148148, "amount": 250.0, "converted": 37037.037}});
        let ask = ask("Convert 250 USD to JPY").expect("ask");
        let (answer, facts) = facts(&ask, &result).expect("facts");
        assert_eq!(
            answer,
            "250 USD is 37037.04 JPY at 148.148148 JPY per USD (rate of 2025-06-30)."
        );
        assert_eq!(facts["converted"], json!(37037.04));
        assert!(super::facts(&ask, &json!({"content": []})).is_err());
    }
}
