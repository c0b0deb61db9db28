//! Reading what the offline planner needs out of a task's words: a customer's name, a money
//! threshold, a file path. Pure string work, no regular-expression crate, each rule general
//! (quoted names, names after "customer", `$1,234.50` or `500 dollars`, absolute or relative
//! paths) rather than tuned to one sentence.

/// The task shapes the planner knows by name; everything else goes to the general rules.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Intent {
    /// "Look up customer NAME's orders, sum their total, and tell me if it exceeds $N", or
    /// "What is NAME's completed order total (in euros)?".
    OrderTotal {
        /// The customer's name as written.
        customer: String,
        /// The threshold in dollars, when the task compares with one.
        threshold: Option<f64>,
        /// Another currency to give the total in (ISO code), when the task asks for one.
        currency: Option<String>,
    },
    /// "Read PATH … and tell me how many lines it has".
    LineCount {
        /// The path as written.
        path: String,
    },
}

/// Keywords of the named rules, for typo correction ("custmer", "ordres").
const VOCABULARY: [&str; 8] = [
    "customer",
    "customers",
    "orders",
    "order",
    "lines",
    "total",
    "exceeds",
    "count",
];

/// What the task asks: `Ok(None)` when no named rule applies (the general rules try), an error
/// when a rule applies but the task lacks a part it needs.
pub(crate) fn intent(task: &str) -> Result<Option<Intent>, String> {
    let task = &super::words::corrected(task, &VOCABULARY);
    let lower = task.to_lowercase();
    let task_words = super::words::words(task);
    let mentions = |list: &[&str]| task_words.iter().any(|w| list.contains(&w.as_str()));
    let ranking = lower.contains("how many")
        || mentions(&[
            "most", "top", "average", "highest", "lowest", "which", "who", "list",
        ]);
    let spending = mentions(&["spent", "spend", "spending", "spends"]);
    if (lower.contains("order") || spending) && !ranking {
        let threshold = money(task);
        let money_words = mentions(&[
            "total", "sum", "spent", "spend", "worth", "exceed", "exceeds", "value", "totals",
        ]);
        let customer = if lower.contains("customer") {
            customer_name(task)
        } else {
            quoted(task).or_else(|| proper_names(task).into_iter().next())
        };
        match customer {
            // Only against an amount: other questions about a customer's orders are the data
            // rule's, which checks every name against the data first.
            Some(customer) if threshold.is_some() && (money_words || spending) => {
                let currency = super::rates::currencies(task)
                    .into_iter()
                    .find(|code| code != "USD");
                return Ok(Some(Intent::OrderTotal {
                    customer,
                    threshold,
                    currency,
                }));
            }
            None if lower.contains("customer") && threshold.is_some() => {
                return Err(
                    "the task asks about a customer's orders but names no customer; \
                            write the name after \"customer\" or in quotes"
                        .to_owned(),
                );
            }
            _ => {}
        }
    }
    if lower.contains("line") && (lower.contains("how many") || lower.contains("count")) {
        let path = path(task).ok_or_else(|| {
            "the task asks for a line count but names no file; give its path".to_owned()
        })?;
        return Ok(Some(Intent::LineCount { path }));
    }
    Ok(None)
}

/// The first quoted text, else the capitalised words after "customer" (up to `'s`).
pub(crate) fn customer_name(task: &str) -> Option<String> {
    if let Some(quoted) = quoted(task) {
        return Some(quoted);
    }
    let lower = task.to_lowercase();
    let start = lower.find("customer")? + "customer".len();
    let rest = task[start..].trim_start_matches(['s', ':']);
    let mut words = Vec::new();
    for word in rest.split_whitespace() {
        let (word, possessive) = strip_possessive(word);
        let clean = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '\'');
        if clean.is_empty() || !clean.chars().next().is_some_and(char::is_uppercase) {
            if words.is_empty() && clean.chars().all(|c| c.is_lowercase()) && !clean.is_empty() {
                // "customer named Ada Okafor": skip joining words before the name.
                if matches!(clean, "named" | "called") {
                    continue;
                }
            }
            break;
        }
        words.push(clean.to_owned());
        if possessive || word.ends_with([',', '.', ';', ':']) {
            break;
        }
    }
    (!words.is_empty()).then(|| words.join(" "))
}

fn strip_possessive(word: &str) -> (&str, bool) {
    for suffix in ["'s", "\u{2019}s", "'", "\u{2019}"] {
        if let Some(stem) = word.strip_suffix(suffix) {
            return (stem, true);
        }
        // "Okafor's," — the possessive before trailing punctuation.
        let trimmed = word.trim_end_matches([',', '.', ';', ':']);
        if let Some(stem) = trimmed.strip_suffix(suffix) {
            return (stem, true);
        }
    }
    (word, false)
}

/// Text between the first pair of matching quotes (`"…"`, `“…”`, or `'…'` not used as an
/// apostrophe).
pub(crate) fn quoted(task: &str) -> Option<String> {
    for (open, close) in [('"', '"'), ('\u{201c}', '\u{201d}')] {
        if let Some(start) = task.find(open) {
            let rest = &task[start + open.len_utf8()..];
            if let Some(end) = rest.find(close) {
                let inner = rest[..end].trim();
                if !inner.is_empty() {
                    return Some(inner.to_owned());
                }
            }
        }
    }
    // A single quote opens a quotation only after a space or at the start (not "Ada's").
    let bytes: Vec<char> = task.chars().collect();
    for (index, c) in bytes.iter().enumerate() {
        if *c == '\'' && (index == 0 || bytes[index - 1].is_whitespace()) {
            let inner: String = bytes[index + 1..]
                .iter()
                .take_while(|c| **c != '\'')
                .collect();
            if index + 1 + inner.chars().count() < bytes.len() && !inner.trim().is_empty() {
                return Some(inner.trim().to_owned());
            }
        }
    }
    None
}

/// The amount after the first `$` (commas allowed), else a number followed by "dollars"/"USD".
pub(crate) fn money(task: &str) -> Option<f64> {
    if let Some(start) = task.find('$') {
        let number: String = task[start + 1..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '.')
            .filter(|c| *c != ',')
            .collect();
        if let Ok(value) = number.trim_end_matches('.').parse::<f64>() {
            return Some(value);
        }
    }
    let words: Vec<&str> = task.split_whitespace().collect();
    for pair in words.windows(2) {
        let unit = pair[1]
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if matches!(unit.as_str(), "dollars" | "usd" | "dollar")
            && let Ok(value) = pair[0].replace(',', "").parse::<f64>()
        {
            return Some(value);
        }
    }
    None
}

/// The first quoted text that looks like a path, else the first word containing `/` (an
/// absolute or relative path), else a word with a file extension; sentence punctuation removed.
pub(crate) fn path(task: &str) -> Option<String> {
    if let Some(quoted) = quoted(task)
        && (quoted.contains('/') || quoted.contains('.'))
    {
        return Some(quoted);
    }
    let clean = |word: &str| {
        word.trim_start_matches(['(', '`', '<'])
            .trim_end_matches([',', ';', ':', '?', '!', ')', '`', '>', '.'])
            .to_owned()
    };
    let words: Vec<&str> = task.split_whitespace().collect();
    if let Some(word) = words.iter().find(|w| w.contains('/')) {
        return Some(clean(word)).filter(|p| !p.is_empty());
    }
    words.iter().map(|w| clean(w)).find(|w| {
        w.rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && (1..=5).contains(&ext.len()))
    })
}

/// Runs of capitalised words that are not at the start of the sentence ("Ada Moreau",
/// "Dana Lindqvist's"), possessives removed.
pub(crate) fn proper_names(task: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut run: Vec<String> = Vec::new();
    let mut sentence_start = true;
    for raw in task.split_whitespace() {
        let ends = raw.ends_with(['.', '?', '!', ',', ';', ':']);
        let (word, possessive) = {
            let trimmed = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’');
            let stem = trimmed
                .strip_suffix("'s")
                .or_else(|| trimmed.strip_suffix("’s"))
                .unwrap_or(trimmed);
            (
                stem.trim_matches(['\'', '’']).to_owned(),
                stem.len() != trimmed.len(),
            )
        };
        let capital = word.chars().next().is_some_and(char::is_uppercase)
            && word.chars().skip(1).any(char::is_lowercase);
        if capital && !(sentence_start && run.is_empty() && !possessive) {
            run.push(word);
        } else if !run.is_empty() {
            names.push(run.join(" "));
            run.clear();
        }
        if (possessive || ends) && !run.is_empty() {
            names.push(run.join(" "));
            run.clear();
        }
        sentence_start = ends && !raw.ends_with(',');
    }
    if !run.is_empty() {
        names.push(run.join(" "));
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_order_task_in_several_phrasings() {
        let cases = [
            (
                "Look up customer Ada Okafor's orders, sum their total, and tell me if it exceeds $500",
                "Ada Okafor",
                500.0,
            ),
            (
                "Look up customer \"Mary-Jane O'Neil\" orders and tell me if the total exceeds $1,250.50.",
                "Mary-Jane O'Neil",
                1250.5,
            ),
            (
                "For customer named Bruno Lindqvist: sum the orders; does it exceed 300 dollars?",
                "Bruno Lindqvist",
                300.0,
            ),
            (
                "look up customer Chen’s orders, sum their total, tell me if it exceeds $ 75",
                "Chen",
                75.0,
            ),
        ];
        for (task, customer, threshold) in cases {
            assert_eq!(
                intent(task),
                Ok(Some(Intent::OrderTotal {
                    customer: customer.into(),
                    threshold: Some(threshold),
                    currency: None,
                })),
                "{task}"
            );
        }
    }

    #[test]
    fn line_count_tasks_with_any_path() {
        for (task, path) in [
            (
                "Read /tmp/x/notes.txt with the filesystem server and tell me how many lines it has",
                "/tmp/x/notes.txt",
            ),
            ("How many lines are in docs/guide.md?", "docs/guide.md"),
            (
                "Count the lines of \"/data/my file.csv\".",
                "/data/my file.csv",
            ),
            (
                "Read README.md and tell me how many lines it has.",
                "README.md",
            ),
        ] {
            assert_eq!(
                intent(task),
                Ok(Some(Intent::LineCount { path: path.into() })),
                "{task}"
            );
        }
    }

    #[test]
    fn missing_parts_say_why_and_other_tasks_go_to_the_general_rules() {
        assert!(
            intent("Look up customer orders and tell me if they exceed $5")
                .expect_err("no name")
                .contains("names no customer")
        );
        assert_eq!(intent("Look up customer Ada's orders"), Ok(None));
        assert_eq!(intent("Write a poem"), Ok(None));
        assert_eq!(intent("Which customer has the most orders?"), Ok(None));
    }

    #[test]
    fn order_totals_with_typos_and_without_a_threshold() {
        assert_eq!(
            intent("Look up custmer Ada Okafor's ordres and tell me if the total exceeds $500"),
            Ok(Some(Intent::OrderTotal {
                customer: "Ada Okafor".into(),
                threshold: Some(500.0),
                currency: None
            }))
        );
        // Without an amount to compare with, the data rule answers (it checks the name first).
        assert_eq!(
            intent("What is Ada Okafor's completed order total in euros?"),
            Ok(None)
        );
    }
}
