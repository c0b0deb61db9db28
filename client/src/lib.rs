//! `tool-cli`: the thin client of the tool-cli daemon, as a library and as the `tool-cli` binary.
//!
//! # The library
//!
//! [`Client`] talks to a running daemon (or to any tool-cli 1.x bridge) from Rust: it finds it
//! like the CLI does ([`Client::from_env`]) or is told where it is ([`Client::tcp`],
//! [`Client::unix_socket`]), checks that the listener holds the token before sending it, and
//! offers the discovery methods, [`Client::call_tool`] with a timeout and cancellation by
//! dropping the future, and [`Client::call`] for any method with raw JSON. Every failure is an
//! [`Error`] whose [`Error::exit_code`] is the code `tool-cli` documents ([`exit`]).
//!
//! ```no_run
//! # async fn example() -> Result<(), tool_cli::Error> {
//! use tool_cli::{Client, ToolCall};
//!
//! let mut client = Client::from_env()?;
//! let tools = client.list_tools("demo").await?;
//! println!("{} tools", tools.tools.len());
//! let result = client
//!     .call_tool(&ToolCall::new("demo", "sql_query").arguments(serde_json::json!({"sql": "SELECT 1"})))
//!     .await?;
//! if result["isError"] == true {
//!     eprintln!("the tool failed: {}", result["content"]);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # The binary
//!
//! `main.rs` only calls [`run_cli`]: it parses the command line (`args`), carries the command out
//! with a [`Client`] (`run`) and renders the result for people and agents (`render`), with
//! server-supplied text made safe for a terminal (`sanitize`). The client is started once per
//! command, often by an agent in a loop, so it stays small: a current-thread tokio runtime, a bare
//! hyper HTTP/1 connection, no TLS, no MCP library. The plain lines go further (docs/cli.md,
//! "Start-up: the fast path"): no clap command tree (`args/fast.rs`) and, for requests made one
//! after another, no runtime at all but a blocking socket (`link/blocking.rs`, `run/plain.rs`).

mod args;
mod autostart;
mod base64;
mod bounded_read;
mod client;
mod endpoint;
mod error;
mod identity;
mod link;
mod mcp_relay;
mod render;
mod run;
mod sanitize;
mod settings;
#[cfg(test)]
mod test_support;
mod trace_context;
mod traces;
mod vouch;

use std::ffi::OsString;
use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::time::Duration;

pub use client::{Client, ToolCall};
pub use error::{Error, StepFailure, exit};

use crate::args::{Command, Invocation};
use crate::endpoint::{EndpointEnv, resolve_endpoint};

/// Runs `tool-cli` with the process's arguments, environment and stdin; returns its exit code.
pub fn run_cli() -> ExitCode {
    ExitCode::from(u8::try_from(run_cli_status()).unwrap_or(1))
}

/// [`run_cli`] with the exit code as a number (0–255), for the binary's own `main`.
#[doc(hidden)]
pub fn run_cli_status() -> i32 {
    use tool_cli_protocol::env;
    let args_env = args::ArgsEnv {
        timeout_ms: std::env::var(env::TIMEOUT_MS).ok(),
        require_identity: std::env::var(env::REQUIRE_IDENTITY).ok(),
        session: std::env::var(env::SESSION).ok(),
    };
    let read_stdin = bounded_read::read_stdin;
    let argv: Vec<OsString> = std::env::args_os().collect();
    let json = wants_json(&argv);
    let invocation = match args::parse(argv, &args_env, read_stdin) {
        Ok(invocation) => invocation,
        Err(args::ParseOutcome::Clap(error)) if json && error.use_stderr() => {
            // A program asked for JSON: the grammar error too, and only it, on stderr.
            let message = error.render().to_string();
            let message = message.trim().trim_start_matches("error: ");
            return report(&Error::Usage(message.to_owned()), true);
        }
        Err(args::ParseOutcome::Clap(error)) => {
            // clap formats help, version and grammar errors itself, with exit 0 or 2.
            let _ = error.print();
            return exit_code(error.exit_code());
        }
        Err(args::ParseOutcome::Usage(error)) => return report(&error, json),
    };
    for warning in &invocation.warnings {
        run::warn(warning);
    }
    let json = invocation.json;
    match execute(invocation) {
        Ok(()) => exit_code(exit::OK),
        Err(error) => report(&error, json),
    }
}

/// Whether `--json` (or `--output json`) is on the line (before a `--`), known before parsing
/// so that a parse error can be reported as JSON too.
fn wants_json(argv: &[OsString]) -> bool {
    let words: Vec<&OsString> = argv
        .iter()
        .skip(1)
        .take_while(|word| *word != "--")
        .collect();
    words
        .iter()
        .any(|word| *word == "--json" || *word == "--output=json")
        || words
            .windows(2)
            .any(|pair| pair[0] == "--output" && pair[1] == "json")
}

/// One command is a few sequential requests: a current-thread runtime starts fastest.
fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|error| Error::Other(format!("cannot start the async runtime: {error}")))
}

fn execute(invocation: Invocation) -> Result<(), Error> {
    if let Command::Mcp { progressive } = invocation.command {
        let environment = EndpointEnv::from_process();
        // A host launches `tool-cli mcp` as its server: it finds the daemon or starts one.
        autostart::ensure_daemon(
            &environment.runtime_dir,
            &autostart::AutostartEnv::from_process(),
        )
        .inspect_err(|_| mcp_relay::say_not_running())?;
        // The host talks MCP on stdout: nothing else may be written there, and the relay
        // writes it from the runtime (so stdout is not locked here).
        let endpoint = resolve_endpoint(&environment, |path| std::fs::read_to_string(path))
            .inspect_err(|_| mcp_relay::say_not_running())?;
        return runtime()?.block_on(mcp_relay::run(
            endpoint,
            progressive,
            invocation.require_identity,
        ));
    }
    let terminal = std::io::stdout().is_terminal();
    let mut stdout = std::io::stdout().lock();
    let environment = EndpointEnv::from_process();
    let timeout = invocation.timeout_ms.map(Duration::from_millis);
    // A report from a trace file needs no daemon: answered before one is looked for.
    if let Command::TracesReport(request) = &invocation.command
        && let Some(path) = &request.file
    {
        let mut output = run::Output {
            json: invocation.json,
            out: invocation.out.as_deref(),
            stdout: &mut stdout,
            terminal,
        };
        return traces::report_from_file(request, path, &mut output);
    }
    // An import reads files; the daemon binary does it, running or not.
    if let Command::ConfigImport(import) = &invocation.command {
        let mut output = run::Output {
            json: invocation.json,
            out: invocation.out.as_deref(),
            stdout: &mut stdout,
            terminal,
        };
        return run::config::import(import, &mut output);
    }
    match invocation.command {
        Command::AgentHelp => {
            return std::io::Write::write_all(&mut stdout, args::agent_help::PRIMER.as_bytes())
                .or_else(|source| {
                    if source.kind() == std::io::ErrorKind::BrokenPipe {
                        Ok(())
                    } else {
                        Err(Error::Io {
                            action: "write the primer to stdout".to_owned(),
                            source,
                        })
                    }
                });
        }
        Command::Completions(shell) => {
            let script = args::complete::script(shell);
            // A closed pipe (`tool-cli completions bash | head`) is not an error worth reporting.
            return match std::io::Write::write_all(&mut stdout, script.as_bytes()) {
                Err(source) if source.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Io {
                    action: "write the completion script to stdout".to_owned(),
                    source,
                }),
                _ => Ok(()),
            };
        }
        Command::Complete(request) => {
            // Whatever fails (no daemon, no token), the shell gets no names and exit 0.
            let client = resolve_endpoint(&environment, |path| std::fs::read_to_string(path))
                .ok()
                .map(|endpoint| {
                    Client::from_endpoint(endpoint)
                        .with_identity_required(invocation.require_identity)
                });
            runtime()?.block_on(run::complete::run(request, client, &mut stdout));
            return Ok(());
        }
        _ => {}
    }
    if let Command::Daemon(command) = invocation.command {
        let mut output = run::Output {
            json: invocation.json,
            out: invocation.out.as_deref(),
            stdout: &mut stdout,
            terminal,
        };
        return runtime()?.block_on(run::daemon::run(
            command,
            &environment.runtime_dir,
            timeout,
            &mut output,
        ));
    }
    // No daemon yet (none started, or a stale runtime file): start one, unless the daemon is
    // named by hand or TOOL_CLI_NO_AUTOSTART=1 (`autostart.rs`).
    autostart::ensure_daemon(
        &environment.runtime_dir,
        &autostart::AutostartEnv::from_process(),
    )?;
    let endpoint = resolve_endpoint(&environment, |path| std::fs::read_to_string(path))?;
    let mut client =
        Client::from_endpoint(endpoint).with_identity_required(invocation.require_identity);
    if let Some(timeout) = timeout {
        client = client.with_timeout(timeout);
    }
    let terminals = run::plain::Terminals {
        stdin: std::io::stdin().is_terminal(),
        stderr: std::io::stderr().is_terminal(),
    };
    if run::plain::without_runtime(&invocation, terminals) {
        client = client.with_blocking_transport();
    }
    if client.is_blocking() {
        return run::plain::block_on(run::run(invocation, client, &mut stdout, terminal));
    }
    runtime()?.block_on(run::run(invocation, client, &mut stdout, terminal))
}

/// Prints the error on stderr (a sanitised message, or with `--json` the JSON envelope on one
/// line) and returns its exit code.
fn report(error: &Error, json: bool) -> i32 {
    if json {
        let envelope = error.envelope().to_string();
        eprintln!("{}", sanitize::json_for_terminal(&envelope));
    } else {
        eprintln!("tool-cli: error: {}", sanitize::text(&error.to_string()));
    }
    exit_code(error.exit_code())
}

/// The process's exit code for `code`: itself when it fits in a byte, else 1.
fn exit_code(code: i32) -> i32 {
    u8::try_from(code).map_or(1, i32::from)
}

/// Parses a command line the way `tool-cli` does, with `stdin` as standard input, and discards
/// the result. For the fuzzer only: it must never panic, whatever the input.
#[doc(hidden)]
pub fn fuzz_parse_args(argv: Vec<std::ffi::OsString>, timeout_env: Option<String>, stdin: &str) {
    let args_env = args::ArgsEnv {
        timeout_ms: timeout_env,
        require_identity: None,
        session: None,
    };
    let _ = args::parse(argv, &args_env, || Ok(stdin.to_owned()));
}
