//! Validating tool arguments against the tool's `inputSchema`.
//!
//! JSON Schema 2020-12 is assumed when a schema names no `$schema`; 2019-09 and draft-07 are
//! honoured when named. Formats are checked (the format vocabulary), and remote `$ref`s are
//! never fetched: the daemon makes no network request on behalf of a schema.

use jsonschema::{Draft, Validator};
use serde_json::{Map, Value};
use tool_cli_protocol::ArgumentError;

/// Most failures reported for one call; past that the list says how many more there were.
const MAX_REPORTED_ERRORS: usize = 50;

/// A compiled `inputSchema`.
pub(crate) struct ArgumentValidator {
    validator: Validator,
}

impl ArgumentValidator {
    /// Compiles `schema`, or says why it is not a valid schema.
    pub(crate) fn compile(schema: &Value) -> Result<ArgumentValidator, String> {
        let mut options = jsonschema::options().should_validate_formats(true);
        if schema.get("$schema").is_none() {
            options = options.with_draft(Draft::Draft202012);
        }
        options
            .build(schema)
            .map(|validator| ArgumentValidator { validator })
            .map_err(|err| err.to_string())
    }

    /// Every way `arguments` fails the schema, in document order; empty when it passes.
    pub(crate) fn check(&self, arguments: &Map<String, Value>) -> Vec<ArgumentError> {
        // The validator wants a `Value`; the arguments are small compared with the call itself.
        let instance = Value::Object(arguments.clone());
        let mut errors: Vec<ArgumentError> = Vec::new();
        let mut extra = 0usize;
        for error in self.validator.iter_errors(&instance) {
            if errors.len() == MAX_REPORTED_ERRORS {
                extra += 1;
                continue;
            }
            errors.push(ArgumentError {
                path: error.instance_path().to_string(),
                schema_path: error.schema_path().to_string(),
                message: error.to_string(),
            });
        }
        if extra > 0 {
            errors.push(ArgumentError {
                path: String::new(),
                schema_path: String::new(),
                message: format!("… and {extra} more errors"),
            });
        }
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
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
        let errors = validator.check(&args(json!({"page_size": 0, "bogus": true})));
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
        assert!(!err.is_empty());
    }
}
