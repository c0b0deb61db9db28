//! Readiness: wait until the servers have settled as `--ready-when` asks, then say so in the
//! log and, with `--print-env`, print the variables a shell `eval`s and let go of stdout.

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use tool_cli_daemon::auth::Token;
use tool_cli_daemon::pool::{Pool, ReadyWhen};
use tool_cli_daemon::services::Services;
use tool_cli_protocol::env;

/// The longest `--ready-when all` waits for tool search's model to embed the catalog.
const SEARCH_READY_TIMEOUT: Duration = Duration::from_secs(120);

/// How a client reaches the daemon, as `--print-env` prints it.
pub(crate) struct Announcement {
    /// The TCP port (0 on a Unix socket).
    pub(crate) port: u16,
    /// The Unix socket's path, when the daemon listens on one.
    pub(crate) socket: Option<String>,
    pub(crate) token: Token,
    /// Who we are (see `DaemonId`), when it could be told.
    pub(crate) daemon_id: Option<String>,
    /// Whether to print the variables (`--print-env`).
    pub(crate) print_env: bool,
}

/// Connects the servers until `ready_when` is met (with `all`, also waits a bounded time for
/// tool search's model to embed the catalog), then announces readiness. Runs while the
/// endpoint already serves (requests for a server still connecting wait for it).
pub(crate) async fn announce_when_ready(
    pool: Arc<Pool>,
    services: Arc<Services>,
    ready_when: ReadyWhen,
    announcement: Announcement,
) {
    pool.start_until(ready_when).await;
    // `all` also waits for tool search's model to embed the catalog (bounded), so a harness
    // that searches at once gets the model's ranking.
    if ready_when == ReadyWhen::All && !services.search_ready(SEARCH_READY_TIMEOUT).await {
        tracing::warn!(
            seconds = SEARCH_READY_TIMEOUT.as_secs(),
            "the tool search model has not embedded every tool yet; ready anyway, searchTools \
             ranks lexically until it has"
        );
    }
    tracing::info!(port = announcement.port, "ready");
    if announcement.print_env {
        print_env(&announcement);
        // Close our end of stdout so `eval "$(tool-cli-daemon --print-env &)"` sees EOF
        // and returns while the daemon keeps running. Nothing else writes to stdout.
        release_stdout();
    }
}

/// `--print-env`: the `export` lines for a POSIX shell.
fn print_env(announcement: &Announcement) {
    let mut stdout = std::io::stdout().lock();
    match &announcement.socket {
        Some(path) => {
            let _ = writeln!(stdout, "export {}={}", env::SOCKET, shell_quote(path));
        }
        None => {
            let _ = writeln!(stdout, "export {}={}", env::PORT, announcement.port);
        }
    }
    let _ = writeln!(
        stdout,
        "export {}={}",
        env::TOKEN,
        announcement.token.expose()
    );
    if let Some(daemon_id) = &announcement.daemon_id {
        let _ = writeln!(stdout, "export {}={}", env::DAEMON_ID, daemon_id);
    }
    let _ = stdout.flush();
}

/// Quotes a path for a POSIX shell's `eval`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Points stdout at /dev/null, closing the pipe a harness may be reading to its end.
fn release_stdout() {
    if let Ok(devnull) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        use std::os::fd::AsRawFd as _;
        // SAFETY: dup2 onto fd 1 with a valid, open descriptor; std's stdout handle stays
        // usable (it now writes to /dev/null).
        unsafe {
            libc::dup2(devnull.as_raw_fd(), libc::STDOUT_FILENO);
        }
    }
}
