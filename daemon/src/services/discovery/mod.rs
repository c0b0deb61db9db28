//! Discovery: `listServers`, `listTools`, `describeTool`, filtered by the caller's grant.
//!
//! These only look at what the pipeline's servers publish (status and last-known catalog); the
//! one wait is for a server still making its first connection, bounded by its call timeout.

use serde_json::value::RawValue;
use tool_cli_protocol::methods::{ListServersResult, ListToolsResult, ServerSummary, ToolSummary};
use tool_cli_protocol::search::ListToolsParams;

use crate::auth::Grant;
use crate::catalog::CatalogTool;
use crate::error::Error;
use crate::orchestrator::Orchestrator;
use crate::paging::{MAX_PAGE, Page};
use crate::pipeline::{listed, resolve_server};

/// How many tool names `listServers` gives as examples.
const EXAMPLE_TOOLS: usize = 3;

impl Orchestrator {
    /// `listServers`: the servers the grant may see, with the tools it may see.
    pub fn list_servers(&self, grant: &Grant) -> ListServersResult {
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
                            .filter(|tool| !tool.hidden)
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
    pub async fn list_tools(
        &self,
        server: &str,
        params: &ListToolsParams,
        grant: &Grant,
    ) -> Result<ListToolsResult, Error> {
        let page = Page::requested(params, MAX_PAGE)?;
        let slots = self.pipeline.slots();
        let slot = resolve_server(&slots, server, grant, None)?;
        wait_until_known(slot).await?;
        let catalog = slot.upstream.catalog();
        let summary = |tool: &CatalogTool| ToolSummary {
            server: None,
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            has_structured_output: tool.has_output_schema,
            overridden: tool.overridden,
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

    /// `describeTool`: the tool exactly as the server listed it.
    pub async fn describe_tool(
        &self,
        server: &str,
        tool: &str,
        grant: &Grant,
    ) -> Result<Box<RawValue>, Error> {
        let slots = self.pipeline.slots();
        let slot = resolve_server(&slots, server, grant, Some(tool))?;
        wait_until_known(slot).await?;
        let tool = crate::pipeline::resolve_tool(slot, tool, grant)?;
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
