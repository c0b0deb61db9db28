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
    // A table is joined once, whether by JOIN or LEFT JOIN.
    let add_join = |joins: &mut Vec<String>, sql: String| {
        let plain = |join: &str| join.replacen(" LEFT JOIN ", " JOIN ", 1);
        if !joins.iter().any(|j| plain(j) == plain(&sql)) {
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
            // LEFT: a customer with no orders has 0 of them, and may be "fewer than 2".
            let related = join(tables, &table.name, other).ok_or("the tables do not relate")?;
            add_join(&mut joins, related.replacen(" JOIN ", " LEFT JOIN ", 1));
            Some(format!(
                "count({}.{})",
                quote_ident(other),
                quote_ident("rowid")
            ))
        }
        None => None,
    };
    if let Some(relative) = &shape.unplaced_date {
        return Err(format!(
            "the task limits the data to \"{relative}\", a period relative to today, which I do \
             not place (the data's dates need not be today's); name the period instead, e.g. \
             \"in March 2025\" or \"since 2025-01-01\""
        ));
    }
    if let Some(range) = &shape.dates {
        let (owner, column) = date_column(shape, tables).ok_or_else(|| {
            format!(
                "the task limits the data to \"{}\", and neither {} nor a table it relates to \
                 has a date column to limit",
                range.said, table.name
            )
        })?;
        if owner != table.name {
            add_join(
                &mut joins,
                join(tables, &table.name, &owner)
                    .ok_or_else(|| format!("cannot relate {} to {owner}", table.name))?,
            );
        }
        let c = format!("{}.{}", quote_ident(&owner), quote_ident(&column));
        if let Some(from) = &range.from {
            conditions.push(format!("{c} >= {}", quote_literal(from)));
        }
        if let Some(until) = &range.until {
            conditions.push(format!("{c} < {}", quote_literal(until)));
        }
        said.push(format!("{} {}", column, range.said));
    }
    // Per row of the table, the measure adds up many rows of another: revenue per customer,
    // orders per customer, units per product.
    let orders_name = orders_table(tables)
        .map(|o| o.name.clone())
        .unwrap_or_default();
    let grouped = match &shape.measure {
        Some(Measure::CountOf(_)) => true,
        Some(Measure::Revenue) => table.name != orders_name,
        Some(Measure::Column { table: owner, .. }) => {
            *owner != table.name && refers_to(tables, owner, &table.name)
        }
        None => false,
    };
    let value_sql = measure_sql.as_ref().map(|measure| match &shape.measure {
        Some(Measure::Revenue) if grouped => format!("round(sum({measure}), 2)"),
        Some(Measure::Column { .. }) if grouped => format!("sum({measure})"),
        _ => measure.clone(),
    });
    let mut having = Vec::new();
    for (operator, number) in &shape.comparisons {
        let number = words::plain_number(*number);
        match &value_sql {
            // An aggregate is compared as a whole, in the answer, not row by row.
            Some(_) if matches!(shape.operation, Operation::Aggregate(_)) => {}
            // Per row of the table: "customers with more than 5 orders".
            Some(value) if grouped => {
                having.push(format!("{value} {operator} {number}"));
                said.push(format!("{} {operator} {number}", measure_name(shape)));
            }
            Some(value) => {
                conditions.push(format!("{value} {operator} {number}"));
                said.push(format!("{operator} {number}"));
            }
            // Never answered as if the comparison were not there.
            None => {
                return Err(format!(
                    "the task compares something with {number} ({operator}), and I cannot tell \
                     what it compares in {}",
                    table.name
                ));
            }
        }
    }
    let from = format!("FROM {t}{}", joins.concat());
    let filter = if conditions.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conditions.join(" AND "))
    };
    let key = format!("{t}.{}", quote_ident(table.primary_key()));
    let having = if having.is_empty() {
        String::new()
    } else {
        format!(" HAVING {}", having.join(" AND "))
    };
    let sql = match &shape.operation {
        Operation::Count if !having.is_empty() => format!(
            "SELECT count(*) AS count FROM (SELECT {key} {from}{filter} GROUP BY {key}{having})"
        ),
        Operation::Count => {
            let what = if joins.is_empty() {
                "*".to_owned()
            } else {
                format!("DISTINCT {key}")
            };
            format!("SELECT count({what}) AS count {from}{filter}")
        }
        Operation::CountBy(..) if !having.is_empty() => {
            return Err(format!(
                "the task both groups {} by a column and compares each one's {}, which I \
                 cannot put in one query",
                table.name,
                measure_name(shape)
            ));
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
            let value = value_sql.ok_or("nothing to rank by")?;
            let direction = if *descending { "DESC" } else { "ASC" };
            if grouped {
                format!(
                    "SELECT {t}.*, {value} AS value {from}{filter} GROUP BY {key}{having} ORDER BY value {direction} LIMIT {limit}"
                )
            } else {
                format!(
                    "SELECT {t}.*, {value} AS value {from}{filter} ORDER BY {value} {direction} LIMIT {limit}"
                )
            }
        }
        Operation::List if grouped && !having.is_empty() => {
            let value = value_sql.ok_or("nothing to compare")?;
            format!(
                "SELECT {t}.*, {value} AS value {from}{filter} GROUP BY {key}{having} ORDER BY value DESC LIMIT 50"
            )
        }
        Operation::List => format!("SELECT {t}.* {from}{filter} LIMIT 50"),
    };
    Ok((sql, said))
}

/// Whether `from` has a foreign key to `to`: each row of `to` has many of `from`.
fn refers_to(tables: &[Table], from: &str, to: &str) -> bool {
    tables.iter().find(|t| t.name == from).is_some_and(|t| {
        t.foreign_keys
            .iter()
            .any(|(_, r)| r.eq_ignore_ascii_case(to))
    })
}

/// The measure in words, for what a comparison compares.
fn measure_name(shape: &Shape) -> String {
    match &shape.measure {
        Some(Measure::CountOf(other)) => format!("number of {other}"),
        Some(Measure::Revenue) => "revenue".into(),
        Some(Measure::Column { column, .. }) => column.clone(),
        None => "value".into(),
    }
}

/// The date column a period limits: that of the rows the measure counts or adds up (orders
/// for revenue, the counted table), else the table's own.
fn date_column(shape: &Shape, tables: &[Table]) -> Option<(String, String)> {
    let own = |name: &str| {
        let table = tables.iter().find(|t| t.name == name)?;
        let dates: Vec<&String> = table
            .columns
            .iter()
            .filter(|c| {
                let lower = c.to_lowercase();
                (lower.ends_with("_at")
                    || lower.contains("date")
                    || table.type_of(c).contains("DATE"))
                    && !lower.contains("update")
            })
            .collect();
        dates.first().map(|c| (table.name.clone(), (*c).clone()))
    };
    let measured = match &shape.measure {
        Some(Measure::Revenue) => orders_table(tables).map(|o| o.name.clone()),
        Some(Measure::CountOf(other)) => Some(other.clone()),
        Some(Measure::Column { table, .. }) => Some(table.clone()),
        None => None,
    };
    measured
        .and_then(|name| own(&name))
        .or_else(|| own(&shape.table))
}
