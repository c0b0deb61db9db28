//! Signals: SIGHUP reloads the config, SIGTERM or SIGINT begins a graceful shutdown.

use std::sync::Arc;

use tool_cli_daemon::services::Services;

/// Reloads the config file on every SIGHUP; a file that does not load is logged and changes
/// nothing.
pub(crate) async fn reload_on_hangup(
    services: Arc<Services>,
    hangups: std::io::Result<tokio::signal::unix::Signal>,
) {
    let Ok(mut hangups) = hangups else {
        tracing::warn!("cannot install the SIGHUP handler; reload with `tool-cli config reload`");
        return;
    };
    while hangups.recv().await.is_some() {
        tracing::info!("SIGHUP received: reloading the config");
        match services.reload_config().await {
            Ok(result) => {
                for problem in &result.failed {
                    tracing::warn!(
                        server = %problem.server,
                        state = problem.state.as_str(),
                        error = problem.error.as_deref().unwrap_or(""),
                        "server not ready after the reload"
                    );
                }
                for note in &result.notes {
                    tracing::info!("{note}");
                }
            }
            Err(error) => tracing::error!(%error, "config reload refused"),
        }
    }
}

/// Resolves on the first SIGTERM or SIGINT.
pub(crate) async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; stop the daemon with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received"),
        _ = int.recv() => tracing::info!("SIGINT received"),
    }
}
