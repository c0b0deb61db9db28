//! Checks the shape of a server's answer before it is passed on.
//!
//! Results reach clients unnarrowed (the raw JSON the server sent), so rmcp's types never see
//! them whole; a server that answers `tools/call` with `"content": "oops"` would otherwise reach
//! the CLI as a result with nothing to print and exit 0. This is the one place that says what a
//! `CallToolResult` must look like to be passed on: the parts every client relies on, checked
//! without narrowing anything else (unknown members and content types stay as they are).

use serde_json::Value;

/// What is wrong with a server's `CallToolResult`: the message the caller reads (in
/// `invalidResult`), which says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum MalformedResult {
    /// The result is not a JSON object.
    #[error("expected an object, got {0}")]
    NotAnObject(&'static str),
    /// An MCP task in place of a result.
    #[error(
        "it answered with an MCP task (a CreateTaskResult), and this daemon does not poll MCP \
         tasks; the call was not completed"
    )]
    Task,
    /// A 2026-07-28 server still asking for input (`resultType: "input_required"`, the
    /// multi-round-trip flow that replaced a server's requests during a call) after the rounds
    /// the pool answers (`connection/input_rounds.rs`).
    #[error(
        "it was still asking for input ({0}) through the 2026-07-28 multi-round-trip flow \
         (`resultType: input_required`) after the daemon answered {rounds} rounds; the call was not \
         completed",
        rounds = crate::pool::connection::MAX_INPUT_ROUNDS
    )]
    InputRequired(String),
    /// No `content` member.
    #[error("it has no `content` array")]
    NoContent,
    /// `content` is not an array.
    #[error("`content` is {0}, expected an array of content blocks")]
    ContentNotAnArray(&'static str),
    /// A content block that is not an object.
    #[error("content[{index}] is {kind}, expected an object with a string `type`")]
    BlockNotAnObject {
        /// Its place in `content`.
        index: usize,
        /// What it is instead.
        kind: &'static str,
    },
    /// A content block without a string `type`.
    #[error("content[{0}] has no string `type`")]
    BlockWithoutType(usize),
    /// `isError` that is not a boolean.
    #[error("`isError` is {0}, expected a boolean")]
    IsErrorNotABoolean(&'static str),
    /// `structuredContent` that is not an object.
    #[error("`structuredContent` is {0}, expected an object")]
    StructuredContentNotAnObject(&'static str),
}

/// Why a `CallToolResult` cannot be passed on, or `Ok` when it can.
///
/// The MCP schema requires `content`: an array of content blocks, each an object with a string
/// `type`; `isError` is a boolean when present; `structuredContent` is an object when present.
pub(crate) fn check_call_tool_result(result: &Value) -> Result<(), MalformedResult> {
    let kind = tool_cli_protocol::json::kind;
    let Some(object) = result.as_object() else {
        return Err(MalformedResult::NotAnObject(kind(result)));
    };
    if object.get("resultType").and_then(Value::as_str) == Some("input_required") {
        return Err(MalformedResult::InputRequired(asked_for(object)));
    }
    match object.get("content") {
        None if object.contains_key("task") => return Err(MalformedResult::Task),
        None => return Err(MalformedResult::NoContent),
        Some(Value::Array(blocks)) => {
            for (index, block) in blocks.iter().enumerate() {
                match block.get("type") {
                    Some(Value::String(_)) => {}
                    _ if !block.is_object() => {
                        return Err(MalformedResult::BlockNotAnObject {
                            index,
                            kind: kind(block),
                        });
                    }
                    _ => return Err(MalformedResult::BlockWithoutType(index)),
                }
            }
        }
        Some(other) => return Err(MalformedResult::ContentNotAnArray(kind(other))),
    }
    if let Some(flag) = object.get("isError")
        && !flag.is_boolean()
    {
        return Err(MalformedResult::IsErrorNotABoolean(kind(flag)));
    }
    if let Some(structured) = object.get("structuredContent")
        && !structured.is_object()
    {
        return Err(MalformedResult::StructuredContentNotAnObject(kind(
            structured,
        )));
    }
    Ok(())
}

/// Whether a `prompts/get` or `resources/read` result is still an `input_required` one after
/// the rounds the pool answers (their other members are passed on as the server sent them).
pub(crate) fn check_input_answered(result: &Value) -> Result<(), MalformedResult> {
    match result.as_object() {
        Some(object)
            if object.get("resultType").and_then(Value::as_str) == Some("input_required") =>
        {
            Err(MalformedResult::InputRequired(asked_for(object)))
        }
        _ => Ok(()),
    }
}

/// The methods an `input_required` result asks for, in key order (`elicitation/create`, …), or
/// what it holds when it names none.
fn asked_for(result: &serde_json::Map<String, Value>) -> String {
    let methods: Vec<&str> = result
        .get("inputRequests")
        .and_then(Value::as_object)
        .map(|requests| {
            requests
                .values()
                .filter_map(|request| request.get("method").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if methods.is_empty() {
        "no request named, only its request state".to_owned()
    } else {
        methods.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn well_formed_results_pass_with_whatever_else_they_carry() {
        for result in [
            json!({"content": []}),
            json!({"content": [{"type": "text", "text": "hi"}], "isError": false}),
            json!({"content": [{"type": "future-kind", "x": 1}], "_meta": {"a": 1}}),
            json!({"content": [], "structuredContent": {"n": 1}, "isError": true, "extra": null}),
        ] {
            assert_eq!(check_call_tool_result(&result), Ok(()), "{result}");
        }
    }

    #[test]
    fn malformed_results_say_what_is_wrong() {
        let cases = [
            (json!("text"), "expected an object, got a string"),
            (
                json!({"task": {"taskId": "t1", "status": "working"}}),
                "it answered with an MCP task (a CreateTaskResult), and this daemon does not poll \
                 MCP tasks; the call was not completed",
            ),
            (
                json!({"resultType": "input_required", "requestState": "s",
                       "inputRequests": {"who": {"method": "elicitation/create", "params": {}}}}),
                "it was still asking for input (elicitation/create) through the 2026-07-28 \
                 multi-round-trip flow (`resultType: input_required`) after the daemon answered 8 \
                 rounds; the call was not completed",
            ),
            (json!({}), "it has no `content` array"),
            (
                json!({"content": "oops"}),
                "`content` is a string, expected an array of content blocks",
            ),
            (
                json!({"content": {"type": "text"}}),
                "`content` is an object, expected an array of content blocks",
            ),
            (
                json!({"content": ["text"]}),
                "content[0] is a string, expected an object with a string `type`",
            ),
            (
                json!({"content": [{"type": "text"}, {"text": "no type"}]}),
                "content[1] has no string `type`",
            ),
            (
                json!({"content": [{"type": 5}]}),
                "content[0] has no string `type`",
            ),
            (
                json!({"content": [], "isError": "yes"}),
                "`isError` is a string, expected a boolean",
            ),
            (
                json!({"content": [], "structuredContent": [1, 2]}),
                "`structuredContent` is an array, expected an object",
            ),
        ];
        for (result, expected) in cases {
            assert_eq!(
                check_call_tool_result(&result).map_err(|error| error.to_string()),
                Err(expected.to_owned()),
                "{result}"
            );
        }
    }

    #[test]
    fn a_prompt_or_resource_result_is_refused_only_while_still_asking() {
        let asking = json!({"resultType": "input_required",
                            "inputRequests": {"roots": {"method": "roots/list"}}});
        assert_eq!(
            check_input_answered(&asking),
            Err(MalformedResult::InputRequired("roots/list".to_owned()))
        );
        assert_eq!(check_input_answered(&json!({"messages": []})), Ok(()));
        assert_eq!(
            check_input_answered(&json!({"resultType": "complete", "contents": []})),
            Ok(())
        );
    }
}
