//! The data rule's shapes and SQL against a shop schema.
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
    let sum = sql_for("What is the total revenue of the Books category, is it more than $1,000?");
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
fn comparisons_on_counted_rows_dates_units_and_distinct_values() {
    // A count of related rows per entity is compared per entity, never dropped.
    let more = sql_for("How many customers placed more than 5 orders?");
    assert_eq!(
        more,
        "SELECT count(*) AS count FROM (SELECT \"customers\".\"id\" FROM \"customers\" LEFT JOIN \"orders\" ON \"orders\".\"customer_id\" = \"customers\".\"id\" GROUP BY \"customers\".\"id\" HAVING count(\"orders\".\"rowid\") > 5)"
    );
    let fewer = sql_for("List customers with fewer than 2 orders");
    assert!(
        fewer.contains("HAVING count(\"orders\".\"rowid\") < 2"),
        "{fewer}"
    );
    let spenders = sql_for("Which customers spent more than $1000?");
    assert!(
        spenders.contains("GROUP BY \"customers\".\"id\" HAVING round(sum(")
            && spenders.contains(") > 1000"),
        "{spenders}"
    );
    // A period limits the rows the measure counts: the orders' date for revenue.
    let march = sql_for("What was the revenue in March 2025?");
    assert!(
        march.ends_with(
            "AND \"orders\".\"ordered_at\" >= '2025-03-01' AND \"orders\".\"ordered_at\" < '2025-04-01'"
        ),
        "{march}"
    );
    assert!(
        sql_for("How many customers signed up since 2025-01-01?")
            .ends_with("WHERE \"customers\".\"created_at\" >= '2025-01-01'")
    );
    // A relative period fails the rule with the reason, instead of covering all time.
    let tables = shop();
    let last = shape("What was the revenue last month?", &tables).expect("shape");
    let refused = final_sql(&last, &tables, &[]).unwrap_err();
    assert!(refused.contains("\"last month\""), "{refused}");
    // Units and quantity are the quantity column, added up per product when ranked.
    assert_eq!(
        sql_for("What is the total quantity of products ordered?"),
        "SELECT round(sum(\"orders\".\"quantity\"), 2) AS sum FROM \"products\" JOIN \"orders\" ON \"orders\".\"product_id\" = \"products\".\"id\""
    );
    assert!(
        sql_for("Which product sold the most units?").ends_with(
            "sum(\"orders\".\"quantity\") AS value FROM \"products\" JOIN \"orders\" ON \"orders\".\"product_id\" = \"products\".\"id\" GROUP BY \"products\".\"id\" ORDER BY value DESC LIMIT 1"
        )
    );
    assert!(sql_for("top 5 products by units sold").ends_with("DESC LIMIT 5"));
    // Money still means revenue when it is asked for.
    assert!(sql_for("Which product had the most sales?").contains("price_usd"));
    // The values of a column, with their counts.
    assert_eq!(
        sql_for("List the product categories"),
        "SELECT \"products\".\"category\" AS \"category\", count(*) AS count FROM \"products\" GROUP BY 1 ORDER BY 2 DESC"
    );
    assert!(sql_for("What are the different order statuses?").contains("GROUP BY 1"));
    // "order value" is money; an average of nothing named is not this rule's.
    assert!(sql_for("What is the average order value?").starts_with("SELECT round(avg(("));
    assert_eq!(shape("What is the average of the products?", &tables), None);
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
