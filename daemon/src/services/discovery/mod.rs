//! The discovery service: what the daemon offers and what it holds: `getBridgeInfo`,
//! `listServers`, `listTools`, `describeTool` (here), `health` (`health.rs`), `searchTools`
//! (`search.rs`), resources (`resources.rs`) and prompts (`prompts.rs`), each filtered by the
//! caller's grant.
//!
//! These only look at what the pipeline's servers publish (status and last-known catalog); the
//! one wait is for a server still making its first connection, bounded by its call timeout.
//! Resource reads and prompts are the exception: they go to the server through the pipeline's
//! protection, like a call.

mod flags;
mod gateway;
mod health;
mod prompts;
mod resources;
mod search;

use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;
use tool_cli_protocol::methods::{
    AuthenticationCapability, BridgeCapabilities, BridgeInfo, BridgeProtocol,
    CancellationCapability, DescribeToolParams, Implementation, ListServersResult, ListToolsResult,
    ResourcesCapability, ServerSummary, ToolSummary, ToolsCapability, UpstreamMcp, name,
};
use tool_cli_protocol::search::ListToolsParams;

use super::sessions::Sessions;
use crate::catalog::CatalogTool;
use crate::error::Error;
use crate::paging::{MAX_PAGE, Page};
use crate::pipeline::{CallContext, Pipeline, listed, resolve_server};
use crate::tool_search::ToolSearch;
use crate::trace::Traces;
pub(crate) use flags::follow_flags;
pub(crate) use gateway::{CatalogVersion, VisibleTool};

/// How many tool names `listServers` gives as examples.
const EXAMPLE_TOOLS: usize = 3;

/// Discovery over the pipeline's servers, and the tool search index kept over their catalogs.
pub(crate) struct Discovery {
    pipeline: Arc<Pipeline>,
    /// For search's priors (what the caller's session used last).
    sessions: Arc<Sessions>,
    /// The search index, kept current in the background from the provider's changes.
    search: Arc<ToolSearch>,
    /// The trace writer, when traces are on: its counts are in the owner's `health`.
    traces: Option<Arc<Traces>>,
    /// OpenTelemetry export: its counts are in the owner's `health` when it is on.
    telemetry: crate::otel::Telemetry,
    /// The detectors' flags of the tools held now (`flags.rs`).
    flags: flags::FlagCache,
    /// What the gateway does with a flagged tool; `reloadConfig` may change it.
    gateway_flags: std::sync::RwLock<crate::catalog::flags::GatewayFlagPolicy>,
}

impl Discovery {
    pub(crate) fn new(
        pipeline: Arc<Pipeline>,
        sessions: Arc<Sessions>,
        search: Arc<ToolSearch>,
        traces: Option<Arc<Traces>>,
        telemetry: crate::otel::Telemetry,
        gateway_flags: crate::catalog::flags::GatewayFlagPolicy,
    ) -> Discovery {
        Discovery {
            pipeline,
            sessions,
            search,
            traces,
            telemetry,
            flags: flags::FlagCache::default(),
            gateway_flags: std::sync::RwLock::new(gateway_flags),
        }
    }

    /// What the gateway does with a flagged tool now.
    pub(crate) fn gateway_flags(&self) -> crate::catalog::flags::GatewayFlagPolicy {
        *self
            .gateway_flags
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The config's `flags.gateway`, as `reloadConfig` found it: the gateway's next listing
    /// follows it (a listing's [`CatalogVersion`] names the policy it was made under).
    pub(crate) fn set_gateway_flags(&self, policy: crate::catalog::flags::GatewayFlagPolicy) {
        *self
            .gateway_flags
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = policy;
    }

    /// `getBridgeInfo`: the protocol, the implementation, every operation and capability.
    pub(crate) fn bridge_info(&self, _context: &CallContext) -> BridgeInfo {
        bridge_info()
    }

    /// Waits, at most `timeout`, until tool search ranks with its model: every connected
    /// server's tools indexed and embedded (or the model failed to load). Returns at once
    /// without a model; `false` when the time ran out.
    pub(crate) async fn search_ready(&self, timeout: Duration) -> bool {
        let search = Arc::clone(&self.search);
        let slots = self.pipeline.slots();
        // Index what is connected now, so the first pass covers it.
        let _ = tokio::task::spawn_blocking(move || {
            if search.has_unindexed(&slots) {
                search.refresh(&slots);
            }
        })
        .await;
        self.search.until_embedded(timeout).await
    }

    /// `listTools`: one server's tools, or with no server (or `"*"`) every server's, in pages.
    pub(crate) async fn list_tools(
        &self,
        params: ListToolsParams,
        context: &CallContext,
    ) -> Result<ListToolsResult, Error> {
        // `"*"` is every server, as without `server` (docs/protocol.md).
        match params.server.as_deref().filter(|server| *server != "*") {
            Some(server) => self.list_server_tools(server, &params, context).await,
            None => self.list_all_tools(&params, context),
        }
    }

    /// `describeTool`: the tool exactly as the server listed it.
    pub(crate) async fn describe_tool(
        &self,
        params: DescribeToolParams,
        context: &CallContext,
    ) -> Result<Box<RawValue>, Error> {
        self.describe(&params.server, &params.tool, context).await
    }

    /// `listServers`: the servers the grant may see, with the tools it may see.
    pub(crate) fn list_servers(&self, context: &CallContext) -> ListServersResult {
        let grant = &context.grant;
        let servers = self
            .pipeline
            .slots()
            .iter()
            .filter(|slot| grant.scope.permits_server(&slot.upstream.info().name))
            .map(|slot| {
                let info = slot.upstream.info();
                let status = slot.upstream.status();
                let catalog = slot.upstream.catalog();
                let mut tool_count = 0;
                let mut examples = Vec::new();
                if crate::policy::sees_every_tool(&grant.scope, &info.settings.policy) {
                    // The usual case (the owner token, no allow/deny lists): the count kept by
                    // the catalog, and the first few names; not a walk over every tool.
                    tool_count = catalog.unhidden_len();
                    examples.extend(
                        catalog
                            .tools()
                            .iter()
                            .filter(|tool| tool.is_listed())
                            .take(EXAMPLE_TOOLS)
                            .map(|tool| tool.name().to_owned()),
                    );
                } else {
                    for tool in catalog.tools() {
                        if listed(grant, slot, tool) {
                            tool_count += 1;
                            if examples.len() < EXAMPLE_TOOLS {
                                examples.push(tool.name().to_owned());
                            }
                        }
                    }
                }
                let description = info.description.clone().or_else(|| {
                    status
                        .instructions
                        .as_deref()
                        .and_then(|text| text.lines().find(|line| !line.trim().is_empty()))
                        // Instructions are often markdown; a heading marker is noise here.
                        .map(|line| line.trim().trim_start_matches('#').trim().to_owned())
                });
                ServerSummary {
                    name: info.name.clone(),
                    tool_count,
                    examples,
                    state: status.state,
                    transport: info.transport,
                    description,
                    tags: info.tags.clone(),
                    error: status.error,
                    warnings: status.warnings,
                }
            })
            .collect();
        ListServersResult { servers }
    }

    /// `listTools` of one server: the tools the grant may see, all of them or one page
    /// (`limit`, `cursor`); only the tools on the page are copied.
    async fn list_server_tools(
        &self,
        server: &str,
        params: &ListToolsParams,
        context: &CallContext,
    ) -> Result<ListToolsResult, Error> {
        let grant = &context.grant;
        let page = Page::requested(params, MAX_PAGE)?;
        let slots = self.pipeline.slots();
        let slot = resolve_server(&slots, server, grant, None)?;
        wait_until_known(slot).await?;
        let catalog = slot.upstream.catalog();
        let server_name = &slot.upstream.info().name;
        let flags = self.tool_flags();
        let summary = |tool: &CatalogTool| ToolSummary {
            server: None,
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            has_structured_output: tool.has_output_schema,
            overridden: tool.overridden,
            flags: flags
                .get(&(server_name.clone(), tool.name().to_owned()))
                .cloned()
                .unwrap_or_default(),
        };
        let visible = catalog
            .tools()
            .iter()
            .filter(|tool| listed(grant, slot, tool));
        let (tools, next_cursor, tool_count) = match page {
            None => (visible.map(|tool| summary(tool)).collect(), None, None),
            Some(page) => {
                let mut tools = Vec::new();
                let mut total = 0;
                for tool in visible {
                    if page.holds(total) {
                        tools.push(summary(tool));
                    }
                    total += 1;
                }
                (tools, page.next_cursor(total), Some(total))
            }
        };
        Ok(ListToolsResult {
            server: slot.upstream.info().name.clone(),
            tools,
            next_cursor,
            tool_count,
        })
    }

    /// The tool `tool` of `server` exactly as the server listed it, if the caller may see it.
    pub(crate) async fn describe(
        &self,
        server: &str,
        tool: &str,
        context: &CallContext,
    ) -> Result<Box<RawValue>, Error> {
        let grant = &context.grant;
        let slots = self.pipeline.slots();
        let slot = resolve_server(&slots, server, grant, Some(tool))?;
        wait_until_known(slot).await?;
        let tool = crate::pipeline::resolve_tool(slot, tool, grant)?;
        // A tool the pin check holds back is not shown, not even its schema: the refusal says
        // how to review it (`tool-cli pin diff` reads it through `pinListing`).
        if let Some(refusal) = crate::pipeline::pin_refusal(slot, &tool) {
            return Err(refusal);
        }
        let flags = self.flags_of(&slot.upstream.info().name, tool.name());
        if !flags.is_empty() {
            // Flagged by the detectors: said in `_meta`, the rest exactly as listed.
            let mut json: serde_json::Value = serde_json::from_str(tool.raw_json().get())
                .map_err(|error| Error::Internal(format!("a catalog tool's JSON: {error}")))?;
            if let Some(object) = json.as_object_mut() {
                let meta = object
                    .entry("_meta")
                    .or_insert_with(|| serde_json::json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert("tool-cli/flags".to_owned(), serde_json::json!(flags));
                }
            }
            return serde_json::value::to_raw_value(&json)
                .map_err(|error| Error::Internal(format!("a flagged tool's JSON: {error}")));
        }
        // The text the catalog keeps, copied as it is: no tree to build and encode again.
        Ok(tool.raw_json().to_owned())
    }
}

/// Waits for a server whose tools are not known yet (its first connection is under way); a
/// server that was connected once answers from its last catalog at once, whatever its state.
async fn wait_until_known(slot: &crate::pipeline::Slot) -> Result<(), Error> {
    if !slot.upstream.catalog().is_empty() {
        return Ok(());
    }
    let deadline = tokio::time::Instant::now() + slot.upstream.info().settings.call_timeout;
    slot.upstream.wait_ready(deadline).await
}

/// The `getBridgeInfo` result.
fn bridge_info() -> BridgeInfo {
    BridgeInfo {
        bridge_protocol: BridgeProtocol {
            name: tool_cli_protocol::BRIDGE_PROTOCOL_NAME.to_owned(),
            major: tool_cli_protocol::BRIDGE_PROTOCOL_MAJOR,
            version: tool_cli_protocol::BRIDGE_PROTOCOL_VERSION.to_owned(),
        },
        server_implementation: Implementation {
            name: tool_cli_protocol::IMPLEMENTATION_NAME.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
        operations: name::ALL.iter().map(|&m| m.to_owned()).collect(),
        capabilities: BridgeCapabilities {
            authentication: AuthenticationCapability {
                required: true,
                scheme: "bearer".to_owned(),
            },
            tools: ToolsCapability {
                discovery: true,
                calls: true,
                input_schema_validation: true,
                json_schema_dialect: tool_cli_protocol::DEFAULT_JSON_SCHEMA_DIALECT.to_owned(),
                supported_json_schema_dialects: tool_cli_protocol::SUPPORTED_JSON_SCHEMA_DIALECTS
                    .iter()
                    .map(|&d| d.to_owned())
                    .collect(),
            },
            resources: ResourcesCapability {
                list: true,
                templates: true,
                read: true,
            },
            cancellation: CancellationCapability {
                provider_abort_signal: true,
                per_call_timeout: true,
                upstream_notification: "notifications/cancelled".to_owned(),
            },
        },
        upstream_mcp: Some(UpstreamMcp {
            protocol_version: crate::pool::MCP_PROTOCOL_VERSION.to_string(),
            implementation: Implementation {
                name: tool_cli_protocol::IMPLEMENTATION_NAME.to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            },
            capabilities: crate::pool::client_capabilities_json(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bridge_info_announces_protocol_one_and_every_operation() {
        let info = serde_json::to_value(bridge_info()).unwrap();
        assert_eq!(info["bridgeProtocol"]["name"], "tool-cli-bridge");
        assert_eq!(info["bridgeProtocol"]["major"], 1);
        assert_eq!(
            info["operations"].as_array().unwrap().len(),
            name::ALL.len()
        );
        assert_eq!(info["upstreamMcp"]["protocolVersion"], "2025-11-25");
        assert_eq!(
            info["capabilities"]["cancellation"]["providerAbortSignal"],
            true
        );
    }
}
