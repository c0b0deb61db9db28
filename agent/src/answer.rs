//! The final answer: finding the `{answer, keyFacts}` object in the model's text and checking it
//! against the request's `answerSchema`.
//!
//! Models wrap JSON in prose or code fences, so the object is looked for in the whole text, then
//! in a fenced block, then between the first `{` and the last `}`. The schema is compiled once
//! per run (2020-12 unless it names another dialect; no remote references are ever fetched); an
//! invalid schema is the caller's error, refused before the run starts. Pure functions.

use jsonschema::{Draft, Validator};
use serde_json::{Map, Value, json};

/// The schema used when the request gives none.
pub fn default_answer_schema() -> Value {
    json!({
        "type": "object",
        "required": ["answer", "keyFacts"],
        "properties": {
            "answer": {"type": "string"},
            "keyFacts": {"type": "object"}
        }
    })
}

/// A compiled answer schema.
#[derive(Debug)]
pub struct AnswerSchema {
    schema: Value,
    validator: Validator,
}

/// Why an answer schema or an answer is not acceptable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// The request's `answerSchema` is not a JSON Schema.
    #[error("answerSchema is not a valid JSON Schema: {0}")]
    InvalidSchema(String),
    /// The final text holds no JSON object.
    #[error(
        "the final answer is not a JSON object; answer with one object holding \"answer\" (a string) and \"keyFacts\" (an object)"
    )]
    NotJson,
    /// The object fails the schema.
    #[error("the final answer does not match answerSchema: {}", .0.join("; "))]
    Invalid(Vec<String>),
}

impl AnswerSchema {
    /// Compiles `schema`.
    pub fn compile(schema: Value) -> Result<Self, AnswerError> {
        let mut options = jsonschema::options();
        if schema.get("$schema").is_none() {
            options = options.with_draft(Draft::Draft202012);
        }
        let validator = options
            .build(&schema)
            .map_err(|error| AnswerError::InvalidSchema(error.to_string()))?;
        Ok(Self { schema, validator })
    }

    /// The schema as given.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The answer object in `text`, checked.
    pub fn check(&self, text: &str) -> Result<Map<String, Value>, AnswerError> {
        let object = extract_object(text).ok_or(AnswerError::NotJson)?;
        let instance = Value::Object(object);
        let errors: Vec<String> = self
            .validator
            .iter_errors(&instance)
            .take(8)
            .map(|error| {
                let path = error.instance_path().to_string();
                if path.is_empty() {
                    error.to_string()
                } else {
                    format!("{path}: {error}")
                }
            })
            .collect();
        if !errors.is_empty() {
            return Err(AnswerError::Invalid(errors));
        }
        match instance {
            Value::Object(object) => Ok(object),
            _ => unreachable!("built from an object"),
        }
    }
}

/// The first JSON object found in `text`: the whole text, a fenced block, or the span from the
/// first `{` to the last `}`.
pub fn extract_object(text: &str) -> Option<Map<String, Value>> {
    let as_object = |candidate: &str| match serde_json::from_str::<Value>(candidate.trim()) {
        Ok(Value::Object(object)) => Some(object),
        _ => None,
    };
    if let Some(object) = as_object(text) {
        return Some(object);
    }
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let body_start = after.find('\n').map(|i| i + 1).unwrap_or(0);
        let Some(end) = after[body_start..].find("```") else {
            break;
        };
        if let Some(object) = as_object(&after[body_start..body_start + end]) {
            return Some(object);
        }
        rest = &after[body_start + end + 3..];
    }
    let (start, end) = (text.find('{')?, text.rfind('}')?);
    (start < end)
        .then(|| as_object(&text[start..=end]))
        .flatten()
}

/// `answer` and `keyFacts` out of a checked object (a custom schema may lack them).
pub fn split_answer(object: &Map<String, Value>) -> (String, Map<String, Value>) {
    let answer = match object.get("answer") {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => Value::Object(object.clone()).to_string(),
    };
    let key_facts = object
        .get("keyFacts")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    (answer, key_facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_found_bare_fenced_or_embedded() {
        let bare = r#"{"answer": "a", "keyFacts": {}}"#;
        assert!(extract_object(bare).is_some());
        let fenced = "Here you go:\n```json\n{\"answer\": \"a\", \"keyFacts\": {\"n\": 1}}\n```\n";
        assert_eq!(
            extract_object(fenced).and_then(|o| o.get("keyFacts").cloned()),
            Some(json!({"n": 1}))
        );
        let embedded = "The result is {\"answer\": \"b\", \"keyFacts\": {}} as asked.";
        assert_eq!(
            extract_object(embedded).and_then(|o| o.get("answer").cloned()),
            Some(json!("b"))
        );
        assert!(extract_object("no json here").is_none());
        assert!(extract_object("[1, 2]").is_none());
    }

    #[test]
    fn the_default_schema_wants_a_string_and_an_object() {
        let schema = AnswerSchema::compile(default_answer_schema()).expect("valid");
        assert!(
            schema
                .check(r#"{"answer": "x", "keyFacts": {"a": 1}}"#)
                .is_ok()
        );
        let error = schema
            .check(r#"{"answer": 3, "keyFacts": {}}"#)
            .expect_err("number answer");
        assert!(error.to_string().contains("/answer"), "{error}");
        assert_eq!(schema.check("plain words"), Err(AnswerError::NotJson));
    }

    #[test]
    fn custom_schemas_apply_and_bad_ones_are_refused() {
        let schema = AnswerSchema::compile(json!({"type": "object", "required": ["total"],
            "properties": {"total": {"type": "number"}}}))
        .expect("valid");
        assert!(schema.check(r#"{"total": 3.5}"#).is_ok());
        assert!(schema.check(r#"{"total": "3.5"}"#).is_err());
        assert!(matches!(
            AnswerSchema::compile(json!({"type": 12})),
            Err(AnswerError::InvalidSchema(_))
        ));
    }

    #[test]
    fn answers_and_facts_split_out() {
        let object = extract_object(r#"{"answer": "yes", "keyFacts": {"k": true}}"#).expect("obj");
        let (answer, facts) = split_answer(&object);
        assert_eq!(answer, "yes");
        assert_eq!(facts.get("k"), Some(&json!(true)));
    }
}
