//! The middle of a search as separate steps over plain values, between the statistics
//! (`Index::query_stats`) and the rerank stage: what the request asks for (its actions and plural
//! kinds, `RequestIntent`), the query side of the embedding retrieval (`SemanticQuery`, with the
//! embedder's share `semantic_share`), the fusion of the lexical score with the cosine
//! (`Fusion`), the boosts and demotions of one tool (`boosts_and_demotions`), and the first
//! stage's retrieval (`Index::retrieve`), which scores only the tools that can still reach the
//! top: its bounds are `Lift`, `first_stage_depth`, `lexical_cutoff` and
//! `semantic_scan_worthwhile`. Each is a pure function of its inputs, tested on its own in
//! `stages/tests.rs`; `Index::search_or_capture` only chains them.

use crate::concepts::{self, Action};
use crate::embed;
use crate::index::Index;
use crate::index::shard::{Shard, StoredTool};
use crate::semantic::ModelRows;
use crate::text;

use super::lexical::{LexicalMatches, plural_terms};
use super::{
    ACTION_MATCH, DEPRECATED, LIST_MATCH, MAX_PRIOR_BONUS, MIN_SEMANTIC, RERANK_DEPTH, Signals,
    UNASKED_READ, learned,
};

/// What the request asks for beyond its words: the action classes of its words (read, create,
/// …; empty when `Signals::actions` is off) and the terms of its plural nouns.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct RequestIntent {
    /// The action classes of the request's words, each once, in the order they appear.
    pub(super) asked: Vec<Action>,
    /// Whether one of them changes something (create, update, delete, send, run).
    pub(super) asks_mutation: bool,
    /// The stemmed terms of the request's plural nouns (`tables` → `tabl`).
    pub(super) plural_terms: Vec<String>,
}

impl RequestIntent {
    /// The intent of `text`, with the action classes only when `signals.actions` is on.
    pub(super) fn of(text: &str, signals: Signals) -> RequestIntent {
        let mut asked: Vec<Action> = Vec::new();
        if signals.actions {
            text::analyze(text, |term, _| {
                for action in concepts::actions_of(term) {
                    if !asked.contains(action) {
                        asked.push(*action);
                    }
                }
            });
        }
        let asks_mutation = asked.iter().any(|a| a.mutates());
        RequestIntent {
            asked,
            asks_mutation,
            plural_terms: plural_terms(text),
        }
    }
}

/// The embedder's share of the textual score: `base` when the best-matching tool matches every
/// word of the request (`best_share` 1), moving linearly to `unmatched` as that share goes to
/// none; 0 when the embedding is switched off.
pub(super) fn semantic_share(base: f32, unmatched: f32, best_share: f32, embedding: bool) -> f32 {
    let share = base + (unmatched - base) * (1.0 - best_share);
    if embedding {
        share.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// The query side of the embedding retrieval: the query's vector quantised as the tools' rows
/// are, and where the tools' rows are (the model's per shard, or the index's own).
pub(super) struct SemanticQuery<'a> {
    /// Whether the model's rows rank (else the index's embedder's).
    by_model: bool,
    row: Vec<i8>,
    /// The query row's scale; 0 when nothing is compared (embedding off, or a vector of
    /// another dimension), which makes every cosine 0.
    scale: f32,
    dimensions: usize,
    /// Per shard (in the index's order), the model's rows when they belong to that shard.
    model_rows: &'a [Option<&'a ModelRows>],
}

impl<'a> SemanticQuery<'a> {
    /// The query `vector` against rows of `dimensions`, by the model's rows when `by_model`.
    pub(super) fn new(
        vector: &embed::Embedding,
        dimensions: usize,
        by_model: bool,
        embedding: bool,
        model_rows: &'a [Option<&'a ModelRows>],
    ) -> SemanticQuery<'a> {
        let mut row = Vec::with_capacity(dimensions);
        let scale = if vector.dimensions() == dimensions && embedding {
            embed::quantize_into(vector.values(), &mut row)
        } else {
            0.0
        };
        SemanticQuery {
            by_model,
            row,
            scale,
            dimensions,
            model_rows,
        }
    }

    /// The vector the cosine compares for the tool at `local` of the shard at `position`
    /// (`shard`), dequantised; `None` when nothing is compared or the tool has no model vector.
    pub(super) fn tool_vector(
        &self,
        position: usize,
        shard: &Shard,
        local: usize,
    ) -> Option<Vec<f32>> {
        if self.scale <= 0.0 {
            return None;
        }
        if self.by_model {
            return self.model_rows[position]?
                .vector(local)
                .map(|vector| vector.values().to_vec());
        }
        let row = &shard.embeddings[local * self.dimensions..(local + 1) * self.dimensions];
        let scale = shard.embedding_scales[local];
        Some(row.iter().map(|&q| f32::from(q) * scale).collect())
    }

    /// The cosine of the tool at `local` of the shard at `position` (`shard`) with the query.
    pub(super) fn cosine(&self, position: usize, shard: &Shard, local: usize) -> f32 {
        if self.by_model && self.scale > 0.0 {
            self.model_rows[position].map_or(0.0, |rows| rows.cosine(local, &self.row, self.scale))
        } else if self.scale > 0.0 {
            let row = &shard.embeddings[local * self.dimensions..(local + 1) * self.dimensions];
            embed::dot_quantized(&self.row, row) as f32 * self.scale * shard.embedding_scales[local]
        } else {
            0.0
        }
    }
}

/// Linear fusion of the lexical score (normalised by the best one) with the cosine, in the
/// embedder's proportion, and the bounds of what the later steps can make of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Fusion {
    /// σ, the cosine's share (`semantic_share`).
    pub(super) semantic_share: f32,
    /// The best lexical score of the query (0 when nothing matched).
    max_lexical: f32,
}

impl Fusion {
    /// The fusion for scores `lexical` (per tool) with the cosine's share `semantic_share`.
    pub(super) fn new(semantic_share: f32, lexical: &[f32]) -> Fusion {
        Fusion {
            semantic_share,
            max_lexical: lexical.iter().copied().fold(0.0f32, f32::max),
        }
    }

    /// The lexical score as a share of the best one.
    pub(super) fn normalise(&self, lexical_score: f32) -> f32 {
        if self.max_lexical > 0.0 {
            lexical_score / self.max_lexical
        } else {
            0.0
        }
    }

    /// 1 − σ: the lexical share, which also scales the rerank stage's correction.
    pub(super) fn lexical_share(&self) -> f32 {
        1.0 - self.semantic_share
    }

    /// `(1 − σ) · lexical / max lexical + σ · max(cos, 0)`.
    pub(super) fn fuse(&self, lexical_score: f32, cosine: f32) -> f32 {
        (1.0 - self.semantic_share) * self.normalise(lexical_score)
            + self.semantic_share * cosine.max(0.0)
    }

    /// The least a tool of this lexical score can score after fusion and every demotion.
    pub(super) fn worst_case(&self, lexical_score: f32) -> f32 {
        (1.0 - self.semantic_share)
            * self.normalise(lexical_score)
            * UNASKED_READ.min(1.0)
            * DEPRECATED
    }

    /// The most a tool of this lexical score can score after fusion and every boost.
    pub(super) fn best_case(&self, lexical_score: f32) -> f32 {
        ((1.0 - self.semantic_share) * self.normalise(lexical_score) + self.semantic_share)
            * ACTION_MATCH.max(1.0)
            * LIST_MATCH.max(1.0)
    }

    /// The most a tool with no lexical match can score, every later lift included.
    pub(super) fn semantic_only_ceiling(&self, lift: Lift) -> f32 {
        self.semantic_share * ACTION_MATCH * LIST_MATCH + lift.max
    }
}

/// What a boost or demotion looks at in a tool.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct ToolKind {
    /// The action class of its name's first action word.
    pub(super) action: Option<Action>,
    /// Whether its name lists (`list`, `enumerate`, `browse`).
    pub(super) lists: bool,
    /// Whether its description says it is deprecated.
    pub(super) deprecated: bool,
}

impl From<&StoredTool> for ToolKind {
    fn from(tool: &StoredTool) -> ToolKind {
        ToolKind {
            action: tool.action,
            lists: tool.lists,
            deprecated: tool.deprecated,
        }
    }
}

/// The boosts and demotions of one tool's fused score: its action asked for (×`ACTION_MATCH`) or
/// a read-only tool when only a change was asked (×`UNASKED_READ`); a listing tool naming a
/// plural kind of the request (×`LIST_MATCH`); deprecated (×`DEPRECATED`).
pub(super) fn boosts_and_demotions(
    fused: f32,
    tool: ToolKind,
    plural_named: bool,
    intent: &RequestIntent,
    signals: Signals,
) -> f32 {
    let mut text_score = fused;
    if let Some(action) = tool.action
        && !intent.asked.is_empty()
    {
        text_score *= if intent.asked.contains(&action) {
            ACTION_MATCH
        } else if !action.mutates() && intent.asks_mutation {
            UNASKED_READ
        } else {
            1.0
        };
    }
    // A request for several things of a kind ("show me the tables") prefers the tool that lists
    // that kind (`table_list`) over the one that gets one (`table_get`).
    if signals.actions && tool.lists && plural_named {
        text_score *= LIST_MATCH;
    }
    if signals.deprecation && tool.deprecated {
        text_score *= DEPRECATED;
    }
    text_score
}

/// How far the stages after the textual score can move a tool: up by at most `max` (the rerank
/// stage's correction and the priors), down by at most `-min` (a negative correction).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Lift {
    pub(super) min: f32,
    pub(super) max: f32,
}

/// The lift bounds for `signals`, the rerank correction being scaled by `lexical_share`.
pub(super) fn lift_bounds(signals: Signals, lexical_share: f32) -> Lift {
    let mut lift = rerank_lift(signals, lexical_share);
    if signals.late_interaction {
        lift.max += crate::late_interaction::WEIGHT * lexical_share;
    }
    if signals.feedback && signals.embedding {
        // The feedback moves a cosine in [0, 1] times σ = 1 − lexical share, either way.
        lift.max += 1.0 - lexical_share;
        lift.min -= 1.0 - lexical_share;
    }
    lift
}

fn rerank_lift(signals: Signals, lexical_share: f32) -> Lift {
    if signals.rerank {
        let (low, high) = learned::correction_bounds(&learned::WEIGHTS);
        Lift {
            min: (lexical_share * low).min(0.0),
            max: MAX_PRIOR_BONUS + (lexical_share * high).max(0.0),
        }
    } else {
        Lift {
            min: 0.0,
            max: MAX_PRIOR_BONUS,
        }
    }
}

/// How many of the best tools by textual score can reach the top `limit` after the later
/// stages (the rerank stage looks at `RERANK_DEPTH`).
pub(super) fn first_stage_depth(limit: usize, signals: Signals) -> usize {
    if signals.rerank {
        limit.max(RERANK_DEPTH)
    } else {
        limit
    }
}

/// The textual score below which a lexical match's best case can never be returned: the
/// `depth`-th best of `worst_cases` less every lift, with a margin far above rounding error;
/// −∞ when there are no more than `depth`.
pub(super) fn lexical_cutoff(mut worst_cases: Vec<f32>, depth: usize, lift: Lift) -> f32 {
    if worst_cases.len() > depth {
        let (_, kth, _) = worst_cases.select_nth_unstable_by(depth - 1, |a, b| b.total_cmp(a));
        *kth + lift.min - lift.max - 1e-4
    } else {
        f32::NEG_INFINITY
    }
}

/// Whether a tool matching by meaning alone could still make the top `depth` over the lexical
/// matches `scored`: false when the `depth`-th of them already scores more than the best a
/// semantic-only match can.
pub(super) fn semantic_scan_worthwhile(
    scored: &[(f32, u32)],
    depth: usize,
    fusion: &Fusion,
    lift: Lift,
) -> bool {
    let lexical_floor = if scored.len() >= depth {
        let mut scores: Vec<f32> = scored.iter().map(|(score, _)| *score).collect();
        let (_, kth, _) = scores.select_nth_unstable_by(depth - 1, |a, b| b.total_cmp(a));
        *kth
    } else {
        f32::NEG_INFINITY
    };
    fusion.semantic_share > 0.0 && fusion.semantic_only_ceiling(lift) >= lexical_floor + lift.min
}

/// What the first stage's retrieval needs about one query.
pub(super) struct FirstStage<'a> {
    /// Per tool (global position), whether this query may return it.
    pub(super) candidate: &'a [bool],
    pub(super) matches: &'a LexicalMatches,
    pub(super) intent: &'a RequestIntent,
    pub(super) semantic: &'a SemanticQuery<'a>,
    pub(super) fusion: Fusion,
    pub(super) signals: Signals,
    /// `first_stage_depth`.
    pub(super) depth: usize,
    pub(super) lift: Lift,
}

impl FirstStage<'_> {
    /// The textual score of the tool at `global` (`tool`): fused, then boosted or demoted.
    fn text_score(&self, tool: &StoredTool, global: usize, lexical_score: f32, cosine: f32) -> f32 {
        boosts_and_demotions(
            self.fusion.fuse(lexical_score, cosine),
            ToolKind::from(tool),
            self.matches.plural_named[global],
            self.intent,
            self.signals,
        )
    }
}

/// The first stage's answer: the tools that can still reach the top, by textual score.
pub(super) struct Retrieved {
    /// (textual score, global position), in no order.
    pub(super) scored: Vec<(f32, u32)>,
    /// Per tool (global position), its cosine with the query where it was computed, else 0.
    pub(super) semantic: Vec<f32>,
}

impl Index {
    /// The first stage: the textual score of every candidate that can still reach the top
    /// `depth` after every later lift. First the lexical matches, skipping those whose best case
    /// stays below the `depth`-th best worst case (`lexical_cutoff`), before paying for their
    /// cosine; then, only if one could still make it (`semantic_scan_worthwhile`), the tools
    /// that match by meaning alone (cos ≥ `MIN_SEMANTIC`). The result is exactly that of
    /// scoring every tool (`skipping_weak_lexical_matches_never_changes_the_hits`).
    pub(super) fn retrieve(&self, stage: &FirstStage<'_>) -> Retrieved {
        let lexical = &stage.matches.scores;
        let worst_cases: Vec<f32> = stage
            .candidate
            .iter()
            .zip(lexical)
            .filter(|&(&wanted, &score)| wanted && score > 0.0)
            .map(|(_, &score)| stage.fusion.worst_case(score))
            .collect();
        let keep_from = lexical_cutoff(worst_cases, stage.depth, stage.lift);
        let mut semantic = vec![0.0f32; self.stats.tools];
        let mut scored: Vec<(f32, u32)> = Vec::new();
        let positions = self.shards.iter().zip(&self.stats.offsets).enumerate();
        for (position, (shard, &offset)) in positions.clone() {
            for (local, tool) in shard.tools.iter().enumerate() {
                let global = offset + local;
                if !stage.candidate[global]
                    || lexical[global] <= 0.0
                    || stage.fusion.best_case(lexical[global]) < keep_from
                {
                    continue;
                }
                let cosine = stage.semantic.cosine(position, shard, local);
                semantic[global] = cosine;
                scored.push((
                    stage.text_score(tool, global, lexical[global], cosine),
                    global as u32,
                ));
            }
        }
        if semantic_scan_worthwhile(&scored, stage.depth, &stage.fusion, stage.lift) {
            for (position, (shard, &offset)) in positions {
                for (local, tool) in shard.tools.iter().enumerate() {
                    let global = offset + local;
                    if !stage.candidate[global] || lexical[global] > 0.0 {
                        continue;
                    }
                    let cosine = stage.semantic.cosine(position, shard, local);
                    semantic[global] = cosine;
                    if cosine >= MIN_SEMANTIC {
                        scored.push((stage.text_score(tool, global, 0.0, cosine), global as u32));
                    }
                }
            }
        }
        Retrieved { scored, semantic }
    }
}

#[cfg(test)]
mod tests;
