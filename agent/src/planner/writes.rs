//! Requests to change data, found whatever their wording: a SQL statement that writes ("DELETE
//! FROM orders …", "UPDATE products SET …", "DROP TABLE …"), or a clause that opens with a verb
//! of change ("Delete all the cancelled orders", "Could you set the price of … to $19.99",
//! "Mark order 7 as completed", "… and then remove them"). The planner refuses these before any
//! call when no tool offers the change: it answers `refused`, says why, and runs nothing. Pure.

use super::words;

/// A request to change the data.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WriteRequest {
    /// The verb as written, lowercased ("delete", "set").
    pub(crate) verb: String,
    /// The SQL statement, when the task holds one.
    pub(crate) statement: Option<String>,
}

/// Verbs that change stored data (or place an order, which creates data).
const CHANGES: [&str; 64] = [
    "delete",
    "remove",
    "erase",
    "purge",
    "wipe",
    "drop",
    "truncate",
    "clear",
    "update",
    "set",
    "change",
    "modify",
    "edit",
    "alter",
    "rename",
    "replace",
    "correct",
    "insert",
    "add",
    "create",
    "register",
    "enroll",
    "enrol",
    "record",
    "save",
    "store",
    "import",
    "upload",
    "mark",
    "flag",
    "cancel",
    "refund",
    "restock",
    "replenish",
    "increase",
    "decrease",
    "raise",
    "lower",
    "reduce",
    "discount",
    "apply",
    "assign",
    "reassign",
    "move",
    "merge",
    "archive",
    "restore",
    "reset",
    "approve",
    "reject",
    "ship",
    "dispatch",
    "fulfil",
    "fulfill",
    "close",
    "reopen",
    "deactivate",
    "activate",
    "ban",
    "block",
    "double",
    "halve",
    "order",
    "buy",
];

/// Words that may open a request before its verb ("please", "could you", "I'd like you to").
const OPENERS: [&str; 30] = [
    "please",
    "kindly",
    "can",
    "could",
    "would",
    "will",
    "you",
    "i",
    "we",
    "need",
    "want",
    "to",
    "like",
    "go",
    "ahead",
    "and",
    "now",
    "just",
    "quickly",
    "help",
    "me",
    "us",
    "let",
    "lets",
    "try",
    "also",
    "then",
    "d",
    "first",
    "immediately",
];

/// Where a new clause starts: after these words a verb opens a request of its own.
const CLAUSE_STARTS: [&str; 4] = ["then", "and", "also", "please"];

/// The verbs that change data even in the middle of a sentence ("… and delete them"); the
/// others are nouns there too ("the revenue and order count").
const CHANGES_MID_SENTENCE: [&str; 15] = [
    "delete", "remove", "erase", "purge", "wipe", "update", "change", "modify", "edit", "insert",
    "cancel", "refund", "restock", "rename", "truncate",
];

/// The task with quoted names blanked out: text in quotes right after "customer", "named",
/// "called" and the like is a name to look up (`customer "x'; DROP TABLE orders; --"`), not a
/// statement; quoted text elsewhere ("run 'DELETE FROM orders'") stays.
fn without_quoted_names(task: &str) -> String {
    let mut out = String::with_capacity(task.len());
    let mut rest = task;
    while let Some(open) = rest.find(['"', '\u{201c}']) {
        let before = &rest[..open];
        let last_word = before
            .split(|c: char| !c.is_alphanumeric())
            .rfind(|w| !w.is_empty())
            .unwrap_or("")
            .to_lowercase();
        let quote = rest[open..].chars().next().unwrap_or('"');
        let closing = if quote == '"' { '"' } else { '\u{201d}' };
        let after_open = open + quote.len_utf8();
        let Some(close) = rest[after_open..].find(closing).map(|c| c + after_open) else {
            break;
        };
        out.push_str(before);
        let naming = [
            "customer",
            "customers",
            "client",
            "product",
            "products",
            "item",
            "named",
            "called",
            "name",
            "user",
            "category",
            "status",
            "order",
        ];
        if naming.contains(&last_word.as_str()) {
            out.push_str("\"\"");
        } else {
            out.push_str(&rest[open..close + closing.len_utf8()]);
        }
        rest = &rest[close + closing.len_utf8()..];
    }
    out.push_str(rest);
    out
}

/// The SQL statement in a task that writes, when there is one.
fn write_statement(task: &str) -> Option<(String, String)> {
    let task = &without_quoted_names(task);
    let lower = task.to_lowercase();
    let task_words = words::words(&lower);
    let at = |i: usize| task_words.get(i).map(String::as_str).unwrap_or("");
    for index in 0..task_words.len() {
        let verb = match (at(index), at(index + 1), at(index + 2)) {
            ("delete", "from", _) => "delete",
            ("insert", "into", _) => "insert",
            ("replace", "into", _) => "replace",
            ("update", _, "set") => "update",
            (
                "drop" | "create" | "alter" | "truncate",
                "table" | "database" | "view" | "index" | "column" | "schema" | "trigger",
                _,
            ) => at(index),
            ("truncate", _, _) => "truncate",
            ("grant" | "revoke", _, _) if task.contains(" ON ") || lower.contains(" on ") => {
                at(index)
            }
            _ => continue,
        };
        // The statement as written: from its first word to the end of the task.
        let keyword = verb.to_owned();
        let start = lower.find(&format!("{keyword} ")).unwrap_or(0);
        let statement = task[start..]
            .trim()
            .trim_end_matches(['`', '"', '\''])
            .trim_end_matches(';')
            .trim()
            .to_owned();
        return Some((keyword, statement));
    }
    None
}

/// The change a task asks for, if it asks for one.
pub(crate) fn write_request(task: &str) -> Option<WriteRequest> {
    if let Some((verb, statement)) = write_statement(task) {
        return Some(WriteRequest {
            verb,
            statement: Some(statement),
        });
    }
    // "I'd", "let's": the word before the apostrophe.
    let task_words: Vec<String> = words::words(task)
        .into_iter()
        .map(|w| w.split('\'').next().unwrap_or("").to_owned())
        .filter(|w| !w.is_empty())
        .collect();
    let mut index = 0;
    while index < task_words.len() {
        let clause_start = index == 0
            || CLAUSE_STARTS.contains(&task_words[index - 1].as_str())
            || task_words[index - 1] == "and";
        if clause_start {
            // Skip the words that open a request.
            let mut verb_at = index;
            while verb_at < task_words.len() && OPENERS.contains(&task_words[verb_at].as_str()) {
                verb_at += 1;
            }
            let changes: &[&str] = if index == 0 {
                &CHANGES
            } else {
                &CHANGES_MID_SENTENCE
            };
            if let Some(verb) = task_words.get(verb_at)
                && changes.contains(&verb.as_str())
                && !arithmetic_after(&task_words[verb_at..])
            {
                return Some(WriteRequest {
                    verb: verb.clone(),
                    statement: None,
                });
            }
        }
        index += 1;
    }
    None
}

/// "Add 17 and 25", "add 5 to 10": a sum, not a new row ("add 20 units to the stock" is one).
fn arithmetic_after(rest: &[String]) -> bool {
    let number = |i: usize| {
        rest.get(i)
            .is_some_and(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit() || c == '.'))
    };
    rest.first().is_some_and(|verb| verb == "add")
        && number(1)
        && rest
            .get(2)
            .is_some_and(|w| matches!(w.as_str(), "and" | "to" | "plus" | "with"))
        && number(3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verb(task: &str) -> Option<String> {
        write_request(task).map(|w| w.verb)
    }

    #[test]
    fn writes_are_found_whatever_the_wording() {
        for (task, expected) in [
            ("Delete all the cancelled orders", "delete"),
            (
                "Run the query DELETE FROM orders WHERE status = 'cancelled'",
                "delete",
            ),
            (
                "UPDATE products SET stock = 100 WHERE name = 'Wireless Mouse'",
                "update",
            ),
            ("Set the price of the Wireless Mouse to $19.99", "set"),
            (
                "Could you please change the status of order 12 to shipped?",
                "change",
            ),
            (
                "I'd like you to remove the Yoga Mat from the catalog",
                "remove",
            ),
            ("Mark order 7 as completed", "mark"),
            ("Cancel order 42 for me", "cancel"),
            ("Add a new customer called Zoe Park from Spain", "add"),
            ("Please insert a product named Garden Hose", "insert"),
            ("Drop the customers table", "drop"),
            ("Increase all Electronics prices by 10%", "increase"),
            ("Find the cancelled orders and then delete them", "delete"),
            ("Restock the Wireless Mouse with 50 units", "restock"),
            ("Add 20 units to the stock of the Desk Lamp", "add"),
            ("drop table orders", "drop"),
        ] {
            assert_eq!(verb(task).as_deref(), Some(expected), "{task}");
        }
        let statement = write_request("Run the query DELETE FROM orders WHERE id = 3;").unwrap();
        assert_eq!(
            statement.statement.as_deref(),
            Some("DELETE FROM orders WHERE id = 3")
        );
    }

    #[test]
    fn questions_about_changes_are_not_changes() {
        for task in [
            "How many orders were cancelled?",
            "Add 17 and 25",
            "Which products had their price changed?",
            "How do I delete an order?",
            "If the Ergonomic Chair's price went up by 15%, what would it cost?",
            "What is the total revenue?",
            "Give me the three cheapest products",
            "Show the orders placed in March 2025",
            "Select the cheapest product",
            "What's the revenue and order count for 2024?",
            "How many orders has customer \"x'; DROP TABLE orders; --\" placed?",
        ] {
            assert_eq!(verb(task), None, "{task}");
        }
    }
}
