//! Which log events of our dependencies the daemon drops whatever `RUST_LOG` says, and why. Pure:
//! a target and a level in, keep or drop out; `main.rs` installs it as a `tracing` filter.
//!
//! - jsonrpsee traces at TRACE what it handles (its server crate, no longer built, traced whole
//!   HTTP requests, `Authorization` header included; its method table traces params and
//!   answers): a token or a secret in a call must never reach the log.
//! - rmcp logs an ERROR (`worker quit with fatal: …`) each time a Streamable HTTP connection
//!   ends on an error, a 401 or 403 included, with the server's whole `WWW-Authenticate` header.
//!   The daemon logs the same end once, as a WARN of its own that names the server and what to do
//!   (`tool-cli auth login SERVER` for a 401), so rmcp's line only repeats it, louder and vaguer.
//!   Its DEBUG lines from the same place stay.
//! - rmcp logs every notification a server sends at INFO (`received notification`, with the
//!   whole message): a server flooding notifications would flood the log past the daemon's own
//!   per-server budget (`pool::log_budget`). The daemon logs what matters of a server's life
//!   itself (ready, exited, restarted), so rmcp's INFO lines from `rmcp::service` are dropped;
//!   its DEBUG lines stay for whoever asks for them.

use tracing::Level;

/// Whether an event of `target` at `level` may be logged.
pub fn keep(target: &str, level: Level) -> bool {
    if target.starts_with("jsonrpsee") && level == Level::TRACE {
        return false;
    }
    if target == "rmcp::transport::worker" && level == Level::ERROR {
        return false;
    }
    if target.starts_with("rmcp::service") && level == Level::INFO {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonrpsee_traces_rmcp_worker_errors_and_rmcp_service_info_are_dropped_and_nothing_else() {
        assert!(!keep("jsonrpsee-server", Level::TRACE));
        assert!(keep("jsonrpsee-server", Level::DEBUG));
        assert!(!keep("rmcp::transport::worker", Level::ERROR));
        assert!(keep("rmcp::transport::worker", Level::DEBUG));
        assert!(keep("rmcp::service", Level::ERROR));
        assert!(
            !keep("rmcp::service", Level::INFO),
            "one line per notification"
        );
        assert!(keep("rmcp::service", Level::DEBUG));
        assert!(keep("tool_cli_daemon::pool::supervisor", Level::ERROR));
    }
}
