//! `tool-cli auth login|status|logout`: signing in to remote servers that use OAuth 2.1. Pure:
//! clap's words become an [`AuthCommand`]; `run/auth.rs` carries it out.

use clap::Subcommand;

/// `tool-cli auth ...` as clap reads it.
#[derive(Debug, Subcommand)]
pub(crate) enum AuthAction {
    /// Sign in to a remote server over OAuth 2.1: prints the URL to open, then waits for the
    /// browser's redirect on a loopback port (or for the redirect URL pasted on stdin, for a
    /// browser on another machine)
    Login {
        /// The server's name, as in `tool-cli`'s list
        server: String,

        /// Do not try to open a browser; only print the URL
        #[arg(long)]
        no_browser: bool,
    },
    /// Show every remote server's sign-in state: authorized, needs login, expiry
    Status,
    /// Delete a remote server's tokens
    Logout {
        /// The server's name
        server: String,
    },
}

/// What `tool-cli auth ...` asks for, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthCommand {
    /// `auth login SERVER [--no-browser]`.
    Login {
        server: String,
        /// Try to open the URL in a browser (when a person is at a terminal).
        open_browser: bool,
    },
    /// `auth status`.
    Status,
    /// `auth logout SERVER`.
    Logout { server: String },
}

/// Converts clap's reading.
pub(crate) fn command(action: AuthAction) -> AuthCommand {
    match action {
        AuthAction::Login { server, no_browser } => AuthCommand::Login {
            server,
            open_browser: !no_browser,
        },
        AuthAction::Status => AuthCommand::Status,
        AuthAction::Logout { server } => AuthCommand::Logout { server },
    }
}
