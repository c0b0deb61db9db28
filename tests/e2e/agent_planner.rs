//! The offline planner's task classes through `runAgent` against the real demo server and the
//! npm `server-everything`: a count of related rows compared per entity, a period, units rather
//! than money, the distinct values of a column, a money answer converted to another currency,
//! arithmetic phrased as verbs, a tool the task
//! names, and a relative period that ends the run as `cannot` with its reason instead of being
//! dropped.
//! Every figure is checked against SQL this test runs itself through the daemon.

use serde_json::{Value, json};
use tool_cli_tests::{Daemon, demo_server, everything_stdio};

fn daemon() -> Daemon {
    Daemon::start_with_dir(|dir| {
        json!({"mcpServers": {
            "demo": demo_server(dir),
            "everything": everything_stdio(),
        }})
    })
}

fn run(daemon: &Daemon, task: &str) -> Value {
    daemon.call("runAgent", json!({"task": task, "backend": "offline"}))
}

/// The first row of our own query.
fn sql(daemon: &Daemon, query: &str) -> Value {
    let result = daemon.call_tool("demo", "sql_query", json!({ "sql": query }));
    result["structuredContent"]["rows"][0].clone()
}

const COMPLETED: &str = "lower(o.status) IN ('completed', 'complete', 'delivered', 'fulfilled', \
                         'done', 'closed', 'paid')";

#[test]
fn data_questions_with_conditions_units_periods_and_distinct_values() {
    let daemon = daemon();

    let result = run(&daemon, "How many customers placed more than 5 orders?");
    assert_eq!(result["status"], "completed", "{result:#}");
    let expected = sql(
        &daemon,
        "SELECT count(*) AS n FROM (SELECT customer_id FROM orders GROUP BY customer_id \
         HAVING count(*) > 5)",
    );
    assert_eq!(result["keyFacts"]["count"], expected["n"], "{result:#}");
    let all = sql(&daemon, "SELECT count(*) AS n FROM customers");
    assert_ne!(
        result["keyFacts"]["count"], all["n"],
        "the condition is applied"
    );

    let result = run(&daemon, "What was the revenue in March 2025?");
    assert_eq!(result["status"], "completed", "{result:#}");
    let expected = sql(
        &daemon,
        &format!(
            "SELECT round(sum(p.price_usd * o.quantity), 2) AS total FROM orders o \
             JOIN products p ON p.id = o.product_id WHERE {COMPLETED} \
             AND o.ordered_at >= '2025-03-01' AND o.ordered_at < '2025-04-01'"
        ),
    );
    assert_eq!(result["keyFacts"]["value"], expected["total"], "{result:#}");
    assert!(
        result["answer"].as_str().unwrap().contains("2025-03-01"),
        "the period is said: {result:#}"
    );

    let result = run(&daemon, "Which product sold the most units?");
    assert_eq!(result["status"], "completed", "{result:#}");
    // Units sold: completed orders, as the answer says.
    let expected = sql(
        &daemon,
        &format!(
            "SELECT max(units) AS units FROM (SELECT sum(o.quantity) AS units FROM orders o \
             WHERE {COMPLETED} GROUP BY o.product_id)"
        ),
    );
    let top = &result["keyFacts"]["rows"][0];
    assert_eq!(top["value"], expected["units"], "{result:#}");
    let answer = result["answer"].as_str().unwrap();
    assert!(
        answer.contains(&format!("units (quantity) {}", expected["units"])),
        "{answer}"
    );
    assert!(answer.contains("completed orders only"), "{answer}");

    let result = run(&daemon, "What is the total quantity of products ordered?");
    let expected = sql(&daemon, "SELECT sum(quantity) AS units FROM orders");
    assert_eq!(
        result["keyFacts"]["value"].as_f64(),
        expected["units"].as_f64(),
        "{result:#}"
    );

    // A money answer in another currency: the figure in dollars, then converted by the
    // exchange-rate tool at the rate it gives.
    let result = run(&daemon, "What is the total revenue in EUR of all orders?");
    assert_eq!(result["status"], "completed", "{result:#}");
    let expected = sql(
        &daemon,
        &format!(
            "SELECT round(sum(p.price_usd * o.quantity), 2) AS total FROM orders o \
             JOIN products p ON p.id = o.product_id WHERE {COMPLETED}"
        ),
    );
    assert_eq!(result["keyFacts"]["value"], expected["total"], "{result:#}");
    let rate = daemon.call_tool(
        "demo",
        "rest_exchange_rate",
        json!({"base": "USD", "quote": "EUR"}),
    )["structuredContent"]["rate"]
        .as_f64()
        .expect("a rate");
    let converted = result["keyFacts"]["conversion_converted"]
        .as_f64()
        .expect("converted");
    let want = expected["total"].as_f64().unwrap() * rate;
    assert!(
        (converted - want).abs() < 0.01,
        "{converted} vs {want}: {result:#}"
    );
    assert_eq!(result["keyFacts"]["conversion_currency"], "EUR");

    let result = run(&daemon, "List the product categories");
    assert_eq!(result["status"], "completed", "{result:#}");
    let expected = sql(
        &daemon,
        "SELECT count(DISTINCT category) AS n FROM products",
    );
    assert_eq!(
        result["keyFacts"]["values"].as_array().map(Vec::len),
        expected["n"].as_u64().map(|n| n as usize),
        "{result:#}"
    );
}

#[test]
fn verbs_named_tools_and_periods_the_planner_cannot_place() {
    let daemon = daemon();

    for (task, figure) in [("Add 17 and 25", "42"), ("Multiply 12 by 7", "84")] {
        let result = run(&daemon, task);
        assert_eq!(result["status"], "completed", "{task}: {result:#}");
        assert_eq!(
            result["keyFacts"]["result"],
            json!(figure),
            "{task}: {result:#}"
        );
    }

    let result = run(&daemon, "Echo the text hello world");
    assert_eq!(result["status"], "completed", "{result:#}");
    assert_eq!(result["keyFacts"]["tool"], "everything/echo", "{result:#}");
    assert_eq!(
        result["keyFacts"]["arguments"],
        json!({"message": "hello world"}),
        "{result:#}"
    );
    assert!(
        result["answer"]
            .as_str()
            .unwrap()
            .contains("Echo: hello world"),
        "{result:#}"
    );

    // A period relative to today is not placed, and not dropped either: the run ends as
    // `cannot`, saying so.
    let result = run(&daemon, "What was the revenue last month?");
    assert_eq!(result["status"], "cannot", "{result:#}");
    assert!(
        result.to_string().contains("last month"),
        "the reason names it: {result:#}"
    );
}
