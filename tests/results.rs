//! Reading results: the text of a `CallToolResult`, an error's structured data, and redacting
//! values for snapshots.

use serde_json::Value;
use tool_cli_protocol::ErrorObject;

/// The text of every `text` content item of a `CallToolResult`, joined by newlines.
pub fn text_content(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("CallToolResult without content: {result:#}"))
        .iter()
        .filter(|item| item["type"] == "text")
        .filter_map(|item| item["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The structured `data` of an error, as our wire type.
pub fn error_data(error: &ErrorObject) -> tool_cli_protocol::ErrorData {
    error
        .error_data()
        .unwrap_or_else(|| panic!("error without a known structured data member: {error:?}"))
}

/// Replaces the values at the given JSON pointers with `"<name>"` placeholders, for snapshots.
pub fn redact(mut value: Value, pointers: &[&str]) -> Value {
    for pointer in pointers {
        if let Some(slot) = value.pointer_mut(pointer) {
            let name = pointer.rsplit('/').next().unwrap_or(pointer);
            *slot = Value::String(format!("<{name}>"));
        }
    }
    value
}

/// Asserts `refused` is the pipeline's typed pin refusal (-32012, `pinRefused`) of an item
/// whose pinned `changed_fields` differ, its message naming the `approve` command that would
/// let it through; its `data`, for the checks particular to a test.
pub fn assert_pin_refused_changed(
    refused: &ErrorObject,
    changed_fields: Value,
    approve: &str,
) -> Value {
    assert_eq!(refused.code, -32012, "{refused:?}");
    let data = refused.data.clone().unwrap();
    assert_eq!(data["kind"], "pinRefused", "{data}");
    assert_eq!(data["reason"], "changed", "{data}");
    assert_eq!(data["changedFields"], changed_fields, "{data}");
    assert!(refused.message.contains(approve), "{refused:?}");
    data
}

/// Asserts `refused` is a session's typed budget refusal (-32009, `budgetExceeded`) for
/// `budget` (`calls`, `wallTimeMs`, …) at `limit`.
pub fn assert_budget_exceeded(refused: &ErrorObject, budget: &str, limit: u64) {
    assert_eq!(refused.code, -32009, "{refused:?}");
    let data = refused.data.clone().unwrap();
    assert_eq!(data["kind"], "budgetExceeded", "{data}");
    assert_eq!(data["budget"], budget, "{data}");
    assert_eq!(data["limit"], limit, "{data}");
}
