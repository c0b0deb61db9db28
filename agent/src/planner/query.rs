//! The offline planner's general database rule: a question about the data ("how many customers
//! are from Germany?", "the cheapest product in the Books category", "the 5 most recent
//! orders", "top 3 customers by total spent") turned into one SELECT over the live schema.
//!
//! Three steps, each a pure function: [`shape`] (here) reads the task against the schema (which
//! table it is about, counting, listing, a superlative or an average, which measure, numeric
//! comparisons, proper names); [`super::data_sql::discovery_sql`] asks the database for the values of its
//! low-cardinality text columns and for rows named like the task's proper names, so that
//! "Germany", "Books", "cancelled" or "Ada Moreau" become filters on the column that holds them;
//! [`super::data_sql::final_sql`] writes the query and [`super::data_answer::facts`] the answer. Nothing is assumed about the demo
//! database beyond what its schema and values say.

pub(crate) use super::countries::country_code;
use super::dates::{self, DateRange};
use super::sql::{Table, quote_ident};
use super::words;

/// Words that ask for money taken: the amount of an order (price × quantity, or its total).
const REVENUE: [&str; 10] = [
    "revenue", "sales", "spent", "spend", "spending", "sold", "income", "earned", "turnover",
    "spender",
];
const PRICE: [&str; 10] = [
    "expensive",
    "cheap",
    "cheapest",
    "cost",
    "costs",
    "price",
    "priced",
    "pricey",
    "costly",
    "cheaper",
];
const RECENT: [&str; 8] = [
    "recent", "latest", "newest", "oldest", "earliest", "date", "new", "old",
];
const DESCENDING: [&str; 14] = [
    "most",
    "highest",
    "largest",
    "biggest",
    "top",
    "best",
    "greatest",
    "maximum",
    "max",
    "expensive",
    "latest",
    "newest",
    "recent",
    "priciest",
];
const ASCENDING: [&str; 9] = [
    "least", "lowest", "smallest", "cheapest", "fewest", "minimum", "min", "oldest", "earliest",
];

/// What is measured.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Measure {
    /// A column of a table.
    Column { table: String, column: String },
    /// The money of an order line, on the orders-like table.
    Revenue,
    /// How many rows of a related table.
    CountOf(String),
}

/// What to do with the rows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operation {
    Count,
    /// Count per value of a column, most first; with a limit for "which country has the most".
    CountBy(String, Option<usize>),
    List,
    Top {
        descending: bool,
        limit: usize,
    },
    Aggregate(&'static str),
}

/// A task read against the schema.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shape {
    pub(crate) table: String,
    pub(crate) operation: Operation,
    pub(crate) measure: Option<Measure>,
    /// (operator, number) comparisons on the measure.
    pub(crate) comparisons: Vec<(&'static str, f64)>,
    /// Columns the task names, to show.
    pub(crate) named_columns: Vec<String>,
    /// Proper names and quoted text, lowercased, to find in text columns.
    pub(crate) names: Vec<String>,
    /// The period the task limits the data to ("in March 2025").
    pub(crate) dates: Option<DateRange>,
    /// A date relative to today the task names ("last month"), which is not placed.
    pub(crate) unplaced_date: Option<String>,
}

fn name_parts(name: &str) -> Vec<String> {
    name.split(['_', ' ', '-'])
        .filter(|part| !part.is_empty() && !matches!(*part, "id" | "at" | "usd" | "cents"))
        .map(str::to_lowercase)
        .collect()
}

/// Where in the task the table is first mentioned (its name or singular, typos allowed).
fn mention_at(task_words: &[String], table: &Table) -> Option<usize> {
    let targets = name_parts(&table.name);
    task_words.iter().position(|word| {
        targets
            .iter()
            .any(|target| words::stem(word) == words::stem(target) || words::close(word, target))
    })
}

pub(crate) fn is_text(table: &Table, column: &str) -> bool {
    let declared = table.type_of(column);
    let lower = column.to_lowercase();
    let structural = lower == "id"
        || lower.ends_with("_id")
        || lower.ends_with("_at")
        || lower.contains("date")
        || lower.contains("time")
        || lower.contains("email")
        || lower.contains("url");
    !structural && (declared.contains("CHAR") || declared.contains("TEXT") || declared.is_empty())
}

fn is_number(table: &Table, column: &str) -> bool {
    let declared = table.type_of(column);
    let lower = column.to_lowercase();
    !(lower == "id" || lower.ends_with("_id"))
        && ["INT", "REAL", "NUM", "DEC", "FLOA", "DOUB"]
            .iter()
            .any(|kind| declared.contains(kind))
}

fn is_date(column: &str) -> bool {
    let lower = column.to_lowercase();
    lower.ends_with("_at") || lower.contains("date") || lower.contains("time")
}

/// The table that holds order lines: one with a quantity, a total, or a price and a reference.
pub(crate) fn orders_table(tables: &[Table]) -> Option<&Table> {
    tables.iter().find(|t| {
        t.name.to_lowercase().contains("order")
            && (t.has("quantity") || t.find(|c| c.contains("total")).is_some())
    })
}

/// SQL for the money of one order line in `orders`, with the joins it needs.
pub(crate) fn revenue_sql(tables: &[Table]) -> Option<(String, String)> {
    let orders = orders_table(tables)?;
    let o = quote_ident(&orders.name);
    if let Some(total) = orders.find(|c| c.contains("total") || c.contains("amount")) {
        return Some((format!("{o}.{}", quote_ident(total)), String::new()));
    }
    let quantity = orders
        .find(|c| matches!(c, "quantity" | "qty" | "units"))
        .map(|q| format!(" * {o}.{}", quote_ident(q)))
        .unwrap_or_default();
    if let Some(price) = orders.find(|c| c.contains("price")) {
        return Some((
            format!("{o}.{}{quantity}", quote_ident(price)),
            String::new(),
        ));
    }
    orders.foreign_keys.iter().find_map(|(column, referenced)| {
        let table = tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(referenced))?;
        let price = table.find(|c| c.contains("price"))?;
        let p = quote_ident(&table.name);
        let cents = if price.contains("cent") {
            " / 100.0"
        } else {
            ""
        };
        Some((
            format!("{p}.{}{quantity}{cents}", quote_ident(price)),
            format!(
                " JOIN {p} ON {p}.{} = {o}.{}",
                quote_ident(table.primary_key()),
                quote_ident(column)
            ),
        ))
    })
}

/// The numeric comparisons the task makes: "more than $100", "under 20", "at least 3".
fn comparisons(corrected: &str) -> Vec<(&'static str, f64)> {
    let mut found = Vec::new();
    for (phrase, operator) in [
        ("more than", ">"),
        ("over", ">"),
        ("above", ">"),
        ("greater than", ">"),
        ("higher than", ">"),
        ("pricier than", ">"),
        ("at least", ">="),
        ("less than", "<"),
        ("under", "<"),
        ("below", "<"),
        ("cheaper than", "<"),
        ("lower than", "<"),
        ("fewer than", "<"),
        ("at most", "<="),
        ("exceeding", ">"),
        ("exceeds", ">"),
    ] {
        let mut from = 0;
        while let Some(at) = corrected[from..].find(phrase).map(|at| at + from) {
            from = at + phrase.len();
            let before_ok = at == 0 || !corrected[..at].ends_with(char::is_alphanumeric);
            let rest = corrected[from..]
                .trim_start()
                .trim_start_matches(['$', '€', '£']);
            if !before_ok || !rest.starts_with(|c: char| c.is_ascii_digit()) {
                continue;
            }
            if let Some(number) = words::numbers(rest).first() {
                found.push((operator, *number));
            }
        }
    }
    found
}

/// Reads the task against the tables; `None` when it names no table and no column.
pub(crate) fn shape(task: &str, tables: &[Table]) -> Option<Shape> {
    let mut vocabulary: Vec<String> = Vec::new();
    for table in tables {
        vocabulary.extend(name_parts(&table.name));
        for column in &table.columns {
            vocabulary.extend(name_parts(column));
        }
    }
    let vocabulary: Vec<&str> = vocabulary.iter().map(String::as_str).collect();
    let corrected = words::corrected(task, &vocabulary).to_lowercase();
    let task_words = words::words(&corrected);
    let has = |list: &[&str]| words::mentions(&task_words, list);

    // Columns the task names ("email", "stock", "price"), or names in other words ("signed
    // up" for created_at, "placed" for ordered_at).
    let synonyms = |part: &str| -> &'static [&'static str] {
        match part {
            "created" => &[
                "joined",
                "registered",
                "sign",
                "signed",
                "signup",
                "created",
                "since",
            ],
            "ordered" => &["ordered", "placed", "bought", "purchased"],
            "country" => &["country", "countries", "where"],
            _ => &[],
        }
    };
    let mut named_columns: Vec<(String, String)> = Vec::new();
    for table in tables {
        for column in &table.columns {
            let parts = name_parts(column);
            if !parts.is_empty()
                && parts.iter().all(|part| {
                    task_words.iter().any(|w| {
                        words::stem(w) == words::stem(part) || synonyms(part).contains(&w.as_str())
                    })
                })
                && !parts
                    .iter()
                    .all(|part| tables.iter().any(|t| name_parts(&t.name).contains(part)))
            {
                named_columns.push((table.name.clone(), column.clone()));
            }
        }
    }
    let revenue = has(&REVENUE)
        || (has(&["total"]) && has(&["order", "orders"]) && !has(&["number"]))
        || (has(&["value", "amount", "worth"]) && has(&["order", "orders"]));
    let mut mentioned: Vec<(usize, &Table)> = tables
        .iter()
        .filter_map(|table| mention_at(&task_words, table).map(|at| (at, table)))
        .collect();
    mentioned.sort_by_key(|(at, _)| *at);
    let table = match mentioned.first() {
        Some((_, table)) => *table,
        None => {
            // No table named: the one owning a named column, or the orders for money.
            let owner = named_columns
                .iter()
                .filter(|(_, column)| !column.eq_ignore_ascii_case("name"))
                .find_map(|(table, _)| tables.iter().find(|t| t.name == *table));
            match owner {
                Some(table) => table,
                None if revenue => orders_table(tables)?,
                None => return None,
            }
        }
    };
    let comparisons = comparisons(&corrected);
    // "under $30" compares a price even without saying "price".
    let wants_price = has(&PRICE)
        || (!comparisons.is_empty() && ['$', '€', '£'].iter().any(|c| corrected.contains(*c)));
    let wants_date = has(&RECENT);
    let column_measure = |wanted: &dyn Fn(&str) -> bool| {
        table
            .columns
            .iter()
            .find(|c| wanted(c))
            .map(|c| Measure::Column {
                table: table.name.clone(),
                column: c.clone(),
            })
    };
    let numeric_named = named_columns
        .iter()
        .filter(|(t, c)| *t == table.name && is_number(table, c))
        .map(|(t, c)| Measure::Column {
            table: t.clone(),
            column: c.clone(),
        })
        .next();
    let other_table = mentioned.iter().skip(1).map(|(_, t)| t.name.clone()).next();
    // "units", "items", "quantity": the quantity column, summed, unless money is asked for
    // too ("sold" alone is about units when units are named).
    let quantity = (has(&["units", "unit", "items", "pieces", "quantity", "quantities"])
        && !has(&REVENUE[..2])
        && !has(&[
            "spent", "spend", "spending", "income", "earned", "turnover", "spender",
        ]))
    .then(|| {
        tables.iter().find_map(|t| {
            t.find(|c| matches!(c.to_lowercase().as_str(), "quantity" | "qty" | "units"))
                .map(|c| Measure::Column {
                    table: t.name.clone(),
                    column: c.to_owned(),
                })
        })
    })
    .flatten();
    let measure = if let Some(quantity) = quantity.clone() {
        Some(quantity)
    } else if revenue && orders_table(tables).is_some() {
        Some(Measure::Revenue)
    } else if wants_price {
        column_measure(&|c: &str| {
            let c = c.to_lowercase();
            c.contains("price") || c.contains("cost")
        })
        .or_else(|| orders_table(tables).map(|_| Measure::Revenue))
    } else if let Some(measure) = numeric_named {
        Some(measure)
    } else if wants_date {
        column_measure(&is_date)
    } else {
        other_table.map(Measure::CountOf)
    };

    // An average of nothing named is no question this rule can answer.
    if has(&["average", "avg", "mean"]) && measure.is_none() {
        return None;
    }
    let count =
        corrected.contains("how many") || corrected.contains("number of") || has(&["count"]);
    let by_column = ["per ", "by ", "each ", "for every "]
        .iter()
        .find_map(|joiner| {
            let at = corrected.find(joiner)?;
            let next = words::words(&corrected[at + joiner.len()..])
                .into_iter()
                .next()?;
            table
                .columns
                .iter()
                .find(|c| {
                    name_parts(c)
                        .iter()
                        .any(|p| words::stem(p) == words::stem(&next))
                })
                .cloned()
        });
    let limit = |default: usize| {
        task_words
            .iter()
            .enumerate()
            .find_map(|(index, word)| {
                let number: usize = word.parse().ok().or_else(|| number_word(word))?;
                let near = |i: usize| {
                    task_words.get(i).is_some_and(|w| {
                        DESCENDING.contains(&w.as_str())
                            || ASCENDING.contains(&w.as_str())
                            || mention_at(std::slice::from_ref(w), table).is_some()
                    })
                };
                (near(index + 1) || (index > 0 && near(index - 1))).then_some(number)
            })
            .filter(|n| (1..=100).contains(n))
            .unwrap_or(default)
    };
    let ranks = task_words
        .iter()
        .any(|w| DESCENDING.contains(&w.as_str()) || ASCENDING.contains(&w.as_str()));
    // "Which country has the most customers?": a text column of the table, ranked by count.
    let grouping_column = named_columns
        .iter()
        .filter(|(t, c)| *t == table.name && is_text(table, c) && !c.eq_ignore_ascii_case("name"))
        .map(|(_, c)| c.clone())
        .next();
    let sums_quantity = quantity.is_some() && matches!(measure, Some(Measure::Column { .. }));
    // "List the product categories", "the different statuses": the values of a text column.
    let distinct_column = grouping_column.clone().filter(|column| {
        has(&["distinct", "different", "unique", "kinds", "types"])
            || task_words.iter().any(|w| {
                w.as_str() != column.to_lowercase()
                    && words::stem(w) == words::stem(column)
                    && w.ends_with('s')
            })
    });
    let operation = if count && let Some(column) = by_column {
        Operation::CountBy(column, None)
    } else if count && sums_quantity {
        // "How many units were sold?" adds the quantities up.
        Operation::Aggregate("sum")
    } else if ranks
        && !matches!(measure, Some(Measure::Column { .. } | Measure::Revenue))
        && let Some(column) = grouping_column
    {
        Operation::CountBy(column, Some(limit(1)))
    } else if count {
        Operation::Count
    } else if has(&["average", "avg", "mean"]) && measure.is_some() {
        Operation::Aggregate("avg")
    } else if task_words.iter().any(|w| ASCENDING.contains(&w.as_str())) && measure.is_some() {
        Operation::Top {
            descending: false,
            limit: limit(1),
        }
    } else if task_words.iter().any(|w| DESCENDING.contains(&w.as_str())) && measure.is_some() {
        Operation::Top {
            descending: true,
            limit: limit(1),
        }
    } else if !comparisons.is_empty()
        && measure.is_some()
        && has(&["which", "who", "list", "show", "name", "find"])
    {
        // "Which customers spent more than $1,000?": the rows that pass, not one sum.
        Operation::List
    } else if (has(&["total", "sum"]) || revenue || sums_quantity) && measure.is_some() {
        Operation::Aggregate("sum")
    } else if let Some(column) = distinct_column
        && comparisons.is_empty()
    {
        Operation::CountBy(column, None)
    } else {
        Operation::List
    };
    let mut names: Vec<String> = Vec::new();
    if let Some(quoted) = super::parse::quoted(task) {
        names.push(quoted.to_lowercase());
    }
    names.extend(proper_names(task).into_iter().map(|n| n.to_lowercase()));
    Some(Shape {
        table: table.name.clone(),
        operation,
        measure,
        comparisons,
        named_columns: named_columns
            .into_iter()
            .filter(|(t, _)| *t == table.name)
            .map(|(_, c)| c)
            .collect(),
        names,
        dates: dates::range(task),
        unplaced_date: dates::unplaced(task),
    })
}

/// A small number written as a word ("three cheapest").
fn number_word(word: &str) -> Option<usize> {
    [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ]
    .iter()
    .position(|w| *w == word)
    .map(|index| index + 1)
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
pub(crate) mod tests;
