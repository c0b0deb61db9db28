//! Embeddings: the `Embedder` trait the index and the daemon's routing share, cosine similarity,
//! and `HashEmbedder`, an embedder that needs nothing at run time (routing's similarity rule
//! uses it; the index's default is the built-in static embeddings, `static_embed.rs`).
//!
//! `HashEmbedder` is a feature-hashing bag of words: each text contributes its stemmed words,
//! the concept groups of those words (`concepts.rs`), and the character trigrams of each word,
//! hashed with a sign into a fixed number of dimensions and L2-normalised. Words give precision,
//! concepts give synonymy, trigrams give robustness to spelling, compounds (`filesystem` /
//! `file system`) and to scripts the stemmer does not know (Cyrillic, Arabic, CJK). It is not a
//! language model; it is cheap, deterministic and offline, and a real model can replace it
//! behind the same trait.

use std::cell::RefCell;

use rustc_hash::FxHashMap;

use crate::concepts;
use crate::text;

/// The number of dimensions of `HashEmbedder`'s vectors.
pub const HASH_DIMENSIONS: usize = 256;

/// A fixed-length, L2-normalised vector (or all zeros for a text with nothing to embed).
#[derive(Clone, Debug, PartialEq)]
pub struct Embedding(Box<[f32]>);

impl Embedding {
    /// Wraps `values`, scaling them to unit length (a zero vector stays zero).
    pub fn normalized(mut values: Vec<f32>) -> Embedding {
        let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 {
            for value in &mut values {
                *value /= norm;
            }
        }
        Embedding(values.into_boxed_slice())
    }

    /// Wraps `values` as they are: for a vector that is unit length up to the rounding of its
    /// quantised form, which must survive being quantised again unchanged.
    pub(crate) fn kept(values: Vec<f32>) -> Embedding {
        Embedding(values.into_boxed_slice())
    }

    /// The components, as a vector (to reuse its allocation).
    pub(crate) fn into_values(self) -> Vec<f32> {
        self.0.into_vec()
    }

    /// The components.
    pub fn values(&self) -> &[f32] {
        &self.0
    }

    /// The number of dimensions.
    pub fn dimensions(&self) -> usize {
        self.0.len()
    }
}

/// Turns a text into an embedding. Implementations must return vectors of one fixed dimension,
/// L2-normalised (or zero for an empty text), and be deterministic.
pub trait Embedder: Send + Sync {
    /// The dimension of every vector this embedder returns.
    fn dimensions(&self) -> usize;

    /// The embedding of `text`.
    fn embed(&self, text: &str) -> Embedding;

    /// The embedding of a request to search with: `embed`, unless the model was trained to
    /// read requests with an instruction before them (bge: "Represent this sentence for
    /// searching relevant passages: "), which this adds. Tools are embedded with `embed` and
    /// `embed_batch`, never with this.
    fn embed_query(&self, text: &str) -> Embedding {
        self.embed(text)
    }

    /// The embeddings of `texts`, in order: the same vectors `embed` gives one by one. The
    /// default embeds them one at a time; a model overrides it to run a whole batch through each
    /// layer at once (and over threads).
    fn embed_batch(&self, texts: &[&str]) -> Vec<Embedding> {
        texts.iter().map(|text| self.embed(text)).collect()
    }

    /// How much this embedder's cosine counts in the ranking's textual score, in [0, 1] (the
    /// rest is the normalised lexical score), for a request some tool matches word for word. A
    /// weak embedder (the hashing one, 0.1) only breaks ties; a real sentence-embedding
    /// model earns a larger share.
    fn semantic_share(&self) -> f32 {
        0.1
    }

    /// The share for a request no tool matches a word of; between the two, the share moves in
    /// proportion to the words of the request the best-matching tool lacks. When the words say
    /// little (a chatty request, a paraphrase), the meaning should say more. By default the
    /// same as `semantic_share`.
    fn semantic_share_unmatched(&self) -> f32 {
        self.semantic_share()
    }

    /// Whether this is a sentence-embedding model (all-MiniLM-L6-v2 and its kin), whose cosine
    /// carries the request's meaning well enough that the confidence rule does not also ask the
    /// best hit to match most of the request's words (`search::confidence`). False by default.
    fn is_sentence_model(&self) -> bool {
        false
    }

    /// `Some` when this embedder is the default `HashEmbedder`, whose vector of a text is the
    /// normalised sum of per-word features: the index then embeds a tool from the words it has
    /// already split for BM25 instead of splitting the text a second time. Other embedders keep
    /// the default `None` and are given the text.
    fn as_hash_embedder(&self) -> Option<&HashEmbedder> {
        None
    }
}

/// Cosine similarity of two embeddings, in [-1, 1]; 0 when the dimensions differ or either is
/// zero. Both are normalised already, so this is their dot product.
pub fn cosine(a: &Embedding, b: &Embedding) -> f32 {
    if a.dimensions() != b.dimensions() {
        return 0.0;
    }
    dot(a.values(), b.values())
}

/// Dot product, written so the compiler vectorises it (four independent accumulators).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0f32; 8];
    let chunks_a = a.chunks_exact(8);
    let chunks_b = b.chunks_exact(8);
    let tail: f32 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in chunks_a.zip(chunks_b) {
        for i in 0..8 {
            sums[i] += x[i] * y[i];
        }
    }
    sums.iter().sum::<f32>() + tail
}

/// Appends `values` quantised to `i8` (scaled so the largest magnitude is 127) to `out` and
/// returns the scale that maps them back (`value ≈ q * scale`).
pub(crate) fn quantize_into(values: &[f32], out: &mut Vec<i8>) -> f32 {
    let largest = values.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    if largest == 0.0 {
        out.extend(std::iter::repeat_n(0, values.len()));
        return 0.0;
    }
    let scale = largest / 127.0;
    let inverse = 127.0 / largest;
    // Round half away from zero by hand: `f32::round` is a library call on baseline x86-64, and
    // this loop runs for every dimension of every tool at each build. `as` saturates.
    out.extend(values.iter().map(|v| {
        let scaled = v * inverse;
        (scaled + 0.5f32.copysign(scaled)) as i8
    }));
    scale
}

/// Integer dot product of two quantised rows (the compiler vectorises the widening sum).
pub(crate) fn dot_quantized(a: &[i8], b: &[i8]) -> i32 {
    let mut sums = [0i32; 16];
    let chunks_a = a.chunks_exact(16);
    let chunks_b = b.chunks_exact(16);
    let tail: i32 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    for (x, y) in chunks_a.zip(chunks_b) {
        for i in 0..16 {
            sums[i] += i32::from(x[i]) * i32::from(y[i]);
        }
    }
    sums.iter().sum::<i32>() + tail
}

/// Feature hashing of words, concepts and character trigrams: the index's default before the
/// built-in static embeddings, and routing's similarity rule's embedder.
#[derive(Clone, Copy, Debug, Default)]
pub struct HashEmbedder;

/// Weights of the three feature kinds. A word match should count for more than a shared concept,
/// and a concept for more than a few shared trigrams (which many unrelated words have).
const WORD_WEIGHT: f32 = 1.0;
const CONCEPT_WEIGHT: f32 = 0.6;
const TRIGRAMS_WEIGHT: f32 = 0.7;

/// FNV-1a over the bytes of `parts`: deterministic across runs and platforms, which a
/// `RandomState` hasher is not.
fn fnv1a(kind: u8, parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in std::iter::once(&kind).chain(parts.iter().flat_map(|p| p.iter())) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// A word's features: (bucket, signed weight) pairs.
type Features = Box<[(u32, f32)]>;

/// The most words whose features `HashEmbedder` remembers per thread (then it starts over).
const FEATURE_MEMO_CAPACITY: usize = 1 << 16;

thread_local! {
    /// Folded word → its features as (bucket, signed weight). Computing a word's trigrams and
    /// concepts costs more than looking them up, and tool texts reuse a small vocabulary.
    static FEATURE_MEMO: RefCell<FxHashMap<Box<str>, Features>> =
        RefCell::new(FxHashMap::default());
}

fn feature(hash: u64, weight: f32) -> (u32, f32) {
    // The low bits pick the bucket and a high bit the sign, so colliding features cancel on
    // average instead of piling up.
    let bucket = (hash % HASH_DIMENSIONS as u64) as u32;
    let sign = if hash >> 63 == 0 { 1.0 } else { -1.0 };
    (bucket, sign * weight)
}

/// The features of one non-CJK folded word: nothing for a stop word; else the stemmed word, its
/// concept groups and its character trigrams.
fn word_features(folded: &str) -> Features {
    let mut stemmed = String::with_capacity(32);
    if text::analyze_word(folded, &mut stemmed) {
        return Box::new([]);
    }
    let mut features = vec![feature(fnv1a(b'w', &[stemmed.as_bytes()]), WORD_WEIGHT)];
    let groups = concepts::groups_of(&stemmed);
    if !groups.is_empty() {
        // Split the weight so a word in many groups does not outweigh one in a single group.
        let weight = CONCEPT_WEIGHT / (groups.len() as f32).sqrt();
        for group in groups {
            features.push(feature(fnv1a(b'c', &[&group.to_le_bytes()]), weight));
        }
    }
    // Character trigrams over the folded word with boundary marks, on characters (not bytes) so
    // Cyrillic or Arabic trigrams are real trigrams. `starts` holds the byte offsets of the last
    // three characters seen.
    let padded = format!("#{folded}#");
    let characters = padded.chars().count();
    if characters >= 3 {
        let weight = TRIGRAMS_WEIGHT / ((characters - 2) as f32).sqrt();
        let mut starts = [0usize; 3];
        let ends = padded
            .char_indices()
            .map(|(offset, _)| offset)
            .chain(std::iter::once(padded.len()));
        for (seen, offset) in ends.enumerate() {
            if seen >= 3 {
                let gram = &padded.as_bytes()[starts[0]..offset];
                features.push(feature(fnv1a(b'g', &[gram]), weight));
            }
            starts = [starts[1], starts[2], offset];
        }
    }
    features.into_boxed_slice()
}

/// Calls `apply` with the features of one split word: a CJK bigram is one word feature; any other
/// word's features come from the per-thread memo (computed on first sight).
pub(crate) fn with_word_features<R>(
    word: &text::Word<'_>,
    apply: impl FnOnce(&[(u32, f32)]) -> R,
) -> R {
    if word.cjk {
        return apply(&[feature(fnv1a(b'w', &[word.folded.as_bytes()]), WORD_WEIGHT)]);
    }
    let mut apply = Some(apply);
    let known = FEATURE_MEMO.with_borrow(|memo| {
        memo.get(word.folded)
            .map(|features| (apply.take().expect("called once"))(features))
    });
    if let Some(result) = known {
        return result;
    }
    let features = word_features(word.folded);
    let result = (apply.take().expect("called once"))(&features);
    FEATURE_MEMO.with_borrow_mut(|memo| {
        if memo.len() >= FEATURE_MEMO_CAPACITY {
            memo.clear();
        }
        memo.insert(word.folded.into(), features);
    });
    result
}

/// Adds `features` to `vector` `times` times (the index embeds a tool's name twice).
pub(crate) fn add_features(vector: &mut [f32], features: &[(u32, f32)], times: f32) {
    for &(bucket, weight) in features {
        vector[bucket as usize] += times * weight;
    }
}

impl HashEmbedder {
    fn add_text(vector: &mut [f32], text: &str) {
        text::split_words(text, |word| {
            with_word_features(&word, |features| add_features(vector, features, 1.0));
        });
    }
}

impl Embedder for HashEmbedder {
    fn dimensions(&self) -> usize {
        HASH_DIMENSIONS
    }

    fn embed(&self, text: &str) -> Embedding {
        let mut vector = vec![0.0f32; HASH_DIMENSIONS];
        HashEmbedder::add_text(&mut vector, text);
        Embedding::normalized(vector)
    }

    fn as_hash_embedder(&self) -> Option<&HashEmbedder> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn similarity(a: &str, b: &str) -> f32 {
        cosine(&HashEmbedder.embed(a), &HashEmbedder.embed(b))
    }

    #[test]
    fn embeddings_are_unit_length_and_deterministic() {
        let embedding = HashEmbedder.embed("read a file from disk");
        let norm: f32 = embedding.values().iter().map(|v| v * v).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
        assert_eq!(embedding, HashEmbedder.embed("read a file from disk"));
        assert_eq!(embedding.dimensions(), HASH_DIMENSIONS);
    }

    #[test]
    fn related_texts_are_closer_than_unrelated_ones() {
        let related = similarity("fetch the contents of a document", "read file contents");
        let unrelated = similarity(
            "fetch the contents of a document",
            "weather forecast for paris",
        );
        assert!(related > unrelated + 0.2, "{related} vs {unrelated}");
    }

    #[test]
    fn non_latin_words_match_by_character_trigrams() {
        assert!(similarity("прочитать файлы", "файл") > 0.2);
        assert!(similarity("قراءة الملفات", "الملف") > 0.1);
        assert!(similarity("读取文件", "文件") > 0.3);
    }

    #[test]
    fn quantised_dot_products_track_the_exact_cosine() {
        let a = HashEmbedder.embed("send a message to a slack channel");
        let b = HashEmbedder.embed("post a chat message");
        let (mut qa, mut qb) = (Vec::new(), Vec::new());
        let scale = quantize_into(a.values(), &mut qa) * quantize_into(b.values(), &mut qb);
        let approximate = dot_quantized(&qa, &qb) as f32 * scale;
        assert!(
            (approximate - cosine(&a, &b)).abs() < 0.01,
            "{approximate} vs {}",
            cosine(&a, &b)
        );
    }

    #[test]
    fn empty_and_mismatched_embeddings_have_zero_similarity() {
        assert_eq!(similarity("", "anything"), 0.0);
        let short = Embedding::normalized(vec![1.0, 0.0]);
        assert_eq!(cosine(&short, &HashEmbedder.embed("x")), 0.0);
    }
}
