//! The periods a question names, read from its tokens: a month ("March 2025", "Febuary 2025",
//! "2025-03"), a year, a day, a quarter ("Q1 2025", "the fourth quarter of 2024"), a half ("the
//! first half of 2025"), ranges ("between January and March 2025", "from May 2024 to June 2025"),
//! open ends ("since 2025-01-15", "after June 2023", "before 2025"), and a month without a year
//! ("in March"), which the data's own span may place. Each becomes a half-open range of ISO
//! dates, compared as text (ISO dates and timestamps sort as text).
//!
//! Two kinds are found only to be refused: a period relative to today ("last week", "this
//! month", "in the last 30 days", "yesterday"), since the data does not say what today is; and
//! the future ("next month", "tomorrow", "will", "forecast", "projected"), since the data records
//! what happened and the planner predicts nothing. Pure.

use super::text::{Kind, Token};
use super::values::near_word;

/// A period: `[from, until)`, either end open.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Period {
    pub(crate) from: Option<String>,
    pub(crate) until: Option<String>,
    /// A month named without a year (1–12): the year is found from the data's span.
    pub(crate) month_only: Option<u32>,
}

/// What the recognizer found at a place in the task.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Found {
    Period(Period),
    /// A period relative to today, in the task's words.
    Relative,
    /// The future or a forecast.
    Future,
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The month a word names: its name (a typo allowed), or a three-letter abbreviation.
pub(crate) fn month(word: &str) -> Option<u32> {
    let word = word.trim_end_matches('.');
    if let Some(index) = MONTHS
        .iter()
        .position(|name| *name == word || (word.len() == 3 && name.starts_with(word)))
    {
        // "mar" and "may" are words too; only the full name or a known abbreviation.
        return Some(index as u32 + 1);
    }
    if word == "sept" {
        return Some(9);
    }
    MONTHS
        .iter()
        .position(|name| name.len() >= 5 && near_word(word, name))
        .map(|index| index as u32 + 1)
}

fn year(token: &Token) -> Option<i32> {
    match token.kind {
        Kind::Number {
            value,
            money: false,
            percent: false,
            hash: false,
        } if token.lower.len() == 4 && (1900.0..2200.0).contains(&value) => Some(value as i32),
        _ => None,
    }
}

fn first_of(year: i32, month: u32) -> String {
    format!("{year:04}-{month:02}-01")
}

fn after_month(year: i32, month: u32) -> String {
    if month >= 12 {
        first_of(year + 1, 1)
    } else {
        first_of(year, month + 1)
    }
}

/// One point of time at `at`: (from, until, tokens used, month without year).
fn point(tokens: &[Token], at: usize) -> Option<(String, String, usize, Option<u32>)> {
    let token = tokens.get(at)?;
    let word = |i: usize| tokens.get(i).map(|t| t.lower.as_str()).unwrap_or("");
    if let Kind::Date(date) = &token.kind {
        let parts: Vec<&str> = date.split('-').collect();
        let y: i32 = parts[0].parse().ok()?;
        let m: u32 = parts[1].parse().ok()?;
        if !(1..=12).contains(&m) {
            return None;
        }
        return Some(if parts.len() == 3 {
            (date.clone(), format!("{date}~"), 1, None)
        } else {
            (first_of(y, m), after_month(y, m), 1, None)
        });
    }
    if let Some(y) = year(token) {
        return Some((first_of(y, 1), first_of(y + 1, 1), 1, None));
    }
    // Quarters: "Q1 2025", "the first quarter of 2025", "1st quarter 2025", "Q4".
    let ordinal = |w: &str| match w {
        "first" | "1st" => Some(1),
        "second" | "2nd" => Some(2),
        "third" | "3rd" => Some(3),
        "fourth" | "4th" | "last" | "final" => Some(4),
        _ => None,
    };
    let quarter = match word(at) {
        "q1" => Some((1, 1)),
        "q2" => Some((2, 1)),
        "q3" => Some((3, 1)),
        "q4" => Some((4, 1)),
        w => ordinal(w)
            .filter(|_| matches!(word(at + 1), "quarter" | "qtr"))
            .map(|q| (q, 2)),
    };
    if let Some((q, used)) = quarter {
        let year_at = if word(at + used) == "of" {
            at + used + 1
        } else {
            at + used
        };
        let y = year(tokens.get(year_at)?)?;
        let start = (q - 1) * 3 + 1;
        return Some((
            first_of(y, start),
            after_month(y, start + 2),
            year_at - at + 1,
            None,
        ));
    }
    // Halves: "H1 2025", "the first half of 2025".
    let half = match word(at) {
        "h1" => Some((1, 1)),
        "h2" => Some((2, 1)),
        w => match (w, word(at + 1)) {
            ("first", "half") => Some((1, 2)),
            ("second" | "last", "half") => Some((2, 2)),
            _ => None,
        },
    };
    if let Some((h, used)) = half {
        let year_at = if word(at + used) == "of" {
            at + used + 1
        } else {
            at + used
        };
        let y = year(tokens.get(year_at)?)?;
        let start = if h == 1 { 1 } else { 7 };
        return Some((
            first_of(y, start),
            after_month(y, start + 5),
            year_at - at + 1,
            None,
        ));
    }
    if !token.is_word() {
        return None;
    }
    let m = month(&token.lower)?;
    // "may" is a month only with a year, a day, or "in"/"of" before it.
    // "March 3, 2025" / "March 3rd 2025": a day.
    let day = |t: Option<&Token>| -> Option<u32> {
        let t = t?;
        let digits: String = t.lower.chars().take_while(char::is_ascii_digit).collect();
        let rest = &t.lower[digits.len()..];
        let d: u32 = digits.parse().ok()?;
        ((1..=31).contains(&d)
            && matches!(rest, "" | "st" | "nd" | "rd" | "th")
            && digits.len() <= 2)
            .then_some(d)
    };
    if let Some(d) = day(tokens.get(at + 1))
        && let Some(y) = tokens.get(at + 2).and_then(year)
    {
        let date = format!("{y:04}-{m:02}-{d:02}");
        return Some((date.clone(), format!("{date}~"), 3, None));
    }
    let year_at = if word(at + 1) == "of" { at + 2 } else { at + 1 };
    if let Some(y) = tokens.get(year_at).and_then(year) {
        return Some((first_of(y, m), after_month(y, m), year_at - at + 1, None));
    }
    // A month alone; "may" needs "in" before it to be the month.
    if token.lower == "may" && !matches!(word(at.wrapping_sub(1)), "in" | "of" | "during") {
        return None;
    }
    Some((String::new(), String::new(), 1, Some(m)))
}

const UNITS: [&str; 10] = [
    "day", "days", "week", "weeks", "month", "months", "quarter", "quarters", "year", "years",
];

/// Every period, relative period and future reference in the task: (first token, last token,
/// what). `free` says which tokens are not taken yet.
pub(crate) fn recognize(
    tokens: &[Token],
    free: &dyn Fn(usize) -> bool,
) -> Vec<(usize, usize, Found)> {
    let mut found = Vec::new();
    let mut taken = vec![false; tokens.len()];
    let word = |i: usize| tokens.get(i).map(|t| t.lower.as_str()).unwrap_or("");
    let mut at = 0;
    while at < tokens.len() {
        if !free(at) || taken[at] {
            at += 1;
            continue;
        }
        let w = word(at);
        // The future.
        let future_words = [
            "will",
            "shall",
            "forecast",
            "forecasts",
            "forecasted",
            "forecasting",
            "predict",
            "predicts",
            "predicted",
            "prediction",
            "predictions",
            "projected",
            "projection",
            "projections",
            "expected",
            "anticipated",
            "tomorrow",
            "future",
            "upcoming",
            "gonna",
        ];
        if future_words.contains(&w) {
            found.push((at, at, Found::Future));
            at += 1;
            continue;
        }
        if w == "going" && word(at + 1) == "to" {
            found.push((at, at + 1, Found::Future));
            at += 2;
            continue;
        }
        // "next month", "the coming 3 weeks", "the following year".
        if matches!(w, "next" | "coming" | "following") {
            let mut end = at + 1;
            if tokens.get(end).and_then(Token::number).is_some() || word(end) == "few" {
                end += 1;
            }
            if UNITS.contains(&word(end)) || month(word(end)).is_some() {
                found.push((at, end, Found::Future));
                at = end + 1;
                continue;
            }
        }
        // Relative to today.
        if matches!(
            w,
            "yesterday" | "today" | "tonight" | "ytd" | "mtd" | "recently" | "lately" | "currently"
        ) && !(w == "recently" && word(at.wrapping_sub(1)) == "most")
            && (w != "currently" || matches!(word(at + 1), "this"))
        {
            found.push((at, at, Found::Relative));
            at += 1;
            continue;
        }
        if matches!(
            w,
            "last" | "past" | "previous" | "prior" | "this" | "current" | "recent"
        ) {
            let mut end = at + 1;
            if tokens.get(end).and_then(Token::number).is_some()
                || matches!(word(end), "few" | "couple" | "two" | "three" | "several")
            {
                end += 1;
                if word(end) == "of" {
                    end += 1;
                }
            }
            if UNITS.contains(&word(end)) {
                found.push((at, end, Found::Relative));
                at = end + 1;
                continue;
            }
        }
        if (w == "ago" || (w == "to" && word(at + 1) == "date" && word(at.wrapping_sub(1)) != "up"))
            && at > 0
        {
            found.push((at, at + usize::from(w == "to"), Found::Relative));
            at += 1 + usize::from(w == "to");
            continue;
        }
        if matches!(w, "year" | "month" | "week") && word(at + 1) == "to" && word(at + 2) == "date"
        {
            found.push((at, at + 2, Found::Relative));
            at += 3;
            continue;
        }
        // Ranges: "between P and P", "from P to P".
        if matches!(w, "between" | "from")
            && let Some((from, _, first_len, first_month)) = point(tokens, at + 1)
        {
            let joiner = at + 1 + first_len;
            if matches!(
                word(joiner),
                "and" | "to" | "until" | "through" | "thru" | "till"
            ) && let Some((second_from, until, second_len, second_month)) =
                point(tokens, joiner + 1)
            {
                let (from, until, month_only) = match (first_month, second_month) {
                    (None, None) => (Some(from), Some(until), None),
                    // "between January and March 2025": the first takes the second's year.
                    (Some(m), None) => {
                        let y: i32 = second_from[..4].parse().unwrap_or(2000);
                        let second_m: u32 = second_from[5..7].parse().unwrap_or(1);
                        let y = if m > second_m { y - 1 } else { y };
                        (Some(first_of(y, m)), Some(until), None)
                    }
                    _ => {
                        at += 1;
                        continue;
                    }
                };
                let end = joiner + second_len;
                found.push((
                    at,
                    end,
                    Found::Period(Period {
                        from,
                        until,
                        month_only,
                    }),
                ));
                taken[at..=end].iter_mut().for_each(|t| *t = true);
                at = end + 1;
                continue;
            }
        }
        // Open ends and plain periods, with the preposition that leads them.
        let (lead, starts) = match w {
            "since" | "after" | "from" | "starting" => (Some(w), at + 1),
            "before" | "until" | "till" | "through" | "by" | "prior" => (Some(w), at + 1),
            "in" | "during" | "for" | "of" | "on" | "within" | "throughout" => (None, at + 1),
            _ => (None, at),
        };
        let starts = if word(starts) == "the" && starts != at {
            starts + 1
        } else {
            starts
        };
        let starts = if lead == Some("prior") && word(starts) == "to" {
            starts + 1
        } else {
            starts
        };
        if let Some((from, until, length, month_only)) = point(tokens, starts) {
            let first = if starts > at { at } else { starts };
            let end = starts + length - 1;
            if (first..=end).any(|i| !free(i) || taken[i]) {
                at += 1;
                continue;
            }
            // A bare number is a year only after a preposition or with a month ("in 2024",
            // "2024's revenue"); "5 orders" or "top 3" are no years, and 4-digit amounts need
            // a preposition too.
            if lead.is_none()
                && starts == at
                && year(&tokens[at]).is_some()
                && !tokens[at].possessive
            {
                at += 1;
                continue;
            }
            let period = match (lead, month_only) {
                (Some("since" | "from" | "starting"), None) => Period {
                    from: Some(from),
                    until: None,
                    month_only: None,
                },
                (Some("after"), None) => Period {
                    from: Some(until),
                    until: None,
                    month_only: None,
                },
                (Some("before" | "prior"), None) => Period {
                    from: None,
                    until: Some(from),
                    month_only: None,
                },
                (Some(_), None) => Period {
                    from: None,
                    until: Some(until),
                    month_only: None,
                },
                (None, None) => Period {
                    from: Some(from),
                    until: Some(until),
                    month_only: None,
                },
                (_, Some(m)) => Period {
                    from: None,
                    until: None,
                    month_only: Some(m),
                },
            };
            // An open end with a month alone is left unplaced (it needs a year first).
            if month_only.is_some() && lead.is_some() {
                at += 1;
                continue;
            }
            found.push((first, end, Found::Period(period)));
            taken[first..=end].iter_mut().for_each(|t| *t = true);
            at = end + 1;
            continue;
        }
        at += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::ask::text::tokens;

    fn periods(task: &str) -> Vec<(String, Found)> {
        let tokens = tokens(task);
        recognize(&tokens, &|_| true)
            .into_iter()
            .map(|(first, last, found)| {
                (
                    tokens[first..=last]
                        .iter()
                        .map(|t| t.lower.clone())
                        .collect::<Vec<_>>()
                        .join(" "),
                    found,
                )
            })
            .collect()
    }

    fn range(from: &str, until: &str) -> Found {
        Found::Period(Period {
            from: (!from.is_empty()).then(|| from.to_owned()),
            until: (!until.is_empty()).then(|| until.to_owned()),
            month_only: None,
        })
    }

    #[test]
    fn months_years_quarters_halves_and_ranges() {
        assert_eq!(
            periods("How many orders were placed in March 2025?"),
            [("in march 2025".into(), range("2025-03-01", "2025-04-01"))]
        );
        assert_eq!(
            periods("orders in Febuary 2025"),
            [("in febuary 2025".into(), range("2025-02-01", "2025-03-01"))]
        );
        assert_eq!(
            periods("Revenue for Q1 2025?"),
            [("for q1 2025".into(), range("2025-01-01", "2025-04-01"))]
        );
        assert_eq!(
            periods("during the fourth quarter of 2024"),
            [(
                "during the fourth quarter of 2024".into(),
                range("2024-10-01", "2025-01-01")
            )]
        );
        assert_eq!(
            periods("revenue in the first half of 2025"),
            [(
                "in the first half of 2025".into(),
                range("2025-01-01", "2025-07-01")
            )]
        );
        assert_eq!(
            periods("between January and March 2025"),
            [(
                "between january and march 2025".into(),
                range("2025-01-01", "2025-04-01")
            )]
        );
        assert_eq!(
            periods("joined after June 2023"),
            [("after june 2023".into(), range("2023-07-01", ""))]
        );
        assert_eq!(
            periods("since 2025-01-15"),
            [("since 2025-01-15".into(), range("2025-01-15", ""))]
        );
        assert_eq!(
            periods("orders before 2025"),
            [("before 2025".into(), range("", "2025-01-01"))]
        );
        assert_eq!(
            periods("sales in march"),
            [(
                "in march".into(),
                Found::Period(Period {
                    from: None,
                    until: None,
                    month_only: Some(3)
                })
            )]
        );
    }

    #[test]
    fn numbers_that_are_not_periods() {
        assert!(periods("the 5 most recent orders").is_empty());
        assert!(periods("products under $2000").is_empty());
        assert!(periods("more than 2000 units").is_empty());
        assert!(periods("I may want the list").is_empty());
    }

    #[test]
    fn relative_and_future_periods_are_found_to_be_refused() {
        for task in [
            "How many orders did we get last week?",
            "revenue this month",
            "in the last 30 days",
            "orders yesterday",
            "sales in the past 3 months",
            "two weeks ago",
        ] {
            assert!(
                periods(task).iter().any(|(_, f)| *f == Found::Relative),
                "{task}"
            );
        }
        for task in [
            "What will our revenue be next month?",
            "orders tomorrow",
            "Forecast next year's sales",
            "the projected revenue for 2026",
        ] {
            assert!(
                periods(task).iter().any(|(_, f)| *f == Found::Future),
                "{task}"
            );
        }
        assert!(periods("the most recently joined customer").is_empty());
        assert!(periods("the last order").is_empty());
    }
}
