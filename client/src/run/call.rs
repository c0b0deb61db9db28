//! Calling a tool: turning `key=value` words or `--args-file` into the arguments object, the
//! call itself, a "did you mean" for a parameter name the daemon refused, and `--output raw`.
//!
//! The schema is fetched (`describeTool`) only when it decides something: a plain `key=value`
//! whose value could be a number, boolean or null, or a refusal naming unexpected properties,
//! which the schema's property names turn into a suggestion. Nothing is cached between runs.

use std::io::IsTerminal as _;

use serde_json::{Map, Value};

use super::{Output, call_options};
use crate::args::call::CallOptions;
use crate::args::kv::{self, ArgumentWords};
use crate::base64;
use crate::client::{Client, ToolCall};
use crate::error::Error;
use crate::render;

/// The arguments object for `words`, reading the files they name.
pub(super) async fn resolve_words(
    client: &mut Client,
    server: &str,
    tool: &str,
    words: ArgumentWords,
) -> Result<Map<String, Value>, Error> {
    let pairs = match words {
        ArgumentWords::File(path) => {
            let bytes = crate::bounded_read::read_file(&path).map_err(|error| {
                Error::Usage(format!(
                    "cannot read --args-file {}: {error}; give the path of a readable JSON file",
                    path.display()
                ))
            })?;
            return kv::args_file_object(&path, &bytes);
        }
        ArgumentWords::Pairs(pairs) => pairs,
        ArgumentWords::Bare(word) => {
            // An unknown server or tool is the first thing to fix, so its error wins.
            let schema = input_schema(client, server, tool).await?;
            return Err(Error::Usage(kv::bare_word_message(
                &word,
                Some(&schema),
                &format!("{server}/{tool}"),
            )));
        }
    };
    let loaded = kv::load_files(pairs, crate::bounded_read::read_file)?;
    let schema = if kv::needs_schema(&loaded) {
        Some(input_schema(client, server, tool).await?)
    } else {
        None
    };
    let (arguments, warnings) = kv::build(loaded, schema.as_ref(), &format!("{server}/{tool}"))?;
    for warning in warnings {
        super::warn(&warning);
    }
    Ok(arguments)
}

/// Calls the tool with the user's options (`--session`, `--hint`, `--idempotency-key`,
/// `--dry-run`) and prints its result as the invocation asks.
pub(super) async fn call(
    client: &mut Client,
    output: &mut Output<'_>,
    (server, tool): (&str, &str),
    call: ToolCall,
    (options, raw): (&CallOptions, bool),
) -> Result<(), Error> {
    let call = call_options::with_options(call, options);
    if options.dry_run {
        return call_options::dry_run(client, output, &call).await;
    }
    let display = super::progress::display(
        options.progress,
        options.dry_run,
        std::io::stderr().is_terminal(),
    );
    let asks = super::elicitation::asks(
        options.elicitation,
        std::io::stdin().is_terminal(),
        std::io::stderr().is_terminal(),
    );
    // A call whose server's questions are to be asked follows its events, shown or not.
    let display = match (display, asks) {
        (None, true) => Some(super::progress::Display::Hidden),
        (display, _) => display,
    };
    let answer = match display {
        Some(display) => {
            super::progress::call_tool(client, call, (display, asks), (server, tool)).await
        }
        None => client.call_tool(&call).await,
    };
    let result = match answer {
        Ok(result) => result,
        Err(error) => return Err(suggest_parameter(client, server, tool, error).await),
    };
    if server == "*" {
        call_options::note_routing(&result);
    }
    if raw && !output.json {
        return emit_raw(output, server, tool, &result);
    }
    super::emit_call_result(output, server, tool, &result)
}

async fn input_schema(client: &mut Client, server: &str, tool: &str) -> Result<Value, Error> {
    let described = client.describe_tool(server, tool).await?;
    Ok(described.get("inputSchema").cloned().unwrap_or(Value::Null))
}

/// When the daemon refused the arguments for keys the schema does not have, an error naming
/// the first with the closest parameter name (and the daemon's other complaints); any other
/// error unchanged.
async fn suggest_parameter(client: &mut Client, server: &str, tool: &str, error: Error) -> Error {
    let Some((unknown, others)) = unexpected_keys(&error) else {
        return error;
    };
    let Ok(schema) = input_schema(client, server, tool).await else {
        return error;
    };
    let known: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default();
    let key = unknown[0].clone();
    let mut message = kv::unknown_key_message(&key, &known, &format!("{server}/{tool}"));
    if unknown.len() > 1 {
        message.push_str(&format!("; also unknown: {}", unknown[1..].join(", ")));
    }
    for other in others {
        message.push_str(&format!("; also: {other}"));
    }
    Error::UnknownParameter {
        suggestion: crate::error::did_you_mean(&key, &known).map(str::to_owned),
        key,
        message,
    }
}

/// The unexpected keys of an `invalidArguments` refusal, and its other complaints (as
/// `path: message`); `None` when it names no unexpected key.
fn unexpected_keys(error: &Error) -> Option<(Vec<String>, Vec<String>)> {
    let Error::Rpc { error, .. } = error else {
        return None;
    };
    let data = error.data.as_ref()?;
    if data.get("kind").and_then(Value::as_str) != Some("invalidArguments") {
        return None;
    }
    let mut keys = Vec::new();
    let mut others = Vec::new();
    for validation in data.get("validationErrors")?.as_array()? {
        match validation
            .pointer("/params/additionalProperty")
            .and_then(Value::as_str)
        {
            Some(key) => keys.push(key.to_owned()),
            None => {
                let text = |name: &str| validation.get(name).and_then(Value::as_str);
                let path = text("instancePath").filter(|path| !path.is_empty());
                others.push(format!(
                    "{}: {}",
                    path.unwrap_or("(the arguments object)"),
                    text("message").unwrap_or("invalid")
                ));
            }
        }
    }
    (!keys.is_empty()).then_some((keys, others))
}

/// `--output raw`: the content exactly, for a pipe. An error result is an error as always.
fn emit_raw(
    output: &mut Output<'_>,
    server: &str,
    tool: &str,
    result: &Value,
) -> Result<(), Error> {
    if result.get("isError") == Some(&Value::Bool(true)) {
        return super::emit_call_result(output, server, tool, result);
    }
    let (bytes, left_out) = raw_bytes(result)
        .map_err(|reason| Error::Protocol(format!("the result of {server}/{tool} {reason}")))?;
    if left_out > 0 {
        super::output::note(&format!(
            "--output raw wrote the binary content of {server}/{tool} and left out its {left_out} \
             text {}; --json shows everything",
            if left_out == 1 { "item" } else { "items" }
        ));
    }
    if output.terminal && output.out.is_none() && std::str::from_utf8(&bytes).is_err() {
        return Err(Error::Usage(format!(
            "{server}/{tool} returned binary content, which --output raw would write to the \
             terminal; redirect stdout (`> file`, `| program`) or use --out FILE"
        )));
    }
    if bytes.is_empty() {
        super::output::note(&format!("{server}/{tool} returned no content"));
    }
    output.emit_raw(&bytes)
}

/// The bytes of a `CallToolResult`'s content, and how many text items were left out of them.
/// With binary content (images, audio, blobs) those bytes, decoded, so that `> file.png` holds
/// the image; the text around them (a caption, usually) is left out. Otherwise the text parts,
/// embedded text and resource links' URIs concatenated, in order; with no content at all, the
/// `structuredContent` as JSON.
pub(super) fn raw_bytes(result: &Value) -> Result<(Vec<u8>, usize), String> {
    let items = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if items.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        return Ok((structured.to_string().into_bytes(), 0));
    }
    let mut text_bytes = Vec::new();
    let mut text_items = 0;
    let mut binary_bytes = Vec::new();
    let mut binary_items = 0;
    for (index, item) in items.iter().enumerate() {
        let field = |holder: &Value, name: &str| {
            holder.get(name).and_then(Value::as_str).map(str::to_owned)
        };
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        let decode = |data: String| {
            base64::decode(&data)
                .map_err(|error| format!("has {kind} content {index} that is not base64: {error}"))
        };
        let resource = item.get("resource").unwrap_or(&Value::Null);
        let text = match kind {
            "text" => field(item, "text"),
            "resource_link" => field(item, "uri"),
            "resource" => field(resource, "text"),
            _ => None,
        };
        let binary = match kind {
            "image" | "audio" => field(item, "data"),
            "resource" => field(resource, "blob"),
            _ => None,
        };
        match (kind, text, binary) {
            (_, Some(text), _) => {
                text_bytes.extend(text.into_bytes());
                text_items += 1;
            }
            (_, None, Some(data)) => {
                binary_bytes.extend(decode(data)?);
                binary_items += 1;
            }
            ("text" | "resource_link" | "resource" | "image" | "audio", None, None) => {}
            (other, _, _) => {
                return Err(format!(
                    "has content {index} of type {:?}, which has no raw form; use --json",
                    render::truncate(other, 40)
                ));
            }
        }
    }
    if binary_items > 0 {
        Ok((binary_bytes, text_items))
    } else {
        Ok((text_bytes, 0))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_cli_protocol::ErrorObject;

    use super::*;

    #[test]
    fn raw_bytes_concatenate_text_or_decode_binary() {
        let text = json!({"content": [
            {"type": "text", "text": "a\n"},
            {"type": "resource", "resource": {"uri": "x:y", "text": "t"}},
            {"type": "resource_link", "uri": "file:///f", "name": "f"}
        ]});
        assert_eq!(raw_bytes(&text).unwrap(), (b"a\ntfile:///f".to_vec(), 0));
        let binary = json!({"content": [
            {"type": "text", "text": "a tiny image:"},
            {"type": "image", "mimeType": "image/png", "data": "AAEC/w=="},
            {"type": "resource", "resource": {"uri": "x:z", "blob": "AQ=="}},
            {"type": "text", "text": "the image above"}
        ]});
        assert_eq!(raw_bytes(&binary).unwrap(), (vec![0, 1, 2, 255, 1], 2));
    }

    #[test]
    fn raw_bytes_fall_back_to_structured_content_and_refuse_unknown_kinds() {
        assert_eq!(
            raw_bytes(&json!({"content": [], "structuredContent": {"a": 1}})).unwrap(),
            (b"{\"a\":1}".to_vec(), 0)
        );
        let reason = raw_bytes(&json!({"content": [{"type": "hologram"}]})).unwrap_err();
        assert_eq!(
            reason,
            "has content 0 of type \"hologram\", which has no raw form; use --json"
        );
        let reason = raw_bytes(&json!({"content": [{"type": "image", "data": "!!"}]})).unwrap_err();
        assert!(
            reason.starts_with("has image content 0 that is not base64"),
            "{reason}"
        );
    }

    fn invalid_arguments(validation_errors: Value) -> Error {
        Error::Rpc {
            method: "callTool".into(),
            error: Box::new(ErrorObject {
                code: -32602,
                message: "invalid arguments".into(),
                data: Some(
                    json!({"kind": "invalidArguments", "server": "demo", "tool": "t",
                                  "errors": [], "validationErrors": validation_errors}),
                ),
            }),
        }
    }

    #[test]
    fn refusals_naming_unexpected_keys_get_a_suggestion() {
        let extra = |name: &str| {
            json!({"instancePath": "", "schemaPath": "#/additionalProperties",
                   "keyword": "additionalProperties", "params": {"additionalProperty": name},
                   "message": "must NOT have additional properties"})
        };
        assert_eq!(
            unexpected_keys(&invalid_arguments(json!([extra("sq"), extra("lim")]))),
            Some((vec!["sq".to_owned(), "lim".to_owned()], vec![]))
        );
        let missing = json!({"instancePath": "", "schemaPath": "#/required", "keyword": "required",
                             "params": {"missingProperty": "sql"},
                             "message": "must have required property 'sql'"});
        assert_eq!(
            unexpected_keys(&invalid_arguments(json!([extra("sq"), missing.clone()]))),
            Some((
                vec!["sq".to_owned()],
                vec!["(the arguments object): must have required property 'sql'".to_owned()]
            ))
        );
        assert_eq!(unexpected_keys(&invalid_arguments(json!([missing]))), None);
        assert_eq!(unexpected_keys(&Error::Other("x".into())), None);
    }
}
