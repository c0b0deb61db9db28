//! The second half of the coverage check: a claim the plan marked as used must also show in
//! what the query will do. Marking a claim used is the plan builder's bookkeeping; this reads
//! the finished plan back against the reading and answers "cannot" when the plan quietly lost
//! a part of the question: a comparison that is in no condition ("orders worth more than
//! $500" answered with the total revenue), a stock value that is listed instead of added up,
//! "how many products" answered with a sum of a column, a ranking of a column's values
//! ("the top 3 categories") answered with a ranking of another table's rows. Pure.

use super::plan::{Cannot, Measure, Plan, Shape, Test};
use super::reading::{Claim, Reading};

/// Whether the plan honours every part of the reading it claims to; else why not.
pub(crate) fn check(task: &str, reading: &Reading, plan: &Plan) -> Result<(), Cannot> {
    let said = |index: usize| reading.said(task, &reading.claims[index]);
    let meaningful: Vec<usize> = (0..reading.claims.len())
        .filter(|i| reading.claims[*i].claim != Claim::Filler)
        .collect();

    // Every comparison is a condition somewhere: on the rows, on a related figure, or in a
    // share's numerator.
    let comparisons: Vec<usize> = meaningful
        .iter()
        .copied()
        .filter(|i| matches!(reading.claims[*i].claim, Claim::Compare { .. }))
        .collect();
    if comparisons.len() > compared_conditions(plan) {
        let parts: Vec<String> = comparisons.iter().map(|i| said(*i)).collect();
        return Err(Cannot {
            reason: format!(
                "I could not apply {} to the rows the question asks about: the query would \
                 leave it out; compare a column of those rows (\"products priced over $50\") or \
                 a count or total per row (\"customers who spent more than $1,000\")",
                quote(&parts)
            ),
            parts,
        });
    }

    // A stock value or an order's money asked for, but the rows are listed without it.
    if matches!(plan.measure, Measure::StockValue)
        && matches!(plan.shape, Shape::Rows | Shape::Count | Shape::Values(..))
    {
        let parts = parts_of(reading, task, |c| {
            matches!(c, Claim::Worth | Claim::Column { .. })
        });
        return Err(Cannot {
            reason: format!(
                "I understood {} as the worth of stock (price × stock) but could not make it \
                 the figure of the answer; ask for \"the total stock value of …\"",
                quote(&parts)
            ),
            parts,
        });
    }

    // "How many <rows> …" is a count of rows (or a share), never a sum or average of a column.
    if let Some(position) = meaningful
        .iter()
        .position(|i| reading.claims[*i].claim == Claim::HowMany)
        && let Some(&next) = meaningful.get(position + 1)
        && matches!(
            reading.claims[next].claim,
            Claim::Table { plural: true, .. }
        )
        && matches!(plan.shape, Shape::Figure(_))
        && plan.related.is_none()
        && matches!(plan.measure, Measure::Column(..) | Measure::StockValue)
    {
        let parts = vec![said(meaningful[position]), said(next)];
        return Err(Cannot {
            reason: format!(
                "{} asks for a number of rows, but I could only read the rest as a figure to add \
                 up; say what the rows must have (\"products with more than 0 in stock\")",
                quote(&parts)
            ),
            parts,
        });
    }

    // "The top 3 categories by revenue": what is ranked is the values of a column, so the plan
    // must group by it; ranking another table's rows and showing the column beside is wrong.
    if let Shape::Top { .. } = plan.shape
        && plan.group.is_none()
        && let Some(rank) = meaningful
            .iter()
            .position(|i| matches!(reading.claims[*i].claim, Claim::Rank { .. }))
        && let Some(&ranked) = meaningful[rank + 1..]
            .iter()
            .find(|i| !matches!(reading.claims[**i].claim, Claim::Number { .. }))
        && let Claim::Column { candidates } = &reading.claims[ranked].claim
        && candidates.iter().all(|(table, _)| *table != plan.subject)
        // Shown beside the ranked rows: a label of them, not what they are ranked by ("the
        // product that sold the most units" ranks products by the orders' quantity).
        && candidates.iter().any(|candidate| plan.show.contains(candidate))
    {
        let parts = vec![said(ranked)];
        return Err(Cannot {
            reason: format!(
                "the question ranks {} but I could only rank whole rows of another table; ask \
                 \"which {} has the highest …\" for one, or \"… by {}\" for every one",
                quote(&parts),
                parts[0],
                parts[0]
            ),
            parts,
        });
    }
    // One order ranked by its value ("the largest single order by value"): "value", unlike
    // "revenue", does not say whether pending or cancelled orders count, and the ranking can
    // change with it; the plan's "completed orders only" would be a guess that decides the row.
    if let Shape::Top { .. } = plan.shape
        && plan.single
        && matches!(plan.measure, Measure::Money)
        && plan.related.is_none()
        && plan
            .basis_condition
            .as_ref()
            .is_some_and(|basis| basis.table == plan.subject)
        && !reading.has(|c| *c == Claim::Revenue)
        && let Some(worth) = meaningful
            .iter()
            .copied()
            .find(|i| reading.claims[*i].claim == Claim::Worth)
    {
        let parts = vec![said(worth)];
        return Err(Cannot {
            reason: format!(
                "{} ranks single rows by their money, but does not say which statuses count                  (the highest of the completed ones and of all of them can differ); ask for the                  largest completed one, or for the highest revenue",
                quote(&parts)
            ),
            parts,
        });
    }
    Ok(())
}

/// How many comparisons the plan applies anywhere.
fn compared_conditions(plan: &Plan) -> usize {
    let compares = |test: &Test| matches!(test, Test::Compare(..) | Test::Between(..));
    plan.conditions.iter().filter(|c| compares(&c.test)).count()
        + plan.share.iter().filter(|c| compares(&c.test)).count()
        + plan
            .related
            .iter()
            .flat_map(|r| r.conditions.iter())
            .filter(|c| compares(&c.test))
            .count()
        + plan.having.len()
        + plan.share_having.len()
}

fn parts_of(reading: &Reading, task: &str, wanted: impl Fn(&Claim) -> bool) -> Vec<String> {
    reading
        .claims
        .iter()
        .filter(|c| wanted(&c.claim))
        .map(|c| reading.said(task, c))
        .collect()
}

fn quote(parts: &[String]) -> String {
    parts
        .iter()
        .map(|p| format!("\"{p}\""))
        .collect::<Vec<_>>()
        .join(", ")
}
