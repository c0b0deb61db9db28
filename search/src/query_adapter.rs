//! A learned query-side adapter: a low-rank linear map applied to a request's embedding before
//! it is compared with the tools' (`q' = normalize(q + B·(A·q))`, `A` of `rank × dims`, `B` of
//! `dims × rank`). The tools' vectors are untouched, so an adapter changes nothing that was
//! embedded or cached; it only moves a request towards the way tool texts are written.
//!
//! The weights are trained outside the crate (`scripts/train-query-adapter.py`, an in-batch
//! contrastive loss on (request, right tool) pairs of the evaluation's dev halves) and read from
//! a small file in this format, little-endian:
//!
//! ```text
//! b"TCQADAPT"  u32 version (1)  u32 dims  u32 rank  u32 name length  name (UTF-8)
//! A: rank × dims f16, row-major   B: dims × rank f16, row-major   u64 FNV-1a of all before it
//! ```
//!
//! `name` says which embedder's vectors the adapter was trained on; a file that is not an
//! adapter, is truncated, has bytes after its end, fails its checksum or holds a value that is
//! not finite is refused with a `QueryAdapterError` saying which, as is an adapter whose width
//! differs from the embedder it is put on.

use std::sync::Arc;

use crate::embed::{Embedder, Embedding};

/// The first bytes of an adapter file.
const MAGIC: &[u8; 8] = b"TCQADAPT";
/// The format this code reads and writes.
const FORMAT_VERSION: u32 = 1;
/// The longest embedder name a file may carry.
const MAX_NAME_BYTES: usize = 256;

/// Why an adapter could not be read or used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum QueryAdapterError {
    /// The bytes do not start with the magic or are of another format version.
    #[error(
        "not a query adapter (magic or version {found} differs); expected a file written by scripts/train-query-adapter.py, format {FORMAT_VERSION}"
    )]
    Format {
        /// The version found (0 when the magic itself differs).
        found: u32,
    },
    /// The header's shape is impossible.
    #[error(
        "the adapter's shape is {dims} dimensions at rank {rank}; expected 1 ≤ rank ≤ dims and a name of at most {MAX_NAME_BYTES} bytes"
    )]
    Shape {
        /// Dimensions in the header.
        dims: usize,
        /// Rank in the header.
        rank: usize,
    },
    /// The bytes end before the adapter does.
    #[error("the adapter is truncated: {bytes} bytes, {expected} expected from its header")]
    Truncated {
        /// The bytes given.
        bytes: usize,
        /// What the header says the adapter takes.
        expected: usize,
    },
    /// Bytes follow the adapter's end.
    #[error("the adapter has {extra} bytes after its end; expected exactly {expected}")]
    Trailing {
        /// The bytes after the end.
        extra: usize,
        /// What the header says the adapter takes.
        expected: usize,
    },
    /// The checksum does not match the bytes: the file was damaged.
    #[error("the adapter's checksum does not match its bytes; the file is damaged")]
    Checksum,
    /// A weight is infinite or not a number.
    #[error("the adapter holds a weight that is not a finite number")]
    NotFinite,
    /// The adapter was trained on vectors of another width than the embedder's.
    #[error(
        "the adapter maps {adapter}-dimensional vectors but the embedder gives {embedder}; expected an adapter trained on this embedder"
    )]
    Dimensions {
        /// The adapter's width.
        adapter: usize,
        /// The embedder's width.
        embedder: usize,
    },
}

/// A low-rank query adapter (see the module's documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct QueryAdapter {
    name: String,
    dims: usize,
    rank: usize,
    /// `rank × dims`, row-major.
    down: Vec<f32>,
    /// `dims × rank`, row-major.
    up: Vec<f32>,
}

/// FNV-1a over `bytes` (64-bit): detects a damaged file, not an attack.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let word = bytes.get(at..at + 4)?;
    Some(u32::from_le_bytes([word[0], word[1], word[2], word[3]]))
}

/// IEEE half precision to single.
fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let mantissa = u32::from(bits & 0x3ff);
    let value = match (exponent, mantissa) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: normalise the mantissa.
            let shift = mantissa.leading_zeros() - 21;
            let mantissa = (mantissa << shift) & 0x3ff;
            sign | ((127 - 15 + 1 - shift) << 23) | (mantissa << 13)
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, _) => sign | 0x7fc0_0000,
        _ => sign | ((exponent + 127 - 15) << 23) | (mantissa << 13),
    };
    f32::from_bits(value)
}

/// Single precision to IEEE half, rounding to nearest (values beyond the range become infinite,
/// which `from_bytes` refuses).
fn f32_to_f16(value: f32) -> u16 {
    let bits = value.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32;
    let mantissa = bits & 0x7f_ffff;
    if exponent == 0xff {
        return sign | 0x7c00 | if mantissa != 0 { 0x200 } else { 0 };
    }
    let half_exponent = exponent - 127 + 15;
    if half_exponent >= 0x1f {
        return sign | 0x7c00;
    }
    if half_exponent <= 0 {
        if half_exponent < -10 {
            return sign;
        }
        let mantissa = mantissa | 0x80_0000;
        let shift = (14 - half_exponent) as u32;
        let rounded = (mantissa + (1 << (shift - 1))) >> shift;
        return sign | rounded as u16;
    }
    let rounded = (((half_exponent as u32) << 10) | (mantissa >> 13)) + ((mantissa >> 12) & 1);
    sign | rounded as u16
}

impl QueryAdapter {
    /// An adapter from its two factors (`down`: `rank × dims`, `up`: `dims × rank`, row-major).
    pub fn new(
        name: &str,
        dims: usize,
        rank: usize,
        down: Vec<f32>,
        up: Vec<f32>,
    ) -> Result<QueryAdapter, QueryAdapterError> {
        if rank == 0
            || rank > dims
            || name.len() > MAX_NAME_BYTES
            || down.len() != rank * dims
            || up.len() != rank * dims
        {
            return Err(QueryAdapterError::Shape { dims, rank });
        }
        if !down.iter().chain(&up).all(|value| value.is_finite()) {
            return Err(QueryAdapterError::NotFinite);
        }
        Ok(QueryAdapter {
            name: name.to_owned(),
            dims,
            rank,
            down,
            up,
        })
    }

    /// Reads an adapter file (see the module's documentation for the format).
    pub fn from_bytes(bytes: &[u8]) -> Result<QueryAdapter, QueryAdapterError> {
        if bytes.get(..8) != Some(MAGIC.as_slice()) {
            return Err(QueryAdapterError::Format { found: 0 });
        }
        let header = |at: usize| {
            read_u32(bytes, at).ok_or(QueryAdapterError::Truncated {
                bytes: bytes.len(),
                expected: 24,
            })
        };
        let version = header(8)?;
        if version != FORMAT_VERSION {
            return Err(QueryAdapterError::Format { found: version });
        }
        let dims = header(12)? as usize;
        let rank = header(16)? as usize;
        let name_length = header(20)? as usize;
        if rank == 0 || rank > dims || dims > 1 << 16 || name_length > MAX_NAME_BYTES {
            return Err(QueryAdapterError::Shape { dims, rank });
        }
        let weights_at = 24 + name_length;
        let values = 2 * rank * dims;
        let checksum_at = weights_at + 2 * values;
        let expected = checksum_at + 8;
        if bytes.len() < expected {
            return Err(QueryAdapterError::Truncated {
                bytes: bytes.len(),
                expected,
            });
        }
        if bytes.len() > expected {
            return Err(QueryAdapterError::Trailing {
                extra: bytes.len() - expected,
                expected,
            });
        }
        let stored = u64::from_le_bytes(
            bytes[checksum_at..expected]
                .try_into()
                .expect("eight bytes, checked above"),
        );
        if fnv1a(&bytes[..checksum_at]) != stored {
            return Err(QueryAdapterError::Checksum);
        }
        let name = String::from_utf8_lossy(&bytes[24..weights_at]).into_owned();
        let mut weights: Vec<f32> = bytes[weights_at..checksum_at]
            .chunks_exact(2)
            .map(|pair| f16_to_f32(u16::from_le_bytes([pair[0], pair[1]])))
            .collect();
        let up = weights.split_off(rank * dims);
        QueryAdapter::new(&name, dims, rank, weights, up)
    }

    /// The file this adapter is read from: its weights in half precision, so reading the
    /// bytes back gives the weights rounded to half precision.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(32 + self.name.len() + 4 * self.dims * self.rank);
        bytes.extend_from_slice(MAGIC);
        for word in [FORMAT_VERSION, self.dims as u32, self.rank as u32] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        bytes.extend_from_slice(&(self.name.len() as u32).to_le_bytes());
        bytes.extend_from_slice(self.name.as_bytes());
        for value in self.down.iter().chain(&self.up) {
            bytes.extend_from_slice(&f32_to_f16(*value).to_le_bytes());
        }
        let checksum = fnv1a(&bytes);
        bytes.extend_from_slice(&checksum.to_le_bytes());
        bytes
    }

    /// The embedder the adapter was trained on, as its file names it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The width of the vectors it maps.
    pub fn dimensions(&self) -> usize {
        self.dims
    }

    /// The rank of its map.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// `normalize(q + B·(A·q))`; a zero or other-width vector is returned as it is (a request
    /// with nothing to embed stays one).
    pub fn apply(&self, query: &Embedding) -> Embedding {
        let q = query.values();
        if q.len() != self.dims || q.iter().all(|value| *value == 0.0) {
            return query.clone();
        }
        let low: Vec<f32> = self
            .down
            .chunks_exact(self.dims)
            .map(|row| crate::embed::dot(row, q))
            .collect();
        let adapted: Vec<f32> = q
            .iter()
            .zip(self.up.chunks_exact(self.rank))
            .map(|(value, row)| value + crate::embed::dot(row, &low))
            .collect();
        Embedding::normalized(adapted)
    }
}

/// An embedder whose requests go through a `QueryAdapter`; tools are embedded as by the inner
/// embedder, and the shares are the inner embedder's.
pub struct AdaptedEmbedder {
    inner: Arc<dyn Embedder>,
    adapter: Arc<QueryAdapter>,
}

impl AdaptedEmbedder {
    /// `inner` with its requests adapted; refused when the widths differ.
    pub fn new(
        inner: Arc<dyn Embedder>,
        adapter: Arc<QueryAdapter>,
    ) -> Result<AdaptedEmbedder, QueryAdapterError> {
        if inner.dimensions() != adapter.dimensions() {
            return Err(QueryAdapterError::Dimensions {
                adapter: adapter.dimensions(),
                embedder: inner.dimensions(),
            });
        }
        Ok(AdaptedEmbedder { inner, adapter })
    }
}

impl Embedder for AdaptedEmbedder {
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    fn embed(&self, text: &str) -> Embedding {
        self.inner.embed(text)
    }

    fn embed_query(&self, text: &str) -> Embedding {
        self.adapter.apply(&self.inner.embed_query(text))
    }

    fn embed_batch(&self, texts: &[&str]) -> Vec<Embedding> {
        self.inner.embed_batch(texts)
    }

    fn semantic_share(&self) -> f32 {
        self.inner.semantic_share()
    }

    fn semantic_share_unmatched(&self) -> f32 {
        self.inner.semantic_share_unmatched()
    }

    fn is_sentence_model(&self) -> bool {
        self.inner.is_sentence_model()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small_adapter() -> QueryAdapter {
        // dims 4, rank 2: A picks the first two components, B adds them to the last two.
        let down = vec![1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0];
        let up = vec![0.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.5];
        QueryAdapter::new("test embedder", 4, 2, down, up).expect("a valid shape")
    }

    #[test]
    fn an_adapter_moves_a_request_and_keeps_it_unit_length() {
        let adapter = small_adapter();
        let query = Embedding::normalized(vec![1.0, 0.0, 0.0, 0.0]);
        let adapted = adapter.apply(&query);
        let expected = Embedding::normalized(vec![1.0, 0.0, 0.5, 0.0]);
        for (a, b) in adapted.values().iter().zip(expected.values()) {
            assert!((a - b).abs() < 1e-6, "{adapted:?} against {expected:?}");
        }
        // A zero request stays zero (nothing to embed is still nothing).
        let zero = Embedding::normalized(vec![0.0; 4]);
        assert_eq!(adapter.apply(&zero), zero);
    }

    #[test]
    fn a_written_adapter_reads_back_with_its_weights_in_half_precision() {
        let adapter = small_adapter();
        let bytes = adapter.to_bytes();
        assert_eq!(bytes.len(), 24 + "test embedder".len() + 2 * 16 + 8);
        let read = QueryAdapter::from_bytes(&bytes).expect("its own bytes");
        assert_eq!(read, adapter, "these weights are exact in half precision");
        assert_eq!(read.name(), "test embedder");
    }

    #[test]
    fn half_precision_round_trips_within_its_rounding() {
        for value in [
            0.0f32, -0.0, 1.0, -2.5, 0.1, 3.3e-3, 6.0e-5, 1.0e-6, 65504.0,
        ] {
            let back = f16_to_f32(f32_to_f16(value));
            assert!(
                (back - value).abs() <= value.abs() * 1e-3 + 6.0e-8,
                "{value} came back as {back}"
            );
        }
        assert!(f16_to_f32(f32_to_f16(1.0e6)).is_infinite());
    }

    #[test]
    fn a_file_that_is_not_an_adapter_truncated_damaged_or_too_long_is_refused() {
        let bytes = small_adapter().to_bytes();
        assert_eq!(
            QueryAdapter::from_bytes(b"TCSTATIC and more bytes here"),
            Err(QueryAdapterError::Format { found: 0 })
        );
        let mut other_version = bytes.clone();
        other_version[8] = 2;
        assert_eq!(
            QueryAdapter::from_bytes(&other_version),
            Err(QueryAdapterError::Format { found: 2 })
        );
        let truncated = QueryAdapter::from_bytes(&bytes[..bytes.len() - 10]);
        assert_eq!(
            truncated,
            Err(QueryAdapterError::Truncated {
                bytes: bytes.len() - 10,
                expected: bytes.len()
            })
        );
        assert_eq!(
            truncated.unwrap_err().to_string(),
            format!(
                "the adapter is truncated: {} bytes, {} expected from its header",
                bytes.len() - 10,
                bytes.len()
            )
        );
        assert!(matches!(
            QueryAdapter::from_bytes(&bytes[..12]),
            Err(QueryAdapterError::Truncated { .. })
        ));
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(
            QueryAdapter::from_bytes(&longer),
            Err(QueryAdapterError::Trailing {
                extra: 1,
                expected: bytes.len()
            })
        );
        let mut damaged = bytes.clone();
        let middle = bytes.len() - 20;
        damaged[middle] ^= 0x40;
        assert_eq!(
            QueryAdapter::from_bytes(&damaged),
            Err(QueryAdapterError::Checksum)
        );
        let mut no_rank = bytes.clone();
        no_rank[16..20].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            QueryAdapter::from_bytes(&no_rank),
            Err(QueryAdapterError::Shape { dims: 4, rank: 0 })
        );
    }

    #[test]
    fn a_weight_that_is_not_finite_is_refused() {
        let mut adapter = small_adapter();
        adapter.up[0] = f32::INFINITY;
        // Written with a valid checksum: the value itself is what is refused.
        assert_eq!(
            QueryAdapter::from_bytes(&adapter.to_bytes()),
            Err(QueryAdapterError::NotFinite)
        );
    }

    struct Fixed;

    impl Embedder for Fixed {
        fn dimensions(&self) -> usize {
            4
        }

        fn embed(&self, _text: &str) -> Embedding {
            Embedding::normalized(vec![1.0, 0.0, 0.0, 0.0])
        }

        fn semantic_share(&self) -> f32 {
            0.4
        }
    }

    #[test]
    fn an_adapted_embedder_moves_requests_only_and_refuses_another_width() {
        let adapted = AdaptedEmbedder::new(Arc::new(Fixed), Arc::new(small_adapter()))
            .expect("the same width");
        assert_eq!(adapted.embed("tool"), Fixed.embed("tool"));
        assert_eq!(adapted.embed_batch(&["tool"]), vec![Fixed.embed("tool")]);
        assert_ne!(adapted.embed_query("request"), Fixed.embed("request"));
        assert_eq!(adapted.semantic_share(), 0.4);
        let wide = QueryAdapter::new("wide", 8, 1, vec![0.0; 8], vec![0.0; 8]).expect("a shape");
        assert_eq!(
            AdaptedEmbedder::new(Arc::new(Fixed), Arc::new(wide)).err(),
            Some(QueryAdapterError::Dimensions {
                adapter: 8,
                embedder: 4
            })
        );
    }
}
