//! `searchTools` and the merged `listTools`: finding tools across every server the caller may
//! see, in one ranked list or in pages.

use std::sync::Arc;

use tokio::time::Instant;
use tool_cli_agent::host::ToolInfo;
use tool_cli_protocol::methods::{ListToolsResult, ToolSummary};
use tool_cli_protocol::search::SemanticRanking as WireRanking;
use tool_cli_protocol::search::{
    ListToolsParams, SearchConfidence, SearchHit, SearchToolsParams, SearchToolsResult, SearchWhy,
};
use tool_cli_search::priors::ToolRef;
use tool_cli_search::search::{Confidence, DEFAULT_LIMIT, MAX_LIMIT, Query};
use tool_cli_search::semantic::SemanticRanking;

use super::Discovery;
use crate::auth::Grant;
use crate::error::Error;
use crate::paging::{DEFAULT_PAGE, Page};
use crate::pipeline::{CallContext, Slot, listed};
use crate::tool_search::DaemonPriors;

impl Discovery {
    /// `searchTools`.
    pub(crate) fn search_tools(
        &self,
        params: SearchToolsParams,
        context: &CallContext,
    ) -> Result<SearchToolsResult, Error> {
        const METHOD: &str = "searchTools";
        let limit = match params.limit {
            None => DEFAULT_LIMIT,
            Some(limit) if limit < 1 || limit > MAX_LIMIT as i64 => {
                return Err(Error::invalid_params(
                    METHOD,
                    format!("limit {limit} is out of range; expected 1 to {MAX_LIMIT}"),
                ));
            }
            Some(limit) => limit as usize,
        };
        let slots = self.pipeline.slots();
        let grant = &context.grant;
        let servers = params.servers.unwrap_or_default();
        for name in &servers {
            crate::pipeline::resolve_server(&slots, name, grant, None)?;
        }
        let index = self.fresh_index(&slots);
        // Servers without tools have no shard; filtering on them alone finds nothing.
        let indexed: Vec<String> = servers
            .iter()
            .filter(|name| index.servers().any(|indexed| indexed == name.as_str()))
            .cloned()
            .collect();
        let tags = params.tags.unwrap_or_default();
        let (previous, followers) = match &params.session_id {
            Some(id) => self.sessions.store().followers(&grant.token_id, id),
            None => (None, Default::default()),
        };
        let priors = DaemonPriors::new(&slots, followers);
        let visibility = |server: &str, tool: &str| visible_to(grant, &slots, server, tool);
        // The model's vector of the query counts in the time taken: it is most of it.
        let started = Instant::now();
        let model_query = self.search.embed_query(&index, &params.query);
        let query = Query {
            text: &params.query,
            limit,
            // The pin check's holds change without a new index (held tools are indexed), so a
            // server holding any back is filtered per hit even for an unrestricted grant.
            visible: (!unrestricted(grant) || holds_any(&slots)).then_some(&visibility as _),
            servers: &indexed,
            tags: &tags,
            previous_tool: previous
                .as_ref()
                .map(|(server, tool)| ToolRef { server, tool }),
            priors: &priors,
            model_query: model_query.as_ref(),
            signals: tool_cli_search::search::Signals::ALL,
        };
        let outcome = if !servers.is_empty() && indexed.is_empty() {
            None
        } else {
            Some(
                index
                    .search(&query)
                    .map_err(|error| Error::invalid_params(METHOD, error.to_string()))?,
            )
        };
        let took_us = started.elapsed().as_micros() as u64;
        let Some(outcome) = outcome else {
            return Ok(SearchToolsResult {
                results: Vec::new(),
                catalog_size: 0,
                took_us,
                semantic: self.search.idle_ranking(&index),
                confidence: Some(SearchConfidence::NoMatch),
            });
        };
        let results = outcome
            .hits
            .into_iter()
            .map(|hit| {
                let input_schema = params
                    .include_schema
                    .then(|| schema_of(&slots, &hit.server, &hit.tool))
                    .flatten();
                SearchHit {
                    server: hit.server,
                    tool: hit.tool,
                    description: hit.description,
                    score: hit.score,
                    why: SearchWhy {
                        lexical: hit.why.lexical,
                        semantic: hit.why.semantic,
                        inertia: hit.why.inertia,
                        reliability: hit.why.reliability,
                        latency: hit.why.latency,
                    },
                    input_schema,
                }
            })
            .collect();
        let semantic = match outcome.semantic {
            SemanticRanking::Model => WireRanking::Model,
            SemanticRanking::Hashing if !self.search.is_loading() => WireRanking::Hashing,
            _ => WireRanking::Pending,
        };
        let confidence = match outcome.confidence {
            Confidence::Confident => SearchConfidence::Confident,
            Confidence::Ambiguous => SearchConfidence::Ambiguous,
            Confidence::Weak => SearchConfidence::Weak,
            Confidence::NoMatch => SearchConfidence::NoMatch,
        };
        Ok(SearchToolsResult {
            results,
            catalog_size: outcome.catalog_size,
            took_us,
            semantic,
            confidence: Some(confidence),
        })
    }

    /// The `(server, tool)`s best matching `query` for an agent run, at most `limit`.
    pub(crate) fn search_for_agent(
        &self,
        context: &CallContext,
        query: &str,
        limit: usize,
    ) -> Result<Vec<(String, String)>, Error> {
        let result = self.search_tools(
            SearchToolsParams {
                query: query.to_owned(),
                limit: Some(limit.clamp(1, MAX_LIMIT) as i64),
                session_id: context.session_id.clone(),
                ..SearchToolsParams::default()
            },
            context,
        )?;
        Ok(result
            .results
            .into_iter()
            .map(|hit| (hit.server, hit.tool))
            .collect())
    }

    /// Every tool the caller may see and that is not hidden, in server order, as an agent's
    /// run is shown them.
    pub(crate) fn agent_tools(&self, context: &CallContext) -> Vec<ToolInfo> {
        let grant = &context.grant;
        let mut tools = Vec::new();
        for slot in self.pipeline.slots().iter() {
            let server = &slot.upstream.info().name;
            if !grant.scope.permits_server(server) {
                continue;
            }
            for tool in slot.upstream.catalog().tools() {
                if !listed(grant, slot, tool) {
                    continue;
                }
                tools.push(ToolInfo {
                    server: server.clone(),
                    name: tool.name().to_owned(),
                    description: tool.description().to_owned(),
                    input_schema: tool.input_schema_or_any_object(),
                    read_only: tool.hints.read_only,
                    destructive: tool.hints.destructive,
                });
            }
        }
        tools
    }

    /// The index, first indexing any server that has tools but no shard yet (right after
    /// start-up, before the background refresh has run).
    fn fresh_index(&self, slots: &[Arc<Slot>]) -> Arc<tool_cli_search::index::Index> {
        if self.search.has_unindexed(slots) {
            self.search.refresh(slots);
        }
        self.search.current()
    }

    /// `listTools` without a server: every visible tool of every server, in config order, in
    /// pages.
    pub(super) fn list_all_tools(
        &self,
        params: &ListToolsParams,
        context: &CallContext,
    ) -> Result<ListToolsResult, Error> {
        let grant = &context.grant;
        let page = Page::requested(params, DEFAULT_PAGE)?.unwrap_or(Page {
            start: 0,
            limit: DEFAULT_PAGE,
        });
        let (start, limit) = (page.start, page.limit);
        let mut tools = Vec::new();
        let mut position = 0;
        let mut more = false;
        let flags = self.tool_flags();
        'servers: for slot in self.pipeline.slots().iter() {
            let server = &slot.upstream.info().name;
            if !grant.scope.permits_server(server) {
                continue;
            }
            for tool in slot.upstream.catalog().tools() {
                if !listed(grant, slot, tool) {
                    continue;
                }
                if position >= start {
                    if tools.len() == limit {
                        more = true;
                        break 'servers;
                    }
                    tools.push(ToolSummary {
                        server: Some(server.clone()),
                        name: tool.name().to_owned(),
                        description: tool.description().to_owned(),
                        has_structured_output: tool.has_output_schema,
                        overridden: tool.overridden,
                        flags: flags
                            .get(&(server.clone(), tool.name().to_owned()))
                            .cloned()
                            .unwrap_or_default(),
                    });
                }
                position += 1;
            }
        }
        Ok(ListToolsResult {
            server: "*".to_owned(),
            next_cursor: more.then(|| format!("at:{}", start + tools.len())),
            tools,
            tool_count: None,
        })
    }
}

/// Whether the grant's scope lets it see every tool the index holds (the index already leaves
/// out what policy denies and overrides hide).
fn unrestricted(grant: &Grant) -> bool {
    let scope = &grant.scope;
    scope.servers.is_none() && scope.tools.is_none() && !scope.read_only
}

/// Whether the pin check holds back any tool of any server.
fn holds_any(slots: &[Arc<Slot>]) -> bool {
    slots
        .iter()
        .any(|slot| slot.upstream.catalog().pin_hold().held_count() > 0)
}

fn visible_to(grant: &Grant, slots: &[Arc<Slot>], server: &str, tool: &str) -> bool {
    slots
        .iter()
        .find(|slot| slot.upstream.info().name == server)
        .is_some_and(|slot| {
            slot.upstream
                .catalog()
                .get(tool)
                .is_some_and(|tool| listed(grant, slot, tool))
        })
}

fn schema_of(slots: &[Arc<Slot>], server: &str, tool: &str) -> Option<serde_json::Value> {
    let slot = slots
        .iter()
        .find(|slot| slot.upstream.info().name == server)?;
    slot.upstream.catalog().get(tool)?.input_schema()
}
