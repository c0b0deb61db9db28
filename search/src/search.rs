//! Querying the index: input validation, BM25F with concept expansion, the semantic score, their
//! fusion, the deprecation demotion, the rerank stage and the priors. `docs/search.md` gives the
//! formulas and the measured effect of each.
//!
//! The order of a search is fixed so that a hidden tool can never influence anything a caller
//! sees, each step a function passing plain values (`Index::search_or_capture` only chains
//! them): (1) `validate` the input; (2) `Index::candidates`: per tool, visibility (the caller's
//! predicate) and the filters (servers, tags); (3) `Index::query_stats`: BM25 statistics over the
//! visible tools only; (4) tokenise and expand the request (`stages::RequestIntent`, and the
//! concept groups of `lexical.rs`); (5) lexical retrieval (`Index::lexical_scores`); (6) the
//! embedding retrieval's query side (`stages::SemanticQuery`, σ by `stages::semantic_share`);
//! (7) fusion (`stages::Fusion`) with the boosts and demotions (`stages::boosts_and_demotions`)
//! over the tools that can still reach the top (`Index::retrieve`, which skips those that
//! provably cannot); (8) `rerank` the best `RERANK_DEPTH`; (9) `with_priors`: the priors for the
//! few that can still reach the top, then sort and cut to `limit`. `catalog_size` counts the
//! visible tools. Which steps run is `Query::signals`.

mod confidence;
mod feedback;
mod learned;
mod lexical;
mod stages;

use crate::embed;
use crate::index::shard::Shard;
use crate::index::{FIELDS, Index};
use crate::late_interaction;
use crate::priors::{NoPriors, Priors, ToolRef};
use crate::semantic::{ModelRows, SemanticRanking};
use stages::{FirstStage, Fusion, RequestIntent, Retrieved, SemanticQuery};

pub use confidence::{
    CONFIDENT_COSINE, CONFIDENT_COSINE_ALONE, CONFIDENT_COVERAGE, CONFIDENT_MARGIN, Confidence,
    Leaders, assess,
};
pub use learned::{FEATURE_NAMES, FEATURES, WEIGHTS};

/// The default number of hits.
pub const DEFAULT_LIMIT: usize = 10;
/// The most hits one query may ask for.
pub const MAX_LIMIT: usize = 100;
/// The longest query accepted, in bytes. Real requests are a sentence or two; a longer text is a
/// mistake (or an attack) and is refused before any work is done.
pub const MAX_QUERY_BYTES: usize = 4 * 1024;

/// BM25 saturation: how quickly repeated occurrences stop adding. 1.6 rather than the textbook
/// 1.2: a tool that repeats the request's word in name, description and parameters is more
/// likely about it (measured on our dev half and two public sets, docs/search.md).
const K1: f32 = 1.6;
/// Field weights (name, title, description, parameters, server): a word in a tool's name says
/// more about what the tool does than the same word in its description, and a request that
/// names a server ("on Slack") means that server. Parameters are weak evidence: `query`,
/// `limit` and `id` are everywhere.
const FIELD_WEIGHTS: [f32; FIELDS] = [1.5, 1.5, 1.0, 0.4, 1.5];
/// Length normalisation per field: names and titles are short and near-constant in length, so
/// they are barely normalised; descriptions vary from three words to pages.
const FIELD_LENGTH_NORMALISATION: [f32; FIELDS] = [0.3, 0.3, 0.75, 0.75, 0.3];
/// How much a concept-table synonym counts next to the query's own word.
const EXPANSION_WEIGHT: f32 = 0.4;
/// Below this cosine a tool with no lexical match is not a hit at all.
const MIN_SEMANTIC: f32 = 0.3;

/// How the action a request asks for (read, create, update, delete, send, run; see
/// `concepts::ACTIONS`) reorders tools of the same object: a tool doing what was asked gains a
/// little, and a tool that only reads loses a little when the request asked for a change. This
/// is what tells `get_issue` from `assign_issue` when both match "issue" equally. (Penalising
/// tools that change things when the request names no change was measured too: it lost more
/// right answers than it saved, because requests often imply a change without a verb.)
const ACTION_MATCH: f32 = 1.1;
const UNASKED_READ: f32 = 0.9;

/// The gain of a tool whose name lists (`list`, `enumerate`, `browse`) and names a kind the
/// request asks for in the plural: "show me the tables" wants `table_list`, not `table_get` or
/// `table_schema_get`, which match "table" as well. (A request word merely being plural is not
/// enough: "the details of the secret" is about one secret.)
const LIST_MATCH: f32 = 1.15;

/// How much of its textual score a deprecated tool keeps (`deprecation.rs`): enough to rank
/// below the tool that replaced it when both match, not so little that asking for it by name
/// fails.
const DEPRECATED: f32 = 0.6;

/// How many of the best tools by textual score the rerank stage looks at again: it scores them
/// with the learned features of `learned.rs` (name coverage, the fields the request's words
/// were found in, the cosine against the best cosine, ...).
pub const RERANK_DEPTH: usize = 30;

/// Coordination: the lexical score is multiplied by (query words matched / query words) to this
/// power, so a tool matching most of a request beats one matching a single word strongly. 0.3
/// rather than 0.5: long requests carry words no tool has, and a strong match of the words that
/// matter should not be outweighed by weak matches of the others.
const COORDINATION: f32 = 0.3;

/// The weights of the priors, on the scale of the textual score (whose best value is about 1).
const INERTIA_WEIGHT: f32 = 0.06;
const RELIABILITY_WEIGHT: f32 = 0.03;
const LATENCY_WEIGHT: f32 = 0.02;
/// The most the priors together can add: a tool whose textual score leads by more than this is
/// never overtaken because of priors.
pub const MAX_PRIOR_BONUS: f32 = INERTIA_WEIGHT + RELIABILITY_WEIGHT + LATENCY_WEIGHT;

/// Which parts of the ranking a query uses: all of them by default. The evaluation turns them
/// off and on one at a time for the ablation table of docs/search.md; nothing else should.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signals {
    /// Concept-table synonyms, abbreviations and two-word expressions (`concepts.rs`).
    pub concepts: bool,
    /// The server's name, description and tags as a BM25F field.
    pub server_field: bool,
    /// Parameter names, descriptions and allowed values as a BM25F field.
    pub parameters: bool,
    /// The embedding's cosine (the index's embedder's, or the model's when it ranks).
    pub embedding: bool,
    /// Action classes and plural kinds (steps 7 of the ranking).
    pub actions: bool,
    /// Deprecated tools demoted (`DEPRECATED`).
    pub deprecation: bool,
    /// The rerank stage over the best `RERANK_DEPTH` (name coverage).
    pub rerank: bool,
    /// Late interaction over the built-in token table for the best `RERANK_DEPTH`
    /// (`late_interaction.rs`). Measured and not adopted (docs/search.md: within noise on the
    /// five dev halves), so off in `ALL`; the evaluation measures it beside the default.
    pub late_interaction: bool,
    /// Pseudo-relevance feedback in the embedding space over the best `RERANK_DEPTH`
    /// (`search/feedback.rs`).
    pub feedback: bool,
}

impl Signals {
    /// Every adopted signal: what a search uses (all but `late_interaction`).
    pub const ALL: Signals = Signals {
        concepts: true,
        server_field: true,
        parameters: true,
        embedding: true,
        actions: true,
        deprecation: true,
        rerank: true,
        late_interaction: false,
        feedback: false,
    };

    /// No signal beyond BM25F over name, title and description.
    pub const NONE: Signals = Signals {
        concepts: false,
        server_field: false,
        parameters: false,
        embedding: false,
        actions: false,
        deprecation: false,
        rerank: false,
        late_interaction: false,
        feedback: false,
    };
}

impl Default for Signals {
    fn default() -> Self {
        Signals::ALL
    }
}

/// Whether the caller may see a tool, by (server, tool).
pub type Visibility<'a> = dyn Fn(&str, &str) -> bool + 'a;

/// A search request.
pub struct Query<'a> {
    /// What the caller is looking for, in natural language.
    pub text: &'a str,
    /// The number of hits wanted, 1 to `MAX_LIMIT`.
    pub limit: usize,
    /// Which tools the caller may see, by (server, tool); `None` means all. Hidden tools are
    /// removed before ranking and from every statistic, so results cannot reveal them.
    pub visible: Option<&'a Visibility<'a>>,
    /// Only tools of these servers (all servers when empty). A name that is not a known server
    /// is an error.
    pub servers: &'a [String],
    /// Only tools carrying at least one of these tags (all tools when empty).
    pub tags: &'a [String],
    /// The tool this session used last, for the inertia prior.
    pub previous_tool: Option<ToolRef<'a>>,
    /// Evidence beyond the text.
    pub priors: &'a dyn Priors,
    /// The query embedded by the index's sentence-embedding model (`Index::model`), when it
    /// has one: the model ranks only with this vector (the caller embeds the query where it may
    /// spend the time, the index never does).
    pub model_query: Option<&'a embed::Embedding>,
    /// Which parts of the ranking to use (`Signals::ALL`; the evaluation's ablation changes it).
    pub signals: Signals,
}

impl<'a> Query<'a> {
    /// A query for `text` with the defaults: 10 hits, everything visible, no filter, no priors.
    pub fn new(text: &'a str) -> Query<'a> {
        Query {
            text,
            limit: DEFAULT_LIMIT,
            visible: None,
            servers: &[],
            tags: &[],
            previous_tool: None,
            priors: &NoPriors,
            model_query: None,
            signals: Signals::ALL,
        }
    }
}

/// The result of a search.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchOutcome {
    /// The best tools, best first.
    pub hits: Vec<Hit>,
    /// How many tools the caller can see (before the servers and tags filters).
    pub catalog_size: usize,
    /// Which embedding ranked: the model, or the index's embedder (no model, or some tool
    /// still without a model vector).
    pub semantic: SemanticRanking,
    /// Whether the best hit is what was asked for, as far as the search can tell
    /// (`confidence::assess`): not `Confident` when another tool is close, when the best is far
    /// from the request in meaning, or (without a model) when it matches little of it.
    pub confidence: Confidence,
    /// What `confidence` was assessed from (`None` when nothing matched), so an evaluation can
    /// judge other thresholds on the same searches.
    pub evidence: Option<Leaders>,
}

/// One tool found.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// The server.
    pub server: String,
    /// The tool's name.
    pub tool: String,
    /// The tool's description (cut at `MAX_DESCRIPTION_BYTES`).
    pub description: String,
    /// The final score: the textual score plus the priors' contributions.
    pub score: f32,
    /// What the score is made of.
    pub why: Why,
}

/// The parts of a hit's score.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Why {
    /// The BM25F score with concept expansion (unnormalised).
    pub lexical: f32,
    /// The cosine between the query's and the tool's embeddings.
    pub semantic: f32,
    /// The inertia prior's contribution to `score`.
    pub inertia: f32,
    /// The reliability prior's contribution to `score`.
    pub reliability: f32,
    /// The latency prior's contribution to `score`.
    pub latency: f32,
    /// What the rerank stage added (name coverage; 0 below `RERANK_DEPTH`).
    pub rerank: f32,
    /// Whether the tool's description says it is deprecated (its score was lowered).
    pub deprecated: bool,
}

/// A tool of the first stage's ranking, with its rerank features when it was among the best
/// `RERANK_DEPTH` (`Index::rerank_candidates`).
#[derive(Clone, Debug, PartialEq)]
pub struct RerankCandidate {
    /// The server.
    pub server: String,
    /// The tool's name.
    pub tool: String,
    /// The features the rerank stage scores it by (`FEATURE_NAMES`).
    pub features: Option<[f32; FEATURES]>,
}

/// Why a query was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SearchError {
    /// The query is empty or only whitespace.
    #[error("the query is empty; give a few words describing the task, e.g. \"read a file\"")]
    EmptyQuery,
    /// The query is longer than `MAX_QUERY_BYTES`.
    #[error(
        "the query is {bytes} bytes; at most {max} bytes are accepted, describe the task in a sentence or two"
    )]
    QueryTooLong {
        /// The query's length.
        bytes: usize,
        /// The cap.
        max: usize,
    },
    /// `limit` is 0 or above `MAX_LIMIT`.
    #[error("limit {limit} is out of range; expected 1 to {max}")]
    LimitOutOfRange {
        /// The limit asked for.
        limit: usize,
        /// The largest accepted.
        max: usize,
    },
    /// A server filter names a server the caller cannot see.
    #[error(
        "unknown server {server:?} in the servers filter; expected the name of a configured server"
    )]
    UnknownServer {
        /// The name given.
        server: String,
    },
}

/// Which embedding ranks a query: the model when there is one, the query was embedded by it
/// (same dimension) and every tool the query may return has a model vector; else the index's
/// embedder, `Pending` when a model is attached but cannot rank yet.
fn semantic_ranking(
    model: Option<&dyn embed::Embedder>,
    model_query: Option<&embed::Embedding>,
    every_candidate_embedded: impl FnOnce() -> bool,
) -> SemanticRanking {
    match (model, model_query) {
        (None, _) => SemanticRanking::Hashing,
        (Some(model), Some(vector))
            if vector.dimensions() == model.dimensions() && every_candidate_embedded() =>
        {
            SemanticRanking::Model
        }
        _ => SemanticRanking::Pending,
    }
}

/// Average field lengths over `tools` tools whose field lengths sum to `length_sums`.
pub(crate) fn average_lengths(tools: usize, length_sums: [u64; FIELDS]) -> [f32; FIELDS] {
    let mut averages = [0.0; FIELDS];
    if tools > 0 {
        for (average, sum) in averages.iter_mut().zip(length_sums) {
            *average = sum as f32 / tools as f32;
        }
    }
    averages
}

/// BM25F's per-field factor of one tool: the field weight over its length normalisation, so a
/// posting's combined frequency is `Σ frequency[f] * factor[f]`.
pub(crate) fn field_factors(lengths: &[u16; FIELDS], averages: &[f32; FIELDS]) -> [f32; FIELDS] {
    let mut factors = [0.0; FIELDS];
    for field in 0..FIELDS {
        let b = FIELD_LENGTH_NORMALISATION[field];
        let relative = if averages[field] > 0.0 {
            f32::from(lengths[field]) / averages[field]
        } else {
            1.0
        };
        factors[field] = FIELD_WEIGHTS[field] / (1.0 - b + b * relative);
    }
    factors
}

/// The statistics one query scores with: the whole index's, or, when a visibility predicate
/// hides tools, those of the visible tools alone (so no score depends on a hidden tool).
struct QueryStats<'a> {
    tools: f32,
    field_factors: std::borrow::Cow<'a, [[f32; FIELDS]]>,
    /// `Some` when some tools are hidden: per tool (global position), whether it is visible.
    visible: Option<Vec<bool>>,
    /// Per field, 1 or 0 (a field switched off by `Signals`).
    field_mask: [f32; FIELDS],
    /// Whether query words expand to their concept groups (`Signals::concepts`).
    concepts: bool,
}

impl QueryStats<'_> {
    fn idf(&self, document_frequency: f32) -> f32 {
        (1.0 + (self.tools - document_frequency + 0.5) / (document_frequency + 0.5)).ln()
    }
}

/// Step 2's answer: per tool (global position) whether the caller may see it and whether this
/// query may return it, how many the caller sees, and the visible tools' field length sums.
struct Candidates {
    /// `Some` when the caller's predicate hides some tools.
    visible: Option<Vec<bool>>,
    candidate: Vec<bool>,
    catalog_size: usize,
    visible_length_sums: [u64; FIELDS],
}

/// Step 1, cheapest first: a query over `MAX_QUERY_BYTES` is refused before its text is even
/// scanned, then a blank one, then a limit out of range.
fn validate(query: &Query<'_>) -> Result<(), SearchError> {
    // Length first: a 1 MB query is refused before it is even scanned.
    if query.text.len() > MAX_QUERY_BYTES {
        return Err(SearchError::QueryTooLong {
            bytes: query.text.len(),
            max: MAX_QUERY_BYTES,
        });
    }
    if query.text.trim().is_empty() {
        return Err(SearchError::EmptyQuery);
    }
    if query.limit == 0 || query.limit > MAX_LIMIT {
        return Err(SearchError::LimitOutOfRange {
            limit: query.limit,
            max: MAX_LIMIT,
        });
    }
    Ok(())
}

/// What the rerank stage did: what each of the best `RERANK_DEPTH` gained, and the features it
/// was scored by, each but the first times the lexical share (what the weights multiply), both
/// by global position, best first by the first stage's score.
struct Reranked {
    bonuses: Vec<(u32, f32)>,
    features: Vec<(u32, [f32; FEATURES])>,
}

/// Step 8, the rerank stage: the best `RERANK_DEPTH` of `scored` (textual score, global
/// position) gain the learned correction of their features (`learned.rs`) times `scale` (the
/// lexical share of the score).
fn rerank(
    scored: &mut [(f32, u32)],
    weights: &[f32; FEATURES],
    scale: f32,
    evidence_of: impl Fn(f32, u32, f32) -> learned::ToolEvidence,
    query: &learned::QueryEvidence<'_>,
) -> Reranked {
    let by_score_desc = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    let reranked = RERANK_DEPTH.min(scored.len());
    if reranked == 0 {
        return Reranked {
            bonuses: Vec::new(),
            features: Vec::new(),
        };
    }
    scored.select_nth_unstable_by(reranked - 1, by_score_desc);
    let top = &mut scored[..reranked];
    top.sort_unstable_by(by_score_desc);
    let best_cosine = top
        .iter()
        .map(|&(score, global)| evidence_of(score, global, 0.0).cosine)
        .fold(f32::NEG_INFINITY, f32::max);
    let features: Vec<(u32, [f32; FEATURES])> = top
        .iter()
        .map(|&(score, global)| {
            let mut features = learned::features(&evidence_of(score, global, best_cosine), query);
            for feature in &mut features[1..] {
                *feature *= scale;
            }
            (global, features)
        })
        .collect();
    let bonuses = top
        .iter_mut()
        .zip(&features)
        .map(|((score, global), (_, features))| {
            let bonus = learned::correction(weights, features);
            *score += bonus;
            (*global, bonus)
        })
        .collect();
    Reranked { bonuses, features }
}

/// Where the rerank stage's evidence about a tool comes from: the lexical pass, the cosines the
/// first stage computed, the fusion, and the signals switched on.
struct EvidenceSource<'a> {
    index: &'a Index,
    matches: &'a lexical::LexicalMatches,
    semantic: &'a [f32],
    fusion: Fusion,
    signals: Signals,
}

impl EvidenceSource<'_> {
    /// The evidence about the tool at `global`, of textual score `text_score`, when the best
    /// cosine among the reranked tools is `best_cosine`.
    fn of_tool(&self, text_score: f32, global: u32, best_cosine: f32) -> learned::ToolEvidence {
        let global = global as usize;
        let (shard, local) = self.index.locate(global);
        let tool = &shard.tools[local];
        let signals = self.signals;
        learned::ToolEvidence {
            text_score,
            lexical_norm: self.fusion.normalise(self.matches.scores[global]),
            cosine: if signals.embedding {
                self.semantic[global]
            } else {
                0.0
            },
            best_cosine,
            matched: self.matches.matched[global],
            field_matched: self.matches.field_matched[global],
            name_terms: tool.name_terms,
            action: tool.action.filter(|_| signals.actions),
            plural_named: self.matches.plural_named[global] && signals.actions,
            lists: tool.lists,
            deprecated: tool.deprecated && signals.deprecation,
        }
    }
}

/// What a hit's `Why` reports besides the priors, per tool (global position).
struct ScoreParts<'a> {
    lexical: &'a [f32],
    semantic: &'a [f32],
    rerank: &'a [(u32, f32)],
}

/// Steps 9 and 10: the priors for the tools that can still reach the top `limit` of `scored`
/// (within `MAX_PRIOR_BONUS` of the limit-th), then the hits best first, cut to `limit`.
fn with_priors<'a>(
    query: &Query<'_>,
    scored: &mut [(f32, u32)],
    parts: &ScoreParts<'_>,
    locate: impl Fn(usize) -> (&'a std::sync::Arc<Shard>, usize),
) -> Vec<Hit> {
    // Only tools within MAX_PRIOR_BONUS of the limit-th score can reach the top, so the
    // priors are asked about those alone.
    let by_score_desc = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    let limit = query.limit.min(scored.len());
    scored.select_nth_unstable_by(limit - 1, by_score_desc);
    let threshold = scored[limit - 1].0 - MAX_PRIOR_BONUS;
    let mut contenders: Vec<(f32, u32, Why)> = Vec::new();
    for &(text_score, global) in scored.iter() {
        if text_score < threshold {
            continue;
        }
        let (shard, local) = locate(global as usize);
        let candidate_ref = ToolRef {
            server: &shard.server,
            tool: shard.name(local),
        };
        let inertia = query.previous_tool.map_or(0.0, |previous| {
            query.priors.inertia(previous, candidate_ref)
        });
        let why = Why {
            lexical: parts.lexical[global as usize],
            semantic: parts.semantic[global as usize],
            inertia: INERTIA_WEIGHT * inertia.clamp(0.0, 1.0),
            reliability: RELIABILITY_WEIGHT
                * query.priors.reliability(candidate_ref).clamp(0.0, 1.0),
            latency: LATENCY_WEIGHT * query.priors.latency(candidate_ref).clamp(0.0, 1.0),
            rerank: parts
                .rerank
                .iter()
                .find(|(reranked, _)| *reranked == global)
                .map_or(0.0, |(_, bonus)| *bonus),
            deprecated: shard.tools[local].deprecated,
        };
        let score = text_score + why.inertia + why.reliability + why.latency;
        contenders.push((score, global, why));
    }
    contenders.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    contenders.truncate(query.limit);
    contenders
        .into_iter()
        .map(|(score, global, why)| {
            let (shard, local) = locate(global as usize);
            Hit {
                server: shard.server.clone(),
                tool: shard.name(local).to_owned(),
                description: shard.description(local).to_owned(),
                score,
                why,
            }
        })
        .collect()
}

/// The best two of `scored` (textual score after the rerank stage, global position), the
/// best one's cosine (`semantic`, by global position) and the share of the request's word
/// groups it matched (`matched` of `groups`), and whether a sentence model's cosine ranked
/// (`by_model`): what `confidence::assess` reads. The priors are
/// left out: they say what the session did, not whether the request was understood.
fn leaders(
    scored: &[(f32, u32)],
    semantic: &[f32],
    matched: &[u16],
    groups: usize,
    by_model: bool,
) -> Option<Leaders> {
    // One pass, no allocation: at 10,000 tools `scored` can hold thousands of entries.
    let ahead = |a: &(f32, u32), b: &(f32, u32)| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)).is_gt();
    let mut best: Option<&(f32, u32)> = None;
    let mut second: Option<&(f32, u32)> = None;
    for entry in scored {
        if best.is_none_or(|b| ahead(entry, b)) {
            second = best;
            best = Some(entry);
        } else if second.is_none_or(|s| ahead(entry, s)) {
            second = Some(entry);
        }
    }
    let best = best?;
    Some(Leaders {
        best_score: best.0,
        best_cosine: semantic[best.1 as usize],
        best_coverage: f32::from(matched[best.1 as usize]) / groups.max(1) as f32,
        second_score: second.map(|entry| entry.0),
        by_model,
    })
}

impl Index {
    /// Finds the tools that best match `query`. A catalog of zero tools, or a query with nothing
    /// searchable in it (only stop words, emoji or punctuation), gives no hits, not an error.
    pub fn search(&self, query: &Query<'_>) -> Result<SearchOutcome, SearchError> {
        self.search_or_capture(query, None)
    }

    /// The first stage's ranking of `query` (at most `MAX_LIMIT` tools, best first, before the
    /// rerank stage and the priors), each of its best `RERANK_DEPTH` with the features the
    /// rerank stage scores: what `search-eval --train` learns the rerank weights from.
    pub fn rerank_candidates(
        &self,
        query: &Query<'_>,
    ) -> Result<Vec<RerankCandidate>, SearchError> {
        let mut capture = Vec::new();
        self.search_or_capture(query, Some(&mut capture))?;
        Ok(capture)
    }

    /// `search`, or with `capture`, `rerank_candidates`.
    fn search_or_capture(
        &self,
        query: &Query<'_>,
        capture: Option<&mut Vec<RerankCandidate>>,
    ) -> Result<SearchOutcome, SearchError> {
        validate(query)?;
        let signals = query.signals;
        let Candidates {
            visible,
            candidate,
            catalog_size,
            visible_length_sums,
        } = self.candidates(query)?;
        let model_rows = self.model_rows_by_shard();
        let ranking = self.ranking_for(query, &candidate, &model_rows);
        let nothing = || SearchOutcome {
            hits: Vec::new(),
            catalog_size,
            semantic: ranking,
            confidence: Confidence::NoMatch,
            evidence: None,
        };
        if catalog_size == 0 {
            return Ok(nothing());
        }
        let stats = self.query_stats(visible, catalog_size, visible_length_sums, signals);
        // Tokenise and expand; lexical retrieval.
        let intent = RequestIntent::of(query.text, signals);
        let matches = self.lexical_scores(query.text, &candidate, &stats, &intent.plural_terms);
        // Embedding retrieval's query side, and the fusion's share.
        let hashing_query;
        let (query_vector, embedder) = match (ranking, self.model.as_ref(), query.model_query) {
            (SemanticRanking::Model, Some(model), Some(vector)) => (vector, model.as_ref()),
            _ => {
                hashing_query = self.embedder.embed_query(query.text);
                (&hashing_query, self.embedder.as_ref())
            }
        };
        let semantic_query = SemanticQuery::new(
            query_vector,
            embedder.dimensions(),
            ranking == SemanticRanking::Model,
            signals.embedding,
            &model_rows,
        );
        let fusion = Fusion::new(
            stages::semantic_share(
                embedder.semantic_share(),
                embedder.semantic_share_unmatched(),
                matches.best_share,
                signals.embedding,
            ),
            &matches.scores,
        );
        // Fusion, boosts and demotions, over the tools that can still reach the top.
        let lift = stages::lift_bounds(signals, fusion.lexical_share());
        let Retrieved {
            mut scored,
            mut semantic,
        } = self.retrieve(&FirstStage {
            candidate: &candidate,
            matches: &matches,
            intent: &intent,
            semantic: &semantic_query,
            fusion,
            signals,
            depth: stages::first_stage_depth(query.limit, signals),
            lift,
        });
        if scored.is_empty() {
            return Ok(nothing());
        }
        if signals.feedback && signals.embedding {
            self.feedback(
                &mut scored,
                &mut semantic,
                &semantic_query,
                query_vector.values(),
                fusion.semantic_share,
                feedback::Feedback::default(),
            );
        }
        // Rerank (or capture its features), then the priors and the cut.
        let evidence = EvidenceSource {
            index: self,
            matches: &matches,
            semantic: &semantic,
            fusion,
            signals,
        };
        let evidence_of =
            |text_score, global, best_cosine| evidence.of_tool(text_score, global, best_cosine);
        let query_evidence = learned::QueryEvidence {
            groups: matches.groups,
            best_share: matches.best_share,
            asked: &intent.asked,
        };
        if let Some(capture) = capture {
            let features = rerank(
                &mut scored,
                &[0.0; FEATURES],
                fusion.lexical_share(),
                evidence_of,
                &query_evidence,
            )
            .features;
            capture.extend(self.first_stage_order(scored, &features));
            return Ok(nothing());
        }
        let rerank_bonus = if signals.rerank {
            rerank(
                &mut scored,
                &learned::WEIGHTS,
                fusion.lexical_share(),
                evidence_of,
                &query_evidence,
            )
            .bonuses
        } else {
            Vec::new()
        };
        let mut rerank_bonus = rerank_bonus;
        if signals.late_interaction {
            let late = self.late_interaction(&mut scored, query.text, fusion.lexical_share());
            for (global, bonus) in late {
                match rerank_bonus.iter_mut().find(|(g, _)| *g == global) {
                    Some((_, total)) => *total += bonus,
                    None => rerank_bonus.push((global, bonus)),
                }
            }
        }
        let parts = ScoreParts {
            lexical: &matches.scores,
            semantic: &semantic,
            rerank: &rerank_bonus,
        };
        let assessed = leaders(
            &scored,
            &semantic,
            &matches.matched,
            matches.groups,
            embedder.is_sentence_model(),
        );
        let confidence = assess(assessed);
        let hits = with_priors(query, &mut scored, &parts, |global| self.locate(global));
        Ok(SearchOutcome {
            hits,
            catalog_size,
            semantic: ranking,
            confidence,
            evidence: assessed,
        })
    }

    /// Per shard (in order), the model's rows when they belong to that very shard (rows of a
    /// replaced shard are not used).
    fn model_rows_by_shard(&self) -> Vec<Option<&ModelRows>> {
        self.shards
            .iter()
            .map(|shard| {
                self.model_rows
                    .get(&shard.server)
                    .filter(|rows| std::sync::Arc::ptr_eq(&rows.shard, shard))
                    .map(|rows| &**rows)
            })
            .collect()
    }

    /// Which embedding ranks `query`: the model only when every tool it may return (`candidate`)
    /// has its vector (`semantic_ranking`).
    fn ranking_for(
        &self,
        query: &Query<'_>,
        candidate: &[bool],
        model_rows: &[Option<&ModelRows>],
    ) -> SemanticRanking {
        semantic_ranking(self.model.as_deref(), query.model_query, || {
            self.shards
                .iter()
                .zip(&self.stats.offsets)
                .zip(model_rows)
                .all(|((shard, &offset), rows)| {
                    (0..shard.tools.len()).all(|local| {
                        !candidate[offset + local] || rows.is_some_and(|r| r.has(local))
                    })
                })
        })
    }

    /// The first stage's order of `scored` (best first, at most `MAX_LIMIT`), each of its best
    /// `RERANK_DEPTH` with its rerank `features` (what `rerank_candidates` returns).
    fn first_stage_order(
        &self,
        mut scored: Vec<(f32, u32)>,
        features: &[(u32, [f32; FEATURES])],
    ) -> Vec<RerankCandidate> {
        scored.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored
            .iter()
            .take(MAX_LIMIT)
            .map(|&(_, global)| {
                let (shard, local) = self.locate(global as usize);
                RerankCandidate {
                    server: shard.server.clone(),
                    tool: shard.name(local).to_owned(),
                    features: features
                        .iter()
                        .find(|(reranked, _)| *reranked == global)
                        .map(|(_, features)| *features),
                }
            })
            .collect()
    }

    /// Step 8b: the best `RERANK_DEPTH` of `scored` gain the late-interaction score of their
    /// name and description against the request's tokens (`late_interaction.rs`) times its
    /// weight; returns what each gained, by global position.
    fn late_interaction(
        &self,
        scored: &mut [(f32, u32)],
        text: &str,
        lexical_share: f32,
    ) -> Vec<(u32, f32)> {
        let by_score_desc =
            |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        let depth = RERANK_DEPTH.min(scored.len());
        if depth == 0 {
            return Vec::new();
        }
        scored.select_nth_unstable_by(depth - 1, by_score_desc);
        let table = crate::static_embed::built_in();
        let mut query_tokens = crate::static_embed::TokenVectors::default();
        table.token_vectors(text, &mut query_tokens);
        let mut name = crate::static_embed::TokenVectors::default();
        let mut description = crate::static_embed::TokenVectors::default();
        let weight = late_interaction::WEIGHT * lexical_share;
        scored[..depth]
            .iter_mut()
            .map(|(score, global)| {
                let (shard, local) = self.locate(*global as usize);
                table.token_vectors(&crate::index::name_words(shard.name(local)), &mut name);
                let full = shard.description(local);
                table.token_vectors(
                    &full[..crate::index::shard::embedded_description_end(full)],
                    &mut description,
                );
                let value = late_interaction::score(
                    &query_tokens,
                    &late_interaction::Fields {
                        fields: &[
                            (&name, late_interaction::NAME_WEIGHT),
                            (&description, late_interaction::DESCRIPTION_WEIGHT),
                        ],
                    },
                );
                let bonus = weight * value;
                *score += bonus;
                (*global, bonus)
            })
            .collect()
    }

    /// The shard of the tool at `global` and its place in it.
    fn locate(&self, global: usize) -> (&std::sync::Arc<Shard>, usize) {
        let offsets = &self.stats.offsets;
        let shard_index = offsets.partition_point(|&o| o <= global) - 1;
        (&self.shards[shard_index], global - offsets[shard_index])
    }
    /// Step 2: which tools exist for this query (the caller's predicate) and which it may return
    /// (the servers and tags filters), how many the caller can see, and their field lengths
    /// when some are hidden (for statistics over the visible tools alone). A servers filter
    /// naming a server with no visible tool is `UnknownServer`.
    fn candidates(&self, query: &Query<'_>) -> Result<Candidates, SearchError> {
        let shards: &[std::sync::Arc<Shard>] = &self.shards;
        let offsets = &self.stats.offsets;
        let total = self.stats.tools;
        // Visibility, then the filters. `visible` decides statistics and catalog_size;
        // `candidate` decides what may be returned.
        let visible: Option<Vec<bool>> = query.visible.map(|is_visible| {
            shards
                .iter()
                .flat_map(|shard| {
                    (0..shard.tools.len()).map(|local| is_visible(&shard.server, shard.name(local)))
                })
                .collect()
        });
        let is_visible = |i: usize| visible.as_ref().is_none_or(|v| v[i]);
        for server in query.servers {
            let known = shards.iter().zip(offsets).any(|(shard, &offset)| {
                shard.server == *server
                    && (shard.tools.is_empty()
                        || (offset..offset + shard.tools.len()).any(is_visible))
            });
            if !known {
                return Err(SearchError::UnknownServer {
                    server: server.clone(),
                });
            }
        }
        let mut candidate = vec![false; total];
        let mut catalog_size = 0;
        let mut visible_length_sums = [0u64; FIELDS];
        for (shard, &offset) in shards.iter().zip(offsets) {
            let server_wanted = query.servers.is_empty() || query.servers.contains(&shard.server);
            for local in 0..shard.tools.len() {
                let global = offset + local;
                if !is_visible(global) {
                    continue;
                }
                catalog_size += 1;
                if visible.is_some() {
                    for (sum, length) in visible_length_sums.iter_mut().zip(shard.lengths[local]) {
                        *sum += u64::from(length);
                    }
                }
                candidate[global] = server_wanted
                    && (query.tags.is_empty()
                        || shard.tags(local).iter().any(|t| query.tags.contains(t)));
            }
        }
        Ok(Candidates {
            visible,
            candidate,
            catalog_size,
            visible_length_sums,
        })
    }

    /// Step 3: the statistics this query scores with, over the visible tools only, and which
    /// fields and expansions `signals` keeps.
    fn query_stats(
        &self,
        visible: Option<Vec<bool>>,
        catalog_size: usize,
        visible_length_sums: [u64; FIELDS],
        signals: Signals,
    ) -> QueryStats<'_> {
        let shards: &[std::sync::Arc<Shard>] = &self.shards;
        let total = self.stats.tools;
        let mut field_mask = [1.0f32; FIELDS];
        if !signals.server_field {
            field_mask[crate::index::SERVER] = 0.0;
        }
        if !signals.parameters {
            field_mask[crate::index::PARAMETERS] = 0.0;
        }
        match visible {
            None => QueryStats {
                tools: total as f32,
                field_factors: std::borrow::Cow::Borrowed(&self.stats.field_factors),
                visible: None,
                field_mask,
                concepts: signals.concepts,
            },
            Some(visible) => {
                let averages = average_lengths(catalog_size, visible_length_sums);
                QueryStats {
                    tools: catalog_size as f32,
                    field_factors: std::borrow::Cow::Owned(
                        shards
                            .iter()
                            .flat_map(|shard| shard.lengths.iter())
                            .map(|lengths| field_factors(lengths, &averages))
                            .collect(),
                    ),
                    visible: Some(visible),
                    field_mask,
                    concepts: signals.concepts,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
