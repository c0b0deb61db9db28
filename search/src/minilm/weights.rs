//! Reading `model.safetensors` (a little-endian header length, a JSON header naming each
//! tensor's dtype, shape and byte range, then the data) into the encoder's layers, and the
//! model's fingerprint.

use super::ModelError;
use super::encoder::{Encoder, HIDDEN, INTERMEDIATE, Layer, MAX_LAYERS, MAX_POSITIONS, Pooling};
use super::kernels::{Dense, Norm};

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
        let header = 8usize
            .checked_add(length)
            .and_then(|end| bytes.get(8..end))
            .ok_or_else(|| ModelError::Format("header runs past the end".to_owned()))?;
        let header: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(header).map_err(|e| ModelError::Format(e.to_string()))?;
        Ok(Tensors {
            header,
            data: &bytes[8 + length..],
        })
    }

    /// The first dimension of the tensor `name`, if it has one.
    fn rows(&self, name: &str) -> Option<usize> {
        let first = self
            .header
            .get(name)?
            .get("shape")?
            .as_array()?
            .first()?
            .as_u64()?;
        usize::try_from(first).ok()
    }

    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let wrong = || ModelError::Tensor {
            name: name.to_owned(),
            expected: shape.to_vec(),
        };
        let entry = self.header.get(name).ok_or_else(wrong)?;
        let dtype = entry.get("dtype").and_then(|d| d.as_str());
        let numbers = |key: &str| -> Option<Vec<usize>> {
            entry
                .get(key)?
                .as_array()?
                .iter()
                .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
                .collect()
        };
        if dtype != Some("F32") || numbers("shape").as_deref() != Some(shape) {
            return Err(wrong());
        }
        let offsets = numbers("data_offsets").ok_or_else(wrong)?;
        let [start, end] = offsets.as_slice() else {
            return Err(wrong());
        };
        let raw = self.data.get(*start..*end).ok_or_else(|| {
            ModelError::Format(format!(
                "tensor {name} lies at bytes {start}..{end} of the data but there are only {}: the file is truncated",
                self.data.len()
            ))
        })?;
        if raw.len() != shape.iter().product::<usize>() * 4 {
            return Err(wrong());
        }
        Ok(raw
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    fn dense(
        &self,
        prefixes: &[String],
        outputs: usize,
        inputs: usize,
    ) -> Result<Dense, ModelError> {
        let mut blocks = Vec::with_capacity(prefixes.len());
        for prefix in prefixes {
            blocks.push((
                self.get(&format!("{prefix}.weight"), &[outputs, inputs])?,
                self.get(&format!("{prefix}.bias"), &[outputs])?,
            ));
        }
        let borrowed: Vec<(&[f32], &[f32])> = blocks
            .iter()
            .map(|(weight, bias)| (weight.as_slice(), bias.as_slice()))
            .collect();
        Ok(Dense::from_pytorch(&borrowed, inputs))
    }

    fn norm(&self, prefix: &str) -> Result<Norm, ModelError> {
        Ok(Norm {
            weight: self.get(&format!("{prefix}.weight"), &[HIDDEN])?,
            bias: self.get(&format!("{prefix}.bias"), &[HIDDEN])?,
        })
    }
}

/// The encoder in `safetensors`, for a vocabulary of `vocabulary_size` tokens, pooled with
/// `pooling`. As many layers as the file holds (`encoder.layer.0` up, without a gap); tensor
/// names with or without the `bert.` prefix that checkpoints saved from a BERT model carry.
pub(super) fn load(
    safetensors: &[u8],
    vocabulary_size: usize,
    pooling: Pooling,
) -> Result<Encoder, ModelError> {
    let tensors = Tensors::parse(safetensors)?;
    let root = if tensors
        .header
        .contains_key("bert.embeddings.word_embeddings.weight")
    {
        "bert."
    } else {
        ""
    };
    let layer_count = (0..=MAX_LAYERS)
        .take_while(|layer| {
            tensors.header.contains_key(&format!(
                "{root}encoder.layer.{layer}.attention.self.query.weight"
            ))
        })
        .count();
    if layer_count == 0 {
        return Err(ModelError::Tensor {
            name: format!("{root}encoder.layer.0.attention.self.query.weight"),
            expected: vec![HIDDEN, HIDDEN],
        });
    }
    if layer_count > MAX_LAYERS {
        return Err(ModelError::Format(format!(
            "more than {MAX_LAYERS} encoder layers"
        )));
    }
    // The vocabulary must be the one the weights were trained with: one row per token.
    if let Some(rows) = tensors.rows(&format!("{root}embeddings.word_embeddings.weight"))
        && rows != vocabulary_size
    {
        return Err(ModelError::VocabularyMismatch {
            tokens: vocabulary_size,
            rows,
        });
    }
    let mut layers = Vec::with_capacity(layer_count);
    for layer in 0..layer_count {
        let prefix = format!("{root}encoder.layer.{layer}");
        let attention = |part: &str| format!("{prefix}.attention.self.{part}");
        layers.push(Layer {
            query_key_value: tensors.dense(
                &[attention("query"), attention("key"), attention("value")],
                HIDDEN,
                HIDDEN,
            )?,
            attention_output: tensors.dense(
                &[format!("{prefix}.attention.output.dense")],
                HIDDEN,
                HIDDEN,
            )?,
            attention_norm: tensors.norm(&format!("{prefix}.attention.output.LayerNorm"))?,
            intermediate: tensors.dense(
                &[format!("{prefix}.intermediate.dense")],
                INTERMEDIATE,
                HIDDEN,
            )?,
            output: tensors.dense(&[format!("{prefix}.output.dense")], HIDDEN, INTERMEDIATE)?,
            output_norm: tensors.norm(&format!("{prefix}.output.LayerNorm"))?,
        });
    }
    let token_types = tensors.get(
        &format!("{root}embeddings.token_type_embeddings.weight"),
        &[2, HIDDEN],
    )?;
    Ok(Encoder {
        word_embeddings: tensors.get(
            &format!("{root}embeddings.word_embeddings.weight"),
            &[vocabulary_size, HIDDEN],
        )?,
        position_embeddings: tensors.get(
            &format!("{root}embeddings.position_embeddings.weight"),
            &[MAX_POSITIONS, HIDDEN],
        )?,
        token_type_embedding: token_types[..HIDDEN].to_vec(),
        embedding_norm: tensors.norm(&format!("{root}embeddings.LayerNorm"))?,
        layers,
        pooling,
    })
}

/// A 64-bit hash of `bytes`, eight bytes at a time: FNV-1a's xor-and-multiply on whole words
/// with a rotation so high bits mix down, then the length. Not cryptographic: it tells models
/// apart for a cache key, it does not defend against someone forging a collision. Hashing the
/// whole 90 MB of weights this way takes ~20 ms in a release build.
pub(super) fn hash_words(mut hash: u64, bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        hash = (hash ^ word).wrapping_mul(PRIME).rotate_left(29);
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    hash = (hash ^ u64::from_le_bytes(tail))
        .wrapping_mul(PRIME)
        .rotate_left(29);
    (hash ^ bytes.len() as u64).wrapping_mul(PRIME)
}

/// FNV-1a's 64-bit offset basis, the hash's starting value.
pub(super) const HASH_START: u64 = 0xcbf2_9ce4_8422_2325;
