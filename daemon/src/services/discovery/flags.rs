//! The detectors' flags over the tools the daemon holds (`catalog/flags.rs`, pure), computed once
//! per set of catalogs: the first listing after a change scans every server's tools (shadowing
//! is across servers, so one server's new listing can flag another's tools), later ones read the
//! result. `listTools` and `describeTool` show a tool's flags; the gateway holds flagged tools
//! back or only warns, by the `flags.gateway` policy.

use std::sync::{Arc, Mutex};

use super::{CatalogVersion, Discovery};
use crate::catalog::flags::{ToolFlags, flag_tools};

/// The flags of the catalogs they were computed from.
#[derive(Default)]
pub(crate) struct FlagCache {
    computed: Mutex<Option<(CatalogVersion, Arc<ToolFlags>)>>,
}

impl Discovery {
    /// The flags of every tool held now.
    pub(crate) fn tool_flags(&self) -> Arc<ToolFlags> {
        let version = self.catalog_version();
        let mut computed = self.flags.computed.lock().unwrap();
        if let Some((seen, flags)) = computed.as_ref()
            && *seen == version
        {
            return Arc::clone(flags);
        }
        let servers: Vec<(String, Vec<serde_json::Value>)> = self
            .pipeline
            .slots()
            .iter()
            .map(|slot| {
                (
                    slot.upstream.info().name.clone(),
                    slot.upstream.catalog().pin_checked_tools(),
                )
            })
            .collect();
        let flags = Arc::new(flag_tools(&servers));
        for ((server, tool), lines) in flags.iter() {
            for line in lines {
                tracing::warn!(server, tool, flag = %line, "tool description flagged");
            }
        }
        *computed = Some((version, Arc::clone(&flags)));
        flags
    }

    /// The flags of `tool` of `server` (empty when none).
    pub(crate) fn flags_of(&self, server: &str, tool: &str) -> Vec<String> {
        self.tool_flags()
            .get(&(server.to_owned(), tool.to_owned()))
            .cloned()
            .unwrap_or_default()
    }
}
