//! What the database looks like: tables, columns, keys and row counts, for `describe_schema` and
//! the schema resource.
//!
//! Agents write better SQL when they can see the columns and how the tables join, so this reads
//! `sqlite_master` and the `pragma_table_info` / `pragma_foreign_key_list` table-valued functions
//! (parameterised, so a table name is never spliced into SQL). It describes whatever database it
//! is given, not only the bundled sample.

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::Serialize;

use crate::query::QueryError;

/// The result of `describe_schema` (its `structuredContent`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct SchemaDescription {
    /// The tables and views, sorted by name.
    pub(crate) tables: Vec<TableDescription>,
}

/// One table or view.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct TableDescription {
    /// The table name, as used in SQL.
    pub(crate) name: String,
    /// "table" or "view".
    pub(crate) kind: String,
    /// How many rows the table holds; null for views, which would have to be evaluated.
    pub(crate) row_count: Option<u64>,
    /// The columns in declaration order.
    pub(crate) columns: Vec<ColumnDescription>,
    /// Columns that reference another table, i.e. how to join.
    pub(crate) foreign_keys: Vec<ForeignKeyDescription>,
    /// The CREATE statement SQLite stored for it.
    pub(crate) sql: String,
}

/// One column of a table or view.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct ColumnDescription {
    /// The column name.
    pub(crate) name: String,
    /// The declared type (INTEGER, TEXT, ...); empty when none was declared.
    pub(crate) declared_type: String,
    /// Whether the column is declared NOT NULL.
    pub(crate) not_null: bool,
    /// Whether the column is part of the primary key.
    pub(crate) primary_key: bool,
    /// The default value as SQL text, or null.
    pub(crate) default_value: Option<String>,
}

/// A column that references a column of another table.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct ForeignKeyDescription {
    /// The referencing column in this table.
    pub(crate) column: String,
    /// The referenced table.
    pub(crate) references_table: String,
    /// The referenced column; null when the key references the other table's primary key.
    pub(crate) references_column: Option<String>,
}

/// Names of the user tables and views, sorted; SQLite's internal `sqlite_*` tables are left out.
pub(crate) fn table_names(connection: &Connection) -> Result<Vec<String>, QueryError> {
    let mut statement = connection.prepare(
        "SELECT name FROM sqlite_master
         WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
         ORDER BY name",
    )?;
    let names = statement
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(names)
}

/// Describes every table, or only `only_table` (which must exist).
pub(crate) fn describe(
    connection: &Connection,
    only_table: Option<&str>,
) -> Result<SchemaDescription, QueryError> {
    let names = table_names(connection)?;
    let selected: Vec<&String> = match only_table {
        None => names.iter().collect(),
        Some(wanted) => {
            let found = names.iter().find(|name| name.as_str() == wanted);
            vec![found.ok_or_else(|| QueryError::UnknownTable {
                name: wanted.to_owned(),
                valid: names.clone(),
            })?]
        }
    };
    let tables = selected
        .into_iter()
        .map(|name| describe_table(connection, name))
        .collect::<Result<_, _>>()?;
    Ok(SchemaDescription { tables })
}

fn describe_table(connection: &Connection, name: &str) -> Result<TableDescription, QueryError> {
    let (kind, sql): (String, String) = connection.query_row(
        "SELECT type, coalesce(sql, '') FROM sqlite_master WHERE name = ?1",
        [name],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    let columns = connection
        .prepare("SELECT name, type, \"notnull\", pk, dflt_value FROM pragma_table_info(?1)")?
        .query_map([name], |row| {
            Ok(ColumnDescription {
                name: row.get(0)?,
                declared_type: row.get(1)?,
                not_null: row.get(2)?,
                primary_key: row.get::<_, i64>(3)? > 0,
                default_value: row.get(4)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let foreign_keys = connection
        // Ordered by the referencing column's position, so keys read in declaration order
        // (SQLite numbers foreign keys in reverse).
        .prepare(
            "SELECT fk.\"from\", fk.\"table\", fk.\"to\"
             FROM pragma_foreign_key_list(?1) AS fk
             JOIN pragma_table_info(?1) AS col ON col.name = fk.\"from\"
             ORDER BY col.cid, fk.seq",
        )?
        .query_map([name], |row| {
            Ok(ForeignKeyDescription {
                column: row.get(0)?,
                references_table: row.get(1)?,
                references_column: row.get(2)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let row_count = if kind == "table" {
        let count: i64 = connection.query_row(
            &format!("SELECT count(*) FROM {}", quote_identifier(name)),
            [],
            |row| row.get(0),
        )?;
        Some(count as u64)
    } else {
        None
    };
    Ok(TableDescription {
        name: name.to_owned(),
        kind,
        row_count,
        columns,
        foreign_keys,
        sql,
    })
}

/// Quotes an identifier for SQL. Callers only pass names read from `sqlite_master`; quoting still
/// keeps names with spaces or quotes working.
pub(crate) fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The schema as plain text: each table's CREATE statement headed by its row count.
pub(crate) fn render_text(description: &SchemaDescription) -> String {
    let mut text = String::new();
    for table in &description.tables {
        let count = table
            .row_count
            .map_or_else(|| "view".to_owned(), |count| format!("{count} rows"));
        text.push_str(&format!("-- {} ({count})\n{};\n\n", table.name, table.sql));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::database::{open_read_only, tests::sample_database};

    #[test]
    fn quoting_doubles_quotes() {
        assert_eq!(quote_identifier("orders"), "\"orders\"");
        assert_eq!(quote_identifier("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn the_sample_schema_is_described() {
        let (_directory, database) = sample_database("schema");
        let connection = open_read_only(database.path()).unwrap();
        let description = describe(&connection, None).unwrap();
        let names: Vec<_> = description.tables.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["customers", "orders", "products"]);
        let orders = &description.tables[1];
        assert_eq!(orders.row_count, Some(500));
        let columns: Vec<_> = orders.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            columns,
            [
                "id",
                "customer_id",
                "product_id",
                "quantity",
                "ordered_at",
                "status"
            ]
        );
        assert!(orders.columns[0].primary_key);
        assert_eq!(orders.columns[1].declared_type, "INTEGER");
        assert!(orders.columns[1].not_null);
        assert_eq!(
            orders.foreign_keys,
            [
                ForeignKeyDescription {
                    column: "customer_id".into(),
                    references_table: "customers".into(),
                    references_column: Some("id".into()),
                },
                ForeignKeyDescription {
                    column: "product_id".into(),
                    references_table: "products".into(),
                    references_column: Some("id".into()),
                },
            ]
        );
        let text = render_text(&description);
        assert!(
            text.contains("-- customers (50 rows)\nCREATE TABLE customers ("),
            "{text}"
        );
    }

    #[test]
    fn one_table_or_a_helpful_error() {
        let (_directory, database) = sample_database("schema-one");
        let connection = open_read_only(database.path()).unwrap();
        let description = describe(&connection, Some("products")).unwrap();
        assert_eq!(description.tables.len(), 1);
        assert_eq!(description.tables[0].row_count, Some(30));
        let error = describe(&connection, Some("users")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown table \"users\"; valid tables: customers, orders, products"
        );
    }
}
