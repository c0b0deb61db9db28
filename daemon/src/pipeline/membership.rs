//! Following the provider's set of servers when it changes at run time (`addServer`,
//! `removeServer`, a reload): the slot table is rebuilt from the provider's list, and a server
//! that is still the same upstream keeps its slot, so its breakers, bulkhead, cache and
//! statistics carry on; a new or replaced upstream gets fresh ones.

use std::sync::Arc;

use super::{Pipeline, ServerGuards, Slot};
use crate::provider::ToolProvider;

impl Pipeline {
    /// Makes the slot table match `provider`'s servers now.
    pub(crate) fn follow_servers(&self, provider: &dyn ToolProvider) {
        let mut table = self.slots.0.write().unwrap();
        let next = provider
            .servers()
            .into_iter()
            .map(|upstream| {
                match table
                    .iter()
                    .find(|slot| Arc::ptr_eq(&slot.upstream, &upstream))
                {
                    Some(slot) => Arc::clone(slot),
                    None => {
                        let guards =
                            ServerGuards::new(&upstream.info().settings, self.options.breaker);
                        Arc::new(Slot { upstream, guards })
                    }
                }
            })
            .collect();
        *table = Arc::new(next);
    }
}
