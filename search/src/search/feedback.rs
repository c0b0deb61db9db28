//! Pseudo-relevance feedback in the embedding space (Rocchio on dense vectors): the request's
//! vector is moved towards the mean of the first stage's best few tools' vectors, and the best
//! `RERANK_DEPTH` are scored again by the cosine with the moved vector. A short or vague request
//! ("schedule something with the team") then borrows the vocabulary of the tools it already
//! found, which separates their near neighbours from tools that merely share one word.
//! Measured on the five dev halves and not adopted (`Signals::feedback` is off in `ALL`;
//! docs/search.md, "Fourth round of issue 25").

use crate::index::Index;

use super::RERANK_DEPTH;
use super::stages::SemanticQuery;

/// How many of the first stage's best tools the request's vector is moved towards.
pub(super) const FEEDBACK_TOOLS: usize = 3;
/// How far: the moved vector is `q/|q| + FEEDBACK_WEIGHT · c/|c|`, `c` the mean of those tools'
/// unit vectors.
pub(super) const FEEDBACK_WEIGHT: f32 = 0.5;

/// How many tools the request's vector moves towards and how far (`FEEDBACK_TOOLS`,
/// `FEEDBACK_WEIGHT`: the measured row; the other settings measured are in docs/search.md).
#[derive(Clone, Copy, Debug)]
pub(super) struct Feedback {
    pub(super) tools: usize,
    pub(super) weight: f32,
}

impl Default for Feedback {
    fn default() -> Self {
        Feedback {
            tools: FEEDBACK_TOOLS,
            weight: FEEDBACK_WEIGHT,
        }
    }
}

fn unit(values: &mut [f32]) -> bool {
    let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
    if norm <= 0.0 {
        return false;
    }
    for v in values.iter_mut() {
        *v /= norm;
    }
    true
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

impl Index {
    /// The best `RERANK_DEPTH` of `scored` (textual score, global position) gain
    /// `semantic_share · (max(cos', 0) − max(cos, 0))`, `cos'` their cosine with the request's
    /// vector moved towards the best `feedback.tools` (`query` the request's unit vector as the
    /// first stage compared it); `semantic` is updated to `cos'` for them. Returns whether it
    /// moved anything.
    pub(super) fn feedback(
        &self,
        scored: &mut [(f32, u32)],
        semantic: &mut [f32],
        semantic_query: &SemanticQuery<'_>,
        query: &[f32],
        semantic_share: f32,
        feedback: Feedback,
    ) -> bool {
        let by_score_desc =
            |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        let depth = RERANK_DEPTH.min(scored.len());
        if depth == 0 || semantic_share <= 0.0 || feedback.tools == 0 {
            return false;
        }
        scored.select_nth_unstable_by(depth - 1, by_score_desc);
        scored[..depth].sort_unstable_by(by_score_desc);
        let vectors: Vec<Option<Vec<f32>>> = scored[..depth]
            .iter()
            .map(|&(_, global)| {
                let (position, local) = self.position_of(global as usize);
                let mut vector =
                    semantic_query.tool_vector(position, &self.shards[position], local)?;
                unit(&mut vector).then_some(vector)
            })
            .collect();
        let mut centroid = vec![0.0f32; query.len()];
        let mut used = 0;
        for vector in vectors.iter().flatten().take(feedback.tools) {
            for (c, v) in centroid.iter_mut().zip(vector) {
                *c += v;
            }
            used += 1;
        }
        if used == 0 || !unit(&mut centroid) {
            return false;
        }
        let mut moved: Vec<f32> = query.to_vec();
        if !unit(&mut moved) {
            return false;
        }
        for (m, c) in moved.iter_mut().zip(&centroid) {
            *m += feedback.weight * c;
        }
        unit(&mut moved);
        for ((score, global), vector) in scored[..depth].iter_mut().zip(&vectors) {
            let Some(vector) = vector else { continue };
            let before = semantic[*global as usize];
            let after = dot(&moved, vector);
            *score += semantic_share * (after.max(0.0) - before.max(0.0));
            semantic[*global as usize] = after;
        }
        true
    }

    /// The position of the shard of the tool at `global` and the tool's place in it.
    fn position_of(&self, global: usize) -> (usize, usize) {
        let offsets = &self.stats.offsets;
        let position = offsets.partition_point(|&o| o <= global) - 1;
        (position, global - offsets[position])
    }
}
