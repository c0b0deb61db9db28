//! The values in the data, asked of the database before any of them is used: one discovery
//! query returns the span of every date column (the data's own first and last day, which say
//! whether a period is before, inside or after the data, and what "today" cannot be assumed to
//! be) and the values of every text column that names or groups rows (names, categories,
//! statuses, countries: all of them when a column has at most [`MAX_LISTED`] values, else those
//! matching the task's names). A name, category or status in a task is then matched against
//! these values (exactly, in the plural, or with a typo), never assumed. Pure: schema in, SQL
//! out; rows in, values out.

use serde_json::{Map, Value};

use super::super::sql::{quote_ident, quote_literal};
use super::super::words;
use super::schema::{Concept, Schema};

/// A column with at most this many distinct values is listed whole.
pub(crate) const MAX_LISTED: usize = 150;

/// The values found.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Values {
    /// (table, column, values, whether every value of the column is listed).
    pub(crate) columns: Vec<ColumnValues>,
    /// (table, column, first, last) of each date column.
    pub(crate) spans: Vec<(usize, usize, String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ColumnValues {
    pub(crate) table: usize,
    pub(crate) column: usize,
    pub(crate) values: Vec<String>,
    pub(crate) complete: bool,
}

impl Values {
    /// The values of a column.
    pub(crate) fn of(&self, table: usize, column: usize) -> Option<&ColumnValues> {
        self.columns
            .iter()
            .find(|c| c.table == table && c.column == column)
    }

    /// The first and last day of a date column.
    pub(crate) fn span(&self, table: usize, column: usize) -> Option<(&str, &str)> {
        self.spans
            .iter()
            .find(|(t, c, _, _)| *t == table && *c == column)
            .map(|(_, _, first, last)| (first.as_str(), last.as_str()))
    }
}

/// The columns discovery reads: text that names or groups rows, not emails, dates or keys.
pub(crate) fn listed_columns(schema: &Schema) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    for (t, entity) in schema.entities.iter().enumerate() {
        for (c, column) in entity.columns.iter().enumerate() {
            if matches!(
                column.concept,
                Concept::Label
                    | Concept::Category
                    | Concept::Status
                    | Concept::Place
                    | Concept::Text
            ) {
                found.push((t, c));
            }
        }
    }
    found
}

/// The discovery query: date spans first, then values; rows `{k, t, c, v}`.
pub(crate) fn discovery_sql(schema: &Schema, names: &[String]) -> Option<String> {
    let mut parts = Vec::new();
    for entity in &schema.entities {
        for column in entity.columns.iter().filter(|c| c.concept.is_date()) {
            let (t, c) = (quote_ident(&entity.name), quote_ident(&column.name));
            parts.push(format!(
                "SELECT 'span' AS k, {} AS t, {} AS c, min({c}) || '|' || max({c}) AS v FROM {t}",
                quote_literal(&entity.name),
                quote_literal(&column.name)
            ));
        }
    }
    let lowered: Vec<String> = names
        .iter()
        .map(|n| quote_literal(&n.to_lowercase()))
        .collect();
    for (table, column) in listed_columns(schema) {
        let entity = &schema.entities[table];
        let name = &entity.columns[column].name;
        let (t, c) = (quote_ident(&entity.name), quote_ident(name));
        let named = if lowered.is_empty() {
            String::new()
        } else {
            let prefixes: Vec<String> = names
                .iter()
                .map(|n| {
                    format!(
                        "lower({c}) LIKE {}",
                        quote_literal(&format!("%{}%", n.to_lowercase().replace(['%', '_'], "")))
                    )
                })
                .collect();
            format!(
                " OR lower({c}) IN ({}) OR {}",
                lowered.join(", "),
                prefixes.join(" OR ")
            )
        };
        parts.push(format!(
            "SELECT CASE WHEN (SELECT count(DISTINCT {c}) FROM {t}) <= {MAX_LISTED} THEN 'all' \
             ELSE 'some' END AS k, {} AS t, {} AS c, {c} AS v FROM {t} WHERE {c} IS NOT NULL \
             GROUP BY {c} HAVING (SELECT count(DISTINCT {c}) FROM {t}) <= {MAX_LISTED}{named}",
            quote_literal(&entity.name),
            quote_literal(name),
        ));
    }
    (!parts.is_empty()).then(|| parts.join(" UNION ALL "))
}

/// The values in the discovery query's rows.
pub(crate) fn read(schema: &Schema, rows: &[Map<String, Value>]) -> Values {
    let mut values = Values::default();
    let find = |table: &str, column: &str| -> Option<(usize, usize)> {
        let t = schema.entities.iter().position(|e| e.name == table)?;
        let c = schema.entities[t]
            .columns
            .iter()
            .position(|c| c.name == column)?;
        Some((t, c))
    };
    for (table, column) in listed_columns(schema) {
        values.columns.push(ColumnValues {
            table,
            column,
            values: Vec::new(),
            complete: false,
        });
    }
    for row in rows {
        let text = |key: &str| row.get(key).and_then(Value::as_str).unwrap_or("");
        let Some((table, column)) = find(text("t"), text("c")) else {
            continue;
        };
        let value = match row.get("v") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => continue,
        };
        match text("k") {
            "span" => {
                if let Some((first, last)) = value.split_once('|') {
                    values
                        .spans
                        .push((table, column, first.to_owned(), last.to_owned()));
                }
            }
            kind => {
                if let Some(listed) = values
                    .columns
                    .iter_mut()
                    .find(|c| c.table == table && c.column == column)
                {
                    listed.complete |= kind == "all";
                    if !listed.values.contains(&value) {
                        listed.values.push(value);
                    }
                }
            }
        }
    }
    values
}

/// Whether a word of the task is a word of a value: the same, or its plural ("mats", "presses",
/// "hds").
pub(crate) fn same_word(task_word: &str, value_word: &str) -> bool {
    if task_word == value_word {
        return true;
    }
    let plurals = [
        format!("{value_word}s"),
        format!("{value_word}es"),
        value_word
            .strip_suffix('y')
            .map(|s| format!("{s}ies"))
            .unwrap_or_default(),
    ];
    // "knife" → "knives", "shelf" → "shelves".
    let ves = value_word
        .strip_suffix("fe")
        .or_else(|| value_word.strip_suffix('f'))
        .map(|stem| format!("{stem}ves"))
        .unwrap_or_default();
    plurals.iter().any(|p| !p.is_empty() && p == task_word)
        || (!ves.is_empty() && ves == task_word)
        || (value_word.ends_with('s') && value_word.strip_suffix('s') == Some(task_word))
}

/// Whether a word of the task is likely a misspelling of a value's word: one edit for words of
/// five letters or more, two from eight (neighbours swapped count one); or letters left out
/// ("cancled", "Lindqvst", two at most). Never for words under five letters.
pub(crate) fn near_word(task_word: &str, value_word: &str) -> bool {
    if same_word(task_word, value_word) {
        return true;
    }
    let (typed, wanted) = (task_word.chars().count(), value_word.chars().count());
    if typed < 5 || wanted < 5 || !value_word.chars().all(char::is_alphabetic) {
        return false;
    }
    // The first letter is rarely the one mistyped; a different one is a different word.
    if task_word.chars().next() != value_word.chars().next() {
        return false;
    }
    if words::close(task_word, value_word) {
        return true;
    }
    wanted > typed && wanted - typed <= 2 && is_subsequence(task_word, value_word)
}

fn is_subsequence(short: &str, long: &str) -> bool {
    let mut long = long.chars();
    short.chars().all(|c| long.any(|d| d == c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::ask::schema::{tests::shop_tables, understand};
    use serde_json::json;

    #[test]
    fn discovery_reads_spans_and_values() {
        let schema = understand(&shop_tables());
        let sql = discovery_sql(&schema, &["Ada Okafro".to_owned()]).unwrap();
        assert!(sql.starts_with("SELECT 'span' AS k, 'customers'"), "{sql}");
        assert!(sql.contains("lower(\"name\") IN ('ada okafro')"), "{sql}");
        assert!(
            !sql.contains("\"email\" AS v"),
            "emails are not listed: {sql}"
        );
        let rows: Vec<Map<String, Value>> = [
            json!({"k": "span", "t": "orders", "c": "ordered_at", "v": "2024-07-01 06:11:18|2025-06-30 19:48:07"}),
            json!({"k": "all", "t": "orders", "c": "status", "v": "completed"}),
            json!({"k": "all", "t": "orders", "c": "status", "v": "returned"}),
            json!({"k": "some", "t": "customers", "c": "name", "v": "Ada Okafor"}),
        ]
        .into_iter()
        .map(|v| v.as_object().unwrap().clone())
        .collect();
        let values = read(&schema, &rows);
        assert_eq!(
            values.span(2, 4),
            Some(("2024-07-01 06:11:18", "2025-06-30 19:48:07"))
        );
        let status = values.of(2, 5).unwrap();
        assert!(status.complete);
        assert_eq!(status.values, ["completed", "returned"]);
        assert!(!values.of(0, 1).unwrap().complete);
    }

    #[test]
    fn words_meet_in_the_plural_and_with_typos() {
        assert!(same_word("mats", "mat"));
        assert!(same_word("presses", "press"));
        assert!(same_word("hds", "hd"));
        assert!(same_word("categories", "category"));
        assert!(same_word("knives", "knife"));
        assert!(near_word("okafro", "okafor"));
        assert!(near_word("garsia", "garcia"));
        assert!(near_word("cancled", "cancelled"));
        assert!(near_word("lindqvst", "lindqvist"));
        assert!(near_word("electornics", "electronics"));
        assert!(!near_word("returns", "returned"));
        assert!(!near_word("shipping", "shipped"));
        assert!(!near_word("ada", "dana"));
        assert!(!near_word("jula", "julia"), "short words must be exact");
    }
}
