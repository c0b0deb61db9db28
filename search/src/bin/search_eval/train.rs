//! `search-eval --train`: learns the rerank stage's weights (`search::FEATURES`) from the dev
//! halves of the given sets, and says how well they generalise: leave one set out (learn on the
//! others' dev halves, measure on its dev half), then learn on all of them and print the
//! weights as the Rust constants `search/src/search/learned.rs` holds. Test halves are never
//! read.
//!
//! The model is linear and the loss listwise: for each request, the softmax over the first
//! stage's best `RERANK_DEPTH` of the learned scores, and the cross-entropy of the expected
//! tools' share (requests whose expected tool is not among them teach nothing and are left
//! out); each set weighs the same whatever its number of requests; an L2 penalty keeps the
//! weights small. Plain full-batch gradient descent with Adam's step sizes, from fixed starting
//! weights, so a run is deterministic.

use tool_cli_search::eval::{Metrics, Request};
use tool_cli_search::index::Index;
use tool_cli_search::search::{FEATURE_NAMES, FEATURES, MAX_LIMIT, Query, Signals};

/// One request's first-stage candidates.
pub(crate) struct Example {
    /// The features of the first stage's best `RERANK_DEPTH`, best first.
    candidates: Vec<[f32; FEATURES]>,
    /// Which of them are an expected tool.
    expected: Vec<bool>,
    /// The first stage's rank of the first expected tool beyond the reranked ones (1-based).
    beyond: Option<usize>,
}

/// The examples of `requests` on `index`.
pub(crate) fn examples(index: &Index, requests: &[Request], signals: Signals) -> Vec<Example> {
    requests
        .iter()
        .map(|request| {
            let query = Query {
                limit: MAX_LIMIT,
                signals,
                ..Query::new(&request.query)
            };
            let ranking = index.rerank_candidates(&query).unwrap_or_default();
            let is_expected = |server: &str, tool: &str| {
                request
                    .expected
                    .iter()
                    .any(|(s, t)| s == server && t == tool)
            };
            let mut example = Example {
                candidates: Vec::new(),
                expected: Vec::new(),
                beyond: None,
            };
            for (position, candidate) in ranking.iter().enumerate() {
                match candidate.features {
                    Some(features) => {
                        example.candidates.push(features);
                        example
                            .expected
                            .push(is_expected(&candidate.server, &candidate.tool));
                    }
                    None => {
                        if example.beyond.is_none()
                            && is_expected(&candidate.server, &candidate.tool)
                        {
                            example.beyond = Some(position + 1);
                        }
                    }
                }
            }
            example
        })
        .collect()
}

fn score(weights: &[f64; FEATURES], features: &[f32; FEATURES]) -> f64 {
    weights
        .iter()
        .zip(features)
        .map(|(w, f)| w * f64::from(*f))
        .sum()
}

/// The metrics of ranking each example's candidates by `weights` (the rest of the first
/// stage's ranking after them, in its order).
pub(crate) fn measure(examples: &[Example], weights: &[f64; FEATURES]) -> Metrics {
    let ranks: Vec<Option<usize>> = examples
        .iter()
        .map(|example| {
            let scores: Vec<f64> = example
                .candidates
                .iter()
                .map(|features| score(weights, features))
                .collect();
            let mut order: Vec<usize> = (0..scores.len()).collect();
            order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
            order
                .iter()
                .position(|&candidate| example.expected[candidate])
                .map(|position| position + 1)
                .or(example.beyond)
        })
        .collect();
    Metrics::from_ranks(&ranks)
}

/// The loss and its gradient over `sets` (each set's mean, averaged over sets).
fn loss_and_gradient(
    sets: &[&[Example]],
    weights: &[f64; FEATURES],
    l2: f64,
) -> (f64, [f64; FEATURES]) {
    let mut loss = 0.0;
    let mut gradient = [0.0; FEATURES];
    for examples in sets {
        let usable: Vec<&Example> = examples
            .iter()
            .filter(|e| e.expected.iter().any(|x| *x))
            .collect();
        if usable.is_empty() {
            continue;
        }
        let share = 1.0 / (usable.len() as f64 * sets.len() as f64);
        for example in usable {
            let scores: Vec<f64> = example
                .candidates
                .iter()
                .map(|features| score(weights, features))
                .collect();
            let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let exp: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
            let all: f64 = exp.iter().sum();
            let wanted: f64 = exp
                .iter()
                .zip(&example.expected)
                .filter(|(_, e)| **e)
                .map(|(x, _)| x)
                .sum();
            loss += share * -(wanted / all).ln();
            for ((features, x), expected) in
                example.candidates.iter().zip(&exp).zip(&example.expected)
            {
                // d(−ln(wanted/all))/ds_i = p_i − q_i, p the softmax, q the share among the
                // expected ones.
                let p = x / all;
                let q = if *expected { x / wanted } else { 0.0 };
                for (g, f) in gradient.iter_mut().zip(features) {
                    *g += share * (p - q) * f64::from(*f);
                }
            }
        }
    }
    for (i, (g, w)) in gradient.iter_mut().zip(weights).enumerate() {
        if i > 0 {
            loss += l2 * w * w;
            *g += 2.0 * l2 * w;
        }
    }
    (loss, gradient)
}

/// Learns the weights on `sets`, from the first-stage ranking (weight 1 on the first-stage
/// score, 0 elsewhere), rescaled at the end so the first weight is 1.
pub(crate) fn learn(sets: &[&[Example]], l2: f64) -> [f64; FEATURES] {
    let mut weights = [0.0; FEATURES];
    // A first-stage score of 1 against 0.5 is e^5 times likelier: a sharp enough start.
    weights[0] = 10.0;
    let (rate, beta1, beta2) = (0.05, 0.9, 0.999);
    let mut first = [0.0; FEATURES];
    let mut second = [0.0; FEATURES];
    for step in 1..=3000 {
        let (_, gradient) = loss_and_gradient(sets, &weights, l2);
        for i in 0..FEATURES {
            first[i] = beta1 * first[i] + (1.0 - beta1) * gradient[i];
            second[i] = beta2 * second[i] + (1.0 - beta2) * gradient[i] * gradient[i];
            let corrected_first = first[i] / (1.0 - beta1.powi(step));
            let corrected_second = second[i] / (1.0 - beta2.powi(step));
            weights[i] -= rate * corrected_first / (corrected_second.sqrt() + 1e-8);
        }
    }
    weights
}

/// `weights` scaled so the first is 1 (the ranking is the same).
pub(crate) fn normalised(weights: &[f64; FEATURES]) -> [f64; FEATURES] {
    let scale = if weights[0] > 0.0 { weights[0] } else { 1.0 };
    weights.map(|w| w / scale)
}

/// The frozen weights as `learned.rs` holds them, as f64.
pub(crate) fn frozen(weights: &[f32; FEATURES]) -> [f64; FEATURES] {
    weights.map(f64::from)
}

fn cells(metrics: &Metrics) -> String {
    format!(
        "{:.3} / {:.3} / {:.3}",
        metrics.recall_at_1, metrics.recall_at_5, metrics.mrr
    )
}

/// Prints the leave-one-set-out table and the weights learned on every set, for one kind of
/// ranking (`label`: with the hashing embedder, or with the model).
pub(crate) fn report(
    label: &str,
    names: &[String],
    per_set: &[Vec<Example>],
    current: &[f32; FEATURES],
    l2: f64,
) {
    println!("\nlearned rerank, {label}: leave one set out (dev halves; R@1 / R@5 / MRR)\n");
    println!(
        "| held out | n | first stage | current weights | learned on the others | learned on all |"
    );
    println!("|---|---|---|---|---|---|");
    let first_stage = {
        let mut weights = [0.0; FEATURES];
        weights[0] = 1.0;
        weights
    };
    let all: Vec<&[Example]> = per_set.iter().map(Vec::as_slice).collect();
    let on_all = learn(&all, l2);
    let mut macro_rows = [[0.0f64; 3]; 4];
    for (held_out, (name, examples)) in names.iter().zip(per_set).enumerate() {
        let others: Vec<&[Example]> = per_set
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != held_out)
            .map(|(_, e)| e.as_slice())
            .collect();
        let learned = learn(&others, l2);
        let rows = [
            measure(examples, &first_stage),
            measure(examples, &frozen(current)),
            measure(examples, &learned),
            measure(examples, &on_all),
        ];
        for (sum, row) in macro_rows.iter_mut().zip(&rows) {
            sum[0] += row.recall_at_1 / names.len() as f64;
            sum[1] += row.recall_at_5 / names.len() as f64;
            sum[2] += row.mrr / names.len() as f64;
        }
        println!(
            "| {name} | {} | {} | {} | {} | {} |",
            examples.len(),
            cells(&rows[0]),
            cells(&rows[1]),
            cells(&rows[2]),
            cells(&rows[3])
        );
    }
    let macro_cells: Vec<String> = macro_rows
        .iter()
        .map(|m| format!("{:.3} / {:.3} / {:.3}", m[0], m[1], m[2]))
        .collect();
    println!("| **macro** | | {} |", macro_cells.join(" | "));
    println!("\nweights learned on every dev half ({label}, L2 {l2}):\n");
    for (name, weight) in FEATURE_NAMES.iter().zip(normalised(&on_all)) {
        println!("    {weight:>9.4},  // {name}");
    }
}
