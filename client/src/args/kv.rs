//! Tool arguments written as words rather than one JSON object: `key=value`, `key:=<json>`,
//! `key=@file`, `key:=@file.json`, and `--args-file PATH`.
//!
//! Typing `'{"sql": "select 1", "page_size": 3}'` is error-prone in a shell; `sql='select 1'
//! page_size=3` is what users of httpie and mcporter expect. The grammar is in three pure steps,
//! so each rule is unit-tested without a daemon or a process:
//!
//! 1. [`parse_words`] (at parse time): each word becomes a [`Pair`], or a usage error that says
//!    which word and what forms exist. A repeated key is refused here.
//! 2. [`load_files`] (at run time, with the files read by the caller): `@file` values become
//!    text or JSON.
//! 3. [`build`]: the arguments object. A plain `key=value` is a string unless the tool's input
//!    schema says the parameter is a number, boolean or null (or an array or object, given as
//!    JSON) and the value reads as one; [`needs_schema`] says whether any value is ambiguous
//!    enough to ask the daemon for the schema at all. With a schema, a key it does not know is
//!    refused (or warned about, when the schema allows other keys) with the closest known name.

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::error::Error;

/// How the arguments of a call were given, besides one JSON object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ArgumentWords {
    /// `key=value`, `key:=json`, `key=@file`, `key:=@file` words, in order.
    Pairs(Vec<Pair>),
    /// `--args-file PATH`: a JSON object in a file.
    File(PathBuf),
    /// One word that is neither a pair nor a JSON object (`tool-cli demo sql_query 'SELECT 1'`):
    /// refused when the call is run, with the tool's required parameters as the way to write it.
    Bare(String),
}

/// One `key...` word, parsed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pair {
    pub(crate) key: String,
    pub(crate) value: PairValue,
}

/// The right-hand side of a [`Pair`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PairValue {
    /// `key=value`: a string, unless the schema types the parameter otherwise.
    Text(String),
    /// `key:=json`: this JSON value, whatever the schema says.
    Json(Value),
    /// `key=@file`: the file's contents as a string.
    TextFile(PathBuf),
    /// `key:=@file`: the file's contents as JSON.
    JsonFile(PathBuf),
}

/// A [`Pair`] whose files have been read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Loaded {
    /// Typed by the schema (a plain `key=value`).
    Untyped(String),
    /// Final: JSON given as such, or a file's text.
    Typed(Value),
}

/// The arguments of a call as the command line gives them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallArguments {
    /// One JSON object, on the line or from stdin: final.
    Json(Map<String, Value>),
    /// Pairs or `--args-file`: resolved when the call is run.
    Words(ArgumentWords),
}

/// The arguments after `SERVER TOOL`: exactly one of one JSON object, `-` (stdin), pairs, or
/// `--args-file` (which `args_file` is). `read_stdin` is called only for `-`.
pub(crate) fn call_arguments(
    words: &[String],
    args_file: Option<PathBuf>,
    read_stdin: impl FnOnce() -> std::io::Result<String>,
) -> Result<CallArguments, Error> {
    if let Some(path) = args_file {
        if let Some(word) = words.first() {
            return Err(Error::Usage(format!(
                "--args-file cannot be combined with arguments on the line (got {:?}); give \
                 the arguments either in the file or as words, not both",
                crate::render::truncate(word, 80)
            )));
        }
        return Ok(CallArguments::Words(ArgumentWords::File(path)));
    }
    if words.iter().any(|word| is_pair(word)) {
        return Ok(CallArguments::Words(ArgumentWords::Pairs(parse_words(
            words,
        )?)));
    }
    match words {
        [] => Err(Error::Usage(
            "no tool arguments given; pass a JSON object, key=value words or --args-file"
                .to_owned(),
        )),
        [word] if word.as_str() == "-" => {
            let stdin = read_stdin().map_err(|error| {
                Error::Usage(format!(
                    "cannot read the JSON arguments from stdin: {error}"
                ))
            })?;
            Ok(CallArguments::Json(super::parse_arguments(
                &stdin,
                "read from stdin",
            )?))
        }
        // A value meant for the tool's one parameter, given without its name: refused once the
        // schema can say which name. JSON that is not an object, and a word that starts like
        // JSON, keep the JSON errors.
        [word] if is_bare(word) => Ok(CallArguments::Words(ArgumentWords::Bare(word.clone()))),
        [word] => Ok(CallArguments::Json(super::parse_arguments(
            word,
            "on the command line",
        )?)),
        _ => Err(Error::Usage(format!(
            "expected one ARGS_JSON word (or key=value words) after SERVER TOOL, got {}: {}; \
             quote the whole object in single quotes, e.g. '{{\"query\": \"select 1\"}}', or \
             write query='select 1'",
            words.len(),
            crate::render::truncate(&words.join(" "), 80)
        ))),
    }
}

/// Whether `word` is plain text rather than (broken) JSON: `SELECT 1`, `hello`, not `{a: 1}`.
fn is_bare(word: &str) -> bool {
    let trimmed = word.trim_start();
    !trimmed.is_empty()
        && !trimmed.starts_with(['{', '[', '"'])
        && serde_json::from_str::<Value>(word).is_err()
}

/// What the forms are called in messages.
const FORMS: &str = "key=value (a string, or a number/boolean/null when the tool's schema \
                     says so), key:=JSON, key=@FILE (the file as a string), key:=@FILE (the \
                     file as JSON), or one JSON object";

/// Whether `word` is meant as a `key=...` or `key:=...` pair rather than a JSON object or `-`.
pub(crate) fn is_pair(word: &str) -> bool {
    let trimmed = word.trim_start();
    !trimmed.starts_with('{') && !trimmed.starts_with('[') && word != "-" && word.contains('=')
}

/// Parses the words after `SERVER TOOL`, each of which must be a pair.
pub(crate) fn parse_words(words: &[String]) -> Result<Vec<Pair>, Error> {
    let mut pairs: Vec<Pair> = Vec::with_capacity(words.len());
    for word in words {
        let pair = parse_word(word)?;
        if pairs.iter().any(|earlier| earlier.key == pair.key) {
            return Err(Error::Usage(format!(
                "the argument {:?} is given twice; give each key once (for an array, use \
                 {}:='[...]')",
                pair.key, pair.key
            )));
        }
        pairs.push(pair);
    }
    Ok(pairs)
}

fn parse_word(word: &str) -> Result<Pair, Error> {
    let Some(equals) = word.find('=') else {
        return Err(mixed_forms(word));
    };
    let trimmed = word.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') || word == "-" {
        return Err(mixed_forms(word));
    }
    let (key, json) = match word[..equals].strip_suffix(':') {
        Some(key) => (key, true),
        None => (&word[..equals], false),
    };
    let value = &word[equals + 1..];
    if key.is_empty() {
        return Err(Error::Usage(format!(
            "the argument {:?} has no key before `{}`; write {}",
            crate::render::truncate(word, 80),
            if json { ":=" } else { "=" },
            FORMS
        )));
    }
    let key = key.to_owned();
    let value = match (json, value.strip_prefix('@')) {
        (false, Some(path)) => PairValue::TextFile(file_path(&key, path)?),
        (true, Some(path)) => PairValue::JsonFile(file_path(&key, path)?),
        // `key=\@text` is the literal text `@text`.
        (false, None) => PairValue::Text(match value.strip_prefix("\\@") {
            Some(rest) => format!("@{rest}"),
            None => value.to_owned(),
        }),
        (true, None) => PairValue::Json(serde_json::from_str(value).map_err(|error| {
            Error::Usage(format!(
                "the value of {key}:= is not valid JSON ({}): {}; quote it for the shell, e.g. \
                 {key}:='[1, 2]' or {key}:='\"text\"', or use {key}=value for a plain string",
                describe_json_error(&error),
                crate::render::truncate(value, 80)
            ))
        })?),
    };
    Ok(Pair { key, value })
}

fn file_path(key: &str, path: &str) -> Result<PathBuf, Error> {
    if path.is_empty() {
        return Err(Error::Usage(format!(
            "{key}=@ names no file; write {key}=@PATH (or {key}='\\@' for the literal text `@`)"
        )));
    }
    Ok(PathBuf::from(path))
}

fn mixed_forms(word: &str) -> Error {
    Error::Usage(format!(
        "cannot mix argument forms: {:?} is not a key=value pair, and a call takes either one \
         JSON object (or `-` for stdin, or --args-file) alone, or only pairs; write {FORMS}",
        crate::render::truncate(word, 80)
    ))
}

/// serde_json's message without its trailing position.
fn describe_json_error(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(index) => text[..index].to_owned(),
        None => text,
    }
}

/// Reads the files the pairs name with `read` (the file system in the binary).
pub(crate) fn load_files(
    pairs: Vec<Pair>,
    mut read: impl FnMut(&std::path::Path) -> std::io::Result<Vec<u8>>,
) -> Result<Vec<(String, Loaded)>, Error> {
    let mut loaded = Vec::with_capacity(pairs.len());
    for Pair { key, value } in pairs {
        let value = match value {
            PairValue::Text(text) => Loaded::Untyped(text),
            PairValue::Json(value) => Loaded::Typed(value),
            PairValue::TextFile(path) => {
                let bytes = read_file(&mut read, &key, &path)?;
                let text = String::from_utf8(bytes).map_err(|_| {
                    Error::Usage(format!(
                        "{key}=@{} is not UTF-8 text; a binary file cannot be a JSON string \
                         (encode it first, e.g. {key}=@<(base64 FILE))",
                        path.display()
                    ))
                })?;
                Loaded::Typed(Value::String(text))
            }
            PairValue::JsonFile(path) => {
                let bytes = read_file(&mut read, &key, &path)?;
                Loaded::Typed(serde_json::from_slice(&bytes).map_err(|error| {
                    Error::Usage(format!(
                        "{key}:=@{} is not valid JSON: {} at line {}, column {}; use {key}=@{} \
                         to pass the file as a string",
                        path.display(),
                        describe_json_error(&error),
                        error.line(),
                        error.column(),
                        path.display()
                    ))
                })?)
            }
        };
        loaded.push((key, value));
    }
    Ok(loaded)
}

fn read_file(
    read: &mut impl FnMut(&std::path::Path) -> std::io::Result<Vec<u8>>,
    key: &str,
    path: &std::path::Path,
) -> Result<Vec<u8>, Error> {
    read(path).map_err(|error| {
        Error::Usage(format!(
            "cannot read the file for {key}=@{}: {error}; give the path of a readable file",
            path.display()
        ))
    })
}

/// Parses the contents of `--args-file PATH`, which must be one JSON object.
pub(crate) fn args_file_object(
    path: &std::path::Path,
    bytes: &[u8],
) -> Result<Map<String, Value>, Error> {
    let value: Value = serde_json::from_slice(bytes).map_err(|error| {
        Error::Usage(format!(
            "--args-file {} is not valid JSON: {} at line {}, column {}; it must hold one JSON \
             object such as {{\"key\": \"value\"}}",
            path.display(),
            describe_json_error(&error),
            error.line(),
            error.column()
        ))
    })?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(Error::Usage(format!(
            "--args-file {} must hold a JSON object such as {{\"key\": \"value\"}}, got {}",
            path.display(),
            tool_cli_protocol::json::kind(&other)
        ))),
    }
}

/// Whether some plain `key=value` could be something other than a string (a number, `true`,
/// `false`, `null`, or JSON array or object text), so that only the schema can decide.
pub(crate) fn needs_schema(loaded: &[(String, Loaded)]) -> bool {
    loaded.iter().any(|(_, value)| match value {
        Loaded::Untyped(text) => !matches!(
            serde_json::from_str::<Value>(text),
            Err(_) | Ok(Value::String(_))
        ),
        Loaded::Typed(_) => false,
    })
}

/// The arguments object, plus warnings (unknown keys the schema still allows). `schema` is the
/// tool's `inputSchema`, when it was fetched; `tool` names the call in messages.
pub(crate) fn build(
    loaded: Vec<(String, Loaded)>,
    schema: Option<&Value>,
    tool: &str,
) -> Result<(Map<String, Value>, Vec<String>), Error> {
    let mut arguments = Map::new();
    let mut warnings = Vec::new();
    let properties = schema
        .and_then(|schema| schema.get("properties"))
        .and_then(Value::as_object);
    for (key, value) in loaded {
        let property = properties.and_then(|properties| properties.get(&key));
        if let (Some(schema), Some(properties), None) = (schema, properties, property) {
            let known: Vec<String> = properties.keys().cloned().collect();
            let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
            let message = unknown_key_message(&key, &known, tool);
            if closed {
                return Err(Error::UnknownParameter {
                    suggestion: crate::error::did_you_mean(&key, &known).map(str::to_owned),
                    key,
                    message,
                });
            }
            warnings.push(format!(
                "{message}; sent anyway, as the schema allows other keys"
            ));
        }
        let value = match value {
            Loaded::Typed(value) => value,
            Loaded::Untyped(text) => typed(text, property),
        };
        arguments.insert(key, value);
    }
    Ok((arguments, warnings))
}

/// `tool has no parameter "x" (its parameters: a, b); did you mean "y"?`
pub(crate) fn unknown_key_message(key: &str, known: &[String], tool: &str) -> String {
    let mut message = format!("{tool} has no parameter {key:?}");
    if known.is_empty() {
        message.push_str(" (it takes no parameters)");
    } else {
        message.push_str(&format!(" (its parameters: {})", known.join(", ")));
    }
    if let Some(guess) = crate::error::did_you_mean(key, known) {
        message.push_str(&format!("; did you mean {guess:?}?"));
    }
    message
}

/// A plain value typed by its parameter's schema: the JSON it reads as when the schema accepts
/// that JSON type and not a string; the text itself otherwise.
fn typed(text: String, property: Option<&Value>) -> Value {
    let types = property.map(schema_types).unwrap_or_default();
    if types.is_empty() || types.contains(&"string") {
        return Value::String(text);
    }
    let Ok(parsed) = serde_json::from_str::<Value>(&text) else {
        return Value::String(text);
    };
    let accepted = match &parsed {
        Value::Null => types.contains(&"null"),
        Value::Bool(_) => types.contains(&"boolean"),
        Value::Number(number) => {
            types.contains(&"number") || (types.contains(&"integer") && !number.is_f64())
        }
        Value::Array(_) => types.contains(&"array"),
        Value::Object(_) => types.contains(&"object"),
        Value::String(_) => false,
    };
    if accepted {
        parsed
    } else {
        Value::String(text)
    }
}

/// The JSON types a (sub)schema names: its `type` (one or a list), and those of the branches of
/// an `anyOf` / `oneOf` (one level deep: enough for `"type": ["integer", "null"]` and optional
/// parameters written as a union with null).
fn schema_types(schema: &Value) -> Vec<&str> {
    let mut types = Vec::new();
    match schema.get("type") {
        Some(Value::String(name)) => types.push(name.as_str()),
        Some(Value::Array(names)) => types.extend(names.iter().filter_map(Value::as_str)),
        _ => {}
    }
    for union in ["anyOf", "oneOf"] {
        for branch in schema
            .get(union)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match branch.get("type") {
                Some(Value::String(name)) => types.push(name.as_str()),
                Some(Value::Array(names)) => {
                    types.extend(names.iter().filter_map(Value::as_str));
                }
                _ => {}
            }
        }
    }
    // `"const": true` or an enum of numbers types a parameter as well as `type` does.
    if types.is_empty()
        && let Some(values) = schema.get("enum").and_then(Value::as_array)
    {
        for value in values {
            types.push(match value {
                Value::String(_) => "string",
                Value::Number(_) => "number",
                Value::Bool(_) => "boolean",
                Value::Null => "null",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            });
        }
    }
    types
}

#[cfg(test)]
#[path = "kv_tests.rs"]
mod tests;

/// The refusal of a bare word given as a call's arguments: how to write it as `key=value`, with
/// the tool's required parameters when the schema is known (`sql='SELECT 1'` for a tool whose one
/// required parameter is `sql`).
pub(crate) fn bare_word_message(word: &str, schema: Option<&Value>, tool: &str) -> String {
    let shown = crate::render::truncate(word, 80);
    let quoted = shell_quote(&shown);
    let mut message = format!(
        "the tool arguments on the command line are not key=value words or a JSON object: \
         {shown:?}"
    );
    let required: Vec<&str> = schema
        .and_then(|schema| schema.get("required"))
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match required.as_slice() {
        [] => message.push_str(&format!(
            "; name the parameter it is for, e.g. KEY={quoted} (`tool-cli {}` lists {tool}'s \
             parameters)",
            tool.replacen('/', " ", 1)
        )),
        [name] => message.push_str(&format!(
            "; {tool} takes it as {name}: write {name}={quoted}"
        )),
        names => message.push_str(&format!(
            "; {tool} requires {}: write each as KEY=VALUE, e.g. {}={quoted}",
            names.join(", "),
            names[0]
        )),
    }
    message
}

/// `text` in single quotes for a POSIX shell (`'it'\''s'`).
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}
