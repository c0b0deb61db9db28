//! A plan written as one SQLite SELECT. The subject's rows are joined to the tables they
//! reference (many-to-one, so no row is counted twice); a figure per subject row from the rows
//! that reference it (orders per customer) is a grouped subquery joined with `LEFT JOIN`, so a
//! customer with no orders has 0 of them; grouped figures are joined to every value of the
//! grouping column, so an empty group is listed with 0; rankings use `RANK()`, so ties are all
//! kept. Values come from the data and are written as SQL literals (quotes doubled), never
//! spliced. Pure.

use super::super::sql::{quote_ident, quote_literal};
use super::super::words::plain_number;
use super::plan::{Condition, Grouping, Measure, Plan, Related, Shape, Test};
use super::reading::{Agg, Op, Part};
use super::schema::{Concept, Schema};

/// A column of the query's result, and what it is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Selected {
    pub(crate) alias: String,
    /// The table and column it shows, when it is one.
    pub(crate) source: Option<(usize, usize)>,
}

/// The query and its result's columns.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Query {
    pub(crate) sql: String,
    pub(crate) selected: Vec<Selected>,
}

fn column_sql(schema: &Schema, table: usize, column: usize) -> String {
    format!(
        "{}.{}",
        quote_ident(&schema.entities[table].name),
        quote_ident(&schema.entities[table].columns[column].name)
    )
}

fn key_sql(schema: &Schema, table: usize) -> String {
    format!(
        "{}.{}",
        quote_ident(&schema.entities[table].name),
        quote_ident(&schema.entities[table].key)
    )
}

/// The FROM clause of `root` joined to `needed` tables over references.
fn from_clause(schema: &Schema, root: usize, needed: &[usize]) -> Result<String, String> {
    let mut joined = vec![root];
    let mut sql = format!("FROM {}", quote_ident(&schema.entities[root].name));
    for table in needed {
        if joined.contains(table) {
            continue;
        }
        let path = schema.path(root, *table).ok_or_else(|| {
            format!(
                "{} does not reach {}",
                schema.entities[root].name, schema.entities[*table].name
            )
        })?;
        for (from, column) in path {
            let referenced = schema.entities[from].columns[column]
                .references
                .unwrap_or(from);
            if joined.contains(&referenced) {
                continue;
            }
            sql.push_str(&format!(
                " JOIN {} ON {} = {}",
                quote_ident(&schema.entities[referenced].name),
                key_sql(schema, referenced),
                column_sql(schema, from, column)
            ));
            joined.push(referenced);
        }
    }
    Ok(sql)
}

/// A cents column is divided by 100.
fn money_column(schema: &Schema, table: usize, column: usize) -> String {
    let sql = column_sql(schema, table, column);
    if schema.entities[table].columns[column]
        .name
        .to_lowercase()
        .contains("cent")
    {
        format!("({sql} / 100.0)")
    } else {
        sql
    }
}

/// The expression of a measure, and the tables it reads.
fn measure_sql(
    schema: &Schema,
    measure: Measure,
    root: usize,
) -> Result<(String, Vec<usize>), String> {
    match measure {
        Measure::Rows => Ok(("1".into(), Vec::new())),
        Measure::Column(t, c) => Ok((column_sql(schema, t, c), vec![t])),
        Measure::Money => {
            let money = schema
                .money_of_fact()
                .ok_or("no table says what an order costs")?;
            let price = money_column(schema, money.price.0, money.price.1);
            let mut tables = vec![money.price.0];
            let expr = match money.quantity {
                Some((t, c)) => {
                    tables.push(t);
                    format!("({price} * {})", column_sql(schema, t, c))
                }
                None => price,
            };
            let _ = root;
            Ok((expr, tables))
        }
        Measure::StockValue => {
            let entity = schema
                .entities
                .iter()
                .position(|e| {
                    e.column(Concept::Stock).is_some() && e.column(Concept::Price).is_some()
                })
                .ok_or("no table has both a price and a stock")?;
            let e = &schema.entities[entity];
            let price = money_column(schema, entity, e.column(Concept::Price).unwrap_or(0));
            let stock = column_sql(schema, entity, e.column(Concept::Stock).unwrap_or(0));
            Ok((format!("({price} * {stock})"), vec![entity]))
        }
    }
}

fn condition_sql(schema: &Schema, condition: &Condition) -> String {
    let column = column_sql(schema, condition.table, condition.column);
    let concept = schema.entities[condition.table].columns[condition.column].concept;
    let literal = |value: &str| {
        if concept == Concept::Key && value.parse::<i64>().is_ok() {
            value.to_owned()
        } else {
            quote_literal(value)
        }
    };
    match &condition.test {
        Test::In(values) => format!(
            "{column} IN ({})",
            values
                .iter()
                .map(|v| literal(v))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Test::NotIn(values) => format!(
            "({column} IS NULL OR {column} NOT IN ({}))",
            values
                .iter()
                .map(|v| literal(v))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Test::Compare(op, value) => format!("{column} {} {}", op.sql(), plain_number(*value)),
        Test::Between(low, high) => format!(
            "{column} BETWEEN {} AND {}",
            plain_number(*low),
            plain_number(*high)
        ),
        Test::Range(from, until) => {
            let mut parts = Vec::new();
            if let Some(from) = from {
                parts.push(format!("{column} >= {}", quote_literal(from)));
            }
            if let Some(until) = until {
                parts.push(format!("{column} < {}", quote_literal(until)));
            }
            if parts.is_empty() {
                "1 = 1".into()
            } else {
                parts.join(" AND ")
            }
        }
    }
}

fn where_clause(schema: &Schema, conditions: &[Condition], extra: &[String]) -> String {
    let mut parts: Vec<String> = conditions
        .iter()
        .map(|c| condition_sql(schema, c))
        .collect();
    parts.extend(extra.iter().cloned());
    if parts.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", parts.join(" AND "))
    }
}

/// The related figure per subject row, as a subquery joined to the subject.
fn related_join(schema: &Schema, subject: usize, related: &Related) -> Result<String, String> {
    let path = schema
        .path(related.facts, subject)
        .ok_or("the facts do not reach the subject")?;
    let (last_table, last_column) = *path.last().ok_or("the facts are the subject")?;
    let key = column_sql(schema, last_table, last_column);
    let (expr, mut tables) = measure_sql(schema, related.measure, related.facts)?;
    tables.extend(related.conditions.iter().map(|c| c.table));
    for (table, _) in &path {
        if *table != related.facts {
            tables.push(*table);
        }
    }
    let from = from_clause(schema, related.facts, &tables)?;
    let value = match related.measure {
        Measure::Rows => "count(*)".to_owned(),
        _ => format!("sum({expr})"),
    };
    Ok(format!(
        " LEFT JOIN (SELECT {key} AS k, {value} AS value {from}{} GROUP BY 1) AS related ON related.k = {}",
        where_clause(schema, &related.conditions, &[]),
        key_sql(schema, subject)
    ))
}

fn having_sql(having: &[(Op, f64)], value: &str) -> Vec<String> {
    having
        .iter()
        .map(|(op, n)| format!("{value} {} {}", op.sql(), plain_number(*n)))
        .collect()
}

fn aggregate(agg: Agg, expr: &str) -> String {
    match agg {
        Agg::Sum => format!("sum({expr})"),
        Agg::Avg => format!("avg({expr})"),
        Agg::Min => format!("min({expr})"),
        Agg::Max => format!("max({expr})"),
        Agg::Median => format!("avg({expr})"),
    }
}

/// The label of a group: the column, or the date's part.
fn group_label(schema: &Schema, grouping: Grouping) -> (String, usize) {
    match grouping {
        Grouping::Column(t, c) => (column_sql(schema, t, c), t),
        Grouping::Part(part, t, c) => {
            let column = column_sql(schema, t, c);
            let label = match part {
                Part::Day => format!("strftime('%Y-%m-%d', {column})"),
                Part::Week => format!("strftime('%Y-W%W', {column})"),
                Part::Month => format!("strftime('%Y-%m', {column})"),
                Part::Year => format!("strftime('%Y', {column})"),
                Part::Quarter => format!(
                    "strftime('%Y', {column}) || '-Q' || ((CAST(strftime('%m', {column}) AS INTEGER) + 2) / 3)"
                ),
                Part::Weekday => format!(
                    "CASE strftime('%w', {column}) WHEN '0' THEN 'Sunday' WHEN '1' THEN 'Monday' \
                     WHEN '2' THEN 'Tuesday' WHEN '3' THEN 'Wednesday' WHEN '4' THEN 'Thursday' \
                     WHEN '5' THEN 'Friday' ELSE 'Saturday' END"
                ),
            };
            (label, t)
        }
    }
}

/// The plan as SQL.
pub(crate) fn render(schema: &Schema, plan: &Plan) -> Result<Query, String> {
    let subject = plan.subject;
    let entity = &schema.entities[subject];
    let (measure_expr, measure_tables) = measure_sql(schema, plan.measure, subject)?;
    let mut needed: Vec<usize> = plan.conditions.iter().map(|c| c.table).collect();
    needed.extend(plan.share.iter().map(|c| c.table));
    needed.extend(measure_tables.iter().copied());
    needed.extend(plan.show.iter().map(|(t, _)| *t));
    if let Some(Grouping::Column(t, _) | Grouping::Part(_, t, _)) = plan.group {
        needed.push(t);
    }
    let from = from_clause(schema, subject, &needed)?;
    let related = match &plan.related {
        Some(related) => related_join(schema, subject, related)?,
        None => String::new(),
    };
    let related_value = "coalesce(related.value, 0)";
    let value_expr = if plan.related.is_some() {
        related_value.to_owned()
    } else {
        measure_expr.clone()
    };
    let mut extra = Vec::new();
    if plan.related.is_some() {
        extra.extend(having_sql(&plan.having, related_value));
    }
    let filter = where_clause(schema, &plan.conditions, &extra);
    // The row's own columns for lists and rankings: its label (or key), then the columns
    // asked for.
    let mut selected: Vec<Selected> = Vec::new();
    let mut select: Vec<String> = Vec::new();
    let label = entity.label.unwrap_or_else(|| {
        entity
            .columns
            .iter()
            .position(|c| c.name == entity.key)
            .unwrap_or(0)
    });
    let mut row_columns = vec![(subject, label)];
    if entity.label.is_some()
        && let Some(key) = entity.columns.iter().position(|c| c.name == entity.key)
        && schema.facts() == Some(subject)
    {
        row_columns.insert(0, (subject, key));
    }
    for shown in &plan.show {
        if !row_columns.contains(shown) {
            row_columns.push(*shown);
        }
    }
    for (index, (t, c)) in row_columns.iter().enumerate() {
        select.push(format!("{} AS c{index}", column_sql(schema, *t, *c)));
        selected.push(Selected {
            alias: format!("c{index}"),
            source: Some((*t, *c)),
        });
    }
    let sql = match &plan.shape {
        Shape::Count => format!("SELECT count(*) AS count {from}{related}{filter}"),
        Shape::Figure(agg) => {
            if *agg == Agg::Median {
                format!(
                    "WITH v AS (SELECT {value_expr} AS x {from}{related}{filter}) SELECT round(avg(x), 2) AS value, \
                     (SELECT count(*) FROM v) AS n FROM (SELECT x FROM v WHERE x IS NOT NULL ORDER BY x LIMIT 2 - \
                     (SELECT count(*) FROM v WHERE x IS NOT NULL) % 2 OFFSET ((SELECT count(*) FROM v WHERE x IS NOT NULL) - 1) / 2)"
                )
            } else if let Some(basis) = &plan.basis_condition
                && plan.related.is_none()
                && plan.conditions.contains(basis)
            {
                let others: Vec<Condition> = plan
                    .conditions
                    .iter()
                    .filter(|c| *c != basis)
                    .cloned()
                    .collect();
                let basis_sql = condition_sql(schema, basis);
                format!(
                    "SELECT round({} FILTER (WHERE {basis_sql}), 2) AS value, count(*) FILTER (WHERE {basis_sql}) AS n, \
                     round({}, 2) AS every_status, count(*) AS every_n {from}{related}{}",
                    aggregate(*agg, &value_expr),
                    aggregate(*agg, &value_expr),
                    where_clause(schema, &others, &extra)
                )
            } else {
                format!(
                    "SELECT round({}, 2) AS value, count(*) AS n {from}{related}{filter}",
                    aggregate(*agg, &value_expr)
                )
            }
        }
        Shape::Rows => {
            // A related figure is shown, unless it only says "has some" or "has none".
            let exists_only = plan.having.iter().all(|(op, n)| *op == Op::Gt && *n == 0.0)
                || plan.having.iter().all(|(op, n)| *op == Op::Eq && *n == 0.0);
            let shows_figure = plan
                .related
                .as_ref()
                .is_some_and(|r| r.measure != Measure::Rows || !exists_only);
            let order = if shows_figure {
                select.push(format!("{related_value} AS value"));
                selected.push(Selected {
                    alias: "value".into(),
                    source: None,
                });
                " ORDER BY value DESC".to_owned()
            } else {
                String::new()
            };
            format!(
                "SELECT {}, count(*) OVER () AS total_rows {from}{related}{filter}{order} LIMIT 100",
                select.join(", ")
            )
        }
        Shape::Top {
            descending,
            limit,
            only,
        } => {
            let direction = if *descending { "DESC" } else { "ASC" };
            let mut extra_not_null = extra.clone();
            if plan.related.is_none() {
                extra_not_null.push(format!("{value_expr} IS NOT NULL"));
            }
            let filter = where_clause(schema, &plan.conditions, &extra_not_null);
            select.push(format!("{value_expr} AS value"));
            selected.push(Selected {
                alias: "value".into(),
                source: None,
            });
            // One place ("the second highest") counts distinct values; the first N keep ties.
            let (rank, kept) = if *only {
                ("DENSE_RANK()", format!("position = {limit}"))
            } else {
                ("RANK()", format!("position <= {limit}"))
            };
            format!(
                "SELECT * FROM (SELECT {}, {rank} OVER (ORDER BY {value_expr} {direction}) AS position, \
                 count(*) OVER () AS total_rows {from}{related}{filter}) WHERE {kept} ORDER BY position LIMIT 100",
                select.join(", ")
            )
        }
        Shape::Groups { agg, top } => {
            let grouping = plan.group.ok_or("a grouped plan without a grouping")?;
            let (label, _) = group_label(schema, grouping);
            let figure = match plan.measure {
                Measure::Rows => "count(*)".to_owned(),
                _ => aggregate(*agg, &measure_expr),
            };
            let figures =
                format!("SELECT {label} AS label, {figure} AS value {from}{filter} GROUP BY 1");
            let empty = if matches!(plan.measure, Measure::Rows) || *agg == Agg::Sum {
                "0"
            } else {
                "NULL"
            };
            // Every value of a grouping column, so an empty group shows 0.
            let with_domain = match grouping {
                Grouping::Column(t, c) => {
                    let own: Vec<Condition> = plan
                        .conditions
                        .iter()
                        .filter(|x| x.table == t && x.column == c)
                        .cloned()
                        .collect();
                    let domain = format!(
                        "SELECT DISTINCT {label} AS label FROM {}{}",
                        quote_ident(&schema.entities[t].name),
                        where_clause(schema, &own, &[format!("{label} IS NOT NULL")])
                    );
                    format!(
                        "SELECT domain.label AS label, coalesce(figures.value, {empty}) AS value FROM ({domain}) AS domain \
                         LEFT JOIN ({figures}) AS figures ON figures.label = domain.label"
                    )
                }
                Grouping::Part(..) => figures,
            };
            let having = having_sql(&plan.having, "value");
            let having = if having.is_empty() {
                String::new()
            } else {
                format!(" WHERE {}", having.join(" AND "))
            };
            let ordered = match grouping {
                Grouping::Part(..) => "label",
                Grouping::Column(..) => "value DESC, label",
            };
            match top {
                Some((descending, limit)) => {
                    let direction = if *descending { "DESC" } else { "ASC" };
                    format!(
                        "SELECT * FROM (SELECT label, value, RANK() OVER (ORDER BY value {direction}) AS position \
                         FROM ({with_domain}){having}) WHERE position <= {limit} AND value IS NOT NULL ORDER BY position, label"
                    )
                }
                None => {
                    format!("SELECT label, value FROM ({with_domain}){having} ORDER BY {ordered}")
                }
            }
        }
        Shape::Values(t, c) => {
            let column = column_sql(schema, *t, *c);
            format!(
                "SELECT {column} AS label, count(*) AS value FROM {} WHERE {column} IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1",
                quote_ident(&schema.entities[*t].name)
            )
        }
        Shape::Share => {
            let expr = match plan.measure {
                Measure::Rows => "1".to_owned(),
                _ => measure_expr.clone(),
            };
            let mut numerator: Vec<String> = plan
                .share
                .iter()
                .map(|c| condition_sql(schema, c))
                .collect();
            if plan.related.is_some() {
                numerator.extend(having_sql(&plan.share_having, related_value));
            }
            let numerator = if numerator.is_empty() {
                "1 = 1".to_owned()
            } else {
                numerator.join(" AND ")
            };
            format!(
                "SELECT round(100.0 * sum(CASE WHEN {numerator} THEN {expr} ELSE 0 END) / sum({expr}), 2) AS percent, \
                 round(sum(CASE WHEN {numerator} THEN {expr} ELSE 0 END), 2) AS part, round(sum({expr}), 2) AS whole \
                 {from}{related}{filter}"
            )
        }
    };
    Ok(Query { sql, selected })
}
