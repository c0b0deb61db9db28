//! The date limits a task puts on the data: "in March 2025", "in 2024", "since 2025-01-01",
//! "before June 2025", "after 2024", "between January and March 2025". Each becomes a half-open
//! range of ISO dates, compared as text with the date column (ISO dates and timestamps sort as
//! text). Pure. The data rule reads periods from tokens (`ask/periods.rs`); this older reader is
//! what the currency rule uses to tell a year from an amount.

/// A half-open range `[from, until)` of ISO dates; either end may be open.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DateRange {
    pub(crate) from: Option<String>,
    pub(crate) until: Option<String>,
    /// The task's own words for it ("in March 2025").
    pub(crate) said: String,
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

/// The month a word names (1–12): its full name or a three-letter abbreviation ("Mar").
fn month(word: &str) -> Option<u32> {
    let word = word.trim_end_matches('.');
    MONTHS
        .iter()
        .position(|name| *name == word || (word.len() == 3 && name.starts_with(word)))
        .map(|index| index as u32 + 1)
}

/// A year from 1900 to 2199.
fn year(word: &str) -> Option<i32> {
    let year: i32 = word.parse().ok()?;
    (word.len() == 4 && (1900..2200).contains(&year)).then_some(year)
}

/// An ISO date (`2025-01-31`) as written.
fn iso_date(word: &str) -> Option<String> {
    let parts: Vec<&str> = word.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return None;
    };
    year(y)?;
    let (month, day): (u32, u32) = (m.parse().ok()?, d.parse().ok()?);
    ((1..=12).contains(&month) && (1..=31).contains(&day) && m.len() == 2 && d.len() == 2)
        .then(|| word.to_owned())
}

fn first_of(year: i32, month: u32) -> String {
    format!("{year:04}-{month:02}-01")
}

fn after_month(year: i32, month: u32) -> String {
    if month == 12 {
        first_of(year + 1, 1)
    } else {
        first_of(year, month + 1)
    }
}

/// A period named at `at`: a month and year ("March 2025", "Mar 2025"), a year ("2024"), or an
/// ISO date; its first day and the day after it, and how many words it took.
fn period(words: &[String], at: usize) -> Option<(String, String, usize)> {
    let word = words.get(at)?;
    if let Some(month) = month(word) {
        // "March 2025" or "March of 2025".
        let year_at = if words.get(at + 1).is_some_and(|w| w == "of") {
            at + 2
        } else {
            at + 1
        };
        let year = year(words.get(year_at)?)?;
        return Some((
            first_of(year, month),
            after_month(year, month),
            year_at - at + 1,
        ));
    }
    if let Some(year) = year(word) {
        return Some((first_of(year, 1), first_of(year + 1, 1), 1));
    }
    let date = iso_date(word)?;
    // The day after: the same text with a greater suffix sorts after every time of that day.
    Some((date.clone(), format!("{date}~"), 1))
}

/// The task's words for matching: lowercase, split on spaces and punctuation other than `-`.
fn task_words(task: &str) -> Vec<String> {
    task.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .map(|w| w.trim_matches('-').to_owned())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The date range the task asks for, if it names one.
pub(crate) fn range(task: &str) -> Option<DateRange> {
    let words = task_words(task);
    for (at, word) in words.iter().enumerate() {
        let said = |length: usize| words[at..at + length].join(" ");
        if matches!(word.as_str(), "between" | "from")
            && let Some((from, _, first_len)) = period(&words, at + 1)
        {
            let joiner = at + 1 + first_len;
            if words
                .get(joiner)
                .is_some_and(|w| matches!(w.as_str(), "and" | "to" | "until" | "through"))
                && let Some((_, until, second_len)) = period(&words, joiner + 1)
            {
                return Some(DateRange {
                    from: Some(from),
                    until: Some(until),
                    said: said(first_len + second_len + 2),
                });
            }
        }
        match word.as_str() {
            "in" | "during" | "for" | "of" => {
                if let Some((from, until, length)) = period(&words, at + 1) {
                    return Some(DateRange {
                        from: Some(from),
                        until: Some(until),
                        said: said(length + 1),
                    });
                }
            }
            "since" | "after" | "from" => {
                if let Some((from, until, length)) = period(&words, at + 1) {
                    // "since 2025" includes 2025; "after 2024" starts when 2024 ends.
                    let from = if word == "after" { until } else { from };
                    return Some(DateRange {
                        from: Some(from),
                        until: None,
                        said: said(length + 1),
                    });
                }
            }
            "before" | "until" | "till" => {
                if let Some((from, until, length)) = period(&words, at + 1) {
                    // "until March 2025" includes March; "before March 2025" does not.
                    let until = if word == "before" { from } else { until };
                    return Some(DateRange {
                        from: None,
                        until: Some(until),
                        said: said(length + 1),
                    });
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(task: &str) -> Option<(Option<String>, Option<String>, String)> {
        range(task).map(|r| (r.from, r.until, r.said))
    }

    fn both(
        from: &str,
        until: &str,
        said: &str,
    ) -> Option<(Option<String>, Option<String>, String)> {
        Some((Some(from.into()), Some(until.into()), said.into()))
    }

    #[test]
    fn months_years_and_dates_become_ranges() {
        assert_eq!(
            span("What was the revenue in March 2025?"),
            both("2025-03-01", "2025-04-01", "in march 2025")
        );
        assert_eq!(
            span("orders placed in December of 2024"),
            both("2024-12-01", "2025-01-01", "in december of 2024")
        );
        assert_eq!(
            span("How many orders in 2024?"),
            both("2024-01-01", "2025-01-01", "in 2024")
        );
        assert_eq!(
            span("revenue for Mar 2025"),
            both("2025-03-01", "2025-04-01", "for mar 2025")
        );
        assert_eq!(
            span("customers who signed up since 2025-01-15"),
            Some((Some("2025-01-15".into()), None, "since 2025-01-15".into()))
        );
        assert_eq!(
            span("orders after 2024"),
            Some((Some("2025-01-01".into()), None, "after 2024".into()))
        );
        assert_eq!(
            span("orders before June 2025"),
            Some((None, Some("2025-06-01".into()), "before june 2025".into()))
        );
        assert_eq!(
            span("orders until June 2025"),
            Some((None, Some("2025-07-01".into()), "until june 2025".into()))
        );
        assert_eq!(
            span("revenue between January 2025 and March 2025"),
            both(
                "2025-01-01",
                "2025-04-01",
                "between january 2025 and march 2025"
            )
        );
    }

    #[test]
    fn numbers_that_are_not_dates_are_not_ranges() {
        assert_eq!(span("the 5 most recent orders"), None);
        assert_eq!(span("products under $2000"), None);
        assert_eq!(span("customers with more than 5 orders in total"), None);
        assert_eq!(span("in May"), None, "a month without a year is not placed");
        assert_eq!(span("items in stock"), None);
    }
}
