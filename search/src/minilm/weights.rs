//! Reading `model.safetensors` (a little-endian header length, a JSON header naming each
//! tensor's dtype, shape and byte range, then the data) into the encoder's layers, and the
//! model's fingerprint. The file says which family it is (MPNet's tensors are named apart:
//! `encoder.relative_attention_bias`, `attention.attn.q`) and how wide: the width is the word
//! table's, the feed-forward size the first layer's.

use super::ModelError;
use super::encoder::{
    Encoder, Family, Layer, MAX_LAYERS, MAX_POSITIONS, Pooling, RELATIVE_BUCKETS, Shape,
};
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

    /// Dimension `axis` of the tensor `name`, if it has one.
    fn dimension(&self, name: &str, axis: usize) -> Option<usize> {
        let size = self
            .header
            .get(name)?
            .get("shape")?
            .as_array()?
            .get(axis)?
            .as_u64()?;
        usize::try_from(size).ok()
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

    fn norm(&self, prefix: &str, width: usize) -> Result<Norm, ModelError> {
        Ok(Norm {
            weight: self.get(&format!("{prefix}.weight"), &[width])?,
            bias: self.get(&format!("{prefix}.bias"), &[width])?,
        })
    }
}

/// The names of one family's tensors, below the root (`bert.` or nothing) and a layer's prefix.
struct Names {
    query: &'static str,
    key: &'static str,
    value: &'static str,
    attention_output: &'static str,
    attention_norm: &'static str,
}

const BERT_NAMES: Names = Names {
    query: "attention.self.query",
    key: "attention.self.key",
    value: "attention.self.value",
    attention_output: "attention.output.dense",
    attention_norm: "attention.output.LayerNorm",
};

const MPNET_NAMES: Names = Names {
    query: "attention.attn.q",
    key: "attention.attn.k",
    value: "attention.attn.v",
    attention_output: "attention.attn.o",
    attention_norm: "attention.LayerNorm",
};

/// BERT's weights do not say how many heads the model has; every checkpoint of the widths
/// loaded here (MiniLM, bge-small, gte-small at 384; BERT-base, bge-base at 768) has 12.
const BERT_HEADS: usize = 12;

/// The encoder in `safetensors`, for a vocabulary of `vocabulary_size` tokens, pooled with
/// `pooling`: a BERT (tensor names with or without the `bert.` prefix that checkpoints saved
/// from a BERT model carry) or an MPNet, as wide as its word table and with as many layers as
/// the file holds (`encoder.layer.0` up, without a gap).
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
    let relative_bias_name = format!("{root}encoder.relative_attention_bias.weight");
    let (family, names) = match tensors.header.contains_key(&relative_bias_name) {
        true => (Family::MpNet, &MPNET_NAMES),
        false => (Family::Bert, &BERT_NAMES),
    };
    let word_table = format!("{root}embeddings.word_embeddings.weight");
    // The vocabulary must be the one the weights were trained with: one row per token.
    if let Some(rows) = tensors.dimension(&word_table, 0)
        && rows != vocabulary_size
    {
        return Err(ModelError::VocabularyMismatch {
            tokens: vocabulary_size,
            rows,
        });
    }
    let width = tensors.dimension(&word_table, 1).unwrap_or(0);
    let heads = match family {
        Family::Bert => BERT_HEADS,
        Family::MpNet => tensors.dimension(&relative_bias_name, 1).unwrap_or(0),
    };
    if width == 0 || heads == 0 || width % heads != 0 {
        return Err(ModelError::Tensor {
            name: word_table,
            expected: vec![vocabulary_size, 384],
        });
    }
    let layer_count = (0..=MAX_LAYERS)
        .take_while(|layer| {
            tensors.header.contains_key(&format!(
                "{root}encoder.layer.{layer}.{}.weight",
                names.query
            ))
        })
        .count();
    if layer_count == 0 {
        return Err(ModelError::Tensor {
            name: format!("{root}encoder.layer.0.{}.weight", names.query),
            expected: vec![width, width],
        });
    }
    if layer_count > MAX_LAYERS {
        return Err(ModelError::Format(format!(
            "more than {MAX_LAYERS} encoder layers"
        )));
    }
    // The feed-forward size is the first layer's; the attention is read before it, so a file
    // cut short or of another width is named by the first tensor it lacks, as before.
    let mut intermediate = 0;
    let mut layers = Vec::with_capacity(layer_count);
    for layer in 0..layer_count {
        let prefix = format!("{root}encoder.layer.{layer}");
        let part = |name: &str| format!("{prefix}.{name}");
        let query_key_value = tensors.dense(
            &[part(names.query), part(names.key), part(names.value)],
            width,
            width,
        )?;
        let attention_output = tensors.dense(&[part(names.attention_output)], width, width)?;
        let attention_norm = tensors.norm(&part(names.attention_norm), width)?;
        if layer == 0 {
            let name = part("intermediate.dense.weight");
            intermediate = tensors
                .dimension(&name, 0)
                .ok_or_else(|| ModelError::Tensor {
                    name,
                    expected: vec![4 * width, width],
                })?;
        }
        layers.push(Layer {
            query_key_value,
            attention_output,
            attention_norm,
            intermediate: tensors.dense(&[part("intermediate.dense")], intermediate, width)?,
            output: tensors.dense(&[part("output.dense")], width, intermediate)?,
            output_norm: tensors.norm(&part("output.LayerNorm"), width)?,
        });
    }
    let shape = Shape {
        hidden: width,
        heads,
        intermediate,
    };
    let first_position = family.first_position();
    let (token_type_embedding, relative_attention_bias) = match family {
        Family::Bert => {
            let token_types = tensors.get(
                &format!("{root}embeddings.token_type_embeddings.weight"),
                &[2, width],
            )?;
            (token_types[..width].to_vec(), Vec::new())
        }
        Family::MpNet => (
            vec![0.0; width],
            tensors.get(&relative_bias_name, &[RELATIVE_BUCKETS, heads])?,
        ),
    };
    Ok(Encoder {
        shape,
        family,
        word_embeddings: tensors.get(&word_table, &[vocabulary_size, width])?,
        position_embeddings: tensors.get(
            &format!("{root}embeddings.position_embeddings.weight"),
            &[first_position + MAX_POSITIONS, width],
        )?,
        token_type_embedding,
        relative_attention_bias,
        embedding_norm: tensors.norm(&format!("{root}embeddings.LayerNorm"), width)?,
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
