//! The command-line grammar: from `argv` (plus the environment and stdin) to a [`Command`].
//!
//! The heart of the client is a positional grammar, `tool-cli [SERVER] [TOOL] [ARGS_JSON]`, where
//! each extra word goes one step deeper in the progressive discovery (servers, then tools, then one
//! schema, then a call), next to the `resource`, `health`, `token` and `daemon` subcommands. clap
//! does the tokenising, `--help` and `--version`; everything it cannot express (the JSON must be
//! an object, `-` reads stdin, the timeout is clamped rather than refused, `SERVER --help` shows
//! that server's tools) is checked here. The module does no I/O of its own: the environment and
//! stdin come in as arguments, so every form is unit-tested without a process. The long help text
//! is in `help.rs`.

pub(crate) mod agent;
pub(crate) mod agent_help;
pub(crate) mod auth;
pub(crate) mod call;
pub(crate) mod chain;
pub(crate) mod chain_document;
pub(crate) mod complete;
mod config;
mod elicitation;
mod fast;
mod grammar;
mod help;
pub(crate) mod kv;
pub(crate) mod one_shot;
mod output;
mod progress;
mod prompts;
pub(crate) mod record;
pub(crate) mod search;
mod server;
pub(crate) mod session;
mod token;

pub(crate) use config::ConfigImport;
pub(crate) use server::ServerCommand;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches};
use serde_json::{Map, Value};
use tool_cli_protocol::methods::MintTokenParams;

use crate::error::Error;
use crate::settings;
pub(crate) use elicitation::ElicitationChoice;
use grammar::{Cli, DaemonAction, ResourceAction, TopSubcommand};
pub(crate) use progress::ProgressChoice;
pub(crate) use prompts::PromptCommand;

/// `tool-cli export`: the format (`openai`, `openai-responses`, `anthropic`, `openapi`) and
/// its options.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExportRequest {
    pub(crate) format: String,
    pub(crate) server: Option<String>,
    pub(crate) strict: bool,
    pub(crate) base_url: Option<String>,
}

/// `tool-cli pin …`: where the store is and what to do.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PinCommand {
    pub(crate) pins: Option<PathBuf>,
    pub(crate) action: PinAction,
}

/// What `tool-cli pin` does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PinAction {
    /// `tool-cli pin [SERVER]`: pin every server or one.
    Pin { server: Option<String> },
    /// `tool-cli pin diff [SERVER]`.
    Diff { server: Option<String> },
    /// `tool-cli pin verify [--lock]`.
    Verify { lock: bool },
    /// `tool-cli pin approve SERVER --tool|--prompt|--resource-template NAME|--instructions`.
    Approve { server: String, item: PinItem },
    /// `tool-cli pin remove SERVER`.
    Remove { server: String },
}

/// One pinned item named on the command line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PinItem {
    Tool(String),
    Prompt(String),
    ResourceTemplate(String),
    Instructions,
}

/// What the user asked for, validated.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Command {
    /// `tool-cli`: every server.
    ListServers,
    /// `tool-cli SERVER`: one server's tools.
    ListTools { server: String },
    /// `tool-cli SERVER TOOL`: one tool's schema.
    DescribeTool { server: String, tool: String },
    /// `tool-cli SERVER TOOL ARGS_JSON`: call the tool.
    CallTool {
        server: String,
        tool: String,
        arguments: Map<String, Value>,
    },
    /// `tool-cli SERVER TOOL key=value...` or `--args-file PATH`: call the tool once the words
    /// are resolved (files read, plain values typed by the schema when needed).
    CallToolWords {
        server: String,
        tool: String,
        arguments: kv::ArgumentWords,
    },
    /// `tool-cli pin [SERVER]`, `pin diff [SERVER]`, `pin verify [--lock]`.
    Pin(PinCommand),
    /// `tool-cli export FORMAT [--server S] [--strict] [--base-url URL]`.
    Export(ExportRequest),
    /// `tool-cli mcp [--progressive]`: relay stdio to the daemon's MCP gateway.
    Mcp { progressive: bool },
    /// `tool-cli completions SHELL`: print the completion script.
    Completions(complete::Shell),
    /// `--agent-help`: the progressive-discovery primer.
    AgentHelp,
    /// `tool-cli skill [SERVER]`: a SKILL.md.
    Skill { server: Option<String> },
    /// `tool-cli __complete ...` (hidden): live names for the completion scripts.
    Complete(complete::Request),
    /// `tool-cli resource list [--server S]`.
    ListResources { server: Option<String> },
    /// `tool-cli resource templates [--server S]`.
    ListResourceTemplates { server: Option<String> },
    /// `tool-cli resource read [--server S] URI`.
    ReadResource {
        server: Option<String>,
        uri: String,
        /// `--meta`: print uri, mime type and size instead of the body.
        meta: bool,
    },
    /// `tool-cli prompt list|get`.
    Prompt(PromptCommand),
    /// `tool-cli health [--tools]`: every server's state, restarts, load, latency and breaker
    /// (with `--tools`, each tool's calls and latency too).
    Health { tools: bool },
    /// `tool-cli token mint ...`: a scoped child token.
    MintToken(MintTokenParams),
    /// `tool-cli token revoke TOKEN_ID`.
    RevokeToken { token_id: String },
    /// `tool-cli token list`.
    ListTokens,
    /// `tool-cli SERVER --help`: the server's tools, with how to go on.
    ServerHelp { server: String },
    /// `tool-cli daemon start|stop|status`.
    Daemon(DaemonCommand),
    /// `tool-cli server restart NAME`.
    RestartServer { server: String },
    /// `tool-cli server add|remove|reload`.
    ManageServers(ServerCommand),
    /// `tool-cli record --server S --out FILE`: startRecording, wait, stopRecording.
    Record(record::RecordCommand),
    /// `tool-cli config import ...`: run without a daemon.
    ConfigImport(ConfigImport),
    /// `tool-cli traces report ...`: from the daemon, or from `--file` without one.
    TracesReport(crate::traces::ReportRequest),
    /// `tool-cli session open|summary|list|close`.
    Session(session::SessionCommand),
    /// `tool-cli agent "TASK" ...`.
    Agent(agent::AgentCommand),
    /// `tool-cli search QUERY [--limit N] [--server S]`.
    Search(search::SearchRequest),
    /// `tool-cli auth login|status|logout`: OAuth sign-in to remote servers.
    Auth(auth::AuthCommand),
    /// `tool-cli chain ...` or `tool-cli many ...`: `callChain` or `callMany`.
    Batch(chain::BatchCommand),
}

/// `tool-cli daemon ...`: managing the daemon of the runtime file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DaemonCommand {
    /// Start one in the background and wait until it is ready.
    Start {
        /// `--config PATH`, passed on.
        config: Option<PathBuf>,
        /// Words after `--`, passed on to `tool-cli-daemon`.
        daemon_args: Vec<String>,
    },
    /// Stop it (SIGTERM) and wait until it has exited.
    Stop,
    /// Whether one runs: pid, address, uptime, servers.
    Status,
}

/// A parsed command line: the command and how to present its result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Invocation {
    pub(crate) command: Command,
    /// `--json` or `--output json`: print the method's raw result instead of the human
    /// rendering.
    pub(crate) json: bool,
    /// `--output raw`: a call prints its content exactly (text concatenated, binary bytes).
    pub(crate) raw: bool,
    /// `--out FILE`: write the body to this file and print a one-line summary instead.
    pub(crate) out: Option<PathBuf>,
    /// The request timeout the user gave (`--timeout`, `TOOL_CLI_TIMEOUT_MS`) in milliseconds,
    /// already clamped to the protocol's maximum; `None` leaves each server's own timeout.
    pub(crate) timeout_ms: Option<u64>,
    /// Whether the listener must prove its identity (not `--no-identity`, not
    /// `TOOL_CLI_REQUIRE_IDENTITY=0`).
    pub(crate) require_identity: bool,
    /// `--yes`: confirm a destructive tool call (`"confirm": true`); ignored by other commands.
    pub(crate) confirm: bool,
    /// `--all`: `tool-cli SERVER` lists every tool instead of the first page.
    pub(crate) all: bool,
    /// Things worth telling the user that do not stop the command (e.g. a clamped timeout).
    pub(crate) warnings: Vec<String>,
    /// `--session` (or `TOOL_CLI_SESSION`), `--dry-run`, `--hint`, `--idempotency-key`.
    pub(crate) call: call::CallOptions,
    /// `--stdio` / `--url`: a server the daemon adds for this command and removes after it.
    pub(crate) one_shot: Option<one_shot::OneShot>,
}

/// The environment variables the grammar depends on, read by the caller.
#[derive(Debug, Clone, Default)]
pub(crate) struct ArgsEnv {
    /// `TOOL_CLI_TIMEOUT_MS`, when set.
    pub(crate) timeout_ms: Option<String>,
    /// `TOOL_CLI_REQUIRE_IDENTITY`, when set.
    pub(crate) require_identity: Option<String>,
    /// `TOOL_CLI_SESSION`, when set.
    pub(crate) session: Option<String>,
}

/// Why parsing stopped: either clap has something to print (help, version, a grammar error, each
/// with its own exit code), or our own validation found a usage error.
#[derive(Debug)]
pub(crate) enum ParseOutcome {
    /// Print with `clap::Error::print` and exit with `clap::Error::exit_code`; this covers
    /// `--help` and `--version` (exit 0) as well as unknown flags (exit 2).
    Clap(clap::Error),
    /// A usage error of ours, exit code 2.
    Usage(Error),
}

/// Parses a command line. `read_stdin` is called only when the arguments are `-`.
pub(crate) fn parse<I, T>(
    args: I,
    env: &ArgsEnv,
    read_stdin: impl FnOnce() -> std::io::Result<String>,
) -> Result<Invocation, ParseOutcome>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args = hoist_subcommand(args);
    // The plain positional forms need none of clap's command tree, which is most of what a
    // short call spends before its request; `fast.rs` says which lines those are.
    if let Some(cli) = fast::plain(&args) {
        return interpret(cli, env, read_stdin);
    }
    parse_with_clap(args, env, read_stdin)
}

/// [`parse`] without the fast path: every line through clap.
fn parse_with_clap(
    args: Vec<OsString>,
    env: &ArgsEnv,
    read_stdin: impl FnOnce() -> std::io::Result<String>,
) -> Result<Invocation, ParseOutcome> {
    let matches = match Cli::command().try_get_matches_from(&args) {
        Ok(matches) => matches,
        Err(error) if error.kind() == clap::error::ErrorKind::DisplayHelp => {
            return server_help(&args, env).unwrap_or(Err(ParseOutcome::Clap(error)));
        }
        Err(error) => return Err(ParseOutcome::Clap(error)),
    };
    let cli = Cli::from_arg_matches(&matches).map_err(ParseOutcome::Clap)?;
    interpret(cli, env, read_stdin)
}

/// Checks what clap (or the fast path) read and turns it into an [`Invocation`].
fn interpret(
    mut cli: Cli,
    env: &ArgsEnv,
    read_stdin: impl FnOnce() -> std::io::Result<String>,
) -> Result<Invocation, ParseOutcome> {
    let usage = ParseOutcome::Usage;

    // `--stdio`/`--url`: the words are TOOL [ARGS_JSON]; the server is the one-shot one, so
    // they move one place right and the line reads as `tool-cli NAME TOOL ARGS_JSON`.
    let one_shot = one_shot::one_shot(cli.global.stdio.as_deref(), cli.global.url.as_deref())
        .map_err(usage)?;
    if let Some(server) = &one_shot {
        if cli.subcommand.is_some() {
            return Err(usage(Error::Usage(
                "--stdio and --url take TOOL [ARGS_JSON] (or nothing, to list the tools), not a \
                 subcommand"
                    .to_owned(),
            )));
        }
        if let Some(tool) = cli.tool.take() {
            cli.arguments.insert(0, tool);
        }
        cli.tool = cli.server.take();
        cli.server = Some(server.name.clone());
    }

    let mut warnings = Vec::new();
    let timeout_ms = settings::timeout_ms(
        cli.global.timeout.as_deref(),
        env.timeout_ms.as_deref(),
        &mut warnings,
    )
    .map_err(usage)?;
    let require_identity =
        settings::require_identity(cli.global.no_identity, env.require_identity.as_deref())
            .map_err(usage)?;

    // The routed call forms (`tool-cli TOOL '{...}'`, `tool-cli '*' TOOL`) come before the
    // positional grammar; `call.rs` says which words make one.
    let mut routed = match cli.subcommand {
        None => call::routed(cli.server.as_deref(), cli.tool.as_deref(), &cli.arguments),
        Some(_) => None,
    };
    let command = match cli.subcommand {
        _ if cli.global.agent_help => Command::AgentHelp,
        Some(TopSubcommand::Health { words, tools }) => {
            if !words.is_empty() {
                return Err(usage(Error::Usage(format!(
                    "`tool-cli health` takes no arguments, got {}; to reach a server named \
                     `health`, put `--` first: `tool-cli -- health {}`",
                    words.len(),
                    crate::render::truncate(&words.join(" "), 80)
                ))));
            }
            Command::Health { tools }
        }
        Some(TopSubcommand::Session { action }) => {
            Command::Session(session::command(action).map_err(usage)?)
        }
        Some(TopSubcommand::Agent(args)) => Command::Agent(agent::command(args).map_err(usage)?),
        Some(TopSubcommand::Token { action }) => token::token_command(action).map_err(usage)?,
        Some(TopSubcommand::Completions { shell }) => Command::Completions(shell),
        Some(TopSubcommand::Skill { server }) => Command::Skill { server },
        Some(TopSubcommand::Mcp { progressive }) => Command::Mcp { progressive },
        Some(TopSubcommand::Pin {
            action,
            server,
            pins,
        }) => Command::Pin(PinCommand {
            pins,
            action: match action {
                None => PinAction::Pin { server },
                Some(grammar::PinSubcommand::Diff { server }) => PinAction::Diff { server },
                Some(grammar::PinSubcommand::Verify { lock }) => PinAction::Verify { lock },
                Some(grammar::PinSubcommand::Approve {
                    server,
                    tool,
                    prompt,
                    resource_template,
                    instructions,
                }) => PinAction::Approve {
                    server,
                    item: match (tool, prompt, resource_template) {
                        (Some(tool), _, _) => PinItem::Tool(tool),
                        (_, Some(prompt), _) => PinItem::Prompt(prompt),
                        (_, _, Some(template)) => PinItem::ResourceTemplate(template),
                        // clap requires exactly one of the four.
                        _ => {
                            debug_assert!(instructions);
                            PinItem::Instructions
                        }
                    },
                },
                Some(grammar::PinSubcommand::Remove { server }) => PinAction::Remove { server },
            },
        }),
        Some(TopSubcommand::Export {
            format,
            server,
            strict,
            base_url,
        }) => Command::Export(ExportRequest {
            format,
            server,
            strict,
            base_url,
        }),
        Some(TopSubcommand::Complete { words }) => Command::Complete(complete::request(&words)),
        Some(TopSubcommand::Search(args)) => Command::Search(search::request(args).map_err(usage)?),
        Some(TopSubcommand::Prompt { action }) => {
            Command::Prompt(prompts::command(action).map_err(usage)?)
        }
        Some(TopSubcommand::Traces { action }) => {
            Command::TracesReport(crate::traces::request(action).map_err(usage)?)
        }
        Some(TopSubcommand::Config { action }) => Command::ConfigImport(config::command(action)),
        Some(TopSubcommand::Record(args)) => {
            let cwd = std::env::current_dir().unwrap_or_default();
            Command::Record(record::command(args, cli.global.out.as_deref(), &cwd).map_err(usage)?)
        }
        Some(TopSubcommand::Server { action }) => match server::command(action).map_err(usage)? {
            server::Parsed::Manage(command) => Command::ManageServers(command),
            server::Parsed::Restart(name) => Command::RestartServer { server: name },
            server::Parsed::List => Command::ListServers,
        },
        Some(TopSubcommand::Auth { action }) => Command::Auth(auth::command(action)),
        Some(TopSubcommand::Chain(args)) => {
            Command::Batch(chain::chain(args, read_stdin).map_err(usage)?)
        }
        Some(TopSubcommand::Many(args)) => {
            Command::Batch(chain::many(args, read_stdin).map_err(usage)?)
        }
        Some(TopSubcommand::Daemon { action }) => Command::Daemon(match action {
            DaemonAction::Start {
                config,
                daemon_args,
            } => DaemonCommand::Start {
                config,
                daemon_args,
            },
            DaemonAction::Stop => DaemonCommand::Stop,
            DaemonAction::Status => DaemonCommand::Status,
        }),
        Some(TopSubcommand::Resource { action }) => match action {
            ResourceAction::List { server } => Command::ListResources { server },
            ResourceAction::Templates { server } => Command::ListResourceTemplates { server },
            ResourceAction::Read { server, uri, meta } => {
                // Refused here, before any daemon is needed, so the answer never depends on one.
                if crate::render::is_skill_uri(&uri) {
                    return Err(usage(Error::Usage(format!(
                        "{uri} is a skill, not a resource: skill:// URIs are hidden from \
                         `tool-cli resource list` and cannot be read with `tool-cli resource read`"
                    ))));
                }
                Command::ReadResource { server, uri, meta }
            }
        },
        None if routed.is_some() => routed
            .take()
            .expect("checked by the guard")
            .map_err(usage)?,
        None => match (cli.server, cli.tool, cli.arguments.as_slice()) {
            (server, tool, _) if tool.is_none() && cli.global.args_file.is_some() => {
                return Err(usage(Error::Usage(format!(
                    "--args-file needs a tool to call: tool-cli {} TOOL --args-file PATH",
                    server.as_deref().unwrap_or("SERVER")
                ))));
            }
            (None, _, _) => Command::ListServers,
            (Some(server), None, _) => Command::ListTools { server },
            (Some(server), Some(tool), []) if cli.global.args_file.is_none() => {
                Command::DescribeTool { server, tool }
            }
            (Some(server), Some(tool), words) => {
                match kv::call_arguments(words, cli.global.args_file.clone(), read_stdin)
                    .map_err(usage)?
                {
                    kv::CallArguments::Json(arguments) => Command::CallTool {
                        server,
                        tool,
                        arguments,
                    },
                    kv::CallArguments::Words(arguments) => Command::CallToolWords {
                        server,
                        tool,
                        arguments,
                    },
                }
            }
        },
    };

    let call = call::options(cli.call, env.session.as_deref(), &command).map_err(usage)?;
    let (json, raw) = output::resolve(cli.global.json, cli.global.output).map_err(usage)?;
    // `raw` is a call's content; every other command has no content but its JSON result.
    let is_call = matches!(
        command,
        Command::CallTool { .. } | Command::CallToolWords { .. }
    );
    let (json, raw) = (json || (raw && !is_call), raw && is_call);
    Ok(Invocation {
        command,
        json,
        raw,
        out: cli.global.out,
        timeout_ms,
        require_identity,
        confirm: cli.global.yes,
        all: cli.global.all,
        warnings,
        call,
        one_shot,
    })
}

/// `tool-cli SERVER --help` (or `-h`): that server's tools rather than the global help, since the
/// server's tools are what a user asking there wants to know. `SERVER TOOL --help` shows the
/// tool's schema. `None` when the line names no server (or a subcommand's help was asked for):
/// clap's help is printed then.
fn server_help(args: &[OsString], env: &ArgsEnv) -> Option<Result<Invocation, ParseOutcome>> {
    let is_help = |word: &OsString| word == "--help" || word == "-h";
    let end = args
        .iter()
        .position(|word| word == "--")
        .unwrap_or(args.len());
    if !args[..end].iter().any(is_help) {
        return None;
    }
    let without_help: Vec<OsString> = args
        .iter()
        .enumerate()
        .filter(|(index, word)| *index >= end || !is_help(word))
        .map(|(_, word)| word.clone())
        .collect();
    let mut invocation = parse(without_help, env, || Ok(String::new())).ok()?;
    invocation.command = match invocation.command {
        Command::ListTools { server } => Command::ServerHelp { server },
        Command::DescribeTool { server, tool }
        | Command::CallTool { server, tool, .. }
        | Command::CallToolWords { server, tool, .. } => Command::DescribeTool { server, tool },
        _ => return None,
    };
    Some(Ok(invocation))
}

/// Moves a subcommand name (`resource`, `health`, `token`, `daemon`) that stands in the SERVER
/// position in front of any flags before it.
///
/// `args_conflicts_with_subcommands` makes clap treat `resource` as the subcommand only when no
/// argument came before it, which is what keeps `tool-cli demo resource` a tool named
/// `resource`; but a global flag also counts as an argument, so `tool-cli --json resource list`
/// (or `tool-cli --json health`) would lose the subcommand. Global flags are accepted after the subcommand too, so moving the
/// word first changes nothing else. A `--` ends the scan: after it every word is positional.
fn hoist_subcommand<I, T>(args: I) -> Vec<OsString>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let mut index = 1;
    while let Some(word) = args.get(index).and_then(|word| word.to_str()) {
        match word {
            "--" => break,
            "--out" | "--timeout" | "--session" | "--hint" | "--idempotency-key" | "--output"
            | "--args-file" | "--elicitation" | "--stdio" | "--url" => index += 2,
            flag if flag.starts_with('-') && flag != "-" => index += 1,
            "resource" | "prompt" | "health" | "token" | "daemon" | "server" | "traces"
            | "session" | "agent" | "search" | "auth" | "config" | "completions" | "__complete"
            | "chain" | "many" => {
                let word = args.remove(index);
                args.insert(1, word);
                break;
            }
            _ => break,
        }
    }
    args
}

/// Parses a tool's arguments, which must be one JSON object. `origin` says where the text came
/// from (`on the command line`, `read from stdin`), for the message.
fn parse_arguments(text: &str, origin: &str) -> Result<Map<String, Value>, Error> {
    if text.trim().is_empty() {
        return Err(Error::Usage(format!(
            "the tool arguments {origin} are empty; pass a JSON object such as '{{}}'"
        )));
    }
    let value: Value = serde_json::from_str(text).map_err(|error| {
        let mut message = format!(
            "the tool arguments {origin} are not valid JSON: {} at line {}, column {}",
            describe_json_error(&error),
            error.line(),
            error.column()
        );
        // The commonest cause is a shell that ate the double quotes: `{query: x}`.
        if !text.contains('"') && text.contains(':') {
            message.push_str(
                "; keys and strings need double quotes, so wrap the whole object in single \
                 quotes: '{\"key\": \"value\"}'",
            );
        }
        Error::Usage(message)
    })?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(Error::Usage(format!(
            "the tool arguments {origin} must be a JSON object such as \
             '{{\"key\": \"value\"}}', got {}",
            tool_cli_protocol::json::kind(&other)
        ))),
    }
}

/// serde_json's message without its trailing " at line X column Y", which we format ourselves.
fn describe_json_error(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(index) => text[..index].to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests;
