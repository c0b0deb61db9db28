//! Validating tool arguments against the tool's `inputSchema`.
//!
//! JSON Schema 2020-12 is assumed when a schema names no `$schema`; 2019-09 and draft-07 are
//! honoured when named. Formats are checked (the format vocabulary), and remote `$ref`s are
//! never fetched: the daemon makes no network request on behalf of a schema.
//!
//! Each failure is reported twice over: in our format (`errors`: path, schema path, the
//! validator's message) and in the reference bridge's (`validationErrors`: ajv's keyword, params
//! and wording), so scripts written for either keep working.

use jsonschema::error::{TypeKind, ValidationErrorKind as Kind};
use jsonschema::{Draft, Validator};
use serde_json::{Map, Value, json};
use tool_cli_protocol::{ArgumentError, ValidationError};

use crate::error::ArgumentViolation;

/// Most failures reported for one call; past that the list says how many more there were.
const MAX_REPORTED_ERRORS: usize = 50;

/// Longest message kept: the validator quotes the failing value, which may be megabytes long.
const MAX_MESSAGE_CHARS: usize = 512;

/// Why a tool's `inputSchema` is not a schema the validator can compile: the validator's own
/// words (cloned into every call that meets the tool, so it is kept as text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct InvalidSchema(String);

/// A compiled `inputSchema`.
pub(crate) struct ArgumentValidator {
    validator: Validator,
    /// The names of the schema's top-level `properties`: a missing required argument is
    /// matched against the given names the schema does not declare ("did you mean").
    declared: Vec<String>,
}

impl ArgumentValidator {
    /// Compiles `schema`, or says why it is not a valid schema.
    pub(crate) fn compile(schema: &Value) -> Result<ArgumentValidator, InvalidSchema> {
        let mut options = jsonschema::options().should_validate_formats(true);
        if schema.get("$schema").is_none() {
            options = options.with_draft(Draft::Draft202012);
        }
        let declared = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| properties.keys().cloned().collect())
            .unwrap_or_default();
        options
            .build(schema)
            .map(|validator| ArgumentValidator {
                validator,
                declared,
            })
            .map_err(|err| InvalidSchema(err.to_string()))
    }

    /// Every way `arguments` fails the schema, in document order; empty when it passes.
    pub(crate) fn check(&self, arguments: &Map<String, Value>) -> Vec<ArgumentViolation> {
        // The validator wants a `Value`; the arguments are small compared with the call itself.
        let instance = Value::Object(arguments.clone());
        // The usual case, valid arguments, takes the validator's short-circuiting check: the
        // error-collecting walk below builds paths and messages that a passing call throws away.
        if self.validator.is_valid(&instance) {
            return Vec::new();
        }
        let mut errors: Vec<ArgumentViolation> = Vec::new();
        let mut extra = 0usize;
        for error in self.validator.iter_errors(&instance) {
            if errors.len() == MAX_REPORTED_ERRORS {
                extra += 1;
                continue;
            }
            let mut reference = reference_entries(&error);
            let mut message = match quotes_a_credential(&error) {
                // The validator's words quote the value; ajv's never do. Where the value is (or
                // holds) a credential, only the latter are given, in both formats: the caller's
                // error is traced, and logged by clients.
                Some(quoted) => without_the_value(&error, &quoted, &mut reference),
                None => shortened(error.to_string()),
            };
            if let Kind::Required { property } = error.kind()
                && error.instance_path().as_str().is_empty()
                && let Some(missing) = property.as_str()
                && let Some(hint) = self.misspelt(missing, arguments)
            {
                message.push_str(&hint);
            }
            errors.push(ArgumentViolation {
                error: ArgumentError {
                    path: error.instance_path().to_string(),
                    schema_path: error.schema_path().to_string(),
                    message,
                },
                reference,
            });
        }
        if extra > 0 {
            errors.push(ArgumentViolation {
                error: ArgumentError {
                    path: String::new(),
                    schema_path: String::new(),
                    message: format!("… and {extra} more errors"),
                },
                reference: Vec::new(),
            });
        }
        errors
    }
}

impl ArgumentValidator {
    /// For a missing top-level argument, the given name the schema does not declare that is
    /// closest to it, as a hint to append: `mesage` given where `message` is required.
    fn misspelt(&self, missing: &str, arguments: &Map<String, Value>) -> Option<String> {
        let undeclared = arguments
            .keys()
            .filter(|given| !self.declared.iter().any(|declared| declared == *given))
            .map(String::as_str);
        let given = crate::suggest::closest(missing, undeclared, 1).pop()?;
        Some(format!(
            "; the arguments have \"{}\", which the schema does not declare: did you mean \"{}\"?",
            crate::redact::clean_text(given, 64),
            crate::redact::clean_text(missing, 64)
        ))
    }
}

/// The validator's message for `error` when it quotes a credential: the value is under a
/// member named like one (`password`, `api_key`, …, as verbose traces redact them), or is an
/// object or array holding such a member.
fn quotes_a_credential(error: &jsonschema::ValidationError<'_>) -> Option<String> {
    let under_a_credential = error
        .instance_path()
        .iter()
        .any(|segment| crate::redact::is_secret_name(&segment.to_string()));
    (under_a_credential || holds_a_credential(error.instance()))
        .then(|| shortened(error.to_string()))
}

/// Whether `value` has a member named like a credential, at any depth.
fn holds_a_credential(value: &Value) -> bool {
    match value {
        Value::Object(members) => members.iter().any(|(name, member)| {
            crate::redact::is_secret_name(name) || holds_a_credential(member)
        }),
        Value::Array(items) => items.iter().any(holds_a_credential),
        _ => false,
    }
}

/// What is wrong with a credential's value, in ajv's words (which never quote it); the
/// reference entries that would quote it (`quoted`, the validator's words) get the same.
fn without_the_value(
    error: &jsonschema::ValidationError<'_>,
    quoted: &str,
    reference: &mut [ValidationError],
) -> String {
    let generic = format!(
        "fails the schema's \"{}\" (the value is not shown: it is or holds a credential)",
        error.kind().keyword()
    );
    let mut said: Vec<String> = Vec::new();
    for entry in reference.iter_mut() {
        if entry.message == quoted {
            entry.message.clone_from(&generic);
        }
        // The one keyword whose params carry a piece of the instance: the failing name.
        if entry.keyword == "propertyNames" {
            entry.params = json!({});
        }
        if !said.contains(&entry.message) {
            said.push(entry.message.clone());
        }
    }
    match said.as_slice() {
        [] => generic,
        [only] if *only == generic => generic,
        _ => format!(
            "{} (the value is not shown: it is or holds a credential)",
            said.join("; ")
        ),
    }
}

fn shortened(message: String) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message,
    }
}

/// The failure as ajv (the reference bridge's validator) reports it: its keyword, its params
/// and its wording. ajv reports each missing or unexpected property on its own.
fn reference_entries(error: &jsonschema::ValidationError<'_>) -> Vec<ValidationError> {
    let entry = |keyword: &str, params: Value, message: String| ValidationError {
        instance_path: error.instance_path().to_string(),
        schema_path: format!("#{}", error.schema_path()),
        keyword: keyword.to_owned(),
        params,
        message,
    };
    let one = |keyword: &str, params: Value, message: String| vec![entry(keyword, params, message)];
    let fewer = |keyword: &str, limit: u64, what: &str| {
        one(
            keyword,
            json!({ "limit": limit }),
            format!("must NOT have fewer than {limit} {what}"),
        )
    };
    let more = |keyword: &str, limit: u64, what: &str| {
        one(
            keyword,
            json!({ "limit": limit }),
            format!("must NOT have more than {limit} {what}"),
        )
    };
    let compare = |keyword: &str, comparison: &str, limit: &Value| {
        one(
            keyword,
            json!({ "comparison": comparison, "limit": limit }),
            format!("must be {comparison} {limit}"),
        )
    };
    match error.kind() {
        Kind::Required { property } => {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned);
            one(
                "required",
                json!({ "missingProperty": name }),
                format!("must have required property '{name}'"),
            )
        }
        Kind::AdditionalProperties { unexpected } => unexpected
            .iter()
            .map(|name| {
                entry(
                    "additionalProperties",
                    json!({ "additionalProperty": name }),
                    "must NOT have additional properties".to_owned(),
                )
            })
            .collect(),
        Kind::UnevaluatedProperties { unexpected } => unexpected
            .iter()
            .map(|name| {
                entry(
                    "unevaluatedProperties",
                    json!({ "unevaluatedProperty": name }),
                    "must NOT have unevaluated properties".to_owned(),
                )
            })
            .collect(),
        Kind::Type { kind } => {
            let types = match kind {
                TypeKind::Single(single) => single.to_string(),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            };
            one("type", json!({ "type": types }), format!("must be {types}"))
        }
        Kind::Minimum { limit } => compare("minimum", ">=", limit),
        Kind::Maximum { limit } => compare("maximum", "<=", limit),
        Kind::ExclusiveMinimum { limit } => compare("exclusiveMinimum", ">", limit),
        Kind::ExclusiveMaximum { limit } => compare("exclusiveMaximum", "<", limit),
        Kind::MinLength { limit } => fewer("minLength", *limit, "characters"),
        Kind::MaxLength { limit } => more("maxLength", *limit, "characters"),
        Kind::MinItems { limit } => fewer("minItems", *limit, "items"),
        Kind::MaxItems { limit } => more("maxItems", *limit, "items"),
        Kind::MinProperties { limit } => fewer("minProperties", *limit, "properties"),
        Kind::MaxProperties { limit } => more("maxProperties", *limit, "properties"),
        Kind::AdditionalItems { limit } => more("additionalItems", *limit as u64, "items"),
        Kind::Enum { options } => one(
            "enum",
            json!({ "allowedValues": options }),
            "must be equal to one of the allowed values".to_owned(),
        ),
        Kind::Constant { expected_value } => one(
            "const",
            json!({ "allowedValue": expected_value }),
            "must be equal to constant".to_owned(),
        ),
        Kind::Pattern { pattern } => one(
            "pattern",
            json!({ "pattern": pattern }),
            format!("must match pattern \"{pattern}\""),
        ),
        Kind::Format { format } => one(
            "format",
            json!({ "format": format }),
            format!("must match format \"{format}\""),
        ),
        Kind::MultipleOf { multiple_of } => one(
            "multipleOf",
            json!({ "multipleOf": multiple_of }),
            format!("must be multiple of {multiple_of}"),
        ),
        Kind::UniqueItems => one(
            "uniqueItems",
            json!({}),
            "must NOT have duplicate items".to_owned(),
        ),
        Kind::AnyOf { .. } => one(
            "anyOf",
            json!({}),
            "must match a schema in anyOf".to_owned(),
        ),
        Kind::OneOfNotValid { .. } | Kind::OneOfMultipleValid { .. } => one(
            "oneOf",
            json!({ "passingSchemas": null }),
            "must match exactly one schema in oneOf".to_owned(),
        ),
        Kind::Not { .. } => one("not", json!({}), "must NOT be valid".to_owned()),
        Kind::FalseSchema => one(
            "false schema",
            json!({}),
            "boolean schema is false".to_owned(),
        ),
        Kind::Contains => one(
            "contains",
            json!({ "minContains": 1 }),
            "must contain at least 1 valid item(s)".to_owned(),
        ),
        Kind::PropertyNames { error: inner } => one(
            "propertyNames",
            json!({ "propertyName": inner.instance() }),
            "property name must be valid".to_owned(),
        ),
        // The rest have no ajv counterpart worth imitating: keep the keyword, give our words.
        other => one(other.keyword(), json!({}), shortened(error.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    /// The issue: a validation error quoted a credential-named value (in the caller's error and
    /// so in the trace's `error.message`) that verbose traces redact from `arguments`.
    #[test]
    fn a_failing_credential_is_never_quoted() {
        let schema = json!({
            "type": "object",
            "properties": {
                "password": {"type": "string", "minLength": 12},
                "auth": {"type": "object", "properties": {"api_key": {"pattern": "^sk-"}}},
                "mode": {"enum": ["a", "b"]}
            },
            "oneOf": [{"required": ["mode"]}, {"required": ["password"]}]
        });
        let validator = ArgumentValidator::compile(&schema).unwrap();
        let violations = validator.check(&args(json!({
            "password": "hunter2-pw",
            "auth": {"api_key": "live-key-123456"},
            "mode": "c"
        })));
        let mut texts = Vec::new();
        for violation in &violations {
            texts.push(violation.error.message.clone());
            for entry in &violation.reference {
                texts.push(entry.message.clone());
                texts.push(entry.params.to_string());
            }
        }
        let all = texts.join("\n");
        assert!(!all.contains("hunter2"), "{all}");
        assert!(!all.contains("live-key"), "{all}");
        // What is wrong is still said, and other values are still quoted.
        let password = violations
            .iter()
            .find(|violation| violation.error.path == "/password")
            .unwrap();
        assert!(
            password
                .error
                .message
                .contains("must NOT have fewer than 12 characters"),
            "{}",
            password.error.message
        );
        assert!(password.error.message.contains("not shown"), "{all}");
        assert!(all.contains("\"c\""), "{all}");
    }

    #[test]
    fn reports_each_failing_path() {
        let schema = json!({
            "type": "object",
            "properties": {
                "sql": {"type": "string"},
                "page_size": {"type": "integer", "minimum": 1}
            },
            "required": ["sql"],
            "additionalProperties": false
        });
        let validator = ArgumentValidator::compile(&schema).unwrap();
        assert!(
            validator
                .check(&args(json!({"sql": "select 1"})))
                .is_empty()
        );
        let violations = validator.check(&args(json!({"page_size": 0, "bogus": true})));
        let errors: Vec<&ArgumentError> = violations.iter().map(|v| &v.error).collect();
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert!(paths.contains(&""), "{errors:?}");
        assert!(paths.contains(&"/page_size"), "{errors:?}");
        assert!(
            errors.iter().any(|e| e.message.contains("sql")),
            "{errors:?}"
        );
        assert!(
            errors.iter().any(|e| e.schema_path.ends_with("minimum")),
            "{errors:?}"
        );
    }

    #[test]
    fn a_missing_argument_names_the_undeclared_one_that_looks_like_it() {
        let schema = json!({
            "type": "object",
            "properties": {"message": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["message"]
        });
        let validator = ArgumentValidator::compile(&schema).unwrap();
        let violations = validator.check(&args(json!({"mesage": "hi", "limit": 3})));
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(
            violations[0].error.message.ends_with(
                "; the arguments have \"mesage\", which the schema does not declare: \
                 did you mean \"message\"?"
            ),
            "{}",
            violations[0].error.message
        );
        // A declared name is never the suspect, and a name far from the missing one is no typo.
        for given in [json!({"limit": 3}), json!({"zzzzzz": 1})] {
            let violations = validator.check(&args(given));
            assert!(
                !violations[0].error.message.contains("did you mean"),
                "{}",
                violations[0].error.message
            );
        }
    }

    #[test]
    fn reference_entries_follow_ajv() {
        let schema = json!({
            "type": "object",
            "properties": {
                "sql": {"type": "string"},
                "page_size": {"type": "integer", "minimum": 1},
                "mode": {"enum": ["a", "b"]},
                "when": {"type": "string", "format": "date"}
            },
            "required": ["sql"],
            "additionalProperties": false
        });
        let validator = ArgumentValidator::compile(&schema).unwrap();
        let violations = validator.check(&args(json!({
            "page_size": 0, "mode": "c", "when": "soon", "x": 1, "y": 2
        })));
        let entries: Vec<Value> = violations
            .iter()
            .flat_map(|v| v.reference.iter())
            .map(|entry| serde_json::to_value(entry).unwrap())
            .collect();
        let find = |keyword: &str| -> Vec<&Value> {
            entries.iter().filter(|e| e["keyword"] == keyword).collect()
        };
        assert_eq!(
            *find("required")[0],
            json!({"instancePath": "", "schemaPath": "#/required", "keyword": "required",
                   "params": {"missingProperty": "sql"},
                   "message": "must have required property 'sql'"})
        );
        assert_eq!(
            *find("minimum")[0],
            json!({"instancePath": "/page_size", "schemaPath": "#/properties/page_size/minimum",
                   "keyword": "minimum", "params": {"comparison": ">=", "limit": 1},
                   "message": "must be >= 1"})
        );
        // ajv names each unexpected property on its own; ours is one entry for both.
        let additional = find("additionalProperties");
        assert_eq!(additional.len(), 2, "{entries:#?}");
        assert_eq!(additional[0]["params"], json!({"additionalProperty": "x"}));
        assert_eq!(
            additional[1]["message"],
            "must NOT have additional properties"
        );
        assert_eq!(
            find("enum")[0]["params"],
            json!({"allowedValues": ["a", "b"]})
        );
        assert_eq!(find("format")[0]["message"], r#"must match format "date""#);
        let type_error = validator.check(&args(json!({"sql": 7})));
        assert_eq!(
            serde_json::to_value(&type_error[0].reference[0]).unwrap(),
            json!({"instancePath": "/sql", "schemaPath": "#/properties/sql/type",
                   "keyword": "type", "params": {"type": "string"}, "message": "must be string"})
        );
    }

    #[test]
    fn a_huge_failing_value_is_not_echoed_whole() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        let validator = ArgumentValidator::compile(&schema).unwrap();
        let violations = validator.check(&args(json!({"n": "x".repeat(100_000)})));
        assert!(violations[0].error.message.chars().count() <= MAX_MESSAGE_CHARS + 1);
        assert!(violations[0].error.message.ends_with('…'));
    }

    #[test]
    fn honours_named_dialects_and_formats() {
        let draft7 = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"when": {"type": "string", "format": "date"}},
            "dependencies": {"a": ["b"]}
        });
        let validator = ArgumentValidator::compile(&draft7).unwrap();
        assert!(
            validator
                .check(&args(json!({"when": "2026-11-21"})))
                .is_empty()
        );
        assert_eq!(validator.check(&args(json!({"when": "tomorrow"}))).len(), 1);
        assert_eq!(validator.check(&args(json!({"a": 1}))).len(), 1);

        let draft2019 = json!({
            "$schema": "https://json-schema.org/draft/2019-09/schema",
            "type": "object",
            "dependentRequired": {"a": ["b"]}
        });
        let validator = ArgumentValidator::compile(&draft2019).unwrap();
        assert_eq!(validator.check(&args(json!({"a": 1}))).len(), 1);
    }

    #[test]
    fn invalid_schemas_are_refused_with_a_reason() {
        let err = ArgumentValidator::compile(&json!({"type": "no-such-type"}))
            .err()
            .unwrap();
        assert!(!err.to_string().is_empty());
    }
}
