//! The embedding thread: loads the sentence-embedding model, then keeps the index's model
//! vectors current without ever blocking a query.
//!
//! One thread per daemon (named `tool-search-embed`, at a lower CPU priority than the runtime),
//! woken whenever the index's shards change. A pass takes the texts of every indexed tool,
//! attaches at once the vectors the cache already holds, then embeds the others in batches
//! (`Embedder::embed_batch`), attaching each batch as it is done; a change of catalog in the
//! middle of a pass starts a new pass after the current batch (nothing embedded is lost: it is in
//! the cache). When a pass completes the cache is written to disk if anything was added.
//!
//! The thread holds the search only weakly between passes: when the daemon drops it, the wake
//! channel closes and the thread ends.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Weak};

use tool_cli_search::embed::Embedding;

use super::cache::{self, Key, VectorCache};
use super::model::{self, LoadError, LoadedModel};
use super::{Phase, ToolSearch};
use crate::config::search::ModelLocation;

/// Texts embedded per batch: large enough for a model to batch its matrix products, small
/// enough that vectors reach the index every few seconds on a loaded machine.
const BATCH: usize = 16;

/// How a pass ended.
enum Pass {
    /// Every tool of the shards of this rebuild generation has its vector.
    Complete(u64),
    /// The catalog changed during the pass: start over.
    Interrupted,
    /// The search is gone.
    Gone,
}

/// The thread's body.
pub(super) fn run(
    search: Weak<ToolSearch>,
    wake: Receiver<()>,
    location: ModelLocation,
    cache_dir: Option<PathBuf>,
) {
    lower_priority();
    let loaded = match model::load(&location.dir) {
        Ok(loaded) => loaded,
        Err(error) => {
            report_load_failure(&location, &error);
            if let Some(search) = search.upgrade() {
                search.set_status(|status| {
                    status.phase = Phase::Failed;
                    status.last_error = Some(format!("{error}; {}", model::INSTALL_HINT));
                });
            }
            return;
        }
    };
    tracing::info!(dir = %location.dir.display(), "tool search model loaded");
    match search.upgrade() {
        Some(search) => search.install_model(Arc::clone(&loaded.embedder)),
        None => return,
    }
    let cache_path = cache_dir.map(|dir| cache::path_in(&dir));
    let mut worker = Worker {
        loaded,
        cache: cache_path.as_deref().map(cache::load).unwrap_or_default(),
        cache_path,
        dirty: false,
        embedded_here: HashSet::new(),
        from_disk: HashSet::new(),
    };
    loop {
        let pass = match search.upgrade() {
            Some(search) => worker.pass(&search, &wake),
            None => Pass::Gone,
        };
        match pass {
            Pass::Gone => return,
            Pass::Interrupted => continue,
            Pass::Complete(generation) => {
                worker.save();
                match search.upgrade() {
                    // A rebuild since the pass began has queued a wake: the next pass is due.
                    Some(search) => search.set_status(|status| {
                        if status.generation == generation {
                            status.phase = Phase::Ready;
                            status.pass_complete = true;
                        }
                    }),
                    None => return,
                }
            }
        }
        // Sleep until the shards change (or the search is dropped, which closes the channel).
        if wake.recv().is_err() {
            return;
        }
        while wake.try_recv().is_ok() {}
    }
}

/// One warning for a model that was asked for and cannot be used; a note at `info` when the
/// default place simply holds none.
fn report_load_failure(location: &ModelLocation, error: &LoadError) {
    let not_installed = matches!(
        error,
        LoadError::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound
    );
    if location.asked || !not_installed {
        tracing::warn!(
            dir = %location.dir.display(),
            %error,
            "no tool search model: searchTools ranks lexically with the hashing embedder; {}",
            model::INSTALL_HINT
        );
    } else {
        tracing::info!(
            dir = %location.dir.display(),
            "no tool search model installed: searchTools ranks lexically with the hashing \
             embedder; {}",
            model::INSTALL_HINT
        );
    }
}

/// The embedding thread's state between passes.
struct Worker {
    loaded: LoadedModel,
    cache: VectorCache,
    cache_path: Option<PathBuf>,
    /// Whether the cache holds vectors the file does not.
    dirty: bool,
    /// The keys this daemon embedded, and those it found in the disk cache (for `health`).
    embedded_here: HashSet<Key>,
    from_disk: HashSet<Key>,
}

/// One server's tools as a pass sees them.
struct ServerTexts {
    server: String,
    built: super::Built,
    keys: Vec<Key>,
}

impl Worker {
    fn pass(&mut self, search: &ToolSearch, wake: &Receiver<()>) -> Pass {
        let now = cache::now();
        let (generation, snapshot) = search.built_snapshot();
        let servers: Vec<ServerTexts> = snapshot
            .into_iter()
            .map(|(server, built)| {
                let keys = built
                    .texts
                    .iter()
                    .map(|text| cache::key(&self.loaded.fingerprint, text))
                    .collect();
                ServerTexts {
                    server,
                    built,
                    keys,
                }
            })
            .collect();
        let mut vectors: HashMap<Key, Embedding> = HashMap::new();
        let mut missing: Vec<(Key, &str)> = Vec::new();
        let mut seen: HashSet<Key> = HashSet::new();
        for server in &servers {
            for (key, text) in server.keys.iter().zip(server.built.texts.iter()) {
                if !seen.insert(*key) {
                    continue;
                }
                match self.cache.get(key, now) {
                    Some(values) => {
                        if !self.embedded_here.contains(key) {
                            self.from_disk.insert(*key);
                        }
                        vectors.insert(*key, Embedding::normalized(values));
                    }
                    None => missing.push((*key, text)),
                }
            }
        }
        let attach_all = |vectors: &HashMap<Key, Embedding>| {
            for server in &servers {
                let rows: Vec<Option<&Embedding>> =
                    server.keys.iter().map(|key| vectors.get(key)).collect();
                search.attach(&server.server, &server.built, &rows);
            }
        };
        attach_all(&vectors);
        search.set_status(|status| {
            status.cached = self.from_disk.len();
            status.embedded = self.embedded_here.len();
        });
        if !missing.is_empty() {
            tracing::debug!(tools = missing.len(), "embedding tools for search");
        }
        for batch in missing.chunks(BATCH) {
            let texts: Vec<&str> = batch.iter().map(|(_, text)| *text).collect();
            let embedded = self.loaded.embedder.embed_batch(&texts);
            for ((key, _), embedding) in batch.iter().zip(embedded) {
                self.cache.insert(*key, embedding.values(), now);
                self.embedded_here.insert(*key);
                vectors.insert(*key, embedding);
            }
            self.dirty = true;
            attach_all(&vectors);
            search.set_status(|status| status.embedded = self.embedded_here.len());
            match wake.try_recv() {
                Ok(()) => return Pass::Interrupted,
                Err(TryRecvError::Disconnected) => return Pass::Gone,
                Err(TryRecvError::Empty) => {}
            }
        }
        Pass::Complete(generation)
    }

    /// Writes the cache if it changed, after dropping entries unused for long.
    fn save(&mut self) {
        let Some(path) = &self.cache_path else {
            return;
        };
        if !self.dirty {
            return;
        }
        self.cache.evict(cache::now(), cache::MAX_ENTRIES);
        match cache::save(path, &self.cache) {
            Ok(()) => self.dirty = false,
            Err(error) => tracing::warn!(
                path = %path.display(),
                %error,
                "cannot write the search vector cache; the next start embeds again"
            ),
        }
    }
}

/// Embedding competes with queries and calls for the CPU; it is the one that can wait.
fn lower_priority() {
    // SAFETY: `setpriority` on this thread's id only reads its arguments. Linux applies the
    // nice value to the one thread; a failure leaves the priority as it was.
    #[cfg(target_os = "linux")]
    unsafe {
        let thread = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, thread as libc::id_t, 10);
    }
}
