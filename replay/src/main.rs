//! `tool-cli-replay`: serve a recorded MCP session as a server, record one, and record or
//! replay LLM HTTP exchanges.
//!
//! ```text
//! tool-cli-replay [--server NAME] [--strict] [--ignore POINTER]… FILE          # stdio server
//! tool-cli-replay --http [--path /mcp] [--server NAME] … FILE                 # Streamable HTTP
//! tool-cli-replay record --out FILE --server NAME [--redact-env VAR]… -- COMMAND ARGS…
//! tool-cli-replay llm-record --upstream URL --out FILE [--redact-env VAR]…
//! tool-cli-replay llm-serve [--ignore POINTER]… FILE
//! ```
//!
//! The HTTP modes print the URL they listen on (`127.0.0.1`, a port the kernel chose) as their
//! first line on stdout, then serve until SIGTERM or SIGINT. Errors go to stderr with exit code
//! 2 (bad arguments, a refused recording) or 1 (a failure while running).

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use tool_cli_replay::engine::{Mode, Replay};
use tool_cli_replay::normalize::Normalizer;
use tool_cli_replay::recording::Recording;

#[derive(Parser)]
#[command(
    name = "tool-cli-replay",
    version,
    about = "Serve a recorded MCP session as a server; record MCP and LLM traffic",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// The recording to serve (NDJSON written by `record` or the daemon).
    file: Option<PathBuf>,
    /// Refuse a recording of another server.
    #[arg(long)]
    server: Option<String>,
    /// Require the client's messages in the recorded order (default: match each request to
    /// the earliest unanswered recorded one like it).
    #[arg(long)]
    strict: bool,
    /// A JSON Pointer (into a message) ignored when matching, e.g. /params/arguments/nonce.
    #[arg(long = "ignore", value_name = "POINTER")]
    ignore: Vec<String>,
    /// Serve Streamable HTTP on 127.0.0.1 (a free port) instead of stdio.
    #[arg(long)]
    http: bool,
    /// The HTTP path of the MCP endpoint.
    #[arg(long, default_value = "/mcp")]
    path: String,
}

#[derive(Subcommand)]
enum Command {
    /// Record a stdio server's session: run COMMAND and pass every line through.
    Record {
        /// The recording to write (created 0600).
        #[arg(long)]
        out: PathBuf,
        /// The server's name, written in the header (replay refuses other names).
        #[arg(long)]
        server: String,
        /// An environment variable whose value is a secret (redacted wherever it appears).
        #[arg(long = "redact-env", value_name = "VAR")]
        redact_env: Vec<String>,
        /// The server's command and arguments.
        #[arg(last = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Record LLM HTTP exchanges: a loopback proxy to UPSTREAM (give its URL as the base URL).
    LlmRecord {
        /// The provider's base URL (http:// or https://).
        #[arg(long)]
        upstream: String,
        /// The recording to write (created 0600).
        #[arg(long)]
        out: PathBuf,
        /// An environment variable whose value is a secret (redacted wherever it appears).
        #[arg(long = "redact-env", value_name = "VAR")]
        redact_env: Vec<String>,
    },
    /// Serve recorded LLM exchanges back, byte for byte, on loopback.
    LlmServe {
        /// The LLM recording.
        file: PathBuf,
        /// A JSON Pointer (into a request body) ignored when matching.
        #[arg(long = "ignore", value_name = "POINTER")]
        ignore: Vec<String>,
    },
}

fn main() {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("tool-cli-replay: cannot start a runtime: {error}");
            std::process::exit(1);
        }
    };
    let code = runtime.block_on(run(cli));
    // Leftover tasks (a stdin reader blocked in a read) must not hold the process.
    runtime.shutdown_background();
    std::process::exit(code);
}

async fn run(cli: Cli) -> i32 {
    match cli.command {
        Some(Command::Record {
            out,
            server,
            redact_env,
            command,
        }) => {
            let options = tool_cli_replay::proxy::ProxyOptions {
                out,
                server,
                command,
                redact_env,
            };
            match tool_cli_replay::proxy::record(
                options,
                tokio::io::stdin(),
                tokio::io::stdout(),
                stop_signal(),
            )
            .await
            {
                Ok(code) => code,
                Err(error) => fail(2, &error.to_string()),
            }
        }
        Some(Command::LlmRecord {
            upstream,
            out,
            redact_env,
        }) => tool_cli_replay::llm::run_record(&upstream, &out, &redact_env, stop_signal()).await,
        Some(Command::LlmServe { file, ignore }) => {
            tool_cli_replay::llm::run_serve(&file, ignore, stop_signal()).await
        }
        None => serve(cli.serve).await,
    }
}

async fn serve(args: ServeArgs) -> i32 {
    let Some(file) = args.file else {
        return fail(
            2,
            "no recording given: tool-cli-replay FILE (see --help for record and llm-record)",
        );
    };
    let name = file.display().to_string();
    let recording = match Recording::load(&file) {
        Ok(recording) => recording,
        Err(error) => return fail(2, &error.to_string()),
    };
    if let Some(server) = &args.server
        && let Err(error) = recording.check_server(server, &name)
    {
        return fail(2, &error.to_string());
    }
    let mode = if args.strict {
        Mode::Strict
    } else {
        Mode::Matching
    };
    let replay = Arc::new(Replay::new(
        &recording,
        mode,
        Normalizer {
            ignore: args.ignore,
        },
    ));
    let log = |note: &str| eprintln!("tool-cli-replay: {note}");
    if args.http {
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(listener) => listener,
            Err(error) => return fail(1, &format!("cannot listen on 127.0.0.1: {error}")),
        };
        let address = listener.local_addr().map(|address| address.to_string());
        println!("http://{}{}", address.unwrap_or_default(), args.path);
        tool_cli_replay::serve::http::serve(replay, listener, &args.path, log, stop_signal()).await;
        return 0;
    }
    match tool_cli_replay::serve::stdio::serve(replay, tokio::io::stdin(), tokio::io::stdout(), log)
        .await
    {
        Ok(unreplayed) => {
            if !unreplayed.is_empty() {
                eprintln!(
                    "tool-cli-replay: the session ended with {} recorded request(s) not replayed: {}",
                    unreplayed.len(),
                    unreplayed.join("; ")
                );
            }
            0
        }
        Err(error) => fail(1, &format!("stdio failed: {error}")),
    }
}

fn fail(code: i32, message: &str) -> i32 {
    eprintln!("tool-cli-replay: {message}");
    code
}

/// Resolves on SIGTERM or SIGINT.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut terminate), Ok(mut interrupt)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = terminate.recv() => {}
        _ = interrupt.recv() => {}
    }
}
