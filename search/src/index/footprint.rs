//! What an index keeps in memory, part by part: how the daemon's memory figures are accounted
//! (`daemon/examples/catalog_memory.rs`, docs/benchmarks.md) and what to cut next.
//!
//! Sizes are the heap bytes each part holds (capacities, not lengths), without the allocator's
//! own overhead; a hash table counts its buckets and control bytes.

use std::mem::size_of;

use super::shard::{Posting, StoredTool};
use super::{FIELDS, Index};

/// The heap bytes of an index, by part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Indexed tools.
    pub tools: usize,
    /// Postings (one per tool and term).
    pub postings: usize,
    /// Bytes of the postings.
    pub posting_bytes: usize,
    /// Distinct terms over all shards (a term in two shards counts twice).
    pub shard_terms: usize,
    /// The shards' term lists and posting ranges, and the terms' text.
    pub term_bytes: usize,
    /// The index-wide term table: statistics and each term's shard lists.
    pub term_table_bytes: usize,
    /// The tools' names and descriptions, their tag sets and per-tool facts.
    pub tool_bytes: usize,
    /// Per-field lengths and the BM25F factors computed from them.
    pub length_bytes: usize,
    /// The embedder's vectors, quantised, with their scales.
    pub embedding_bytes: usize,
    /// A sentence-embedding model's vectors, when attached.
    pub model_vector_bytes: usize,
}

impl Footprint {
    /// Every part's bytes together.
    pub fn total_bytes(&self) -> usize {
        self.posting_bytes
            + self.term_bytes
            + self.term_table_bytes
            + self.tool_bytes
            + self.length_bytes
            + self.embedding_bytes
            + self.model_vector_bytes
    }
}

impl Index {
    /// What this index keeps, part by part.
    pub fn footprint(&self) -> Footprint {
        let mut footprint = Footprint {
            tools: self.stats.tools,
            ..Footprint::default()
        };
        for shard in self.shards.iter() {
            footprint.postings += shard.postings.len();
            footprint.posting_bytes += shard.postings.len() * size_of::<Posting>();
            footprint.shard_terms += shard.term_count();
            footprint.term_bytes +=
                shard.term_bytes() + shard.posting_ranges.capacity() * size_of::<(u32, u32)>();
            footprint.tool_bytes += shard.text_bytes()
                + shard.tools.capacity() * size_of::<StoredTool>()
                + shard.server.capacity();
            footprint.length_bytes += shard.lengths.capacity() * size_of::<[u16; FIELDS]>();
            footprint.embedding_bytes +=
                shard.embeddings.capacity() + shard.embedding_scales.capacity() * size_of::<f32>();
        }
        let stats = &self.stats;
        // hashbrown: one bucket (key and value) and one control byte per slot.
        footprint.term_table_bytes =
            stats.term_table_bytes() + stats.offsets.capacity() * size_of::<usize>();
        footprint.length_bytes += stats.field_factors.capacity() * size_of::<[f32; FIELDS]>();
        footprint.model_vector_bytes = self.model_rows.values().map(|rows| rows.bytes()).sum();
        footprint
    }
}
