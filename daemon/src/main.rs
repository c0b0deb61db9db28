//! `tool-cli-daemon`: start the pool and serve it; or run the bundled demo MCP server.

use std::io::Write as _;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use std::os::unix::net::UnixListener;

use tool_cli_daemon::auth::{Token, TokenStore};
use tool_cli_daemon::config;
use tool_cli_daemon::manage::ServerManager;
use tool_cli_daemon::orchestrator::{Orchestrator, OrchestratorOptions};
use tool_cli_daemon::pipeline::CallObserver;
use tool_cli_daemon::pool::{Pool, PoolOptions};
use tool_cli_daemon::provider::ToolProvider;
use tool_cli_daemon::runtime_file;
use tool_cli_daemon::server::{Listener, ServeOptions};
use tool_cli_daemon::spill::SpillStore;
use tool_cli_daemon::trace::{Traces, settings as trace_settings};
use tool_cli_protocol::env;
use tool_cli_protocol::runtime::RuntimeFile;

/// The longest `--ready-when all` waits for tool search's model to embed the catalog.
const SEARCH_READY_TIMEOUT: Duration = Duration::from_secs(120);

/// Exit code for a bad config or bad arguments: nothing was started.
const EXIT_CONFIG: u8 = 2;

/// `--ready-when`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ReadyWhen {
    First,
    All,
    None,
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
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    /// Servers config file (`mcpServers` JSON); for `import`, the file --write merges into.
    #[arg(long, value_name = "PATH", global = true)]
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

    /// When the daemon counts as ready (and `--print-env` prints): once the `first` server has
    /// settled (connected, or its first attempt failed), once `all` have, or at once (`none`).
    /// Servers not yet settled keep connecting; calls to them wait for their connection.
    #[arg(long, value_enum, default_value_t = ReadyWhen::All, value_name = "WHEN")]
    ready_when: ReadyWhen,

    /// How long in-flight requests get to finish on SIGTERM/SIGINT, in milliseconds.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    shutdown_grace_ms: u64,

    /// Largest message accepted from a stdio server, in bytes.
    #[arg(long, default_value_t = PoolOptions::default().max_message_bytes, value_name = "BYTES")]
    max_message_bytes: usize,

    /// Largest result sent in one response, in bytes (the requests of a batch share it); by
    /// default the same as --max-message-bytes, so any result a server may send goes whole. A
    /// larger callTool or readResource result is saved to a file in the runtime directory and
    /// answered with a reference (read it with readSpilled); a larger answer to any other
    /// method is refused with -32008.
    #[arg(long, value_name = "BYTES")]
    max_response_bytes: Option<usize>,

    /// How long a result saved to a file (see --max-response-bytes) is kept, in milliseconds.
    /// Saved results are also removed when the daemon stops.
    #[arg(long, default_value_t = tool_cli_daemon::spill::DEFAULT_TTL.as_millis() as u64, value_name = "MS")]
    spill_ttl_ms: u64,

    /// Largest request body accepted from a client, in bytes.
    #[arg(long, default_value_t = tool_cli_daemon::shape::DEFAULT_MAX_BODY_BYTES, value_name = "BYTES")]
    max_body_bytes: usize,

    /// Listen on this Unix socket (created 0600 in a 0700 directory) instead of TCP.
    #[arg(long, value_name = "PATH", conflicts_with = "port")]
    socket: Option<PathBuf>,

    /// Accept requests carrying this `Origin` header (browser pages); repeat for more. By
    /// default any request with an `Origin` is refused.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,

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
    allowed_hosts: Vec<String>,

    /// Append a trace line per call to this file (turns traces on, whatever the config says)
    /// [default: the config's traces.path, else $XDG_STATE_HOME/tool-cli/traces.jsonl, else
    /// ~/.local/state/tool-cli/traces.jsonl]
    #[arg(long, value_name = "PATH")]
    traces: Option<PathBuf>,

    /// Write no trace file, whatever the config says
    #[arg(long, conflicts_with = "traces")]
    no_traces: bool,
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
enum Command {
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::DemoServer {
            db,
            rates_url,
            python,
        }) => run_demo_server(tool_cli_demo_server::DemoOptions {
            db,
            rates_url,
            python,
            ..Default::default()
        }),
        Some(Command::Reaper) => {
            tool_cli_daemon::reaper::run(std::io::stdin().lock());
            ExitCode::SUCCESS
        }
        Some(Command::Subreaper { command }) => tool_cli_daemon::subreaper::run(&command),
        Some(Command::Import {
            from,
            path,
            write,
            json,
        }) => run_import(cli.config, from, path, write, json),
        None => run_daemon(cli),
    }
}

/// `tool-cli-daemon import`: the report on stdout; exit 2 for anything it could not do.
fn run_import(
    config: Option<PathBuf>,
    from: String,
    path: Option<PathBuf>,
    write: bool,
    json: bool,
) -> ExitCode {
    use tool_cli_daemon::import::{ClientKind, Os, Places, command};
    let kind = match ClientKind::from_name(&from) {
        Ok(kind) => kind,
        Err(error) => return fail(EXIT_CONFIG, error),
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let Some(home) = home else {
        return fail(
            EXIT_CONFIG,
            "HOME is not set; give the file with --path and our config with --config",
        );
    };
    // Where `--write` goes: the file the daemon would read, or the user default (created).
    let target = config
        .or_else(|| {
            std::env::var_os(env::CONFIG)
                .filter(|path| !path.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| home.join(".config/tool-cli/servers.json"));
    let request = command::ImportRequest {
        kind,
        path,
        target,
        write,
        places: Places {
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            xdg_config_home: std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from),
            app_data: std::env::var_os("APPDATA").map(PathBuf::from),
            os: Os::current(),
            home,
        },
    };
    match command::run(&request) {
        Ok(report) => {
            let text = if json {
                format!("{:#}\n", command::to_json(&report))
            } else {
                command::render(&report)
            };
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(text.as_bytes());
            let _ = stdout.flush();
            ExitCode::SUCCESS
        }
        Err(error) => fail(EXIT_CONFIG, error),
    }
}

fn init_tracing(default: &str) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::{EnvFilter, Layer as _, filter::FilterExt as _};

    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    // Events dropped whatever RUST_LOG says (`log_filter.rs`: jsonrpsee's TRACE, which carries
    // the Authorization header, and rmcp's ERROR per failed HTTP connection, which the daemon
    // logs once in its own words). A filter rather than directives: a `jsonrpsee-server=debug`
    // directive would *raise* jsonrpsee to DEBUG under a quiet default and log every connection.
    let no_jsonrpsee_traces = tracing_subscriber::filter::filter_fn(|metadata| {
        tool_cli_daemon::log_filter::keep(metadata.target(), *metadata.level())
    });
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(tool_cli_daemon::redact::LogWriter)
        // Colour only for a person at a terminal; logs captured to files stay plain.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .with_filter(no_jsonrpsee_traces.and(filter));
    tracing_subscriber::registry().with(layer).init();
}

fn run_demo_server(options: tool_cli_demo_server::DemoOptions) -> ExitCode {
    init_tracing("warn");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(tool_cli_demo_server::run_stdio(options)) {
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
    for note in &config.notes {
        if note.ignored {
            tracing::warn!("{note}");
        } else {
            tracing::info!("{note}");
        }
    }
    tool_cli_daemon::redact::install(Arc::new(tool_cli_daemon::redact::Secrets::from_config(
        &config,
    )));
    let traces =
        match trace_settings::resolve(&config.traces, cli.traces.clone(), cli.no_traces, &|name| {
            std::env::var(name).ok()
        }) {
            Ok(traces) => traces,
            Err(err) => {
                // Traces are a record, not a function: a daemon without a place for them still
                // serves every call.
                tracing::warn!(%err, "calls are not traced");
                None
            }
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

    let (listener, endpoint) = match &cli.socket {
        Some(path) => match bind_socket(path) {
            Ok(listener) => (Listener::Unix(listener), Endpoint::Socket(path.clone())),
            Err(err) => return fail(1, err),
        },
        None => {
            let listener = match TcpListener::bind((cli.host.as_str(), cli.port)) {
                Ok(listener) => listener,
                Err(err) => {
                    return fail(
                        1,
                        format!("cannot listen on {}:{}: {err}", cli.host, cli.port),
                    );
                }
            };
            match listener.local_addr() {
                Ok(local) => (Listener::Tcp(listener), Endpoint::Tcp(local)),
                Err(err) => return fail(1, format!("cannot read the bound address: {err}")),
            }
        }
    };

    if let Err(err) = tool_cli_daemon::reaper::install(&self_exe) {
        tracing::warn!(%err, "no reaper process; servers' children may outlive a killed daemon");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(serve(
        cli,
        config,
        config_path,
        traces,
        token,
        listener,
        endpoint,
        self_exe,
    ))
}

/// Where clients reach us.
enum Endpoint {
    Tcp(std::net::SocketAddr),
    Socket(PathBuf),
}

/// Creates the Unix socket safely: its directory is a real directory (not a symlink) that only
/// we can enter, and no existing file is reused (a stale socket nobody listens on is replaced).
fn bind_socket(path: &std::path::Path) -> Result<UnixListener, String> {
    use std::os::unix::fs::{
        DirBuilderExt as _, FileTypeExt as _, MetadataExt as _, PermissionsExt as _,
    };
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|err| {
                format!(
                    "cannot create the socket directory {}: {err}",
                    dir.display()
                )
            })?;
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|err| {
        format!(
            "cannot inspect the socket directory {}: {err}",
            dir.display()
        )
    })?;
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Err(format!(
            "the socket directory {} is not a plain directory (a symlink?); refusing it",
            dir.display()
        ));
    }
    if meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "the socket directory {} must be owned by you and mode 0700 (it is {:o}); \
             fix with: chmod 700 {}",
            dir.display(),
            meta.permissions().mode() & 0o777,
            dir.display()
        ));
    }
    if let Ok(existing) = std::fs::symlink_metadata(path) {
        let stale = existing.file_type().is_socket()
            && std::os::unix::net::UnixStream::connect(path).is_err();
        if !stale {
            return Err(format!(
                "{} already exists; refusing to reuse it (another daemon's socket, or not a \
                 socket at all)",
                path.display()
            ));
        }
        std::fs::remove_file(path)
            .map_err(|err| format!("cannot remove the stale socket {}: {err}", path.display()))?;
    }
    // Created 0600 from the start: no window in which another user could connect.
    // SAFETY: umask only changes this process's file creation mask; we restore it at once,
    // before any other thread exists.
    let previous = unsafe { libc::umask(0o177) };
    let bound = UnixListener::bind(path);
    unsafe { libc::umask(previous) };
    bound.map_err(|err| format!("cannot listen on {}: {err}", path.display()))
}

#[allow(clippy::too_many_arguments)]
async fn serve(
    cli: Cli,
    config: config::Config,
    config_path: Option<PathBuf>,
    traces: Option<trace_settings::TraceSettings>,
    token: Token,
    listener: Listener,
    endpoint: Endpoint,
    self_exe: PathBuf,
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
            state_dir: tool_cli_daemon::trace::settings::state_dir(&|name| {
                std::env::var(name).ok()
            }),
            ..PoolOptions::default()
        },
    );
    let traces = traces.map(|settings| {
        tracing::info!(path = %settings.path.display(), verbose = settings.verbose, "tracing calls");
        Traces::start(settings, tool_cli_daemon::redact::config_secrets(&config))
    });
    let mut orchestrator = Orchestrator::with_options(
        Arc::clone(&pool) as Arc<dyn ToolProvider>,
        OrchestratorOptions {
            agent: config.agent.clone(),
            search: tool_cli_daemon::config_search::SearchSettings::resolve(
                &config.search,
                &|name| std::env::var(name).ok(),
            ),
            ..OrchestratorOptions::default()
        },
        traces
            .iter()
            .map(|traces| Arc::clone(traces) as Arc<dyn CallObserver>)
            .collect(),
    );
    if let Some(traces) = &traces {
        orchestrator = orchestrator.with_traces(Arc::clone(traces));
    }
    orchestrator = orchestrator.with_remote_auth(pool.remote_auth());
    let orchestrator = Arc::new(orchestrator.with_manager(Arc::new(ServerManager::new(
        Arc::clone(&pool),
        config.clone(),
        config_path,
        self_exe,
        Arc::new(|name: &str| std::env::var(name).ok()),
    ))));
    // Installed before anything is announced, so a SIGHUP never finds its default action
    // (which would end the daemon).
    let hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup());
    let reloader = tokio::spawn(reload_on_hangup(Arc::clone(&orchestrator), hangups));

    // Connect the servers while the endpoint already serves (requests for a server still
    // connecting wait for it); announce readiness once every server has settled.
    let starter = {
        let pool = Arc::clone(&pool);
        let token = token.clone();
        let print_env = cli.print_env;
        let ready_when = match cli.ready_when {
            ReadyWhen::First => tool_cli_daemon::pool::ReadyWhen::First,
            ReadyWhen::All => tool_cli_daemon::pool::ReadyWhen::All,
            ReadyWhen::None => tool_cli_daemon::pool::ReadyWhen::None,
        };
        let orchestrator = Arc::clone(&orchestrator);
        tokio::spawn(async move {
            pool.start_until(ready_when).await;
            // `all` also waits for tool search's model to embed the catalog (bounded), so a
            // harness that searches at once gets the model's ranking.
            if ready_when == tool_cli_daemon::pool::ReadyWhen::All
                && !orchestrator.search_ready(SEARCH_READY_TIMEOUT).await
            {
                tracing::warn!(
                    seconds = SEARCH_READY_TIMEOUT.as_secs(),
                    "the tool search model has not embedded every tool yet; ready anyway, \
                     searchTools ranks lexically until it has"
                );
            }
            tracing::info!(port, "ready");
            if print_env {
                let mut stdout = std::io::stdout().lock();
                match &socket {
                    Some(path) => {
                        let _ = writeln!(stdout, "export {}={}", env::SOCKET, shell_quote(path));
                    }
                    None => {
                        let _ = writeln!(stdout, "export {}={}", env::PORT, port);
                    }
                }
                let _ = writeln!(stdout, "export {}={}", env::TOKEN, token.expose());
                if let Some(daemon_id) = &daemon_id {
                    let _ = writeln!(stdout, "export {}={}", env::DAEMON_ID, daemon_id);
                }
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
        Arc::new(TokenStore::new(token)),
        Arc::clone(&orchestrator),
        shutdown_signal(),
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

/// Reloads the config file on every SIGHUP; a file that does not load is logged and changes
/// nothing.
async fn reload_on_hangup(
    orchestrator: Arc<Orchestrator>,
    hangups: std::io::Result<tokio::signal::unix::Signal>,
) {
    let Ok(mut hangups) = hangups else {
        tracing::warn!("cannot install the SIGHUP handler; reload with `tool-cli config reload`");
        return;
    };
    while hangups.recv().await.is_some() {
        tracing::info!("SIGHUP received: reloading the config");
        match orchestrator.reload_config().await {
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
