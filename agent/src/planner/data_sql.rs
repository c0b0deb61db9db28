//! The SQL of the data rule ([`super::query`]): the discovery query that finds which columns hold
//! the values a task names, reading its answer into filters, the joins over foreign keys, and
//! the final SELECT for a shape. Pure: schema and rows in, SQL text out.

use serde_json::{Map, Value};

use super::query::{Measure, Operation, Shape, country_code, is_text, orders_table, revenue_sql};
use super::sql::{COMPLETED_STATUSES, Table, quote_ident, quote_literal};
use super::words;

/// One query for the values of every low-cardinality text column (at most 30 values) and for
/// any text value equal to one of the task's names: rows `{t, c, v}`.
pub(crate) fn discovery_sql(shape: &Shape, tables: &[Table]) -> Option<String> {
    let mut parts = Vec::new();
    let names: Vec<String> = shape.names.iter().map(|n| quote_literal(n)).collect();
    for table in tables {
        for column in table.columns.iter().filter(|c| is_text(table, c)) {
            let (t, c) = (quote_ident(&table.name), quote_ident(column));
            let named = if names.is_empty() {
                String::new()
            } else {
                let list = names.join(", ");
                let prefix: Vec<String> = shape
                    .names
                    .iter()
                    .map(|n| format!("lower({c}) LIKE {}", quote_literal(&format!("{n} %"))))
                    .collect();
                format!(" OR lower({c}) IN ({list}) OR {}", prefix.join(" OR "))
            };
            parts.push(format!(
                "SELECT {} AS t, {} AS c, {c} AS v FROM {t} GROUP BY {c} \
                 HAVING (SELECT count(DISTINCT {c}) FROM {t}) <= 30{named}",
                quote_literal(&table.name),
                quote_literal(column),
            ));
        }
    }
    (!parts.is_empty()).then(|| parts.join(" UNION ALL "))
}

/// A filter found by discovery: a column and the values the task names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Filter {
    pub(crate) table: String,
    pub(crate) column: String,
    pub(crate) values: Vec<String>,
}

/// The discovered values the task names: whole words or phrases (two- and three-letter codes
/// only in capitals, "US" but not "us"), a country's name for its code, a close spelling for a
/// longer single word ("canceled").
pub(crate) fn filters(task: &str, shape: &Shape, rows: &[Map<String, Value>]) -> Vec<Filter> {
    let lower = format!(" {} ", words::words(task).join(" "));
    let task_words = words::words(task);
    let mut found: Vec<Filter> = Vec::new();
    for row in rows {
        let (Some(table), Some(column), Some(value)) = (
            row.get("t").and_then(Value::as_str),
            row.get("c").and_then(Value::as_str),
            row.get("v").and_then(Value::as_str),
        ) else {
            continue;
        };
        let value_words = words::words(value);
        if value_words.is_empty() {
            continue;
        }
        let phrase = format!(" {} ", value_words.join(" "));
        let short = value.chars().count() <= 3;
        let named = if short {
            task.split(|c: char| !c.is_alphanumeric())
                .any(|w| w == value)
                || task_words.iter().any(|w| country_code(w) == Some(value))
        } else {
            lower.contains(&phrase)
                || shape
                    .names
                    .iter()
                    .any(|n| value.to_lowercase().starts_with(&format!("{n} ")))
                || (value_words.len() == 1
                    && task_words.iter().any(|w| {
                        words::close(w, &value_words[0])
                            || (w.len() > 4 && words::stem(w) == words::stem(&value_words[0]))
                    }))
        };
        if !named {
            continue;
        }
        match found
            .iter_mut()
            .find(|f| f.table == table && f.column == column)
        {
            Some(filter) => filter.values.push(value.to_owned()),
            None => found.push(Filter {
                table: table.to_owned(),
                column: column.to_owned(),
                values: vec![value.to_owned()],
            }),
        }
    }
    found
}

/// `JOIN`s from `from` to `to` over one foreign key, either way.
fn join(tables: &[Table], from: &str, to: &str) -> Option<String> {
    let find = |name: &str| tables.iter().find(|t| t.name == name);
    let (a, b) = (find(from)?, find(to)?);
    if let Some((column, _)) = a
        .foreign_keys
        .iter()
        .find(|(_, r)| r.eq_ignore_ascii_case(&b.name))
    {
        return Some(format!(
            " JOIN {bt} ON {bt}.{} = {at}.{}",
            quote_ident(b.primary_key()),
            quote_ident(column),
            at = quote_ident(&a.name),
            bt = quote_ident(&b.name)
        ));
    }
    let (column, _) = b
        .foreign_keys
        .iter()
        .find(|(_, r)| r.eq_ignore_ascii_case(&a.name))?;
    Some(format!(
        " JOIN {bt} ON {bt}.{} = {at}.{}",
        quote_ident(column),
        quote_ident(a.primary_key()),
        at = quote_ident(&a.name),
        bt = quote_ident(&b.name)
    ))
}

/// The query, and words saying what it counts (for the answer).
pub(crate) fn final_sql(
    shape: &Shape,
    tables: &[Table],
    filters: &[Filter],
) -> Result<(String, Vec<String>), String> {
    let table = tables
        .iter()
        .find(|t| t.name == shape.table)
        .ok_or("the table went missing from the schema")?;
    let t = quote_ident(&table.name);
    let mut joins: Vec<String> = Vec::new();
    let add_join = |joins: &mut Vec<String>, sql: String| {
        if !joins.contains(&sql) {
            joins.push(sql);
        }
    };
    let mut conditions = Vec::new();
    let mut said = Vec::new();
    let mut status_filtered = false;
    for filter in filters {
        if filter.table != table.name {
            add_join(
                &mut joins,
                join(tables, &table.name, &filter.table)
                    .ok_or_else(|| format!("cannot relate {} to {}", table.name, filter.table))?,
            );
        }
        let values: Vec<String> = filter.values.iter().map(|v| quote_literal(v)).collect();
        conditions.push(format!(
            "{}.{} IN ({})",
            quote_ident(&filter.table),
            quote_ident(&filter.column),
            values.join(", ")
        ));
        status_filtered |= filter.column.to_lowercase().contains("status");
        said.push(format!("{} {}", filter.column, filter.values.join(" or ")));
    }
    let measure_sql = match &shape.measure {
        Some(Measure::Column {
            table: owner,
            column,
        }) => {
            if *owner != table.name {
                add_join(
                    &mut joins,
                    join(tables, &table.name, owner)
                        .ok_or("the measure is on an unrelated table")?,
                );
            }
            Some(format!("{}.{}", quote_ident(owner), quote_ident(column)))
        }
        Some(Measure::Revenue) => {
            let (amount, revenue_joins) =
                revenue_sql(tables).ok_or("no table says what an order costs")?;
            let orders = orders_table(tables)
                .map(|o| o.name.clone())
                .unwrap_or_default();
            if orders != table.name {
                add_join(
                    &mut joins,
                    join(tables, &table.name, &orders)
                        .ok_or("the orders do not relate to this table")?,
                );
            }
            // The price's table, unless it is the one asked about.
            if !revenue_joins.is_empty() && !revenue_joins.starts_with(&format!(" JOIN {t} ")) {
                add_join(&mut joins, revenue_joins);
            }
            // Money means completed orders unless the task filters by status itself.
            if !status_filtered
                && let Some(orders_table) = orders_table(tables)
                && let Some(status) = orders_table.find(|c| c.contains("status"))
            {
                let statuses: Vec<String> = COMPLETED_STATUSES
                    .iter()
                    .map(|s| quote_literal(s))
                    .collect();
                conditions.push(format!(
                    "lower({}.{}) IN ({})",
                    quote_ident(&orders_table.name),
                    quote_ident(status),
                    statuses.join(", ")
                ));
                said.push("completed orders only".into());
            }
            Some(format!("({amount})"))
        }
        Some(Measure::CountOf(other)) => {
            add_join(
                &mut joins,
                join(tables, &table.name, other).ok_or("the tables do not relate")?,
            );
            Some(format!(
                "count({}.{})",
                quote_ident(other),
                quote_ident("rowid")
            ))
        }
        None => None,
    };
    for (operator, number) in &shape.comparisons {
        // An aggregate is compared as a whole, in the answer, not row by row.
        if let Some(measure) = &measure_sql
            && !matches!(shape.measure, Some(Measure::CountOf(_)))
            && !matches!(shape.operation, Operation::Aggregate(_))
        {
            conditions.push(format!(
                "{measure} {operator} {}",
                words::plain_number(*number)
            ));
            said.push(format!("{operator} {}", words::plain_number(*number)));
        }
    }
    let from = format!("FROM {t}{}", joins.concat());
    let filter = if conditions.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conditions.join(" AND "))
    };
    let grouped = matches!(shape.measure, Some(Measure::CountOf(_)))
        || (matches!(shape.measure, Some(Measure::Revenue))
            && table.name
                != orders_table(tables)
                    .map(|o| o.name.clone())
                    .unwrap_or_default());
    let key = format!("{t}.{}", quote_ident(table.primary_key()));
    let sql = match &shape.operation {
        Operation::Count => {
            let what = if joins.is_empty() {
                "*".to_owned()
            } else {
                format!("DISTINCT {key}")
            };
            format!("SELECT count({what}) AS count {from}{filter}")
        }
        Operation::CountBy(column, limit) => format!(
            "SELECT {t}.{c} AS {c}, count(*) AS count {from}{filter} GROUP BY 1 ORDER BY 2 DESC{}",
            limit.map(|n| format!(" LIMIT {n}")).unwrap_or_default(),
            c = quote_ident(column)
        ),
        Operation::Aggregate(function) => {
            let measure = measure_sql.ok_or("nothing to add up")?;
            format!("SELECT round({function}({measure}), 2) AS {function} {from}{filter}")
        }
        Operation::Top { descending, limit } => {
            let measure = measure_sql.ok_or("nothing to rank by")?;
            let direction = if *descending { "DESC" } else { "ASC" };
            if grouped {
                let value = if matches!(shape.measure, Some(Measure::Revenue)) {
                    format!("round(sum({measure}), 2)")
                } else {
                    measure
                };
                format!(
                    "SELECT {t}.*, {value} AS value {from}{filter} GROUP BY {key} ORDER BY value {direction} LIMIT {limit}"
                )
            } else {
                format!(
                    "SELECT {t}.*, {measure} AS value {from}{filter} ORDER BY {measure} {direction} LIMIT {limit}"
                )
            }
        }
        Operation::List => format!("SELECT {t}.* {from}{filter} LIMIT 50"),
    };
    Ok((sql, said))
}
