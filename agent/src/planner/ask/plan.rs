//! From a reading to a plan: what is counted, listed, ranked, grouped or added up, over which
//! rows, under which conditions, and on what basis; or the reason the question cannot be
//! answered (a part nothing placed, a name the data does not have, a future or relative period,
//! a superlative with nothing to rank by, a claim the plan found no use for).
//!
//! Every claim of the reading must be used by the plan: a claim left over means the question
//! said something the query would not honour, so the answer is "cannot" naming it, never a
//! query that quietly drops it. Pure.

use super::super::countries;
use super::super::sql::COMPLETED_STATUSES;
use super::reading::{Agg, Claim, Claimed, Op, Part, Ranked, Reading};
use super::schema::{Concept, Schema};
use super::values::Values;

/// A condition on a column.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Test {
    In(Vec<String>),
    NotIn(Vec<String>),
    Compare(Op, f64),
    Between(f64, f64),
    /// `[from, until)` on a date column.
    Range(Option<String>, Option<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Condition {
    pub(crate) table: usize,
    pub(crate) column: usize,
    pub(crate) test: Test,
}

/// What is measured on a row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Measure {
    /// Rows are counted.
    Rows,
    /// A column's value.
    Column(usize, usize),
    /// The money of a fact row (price × quantity, or its amount).
    Money,
    /// The worth of stock on hand (price × stock).
    StockValue,
}

/// A figure per subject row, from the rows of a facts table that reference it ("orders per
/// customer", "units sold per product").
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Related {
    pub(crate) facts: usize,
    pub(crate) measure: Measure,
    pub(crate) conditions: Vec<Condition>,
}

/// What the rows are grouped by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Grouping {
    Column(usize, usize),
    /// A part of a date column (table, column).
    Part(Part, usize, usize),
}

/// The kind of answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Shape {
    /// How many subject rows pass.
    Count,
    /// One figure over the rows (or over each subject row's related figure).
    Figure(Agg),
    /// The rows (at most a page).
    Rows,
    /// The first `limit` rows by the measure, ties included; with `only`, the rows at place
    /// `limit` alone ("the second highest price").
    Top {
        descending: bool,
        limit: usize,
        only: bool,
    },
    /// A figure per group; ranked when `top` is set.
    Groups {
        agg: Agg,
        top: Option<(bool, usize)>,
    },
    /// The values of a column, with how many rows have each.
    Values(usize, usize),
    /// A percentage: the rows (or their figure) passing `share` among all.
    Share,
}

/// A question's plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    pub(crate) shape: Shape,
    pub(crate) subject: usize,
    pub(crate) conditions: Vec<Condition>,
    pub(crate) measure: Measure,
    pub(crate) related: Option<Related>,
    /// Conditions on the related figure.
    pub(crate) having: Vec<(Op, f64)>,
    pub(crate) group: Option<Grouping>,
    /// The numerator of a share: conditions on the rows, or on the related figure.
    pub(crate) share: Vec<Condition>,
    pub(crate) share_having: Vec<(Op, f64)>,
    /// Columns to show (lookups, lists), besides the row's label.
    pub(crate) show: Vec<(usize, usize)>,
    /// What the figures count or leave out ("completed orders only").
    pub(crate) basis: Vec<String>,
    /// The status condition behind "completed orders only", so the answer can add the figure
    /// over every status.
    pub(crate) basis_condition: Option<Condition>,
    pub(crate) assumptions: Vec<String>,
    /// Another currency to give money in.
    pub(crate) currency: Option<String>,
    /// A change in percent to apply to the figure ("if its price went up by 15%").
    pub(crate) adjust: Option<(f64, bool)>,
    /// Values named that the data does not have (a real country no customer is from).
    pub(crate) absent: Vec<String>,
    /// The question asks for one row ("the customer who …"); several in a tie are said so.
    pub(crate) single: bool,
    /// Quantities of named rows whose prices are added up by the code tool.
    pub(crate) basket: Vec<(f64, String)>,
}

/// Why a question gets "cannot": the sentence for the answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cannot {
    pub(crate) reason: String,
    /// The parts of the question it names.
    pub(crate) parts: Vec<String>,
}

fn cannot(reason: impl Into<String>, parts: Vec<String>) -> Cannot {
    Cannot {
        reason: reason.into(),
        parts,
    }
}

/// The plan of a question, or why it cannot be answered.
pub(crate) fn plan(
    task: &str,
    reading: &Reading,
    schema: &Schema,
    values: &Values,
) -> Result<Plan, Cannot> {
    Builder::new(task, reading, schema, values).build()
}

struct Builder<'a> {
    task: &'a str,
    reading: &'a Reading,
    schema: &'a Schema,
    values: &'a Values,
    used: Vec<bool>,
}

impl<'a> Builder<'a> {
    fn new(task: &'a str, reading: &'a Reading, schema: &'a Schema, values: &'a Values) -> Self {
        let used = reading
            .claims
            .iter()
            .map(|c| c.claim == Claim::Filler)
            .collect();
        Builder {
            task,
            reading,
            schema,
            values,
            used,
        }
    }

    fn claims(&self) -> &'a [Claimed] {
        &self.reading.claims
    }

    fn said(&self, index: usize) -> String {
        self.reading.said(self.task, &self.claims()[index])
    }

    /// The indices of claims matching, in order.
    fn find(&self, wanted: impl Fn(&Claim) -> bool) -> Vec<usize> {
        self.claims()
            .iter()
            .enumerate()
            .filter(|(_, c)| wanted(&c.claim))
            .map(|(i, _)| i)
            .collect()
    }

    fn first(&self, wanted: impl Fn(&Claim) -> bool) -> Option<usize> {
        self.find(wanted).into_iter().next()
    }

    fn use_all(&mut self, indices: &[usize]) {
        for i in indices {
            self.used[*i] = true;
        }
    }

    /// The next claim after `index` that is not a filler.
    fn next(&self, index: usize) -> Option<usize> {
        (index + 1..self.claims().len()).find(|i| self.claims()[*i].claim != Claim::Filler)
    }

    fn previous(&self, index: usize) -> Option<usize> {
        (0..index)
            .rev()
            .find(|i| self.claims()[*i].claim != Claim::Filler)
    }

    fn entity_word(&self, table: usize, plural: bool) -> String {
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

    fn column_name(&self, table: usize, column: usize) -> &str {
        &self.schema.entities[table].columns[column].name
    }

    /// The data's span of the facts' date (or any date), for messages.
    fn span_note(&self) -> String {
        let facts = self.schema.facts();
        let chosen = self
            .values
            .spans
            .iter()
            .find(|(t, _, _, _)| Some(*t) == facts)
            .or_else(|| self.values.spans.first());
        match chosen {
            Some((table, column, first, last)) => format!(
                "the {} run from {} to {} ({})",
                self.entity_word(*table, true),
                &first[..first.len().min(10)],
                &last[..last.len().min(10)],
                self.column_name(*table, *column)
            ),
            None => "the data has no dates".to_owned(),
        }
    }

    fn build(mut self) -> Result<Plan, Cannot> {
        self.refusals()?;
        let plan = self.shape_plan()?;
        // Every claim must have been used.
        let left: Vec<String> = (0..self.claims().len())
            .filter(|i| !self.used[*i])
            .map(|i| self.said(i))
            .collect();
        if !left.is_empty() {
            return Err(cannot(
                format!(
                    "I understood {} but could not fit {} into one question over the data",
                    quote_list(&left),
                    if left.len() == 1 { "it" } else { "them" }
                ),
                left,
            ));
        }
        // Used is not yet honoured: the finished plan is read back against the question.
        super::honoured::check(self.task, self.reading, &plan)?;
        Ok(plan)
    }

    /// The parts that make a question unanswerable whatever the rest says.
    fn refusals(&self) -> Result<(), Cannot> {
        if let Some(index) = self.first(|c| *c == Claim::Future) {
            let said = self.said(index);
            return Err(cannot(
                format!(
                    "the question asks about the future (\"{said}\"): the data records what \
                     happened ({}), and the planner does not forecast or predict; ask about a \
                     period inside the data instead",
                    self.span_note()
                ),
                vec![said],
            ));
        }
        if let Some(index) = self.first(|c| *c == Claim::Relative) {
            let said = self.said(index);
            return Err(cannot(
                format!(
                    "\"{said}\" is relative to today, and the data does not say what today is \
                     ({}); name the period instead, e.g. \"in June 2025\" or \"since \
                     2025-06-01\"",
                    self.span_note()
                ),
                vec![said],
            ));
        }
        if !self.reading.unplaced.is_empty() {
            let parts = self.reading.unplaced.clone();
            let hint = self.hint_for_unplaced();
            return Err(cannot(
                format!(
                    "I could not place {} in the question: no table, column or value in the \
                     data, no period, figure or operation I know is called so{hint}",
                    quote_list(&parts)
                ),
                parts,
            ));
        }
        if let Some(index) = self.first(|c| matches!(c, Claim::Ambiguous { .. })) {
            let Claim::Ambiguous {
                text,
                table,
                column,
                matches,
            } = &self.claims()[index].claim
            else {
                unreachable!()
            };
            return Err(cannot(
                format!(
                    "\"{text}\" fits several {} ({}: {}); name one exactly",
                    self.entity_word(*table, true),
                    self.column_name(*table, *column),
                    matches.join(", ")
                ),
                vec![text.clone()],
            ));
        }
        if let Some(index) = self.first(|c| matches!(c, Claim::Unknown { .. })) {
            let Claim::Unknown { text } = &self.claims()[index].claim else {
                unreachable!()
            };
            return Err(cannot(
                self.unknown_message(index, text),
                vec![text.clone()],
            ));
        }
        Ok(())
    }

    /// What the data has that an unplaced word might have meant: the grouping values of the
    /// table the question is about.
    fn hint_for_unplaced(&self) -> String {
        let table = self
            .first(|c| matches!(c, Claim::Table { .. }))
            .and_then(|i| match self.claims()[i].claim {
                Claim::Table { table, .. } => Some(table),
                _ => None,
            });
        let Some(table) = table else {
            return String::new();
        };
        let listed: Vec<String> = self
            .values
            .columns
            .iter()
            .filter(|c| {
                c.table == table
                    && c.complete
                    && self.schema.entities[table].columns[c.column]
                        .concept
                        .is_dimension()
                    && c.values.len() <= 12
            })
            .map(|c| {
                format!(
                    "the {}' {} is one of {}",
                    self.entity_word(table, true),
                    self.column_name(table, c.column),
                    c.values.join(", ")
                )
            })
            .collect();
        if listed.is_empty() {
            String::new()
        } else {
            format!("; {}", listed.join("; "))
        }
    }

    /// "no customer named 'John Smith'", with the table the context points to, and the values
    /// near it when one is close.
    fn unknown_message(&self, index: usize, text: &str) -> String {
        // A column word beside it ("the Garden category", "status 'on hold'").
        let beside = [self.previous(index), self.next(index)]
            .into_iter()
            .flatten()
            .find_map(|i| match &self.claims()[i].claim {
                Claim::Column { candidates } => candidates.first().copied(),
                _ => None,
            })
            .filter(|(t, c)| {
                let concept = self.schema.entities[*t].columns[*c].concept;
                concept.is_dimension() || concept == Concept::Label
            });
        if let Some((table, column)) = beside {
            let listed = self
                .values
                .of(table, column)
                .filter(|c| c.complete && c.values.len() <= 30)
                .map(|c| {
                    format!(
                        "; the {} are {}",
                        plural_column(self.column_name(table, column)),
                        c.values.join(", ")
                    )
                })
                .unwrap_or_default();
            return format!(
                "there is no {} {} \"{text}\" in the data{listed}",
                self.entity_word(table, false),
                self.column_name(table, column)
            );
        }
        // The table the question is about: a table word before it that has names, the owner
        // of a name-bearing column named, or the people for "who", "placed", "spent".
        let labelled = |t: &usize| self.schema.entities[*t].label.is_some();
        let table = self
            .previous(index)
            .and_then(|i| match self.claims()[i].claim {
                Claim::Table { table, .. } => Some(table),
                _ => None,
            })
            .filter(labelled)
            .or_else(|| {
                self.claims().iter().find_map(|c| match &c.claim {
                    Claim::Column { candidates } => candidates
                        .iter()
                        .find(|(t, c)| {
                            labelled(t)
                                && !matches!(
                                    self.schema.entities[*t].columns[*c].concept,
                                    Concept::Label
                                )
                        })
                        .map(|(t, _)| *t),
                    _ => None,
                })
            })
            .or_else(|| {
                let people =
                    self.find(|c| matches!(c, Claim::Relation | Claim::Revenue | Claim::Who));
                (!people.is_empty()).then(|| self.schema.people()).flatten()
            })
            .filter(labelled);
        let near = |table: usize| {
            let label = self.schema.entities[table].label?;
            let listed = self.values.of(table, label)?;
            let lower = text.to_lowercase();
            listed
                .values
                .iter()
                .map(|v| {
                    (
                        super::super::words::edit_distance(&lower, &v.to_lowercase()),
                        v,
                    )
                })
                .filter(|(d, v)| *d <= (v.len() / 3).max(1))
                .min_by_key(|(d, _)| *d)
                .map(|(_, v)| v.clone())
        };
        match table {
            Some(table) => {
                let suggestion = near(table)
                    .map(|v| format!("; did you mean {v}?"))
                    .unwrap_or_default();
                format!(
                    "there is no {} named \"{text}\" in the data{suggestion}",
                    self.entity_word(table, false)
                )
            }
            None => {
                let searched: Vec<String> = self
                    .schema
                    .entities
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.label.is_some())
                    .map(|(t, _)| self.entity_word(t, true))
                    .collect();
                format!(
                    "nothing in the data is named \"{text}\" (searched the names of {})",
                    searched.join(" and ")
                )
            }
        }
    }

    fn shape_plan(&mut self) -> Result<Plan, Cannot> {
        let schema = self.schema;
        let claims = self.claims();
        // Question words are used by whatever they shape; fillers already are.
        let percent = self.find(|c| *c == Claim::Percent);
        let ranks = self.find(|c| matches!(c, Claim::Rank { .. }));
        let counts = self.find(|c| matches!(c, Claim::Count | Claim::HowMany));
        let aggregates = self.find(|c| matches!(c, Claim::Aggregate(_)));
        let who = self.find(|c| *c == Claim::Who);
        let when = self.find(|c| *c == Claim::When);
        let where_ = self.find(|c| *c == Claim::Where);
        let which = self.find(|c| *c == Claim::Which);
        let how_much = self.find(|c| *c == Claim::HowMuch);
        self.use_all(&which);

        // The subject: what is counted, listed or ranked.
        let tables = self.find(|c| matches!(c, Claim::Table { .. }));
        let table_of = |i: usize| match claims[i].claim {
            Claim::Table { table, plural } => (table, plural),
            _ => unreachable!(),
        };
        let ids = self.find(|c| matches!(c, Claim::Id { .. }));
        let people = schema.people();
        let facts = schema.facts();

        // A table after a comparison's number ("more than 5 orders"), after "most" ("the most
        // orders") or after a grouping word is no subject.
        let roles: Vec<&'static str> = (0..claims.len()).map(|i| self.role(i)).collect();
        let role_of_table = |i: usize| roles[i];

        // "The average number of orders per customer", "the average revenue per customer":
        // each row of the table after "per" gets its figure from the facts, and the figure is
        // averaged (or its median, least, most taken) over those rows.
        let mut per_entity: Option<usize> = None;
        if aggregates.iter().any(|a| {
            matches!(
                claims[*a].claim,
                Claim::Aggregate(Agg::Avg | Agg::Median | Agg::Min | Agg::Max)
            )
        }) {
            for g in self.find(|c| *c == Claim::Group) {
                if let Some(n) = self.next(g)
                    && let Claim::Table { table, .. } = claims[n].claim
                    && Some(table) != facts
                    && facts.is_some_and(|f| schema.path(f, table).is_some())
                {
                    per_entity = Some(table);
                    self.used[g] = true;
                    self.used[n] = true;
                    break;
                }
            }
        }

        let mut subject: Option<usize> = per_entity;
        let mut subject_claim: Option<usize> = None;
        // "Who placed the most recent order?", "Who placed order 77?": the order row, showing
        // its person.
        let row_of_facts = tables.iter().copied().find(|i| {
            let (table, plural) = table_of(*i);
            Some(table) == facts && !plural && role_of_table(*i) == "subject"
        });
        let show_person = !who.is_empty()
            && (ids.iter().any(|i| matches!(claims[*i].claim, Claim::Id { table, .. } if table == facts || table.is_none()))
                || (row_of_facts.is_some() && !ranks.is_empty()));
        if per_entity.is_some() {
            // Decided above.
        } else if show_person {
            subject = facts;
            subject_claim = row_of_facts;
        } else if !who.is_empty() {
            subject = people;
            if subject.is_none() {
                return Err(cannot(
                    "the question asks \"who\", and no table here holds people",
                    vec!["who".into()],
                ));
            }
            subject_claim = tables
                .iter()
                .copied()
                .find(|i| Some(table_of(*i).0) == people);
        }
        if subject.is_none()
            && let Some(&id) = ids.first()
            && let Claim::Id {
                table: Some(table), ..
            } = claims[id].claim
        {
            subject = Some(table);
        }
        let money_words = self.find(|c| *c == Claim::Revenue);
        let sold = self.find(|c| *c == Claim::Sold);
        let groupers = self.find(|c| matches!(c, Claim::Group | Claim::By | Claim::Part(_)));
        // "Which customers …", "List the products …": rows are asked for.
        let list_intent = which.iter().chain(&who).any(|w| {
            let mut next = self.next(*w);
            for _ in 0..2 {
                match next.map(|n| &claims[n].claim) {
                    Some(Claim::Table { .. }) => return true,
                    Some(Claim::Value { .. }) => next = next.and_then(|n| self.next(n)),
                    _ => return false,
                }
            }
            false
        }) || self.reading.tokens.first().is_some_and(|t| {
            matches!(
                t.lower.as_str(),
                "list" | "show" | "name" | "display" | "give"
            )
        });
        // "How much revenue did Japanese customers bring in?", "the total revenue in 2024":
        // one figure of the facts, whatever table gives it context.
        let figure_question = percent.is_empty()
            && ranks.is_empty()
            && who.is_empty()
            && counts.is_empty()
            && groupers.is_empty()
            && !list_intent
            && !money_words.is_empty();
        if subject.is_none()
            && (figure_question || (!percent.is_empty() && !money_words.is_empty()))
        {
            subject = facts;
        }
        // "How many units of Office products have been sold?", "How many Yoga Mats have we
        // sold?": units added up over the facts.
        let units_question = !sold.is_empty()
            && (!counts.is_empty() || !aggregates.is_empty() || !how_much.is_empty())
            && ranks.is_empty()
            && groupers.is_empty()
            && percent.is_empty()
            && who.is_empty()
            && !list_intent
            && !claims.iter().any(|c| c.claim == Claim::Negation)
            && claims.iter().any(|c| match &c.claim {
                Claim::Column { candidates } => candidates
                    .iter()
                    .any(|(t, col)| schema.entities[*t].columns[*col].concept == Concept::Quantity),
                Claim::Value { table, column, .. } => {
                    schema.entities[*table].columns[*column].concept == Concept::Label
                }
                _ => false,
            });
        if subject.is_none() && units_question {
            subject = facts;
        }
        // "Which book sold the most copies?": a category's value names the rows asked for.
        if subject.is_none()
            && let Some(value) = which
                .iter()
                .chain(&who)
                .find_map(|w| self.next(*w))
                .filter(|n| match &claims[*n].claim {
                    Claim::Value { table, column, .. } => {
                        schema.entities[*table].columns[*column].concept == Concept::Category
                    }
                    _ => false,
                })
            && let Claim::Value { table, .. } = claims[value].claim
        {
            subject = Some(table);
        }
        if subject.is_none() && !percent.is_empty() {
            // "percentage of orders": the table after the percent word.
            let after = tables
                .iter()
                .copied()
                .find(|i| *i > percent[0] && role_of_table(*i) == "subject")
                .or_else(|| tables.first().copied());
            if let Some(i) = after {
                subject = Some(table_of(i).0);
                subject_claim = Some(i);
            }
        }
        if subject.is_none()
            && let Some(i) = tables
                .iter()
                .copied()
                .find(|i| role_of_table(*i) == "subject")
        {
            subject = Some(table_of(i).0);
            subject_claim = Some(i);
        }
        let columns = self.find(|c| matches!(c, Claim::Column { .. }));
        let values = self.find(|c| matches!(c, Claim::Value { .. }));

        // A grouping: "per country", "by status", "each month", "which country", "monthly".
        let mut grouping: Option<(Grouping, Vec<usize>)> = None;
        for index in self.find(|c| matches!(c, Claim::Group | Claim::By)) {
            let Some(next) = self.next(index) else {
                continue;
            };
            // "per product category": the table's word before its column.
            let (next, table_word) = match &claims[next].claim {
                Claim::Table { table, .. } => match self.next(next) {
                    Some(after) if matches!(&claims[after].claim, Claim::Column { candidates } if candidates.iter().any(|(t, _)| t == table)) => {
                        (after, Some(next))
                    }
                    _ => (next, None),
                },
                _ => (next, None),
            };
            let found = match &claims[next].claim {
                Claim::Column { candidates } => self
                    .dimension(candidates, subject)
                    .map(|(t, c)| Grouping::Column(t, c)),
                Claim::Part(part) => {
                    let owner = if !money_words.is_empty() || !sold.is_empty() {
                        facts
                    } else {
                        subject.or(facts)
                    };
                    self.date_for_part(owner)
                        .map(|(t, c)| Grouping::Part(*part, t, c))
                }
                _ => None,
            };
            if let Some(found) = found {
                let mut indices = vec![index, next];
                indices.extend(table_word);
                // "Break down the orders by status": every grouping word is this grouping's.
                indices.extend(self.find(|c| matches!(c, Claim::Group)));
                grouping = Some((found, indices));
                break;
            }
        }
        if grouping.is_none() {
            // "Which country …", "Which month …", "the country whose …": a dimension asked for.
            for index in self.find(|c| matches!(c, Claim::Column { .. } | Claim::Part(_))) {
                let asked = self
                    .previous(index)
                    .is_some_and(|p| matches!(claims[p].claim, Claim::Which))
                    || index == 0
                    || self.claims()[..index]
                        .iter()
                        .all(|c| matches!(c.claim, Claim::Filler | Claim::Which));
                let adjective = matches!(claims[index].claim, Claim::Part(_))
                    && self.said(index).to_lowercase().ends_with("ly");
                if !(asked || adjective) {
                    continue;
                }
                let found = match &claims[index].claim {
                    Claim::Column { candidates } => {
                        // Only when something is measured per group (a rank or a count).
                        // A ranking by a row's own date or price ranks rows, not groups ("the
                        // status of the most recent order").
                        let row_rank = ranks.iter().all(|r| {
                            matches!(
                                claims[*r].claim,
                                Claim::Rank {
                                    by: Ranked::Date | Ranked::Price,
                                    ..
                                }
                            )
                        }) && !ranks.is_empty();
                        if (ranks.is_empty() && counts.is_empty() && money_words.is_empty())
                            || row_rank
                        {
                            None
                        } else {
                            self.dimension(candidates, subject)
                                .map(|(t, c)| Grouping::Column(t, c))
                        }
                    }
                    Claim::Part(part) => {
                        let owner = if !money_words.is_empty() || !sold.is_empty() {
                            facts
                        } else {
                            subject.or(facts)
                        };
                        self.date_for_part(owner)
                            .map(|(t, c)| Grouping::Part(*part, t, c))
                    }
                    _ => None,
                };
                if let Some(found) = found {
                    grouping = Some((found, vec![index]));
                    break;
                }
            }
        }

        // Still no subject: the table of what is measured or named.
        if subject.is_none() {
            subject = if !money_words.is_empty()
                || !sold.is_empty()
                || self.reading.has(|c| *c == Claim::Worth)
            {
                facts
            } else if let Some((Grouping::Column(t, _), _)) = &grouping {
                Some(*t)
            } else if let Some((Grouping::Part(_, t, _), _)) = &grouping {
                Some(*t)
            } else if let Some(&c) = columns.first() {
                match &claims[c].claim {
                    Claim::Column { candidates } => candidates.first().map(|(t, _)| *t),
                    _ => None,
                }
            } else if let Some(&v) = values.first() {
                match &claims[v].claim {
                    Claim::Value { table, .. } => Some(*table),
                    _ => None,
                }
            } else {
                None
            };
        }
        let Some(mut subject) = subject else {
            return Err(cannot(
                "the question names no table, column or value of the data, so I cannot tell what it asks about",
                Vec::new(),
            ));
        };
        if let Some(i) = subject_claim {
            self.used[i] = true;
        }
        // The subject's other mentions ("customers … customer") are the same table.
        for i in &tables {
            let (table, _) = table_of(*i);
            if table == subject && role_of_table(*i) == "subject" {
                self.used[*i] = true;
            }
            // A figure of the facts: the other tables named give context ("revenue from
            // German customers") through the conditions on them.
            if figure_question
                && Some(subject) == facts
                && schema.path(subject, table).is_some()
                && role_of_table(*i) == "subject"
            {
                self.used[*i] = true;
            }
        }

        let mut plan = Plan {
            shape: Shape::Rows,
            subject,
            conditions: Vec::new(),
            measure: Measure::Rows,
            related: None,
            having: Vec::new(),
            group: None,
            share: Vec::new(),
            share_having: Vec::new(),
            show: Vec::new(),
            basis: Vec::new(),
            basis_condition: None,
            assumptions: self.reading.assumptions.clone(),
            currency: None,
            adjust: None,
            absent: Vec::new(),
            single: false,
            basket: Vec::new(),
        };
        if let Some((found, indices)) = &grouping {
            plan.group = Some(*found);
            self.use_all(indices);
        }

        // What is measured.
        let ranked_by = ranks.iter().find_map(|i| match claims[*i].claim {
            Claim::Rank { by, .. } if by != Ranked::Measure => Some(by),
            _ => None,
        });
        let quantity_column =
            facts.and_then(|f| schema.entities[f].column(Concept::Quantity).map(|c| (f, c)));
        let wants_units = sold.iter().any(|_| true)
            && (counts.iter().any(|_| true)
                || columns
                    .iter()
                    .any(|c| self.is_column(*c, Concept::Quantity))
                || ranked_by == Some(Ranked::Units));
        let mut measure: Option<Measure> = None;
        let mut measure_on_facts = false;
        let mut completed_basis = false;
        match ranked_by {
            Some(Ranked::Price) => {
                measure = self
                    .concept_column(subject, Concept::Price)
                    .map(|(t, c)| Measure::Column(t, c));
            }
            Some(Ranked::Date) => {
                measure = self.date_of(subject).map(|(t, c)| Measure::Column(t, c));
            }
            Some(Ranked::Units) => {
                measure = quantity_column.map(|(t, c)| Measure::Column(t, c));
                measure_on_facts = true;
                completed_basis = true;
                self.use_all(&sold);
                let units: Vec<usize> = columns
                    .iter()
                    .copied()
                    .filter(|c| self.is_column(*c, Concept::Quantity))
                    .collect();
                self.use_all(&units);
            }
            Some(Ranked::Revenue) => {
                measure = Some(Measure::Money);
                measure_on_facts = true;
                completed_basis = true;
            }
            Some(Ranked::Count) => {
                measure = Some(Measure::Rows);
                if subject != facts.unwrap_or(usize::MAX) && plan.group.is_none() {
                    measure_on_facts = true;
                }
            }
            _ => {}
        }
        // Money words: revenue, spent, sales.
        if measure.is_none() && !money_words.is_empty() {
            measure = Some(Measure::Money);
            measure_on_facts = true;
            completed_basis = true;
        }
        self.use_all(&money_words);
        // Worth: of stock, or of orders.
        let worth = self.find(|c| *c == Claim::Worth);
        let stock_column = columns
            .iter()
            .copied()
            .find(|c| self.is_column(*c, Concept::Stock));
        if !worth.is_empty() {
            if measure.is_none() && stock_column.is_some() {
                measure = Some(Measure::StockValue);
                self.used[stock_column.unwrap_or(0)] = true;
                subject = self
                    .concept_column(subject, Concept::Stock)
                    .map(|(t, _)| t)
                    .unwrap_or(subject);
                plan.subject = subject;
            } else if measure.is_none() || measure == Some(Measure::Money) {
                measure = Some(Measure::Money);
                measure_on_facts = true;
                completed_basis = true;
            }
            self.use_all(&worth);
        }
        // Units sold: "how many Yoga Mats have we sold", "units of Books sold".
        if measure.is_none() && wants_units {
            measure = quantity_column.map(|(t, c)| Measure::Column(t, c));
            measure_on_facts = true;
            completed_basis = true;
            self.use_all(&sold);
            let units: Vec<usize> = columns
                .iter()
                .copied()
                .filter(|c| {
                    self.is_column(*c, Concept::Quantity) && self.compare_beside(*c).is_none()
                })
                .collect();
            self.use_all(&units);
        }
        // A numeric column named: price, stock, quantity.
        let mut numeric_used: Vec<usize> = Vec::new();
        if measure.is_none() {
            for c in &columns {
                let Claim::Column { candidates } = &claims[*c].claim else {
                    continue;
                };
                // A column a comparison is about is a condition, not the measure.
                if self.compare_beside(*c).is_some() {
                    continue;
                }
                let found = candidates
                    .iter()
                    .copied()
                    .filter(|(t, col)| schema.entities[*t].columns[*col].concept.is_number())
                    .min_by_key(|(t, _)| usize::from(*t != subject));
                if let Some((t, col)) = found {
                    // "how many Yoga Mats in stock" is a lookup of the stock, below.
                    measure = Some(Measure::Column(t, col));
                    if t != subject && Some(t) == facts {
                        measure_on_facts = true;
                    }
                    if schema.entities[t].columns[col].concept == Concept::Quantity
                        && !sold.is_empty()
                    {
                        completed_basis = true;
                        self.use_all(&sold);
                    }
                    numeric_used.push(*c);
                    break;
                }
            }
        }
        // "the most orders", "more than 5 orders", "never ordered": a count of related rows.
        let counted_tables: Vec<usize> = tables
            .iter()
            .copied()
            .filter(|i| matches!(role_of_table(*i), "counted" | "unit"))
            .filter(|i| table_of(*i).0 != subject)
            .collect();
        let times = self.find(|c| *c == Claim::Times);
        if measure.is_none() && per_entity.is_some() {
            measure = Some(Measure::Rows);
            measure_on_facts = true;
        }
        if measure.is_none() && (!counted_tables.is_empty() || !times.is_empty()) {
            measure = Some(Measure::Rows);
            measure_on_facts = true;
            // "ordered the most times": how many times is how many rows.
            for t in &times {
                if self
                    .previous(*t)
                    .is_some_and(|p| matches!(claims[p].claim, Claim::Rank { .. }))
                {
                    self.used[*t] = true;
                }
            }
        }

        // Conditions from values, ids, periods, comparisons.
        let negations = self.find(|c| *c == Claim::Negation);
        let mut included: Vec<String> = Vec::new();
        for v in &values {
            let Claim::Value {
                table,
                column,
                values: named,
                present,
            } = &claims[*v].claim
            else {
                continue;
            };
            let before = self.previous(*v).map(|p| (p, &claims[p].claim));
            let negated = matches!(before, Some((_, Claim::Negation | Claim::Exclude)));
            if negated && let Some((p, _)) = before {
                self.used[p] = true;
            }
            // "including returned orders": a status that counts besides the basis.
            if let Some((p, Claim::Include)) = before {
                self.used[p] = true;
                if schema.entities[*table].columns[*column].concept == Concept::Status
                    && Some(*table) == facts
                {
                    included.extend(named.iter().cloned());
                    self.used[*v] = true;
                    continue;
                }
            }
            if !present {
                plan.absent.push(format!(
                    "no {} in the data has {} {}{}",
                    self.entity_word(*table, false),
                    self.column_name(*table, *column),
                    named.join(" or "),
                    named
                        .first()
                        .and_then(|code| countries::name_of(code))
                        .map(|name| format!(" ({name})"))
                        .unwrap_or_default()
                ));
            }
            let present_values: Vec<String> = named.clone();
            plan.conditions.push(Condition {
                table: *table,
                column: *column,
                test: if negated {
                    Test::NotIn(present_values)
                } else {
                    Test::In(present_values)
                },
            });
            self.used[*v] = true;
            // "the Books category", "status completed": the column word beside its value.
            for beside in [self.previous(*v), self.next(*v)].into_iter().flatten() {
                if let Claim::Column { candidates } = &claims[beside].claim
                    && candidates.contains(&(*table, *column))
                {
                    self.used[beside] = true;
                }
            }
        }
        for i in &ids {
            let Claim::Id { table, id } = claims[*i].claim else {
                continue;
            };
            let table = table.unwrap_or(subject);
            let entity = &schema.entities[table];
            let key = entity
                .columns
                .iter()
                .position(|c| c.name == entity.key)
                .unwrap_or(0);
            plan.conditions.push(Condition {
                table,
                column: key,
                test: Test::In(vec![id.to_string()]),
            });
            self.used[*i] = true;
        }
        // "2 Desk Lamps", "3 Yoga Mats and 2 Water Bottles": quantities of priced rows, for a
        // total the code tool computes.
        for v in &values {
            let Claim::Value {
                table,
                column,
                values: named,
                ..
            } = &claims[*v].claim
            else {
                continue;
            };
            let Some(n) = self.previous(*v) else {
                continue;
            };
            let Claim::Number {
                value,
                money: false,
                percent: false,
            } = claims[n].claim
            else {
                continue;
            };
            if schema.entities[*table].columns[*column].concept == Concept::Label
                && schema.entities[*table].column(Concept::Price).is_some()
                && value.fract() == 0.0
                && (1.0..=10_000.0).contains(&value)
                && named.len() == 1
            {
                plan.basket.push((value, named[0].clone()));
                self.used[n] = true;
                if let Some(price) = schema.entities[*table].column(Concept::Price)
                    && !plan.show.contains(&(*table, price))
                {
                    plan.show.push((*table, price));
                }
            }
        }
        // "out of stock".
        for i in self.find(|c| *c == Claim::OutOfStock) {
            let Some((t, c)) = self.concept_column(subject, Concept::Stock) else {
                continue;
            };
            plan.conditions.push(Condition {
                table: t,
                column: c,
                test: Test::Compare(Op::Le, 0.0),
            });
            self.used[i] = true;
        }
        // Comparisons.
        let mut related_having: Vec<(Op, f64)> = Vec::new();
        for i in self.find(|c| matches!(c, Claim::Compare { .. })) {
            let Claim::Compare {
                op,
                value,
                upper,
                money,
                percent: _,
            } = claims[i].claim
            else {
                continue;
            };
            let tests = match upper {
                Some(high) => vec![Test::Between(value, high)],
                None => vec![Test::Compare(op, value)],
            };
            // A numeric column beside it: "priced over $100", "fewer than 10 units in stock".
            let column = [self.previous(i), self.next(i)]
                .into_iter()
                .flatten()
                .find_map(|b| match &claims[b].claim {
                    Claim::Column { candidates } => candidates
                        .iter()
                        .copied()
                        .filter(|(t, c)| {
                            let concept = schema.entities[*t].columns[*c].concept;
                            // "$25" compares money, never a stock level or a quantity.
                            concept.is_number() && (!money || concept.is_money())
                        })
                        .min_by_key(|(t, _)| usize::from(*t != subject))
                        .map(|found| (b, found)),
                    _ => None,
                });
            // "units in stock" after "10": the stock, and the word "units" before it is part
            // of the same phrase.
            let column = column.or_else(|| {
                let next = self.next(i)?;
                let after = self.next(next)?;
                if self.is_column(next, Concept::Quantity) && self.is_column(after, Concept::Stock)
                {
                    self.used[next] = true;
                    match &claims[after].claim {
                        Claim::Column { candidates } => Some((after, candidates[0])),
                        _ => None,
                    }
                } else {
                    None
                }
            });
            if let Some((b, (t, c))) = column
                && !(Some(t) == facts && t != subject && measure_on_facts)
            {
                for test in tests {
                    plan.conditions.push(Condition {
                        table: t,
                        column: c,
                        test,
                    });
                }
                self.used[i] = true;
                self.used[b] = true;
                numeric_used.retain(|n| *n != b);
                if matches!(measure, Some(Measure::Column(mt, mc)) if (mt, mc) == (t, c))
                    && !numeric_used.contains(&b)
                {
                    measure = None;
                }
                continue;
            }
            // "more than 20 orders", "more than 22 times": the count of related rows.
            let unit = self
                .next(i)
                .filter(|n| matches!(claims[*n].claim, Claim::Table { .. } | Claim::Times));
            if unit.is_some()
                || (money && measure_on_facts)
                || (measure_on_facts && subject != facts.unwrap_or(usize::MAX))
            {
                if let Some(unit) = unit {
                    self.used[unit] = true;
                    if measure.is_none() {
                        measure = Some(Measure::Rows);
                        measure_on_facts = true;
                    }
                }
                match upper {
                    Some(high) => {
                        related_having.push((Op::Ge, value));
                        related_having.push((Op::Le, high));
                    }
                    None => related_having.push((op, value)),
                }
                self.used[i] = true;
                continue;
            }
            // Money with nothing else: the subject's price ("products under $50").
            if money && let Some((t, c)) = self.concept_column(subject, Concept::Price) {
                for test in tests {
                    plan.conditions.push(Condition {
                        table: t,
                        column: c,
                        test,
                    });
                }
                self.used[i] = true;
                continue;
            }
            // On the measure itself, row by row ("orders with a quantity over 3").
            if let Some(Measure::Column(t, c)) = measure
                && !measure_on_facts
            {
                for test in tests {
                    plan.conditions.push(Condition {
                        table: t,
                        column: c,
                        test,
                    });
                }
                self.used[i] = true;
                continue;
            }
            if aggregates.is_empty() {
                return Err(cannot(
                    format!(
                        "the question compares something with {} and I cannot tell what",
                        super::super::words::plain_number(value)
                    ),
                    vec![self.said(i)],
                ));
            }
            // "the total … exceeds $500": compared in the answer.
            related_having.push((op, value));
            self.used[i] = true;
        }

        // Relations ("placed", "bought") and "never"/"no" with a table: how many related rows.
        let relations = self.find(|c| *c == Claim::Relation);
        let negated_relation = negations.iter().copied().find(|n| {
            !self.used[*n]
                && self.next(*n).is_some_and(|x| {
                    matches!(
                        claims[x].claim,
                        Claim::Relation | Claim::Table { .. } | Claim::Sold
                    )
                })
        });
        if let Some(n) = negated_relation
            && self.next(n).is_some_and(|x| claims[x].claim == Claim::Sold)
        {
            completed_basis = true;
        }
        if let Some(n) = negated_relation
            && (measure.is_none() || measure == Some(Measure::Rows) || measure_on_facts)
        {
            if measure.is_none() {
                measure = Some(Measure::Rows);
            }
            measure_on_facts = true;
            related_having.push((Op::Eq, 0.0));
            self.used[n] = true;
            for t in &counted_tables {
                self.used[*t] = true;
            }
        }

        // The period: on the date the question speaks of, else the facts', else the subject's.
        let periods = self.find(|c| matches!(c, Claim::Period(_)));
        let mut period_on_facts: Vec<Condition> = Vec::new();
        let date_column_named = columns.iter().copied().find(|c| {
            self.column_concept(*c).is_some_and(|concept| {
                matches!(concept, Concept::Created | Concept::Ordered | Concept::Date)
            })
        });
        for p in &periods {
            let Claim::Period(period) = &claims[*p].claim else {
                continue;
            };
            let date =
                match date_column_named.and_then(|c| self.column_candidates(c).first().copied()) {
                    Some(found) => {
                        self.used[date_column_named.unwrap_or(0)] = true;
                        Some(found)
                    }
                    None => {
                        let other_tables = plan
                            .conditions
                            .iter()
                            .any(|c| schema.path(subject, c.table).is_none());
                        let owner = if measure_on_facts || other_tables || !relations.is_empty() {
                            facts.or(Some(subject))
                        } else {
                            Some(subject)
                        };
                        owner.and_then(|o| self.date_of(o))
                    }
                };
            let Some((t, c)) = date else {
                return Err(cannot(
                    format!(
                        "the question limits the data to \"{}\", and {} has no date to limit",
                        self.said(*p),
                        self.entity_word(subject, true)
                    ),
                    vec![self.said(*p)],
                ));
            };
            let (from, until) = match period.month_only {
                Some(month) => {
                    let (first, last) = self.values.span(t, c).ok_or_else(|| {
                        cannot(
                            format!("\"{}\" names no year", self.said(*p)),
                            vec![self.said(*p)],
                        )
                    })?;
                    let years = years_with_month(first, last, month);
                    match years.as_slice() {
                        [year] => {
                            plan.assumptions.push(format!(
                                "took \"{}\" as {} {year}, the only one in the data ({} from {} to {})",
                                self.said(*p),
                                month_name(month),
                                self.column_name(t, c),
                                &first[..first.len().min(10)],
                                &last[..last.len().min(10)]
                            ));
                            (
                                Some(format!("{year:04}-{month:02}-01")),
                                Some(if month == 12 {
                                    format!("{:04}-01-01", year + 1)
                                } else {
                                    format!("{year:04}-{:02}-01", month + 1)
                                }),
                            )
                        }
                        _ => {
                            return Err(cannot(
                                format!(
                                    "\"{}\" names a month without a year, and the data has it in \
                                     {} years ({}); name the year",
                                    self.said(*p),
                                    years.len(),
                                    years
                                        .iter()
                                        .map(|y| y.to_string())
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ),
                                vec![self.said(*p)],
                            ));
                        }
                    }
                }
                None => (period.from.clone(), period.until.clone()),
            };
            let condition = Condition {
                table: t,
                column: c,
                test: Test::Range(from, until),
            };
            // On the facts a per-row figure adds up, else where it reaches (the split below).
            if measure_on_facts && Some(t) == facts && Some(subject) != facts {
                period_on_facts.push(condition);
            } else {
                plan.conditions.push(condition);
            }
            self.used[*p] = true;
        }

        // Who has related rows matching conditions on another table ("who bought the Ergonomic
        // Chair", "customers who ordered Rust in Action"): conditions on tables the subject
        // does not reach become conditions on the related facts.
        let mut fact_conditions: Vec<Condition> = Vec::new();
        let mut subject_conditions: Vec<Condition> = Vec::new();
        for condition in plan.conditions.drain(..) {
            if schema.path(subject, condition.table).is_some() {
                subject_conditions.push(condition);
            } else {
                fact_conditions.push(condition);
            }
        }
        fact_conditions.append(&mut period_on_facts);
        if !fact_conditions.is_empty() && !measure_on_facts {
            // The subject must have related rows passing them.
            if measure.is_none() || measure == Some(Measure::Rows) {
                measure = Some(Measure::Rows);
                measure_on_facts = true;
                if related_having.is_empty() {
                    related_having.push((Op::Gt, 0.0));
                }
            } else {
                let table = fact_conditions[0].table;
                return Err(cannot(
                    format!(
                        "the question limits {} by the {} it relates to in a way I cannot put \
                         in one query",
                        self.entity_word(subject, true),
                        self.entity_word(table, true)
                    ),
                    Vec::new(),
                ));
            }
        }

        // The facts a measure on them comes from, when the subject is not the facts table.
        let related_facts = if measure_on_facts && Some(subject) != facts {
            match facts {
                Some(f) if schema.path(f, subject).is_some() => Some(f),
                _ => None,
            }
        } else {
            None
        };
        if measure_on_facts
            && Some(subject) != facts
            && related_facts.is_none()
            && plan.group.is_none()
        {
            return Err(cannot(
                format!(
                    "I cannot relate {} to what the question measures",
                    self.entity_word(subject, true)
                ),
                Vec::new(),
            ));
        }
        // Relation words are used whenever facts are involved.
        if measure_on_facts || Some(subject) == facts || !fact_conditions.is_empty() {
            self.use_all(&relations);
            self.use_all(&sold);
            for t in &counted_tables {
                self.used[*t] = true;
            }
            for t in &tables {
                if Some(table_of(*t).0) == facts {
                    self.used[*t] = true;
                }
            }
        }

        // The completed-orders basis of money and units sold, unless a status is named.
        let status_named = subject_conditions
            .iter()
            .chain(&fact_conditions)
            .any(|c| schema.entities[c.table].columns[c.column].concept == Concept::Status);
        if completed_basis
            && !status_named
            && let Some(f) = facts
            && let Some(status) = schema.entities[f].column(Concept::Status)
        {
            let known: Vec<String> = self
                .values
                .of(f, status)
                .map(|c| {
                    c.values
                        .iter()
                        .filter(|v| COMPLETED_STATUSES.contains(&v.to_lowercase().as_str()))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            let known: Vec<String> = known.into_iter().chain(included.iter().cloned()).collect();
            if !known.is_empty() {
                let condition = Condition {
                    table: f,
                    column: status,
                    test: Test::In(known.clone()),
                };
                plan.basis.push(format!(
                    "{} {} only",
                    known.join(" or "),
                    self.entity_word(f, true)
                ));
                plan.basis_condition = Some(condition.clone());
                if related_facts.is_some() {
                    fact_conditions.push(condition);
                } else {
                    subject_conditions.push(condition);
                }
            }
        }

        // Currency, adjustments.
        for i in self.find(|c| matches!(c, Claim::Currency(_))) {
            if let Claim::Currency(code) = &claims[i].claim {
                plan.currency = Some(code.clone());
                self.used[i] = true;
            }
        }
        for i in self.find(|c| matches!(c, Claim::Adjust { .. })) {
            if let Claim::Adjust { percent, up } = claims[i].claim {
                plan.adjust = Some((percent, up));
                self.used[i] = true;
            }
        }
        // "if its price went up by 15%": hypothetical only about that change.
        if plan.adjust.is_some() {
            self.use_all(&self.find(|c| *c == Claim::Hypothetical));
        }
        // "by revenue", "ranked by units": the measure's own word.
        for i in self.find(|c| *c == Claim::By) {
            if self.next(i).is_some_and(|n| {
                matches!(
                    claims[n].claim,
                    Claim::Revenue | Claim::Sold | Claim::Worth | Claim::Count | Claim::Rank { .. }
                ) || (matches!(claims[n].claim, Claim::Column { .. })
                    && self.column_concept(n).is_some_and(Concept::is_number))
                    || matches!(claims[n].claim, Claim::Table { .. } if measure == Some(Measure::Rows))
            }) {
                self.used[i] = true;
            }
        }

        // The related figure per subject row.
        if let Some(f) = related_facts {
            let related_measure = match measure {
                Some(Measure::Column(t, c)) if t == f => Measure::Column(t, c),
                Some(Measure::Money) => Measure::Money,
                Some(Measure::Rows) | None => Measure::Rows,
                Some(other) => other,
            };
            plan.related = Some(Related {
                facts: f,
                measure: related_measure,
                conditions: std::mem::take(&mut fact_conditions),
            });
            plan.having = related_having.clone();
        } else if !fact_conditions.is_empty() {
            subject_conditions.append(&mut fact_conditions);
        }
        plan.conditions = subject_conditions;
        plan.measure = match (&plan.related, measure) {
            (Some(_), _) => Measure::Rows,
            (None, Some(m)) => m,
            (None, None) => Measure::Rows,
        };
        self.use_all(&numeric_used);

        // "every customer", "across all products", "per order" with an average: the subject's
        // own rows, each of them.
        for g in self.find(|c| *c == Claim::Group) {
            if self.used[g] {
                continue;
            }
            if let Some(next) = self.next(g)
                && let Claim::Table { table, .. } = claims[next].claim
                && (table == subject || Some(table) == facts && !aggregates.is_empty())
            {
                self.used[g] = true;
                self.used[next] = true;
            }
        }
        // A table named beside a value of it ("US customers", "customers from Japan"): the
        // condition's context.
        for i in &tables {
            let (table, _) = table_of(*i);
            let after_by = self
                .previous(*i)
                .is_some_and(|p| claims[p].claim == Claim::By);
            if !self.used[*i]
                && (role_of_table(*i) == "subject" || after_by)
                && plan
                    .conditions
                    .iter()
                    .chain(plan.related.iter().flat_map(|r| &r.conditions))
                    .any(|c| c.table == table)
            {
                self.used[*i] = true;
                // "placed by customers from Canada".
                if let Some(p) = self.previous(*i)
                    && claims[p].claim == Claim::By
                {
                    self.used[p] = true;
                }
            }
        }
        let named_rows = plan.conditions.iter().any(|c| {
            c.table == subject
                && matches!(
                    schema.entities[c.table].columns[c.column].concept,
                    Concept::Label | Concept::Key
                )
        });
        // "products in stock", "How many products are in stock?": stock above zero, unless the
        // stock of named rows is asked ("How many Yoga Mats are in stock?").
        if let Some(s) = stock_column
            && !self.used[s]
            && !named_rows
            && self.compare_beside(s).is_none_or(|c| {
                matches!(self.claims()[c].claim, Claim::Compare { money: true, .. })
            })
            && self.said(s).to_lowercase().contains("in stock")
            && let Some((t, c)) = self.concept_column(subject, Concept::Stock)
        {
            let condition = Condition {
                table: t,
                column: c,
                test: Test::Compare(Op::Gt, 0.0),
            };
            if percent.is_empty() {
                plan.conditions.push(condition);
            } else {
                plan.share.push(condition);
            }
            self.used[s] = true;
            if plan.measure == Measure::Column(t, c) {
                plan.measure = Measure::Rows;
            }
        }
        // Columns to show: those named and not used otherwise (email, country, category).
        let mut show: Vec<(usize, usize)> = Vec::new();
        for c in &columns {
            if self.used[*c] {
                continue;
            }
            let candidates = self.column_candidates(*c);
            let reachable = candidates
                .iter()
                .copied()
                .filter(|(t, _)| schema.path(subject, *t).is_some())
                .min_by_key(|(t, _)| usize::from(*t != subject));
            if let Some(found) = reachable {
                show.push(found);
                self.used[*c] = true;
            }
        }
        // "when" and "where" ask for a date or a place; "who" for the person of a row.
        if !when.is_empty() {
            let date = show
                .iter()
                .copied()
                .find(|(t, c)| schema.entities[*t].columns[*c].concept.is_date())
                .or_else(|| self.date_of(subject));
            match date {
                Some(found) => {
                    if !show.contains(&found) {
                        show.push(found);
                    }
                    self.use_all(&when);
                    self.use_all(&relations);
                }
                None => {
                    return Err(cannot(
                        format!(
                            "the question asks \"when\", and {} has no date",
                            self.entity_word(subject, true)
                        ),
                        vec!["when".into()],
                    ));
                }
            }
        }
        if !where_.is_empty() {
            match self.concept_column(subject, Concept::Place) {
                Some(found) => {
                    if !show.contains(&found) {
                        show.push(found);
                    }
                    self.use_all(&where_);
                }
                None => {
                    return Err(cannot(
                        format!(
                            "the question asks \"where\", and {} has no place",
                            self.entity_word(subject, true)
                        ),
                        vec!["where".into()],
                    ));
                }
            }
        }
        if show_person {
            if let Some(p) = people
                && let Some(label) = schema.entities[p].label
                && schema.path(subject, p).is_some()
            {
                show.push((p, label));
                self.use_all(&who);
                self.use_all(&relations);
            }
        } else {
            self.use_all(&who);
        }
        // "What product was in order 210?", "Which customer placed order 150?": the name of a
        // row the subject refers to.
        for t in &tables {
            let (table, plural) = table_of(*t);
            if !self.used[*t]
                && !plural
                && table != subject
                && role_of_table(*t) == "subject"
                && schema.path(subject, table).is_some()
                && let Some(label) = schema.entities[table].label
            {
                if !show.contains(&(table, label)) {
                    show.push((table, label));
                }
                self.used[*t] = true;
                self.use_all(&relations);
            }
        }
        plan.show = show;

        // The shape of the answer.
        let rank = ranks.first().map(|i| match claims[*i].claim {
            Claim::Rank { descending, by } => (descending, by),
            _ => unreachable!(),
        });
        let limit_claims = self.find(|c| matches!(c, Claim::Number { .. }));
        let limit = limit_claims.iter().copied().find_map(|n| {
            let Claim::Number {
                value,
                money: false,
                percent: false,
            } = claims[n].claim
            else {
                return None;
            };
            let near_rank = [self.previous(n), self.next(n)]
                .into_iter()
                .flatten()
                .any(|x| matches!(claims[x].claim, Claim::Rank { .. } | Claim::Table { .. }));
            (near_rank && value.fract() == 0.0 && (1.0..=100.0).contains(&value))
                .then_some((n, value as usize))
        });
        let single_asked =
            tables.iter().any(|i| !table_of(*i).1) || (!who.is_empty() && !self.said_plural_who());

        if !percent.is_empty() {
            self.use_all(&percent);
            self.use_all(&how_much);
            self.use_all(&aggregates);
            plan.shape = Shape::Share;
            // Conditions after the subject (or the measure word) are the numerator's.
            let anchor = subject_claim
                .or_else(|| money_words.first().copied())
                .unwrap_or(percent[0]);
            let anchor_position = claims[anchor].first;
            let mut denominator = Vec::new();
            for condition in plan.conditions.drain(..) {
                let position = self.position_of_condition(&condition);
                let is_period = matches!(condition.test, Test::Range(..));
                let is_basis = plan.basis_condition.as_ref() == Some(&condition);
                if !is_period && !is_basis && position.is_some_and(|p| p > anchor_position) {
                    plan.share.push(condition);
                } else {
                    denominator.push(condition);
                }
            }
            plan.conditions = denominator;
            if plan.related.is_some() {
                plan.share_having = std::mem::take(&mut plan.having);
            }
            if let Some(related) = &mut plan.related
                && !plan.share_having.is_empty()
                && related.measure == Measure::Rows
            {
                // fine: "customers who never ordered" among all customers
            }
            // "the return rate": the one condition named is the part.
            let parts: Vec<usize> = plan
                .conditions
                .iter()
                .enumerate()
                .filter(|(_, c)| {
                    !matches!(c.test, Test::Range(..)) && plan.basis_condition.as_ref() != Some(*c)
                })
                .map(|(i, _)| i)
                .collect();
            if plan.share.is_empty() && plan.share_having.is_empty() && parts.len() == 1 {
                let part = plan.conditions.remove(parts[0]);
                plan.share.push(part);
            }
            if plan.share.is_empty() && plan.share_having.is_empty() {
                // "What share of revenue comes from Electronics": conditions named after the
                // measure word but before … any value is the numerator.
                return Err(cannot(
                    "the question asks for a percentage but I cannot tell of which part",
                    Vec::new(),
                ));
            }
        } else if let Some(group) = plan.group {
            let agg = aggregates
                .iter()
                .find_map(|i| match claims[*i].claim {
                    Claim::Aggregate(a) => Some(a),
                    _ => None,
                })
                .unwrap_or(Agg::Sum);
            self.use_all(&aggregates);
            self.use_all(&counts);
            self.use_all(&how_much);
            let top = match rank {
                Some((descending, by)) => {
                    self.use_all(&ranks);
                    let counted_any = tables
                        .iter()
                        .any(|t| matches!(role_of_table(*t), "counted" | "unit"));
                    if by == Ranked::Measure
                        && plan.measure == Measure::Rows
                        && !counted_any
                        && counts.is_empty()
                        && plan.related.is_none()
                    {
                        // "Which month was best?": best by what?
                        return Err(self.ambiguous_rank(ranks[0]));
                    }
                    let n = limit.map(|(i, n)| {
                        self.used[i] = true;
                        n
                    });
                    Some((descending, n.unwrap_or(1)))
                }
                None => None,
            };
            for t in &tables {
                if table_of(*t).0 == subject
                    || matches!(group, Grouping::Column(gt, _) if gt == table_of(*t).0)
                {
                    self.used[*t] = true;
                }
            }
            if let Some(related) = plan.related.take() {
                // Grouped figures come from the facts themselves.
                plan.subject = related.facts;
                plan.measure = related.measure;
                plan.conditions.extend(related.conditions);
                plan.having = Vec::new();
            }
            // A count per group with a comparison: groups with more than N.
            if !related_having.is_empty() {
                plan.having = related_having.clone();
            }
            plan.shape = Shape::Groups { agg, top };
        } else if let Some((descending, by)) = rank {
            self.use_all(&ranks);
            self.use_all(&aggregates);
            self.use_all(&how_much);
            if by == Ranked::Measure && measure.is_none() && plan.related.is_none() {
                return Err(self.ambiguous_rank(ranks[0]));
            }
            let n = limit.map(|(i, n)| {
                self.used[i] = true;
                n
            });
            // "the second highest price": one place of the ranking.
            let ordinal = self.find(|c| matches!(c, Claim::Ordinal(_)));
            let place = ordinal.first().map(|o| match claims[*o].claim {
                Claim::Ordinal(place) => place,
                _ => 1,
            });
            self.use_all(&ordinal);
            plan.single = n.is_none() && single_asked;
            plan.shape = Shape::Top {
                descending,
                limit: place.or(n).unwrap_or(1),
                only: place.is_some(),
            };
        } else if per_entity.is_some() {
            self.use_all(&aggregates);
            self.use_all(&counts);
            let agg = aggregates
                .iter()
                .find_map(|i| match claims[*i].claim {
                    Claim::Aggregate(a) if a != Agg::Sum => Some(a),
                    _ => None,
                })
                .unwrap_or(Agg::Avg);
            plan.shape = Shape::Figure(agg);
        } else if let Some((counted, (t, c))) = counts.first().and_then(|k| {
            // "How many categories are there?", "How many countries do our customers come
            // from?": the different values of a column.
            let next = self.next(*k)?;
            let found = self.dimension(&self.column_candidates(next), Some(subject))?;
            let said = self.said(next).to_lowercase();
            let concept = schema.entities[found.0].columns[found.1].concept;
            (said.ends_with('s') && concept != Concept::Label && plan.conditions.is_empty())
                .then_some((next, found))
        }) {
            self.used[counted] = true;
            self.use_all(&counts);
            for i in &tables {
                if table_of(*i).0 == t {
                    self.used[*i] = true;
                }
            }
            plan.show.retain(|s| *s != (t, c));
            plan.shape = Shape::Values(t, c);
        } else if !counts.is_empty()
            && (measure_on_facts
                || !named_rows
                || !matches!(plan.measure, Measure::Column(t, c) if schema.entities[t].columns[c].concept == Concept::Stock))
        {
            self.use_all(&counts);
            self.use_all(&aggregates);
            if plan.measure != Measure::Rows && plan.related.is_none() {
                // "How many units …": the units added up.
                plan.shape = Shape::Figure(Agg::Sum);
            } else {
                plan.shape = Shape::Count;
            }
            // "How many customers do we have in total": the count is the total.
        } else if let Some(agg) = aggregates.iter().find_map(|i| match claims[*i].claim {
            Claim::Aggregate(a) => Some(a),
            _ => None,
        }) {
            self.use_all(&aggregates);
            self.use_all(&how_much);
            if plan.measure == Measure::Rows && plan.related.is_none() {
                if agg == Agg::Sum {
                    plan.shape = Shape::Count;
                } else {
                    return Err(cannot(
                        format!(
                            "the question asks for the {} of {}, and names nothing to average or compare",
                            self.said(aggregates[0]),
                            self.entity_word(subject, true)
                        ),
                        vec![self.said(aggregates[0])],
                    ));
                }
            } else {
                plan.shape = Shape::Figure(agg);
            }
        } else if !how_much.is_empty()
            && plan.measure != Measure::Rows
            && plan.related.is_none()
            && !is_lookup(&plan, schema)
        {
            self.use_all(&how_much);
            plan.shape = Shape::Figure(Agg::Sum);
        } else if let Some(distinct) = self.distinct_column(&columns, subject, &plan) {
            self.used[distinct.0] = true;
            self.use_all(&self.find(|c| *c == Claim::Distinct));
            plan.show.retain(|s| *s != distinct.1);
            plan.shape = Shape::Values(distinct.1.0, distinct.1.1);
        } else {
            self.use_all(&how_much);
            self.use_all(&counts);
            // A lookup or a list: the rows, with the columns asked for; a numeric measure named
            // without an operation is shown ("how many Yoga Mats in stock").
            if let Measure::Column(t, c) = plan.measure
                && !plan.show.contains(&(t, c))
            {
                plan.show.push((t, c));
            }
            // "Revenue for Q1 2025?", "the revenue from Books": a measure of money, named
            // without an operation, is its total.

            if let Some(related) = &plan.related
                && related.measure != Measure::Rows
                && plan.having.is_empty()
            {
                // "How much has each customer spent": shown per row.
            }
            // "Do we have any customers in Italy?", "Are there any pending orders?": how many.
            let yes_no = self.reading.tokens.first().is_some_and(|t| {
                matches!(
                    t.lower.as_str(),
                    "is" | "are" | "do" | "does" | "did" | "has" | "have" | "was" | "were" | "any"
                )
            });
            plan.shape = if figure_question
                && plan.related.is_none()
                && matches!(plan.measure, Measure::Money | Measure::StockValue)
            {
                Shape::Figure(Agg::Sum)
            } else if yes_no && plan.show.is_empty() && !named_rows {
                Shape::Count
            } else {
                Shape::Rows
            };
        }
        // A basket's rows are listed with their prices; the total is computed after.
        if !plan.basket.is_empty() {
            self.use_all(&aggregates);
            self.use_all(&how_much);
            plan.shape = Shape::Rows;
        }
        // "What did order 33 contain?": "contain", "include" with nothing to add are "with".
        self.use_all(&self.find(|c| *c == Claim::Include));
        // One row named and nothing asked of it: all of it, with the names it refers to.
        if plan.shape == Shape::Rows
            && plan.show.is_empty()
            && plan.related.is_none()
            && plan.conditions.iter().any(|c| {
                let concept = schema.entities[c.table].columns[c.column].concept;
                c.table == subject
                    && matches!(concept, Concept::Key | Concept::Label)
                    && matches!(&c.test, Test::In(v) if v.len() == 1)
            })
        {
            for (index, column) in schema.entities[subject].columns.iter().enumerate() {
                match column.concept {
                    Concept::Key | Concept::Label => {}
                    Concept::Reference => {
                        if let Some(referenced) = column.references
                            && let Some(label) = schema.entities[referenced].label
                        {
                            plan.show.push((referenced, label));
                        }
                    }
                    _ => plan.show.push((subject, index)),
                }
            }
        }
        // Rows of the facts listed with what they refer to ("What did Julia Garcia order?": her
        // orders with their products), except what a condition fixes.
        if plan.shape == Shape::Rows
            && plan.show.is_empty()
            && plan.related.is_none()
            && Some(subject) == facts
        {
            for column in &schema.entities[subject].columns {
                if let Some(referenced) = column.references
                    && let Some(label) = schema.entities[referenced].label
                    && !plan
                        .conditions
                        .iter()
                        .any(|c| c.table == referenced && c.column == label)
                {
                    plan.show.push((referenced, label));
                }
            }
            if let Some(quantity) = schema.entities[subject].column(Concept::Quantity) {
                plan.show.push((subject, quantity));
            }
        }
        // Single-row parts of speech that only shape the answer.
        self.use_all(&self.find(|c| matches!(c, Claim::Single)));
        // "the distinct/different …" with another shape.
        let distinct = self.find(|c| *c == Claim::Distinct);
        if matches!(plan.shape, Shape::Count | Shape::Rows) {
            self.use_all(&distinct);
        }
        // Dates and text are not added up or averaged.
        let summed = match plan.shape {
            Shape::Figure(agg) | Shape::Groups { agg, .. } => {
                matches!(agg, Agg::Sum | Agg::Avg | Agg::Median)
            }
            _ => false,
        };
        if summed
            && let Measure::Column(t, c) = plan.measure
            && !schema.entities[t].columns[c].concept.is_number()
        {
            return Err(cannot(
                format!(
                    "the question would add up or average {}, which is no number",
                    self.column_name(t, c)
                ),
                Vec::new(),
            ));
        }
        // Basis of counts of facts: every status, unless one is named.
        if Some(plan.subject) == facts
            && matches!(
                plan.shape,
                Shape::Count | Shape::Share | Shape::Groups { .. }
            )
            && plan.measure == Measure::Rows
            && !status_named
            && plan.basis.is_empty()
            && let Some(f) = facts
            && schema.entities[f].column(Concept::Status).is_some()
        {
            plan.basis
                .push(format!("{} of every status", self.entity_word(f, true)));
        }
        Ok(plan)
    }

    /// A table's part in the question: the subject, a unit after a number ("more than 5
    /// orders"), counted ("the most orders", "never ordered"), or a grouping ("per customer").
    fn role(&self, i: usize) -> &'static str {
        let claims = self.claims();
        let Claim::Table { plural, .. } = claims[i].claim else {
            return "";
        };
        let previous = self.previous(i).map(|p| &claims[p].claim);
        match previous {
            Some(Claim::Compare { .. }) => "unit",
            Some(Claim::Rank {
                by: Ranked::Measure,
                ..
            }) if plural => "counted",
            Some(Claim::Group | Claim::By) => "group",
            Some(Claim::Negation) => "counted",
            Some(Claim::Relation)
                if plural
                    || self
                        .previous(self.previous(i).unwrap_or(0))
                        .is_some_and(|p| claims[p].claim == Claim::Negation) =>
            {
                "counted"
            }
            _ => "subject",
        }
    }

    fn said_plural_who(&self) -> bool {
        self.reading.tokens.iter().any(|t| {
            matches!(
                t.lower.as_str(),
                "are" | "were" | "customers" | "people" | "all"
            )
        })
    }

    /// Where in the task a condition's claim is.
    fn position_of_condition(&self, condition: &Condition) -> Option<usize> {
        self.claims().iter().find_map(|c| match &c.claim {
            Claim::Value { table, column, .. }
                if *table == condition.table && *column == condition.column =>
            {
                Some(c.first)
            }
            Claim::Compare { .. } | Claim::OutOfStock
                if matches!(condition.test, Test::Compare(..) | Test::Between(..)) =>
            {
                Some(c.first)
            }
            _ => None,
        })
    }

    /// "best by what?": the measures that would work.
    fn ambiguous_rank(&self, index: usize) -> Cannot {
        let said = self.said(index);
        let mut options: Vec<String> = Vec::new();
        if self.schema.money_of_fact().is_some() {
            options.push("revenue (\"spent the most\", \"the highest revenue\")".into());
        }
        if let Some(f) = self.schema.facts() {
            options.push(format!(
                "the number of {} (\"the most {}\")",
                self.entity_word(f, true),
                self.entity_word(f, true)
            ));
            if self.schema.entities[f].column(Concept::Quantity).is_some() {
                options.push("units sold (\"sold the most units\")".into());
            }
        }
        cannot(
            format!(
                "\"{said}\" does not say what to rank by; say which measure, e.g. {}",
                options.join(", ")
            ),
            vec![said],
        )
    }

    fn column_candidates(&self, index: usize) -> Vec<(usize, usize)> {
        match &self.claims()[index].claim {
            Claim::Column { candidates } => candidates.clone(),
            _ => Vec::new(),
        }
    }

    fn column_concept(&self, index: usize) -> Option<Concept> {
        self.column_candidates(index)
            .first()
            .map(|(t, c)| self.schema.entities[*t].columns[*c].concept)
    }

    fn is_column(&self, index: usize, concept: Concept) -> bool {
        self.column_candidates(index)
            .iter()
            .any(|(t, c)| self.schema.entities[*t].columns[*c].concept == concept)
    }

    /// A comparison right before or after a claim.
    fn compare_beside(&self, index: usize) -> Option<usize> {
        [self.previous(index), self.next(index)]
            .into_iter()
            .flatten()
            .find(|i| matches!(self.claims()[*i].claim, Claim::Compare { .. }))
    }

    /// A grouping column among the candidates: a dimension (or a label) of the subject or of a
    /// table it reaches, else of the facts.
    fn dimension(
        &self,
        candidates: &[(usize, usize)],
        subject: Option<usize>,
    ) -> Option<(usize, usize)> {
        let schema = self.schema;
        let usable: Vec<(usize, usize)> = candidates
            .iter()
            .copied()
            .filter(|(t, c)| {
                let concept = schema.entities[*t].columns[*c].concept;
                concept.is_dimension() || concept == Concept::Label
            })
            .collect();
        usable.iter().copied().min_by_key(|(t, _)| match subject {
            Some(s) if *t == s => 0,
            Some(s) if schema.path(s, *t).is_some() => 1,
            _ => 2,
        })
    }

    /// The date column a part groups: the facts' date for the facts, else the table's.
    fn date_for_part(&self, table: Option<usize>) -> Option<(usize, usize)> {
        let table = table.or(self.schema.facts())?;
        self.date_of(table)
            .or_else(|| self.schema.facts().and_then(|f| self.date_of(f)))
    }

    fn date_of(&self, table: usize) -> Option<(usize, usize)> {
        self.schema.entities[table]
            .date_column()
            .map(|c| (table, c))
    }

    /// A column of a concept on the table, or on a table it reaches.
    fn concept_column(&self, table: usize, concept: Concept) -> Option<(usize, usize)> {
        if let Some(c) = self.schema.entities[table].column(concept) {
            return Some((table, c));
        }
        self.schema
            .entities
            .iter()
            .enumerate()
            .filter(|(t, _)| self.schema.path(table, *t).is_some())
            .find_map(|(t, e)| e.column(concept).map(|c| (t, c)))
    }

    /// "What are the different order statuses?", "What categories do we have?": the values of
    /// a dimension column, when nothing else is asked.
    fn distinct_column(
        &self,
        columns: &[usize],
        subject: usize,
        plan: &Plan,
    ) -> Option<(usize, (usize, usize))> {
        if !plan.conditions.is_empty() || plan.related.is_some() {
            return None;
        }
        let distinct = self.reading.has(|c| *c == Claim::Distinct);
        columns.iter().copied().find_map(|c| {
            let said = self.said(c).to_lowercase();
            let plural = said.ends_with('s') && !said.ends_with("ss") || said.ends_with("ies");
            if !(distinct || plural) {
                return None;
            }
            let found = self.dimension(&self.column_candidates(c), Some(subject))?;
            let concept = self.schema.entities[found.0].columns[found.1].concept;
            (concept != Concept::Label).then_some((c, found))
        })
    }
}

/// A lookup: named rows and columns to show.
fn is_lookup(plan: &Plan, schema: &Schema) -> bool {
    !plan.show.is_empty()
        && plan.conditions.iter().any(|c| {
            let concept = schema.entities[c.table].columns[c.column].concept;
            matches!(concept, Concept::Label | Concept::Key)
        })
}

fn quote_list(parts: &[String]) -> String {
    parts
        .iter()
        .map(|p| format!("\"{p}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn plural_column(name: &str) -> String {
    super::schema::plural(name)
}

fn month_name(month: u32) -> &'static str {
    [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ]
    .get(month as usize - 1)
    .copied()
    .unwrap_or("")
}

/// The years whose `month` lies in `[first, last]` (ISO dates or timestamps).
fn years_with_month(first: &str, last: &str, month: u32) -> Vec<i32> {
    let year = |s: &str| s.get(..4).and_then(|y| y.parse::<i32>().ok());
    let month_of = |s: &str| s.get(5..7).and_then(|m| m.parse::<u32>().ok());
    let (Some(y0), Some(y1), Some(m0), Some(m1)) =
        (year(first), year(last), month_of(first), month_of(last))
    else {
        return Vec::new();
    };
    (y0..=y1)
        .filter(|y| (*y > y0 || month >= m0) && (*y < y1 || month <= m1))
        .collect()
}
