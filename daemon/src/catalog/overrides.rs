//! Tool overrides: the config's corrections for servers whose tools are poorly described.
//!
//! Per server, `tools: {NAME: {description?, arguments?: [{name, type?, description?,
//! required?}], hidden?, priority?}}`. An override replaces the tool's description, merges
//! argument types and descriptions into its `inputSchema` (so validation uses them, and
//! `describeTool` and the agent see them), hides the tool from listings, or sets its routing
//! priority. What was overridden is recorded in the tool's `_meta["tool-cli/overridden"]`.
//!
//! Parsing is checked when the config loads (shape, known JSON Schema types, duplicates), naming
//! the path of every mistake. Whether an override contradicts the server's own schema can only
//! be known when the server lists its tools: an argument whose type clashes with the server's is
//! refused then (that override is not applied; the error names the path and both types), since
//! sending a value of the wrong type would only move the failure to the server.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// The types an override may give an argument.
const TYPES: &[&str] = &[
    "string", "integer", "number", "boolean", "object", "array", "null",
];

/// The override of one tool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOverride {
    /// Replaces the tool's description.
    pub description: Option<String>,
    /// Merged into its `inputSchema`.
    pub arguments: Vec<ArgumentOverride>,
    /// Left out of listings, search and routing (still callable by exact server and name).
    pub hidden: bool,
    /// Routing priority of this tool, instead of the server's.
    pub priority: Option<i64>,
}

/// The override of one argument.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgumentOverride {
    /// The argument (a property of the input schema).
    pub name: String,
    /// Its JSON Schema type.
    pub kind: Option<String>,
    /// Its description.
    pub description: Option<String>,
    /// Whether it must be given (`None` leaves the server's choice).
    pub required: Option<bool>,
}

/// Parses a server's `tools` member; errors are `(path, message)` with the path from `tools`.
pub fn parse(value: &Value) -> Result<BTreeMap<String, ToolOverride>, (String, String)> {
    let Some(tools) = value.as_object() else {
        return Err((
            "tools".to_owned(),
            "expected an object mapping tool names to overrides".to_owned(),
        ));
    };
    let mut parsed = BTreeMap::new();
    for (tool, entry) in tools {
        let at = format!("tools.{tool}");
        let Some(entry) = entry.as_object() else {
            return Err((
                at,
                "expected an object such as {\"description\": \"…\"}".to_owned(),
            ));
        };
        let mut tool_override = ToolOverride::default();
        for (key, member) in entry {
            let at = format!("{at}.{key}");
            match key.as_str() {
                "description" => tool_override.description = Some(string(member, &at)?),
                "hidden" => tool_override.hidden = boolean(member, &at)?,
                "priority" => {
                    tool_override.priority = Some(member.as_i64().ok_or_else(|| {
                        (at.clone(), "expected an integer (higher wins)".to_owned())
                    })?)
                }
                "arguments" => tool_override.arguments = arguments(member, &at)?,
                other => {
                    return Err((
                        at,
                        format!(
                            "unknown field \"{other}\"; expected description, arguments, hidden \
                             or priority"
                        ),
                    ));
                }
            }
        }
        parsed.insert(tool.clone(), tool_override);
    }
    Ok(parsed)
}

fn arguments(value: &Value, at: &str) -> Result<Vec<ArgumentOverride>, (String, String)> {
    let Some(items) = value.as_array() else {
        return Err((
            at.to_owned(),
            "expected a list of {\"name\", \"type\", \"description\", \"required\"}".to_owned(),
        ));
    };
    let mut parsed: Vec<ArgumentOverride> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let at = format!("{at}[{index}]");
        let Some(item) = item.as_object() else {
            return Err((at, "expected an object with a \"name\"".to_owned()));
        };
        let mut argument = ArgumentOverride {
            name: String::new(),
            kind: None,
            description: None,
            required: None,
        };
        for (key, member) in item {
            let at = format!("{at}.{key}");
            match key.as_str() {
                "name" => argument.name = string(member, &at)?,
                "type" => {
                    let kind = string(member, &at)?;
                    if !TYPES.contains(&kind.as_str()) {
                        return Err((
                            at,
                            format!(
                                "\"{kind}\" is not a JSON Schema type; expected one of {}",
                                TYPES.join(", ")
                            ),
                        ));
                    }
                    argument.kind = Some(kind);
                }
                "description" => argument.description = Some(string(member, &at)?),
                "required" => argument.required = Some(boolean(member, &at)?),
                other => {
                    return Err((
                        at,
                        format!(
                            "unknown field \"{other}\"; expected name, type, description or required"
                        ),
                    ));
                }
            }
        }
        if argument.name.is_empty() {
            return Err((
                format!("{at}.name"),
                "missing or empty; name the argument".to_owned(),
            ));
        }
        if parsed.iter().any(|other| other.name == argument.name) {
            return Err((
                format!("{at}.name"),
                format!(
                    "\"{}\" is overridden twice; merge the two entries",
                    argument.name
                ),
            ));
        }
        parsed.push(argument);
    }
    Ok(parsed)
}

fn string(value: &Value, at: &str) -> Result<String, (String, String)> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| (at.to_owned(), "expected a string".to_owned()))
}

fn boolean(value: &Value, at: &str) -> Result<bool, (String, String)> {
    value
        .as_bool()
        .ok_or_else(|| (at.to_owned(), "expected true or false".to_owned()))
}

/// Applies `tool_override` to a tool's JSON as the server listed it. Returns what was changed,
/// or why the override was refused (and nothing was changed).
pub fn apply(tool: &mut Value, tool_override: &ToolOverride) -> Result<Vec<String>, String> {
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut schema = tool
        .get("inputSchema")
        .cloned()
        .unwrap_or_else(|| serde_json::json!({"type": "object"}));
    let mut changed = Vec::new();
    if !tool_override.arguments.is_empty() {
        let Some(schema_object) = schema.as_object_mut() else {
            return Err(format!(
                "tools.{name}.arguments: the server's inputSchema is not an object, so arguments \
                 cannot be merged into it"
            ));
        };
        for argument in &tool_override.arguments {
            let properties = schema_object
                .entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            let Some(properties) = properties.as_object_mut() else {
                return Err(format!(
                    "tools.{name}.arguments: the server's inputSchema.properties is not an object"
                ));
            };
            let property = properties
                .entry(argument.name.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            let Some(property) = property.as_object_mut() else {
                return Err(format!(
                    "tools.{name}.arguments.{}: the server's schema for it is not an object",
                    argument.name
                ));
            };
            if let Some(kind) = &argument.kind {
                if let Some(theirs) = property.get("type")
                    && !type_allows(theirs, kind)
                {
                    return Err(format!(
                        "tools.{name}.arguments.{}.type is \"{kind}\", but the server's schema \
                         says {theirs}; fix or remove the override",
                        argument.name
                    ));
                }
                property.insert("type".to_owned(), Value::String(kind.clone()));
            }
            if let Some(description) = &argument.description {
                property.insert("description".to_owned(), Value::String(description.clone()));
            }
            if let Some(required) = argument.required {
                let list = schema_object
                    .entry("required")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Some(list) = list.as_array_mut() {
                    let present = list
                        .iter()
                        .any(|item| item.as_str() == Some(&argument.name));
                    if required && !present {
                        list.push(Value::String(argument.name.clone()));
                    } else if !required {
                        list.retain(|item| item.as_str() != Some(&argument.name));
                    }
                }
            }
            changed.push(format!("arguments.{}", argument.name));
        }
    }
    let Some(object) = tool.as_object_mut() else {
        return Err(format!("tools.{name}: the tool is not a JSON object"));
    };
    if !tool_override.arguments.is_empty() {
        object.insert("inputSchema".to_owned(), schema);
    }
    if let Some(description) = &tool_override.description {
        object.insert("description".to_owned(), Value::String(description.clone()));
        changed.push("description".to_owned());
    }
    if tool_override.hidden {
        changed.push("hidden".to_owned());
    }
    if tool_override.priority.is_some() {
        changed.push("priority".to_owned());
    }
    let meta = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(
            "tool-cli/overridden".to_owned(),
            Value::Array(changed.iter().cloned().map(Value::String).collect()),
        );
    }
    Ok(changed)
}

/// Whether the server's `type` (a string or a list of strings) admits `kind`; an integer is a
/// number, so narrowing `number` to `integer` is allowed.
fn type_allows(theirs: &Value, kind: &str) -> bool {
    let admits = |theirs: &str| theirs == kind || (theirs == "number" && kind == "integer");
    match theirs {
        Value::String(theirs) => admits(theirs),
        Value::Array(items) => items.iter().filter_map(Value::as_str).any(admits),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parse_names_the_path_of_every_mistake() {
        let ok = parse(
            &json!({"read": {"description": "Reads a file", "hidden": false,
            "priority": 2, "arguments": [{"name": "path", "type": "string", "required": true}]}}),
        )
        .unwrap();
        assert_eq!(ok["read"].priority, Some(2));
        assert_eq!(ok["read"].arguments[0].required, Some(true));
        for (value, path, words) in [
            (json!([]), "tools", "expected an object"),
            (json!({"t": 1}), "tools.t", "expected an object"),
            (
                json!({"t": {"descr": "x"}}),
                "tools.t.descr",
                "unknown field",
            ),
            (
                json!({"t": {"arguments": [{"type": "string"}]}}),
                "tools.t.arguments[0].name",
                "missing",
            ),
            (
                json!({"t": {"arguments": [{"name": "a", "type": "text"}]}}),
                "tools.t.arguments[0].type",
                "not a JSON Schema type",
            ),
            (
                json!({"t": {"arguments": [{"name": "a"}, {"name": "a"}]}}),
                "tools.t.arguments[1].name",
                "twice",
            ),
            (
                json!({"t": {"priority": "high"}}),
                "tools.t.priority",
                "integer",
            ),
        ] {
            let (at, message) = parse(&value).unwrap_err();
            assert_eq!(at, path, "{value}");
            assert!(message.contains(words), "{message}");
        }
    }

    #[test]
    fn apply_merges_into_the_schema_and_marks_what_changed() {
        let mut tool = json!({"name": "read", "description": "r",
            "inputSchema": {"type": "object", "properties": {"p": {"type": "string", "maxLength": 9}},
                            "required": ["x"]}});
        let tool_override = ToolOverride {
            description: Some("Read a file by path".into()),
            arguments: vec![
                ArgumentOverride {
                    name: "p".into(),
                    kind: Some("string".into()),
                    description: Some("absolute path".into()),
                    required: Some(true),
                },
                ArgumentOverride {
                    name: "x".into(),
                    kind: None,
                    description: None,
                    required: Some(false),
                },
            ],
            hidden: false,
            priority: None,
        };
        let changed = apply(&mut tool, &tool_override).unwrap();
        assert_eq!(changed, ["arguments.p", "arguments.x", "description"]);
        assert_eq!(tool["description"], "Read a file by path");
        assert_eq!(
            tool["inputSchema"]["properties"]["p"],
            json!({"type": "string", "maxLength": 9, "description": "absolute path"})
        );
        assert_eq!(tool["inputSchema"]["required"], json!(["p"]));
        assert_eq!(
            tool["_meta"]["tool-cli/overridden"],
            json!(["arguments.p", "arguments.x", "description"])
        );
    }

    #[test]
    fn a_type_clash_is_refused_with_the_path_and_both_types() {
        let original = json!({"name": "read",
            "inputSchema": {"type": "object", "properties": {"p": {"type": "string"}}}});
        let mut tool = original.clone();
        let tool_override = ToolOverride {
            arguments: vec![ArgumentOverride {
                name: "p".into(),
                kind: Some("integer".into()),
                description: None,
                required: None,
            }],
            ..ToolOverride::default()
        };
        let error = apply(&mut tool, &tool_override).unwrap_err();
        assert!(error.contains("tools.read.arguments.p.type"), "{error}");
        assert!(
            error.contains("\"integer\"") && error.contains("\"string\""),
            "{error}"
        );
        assert_eq!(tool, original, "nothing is applied");
        // Narrowing a number to an integer is not a clash.
        let mut tool = json!({"name": "n",
            "inputSchema": {"type": "object", "properties": {"k": {"type": ["number", "null"]}}}});
        assert!(apply(&mut tool, &tool_override_for("k", "integer")).is_ok());
    }

    fn tool_override_for(name: &str, kind: &str) -> ToolOverride {
        ToolOverride {
            arguments: vec![ArgumentOverride {
                name: name.into(),
                kind: Some(kind.into()),
                description: None,
                required: None,
            }],
            ..ToolOverride::default()
        }
    }
}
