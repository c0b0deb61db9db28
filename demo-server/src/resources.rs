//! The MCP resources: the readme, the schema, the sample documents and one row sample per table.
//!
//! URIs are parsed here without I/O so the mapping (and the "which URIs are valid" message) is
//! unit-tested; reading touches the database only for the schema document and table samples.
//! Tables are matched against the names SQLite reports, never spliced from the URI into SQL.

use rmcp::model::{Resource, ResourceContents, ResourceTemplate};
use rusqlite::Connection;
use serde_json::json;

use crate::{
    documents::{self, DOCUMENTS, Document},
    query::{Pagination, QueryError, fetch_page},
    schema,
};

pub(crate) const README_URI: &str = "demo://docs/readme";
pub(crate) const SCHEMA_URI: &str = "demo://docs/schema";
pub(crate) const TABLE_URI_PREFIX: &str = "demo://tables/";
pub(crate) const TABLE_URI_TEMPLATE: &str = "demo://tables/{table}";
/// Rows included when a table is read as a resource; `sql_query` pages through the rest.
pub(crate) const TABLE_SAMPLE_ROWS: u64 = 100;

const MARKDOWN: &str = "text/markdown";
const PLAIN_TEXT: &str = "text/plain";
const JSON: &str = "application/json";

/// The readme document: what this server is and queries worth trying.
pub(crate) const README: &str = r#"# tool-cli demo server

A small MCP server bundled with tool-cli so agents (and people) have something real to try.
It serves a sample shop database in SQLite, read-only, a few documents, an exchange-rate lookup
over HTTP and a sandboxed Python interpreter.

## Tables
- `customers` (50 rows): id, name, email, country (ISO 3166 alpha-2 code such as `US` or `DE`), created_at
- `products` (30 rows): id, name, category (Electronics, Books, Home & Kitchen, Sports, Toys, Office), price_usd, stock
- `orders` (500 rows): id, customer_id → customers.id, product_id → products.id, quantity, ordered_at, status
  (`pending`, `shipped`, `completed`, `cancelled`, `returned`)

An order is one product line: its total is `quantity * price_usd` (join `products`). Only `completed`
orders are delivered and paid. Prices are US dollars with whole cents; round sums with `round(x, 2)`.
Timestamps are UTC text in SQLite's `YYYY-MM-DD HH:MM:SS` form, so `date()` and `strftime()` work on them.

## Tools
- `describe_schema`: tables, columns, keys and row counts. Call it first.
- `sql_query`: one read-only `SELECT` (or `WITH … SELECT`) statement, paged. Pass `page_size`
  (1 to 200, default 50) and `offset`; the result says `has_more` and the `next_offset` to ask for.
- `rest_exchange_rate`: the rate from one currency to another (`base` `USD`, `quote` `EUR`), from a
  REST service; pass `amount` to convert.
- `run_python`: run a short Python snippet (standard-library maths, json, re, datetime, …) in a
  sandbox with no files, no network and a time limit; prints come back as `stdout`.
- `list_resources`, `open_resource`, `read_resource`, `release_resource`: read the resources below
  through a handle, in chunks, and release it when done.

## Example queries
```sql
-- One customer's completed orders and what they came to
SELECT count(*) AS orders, round(sum(o.quantity * p.price_usd), 2) AS total_usd
FROM orders o JOIN customers c ON c.id = o.customer_id JOIN products p ON p.id = o.product_id
WHERE c.name = 'Ada Okafor' AND o.status = 'completed';

-- Revenue per category, completed orders only
SELECT p.category, round(sum(o.quantity * p.price_usd), 2) AS revenue
FROM orders o JOIN products p ON p.id = o.product_id
WHERE o.status = 'completed'
GROUP BY p.category ORDER BY revenue DESC;

-- The ten best customers
SELECT c.name, c.country, count(*) AS orders, round(sum(o.quantity * p.price_usd), 2) AS spent
FROM customers c JOIN orders o ON o.customer_id = c.id JOIN products p ON p.id = o.product_id
GROUP BY c.id ORDER BY spent DESC LIMIT 10;

-- Orders per month
SELECT strftime('%Y-%m', ordered_at) AS month, count(*) AS orders
FROM orders GROUP BY month ORDER BY month;

-- Customers who never ordered
SELECT name, email FROM customers
WHERE id NOT IN (SELECT customer_id FROM orders);

-- Out of stock products
SELECT name, category FROM products WHERE stock = 0;
```

## Resources
- `demo://docs/readme`: this document.
- `demo://docs/schema`: the CREATE statements with row counts.
- `demo://docs/returns-policy`: what each order status means.
- `demo://docs/shipping`: shipping rates by country.
- `demo://docs/currency-notes`: prices are USD; the local exchange-rate table.
- `demo://tables/{table}`: the first 100 rows of a table as JSON, e.g. `demo://tables/orders`.
"#;

/// What a resource URI refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ResourceTarget<'a> {
    Readme,
    Schema,
    Document(&'static Document),
    Table(&'a str),
}

/// Maps a URI to what it names, or `None` if this server has no such resource. A table URI is
/// only checked for shape here; whether the table exists is the database's answer.
pub(crate) fn parse_uri(uri: &str) -> Option<ResourceTarget<'_>> {
    match uri {
        README_URI => Some(ResourceTarget::Readme),
        SCHEMA_URI => Some(ResourceTarget::Schema),
        _ => documents::find(uri)
            .map(ResourceTarget::Document)
            .or_else(|| {
                uri.strip_prefix(TABLE_URI_PREFIX)
                    .filter(|table| !table.is_empty() && !table.contains('/'))
                    .map(ResourceTarget::Table)
            }),
    }
}

/// The URI of a table's sample.
pub(crate) fn table_uri(table: &str) -> String {
    format!("{TABLE_URI_PREFIX}{table}")
}

/// The concrete resources: the two documents and one sample per table. Listing the tables too
/// (not only the template) helps clients that do not expand templates.
pub(crate) fn list(tables: &[String]) -> Vec<Resource> {
    let mut resources = vec![
        Resource::new(README_URI, "readme")
            .with_title("About the demo server")
            .with_description("What this server offers, the tables, and example queries")
            .with_mime_type(MARKDOWN)
            .with_size(README.len() as u64),
        Resource::new(SCHEMA_URI, "schema")
            .with_title("Database schema")
            .with_description("The CREATE statement and row count of every table")
            .with_mime_type(PLAIN_TEXT),
    ];
    resources.extend(DOCUMENTS.iter().map(|document| {
        Resource::new(document.uri, document.name)
            .with_title(document.title)
            .with_description(document.description)
            .with_mime_type(document.mime_type)
            .with_size(document.text.len() as u64)
    }));
    resources.extend(tables.iter().map(|table| {
        Resource::new(table_uri(table), format!("table-{table}"))
            .with_title(format!("Table {table}"))
            .with_description(format!(
                "The first {TABLE_SAMPLE_ROWS} rows of {table} as JSON"
            ))
            .with_mime_type(JSON)
    }));
    resources
}

/// The one template: a table's sample by name.
pub(crate) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(TABLE_URI_TEMPLATE, "table")
            .with_title("Table sample")
            .with_description(format!(
                "The first {TABLE_SAMPLE_ROWS} rows of a table as JSON; {{table}} is a table name from describe_schema"
            ))
            .with_mime_type(JSON),
    ]
}

/// Why a resource could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResourceError {
    #[error("no resource {uri:?}; valid URIs: {}", valid.join(", "))]
    NotFound { uri: String, valid: Vec<String> },
    #[error("cannot read the resource: {0}")]
    Query(#[from] QueryError),
}

/// Every URI a client may read, for the not-found message.
fn valid_uris(tables: &[String]) -> Vec<String> {
    [README_URI.to_owned(), SCHEMA_URI.to_owned()]
        .into_iter()
        .chain(DOCUMENTS.iter().map(|document| document.uri.to_owned()))
        .chain(tables.iter().map(|table| table_uri(table)))
        .collect()
}

/// Reads one resource.
pub(crate) fn read(connection: &Connection, uri: &str) -> Result<ResourceContents, ResourceError> {
    let not_found = |connection: &Connection| -> ResourceError {
        match schema::table_names(connection) {
            Ok(tables) => ResourceError::NotFound {
                uri: uri.to_owned(),
                valid: valid_uris(&tables),
            },
            Err(error) => error.into(),
        }
    };
    match parse_uri(uri) {
        None => Err(not_found(connection)),
        Some(ResourceTarget::Readme) => {
            Ok(ResourceContents::text(README, uri).with_mime_type(MARKDOWN))
        }
        Some(ResourceTarget::Document(document)) => {
            Ok(ResourceContents::text(document.text, uri).with_mime_type(document.mime_type))
        }
        Some(ResourceTarget::Schema) => {
            let description = schema::describe(connection, None)?;
            Ok(
                ResourceContents::text(schema::render_text(&description), uri)
                    .with_mime_type(PLAIN_TEXT),
            )
        }
        Some(ResourceTarget::Table(table)) => {
            let tables = schema::table_names(connection)?;
            if !tables.iter().any(|name| name == table) {
                return Err(not_found(connection));
            }
            let sql = format!("SELECT * FROM {}", schema::quote_identifier(table));
            let pagination = Pagination {
                page_size: TABLE_SAMPLE_ROWS,
                offset: 0,
            };
            let page = fetch_page(connection, &sql, pagination)?;
            let document = json!({
                "table": table,
                "columns": page.columns,
                "rows": page.rows,
                "total_rows": page.total_rows_matched,
                "truncated": page.has_more,
            });
            let text = serde_json::to_string_pretty(&document)
                .map_err(|error| QueryError::Worker(error.to_string()))?;
            Ok(ResourceContents::text(text, uri).with_mime_type(JSON))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::database::{open_read_only, tests::sample_database};

    #[test]
    fn uris_parse() {
        assert_eq!(parse_uri(README_URI), Some(ResourceTarget::Readme));
        assert_eq!(parse_uri(SCHEMA_URI), Some(ResourceTarget::Schema));
        assert_eq!(
            parse_uri("demo://tables/orders"),
            Some(ResourceTarget::Table("orders"))
        );
        assert_eq!(
            parse_uri("demo://docs/shipping"),
            Some(ResourceTarget::Document(&DOCUMENTS[1]))
        );
        assert_eq!(parse_uri("demo://tables/"), None);
        assert_eq!(parse_uri("demo://tables/a/b"), None);
        assert_eq!(parse_uri("demo://docs/other"), None);
        assert_eq!(parse_uri("file:///etc/passwd"), None);
    }

    #[test]
    fn listing_names_documents_and_tables() {
        let uris: Vec<_> = list(&["orders".to_owned()])
            .into_iter()
            .map(|resource| resource.uri)
            .collect();
        assert_eq!(
            uris,
            [
                README_URI,
                SCHEMA_URI,
                "demo://docs/returns-policy",
                "demo://docs/shipping",
                "demo://docs/currency-notes",
                "demo://tables/orders"
            ]
        );
        assert_eq!(templates()[0].uri_template, TABLE_URI_TEMPLATE);
    }

    fn text_of(contents: ResourceContents) -> (Option<String>, String) {
        match contents {
            ResourceContents::TextResourceContents {
                mime_type, text, ..
            } => (mime_type, text),
            other => panic!("expected text, got {other:?}"),
        }
    }

    #[test]
    fn reading_each_kind() {
        let (_directory, database) = sample_database("resources");
        let connection = open_read_only(database.path()).unwrap();

        let (mime, text) = text_of(read(&connection, README_URI).unwrap());
        assert_eq!(mime.as_deref(), Some(MARKDOWN));
        assert!(text.starts_with("# tool-cli demo server"));

        let (mime, text) = text_of(read(&connection, "demo://docs/shipping").unwrap());
        assert_eq!(mime.as_deref(), Some(PLAIN_TEXT));
        assert!(text.starts_with("SHIPPING RATES"));

        let (mime, text) = text_of(read(&connection, SCHEMA_URI).unwrap());
        assert_eq!(mime.as_deref(), Some(PLAIN_TEXT));
        assert!(text.contains("CREATE TABLE orders"));

        let (mime, text) = text_of(read(&connection, "demo://tables/orders").unwrap());
        assert_eq!(mime.as_deref(), Some(JSON));
        let document: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(document["table"], "orders");
        assert_eq!(document["rows"].as_array().unwrap().len(), 100);
        assert_eq!(document["total_rows"], 500);
        assert_eq!(document["truncated"], true);
        assert_eq!(document["rows"][0]["id"], 1);

        let (_, text) = text_of(read(&connection, "demo://tables/products").unwrap());
        let document: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(document["truncated"], false);
    }

    #[test]
    fn unknown_uris_name_the_valid_ones() {
        let (_directory, database) = sample_database("resources-missing");
        let connection = open_read_only(database.path()).unwrap();
        for uri in ["demo://tables/users", "demo://nothing"] {
            let error = read(&connection, uri).unwrap_err();
            assert!(matches!(error, ResourceError::NotFound { .. }), "{error:?}");
            assert_eq!(
                error.to_string(),
                format!(
                    "no resource {uri:?}; valid URIs: demo://docs/readme, demo://docs/schema, \
                     demo://docs/returns-policy, demo://docs/shipping, demo://docs/currency-notes, \
                     demo://tables/customers, demo://tables/orders, demo://tables/products"
                )
            );
        }
    }
}
