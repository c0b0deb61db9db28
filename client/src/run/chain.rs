//! Running `tool-cli chain` and `tool-cli many`: the document is read (a file, when one was
//! named), checked and merged with the flags (`args/chain_document.rs`), sent as one
//! `callChain` or `callMany` request, and the outcome printed.
//!
//! `--json` prints the daemon's result as it came (`{steps, completed}` or `{results}`). The
//! text form gives each call a header line (`== step 0: demo/sql_query: ok`) and, when it
//! succeeded, its result as a lone call would print it (`structuredContent` as JSON, else the
//! text), or its plan for a dry-run. Failed calls go to stderr as one error naming each
//! (`step 1 of 3 (demo/sql_query) failed, so the chain stopped ...`), and the exit code is the
//! one the first failure would have had alone (5 for bad arguments, 6 for a tool error, 9 for
//! policy, ...). Which outcome counts as a failure, and how each is printed, is pure
//! ([`outcomes`], [`render`]) and unit-tested below.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tool_cli_protocol::ErrorObject;
use tool_cli_protocol::orchestration::{CallChainResult, CallManyResult, DryRunResult, StepResult};

use super::admin::older_daemon;
use super::output::{Output, Part};
use crate::args::chain::{BatchCommand, BatchKind, Source};
use crate::args::chain_document::{self, BatchFlags, Requested};
use crate::client::{CALL_TIMEOUT_MARGIN, Client, UNTIMED_CALL_CEILING, parse_result};
use crate::error::{Error, StepFailure};
use crate::render;

/// Runs one `tool-cli chain` or `tool-cli many`.
pub(super) async fn run(
    client: &mut Client,
    output: &mut Output<'_>,
    command: BatchCommand,
    flags: BatchFlags,
) -> Result<(), Error> {
    let kind = command.kind;
    let request = match command.source {
        Source::Words(calls) => chain_document::from_words(kind, calls),
        Source::Stdin(text) => chain_document::from_document(kind, &text, "stdin")?,
        Source::File(path) => {
            let text = read_document(kind, &path)?;
            chain_document::from_document(kind, &text, &path.display().to_string())?
        }
    };
    let request = chain_document::with_flags(request, &flags)?;
    // A chain with a timeout is bounded by it (the daemon's timeout error arrives first); any
    // other is bounded by its calls' own timeouts, which the daemon enforces.
    let wait = match request.timeout_ms() {
        Some(timeout) => Duration::from_millis(timeout) + CALL_TIMEOUT_MARGIN,
        None => UNTIMED_CALL_CEILING,
    };
    let result = client
        .call_with_timeout(request.method(), Some(request.params()), wait)
        .await
        .map_err(|error| older_daemon(error, kind.command()))?;
    let entries = match kind {
        BatchKind::Chain => {
            parse_result::<CallChainResult>(request.method(), result.clone())?.steps
        }
        BatchKind::Many => {
            parse_result::<CallManyResult>(request.method(), result.clone())?.results
        }
    };
    let requested = request.requested();
    let outcomes = outcomes(&requested, &entries)?;
    if output.json {
        output.emit_json(&result)?;
    } else {
        output.emit_parts(&render(kind, &requested, &entries, &outcomes))?;
    }
    let failures: Vec<StepFailure> = entries
        .iter()
        .zip(outcomes)
        .filter_map(|(entry, outcome)| match outcome {
            Outcome::Failed(error) => Some(StepFailure {
                index: entry.index,
                label: label(&requested, entry),
                error: Box::new(error),
            }),
            Outcome::Ok | Outcome::WouldRun => None,
        })
        .collect();
    if failures.is_empty() {
        return Ok(());
    }
    Err(Error::StepsFailed {
        command: kind.command().to_owned(),
        failures,
        total: requested.len(),
        ran: entries.len(),
    })
}

/// The document's text, with a message that says what to give instead when it cannot be read.
fn read_document(kind: BatchKind, path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|error| {
        Error::Usage(format!(
            "cannot read {} ({error}); `tool-cli {}` takes a JSON file, `-` for stdin, or one \
             quoted word per {}: 'SERVER TOOL {{json}}'",
            path.display(),
            kind.command(),
            kind.item()
        ))
    })
}

/// What one call came to.
#[derive(Debug)]
enum Outcome {
    /// It ran and succeeded.
    Ok,
    /// A dry-run whose call would run.
    WouldRun,
    /// The error it would have been, called alone.
    Failed(Error),
}

/// Each entry's outcome. An entry the daemon reports for a call that was not asked for is a
/// protocol error.
fn outcomes(requested: &[Requested], entries: &[StepResult]) -> Result<Vec<Outcome>, Error> {
    entries
        .iter()
        .map(|entry| {
            let asked = requested.get(entry.index).ok_or_else(|| {
                Error::Protocol(format!(
                    "an outcome for call {} of {} calls",
                    entry.index,
                    requested.len()
                ))
            })?;
            Ok(outcome(asked, entry))
        })
        .collect()
}

fn outcome(asked: &Requested, entry: &StepResult) -> Outcome {
    let call_error = |error: &ErrorObject| Error::Rpc {
        method: "callTool".to_owned(),
        error: Box::new(error.clone()),
    };
    match (&entry.error, &entry.result) {
        (Some(error), _) => Outcome::Failed(call_error(error)),
        (None, None) => Outcome::Failed(Error::Protocol(format!(
            "the outcome of call {} has neither a result nor an error",
            entry.index
        ))),
        // Read loosely, so a refusal of a kind this client does not know still counts.
        (None, Some(result)) if asked.dry_run => match result.get("wouldBlockBecause") {
            None | Some(Value::Null) => Outcome::WouldRun,
            Some(blocked) => match serde_json::from_value::<ErrorObject>(blocked.clone()) {
                Ok(reason) => Outcome::Failed(call_error(&reason)),
                Err(error) => Outcome::Failed(Error::Protocol(format!(
                    "the dry-run answer of call {} has a wouldBlockBecause that does not parse: \
                     {error}",
                    entry.index
                ))),
            },
        },
        (None, Some(result)) => {
            let rendered = render::call_result(result);
            if rendered.is_error {
                let (server, tool) = server_and_tool(asked, entry);
                Outcome::Failed(Error::ToolReported {
                    server,
                    tool,
                    text: rendered.body,
                })
            } else {
                Outcome::Ok
            }
        }
    }
}

/// The server (the one that took the call, else the one asked for, else `*`) and the tool.
fn server_and_tool(asked: &Requested, entry: &StepResult) -> (String, String) {
    let server = entry
        .server
        .clone()
        .or_else(|| asked.server.clone())
        .unwrap_or_else(|| "*".to_owned());
    (server, entry.tool.clone())
}

/// `SERVER/TOOL` of an entry.
fn label(requested: &[Requested], entry: &StepResult) -> String {
    let asked = requested.get(entry.index);
    let server = entry
        .server
        .clone()
        .or_else(|| asked.and_then(|asked| asked.server.clone()))
        .unwrap_or_else(|| "*".to_owned());
    format!("{server}/{}", entry.tool)
}

/// The text form: a header per call, and the body of each that succeeded.
fn render(
    kind: BatchKind,
    requested: &[Requested],
    entries: &[StepResult],
    outcomes: &[Outcome],
) -> Vec<Part> {
    let mut parts = Vec::new();
    for (entry, outcome) in entries.iter().zip(outcomes) {
        let routed = requested
            .get(entry.index)
            .is_some_and(|asked| asked.server.is_none());
        let rule = entry
            .result
            .as_ref()
            .and_then(|result| result.pointer("/_meta/tool-cli~1selection/rule"))
            .and_then(Value::as_str);
        let how = match (routed, rule) {
            (true, Some(rule)) => format!(" (routed, rule {rule})"),
            (true, None) => " (routed)".to_owned(),
            (false, _) => String::new(),
        };
        let status = match outcome {
            Outcome::Ok => "ok".to_owned(),
            Outcome::WouldRun => "would run".to_owned(),
            Outcome::Failed(error) => format!("failed (exit {}, see stderr)", error.exit_code()),
        };
        parts.push(Part::Rendering(format!(
            "== {} {}: {}{how}: {status}",
            kind.item(),
            entry.index,
            crate::sanitize::line(&label(requested, entry))
        )));
        let Some(result) = &entry.result else {
            continue;
        };
        match outcome {
            Outcome::Ok => {
                let rendered = render::call_result(result);
                if rendered.body.is_empty() {
                    parts.push(Part::Rendering("(no content)".to_owned()));
                } else if rendered.structured {
                    parts.push(Part::Json(rendered.body));
                } else {
                    parts.push(Part::ResultText(rendered.body));
                }
            }
            Outcome::WouldRun | Outcome::Failed(_) => {
                if let Ok(plan) = serde_json::from_value::<DryRunResult>(result.clone())
                    && requested
                        .get(entry.index)
                        .is_some_and(|asked| asked.dry_run)
                {
                    parts.push(Part::Rendering(render::dry_run(&plan)));
                }
            }
        }
    }
    if kind == BatchKind::Chain && entries.len() < requested.len() {
        let first = entries.len();
        let last = requested.len() - 1;
        parts.push(Part::Rendering(if first == last {
            format!("== step {first}: not run")
        } else {
            format!("== steps {first}-{last}: not run")
        }));
    }
    parts
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::exit;

    fn asked(server: Option<&str>, tool: &str, dry_run: bool) -> Requested {
        Requested {
            server: server.map(str::to_owned),
            tool: tool.to_owned(),
            dry_run,
        }
    }

    fn entry(index: usize, server: Option<&str>, tool: &str, outcome: Value) -> StepResult {
        let mut entry = StepResult {
            index,
            tool: tool.to_owned(),
            server: server.map(str::to_owned),
            result: None,
            error: None,
        };
        match outcome.get("code") {
            Some(_) => entry.error = Some(serde_json::from_value(outcome).unwrap()),
            None => entry.result = Some(outcome),
        }
        entry
    }

    fn texts(parts: &[Part]) -> Vec<String> {
        parts
            .iter()
            .map(|part| match part {
                Part::Rendering(text) | Part::Json(text) | Part::ResultText(text) => text.clone(),
            })
            .collect()
    }

    #[test]
    fn a_stopped_chain_shows_what_ran_and_what_did_not() {
        let requested = vec![
            asked(Some("demo"), "sql_query", false),
            asked(None, "echo", false),
            asked(Some("demo"), "sql_query", false),
            asked(Some("demo"), "schema", false),
        ];
        let entries = vec![
            entry(
                0,
                Some("demo"),
                "sql_query",
                json!({"content": [{"type": "text", "text": "{}"}],
                       "structuredContent": {"rows": [{"n": 1}]}}),
            ),
            entry(
                1,
                Some("everything"),
                "echo",
                json!({"content": [{"type": "text", "text": "Echo: hi"}],
                       "_meta": {"tool-cli/selection": {"rule": "priority", "server": "everything",
                                                        "alternatives": []}}}),
            ),
            entry(
                2,
                Some("demo"),
                "sql_query",
                json!({"code": -32602, "message": "invalid arguments",
                       "data": {"kind": "invalidArguments", "server": "demo",
                                "tool": "sql_query", "errors": []}}),
            ),
        ];
        let outcomes = outcomes(&requested, &entries).unwrap();
        assert!(matches!(outcomes[0], Outcome::Ok));
        assert!(matches!(outcomes[1], Outcome::Ok));
        let Outcome::Failed(error) = &outcomes[2] else {
            panic!("{:?}", outcomes[2])
        };
        assert_eq!(error.exit_code(), exit::INVALID_PARAMS);
        let parts = render(BatchKind::Chain, &requested, &entries, &outcomes);
        assert_eq!(
            texts(&parts),
            vec![
                "== step 0: demo/sql_query: ok".to_owned(),
                "{\n  \"rows\": [\n    {\n      \"n\": 1\n    }\n  ]\n}\n".to_owned(),
                "== step 1: everything/echo (routed, rule priority): ok".to_owned(),
                "Echo: hi".to_owned(),
                "== step 2: demo/sql_query: failed (exit 5, see stderr)".to_owned(),
                "== step 3: not run".to_owned(),
            ]
        );
        assert!(matches!(parts[1], Part::Json(_)));
        assert!(matches!(parts[3], Part::ResultText(_)));
    }

    #[test]
    fn tool_errors_and_refused_dry_runs_are_failures() {
        let requested = vec![
            asked(Some("demo"), "run_python", false),
            asked(Some("demo"), "sql_query", true),
            asked(Some("demo"), "schema", true),
        ];
        let plan = |blocked: Option<Value>| {
            let mut plan = json!({"executed": false, "server": "demo", "tool": "sql_query",
                "arguments": {}, "timeoutMs": 1000,
                "selection": {"rule": "named", "server": "demo", "alternatives": []},
                "hints": {"readOnly": true, "destructive": false, "idempotent": false}});
            if let Some(blocked) = blocked {
                plan["wouldBlockBecause"] = blocked;
            }
            plan
        };
        let entries = vec![
            entry(
                0,
                Some("demo"),
                "run_python",
                json!({"content": [{"type": "text", "text": "NameError: x"}], "isError": true}),
            ),
            entry(
                1,
                Some("demo"),
                "sql_query",
                plan(Some(json!({"code": -32006, "message": "not permitted",
                                 "data": {"kind": "notPermitted", "server": "demo",
                                          "tool": "sql_query", "reason": "policy"}}))),
            ),
            entry(2, Some("demo"), "schema", plan(None)),
        ];
        let outcomes = outcomes(&requested, &entries).unwrap();
        match &outcomes[0] {
            Outcome::Failed(error @ Error::ToolReported { server, tool, text }) => {
                assert_eq!((server.as_str(), tool.as_str()), ("demo", "run_python"));
                assert_eq!(text, "NameError: x");
                assert_eq!(error.exit_code(), exit::TOOL_ERROR);
            }
            other => panic!("{other:?}"),
        }
        match &outcomes[1] {
            Outcome::Failed(error) => assert_eq!(error.exit_code(), exit::FORBIDDEN),
            other => panic!("{other:?}"),
        }
        assert!(matches!(outcomes[2], Outcome::WouldRun));
        let text = texts(&render(BatchKind::Many, &requested, &entries, &outcomes));
        assert_eq!(
            text[0],
            "== call 0: demo/run_python: failed (exit 6, see stderr)"
        );
        assert_eq!(
            text[1],
            "== call 1: demo/sql_query: failed (exit 9, see stderr)"
        );
        assert!(text[2].starts_with("dry run of demo/sql_query: would be refused (-32006)"));
        assert_eq!(text[3], "== call 2: demo/schema: would run");
        assert!(text[4].contains("validation:  passed"), "{}", text[4]);
    }

    #[test]
    fn the_error_names_each_failure_and_exits_as_the_first() {
        let failure = |index: usize, error: Error| StepFailure {
            index,
            label: format!("demo/t{index}"),
            error: Box::new(error),
        };
        let tool_error = || Error::ToolReported {
            server: "demo".into(),
            tool: "t".into(),
            text: "boom".into(),
        };
        let chain = Error::StepsFailed {
            command: "chain".into(),
            failures: vec![failure(1, tool_error())],
            total: 4,
            ran: 2,
        };
        assert_eq!(
            chain.to_string(),
            "step 1 of 4 (demo/t1) failed, so the chain stopped (2 later steps did not run): \
             demo/t reported an error:\nboom"
        );
        assert_eq!(chain.exit_code(), exit::TOOL_ERROR);
        let many = Error::StepsFailed {
            command: "many".into(),
            failures: vec![
                failure(0, Error::Usage("bad".into())),
                failure(3, tool_error()),
            ],
            total: 5,
            ran: 5,
        };
        assert_eq!(
            many.to_string(),
            "2 of 5 calls failed:\n  call 0 (demo/t0): bad\n  call 3 (demo/t3): demo/t reported \
             an error:\n    boom"
        );
        assert_eq!(many.exit_code(), exit::USAGE);
        let envelope = many.envelope();
        assert_eq!(envelope["error"]["kind"], "stepsFailed");
        assert_eq!(envelope["error"]["exitCode"], 2);
        assert_eq!(envelope["error"]["data"]["failed"][1]["index"], 3);
        assert_eq!(envelope["error"]["data"]["failed"][1]["kind"], "toolError");
        assert_eq!(envelope["error"]["data"]["failed"][1]["label"], "demo/t3");
    }

    #[test]
    fn an_outcome_for_a_call_never_asked_for_is_a_protocol_error() {
        let entries = vec![entry(3, None, "x", json!({"content": []}))];
        assert!(matches!(
            outcomes(&[asked(None, "x", false)], &entries),
            Err(Error::Protocol(_))
        ));
    }
}
