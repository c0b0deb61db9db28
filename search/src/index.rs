//! The index: one immutable shard per server, replaced whole when that server's tools change,
//! plus the statistics BM25F needs aggregated over every shard.
//!
//! A shard holds its tools' field lengths, an inverted index (term → tools with per-field term
//! frequencies) and the tools' embeddings. Shards are `Arc`ed, so `with_server` and
//! `without_server` build one new shard and share the others: a server's `list_changed` costs
//! that server's tools, not the catalog. The corpus statistics (tool count, per-field length sums,
//! document frequencies) are recomputed from the shards' own counts on every change, so scores
//! are exactly those of one index over all tools. Readers hold an `Index` value; a rebuild makes
//! a new value and never blocks them.

mod footprint;
pub(crate) mod shard;

use std::sync::Arc;

use hashbrown::HashTable;
use rustc_hash::FxHashMap;

use crate::doc::ToolDoc;
use crate::embed::{Embedder, Embedding};
use crate::search;
use crate::semantic::ModelRows;

pub use footprint::Footprint;
use shard::{Shard, push_embedding_text, shared_parameters};

/// The fields of a tool that BM25F scores separately.
pub(crate) const FIELDS: usize = 5;
/// The tool's name, split into words.
pub(crate) const NAME: usize = 0;
/// The tool's title.
pub(crate) const TITLE: usize = 1;
/// The tool's description.
pub(crate) const DESCRIPTION: usize = 2;
/// Parameter names and descriptions.
pub(crate) const PARAMETERS: usize = 3;
/// The server's name, description and tags.
pub(crate) const SERVER: usize = 4;

/// A tool name as the words a sentence model reads: `getFileInfo`, `get_file_info`,
/// `get-file.info` → `get File Info`, `get file info`, ...
pub fn name_words(name: &str) -> String {
    let mut words = String::with_capacity(name.len() + 8);
    let mut previous: Option<char> = None;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.' | '/' | ':') {
            words.push(' ');
        } else {
            if c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit())
            {
                words.push(' ');
            }
            words.push(c);
        }
        previous = Some(c);
    }
    words.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The texts a sentence-embedding model embeds for one server's `docs`, in order: exactly what
/// an index built with that model as its embedder would embed. A caller that embeds tools off
/// the index (on a background thread, through a cache) embeds these and attaches the vectors
/// with `Index::with_model_vectors`.
pub fn embedding_texts(docs: &[ToolDoc]) -> Vec<String> {
    let shared = shared_parameters(docs);
    let mut parameter_position = 0;
    docs.iter()
        .map(|doc| {
            let first_parameter = parameter_position;
            parameter_position += doc.parameters.len();
            let doc = doc.clone().capped();
            let mut text = String::new();
            push_embedding_text(&mut text, &doc, |position| {
                shared.get(first_parameter + position) == Some(&true)
            });
            text
        })
        .collect()
}

/// Where one term's list lies in one shard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TermList {
    /// The shard's position in `Index::shards`.
    pub(crate) shard: u32,
    /// The range of its postings in the shard's `postings`.
    pub(crate) start: u32,
    pub(crate) end: u32,
    /// How often it occurs in the server's text the shard posts once (every tool of the shard
    /// has it that often in its server field); 0 when it does not.
    pub(crate) server: u8,
}

/// What the index knows about one term across shards.
#[derive(Clone, Copy)]
pub(crate) struct TermStats {
    /// The number of tools with the term in any field.
    pub(crate) document_frequency: u32,
    /// Where its shard lists lie in `Stats::term_shards` (start, end): one array for all terms
    /// rather than a `Vec` each (an allocation per distinct term, ten thousand and more).
    lists: (u32, u32),
}

/// The hash a term is found by in `Stats::lookup`.
fn hash_term(term: &str) -> u64 {
    use std::hash::{BuildHasher as _, BuildHasherDefault};
    BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(term)
}

/// The text of the term at `(shard, local id)` of `shards`.
fn term_text(shards: &[Arc<Shard>], (shard, local): (u32, u32)) -> &str {
    shards[shard as usize].term(local as usize)
}

/// A server's name and its tools, as `Index::with_servers` takes them.
type ServerDocs = (String, Vec<ToolDoc>);

/// Below this many tools a build stays on the calling thread: spawning costs more than it saves.
const PARALLEL_BUILD_MIN_TOOLS: usize = 2_048;

/// The most threads one build uses.
const PARALLEL_BUILD_MAX_THREADS: usize = 8;

/// Builds the shards of `servers`, in order. A large build (the start-up one) is spread over the
/// machine's cores with scoped threads: shards are independent, so this is the cheapest way to
/// keep a 10,000-tool build within its budget. No thread outlives the call.
fn build_shards(servers: Vec<ServerDocs>, embedder: &dyn Embedder) -> Vec<Arc<Shard>> {
    let tools: usize = servers.iter().map(|(_, docs)| docs.len()).sum();
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(PARALLEL_BUILD_MAX_THREADS);
    if tools < PARALLEL_BUILD_MIN_TOOLS || threads < 2 || servers.len() < 2 {
        return servers
            .into_iter()
            .map(|(server, docs)| Arc::new(Shard::build(&server, docs, embedder)))
            .collect();
    }
    // Deal servers to threads largest first, each to the least loaded thread, remembering each
    // server's position so the result keeps the input order.
    let mut order: Vec<(usize, ServerDocs)> = servers.into_iter().enumerate().collect();
    order.sort_by_key(|(_, (_, docs))| std::cmp::Reverse(docs.len()));
    let mut work: Vec<(usize, Vec<(usize, ServerDocs)>)> =
        (0..threads).map(|_| (0, Vec::new())).collect();
    for item in order {
        let lightest = work
            .iter_mut()
            .min_by_key(|(load, _)| *load)
            .expect("at least two threads");
        lightest.0 += item.1.1.len().max(1);
        lightest.1.push(item);
    }
    let mut built: Vec<(usize, Arc<Shard>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = work
            .into_iter()
            .map(|(_, items)| {
                scope.spawn(move || {
                    items
                        .into_iter()
                        .map(|(position, (server, docs))| {
                            (position, Arc::new(Shard::build(&server, docs, embedder)))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| match handle.join() {
                Ok(shards) => shards,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    built.sort_by_key(|(position, _)| *position);
    built.into_iter().map(|(_, shard)| shard).collect()
}

/// Corpus statistics over every shard, and the per-tool BM25F length factors they imply.
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) tools: usize,
    pub(crate) length_sums: [u64; FIELDS],
    /// Per distinct term (index-wide id), its statistics.
    terms: Vec<TermStats>,
    /// Per term, where its text is: the shard (position in `Index::shards`) and shard-local id
    /// of its first sighting. The term table keeps no string of its own: a block per term was
    /// ten thousand small allocations at 10,000 tools, scattered over a build's freed scratch.
    term_at: Vec<(u32, u32)>,
    /// The terms' ids, found by their text's hash (compared through `term_at`).
    lookup: HashTable<u32>,
    /// Per term, grouped by term: the shards whose tools have it, with the range of its list in
    /// that shard's `postings` and its count in the shard's server text, so a query reads them
    /// without looking the term up in every shard.
    term_shards: Vec<TermList>,
    /// The global position of each shard's first tool.
    pub(crate) offsets: Vec<usize>,
    /// Per tool (global position), each field's weight divided by its length normalisation,
    /// computed once per index rather than once per posting per query.
    pub(crate) field_factors: Vec<[f32; FIELDS]>,
}

impl Stats {
    fn of(shards: &[Arc<Shard>]) -> Stats {
        let mut stats = Stats::default();
        // Each term gets a dense id in order of first sight; `lists_of[id]` counts its shards.
        // Every (id, shard list) goes into one vector, grouped by id at the end with a counting
        // sort, as a shard groups its postings. No reservation from the shards' vocabulary
        // sizes: servers share most of their words, so their sum overstates the distinct terms
        // tenfold and the table would keep the slack.
        let mut lists_of: Vec<u32> = Vec::new();
        let mut lists: Vec<(u32, TermList)> = Vec::new();
        let term_of = |at: (u32, u32)| term_text(shards, at);
        for (position, shard) in shards.iter().enumerate() {
            let position = u32::try_from(position).expect("fewer than 2^32 servers");
            stats.offsets.push(stats.tools);
            stats.tools += shard.tools.len();
            for (sum, shard_sum) in stats.length_sums.iter_mut().zip(shard.length_sums) {
                *sum += shard_sum;
            }
            lists.reserve(shard.term_count());
            for (local, &(start, end)) in shard.posting_ranges.iter().enumerate() {
                let term = shard.term(local);
                let hash = hash_term(term);
                let server = shard.server_frequency(local as u32);
                // A term of the server's text posted once is in every tool of the shard.
                let count = if server > 0 {
                    u32::try_from(shard.tools.len()).expect("fewer than 2^32 tools")
                } else {
                    end - start
                };
                let Stats {
                    terms,
                    term_at,
                    lookup,
                    ..
                } = &mut stats;
                let found = lookup
                    .find(hash, |&id| term_of(term_at[id as usize]) == term)
                    .copied();
                let id = match found {
                    Some(id) => {
                        let term_stats = &mut terms[id as usize];
                        term_stats.document_frequency =
                            term_stats.document_frequency.saturating_add(count);
                        id
                    }
                    None => {
                        let id = u32::try_from(terms.len()).expect("fewer than 2^32 terms");
                        terms.push(TermStats {
                            document_frequency: count,
                            lists: (0, 0),
                        });
                        term_at.push((position, local as u32));
                        lists_of.push(0);
                        lookup.insert_unique(hash, id, |&id| {
                            hash_term(term_of(term_at[id as usize]))
                        });
                        id
                    }
                };
                lists_of[id as usize] += 1;
                lists.push((
                    id,
                    TermList {
                        shard: position,
                        start,
                        end,
                        server,
                    },
                ));
            }
        }
        // Each id's range in `term_shards`; entries were pushed in shard order, so each term's
        // lists stay in shard order.
        let mut next = 0u32;
        let ranges: Vec<u32> = lists_of
            .iter()
            .map(|&count| {
                let start = next;
                next += count;
                start
            })
            .collect();
        for (id, term_stats) in stats.terms.iter_mut().enumerate() {
            term_stats.lists = (ranges[id], ranges[id] + lists_of[id]);
        }
        let mut filled = ranges;
        stats.term_shards = vec![TermList::default(); lists.len()];
        for (id, list) in lists {
            let at = &mut filled[id as usize];
            stats.term_shards[*at as usize] = list;
            *at += 1;
        }
        let averages = search::average_lengths(stats.tools, stats.length_sums);
        stats.field_factors = shards
            .iter()
            .flat_map(|shard| shard.lengths.iter())
            .map(|lengths| search::field_factors(lengths, &averages))
            .collect();
        stats
    }

    /// The statistics of `term`, if any tool has it; `shards` are those the statistics were
    /// computed from.
    pub(crate) fn term<'a>(&'a self, shards: &[Arc<Shard>], term: &str) -> Option<&'a TermStats> {
        self.lookup
            .find(hash_term(term), |&id| {
                term_text(shards, self.term_at[id as usize]) == term
            })
            .map(|&id| &self.terms[id as usize])
    }

    /// The heap bytes of the term table: statistics, where each term is, the hash table (a
    /// bucket and a control byte a slot) and the terms' shard lists.
    fn term_table_bytes(&self) -> usize {
        use std::mem::size_of;
        self.terms.capacity() * size_of::<TermStats>()
            + self.term_at.capacity() * size_of::<(u32, u32)>()
            + self.lookup.capacity() * (size_of::<u32>() + 1)
            + self.term_shards.capacity() * size_of::<TermList>()
    }

    /// The shards that have `term`, each with the range of its postings there.
    pub(crate) fn shards_of(&self, term: &TermStats) -> &[TermList] {
        &self.term_shards[term.lists.0 as usize..term.lists.1 as usize]
    }
}

/// A searchable index of tools across servers. Cheap to clone; every change returns a new value.
#[derive(Clone)]
pub struct Index {
    /// Sorted by server name, so results and tie-breaks do not depend on insertion order.
    pub(crate) shards: Arc<Vec<Arc<Shard>>>,
    pub(crate) stats: Arc<Stats>,
    pub(crate) embedder: Arc<dyn Embedder>,
    /// A sentence-embedding model whose vectors rank queries once every tool a query may
    /// return has one (`semantic.rs`); `None` ranks with `embedder` alone.
    pub(crate) model: Option<Arc<dyn Embedder>>,
    /// Per server, the model's vectors of its current shard.
    pub(crate) model_rows: Arc<FxHashMap<String, Arc<ModelRows>>>,
}

impl Default for Index {
    fn default() -> Self {
        Index::new()
    }
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("servers", &self.shards.len())
            .field("tools", &self.stats.tools)
            .finish_non_exhaustive()
    }
}

impl Index {
    /// An empty index with the default offline embedder: the static token embeddings built into
    /// the crate (`static_embed::BuiltInEmbedder`).
    pub fn new() -> Index {
        Index::with_embedder(Arc::new(crate::static_embed::BuiltInEmbedder))
    }

    /// An empty index that embeds tools and queries with `embedder`.
    pub fn with_embedder(embedder: Arc<dyn Embedder>) -> Index {
        Index {
            shards: Arc::new(Vec::new()),
            stats: Arc::new(Stats::default()),
            embedder,
            model: None,
            model_rows: Arc::default(),
        }
    }

    /// This index with `model` as its sentence-embedding model (no tool has a model vector
    /// yet: queries rank with the index's own embedder until `with_model_vectors` attaches them).
    pub fn with_model(&self, model: Arc<dyn Embedder>) -> Index {
        Index {
            model: Some(model),
            model_rows: Arc::default(),
            ..self.clone()
        }
    }

    /// The sentence-embedding model, if one is attached: the caller embeds each query with it
    /// and passes the vector as `Query::model_query`.
    pub fn model(&self) -> Option<&Arc<dyn Embedder>> {
        self.model.as_ref()
    }

    /// This index with the model's vectors of `server`'s current tools: `vectors` holds one
    /// entry per tool, in the order of the docs the shard was built from (`None` for a tool not
    /// embedded yet). `None` when there is no model, no such server, or the count differs from
    /// the shard's tools (the server's tools changed since the vectors were computed).
    pub fn with_model_vectors(
        &self,
        server: &str,
        vectors: &[Option<&Embedding>],
    ) -> Option<Index> {
        let model = self.model.as_ref()?;
        let shard = self.shards.iter().find(|shard| shard.server == server)?;
        if shard.tools.len() != vectors.len() {
            return None;
        }
        let mut model_rows = (*self.model_rows).clone();
        model_rows.insert(
            server.to_owned(),
            Arc::new(ModelRows::new(
                Arc::clone(shard),
                model.dimensions(),
                vectors,
            )),
        );
        Some(Index {
            model_rows: Arc::new(model_rows),
            ..self.clone()
        })
    }

    /// The model vector attached to the tool at position `local` of `server`'s shard (the order
    /// of the docs it was built from), if it has one: what a rebuild of an unchanged tool can
    /// carry over instead of waiting for the model again.
    pub fn model_vector(&self, server: &str, local: usize) -> Option<Embedding> {
        self.model_rows.get(server)?.vector(local)
    }

    /// How many tools have a model vector, and how many tools there are.
    pub fn model_coverage(&self) -> (usize, usize) {
        let embedded = self.model_rows.values().map(|rows| rows.embedded).sum();
        (embedded, self.stats.tools)
    }

    /// This index with `server`'s tools replaced by `docs` (added if the server is new). Each
    /// doc's `server` is taken to be `server`. A server with no tools keeps an empty shard, so it
    /// stays a known server for `Query::servers`.
    pub fn with_server(&self, server: &str, docs: Vec<ToolDoc>) -> Index {
        self.with_servers([(server.to_owned(), docs)])
    }

    /// This index with several servers' tools replaced at once (the start-up build): each shard
    /// is built once and the statistics are aggregated once, instead of once per server.
    pub fn with_servers(&self, servers: impl IntoIterator<Item = (String, Vec<ToolDoc>)>) -> Index {
        let mut built = build_shards(servers.into_iter().collect(), self.embedder.as_ref());
        // The last shard given for a server wins, as if they had been applied one by one.
        built.reverse();
        let mut replaced: std::collections::HashSet<String> = std::collections::HashSet::new();
        built.retain(|shard| replaced.insert(shard.server.clone()));
        let mut shards: Vec<Arc<Shard>> = self
            .shards
            .iter()
            .filter(|shard| !replaced.contains(shard.server.as_str()))
            .cloned()
            .collect();
        shards.extend(built.iter().cloned());
        shards.sort_by(|a, b| a.server.cmp(&b.server));
        self.with_shards(shards)
    }

    /// This index without `server` (unchanged if it was not there).
    pub fn without_server(&self, server: &str) -> Index {
        if !self.shards.iter().any(|s| s.server == server) {
            return self.clone();
        }
        let shards = self
            .shards
            .iter()
            .filter(|s| s.server != server)
            .cloned()
            .collect();
        self.with_shards(shards)
    }

    fn with_shards(&self, shards: Vec<Arc<Shard>>) -> Index {
        // Model vectors stay with the shard they were computed for: a replaced or removed
        // server's are dropped.
        let model_rows: FxHashMap<String, Arc<ModelRows>> = self
            .model_rows
            .iter()
            .filter(|(_, rows)| shards.iter().any(|shard| Arc::ptr_eq(shard, &rows.shard)))
            .map(|(server, rows)| (server.clone(), Arc::clone(rows)))
            .collect();
        Index {
            stats: Arc::new(Stats::of(&shards)),
            shards: Arc::new(shards),
            embedder: Arc::clone(&self.embedder),
            model: self.model.clone(),
            model_rows: Arc::new(model_rows),
        }
    }

    /// The statistics of `term` across shards, if any tool has it.
    pub(crate) fn term_stats(&self, term: &str) -> Option<&TermStats> {
        self.stats.term(&self.shards, term)
    }

    /// The number of tools across all servers.
    pub fn len(&self) -> usize {
        self.stats.tools
    }

    /// Whether the index holds no tool.
    pub fn is_empty(&self) -> bool {
        self.stats.tools == 0
    }

    /// The servers in the index, sorted by name.
    pub fn servers(&self) -> impl Iterator<Item = &str> {
        self.shards.iter().map(|s| s.server.as_str())
    }

    /// The embedder this index uses, for callers that compare texts the same way (the daemon's
    /// similarity routing).
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }
}

#[cfg(test)]
mod tests;
