//! Short texts of tool results: what the model reads and what the result and events report.
//!
//! An MCP `CallToolResult` can be megabytes; the model gets its text content (or its
//! `structuredContent` as JSON when there is no text) cut at a bound, and the run's record gets a
//! one-line summary. Pure functions.

use serde_json::Value;

/// The most characters of one tool result shown to an LLM.
pub const MODEL_RESULT_CHARS: usize = 16_000;
/// The most characters of a result summary in records and events.
pub const SUMMARY_CHARS: usize = 300;
/// Results larger than this (serialized) are not kept whole in the run's record.
pub const KEEP_RESULT_BYTES: usize = 64 * 1024;

/// The text a model should read for a `CallToolResult`: its text blocks joined, else its
/// `structuredContent`, else the whole value as JSON; cut to `limit` characters.
pub fn result_text(result: &Value, limit: usize) -> String {
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|block| block.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    let text = if !texts.is_empty() {
        texts.join("\n")
    } else if let Some(structured) = result.get("structuredContent") {
        structured.to_string()
    } else {
        result.to_string()
    };
    truncate(&text, limit)
}

/// `text` cut to at most `limit` characters, saying how much was left out.
pub fn truncate(text: &str, limit: usize) -> String {
    let count = text.chars().count();
    if count <= limit {
        return text.to_owned();
    }
    let kept: String = text.chars().take(limit).collect();
    format!("{kept}… [{} more characters]", count - limit)
}

/// A one-line summary.
pub fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    truncate(flat.trim(), SUMMARY_CHARS)
}

/// "an object", "a string", … for messages.
pub fn kind_of(value: &Value) -> &'static str {
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

    #[test]
    fn text_blocks_win_then_structured_content() {
        let result = json!({"content": [{"type": "text", "text": "a"}, {"type": "image"},
                                        {"type": "text", "text": "b"}],
                            "structuredContent": {"x": 1}});
        assert_eq!(result_text(&result, 100), "a\nb");
        assert_eq!(
            result_text(&json!({"structuredContent": {"x": 1}}), 100),
            "{\"x\":1}"
        );
        assert_eq!(
            result_text(&json!({"executed": false}), 100),
            "{\"executed\":false}"
        );
    }

    #[test]
    fn truncation_counts_characters_not_bytes() {
        assert_eq!(truncate("héllo", 2), "hé… [3 more characters]");
        assert_eq!(one_line("a\nb\tc"), "a b c");
    }
}
