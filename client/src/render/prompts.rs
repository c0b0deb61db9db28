//! `tool-cli prompt list|get` renderings: one line per prompt with its arguments (required ones
//! marked `*`), and a rendered prompt as its messages, each headed by its role.

use std::fmt::Write as _;

use serde_json::Value;

use super::{SUMMARY_WIDTH, content_item, truncate};
use crate::sanitize;

/// A `listPrompts` result: `server/name(city*, state)  description`, then servers left out.
pub(crate) fn prompt_list(result: &Value) -> String {
    let prompts = result
        .get("prompts")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut text = String::new();
    if prompts.is_empty() {
        text.push_str(
            "no prompts: the servers offer none, or this token has no prompt grant \
             (`tool-cli token mint --prompt SERVER/GLOB`)\n",
        );
    }
    for entry in prompts {
        let server = entry.get("server").and_then(Value::as_str).unwrap_or("?");
        let prompt = &entry["prompt"];
        let name = prompt.get("name").and_then(Value::as_str).unwrap_or("?");
        let arguments: Vec<String> = prompt
            .get("arguments")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|argument| {
                let name = argument.get("name").and_then(Value::as_str)?;
                let required = argument.get("required").and_then(Value::as_bool) == Some(true);
                Some(format!("{name}{}", if required { "*" } else { "" }))
            })
            .collect();
        let description = prompt
            .get("description")
            .or_else(|| prompt.get("title"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let _ = write!(
            text,
            "{}/{}({})",
            sanitize::line(server),
            sanitize::line(name),
            sanitize::line(&arguments.join(", "))
        );
        if !description.is_empty() {
            let _ = write!(
                text,
                "  {}",
                sanitize::line(&truncate(description, SUMMARY_WIDTH))
            );
        }
        text.push('\n');
    }
    if let Some(unavailable) = result.get("unavailable").and_then(Value::as_array) {
        for entry in unavailable {
            let server = entry.get("server").and_then(Value::as_str).unwrap_or("?");
            let error = entry.get("error").and_then(Value::as_str).unwrap_or("");
            let _ = writeln!(
                text,
                "{}: not listed: {}",
                sanitize::line(server),
                sanitize::line(&truncate(error, SUMMARY_WIDTH * 2))
            );
        }
    }
    if !prompts.is_empty() {
        text.push_str(
            "(* required; render one with `tool-cli prompt get SERVER NAME key=value...`)\n",
        );
    }
    text
}

/// A `getPrompt` result: its description, then each message as `[role]` and its content.
pub(crate) fn prompt_messages(result: &Value) -> String {
    let mut text = String::new();
    if let Some(description) = result.get("description").and_then(Value::as_str) {
        let _ = writeln!(text, "{}\n", sanitize::line(description));
    }
    let messages = result
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (index, message) in messages.iter().enumerate() {
        if index > 0 {
            text.push('\n');
        }
        let role = message.get("role").and_then(Value::as_str).unwrap_or("?");
        let _ = writeln!(text, "[{}]", sanitize::line(role));
        // A message holds one content block (MCP 2025-06) or, from some servers, a list.
        let contents: Vec<&Value> = match message.get("content") {
            Some(Value::Array(items)) => items.iter().collect(),
            Some(item) => vec![item],
            None => Vec::new(),
        };
        for content in contents {
            text.push_str(&content_item(content));
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn list_marks_required_arguments_and_names_unavailable_servers() {
        let text = prompt_list(&json!({
            "prompts": [
                {"server": "everything", "prompt": {"name": "args-prompt", "description": "Two args",
                  "arguments": [{"name": "city", "required": true}, {"name": "state"}]}},
                {"server": "everything", "prompt": {"name": "simple-prompt"}}
            ],
            "unavailable": [{"server": "gh", "error": "not connected"}]
        }));
        assert!(
            text.starts_with(
                "everything/args-prompt(city*, state)  Two args\neverything/simple-prompt()\n"
            ),
            "{text}"
        );
        assert!(text.contains("gh: not listed: not connected"), "{text}");
        let empty = prompt_list(&json!({"prompts": []}));
        assert!(empty.contains("--prompt SERVER/GLOB"), "{empty}");
    }

    #[test]
    fn messages_are_headed_by_their_role() {
        let text = prompt_messages(&json!({
            "description": "weather",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "What's the weather in Paris?"}},
                {"role": "assistant", "content": {"type": "text", "text": "Sunny."}}
            ]
        }));
        assert_eq!(
            text,
            "weather\n\n[user]\nWhat's the weather in Paris?\n\n[assistant]\nSunny.\n"
        );
    }
}
