//! What a pinned field's value is before it is hashed: the listed value, less the differences
//! that cannot change what a model is told or what a call does.
//!
//! Normalization v1 (part of what `sha256/v1:` pins mean; changing it is a new version):
//! - an absent field, a JSON `null`, and `annotations: {}` are all "absent" (not pinned), so a
//!   server that starts sending an empty annotations object is not a change;
//! - in a JSON Schema (`inputSchema`, `outputSchema`) the set-valued keywords are sorted and
//!   their duplicates dropped: `required` (an array of strings) and `type` (when an array of
//!   strings). Only at schema positions: the walker follows the keywords whose values are
//!   schemas (`properties`, `items`, `anyOf`, `$defs`, …) and never touches data positions
//!   (`default`, `const`, `enum`, `examples`), so a property *named* `required` or an `enum`
//!   in a new order is pinned as it is (an enum's order is what a model reads first);
//! - a prompt's `arguments`, when every one is an object with a distinct string `name`, are
//!   sorted by name (arguments are passed by name; their order is presentation);
//! - every other value is kept exactly, strings included: no trimming, no Unicode
//!   normalization, no case folding.
//!
//! JSON formatting (whitespace, key order, escapes, `1.0` against `1`) never reaches this
//! stage: it is gone once the text is parsed, and [`crate::canonical`] writes one form.

use serde_json::{Map, Value};

use super::ItemKind;

/// The normalized value of `field` of an item of `kind`; `None` when it counts as absent.
pub fn field(kind: ItemKind, field: &str, value: &Value) -> Option<Value> {
    if value.is_null() {
        return None;
    }
    match (kind, field) {
        (ItemKind::Tool, "annotations") => match value {
            Value::Object(members) if members.is_empty() => None,
            other => Some(other.clone()),
        },
        (ItemKind::Tool, "inputSchema" | "outputSchema") => Some(schema(value)),
        (ItemKind::Prompt, "arguments") => Some(prompt_arguments(value)),
        _ => Some(value.clone()),
    }
}

/// A JSON Schema with its set-valued keywords sorted, at every schema position.
pub fn schema(value: &Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(schema_object(members)),
        // `true`, `false`, or something that is not a schema: kept as it is.
        other => other.clone(),
    }
}

/// Keywords whose value is one schema.
const SCHEMA_VALUED: &[&str] = &[
    "additionalItems",
    "additionalProperties",
    "contains",
    "contentSchema",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
];

/// Keywords whose value is an array of schemas (`items` in drafts before 2020-12 may be one
/// too; it is handled by shape).
const SCHEMA_ARRAY_VALUED: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];

/// Keywords whose value maps names to schemas.
const SCHEMA_MAP_VALUED: &[&str] = &[
    "$defs",
    "definitions",
    "dependentSchemas",
    "patternProperties",
    "properties",
];

fn schema_object(members: &Map<String, Value>) -> Map<String, Value> {
    let mut normalized = Map::with_capacity(members.len());
    for (keyword, value) in members {
        let value = match (keyword.as_str(), value) {
            ("required", Value::Array(names)) if names.iter().all(Value::is_string) => {
                sorted_unique_strings(names)
            }
            ("type", Value::Array(types)) if types.iter().all(Value::is_string) => {
                sorted_unique_strings(types)
            }
            (keyword, Value::Array(schemas)) if SCHEMA_ARRAY_VALUED.contains(&keyword) => {
                Value::Array(schemas.iter().map(schema).collect())
            }
            (keyword, one) if SCHEMA_VALUED.contains(&keyword) => schema(one),
            (keyword, Value::Object(named)) if SCHEMA_MAP_VALUED.contains(&keyword) => {
                Value::Object(
                    named
                        .iter()
                        .map(|(name, subschema)| (name.clone(), schema(subschema)))
                        .collect(),
                )
            }
            // `dependencies` (draft 7): each value is a schema or an array of property names
            // (a set).
            ("dependencies", Value::Object(named)) => Value::Object(
                named
                    .iter()
                    .map(|(name, dependency)| {
                        let dependency = match dependency {
                            Value::Array(names) if names.iter().all(Value::is_string) => {
                                sorted_unique_strings(names)
                            }
                            other => schema(other),
                        };
                        (name.clone(), dependency)
                    })
                    .collect(),
            ),
            // `dependentRequired`: each value is a set of property names.
            ("dependentRequired", Value::Object(named)) => Value::Object(
                named
                    .iter()
                    .map(|(name, names)| {
                        let names = match names {
                            Value::Array(list) if list.iter().all(Value::is_string) => {
                                sorted_unique_strings(list)
                            }
                            other => other.clone(),
                        };
                        (name.clone(), names)
                    })
                    .collect(),
            ),
            // Data positions and unknown keywords: exactly as listed.
            (_, other) => other.clone(),
        };
        normalized.insert(keyword.clone(), value);
    }
    normalized
}

fn sorted_unique_strings(values: &[Value]) -> Value {
    let mut strings: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
    strings.sort_unstable();
    strings.dedup();
    Value::Array(
        strings
            .into_iter()
            .map(|text| Value::String(text.to_owned()))
            .collect(),
    )
}

fn prompt_arguments(value: &Value) -> Value {
    let Value::Array(arguments) = value else {
        return value.clone();
    };
    let mut names: Vec<&str> = Vec::with_capacity(arguments.len());
    for argument in arguments {
        match argument.get("name").and_then(Value::as_str) {
            Some(name) if !names.contains(&name) => names.push(name),
            // Unnamed or duplicate: the order may carry meaning, so it is kept.
            _ => return value.clone(),
        }
    }
    let mut sorted = arguments.clone();
    sorted.sort_by(|left, right| {
        let name = |argument: &Value| argument["name"].as_str().unwrap_or_default().to_owned();
        name(left).cmp(&name(right))
    });
    Value::Array(sorted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn required_and_type_sets_are_sorted_at_every_schema_position() {
        let listed = json!({
            "type": "object",
            "required": ["b", "a", "b"],
            "properties": {
                "required": {"type": ["string", "null"], "default": ["z", "y"]},
                "nested": {
                    "type": "object",
                    "required": ["y", "x"],
                    "properties": {"x": {}, "y": {}}
                },
                "list": {"items": {"required": ["q", "p"]}},
                "choice": {"anyOf": [{"required": ["d", "c"]}, {"type": ["null", "integer"]}]}
            },
            "$defs": {"thing": {"required": ["n", "m"]}},
            "dependentRequired": {"a": ["c", "b"]}
        });
        let normalized = schema(&listed);
        assert_eq!(normalized["required"], json!(["a", "b"]));
        assert_eq!(
            normalized["properties"]["required"]["type"],
            json!(["null", "string"])
        );
        // A default is data: kept in its order.
        assert_eq!(
            normalized["properties"]["required"]["default"],
            json!(["z", "y"])
        );
        assert_eq!(
            normalized["properties"]["nested"]["required"],
            json!(["x", "y"])
        );
        assert_eq!(
            normalized["properties"]["list"]["items"]["required"],
            json!(["p", "q"])
        );
        assert_eq!(
            normalized["properties"]["choice"]["anyOf"][0]["required"],
            json!(["c", "d"])
        );
        assert_eq!(
            normalized["properties"]["choice"]["anyOf"][1]["type"],
            json!(["integer", "null"])
        );
        assert_eq!(normalized["$defs"]["thing"]["required"], json!(["m", "n"]));
        assert_eq!(normalized["dependentRequired"]["a"], json!(["b", "c"]));
    }

    #[test]
    fn enums_and_unknown_keywords_keep_their_order() {
        let listed = json!({"enum": ["b", "a"], "x-order": ["b", "a"], "examples": [2, 1]});
        assert_eq!(schema(&listed), listed);
    }

    #[test]
    fn empty_annotations_and_nulls_count_as_absent() {
        assert_eq!(field(ItemKind::Tool, "annotations", &json!({})), None);
        assert_eq!(field(ItemKind::Tool, "title", &Value::Null), None);
        assert_eq!(
            field(
                ItemKind::Tool,
                "annotations",
                &json!({"readOnlyHint": true})
            ),
            Some(json!({"readOnlyHint": true}))
        );
    }

    #[test]
    fn strings_are_kept_exactly() {
        let text = json!("  Reads a file.\u{200b} ");
        assert_eq!(field(ItemKind::Tool, "description", &text), Some(text));
    }

    #[test]
    fn prompt_arguments_are_sorted_by_name_only_when_names_are_distinct() {
        let listed = json!([{"name": "b"}, {"name": "a", "required": true}]);
        assert_eq!(
            field(ItemKind::Prompt, "arguments", &listed),
            Some(json!([{"name": "a", "required": true}, {"name": "b"}]))
        );
        let duplicated = json!([{"name": "b"}, {"name": "b", "x": 1}]);
        assert_eq!(
            field(ItemKind::Prompt, "arguments", &duplicated),
            Some(duplicated.clone())
        );
    }
}
