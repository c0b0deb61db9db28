//! The lexical half of a query: its words grouped with their concept-table synonyms, its plural
//! nouns, and BM25F over the index's postings with that expansion.

use crate::concepts;
use crate::index::{FIELDS, Index, NAME, SERVER};
use crate::text;

use super::{COORDINATION, EXPANSION_WEIGHT, K1, QueryStats};

/// One query word and the concept-table words it expands to, each with its weight.
struct TermGroup {
    members: Vec<(String, f32)>,
}

fn query_groups(text: &str, concepts_on: bool) -> Vec<TermGroup> {
    // Stop words are not indexed, so a query made only of them ("what is this") has nothing to
    // match and gets no hits: an honest "nothing found" the caller can act on, rather than
    // whatever tools happen to share a word like "can" in a parameter name.
    let mut words: Vec<String> = Vec::new();
    let mut abbreviated: Vec<(String, String)> = Vec::new();
    let mut previous = String::new();
    text::analyze(text, |term, stop| {
        // A two-word expression ("sign up", "turn off") adds the words it stands for.
        let meanings = if concepts_on {
            concepts::phrase_meaning(&previous, term)
        } else {
            &[]
        };
        for meaning in meanings {
            if !words.contains(meaning) {
                words.push(meaning.clone());
            }
        }
        previous.clear();
        previous.push_str(term);
        if stop || words.iter().any(|t| t == term) {
            return;
        }
        words.push(term.to_owned());
        // An abbreviation is searched as itself and as the words it stands for: one word
        // (`repo`) joins its group at full weight, a phrase (`pr` → `pull request`) adds its
        // words as query words of their own.
        let long = if concepts_on {
            concepts::expansion_of_abbreviation(term)
        } else {
            &[]
        };
        if long.len() > 1 {
            for word in long {
                if !words.contains(word) {
                    words.push(word.clone());
                }
            }
        } else if let Some(word) = long.first() {
            abbreviated.push((term.to_owned(), word.clone()));
        }
    });
    words
        .iter()
        .map(|word| {
            let mut members = vec![(word.clone(), 1.0)];
            for (short, long) in &abbreviated {
                if short == word && !words.contains(long) {
                    members.push((long.clone(), 1.0));
                }
            }
            let synonyms = if concepts_on {
                concepts::expansions(word)
            } else {
                Vec::new()
            };
            for synonym in synonyms {
                if !words.iter().any(|w| w == synonym) && !members.iter().any(|(m, _)| m == synonym)
                {
                    members.push((synonym.to_owned(), EXPANSION_WEIGHT));
                }
            }
            TermGroup { members }
        })
        .collect()
}

/// The terms of the query's plural nouns (`tables` → `tabl`): a request for several things of a
/// kind, which a tool whose name lists that kind answers.
pub(super) fn plural_terms(text: &str) -> Vec<String> {
    let mut terms = Vec::new();
    let mut stemmed = String::new();
    text::split_words(text, |word| {
        if word.cjk || text::is_stop_word(word.folded) {
            return;
        }
        text::stem(word.folded, &mut stemmed);
        if concepts::actions_of(&stemmed).is_empty()
            && is_plural(word.folded, &stemmed)
            && !terms.contains(&stemmed)
        {
            terms.push(stemmed.clone());
        }
    });
    terms
}

/// Whether `folded` is a plural the stemmer reduced to `stemmed` (`tables`/`tabl`,
/// `registries`/`registry`, `keys`/`key`).
pub(super) fn is_plural(folded: &str, stemmed: &str) -> bool {
    if !folded.ends_with('s') || folded == stemmed {
        return false;
    }
    match folded.strip_suffix("ies") {
        Some(base) => stemmed.strip_suffix('y') == Some(base),
        None => {
            folded.strip_suffix('s') == Some(stemmed) || folded.strip_suffix("es") == Some(stemmed)
        }
    }
}

/// What the lexical pass found, per tool (global position).
pub(super) struct LexicalMatches {
    /// BM25F with concept expansion and coordination; 0 for tools that matched nothing.
    pub(super) scores: Vec<f32>,
    /// Whether a plural noun of the request is a word of the tool's name (`LIST_MATCH`).
    pub(super) plural_named: Vec<bool>,
    /// How many of the request's words (or their synonyms) the tool matched at all.
    pub(super) matched: Vec<u16>,
    /// How many of the request's words (or their synonyms) the tool matched in each field
    /// (`index::NAME` … `index::SERVER`).
    pub(super) field_matched: Vec<[u16; FIELDS]>,
    /// The number of the request's word groups (the denominator of every share).
    pub(super) groups: usize,
    /// The largest share of the request's words (or their synonyms) one tool matched, in
    /// [0, 1]: how much the words alone can tell.
    pub(super) best_share: f32,
}

impl Index {
    /// BM25F with concept expansion, per tool (global position); 0 for tools that are not
    /// candidates. Each query word contributes the best of its own score and its synonyms'
    /// down-weighted scores, so a tool matching three synonyms of one word is not counted thrice.
    pub(super) fn lexical_scores(
        &self,
        query_text: &str,
        candidate: &[bool],
        stats: &QueryStats<'_>,
        plural_terms: &[String],
    ) -> LexicalMatches {
        let total = candidate.len();
        let mut scores = vec![0.0f32; total];
        let mut best = vec![0.0f32; total];
        let mut touched: Vec<usize> = Vec::new();
        let mut matched = vec![0u16; total];
        let mut field_matched = vec![[0u16; FIELDS]; total];
        // Per tool, the fields (bits) the current group matched in.
        let mut fields_hit = vec![0u8; total];
        let mut plural_named = vec![false; total];
        let query_groups = query_groups(query_text, stats.concepts);
        let groups = query_groups.len();
        for group in query_groups {
            let plural = plural_terms.contains(&group.members[0].0);
            for (position_in_group, (term, weight)) in group.members.iter().enumerate() {
                let Some(term_stats) = self.term_stats(term.as_str()) else {
                    continue;
                };
                let document_frequency = match &stats.visible {
                    None => term_stats.document_frequency as usize,
                    Some(visible) => self
                        .stats
                        .shards_of(term_stats)
                        .iter()
                        .map(|list| {
                            let offset = self.stats.offsets[list.shard as usize];
                            let shard = &self.shards[list.shard as usize];
                            if list.server > 0 {
                                // In the server's text: every visible tool of the shard has it.
                                return (offset..offset + shard.tools.len())
                                    .filter(|&global| visible[global])
                                    .count();
                            }
                            shard.postings[list.start as usize..list.end as usize]
                                .iter()
                                .filter(|p| visible[offset + p.tool()])
                                .count()
                        })
                        .sum(),
                };
                if document_frequency == 0 {
                    continue;
                }
                let idf = weight * stats.idf(document_frequency as f32);
                let mut visit = |global: usize, frequencies: [u8; FIELDS]| {
                    if !candidate[global] {
                        return;
                    }
                    let frequency: f32 = frequencies
                        .iter()
                        .zip(&stats.field_factors[global])
                        .zip(&stats.field_mask)
                        .map(|((&count, factor), mask)| f32::from(count) * factor * mask)
                        .sum();
                    // A term found only in a switched-off field (the ablation) is no match.
                    if frequency <= 0.0 {
                        return;
                    }
                    let in_tool_name = frequencies[NAME] > 0;
                    if plural && position_in_group == 0 && in_tool_name {
                        plural_named[global] = true;
                    }
                    let score = idf * frequency / (K1 + frequency);
                    if best[global] == 0.0 {
                        touched.push(global);
                    }
                    for (field, (&count, &mask)) in
                        frequencies.iter().zip(&stats.field_mask).enumerate()
                    {
                        if count > 0 && mask > 0.0 {
                            fields_hit[global] |= 1 << field;
                        }
                    }
                    if score > best[global] {
                        best[global] = score;
                    }
                };
                for list in self.stats.shards_of(term_stats) {
                    let offset = self.stats.offsets[list.shard as usize];
                    let shard = &self.shards[list.shard as usize];
                    let postings = &shard.postings[list.start as usize..list.end as usize];
                    if list.server == 0 {
                        for posting in postings {
                            visit(offset + posting.tool(), posting.frequencies());
                        }
                        continue;
                    }
                    // The server's text posted once: every tool of the shard has the term in
                    // its server field; those with a posting have it elsewhere too (postings
                    // are in tool order).
                    let mut postings = postings.iter().peekable();
                    for local in 0..shard.tools.len() {
                        let mut frequencies = match postings.next_if(|p| p.tool() == local) {
                            Some(posting) => posting.frequencies(),
                            None => [0; FIELDS],
                        };
                        frequencies[SERVER] = list.server;
                        visit(offset + local, frequencies);
                    }
                }
            }
            for global in touched.drain(..) {
                scores[global] += best[global];
                matched[global] += 1;
                let hit = std::mem::take(&mut fields_hit[global]);
                for (field, count) in field_matched[global].iter_mut().enumerate() {
                    if hit & (1 << field) != 0 {
                        *count += 1;
                    }
                }
                best[global] = 0.0;
            }
        }
        if groups > 0 {
            for (score, &count) in scores.iter_mut().zip(&matched) {
                if count > 0 {
                    *score *= (f32::from(count) / groups as f32).powf(COORDINATION);
                }
            }
        }
        let best_share = match matched.iter().max() {
            Some(&best) if groups > 0 => f32::from(best) / groups as f32,
            _ => 0.0,
        };
        LexicalMatches {
            scores,
            plural_named,
            matched,
            field_matched,
            groups,
            best_share,
        }
    }
}
