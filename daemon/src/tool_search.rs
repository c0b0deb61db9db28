//! Tool search in the daemon: the `tool-cli-search` index kept current over the providers'
//! catalogs, and `searchTools` answered from it with the caller's scope and session.
//!
//! The index has one shard per server. A background task follows the provider's change counter
//! and rebuilds only the shards whose catalog changed (a new `Arc<Catalog>`), then swaps the
//! whole index in one step: a query takes the current index (an `Arc` clone under a read lock
//! held for a moment) and never waits for a rebuild. A server whose tools were never indexed is
//! indexed on the spot the first time a query needs it, so a search right after start-up sees
//! every connected server.
//!
//! A build runs on a thread of its own that ends with it: the index keeps a word table per
//! thread for its builds (megabytes for a catalog of ten thousand tools), which would otherwise
//! stay with whichever runtime thread last built an index, for as long as that thread lives.
//! The documents given to the index are made on that thread too, from the catalog's kept text,
//! and what the build freed is returned to the system once it is over.
//!
//! What a caller may not see never reaches the ranking: tools hidden by a config override or
//! denied by a server's policy are left out of the index, and a scoped token's visibility is
//! applied by the search before ranking and before counting the catalog.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tool_cli_search::doc::ToolDoc;
use tool_cli_search::index::Index;
use tool_cli_search::priors::{Priors, ToolRef};

use crate::catalog::Catalog;
use crate::pipeline::Slot;

/// The index and what each shard was built from.
pub(crate) struct ToolSearch {
    index: RwLock<Arc<Index>>,
    /// Per server, the catalog its shard was built from (compared by pointer).
    built_from: Mutex<HashMap<String, Arc<Catalog>>>,
}

impl ToolSearch {
    pub(crate) fn new() -> ToolSearch {
        ToolSearch {
            index: RwLock::new(Arc::new(Index::new())),
            built_from: Mutex::new(HashMap::new()),
        }
    }

    /// The current index.
    pub(crate) fn current(&self) -> Arc<Index> {
        Arc::clone(&self.index.read().unwrap())
    }

    /// Whether some server has tools but none of them indexed: never indexed, or indexed while
    /// it had no tools yet (still connecting when a first query came). A later change of a
    /// server with indexed tools is the background task's business: queries do not wait for it.
    pub(crate) fn has_unindexed(&self, slots: &[Arc<Slot>]) -> bool {
        let built = self.built_from.lock().unwrap();
        slots.iter().any(|slot| {
            !slot.upstream.catalog().is_empty()
                && built
                    .get(&slot.upstream.info().name)
                    .is_none_or(|indexed| indexed.is_empty())
        })
    }

    /// Rebuilds the shards of servers whose catalog changed, and drops servers that are gone.
    pub(crate) fn refresh(&self, slots: &[Arc<Slot>]) {
        let mut built = self.built_from.lock().unwrap();
        let mut fresh: Vec<(&Arc<Slot>, Arc<Catalog>)> = Vec::new();
        for slot in slots {
            let catalog = slot.upstream.catalog();
            if built
                .get(&slot.upstream.info().name)
                .is_some_and(|previous| Arc::ptr_eq(previous, &catalog))
            {
                continue;
            }
            fresh.push((slot, catalog));
        }
        let gone: Vec<String> = built
            .keys()
            .filter(|name| !slots.iter().any(|slot| &slot.upstream.info().name == *name))
            .cloned()
            .collect();
        if fresh.is_empty() && gone.is_empty() {
            return;
        }
        let current = self.current();
        let build =
            || current.with_servers(fresh.iter().map(|(slot, catalog)| docs(slot, catalog)));
        let mut index = std::thread::scope(|scope| {
            match std::thread::Builder::new()
                .name("tool-search-build".to_owned())
                .spawn_scoped(scope, build)
            {
                // Joined here, so the thread has ended, its word table with it.
                Ok(thread) => thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                // No thread to be had: build here, at the cost of keeping the word table.
                Err(err) => {
                    tracing::warn!(%err, "cannot start a thread for the search index build");
                    build()
                }
            }
        });
        let fresh: Vec<(String, Arc<Catalog>)> = fresh
            .into_iter()
            .map(|(slot, catalog)| (slot.upstream.info().name.clone(), catalog))
            .collect();
        for name in &gone {
            index = index.without_server(name);
            built.remove(name);
        }
        built.extend(fresh);
        let previous = std::mem::replace(&mut *self.index.write().unwrap(), Arc::new(index));
        drop(previous);
        // Building a shard of thousands of tools leaves megabytes of freed scratch memory.
        crate::memory::release_freed();
    }
}

/// The search documents of a server's tools: those not hidden by an override nor denied by
/// its policy.
fn docs(slot: &Slot, catalog: &Catalog) -> (String, Vec<ToolDoc>) {
    let info = slot.upstream.info();
    let docs = catalog
        .tools()
        .iter()
        .filter(|tool| !tool.hidden && info.settings.policy.permits_tool(&tool.name))
        .map(|tool| {
            ToolDoc::from_mcp_tool(
                &info.name,
                &tool.json(),
                info.description.as_deref(),
                &info.tags,
            )
        })
        .collect();
    (info.name.clone(), docs)
}

/// Keeps `search` current while `changes` ticks; ends when the provider goes away.
pub(crate) async fn follow_changes(
    search: Arc<ToolSearch>,
    slots: impl Fn() -> Arc<Vec<Arc<Slot>>> + Send + 'static,
    mut changes: tokio::sync::watch::Receiver<u64>,
) {
    loop {
        // Several changes in a burst (a server restarting) are one rebuild.
        if changes.changed().await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        changes.borrow_and_update();
        let search = Arc::clone(&search);
        let slots = slots();
        // Building is CPU work: keep it off the runtime's workers.
        if tokio::task::spawn_blocking(move || search.refresh(&slots))
            .await
            .is_err()
        {
            return;
        }
    }
}

/// The reliability of a tool never called: the smoothed success rate's prior.
const NEUTRAL_RELIABILITY: f32 = 2.0 / 3.0;

/// The latency score of a tool never called: as if it answered in a second.
const NEUTRAL_LATENCY: f32 = 0.5;

/// The evidence ranking may use beyond the text: per-tool reliability and latency from the
/// pipeline's statistics, and what tends to follow the session's last tool.
pub(crate) struct DaemonPriors {
    /// `(server, tool)` → (reliability in [0, 1], latency score in [0, 1]).
    stats: HashMap<(String, String), (f32, f32)>,
    /// `(server, tool)` → share of the session's transitions from its last tool.
    followers: HashMap<(String, String), f32>,
}

impl DaemonPriors {
    pub(crate) fn new(
        slots: &[Arc<Slot>],
        followers: HashMap<(String, String), f32>,
    ) -> DaemonPriors {
        let mut stats = HashMap::new();
        for slot in slots {
            let server = &slot.upstream.info().name;
            let table = slot.guards.tools.lock().unwrap();
            for (tool, tool_stats) in table.iter() {
                let latency = tool_stats
                    .percentiles()
                    .map_or(0.0, |(p50, _, _)| 1.0 / (1.0 + p50 / 1000.0));
                stats.insert(
                    (server.clone(), tool.clone()),
                    (tool_stats.reliability() as f32, latency as f32),
                );
            }
        }
        DaemonPriors { stats, followers }
    }
}

impl Priors for DaemonPriors {
    fn inertia(&self, _previous: ToolRef<'_>, candidate: ToolRef<'_>) -> f32 {
        self.followers
            .get(&(candidate.server.to_owned(), candidate.tool.to_owned()))
            .copied()
            .unwrap_or(0.0)
    }

    // A tool never called gets the neutral values (a smoothed success rate of 2/3, a second's
    // latency), not zero: the priors reorder tools by what is known of them, and must not favour
    // a tool merely for having been called before.
    fn reliability(&self, candidate: ToolRef<'_>) -> f32 {
        self.stats
            .get(&(candidate.server.to_owned(), candidate.tool.to_owned()))
            .map_or(NEUTRAL_RELIABILITY, |&(reliability, _)| reliability)
    }

    fn latency(&self, candidate: ToolRef<'_>) -> f32 {
        self.stats
            .get(&(candidate.server.to_owned(), candidate.tool.to_owned()))
            .map_or(NEUTRAL_LATENCY, |&(_, latency)| latency)
    }
}
