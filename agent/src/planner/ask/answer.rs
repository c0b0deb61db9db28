//! The answer of a data question: the query's rows in words, saying what was counted and on
//! what basis ("completed orders only", "orders of every status"), what was assumed (a misspelt
//! name read as the closest one), ties, empty results ("0 customers: no customer in the data has
//! country ES"), and the figures in `keyFacts` with the SQL that produced them. Money is written
//! with two decimals and no thousands separator (`$54286.50`), so it reads as the number it is.
//! Pure.

use serde_json::{Map, Value, json};

use super::super::countries;
use super::super::words::plain_number;
use super::plan::{Condition, Grouping, Measure, Plan, Shape, Test};
use super::reading::{Agg, Part};
use super::render::Query;
use super::schema::{Concept, Schema};

/// The answer and its key facts.
pub(crate) fn facts(
    schema: &Schema,
    plan: &Plan,
    query: &Query,
    rows: &[Map<String, Value>],
) -> (String, Map<String, Value>) {
    let writer = Writer { schema, plan };
    let mut key_facts = Map::new();
    key_facts.insert("table".into(), json!(schema.entities[plan.subject].name));
    key_facts.insert("sql".into(), json!(query.sql));
    if !plan.basis.is_empty() {
        key_facts.insert("basis".into(), json!(plan.basis));
    }
    if !plan.assumptions.is_empty() {
        key_facts.insert("assumptions".into(), json!(plan.assumptions));
    }
    let mut answer = writer.body(query, rows, &mut key_facts);
    if !plan.absent.is_empty() {
        answer = format!(
            "{} ({}).",
            answer.trim_end_matches('.'),
            plan.absent.join("; ")
        );
    }
    if !plan.assumptions.is_empty() {
        answer.push_str(&format!(" Assumed: {}.", plan.assumptions.join("; ")));
    }
    (answer, key_facts)
}

struct Writer<'a> {
    schema: &'a Schema,
    plan: &'a Plan,
}

/// A cell as text.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), plain_number),
        Value::Null => "none".into(),
        other => other.to_string(),
    }
}

fn money(value: &Value) -> String {
    match value.as_f64() {
        Some(n) => format!("${n:.2}"),
        None => text(value),
    }
}

impl Writer<'_> {
    fn entity(&self, table: usize, plural: bool) -> String {
        let entity = &self.schema.entities[table];
        let words = if plural {
            &entity.plural
        } else {
            &entity.singular
        };
        words
            .first()
            .cloned()
            .unwrap_or_else(|| entity.name.clone())
    }

    fn column(&self, table: usize, column: usize) -> &str {
        &self.schema.entities[table].columns[column].name
    }

    fn concept(&self, table: usize, column: usize) -> Concept {
        self.schema.entities[table].columns[column].concept
    }

    /// Whether the plan's figure is money.
    fn money_measure(&self) -> bool {
        match self
            .plan
            .related
            .as_ref()
            .map_or(self.plan.measure, |r| r.measure)
        {
            Measure::Money | Measure::StockValue => true,
            Measure::Column(t, c) => self.concept(t, c).is_money(),
            Measure::Rows => false,
        }
    }

    fn figure(&self, value: &Value) -> String {
        if self.money_measure() && !value.is_null() {
            money(value)
        } else {
            match value.as_f64() {
                Some(n) => plain_number((n * 100.0).round() / 100.0),
                None => text(value),
            }
        }
    }

    /// What the measure is, in words.
    fn measure_words(&self) -> String {
        let measure = self
            .plan
            .related
            .as_ref()
            .map_or(self.plan.measure, |r| r.measure);
        match measure {
            Measure::Rows => match &self.plan.related {
                Some(related) => format!("number of {}", self.entity(related.facts, true)),
                None => format!("number of {}", self.entity(self.plan.subject, true)),
            },
            Measure::Money => "revenue (price × quantity)".into(),
            Measure::StockValue => "stock value (price × stock)".into(),
            Measure::Column(t, c) => {
                let name = self.column(t, c).to_owned();
                if self.concept(t, c) == Concept::Quantity && self.plan.related.is_some() {
                    format!("units ({name})")
                } else {
                    name
                }
            }
        }
    }

    /// A condition in words: "country DE (Germany)", "price_usd less than 20".
    fn condition(&self, condition: &Condition) -> String {
        let name = self.column(condition.table, condition.column);
        let concept = self.concept(condition.table, condition.column);
        let value = |v: &str| match (concept, countries::name_of(v)) {
            (Concept::Place, Some(country)) if v.len() == 2 => format!("{v} ({country})"),
            _ => v.to_owned(),
        };
        let amount = |n: f64| {
            if concept.is_money() {
                format!("${n:.2}")
            } else {
                plain_number(n)
            }
        };
        match &condition.test {
            Test::In(values) if concept == Concept::Key => {
                format!(
                    "{} {}",
                    self.entity(condition.table, false),
                    values.join(" or ")
                )
            }
            Test::In(values) => format!(
                "{name} {}",
                values
                    .iter()
                    .map(|v| value(v))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
            Test::NotIn(values) => format!(
                "{name} not {}",
                values
                    .iter()
                    .map(|v| value(v))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
            Test::Compare(op, n) => format!("{name} {} {}", op.words(), amount(*n)),
            Test::Between(low, high) => {
                format!("{name} from {} to {}", amount(*low), amount(*high))
            }
            Test::Range(from, until) => {
                let day = |d: &String| d.trim_end_matches('~').to_owned();
                match (from, until) {
                    (Some(from), Some(until)) => {
                        format!(
                            "{name} from {} up to (not including) {}",
                            day(from),
                            day(until)
                        )
                    }
                    (Some(from), None) => format!("{name} from {} on", day(from)),
                    (None, Some(until)) => format!("{name} before {}", day(until)),
                    (None, None) => String::new(),
                }
            }
        }
    }

    /// The conditions (without the basis) in words, in brackets.
    fn conditions(&self, conditions: &[Condition]) -> String {
        let said: Vec<String> = conditions
            .iter()
            .filter(|c| self.plan.basis_condition.as_ref() != Some(*c))
            .map(|c| self.condition(c))
            .chain(
                self.plan
                    .related
                    .iter()
                    .flat_map(|r| &r.conditions)
                    .filter(|c| self.plan.basis_condition.as_ref() != Some(*c))
                    .map(|c| {
                        format!(
                            "with {} having {}",
                            self.entity(self.plan.related.as_ref().map_or(0, |r| r.facts), true),
                            self.condition(c)
                        )
                    }),
            )
            .chain(
                self.plan
                    .having
                    .iter()
                    .filter(|_| self.plan.related.is_some())
                    .map(|(op, n)| {
                        format!(
                            "{} {} {}",
                            self.measure_words(),
                            op.words(),
                            if self.money_measure() {
                                format!("${n:.2}")
                            } else {
                                plain_number(*n)
                            }
                        )
                    }),
            )
            .chain(self.plan.basis.iter().cloned())
            .filter(|s| !s.is_empty())
            .collect();
        if said.is_empty() {
            String::new()
        } else {
            format!(" ({})", said.join("; "))
        }
    }

    fn cell(&self, query: &Query, row: &Map<String, Value>, alias: &str) -> String {
        let value = row.get(alias).cloned().unwrap_or(Value::Null);
        let source = query
            .selected
            .iter()
            .find(|s| s.alias == alias)
            .and_then(|s| s.source);
        match source {
            Some((t, c)) if self.concept(t, c).is_money() => money(&value),
            Some((t, c)) if self.concept(t, c) == Concept::Place => {
                let code = text(&value);
                match countries::name_of(&code) {
                    Some(name) if code.len() == 2 => format!("{code} ({name})"),
                    _ => code,
                }
            }
            None if alias == "value" => self.figure(&value),
            _ => text(&value),
        }
    }

    /// One row in words: its label first, then the other columns by name.
    fn row(&self, query: &Query, row: &Map<String, Value>) -> String {
        let mut parts = Vec::new();
        let mut label = String::new();
        for (index, selected) in query.selected.iter().enumerate() {
            let cell = self.cell(query, row, &selected.alias);
            match selected.source {
                Some((t, c)) if index == 0 && self.concept(t, c) == Concept::Key => {
                    label = format!("{} {cell}", self.entity(t, false));
                }
                Some((t, c))
                    if label.is_empty() || (index == 1 && self.concept(t, c) == Concept::Label) =>
                {
                    if label.is_empty() {
                        label = cell;
                    } else {
                        label = format!("{label} {cell}");
                    }
                }
                Some((t, c)) => parts.push(format!("{} {cell}", self.column(t, c))),
                None => parts.push(format!("{} {cell}", self.measure_words())),
            }
        }
        if parts.is_empty() {
            label
        } else {
            format!("{label} ({})", parts.join(", "))
        }
    }

    fn body(
        &self,
        query: &Query,
        rows: &[Map<String, Value>],
        key_facts: &mut Map<String, Value>,
    ) -> String {
        let plan = self.plan;
        let first = |key: &str| {
            rows.first()
                .and_then(|r| r.get(key))
                .cloned()
                .unwrap_or(Value::Null)
        };
        let subject = plan.subject;
        let conditions = self.conditions(&plan.conditions);
        match &plan.shape {
            Shape::Count => {
                let count = first("count");
                key_facts.insert("count".into(), count.clone());
                let n = count.as_u64().unwrap_or(0);
                if n == 1 {
                    format!("There is 1 {}{conditions}.", self.entity(subject, false))
                } else {
                    format!("There are {n} {}{conditions}.", self.entity(subject, true))
                }
            }
            Shape::Figure(agg) => {
                let value = first("value");
                key_facts.insert("value".into(), value.clone());
                let n = first("n");
                key_facts.insert("rows".into(), n.clone());
                let what = match agg {
                    Agg::Sum => "total",
                    Agg::Avg => "average",
                    Agg::Median => "median",
                    Agg::Min => "lowest",
                    Agg::Max => "highest",
                };
                let counted = match &plan.related {
                    Some(_) => self.entity(subject, true),
                    None => self.entity(subject, true),
                };
                let mut answer = if value.is_null() {
                    if *agg == Agg::Sum {
                        format!(
                            "The {what} {} is {} (no {counted} match){conditions}.",
                            self.measure_words(),
                            self.figure(&json!(0))
                        )
                    } else {
                        format!(
                            "There is no {what} {}: no {counted} match{conditions}.",
                            self.measure_words()
                        )
                    }
                } else {
                    format!(
                        "The {what} {} is {}{conditions}, over {} {counted}.",
                        self.measure_words(),
                        self.figure(&value),
                        text(&n)
                    )
                };
                let every = first("every_status");
                if !every.is_null() {
                    key_facts.insert("every_status".into(), every.clone());
                    answer.push_str(&format!(
                        " Counting {} of every status it is {} (over {} {counted}).",
                        self.entity(subject, true),
                        self.figure(&every),
                        text(&first("every_n"))
                    ));
                }
                answer
            }
            Shape::Rows => {
                let total = first("total_rows").as_u64().unwrap_or(rows.len() as u64);
                key_facts.insert("row_count".into(), json!(total));
                key_facts.insert(
                    "rows".into(),
                    json!(rows.iter().take(20).collect::<Vec<_>>()),
                );
                if rows.is_empty() {
                    return format!(
                        "There are 0 {}{conditions}: none match.",
                        self.entity(subject, true)
                    );
                }
                let listed: Vec<String> = rows.iter().map(|r| self.row(query, r)).collect();
                if rows.len() == 1 && !plan.show.is_empty() {
                    return format!("{}{conditions}.", listed[0]);
                }
                let more = if total as usize > rows.len() {
                    format!(" (the first {} of {total})", rows.len())
                } else {
                    String::new()
                };
                format!(
                    "{total} {}{conditions}{more}: {}.",
                    if total == 1 {
                        self.entity(subject, false)
                    } else {
                        self.entity(subject, true)
                    },
                    listed.join("; ")
                )
            }
            Shape::Top {
                descending,
                limit,
                only,
            } => {
                key_facts.insert(
                    "rows".into(),
                    json!(rows.iter().take(20).collect::<Vec<_>>()),
                );
                if rows.is_empty() {
                    return format!("No {} match{conditions}.", self.entity(subject, true));
                }
                let direction = if *descending { "highest" } else { "lowest" };
                let what = self.measure_words();
                let listed: Vec<String> = rows
                    .iter()
                    .map(|r| {
                        let position = r.get("position").and_then(Value::as_u64).unwrap_or(1);
                        format!("{position}. {}", self.row(query, r))
                    })
                    .collect();
                let tied = rows.len() > *limit;
                if *only {
                    let place = match limit {
                        2 => "2nd".to_owned(),
                        3 => "3rd".to_owned(),
                        n => format!("{n}th"),
                    };
                    return format!(
                        "The {} with the {place} {direction} {what}{conditions}{}: {}.",
                        self.entity(subject, false),
                        if rows.len() > 1 { " (a tie)" } else { "" },
                        rows.iter()
                            .map(|r| self.row(query, r))
                            .collect::<Vec<_>>()
                            .join("; ")
                    );
                }
                if *limit == 1 && rows.len() == 1 {
                    format!(
                        "The {} with the {direction} {what}{conditions} is {}.",
                        self.entity(subject, false),
                        self.row(query, &rows[0])
                    )
                } else if *limit == 1 {
                    format!(
                        "{} {} tie for the {direction} {what}{conditions}: {}.",
                        rows.len(),
                        self.entity(subject, true),
                        rows.iter()
                            .map(|r| self.row(query, r))
                            .collect::<Vec<_>>()
                            .join("; ")
                    )
                } else {
                    format!(
                        "The {limit} {} with the {direction} {what}{conditions}{}: {}.",
                        self.entity(subject, true),
                        if tied {
                            format!(
                                " ({} listed: ties at the last place are all kept)",
                                rows.len()
                            )
                        } else {
                            String::new()
                        },
                        listed.join("; ")
                    )
                }
            }
            Shape::Groups { agg, top } => {
                let group = match plan.group {
                    Some(Grouping::Column(t, c)) => self.column(t, c).to_owned(),
                    Some(Grouping::Part(part, _, _)) => match part {
                        Part::Day => "day".into(),
                        Part::Week => "week".into(),
                        Part::Month => "month".into(),
                        Part::Quarter => "quarter".into(),
                        Part::Year => "year".into(),
                        Part::Weekday => "weekday".into(),
                    },
                    None => "group".into(),
                };
                let figure = match (plan.measure, agg) {
                    (Measure::Rows, _) => format!("number of {}", self.entity(subject, true)),
                    (_, Agg::Sum) => format!("total {}", self.measure_words()),
                    (_, Agg::Avg) => format!("average {}", self.measure_words()),
                    (_, Agg::Median) => format!("median {}", self.measure_words()),
                    (_, Agg::Min) => format!("lowest {}", self.measure_words()),
                    (_, Agg::Max) => format!("highest {}", self.measure_words()),
                };
                let place = matches!(plan.group, Some(Grouping::Column(t, c)) if self.concept(t, c) == Concept::Place);
                let label = |r: &Map<String, Value>| {
                    let label = text(r.get("label").unwrap_or(&Value::Null));
                    match countries::name_of(&label) {
                        Some(name) if place && label.len() == 2 => format!("{label} ({name})"),
                        _ => label,
                    }
                };
                let entry = |r: &Map<String, Value>| {
                    format!(
                        "{} {}",
                        label(r),
                        self.figure(r.get("value").unwrap_or(&Value::Null))
                    )
                };
                key_facts.insert(
                    "groups".into(),
                    json!(rows.iter().take(50).collect::<Vec<_>>()),
                );
                if rows.is_empty() {
                    return format!("No {} match{conditions}.", self.entity(subject, true));
                }
                match top {
                    Some((descending, limit)) => {
                        let direction = if *descending { "highest" } else { "lowest" };
                        let listed: Vec<String> = rows.iter().map(entry).collect();
                        if *limit == 1 && rows.len() == 1 {
                            format!(
                                "The {group} with the {direction} {figure}{conditions} is {}.",
                                listed[0]
                            )
                        } else if *limit == 1 {
                            format!(
                                "{} {group} values tie for the {direction} {figure}{conditions}: {}.",
                                rows.len(),
                                listed.join("; ")
                            )
                        } else {
                            format!(
                                "The {limit} {group} values with the {direction} {figure}{conditions}: {}.",
                                listed.join("; ")
                            )
                        }
                    }
                    None => {
                        let empty = rows
                            .iter()
                            .filter(|r| r.get("value").and_then(Value::as_f64) == Some(0.0))
                            .count();
                        let parts_note = if matches!(plan.group, Some(Grouping::Part(..))) {
                            format!(" ({group}s with none are not listed)")
                        } else if empty > 0 {
                            format!(" ({empty} with none)")
                        } else {
                            String::new()
                        };
                        format!(
                            "The {figure} per {group}{conditions}{parts_note}: {}.",
                            rows.iter().map(entry).collect::<Vec<_>>().join("; ")
                        )
                    }
                }
            }
            Shape::Values(t, c) => {
                let listed: Vec<String> = rows
                    .iter()
                    .map(|r| {
                        format!(
                            "{} ({} {})",
                            text(r.get("label").unwrap_or(&Value::Null)),
                            text(r.get("value").unwrap_or(&Value::Null)),
                            self.entity(*t, true)
                        )
                    })
                    .collect();
                key_facts.insert(
                    "values".into(),
                    json!(rows.iter().map(|r| r.get("label")).collect::<Vec<_>>()),
                );
                format!(
                    "The {} column of {} has {} different values: {}.",
                    self.column(*t, *c),
                    self.schema.entities[*t].name,
                    rows.len(),
                    listed.join(", ")
                )
            }
            Shape::Share => {
                let percent = first("percent");
                let part = first("part");
                let whole = first("whole");
                key_facts.insert("percent".into(), percent.clone());
                key_facts.insert("part".into(), part.clone());
                key_facts.insert("whole".into(), whole.clone());
                let numerator: Vec<String> = plan
                    .share
                    .iter()
                    .map(|c| self.condition(c))
                    .chain(plan.share_having.iter().map(|(op, n)| {
                        format!(
                            "{} {} {}",
                            self.measure_words(),
                            op.words(),
                            plain_number(*n)
                        )
                    }))
                    .collect();
                let of = match plan.measure {
                    Measure::Rows => self.entity(subject, true),
                    _ => self.measure_words(),
                };
                let pct = percent
                    .as_f64()
                    .map_or_else(|| "none".to_owned(), |p| format!("{p:.2}%"));
                format!(
                    "{pct} of {of}{conditions} have {} ({} of {}).",
                    numerator.join(" and "),
                    self.figure(&part),
                    self.figure(&whole)
                )
            }
        }
    }
}

/// The program that totals a basket ("2 Desk Lamps and 3 Yoga Mats") from the prices the query
/// found, and its terms in words.
pub(crate) fn basket_code(
    schema: &Schema,
    plan: &Plan,
    query: &Query,
    rows: &[Map<String, Value>],
) -> Result<(String, String), String> {
    let entity = &schema.entities[plan.subject];
    let label = entity.label.ok_or("the rows have no names")?;
    let price = entity
        .column(Concept::Price)
        .ok_or("the rows have no price")?;
    let alias = |column: usize| {
        query
            .selected
            .iter()
            .find(|s| s.source == Some((plan.subject, column)))
            .map(|s| s.alias.clone())
    };
    let (label_alias, price_alias) = (
        alias(label).ok_or("the query lost the names")?,
        alias(price).ok_or("the query lost the prices")?,
    );
    let mut terms = Vec::new();
    let mut said = Vec::new();
    for (quantity, name) in &plan.basket {
        let row = rows
            .iter()
            .find(|r| r.get(&label_alias).and_then(Value::as_str) == Some(name.as_str()))
            .ok_or_else(|| format!("no price was found for {name}"))?;
        let each = row
            .get(&price_alias)
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("{name} has no price"))?;
        terms.push(format!(
            "{} * {}",
            plain_number(*quantity),
            plain_number(each)
        ));
        said.push(format!(
            "{} × {name} at ${each:.2}",
            plain_number(*quantity)
        ));
    }
    Ok((
        format!("print(round({}, 2))", terms.join(" + ")),
        said.join(" + "),
    ))
}

/// The money figure of an answer, for a conversion or an adjustment: the figure, the first
/// ranked row's value, or a looked-up price.
pub(crate) fn money_figure(
    schema: &Schema,
    plan: &Plan,
    query: &Query,
    rows: &[Map<String, Value>],
) -> Option<f64> {
    let first = rows.first()?;
    match plan.shape {
        Shape::Figure(_) => {
            let money = matches!(plan.measure, Measure::Money | Measure::StockValue)
                || matches!(plan.measure, Measure::Column(t, c) if schema.entities[t].columns[c].concept.is_money());
            money.then(|| first.get("value")?.as_f64()).flatten()
        }
        Shape::Top { .. } | Shape::Rows if rows.len() == 1 => {
            if let Some(value) = first.get("value").and_then(Value::as_f64)
                && (matches!(plan.measure, Measure::Money | Measure::StockValue)
                    || matches!(plan.measure, Measure::Column(t, c) if schema.entities[t].columns[c].concept.is_money()))
            {
                return Some(value);
            }
            query.selected.iter().find_map(|s| {
                let (t, c) = s.source?;
                schema.entities[t].columns[c]
                    .concept
                    .is_money()
                    .then(|| first.get(&s.alias)?.as_f64())
                    .flatten()
            })
        }
        _ => None,
    }
}
