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

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::concepts::Action;
use crate::doc::ToolDoc;
use crate::embed::{self, Embedder, Embedding, HashEmbedder};
use crate::search;
use crate::semantic::ModelRows;
use crate::text;
use crate::vocabulary::{Vocabulary, WORD_TABLE};

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

/// How much of a description feeds the embedding: the opening says what a tool is for; the rest
/// (examples, caveats) blurs a bag-of-features vector.
const EMBEDDED_DESCRIPTION_BYTES: usize = 512;

/// One tool of a shard, as returned in hits.
#[derive(Debug)]
pub(crate) struct StoredTool {
    pub(crate) name: String,
    /// What the tool does, from the first action word of its name (`None`: no action word).
    pub(crate) action: Option<Action>,
    /// Whether the tool's name says it enumerates (`list`, `enumerate`, `browse`), for
    /// `search::LIST_MATCH`.
    pub(crate) lists: bool,
    pub(crate) description: String,
    pub(crate) tags: Vec<String>,
}

/// The tools of one term in one shard: which tool (index within the shard) and how often the term
/// occurs in each field.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Posting {
    pub(crate) tool: u32,
    pub(crate) frequencies: [u16; FIELDS],
}

/// The indexed tools of one server.
pub(crate) struct Shard {
    pub(crate) server: String,
    pub(crate) tools: Vec<StoredTool>,
    /// Per tool, the number of terms in each field.
    pub(crate) lengths: Vec<[u16; FIELDS]>,
    pub(crate) length_sums: [u64; FIELDS],
    /// Shard-local term id → term; the id indexes `posting_ranges`.
    pub(crate) terms: Box<[Arc<str>]>,
    /// Per term id, where its postings lie in `postings` (start, end). The index-wide term table
    /// keeps these ranges too, so a query reads a term's list in every shard without a hash
    /// lookup per shard.
    pub(crate) posting_ranges: Vec<(u32, u32)>,
    /// Every posting of the shard, grouped by term and in tool order within a term: one
    /// allocation per shard rather than one per term.
    pub(crate) postings: Box<[Posting]>,
    /// The tools' embeddings, row-major (`tools.len() * dimensions`), quantised to `i8` with one
    /// scale per row: a quarter of the memory traffic of `f32` for the one scan every query
    /// makes over all tools, at a cost in cosine precision (~1 %) far below what ranking notices.
    pub(crate) embeddings: Vec<i8>,
    pub(crate) embedding_scales: Vec<f32>,
}

/// Where the embedded part of a description ends: at most `EMBEDDED_DESCRIPTION_BYTES`, backed
/// up to a character that is no part of a word, so the embedded words are exactly the first
/// words the lexical analysis sees (the two share one split).
fn embedded_description_end(description: &str) -> usize {
    if description.len() <= EMBEDDED_DESCRIPTION_BYTES {
        return description.len();
    }
    let cut = text::truncate_at_char_boundary(description, EMBEDDED_DESCRIPTION_BYTES);
    cut.char_indices()
        .rev()
        .find(|(_, c)| !c.is_alphanumeric())
        .map_or(0, |(offset, _)| offset)
}

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

/// Appends the text a model embeds for `doc` (already capped): the name once as words, the
/// title, the description's opening and the names of the parameters not shared by most of the
/// server's tools. (The hashing embedder builds its vector from the words it splits for BM25F,
/// the name counted twice.)
fn push_embedding_text(out: &mut String, doc: &ToolDoc, is_shared: impl Fn(usize) -> bool) {
    // The name once, split into words: `keyvault_secret_list` said twice made every `_` a token
    // of its own twice over (dev halves: +0.003 to +0.008 MRR once split, docs/search.md).
    out.push_str(&name_words(&doc.name));
    out.push(' ');
    if let Some(title) = &doc.title {
        out.push_str(title);
        out.push(' ');
    }
    out.push_str(&doc.description[..embedded_description_end(&doc.description)]);
    for (position, parameter) in doc.parameters.iter().enumerate() {
        if is_shared(position) {
            continue;
        }
        out.push(' ');
        out.push_str(&parameter.name);
    }
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

impl Shard {
    fn build(server: &str, docs: Vec<ToolDoc>, embedder: &dyn Embedder) -> Shard {
        let dimensions = embedder.dimensions();
        let hashing = embedder.as_hash_embedder().is_some() && dimensions == embed::HASH_DIMENSIONS;
        let mut shard = Shard {
            server: server.to_owned(),
            tools: Vec::with_capacity(docs.len()),
            lengths: Vec::with_capacity(docs.len()),
            length_sums: [0; FIELDS],
            terms: Box::default(),
            posting_ranges: Vec::new(),
            postings: Box::default(),
            embeddings: Vec::with_capacity(docs.len() * dimensions),
            embedding_scales: Vec::with_capacity(docs.len()),
        };
        // Terms get shard-local ids; per tool, `counts` holds (id, frequencies) of the terms seen
        // and `slot_of[id]` where that term sits in `counts`, so counting costs no hashing of
        // strings beyond the one word lookup.
        WORD_TABLE.with_borrow_mut(|table| {
            let mut vocabulary = Vocabulary::new(table, hashing);
            Shard::fill(&mut shard, docs, embedder, &mut vocabulary);
            shard.terms = vocabulary.terms();
        });
        shard
    }

    /// Indexes `docs` into `shard` with the words of `vocabulary`.
    fn fill(
        shard: &mut Shard,
        docs: Vec<ToolDoc>,
        embedder: &dyn Embedder,
        vocabulary: &mut Vocabulary<'_>,
    ) {
        let dimensions = embedder.dimensions();
        let hashing = vocabulary.hashing;
        let server = shard.server.clone();
        // Every (term id, posting) of the shard in one vector, grouped by term at the end: one
        // growing allocation instead of one per term.
        let mut all_postings: Vec<(u32, Posting)> = Vec::new();
        let mut counts: Vec<(u32, [u16; FIELDS])> = Vec::new();
        let mut slot_of: Vec<u32> = Vec::new();
        let mut embedding_text = String::new();
        let mut vector = vec![0.0f32; if hashing { dimensions } else { 0 }];
        let mut server_text: Option<(Option<String>, Vec<String>)> = None;
        let mut server_terms: Vec<u32> = Vec::new();
        let shared = shared_parameters(&docs);
        let mut parameter_position = 0;
        for doc in docs {
            // This doc's parameters in `shared`, which counts them before capping.
            let first_parameter = parameter_position;
            parameter_position += doc.parameters.len();
            let is_shared = |position: usize| shared.get(first_parameter + position) == Some(&true);
            let doc = doc.capped();
            let tool = u32::try_from(shard.tools.len()).expect("fewer than 2^32 tools per server");
            counts.clear();
            vector.fill(0.0);
            let mut lengths = [0u16; FIELDS];
            let mut count_in = |field: usize, term: u32, lengths: &mut [u16; FIELDS]| {
                lengths[field] = lengths[field].saturating_add(1);
                count(&mut counts, &mut slot_of, term, field);
            };
            // The name also gives the tool's action: that of its first action word. It is
            // embedded twice: it is the densest statement of what a tool does.
            let mut action = None;
            let mut lists = false;
            vocabulary.for_each_word(&doc.name, |term, word, features| {
                if action.is_none() {
                    action = word.action;
                }
                lists |= word.lists;
                if let Some(term) = term {
                    count_in(NAME, term, &mut lengths);
                }
                embed::add_features(&mut vector, features, 2.0);
            });
            let mut add = |vocabulary: &mut Vocabulary<'_>, field: usize, text: &str, embedded| {
                vocabulary.for_each_word(text, |term, _, features| {
                    if let Some(term) = term {
                        count_in(field, term, &mut lengths);
                    }
                    if embedded {
                        embed::add_features(&mut vector, features, 1.0);
                    }
                });
            };
            if let Some(title) = &doc.title {
                add(vocabulary, TITLE, title, true);
            }
            let (embedded, rest) = doc
                .description
                .split_at(embedded_description_end(&doc.description));
            add(vocabulary, DESCRIPTION, embedded, true);
            add(vocabulary, DESCRIPTION, rest, false);
            for (position, parameter) in doc.parameters.iter().enumerate() {
                // A parameter that most of the server's tools share word for word (auth,
                // tenant, retry, paging options) says nothing about which tool to pick, and
                // its words would count in every tool's document frequency.
                if is_shared(position) {
                    continue;
                }
                add(vocabulary, PARAMETERS, &parameter.name, true);
                add(vocabulary, PARAMETERS, &parameter.description, false);
            }
            // The server's own text is usually the same for all its tools: analyse it once.
            let same_server_text = server_text.as_ref().is_some_and(|(description, tags)| {
                *description == doc.server_description && *tags == doc.tags
            });
            if !same_server_text {
                server_terms.clear();
                for text in std::iter::once(server.as_str())
                    .chain(doc.server_description.as_deref())
                    .chain(doc.tags.iter().map(String::as_str))
                {
                    vocabulary.for_each_word(text, |term, _, _| server_terms.extend(term));
                }
                server_text = Some((doc.server_description.clone(), doc.tags.clone()));
            }
            for &term in &server_terms {
                count_in(SERVER, term, &mut lengths);
            }
            for (id, frequencies) in counts.drain(..) {
                slot_of[id as usize] = u32::MAX;
                all_postings.push((id, Posting { tool, frequencies }));
            }
            for (sum, length) in shard.length_sums.iter_mut().zip(lengths) {
                *sum += u64::from(length);
            }
            shard.lengths.push(lengths);

            let embedding = if hashing {
                Embedding::normalized(std::mem::take(&mut vector))
            } else {
                embedding_text.clear();
                push_embedding_text(&mut embedding_text, &doc, is_shared);
                embedder.embed(&embedding_text)
            };
            // An embedder that breaks its contract (wrong length) must not corrupt the rows of
            // other tools: pad or cut to the declared dimension.
            let values = embedding.values();
            let scale = if values.len() == dimensions {
                embed::quantize_into(values, &mut shard.embeddings)
            } else {
                let row: Vec<f32> = (0..dimensions)
                    .map(|i| values.get(i).copied().unwrap_or(0.0))
                    .collect();
                embed::quantize_into(&row, &mut shard.embeddings)
            };
            shard.embedding_scales.push(scale);
            if hashing {
                // Take the buffer back for the next tool.
                vector = embedding.into_values();
            }

            shard.tools.push(StoredTool {
                action,
                lists,
                name: doc.name,
                description: doc.description,
                tags: doc.tags,
            });
        }
        let terms = vocabulary.term_count();
        // Group the postings by term with a counting sort (term ids are dense): count each
        // term's postings, turn the counts into ranges, then place each posting in its term's
        // range. Postings were pushed in tool order, so each range stays in tool order.
        let mut ranges: Vec<(u32, u32)> = vec![(0, 0); terms];
        for (id, _) in &all_postings {
            ranges[*id as usize].1 += 1;
        }
        let mut start = 0u32;
        for range in &mut ranges {
            let length = range.1;
            *range = (start, start);
            start += length;
        }
        let mut grouped = vec![
            Posting {
                tool: 0,
                frequencies: [0; FIELDS],
            };
            all_postings.len()
        ];
        for (id, posting) in all_postings {
            let range = &mut ranges[id as usize];
            grouped[range.1 as usize] = posting;
            range.1 += 1;
        }
        shard.postings = grouped.into_boxed_slice();
        shard.posting_ranges = ranges;
    }
}

/// The tools of a server at and above which parameters shared by half of them are not indexed.
const SHARED_PARAMETERS_MIN_TOOLS: usize = 4;

/// For every parameter of `docs`, in order, whether at least half of the server's tools have a
/// parameter of the same name and description (servers of fewer than
/// `SHARED_PARAMETERS_MIN_TOOLS` tools share none).
fn shared_parameters(docs: &[ToolDoc]) -> Vec<bool> {
    if docs.len() < SHARED_PARAMETERS_MIN_TOOLS {
        return Vec::new();
    }
    let mut counts: FxHashMap<(&str, &str), u32> = FxHashMap::default();
    for doc in docs {
        for parameter in &doc.parameters {
            *counts
                .entry((parameter.name.as_str(), parameter.description.as_str()))
                .or_default() += 1;
        }
    }
    if counts.values().all(|&count| count * 2 < docs.len() as u32) {
        return Vec::new();
    }
    docs.iter()
        .flat_map(|doc| &doc.parameters)
        .map(|parameter| {
            counts[&(parameter.name.as_str(), parameter.description.as_str())] * 2
                >= docs.len() as u32
        })
        .collect()
}

/// What the index knows about one term across shards.
pub(crate) struct TermStats {
    /// The number of tools with the term in any field.
    pub(crate) document_frequency: u32,
    /// The shards (positions in `Index::shards`) whose tools have the term, with the range of
    /// its list in that shard's `postings`, so a query reads them without looking the term up
    /// in every shard.
    pub(crate) shards: Vec<(u32, u32, u32)>,
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

/// Adds one occurrence of the term `id` in `field` to the current tool's term counts.
fn count(counts: &mut Vec<(u32, [u16; FIELDS])>, slot_of: &mut Vec<u32>, id: u32, field: usize) {
    if slot_of.len() <= id as usize {
        slot_of.resize(id as usize + 1, u32::MAX);
    }
    let slot = &mut slot_of[id as usize];
    if *slot == u32::MAX {
        *slot = counts.len() as u32;
        counts.push((id, [0; FIELDS]));
    }
    let frequencies = &mut counts[*slot as usize].1;
    frequencies[field] = frequencies[field].saturating_add(1);
}

/// Corpus statistics over every shard, and the per-tool BM25F length factors they imply.
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) tools: usize,
    pub(crate) length_sums: [u64; FIELDS],
    pub(crate) terms: FxHashMap<Arc<str>, TermStats>,
    /// The global position of each shard's first tool.
    pub(crate) offsets: Vec<usize>,
    /// Per tool (global position), each field's weight divided by its length normalisation,
    /// computed once per index rather than once per posting per query.
    pub(crate) field_factors: Vec<[f32; FIELDS]>,
}

impl Stats {
    fn of(shards: &[Arc<Shard>]) -> Stats {
        let mut stats = Stats::default();
        // No reservation from the shards' vocabulary sizes: servers share most of their words,
        // so their sum overstates the distinct terms tenfold and the table would keep the slack.
        for (position, shard) in shards.iter().enumerate() {
            let position = u32::try_from(position).expect("fewer than 2^32 servers");
            stats.offsets.push(stats.tools);
            stats.tools += shard.tools.len();
            for (sum, shard_sum) in stats.length_sums.iter_mut().zip(shard.length_sums) {
                *sum += shard_sum;
            }
            for (term, &(start, end)) in shard.terms.iter().zip(&shard.posting_ranges) {
                let count = end - start;
                match stats.terms.get_mut(term) {
                    Some(term_stats) => {
                        term_stats.document_frequency =
                            term_stats.document_frequency.saturating_add(count);
                        term_stats.shards.push((position, start, end));
                    }
                    None => {
                        stats.terms.insert(
                            Arc::clone(term),
                            TermStats {
                                document_frequency: count,
                                shards: vec![(position, start, end)],
                            },
                        );
                    }
                }
            }
        }
        let averages = search::average_lengths(stats.tools, stats.length_sums);
        stats.field_factors = shards
            .iter()
            .flat_map(|shard| shard.lengths.iter())
            .map(|lengths| search::field_factors(lengths, &averages))
            .collect();
        stats
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
    /// An empty index with the default offline embedder (`HashEmbedder`).
    pub fn new() -> Index {
        Index::with_embedder(Arc::new(HashEmbedder))
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
    /// yet: queries rank with the hashing embedder until `with_model_vectors` attaches them).
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
mod tests {
    use super::*;

    fn doc(name: &str, description: &str) -> ToolDoc {
        ToolDoc {
            name: name.to_owned(),
            description: description.to_owned(),
            ..ToolDoc::default()
        }
    }

    #[test]
    fn statistics_are_exact_across_shards_and_follow_replacements() {
        let index = Index::new()
            .with_server(
                "a",
                vec![doc("read_file", "read a file"), doc("write_file", "write")],
            )
            .with_server("b", vec![doc("get_weather", "weather for a city")]);
        assert_eq!(index.len(), 3);
        assert_eq!(index.stats.terms["fil"].document_frequency, 2);
        assert_eq!(index.servers().collect::<Vec<_>>(), ["a", "b"]);

        let replaced = index.with_server("a", vec![doc("list_files", "list files")]);
        assert_eq!(replaced.len(), 2);
        assert_eq!(replaced.stats.terms["fil"].document_frequency, 1);
        assert!(!replaced.stats.terms.contains_key("writ"));
        // The old value is untouched: readers of it are not disturbed by the rebuild.
        assert_eq!(index.len(), 3);

        let removed = replaced.without_server("a");
        assert_eq!(removed.len(), 1);
        assert!(!removed.stats.terms.contains_key("fil"));
        assert_eq!(removed.without_server("nobody").len(), 1);
    }

    #[test]
    fn a_parallel_build_equals_a_server_by_server_build() {
        let servers: Vec<(String, Vec<ToolDoc>)> = (0..30)
            .map(|s| {
                let docs = (0..100)
                    .map(|t| {
                        doc(
                            &format!("tool_{t}_{}", t % 7),
                            &format!("does thing {} of kind {s}", t * s),
                        )
                    })
                    .collect();
                (format!("server{s}"), docs)
            })
            .collect();
        let parallel = Index::new().with_servers(servers.clone());
        let sequential = servers
            .into_iter()
            .fold(Index::new(), |index, (server, docs)| {
                index.with_server(&server, docs)
            });
        assert_eq!(parallel.len(), 3_000);
        assert_eq!(
            parallel.servers().collect::<Vec<_>>(),
            sequential.servers().collect::<Vec<_>>()
        );
        for text in ["thing of kind 7", "tool 3", "does 120"] {
            let query = crate::search::Query::new(text);
            assert_eq!(parallel.search(&query), sequential.search(&query), "{text}");
        }
    }

    #[test]
    fn a_tool_embedded_from_the_shared_split_equals_the_embedder_on_its_text() {
        // The index embeds tools from the words it split for BM25 (name twice, title, the
        // description's opening, parameter names); that must be what the embedder itself makes
        // of the same text, or queries (embedded by the embedder) would drift from tools.
        let tool = ToolDoc {
            name: "getFileInfo".to_owned(),
            title: Some("File details".to_owned()),
            description: format!(
                "Returns size and times of a file. {}",
                "More words. ".repeat(60)
            ),
            parameters: vec![crate::doc::ParamDoc {
                name: "path".to_owned(),
                description: "where the file is".to_owned(),
            }],
            ..ToolDoc::default()
        };
        let description = &tool.description[..embedded_description_end(&tool.description)];
        assert!(description.len() <= EMBEDDED_DESCRIPTION_BYTES && description.len() > 400);
        let text = format!("getFileInfo getFileInfo File details {description} path");
        let expected = HashEmbedder.embed(&text);
        let index = Index::new().with_server("fs", vec![tool]);
        let shard = &index.shards[0];
        let row: Vec<f32> = shard.embeddings[..embed::HASH_DIMENSIONS]
            .iter()
            .map(|q| f32::from(*q) * shard.embedding_scales[0])
            .collect();
        let similarity = embed::dot(&row, expected.values());
        assert!(similarity > 0.999, "{similarity}");
    }

    /// An embedder of another kind than the hashing one: a few letter counts.
    struct LetterCounts;

    impl Embedder for LetterCounts {
        fn dimensions(&self) -> usize {
            4
        }

        fn embed(&self, text: &str) -> crate::embed::Embedding {
            let count = |letter: char| text.chars().filter(|c| *c == letter).count() as f32;
            crate::embed::Embedding::normalized(vec![
                count('a') + 1.0,
                count('e'),
                count('i'),
                count('o'),
            ])
        }
    }

    #[test]
    fn a_build_with_another_embedder_after_a_hashing_build_on_the_same_thread_works() {
        // The thread's word table keeps the hashing features of the words it has seen; a later
        // build with another embedder must neither use them (it used to index a vector of length
        // zero with them and panic) nor embed differently from the embedder itself.
        let docs = vec![
            doc("read_file", "read a file"),
            doc("get_weather", "weather"),
        ];
        let hashing = Index::new().with_server("a", docs.clone());
        assert_eq!(hashing.len(), 2);
        let other = Index::with_embedder(Arc::new(LetterCounts)).with_server("a", docs);
        let shard = &other.shards[0];
        assert_eq!(shard.embeddings.len(), 2 * 4);
        let hits = other
            .search(&crate::search::Query::new("read a file"))
            .unwrap()
            .hits;
        assert_eq!(hits[0].tool, "read_file");
    }

    #[test]
    fn shards_share_unchanged_servers() {
        let index = Index::new()
            .with_server("a", vec![doc("t", "x")])
            .with_server("b", vec![doc("u", "y")]);
        let updated = index.with_server("b", vec![doc("v", "z")]);
        assert!(Arc::ptr_eq(&index.shards[0], &updated.shards[0]));
        assert!(!Arc::ptr_eq(&index.shards[1], &updated.shards[1]));
    }
}
