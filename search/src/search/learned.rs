//! The rerank stage's learned scorer: per (request, tool) features the query has computed
//! anyway, and a linear correction of the first stage's textual score with weights learned on
//! the dev halves of the evaluation sets (`search-eval --train`, docs/search.md "Learned
//! rerank"), frozen here as constants.
//!
//! Every feature lies in [−1, 1] (most in [0, 1]), so the correction is bounded
//! (`correction_bounds`) and the query can still skip the tools that cannot reach the top.

use crate::concepts::Action;
use crate::index::{DESCRIPTION, FIELDS, NAME, PARAMETERS, SERVER};

/// The number of features.
pub const FEATURES: usize = 15;

/// What each feature is, in order (the trainer prints them beside the weights).
pub const FEATURE_NAMES: [&str; FEATURES] = [
    "first-stage textual score",
    "lexical score / best lexical score",
    "cosine",
    "share of the request's words matched",
    "share of the name's words matched",
    "share of the request's words in the name",
    "share of the request's words in the description",
    "share of the request's words in the parameters",
    "share of the request's words in the server's text",
    "the tool does the action asked for",
    "a read-only tool when a change was asked",
    "a listing tool of a plural kind asked for",
    "deprecated",
    "cosine − best cosine among the reranked",
    "cosine × share of the request no tool matches",
];

/// The weights, on the lexical share of the score (1 − σ: the correction is multiplied by it,
/// so it counts less as the embedding counts more, as the embedding already says much of what
/// the words' places say); the first is 1: the correction is added to the first stage's
/// score, on its scale, so the priors keep their meaning. Name coverage alone, 0.11: learned
/// weights over all the features did not beat it on a set left out (`search-eval --train`,
/// docs/search.md "Learned rerank").
pub const WEIGHTS: [f32; FEATURES] = [
    1.0, 0.0, 0.0, 0.0, 0.11, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
];

/// What the features of one tool are computed from.
pub(super) struct ToolEvidence {
    pub(super) text_score: f32,
    pub(super) lexical_norm: f32,
    pub(super) cosine: f32,
    pub(super) best_cosine: f32,
    pub(super) matched: u16,
    pub(super) field_matched: [u16; FIELDS],
    pub(super) name_terms: u8,
    pub(super) action: Option<Action>,
    pub(super) plural_named: bool,
    pub(super) lists: bool,
    pub(super) deprecated: bool,
}

/// What the features of every tool of one query share.
pub(super) struct QueryEvidence<'a> {
    pub(super) groups: usize,
    pub(super) best_share: f32,
    pub(super) asked: &'a [Action],
}

/// The features of one tool for one query.
pub(super) fn features(tool: &ToolEvidence, query: &QueryEvidence<'_>) -> [f32; FEATURES] {
    let share = |count: u16| {
        if query.groups == 0 {
            0.0
        } else {
            (f32::from(count) / query.groups as f32).min(1.0)
        }
    };
    let name_coverage = if tool.name_terms == 0 {
        0.0
    } else {
        (f32::from(tool.field_matched[NAME]) / f32::from(tool.name_terms)).min(1.0)
    };
    let asks_mutation = query.asked.iter().any(|a| a.mutates());
    let flag = |on: bool| if on { 1.0 } else { 0.0 };
    let action_match = tool.action.is_some_and(|a| query.asked.contains(&a));
    let unasked_read = tool.action.is_some_and(|a| !a.mutates()) && asks_mutation && !action_match;
    let cosine = tool.cosine.clamp(-1.0, 1.0);
    [
        tool.text_score.clamp(-1.0, 1.5),
        tool.lexical_norm.clamp(0.0, 1.0),
        cosine,
        share(tool.matched),
        name_coverage,
        share(tool.field_matched[NAME]),
        share(tool.field_matched[DESCRIPTION]),
        share(tool.field_matched[PARAMETERS]),
        share(tool.field_matched[SERVER]),
        flag(action_match),
        flag(unasked_read),
        flag(tool.lists && tool.plural_named),
        flag(tool.deprecated),
        (cosine - tool.best_cosine).clamp(-1.0, 0.0),
        cosine * (1.0 - query.best_share).clamp(0.0, 1.0),
    ]
}

/// The correction `weights` add to a tool's first-stage score (before the lexical share):
/// every weight but the first (which scales the first-stage score itself and is 1) times its
/// feature.
pub(super) fn correction(weights: &[f32; FEATURES], features: &[f32; FEATURES]) -> f32 {
    weights[1..]
        .iter()
        .zip(&features[1..])
        .map(|(w, f)| w * f)
        .sum()
}

/// The least and the most the correction of `weights` can be, from the features' ranges: the
/// bounds a query prunes with.
pub(super) fn correction_bounds(weights: &[f32; FEATURES]) -> (f32, f32) {
    // Ranges of features 1.. (feature 0 is the first-stage score, not part of the correction).
    const RANGES: [(f32, f32); FEATURES] = [
        (0.0, 0.0),
        (0.0, 1.0),
        (-1.0, 1.0),
        (0.0, 1.0),
        (0.0, 1.0),
        (0.0, 1.0),
        (0.0, 1.0),
        (0.0, 1.0),
        (0.0, 1.0),
        (0.0, 1.0),
        (0.0, 1.0),
        (0.0, 1.0),
        (0.0, 1.0),
        (-1.0, 0.0),
        (-1.0, 1.0),
    ];
    let mut low = 0.0;
    let mut high = 0.0;
    for (weight, (from, to)) in weights.iter().zip(RANGES).skip(1) {
        let (a, b) = (weight * from, weight * to);
        low += a.min(b);
        high += a.max(b);
    }
    (low, high)
}
