//! Tool calls: `callTool` (one call through the pipeline), `callChain` (steps that feed each
//! other) and `callMany` (a bounded fan-out), answered by the calls service. Chains and
//! fan-outs build their answer as their calls end (`answer::EntryAnswers`), within the
//! request's budget.

use jsonrpsee::types::Params;
use serde_json::Value;
use tool_cli_protocol::methods::{CallToolParams, name};
use tool_cli_protocol::orchestration::{CallChainParams, CallManyParams};

use super::{Access, Encoded, FromParams, Methods};
use crate::edge::answer::EntryAnswers;
use crate::error::Error;

/// Registers the call methods.
pub(super) fn register(methods: &mut Methods) {
    use Access::Anyone;
    methods.add(name::CALL_TOOL, Anyone, |s, p, c| async move {
        match p {
            CallToolInput::Call(params) => s.calls.call_tool(*params, &c).await,
            CallToolInput::NonObjectArguments {
                server,
                tool,
                arguments,
            } => Err(s
                .calls
                .refuse_non_object_arguments(server, &tool, &arguments, &c)
                .await),
        }
    });
    methods.add(name::GET_TASK, Anyone, |s, p, c| async move {
        s.calls.get_task(p, &c).await
    });
    methods.add(name::GET_TASK_RESULT, Anyone, |s, p, c| async move {
        s.calls.get_task_result(p, &c).await
    });
    methods.add(name::LIST_TASKS, Anyone, |s, p, c| async move {
        s.calls.list_tasks(p, &c).await
    });
    methods.add(name::CANCEL_TASK, Anyone, |s, p, c| async move {
        s.calls.cancel_task(p, &c).await
    });
    methods.add_answering(name::CALL_CHAIN, Anyone, |s, p: CallChainParams, c, a| {
        // Built as the steps end, within the budget: a result that does not fit is spilled,
        // never refused after its step ran.
        let mut answer = EntryAnswers::new(
            name::CALL_CHAIN,
            a.budget,
            p.steps.len(),
            &a.spill,
            &c.grant.token_id,
        );
        async move {
            let completed = s.calls.call_chain(p, &c, &mut answer).await?;
            answer.finish_chain(completed).map(Encoded)
        }
    });
    methods.add_answering(name::CALL_MANY, Anyone, |s, p: CallManyParams, c, a| {
        // Built as the calls end, within the budget; once full, no more calls start.
        let mut answer = EntryAnswers::new(
            name::CALL_MANY,
            a.budget,
            p.calls.len(),
            &a.spill,
            &c.grant.token_id,
        );
        async move {
            s.calls.call_many(p, &c, &mut answer).await?;
            answer.finish_many().map(Encoded)
        }
    });
}

/// `callTool`'s params, or params that did not parse only because `arguments` is not an
/// object (nor null): those get the error the reference bridge gives, `invalidArguments` with
/// ajv's "must be object", once the tool is known to exist.
enum CallToolInput {
    Call(Box<CallToolParams>),
    NonObjectArguments {
        server: Option<String>,
        tool: String,
        arguments: Value,
    },
}

impl FromParams for CallToolInput {
    fn from_params(method: &str, params: &Params<'_>) -> Result<CallToolInput, Error> {
        let error = match CallToolParams::from_params(method, params) {
            Ok(parsed) => {
                return match params.as_str().and_then(misspelt_member) {
                    Some((typed, meant)) => Err(Error::invalid_params(
                        method,
                        format!(
                            "unknown member `{typed}`; did you mean `{meant}`? (a member this \
                             close to one callTool knows is taken for a typo, not ignored); \
                             expected {}",
                            <CallToolParams as tool_cli_protocol::params::MethodParams>::SHAPE
                        ),
                    )),
                    None => Ok(CallToolInput::Call(Box::new(parsed))),
                };
            }
            Err(error) => error,
        };
        #[derive(serde::Deserialize)]
        struct Probe {
            #[serde(default)]
            server: Option<String>,
            tool: String,
            arguments: Value,
        }
        let probe = params
            .as_str()
            .and_then(|text| serde_json::from_str::<Probe>(text).ok());
        match probe {
            Some(probe) if !probe.arguments.is_object() && !probe.arguments.is_null() => {
                Ok(CallToolInput::NonObjectArguments {
                    server: probe.server.filter(|server| server != "*"),
                    tool: probe.tool,
                    arguments: probe.arguments,
                })
            }
            _ => Err(error),
        }
    }

    fn check_shape() -> Result<(), String> {
        tool_cli_protocol::params::check_shape::<CallToolParams>()
    }
}

/// The members `callTool` knows, as they are spelt on the wire.
const CALL_TOOL_MEMBERS: &[&str] = &[
    "server",
    "tool",
    "arguments",
    "timeoutMs",
    "sessionId",
    "confirm",
    "dryRun",
    "hint",
    "idempotencyKey",
    "alternatives",
    "progress",
    "progressId",
    "resetTimeoutOnProgress",
    "maxTotalTimeoutMs",
    "task",
];

/// The first member of a `callTool`'s params that is not one it knows but is so close to one
/// that it must be a typo (`argumnets`, `timeout_ms`, `SessionId`), with the member meant.
///
/// Params ignore members they do not know, so newer clients keep working within version 1; but
/// a misspelt `arguments` would otherwise call the tool with none, and a misspelt `dryRun` or
/// `timeoutMs` would run it for real or with the server's timeout: the worst kind of silent.
/// Close means equal once case, `_` and `-` are set aside, or one edit away (two for members of
/// eight or more letters). Only the top level is read, without building its values.
fn misspelt_member(text: &str) -> Option<(String, &'static str)> {
    let members: std::collections::BTreeMap<String, serde::de::IgnoredAny> =
        serde_json::from_str(text).ok()?;
    members
        .keys()
        .filter(|member| !CALL_TOOL_MEMBERS.contains(&member.as_str()))
        .find_map(|member| meant_member(member).map(|meant| (member.clone(), meant)))
}

/// The known member `typed` is a near miss of, if any.
fn meant_member(typed: &str) -> Option<&'static str> {
    let plain = |name: &str| -> String {
        name.chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect()
    };
    let typed_plain = plain(typed);
    if typed_plain.is_empty() {
        return None;
    }
    CALL_TOOL_MEMBERS.iter().copied().find(|known| {
        let known_plain = plain(known);
        let allowed = match known_plain.chars().count() {
            0..=3 => 0,
            4..=7 => 1,
            _ => 2,
        };
        typed_plain == known_plain || edit_distance(&typed_plain, &known_plain) <= allowed
    })
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substituted.min(previous + 1).min(row[j] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod misspelt_tests {
    use super::*;

    #[test]
    fn near_misses_of_known_members_are_named_with_the_member_meant() {
        for (text, typed, meant) in [
            (
                r#"{"tool": "t", "argumnets": {}}"#,
                "argumnets",
                "arguments",
            ),
            (
                r#"{"tool": "t", "timeout_ms": 5}"#,
                "timeout_ms",
                "timeoutMs",
            ),
            (
                r#"{"tool": "t", "SessionId": "s"}"#,
                "SessionId",
                "sessionId",
            ),
            (r#"{"tool": "t", "dry_run": true}"#, "dry_run", "dryRun"),
            (r#"{"tool": "t", "servr": "demo"}"#, "servr", "server"),
            (
                r#"{"tool": "t", "idempotency_key": "k"}"#,
                "idempotency_key",
                "idempotencyKey",
            ),
        ] {
            assert_eq!(
                misspelt_member(text),
                Some((typed.to_owned(), meant)),
                "{text}"
            );
        }
    }

    #[test]
    fn members_far_from_every_known_one_are_still_ignored() {
        for text in [
            r#"{"tool": "t", "arguments": {}, "_meta": {"x": 1}}"#,
            r#"{"tool": "t", "priority": 3}"#,
            r#"{"tool": "t", "traceparent": "00-…"}"#,
            r#"{"server": "s", "tool": "t", "timeoutMs": 5, "dryRun": true}"#,
            "[1, 2]",
        ] {
            assert_eq!(misspelt_member(text), None, "{text}");
        }
    }
}
