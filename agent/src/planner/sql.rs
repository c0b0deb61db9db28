//! The offline planner's SQL rule: from a live schema to the customer's order total.
//!
//! Nothing about the demo database is assumed beyond what the schema says: the customers table
//! is the one named like `customer…` with a name column (or first/last names); the orders table
//! is the one named like `order…` that references it; an order's amount is its own total column
//! when it has one, else a price (on the order, or on the table an order references, such as
//! products) times its quantity; a price or total whose column name says `cents` is divided by
//! 100. "Completed" orders are those whose status is one of [`COMPLETED_STATUSES`]; with no
//! status column every order counts. Pure: schema text in, SQL out, rows in, facts out.

use serde_json::{Map, Value, json};

/// Status values that mean an order went through.
pub(crate) const COMPLETED_STATUSES: [&str; 7] = [
    "completed",
    "complete",
    "delivered",
    "fulfilled",
    "done",
    "closed",
    "paid",
];

/// One table as the planner understands it.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Table {
    pub(crate) name: String,
    pub(crate) columns: Vec<String>,
    /// (column, referenced table).
    pub(crate) foreign_keys: Vec<(String, String)>,
    /// The declared type of each column, in the order of `columns` (empty when unknown).
    pub(crate) types: Vec<String>,
}

impl Table {
    /// The declared type of a column, uppercased ("" when unknown).
    pub(crate) fn type_of(&self, column: &str) -> String {
        self.columns
            .iter()
            .position(|c| c == column)
            .and_then(|index| self.types.get(index))
            .map(|t| t.to_uppercase())
            .unwrap_or_default()
    }

    pub(crate) fn has(&self, column: &str) -> bool {
        self.columns.iter().any(|c| c.eq_ignore_ascii_case(column))
    }

    pub(crate) fn find(&self, wanted: impl Fn(&str) -> bool) -> Option<&str> {
        self.columns
            .iter()
            .map(String::as_str)
            .find(|c| wanted(&c.to_lowercase()))
    }

    pub(crate) fn primary_key(&self) -> &str {
        self.find(|c| c == "id")
            .or_else(|| self.columns.first().map(String::as_str))
            .unwrap_or("rowid")
    }
}

/// Tables from a `describe_schema` answer (`{tables: [{name, columns: [{name}], foreign_keys:
/// [{column, references_table}]}]}`).
pub(crate) fn tables_from_description(description: &Value) -> Vec<Table> {
    description
        .get("tables")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|table| Table {
            name: text(table, "name"),
            columns: table
                .get("columns")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|column| text(column, "name"))
                .collect(),
            types: table
                .get("columns")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|column| {
                    let declared = text(column, "declared_type");
                    if declared.is_empty() {
                        text(column, "type")
                    } else {
                        declared
                    }
                })
                .collect(),
            foreign_keys: table
                .get("foreign_keys")
                .or_else(|| table.get("foreignKeys"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|fk| {
                    (
                        text(fk, "column"),
                        fk.get("references_table")
                            .or_else(|| fk.get("referencesTable"))
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                    )
                })
                .collect(),
        })
        .filter(|table| !table.name.is_empty())
        .collect()
}

fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// Tables from `sqlite_master` rows (`{name, sql}`): the CREATE statements parsed for column
/// names and `REFERENCES` clauses.
pub(crate) fn tables_from_create_statements(rows: &[Map<String, Value>]) -> Vec<Table> {
    rows.iter()
        .filter_map(|row| {
            let name = row.get("name")?.as_str()?.to_owned();
            let sql = row.get("sql")?.as_str()?;
            Some(parse_create(&name, sql))
        })
        .collect()
}

fn parse_create(name: &str, sql: &str) -> Table {
    let mut table = Table {
        name: name.to_owned(),
        ..Table::default()
    };
    let (Some(open), Some(close)) = (sql.find('('), sql.rfind(')')) else {
        return table;
    };
    let body = &sql[open + 1..close];
    let mut depth = 0;
    let mut start = 0;
    let mut parts = Vec::new();
    for (index, c) in body.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&body[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    parts.push(&body[start..]);
    for part in parts {
        let part = part.trim();
        let lower = part.to_lowercase();
        let unquote = |word: &str| word.trim_matches(['"', '`', '[', ']', '\'']).to_owned();
        let referenced = lower.find("references ").map(|at| {
            let rest = &part[at + "references ".len()..];
            unquote(rest.split(['(', ' ']).next().unwrap_or(""))
        });
        if lower.starts_with("foreign key") {
            if let (Some(open), Some(close), Some(referenced)) =
                (part.find('('), part.find(')'), referenced)
            {
                table
                    .foreign_keys
                    .push((unquote(part[open + 1..close].trim()), referenced));
            }
            continue;
        }
        if ["primary key", "unique", "check", "constraint"]
            .iter()
            .any(|keyword| lower.starts_with(keyword))
        {
            continue;
        }
        let column = match part.chars().next() {
            Some(quote @ ('"' | '`' | '[')) => {
                let close = if quote == '[' { ']' } else { quote };
                let inner = &part[1..];
                inner[..inner.find(close).unwrap_or(inner.len())].to_owned()
            }
            _ => match part.split_whitespace().next() {
                Some(word) => unquote(word),
                None => continue,
            },
        };
        if let Some(referenced) = referenced {
            table.foreign_keys.push((column.clone(), referenced));
        }
        let declared = part
            .split_whitespace()
            .nth(1)
            .filter(|word| word.chars().all(|c| c.is_ascii_alphabetic()))
            .filter(|word| {
                !matches!(
                    word.to_uppercase().as_str(),
                    "NOT" | "PRIMARY" | "REFERENCES"
                )
            })
            .unwrap_or("");
        table.types.push(declared.to_owned());
        table.columns.push(column);
    }
    table
}

/// How to find and sum a customer's orders in this schema.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OrdersPlan {
    pub(crate) customers: String,
    pub(crate) customer_key: String,
    /// SQL for the customer's name (a column, or first || ' ' || last).
    pub(crate) name_expr: String,
    pub(crate) orders: String,
    pub(crate) customer_fk: String,
    /// `JOIN … ON …` clauses the amount needs (alias `o` is the orders table).
    pub(crate) joins: String,
    /// SQL for one order's amount in dollars.
    pub(crate) amount_expr: String,
    /// SQL for its status, when there is one.
    pub(crate) status_expr: Option<String>,
}

pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A SQL string literal.
pub(crate) fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn is_cents(column: &str) -> bool {
    column.to_lowercase().contains("cent")
}

fn dollars(expr: String, cents: bool) -> String {
    if cents {
        format!("({expr}) / 100.0")
    } else {
        expr
    }
}

/// Finds the tables and columns, or says what the schema lacks.
pub(crate) fn plan(tables: &[Table]) -> Result<OrdersPlan, String> {
    let named = |prefix: &str| {
        tables
            .iter()
            .find(|t| t.name.to_lowercase().starts_with(prefix))
    };
    let customers = named("customer")
        .ok_or("the schema has no customers table (a table named like customer…)")?;
    let name_expr = if let Some(column) =
        customers.find(|c| matches!(c, "name" | "full_name" | "customer_name" | "display_name"))
    {
        format!("c.{}", quote_ident(column))
    } else if let (Some(first), Some(last)) = (
        customers.find(|c| c == "first_name"),
        customers.find(|c| c == "last_name"),
    ) {
        format!("c.{} || ' ' || c.{}", quote_ident(first), quote_ident(last))
    } else {
        return Err(format!(
            "the {} table has no name column (name, full_name, or first_name and last_name)",
            customers.name
        ));
    };
    let references_customers = |t: &&Table| {
        t.foreign_keys
            .iter()
            .any(|(_, referenced)| referenced.eq_ignore_ascii_case(&customers.name))
            || t.has("customer_id")
    };
    let orders = tables
        .iter()
        .filter(|t| t.name.to_lowercase().starts_with("order"))
        .find(references_customers)
        .ok_or_else(|| {
            format!(
                "the schema has no orders table referencing {} (a table named like order… \
                 with a customer_id or a foreign key)",
                customers.name
            )
        })?;
    let customer_fk = orders
        .foreign_keys
        .iter()
        .find(|(_, referenced)| referenced.eq_ignore_ascii_case(&customers.name))
        .map(|(column, _)| column.clone())
        .or_else(|| orders.find(|c| c == "customer_id").map(str::to_owned))
        .ok_or("the orders table has no customer column")?;
    let quantity = orders
        .find(|c| matches!(c, "quantity" | "qty" | "count" | "units"))
        .map(|c| format!("o.{}", quote_ident(c)));
    let total_column = orders.find(|c| {
        (c.contains("total") || c.contains("amount")) && !c.contains("count") && !c.contains("qty")
    });
    let price_on_order = orders.find(|c| c.contains("price"));
    let mut joins = String::new();
    let amount_expr = if let Some(total) = total_column {
        dollars(format!("o.{}", quote_ident(total)), is_cents(total))
    } else {
        let (price_sql, cents) = if let Some(price) = price_on_order {
            (format!("o.{}", quote_ident(price)), is_cents(price))
        } else {
            // A price on a table the order references (products, items, …).
            let found = orders.foreign_keys.iter().find_map(|(column, referenced)| {
                let table = tables
                    .iter()
                    .find(|t| t.name.eq_ignore_ascii_case(referenced))?;
                let price = table.find(|c| c.contains("price"))?;
                Some((column, table, price))
            });
            let Some((column, table, price)) = found else {
                return Err(format!(
                    "cannot tell what an order of {} costs: it has no total or price column and \
                     references no table with a price",
                    orders.name
                ));
            };
            joins = format!(
                " JOIN {} p ON p.{} = o.{}",
                quote_ident(&table.name),
                quote_ident(table.primary_key()),
                quote_ident(column)
            );
            (format!("p.{}", quote_ident(price)), is_cents(price))
        };
        let line = match &quantity {
            Some(quantity) => format!("{price_sql} * {quantity}"),
            None => price_sql,
        };
        dollars(line, cents)
    };
    Ok(OrdersPlan {
        customers: customers.name.clone(),
        customer_key: customers.primary_key().to_owned(),
        name_expr,
        orders: orders.name.clone(),
        customer_fk,
        joins,
        amount_expr,
        status_expr: orders
            .find(|c| c == "status" || c == "state" || c == "order_status")
            .map(|c| format!("o.{}", quote_ident(c))),
    })
}

impl OrdersPlan {
    /// Finds the customer: exact (case-insensitive) matches first, then partial ones.
    pub(crate) fn customer_query(&self, name: &str) -> String {
        let literal = quote_literal(&name.to_lowercase());
        let like = quote_literal(&format!(
            "%{}%",
            name.to_lowercase().replace(['%', '_'], "")
        ));
        format!(
            "SELECT c.{key} AS id, {name} AS name FROM {table} c \
             WHERE lower({name}) = {literal} OR lower({name}) LIKE {like} \
             ORDER BY lower({name}) = {literal} DESC, {name} LIMIT 10",
            key = quote_ident(&self.customer_key),
            name = self.name_expr,
            table = quote_ident(&self.customers),
        )
    }

    /// The customer's order count and total per status.
    pub(crate) fn totals_query(&self, customer_id: &Value) -> String {
        let id = match customer_id {
            Value::Number(number) => number.to_string(),
            other => quote_literal(other.as_str().unwrap_or("")),
        };
        let status = self.status_expr.as_deref().unwrap_or("'all'");
        format!(
            "SELECT {status} AS status, COUNT(*) AS orders, SUM({amount}) AS total \
             FROM {orders} o{joins} WHERE o.{fk} = {id} GROUP BY 1 ORDER BY 1",
            amount = self.amount_expr,
            orders = quote_ident(&self.orders),
            joins = self.joins,
            fk = quote_ident(&self.customer_fk),
        )
    }
}

/// Totals per status, as the totals query returns them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StatusTotal {
    pub(crate) status: String,
    pub(crate) orders: u64,
    pub(crate) total: f64,
}

/// Reads the rows of the totals query.
pub(crate) fn status_totals(rows: &[Map<String, Value>]) -> Vec<StatusTotal> {
    rows.iter()
        .map(|row| StatusTotal {
            status: match row.get("status") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => "unknown".to_owned(),
                Some(other) => other.to_string(),
            },
            orders: row.get("orders").and_then(Value::as_u64).unwrap_or(0),
            total: row.get("total").and_then(Value::as_f64).unwrap_or(0.0),
        })
        .collect()
}

fn cents(amount: f64) -> f64 {
    (amount * 100.0).round() / 100.0
}

/// The answer and key facts for a customer's totals against a threshold.
pub(crate) fn facts(
    customer: &str,
    threshold: Option<f64>,
    totals: &[StatusTotal],
    has_status: bool,
) -> (String, Map<String, Value>) {
    let completed =
        |status: &str| !has_status || COMPLETED_STATUSES.contains(&status.to_lowercase().as_str());
    let (mut completed_total, mut completed_orders, mut all_total, mut all_orders) =
        (0.0, 0, 0.0, 0);
    let mut by_status = Map::new();
    for row in totals {
        all_total += row.total;
        all_orders += row.orders;
        if completed(&row.status) {
            completed_total += row.total;
            completed_orders += row.orders;
        }
        if has_status {
            by_status.insert(
                row.status.clone(),
                json!({"orders": row.orders, "total": cents(row.total)}),
            );
        }
    }
    let order_total = cents(completed_total);
    let exceeds = threshold.map(|threshold| order_total > threshold);
    let mut answer = format!(
        "{customer}'s {completed_orders} completed order{} total ${order_total:.2}",
        if completed_orders == 1 { "" } else { "s" },
    );
    match (threshold, exceeds) {
        (Some(threshold), Some(exceeds)) => answer.push_str(&format!(
            ", which {} ${threshold:.2}.",
            if exceeds {
                "exceeds"
            } else {
                "does not exceed"
            }
        )),
        _ => answer.push('.'),
    }
    if has_status && all_orders != completed_orders {
        answer.push_str(&format!(
            " Counting all {all_orders} orders in any status (pending, cancelled, …) the total \
             is ${:.2}.",
            cents(all_total)
        ));
    }
    let mut key_facts = Map::new();
    key_facts.insert("customer_name".into(), json!(customer));
    key_facts.insert("order_total".into(), json!(order_total));
    if let (Some(threshold), Some(exceeds)) = (threshold, exceeds) {
        key_facts.insert("threshold".into(), json!(threshold));
        key_facts.insert("exceeds_threshold".into(), json!(exceeds));
    }
    key_facts.insert("num_completed_orders".into(), json!(completed_orders));
    key_facts.insert("num_orders".into(), json!(all_orders));
    key_facts.insert("all_orders_total".into(), json!(cents(all_total)));
    if has_status {
        key_facts.insert("orders_by_status".into(), Value::Object(by_status));
        key_facts.insert("completed_statuses".into(), json!(COMPLETED_STATUSES));
    }
    (answer, key_facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo_schema() -> Vec<Table> {
        tables_from_create_statements(&[
            json!({"name": "customers", "sql": "CREATE TABLE customers (\n id INTEGER PRIMARY KEY,\n name TEXT NOT NULL,\n email TEXT NOT NULL UNIQUE)"}),
            json!({"name": "products", "sql": "CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, price_cents INTEGER NOT NULL CHECK (price_cents > 0))"}),
            json!({"name": "orders", "sql": "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id), product_id INTEGER NOT NULL REFERENCES products(id), quantity INTEGER NOT NULL CHECK (quantity > 0), status TEXT NOT NULL)"}),
        ]
        .iter()
        .map(|v| v.as_object().cloned().expect("object"))
        .collect::<Vec<_>>())
    }

    #[test]
    fn create_statements_give_columns_and_keys() {
        let tables = demo_schema();
        assert_eq!(
            tables[2].columns,
            ["id", "customer_id", "product_id", "quantity", "status"]
        );
        assert_eq!(
            tables[2].foreign_keys,
            [
                ("customer_id".into(), "customers".into()),
                ("product_id".into(), "products".into())
            ]
        );
        let table = parse_create(
            "t",
            "CREATE TABLE t (a INT, \"b c\" TEXT, FOREIGN KEY (a) REFERENCES other(id))",
        );
        assert_eq!(table.columns, ["a", "b c"]);
        assert_eq!(table.foreign_keys, [("a".into(), "other".into())]);
    }

    #[test]
    fn price_in_cents_times_quantity_through_the_product() {
        let plan = plan(&demo_schema()).expect("plan");
        assert_eq!(
            plan.amount_expr,
            "(p.\"price_cents\" * o.\"quantity\") / 100.0"
        );
        assert_eq!(
            plan.joins,
            " JOIN \"products\" p ON p.\"id\" = o.\"product_id\""
        );
        assert_eq!(plan.status_expr.as_deref(), Some("o.\"status\""));
        let sql = plan.totals_query(&json!(7));
        assert!(
            sql.contains("WHERE o.\"customer_id\" = 7 GROUP BY 1"),
            "{sql}"
        );
    }

    #[test]
    fn other_shapes_of_the_same_data() {
        // A total on the order itself, in dollars, and names split in two.
        let tables = tables_from_description(&json!({"tables": [
            {"name": "customer", "columns": [{"name": "customer_id"}, {"name": "first_name"},
                                             {"name": "last_name"}]},
            {"name": "orders", "columns": [{"name": "id"}, {"name": "customer_id"},
                                           {"name": "total_usd"}, {"name": "state"}],
             "foreign_keys": [{"column": "customer_id", "references_table": "customer"}]}
        ]}));
        let plan = plan(&tables).expect("plan");
        assert_eq!(plan.amount_expr, "o.\"total_usd\"");
        assert_eq!(plan.name_expr, "c.\"first_name\" || ' ' || c.\"last_name\"");
        assert_eq!(plan.customer_key, "customer_id");
        assert!(plan.joins.is_empty());
        // A unit price on the order.
        let tables = tables_from_description(&json!({"tables": [
            {"name": "customers", "columns": [{"name": "id"}, {"name": "name"}]},
            {"name": "orders", "columns": [{"name": "id"}, {"name": "customer_id"},
                                           {"name": "unit_price"}, {"name": "qty"}]}
        ]}));
        assert_eq!(plan_amount(&tables), "o.\"unit_price\" * o.\"qty\"");
    }

    fn plan_amount(tables: &[Table]) -> String {
        plan(tables).expect("plan").amount_expr
    }

    #[test]
    fn schemas_without_the_parts_say_what_is_missing() {
        let no_orders = tables_from_description(&json!({"tables": [
            {"name": "customers", "columns": [{"name": "id"}, {"name": "name"}]}]}));
        assert!(
            plan(&no_orders)
                .expect_err("no orders")
                .contains("no orders table")
        );
        let no_price = tables_from_description(&json!({"tables": [
            {"name": "customers", "columns": [{"name": "id"}, {"name": "name"}]},
            {"name": "orders", "columns": [{"name": "id"}, {"name": "customer_id"}]}]}));
        assert!(
            plan(&no_price)
                .expect_err("no price")
                .contains("cannot tell")
        );
    }

    #[test]
    fn names_are_quoted_as_sql_literals() {
        let plan = plan(&demo_schema()).expect("plan");
        let sql = plan.customer_query("Ada O'Brien");
        assert!(sql.contains("= 'ada o''brien'"), "{sql}");
    }

    #[test]
    fn completed_orders_decide_and_every_status_is_reported() {
        let totals = [
            StatusTotal {
                status: "delivered".into(),
                orders: 2,
                total: 300.004,
            },
            StatusTotal {
                status: "cancelled".into(),
                orders: 1,
                total: 999.0,
            },
            StatusTotal {
                status: "pending".into(),
                orders: 1,
                total: 10.0,
            },
        ];
        let (answer, facts) = facts("Ada", Some(500.0), &totals, true);
        assert_eq!(facts["order_total"], json!(300.0));
        assert_eq!(facts["exceeds_threshold"], json!(false));
        assert_eq!(facts["num_completed_orders"], json!(2));
        assert_eq!(facts["num_orders"], json!(4));
        assert_eq!(facts["all_orders_total"], json!(1309.0));
        assert!(answer.contains("does not exceed $500.00"), "{answer}");
        let (_, facts) = facts_without_status();
        assert_eq!(facts["exceeds_threshold"], json!(true));
        let (answer, facts) = super::facts("Ada", None, &totals, true);
        assert!(
            answer.starts_with("Ada's 2 completed orders total $300.00."),
            "{answer}"
        );
        assert!(facts.get("threshold").is_none());
    }

    fn facts_without_status() -> (String, Map<String, Value>) {
        facts(
            "Bo",
            Some(1.0),
            &[StatusTotal {
                status: "all".into(),
                orders: 3,
                total: 2.5,
            }],
            false,
        )
    }
}
