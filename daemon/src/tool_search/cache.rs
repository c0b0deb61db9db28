//! The disk cache of tool vectors: what the sentence-embedding model made of each tool's text,
//! so a restart embeds nothing it has embedded before.
//!
//! An entry is keyed by SHA-256 over the model's fingerprint and the exact text embedded, so a
//! changed description, a changed model, or a changed way of embedding all miss rather than
//! return a stale vector. Vectors are kept as `i8` with one scale, the form the index keeps them
//! in anyway (quantising a dequantised row gives the same row back), about 400 bytes a tool.
//!
//! The file is bounded: entries not used for `MAX_AGE_SECONDS` are dropped, and past
//! `MAX_ENTRIES` the least recently used go first. It is written whole to a temporary file
//! (mode 0600) and renamed over the old one, so a crash leaves the old file or the new one; a
//! file that does not decode (truncated, another format, a flipped bit caught by the checksum)
//! is ignored with a warning and rebuilt. Encoding and decoding are pure and tested here.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// The cache file's name in the daemon's state directory.
pub(crate) const FILE_NAME: &str = "search-vectors.bin";

/// The first bytes of the file: the format and its version.
const MAGIC: &[u8; 8] = b"tcsvec01";

/// Entries unused this long are dropped when the file is written (30 days).
pub(crate) const MAX_AGE_SECONDS: u64 = 30 * 24 * 3600;

/// The most entries kept: 50,000 tools at ~400 bytes is 20 MB.
pub(crate) const MAX_ENTRIES: usize = 50_000;

/// A cache key: SHA-256 of the model's fingerprint and the text.
pub(crate) type Key = [u8; 32];

/// The key of `text` embedded by the model with `fingerprint`.
pub(crate) fn key(fingerprint: &[u8], text: &str) -> Key {
    let mut hasher = Sha256::new();
    hasher.update((fingerprint.len() as u64).to_le_bytes());
    hasher.update(fingerprint);
    hasher.update(text.as_bytes());
    hasher.finalize().into()
}

/// One cached vector.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// The vector quantised to `i8`.
    pub(crate) row: Vec<i8>,
    /// `value ≈ row[i] * scale`.
    pub(crate) scale: f32,
    /// When a catalog last held this text (seconds since the Unix epoch).
    pub(crate) last_seen: u64,
}

impl Entry {
    /// An entry for `values` seen at `now`.
    pub(crate) fn of(values: &[f32], now: u64) -> Entry {
        let largest = values.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let scale = if largest > 0.0 { largest / 127.0 } else { 0.0 };
        let row = values
            .iter()
            .map(|v| {
                if scale > 0.0 {
                    (v / scale).round().clamp(-127.0, 127.0) as i8
                } else {
                    0
                }
            })
            .collect();
        Entry {
            row,
            scale,
            last_seen: now,
        }
    }

    /// The vector.
    pub(crate) fn values(&self) -> Vec<f32> {
        self.row
            .iter()
            .map(|q| f32::from(*q) * self.scale)
            .collect()
    }
}

/// Why a cache file was not read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum DecodeError {
    /// Not this format (or another version of it).
    #[error("it is not a tool-cli vector cache (version 1)")]
    Format,
    /// Shorter or longer than its header says.
    #[error("it is truncated or has trailing bytes")]
    Length,
    /// The checksum does not match the contents.
    #[error("its checksum does not match its contents")]
    Checksum,
}

/// The cache in memory.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct VectorCache {
    /// The dimension of every vector (0 while empty).
    pub(crate) dimensions: usize,
    pub(crate) entries: HashMap<Key, Entry>,
}

impl VectorCache {
    /// The vector cached for `key`, marking it used at `now`.
    pub(crate) fn get(&mut self, key: &Key, now: u64) -> Option<Vec<f32>> {
        let entry = self.entries.get_mut(key)?;
        entry.last_seen = entry.last_seen.max(now);
        Some(entry.values())
    }

    /// Caches `values` for `key`. A vector of another dimension than the cache's replaces the
    /// whole cache (another model).
    pub(crate) fn insert(&mut self, key: Key, values: &[f32], now: u64) {
        if self.dimensions != values.len() {
            self.entries.clear();
            self.dimensions = values.len();
        }
        self.entries.insert(key, Entry::of(values, now));
    }

    /// Drops entries unused since `now - MAX_AGE_SECONDS`, then the least recently used beyond
    /// `max_entries`.
    pub(crate) fn evict(&mut self, now: u64, max_entries: usize) {
        let oldest = now.saturating_sub(MAX_AGE_SECONDS);
        self.entries.retain(|_, entry| entry.last_seen >= oldest);
        if self.entries.len() > max_entries {
            let mut ages: Vec<(u64, Key)> = self
                .entries
                .iter()
                .map(|(key, entry)| (entry.last_seen, *key))
                .collect();
            ages.sort_unstable();
            for (_, key) in &ages[..ages.len() - max_entries] {
                self.entries.remove(key);
            }
        }
    }

    /// The file's bytes: magic, dimensions (u32), count (u32), then per entry the key, the last
    /// use (u64), the scale (f32) and the row; then SHA-256 of everything before it. Little
    /// endian. Entries are sorted by key, so the same cache always gives the same bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut keys: Vec<&Key> = self.entries.keys().collect();
        keys.sort_unstable();
        let mut out = Vec::with_capacity(16 + keys.len() * (32 + 8 + 4 + self.dimensions) + 32);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.dimensions as u32).to_le_bytes());
        out.extend_from_slice(&(keys.len() as u32).to_le_bytes());
        for key in keys {
            let entry = &self.entries[key];
            out.extend_from_slice(key);
            out.extend_from_slice(&entry.last_seen.to_le_bytes());
            out.extend_from_slice(&entry.scale.to_le_bytes());
            out.extend(entry.row.iter().map(|q| *q as u8));
        }
        let checksum = Sha256::digest(&out);
        out.extend_from_slice(&checksum);
        out
    }

    /// Reads what `encode` wrote.
    pub(crate) fn decode(bytes: &[u8]) -> Result<VectorCache, DecodeError> {
        if bytes.len() < 16 + 32 || &bytes[..8] != MAGIC {
            return Err(DecodeError::Format);
        }
        let (body, checksum) = bytes.split_at(bytes.len() - 32);
        let u32_at = |at: usize| u32::from_le_bytes(body[at..at + 4].try_into().expect("4 bytes"));
        let dimensions = u32_at(8) as usize;
        let count = u32_at(12) as usize;
        let entry_bytes = 32 + 8 + 4 + dimensions;
        if count
            .checked_mul(entry_bytes)
            .and_then(|entries| entries.checked_add(16))
            != Some(body.len())
        {
            return Err(DecodeError::Length);
        }
        if Sha256::digest(body).as_slice() != checksum {
            return Err(DecodeError::Checksum);
        }
        let mut entries = HashMap::with_capacity(count);
        for chunk in body[16..].chunks_exact(entry_bytes) {
            let key: Key = chunk[..32].try_into().expect("32 bytes");
            let last_seen = u64::from_le_bytes(chunk[32..40].try_into().expect("8 bytes"));
            let scale = f32::from_le_bytes(chunk[40..44].try_into().expect("4 bytes"));
            let row = chunk[44..].iter().map(|b| *b as i8).collect();
            entries.insert(
                key,
                Entry {
                    row,
                    scale,
                    last_seen,
                },
            );
        }
        Ok(VectorCache {
            dimensions,
            entries,
        })
    }
}

/// The cache file in `dir`.
pub(crate) fn path_in(dir: &Path) -> PathBuf {
    dir.join(FILE_NAME)
}

/// Reads the cache at `path`: empty when there is none; empty with a warning when it cannot
/// be read or decoded (it is rebuilt at the next write).
pub(crate) fn load(path: &Path) -> VectorCache {
    match std::fs::read(path) {
        Ok(bytes) => VectorCache::decode(&bytes).unwrap_or_else(|error| {
            tracing::warn!(
                path = %path.display(),
                %error,
                "the search vector cache is ignored and will be rebuilt"
            );
            VectorCache::default()
        }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => VectorCache::default(),
        Err(error) => {
            tracing::warn!(
                path = %path.display(),
                %error,
                "cannot read the search vector cache; it will be rebuilt"
            );
            VectorCache::default()
        }
    }
}

/// Writes `cache` to `path` atomically: a temporary file beside it (mode 0600), synced, then
/// renamed over it.
pub(crate) fn save(path: &Path, cache: &VectorCache) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(&cache.encode())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache_of(vectors: &[(&str, [f32; 4], u64)]) -> VectorCache {
        let mut cache = VectorCache::default();
        for (text, values, seen) in vectors {
            cache.insert(key(b"model-a", text), values, *seen);
        }
        cache
    }

    #[test]
    fn a_cache_survives_encoding_and_gives_its_vectors_back() {
        let cache = cache_of(&[
            (
                "read_file read_file Read a file",
                [0.5, -0.5, 0.5, 0.5],
                100,
            ),
            ("get_weather", [1.0, 0.0, 0.0, 0.0], 200),
        ]);
        let bytes = cache.encode();
        assert_eq!(bytes, cache.encode(), "the same cache gives the same bytes");
        let mut decoded = VectorCache::decode(&bytes).unwrap();
        assert_eq!(decoded, cache);
        let values = decoded
            .get(&key(b"model-a", "read_file read_file Read a file"), 300)
            .unwrap();
        for (got, want) in values.iter().zip([0.5, -0.5, 0.5, 0.5]) {
            assert!((got - want).abs() < 0.01, "{values:?}");
        }
        // A lookup marks the entry used.
        assert_eq!(
            decoded.entries[&key(b"model-a", "read_file read_file Read a file")].last_seen,
            300
        );
    }

    #[test]
    fn the_key_depends_on_the_model_and_the_exact_text() {
        assert_eq!(key(b"m", "text"), key(b"m", "text"));
        assert_ne!(key(b"m", "text"), key(b"n", "text"));
        assert_ne!(key(b"m", "text"), key(b"m", "text "));
        // The fingerprint's length is hashed, so (fingerprint, text) pairs cannot collide by
        // moving bytes from one to the other.
        assert_ne!(key(b"ab", "c"), key(b"a", "bc"));
    }

    #[test]
    fn corrupt_files_are_refused_by_format_length_or_checksum() {
        let bytes = cache_of(&[("x", [1.0, 0.0, 0.0, 0.0], 1)]).encode();
        assert_eq!(VectorCache::decode(b"garbage"), Err(DecodeError::Format));
        assert_eq!(
            VectorCache::decode(&bytes[..bytes.len() - 1]),
            Err(DecodeError::Length)
        );
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert_eq!(VectorCache::decode(&flipped), Err(DecodeError::Checksum));
        let mut other_version = bytes;
        other_version[7] = b'2';
        assert_eq!(
            VectorCache::decode(&other_version),
            Err(DecodeError::Format)
        );
    }

    #[test]
    fn eviction_drops_stale_entries_then_the_least_recently_used() {
        let now = MAX_AGE_SECONDS * 2;
        let mut cache = cache_of(&[
            ("stale", [1.0, 0.0, 0.0, 0.0], now - MAX_AGE_SECONDS - 1),
            ("old", [0.0, 1.0, 0.0, 0.0], now - 10),
            ("new", [0.0, 0.0, 1.0, 0.0], now),
            ("newer", [0.0, 0.0, 0.0, 1.0], now),
        ]);
        cache.evict(now, 2);
        let mut kept: Vec<Key> = cache.entries.keys().copied().collect();
        kept.sort_unstable();
        let mut expected = vec![key(b"model-a", "new"), key(b"model-a", "newer")];
        expected.sort_unstable();
        assert_eq!(kept, expected);
    }

    #[test]
    fn a_vector_of_another_dimension_starts_the_cache_over() {
        let mut cache = cache_of(&[("x", [1.0, 0.0, 0.0, 0.0], 1)]);
        cache.insert(key(b"model-b", "x"), &[1.0, 0.0], 2);
        assert_eq!(cache.dimensions, 2);
        assert_eq!(cache.entries.len(), 1);
    }

    #[test]
    fn saving_is_atomic_private_and_loading_a_corrupt_file_starts_empty() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        assert_eq!(load(&path), VectorCache::default());
        let cache = cache_of(&[("x", [1.0, 0.0, 0.0, 0.0], 1)]);
        save(&path, &cache).unwrap();
        assert_eq!(load(&path), cache);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
        std::fs::write(&path, b"tcsvec01 but not really").unwrap();
        assert_eq!(load(&path), VectorCache::default());
    }
}
