//! Words for JSON values in messages, the same everywhere on the wire.

use serde_json::Value;

/// "an object", "an array", "a string", "a number", "a boolean" or "null": what a value is, for
/// an error that says what was given and what was expected.
pub fn kind(value: &Value) -> &'static str {
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

    #[test]
    fn each_kind_has_its_json_name() {
        let kinds: Vec<&str> = [
            json!(null),
            json!(true),
            json!(1.5),
            json!("x"),
            json!([1]),
            json!({"a": 1}),
        ]
        .iter()
        .map(super::kind)
        .collect();
        assert_eq!(
            kinds,
            [
                "null",
                "a boolean",
                "a number",
                "a string",
                "an array",
                "an object"
            ]
        );
    }
}
