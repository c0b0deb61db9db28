//! The `tool-cli` binary: everything is in the library ([`tool_cli::run_cli`]).

fn main() -> std::process::ExitCode {
    tool_cli::run_cli()
}
