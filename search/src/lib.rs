//! Tool search for tool-cli: ranks the tools of many MCP servers against a natural-language
//! request, in process, in under a millisecond for ten thousand tools.
//!
//! The crate is pure: no I/O, no async, no global state beyond constant tables and bounded
//! per-thread memos of word analysis (large builds use scoped threads, none outlives a call). The daemon turns
//! each server's catalog into `doc::ToolDoc`s, keeps an `index::Index` (one shard per server,
//! replaced when that server's tools change), and answers `searchTools` with
//! `Index::search(&search::Query)`. Ranking is BM25F over a tool's name, title, description,
//! parameters and server, with query expansion through a table of synonyms common in tool
//! catalogs, fused with the cosine of an `embed::Embedder` (by default static token embeddings
//! distilled from all-MiniLM-L6-v2 and built into the crate, `static_embed`), reranked over the
//! best 30 by learned-rerank features, then nudged by bounded `priors::Priors` (session inertia, reliability, latency).
//! A real sentence-embedding model's vectors (`semantic`) can be attached to the shards after
//! they are built, and then rank queries in place of the index's embedder.
//! `docs/search.md` documents the formula and the measured quality; `eval` and the `search-eval`
//! binary reproduce the figures.

pub mod bm25;
mod concepts;
mod deprecation;
pub mod doc;
pub mod embed;
pub mod eval;
pub mod index;
mod late_interaction;
#[cfg(feature = "minilm")]
pub mod minilm;
pub mod priors;
pub mod query_adapter;
pub mod search;
pub mod semantic;
pub mod static_embed;
mod text;
mod vocabulary;
mod wordpiece;
