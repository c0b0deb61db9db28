//! The transport: our own accept loop over a TCP or Unix listener, hyper HTTP/1.1 per
//! connection, and the dispatch (`dispatch.rs`) as each connection's service.
//!
//! Owning the loop (instead of a server crate's) is what gives us a header-read
//! timeout (slow-loris clients are dropped), a connection cap that refuses at accept time, the
//! same code for TCP and Unix sockets, and graceful shutdown: stop accepting, let requests in
//! flight finish within the grace period, answer those still running with a shutdown error, then
//! return so the caller can close the pool. `main` and the tests call the same [`run`] with a
//! listener on `127.0.0.1:0`.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;

use crate::edge::dispatch::{Dispatch, MethodTable};
use crate::edge::gate::{Gate, MetricsPage};
use crate::edge::spill::SpillStore;
use crate::pipeline::CallContext;
use crate::services::Services;

/// Most connections at once. Every agent process on the machine may hold one, and a slow tool
/// call holds one for its whole duration; beyond this, new connections are closed at once.
const MAX_CONNECTIONS: usize = 1024;

/// How long a client may take to send a request's head; slower connections are dropped.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// After the grace period, how long requests still running get to write the shutdown error
/// they were just given before their connections are dropped.
const LAST_ANSWER_WINDOW: Duration = Duration::from_secs(2);

/// How often expired spilled answers are removed, at most.
const SPILL_SWEEP_INTERVAL: Duration = Duration::from_secs(30);

/// Where the daemon listens.
#[derive(Debug)]
pub enum Listener {
    /// Loopback TCP: the `Host` check applies.
    Tcp(std::net::TcpListener),
    /// A Unix socket: reachable only through the file system, and only by the same user.
    Unix(std::os::unix::net::UnixListener),
}

/// Settings of the transport.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// How long requests in flight get to finish after the shutdown signal.
    pub grace: Duration,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// `Origin` values allowed (browser pages); empty refuses every request with an `Origin`.
    pub allowed_origins: Vec<String>,
    /// Host names accepted in `Host` (with our port) besides the loopback ones, for clients that
    /// reach a daemon bound beyond loopback under another name (a container's
    /// `host.docker.internal`). Not used on a Unix socket.
    pub allowed_hosts: Vec<String>,
    /// Largest result sent in one response (a batch's entries share it); larger `callTool` and
    /// `readResource` results are spilled to a file, others refused with `-32008`.
    pub max_response_bytes: usize,
    /// Where spilled answers are saved (a directory only we can enter, created on first use).
    pub spill_dir: std::path::PathBuf,
    /// How long a spilled answer is kept.
    pub spill_ttl: Duration,
    /// Keep the listening socket bound after shutdown starts, closing every new connection at
    /// once, until the runtime ends (the process exits), so that no other program can take the
    /// address while this process lives. The daemon sets it: clients that find its `DaemonId`
    /// alive send the token without the identity proof.
    pub hold_port_until_exit: bool,
    /// Shut down after this long with no connection open (`--idle-shutdown-secs`): a daemon
    /// started on first use does not outlive its use. `None`: never.
    pub idle_shutdown: Option<Duration>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            grace: Duration::from_secs(10),
            max_body_bytes: crate::edge::shape::DEFAULT_MAX_BODY_BYTES,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_response_bytes: crate::edge::answer::DEFAULT_MAX_RESPONSE_BYTES,
            spill_dir: SpillStore::default_dir(&crate::runtime_file::default_dir()),
            spill_ttl: crate::edge::spill::DEFAULT_TTL,
            hold_port_until_exit: false,
            idle_shutdown: None,
        }
    }
}

trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Stream for T {}

/// Serves the protocol on `listener` until `shutdown` resolves, then drains for up to
/// `options.grace`.
pub async fn run(
    listener: Listener,
    services: Arc<Services>,
    shutdown: impl Future<Output = ()>,
    options: ServeOptions,
) -> std::io::Result<()> {
    let (hosts, own_origins) = match &listener {
        Listener::Tcp(listener) => {
            let port = listener.local_addr()?.port();
            (
                Gate::hosts(port, &options.allowed_hosts),
                Gate::own_origins(port),
            )
        }
        Listener::Unix(_) => (Vec::new(), Vec::new()),
    };
    let (grace_over, grace_over_receiver) = tokio::sync::watch::channel(false);
    // Turns `true` as soon as shutdown starts: every connection shuts down gracefully (it ends
    // once its request in flight is answered), and the gateway's standalone streams end at once
    // (a connection drains only when its response ends, and those never would by themselves).
    let (shutting_down, shutting_down_receiver) = tokio::sync::watch::channel(false);
    let gate = Arc::new(Gate {
        tokens: Arc::clone(services.tokens()),
        hosts,
        origins: options.allowed_origins.clone(),
        own_origins,
        max_body_bytes: options.max_body_bytes,
        metrics: {
            let metrics = Arc::clone(&services.metrics);
            MetricsPage(Arc::new(move |grant| {
                metrics.page(&CallContext::new(grant.clone()))
            }))
        },
        mcp: Some(Arc::new(crate::edge::gateway::Endpoint::new(
            Arc::clone(&services),
            grace_over_receiver.clone(),
            shutting_down_receiver,
            options.grace.as_millis() as u64,
        ))),
    });
    if let Some(runtime_dir) = options.spill_dir.parent() {
        let removed = crate::edge::spill::remove_stale(runtime_dir);
        if removed > 0 {
            tracing::info!(removed, "removed spilled answers left by stopped daemons");
        }
    }
    let spill = Arc::new(SpillStore::new(
        options.spill_dir.clone(),
        options.spill_ttl,
    ));
    let sweeper = {
        let spill = Arc::clone(&spill);
        let every = options
            .spill_ttl
            .min(SPILL_SWEEP_INTERVAL)
            .max(Duration::from_millis(10));
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            loop {
                ticks.tick().await;
                let spill = Arc::clone(&spill);
                let _ = tokio::task::spawn_blocking(move || spill.sweep(SystemTime::now())).await;
            }
        })
    };
    let answers = crate::edge::rpc::Answers {
        max_response_bytes: options.max_response_bytes,
        spill: Arc::clone(&spill),
        grace_over: grace_over_receiver,
        grace_ms: options.grace.as_millis() as u64,
        listener: match &listener {
            Listener::Tcp(_) => tool_cli_telemetry::spans::Listener::Tcp,
            Listener::Unix(_) => tool_cli_telemetry::spans::Listener::Unix,
        },
    };
    let methods = MethodTable::new(crate::edge::rpc::module(services, answers));
    let dispatch = Dispatch::new(gate, methods, options.max_body_bytes);
    // Numbers the connections, for the methods' `ConnectionId`.
    let mut connections_accepted = 0usize;

    enum Accepting {
        Tcp(tokio::net::TcpListener),
        Unix(tokio::net::UnixListener),
    }
    let accepting = match listener {
        Listener::Tcp(listener) => {
            listener.set_nonblocking(true)?;
            Accepting::Tcp(tokio::net::TcpListener::from_std(listener)?)
        }
        Listener::Unix(listener) => {
            listener.set_nonblocking(true)?;
            Accepting::Unix(tokio::net::UnixListener::from_std(listener)?)
        }
    };
    let accept = || async {
        match &accepting {
            Accepting::Tcp(listener) => listener.accept().await.map(|(stream, _)| {
                let _ = stream.set_nodelay(true);
                Box::new(stream) as Box<dyn Stream>
            }),
            Accepting::Unix(listener) => {
                let (stream, _) = listener.accept().await?;
                // Only our own user may talk to us, whatever the socket's mode says.
                let same_user = stream
                    .peer_cred()
                    .is_ok_and(|cred| cred.uid() == unsafe { libc::getuid() });
                if !same_user {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::PermissionDenied,
                        "a peer of another user",
                    ));
                }
                Ok(Box::new(stream) as Box<dyn Stream>)
            }
        }
    };

    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut tasks = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    // Idle shutdown: when the last connection opened or closed, in milliseconds since `started`.
    let started = tokio::time::Instant::now();
    let last_activity = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let idle_check = tokio::time::sleep(options.idle_shutdown.unwrap_or(Duration::MAX / 4));
    tokio::pin!(idle_check);
    loop {
        let stream = tokio::select! {
            () = &mut idle_check, if options.idle_shutdown.is_some() => {
                let idle = options.idle_shutdown.unwrap_or_default();
                let last = started
                    + Duration::from_millis(last_activity.load(std::sync::atomic::Ordering::Acquire));
                let open = MAX_CONNECTIONS - connections.available_permits();
                let now = tokio::time::Instant::now();
                if open == 0 && now >= last + idle {
                    tracing::info!(idle_secs = idle.as_secs(), "idle: no connection for the idle shutdown time; shutting down");
                    break;
                }
                // Look again when the quiet could first have lasted long enough.
                idle_check.as_mut().reset(if open == 0 { last + idle } else { now + idle });
                continue;
            }
            accepted = accept() => match accepted {
                Ok(stream) => stream,
                Err(error) => {
                    tracing::debug!(%error, "accept failed");
                    // Out of file descriptors and the like: back off instead of spinning.
                    if !matches!(error.kind(), std::io::ErrorKind::PermissionDenied) {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    continue;
                }
            },
            () = &mut shutdown => break,
            // Reap finished connections so the set does not grow.
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
        };
        let Ok(permit) = Arc::clone(&connections).try_acquire_owned() else {
            tracing::warn!(
                limit = MAX_CONNECTIONS,
                "connection limit reached; closing a new connection"
            );
            continue;
        };
        connections_accepted = connections_accepted.wrapping_add(1);
        let service = dispatch.for_connection(connections_accepted);
        let mut shutdown_started = shutting_down.subscribe();
        let stopped = async move {
            // An error means the sender is gone, which happens only once `run` returns.
            let _ = shutdown_started.wait_for(|started| *started).await;
        };
        let activity = Arc::clone(&last_activity);
        let since_start = move || started.elapsed().as_millis() as u64;
        activity.store(since_start(), std::sync::atomic::Ordering::Release);
        tasks.spawn(async move {
            // Dropped when the connection ends, however it ends: the quiet starts then.
            let _activity = scopeguard_on_drop(move || {
                activity.store(since_start(), std::sync::atomic::Ordering::Release)
            });
            let _permit = permit;
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection, stopped);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = &mut stopped => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }

    tracing::info!("shutting down: no new requests; draining those in flight");
    let _ = shutting_down.send(true);
    if options.hold_port_until_exit {
        // Refuse what still arrives by closing it; the task (and the socket) ends with the
        // runtime, when the process exits.
        tokio::spawn(async move {
            loop {
                let refused = match &accepting {
                    Accepting::Tcp(listener) => listener.accept().await.map(drop),
                    Accepting::Unix(listener) => listener.accept().await.map(drop),
                };
                if refused.is_err() {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        });
    } else {
        drop(accepting);
    }
    let drained = tokio::time::timeout(options.grace, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            grace_ms = options.grace.as_millis() as u64,
            "requests still in flight after the grace period; answering them with a shutdown \
             error"
        );
        // Each request still running answers at once; its connection then closes (graceful
        // shutdown was asked for). Only a connection that cannot even take that is dropped.
        let _ = grace_over.send(true);
        let answered = tokio::time::timeout(LAST_ANSWER_WINDOW, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if answered.is_err() {
            tasks.abort_all();
        }
    }
    sweeper.abort();
    spill.remove_all();
    Ok(())
}

/// Runs `action` when the returned value is dropped.
fn scopeguard_on_drop(action: impl FnOnce()) -> impl Drop {
    struct OnDrop<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for OnDrop<F> {
        fn drop(&mut self) {
            if let Some(action) = self.0.take() {
                action();
            }
        }
    }
    OnDrop(Some(action))
}
