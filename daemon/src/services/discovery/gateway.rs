//! What the MCP gateway (`gateway/`) reads of the pool: every tool the caller's grant lists, from
//! the catalogs the daemon already holds. Nothing here waits for a server: a dead or hanging
//! upstream contributes its last-known tools (or none, before its first connection), so a
//! gateway `tools/list` is never held up or failed by one.

use std::sync::Arc;

use super::Discovery;
use crate::catalog::CatalogTool;
use crate::pipeline::{CallContext, listed};

/// One tool the caller may see, with its server.
#[derive(Clone)]
pub(crate) struct VisibleTool {
    /// The server, as configured.
    pub(crate) server: String,
    /// The tool as its server listed it.
    pub(crate) tool: Arc<CatalogTool>,
}

/// Which catalogs a listing was made from: the server table and each server's catalog, held
/// (so neither can be freed and its address reused) and compared by identity. Equal versions
/// list the same tools for the same token.
pub(crate) struct CatalogVersion {
    slots: Arc<Vec<Arc<crate::pipeline::Slot>>>,
    catalogs: Vec<Arc<crate::catalog::Catalog>>,
    /// The flag policy the listing follows: a reload that changes it changes what is listed.
    gateway_flags: crate::catalog::flags::GatewayFlagPolicy,
}

impl PartialEq for CatalogVersion {
    fn eq(&self, other: &CatalogVersion) -> bool {
        Arc::ptr_eq(&self.slots, &other.slots)
            && self.gateway_flags == other.gateway_flags
            && self.catalogs.len() == other.catalogs.len()
            && self
                .catalogs
                .iter()
                .zip(&other.catalogs)
                .all(|(one, other)| Arc::ptr_eq(one, other))
    }
}

/// One server the caller may see, for the progressive mode's `list_servers`.
pub(crate) struct VisibleServer {
    /// Its name.
    pub(crate) name: String,
    /// What it is for (its configured description, else the first line of its instructions).
    pub(crate) description: String,
    /// How many of its tools the caller may see.
    pub(crate) tool_count: usize,
    /// Why it cannot be used now, when it cannot.
    pub(crate) unavailable: Option<String>,
}

impl Discovery {
    /// The catalogs every listing is made from now.
    pub(crate) fn catalog_version(&self) -> CatalogVersion {
        let slots = self.pipeline.slots();
        let catalogs = slots.iter().map(|slot| slot.upstream.catalog()).collect();
        CatalogVersion {
            slots,
            catalogs,
            gateway_flags: self.gateway_flags(),
        }
    }

    /// Whether `server` speaks the stateless revision (`Upstream::speaks_stateless`).
    pub(crate) fn speaks_stateless(&self, server: &str) -> bool {
        self.pipeline
            .slots()
            .iter()
            .any(|slot| slot.upstream.info().name == server && slot.upstream.speaks_stateless())
    }

    /// Every tool `context`'s grant lists, server by server, from the held catalogs.
    pub(crate) fn visible_tools(&self, context: &CallContext) -> Vec<VisibleTool> {
        let grant = &context.grant;
        let mut tools = Vec::new();
        // A tool the detectors flag is held back from hosts by default: their model reads the
        // description directly, with nothing to warn it (`flags.gateway`, docs/pinning.md).
        let held = (self.gateway_flags() == crate::catalog::flags::GatewayFlagPolicy::Hold)
            .then(|| self.tool_flags());
        for slot in self.pipeline.slots().iter() {
            let server = &slot.upstream.info().name;
            if !grant.scope.permits_server(server) {
                continue;
            }
            let catalog = slot.upstream.catalog();
            tools.extend(
                catalog
                    .tools()
                    .iter()
                    .filter(|tool| listed(grant, slot, tool))
                    .filter(|tool| {
                        held.as_ref().is_none_or(|flags| {
                            !flags.contains_key(&(server.clone(), tool.name().to_owned()))
                        })
                    })
                    .map(|tool| VisibleTool {
                        server: server.clone(),
                        tool: Arc::clone(tool),
                    }),
            );
        }
        tools
    }

    /// The servers `context`'s grant may see, as `list_servers` shows them.
    pub(crate) fn visible_servers(&self, context: &CallContext) -> Vec<VisibleServer> {
        self.list_servers(context)
            .servers
            .into_iter()
            .map(|server| {
                use tool_cli_protocol::methods::ServerState;
                let usable = matches!(
                    server.state,
                    ServerState::Ready | ServerState::Degraded | ServerState::CircuitOpen
                );
                let unavailable = (!usable).then(|| {
                    server.error.clone().unwrap_or_else(|| {
                        serde_json::to_value(server.state)
                            .ok()
                            .and_then(|state| state.as_str().map(str::to_owned))
                            .unwrap_or_else(|| "not connected".to_owned())
                    })
                });
                VisibleServer {
                    name: server.name,
                    description: server.description.unwrap_or_default(),
                    tool_count: server.tool_count,
                    unavailable,
                }
            })
            .collect()
    }
}
