//! The words of an index build: each distinct word a thread's builds meet is analysed once
//! (folded word → term, stop word or not, action class, `HashEmbedder` features), and each shard
//! gives the terms it uses dense shard-local ids.
//!
//! A tool's text is split once; the same words feed BM25F's field counts and, with the default
//! hashing embedder, the tool's embedding (which is a sum of per-word features), so a build no
//! longer splits and looks up every text twice. Tool catalogs repeat a small vocabulary, so after
//! the first shards almost every word costs one hash lookup.

use rustc_hash::FxHashMap;

use crate::concepts::{self, Action};
use crate::embed;
use crate::text;

/// What a word of a tool's name says about the tool.
#[derive(Clone, Copy, Default)]
pub(crate) struct NameWord {
    /// The action class of the word's term.
    pub(crate) action: Option<Action>,
    /// Whether the word says the tool enumerates (`list`, `enumerate`, `browse`).
    pub(crate) lists: bool,
}

/// What the builds on one thread know about one folded word, so each distinct word is analysed
/// (stemmed, stop-listed, classified, hashed into embedding features) once per thread, and every
/// later occurrence, in any shard, costs one hash lookup.
#[derive(Clone, Copy)]
pub(crate) struct WordInfo {
    /// The term's thread-wide id (an index in `WordTable::terms`), `None` for a stop word
    /// (counted in no field).
    term: Option<u32>,
    /// What the word says when it is in a tool's name.
    name_word: NameWord,
    /// Where its embedding features lie in `WordTable::features`; `None` until a build with the
    /// hashing embedder asks for them.
    features: Option<(u32, u32)>,
}

/// The words and terms one thread's builds have seen.
#[derive(Default)]
pub(crate) struct WordTable {
    /// Folded word → what it stands for.
    words: FxHashMap<Box<str>, WordInfo>,
    /// Term → thread-wide id.
    term_ids: FxHashMap<Box<str>, u32>,
    /// Thread-wide term id → term.
    terms: Vec<Box<str>>,
    /// The `HashEmbedder` features of the words that have them, back to back.
    features: Vec<(u32, f32)>,
    /// Scratch space for one word's term.
    term: String,
    /// Thread-wide term id → id in the shard being built (`u32::MAX`: not in it yet). Kept
    /// between shards so it is not reallocated and cleared whole for each one; only the entries
    /// of the last shard's terms are reset.
    local_of: Vec<u32>,
    /// The shard being built (or last built): local id → thread-wide term id.
    shard_terms: Vec<u32>,
}

/// The most words a thread's `WordTable` holds; past it, the table starts over before the next
/// shard (never during one, whose term ids it holds), so memory stays bounded.
const WORD_TABLE_CAPACITY: usize = 1 << 16;

thread_local! {
    pub(crate) static WORD_TABLE: std::cell::RefCell<WordTable> = std::cell::RefCell::new(WordTable::default());
}

impl WordTable {
    /// What `word` stands for; `with_features` also makes sure its embedding features are known.
    fn lookup(&mut self, word: &text::Word<'_>, with_features: bool) -> WordInfo {
        let info = match self.words.get_mut(word.folded) {
            Some(info) => info,
            None => {
                let info = self.learn(word);
                self.words.entry(word.folded.into()).or_insert(info)
            }
        };
        if with_features && info.features.is_none() {
            let start = self.features.len() as u32;
            embed::with_word_features(word, |features| self.features.extend_from_slice(features));
            info.features = Some((start, self.features.len() as u32));
        }
        *info
    }

    /// Analyses a word seen for the first time.
    fn learn(&mut self, word: &text::Word<'_>) -> WordInfo {
        let stop = if word.cjk {
            self.term.clear();
            self.term.push_str(word.folded);
            false
        } else {
            text::analyze_word(word.folded, &mut self.term)
        };
        let name_word = NameWord {
            action: concepts::actions_of(&self.term).first().copied(),
            lists: concepts::is_listing(&self.term),
        };
        let term = (!stop).then(|| match self.term_ids.get(self.term.as_str()) {
            Some(&id) => id,
            None => {
                let id = u32::try_from(self.terms.len()).expect("fewer than 2^32 terms");
                self.term_ids.insert(self.term.as_str().into(), id);
                self.terms.push(self.term.as_str().into());
                id
            }
        });
        WordInfo {
            term,
            name_word,
            features: None,
        }
    }
}

/// One shard build's view of the thread's `WordTable`: the shard-local ids of its terms.
pub(crate) struct Vocabulary<'a> {
    table: &'a mut WordTable,
    /// Whether words carry `HashEmbedder` features (the index's embedder is the hashing one).
    pub(crate) hashing: bool,
}

impl<'a> Vocabulary<'a> {
    /// Starts a shard with the thread's `table`, restarting it first when it has grown past
    /// `WORD_TABLE_CAPACITY`.
    pub(crate) fn new(table: &'a mut WordTable, hashing: bool) -> Vocabulary<'a> {
        if table.words.len() >= WORD_TABLE_CAPACITY {
            *table = WordTable::default();
        }
        // Reset here rather than at the end of a build, so a build that panicked cannot leave
        // stale ids behind.
        for term in table.shard_terms.drain(..) {
            table.local_of[term as usize] = u32::MAX;
        }
        Vocabulary { table, hashing }
    }

    /// The number of distinct terms of the shard so far.
    pub(crate) fn term_count(&self) -> usize {
        self.table.shard_terms.len()
    }

    /// Calls `visit` with what each word of `text` stands for (its term as a shard-local id),
    /// what it says in a tool's name, and its embedding features (empty unless hashing).
    pub(crate) fn for_each_word(
        &mut self,
        text: &str,
        mut visit: impl FnMut(Option<u32>, NameWord, &[(u32, f32)]),
    ) {
        text::split_words(text, |word| {
            let info = self.table.lookup(&word, self.hashing);
            let table = &mut *self.table;
            let local = info.term.map(|term| {
                let term = term as usize;
                if table.local_of.len() <= term {
                    table.local_of.resize(term + 1, u32::MAX);
                }
                if table.local_of[term] == u32::MAX {
                    table.local_of[term] = table.shard_terms.len() as u32;
                    table.shard_terms.push(term as u32);
                }
                table.local_of[term]
            });
            // The thread's table may know a word's features from an earlier build with the
            // hashing embedder; a build with another embedder must still get none.
            let features = match info.features {
                Some((start, end)) if self.hashing => {
                    &self.table.features[start as usize..end as usize]
                }
                _ => &[],
            };
            visit(local, info.name_word, features);
        });
    }

    /// The shard's terms, by shard-local id: their text back to back, in one allocation made
    /// when the build is done, and where each ends. (A block per term, made while the build's
    /// scratch was live, was scattered over the freed scratch and pinned its pages: ~1.5 MiB
    /// of a daemon's resident memory at 10,000 tools.)
    pub(crate) fn terms(&self) -> (Box<str>, Box<[u32]>) {
        let terms = || {
            self.table
                .shard_terms
                .iter()
                .map(|&term| &*self.table.terms[term as usize])
        };
        let mut text = String::with_capacity(terms().map(str::len).sum());
        let ends = terms()
            .map(|term| {
                text.push_str(term);
                u32::try_from(text.len()).expect("a shard's terms under 4 GiB")
            })
            .collect();
        (text.into_boxed_str(), ends)
    }
}
