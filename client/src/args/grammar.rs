//! clap's view of the command line: the top-level [`Cli`] with its global flags and the
//! subcommands that have no module of their own (`daemon`, `resource`). [`super::parse`] turns
//! it into a [`super::Command`]; the fast path (`fast.rs`) builds the same [`Cli`] without clap
//! for the plain positional forms.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use super::help::AFTER_HELP;
use super::token::TokenAction;
use super::{
    agent, auth, call, chain, complete, config, output, prompts, record, search, server, session,
};

/// clap's view of the command line; converted to a [`Command`] by [`parse`].
#[derive(Debug, Parser)]
#[command(
    name = "tool-cli",
    version,
    override_usage = "tool-cli [OPTIONS] [SERVER] [TOOL] [ARGS_JSON | key=value...]\n       \
                      tool-cli [OPTIONS] TOOL '{...}'   (routed: the daemon picks the server)\n       \
                      tool-cli [OPTIONS] '*' TOOL [ARGS_JSON]\n       \
                      tool-cli session <open|summary|list|close> [OPTIONS]\n       \
                      tool-cli agent \"TASK\" [OPTIONS]\n       \
                      tool-cli chain FILE|-|'SERVER TOOL {json}'... [OPTIONS]\n       \
                      tool-cli many FILE|-|'SERVER TOOL {json}'... [OPTIONS]\n       \
                      tool-cli resource <list|templates|read> [OPTIONS]\n       \
                      tool-cli prompt <list|get> [OPTIONS]\n       \
                      tool-cli health [--tools] [--json]\n       \
                      tool-cli token <mint|list|revoke> [OPTIONS]\n       \
                      tool-cli daemon <start|stop|status> [OPTIONS]\n       \
                      tool-cli server <add|remove|list|restart|reload> [OPTIONS]\n       \
                      tool-cli record --server S --out FILE [--calls N | --for SECS]\n       \
                      tool-cli config import --from CLIENT [--path FILE] [--write]\n       \
                      tool-cli auth <login|status|logout> [SERVER]\n       \
                      tool-cli traces report [OPTIONS]\n       \
                      tool-cli search QUERY [--limit N] [--server S]\n       \
                      tool-cli completions <bash|zsh|fish>\n       \
                      tool-cli help [COMMAND]",
    about = "Progressive access to every MCP tool behind a tool-cli daemon",
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true
)]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) subcommand: Option<TopSubcommand>,

    /// The server to inspect or call (see `tool-cli` for the list)
    pub(super) server: Option<String>,

    /// The tool to describe or call (see `tool-cli SERVER` for the list)
    pub(super) tool: Option<String>,

    // More than one word is collected here rather than refused by clap, so that the usual
    // mistake (an unquoted object split by the shell) gets a message that says to quote it.
    /// The tool's arguments: one JSON object, `-` to read it from stdin, or key=value,
    /// key:=JSON, key=@FILE, key:=@FILE words
    #[arg(value_name = "ARGS_JSON | key=value...")]
    pub(super) arguments: Vec<String>,

    #[command(flatten)]
    pub(super) global: GlobalFlags,

    #[command(flatten)]
    pub(super) call: call::CallFlags,
}

/// Flags accepted anywhere on the line, before or after the positionals and in subcommands.
#[derive(Debug, Default, Args)]
pub(super) struct GlobalFlags {
    /// Print the complete raw JSON result (complete schema, complete CallToolResult, ...)
    #[arg(long, global = true)]
    pub(super) json: bool,

    /// Write the result body to FILE and print a one-line summary instead
    #[arg(long, global = true, value_name = "FILE")]
    pub(super) out: Option<PathBuf>,

    /// Request timeout in milliseconds, at most 300000 [default: for a call, its server's
    /// configured timeout; 30000 for the rest]
    #[arg(long, global = true, value_name = "MS", allow_hyphen_values = true)]
    pub(super) timeout: Option<String>,

    /// Confirm a call of a destructive tool (without it the daemon refuses, exit 9)
    #[arg(long, global = true)]
    pub(super) yes: bool,

    /// With `tool-cli SERVER`: list every tool, not only the first page of a large server
    #[arg(long, global = true)]
    pub(super) all: bool,

    /// Also send the token to a bridge that does not prove its identity (a tool-cli 1.x
    /// bridge); like TOOL_CLI_REQUIRE_IDENTITY=0
    #[arg(long, global = true)]
    pub(super) no_identity: bool,

    /// How to print the result: text (the rendering), json (like --json), raw (a call's
    /// content exactly: text concatenated, binary bytes; for pipes) [default: text]
    #[arg(long, global = true, value_name = "FORMAT")]
    pub(super) output: Option<output::Format>,

    /// Read the tool's arguments from a JSON object in this file (instead of ARGS_JSON or
    /// key=value words)
    #[arg(long, global = true, value_name = "PATH")]
    pub(super) args_file: Option<PathBuf>,

    /// Print a one-page primer for coding agents: progressive discovery with tool-cli
    #[arg(long)]
    pub(super) agent_help: bool,

    /// Call a stdio server that is not in the config, for this command only: `tool-cli
    /// --stdio "CMD ARGS" [TOOL [ARGS_JSON]]` (quoted as a shell would; nothing expanded)
    #[arg(long, value_name = "COMMAND")]
    pub(super) stdio: Option<String>,

    /// Call a Streamable HTTP server that is not in the config, for this command only:
    /// `tool-cli --url URL [TOOL [ARGS_JSON]]`
    #[arg(long, value_name = "URL")]
    pub(super) url: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(super) enum TopSubcommand {
    /// List and read MCP resources (wins over a server named `resource`)
    Resource {
        #[command(subcommand)]
        action: ResourceAction,
    },
    /// List and render MCP prompts (wins over a server named `prompt`)
    Prompt {
        #[command(subcommand)]
        action: prompts::PromptAction,
    },
    /// Show server health, exit 1 if any is unhealthy (wins over a server named `health`)
    Health {
        // Collected rather than refused by clap, so that `tool-cli health TOOL` (meant for a
        // server named `health`) gets a message that says how to reach that server.
        #[arg(hide = true)]
        words: Vec<String>,

        /// Also list each tool called since the daemon started: calls, successes, p50/p95
        /// latency, last use, and its server's breaker
        #[arg(long)]
        tools: bool,
    },
    /// Mint, list and revoke scoped tokens (wins over a server named `token`)
    Token {
        #[command(subcommand)]
        action: TokenAction,
    },
    /// Start, stop or check the daemon of the runtime file (wins over a server named `daemon`)
    Daemon {
        #[command(subcommand)]
        action: DaemonAction,
    },
    /// Manage servers: `add`, `remove`, `list`, `restart`, `reload` (wins over a server named
    /// `server`)
    Server {
        #[command(subcommand)]
        action: server::ServerAction,
    },
    /// Record a server's MCP exchange, every caller's, to the --out FILE until Ctrl-C (or
    /// --calls N, --for SECS); replay it with {"replay": FILE} (wins over a server named
    /// `record`)
    Record(record::RecordArgs),
    /// Import other clients' MCP servers into tool-cli's config (wins over a server named
    /// `config`)
    Config {
        #[command(subcommand)]
        action: config::ConfigAction,
    },
    /// Report on the daemon's trace of calls (wins over a server named `traces`)
    Traces {
        #[command(subcommand)]
        action: crate::traces::TracesAction,
    },
    /// Open, summarise, list and close sessions (wins over a server named `session`)
    Session {
        #[command(subcommand)]
        action: session::SessionAction,
    },
    /// Run the daemon's agent on a task: progress on stderr, the answer on stdout (wins over a
    /// server named `agent`)
    Agent(agent::AgentArgs),
    /// Print a shell completion script with live server and tool names: bash, zsh or fish
    /// (wins over a server named `completions`)
    Completions {
        /// The shell: bash, zsh or fish
        shell: complete::Shell,
    },
    /// Live names for the completion scripts; prints nothing when no daemon answers in time
    #[command(name = "__complete", hide = true)]
    Complete {
        /// `servers`, `tools SERVER` or `params SERVER TOOL`
        #[arg(allow_hyphen_values = true)]
        words: Vec<String>,
    },
    /// Find tools across every server by what they do (wins over a server named `search`)
    Search(search::SearchArgs),
    /// Sign in to remote servers over OAuth 2.1 (wins over a server named `auth`)
    Auth {
        #[command(subcommand)]
        action: auth::AuthAction,
    },
    /// Run calls in order, later ones taking values from earlier results; stop at the first
    /// failure (callChain; wins over a server named `chain`)
    Chain(chain::ChainArgs),
    /// Run calls at once and answer each (callMany; wins over a server named `many`)
    Many(chain::ManyArgs),
    /// Serve the daemon's pool to an MCP host over stdio (`{"command": "tool-cli", "args":
    /// ["mcp"]}`), relayed to the running daemon's gateway (wins over a server named `mcp`)
    /// Pin the servers' tool, prompt and template definitions against rug pulls, show what
    /// changed, or verify them in CI (wins over a server named `pin`)
    #[command(args_conflicts_with_subcommands = true)]
    Pin {
        #[command(subcommand)]
        action: Option<PinSubcommand>,
        /// Pin only this server [default: every server]
        #[arg(value_name = "SERVER")]
        server: Option<String>,
        /// The pin store [default: $TOOL_CLI_PINS, else ~/.config/tool-cli/pins.json]
        #[arg(long, global = true, value_name = "PATH")]
        pins: Option<PathBuf>,
    },
    /// Write the tools as an OpenAI or Anthropic tools array or an OpenAPI document on stdout,
    /// notes on stderr; exit 1 when a tool could not be exported (wins over a server named
    /// `export`)
    Export {
        /// openai (Chat Completions tools), openai-responses, anthropic, or openapi (3.1)
        #[arg(value_name = "FORMAT", value_parser = ["openai", "openai-responses", "anthropic", "openapi"])]
        format: String,
        /// Only this server's tools [default: every server the token can see]
        #[arg(long, value_name = "SERVER")]
        server: Option<String>,
        /// Mark `strict: true` on tools whose schemas already meet the provider's strict rules
        #[arg(long)]
        strict: bool,
        /// OpenAPI only: the base URL written in `servers`
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
    },
    /// Print a SKILL.md for coding agents: each server's tools in at most 400 tokens
    /// (characters / 4), and how to discover and call them
    Skill {
        /// Only this server
        server: Option<String>,
    },
    Mcp {
        /// Show six meta-tools (list_servers, search_tools, describe_tool, call_*_tool) instead
        /// of every tool as server__tool
        #[arg(long)]
        progressive: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(super) enum PinSubcommand {
    /// Show each field that differs from the pins, for every pinned server or one
    Diff {
        /// Only this server
        #[arg(value_name = "SERVER")]
        server: Option<String>,
    },
    /// Approve one item of a pinned server as it is now (re-pin it, or drop a vanished one)
    #[command(group(clap::ArgGroup::new("item").required(true).args(["tool", "prompt", "resource_template", "instructions"])))]
    Approve {
        /// The server
        #[arg(value_name = "SERVER")]
        server: String,
        /// A tool, by its name on the server
        #[arg(long, value_name = "NAME")]
        tool: Option<String>,
        /// A prompt, by its name
        #[arg(long, value_name = "NAME")]
        prompt: Option<String>,
        /// A resource template, by its URI template
        #[arg(long, value_name = "URI_TEMPLATE")]
        resource_template: Option<String>,
        /// The server's instructions
        #[arg(long)]
        instructions: bool,
    },
    /// Stop pinning a server
    Remove {
        /// The server
        #[arg(value_name = "SERVER")]
        server: String,
    },
    /// Check the pinned servers against the pins (with --lock: every server must be pinned and
    /// unchanged, and nothing flagged); exit 1 when they differ
    Verify {
        /// Treat the store as a lockfile: every server the daemon has must be pinned
        #[arg(long)]
        lock: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(super) enum DaemonAction {
    /// Start tool-cli-daemon in the background, wait until its servers have settled, and say
    /// where it listens; its log goes to daemon.log in the runtime directory
    Start {
        /// The servers config file [default: the daemon's: $TOOL_CLI_CONFIG, else
        /// ~/.config/tool-cli/servers.json, else the bundled demo]
        #[arg(long, value_name = "PATH")]
        config: Option<PathBuf>,

        /// More tool-cli-daemon options, after `--` (e.g. `-- --shutdown-grace-ms 2000`)
        #[arg(last = true, value_name = "DAEMON_ARGS")]
        daemon_args: Vec<String>,
    },
    /// Stop the daemon (SIGTERM) and wait until it has exited
    Stop,
    /// Say whether the daemon runs: pid, address, uptime, servers (exit 3 when none runs)
    Status,
}

#[derive(Debug, Subcommand)]
pub(super) enum ResourceAction {
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
