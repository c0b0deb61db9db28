//! A BERT encoder (all-MiniLM-L6-v2's 6 layers of 384 hidden units and 12 heads, or the 12 of
//! bge-small-en-v1.5 and gte-small: as many layers and as wide as the weights hold), or an MPNet
//! one (all-mpnet-base-v2: 12 layers of 768, a relative position bias, no token types), over a
//! *packed batch*: the tokens of several
//! texts stacked into one matrix, unpadded, so every dense layer is one matrix product over all
//! of them, while attention runs per text (a text attends only to its own tokens, so no mask is
//! needed). Mean pooling (or the `[CLS]` token's row, as bge pools) per text ends it; the caller
//! normalises.
//!
//! A text's result does not depend on what it is batched with: each output row of a product is
//! the same sum in the same order whatever the other rows are (`matrixmultiply` blocks only the
//! inner dimension, which is fixed), and attention and pooling are per text.

use super::kernels::{self, Dense, Norm};

/// all-MiniLM-L6-v2's width, what the synthetic weights of the tests are made of.
#[cfg(test)]
pub(super) const HIDDEN: usize = 384;
#[cfg(test)]
pub(super) const INTERMEDIATE: usize = 1536;
/// The most layers a weight file may hold (BERT-large has 24).
pub(super) const MAX_LAYERS: usize = 48;
/// The most tokens a text may have (BERT's and MPNet's positions).
pub(super) const MAX_POSITIONS: usize = 512;
/// MPNet's relative position buckets and the distance the last of them starts at (its
/// `relative_attention_num_buckets` and T5's bucketing, which MPNet took).
pub(super) const RELATIVE_BUCKETS: usize = 32;
const RELATIVE_MAX_DISTANCE: usize = 128;

/// The sizes of an encoder, read from its weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shape {
    pub(super) hidden: usize,
    pub(super) heads: usize,
    pub(super) intermediate: usize,
}

/// What differs between the two families of encoder the weights may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Family {
    /// BERT: absolute positions from 0, token type 0 added to every token, layer norm ε 1e-12.
    Bert,
    /// MPNet: positions from 2 (after its padding id, as `create_position_ids_from_input_ids`
    /// counts), no token types, a learned bias per head and relative-distance bucket added to
    /// every attention score, layer norm ε 1e-5.
    MpNet,
}

impl Family {
    pub(super) fn first_position(self) -> usize {
        match self {
            Family::Bert => 0,
            Family::MpNet => 2,
        }
    }

    pub(super) fn layer_norm_epsilon(self) -> f32 {
        match self {
            Family::Bert => 1e-12,
            Family::MpNet => 1e-5,
        }
    }
}

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
    pub(super) shape: Shape,
    pub(super) family: Family,
    /// `[vocabulary, hidden]`.
    pub(super) word_embeddings: Vec<f32>,
    /// `[positions, hidden]` (BERT 512, MPNet 514: its first two are never used).
    pub(super) position_embeddings: Vec<f32>,
    /// Token type 0 (every token of a single sentence); zeros for MPNet, which has none.
    pub(super) token_type_embedding: Vec<f32>,
    /// MPNet's `[RELATIVE_BUCKETS, heads]` attention bias, shared by every layer; empty for BERT.
    pub(super) relative_attention_bias: Vec<f32>,
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
    /// MPNet: each text's `[length, length]` attention bias for every head, head-major.
    position_bias: Vec<f32>,
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
            position_bias,
        } = scratch;
        let Shape { hidden: width, .. } = self.shape;
        let epsilon = self.family.layer_norm_epsilon();

        hidden.clear();
        for ids in texts {
            for (position, &id) in ids.iter().enumerate() {
                let id = id as usize;
                let position = position + self.family.first_position();
                let word = &self.word_embeddings[id * width..(id + 1) * width];
                let place = &self.position_embeddings[position * width..(position + 1) * width];
                hidden.extend(
                    word.iter()
                        .zip(place)
                        .zip(&self.token_type_embedding)
                        .map(|((w, p), t)| w + p + t),
                );
            }
        }
        kernels::layer_norm(hidden, width, &self.embedding_norm, epsilon);

        let scale = 1.0 / ((width / self.shape.heads) as f32).sqrt();
        // MPNet's bias depends only on the distances, so each text's is made once for all layers.
        let mut bias_offsets = Vec::with_capacity(texts.len());
        position_bias.clear();
        for ids in texts {
            bias_offsets.push(position_bias.len());
            if !self.relative_attention_bias.is_empty() {
                self.extend_position_bias(ids.len(), position_bias);
            }
        }
        for layer in &self.layers {
            layer.query_key_value.fill_bias(tokens, query_key_value);
            layer
                .query_key_value
                .accumulate(hidden, tokens, query_key_value, threads);

            context.clear();
            context.resize(tokens * width, 0.0);
            let mut offset = 0;
            for (ids, &bias_offset) in texts.iter().zip(&bias_offsets) {
                let bias = match self.relative_attention_bias.is_empty() {
                    true => None,
                    false => Some(
                        &position_bias
                            [bias_offset..bias_offset + self.shape.heads * ids.len() * ids.len()],
                    ),
                };
                attend(
                    &query_key_value[offset * 3 * width..(offset + ids.len()) * 3 * width],
                    &mut context[offset * width..(offset + ids.len()) * width],
                    Attention {
                        length: ids.len(),
                        width,
                        heads: self.shape.heads,
                        scale,
                        bias,
                    },
                    scores,
                );
                offset += ids.len();
            }

            // The residual goes straight into the product's output: hidden + b + context · W.
            layer.attention_output.add_bias(hidden);
            layer
                .attention_output
                .accumulate(context, tokens, hidden, threads);
            kernels::layer_norm(hidden, width, &layer.attention_norm, epsilon);

            layer.intermediate.fill_bias(tokens, intermediate);
            layer
                .intermediate
                .accumulate(hidden, tokens, intermediate, threads);
            kernels::gelu_in_place(intermediate);

            layer.output.add_bias(hidden);
            layer
                .output
                .accumulate(intermediate, tokens, hidden, threads);
            kernels::layer_norm(hidden, width, &layer.output_norm, epsilon);
        }

        let mut pooled = Vec::with_capacity(texts.len());
        let mut offset = 0;
        for ids in texts {
            let rows = &hidden[offset * width..(offset + ids.len()) * width];
            let sum = match self.pooling {
                Pooling::Cls => rows[..width].to_vec(),
                Pooling::Mean => {
                    let mut sum = vec![0.0f32; width];
                    for row in rows.chunks_exact(width) {
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

    /// Appends MPNet's attention bias for a text of `length` tokens: for each head, query `i` and
    /// key `j`, the learned bias of the bucket of `j − i`.
    fn extend_position_bias(&self, length: usize, out: &mut Vec<f32>) {
        let heads = self.shape.heads;
        let buckets: Vec<usize> = (0..length * length)
            .map(|cell| relative_position_bucket(cell % length, cell / length))
            .collect();
        for head in 0..heads {
            out.extend(
                buckets
                    .iter()
                    .map(|bucket| self.relative_attention_bias[bucket * heads + head]),
            );
        }
    }
}

/// The bucket of key position `key` seen from query position `query`, as MPNet (after T5)
/// computes it: half the buckets for keys before the query, half for those after; within each,
/// exact distances below 8, then logarithmically wider buckets up to a distance of 128.
pub(super) fn relative_position_bucket(key: usize, query: usize) -> usize {
    let half = RELATIVE_BUCKETS / 2;
    let exact = half / 2;
    // `n = −(key − query)`: positive when the key comes before the query.
    let (before, distance) = match query >= key {
        true => (true, query - key),
        false => (false, key - query),
    };
    let side = if before { 0 } else { half };
    // T5's `exact + ⌊ln(n / exact) / ln(max / exact) · (half − exact)⌋`, which with 8 exact
    // buckets out of 16 and a maximum of 128 is `8 + ⌊2 · log2(n / 8)⌋ = 8 + ⌊log2(n²)⌋ − 6`:
    // whole numbers, so no rounding of a logarithm moves a distance to the next bucket.
    debug_assert_eq!((half, exact, RELATIVE_MAX_DISTANCE), (16, 8, 128));
    let within = if distance < exact {
        distance
    } else {
        (exact + (distance * distance).ilog2() as usize - 6).min(half - 1)
    };
    side + within
}

/// The sizes of one text's attention and its position bias, if the encoder has one.
struct Attention<'a> {
    length: usize,
    width: usize,
    heads: usize,
    scale: f32,
    /// `[heads, length, length]`.
    bias: Option<&'a [f32]>,
}

/// Multi-head self-attention of one text: `query_key_value` holds its `length` rows of fused
/// query, key and value (`3·width` each); writes the heads' outputs side by side into `context`.
#[inline(never)]
fn attend(
    query_key_value: &[f32],
    context: &mut [f32],
    shape: Attention<'_>,
    scores: &mut Vec<f32>,
) {
    let Attention {
        length,
        width,
        heads,
        scale,
        bias,
    } = shape;
    let head_size = width / heads;
    scores.clear();
    scores.resize(length, 0.0);
    let row = |token: usize| &query_key_value[token * 3 * width..(token + 1) * 3 * width];
    for head in 0..heads {
        let columns = head * head_size..(head + 1) * head_size;
        for i in 0..length {
            let query = &row(i)[columns.clone()];
            for (j, score) in scores.iter_mut().enumerate() {
                let key = &row(j)[width..][columns.clone()];
                *score = kernels::dot(query, key) * scale;
            }
            if let Some(bias) = bias {
                let bias = &bias[(head * length + i) * length..][..length];
                for (score, b) in scores.iter_mut().zip(bias) {
                    *score += b;
                }
            }
            kernels::softmax_in_place(scores);
            let out = &mut context[i * width..][columns.clone()];
            for (j, weight) in scores.iter().enumerate() {
                let value = &row(j)[2 * width..][columns.clone()];
                for (o, v) in out.iter_mut().zip(value) {
                    *o += weight * v;
                }
            }
        }
    }
}
