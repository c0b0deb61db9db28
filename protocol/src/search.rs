//! Wire types of tool search: `searchTools`, and `listTools` across every server.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Params of `searchTools`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchToolsParams {
    /// What the caller wants to do, in natural language (at most 4 KiB).
    pub query: String,
    /// How many results (default 10, 1 to 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// Only tools of these servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers: Option<Vec<String>>,
    /// Only tools of servers carrying one of these tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// The caller's session: the tool it used last nudges what tends to follow it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Include each tool's `inputSchema`.
    #[serde(default)]
    pub include_schema: bool,
}

/// Result of `searchTools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchToolsResult {
    /// Best first.
    pub results: Vec<SearchHit>,
    /// How many tools the caller can see in all.
    pub catalog_size: usize,
    /// How long the ranking took, in microseconds.
    pub took_us: u64,
    /// Which embedding ranked: the sentence-embedding model, or the hashing embedder because
    /// the daemon has no model (`hashing`) or some tool still lacks its model vector
    /// (`pending`).
    #[serde(default)]
    pub semantic: SemanticRanking,
    /// Whether the best hit is what was asked for, as far as the search can tell. Absent from
    /// older daemons' answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<SearchConfidence>,
}

/// How sure a `searchTools` answer is that its best hit is what was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SearchConfidence {
    /// The best hit leads the others clearly and is close to the request in meaning.
    Confident,
    /// Another tool scores nearly as well: the request does not say which.
    Ambiguous,
    /// The best hit leads but is far from the request in meaning: there may be no tool for it.
    Weak,
    /// No tool matched.
    NoMatch,
}

/// Which embedding ranked a `searchTools` answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SemanticRanking {
    /// The sentence-embedding model, for every tool the query could return.
    Model,
    /// A model is loaded (or loading) but some tools are not embedded yet: the hashing
    /// embedder ranked.
    Pending,
    /// No model: the hashing embedder ranked.
    #[default]
    Hashing,
}

/// The tool-search model's state in `health` (owner token only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHealth {
    /// `off`, `loading`, `failed`, `embedding` or `ready`.
    pub model: SearchModelState,
    /// The model's directory, when one is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// Tools in the search index.
    pub tools: usize,
    /// Tools whose model vector is attached to the index.
    pub with_vectors: usize,
    /// Tools the model embedded since the daemon started.
    pub embedded: usize,
    /// Tools whose vectors came from the disk cache since the daemon started.
    pub cached: usize,
    /// Why the model is not used, when it failed to load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// Where the tool-search model is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SearchModelState {
    /// No model configured or found: lexical ranking with the hashing embedder.
    #[default]
    Off,
    /// Being read from disk.
    Loading,
    /// Could not be loaded (see `lastError`): lexical ranking with the hashing embedder.
    Failed,
    /// Loaded; some tools are being embedded.
    Embedding,
    /// Loaded and every indexed tool embedded.
    Ready,
}

/// One tool found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    /// The server.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// Its description.
    pub description: String,
    /// The score (higher is better; comparable within one answer only).
    pub score: f32,
    /// What the score is made of.
    pub why: SearchWhy,
    /// The tool's `inputSchema`, when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
}

/// The parts of a score.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchWhy {
    /// BM25F with concept expansion.
    pub lexical: f32,
    /// Cosine similarity of embeddings.
    pub semantic: f32,
    /// The session-inertia prior's contribution.
    pub inertia: f32,
    /// The reliability prior's contribution.
    pub reliability: f32,
    /// The latency prior's contribution.
    pub latency: f32,
}

/// Params of `listTools`: one server's tools, or every server's (paged) without `server`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsParams {
    /// The server; omitted, every server's tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Where the previous page ended (`nextCursor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Tools per page (1 to 5000); across servers the default is 500, for one server the whole
    /// list unless `limit` or `cursor` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
}

/// The `_meta` key of a tool result that carries the alternatives `callTool` found for a tool
/// that reported an error (`alternatives: true`).
pub const ALTERNATIVES_META: &str = "tool-cli/alternatives";

/// The most alternatives a failed `callTool` lists.
pub const MAX_ALTERNATIVES: usize = 5;

/// A tool that may do the job of one whose call failed (`callTool` with `alternatives: true`):
/// a `searchTools` hit over the tools the caller's token can see, the failed tool excluded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAlternative {
    /// The server offering it.
    pub server: String,
    /// Its name.
    pub tool: String,
    /// Its description (cut at 8 KiB).
    pub description: String,
    /// Its `searchTools` score for the failed tool's name and description.
    pub score: f32,
}
