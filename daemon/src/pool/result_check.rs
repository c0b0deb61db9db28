//! Checks the shape of a server's answer before it is passed on.
//!
//! Results reach clients unnarrowed (the raw JSON the server sent), so rmcp's types never see
//! them whole; a server that answers `tools/call` with `"content": "oops"` would otherwise reach
//! the CLI as a result with nothing to print and exit 0. This is the one place that says what a
//! `CallToolResult` must look like to be passed on: the parts every client relies on, checked
//! without narrowing anything else (unknown members and content types stay as they are).

use serde_json::Value;

/// Why a `CallToolResult` cannot be passed on, or `Ok` when it can.
///
/// The MCP schema requires `content`: an array of content blocks, each an object with a string
/// `type`; `isError` is a boolean when present; `structuredContent` is an object when present.
pub(crate) fn check_call_tool_result(result: &Value) -> Result<(), String> {
    let Some(object) = result.as_object() else {
        return Err(format!(
            "expected an object, got {}",
            tool_cli_protocol::json::kind(result)
        ));
    };
    match object.get("content") {
        None if object.contains_key("task") => {
            return Err(
                "it answered with an MCP task (a CreateTaskResult), and this daemon does \
                        not poll MCP tasks; the call was not completed"
                    .to_owned(),
            );
        }
        None => return Err("it has no `content` array".to_owned()),
        Some(Value::Array(blocks)) => {
            for (index, block) in blocks.iter().enumerate() {
                match block.get("type") {
                    Some(Value::String(_)) => {}
                    _ if !block.is_object() => {
                        return Err(format!(
                            "content[{index}] is {}, expected an object with a string `type`",
                            tool_cli_protocol::json::kind(block)
                        ));
                    }
                    _ => {
                        return Err(format!("content[{index}] has no string `type`"));
                    }
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "`content` is {}, expected an array of content blocks",
                tool_cli_protocol::json::kind(other)
            ));
        }
    }
    if let Some(flag) = object.get("isError")
        && !flag.is_boolean()
    {
        return Err(format!(
            "`isError` is {}, expected a boolean",
            tool_cli_protocol::json::kind(flag)
        ));
    }
    if let Some(structured) = object.get("structuredContent")
        && !structured.is_object()
    {
        return Err(format!(
            "`structuredContent` is {}, expected an object",
            tool_cli_protocol::json::kind(structured)
        ));
    }
    Ok(())
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
                check_call_tool_result(&result),
                Err(expected.to_owned()),
                "{result}"
            );
        }
    }
}
