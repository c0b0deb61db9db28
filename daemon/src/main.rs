//! `tool-cli-daemon`: start the pool and serve it; or run the bundled demo MCP server.
//!
//! This file checks the inputs and binds before anything starts; the parts live beside it in
//! `main/`: `args.rs` (the command line), `listen.rs` (TCP port or Unix socket), `serve.rs`
//! (pool, orchestrator, endpoint, orderly shutdown), `ready.rs` (`--ready-when`,
//! `--print-env`), `signals.rs` (SIGHUP reload, SIGTERM/SIGINT) and `import.rs`.

// The binary's modules sit in `main/` so they are not taken for the library's.
#[path = "main/args.rs"]
mod args;
#[path = "main/import.rs"]
mod import;
#[path = "main/listen.rs"]
mod listen;
#[path = "main/ready.rs"]
mod ready;
#[path = "main/serve.rs"]
mod serve;
#[path = "main/signals.rs"]
mod signals;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser as _;

use tool_cli_daemon::auth::Token;
use tool_cli_daemon::config;
use tool_cli_daemon::config::traces as trace_settings;
use tool_cli_protocol::env;

use crate::args::{Cli, Command};

/// Exit code for a bad config or bad arguments: nothing was started.
const EXIT_CONFIG: u8 = 2;
/// Another daemon already owns the runtime file (the client's "daemon" exit code).
const EXIT_ALREADY_RUNNING: u8 = 3;

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
        }) => import::run_import(cli.config, from, path, write, json),
        None => run_daemon(cli),
    }
}

fn init_tracing(default: &str, secrets: tool_cli_daemon::redact::SharedSecrets) {
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
        .with_writer(tool_cli_daemon::redact::LogWriter::new(secrets))
        // Colour only for a person at a terminal; logs captured to files stay plain.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .with_filter(no_jsonrpsee_traces.and(filter));
    tracing_subscriber::registry().with(layer).init();
}

fn run_demo_server(options: tool_cli_demo_server::DemoOptions) -> ExitCode {
    init_tracing("warn", Default::default());
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
    // Before any thread exists: a long-lived daemon must give back what a big discovery freed.
    tool_cli_daemon::memory::return_freed_promptly();
    // The configured secrets, redacted from every log line and every error; the server manager
    // replaces them when the servers change.
    let secrets = tool_cli_daemon::redact::SharedSecrets::default();
    init_tracing("warn,tool_cli_daemon=info", secrets.clone());

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
    secrets.set(Arc::new(tool_cli_daemon::config::secrets_of(&config)));
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

    // A daemon no client can find is refused: the runtime file is how clients find the daemon,
    // and another live daemon keeps it. A harness that learns the address itself (the exports
    // of --print-env, or a token it gave with a fixed port or socket) may run a second one.
    let token_given = cli.token_file.is_some()
        || std::env::var_os(env::TOKEN).is_some_and(|text| !text.is_empty());
    let address_given = cli.port != 0 || cli.socket.is_some();
    if !(cli.print_env || token_given && address_given) {
        let dir = tool_cli_daemon::runtime_file::default_dir();
        if let Some(owner) = tool_cli_daemon::runtime_file::live_owner(&dir) {
            return fail(
                EXIT_ALREADY_RUNNING,
                format!(
                    "another tool-cli-daemon (pid {}) already runs and owns the runtime file \
                     {}, so no client would find this one; use it (`tool-cli daemon status`), \
                     stop it first (`tool-cli daemon stop`), or give this one its own \
                     {} (or --print-env, to hand its address to your harness)",
                    owner.pid,
                    dir.join(tool_cli_protocol::runtime::RUNTIME_FILE_NAME)
                        .display(),
                    env::RUNTIME_DIR,
                ),
            );
        }
    }

    let (listener, endpoint) = match listen::bind(&cli) {
        Ok(bound) => bound,
        Err(err) => return fail(1, err),
    };

    if let Err(err) = tool_cli_daemon::reaper::install(&self_exe) {
        tracing::warn!(%err, "no reaper process; servers' children may outlive a killed daemon");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(serve::serve(
        cli,
        config,
        config_path,
        traces,
        token,
        listener,
        endpoint,
        self_exe,
        secrets,
    ))
}
