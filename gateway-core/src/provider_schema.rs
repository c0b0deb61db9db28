//! What OpenAI and Anthropic accept as a tool: the name rules, and the JSON Schema subset of
//! their strict modes, as checks that list every problem with its place.
//!
//! The rules are the providers' documented ones (OpenAI "Structured Outputs: supported
//! schemas", Anthropic "Structured outputs: JSON Schema limitations" and "Define tools"):
//!
//! - **Names**, both: `^[a-zA-Z0-9_-]{1,64}$`.
//! - **Root**, both: an object schema (`"type": "object"`); OpenAI's root may not be `anyOf`.
//! - **Objects**, both strict modes: `additionalProperties: false`, and every property listed
//!   in `required` (OpenAI requires it; for Anthropic it keeps one schema valid for both, and
//!   optional values are written as a union with `null` or an empty string).
//! - **Keywords**, OpenAI strict: `type`, `properties`, `required`, `additionalProperties`,
//!   `description`, `title`, `enum`, `const`, `anyOf`, `$ref`, `$defs`, `definitions`,
//!   `items`; strings `pattern`, `format`; numbers `minimum`, `maximum`, `exclusiveMinimum`,
//!   `exclusiveMaximum`, `multipleOf`; arrays `minItems`, `maxItems`. Not `allOf`, `not`,
//!   `if`/`then`/`else`, `oneOf`, `dependentRequired`, `dependentSchemas`,
//!   `patternProperties`, `unevaluatedProperties`, `propertyNames`, `minProperties`,
//!   `maxProperties`, `contains`, `prefixItems`, `uniqueItems`, `minLength`, `maxLength`,
//!   `default`, `examples`. Limits: at most 5,000 properties, 10 levels of nesting, 1,000 enum
//!   values, 120,000 characters of property names, definition names, enum and const values.
//! - **Keywords**, Anthropic strict: `type`, `properties`, `required`,
//!   `additionalProperties`, `description`, `title`, `enum` (of primitives), `const`, `anyOf`,
//!   `allOf`, `$ref` (local), `$defs`, `definitions`, `items`, `format` (date-time, time,
//!   date, duration, email, hostname, uri, ipv4, ipv6, uuid), `minItems` (0 or 1), `default`.
//!   Not numeric bounds, string lengths or patterns, other array bounds, external or
//!   recursive `$ref`.
//!
//! Anything not listed as supported is reported: the checks allow-list, so a keyword a
//! provider adds later is refused until it is added here, never passed on a guess.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::pin::detect::escape_pointer_token;

/// One way a schema breaks a provider's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaProblem {
    /// Where, as a JSON Pointer into the schema (`""` for the root).
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for SchemaProblem {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = if self.pointer.is_empty() {
            "(root)"
        } else {
            &self.pointer
        };
        write!(formatter, "{place}: {}", self.message)
    }
}

/// Which provider's strict rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// OpenAI function calling with `strict: true`.
    OpenAi,
    /// Anthropic tool use with `strict: true`.
    Anthropic,
}

/// Whether `name` is a valid tool name for both providers: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

const OPENAI_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "description",
    "title",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
    "definitions",
    "items",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

const ANTHROPIC_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "description",
    "title",
    "enum",
    "const",
    "anyOf",
    "allOf",
    "$ref",
    "$defs",
    "definitions",
    "items",
    "format",
    "minItems",
    "default",
];

const OPENAI_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

const ANTHROPIC_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

const TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// OpenAI's documented limits.
const OPENAI_MAX_PROPERTIES: usize = 5_000;
const OPENAI_MAX_DEPTH: usize = 10;
const OPENAI_MAX_ENUM_VALUES: usize = 1_000;
const OPENAI_MAX_STRING_CHARACTERS: usize = 120_000;

/// Every way `schema` breaks `provider`'s strict rules; empty when it is valid.
pub fn strict_problems(provider: Provider, schema: &Value) -> Vec<SchemaProblem> {
    let mut check = Check {
        provider,
        problems: Vec::new(),
        properties: 0,
        enum_values: 0,
        string_characters: 0,
        definitions: definition_names(schema),
    };
    match schema.as_object() {
        None => check.problem("", "the schema must be a JSON object"),
        Some(root) => {
            if root.get("type") != Some(&Value::String("object".to_owned())) {
                check.problem("", "the root must be `\"type\": \"object\"`");
            }
            if provider == Provider::OpenAi && root.contains_key("anyOf") {
                check.problem("", "the root may not be `anyOf`");
            }
            check.schema(root, "", 0);
        }
    }
    if provider == Provider::OpenAi {
        if check.properties > OPENAI_MAX_PROPERTIES {
            check.problem(
                "",
                format!(
                    "{} properties; at most {OPENAI_MAX_PROPERTIES}",
                    check.properties
                ),
            );
        }
        if check.enum_values > OPENAI_MAX_ENUM_VALUES {
            check.problem(
                "",
                format!(
                    "{} enum values; at most {OPENAI_MAX_ENUM_VALUES}",
                    check.enum_values
                ),
            );
        }
        if check.string_characters > OPENAI_MAX_STRING_CHARACTERS {
            check.problem(
                "",
                format!(
                    "{} characters of names and enum values; at most {OPENAI_MAX_STRING_CHARACTERS}",
                    check.string_characters
                ),
            );
        }
    }
    check.problems
}

/// The `$defs`/`definitions` names of the root, to check local `$ref`s against.
fn definition_names(schema: &Value) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for keyword in ["$defs", "definitions"] {
        if let Some(definitions) = schema.get(keyword).and_then(Value::as_object) {
            for name in definitions.keys() {
                names.insert(format!("#/{keyword}/{}", escape_pointer_token(name)));
            }
        }
    }
    names
}

struct Check {
    provider: Provider,
    problems: Vec<SchemaProblem>,
    properties: usize,
    enum_values: usize,
    string_characters: usize,
    definitions: BTreeSet<String>,
}

impl Check {
    fn problem(&mut self, pointer: &str, message: impl Into<String>) {
        self.problems.push(SchemaProblem {
            pointer: pointer.to_owned(),
            message: message.into(),
        });
    }

    fn schema_value(&mut self, value: &Value, pointer: &str, depth: usize) {
        match value {
            Value::Object(members) => self.schema(members, pointer, depth),
            Value::Bool(_) => self.problem(pointer, "a boolean schema is not supported"),
            _ => self.problem(pointer, "a schema must be a JSON object"),
        }
    }

    fn schema(&mut self, members: &Map<String, Value>, pointer: &str, depth: usize) {
        let (keywords, formats) = match self.provider {
            Provider::OpenAi => (OPENAI_KEYWORDS, OPENAI_FORMATS),
            Provider::Anthropic => (ANTHROPIC_KEYWORDS, ANTHROPIC_FORMATS),
        };
        if self.provider == Provider::OpenAi && depth > OPENAI_MAX_DEPTH {
            self.problem(
                pointer,
                format!("nested deeper than {OPENAI_MAX_DEPTH} levels"),
            );
            return;
        }
        for (keyword, value) in members {
            let at = format!("{pointer}/{}", escape_pointer_token(keyword));
            if !keywords.contains(&keyword.as_str()) {
                self.problem(&at, format!("`{keyword}` is not supported in strict mode"));
                continue;
            }
            match keyword.as_str() {
                "type" => self.check_type(value, &at),
                "format"
                    if !value
                        .as_str()
                        .is_some_and(|format| formats.contains(&format)) =>
                {
                    self.problem(&at, format!("format {value} is not supported"));
                }
                "enum" => match value.as_array() {
                    Some(values) => {
                        self.enum_values += values.len();
                        for item in values {
                            if let Some(text) = item.as_str() {
                                self.string_characters += text.chars().count();
                            }
                            if item.is_object() || item.is_array() {
                                self.problem(
                                    &at,
                                    "enum values must be strings, numbers, booleans or null",
                                );
                            }
                        }
                    }
                    None => self.problem(&at, "`enum` must be an array"),
                },
                "const" => {
                    if let Some(text) = value.as_str() {
                        self.string_characters += text.chars().count();
                    }
                }
                "minItems"
                    if self.provider == Provider::Anthropic
                        && !matches!(value.as_u64(), Some(0 | 1)) =>
                {
                    self.problem(&at, "`minItems` may only be 0 or 1");
                }
                "additionalProperties" if value != &Value::Bool(false) => {
                    self.problem(&at, "`additionalProperties` must be false");
                }
                "$ref" => match value.as_str() {
                    Some(reference) if reference == "#" || !reference.starts_with('#') => {
                        self.problem(&at, format!("$ref {reference:?} is recursive or external; only local definitions are supported"));
                    }
                    Some(reference) if !self.definitions.contains(reference) => {
                        self.problem(
                            &at,
                            format!("$ref {reference:?} names no definition of the root"),
                        );
                    }
                    Some(_) => {}
                    None => self.problem(&at, "`$ref` must be a string"),
                },
                "properties" => match value.as_object() {
                    Some(properties) => {
                        self.properties += properties.len();
                        for (name, property) in properties {
                            self.string_characters += name.chars().count();
                            let property_at = format!("{at}/{}", escape_pointer_token(name));
                            self.schema_value(property, &property_at, depth + 1);
                        }
                    }
                    None => self.problem(&at, "`properties` must be an object"),
                },
                "$defs" | "definitions" => match value.as_object() {
                    Some(definitions) => {
                        for (name, definition) in definitions {
                            self.string_characters += name.chars().count();
                            let definition_at = format!("{at}/{}", escape_pointer_token(name));
                            self.schema_value(definition, &definition_at, depth + 1);
                        }
                    }
                    None => self.problem(&at, format!("`{keyword}` must be an object")),
                },
                "items" => self.schema_value(value, &at, depth + 1),
                "anyOf" | "allOf" => match value.as_array() {
                    Some(alternatives) if !alternatives.is_empty() => {
                        for (index, alternative) in alternatives.iter().enumerate() {
                            self.schema_value(alternative, &format!("{at}/{index}"), depth + 1);
                        }
                    }
                    _ => self.problem(&at, format!("`{keyword}` must be a non-empty array")),
                },
                _ => {}
            }
        }
        let is_object = members.get("type").is_some_and(|kind| {
            kind == "object"
                || kind
                    .as_array()
                    .is_some_and(|kinds| kinds.iter().any(|k| k == "object"))
        }) || members.contains_key("properties");
        if is_object {
            if members.get("additionalProperties") != Some(&Value::Bool(false)) {
                self.problem(pointer, "an object must set `additionalProperties: false`");
            }
            let property_names: BTreeSet<&str> = members
                .get("properties")
                .and_then(Value::as_object)
                .map(|properties| properties.keys().map(String::as_str).collect())
                .unwrap_or_default();
            let required: BTreeSet<&str> = members
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for missing in property_names.difference(&required) {
                self.problem(
                    pointer,
                    format!("property {missing:?} must be listed in `required` (make it nullable to leave it optional)"),
                );
            }
            for extra in required.difference(&property_names) {
                self.problem(
                    pointer,
                    format!("`required` lists {extra:?}, which is not a property"),
                );
            }
        }
    }

    fn check_type(&mut self, value: &Value, at: &str) {
        let kinds: Vec<&Value> = match value {
            Value::Array(kinds) => kinds.iter().collect(),
            one => vec![one],
        };
        for kind in kinds {
            if !kind.as_str().is_some_and(|kind| TYPES.contains(&kind)) {
                self.problem(at, format!("type {kind} is not a JSON Schema type"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(provider: Provider, schema: Value) -> Vec<String> {
        strict_problems(provider, &schema)
            .into_iter()
            .map(|problem| problem.to_string())
            .collect()
    }

    #[test]
    fn a_strict_schema_passes_both() {
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to find"},
                "server": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "where": {"$ref": "#/$defs/place"}
            },
            "required": ["query", "server", "where"],
            "additionalProperties": false,
            "$defs": {"place": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}}
        });
        assert_eq!(
            messages(Provider::OpenAi, schema.clone()),
            Vec::<String>::new()
        );
        assert_eq!(messages(Provider::Anthropic, schema), Vec::<String>::new());
    }

    #[test]
    fn optional_properties_and_open_objects_are_refused() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let found = messages(Provider::OpenAi, schema);
        assert_eq!(
            found,
            [
                "(root): an object must set `additionalProperties: false`",
                "(root): property \"a\" must be listed in `required` (make it nullable to leave it optional)"
            ]
        );
    }

    #[test]
    fn unsupported_keywords_are_named_per_provider() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 1, "default": 3},
                "s": {"type": "string", "maxLength": 5, "pattern": "^a"},
                "o": {"oneOf": [{"type": "string"}]}
            },
            "required": ["n", "s", "o"],
            "additionalProperties": false
        });
        let openai = messages(Provider::OpenAi, schema.clone());
        assert!(
            openai.contains(
                &"/properties/n/default: `default` is not supported in strict mode".to_owned()
            ),
            "{openai:?}"
        );
        assert!(
            openai.contains(
                &"/properties/s/maxLength: `maxLength` is not supported in strict mode".to_owned()
            ),
            "{openai:?}"
        );
        assert!(
            openai.contains(
                &"/properties/o/oneOf: `oneOf` is not supported in strict mode".to_owned()
            ),
            "{openai:?}"
        );
        assert!(
            !openai
                .iter()
                .any(|m| m.contains("minimum") || m.contains("pattern")),
            "{openai:?}"
        );
        let anthropic = messages(Provider::Anthropic, schema);
        assert!(
            anthropic.iter().any(|m| m.contains("`minimum`")),
            "{anthropic:?}"
        );
        assert!(
            anthropic.iter().any(|m| m.contains("`pattern`")),
            "{anthropic:?}"
        );
        assert!(
            !anthropic.iter().any(|m| m.contains("`default`")),
            "{anthropic:?}"
        );
    }

    #[test]
    fn roots_refs_and_limits_are_checked() {
        assert_eq!(
            messages(Provider::OpenAi, json!("object")),
            ["(root): the schema must be a JSON object"]
        );
        let root_any_of = json!({"type": "object", "anyOf": [{"type": "object", "additionalProperties": false}], "additionalProperties": false});
        assert!(
            messages(Provider::OpenAi, root_any_of.clone())
                .contains(&"(root): the root may not be `anyOf`".to_owned())
        );
        assert!(messages(Provider::Anthropic, root_any_of).is_empty());
        let recursive = json!({"type": "object", "properties": {"next": {"$ref": "#"}}, "required": ["next"], "additionalProperties": false});
        assert!(messages(Provider::Anthropic, recursive)[0].contains("recursive or external"));
        let many: Map<String, Value> = (0..5001)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        let names: Vec<String> = many.keys().cloned().collect();
        let wide = json!({"type": "object", "properties": many, "required": names, "additionalProperties": false});
        assert!(
            messages(Provider::OpenAi, wide)
                .contains(&"(root): 5001 properties; at most 5000".to_owned())
        );
        let mut deep = json!({"type": "string"});
        for _ in 0..12 {
            deep = json!({"type": "object", "properties": {"x": deep}, "required": ["x"], "additionalProperties": false});
        }
        assert!(
            messages(Provider::OpenAi, deep)
                .iter()
                .any(|m| m.contains("nested deeper than 10"))
        );
    }

    #[test]
    fn tool_names_follow_both_providers() {
        assert!(is_valid_tool_name("github__create_issue"));
        assert!(is_valid_tool_name(&"a".repeat(64)));
        assert!(!is_valid_tool_name(&"a".repeat(65)));
        assert!(!is_valid_tool_name("a.b"));
        assert!(!is_valid_tool_name(""));
    }
}
