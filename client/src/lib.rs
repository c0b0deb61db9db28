//! `tool-cli`: the thin client of the tool-cli daemon. The binary (`main.rs`) only calls
//! `run_cli`; the library exists so the argument parser can be fuzzed (`fuzz/`).
//!
//! It parses the command line (`args`), finds the daemon and speaks JSON-RPC to it over one
//! HTTP/1.1 connection (`connection`) once the daemon proved it holds the token (`identity`),
//! runs the command (`run`) and renders the result for
//! people and agents (`render`; `traces` for the trace report, which can also run without a
//! daemon). Every failure is an `error::Error` with a documented exit
//! code. The client is started once per command, often by an agent in a loop, so it stays small:
//! a current-thread tokio runtime, a bare hyper connection, no TLS.

mod args;
mod base64;
mod connection;
mod error;
mod identity;
mod render;
mod run;
#[cfg(test)]
mod test_support;
mod traces;

use std::io::Read as _;
use std::process::ExitCode;

use crate::error::{Error, exit};

/// Runs `tool-cli` with the process's arguments, environment and stdin; returns its exit code.
pub fn run_cli() -> ExitCode {
    let args_env = args::ArgsEnv {
        timeout_ms: std::env::var(tool_cli_protocol::env::TIMEOUT_MS).ok(),
    };
    let read_stdin = || {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map(|_| text)
    };
    let invocation = match args::parse(std::env::args_os(), &args_env, read_stdin) {
        Ok(invocation) => invocation,
        Err(args::ParseOutcome::Clap(error)) => {
            // clap formats help, version and grammar errors itself, with exit 0 or 2.
            let _ = error.print();
            return exit_code(error.exit_code());
        }
        Err(args::ParseOutcome::Usage(error)) => return report(&error),
    };
    for warning in &invocation.warnings {
        eprintln!("tool-cli: warning: {warning}");
    }
    match execute(invocation) {
        Ok(()) => exit_code(exit::OK),
        Err(error) => report(&error),
    }
}

fn execute(invocation: args::Invocation) -> Result<(), Error> {
    // A report from a trace file needs no daemon: answered before one is looked for.
    if let args::Command::TracesReport(request) = &invocation.command
        && let Some(path) = &request.file
    {
        let mut stdout = std::io::stdout().lock();
        return traces::report_from_file(
            request,
            path,
            invocation.json,
            invocation.out.as_deref(),
            &mut stdout,
        );
    }
    let endpoint =
        connection::resolve_endpoint(&connection::EndpointEnv::from_process(), |path| {
            std::fs::read_to_string(path)
        })?;
    // One command is a few sequential requests: a current-thread runtime starts fastest.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|error| Error::Other(format!("cannot start the async runtime: {error}")))?;
    let mut stdout = std::io::stdout().lock();
    runtime.block_on(run::run(invocation, endpoint, &mut stdout))
}

fn report(error: &Error) -> ExitCode {
    eprintln!("tool-cli: error: {error}");
    exit_code(error.exit_code())
}

fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Parses a command line the way `tool-cli` does, with `stdin` as standard input, and discards
/// the result. For the fuzzer only: it must never panic, whatever the input.
#[doc(hidden)]
pub fn fuzz_parse_args(argv: Vec<std::ffi::OsString>, timeout_env: Option<String>, stdin: &str) {
    let args_env = args::ArgsEnv {
        timeout_ms: timeout_env,
    };
    let _ = args::parse(argv, &args_env, || Ok(stdin.to_owned()));
}
