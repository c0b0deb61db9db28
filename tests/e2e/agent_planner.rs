//! The offline planner's task classes through `runAgent` against the real demo server and the
//! npm `server-everything`: a count of related rows compared per entity, a period, units rather
//! than money, the distinct values of a column, a money answer converted to another currency,
//! arithmetic phrased as verbs, a tool the task
//! names, and a relative period that fails the run with its reason instead of being dropped.
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
    assert_eq!(result["keyFacts"]["sum"], expected["total"], "{result:#}");
    assert!(
        result["answer"].as_str().unwrap().contains("march 2025"),
        "the period is said: {result:#}"
    );

    let result = run(&daemon, "Which product sold the most units?");
    assert_eq!(result["status"], "completed", "{result:#}");
    let expected = sql(
        &daemon,
        "SELECT max(units) AS units FROM (SELECT sum(quantity) AS units FROM orders \
         GROUP BY product_id)",
    );
    let top = &result["keyFacts"]["rows"][0];
    assert_eq!(top["value"], expected["units"], "{result:#}");
    let answer = result["answer"].as_str().unwrap();
    assert!(
        answer.contains(&format!("total quantity {}", expected["units"])),
        "{answer}"
    );

    let result = run(&daemon, "What is the total quantity of products ordered?");
    let expected = sql(&daemon, "SELECT sum(quantity) AS units FROM orders");
    assert_eq!(
        result["keyFacts"]["sum"].as_f64(),
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
    assert_eq!(result["keyFacts"]["sum"], expected["total"], "{result:#}");
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
    assert_eq!(result["keyFacts"]["row_count"], expected["n"], "{result:#}");
    assert!(
        result["keyFacts"]["rows"][0].get("category").is_some(),
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

    // A period relative to today is not placed, and not dropped either: the run fails saying so.
    let result = run(&daemon, "What was the revenue last month?");
    assert_eq!(result["status"], "failed", "{result:#}");
    assert!(
        result.to_string().contains("last month"),
        "the reason names it: {result:#}"
    );
}
