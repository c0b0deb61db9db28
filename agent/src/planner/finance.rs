//! Money computations a person asks in words, turned into a short Python program for the code
//! tool: compound interest ("$1,000 at 5% compounded yearly for 10 years"), simple interest, a
//! loan's payment ("the monthly payment on a $20,000 loan at 6% over 5 years"), a percentage
//! change ("from 120 to 150"), an amount with a tip, tax or discount, and a bill split between
//! people. The sandbox computes; the planner never does the sums, and the code is in
//! `keyFacts`.
//!
//! Like the data rule, it places every word: the amounts, the rate and the duration are read by
//! role, the other words must belong to the computation's own vocabulary; a word it cannot place
//! means the task is not one of these (another rule, or "cannot", takes it). Pure.

use super::ask::text::{self, Kind, Token};

/// A computation, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Computation {
    /// What is computed, in words.
    pub(crate) what: String,
    /// The Python program; it prints the result.
    pub(crate) code: String,
    /// Whether the result is money.
    pub(crate) money: bool,
}

/// Words that may appear around a money computation.
const VOCABULARY: [&str; 123] = [
    "if",
    "i",
    "we",
    "you",
    "my",
    "our",
    "invest",
    "invested",
    "investing",
    "investment",
    "deposit",
    "deposited",
    "put",
    "save",
    "saved",
    "savings",
    "at",
    "a",
    "an",
    "the",
    "of",
    "for",
    "over",
    "after",
    "in",
    "with",
    "interest",
    "rate",
    "annual",
    "annually",
    "yearly",
    "per",
    "year",
    "years",
    "month",
    "months",
    "compounded",
    "compounding",
    "compound",
    "compounds",
    "monthly",
    "quarterly",
    "daily",
    "weekly",
    "semiannually",
    "continuously",
    "how",
    "much",
    "will",
    "would",
    "have",
    "has",
    "be",
    "is",
    "are",
    "worth",
    "grow",
    "grows",
    "to",
    "what",
    "total",
    "final",
    "amount",
    "balance",
    "end",
    "value",
    "future",
    "get",
    "earn",
    "earned",
    "payment",
    "payments",
    "loan",
    "mortgage",
    "borrow",
    "borrowed",
    "on",
    "term",
    "pay",
    "repay",
    "percent",
    "simple",
    "each",
    "person",
    "people",
    "between",
    "among",
    "split",
    "evenly",
    "bill",
    "tip",
    "tax",
    "sales",
    "discount",
    "off",
    "plus",
    "and",
    "from",
    "change",
    "increase",
    "decrease",
    "percentage",
    "by",
    "does",
    "do",
    "did",
    "it",
    "that",
    "this",
    "please",
    "calculate",
    "compute",
    "me",
    "tell",
    "equal",
    "equally",
    "cost",
    "costs",
    "friends",
    "ways",
    "share",
    "whole",
    "there",
];

#[derive(Debug, Default)]
struct Parts {
    amounts: Vec<f64>,
    rate: Option<f64>,
    years: Option<f64>,
    people: Option<f64>,
    words: Vec<String>,
}

fn read(tokens: &[Token]) -> Option<Parts> {
    let mut parts = Parts::default();
    let mut index = 0;
    while index < tokens.len() {
        let token = &tokens[index];
        let next = tokens
            .get(index + 1)
            .map(|t| t.lower.as_str())
            .unwrap_or("");
        match &token.kind {
            Kind::Number {
                value,
                money,
                percent,
                hash: false,
            } => {
                if *percent {
                    parts.rate = Some(*value);
                } else if matches!(next, "year" | "years") {
                    parts.years = Some(*value);
                    index += 1;
                } else if matches!(next, "month" | "months") {
                    parts.years = Some(*value / 12.0);
                    index += 1;
                } else if matches!(next, "people" | "persons" | "friends" | "ways") {
                    parts.people = Some(*value);
                    index += 1;
                } else if matches!(next, "percent") {
                    parts.rate = Some(*value);
                    index += 1;
                } else if *money || matches!(next, "dollars" | "usd" | "euros" | "pounds") {
                    parts.amounts.push(*value);
                    if !*money {
                        index += 1;
                    }
                } else {
                    parts.amounts.push(*value);
                }
            }
            Kind::Word => parts.words.push(token.lower.clone()),
            Kind::Symbol(s) if s == "%" => {}
            _ => return None,
        }
        index += 1;
    }
    Some(parts)
}

fn has(parts: &Parts, any: &[&str]) -> bool {
    parts.words.iter().any(|w| any.contains(&w.as_str()))
}

fn number(value: f64) -> String {
    super::words::plain_number(value)
}

/// The computation a task asks for, if it is one of these and every word is placed.
pub(crate) fn computation(task: &str) -> Option<Computation> {
    let tokens = text::tokens(task);
    let parts = read(&tokens)?;
    if parts
        .words
        .iter()
        .any(|w| !VOCABULARY.contains(&w.as_str()))
    {
        return None;
    }
    let rate = parts.rate.map(|r| r / 100.0);
    // A loan's payment.
    if has(&parts, &["loan", "mortgage", "borrow", "borrowed"])
        && has(&parts, &["payment", "payments", "pay", "repay"])
        && let ([principal], Some(rate), Some(years)) =
            (parts.amounts.as_slice(), rate, parts.years)
    {
        let code = format!(
            "principal = {}\nmonthly_rate = {} / 12\nmonths = round({} * 12)\n\
             payment = principal * monthly_rate / (1 - (1 + monthly_rate) ** -months) if monthly_rate else principal / months\n\
             print(round(payment, 2))",
            number(*principal),
            number(rate),
            number(years)
        );
        return Some(Computation {
            what: format!(
                "the monthly payment on ${} at {}% a year over {} years",
                number(*principal),
                number(rate * 100.0),
                number(years)
            ),
            code,
            money: true,
        });
    }
    // Interest: compound unless said simple.
    if has(
        &parts,
        &[
            "interest",
            "invest",
            "invested",
            "investment",
            "deposit",
            "compounded",
            "grow",
            "savings",
        ],
    ) && let ([principal], Some(rate), Some(years)) =
        (parts.amounts.as_slice(), rate, parts.years)
    {
        if has(&parts, &["simple"]) {
            return Some(Computation {
                what: format!(
                    "${} at {}% simple interest for {} years",
                    number(*principal),
                    number(rate * 100.0),
                    number(years)
                ),
                code: format!(
                    "print(round({} * (1 + {} * {}), 2))",
                    number(*principal),
                    number(rate),
                    number(years)
                ),
                money: true,
            });
        }
        let (per_year, said) = if has(&parts, &["continuously"]) {
            (0.0, "continuously")
        } else if has(&parts, &["monthly"]) {
            (12.0, "monthly")
        } else if has(&parts, &["quarterly"]) {
            (4.0, "quarterly")
        } else if has(&parts, &["daily"]) {
            (365.0, "daily")
        } else if has(&parts, &["weekly"]) {
            (52.0, "weekly")
        } else if has(&parts, &["semiannually"]) {
            (2.0, "twice a year")
        } else {
            (1.0, "yearly")
        };
        let code = if per_year == 0.0 {
            format!(
                "import math\nprint(round({} * math.exp({} * {}), 2))",
                number(*principal),
                number(rate),
                number(years)
            )
        } else {
            format!(
                "print(round({} * (1 + {} / {}) ** ({} * {}), 2))",
                number(*principal),
                number(rate),
                number(per_year),
                number(per_year),
                number(years)
            )
        };
        return Some(Computation {
            what: format!(
                "${} at {}% a year compounded {said} for {} years",
                number(*principal),
                number(rate * 100.0),
                number(years)
            ),
            code,
            money: true,
        });
    }
    // A bill split between people.
    if has(&parts, &["split", "between", "among", "each"])
        && let ([amount], Some(people)) = (parts.amounts.as_slice(), parts.people)
        && rate.is_none()
    {
        return Some(Computation {
            what: format!(
                "${} split between {} people",
                number(*amount),
                number(people)
            ),
            code: format!("print(round({} / {}, 2))", number(*amount), number(people)),
            money: true,
        });
    }
    // A percentage change from one figure to another.
    if has(
        &parts,
        &["change", "increase", "decrease", "percentage", "percent"],
    ) && has(&parts, &["from"])
        && let [from, to] = parts.amounts.as_slice()
        && rate.is_none()
        && *from != 0.0
    {
        return Some(Computation {
            what: format!(
                "the percentage change from {} to {}",
                number(*from),
                number(*to)
            ),
            code: format!(
                "print(round(({} - {}) / {} * 100, 2))",
                number(*to),
                number(*from),
                number(*from)
            ),
            money: false,
        });
    }
    // An amount with a tip, tax or discount: both the part and the amount with it, since "a 20%
    // tip on $65" may ask for either.
    if has(&parts, &["tip", "tax", "discount", "off"])
        && let ([amount], Some(rate)) = (parts.amounts.as_slice(), rate)
        && parts.years.is_none()
    {
        let down = has(&parts, &["discount", "off"]);
        let part = if has(&parts, &["tip"]) {
            "tip"
        } else if has(&parts, &["tax"]) {
            "tax"
        } else {
            "discount"
        };
        let (sign, with) = if down {
            ("-", "price after the discount")
        } else {
            ("+", "total with it")
        };
        return Some(Computation {
            what: format!("a {}% {part} on ${}", number(rate * 100.0), number(*amount)),
            code: format!(
                "amount = {}\npart = amount * {}\nprint(f\"{part} {{part:.2f}}, {with} {{amount {sign} part:.2f}}\")",
                number(*amount),
                number(rate)
            ),
            money: true,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(task: &str) -> String {
        computation(task)
            .unwrap_or_else(|| panic!("no computation in {task:?}"))
            .code
    }

    #[test]
    fn money_questions_become_programs() {
        assert_eq!(
            code(
                "If I invest $1,000 at 5% interest compounded yearly, how much will I have after 10 years?"
            ),
            "print(round(1000 * (1 + 0.05 / 1) ** (1 * 10), 2))"
        );
        assert_eq!(
            code("How much will $5,000 grow to in 3 years at 4% compounded monthly?"),
            "print(round(5000 * (1 + 0.04 / 12) ** (12 * 3), 2))"
        );
        assert!(
            code(
                "What is the monthly payment on a $20,000 loan at 6% annual interest over 5 years?"
            )
            .contains("principal = 20000\nmonthly_rate = 0.06 / 12\nmonths = round(5 * 12)")
        );
        assert_eq!(
            code("Split a $250 bill evenly between 6 people: how much does each pay?"),
            "print(round(250 / 6, 2))"
        );
        assert_eq!(
            code("What is the percentage change from 120 to 150?"),
            "print(round((150 - 120) / 120 * 100, 2))"
        );
        assert_eq!(
            code("What's a 20% tip on a $65 bill?"),
            "amount = 65\npart = amount * 0.2\nprint(f\"tip {part:.2f}, total with it {amount + part:.2f}\")"
        );
        assert_eq!(
            code("$1000 at 3% simple interest for 4 years"),
            "print(round(1000 * (1 + 0.03 * 4), 2))"
        );
    }

    #[test]
    fn tasks_with_other_words_are_not_these() {
        assert_eq!(computation("What is the total revenue in 2024?"), None);
        assert_eq!(computation("How much interest did Ada Okafor pay?"), None);
        assert_eq!(computation("Increase all Electronics prices by 10%"), None);
        assert_eq!(computation("What's 15% of 2,400?"), None);
    }
}
