//! The retrieval evaluation, as pure functions over texts the caller has read: parse a catalog
//! (servers with their MCP tools) and a labeled request set, run every request through our
//! ranking and through plain BM25, and compute Recall@1/5/10 and MRR for both.
//!
//! The `search-eval` binary prints the table from the committed data in `search/eval/`; the
//! regression test in `tests/` asserts the same figures do not drop.

use serde::Deserialize;
use serde_json::Value;

use crate::bm25::PlainBm25;
use crate::doc::ToolDoc;
use crate::index::Index;
use crate::search::{MAX_LIMIT, Query, Signals};

mod abstention;
pub use abstention::{Abstention, abstention};

/// A catalog file: a list of servers.
#[derive(Debug, Deserialize)]
pub struct CatalogServer {
    /// The server's name.
    pub name: String,
    /// The server's description, as in a servers config.
    #[serde(default)]
    pub description: Option<String>,
    /// The server's tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The tools, as `tools/list` items.
    pub tools: Vec<Value>,
}

/// One labeled request: what a user asked and the tools that answer it.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The request, in the user's words.
    pub query: String,
    /// Acceptable (server, tool) answers; more than one only where tools are equivalent.
    pub expected: Vec<(String, String)>,
}

/// Why evaluation data could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A catalog is not a JSON list of servers.
    #[error("catalog is not a JSON list of servers with name and tools: {0}")]
    Catalog(#[from] serde_json::Error),
    /// A request line is malformed.
    #[error(
        "request line {line}: {reason}; expected `server/tool[|server/tool…]<TAB>request text`"
    )]
    Request {
        /// The 1-based line number.
        line: usize,
        /// What was wrong.
        reason: String,
    },
    /// A request expects a tool that no catalog has.
    #[error("request line {line} expects {server}/{tool}, which is in no catalog; fix the label")]
    UnknownTool {
        /// The 1-based line number.
        line: usize,
        /// The server named.
        server: String,
        /// The tool named.
        tool: String,
    },
}

/// Parses a catalog file.
pub fn parse_catalog(json: &str) -> Result<Vec<CatalogServer>, EvalError> {
    Ok(serde_json::from_str(json)?)
}

/// Parses a request file: one request per line, `server/tool<TAB>text`, several acceptable
/// answers separated by `|`; blank lines and lines starting with `#` are skipped.
pub fn parse_requests(text: &str) -> Result<Vec<Request>, EvalError> {
    let mut requests = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line_number = number + 1;
        let line = line.trim_end();
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let malformed = |reason: &str| EvalError::Request {
            line: line_number,
            reason: reason.to_owned(),
        };
        let (labels, query) = line.split_once('\t').ok_or_else(|| malformed("no tab"))?;
        let mut expected = Vec::new();
        for label in labels.split('|') {
            let (server, tool) = label
                .split_once('/')
                .ok_or_else(|| malformed("a label has no `/`"))?;
            expected.push((server.trim().to_owned(), tool.trim().to_owned()));
        }
        let query = query.trim();
        if query.is_empty() {
            return Err(malformed("the request text is empty"));
        }
        requests.push(Request {
            query: query.to_owned(),
            expected,
        });
    }
    Ok(requests)
}

/// Every tool of `catalogs` as a `ToolDoc`, in catalog order.
pub fn tool_docs(catalogs: &[CatalogServer]) -> Vec<ToolDoc> {
    catalogs
        .iter()
        .flat_map(|server| {
            server.tools.iter().map(|tool| {
                ToolDoc::from_mcp_tool(
                    &server.name,
                    tool,
                    server.description.as_deref(),
                    &server.tags,
                )
            })
        })
        .collect()
}

/// Builds our index over `docs`, one shard per server, with the default embedder.
pub fn build_index(docs: &[ToolDoc]) -> Index {
    build_index_with(
        docs,
        std::sync::Arc::new(crate::static_embed::BuiltInEmbedder),
    )
}

/// Builds our index over `docs` with the hashing embedder (the default before the built-in
/// static embeddings), for the evaluation's comparison.
pub fn build_hashing_index(docs: &[ToolDoc]) -> Index {
    build_index_with(docs, std::sync::Arc::new(crate::embed::HashEmbedder))
}

/// Builds our index over `docs`, one shard per server, embedding with `embedder`.
pub fn build_index_with(
    docs: &[ToolDoc],
    embedder: std::sync::Arc<dyn crate::embed::Embedder>,
) -> Index {
    let mut servers: Vec<(String, Vec<ToolDoc>)> = Vec::new();
    for doc in docs {
        match servers.iter_mut().find(|(name, _)| *name == doc.server) {
            Some((_, shard)) => shard.push(doc.clone()),
            None => servers.push((doc.server.clone(), vec![doc.clone()])),
        }
    }
    Index::with_embedder(embedder).with_servers(servers)
}

/// Checks that every expected tool exists in `docs` (a mislabeled request would silently count
/// as a miss for both rankers).
pub fn check_labels(requests: &[Request], docs: &[ToolDoc]) -> Result<(), EvalError> {
    for (number, request) in requests.iter().enumerate() {
        for (server, tool) in &request.expected {
            if !docs.iter().any(|d| &d.server == server && &d.name == tool) {
                return Err(EvalError::UnknownTool {
                    line: number + 1,
                    server: server.clone(),
                    tool: tool.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Retrieval quality over a request set.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Metrics {
    /// The number of requests.
    pub requests: usize,
    /// Share of requests with an expected tool first.
    pub recall_at_1: f64,
    /// Share with an expected tool in the top 5.
    pub recall_at_5: f64,
    /// Share with an expected tool in the top 10.
    pub recall_at_10: f64,
    /// Mean reciprocal rank of the first expected tool within the top 100 (0 when absent).
    pub mrr: f64,
}

impl Metrics {
    /// Metrics from the 1-based rank of the first expected tool of each request (`None` = not
    /// in the ranking).
    pub fn from_ranks(ranks: &[Option<usize>]) -> Metrics {
        let requests = ranks.len();
        if requests == 0 {
            return Metrics::default();
        }
        let share = |k: usize| {
            ranks.iter().filter(|r| r.is_some_and(|r| r <= k)).count() as f64 / requests as f64
        };
        Metrics {
            requests,
            recall_at_1: share(1),
            recall_at_5: share(5),
            recall_at_10: share(10),
            mrr: ranks
                .iter()
                .map(|r| r.map_or(0.0, |r| 1.0 / r as f64))
                .sum::<f64>()
                / requests as f64,
        }
    }
}

fn rank_of(ranking: &[(&str, &str)], expected: &[(String, String)]) -> Option<usize> {
    ranking
        .iter()
        .position(|(server, tool)| expected.iter().any(|(s, t)| s == server && t == tool))
        .map(|position| position + 1)
}

/// Whether a request names the service of its expected tool ("… on Slack", "my GitHub
/// issue"): the expected server's whole name, or its first part (`outlook` of `outlook-mail`),
/// is one of the request's words. Users often do; an external benchmark's requests may never do,
/// so the evaluation also reports the requests that do not, where server names cannot help.
pub fn names_its_server(request: &Request) -> bool {
    let words: Vec<String> = request
        .query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let has_phrase = |phrase: &[&str]| {
        !phrase.is_empty()
            && words
                .windows(phrase.len())
                .any(|window| window.iter().zip(phrase).all(|(w, p)| w == p))
    };
    request.expected.iter().any(|(server, _)| {
        let lowered = server.to_lowercase();
        let parts: Vec<&str> = lowered
            .split(|c: char| !c.is_alphanumeric())
            .filter(|p| !p.is_empty())
            .collect();
        has_phrase(&parts)
            || parts.first().is_some_and(|first| has_phrase(&[first]))
            || words.iter().any(|w| *w == parts.concat())
    })
}

/// The rank our ranking gives each request's first expected tool.
pub fn ranks_ours(index: &Index, requests: &[Request]) -> Vec<Option<usize>> {
    ranks_ours_with(index, requests, Signals::ALL)
}

/// The rank our ranking with only `signals` gives each request's first expected tool (the
/// ablation).
pub fn ranks_ours_with(
    index: &Index,
    requests: &[Request],
    signals: Signals,
) -> Vec<Option<usize>> {
    requests
        .iter()
        .map(|request| {
            let query = Query {
                limit: MAX_LIMIT,
                signals,
                ..Query::new(&request.query)
            };
            let hits = index.search(&query).map(|o| o.hits).unwrap_or_default();
            let ranking: Vec<(&str, &str)> = hits
                .iter()
                .map(|h| (h.server.as_str(), h.tool.as_str()))
                .collect();
            rank_of(&ranking, &request.expected)
        })
        .collect()
}

/// Our ranking of `query` with `signals`, best first (at most `MAX_LIMIT` tools).
pub fn ranking(index: &Index, query: &str, signals: Signals) -> Vec<(String, String)> {
    let query = Query {
        limit: MAX_LIMIT,
        signals,
        ..Query::new(query)
    };
    index
        .search(&query)
        .map(|outcome| outcome.hits)
        .unwrap_or_default()
        .into_iter()
        .map(|hit| (hit.server, hit.tool))
        .collect()
}

/// The rank plain BM25 over name and description gives each request's first expected tool.
pub fn ranks_bm25(docs: &[ToolDoc], requests: &[Request]) -> Vec<Option<usize>> {
    let texts: Vec<String> = docs
        .iter()
        .map(|d| format!("{} {}", d.name, d.description))
        .collect();
    let index = PlainBm25::new(texts.iter().map(String::as_str));
    requests
        .iter()
        .map(|request| {
            let ranking: Vec<(&str, &str)> = index
                .search(&request.query, MAX_LIMIT)
                .into_iter()
                .map(|id| (docs[id].server.as_str(), docs[id].name.as_str()))
                .collect();
            rank_of(&ranking, &request.expected)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_count_ranks_within_each_cutoff() {
        let metrics = Metrics::from_ranks(&[Some(1), Some(3), Some(7), None]);
        assert_eq!(metrics.requests, 4);
        assert_eq!(metrics.recall_at_1, 0.25);
        assert_eq!(metrics.recall_at_5, 0.5);
        assert_eq!(metrics.recall_at_10, 0.75);
        let mrr = (1.0 + 1.0 / 3.0 + 1.0 / 7.0) / 4.0;
        assert!((metrics.mrr - mrr).abs() < 1e-12);
    }

    #[test]
    fn request_lines_parse_with_alternatives_and_reject_garbage() {
        let requests = parse_requests("# comment\n\na/x|b/y\tdo the thing\n").unwrap();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].expected.len(), 2);
        assert!(matches!(
            parse_requests("a/x no tab"),
            Err(EvalError::Request { line: 1, .. })
        ));
        assert!(matches!(
            parse_requests("ax\tq"),
            Err(EvalError::Request { .. })
        ));
    }
}
