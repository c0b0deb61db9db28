//! The `tool-cli` binary: everything is in the library ([`tool_cli::run_cli`]).
//!
//! `#![no_main]`: the C runtime calls the `main` below directly, without std's start-up code.
//! That code finds the main thread's stack to guard it, which glibc answers by reading and
//! parsing `/proc/self/maps`: about a fifth of the instructions of a whole `tool-cli SERVER
//! TOOL ARGS` process once it needs no clap tree and no runtime (docs/benchmarks.md, "P1:
//! client start-up"). What else that start-up does and the client relies on is done here:
//! SIGPIPE is ignored (a closed pipe on stdout is then an error the output code handles, not
//! death by signal), a panic exits 101, and stdout is flushed before the process exits. The
//! arguments and the environment are std's as ever (glibc hands them to std at load time).
#![cfg_attr(not(test), no_main)]

#[cfg(not(test))]
use std::ffi::{c_char, c_int};
#[cfg(not(test))]
use std::io::Write as _;

// Under `cargo test` the harness brings its own `main`.
#[cfg(not(test))]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    // SAFETY: setting a signal's disposition to SIG_IGN has no precondition; std's own start-up
    // does the same.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let code = std::panic::catch_unwind(tool_cli::run_cli_status).unwrap_or(101);
    let _ = std::io::stdout().flush();
    code
}
