//! Static token embeddings distilled from a sentence model (model2vec's method): one vector per
//! entry of the model's WordPiece vocabulary, so a text's embedding is the normalised mean of
//! its tokens' rows — no network, a table lookup per token, microseconds per text.
//!
//! The table is made once from all-MiniLM-L6-v2 (`search-distil`, feature `minilm`): every
//! vocabulary entry is run through the model alone, the outputs are centred and reduced by
//! PCA, each row is weighted by how rare its token is (SIF weighting with Zipf's law over the
//! vocabulary's order, which is roughly by frequency) and quantised to `i8` with a scale per
//! row. The file holds the vocabulary too, so it is all the embedder needs.
//!
//! File format (little-endian): the magic `TCSTATIC`, a format version (`u32`), the number of
//! tokens and of dimensions (`u32` each), the byte length of the vocabulary (`u32`) and the
//! vocabulary itself (the tokens by id, one per line), a scale per token (`f32`), then the rows
//! (`i8`, tokens × dimensions).

use crate::embed::{Embedder, Embedding};
use crate::wordpiece::Tokenizer;

/// The table the default build ranks with: all-MiniLM-L6-v2 (Apache-2.0) distilled by
/// `search-distil` to 128 dimensions, 4.3 MB.
static BUILT_IN_TABLE: &[u8] = include_bytes!("../static/all-minilm-l6-v2-static.bin");

/// The semantic share of the built-in table's cosine: 0.3 for a request some tool matches word
/// for word, moving to 0.6 as the share of the request's words the best tool matches goes to
/// none (chosen on the five dev halves among 0.1 to 0.5 and 0.1 to 0.8; docs/search.md).
pub const BUILT_IN_SHARE: (f32, f32) = (0.3, 0.6);

/// The built-in table, read once (about 20 ms) on first use.
pub fn built_in() -> &'static StaticEmbedder {
    static BUILT_IN: std::sync::OnceLock<StaticEmbedder> = std::sync::OnceLock::new();
    BUILT_IN.get_or_init(|| {
        StaticEmbedder::from_bytes(BUILT_IN_TABLE)
            .expect("the built-in table is written by search-distil and read by the tests")
            .with_share(BUILT_IN_SHARE.0, BUILT_IN_SHARE.1)
    })
}

/// The default embedder: the built-in static table (`built_in`), shared by every index.
#[derive(Clone, Copy, Debug, Default)]
pub struct BuiltInEmbedder;

impl Embedder for BuiltInEmbedder {
    fn dimensions(&self) -> usize {
        built_in().dimensions()
    }

    fn embed(&self, text: &str) -> Embedding {
        built_in().embed(text)
    }

    fn semantic_share(&self) -> f32 {
        built_in().semantic_share()
    }

    fn semantic_share_unmatched(&self) -> f32 {
        built_in().semantic_share_unmatched()
    }
}

/// The first bytes of a table.
const MAGIC: &[u8; 8] = b"TCSTATIC";
/// The format this code reads and writes.
const FORMAT_VERSION: u32 = 1;
/// Tokens read per text: a tool's text is its name, title, the description's opening and its
/// parameters' names (a few hundred tokens at most); the rest would only dilute the mean.
const MAX_TOKENS: usize = 256;

/// Why a table could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum StaticTableError {
    /// The bytes do not start with the magic or are of another format version.
    #[error(
        "not a static embedding table (magic or version {found} differs); expected a table written by search-distil, format {FORMAT_VERSION}"
    )]
    Format {
        /// The version found (0 when the magic itself differs).
        found: u32,
    },
    /// The bytes end before the table does.
    #[error("the table is truncated: {bytes} bytes, {expected} expected from its header")]
    Truncated {
        /// The bytes given.
        bytes: usize,
        /// What the header says the table takes.
        expected: usize,
    },
    /// The vocabulary is not the one the rows were made for, or lacks BERT's special tokens.
    #[error(
        "the vocabulary has {tokens} tokens for {rows} rows, or lacks [CLS], [SEP] or [UNK]; expected the BERT vocabulary the table was distilled with"
    )]
    Vocabulary {
        /// Tokens in the vocabulary.
        tokens: usize,
        /// Rows in the table.
        rows: usize,
    },
}

/// Static token embeddings as an `Embedder`.
pub struct StaticEmbedder {
    tokenizer: Tokenizer,
    dimensions: usize,
    /// Per token, the factor that maps its `i8` row back to the weighted vector.
    scales: Vec<f32>,
    rows: Vec<i8>,
    /// Tokens that say nothing about a text: `[CLS]`, `[SEP]`, `[UNK]`, `[PAD]`.
    skipped: [u32; 4],
    share: (f32, f32),
    /// This table's number among those read by the process (from 1), which keys the
    /// per-thread memo of word pieces.
    id: u64,
}

/// Reads a little-endian `u32` at `at`.
fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let word = bytes.get(at..at + 4)?;
    Some(u32::from_le_bytes([word[0], word[1], word[2], word[3]]))
}

impl StaticEmbedder {
    /// Reads a table (see the module's documentation for the format).
    pub fn from_bytes(bytes: &[u8]) -> Result<StaticEmbedder, StaticTableError> {
        if bytes.get(..8) != Some(MAGIC.as_slice()) {
            return Err(StaticTableError::Format { found: 0 });
        }
        let header = 8 + 4 * 4;
        let truncated = |expected: usize| StaticTableError::Truncated {
            bytes: bytes.len(),
            expected,
        };
        let (Some(version), Some(tokens), Some(dimensions), Some(vocabulary_bytes)) = (
            read_u32(bytes, 8),
            read_u32(bytes, 12),
            read_u32(bytes, 16),
            read_u32(bytes, 20),
        ) else {
            return Err(truncated(header));
        };
        if version != FORMAT_VERSION {
            return Err(StaticTableError::Format { found: version });
        }
        let (tokens, dimensions, vocabulary_bytes) = (
            tokens as usize,
            dimensions as usize,
            vocabulary_bytes as usize,
        );
        let expected = header + vocabulary_bytes + tokens * 4 + tokens * dimensions;
        if bytes.len() < expected || dimensions == 0 {
            return Err(truncated(expected));
        }
        let vocabulary = String::from_utf8_lossy(&bytes[header..header + vocabulary_bytes]);
        let mismatch = || StaticTableError::Vocabulary {
            tokens: vocabulary.lines().count(),
            rows: tokens,
        };
        if vocabulary.lines().count() != tokens {
            return Err(mismatch());
        }
        let tokenizer = Tokenizer::new(&vocabulary).ok_or_else(mismatch)?;
        if tokenizer.len() != tokens {
            // A token listed twice: ids would no longer be line numbers.
            return Err(mismatch());
        }
        let scales_at = header + vocabulary_bytes;
        let scales = bytes[scales_at..scales_at + tokens * 4]
            .chunks_exact(4)
            .map(|word| f32::from_le_bytes([word[0], word[1], word[2], word[3]]))
            .collect();
        let rows_at = scales_at + tokens * 4;
        let rows = bytes[rows_at..rows_at + tokens * dimensions]
            .iter()
            .map(|&byte| byte as i8)
            .collect();
        let padding = tokenizer.id("[PAD]").unwrap_or(tokenizer.unknown);
        Ok(StaticEmbedder {
            skipped: [
                tokenizer.classification,
                tokenizer.separator,
                tokenizer.unknown,
                padding,
            ],
            tokenizer,
            dimensions,
            scales,
            rows,
            share: (0.1, 0.1),
            id: {
                static READ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
                READ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        })
    }

    /// The same table with another semantic share (`Embedder::semantic_share`) for requests
    /// a tool matches word for word, and for requests no tool matches a word of.
    pub fn with_share(mut self, matched: f32, unmatched: f32) -> StaticEmbedder {
        self.share = (matched, unmatched);
        self
    }

    /// The table's bytes: `vocabulary` (the tokens by id) with, per token, its weighted vector
    /// (`vectors[id]`, all of one length), quantised to `i8` with a scale per row.
    pub fn table_bytes(vocabulary: &[String], vectors: &[Vec<f32>]) -> Vec<u8> {
        let dimensions = vectors.first().map_or(0, Vec::len);
        let text = vocabulary.join("\n");
        let mut bytes = Vec::with_capacity(text.len() + vectors.len() * (dimensions + 4) + 24);
        bytes.extend_from_slice(MAGIC);
        for word in [
            FORMAT_VERSION,
            vocabulary.len() as u32,
            dimensions as u32,
            text.len() as u32,
        ] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        bytes.extend_from_slice(text.as_bytes());
        let mut rows: Vec<i8> = Vec::with_capacity(vectors.len() * dimensions);
        for vector in vectors {
            let scale = crate::embed::quantize_into(vector, &mut rows);
            bytes.extend_from_slice(&scale.to_le_bytes());
        }
        bytes.extend(rows.iter().map(|&q| q as u8));
        bytes
    }

    /// The number of rows (vocabulary entries).
    pub fn tokens(&self) -> usize {
        self.scales.len()
    }

    /// The sum of the rows of `text`'s tokens (not normalised), stop words and punctuation
    /// left out as the lexical analysis leaves them out (so a request of only stop words, "who are you",
    /// embeds to nothing and finds nothing rather than noise).
    fn sum_of_rows(&self, text: &str) -> Vec<f32> {
        let mut sum = vec![0.0f32; self.dimensions];
        let mut tokens = 0;
        self.for_each_word_pieces(text, |ids| {
            for &id in ids {
                let id = id as usize;
                let Some(&scale) = self.scales.get(id) else {
                    continue;
                };
                let row = &self.rows[id * self.dimensions..(id + 1) * self.dimensions];
                for (s, &q) in sum.iter_mut().zip(row) {
                    *s += f32::from(q) * scale;
                }
            }
            tokens += ids.len();
            tokens < MAX_TOKENS
        });
        sum
    }

    /// The distinct tokens of `text` (stop words and punctuation left out, as `embed` leaves
    /// them out), each as its row scaled to unit length with the row's length as its weight
    /// (the table's rows are weighted by rarity, so a rare token weighs more): what the late
    /// interaction scorer compares token by token (`late_interaction.rs`).
    pub(crate) fn token_vectors(&self, text: &str, out: &mut TokenVectors) {
        out.clear(self.dimensions);
        let mut tokens = 0;
        self.for_each_word_pieces(text, |ids| {
            for &id in ids {
                if out.ids.contains(&id) {
                    continue;
                }
                let index = id as usize;
                let Some(&scale) = self.scales.get(index) else {
                    continue;
                };
                let row = &self.rows[index * self.dimensions..(index + 1) * self.dimensions];
                let length = row
                    .iter()
                    .map(|&q| (f32::from(q) * scale).powi(2))
                    .sum::<f32>()
                    .sqrt();
                if length <= 0.0 {
                    continue;
                }
                out.ids.push(id);
                out.weights.push(length);
                out.units
                    .extend(row.iter().map(|&q| f32::from(q) * scale / length));
            }
            tokens += ids.len();
            tokens < MAX_TOKENS
        });
    }

    /// Calls `each` with the word pieces of every word of `text` (none for a stop word or
    /// punctuation) until it returns false, through the per-thread memo.
    fn for_each_word_pieces(&self, text: &str, mut each: impl FnMut(&[u32]) -> bool) {
        let mut word_text = String::new();
        WORD_PIECES.with_borrow_mut(|memo| {
            // A memo of another table (a test's) would give wrong ids.
            let table = self.id;
            if memo.table != table || memo.pieces.len() >= WORD_MEMO_CAPACITY {
                memo.table = table;
                memo.pieces.clear();
            }
            self.tokenizer.for_each_word(text, |word| {
                word_text.clear();
                word_text.extend(word);
                let ids = match memo.pieces.get(word_text.as_str()) {
                    Some(ids) => ids,
                    None => {
                        // Punctuation is no word here either.
                        let ids = if crate::text::is_stop_word(&word_text)
                            || !word.iter().any(|c| c.is_alphanumeric())
                        {
                            Box::default()
                        } else {
                            let mut ids = Vec::new();
                            self.tokenizer.pieces_of(word, &mut ids);
                            ids.retain(|id| !self.skipped.contains(id));
                            ids.into_boxed_slice()
                        };
                        memo.pieces.entry(word_text.as_str().into()).or_insert(ids)
                    }
                };
                each(ids)
            });
        });
    }
}

/// A text's distinct tokens as unit vectors with weights (`StaticEmbedder::token_vectors`).
#[derive(Clone, Debug, Default)]
pub(crate) struct TokenVectors {
    pub(crate) dimensions: usize,
    pub(crate) ids: Vec<u32>,
    /// Per token, its row's length.
    pub(crate) weights: Vec<f32>,
    /// The unit rows, back to back.
    pub(crate) units: Vec<f32>,
}

impl TokenVectors {
    fn clear(&mut self, dimensions: usize) {
        self.dimensions = dimensions;
        self.ids.clear();
        self.weights.clear();
        self.units.clear();
    }

    /// The unit row of the `n`-th token.
    pub(crate) fn unit(&self, n: usize) -> &[f32] {
        &self.units[n * self.dimensions..(n + 1) * self.dimensions]
    }

    /// The number of tokens.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }
}

/// The most words a thread's memo of word pieces holds before it starts over (a few MB at
/// most; tool catalogs repeat a small vocabulary).
const WORD_MEMO_CAPACITY: usize = 1 << 16;

/// Per thread, each word's pieces (stop words and punctuation: none), so an index build
/// splits a word into pieces once, not at every occurrence.
#[derive(Default)]
struct WordPieces {
    /// The table the ids belong to (`StaticEmbedder::id`; 0: none yet).
    table: u64,
    pieces: rustc_hash::FxHashMap<Box<str>, Box<[u32]>>,
}

thread_local! {
    static WORD_PIECES: std::cell::RefCell<WordPieces> = std::cell::RefCell::new(WordPieces::default());
}

impl Embedder for StaticEmbedder {
    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed(&self, text: &str) -> Embedding {
        Embedding::normalized(self.sum_of_rows(text))
    }

    fn semantic_share(&self) -> f32 {
        self.share.0
    }

    fn semantic_share_unmatched(&self) -> f32 {
        self.share.1
    }
}

#[cfg(test)]
mod tests;

/// The post-processing of model2vec's distillation: `outputs` (the model's vector of every
/// vocabulary entry alone, by id) centred and projected on their first `dimensions` principal
/// components, each row then weighted by `sif / (sif + p)`, where `p` is the token's
/// probability under Zipf's law over its rank among the entries that are not `[unusedN]` (whose
/// rows are zero). Deterministic: the same outputs give the same table.
pub fn distilled_vectors(
    outputs: &[(String, Vec<f32>)],
    dimensions: usize,
    sif: f64,
) -> Vec<Vec<f32>> {
    let width = outputs.first().map_or(0, |(_, v)| v.len());
    let dimensions = dimensions.min(width);
    let used: Vec<bool> = outputs
        .iter()
        .map(|(token, _)| !(token.starts_with("[unused") && token.ends_with(']')))
        .collect();
    let count = used.iter().filter(|u| **u).count().max(1) as f64;
    let mut mean = vec![0.0f64; width];
    for ((_, vector), _) in outputs.iter().zip(&used).filter(|(_, u)| **u) {
        for (m, &x) in mean.iter_mut().zip(vector) {
            *m += f64::from(x) / count;
        }
    }
    let mut covariance = vec![0.0f64; width * width];
    let mut centred = vec![0.0f64; width];
    for ((_, vector), _) in outputs.iter().zip(&used).filter(|(_, u)| **u) {
        for ((c, &x), m) in centred.iter_mut().zip(vector).zip(&mean) {
            *c = f64::from(x) - m;
        }
        for i in 0..width {
            let ci = centred[i];
            let row = &mut covariance[i * width..(i + 1) * width];
            for (cell, &cj) in row[i..].iter_mut().zip(&centred[i..]) {
                *cell += ci * cj;
            }
        }
    }
    for i in 0..width {
        for j in 0..i {
            covariance[i * width + j] = covariance[j * width + i];
        }
    }
    let components = principal_components(&covariance, width, dimensions);
    let total_rank: f64 = (0..used.iter().filter(|u| **u).count())
        .map(|rank| 1.0 / (rank as f64 + 2.0))
        .sum();
    let mut rank = 0usize;
    outputs
        .iter()
        .zip(&used)
        .map(|((_, vector), &used)| {
            if !used {
                return vec![0.0; dimensions];
            }
            let probability = 1.0 / (rank as f64 + 2.0) / total_rank;
            rank += 1;
            let weight = sif / (sif + probability);
            components
                .iter()
                .map(|component| {
                    let projected: f64 = component
                        .iter()
                        .zip(vector)
                        .zip(&mean)
                        .map(|((c, &x), m)| c * (f64::from(x) - m))
                        .sum();
                    (projected * weight) as f32
                })
                .collect()
        })
        .collect()
}

/// The `wanted` eigenvectors of the symmetric `size × size` matrix `matrix` with the largest
/// eigenvalues, largest first, by cyclic Jacobi rotations (exact to rounding for the 384 × 384
/// covariance of a distillation; a few seconds).
fn principal_components(matrix: &[f64], size: usize, wanted: usize) -> Vec<Vec<f64>> {
    let mut a = matrix.to_vec();
    let mut vectors = vec![0.0f64; size * size];
    for i in 0..size {
        vectors[i * size + i] = 1.0;
    }
    for _sweep in 0..64 {
        let off: f64 = (0..size)
            .flat_map(|i| (0..size).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * size + j] * a[i * size + j])
            .sum();
        let diagonal: f64 = (0..size).map(|i| a[i * size + i] * a[i * size + i]).sum();
        if off <= 1e-22 * diagonal {
            break;
        }
        for p in 0..size {
            for q in p + 1..size {
                let apq = a[p * size + q];
                if apq.abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q * size + q] - a[p * size + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..size {
                    let akp = a[k * size + p];
                    let akq = a[k * size + q];
                    a[k * size + p] = c * akp - s * akq;
                    a[k * size + q] = s * akp + c * akq;
                }
                for k in 0..size {
                    let apk = a[p * size + k];
                    let aqk = a[q * size + k];
                    a[p * size + k] = c * apk - s * aqk;
                    a[q * size + k] = s * apk + c * aqk;
                }
                for k in 0..size {
                    let vkp = vectors[k * size + p];
                    let vkq = vectors[k * size + q];
                    vectors[k * size + p] = c * vkp - s * vkq;
                    vectors[k * size + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..size).collect();
    order.sort_by(|&x, &y| a[y * size + y].total_cmp(&a[x * size + x]));
    order
        .into_iter()
        .take(wanted)
        .map(|column| {
            let mut vector: Vec<f64> = (0..size).map(|k| vectors[k * size + column]).collect();
            // A fixed sign (the largest component positive), so the table is reproducible.
            let largest = vector
                .iter()
                .copied()
                .fold(0.0f64, |m, x| if x.abs() > m.abs() { x } else { m });
            if largest < 0.0 {
                for x in &mut vector {
                    *x = -*x;
                }
            }
            vector
        })
        .collect()
}
