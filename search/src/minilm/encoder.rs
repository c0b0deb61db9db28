//! A BERT encoder of 384 hidden units and 12 heads (all-MiniLM-L6-v2's 6 layers, or the 12 of
//! bge-small-en-v1.5 and gte-small: as many layers as the weights hold) over a *packed batch*: the tokens of several
//! texts stacked into one matrix, unpadded, so every dense layer is one matrix product over all
//! of them, while attention runs per text (a text attends only to its own tokens, so no mask is
//! needed). Mean pooling (or the `[CLS]` token's row, as bge pools) per text ends it; the caller
//! normalises.
//!
//! A text's result does not depend on what it is batched with: each output row of a product is
//! the same sum in the same order whatever the other rows are (`matrixmultiply` blocks only the
//! inner dimension, which is fixed), and attention and pooling are per text.

use super::kernels::{self, Dense, Norm};

pub(super) const HIDDEN: usize = 384;
const HEADS: usize = 12;
const HEAD_SIZE: usize = HIDDEN / HEADS;
pub(super) const INTERMEDIATE: usize = 1536;
/// The most layers a weight file may hold (BERT-large has 24).
pub(super) const MAX_LAYERS: usize = 48;
pub(super) const MAX_POSITIONS: usize = 512;

pub(super) struct Layer {
    /// Query, key and value fused: `[384, 3·384]`, so one product serves all three.
    pub(super) query_key_value: Dense,
    pub(super) attention_output: Dense,
    pub(super) attention_norm: Norm,
    pub(super) intermediate: Dense,
    pub(super) output: Dense,
    pub(super) output_norm: Norm,
}

/// How a text's token rows become its one vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pooling {
    /// The mean of every token's row (sentence-transformers' default; all-MiniLM-L6-v2, gte).
    Mean,
    /// The `[CLS]` token's row (bge).
    Cls,
}

pub(super) struct Encoder {
    /// `[vocabulary, 384]`.
    pub(super) word_embeddings: Vec<f32>,
    /// `[512, 384]`.
    pub(super) position_embeddings: Vec<f32>,
    /// Token type 0 (every token of a single sentence).
    pub(super) token_type_embedding: Vec<f32>,
    pub(super) embedding_norm: Norm,
    pub(super) layers: Vec<Layer>,
    pub(super) pooling: Pooling,
}

/// The buffers of one forward pass, kept between passes so a batch allocates them once.
#[derive(Default)]
pub(super) struct Scratch {
    hidden: Vec<f32>,
    query_key_value: Vec<f32>,
    context: Vec<f32>,
    intermediate: Vec<f32>,
    scores: Vec<f32>,
}

impl Encoder {
    /// The mean-pooled (not yet normalised) output of each text of `texts` (token ids, each
    /// starting with `[CLS]` and ending with `[SEP]`, at most 512), in order. `threads` (1 or 2)
    /// splits each product's columns; a batch spread over threads passes 1.
    pub(super) fn forward(
        &self,
        texts: &[&[u32]],
        threads: usize,
        scratch: &mut Scratch,
    ) -> Vec<Vec<f32>> {
        let tokens: usize = texts.iter().map(|ids| ids.len()).sum();
        let Scratch {
            hidden,
            query_key_value,
            context,
            intermediate,
            scores,
        } = scratch;

        hidden.clear();
        for ids in texts {
            for (position, &id) in ids.iter().enumerate() {
                let id = id as usize;
                let word = &self.word_embeddings[id * HIDDEN..(id + 1) * HIDDEN];
                let place = &self.position_embeddings[position * HIDDEN..(position + 1) * HIDDEN];
                hidden.extend(
                    word.iter()
                        .zip(place)
                        .zip(&self.token_type_embedding)
                        .map(|((w, p), t)| w + p + t),
                );
            }
        }
        kernels::layer_norm(hidden, HIDDEN, &self.embedding_norm);

        let scale = 1.0 / (HEAD_SIZE as f32).sqrt();
        for layer in &self.layers {
            layer.query_key_value.fill_bias(tokens, query_key_value);
            layer
                .query_key_value
                .accumulate(hidden, tokens, query_key_value, threads);

            context.clear();
            context.resize(tokens * HIDDEN, 0.0);
            let mut offset = 0;
            for ids in texts {
                attend(
                    &query_key_value[offset * 3 * HIDDEN..(offset + ids.len()) * 3 * HIDDEN],
                    &mut context[offset * HIDDEN..(offset + ids.len()) * HIDDEN],
                    ids.len(),
                    scale,
                    scores,
                );
                offset += ids.len();
            }

            // The residual goes straight into the product's output: hidden + b + context · W.
            layer.attention_output.add_bias(hidden);
            layer
                .attention_output
                .accumulate(context, tokens, hidden, threads);
            kernels::layer_norm(hidden, HIDDEN, &layer.attention_norm);

            layer.intermediate.fill_bias(tokens, intermediate);
            layer
                .intermediate
                .accumulate(hidden, tokens, intermediate, threads);
            kernels::gelu_in_place(intermediate);

            layer.output.add_bias(hidden);
            layer
                .output
                .accumulate(intermediate, tokens, hidden, threads);
            kernels::layer_norm(hidden, HIDDEN, &layer.output_norm);
        }

        let mut pooled = Vec::with_capacity(texts.len());
        let mut offset = 0;
        for ids in texts {
            let rows = &hidden[offset * HIDDEN..(offset + ids.len()) * HIDDEN];
            let sum = match self.pooling {
                Pooling::Cls => rows[..HIDDEN].to_vec(),
                Pooling::Mean => {
                    let mut sum = vec![0.0f32; HIDDEN];
                    for row in rows.chunks_exact(HIDDEN) {
                        for (s, x) in sum.iter_mut().zip(row) {
                            *s += x;
                        }
                    }
                    let inverse = 1.0 / ids.len() as f32;
                    for s in &mut sum {
                        *s *= inverse;
                    }
                    sum
                }
            };
            pooled.push(sum);
            offset += ids.len();
        }
        pooled
    }
}

/// Multi-head self-attention of one text: `query_key_value` holds its `length` rows of fused
/// query, key and value (`3·384` each); writes the heads' outputs side by side into `context`.
#[inline(never)]
fn attend(
    query_key_value: &[f32],
    context: &mut [f32],
    length: usize,
    scale: f32,
    scores: &mut Vec<f32>,
) {
    scores.clear();
    scores.resize(length, 0.0);
    let row = |token: usize| &query_key_value[token * 3 * HIDDEN..(token + 1) * 3 * HIDDEN];
    for head in 0..HEADS {
        let columns = head * HEAD_SIZE..(head + 1) * HEAD_SIZE;
        for i in 0..length {
            let query = &row(i)[columns.clone()];
            for (j, score) in scores.iter_mut().enumerate() {
                let key = &row(j)[HIDDEN..][columns.clone()];
                *score = kernels::dot(query, key) * scale;
            }
            kernels::softmax_in_place(scores);
            let out = &mut context[i * HIDDEN..][columns.clone()];
            for (j, weight) in scores.iter().enumerate() {
                let value = &row(j)[2 * HIDDEN..][columns.clone()];
                for (o, v) in out.iter_mut().zip(value) {
                    *o += weight * v;
                }
            }
        }
    }
}
