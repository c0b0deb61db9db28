//! A shard: the indexed tools of one server, built once from its documents and never changed.
//!
//! The build splits each tool's text once (`vocabulary.rs`); the same words feed BM25F's
//! per-field term counts and, with the hashing embedder, the tool's embedding. The
//! postings of all terms lie in one array grouped by a counting sort.

use rustc_hash::FxHashMap;

use crate::concepts::Action;
use crate::doc::{MAX_DESCRIPTION_BYTES, MAX_SHORT_TEXT_BYTES, ToolDoc};
use crate::embed::{self, Embedder, Embedding};
use crate::text;
use crate::vocabulary::{Vocabulary, WORD_TABLE};

use super::{DESCRIPTION, FIELDS, NAME, PARAMETERS, SERVER, TITLE, name_words};

/// How much of a description feeds the embedding: the opening says what a tool is for; the rest
/// (examples, caveats) blurs a bag-of-features vector.
pub(super) const EMBEDDED_DESCRIPTION_BYTES: usize = 512;

/// One tool of a shard, as returned in hits. Its name and description lie back to back in the
/// shard's `text` and its tags in the shard's `tag_sets`, so a tool costs no allocation of its
/// own (three per tool, most of a small index's blocks, when each held its own `String`s).
#[derive(Clone, Copy, Debug)]
pub(crate) struct StoredTool {
    /// Where its name starts in `Shard::text`.
    start: u32,
    /// Where its name ends and its description starts.
    name_end: u32,
    /// Where its description ends.
    end: u32,
    /// Its tags: a position in `Shard::tag_sets`.
    tags: u32,
    /// What the tool does, from the first action word of its name (`None`: no action word).
    pub(crate) action: Option<Action>,
    /// Whether the tool's name says it enumerates (`list`, `enumerate`, `browse`), for
    /// `search::LIST_MATCH`.
    pub(crate) lists: bool,
    /// Whether its description says it is deprecated (`deprecation::is_deprecated`), for
    /// `search::DEPRECATED`.
    pub(crate) deprecated: bool,
    /// The distinct terms of its name (at most 255), for the rerank stage's name coverage.
    pub(crate) name_terms: u8,
}

/// Most tools of one server the index holds: a posting keeps the tool's place in 24 bits. (A
/// server's `tools/list` of that many tools would be gigabytes of JSON; the rest of a larger
/// server is left out of search, never out of the catalog.)
pub(crate) const MAX_SHARD_TOOLS: usize = 1 << 24;

/// One entry of a term's list in one shard: which tool (its place in the shard, 24 bits) and how
/// often the term occurs in each of its fields (8 bits each, saturating), in one word. Postings
/// are the largest part of an index after the embeddings; a `u32` and five `u16`s took 16 bytes.
/// A count above 255 scores as 255: BM25's saturation (`K1`) has long flattened it by then.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Posting(u64);

const TOOL_BITS: u32 = 24;

impl Posting {
    pub(crate) fn new(tool: u32, frequencies: [u16; FIELDS]) -> Posting {
        debug_assert!((tool as usize) < MAX_SHARD_TOOLS);
        let mut word = u64::from(tool) & ((1 << TOOL_BITS) - 1);
        for (field, count) in frequencies.into_iter().enumerate() {
            let count = u8::try_from(count).unwrap_or(u8::MAX);
            word |= u64::from(count) << (TOOL_BITS + 8 * field as u32);
        }
        Posting(word)
    }

    /// The tool's place in the shard.
    pub(crate) fn tool(self) -> usize {
        (self.0 & ((1 << TOOL_BITS) - 1)) as usize
    }

    /// How often the term occurs in `field` of the tool (at most 255).
    pub(crate) fn frequency(self, field: usize) -> u8 {
        (self.0 >> (TOOL_BITS + 8 * field as u32)) as u8
    }

    /// How often the term occurs in each field of the tool.
    pub(crate) fn frequencies(self) -> [u8; FIELDS] {
        std::array::from_fn(|field| self.frequency(field))
    }
}

/// The indexed tools of one server.
pub(crate) struct Shard {
    pub(crate) server: String,
    pub(crate) tools: Vec<StoredTool>,
    /// Every tool's name and description, back to back.
    text: Box<str>,
    /// The distinct tag lists of the shard's tools (a server's tools usually share one).
    pub(super) tag_sets: Vec<Vec<String>>,
    /// Per tool, the number of terms in each field.
    pub(crate) lengths: Vec<[u16; FIELDS]>,
    pub(crate) length_sums: [u64; FIELDS],
    /// The shard's terms back to back, by shard-local id (the id indexes `posting_ranges`).
    term_text: Box<str>,
    /// Where each term ends in `term_text`.
    term_ends: Box<[u32]>,
    /// Per term id, where its postings lie in `postings` (start, end). The index-wide term table
    /// keeps these ranges too, so a query reads a term's list in every shard without a hash
    /// lookup per shard.
    pub(crate) posting_ranges: Vec<(u32, u32)>,
    /// Every posting of the shard, grouped by term and in tool order within a term: one
    /// allocation per shard rather than one per term.
    pub(crate) postings: Box<[Posting]>,
    /// The server's own text (name, description, tags) posted once for the whole shard when
    /// every tool has the same (as a servers config gives them): its terms (shard-local ids,
    /// sorted) with their counts, which every tool of the shard has in its server field. The
    /// postings then carry no server count; a term found only there has an empty range. Empty
    /// when the tools' server texts differ: their postings carry it, tool by tool. (Posted per
    /// tool, the server's words were 36 % of all postings.)
    pub(crate) server_terms: Box<[(u32, u8)]>,
    /// The tools' embeddings, row-major (`tools.len() * dimensions`), quantised to `i8` with one
    /// scale per row: a quarter of the memory traffic of `f32` for the one scan every query
    /// makes over all tools, at a cost in cosine precision (~1 %) far below what ranking notices.
    pub(crate) embeddings: Vec<i8>,
    pub(crate) embedding_scales: Vec<f32>,
}

/// Where the embedded part of a description ends: at most `EMBEDDED_DESCRIPTION_BYTES`, backed
/// up to a character that is no part of a word, so the embedded words are exactly the first
/// words the lexical analysis sees (the two share one split).
pub(crate) fn embedded_description_end(description: &str) -> usize {
    if description.len() <= EMBEDDED_DESCRIPTION_BYTES {
        return description.len();
    }
    let cut = text::truncate_at_char_boundary(description, EMBEDDED_DESCRIPTION_BYTES);
    cut.char_indices()
        .rev()
        .find(|(_, c)| !c.is_alphanumeric())
        .map_or(0, |(offset, _)| offset)
}

/// Appends the text a model embeds for `doc` (already capped): the name once as words, the
/// title, the description's opening and the names of the parameters not shared by most of the
/// server's tools. (The hashing embedder builds its vector from the words it splits for BM25F,
/// the name counted twice.)
pub(super) fn push_embedding_text(
    out: &mut String,
    doc: &ToolDoc,
    is_shared: impl Fn(usize) -> bool,
) {
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

impl Shard {
    pub(super) fn build(server: &str, mut docs: Vec<ToolDoc>, embedder: &dyn Embedder) -> Shard {
        docs.truncate(MAX_SHARD_TOOLS);
        let dimensions = embedder.dimensions();
        let hashing = embedder.as_hash_embedder().is_some() && dimensions == embed::HASH_DIMENSIONS;
        let mut shard = Shard {
            server: server.to_owned(),
            tools: Vec::with_capacity(docs.len()),
            lengths: Vec::with_capacity(docs.len()),
            length_sums: [0; FIELDS],
            term_text: Box::default(),
            term_ends: Box::default(),
            posting_ranges: Vec::new(),
            postings: Box::default(),
            server_terms: Box::default(),
            text: Box::default(),
            tag_sets: Vec::new(),
            embeddings: Vec::with_capacity(docs.len() * dimensions),
            embedding_scales: Vec::with_capacity(docs.len()),
        };
        // Terms get shard-local ids; per tool, `counts` holds (id, frequencies) of the terms seen
        // and `slot_of[id]` where that term sits in `counts`, so counting costs no hashing of
        // strings beyond the one word lookup.
        WORD_TABLE.with_borrow_mut(|table| {
            let mut vocabulary = Vocabulary::new(table, hashing);
            Shard::fill(&mut shard, docs, embedder, &mut vocabulary);
            (shard.term_text, shard.term_ends) = vocabulary.terms();
        });
        shard
    }

    /// How often the term of shard-local id `local` occurs in the server's text posted once for
    /// the shard (0: not there, or the server's text is posted tool by tool).
    pub(crate) fn server_frequency(&self, local: u32) -> u8 {
        self.server_terms
            .binary_search_by_key(&local, |&(term, _)| term)
            .map_or(0, |at| self.server_terms[at].1)
    }

    /// The number of distinct terms.
    pub(crate) fn term_count(&self) -> usize {
        self.term_ends.len()
    }

    /// The term of shard-local id `local`.
    pub(crate) fn term(&self, local: usize) -> &str {
        let start = match local {
            0 => 0,
            _ => self.term_ends[local - 1] as usize,
        };
        &self.term_text[start..self.term_ends[local] as usize]
    }

    /// The heap bytes of the terms' text and ends.
    pub(super) fn term_bytes(&self) -> usize {
        self.term_text.len() + self.term_ends.len() * std::mem::size_of::<u32>()
    }

    /// The heap bytes of the tools' text and tag sets.
    pub(super) fn text_bytes(&self) -> usize {
        self.text.len()
            + self.tag_sets.capacity() * std::mem::size_of::<Vec<String>>()
            + self
                .tag_sets
                .iter()
                .flatten()
                .map(|tag| std::mem::size_of::<String>() + tag.capacity())
                .sum::<usize>()
    }

    /// The name of the tool at `local`.
    pub(crate) fn name(&self, local: usize) -> &str {
        let tool = &self.tools[local];
        &self.text[tool.start as usize..tool.name_end as usize]
    }

    /// The description of the tool at `local` (capped at `doc::MAX_DESCRIPTION_BYTES`).
    pub(crate) fn description(&self, local: usize) -> &str {
        let tool = &self.tools[local];
        &self.text[tool.name_end as usize..tool.end as usize]
    }

    /// The tags of the tool at `local`.
    pub(crate) fn tags(&self, local: usize) -> &[String] {
        &self.tag_sets[self.tools[local].tags as usize]
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
        // Names and descriptions back to back, sized once (capping only shortens them).
        let mut text = String::with_capacity(
            docs.iter()
                .map(|doc| {
                    doc.name.len().min(MAX_SHORT_TEXT_BYTES)
                        + doc.description.len().min(MAX_DESCRIPTION_BYTES)
                })
                .sum(),
        );
        let mut tag_set_of: FxHashMap<Vec<String>, u32> = FxHashMap::default();
        let shared = shared_parameters(&docs);
        let sibling_names: Vec<String> = docs.iter().map(|doc| doc.name.clone()).collect();
        // The server's text is posted once for the shard when every tool has the same.
        let server_text_once = !POST_SERVER_TEXT_PER_TOOL.with(std::cell::Cell::get)
            && docs.iter().all(|doc| {
                doc.server_description == docs[0].server_description && doc.tags == docs[0].tags
            });
        let mut name_terms: Vec<u32> = Vec::new();
        let mut parameter_position = 0;
        for doc in docs {
            // This doc's parameters in `shared`, which counts them before capping.
            let first_parameter = parameter_position;
            parameter_position += doc.parameters.len();
            let is_shared = |position: usize| shared.get(first_parameter + position) == Some(&true);
            let doc = doc.capped();
            // Below `MAX_SHARD_TOOLS`: `build` keeps no more docs than that.
            let tool = shard.tools.len() as u32;
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
            name_terms.clear();
            vocabulary.for_each_word(&doc.name, |term, word, features| {
                if action.is_none() {
                    action = word.action;
                }
                lists |= word.lists;
                if let Some(term) = term {
                    count_in(NAME, term, &mut lengths);
                    if !name_terms.contains(&term) {
                        name_terms.push(term);
                    }
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
            if server_text_once {
                lengths[SERVER] = u16::try_from(server_terms.len()).unwrap_or(u16::MAX);
                if shard.server_terms.is_empty() && !server_terms.is_empty() {
                    let mut counted: Vec<(u32, u8)> = Vec::new();
                    for &term in &server_terms {
                        match counted.iter_mut().find(|(known, _)| *known == term) {
                            Some((_, count)) => *count = count.saturating_add(1),
                            None => counted.push((term, 1)),
                        }
                    }
                    counted.sort_unstable_by_key(|&(term, _)| term);
                    shard.server_terms = counted.into_boxed_slice();
                }
            } else {
                for &term in &server_terms {
                    count_in(SERVER, term, &mut lengths);
                }
            }
            for (id, frequencies) in counts.drain(..) {
                slot_of[id as usize] = u32::MAX;
                all_postings.push((id, Posting::new(tool, frequencies)));
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

            let deprecated =
                crate::deprecation::is_deprecated(&doc.description, &doc.name, &sibling_names);
            let offset = |at: usize| u32::try_from(at).expect("a shard's text under 4 GiB");
            let start = offset(text.len());
            text.push_str(&doc.name);
            let name_end = offset(text.len());
            text.push_str(&doc.description);
            let tags = match tag_set_of.get(doc.tags.as_slice()) {
                Some(&tags) => tags,
                None => {
                    let tags = shard.tag_sets.len() as u32;
                    shard.tag_sets.push(doc.tags.clone());
                    tag_set_of.insert(doc.tags, tags);
                    tags
                }
            };
            shard.tools.push(StoredTool {
                start,
                name_end,
                end: offset(text.len()),
                tags,
                action,
                lists,
                deprecated,
                name_terms: u8::try_from(name_terms.len()).unwrap_or(u8::MAX),
            });
        }
        shard.text = text.into_boxed_str();
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
        let mut grouped = vec![Posting::default(); all_postings.len()];
        for (id, posting) in all_postings {
            let range = &mut ranges[id as usize];
            grouped[range.1 as usize] = posting;
            range.1 += 1;
        }
        shard.postings = grouped.into_boxed_slice();
        shard.posting_ranges = ranges;
    }
}

#[cfg(not(test))]
thread_local! {
    /// Always false outside tests.
    static POST_SERVER_TEXT_PER_TOOL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
thread_local! {
    /// Tests set it to build shards the old way (the server's text in every tool's postings)
    /// and check that posting it once gives the very same scores.
    pub(crate) static POST_SERVER_TEXT_PER_TOOL: std::cell::Cell<bool> =
        const { std::cell::Cell::new(false) };
}

/// The tools of a server at and above which parameters shared by half of them are not indexed.
const SHARED_PARAMETERS_MIN_TOOLS: usize = 4;

/// For every parameter of `docs`, in order, whether at least half of the server's tools have a
/// parameter of the same name and description (servers of fewer than
/// `SHARED_PARAMETERS_MIN_TOOLS` tools share none).
pub(super) fn shared_parameters(docs: &[ToolDoc]) -> Vec<bool> {
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
