//! The options of a tool call beyond its arguments (`--session`, `--dry-run`, `--hint`,
//! `--idempotency-key`, `TOOL_CLI_SESSION`) and the routed call forms, where the daemon picks the
//! server among those offering the tool.
//!
//! The routed forms, decided here before the positional grammar of `mod.rs` applies:
//!
//! - `tool-cli '*' TOOL ['{json}']`: the server word is `*`, so the call is routed; without
//!   arguments it is called with `{}` (a routed tool has no single schema to show).
//! - `tool-cli TOOL '{json}'`: two words, the second of which starts with `{` (after blanks),
//!   is a routed call of TOOL with that object. Any other second word is a tool name, so
//!   `tool-cli SERVER TOOL` keeps describing TOOL, and a server named like a tool is reached
//!   with the three-word form `tool-cli SERVER TOOL '{json}'`.
//!
//! Pure: the environment comes in as a value.

use clap::Args;
use serde_json::Map;

use super::elicitation::{ElicitationChoice, ElicitationFlags};
use super::progress::{ProgressChoice, ProgressFlags};
use super::{Command, parse_arguments};
use crate::error::Error;

/// The flags of a call, accepted anywhere on the line.
#[derive(Debug, Default, Args)]
pub(super) struct CallFlags {
    /// Attach the call (or the agent run) to this session, as made by `tool-cli session open`
    /// [default: $TOOL_CLI_SESSION]
    #[arg(long, global = true, value_name = "ID")]
    session: Option<String>,

    /// Explain the call without making it: the server routing would pick, the rule and why,
    /// and whether validation, policy and the guards would let it run (exit 0 if it would);
    /// with `tool-cli agent`, plan the run with every tool call a dry-run
    #[arg(long, global = true)]
    dry_run: bool,

    /// Words for routing: a server or tag this call means, or what it is for
    #[arg(long, global = true, value_name = "TEXT")]
    hint: Option<String>,

    /// Answer a repeat of this call with the same KEY from the daemon's memory instead of
    /// running it again (10 minutes)
    #[arg(long, global = true, value_name = "KEY")]
    idempotency_key: Option<String>,

    #[command(flatten)]
    progress: ProgressFlags,

    #[command(flatten)]
    elicitation: ElicitationFlags,
}

/// The checked call options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CallOptions {
    /// `--session`, else `TOOL_CLI_SESSION`.
    pub(crate) session: Option<String>,
    /// `--dry-run`.
    pub(crate) dry_run: bool,
    /// `--hint`.
    pub(crate) hint: Option<String>,
    /// `--idempotency-key`.
    pub(crate) idempotency_key: Option<String>,
    /// `--progress`, `--no-progress`.
    pub(crate) progress: ProgressChoice,
    /// `--elicitation`.
    pub(crate) elicitation: ElicitationChoice,
}

/// Longest session id the daemon accepts.
const MAX_SESSION_ID: usize = 128;

/// Checks the flags against the command they came with and merges `TOOL_CLI_SESSION`
/// (`env_session`) in. A flag that means nothing for the command is refused rather than
/// silently ignored; the variable applies where it can and is ignored elsewhere.
pub(super) fn options(
    flags: CallFlags,
    env_session: Option<&str>,
    command: &Command,
) -> Result<CallOptions, Error> {
    let is_call = matches!(
        command,
        Command::CallTool { .. } | Command::CallToolWords { .. }
    );
    let is_agent = matches!(command, Command::Agent(_));
    // `tool-cli chain|many`: a session and a dry-run apply to every call they make.
    let is_batch = matches!(command, Command::Batch(_));
    let refuse = |flag: &str, for_what: &str| {
        Err(Error::Usage(format!(
            "{flag} applies only to {for_what}; leave it out of this command"
        )))
    };
    if flags.hint.is_some() && !is_call {
        return refuse("--hint", "a tool call (`tool-cli [SERVER] TOOL ARGS_JSON`)");
    }
    if flags.idempotency_key.is_some() && !is_call {
        return refuse(
            "--idempotency-key",
            "a tool call (`tool-cli [SERVER] TOOL ARGS_JSON`)",
        );
    }
    if flags.progress.given() && !is_call {
        return refuse(
            "--progress and --no-progress",
            "a tool call (`tool-cli [SERVER] TOOL ARGS_JSON`)",
        );
    }
    if flags.elicitation.given() && !is_call {
        return refuse(
            "--elicitation",
            "a tool call (`tool-cli [SERVER] TOOL ARGS_JSON`)",
        );
    }
    if flags.dry_run && !is_call && !is_agent && !is_batch {
        return refuse(
            "--dry-run",
            "a tool call (`tool-cli [SERVER] TOOL ARGS_JSON`), `tool-cli chain|many` and \
             `tool-cli agent`",
        );
    }
    if flags.session.is_some() && !is_call && !is_agent && !is_batch {
        return refuse(
            "--session",
            "a tool call, `tool-cli chain|many` and `tool-cli agent`; `tool-cli session summary \
             ID` takes the id as a word",
        );
    }
    if let Some(hint) = &flags.hint
        && hint.trim().is_empty()
    {
        return Err(Error::Usage(
            "--hint is empty; give words naming a server, a tag or the purpose of the call"
                .to_owned(),
        ));
    }
    if let Some(key) = &flags.idempotency_key
        && key.trim().is_empty()
    {
        return Err(Error::Usage(
            "--idempotency-key is empty; give a key that names this call, e.g. a request id"
                .to_owned(),
        ));
    }
    let session = match flags.session {
        Some(id) => Some(check_session_id(&id, "--session")?),
        None if is_call || is_agent || is_batch => match env_session.map(str::trim) {
            Some(id) if !id.is_empty() => Some(check_session_id(id, "TOOL_CLI_SESSION")?),
            _ => None,
        },
        None => None,
    };
    Ok(CallOptions {
        session,
        dry_run: flags.dry_run,
        hint: flags.hint,
        idempotency_key: flags.idempotency_key,
        progress: flags.progress.choice(),
        elicitation: flags.elicitation.choice(),
    })
}

/// A session id as the daemon accepts it: 1–128 of letters, digits, `-`, `_`, `.`, `:`.
pub(super) fn check_session_id(id: &str, source: &str) -> Result<String, Error> {
    let valid = !id.is_empty()
        && id.len() <= MAX_SESSION_ID
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if valid {
        return Ok(id.to_owned());
    }
    Err(Error::Usage(format!(
        "{source} must be a session id of 1-{MAX_SESSION_ID} letters, digits, '-', '_', '.' or \
         ':' (as printed by `tool-cli session open`), got {:?}",
        crate::render::truncate(id, 80)
    )))
}

/// The routed forms: `Some` when the words are one of them (see the module's comment), `None`
/// when the ordinary grammar applies.
pub(super) fn routed(
    first: Option<&str>,
    second: Option<&str>,
    rest: &[String],
) -> Option<Result<Command, Error>> {
    match (first?, second?) {
        ("*", tool) if rest.is_empty() && !tool.trim_start().starts_with('{') => {
            Some(Ok(Command::CallTool {
                server: "*".to_owned(),
                tool: tool.to_owned(),
                arguments: Map::new(),
            }))
        }
        ("*", text) if text.trim_start().starts_with('{') => Some(Err(Error::Usage(
            "`tool-cli '*' TOOL ARGS_JSON` needs the tool's name before the arguments, e.g. \
             `tool-cli '*' read_file '{\"path\": \"/tmp/x\"}'`"
                .to_owned(),
        ))),
        ("*", _) => None,
        (tool, text) if text.trim_start().starts_with('{') => Some(if rest.is_empty() {
            parse_arguments(text, "on the command line").map(|arguments| Command::CallTool {
                server: "*".to_owned(),
                tool: tool.to_owned(),
                arguments,
            })
        } else {
            Err(Error::Usage(format!(
                "`tool-cli TOOL '{{...}}'` takes one JSON object after the tool, got {} more \
                 words: {}; quote the whole object in single quotes, or name the server: \
                 `tool-cli SERVER TOOL '{{...}}'`",
                rest.len(),
                crate::render::truncate(&rest.join(" "), 80)
            )))
        }),
        _ => None,
    }
}

/// The grammar of the orchestration commands as a whole (`mod.rs` with this module, `session.rs`
/// and `agent.rs`), without a process.
#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::session::SessionCommand;
    use super::super::{ArgsEnv, Invocation, ParseOutcome, parse};
    use super::*;
    use crate::error::exit;

    fn parse_with(args: &[&str], session: Option<&str>) -> Result<Invocation, ParseOutcome> {
        let env = ArgsEnv {
            session: session.map(str::to_owned),
            ..ArgsEnv::default()
        };
        let argv = std::iter::once("tool-cli").chain(args.iter().copied());
        parse(argv, &env, || Ok("{\"from\": \"stdin\"}".to_owned()))
    }

    fn ok(args: &[&str]) -> Invocation {
        parse_with(args, None).unwrap_or_else(|outcome| panic!("{args:?}: {outcome:?}"))
    }

    fn usage(args: &[&str]) -> String {
        match parse_with(args, None) {
            Err(ParseOutcome::Usage(error)) => {
                assert_eq!(error.exit_code(), exit::USAGE);
                error.to_string()
            }
            other => panic!("{args:?}: expected a usage error, got {other:?}"),
        }
    }

    fn routed_call(tool: &str, arguments: serde_json::Value) -> Command {
        Command::CallTool {
            server: "*".into(),
            tool: tool.into(),
            arguments: arguments.as_object().unwrap().clone(),
        }
    }

    #[test]
    fn a_json_object_as_second_word_routes_the_first_as_a_tool() {
        assert_eq!(
            ok(&["read_file", r#"{"path": "/tmp/x"}"#]).command,
            routed_call("read_file", json!({"path": "/tmp/x"}))
        );
        // Blanks before the brace still make it an object.
        assert_eq!(
            ok(&["read_file", "  {}"]).command,
            routed_call("read_file", json!({}))
        );
        // Any other second word is a tool: SERVER TOOL still describes.
        assert_eq!(
            ok(&["fs", "read_file"]).command,
            Command::DescribeTool {
                server: "fs".into(),
                tool: "read_file".into()
            }
        );
        // A server named like a tool is reached with the three-word form.
        assert_eq!(
            ok(&["read_file", "read_file", "{}"]).command,
            Command::CallTool {
                server: "read_file".into(),
                tool: "read_file".into(),
                arguments: Map::new()
            }
        );
    }

    #[test]
    fn the_star_server_routes_with_or_without_arguments() {
        assert_eq!(ok(&["*", "echo"]).command, routed_call("echo", json!({})));
        assert_eq!(
            ok(&["*", "echo", r#"{"message": "hi"}"#]).command,
            routed_call("echo", json!({"message": "hi"}))
        );
        assert_eq!(
            ok(&["*", "echo", "-"]).command,
            routed_call("echo", json!({"from": "stdin"}))
        );
        assert!(usage(&["*", "{}"]).contains("needs the tool's name"));
    }

    #[test]
    fn malformed_json_in_the_routed_form_says_what_is_wrong() {
        let message = usage(&["read_file", "{path: /tmp/x}"]);
        assert!(message.contains("not valid JSON"), "{message}");
        assert!(message.contains("double quotes"), "{message}");
        let message = usage(&["read_file", "{}", "extra"]);
        assert!(message.contains("takes one JSON object"), "{message}");
    }

    #[test]
    fn call_options_reach_the_invocation() {
        let invocation = ok(&[
            "*",
            "echo",
            "{}",
            "--dry-run",
            "--hint",
            "the archive",
            "--idempotency-key",
            "k1",
            "--session",
            "s-1",
        ]);
        assert_eq!(
            invocation.call,
            CallOptions {
                session: Some("s-1".into()),
                dry_run: true,
                hint: Some("the archive".into()),
                idempotency_key: Some("k1".into()),
                progress: ProgressChoice::Auto,
                elicitation: ElicitationChoice::Auto,
            }
        );
        // Flags before the words, too.
        let invocation = ok(&["--session", "s-2", "--dry-run", "demo", "sql_query", "{}"]);
        assert_eq!(invocation.call.session.as_deref(), Some("s-2"));
        assert!(invocation.call.dry_run);
    }

    #[test]
    fn the_session_variable_applies_to_calls_and_the_flag_wins() {
        let from_env = parse_with(&["demo", "sql_query", "{}"], Some("env-1")).unwrap();
        assert_eq!(from_env.call.session.as_deref(), Some("env-1"));
        let flag = parse_with(&["demo", "sql_query", "{}", "--session", "s"], Some("e")).unwrap();
        assert_eq!(flag.call.session.as_deref(), Some("s"));
        // Elsewhere the variable is ignored, and the flag refused.
        let listing = parse_with(&["demo"], Some("env-1")).unwrap();
        assert_eq!(listing.call.session, None);
        assert!(usage(&["demo", "--session", "s"]).contains("--session applies only"));
        // A malformed id is refused with the rule, wherever it comes from.
        match parse_with(&["demo", "t", "{}"], Some("has space")) {
            Err(ParseOutcome::Usage(error)) => {
                assert!(
                    error.to_string().contains("TOOL_CLI_SESSION must be"),
                    "{error}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn call_flags_elsewhere_are_refused() {
        assert!(usage(&["health", "--dry-run"]).contains("--dry-run applies only"));
        assert!(usage(&["demo", "--hint", "x"]).contains("--hint applies only"));
        assert!(
            usage(&["session", "list", "--idempotency-key", "k"])
                .contains("--idempotency-key applies only")
        );
        assert!(usage(&["*", "echo", "--hint", " "]).contains("--hint is empty"));
        assert!(usage(&["--elicitation", "ask", "health"]).contains("--elicitation applies only"));
    }

    #[test]
    fn the_elicitation_choice_reaches_the_call() {
        let asks = ok(&["everything", "ask-me", "{}", "--elicitation", "ask"]);
        assert_eq!(asks.call.elicitation, ElicitationChoice::Ask);
        let declines = ok(&["--elicitation", "decline", "everything", "ask-me", "{}"]);
        assert_eq!(declines.call.elicitation, ElicitationChoice::Decline);
        assert!(matches!(
            parse_with(&["everything", "t", "{}", "--elicitation", "maybe"], None),
            Err(ParseOutcome::Clap(_))
        ));
    }

    #[test]
    fn session_commands() {
        assert_eq!(
            ok(&[
                "session",
                "open",
                "--task",
                "read notes",
                "--label",
                "a",
                "--label",
                "b"
            ])
            .command,
            Command::Session(SessionCommand::Open(
                tool_cli_protocol::orchestration::OpenSessionParams {
                    task: Some("read notes".into()),
                    labels: vec!["a".into(), "b".into()],
                    session_id: None,
                    ..Default::default()
                }
            ))
        );
        let summary = ok(&["--json", "session", "summary", "s-1"]);
        assert!(summary.json);
        assert_eq!(
            summary.command,
            Command::Session(SessionCommand::Summary {
                session_id: "s-1".into()
            })
        );
        assert_eq!(
            ok(&["session", "list"]).command,
            Command::Session(SessionCommand::List)
        );
        assert_eq!(
            ok(&["session", "close", "s-1"]).command,
            Command::Session(SessionCommand::Close {
                session_id: "s-1".into()
            })
        );
        assert!(usage(&["session", "summary", "no/such"]).contains("the session id must be"));
        assert!(usage(&["session", "open", "--task", " "]).contains("--task is empty"));
        // A server named `session` stays reachable after `--`.
        assert_eq!(
            ok(&["--", "session", "list"]).command,
            Command::DescribeTool {
                server: "session".into(),
                tool: "list".into()
            }
        );
    }

    #[test]
    fn agent_commands() {
        let invocation = ok(&[
            "agent",
            "Read notes.txt and count its lines",
            "--backend",
            "openai",
            "--model",
            "m",
            "--max-steps",
            "5",
            "--max-cost",
            "0.25",
            "--dry-run",
            "--json",
        ]);
        assert!(invocation.json && invocation.call.dry_run);
        assert_eq!(
            invocation.command,
            Command::Agent(super::super::agent::AgentCommand {
                task: "Read notes.txt and count its lines".into(),
                backend: Some("openai".into()),
                model: Some("m".into()),
                max_steps: Some(5),
                max_cost_usd: Some(0.25),
            })
        );
        assert!(usage(&["agent", "  "]).contains("the task is empty"));
        assert!(usage(&["agent", "t", "--max-cost", "-1"]).contains("--max-cost must be"));
        assert!(usage(&["agent", "t", "--max-cost", "0"]).contains("--max-cost must be"));
        assert!(usage(&["agent", "t", "--max-steps", "51"]).contains("--max-steps must be"));
        assert!(usage(&["agent", "t", "--max-steps", "0"]).contains("--max-steps must be"));
        assert!(usage(&["agent", "t", "--backend", ""]).contains("--backend is empty"));
    }

    #[test]
    fn health_takes_tools() {
        assert_eq!(
            ok(&["health", "--tools"]).command,
            Command::Health { tools: true }
        );
    }
}
