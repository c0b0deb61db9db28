//! The detectors' flags over the tools the daemon holds (`catalog/flags.rs`, pure), computed once
//! per set of catalogs, every server's tools at once (shadowing is across servers, so one
//! server's new listing can flag another's tools): in the background after each change
//! ([`follow_flags`]), so listings read the result; a listing that comes first computes it. `listTools` and `describeTool` show a tool's flags; the gateway holds flagged tools
//! back or only warns, by the `flags.gateway` policy.

use std::sync::{Arc, Mutex, Weak};

use tokio::sync::watch;

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

/// Computes the flags again after each change of the provider's catalogs, off the async
/// threads, until the discovery service is gone: a listing then finds them ready rather than
/// scanning every tool itself.
pub(crate) async fn follow_flags(discovery: Weak<Discovery>, mut changes: watch::Receiver<u64>) {
    while changes.changed().await.is_ok() {
        let Some(discovery) = discovery.upgrade() else {
            break;
        };
        let _ = tokio::task::spawn_blocking(move || {
            discovery.tool_flags();
        })
        .await;
    }
}
