//! `tool-cli-daemon`: start the pool and serve it; or run the bundled demo MCP server.

use std::io::Write as _;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use tool_cli_daemon::auth::Token;
use tool_cli_daemon::config;
use tool_cli_daemon::pipeline::Orchestrator;
use tool_cli_daemon::pool::{Pool, PoolOptions};
use tool_cli_daemon::runtime_file;
use tool_cli_protocol::env;
use tool_cli_protocol::runtime::RuntimeFile;

/// Exit code for a bad config or bad arguments: nothing was started.
const EXIT_CONFIG: u8 = 2;

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
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    /// Servers config file (`mcpServers` JSON).
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,

    /// TCP port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,

    /// Address to bind.
    #[arg(long, env = "TOOL_CLI_BIND_HOST", default_value = tool_cli_protocol::DEFAULT_HOST)]
    host: String,

    /// Read the bearer token from this file instead of generating one.
    #[arg(long, value_name = "PATH")]
    token_file: Option<PathBuf>,

    /// When ready, print `export TOOL_CLI_PORT=…` and `export TOOL_CLI_TOKEN=…` on stdout.
    #[arg(long)]
    print_env: bool,

    /// How long in-flight requests get to finish on SIGTERM/SIGINT, in milliseconds.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    shutdown_grace_ms: u64,

    /// Largest message accepted from a stdio server, in bytes.
    #[arg(long, default_value_t = PoolOptions::default().max_message_bytes, value_name = "BYTES")]
    max_message_bytes: usize,
}

#[derive(Subcommand)]
enum Command {
    /// Internal: the watchdog that stops the servers' process groups if the daemon dies.
    #[command(hide = true)]
    Reaper,
    /// Run the bundled demo MCP server on stdin/stdout (the default config starts it).
    DemoServer {
        /// The sample SQLite database (created on first use).
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::DemoServer { db }) => run_demo_server(db),
        Some(Command::Reaper) => {
            tool_cli_daemon::reaper::run(std::io::stdin().lock());
            ExitCode::SUCCESS
        }
        None => run_daemon(cli),
    }
}

fn init_tracing(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal; logs captured to files stay plain.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
}

fn run_demo_server(db: Option<PathBuf>) -> ExitCode {
    init_tracing("warn");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(tool_cli_demo_server::run_stdio(db)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("tool-cli-daemon demo-server: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn fail(code: u8, message: impl std::fmt::Display) -> ExitCode {
    eprintln!("tool-cli-daemon: error: {message}");
    ExitCode::from(code)
}

fn run_daemon(cli: Cli) -> ExitCode {
    init_tracing("warn,tool_cli_daemon=info");

    // Everything that can be wrong with the inputs is checked before binding.
    let self_exe = match std::env::current_exe() {
        Ok(path) => path,
        Err(err) => return fail(1, format!("cannot find our own executable: {err}")),
    };
    let config_path = config::locate(
        cli.config.clone(),
        std::env::var_os(env::CONFIG).map(PathBuf::from),
        std::env::var_os("HOME").map(PathBuf::from),
    );
    let config = match config::load(config_path.as_deref(), &self_exe, &|name| {
        std::env::var(name).ok()
    }) {
        Ok(config) => config,
        Err(err) => return fail(EXIT_CONFIG, err),
    };
    let token = match (&cli.token_file, std::env::var(env::TOKEN)) {
        (Some(path), _) => Token::from_file(path),
        (None, Ok(text)) if !text.is_empty() => {
            Token::from_text(&text).map_err(|err| format!("{}: {err}", env::TOKEN))
        }
        _ => Ok(Token::generate()),
    };
    let token = match token {
        Ok(token) => token,
        Err(err) => return fail(EXIT_CONFIG, err),
    };

    let listener = match TcpListener::bind((cli.host.as_str(), cli.port)) {
        Ok(listener) => listener,
        Err(err) => {
            return fail(
                1,
                format!("cannot listen on {}:{}: {err}", cli.host, cli.port),
            );
        }
    };
    let local = match listener.local_addr() {
        Ok(addr) => addr,
        Err(err) => return fail(1, format!("cannot read the bound address: {err}")),
    };

    if let Err(err) = tool_cli_daemon::reaper::install(&self_exe) {
        tracing::warn!(%err, "no reaper process; servers' children may outlive a killed daemon");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(serve(cli, config, token, listener, local))
}

async fn serve(
    cli: Cli,
    config: config::Config,
    token: Token,
    listener: TcpListener,
    local: std::net::SocketAddr,
) -> ExitCode {
    tracing::info!(
        address = %local,
        config = %config.source,
        servers = config.servers.len(),
        "tool-cli-daemon starting"
    );
    let runtime_guard = match runtime_file::write(
        &runtime_file::default_dir(),
        &RuntimeFile {
            host: local.ip().to_string(),
            port: local.port(),
            token: token.expose().to_owned(),
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
    ) {
        Ok(guard) => guard,
        Err(err) => {
            tracing::warn!(%err, "no runtime file; clients need TOOL_CLI_PORT and TOOL_CLI_TOKEN");
            None
        }
    };

    let pool = Pool::new(
        &config,
        PoolOptions {
            max_message_bytes: cli.max_message_bytes,
            ..PoolOptions::default()
        },
    );
    let orchestrator = Arc::new(Orchestrator::new(Arc::clone(&pool)));

    // Connect the servers while the endpoint already serves (requests for a server still
    // connecting wait for it); announce readiness once every server has settled.
    let starter = {
        let pool = Arc::clone(&pool);
        let token = token.clone();
        let print_env = cli.print_env;
        tokio::spawn(async move {
            pool.start().await;
            tracing::info!(port = local.port(), "ready");
            if print_env {
                let mut stdout = std::io::stdout().lock();
                let _ = writeln!(stdout, "export {}={}", env::PORT, local.port());
                let _ = writeln!(stdout, "export {}={}", env::TOKEN, token.expose());
                let _ = stdout.flush();
                drop(stdout);
                // Close our end of stdout so `eval "$(tool-cli-daemon --print-env &)"` sees EOF
                // and returns while the daemon keeps running. Nothing else writes to stdout.
                release_stdout();
            }
        })
    };

    let served = tool_cli_daemon::server::run(
        listener,
        token,
        Arc::clone(&orchestrator),
        shutdown_signal(),
        Duration::from_millis(cli.shutdown_grace_ms),
    )
    .await;
    starter.abort();
    pool.shutdown().await;
    drop(runtime_guard);
    match served {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(err) => fail(1, format!("serving failed: {err}")),
    }
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

/// Resolves on the first SIGTERM or SIGINT.
async fn shutdown_signal() {
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
