//! Servers added, replaced and removed while the daemon runs (`addServer`, `removeServer`,
//! `reloadConfig`, SIGHUP).
//!
//! The set of servers is swapped whole, so a caller always sees a consistent list. A server
//! taken out of the set (removed, or replaced by one with a new config) first drains: the calls
//! already running on it finish (it counts them, [`InFlight`]), at most for a given time; then its
//! supervisor is told to stop, which closes the connection and stops the child's whole process
//! group. Servers left alone keep their connection and their calls. Deciding *what* changes is
//! the pure diff in `crate::manage`; this is only how the pool carries it out.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};

use super::{Pool, Server, Status};
use crate::config::ServerConfig;
use crate::redact::Secrets;

/// How many calls are running on a server, and a way to wait until none is.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

/// One call running; dropped when it ends.
pub(super) struct InFlightGuard<'a>(&'a InFlight);

impl InFlight {
    pub(super) fn enter(&self) -> InFlightGuard<'_> {
        self.count.fetch_add(1, Ordering::AcqRel);
        InFlightGuard(self)
    }

    fn current(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Resolves once no call is running.
    async fn idle(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            // Registered before the check, so a call ending in between is not missed.
            notified.as_mut().enable();
            if self.current() == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// What [`Pool::put`] did.
pub struct Put {
    /// The server it replaced, which the caller retires.
    pub replaced: Option<Arc<Server>>,
    /// Told when the new server's first attempt settles (`None` for a disabled server).
    pub first: Option<oneshot::Receiver<()>>,
}

/// How a server taken out of the set ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retired {
    /// Calls still running when the drain time ran out (0: every call finished).
    pub abandoned_calls: usize,
}

/// Why a server cannot be put into the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PutError {
    /// The pool is stopping its servers; nothing new starts.
    #[error("the daemon is shutting down")]
    ShuttingDown,
}

impl Pool {
    /// Starts `server`'s supervisor unless it has one; answers when its first attempt settles.
    pub(super) fn supervise_once(
        self: &Arc<Self>,
        server: &Arc<Server>,
    ) -> Option<oneshot::Receiver<()>> {
        if !server.config.enabled || server.supervised.swap(true, Ordering::AcqRel) {
            return None;
        }
        let (settled, settled_rx) = oneshot::channel();
        let pool = Arc::clone(self);
        let server = Arc::clone(server);
        self.supervisors
            .lock()
            .unwrap()
            .spawn(async move { pool.supervise(server, settled).await });
        Some(settled_rx)
    }

    /// Whether a server of this name is in the set.
    pub fn contains(&self, name: &str) -> bool {
        self.servers()
            .iter()
            .any(|server| server.config.name == name)
    }

    /// Adds a server for `config` (or, if one has its name, puts it in that one's place) and
    /// starts it; `secrets` are every configured secret after the change. Refused once the pool
    /// is shutting down.
    pub fn put(
        self: &Arc<Self>,
        config: &ServerConfig,
        secrets: Arc<Secrets>,
    ) -> Result<Put, PutError> {
        if *self.shutdown.borrow() {
            return Err(PutError::ShuttingDown);
        }
        let server = Server::new(
            config,
            secrets,
            Arc::clone(&self.changes),
            self.notices.clone(),
            self.options.sampler.clone(),
            self.options.pins.clone(),
        );
        // Its OAuth state first: the first connection attempt sends its token.
        self.remote_auth.put(config);
        let replaced = {
            let mut servers = self.servers.write().unwrap();
            let mut next = servers.as_ref().clone();
            let replaced = match next.iter().position(|s| s.config.name == config.name) {
                Some(index) => Some(std::mem::replace(&mut next[index], Arc::clone(&server))),
                None => {
                    next.push(Arc::clone(&server));
                    None
                }
            };
            *servers = Arc::new(next);
            replaced
        };
        if let Some(old) = &replaced {
            self.retiring.lock().unwrap().push(Arc::clone(old));
        }
        let first = self.supervise_once(&server);
        self.announce();
        Ok(Put { replaced, first })
    }

    /// Takes the server `name` out of the set (it takes no new calls); the caller retires it.
    pub fn take_out(&self, name: &str) -> Option<Arc<Server>> {
        let taken = {
            let mut servers = self.servers.write().unwrap();
            let index = servers.iter().position(|s| s.config.name == name)?;
            let mut next = servers.as_ref().clone();
            let taken = next.remove(index);
            *servers = Arc::new(next);
            taken
        };
        self.remote_auth.remove(name);
        self.retiring.lock().unwrap().push(Arc::clone(&taken));
        self.announce();
        Some(taken)
    }

    /// Lets the calls running on `server` finish, for at most `drain`, then stops it and waits
    /// until its connection is closed and its process group stopped.
    pub async fn retire(&self, server: Arc<Server>, drain: Duration) -> Retired {
        let name = server.config.name.clone();
        let drained = tokio::time::timeout(drain, server.in_flight.idle())
            .await
            .is_ok();
        let abandoned_calls = if drained {
            0
        } else {
            server.in_flight.current()
        };
        if abandoned_calls > 0 {
            tracing::warn!(
                server = %name,
                abandoned_calls,
                "calls still running after the drain time; stopping the server anyway"
            );
        }
        server.stop.send_replace(true);
        if server.supervised.load(Ordering::Acquire) {
            let mut status = server.status.subscribe();
            let _ = status
                .wait_for(|status| matches!(status, Status::Exited(_) | Status::Disabled))
                .await;
        }
        self.retiring
            .lock()
            .unwrap()
            .retain(|retiring| !Arc::ptr_eq(retiring, &server));
        tracing::info!(server = %name, "server stopped and taken out");
        Retired { abandoned_calls }
    }

    /// Tells whoever follows the pool's changes (tool search) that the set changed.
    pub(crate) fn announce(&self) {
        self.changes.send_modify(|generation| *generation += 1);
    }
}
