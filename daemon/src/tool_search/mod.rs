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
//!
//! With a sentence-embedding model (`model.rs`, config `search.model`), a thread of its own
//! (`embedding.rs`) loads it and attaches the model's vectors of the tools to the index as they
//! are computed, through a disk cache (`cache.rs`); a query is embedded by the model on the
//! calling task, and ranked by it once every tool it may return has its vector (until then, by
//! the hashing embedder, and the answer says `pending`).

mod cache;
mod embedding;
mod model;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tool_cli_protocol::search::{SearchHealth, SearchModelState, SemanticRanking};
use tool_cli_search::doc::ToolDoc;
use tool_cli_search::embed::{Embedder, Embedding};
use tool_cli_search::index::{Index, embedding_texts};
use tool_cli_search::priors::{Priors, ToolRef};

use crate::catalog::Catalog;
use crate::config::search::SearchSettings;
use crate::pipeline::Slot;

/// What a server's shard was built from.
#[derive(Clone)]
pub(crate) struct Built {
    /// The catalog (compared by pointer: a new catalog is a new `Arc`).
    catalog: Arc<Catalog>,
    /// The texts the model embeds for the shard's tools, in the shard's order (empty without
    /// a model).
    texts: Arc<Vec<String>>,
}

/// Where the model is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Loading,
    Failed,
    Embedding,
    Ready,
}

/// The model's progress, for `health` and readiness.
#[derive(Debug, Clone)]
pub(crate) struct Status {
    phase: Phase,
    /// Whether the last pass embedded every indexed tool and no change came since.
    pass_complete: bool,
    /// Counts the index's rebuilds, so a pass knows whether the shards it embedded are still
    /// the current ones when it completes.
    generation: u64,
    embedded: usize,
    cached: usize,
    last_error: Option<String>,
}

impl Status {
    /// Whether readiness need not wait any longer: the model failed, or every tool indexed so
    /// far has its vector.
    fn settled(&self) -> bool {
        self.phase == Phase::Failed || (self.phase == Phase::Ready && self.pass_complete)
    }
}

/// The model side of the search, when a model is configured.
struct Semantic {
    dir: String,
    /// Whether `--ready-when all` waits for this model to embed the catalog: only when someone
    /// asked for it (the config or `TOOL_CLI_SEARCH_MODEL`). A model merely found in the
    /// default place (the user's data directory) loads in the background and never delays a
    /// daemon's readiness: a harness that did not ask for it must not wait seconds for it.
    readiness_waits: bool,
    /// Wakes the embedding thread when the shards change.
    wake: Mutex<std::sync::mpsc::Sender<()>>,
    status: tokio::sync::watch::Sender<Status>,
    /// The last queries' model vectors: an agent or a harness often asks the same thing again.
    query_memo: Mutex<HashMap<String, Embedding>>,
    /// How many queries the model is embedding now, at most `MAX_QUERY_EMBEDDINGS`: each takes
    /// a thread for ~10 ms of CPU, and a burst of a hundred queries must not become a hundred
    /// threads fighting over two cores.
    embedding_now: Mutex<Turns>,
    embedding_done: std::sync::Condvar,
}

/// The queries the model is embedding, and those waiting for a place.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Turns {
    running: usize,
    waiting: usize,
}

/// How many query vectors `Semantic::query_memo` keeps before it starts over.
const QUERY_MEMO_CAPACITY: usize = 1024;

/// The most queries the model embeds at once (the others wait their turn, a few milliseconds
/// each): one per core of a small machine, whatever the number of requests.
const MAX_QUERY_EMBEDDINGS: usize = 2;

/// One of the `MAX_QUERY_EMBEDDINGS` places to embed a query, held while the model runs and
/// given back on drop (a panic in the model included).
struct QueryTurn<'a> {
    semantic: &'a Semantic,
}

impl<'a> QueryTurn<'a> {
    /// Waits for a free place (blocking: called inside `block_in_place`) and takes it.
    fn take(semantic: &'a Semantic) -> QueryTurn<'a> {
        let mut turns = semantic
            .embedding_now
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        turns.waiting += 1;
        while turns.running >= MAX_QUERY_EMBEDDINGS {
            turns = semantic
                .embedding_done
                .wait(turns)
                .unwrap_or_else(|e| e.into_inner());
        }
        turns.waiting -= 1;
        turns.running += 1;
        QueryTurn { semantic }
    }
}

impl Drop for QueryTurn<'_> {
    fn drop(&mut self) {
        let mut turns = self
            .semantic
            .embedding_now
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        turns.running -= 1;
        self.semantic.embedding_done.notify_one();
    }
}

/// The index and what each shard was built from.
pub(crate) struct ToolSearch {
    index: RwLock<Arc<Index>>,
    /// Per server, what its shard was built from. Every swap of the index happens under this
    /// lock, so the embedding thread's attachments and the rebuilds never overwrite each other.
    built_from: Mutex<HashMap<String, Built>>,
    semantic: Option<Semantic>,
}

impl ToolSearch {
    /// A search without a model (the hashing embedder only).
    pub(crate) fn new() -> ToolSearch {
        ToolSearch {
            index: RwLock::new(Arc::new(Index::new())),
            built_from: Mutex::new(HashMap::new()),
            semantic: None,
        }
    }

    /// A search with the settings' model, if any: its thread starts loading it at once.
    pub(crate) fn start(settings: &SearchSettings) -> Arc<ToolSearch> {
        let Some(location) = settings.model.clone() else {
            return Arc::new(ToolSearch::new());
        };
        let (wake, woken) = std::sync::mpsc::channel();
        let (status, _) = tokio::sync::watch::channel(Status {
            phase: Phase::Loading,
            pass_complete: false,
            generation: 0,
            embedded: 0,
            cached: 0,
            last_error: None,
        });
        let search = Arc::new(ToolSearch {
            semantic: Some(Semantic {
                dir: location.dir.display().to_string(),
                readiness_waits: location.asked,
                wake: Mutex::new(wake),
                status,
                query_memo: Mutex::new(HashMap::new()),
                embedding_now: Mutex::new(Turns::default()),
                embedding_done: std::sync::Condvar::new(),
            }),
            ..ToolSearch::new()
        });
        let weak = Arc::downgrade(&search);
        let cache_dir = settings.cache_dir.clone();
        if let Err(error) = std::thread::Builder::new()
            .name("tool-search-embed".to_owned())
            .spawn(move || embedding::run(weak, woken, location, cache_dir))
        {
            tracing::warn!(%error, "cannot start the tool search model's thread; ranking lexically");
            search.set_status(|status| {
                status.phase = Phase::Failed;
                status.last_error = Some(format!("cannot start a thread: {error}"));
            });
        }
        search
    }

    /// Changes the model's status and tells whoever waits on it.
    fn set_status(&self, change: impl FnOnce(&mut Status)) {
        if let Some(semantic) = &self.semantic {
            semantic.status.send_modify(change);
        }
    }

    /// Gives the index its model (no tool vectors yet).
    fn install_model(&self, model: Arc<dyn Embedder>) {
        let _built = self.built_from.lock().unwrap();
        let next = self.current().with_model(model);
        *self.index.write().unwrap() = Arc::new(next);
        self.set_status(|status| status.phase = Phase::Embedding);
    }

    /// Every server's shard as built now, and the rebuild generation they are of.
    fn built_snapshot(&self) -> (u64, Vec<(String, Built)>) {
        let built = self.built_from.lock().unwrap();
        let generation = self
            .semantic
            .as_ref()
            .map_or(0, |semantic| semantic.status.borrow().generation);
        let servers = built
            .iter()
            .map(|(server, built)| (server.clone(), built.clone()))
            .collect();
        (generation, servers)
    }

    /// Attaches the model's vectors of `server`'s tools, if its shard is still the one built
    /// from `built` (a rebuild since then makes them another catalog's).
    fn attach(&self, server: &str, built: &Built, vectors: &[Option<&Embedding>]) {
        let current = self.built_from.lock().unwrap();
        if !current
            .get(server)
            .is_some_and(|now| Arc::ptr_eq(&now.catalog, &built.catalog))
        {
            return;
        }
        if let Some(next) = self.current().with_model_vectors(server, vectors) {
            *self.index.write().unwrap() = Arc::new(next);
        }
    }

    /// The model's vector of `query`, when the index has a model and every tool its vector
    /// (else the search ranks with the hashing embedder and the model's time would be wasted). The
    /// model takes 10–30 ms of CPU: on a multi-threaded runtime the calling worker hands its
    /// other tasks over first (`block_in_place`), so no other request waits for it.
    pub(crate) fn embed_query(&self, index: &Index, query: &str) -> Option<Embedding> {
        let semantic = self.semantic.as_ref()?;
        let model = index.model()?;
        // The model ranks only when every tool a query may return has its vector; until the
        // background pass has embedded them all, embedding the query would spend ~6 ms of CPU
        // (on a core the pass needs) for a ranking by the hashing embedder. (A query limited to
        // servers already embedded ranks lexically too, for the seconds the pass lasts.)
        let (embedded, tools) = index.model_coverage();
        if embedded == 0
            || embedded < tools
            || query.trim().is_empty()
            || query.len() > tool_cli_search::search::MAX_QUERY_BYTES
        {
            return None;
        }
        if let Some(known) = semantic.query_memo.lock().unwrap().get(query) {
            return Some(known.clone());
        }
        let embed = || {
            let _turn = QueryTurn::take(semantic);
            model.embed_query(query)
        };
        let multi_threaded = tokio::runtime::Handle::try_current().is_ok_and(|runtime| {
            runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
        });
        let embedding = if multi_threaded {
            tokio::task::block_in_place(embed)
        } else {
            embed()
        };
        let mut memo = semantic.query_memo.lock().unwrap();
        if memo.len() >= QUERY_MEMO_CAPACITY {
            memo.clear();
        }
        memo.insert(query.to_owned(), embedding.clone());
        Some(embedding)
    }

    /// What a search of `index` says ranked it when it ranked nothing.
    pub(crate) fn idle_ranking(&self, index: &Index) -> SemanticRanking {
        if index.model().is_some() || self.is_loading() {
            SemanticRanking::Pending
        } else {
            SemanticRanking::Hashing
        }
    }

    /// Whether a model is configured and still loading (its answers are `pending`, not
    /// `hashing`: the model is on its way).
    pub(crate) fn is_loading(&self) -> bool {
        self.semantic
            .as_ref()
            .is_some_and(|semantic| semantic.status.borrow().phase == Phase::Loading)
    }

    /// The model's state for `health`; `None` without a model.
    pub(crate) fn health(&self) -> Option<SearchHealth> {
        let semantic = self.semantic.as_ref()?;
        let status = semantic.status.borrow().clone();
        let (with_vectors, tools) = self.current().model_coverage();
        Some(SearchHealth {
            model: match status.phase {
                Phase::Loading => SearchModelState::Loading,
                Phase::Failed => SearchModelState::Failed,
                Phase::Embedding => SearchModelState::Embedding,
                Phase::Ready if status.pass_complete => SearchModelState::Ready,
                Phase::Ready => SearchModelState::Embedding,
            },
            dir: Some(semantic.dir.clone()),
            tools,
            with_vectors,
            embedded: status.embedded,
            cached: status.cached,
            last_error: status.last_error,
        })
    }

    /// Waits until every indexed tool has its model vector (or the model failed), at most
    /// `timeout`; `false` when the time ran out. Returns at once without a model, and for a
    /// model nobody asked for (found in the default place), which embeds in the background.
    pub(crate) async fn until_embedded(&self, timeout: Duration) -> bool {
        let Some(semantic) = self
            .semantic
            .as_ref()
            .filter(|semantic| semantic.readiness_waits)
        else {
            return true;
        };
        let mut status = semantic.status.subscribe();
        tokio::time::timeout(timeout, status.wait_for(Status::settled))
            .await
            .is_ok()
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
                    .is_none_or(|indexed| indexed.catalog.is_empty())
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
                .is_some_and(|previous| Arc::ptr_eq(&previous.catalog, &catalog))
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
        let with_texts = self.semantic.is_some();
        let build = || {
            let mut texts = Vec::with_capacity(fresh.len());
            let index = current.with_servers(fresh.iter().map(|(slot, catalog)| {
                let (server, docs) = docs(slot, catalog);
                texts.push(Arc::new(if with_texts {
                    embedding_texts(&docs)
                } else {
                    Vec::new()
                }));
                (server, docs)
            }));
            (index, texts)
        };
        let (mut index, texts) = std::thread::scope(|scope| {
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
        let fresh: Vec<(String, Built)> = fresh
            .into_iter()
            .zip(texts)
            .map(|((slot, catalog), texts)| {
                (slot.upstream.info().name.clone(), Built { catalog, texts })
            })
            .collect();
        for name in &gone {
            index = index.without_server(name);
            built.remove(name);
        }
        // A rebuilt shard's tools whose text did not change keep the vectors they had (a
        // server's `list_changed`, a reconnect): only new or changed tools wait for the model.
        for (server, now) in &fresh {
            if let Some(before) = built.get(server) {
                index = carry_vectors(index, &current, server, &before.texts, &now.texts);
            }
        }
        built.extend(fresh);
        let previous = std::mem::replace(&mut *self.index.write().unwrap(), Arc::new(index));
        drop(previous);
        // New or changed tools have no model vectors yet: wake the embedding thread, and make
        // readiness wait for it again.
        if let Some(semantic) = &self.semantic {
            semantic.status.send_modify(|status| {
                status.generation += 1;
                status.pass_complete = false;
                if status.phase == Phase::Ready {
                    status.phase = Phase::Embedding;
                }
            });
            let _ = semantic.wake.lock().unwrap().send(());
        }
        // Building a shard of thousands of tools leaves megabytes of freed scratch memory.
        crate::memory::release_freed("building the search index");
    }
}

/// `index` with the model vectors `previous` holds for `server`'s tools whose embedded text is
/// in both `before` and `now` (each list in its shard's order) attached at their new places.
fn carry_vectors(
    index: Index,
    previous: &Index,
    server: &str,
    before: &[String],
    now: &[String],
) -> Index {
    if before.is_empty() || now.is_empty() {
        return index;
    }
    let places: HashMap<&str, usize> = before
        .iter()
        .enumerate()
        .map(|(local, text)| (text.as_str(), local))
        .collect();
    let vectors: Vec<Option<Embedding>> = now
        .iter()
        .map(|text| {
            let local = *places.get(text.as_str())?;
            previous.model_vector(server, local)
        })
        .collect();
    if vectors.iter().all(Option::is_none) {
        return index;
    }
    let borrowed: Vec<Option<&Embedding>> = vectors.iter().map(Option::as_ref).collect();
    index.with_model_vectors(server, &borrowed).unwrap_or(index)
}

/// The search documents of a server's tools: those not hidden by an override nor denied by
/// its policy. Tools the pin check holds back are indexed and filtered out at query time
/// (`discovery/search.rs`), since an approval lets them through without a new catalog.
fn docs(slot: &Slot, catalog: &Catalog) -> (String, Vec<ToolDoc>) {
    let info = slot.upstream.info();
    let docs = catalog
        .tools()
        .iter()
        .filter(|tool| !tool.hidden && info.settings.policy.permits_tool(tool.name()))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn semantic() -> Semantic {
        semantic_in(Phase::Ready, true)
    }

    fn semantic_in(phase: Phase, readiness_waits: bool) -> Semantic {
        let (wake, _) = std::sync::mpsc::channel();
        let (status, _) = tokio::sync::watch::channel(Status {
            phase,
            pass_complete: phase == Phase::Ready,
            generation: 0,
            embedded: 0,
            cached: 0,
            last_error: None,
        });
        Semantic {
            dir: "test".to_owned(),
            readiness_waits,
            wake: Mutex::new(wake),
            status,
            query_memo: Mutex::new(HashMap::new()),
            embedding_now: Mutex::new(Turns::default()),
            embedding_done: std::sync::Condvar::new(),
        }
    }

    /// A model found in the default place (the user's data directory, nobody asked for it)
    /// never holds up readiness while it loads: issue 26 measured 8.2 s instead of 0.3 s for
    /// every daemon once the model sat in the home directory. A model the config or the
    /// environment asked for is waited for (paused time: the wait runs out at once when idle).
    #[tokio::test(start_paused = true)]
    async fn readiness_waits_for_a_loading_model_only_when_it_was_asked_for() {
        let found_by_default = ToolSearch {
            semantic: Some(semantic_in(Phase::Loading, false)),
            ..ToolSearch::new()
        };
        assert!(
            found_by_default
                .until_embedded(Duration::from_secs(120))
                .await
        );
        let asked_for = ToolSearch {
            semantic: Some(semantic_in(Phase::Loading, true)),
            ..ToolSearch::new()
        };
        assert!(!asked_for.until_embedded(Duration::from_secs(120)).await);
        assert!(
            ToolSearch::new()
                .until_embedded(Duration::from_secs(120))
                .await
        );
    }

    fn turns(semantic: &Semantic) -> Turns {
        *semantic.embedding_now.lock().unwrap()
    }

    /// A burst of queries becomes at most `MAX_QUERY_EMBEDDINGS` model runs at once; the rest
    /// wait for a place and get it as soon as one is given back.
    #[test]
    fn at_most_two_queries_embed_at_once_and_the_others_wait_their_turn() {
        let semantic = semantic();
        let first = QueryTurn::take(&semantic);
        let second = QueryTurn::take(&semantic);
        assert_eq!(
            turns(&semantic),
            Turns {
                running: 2,
                waiting: 0
            }
        );
        std::thread::scope(|scope| {
            let (taken, was_taken) = std::sync::mpsc::channel();
            let waiters: Vec<_> = (0..3)
                .map(|_| {
                    let taken = taken.clone();
                    let semantic = &semantic;
                    scope.spawn(move || {
                        let turn = QueryTurn::take(semantic);
                        taken.send(()).unwrap();
                        drop(turn);
                    })
                })
                .collect();
            // Wait (on the state, not a clock) until all three are waiting.
            while turns(&semantic).waiting < 3 {
                std::thread::yield_now();
            }
            assert_eq!(
                turns(&semantic).running,
                2,
                "no third query runs while two do"
            );
            assert!(was_taken.try_recv().is_err());
            // Giving one place back lets the waiters through, one at a time.
            drop(first);
            for _ in 0..3 {
                was_taken.recv().unwrap();
            }
            for waiter in waiters {
                waiter.join().unwrap();
            }
        });
        drop(second);
        assert_eq!(turns(&semantic), Turns::default());
    }
}
