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

use super::sql::{Table, quote_ident};
use super::words;

/// Country names and their ISO 3166 alpha-2 codes, for columns that hold codes.
const COUNTRIES: [(&str, &str); 40] = [
    ("germany", "DE"),
    ("france", "FR"),
    ("japan", "JP"),
    ("brazil", "BR"),
    ("india", "IN"),
    ("netherlands", "NL"),
    ("holland", "NL"),
    ("sweden", "SE"),
    ("australia", "AU"),
    ("canada", "CA"),
    ("america", "US"),
    ("usa", "US"),
    ("britain", "GB"),
    ("england", "GB"),
    ("uk", "GB"),
    ("italy", "IT"),
    ("spain", "ES"),
    ("china", "CN"),
    ("mexico", "MX"),
    ("norway", "NO"),
    ("denmark", "DK"),
    ("finland", "FI"),
    ("poland", "PL"),
    ("switzerland", "CH"),
    ("austria", "AT"),
    ("belgium", "BE"),
    ("ireland", "IE"),
    ("portugal", "PT"),
    ("korea", "KR"),
    ("singapore", "SG"),
    ("argentina", "AR"),
    ("chile", "CL"),
    ("turkey", "TR"),
    ("greece", "GR"),
    ("nigeria", "NG"),
    ("kenya", "KE"),
    ("egypt", "EG"),
    ("israel", "IL"),
    ("zealand", "NZ"),
    ("africa", "ZA"),
];

/// The ISO code of a country named by this word.
pub(crate) fn country_code(word: &str) -> Option<&'static str> {
    let word = word.to_lowercase();
    COUNTRIES
        .iter()
        .find(|(name, _)| *name == word)
        .map(|(_, code)| *code)
}

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
    let revenue =
        has(&REVENUE) || (has(&["total"]) && has(&["order", "orders"]) && !has(&["number"]));
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
    let measure = if revenue && orders_table(tables).is_some() {
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
    let operation = if count && let Some(column) = by_column {
        Operation::CountBy(column, None)
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
    } else if (has(&["total", "sum"]) || revenue) && measure.is_some() {
        Operation::Aggregate("sum")
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
mod tests {
    use serde_json::{Map, Value, json};

    use super::*;
    use crate::planner::data_answer::facts;
    use crate::planner::data_sql::{discovery_sql, filters, final_sql};
    use crate::planner::sql::tables_from_create_statements;

    pub(crate) fn shop() -> Vec<Table> {
        tables_from_create_statements(&[
            json!({"name": "customers", "sql": "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL UNIQUE, country TEXT NOT NULL, created_at TEXT NOT NULL)"}),
            json!({"name": "products", "sql": "CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, price_usd REAL NOT NULL, stock INTEGER NOT NULL)"}),
            json!({"name": "orders", "sql": "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id), product_id INTEGER NOT NULL REFERENCES products(id), quantity INTEGER NOT NULL, ordered_at TEXT NOT NULL, status TEXT NOT NULL)"}),
        ]
        .iter()
        .map(|v| v.as_object().cloned().expect("object"))
        .collect::<Vec<_>>())
    }

    fn values() -> Vec<Map<String, Value>> {
        [
            ("customers", "country", "DE"),
            ("customers", "country", "US"),
            ("customers", "name", "Ada Moreau"),
            ("products", "category", "Books"),
            ("products", "category", "Home & Kitchen"),
            ("orders", "status", "cancelled"),
            ("orders", "status", "completed"),
        ]
        .iter()
        .map(|(t, c, v)| {
            json!({"t": t, "c": c, "v": v})
                .as_object()
                .cloned()
                .expect("row")
        })
        .collect()
    }

    fn sql_for(task: &str) -> String {
        let tables = shop();
        let shape = shape(task, &tables).unwrap_or_else(|| panic!("no shape for {task}"));
        let filters = filters(task, &shape, &values());
        final_sql(&shape, &tables, &filters).expect("sql").0
    }

    #[test]
    fn counts_with_values_found_in_the_data() {
        assert_eq!(
            sql_for("How many customers are there?"),
            "SELECT count(*) AS count FROM \"customers\""
        );
        assert_eq!(
            sql_for("How many customers are from Germany?"),
            "SELECT count(*) AS count FROM \"customers\" WHERE \"customers\".\"country\" IN ('DE')"
        );
        assert!(sql_for("How many customers are in the US?").ends_with("IN ('US')"));
        assert!(!sql_for("Tell us how many customers there are").contains("WHERE"));
        assert!(
            sql_for("How many orders were canceled?")
                .ends_with("\"orders\".\"status\" IN ('cancelled')")
        );
        assert_eq!(
            sql_for("How many orders has Ada Moreau placed?"),
            "SELECT count(DISTINCT \"orders\".\"id\") AS count FROM \"orders\" JOIN \"customers\" ON \"customers\".\"id\" = \"orders\".\"customer_id\" WHERE \"customers\".\"name\" IN ('Ada Moreau')"
        );
        assert!(
            sql_for("How many prodcts cost more than $100?")
                .ends_with("WHERE \"products\".\"price_usd\" > 100")
        );
        assert!(sql_for("How many customers per country?").contains("GROUP BY 1"));
    }

    #[test]
    fn superlatives_averages_and_totals() {
        assert!(
            sql_for("What is the most expensive product?")
                .ends_with("ORDER BY \"products\".\"price_usd\" DESC LIMIT 1")
        );
        let cheapest = sql_for("What's the cheapest product in the Books category?");
        assert!(
            cheapest.contains("\"products\".\"category\" IN ('Books')")
                && cheapest.ends_with("ASC LIMIT 1"),
            "{cheapest}"
        );
        assert!(
            sql_for("Which product has the most stock?")
                .ends_with("ORDER BY \"products\".\"stock\" DESC LIMIT 1")
        );
        assert!(
            sql_for("Show the 5 most recent orders")
                .ends_with("ORDER BY \"orders\".\"ordered_at\" DESC LIMIT 5")
        );
        assert_eq!(
            sql_for("What is the average product price?"),
            "SELECT round(avg(\"products\".\"price_usd\"), 2) AS avg FROM \"products\""
        );
        let revenue = sql_for("What is the total revenue from completed orders?");
        assert!(
            revenue.starts_with(
                "SELECT round(sum((\"products\".\"price_usd\" * \"orders\".\"quantity\")), 2)"
            ),
            "{revenue}"
        );
        assert!(
            revenue.ends_with("WHERE \"orders\".\"status\" IN ('completed')"),
            "{revenue}"
        );
        let top = sql_for("Who are the top 3 customers by total spent?");
        assert!(
            top.contains("GROUP BY \"customers\".\"id\" ORDER BY value DESC LIMIT 3"),
            "{top}"
        );
        assert!(top.contains("IN ('completed'"), "{top}");
        let most_orders = sql_for("Which customer has the most orders?");
        assert!(
            most_orders.contains("count(\"orders\".\"rowid\")"),
            "{most_orders}"
        );
        assert!(
            sql_for("What is Dana Lindqvist's email address?")
                .starts_with("SELECT \"customers\".* FROM \"customers\"")
        );
    }

    #[test]
    fn word_numbers_grouping_synonyms_and_whole_comparisons() {
        assert!(sql_for("Give me the three cheapest products").ends_with("ASC LIMIT 3"));
        let cheap_books = sql_for("List all Books products under $30");
        assert!(
            cheap_books.ends_with("AND \"products\".\"price_usd\" < 30 LIMIT 50"),
            "{cheap_books}"
        );
        assert_eq!(
            sql_for("Which country has the most customers?"),
            "SELECT \"customers\".\"country\" AS \"country\", count(*) AS count FROM \"customers\" GROUP BY 1 ORDER BY 2 DESC LIMIT 1"
        );
        let tables = shop();
        let signup = shape("When did Ada Okafor sign up?", &tables).expect("shape");
        assert_eq!(
            (signup.table.as_str(), signup.named_columns.as_slice()),
            ("customers", &["created_at".to_owned()][..])
        );
        // "spent more than $1,000" compares the sum, not each order.
        let sum =
            sql_for("What is the total revenue of the Books category, is it more than $1,000?");
        assert!(!sum.contains("> 1000"), "{sum}");
        let shape = shape(
            "What is the total revenue, is it more than $1,000?",
            &tables,
        )
        .expect("shape");
        let rows = [json!({"sum": 1500.5}).as_object().cloned().expect("row")];
        let (answer, facts) = facts(&shape, &[], "SQL", &rows);
        assert!(answer.contains("1500.5 is > 1000"), "{answer}");
        assert_eq!(facts["comparison_holds"], json!(true));
    }

    #[test]
    fn names_and_tasks_that_are_not_about_the_data() {
        assert_eq!(
            proper_names("What is Dana Lindqvist's email?"),
            ["Dana Lindqvist"]
        );
        assert_eq!(
            proper_names("How many orders has Ada Moreau placed?"),
            ["Ada Moreau"]
        );
        assert_eq!(shape("What's the weather in Paris?", &shop()), None);
        let sql = discovery_sql(
            &shape("How many orders has Ada Moreau placed?", &shop()).expect("shape"),
            &shop(),
        )
        .expect("sql");
        assert!(sql.contains("lower(\"name\") IN ('ada moreau')"), "{sql}");
        assert!(!sql.contains("\"email\""), "{sql}");
    }
}
