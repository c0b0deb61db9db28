//! The pin store as the daemon reads it: where it is, what it last said, and the check of one
//! server's catalog against it (`docs/pinning.md`).
//!
//! The store is read again every time a catalog is built (each listing: connect, reconnect,
//! `list_changed`) and on `reloadPins` (which `tool-cli pin`, `pin approve` and `pin remove`
//! send after writing it), so an approval or a hand edit takes effect at the next of either.
//! The file is small next to a listing, and reading it is what makes "the store as it is now"
//! true without a file watcher. A store that exists but cannot be trusted fails closed: every
//! server's tools are held back with the store's error until it is fixed (the daemon cannot tell
//! which servers a corrupt store pinned). The decision is `catalog::pin_hold`, pure.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde_json::Value;
use tool_cli_gateway_core::pin::ItemKind;
use tool_cli_gateway_core::pin::store::PinStore;

use crate::catalog::Catalog;
use crate::catalog::pin_hold::{HeldBack, PinSource, decide};
use crate::catalog::pin_items::{ItemHold, decide_instructions, decide_items};

/// What the store said when it was last read.
#[derive(Debug)]
pub enum StoreState {
    /// No store (no file, or no place for one): nothing is pinned.
    Absent,
    /// The store, read and checked.
    Loaded(PinStore),
    /// The file exists but cannot be trusted; why, naming the file and the fix.
    Untrusted(String),
}

/// The daemon's pin store.
#[derive(Debug)]
pub struct PinGuard {
    path: Option<PathBuf>,
    state: RwLock<Arc<StoreState>>,
}

impl PinGuard {
    /// The guard of the store at `path` (`None`: no place for one, nothing is pinned), read now.
    pub fn new(path: Option<PathBuf>) -> Arc<PinGuard> {
        let guard = PinGuard {
            path,
            state: RwLock::new(Arc::new(StoreState::Absent)),
        };
        guard.reload();
        Arc::new(guard)
    }

    /// Where the store is.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Reads the store again; answers what it says now.
    pub fn reload(&self) -> Arc<StoreState> {
        let state = match &self.path {
            None => StoreState::Absent,
            Some(path) => match PinStore::load(path) {
                Ok(None) => StoreState::Absent,
                Ok(Some(store)) => StoreState::Loaded(store),
                Err(error) => {
                    tracing::error!(%error, "the pin store cannot be trusted; every tool is held back");
                    StoreState::Untrusted(error.to_string())
                }
            },
        };
        let state = Arc::new(state);
        *self.state.write().unwrap() = Arc::clone(&state);
        state
    }

    /// What the store said when it was last read.
    pub fn state(&self) -> Arc<StoreState> {
        Arc::clone(&self.state.read().unwrap())
    }

    /// Checks `catalog` of `server` against `state` and marks what it holds back; answers
    /// whether the server is under the check (pinned, or every server when the store cannot be
    /// trusted).
    pub fn check(server: &str, catalog: &Catalog, state: &StoreState) -> bool {
        let source = Self::source(server, state);
        let checked = !matches!(source, PinSource::NotPinned);
        let tools = if checked {
            catalog.pin_checked_tools()
        } else {
            Vec::new()
        };
        let hold = decide(server, tools, source);
        for (tool, held) in hold.held_tools() {
            tracing::warn!(
                server,
                tool,
                reason = held.reason.word(),
                "tool held back by its pin"
            );
        }
        for tool in hold.vanished() {
            tracing::warn!(server, tool, "pinned tool no longer listed");
        }
        catalog.apply_pin_hold(hold);
        checked
    }
}

impl PinGuard {
    /// What `state` says of `server`.
    pub fn source<'a>(server: &str, state: &'a StoreState) -> PinSource<'a> {
        match state {
            StoreState::Absent => PinSource::NotPinned,
            StoreState::Loaded(store) => match store.server(server) {
                Some(pins) => PinSource::Pinned(pins),
                None => PinSource::NotPinned,
            },
            StoreState::Untrusted(why) => PinSource::Untrusted(why),
        }
    }
}

impl super::Published {
    /// What the pin check holds back of the `items` of `kind` (prompts or resource templates)
    /// `server` just listed, against the store as it was last read (each catalog build and
    /// `reloadPins` read it: prompts are listed on every request, too often to read it each
    /// time).
    pub(crate) fn item_hold(&self, server: &str, kind: ItemKind, items: &[Value]) -> ItemHold {
        let Some(guard) = &self.pins else {
            return ItemHold::default();
        };
        let state = guard.state();
        let hold = decide_items(server, kind, items, PinGuard::source(server, &state));
        for (name, held) in hold.held_items() {
            tracing::warn!(
                server,
                item = name,
                kind = kind.word(),
                reason = held.reason.word(),
                "held back by its pin"
            );
        }
        hold
    }

    /// Whether the pin check can hold back any of `server`'s prompts or templates: it is
    /// pinned, or the store cannot be trusted.
    pub(crate) fn pins_hold_items(&self, server: &str) -> bool {
        self.pins.as_ref().is_some_and(|guard| {
            let state = guard.state();
            !matches!(PinGuard::source(server, &state), PinSource::NotPinned)
        })
    }

    /// Whether the pin check holds back the `instructions` `server` sent in its handshake.
    pub(crate) fn instructions_hold(
        &self,
        server: &str,
        instructions: Option<&str>,
    ) -> Option<HeldBack> {
        let guard = self.pins.as_ref()?;
        let state = guard.state();
        decide_instructions(server, instructions, PinGuard::source(server, &state))
    }
}

impl super::Pool {
    /// Reads the pin store again and checks every server's catalog against it (`reloadPins`).
    pub fn reload_pins(&self) -> tool_cli_protocol::manage::PinStatusResult {
        use tool_cli_protocol::manage::{HeldTool, PinStatusResult, ServerPinStatus};
        let Some(guard) = &self.options.pins else {
            return PinStatusResult {
                store: None,
                error: Some(
                    "this daemon does not check pins (it was started without a pin store)"
                        .to_owned(),
                ),
                servers: Vec::new(),
            };
        };
        let state = guard.reload();
        let mut servers = Vec::new();
        for server in self.servers().iter() {
            let name = &server.config.name;
            if !server.published.recheck_pins(name, &state) {
                continue;
            }
            let hold = crate::provider::Upstream::catalog(server.as_ref()).pin_hold();
            servers.push(ServerPinStatus {
                server: name.clone(),
                held: hold
                    .held_tools()
                    .map(|(tool, held)| HeldTool {
                        tool: tool.to_owned(),
                        message: held.message.clone(),
                    })
                    .collect(),
                vanished: hold.vanished().to_vec(),
            });
        }
        PinStatusResult {
            store: guard.path().map(|path| path.display().to_string()),
            error: match state.as_ref() {
                StoreState::Untrusted(why) => Some(why.clone()),
                _ => None,
            },
            servers,
        }
    }
}
