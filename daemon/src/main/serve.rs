//! Serving: the pool, the services and the endpoint built from a checked config, run until
//! a signal, then shut down in order (traces flushed, servers stopped, runtime file removed).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tool_cli_daemon::auth::{Token, TokenStore};
use tool_cli_daemon::config;
use tool_cli_daemon::config::traces as trace_settings;
use tool_cli_daemon::edge::SpillStore;
use tool_cli_daemon::pool::{Pool, PoolOptions};
use tool_cli_daemon::provider::ToolProvider;
use tool_cli_daemon::redact::SharedSecrets;
use tool_cli_daemon::runtime_file;
use tool_cli_daemon::server::{Listener, ServeOptions};
use tool_cli_daemon::services::{ServerManager, ServiceOptions, Services};
use tool_cli_daemon::trace::Traces;
use tool_cli_protocol::runtime::RuntimeFile;

use crate::args::Cli;
use crate::fail;
use crate::listen::Endpoint;
use crate::ready::{self, Announcement};
use crate::signals;

/// Runs the daemon on the bound endpoint until SIGTERM or SIGINT, then stops it in order; the
/// exit code says how serving ended.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn serve(
    cli: Cli,
    config: config::Config,
    config_path: Option<PathBuf>,
    traces: Option<trace_settings::TraceSettings>,
    telemetry: Option<(tool_cli_daemon::otel::Telemetry, bool)>,
    token: Token,
    listener: Listener,
    endpoint: Endpoint,
    self_exe: PathBuf,
    secrets: SharedSecrets,
) -> ExitCode {
    let (host, port, socket) = match &endpoint {
        Endpoint::Tcp(local) => {
            if !local.ip().is_loopback() {
                tracing::warn!(
                    address = %local,
                    "listening beyond loopback: other machines can reach this port; requests \
                     still need the token and a Host named with --allow-host, and the token \
                     travels unencrypted"
                );
            }
            // A client on this machine reaches an address bound on every interface through
            // loopback, under a name the Host check accepts.
            let reachable = match local.ip() {
                std::net::IpAddr::V4(ip) if ip.is_unspecified() => {
                    std::net::Ipv4Addr::LOCALHOST.to_string()
                }
                std::net::IpAddr::V6(ip) if ip.is_unspecified() => {
                    std::net::Ipv6Addr::LOCALHOST.to_string()
                }
                ip => ip.to_string(),
            };
            (reachable, local.port(), None)
        }
        Endpoint::Socket(path) => (
            "localhost".to_owned(),
            0,
            Some(path.to_string_lossy().into_owned()),
        ),
    };
    tracing::info!(
        address = %socket.clone().unwrap_or_else(|| format!("{host}:{port}")),
        config = %config.source,
        servers = config.servers.len(),
        "tool-cli-daemon starting"
    );
    // Who we are, for clients to check locally instead of asking (see `DaemonId`).
    let daemon_id = runtime_file::own_daemon_id();
    let runtime_guard = match runtime_file::write(
        &runtime_file::default_dir(),
        &RuntimeFile {
            host,
            port,
            token: token.expose().to_owned(),
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            socket: socket.clone(),
            daemon_id: daemon_id.clone(),
        },
    ) {
        Ok(guard) => guard,
        Err(err) => {
            tracing::warn!(%err, "no runtime file; clients need TOOL_CLI_PORT and TOOL_CLI_TOKEN");
            None
        }
    };

    // Sampling requests of servers with `allowSampling` go to the agent's backend, when it is
    // one that writes text (not the offline planner).
    let sampler = match tool_cli_agent::Agent::new(config.agent.clone()) {
        Ok(agent) => {
            match tool_cli_daemon::sampling::Sampler::from_agent(&agent, |name| {
                std::env::var(name).ok()
            }) {
                Ok(sampler) => sampler.map(Arc::new),
                Err(error) => {
                    tracing::warn!(%error, "sampling requests will be declined: the agent backend cannot be built");
                    None
                }
            }
        }
        Err(_) => None,
    };
    let pool = Pool::new(
        &config,
        PoolOptions {
            sampler,
            max_message_bytes: cli.max_message_bytes,
            // Every stdio server runs under `tool-cli-daemon subreaper`, so that what it detaches
            // dies with it (see `subreaper.rs`).
            subreaper: cfg!(target_os = "linux").then_some(self_exe.clone()),
            state_dir: tool_cli_daemon::config::state_dir(&|name| std::env::var(name).ok()),
            // The store `tool-cli pin` writes (same location rule): every catalog is checked
            // against it, and a changed pinned tool is held back (docs/pinning.md).
            pins: Some(tool_cli_daemon::pool::pins::PinGuard::new(
                tool_cli_protocol::runtime::pin_store_path(|name| std::env::var(name).ok()),
            )),
            ..PoolOptions::default()
        },
    );
    let traces = traces.map(|settings| {
        tracing::info!(path = %settings.path.display(), verbose = settings.verbose, "tracing calls");
        Traces::start(settings, tool_cli_daemon::config::config_secrets(&config))
    });
    let mut services = Services::builder(
        Arc::clone(&pool) as Arc<dyn ToolProvider>,
        Arc::new(TokenStore::new(token.clone())),
    )
    .options(ServiceOptions {
        sessions: tool_cli_daemon::services::SessionLimits {
            max_calls: config.sessions.max_calls,
            max_wall: config.sessions.max_wall,
            ..Default::default()
        },
        gateway_flags: config.gateway_flags,
        agent: config.agent.clone(),
        search: tool_cli_daemon::config::search::SearchSettings::resolve(&config.search, &|name| {
            std::env::var(name).ok()
        }),
        ..ServiceOptions::default()
    })
    .remote_auth(pool.remote_auth())
    .secrets(secrets.clone())
    .manager(Arc::new(ServerManager::new(
        Arc::clone(&pool),
        config.clone(),
        config_path,
        self_exe,
        Arc::new(|name: &str| std::env::var(name).ok()),
        secrets,
    )));
    if let Some(traces) = &traces {
        services = services.traces(Arc::clone(traces));
    }
    if let Some((telemetry, capture_content)) = &telemetry {
        let health = telemetry.health();
        tracing::info!(
            traces = health.traces_endpoint.as_deref().unwrap_or("off"),
            metrics = health.metrics_endpoint.as_deref().unwrap_or("off"),
            "exporting OpenTelemetry"
        );
        services = services.telemetry(telemetry.clone(), *capture_content);
    }
    let services = services.build();
    // Installed before anything is announced, so a SIGHUP never finds its default action
    // (which would end the daemon).
    let hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup());
    let reloader = tokio::spawn(signals::reload_on_hangup(Arc::clone(&services), hangups));

    // Connect the servers while the endpoint already serves (requests for a server still
    // connecting wait for it); announce readiness once they have settled as --ready-when asks.
    let starter = tokio::spawn(ready::announce_when_ready(
        Arc::clone(&pool),
        Arc::clone(&services),
        cli.ready_when.for_pool(),
        Announcement {
            port,
            socket,
            token: token.clone(),
            daemon_id,
            print_env: cli.print_env,
        },
    ));

    let served = tool_cli_daemon::server::run(
        listener,
        Arc::clone(&services),
        signals::shutdown_signal(),
        ServeOptions {
            grace: Duration::from_millis(cli.shutdown_grace_ms),
            max_body_bytes: cli.max_body_bytes,
            allowed_origins: cli.allowed_origins.clone(),
            allowed_hosts: cli.allowed_hosts.clone(),
            max_response_bytes: cli.max_response_bytes.unwrap_or(cli.max_message_bytes),
            spill_dir: SpillStore::default_dir(&runtime_file::default_dir()),
            spill_ttl: Duration::from_millis(cli.spill_ttl_ms),
            // Clients that found our `DaemonId` alive trust our port without a proof: nobody
            // else may hold it while this process lives.
            hold_port_until_exit: true,
            idle_shutdown: (cli.idle_shutdown_secs > 0)
                .then(|| Duration::from_secs(cli.idle_shutdown_secs)),
        },
    )
    .await;
    starter.abort();
    reloader.abort();
    // The last calls' lines are still queued: give the writer a moment to put them on disk.
    if let Some(traces) = &traces {
        traces.flush(Duration::from_secs(2)).await;
    }
    pool.shutdown().await;
    // The last spans (the servers' shutdown included) go out within a bound.
    if let Some((telemetry, _)) = &telemetry {
        telemetry.shutdown(Duration::from_secs(2)).await;
    }
    drop(runtime_guard);
    if let Endpoint::Socket(path) = &endpoint {
        let _ = std::fs::remove_file(path);
    }
    match served {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(err) => fail(1, format!("serving failed: {err}")),
    }
}
