//! The command-line grammar: from `argv` (plus the environment and stdin) to a [`Command`].
//!
//! The heart of the client is a positional grammar, `tool-cli [SERVER] [TOOL] [ARGS_JSON]`, where
//! each extra word goes one step deeper in the progressive discovery (servers, then tools, then one
//! schema, then a call), next to the `resource`, `health` and `token` subcommands. clap does the tokenising, `--help` and
//! `--version`; everything it cannot express (the JSON must be an object, `-` reads stdin, the
//! timeout is clamped rather than refused) is checked here. The module does no I/O of its own:
//! the environment and stdin come in as arguments, so every form is unit-tested without a process.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use serde_json::{Map, Value};
use tool_cli_protocol::methods::MintTokenParams;
use tool_cli_protocol::{DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS};

use crate::error::Error;

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
    /// `tool-cli health`: every server's state, restarts, load, latency and breaker.
    Health,
    /// `tool-cli token mint ...`: a scoped child token.
    MintToken(MintTokenParams),
    /// `tool-cli token revoke TOKEN_ID`.
    RevokeToken { token_id: String },
    /// `tool-cli token list`.
    ListTokens,
    /// `tool-cli traces report ...`: from the daemon, or from `--file` without one.
    TracesReport(crate::traces::ReportRequest),
}

/// A parsed command line: the command and how to present its result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Invocation {
    pub(crate) command: Command,
    /// `--json`: print the method's raw result instead of the human rendering.
    pub(crate) json: bool,
    /// `--out FILE`: write the body to this file and print a one-line summary instead.
    pub(crate) out: Option<PathBuf>,
    /// Request timeout in milliseconds, already clamped to the protocol's maximum.
    pub(crate) timeout_ms: u64,
    /// `--yes`: confirm a destructive tool call (`"confirm": true`); ignored by other commands.
    pub(crate) confirm: bool,
    /// Things worth telling the user that do not stop the command (e.g. a clamped timeout).
    pub(crate) warnings: Vec<String>,
}

/// The environment variables the grammar depends on, read by the caller.
#[derive(Debug, Clone, Default)]
pub(crate) struct ArgsEnv {
    /// `TOOL_CLI_TIMEOUT_MS`, when set.
    pub(crate) timeout_ms: Option<String>,
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

const AFTER_HELP: &str = "\
Progressive discovery (each step adds one word):
  tool-cli                              list servers: state, tool count, examples
  tool-cli SERVER                       list the server's tools, one line each
  tool-cli SERVER TOOL                  show the tool's parameters and a usage example
  tool-cli SERVER TOOL '{\"k\": \"v\"}'     call the tool with these JSON arguments
  tool-cli SERVER TOOL -                call it with the JSON arguments read from stdin

  A call prints the tool's structuredContent as JSON when it has one, else its text content;
  images, audio and embedded resources are shown as one-line placeholders (use --json or --out).

Resources:
  tool-cli resource list [--server S]       resources of S, or of every ready server
  tool-cli resource templates [--server S]  resource templates, likewise
  tool-cli resource read [--server S] URI [--out FILE | --meta | --json]
  The `resource` subcommand wins over a server named `resource`; reach such a server with
  `tool-cli -- resource [TOOL] [ARGS_JSON]`.

Health:
  tool-cli health [--json]              per server: state, restarts, uptime, calls/errors,
                                        in-flight/queued, p50/p95 latency, circuit breaker
  health exits 1 when any server is unhealthy, so scripts can check it: every enabled server
  must be ready (disabled ones don't count). Like `resource`, the subcommand wins over a server
  named `health`; reach such a server with `tool-cli -- health [TOOL] [ARGS_JSON]`.

Destructive tools:
  tool-cli SERVER TOOL ARGS_JSON --yes  a tool marked destructive runs only with --yes
                                        (without it: exit 9, nothing is run)

Tokens (with the daemon's own token; hand a minted one to a sub-agent as TOOL_CLI_TOKEN):
  tool-cli token mint [--server GLOB]... [--tool SERVER/TOOL_GLOB]... [--read-only]
                      [--ttl SECONDS] [--label TEXT]
                                        prints only the new token on stdout, a summary on
                                        stderr: TOKEN=$(tool-cli token mint --server demo)
  tool-cli token list [--json]          live minted tokens: id, label, expiry, scope
  tool-cli token revoke TOKEN_ID        exit 1 when no live token has that id
  The subcommand wins over a server named `token`; reach it with `tool-cli -- token ...`.

Traces (the daemon appends a line per call to its traces.jsonl):
  tool-cli traces report [--since 24h] [--by day|server|tool|session] [--executed-only]
                         [--json | --markdown] [--file PATH]
                                        calls, errors, success rate, p50/p95 latency, tokens
                                        and cost per group; --file reads a trace file (and its
                                        rotated PATH.1, ...) itself, without a daemon

Environment:
  TOOL_CLI_PORT, TOOL_CLI_TOKEN  the daemon's port and bearer token; when unset they are read
                                 from the daemon's runtime file (daemon.json)
  TOOL_CLI_HOST                  address of the daemon (default 127.0.0.1)
  TOOL_CLI_SOCKET                the daemon's Unix socket, used instead of TCP; a runtime file
                                 naming a socket is used too, unless TOOL_CLI_PORT is set
  TOOL_CLI_TIMEOUT_MS            request timeout, like --timeout (default 30000, at most 300000)
  TOOL_CLI_RUNTIME_DIR           directory of the runtime file (default $XDG_RUNTIME_DIR/tool-cli)
  Start a daemon with: eval \"$(tool-cli-daemon --print-env &)\"

Exit codes:
  0  success
  1  other error (including errors of the MCP server itself), an unhealthy server in
     `tool-cli health`, or a server that is busy or whose circuit breaker is open (both
     transient: the message says when to retry)
  2  usage error: bad command line or arguments that are not a JSON object
  3  cannot reach the daemon (no port or token found, connection refused, connect timeout)
  4  the daemon refused the token (HTTP 401/403)
  5  invalid params: unknown server or tool, arguments that fail the tool's input schema
  6  the tool ran and reported an error (isError: true)
  7  timed out (no answer within --timeout, or the daemon's call timeout)
  8  the listener did not prove it holds the token, so the token was not sent (a stale
     TOOL_CLI_PORT or TOOL_CLI_SOCKET, another program there, or a revoked token)
  9  not permitted: the token's scope or the daemon's policy forbids it, or a destructive
     tool needs --yes";

/// clap's view of the command line; converted to a [`Command`] by [`parse`].
#[derive(Debug, Parser)]
#[command(
    name = "tool-cli",
    version,
    override_usage = "tool-cli [OPTIONS] [SERVER] [TOOL] [ARGS_JSON]\n       \
                      tool-cli resource <list|templates|read> [OPTIONS]\n       \
                      tool-cli health [--json]\n       \
                      tool-cli token <mint|list|revoke> [OPTIONS]\n       \
                      tool-cli traces report [OPTIONS]",
    about = "Progressive access to every MCP tool behind a tool-cli daemon",
    after_help = AFTER_HELP,
    disable_help_subcommand = true,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    subcommand: Option<TopSubcommand>,

    /// The server to inspect or call (see `tool-cli` for the list)
    server: Option<String>,

    /// The tool to describe or call (see `tool-cli SERVER` for the list)
    tool: Option<String>,

    // More than one word is collected here rather than refused by clap, so that the usual
    // mistake (an unquoted object split by the shell) gets a message that says to quote it.
    /// The tool's arguments as a JSON object, or `-` to read them from stdin
    #[arg(value_name = "ARGS_JSON")]
    arguments: Vec<String>,

    #[command(flatten)]
    global: GlobalFlags,
}

/// Flags accepted anywhere on the line, before or after the positionals and in subcommands.
#[derive(Debug, Args)]
struct GlobalFlags {
    /// Print the complete raw JSON result (complete schema, complete CallToolResult, ...)
    #[arg(long, global = true)]
    json: bool,

    /// Write the result body to FILE and print a one-line summary instead
    #[arg(long, global = true, value_name = "FILE")]
    out: Option<PathBuf>,

    /// Request timeout in milliseconds [default: 30000, at most 300000]
    #[arg(long, global = true, value_name = "MS", allow_hyphen_values = true)]
    timeout: Option<String>,

    /// Confirm a call of a destructive tool (without it the daemon refuses, exit 9)
    #[arg(long, global = true)]
    yes: bool,
}

#[derive(Debug, Subcommand)]
enum TopSubcommand {
    /// List and read MCP resources (wins over a server named `resource`)
    Resource {
        #[command(subcommand)]
        action: ResourceAction,
    },
    /// Show server health, exit 1 if any is unhealthy (wins over a server named `health`)
    Health {
        // Collected rather than refused by clap, so that `tool-cli health TOOL` (meant for a
        // server named `health`) gets a message that says how to reach that server.
        #[arg(hide = true)]
        words: Vec<String>,
    },
    /// Mint, list and revoke scoped tokens (wins over a server named `token`)
    Token {
        #[command(subcommand)]
        action: TokenAction,
    },
    /// Report on the daemon's trace of calls (wins over a server named `traces`)
    Traces {
        #[command(subcommand)]
        action: crate::traces::TracesAction,
    },
}

#[derive(Debug, Subcommand)]
enum TokenAction {
    /// Mint a scoped token; prints only the token on stdout (--json: the whole result)
    Mint {
        /// Only servers matching this glob (`*`, `?`); repeatable [default: every server]
        #[arg(long = "server", value_name = "GLOB")]
        servers: Vec<String>,

        /// Only tools matching SERVER/TOOL_GLOB, e.g. `fs/read_*`; repeatable [default: every tool]
        #[arg(long = "tool", value_name = "SERVER/TOOL_GLOB")]
        tools: Vec<String>,

        /// Resources matching SERVER/URI_GLOB, e.g. `fs/file:///home/me/*`; repeatable
        /// [default: no resources at all]
        #[arg(long = "resource", value_name = "SERVER/URI_GLOB")]
        resources: Vec<String>,

        /// Only tools annotated read-only (readOnlyHint)
        #[arg(long)]
        read_only: bool,

        /// Lifetime in seconds (at most 30 days) [default: until the daemon stops]
        #[arg(long, value_name = "SECONDS")]
        ttl: Option<u64>,

        /// A label shown by `tool-cli token list`
        #[arg(long, value_name = "TEXT")]
        label: Option<String>,
    },
    /// List live minted tokens (never their secrets)
    List,
    /// Revoke a minted token; exit 1 when no live token has that id
    Revoke {
        /// The token's id, as printed by `mint` and `list` (or the token itself)
        #[arg(value_name = "TOKEN_ID")]
        token_id: String,
    },
}

#[derive(Debug, Subcommand)]
enum ResourceAction {
    /// List resources, grouped by server (skill:// resources are hidden)
    List {
        /// Only this server [default: every ready server]
        #[arg(long, value_name = "S")]
        server: Option<String>,
    },
    /// List resource templates, grouped by server
    Templates {
        /// Only this server [default: every ready server]
        #[arg(long, value_name = "S")]
        server: Option<String>,
    },
    /// Read one resource; binary content needs --out
    Read {
        /// The server holding it [default: the only ready server]
        #[arg(long, value_name = "S")]
        server: Option<String>,

        /// The resource's URI, as shown by `tool-cli resource list`
        uri: String,

        /// Print uri, mime type and size of each content instead of the body
        #[arg(long, conflicts_with_all = ["json", "out"])]
        meta: bool,
    },
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
    let matches = Cli::command()
        .try_get_matches_from(hoist_subcommand(args))
        .map_err(ParseOutcome::Clap)?;
    let cli = Cli::from_arg_matches(&matches).map_err(ParseOutcome::Clap)?;
    let usage = ParseOutcome::Usage;

    let mut warnings = Vec::new();
    let timeout_ms =
        resolve_timeout(cli.global.timeout.as_deref(), env, &mut warnings).map_err(usage)?;

    let command = match cli.subcommand {
        Some(TopSubcommand::Health { words }) => {
            if !words.is_empty() {
                return Err(usage(Error::Usage(format!(
                    "`tool-cli health` takes no arguments, got {}; to reach a server named \
                     `health`, put `--` first: `tool-cli -- health {}`",
                    words.len(),
                    crate::render::truncate(&words.join(" "), 80)
                ))));
            }
            Command::Health
        }
        Some(TopSubcommand::Token { action }) => token_command(action).map_err(usage)?,
        Some(TopSubcommand::Traces { action }) => {
            Command::TracesReport(crate::traces::request(action).map_err(usage)?)
        }
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
        None => match (cli.server, cli.tool, cli.arguments.as_slice()) {
            (None, _, _) => Command::ListServers,
            (Some(server), None, _) => Command::ListTools { server },
            (Some(server), Some(tool), []) => Command::DescribeTool { server, tool },
            (Some(_), Some(_), [_, _, ..]) => {
                return Err(usage(Error::Usage(format!(
                    "expected one ARGS_JSON word after SERVER TOOL, got {}: {}; quote the \
                     whole object in single quotes, e.g. '{{\"query\": \"select 1\"}}'",
                    cli.arguments.len(),
                    crate::render::truncate(&cli.arguments.join(" "), 80)
                ))));
            }
            (Some(server), Some(tool), [text]) => {
                let arguments = if text.as_str() == "-" {
                    let stdin = read_stdin().map_err(|error| {
                        usage(Error::Usage(format!(
                            "cannot read the JSON arguments from stdin: {error}"
                        )))
                    })?;
                    parse_arguments(&stdin, "read from stdin").map_err(usage)?
                } else {
                    parse_arguments(text, "on the command line").map_err(usage)?
                };
                Command::CallTool {
                    server,
                    tool,
                    arguments,
                }
            }
        },
    };

    Ok(Invocation {
        command,
        json: cli.global.json,
        out: cli.global.out,
        timeout_ms,
        confirm: cli.global.yes,
        warnings,
    })
}

/// `tool-cli token ...`, with the checks that need no daemon.
fn token_command(action: TokenAction) -> Result<Command, Error> {
    match action {
        TokenAction::Mint {
            servers,
            tools,
            resources,
            read_only,
            ttl,
            label,
        } => {
            let well_formed = |glob: &String| {
                glob.split_once('/')
                    .is_some_and(|(server, rest)| !server.is_empty() && !rest.is_empty())
            };
            if let Some(glob) = tools.iter().find(|glob| !well_formed(glob)) {
                return Err(Error::Usage(format!(
                    "--tool takes SERVER/TOOL_GLOB, e.g. `--tool 'fs/read_*'`, got {glob:?}"
                )));
            }
            if let Some(glob) = resources.iter().find(|glob| !well_formed(glob)) {
                return Err(Error::Usage(format!(
                    "--resource takes SERVER/URI_GLOB, e.g. `--resource 'fs/file:///tmp/*'`, \
                     got {glob:?}"
                )));
            }
            if ttl == Some(0) {
                return Err(Error::Usage(
                    "--ttl must be at least 1 second; leave it out for a token that lives \
                     until the daemon stops"
                        .to_owned(),
                ));
            }
            let non_empty = |globs: Vec<String>| (!globs.is_empty()).then_some(globs);
            Ok(Command::MintToken(MintTokenParams {
                servers: non_empty(servers),
                tools: non_empty(tools),
                resources: non_empty(resources),
                read_only,
                ttl_seconds: ttl,
                label,
            }))
        }
        TokenAction::List => Ok(Command::ListTokens),
        TokenAction::Revoke { token_id } => {
            use tool_cli_protocol::identity::is_token_id;
            let token_id = token_id.trim();
            if is_token_id(token_id) {
                return Ok(Command::RevokeToken {
                    token_id: token_id.to_owned(),
                });
            }
            // The token itself names its id, so `tool-cli token revoke "$TOKEN"` works too.
            let is_token = token_id.len() == tool_cli_protocol::TOKEN_BYTES * 2
                && token_id.bytes().all(|byte| byte.is_ascii_hexdigit());
            if is_token {
                return Ok(Command::RevokeToken {
                    token_id: crate::identity::token_id(token_id),
                });
            }
            // Not echoed: a mistyped argument here may well be a secret.
            Err(Error::Usage(format!(
                "expected a token id (16 lowercase hex characters, as printed by `tool-cli \
                 token mint` and `tool-cli token list`) or the token itself, got {} characters \
                 that are neither",
                token_id.chars().count()
            )))
        }
    }
}

/// Moves a subcommand name (`resource`, `health`, `token`) that stands in the SERVER position in front of
/// any flags before it.
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
            "--out" | "--timeout" => index += 2,
            flag if flag.starts_with('-') && flag != "-" => index += 1,
            "resource" | "health" | "token" | "traces" => {
                let word = args.remove(index);
                args.insert(1, word);
                break;
            }
            _ => break,
        }
    }
    args
}

/// The request timeout: `--timeout` wins over `TOOL_CLI_TIMEOUT_MS`, which wins over the default.
/// Values above the protocol's maximum are clamped with a warning rather than refused, because a
/// long timeout is a reasonable wish that we can partly honour; zero and non-numbers are refused.
fn resolve_timeout(
    flag: Option<&str>,
    env: &ArgsEnv,
    warnings: &mut Vec<String>,
) -> Result<u64, Error> {
    let (text, source) = match (flag, env.timeout_ms.as_deref()) {
        (Some(text), _) => (text, "--timeout"),
        (None, Some(text)) if !text.trim().is_empty() => (text, "TOOL_CLI_TIMEOUT_MS"),
        _ => return Ok(DEFAULT_TIMEOUT_MS),
    };
    let milliseconds: u64 = text.trim().parse().map_err(|_| {
        Error::Usage(format!(
            "{source} must be a whole number of milliseconds between 1 and {MAX_TIMEOUT_MS}, \
             got {text:?}"
        ))
    })?;
    if milliseconds == 0 {
        return Err(Error::Usage(format!(
            "{source} must be at least 1 millisecond, got 0"
        )));
    }
    if milliseconds > MAX_TIMEOUT_MS {
        warnings.push(format!(
            "{source} {milliseconds} is above the maximum; using {MAX_TIMEOUT_MS} ms"
        ));
        return Ok(MAX_TIMEOUT_MS);
    }
    Ok(milliseconds)
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
            json_kind(&other)
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

/// "an array", "a string", ... for messages.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::exit;

    fn no_stdin() -> std::io::Result<String> {
        panic!("stdin must not be read")
    }

    fn parse_ok(args: &[&str]) -> Invocation {
        let argv = std::iter::once("tool-cli").chain(args.iter().copied());
        match parse(argv, &ArgsEnv::default(), no_stdin) {
            Ok(invocation) => invocation,
            Err(outcome) => panic!("{args:?} failed: {outcome:?}"),
        }
    }

    fn command(args: &[&str]) -> Command {
        parse_ok(args).command
    }

    /// The usage message of our own validation, panicking on success or on a clap error.
    fn usage_error(args: &[&str]) -> String {
        let argv = std::iter::once("tool-cli").chain(args.iter().copied());
        match parse(argv, &ArgsEnv::default(), no_stdin) {
            Err(ParseOutcome::Usage(error)) => {
                assert_eq!(error.exit_code(), exit::USAGE);
                error.to_string()
            }
            other => panic!("{args:?}: expected a usage error, got {other:?}"),
        }
    }

    /// The clap error kind, panicking when clap accepted the line.
    fn clap_error(args: &[&str]) -> clap::Error {
        let argv = std::iter::once("tool-cli").chain(args.iter().copied());
        match parse(argv, &ArgsEnv::default(), no_stdin) {
            Err(ParseOutcome::Clap(error)) => error,
            other => panic!("{args:?}: expected a clap error, got {other:?}"),
        }
    }

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn each_word_goes_one_step_deeper() {
        assert_eq!(command(&[]), Command::ListServers);
        assert_eq!(
            command(&["demo"]),
            Command::ListTools {
                server: "demo".into()
            }
        );
        assert_eq!(
            command(&["demo", "sql_query"]),
            Command::DescribeTool {
                server: "demo".into(),
                tool: "sql_query".into()
            }
        );
        assert_eq!(
            command(&["demo", "sql_query", r#"{"query": "select 1", "limit": 5}"#]),
            Command::CallTool {
                server: "demo".into(),
                tool: "sql_query".into(),
                arguments: object(json!({"query": "select 1", "limit": 5})),
            }
        );
    }

    #[test]
    fn empty_object_is_a_call_without_arguments() {
        assert_eq!(
            command(&["demo", "describe_schema", "{}"]),
            Command::CallTool {
                server: "demo".into(),
                tool: "describe_schema".into(),
                arguments: Map::new(),
            }
        );
    }

    #[test]
    fn defaults_without_flags() {
        let invocation = parse_ok(&["demo"]);
        assert!(!invocation.json);
        assert_eq!(invocation.out, None);
        assert_eq!(invocation.timeout_ms, DEFAULT_TIMEOUT_MS);
        assert!(invocation.warnings.is_empty());
    }

    #[test]
    fn flags_are_accepted_anywhere() {
        for args in [
            &[
                "--json",
                "--out",
                "f.json",
                "--timeout",
                "500",
                "demo",
                "t",
                "{}",
            ][..],
            &[
                "demo",
                "--json",
                "t",
                "--out",
                "f.json",
                "{}",
                "--timeout",
                "500",
            ],
            &["demo", "t", "{}", "--timeout=500", "--out=f.json", "--json"],
        ] {
            let invocation = parse_ok(args);
            assert!(invocation.json, "{args:?}");
            assert_eq!(invocation.out, Some(PathBuf::from("f.json")), "{args:?}");
            assert_eq!(invocation.timeout_ms, 500, "{args:?}");
            assert!(
                matches!(invocation.command, Command::CallTool { .. }),
                "{args:?}"
            );
        }
    }

    #[test]
    fn invalid_json_names_line_and_column() {
        let message = usage_error(&["demo", "t", "{\"a\": 1,\n \"b\" 2}"]);
        assert!(message.contains("not valid JSON"), "{message}");
        assert!(message.contains("line 2, column 6"), "{message}");
        assert!(message.contains("on the command line"), "{message}");
    }

    #[test]
    fn json_without_quotes_suggests_single_quotes() {
        let message = usage_error(&["demo", "t", "{query: select}"]);
        assert!(
            message.contains("wrap the whole object in single quotes"),
            "{message}"
        );
    }

    #[test]
    fn non_object_json_says_what_it_got() {
        for (text, kind) in [
            ("[1, 2]", "got an array"),
            ("\"x\"", "got a string"),
            ("42", "got a number"),
            ("null", "got null"),
            ("true", "got a boolean"),
        ] {
            let message = usage_error(&["demo", "t", text]);
            assert!(message.contains("must be a JSON object"), "{message}");
            assert!(message.contains(kind), "{text}: {message}");
        }
    }

    #[test]
    fn empty_arguments_are_refused() {
        let message = usage_error(&["demo", "t", "  "]);
        assert!(message.contains("empty"), "{message}");
    }

    #[test]
    fn dash_reads_arguments_from_stdin() {
        let argv = ["tool-cli", "demo", "t", "-", "--json"];
        let invocation = parse(argv, &ArgsEnv::default(), || {
            Ok("{\"query\": \"select 1\"}\n".to_owned())
        })
        .unwrap();
        assert!(invocation.json);
        assert_eq!(
            invocation.command,
            Command::CallTool {
                server: "demo".into(),
                tool: "t".into(),
                arguments: object(json!({"query": "select 1"})),
            }
        );
    }

    #[test]
    fn bad_stdin_is_a_usage_error_naming_stdin() {
        let argv = ["tool-cli", "demo", "t", "-"];
        match parse(argv, &ArgsEnv::default(), || Ok("[]".to_owned())) {
            Err(ParseOutcome::Usage(error)) => {
                let message = error.to_string();
                assert!(message.contains("from stdin"), "{message}");
                assert!(message.contains("got an array"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        match parse(argv, &ArgsEnv::default(), || {
            Err(std::io::Error::other("closed"))
        }) {
            Err(ParseOutcome::Usage(error)) => {
                assert!(error.to_string().contains("cannot read"), "{error}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn json_split_by_the_shell_asks_for_quotes() {
        let message = usage_error(&["demo", "t", "{\"query\":", "select 1}"]);
        assert!(message.contains("got 2"), "{message}");
        assert!(message.contains("single quotes"), "{message}");
    }

    #[test]
    fn unknown_flag_is_a_clap_usage_error() {
        let error = clap_error(&["--frobnicate"]);
        assert_eq!(error.kind(), clap::error::ErrorKind::UnknownArgument);
        assert_eq!(error.exit_code(), exit::USAGE);
    }

    #[test]
    fn help_and_version_exit_zero() {
        for flag in ["--help", "-h", "--version", "-V"] {
            let error = clap_error(&[flag]);
            assert_eq!(error.exit_code(), exit::OK, "{flag}");
        }
        let help = clap_error(&["--help"]).render().to_string();
        for needle in [
            "Exit codes",
            "TOOL_CLI_TOKEN",
            "tool-cli SERVER TOOL",
            "resource",
        ] {
            assert!(help.contains(needle), "help lacks {needle}");
        }
    }

    #[test]
    fn resource_subcommands() {
        assert_eq!(
            command(&["resource", "list"]),
            Command::ListResources { server: None }
        );
        assert_eq!(
            command(&["resource", "list", "--server", "demo"]),
            Command::ListResources {
                server: Some("demo".into())
            }
        );
        assert_eq!(
            command(&["resource", "templates", "--server=demo"]),
            Command::ListResourceTemplates {
                server: Some("demo".into())
            }
        );
        assert_eq!(
            command(&["resource", "read", "demo://schema"]),
            Command::ReadResource {
                server: None,
                uri: "demo://schema".into(),
                meta: false
            }
        );
        assert_eq!(
            command(&[
                "resource",
                "read",
                "--meta",
                "demo://schema",
                "--server",
                "demo"
            ]),
            Command::ReadResource {
                server: Some("demo".into()),
                uri: "demo://schema".into(),
                meta: true
            }
        );
    }

    #[test]
    fn skill_uris_are_refused_by_read() {
        let message = usage_error(&["resource", "read", "skill://pdf/SKILL.md"]);
        assert!(message.contains("is a skill"), "{message}");
    }

    #[test]
    fn global_flags_work_with_resource_subcommands() {
        let invocation = parse_ok(&["--json", "resource", "list", "--timeout", "100"]);
        assert_eq!(invocation.command, Command::ListResources { server: None });
        assert!(invocation.json);
        assert_eq!(invocation.timeout_ms, 100);
        let invocation = parse_ok(&["--timeout=7", "resource", "--json", "templates"]);
        assert_eq!(
            invocation.command,
            Command::ListResourceTemplates { server: None }
        );
        assert!(invocation.json);
        assert_eq!(invocation.timeout_ms, 7);
        let invocation = parse_ok(&["resource", "read", "file:///a.png", "--out", "a.png"]);
        assert_eq!(invocation.out, Some(PathBuf::from("a.png")));
    }

    #[test]
    fn meta_excludes_out_and_json() {
        clap_error(&["resource", "read", "x://y", "--meta", "--json"]);
        clap_error(&["resource", "read", "x://y", "--meta", "--out", "f"]);
    }

    #[test]
    fn resource_read_needs_a_uri() {
        let error = clap_error(&["resource", "read"]);
        assert_eq!(error.exit_code(), exit::USAGE);
    }

    #[test]
    fn resource_subcommand_wins_and_double_dash_reaches_a_server_named_resource() {
        assert!(matches!(
            clap_error(&["resource"]).kind(),
            clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                | clap::error::ErrorKind::MissingSubcommand
        ));
        assert_eq!(
            command(&["--", "resource"]),
            Command::ListTools {
                server: "resource".into()
            }
        );
        assert_eq!(
            command(&["--", "resource", "list"]),
            Command::DescribeTool {
                server: "resource".into(),
                tool: "list".into()
            }
        );
    }

    #[test]
    fn hoisting_moves_only_a_subcommand_in_server_position() {
        let hoisted = |args: &[&str]| -> Vec<String> {
            hoist_subcommand(args.iter().copied())
                .into_iter()
                .map(|word| word.into_string().unwrap())
                .collect()
        };
        assert_eq!(
            hoisted(&[
                "t",
                "--json",
                "--out",
                "f",
                "--timeout",
                "5",
                "resource",
                "list"
            ]),
            [
                "t",
                "resource",
                "--json",
                "--out",
                "f",
                "--timeout",
                "5",
                "list"
            ]
        );
        assert_eq!(
            hoisted(&["t", "--out=f", "resource"]),
            ["t", "resource", "--out=f"]
        );
        assert_eq!(
            hoisted(&["t", "demo", "resource"]),
            ["t", "demo", "resource"]
        );
        assert_eq!(hoisted(&["t", "--", "resource"]), ["t", "--", "resource"]);
        assert_eq!(
            hoisted(&["t", "--json", "health"]),
            ["t", "health", "--json"]
        );
        assert_eq!(hoisted(&["t", "--", "health"]), ["t", "--", "health"]);
        assert_eq!(
            hoisted(&["t", "--yes", "--json", "token", "list"]),
            ["t", "token", "--yes", "--json", "list"]
        );
        assert_eq!(hoisted(&["t", "--", "token"]), ["t", "--", "token"]);
        assert_eq!(
            hoisted(&["t", "--out", "resource"]),
            ["t", "--out", "resource"]
        );
    }

    #[test]
    fn resource_as_a_tool_name_after_a_server() {
        assert_eq!(
            command(&["demo", "resource"]),
            Command::DescribeTool {
                server: "demo".into(),
                tool: "resource".into()
            }
        );
        assert_eq!(
            command(&["--json", "--", "demo", "resource", "{}"]),
            Command::CallTool {
                server: "demo".into(),
                tool: "resource".into(),
                arguments: Map::new()
            }
        );
        assert_eq!(
            command(&["demo", "--json", "resource"]),
            Command::DescribeTool {
                server: "demo".into(),
                tool: "resource".into()
            }
        );
    }

    #[test]
    fn health_subcommand_with_flags_anywhere() {
        for args in [
            &["health"][..],
            &["health", "--json"],
            &["--json", "health"],
            &["--timeout", "500", "health", "--json"],
        ] {
            let invocation = parse_ok(args);
            assert_eq!(invocation.command, Command::Health, "{args:?}");
            assert_eq!(invocation.json, args.contains(&"--json"), "{args:?}");
        }
        assert_eq!(parse_ok(&["--timeout=500", "health"]).timeout_ms, 500);
    }

    #[test]
    fn health_subcommand_wins_and_double_dash_reaches_a_server_named_health() {
        assert_eq!(
            command(&["--", "health"]),
            Command::ListTools {
                server: "health".into()
            }
        );
        assert_eq!(
            command(&["--json", "--", "health", "check", "{}"]),
            Command::CallTool {
                server: "health".into(),
                tool: "check".into(),
                arguments: Map::new()
            }
        );
        assert_eq!(
            command(&["demo", "health"]),
            Command::DescribeTool {
                server: "demo".into(),
                tool: "health".into()
            }
        );
        let message = usage_error(&["health", "check", "{}"]);
        assert!(message.contains("takes no arguments, got 2"), "{message}");
        assert!(
            message.contains("`tool-cli -- health check {}`"),
            "{message}"
        );
    }

    #[test]
    fn help_documents_the_health_exit_code() {
        let help = clap_error(&["--help"]).render().to_string();
        assert!(
            help.contains("health exits 1 when any server is unhealthy, so scripts can check it"),
            "{help}"
        );
        assert!(help.contains("tool-cli health [--json]"), "{help}");
        let help = clap_error(&["health", "--help"]).render().to_string();
        assert!(help.contains("exit 1 if any is unhealthy"), "{help}");
    }

    #[test]
    fn a_server_named_like_a_resource_action_is_just_a_server() {
        assert_eq!(
            command(&["list"]),
            Command::ListTools {
                server: "list".into()
            }
        );
    }

    #[test]
    fn timeout_from_flag_env_or_default() {
        let env = ArgsEnv {
            timeout_ms: Some("1234".into()),
        };
        let from_env = parse(["tool-cli"], &env, no_stdin).unwrap();
        assert_eq!(from_env.timeout_ms, 1234);
        let flag_wins = parse(["tool-cli", "--timeout", "99"], &env, no_stdin).unwrap();
        assert_eq!(flag_wins.timeout_ms, 99);
        let empty_env = ArgsEnv {
            timeout_ms: Some(String::new()),
        };
        let default = parse(["tool-cli"], &empty_env, no_stdin).unwrap();
        assert_eq!(default.timeout_ms, DEFAULT_TIMEOUT_MS);
    }

    #[test]
    fn large_timeout_is_clamped_with_a_warning() {
        let invocation = parse_ok(&["--timeout", "999999"]);
        assert_eq!(invocation.timeout_ms, MAX_TIMEOUT_MS);
        assert_eq!(invocation.warnings.len(), 1);
        assert!(invocation.warnings[0].contains("300000"));
    }

    #[test]
    fn bad_timeouts_are_usage_errors() {
        for bad in ["abc", "-5", "0", "1.5", "", "99999999999999999999999"] {
            let message = usage_error(&["--timeout", bad]);
            assert!(message.contains("--timeout"), "{bad}: {message}");
        }
        let env = ArgsEnv {
            timeout_ms: Some("soon".into()),
        };
        match parse(["tool-cli"], &env, no_stdin) {
            Err(ParseOutcome::Usage(error)) => {
                assert!(error.to_string().contains("TOOL_CLI_TIMEOUT_MS"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn yes_confirms_a_call_anywhere_on_the_line() {
        for args in [
            &["--yes", "demo", "drop", "{}"][..],
            &["demo", "drop", "{}", "--yes"],
            &["demo", "--yes", "drop", "{}"],
        ] {
            let invocation = parse_ok(args);
            assert!(invocation.confirm, "{args:?}");
            assert!(
                matches!(invocation.command, Command::CallTool { .. }),
                "{args:?}"
            );
        }
        assert!(!parse_ok(&["demo", "drop", "{}"]).confirm);
    }

    #[test]
    fn token_mint_collects_repeated_globs_and_options() {
        assert_eq!(
            command(&["token", "mint"]),
            Command::MintToken(MintTokenParams::default())
        );
        let invocation = parse_ok(&[
            "--json",
            "token",
            "mint",
            "--server",
            "demo",
            "--server=fs*",
            "--tool",
            "fs/read_*",
            "--read-only",
            "--ttl",
            "3600",
            "--label",
            "sub-agent 1",
        ]);
        assert!(invocation.json);
        assert_eq!(
            invocation.command,
            Command::MintToken(MintTokenParams {
                servers: Some(vec!["demo".into(), "fs*".into()]),
                tools: Some(vec!["fs/read_*".into()]),
                resources: None,
                read_only: true,
                ttl_seconds: Some(3600),
                label: Some("sub-agent 1".into()),
            })
        );
    }

    #[test]
    fn token_mint_refuses_malformed_tool_globs_and_zero_ttl() {
        for glob in ["read_*", "/read_*", "fs/"] {
            let message = usage_error(&["token", "mint", "--tool", glob]);
            assert!(message.contains("SERVER/TOOL_GLOB"), "{glob}: {message}");
        }
        let message = usage_error(&["token", "mint", "--ttl", "0"]);
        assert!(message.contains("at least 1 second"), "{message}");
        assert_eq!(
            clap_error(&["token", "mint", "--ttl", "-5"]).exit_code(),
            exit::USAGE
        );
        assert_eq!(
            clap_error(&["token", "mint", "--ttl", "1h"]).exit_code(),
            exit::USAGE
        );
    }

    #[test]
    fn token_list_and_revoke() {
        assert_eq!(command(&["token", "list"]), Command::ListTokens);
        assert_eq!(command(&["--json", "token", "list"]), Command::ListTokens);
        assert_eq!(
            command(&["token", "revoke", "a8ae6e6ee929abea"]),
            Command::RevokeToken {
                token_id: "a8ae6e6ee929abea".into()
            }
        );
        // The token itself is turned into its id, and never sent.
        let token = "0123456789abcdef".repeat(4);
        assert_eq!(
            command(&["token", "revoke", &token]),
            Command::RevokeToken {
                token_id: "a8ae6e6ee929abea".into()
            }
        );
        let message = usage_error(&["token", "revoke", "A8AE6E6EE929ABEA-secret"]);
        assert!(message.contains("expected a token id"), "{message}");
        assert!(
            !message.contains("secret"),
            "the argument is not echoed: {message}"
        );
        assert_eq!(clap_error(&["token", "revoke"]).exit_code(), exit::USAGE);
    }

    #[test]
    fn token_subcommand_wins_and_double_dash_reaches_a_server_named_token() {
        assert_eq!(clap_error(&["token"]).exit_code(), exit::USAGE);
        assert_eq!(
            command(&["--", "token"]),
            Command::ListTools {
                server: "token".into()
            }
        );
        assert_eq!(
            command(&["--", "token", "mint", "{}"]),
            Command::CallTool {
                server: "token".into(),
                tool: "mint".into(),
                arguments: Map::new()
            }
        );
        assert_eq!(
            command(&["demo", "token"]),
            Command::DescribeTool {
                server: "demo".into(),
                tool: "token".into()
            }
        );
        assert_eq!(
            command(&["--timeout", "5", "token", "list"]),
            Command::ListTokens
        );
    }

    #[test]
    fn help_documents_the_new_exit_codes_tokens_and_socket() {
        let help = clap_error(&["--help"]).render().to_string();
        for needle in [
            "8  the listener did not prove it holds the token",
            "9  not permitted",
            "--yes",
            "TOOL_CLI_SOCKET",
            "tool-cli token mint",
            "TOKEN=$(tool-cli token mint --server demo)",
            "tool-cli -- token",
        ] {
            assert!(help.contains(needle), "help lacks {needle}:\n{help}");
        }
        let help = clap_error(&["token", "mint", "--help"])
            .render()
            .to_string();
        for needle in [
            "--server <GLOB>",
            "--tool <SERVER/TOOL_GLOB>",
            "--read-only",
            "--ttl",
        ] {
            assert!(help.contains(needle), "mint help lacks {needle}:\n{help}");
        }
    }
}
