//! `tool-cli SERVER TOOL`: a tool's schema as a person or an agent reads it: its description,
//! one line per parameter (type, required, constraints), nested objects a level or two deep, the
//! output and annotations, and an example call built from the required parameters.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::{compact, list_values, shell_quote, shell_word};
use crate::sanitize;

/// How deep nested object parameters are expanded in a schema summary.
const NESTING_MAX: usize = 2;

/// `tool-cli SERVER TOOL`: the tool's description, its parameters, output and annotations, and
/// an example call built from its required parameters.
pub(crate) fn tool_schema(server: &str, tool: &Value) -> String {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
    let mut text = format!("{} {}\n", sanitize::line(server), sanitize::line(name));
    if let Some(title) = tool
        .pointer("/annotations/title")
        .or_else(|| tool.get("title"))
        .and_then(Value::as_str)
    {
        let _ = writeln!(text, "  {title}");
    }
    if let Some(description) = tool.get("description").and_then(Value::as_str) {
        for line in description.trim().lines() {
            let _ = writeln!(text, "  {}", line.trim_end());
        }
    }

    let empty = Value::Object(Map::new());
    let input_schema = tool.get("inputSchema").unwrap_or(&empty);
    if !input_schema.is_object() && !input_schema.is_boolean() {
        // No parameters can be read from it, and the daemon refuses every call until the server
        // fixes it: an example call would only mislead.
        let _ = writeln!(
            text,
            "\nParameters: unknown: its inputSchema is {}, not a JSON Schema object; calls are \
             refused until the server publishes a valid schema",
            tool_cli_protocol::json::kind(input_schema)
        );
        return text;
    }
    let properties = input_schema.get("properties").and_then(Value::as_object);
    text.push('\n');
    match properties {
        Some(properties) if !properties.is_empty() => {
            text.push_str("Parameters:\n");
            let required = required_names(input_schema);
            for (parameter, schema) in properties {
                describe_parameter(
                    &mut text,
                    parameter,
                    schema,
                    required.contains(&parameter.as_str()),
                    input_schema,
                    1,
                );
            }
        }
        _ => text.push_str("Parameters: none\n"),
    }

    if let Some(output_schema) = tool.get("outputSchema").filter(|schema| schema.is_object()) {
        let _ = write!(text, "Output: structured JSON (outputSchema: ");
        let fields: Vec<Value> = output_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| properties.keys().cloned().map(Value::String).collect())
            .unwrap_or_default();
        if fields.is_empty() {
            text.push_str(&type_summary(output_schema, output_schema, 0));
        } else {
            let names = list_values(&fields).replace('"', "");
            let _ = write!(text, "object with {names}");
        }
        text.push_str(")\n");
    }
    let annotations = annotation_words(tool.get("annotations"));
    if !annotations.is_empty() {
        let _ = writeln!(text, "Annotations: {}", annotations.join(", "));
    }

    let example = example_arguments(input_schema);
    let _ = write!(
        text,
        "\nExample:\n  tool-cli {} {} {}\n",
        shell_word(server),
        shell_word(name),
        shell_quote(&example)
    );
    if let Some(words) = example_words(&example) {
        let _ = writeln!(
            text,
            "  tool-cli {} {} {words}",
            shell_word(server),
            shell_word(name)
        );
    }
    text
}

/// The example arguments as `key=value` words (`key:=JSON` for what is not a string), when
/// there are any: the same call, easier to type.
fn example_words(example: &str) -> Option<String> {
    let Ok(Value::Object(members)) = serde_json::from_str::<Value>(example) else {
        return None;
    };
    if members.is_empty() {
        return None;
    }
    let words: Vec<String> = members
        .iter()
        .map(|(key, value)| match value {
            Value::String(text) if !text.starts_with('@') => shell_word(&format!("{key}={text}")),
            other => shell_word(&format!("{key}:={}", compact(other))),
        })
        .collect();
    Some(words.join(" "))
}

/// Names listed in a schema's `required`.
fn required_names(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// One parameter: `name: type, required|optional, constraints`, then its description on the next
/// line; object parameters list their own properties one level deeper.
fn describe_parameter(
    text: &mut String,
    path: &str,
    schema: &Value,
    required: bool,
    root: &Value,
    depth: usize,
) {
    let schema = resolve(schema, root);
    let indent = "  ".repeat(depth);
    let mut line = format!(
        "{indent}{path}: {}, {}",
        type_summary(schema, root, 0),
        if required { "required" } else { "optional" }
    );
    for constraint in constraints(schema) {
        line.push_str(", ");
        line.push_str(&constraint);
    }
    text.push_str(&line);
    text.push('\n');
    // The schema view is where details matter (defaults, clamping, formats): the whole
    // description, not its first sentence.
    if let Some(description) = schema.get("description").and_then(Value::as_str) {
        for line in description.trim().lines() {
            let _ = writeln!(text, "{indent}    {}", line.trim_end());
        }
    }
    if depth > NESTING_MAX {
        return;
    }
    // Expand objects, and objects inside arrays, so `edits[].oldText` is visible.
    let (nested, separator) = match schema.get("items").map(|items| resolve(items, root)) {
        Some(items) if items.get("properties").is_some() => (items, "[]."),
        _ => (schema, "."),
    };
    if let Some(properties) = nested.get("properties").and_then(Value::as_object) {
        let required = required_names(nested);
        for (name, child) in properties {
            describe_parameter(
                text,
                &format!("{path}{separator}{name}"),
                child,
                required.contains(&name.as_str()),
                root,
                depth + 1,
            );
        }
    }
}

/// Follows a local `$ref` (`#/$defs/Name`), leaving the schema as is when it cannot.
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut current = schema;
    // A bound on the hops, since refs can form cycles.
    for _ in 0..8 {
        match current
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| reference.strip_prefix('#'))
            .and_then(|pointer| root.pointer(pointer))
        {
            Some(target) => current = target,
            None => break,
        }
    }
    current
}

/// A short type expression: `string`, `integer | null`, `array of string`, `one of "a", "b"`,
/// `object`, `string (uri)`; `any` when the schema does not say.
pub(crate) fn type_summary(schema: &Value, root: &Value, depth: usize) -> String {
    if depth > 4 {
        return "…".to_owned();
    }
    let schema = resolve(schema, root);
    let Some(object) = schema.as_object() else {
        return "any".to_owned();
    };
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        return format!("one of {}", list_values(values));
    }
    if let Some(value) = object.get("const") {
        return format!("constant {}", compact(value));
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(variants) = object.get(keyword).and_then(Value::as_array) {
            let mut parts: Vec<String> = Vec::new();
            for variant in variants {
                let part = type_summary(variant, root, depth + 1);
                if !parts.contains(&part) {
                    parts.push(part);
                }
            }
            return parts.join(" | ");
        }
    }
    let types: Vec<&str> = match object.get("type") {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ if object.contains_key("properties") => vec!["object"],
        _ if object.contains_key("items") => vec!["array"],
        _ => return "any".to_owned(),
    };
    types
        .iter()
        .map(|name| match *name {
            "array" => match object.get("items") {
                Some(items) if items.is_object() => {
                    let inner = type_summary(items, root, depth + 1);
                    if inner.contains(" | ") || inner.starts_with("one of") {
                        format!("array of ({inner})")
                    } else {
                        format!("array of {inner}")
                    }
                }
                _ => "array".to_owned(),
            },
            "string" => match object.get("format").and_then(Value::as_str) {
                Some(format) => format!("string ({format})"),
                None => "string".to_owned(),
            },
            other => other.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The constraints worth a glance: default, numeric range, length and item bounds, pattern.
fn constraints(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    if let Some(default) = schema.get("default") {
        found.push(format!("default {}", compact(default)));
    }
    let number = |keyword: &str| schema.get(keyword).filter(|value| value.is_number());
    match (number("minimum"), number("maximum")) {
        (Some(low), Some(high)) => found.push(format!("{low} to {high}")),
        (Some(low), None) => found.push(format!(">= {low}")),
        (None, Some(high)) => found.push(format!("<= {high}")),
        (None, None) => {}
    }
    if let Some(low) = number("exclusiveMinimum") {
        found.push(format!("> {low}"));
    }
    if let Some(high) = number("exclusiveMaximum") {
        found.push(format!("< {high}"));
    }
    for (keyword, words) in [
        ("minLength", "min length"),
        ("maxLength", "max length"),
        ("minItems", "min items"),
        ("maxItems", "max items"),
    ] {
        if let Some(value) = number(keyword) {
            found.push(format!("{words} {value}"));
        }
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        found.push(format!("pattern {pattern}"));
    }
    found
}

/// The MCP annotations as words, only those that say something.
fn annotation_words(annotations: Option<&Value>) -> Vec<&'static str> {
    let Some(annotations) = annotations else {
        return Vec::new();
    };
    let flag = |name: &str| annotations.get(name).and_then(Value::as_bool);
    let mut words = Vec::new();
    let read_only = flag("readOnlyHint") == Some(true);
    if read_only {
        words.push("read-only");
    }
    // The spec gives destructiveHint meaning only for tools that are not read-only.
    if !read_only {
        match flag("destructiveHint") {
            Some(true) => words.push("destructive"),
            Some(false) => words.push("not destructive"),
            None => {}
        }
    }
    if flag("idempotentHint") == Some(true) {
        words.push("idempotent");
    }
    if flag("openWorldHint") == Some(true) {
        words.push("open world");
    }
    words
}

/// Example arguments: every required parameter with a plausible value, as one JSON line.
fn example_arguments(input_schema: &Value) -> String {
    let properties = input_schema.get("properties").and_then(Value::as_object);
    let required = required_names(input_schema);
    let members: Vec<String> = properties
        .into_iter()
        .flatten()
        .filter(|(name, _)| required.contains(&name.as_str()))
        .map(|(name, schema)| {
            format!(
                "{}: {}",
                compact(&Value::String(name.clone())),
                compact(&example_value(name, schema, input_schema, 0))
            )
        })
        .collect();
    format!("{{{}}}", members.join(", "))
}

/// A value that fits `schema`, preferring what the schema itself offers (examples, default,
/// enum) over a placeholder such as `"<path>"` that names what to fill in.
fn example_value(name: &str, schema: &Value, root: &Value, depth: usize) -> Value {
    let schema = resolve(schema, root);
    if let Some(example) = schema
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|examples| examples.first())
    {
        return example.clone();
    }
    for keyword in ["default", "const"] {
        if let Some(value) = schema.get(keyword) {
            return value.clone();
        }
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|values| values.first())
    {
        return first.clone();
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(variant) = schema
            .get(keyword)
            .and_then(Value::as_array)
            .and_then(|variants| {
                variants
                    .iter()
                    .find(|variant| variant.get("type").and_then(Value::as_str) != Some("null"))
            })
        {
            return example_value(name, variant, root, depth + 1);
        }
    }
    let type_name = match schema.get("type") {
        Some(Value::String(name)) => name.as_str(),
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(Value::as_str)
            .find(|name| *name != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match type_name {
        "integer" | "number" => schema
            .get("minimum")
            .filter(|value| value.is_number())
            .cloned()
            .unwrap_or(Value::from(1)),
        "boolean" => Value::Bool(true),
        "null" => Value::Null,
        "array" if depth < 3 => match schema.get("items").filter(|items| items.is_object()) {
            Some(items) => Value::Array(vec![example_value(name, items, root, depth + 1)]),
            None => Value::Array(Vec::new()),
        },
        "object" if depth < 3 => {
            let mut object = Map::new();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                let required = required_names(schema);
                for (child, child_schema) in properties {
                    if required.contains(&child.as_str()) {
                        object.insert(
                            child.clone(),
                            example_value(child, child_schema, root, depth + 1),
                        );
                    }
                }
            }
            Value::Object(object)
        }
        "array" => Value::Array(Vec::new()),
        "object" => Value::Object(Map::new()),
        _ => Value::String(format!("<{name}>")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The `echo` tool of the reference server-everything, as it lists it.
    fn everything_echo() -> Value {
        json!({
            "name": "echo",
            "description": "Echoes back the input",
            "inputSchema": {
                "type": "object",
                "properties": {"message": {"type": "string", "description": "Message to echo"}},
                "required": ["message"],
                "additionalProperties": false,
                "$schema": "http://json-schema.org/draft-07/schema#"
            }
        })
    }

    /// `edit_file` of the reference filesystem server: an array of objects, a default.
    fn filesystem_edit_file() -> Value {
        json!({
            "name": "edit_file",
            "description": "Make line-based edits to a text file. Each edit replaces exact line \
                sequences with new content. Returns a git-style diff showing the changes made. \
                Only works within allowed directories.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "edits": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "oldText": {"type": "string", "description": "Text to search for - must match exactly"},
                                "newText": {"type": "string", "description": "Text to replace with"}
                            },
                            "required": ["oldText", "newText"],
                            "additionalProperties": false
                        }
                    },
                    "dryRun": {"type": "boolean", "default": false, "description": "Preview changes using git-style diff format"}
                },
                "required": ["path", "edits"],
                "additionalProperties": false,
                "$schema": "http://json-schema.org/draft-07/schema#"
            },
            "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false}
        })
    }

    /// A tool in the shape our demo server's `sql_query` has: enum, type array, ref, output.
    fn sql_query() -> Value {
        json!({
            "name": "sql_query",
            "description": "Run one read-only SQL query against the demo database.\nReturns rows as objects.",
            "inputSchema": {
                "type": "object",
                "$defs": {"Format": {"type": "string", "enum": ["rows", "csv"]}},
                "properties": {
                    "query": {"type": "string", "description": "The SELECT statement"},
                    "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000, "default": 100},
                    "format": {"$ref": "#/$defs/Format"},
                    "params": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}}
                },
                "required": ["query"]
            },
            "outputSchema": {
                "type": "object",
                "properties": {"columns": {"type": "array"}, "rows": {"type": "array"}}
            },
            "annotations": {"title": "SQL query", "readOnlyHint": true, "openWorldHint": false}
        })
    }

    #[test]
    fn echo_schema_summary() {
        assert_eq!(
            tool_schema("everything", &everything_echo()),
            "\
everything echo
  Echoes back the input

Parameters:
  message: string, required
      Message to echo

Example:
  tool-cli everything echo '{\"message\": \"<message>\"}'
  tool-cli everything echo 'message=<message>'
"
        );
    }

    #[test]
    fn filesystem_schema_expands_arrays_of_objects() {
        let text = tool_schema("filesystem", &filesystem_edit_file());
        assert!(text.contains("  path: string, required\n"), "{text}");
        assert!(
            text.contains("  edits: array of object, required\n"),
            "{text}"
        );
        assert!(
            text.contains("    edits[].oldText: string, required\n        Text to search for"),
            "{text}"
        );
        assert!(
            text.contains("  dryRun: boolean, optional, default false\n      Preview changes"),
            "{text}"
        );
        assert!(text.contains("Annotations: destructive\n"), "{text}");
        assert!(
            text.ends_with(
                "tool-cli filesystem edit_file '{\"path\": \"<path>\", \"edits\": \
                 [{\"oldText\":\"<oldText>\",\"newText\":\"<newText>\"}]}'\n  \
                 tool-cli filesystem edit_file 'path=<path>' \
                 'edits:=[{\"oldText\":\"<oldText>\",\"newText\":\"<newText>\"}]'\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn sql_schema_handles_type_arrays_refs_enums_and_output() {
        let text = tool_schema("demo", &sql_query());
        assert!(
            text.starts_with("demo sql_query\n  SQL query\n  Run one read-only"),
            "{text}"
        );
        assert!(text.contains("  Returns rows as objects.\n"), "{text}");
        assert!(
            text.contains("  limit: integer | null, optional, default 100, 1 to 1000\n"),
            "{text}"
        );
        assert!(
            text.contains("  format: one of \"rows\", \"csv\", optional\n"),
            "{text}"
        );
        assert!(
            text.contains("  params: array of (string | number), optional\n"),
            "{text}"
        );
        assert!(
            text.contains("Output: structured JSON (outputSchema: object with columns, rows)\n"),
            "{text}"
        );
        assert!(text.contains("Annotations: read-only\n"), "{text}");
        assert!(
            text.ends_with(
                "tool-cli demo sql_query '{\"query\": \"<query>\"}'\n  \
                 tool-cli demo sql_query 'query=<query>'\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn an_input_schema_that_is_not_a_schema_gets_no_example() {
        let tool = json!({"name": "broken", "inputSchema": "this schema is a string"});
        let text = tool_schema("hostile", &tool);
        assert!(
            text.contains("Parameters: unknown: its inputSchema is a string, not a JSON Schema"),
            "{text}"
        );
        assert!(!text.contains("Example"), "{text}");
    }

    #[test]
    fn tool_without_parameters() {
        let tool = json!({"name": "get time", "inputSchema": {"type": "object"}});
        let text = tool_schema("clock", &tool);
        assert!(text.contains("Parameters: none\n"), "{text}");
        assert!(text.ends_with("tool-cli clock 'get time' '{}'\n"), "{text}");
    }

    #[test]
    fn example_quotes_single_quotes_for_the_shell() {
        let tool = json!({"name": "say", "inputSchema": {"type": "object",
            "properties": {"text": {"type": "string", "examples": ["it's"]}}, "required": ["text"]}});
        let text = tool_schema("s", &tool);
        assert!(
            text.ends_with(
                "tool-cli s say '{\"text\": \"it'\\''s\"}'\n  tool-cli s say 'text=it'\\''s'\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn type_summary_forms() {
        let root = json!({});
        let cases = [
            (json!({"type": "string", "format": "uri"}), "string (uri)"),
            (json!({"type": ["string", "null"]}), "string | null"),
            (
                json!({"type": "array", "items": {"type": "string"}}),
                "array of string",
            ),
            (json!({"type": "array"}), "array"),
            (
                json!({"oneOf": [{"type": "integer"}, {"type": "string"}]}),
                "integer | string",
            ),
            (json!({"const": "x"}), "constant \"x\""),
            (json!({"properties": {"a": {}}}), "object"),
            (json!({}), "any"),
            (json!(true), "any"),
        ];
        for (schema, expected) in cases {
            assert_eq!(type_summary(&schema, &root, 0), expected, "{schema}");
        }
    }
}
