//! The supervisor of each server: connect, wait for the connection to end, then restart it after
//! a backoff, park it `down` and probe it on a slow schedule, or start it again at once on an
//! operator's request (`restartServer`).
//!
//! The decisions (when to restart, when to park, when to probe) are the pure
//! [`RestartTracker`]'s; this is the loop that carries them out, one task per enabled server.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::child::{ChildProcess, Launch};
use super::connection::{self, Connection};
use super::oversized::OversizedAnswers;
use super::raw_results::RawResults;
use super::stdio::{StdioParts, StdioTransport};
use super::{Pool, Published, Server, Status, http};
use crate::config::TransportConfig;
use crate::resilience::backoff::random_jitter;
use crate::resilience::restart::{Decision, RestartTracker};

/// Why the supervisor stopped waiting on a live connection.
enum ConnectionEnd {
    /// The connection ended by itself (exit, crash, oversized message, recycled).
    Ended,
    /// The daemon is shutting down.
    Shutdown,
    /// `restartServer` asked for a new connection.
    RestartRequested,
}

impl Pool {
    /// Connects, watches and restarts one server until the daemon shuts down. A server that
    /// keeps failing is parked `down` and probed on a slow schedule; a restart request
    /// (`restartServer`) cuts any wait short, replaces a live connection, and forgets the
    /// restart history.
    #[tracing::instrument(skip_all, fields(server = %server.config.name))]
    pub(super) async fn supervise(
        self: Arc<Self>,
        server: Arc<Server>,
        first_settled: oneshot::Sender<()>,
    ) {
        let mut first_settled = Some(first_settled);
        let mut tracker = RestartTracker::new(self.options.restart);
        // Set at shutdown for every server, and for this one alone when it is removed or
        // replaced (`lifecycle.rs`).
        let mut shutdown = server.stop.subscribe();
        let mut restart_requests = server.restart_requested.subscribe();
        loop {
            // This attempt answers every restart request made so far.
            let generation = *restart_requests.borrow_and_update();
            // A probe of a parked server stays `down` until it connects: callers are refused at
            // once rather than kept waiting on a server that is probably still broken.
            if !tracker.is_parked() {
                server.set_status(Status::Connecting);
            }
            let started = Instant::now();
            // Dropping a connection attempt (on shutdown) drops its child, which kills its group.
            let connected = tokio::select! {
                connected = self.connect(&server) => connected,
                _ = shutdown.wait_for(|stop| *stop) => Err("the daemon is shutting down".to_owned()),
            };
            let reason = match connected {
                Ok((connection, done)) => {
                    tracing::info!(
                        tools = server.published.catalog.borrow().len(),
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "server ready"
                    );
                    // A probe that connects ends the park.
                    if tracker.is_parked() {
                        tracker.reset();
                    }
                    *server.ready_since.lock().unwrap() = Some(Instant::now());
                    server.needs_login.store(false, Ordering::Relaxed);
                    server.set_status(Status::Ready(Arc::clone(&connection)));
                    server.settle(&mut first_settled, generation);
                    let end = tokio::select! {
                        _ = done => ConnectionEnd::Ended,
                        _ = shutdown.wait_for(|stop| *stop) => ConnectionEnd::Shutdown,
                        _ = restart_requests.changed() => ConnectionEnd::RestartRequested,
                    };
                    *server.ready_since.lock().unwrap() = None;
                    match end {
                        ConnectionEnd::Shutdown => {
                            connection.close().await;
                            server.set_status(Status::Exited("stopped by the daemon".to_owned()));
                            return;
                        }
                        ConnectionEnd::RestartRequested => {
                            tracing::info!("restarting server on request");
                            connection.close().await;
                            tracker.reset();
                            server.restarts.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        ConnectionEnd::Ended => {}
                    }
                    let reason = connection.describe_end().await;
                    // The stream may have ended with the child still alive (an oversized
                    // message): stop its whole group before starting another.
                    if let Some(process) = &connection.process {
                        process.stop().await;
                    }
                    tracing::warn!(%reason, "server connection ended");
                    reason
                }
                Err(error) => {
                    // A server that waits for a sign-in gets one WARN below, naming the command.
                    if !self
                        .remote_auth
                        .server(&server.config.name)
                        .is_some_and(|auth| auth.waits_for_login())
                    {
                        tracing::warn!(%error, "server failed to start");
                    }
                    error
                }
            };
            // It goes into `listServers`, `health` and errors, to callers of any scope.
            let reason = server.secrets.clean(&reason);
            if *shutdown.borrow() {
                server.set_status(Status::Exited(reason));
                return;
            }
            // A server that needs a sign-in (`tool-cli auth login`) is not retried on a timer:
            // nothing changes until the user signs in, which restarts it.
            let waits_for_login = self
                .remote_auth
                .server(&server.config.name)
                .is_some_and(|auth| auth.waits_for_login());
            server.needs_login.store(waits_for_login, Ordering::Relaxed);
            let (status, delay) = if waits_for_login {
                tracing::warn!(%reason, "server waits for a sign-in");
                (Status::Down(reason), None)
            } else {
                let (status, delay) = match tracker.record_exit(
                    Instant::now(),
                    started.elapsed(),
                    random_jitter(),
                ) {
                    Decision::RestartAfter(delay) => {
                        tracing::info!(delay_ms = delay.as_millis() as u64, "restarting server");
                        (Status::Restarting(reason), delay)
                    }
                    Decision::Park { probe_after } => {
                        let restarts = server.restarts.load(Ordering::Relaxed);
                        tracing::error!(
                            restarts,
                            %reason,
                            probe_in_s = probe_after.as_secs(),
                            "server keeps failing; parked as down"
                        );
                        let status = Status::Down(format!(
                            "{reason} (gave up after {restarts} restarts; trying again in {} s, \
                             or now with `tool-cli server restart {}`)",
                            probe_after.as_secs(),
                            server.config.name
                        ));
                        (status, probe_after)
                    }
                };
                (status, Some(delay))
            };
            server.set_status(status);
            server.settle(&mut first_settled, generation);
            tokio::select! {
                _ = async {
                    match delay {
                        Some(delay) => tokio::time::sleep(delay).await,
                        None => std::future::pending().await,
                    }
                } => {}
                _ = restart_requests.changed() => {
                    tracing::info!("restarting server on request");
                    tracker.reset();
                }
                _ = shutdown.wait_for(|stop| *stop) => {
                    // Whoever stops a server waits for `Exited`: a parked server, or one waiting
                    // for a sign-in, stops as surely as one between restarts.
                    server.status.send_modify(|status| {
                        if let Status::Restarting(reason) | Status::Down(reason) = status {
                            *status = Status::Exited(std::mem::take(reason));
                        }
                    });
                    server.published.changed();
                    return;
                }
            }
            server.restarts.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Connects once; a server that has just refused the handshake for the stateless
    /// revision (`era.rs`) is connected again at once with `server/discover`, not after a
    /// restart delay: nothing failed, the pool learned the server's era.
    async fn connect(
        &self,
        server: &Server,
    ) -> Result<(Arc<Connection>, connection::ServiceDone), String> {
        let known_stateless = server.published.learned_stateless.load(Ordering::Relaxed);
        match self.connect_once(server).await {
            Err(why)
                if !known_stateless
                    && server.published.learned_stateless.load(Ordering::Relaxed) =>
            {
                tracing::info!(%why, "server speaks only the stateless protocol");
                self.connect_once(server).await
            }
            done => done,
        }
    }

    async fn connect_once(
        &self,
        server: &Server,
    ) -> Result<(Arc<Connection>, connection::ServiceDone), String> {
        let published = Arc::clone(&server.published);
        match &server.config.transport {
            TransportConfig::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                self.connect_stdio(
                    &server.config.name,
                    published,
                    command,
                    args,
                    env,
                    cwd.as_ref(),
                )
                .await
            }
            TransportConfig::Http {
                url,
                headers,
                remote,
            } => {
                http::connect(
                    &server.config.name,
                    published,
                    http::Remote {
                        url,
                        headers,
                        options: remote,
                        auth: self.remote_auth.server(&server.config.name),
                        secrets: Arc::clone(&server.secrets),
                    },
                    self.options.max_message_bytes,
                )
                .await
            }
        }
    }

    async fn connect_stdio(
        &self,
        name: &str,
        published: Arc<Published>,
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        cwd: Option<&PathBuf>,
    ) -> Result<(Arc<Connection>, connection::ServiceDone), String> {
        let (process, stdout, stdin) = ChildProcess::spawn(
            name,
            &Launch {
                command,
                args,
                env,
                cwd,
                subreaper: self.options.subreaper.as_deref(),
            },
        )
        .map_err(|err| format!("cannot start \"{command}\": {err}"))?;
        let process = Arc::new(process);
        let raw = Arc::new(RawResults::default());
        let oversized = Arc::new(OversizedAnswers::new(self.options.max_message_bytes));
        let stream_closed = Arc::new(Mutex::new(None));
        let mut transport = StdioTransport::new(
            name,
            StdioParts {
                stdout,
                stdin,
                max_message_bytes: self.options.max_message_bytes,
                raw: Arc::clone(&raw),
                oversized: Arc::clone(&oversized),
                closed: Arc::clone(&stream_closed),
                exited: process.exit_watch(),
            },
        );
        transport.declare_client_tasks(connection::client_tasks_capability(
            &published.server_requests,
        ));
        let direct = transport.direct();
        let established = connection::establish(
            name,
            published,
            transport,
            connection::Extras {
                raw: Some(raw),
                direct: Some(direct),
                process: Some(Arc::clone(&process)),
                stream_closed: Arc::clone(&stream_closed),
                auth_refused: None,
                oversized: Some(oversized),
                // A stdio server has no address and no session.
                address: None,
                session: None,
            },
        )
        .await;
        match established {
            Ok(connected) => Ok(connected),
            Err(error) => {
                // Say how the child ended if that is why the handshake failed.
                let exit = process.wait_exit(Duration::from_millis(300)).await;
                process.stop().await;
                // Its last lines may still be on their way through the pipe.
                process
                    .stderr
                    .drained_within(Duration::from_millis(300))
                    .await;
                // Under the subreaper, a command that cannot be run is reported on stderr.
                if let Some(line) = process
                    .stderr
                    .tail(5)
                    .iter()
                    .find_map(|line| line.strip_prefix(crate::subreaper::SPAWN_FAILED))
                {
                    return Err(format!("cannot start{line}"));
                }
                let mut message = error;
                if let Some(exit) = exit
                    && !message.contains(&exit.description)
                {
                    message = format!("{message}; the process ended with {}", exit.description);
                }
                let tail = process.stderr.tail(5);
                if !tail.is_empty() {
                    message = format!("{message}; last stderr: {}", tail.join(" | "));
                }
                Err(message)
            }
        }
    }
}
