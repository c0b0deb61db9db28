//! The daemon's command line: flags, subcommands and their parsers (clap).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use tool_cli_daemon::pool::PoolOptions;
use tool_cli_protocol::env;

/// `--ready-when`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ReadyWhen {
    First,
    All,
    None,
}

impl ReadyWhen {
    /// The pool's readiness rule this flag names.
    pub(crate) fn for_pool(self) -> tool_cli_daemon::pool::ReadyWhen {
        match self {
            ReadyWhen::First => tool_cli_daemon::pool::ReadyWhen::First,
            ReadyWhen::All => tool_cli_daemon::pool::ReadyWhen::All,
            ReadyWhen::None => tool_cli_daemon::pool::ReadyWhen::None,
        }
    }
}

#[derive(Parser)]
#[command(
    name = "tool-cli-daemon",
    version,
    about = "Holds every MCP server you have and serves them to `tool-cli`, scripts and agents",
    long_about = "Holds every MCP server you have and serves them to `tool-cli`, scripts and agents \
        over an authenticated JSON-RPC endpoint on 127.0.0.1.\n\n\
        Typical use in a shell or agent harness:\n    eval \"$(tool-cli-daemon --print-env &)\"\n\n\
        Config: --config, else $TOOL_CLI_CONFIG, else ~/.config/tool-cli/servers.json, else the \
        bundled demo server."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,

    /// Servers config file (`mcpServers` JSON); for `import`, the file --write merges into.
    #[arg(long, value_name = "PATH", global = true)]
    pub(crate) config: Option<PathBuf>,

    /// TCP port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    pub(crate) port: u16,

    /// Address to bind.
    #[arg(long, env = "TOOL_CLI_BIND_HOST", default_value = tool_cli_protocol::DEFAULT_HOST)]
    pub(crate) host: String,

    /// Read the bearer token from this file instead of generating one.
    #[arg(long, value_name = "PATH")]
    pub(crate) token_file: Option<PathBuf>,

    /// When ready, print `export TOOL_CLI_PORT=…` and `export TOOL_CLI_TOKEN=…` on stdout.
    #[arg(long)]
    pub(crate) print_env: bool,

    /// When the daemon counts as ready (and `--print-env` prints): once the `first` server has
    /// settled (connected, or its first attempt failed), once `all` have, or at once (`none`).
    /// Servers not yet settled keep connecting; calls to them wait for their connection.
    #[arg(long, value_enum, default_value_t = ReadyWhen::All, value_name = "WHEN")]
    pub(crate) ready_when: ReadyWhen,

    /// How long in-flight requests get to finish on SIGTERM/SIGINT, in milliseconds.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    pub(crate) shutdown_grace_ms: u64,

    /// Shut down after this many seconds with no connection open (0, the default: never). A
    /// daemon `tool-cli` starts on first use gets 1800 (`TOOL_CLI_AUTOSTART_IDLE_SECS`).
    #[arg(
        long,
        default_value_t = 0,
        value_name = "SECS",
        env = "TOOL_CLI_IDLE_SHUTDOWN_SECS"
    )]
    pub(crate) idle_shutdown_secs: u64,

    /// Largest message accepted from a stdio server, in bytes; a larger answer fails only its
    /// own request (resultTooLarge), the server keeps serving.
    #[arg(long, default_value_t = PoolOptions::default().max_message_bytes, value_name = "BYTES")]
    pub(crate) max_message_bytes: usize,

    /// Largest result sent in one response, in bytes (the requests of a batch share it); by
    /// default the same as --max-message-bytes, so any result a server may send goes whole. A
    /// larger callTool or readResource result (or callMany/callChain entry) is saved to a file
    /// in the runtime directory and answered with a reference (read it with readSpilled); a
    /// larger answer to any other method is refused with -32008.
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_response_bytes: Option<usize>,

    /// How long a result saved to a file (see --max-response-bytes) is kept, in milliseconds.
    /// Saved results are also removed when the daemon stops.
    #[arg(long, default_value_t = tool_cli_daemon::edge::DEFAULT_SPILL_TTL.as_millis() as u64, value_name = "MS")]
    pub(crate) spill_ttl_ms: u64,

    /// Largest request body accepted from a client, in bytes.
    #[arg(long, default_value_t = tool_cli_daemon::edge::DEFAULT_MAX_BODY_BYTES, value_name = "BYTES")]
    pub(crate) max_body_bytes: usize,

    /// Listen on this Unix socket (created 0600 in a 0700 directory) instead of TCP.
    #[arg(long, value_name = "PATH", conflicts_with = "port")]
    pub(crate) socket: Option<PathBuf>,

    /// Accept requests carrying this `Origin` header (browser pages); repeat for more. By
    /// default any request with an `Origin` is refused.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub(crate) allowed_origins: Vec<String>,

    /// Also accept `Host: NAME:<port>`, for clients that reach the daemon under another name
    /// (a container's `host.docker.internal`, with `--host`/`TOOL_CLI_BIND_HOST` binding beyond
    /// loopback); repeat for more, or list them comma-separated in the variable. By default only
    /// loopback names are accepted, which stops DNS rebinding.
    #[arg(
        long = "allow-host",
        value_name = "NAME",
        env = env::ALLOW_HOSTS,
        value_delimiter = ',',
        value_parser = parse_host_name
    )]
    pub(crate) allowed_hosts: Vec<String>,

    /// Append a trace line per call to this file (turns traces on, whatever the config says)
    /// [default: the config's traces.path, else $XDG_STATE_HOME/tool-cli/traces.jsonl, else
    /// ~/.local/state/tool-cli/traces.jsonl]
    #[arg(long, value_name = "PATH")]
    pub(crate) traces: Option<PathBuf>,

    /// Write no trace file, whatever the config says
    #[arg(long, conflicts_with = "traces")]
    pub(crate) no_traces: bool,
}

/// A bare host name for `--allow-host`: no port (ours is added), no scheme, no path.
fn parse_host_name(text: &str) -> Result<String, String> {
    let name = text.trim();
    let valid = !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
    if valid {
        Ok(name.to_ascii_lowercase())
    } else {
        Err(format!(
            "\"{text}\" is not a host name; expected a bare name such as host.docker.internal \
             (letters, digits, '-', '.', '_'; no scheme, port or path: the daemon's port is added)"
        ))
    }
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Internal: the watchdog that stops the servers' process groups if the daemon dies.
    #[command(hide = true)]
    Reaper,
    /// Internal: runs one stdio server as a child subreaper, so nothing it starts outlives it.
    #[command(hide = true)]
    Subreaper {
        /// The server's command and arguments, after `--`.
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<std::ffi::OsString>,
    },
    /// Show the MCP servers another client has configured and, with --write, add them to
    /// tool-cli's config file (what `tool-cli config import` runs)
    Import {
        /// The client: claude-desktop, claude-code, cursor, vscode, windsurf or codex
        #[arg(long, value_name = "CLIENT")]
        from: String,
        /// Its config file, instead of the client's usual places
        #[arg(long, value_name = "FILE")]
        path: Option<PathBuf>,
        /// Merge the servers into tool-cli's config file (new names only; conflicts are
        /// reported and left as they are)
        #[arg(long)]
        write: bool,
        /// Print the report as JSON
        #[arg(long)]
        json: bool,
    },
    /// Run the bundled demo MCP server on stdin/stdout (the default config starts it).
    DemoServer {
        /// The sample SQLite database (created on first use).
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
        /// Base URL of the exchange-rate REST service (e.g. https://api.frankfurter.dev/v1);
        /// by default a built-in fixed-table service on 127.0.0.1 answers.
        #[arg(long, value_name = "URL", env = "DEMO_RATES_URL")]
        rates_url: Option<String>,
        /// The Python interpreter for run_python (default: python3, then python, on PATH).
        #[arg(long, value_name = "PATH", env = "DEMO_PYTHON")]
        python: Option<PathBuf>,
    },
}
