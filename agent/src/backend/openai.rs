//! The OpenAI-compatible chat-completions backend (OpenAI, Ollama, vLLM, llama.cpp servers).
//!
//! Compatible servers differ in the details, so the answer is read defensively: tool-call
//! arguments may come as a JSON string (OpenAI) or an object (some local servers), in fragments
//! keyed by `index`; ids may be missing (synthesised as `call_<turn>_<index>`, stable across a
//! replay); `finish_reason` is not trusted (the content decides: tool calls present means a
//! tool turn); usage arrives in a final chunk with empty or null `choices` when
//! `stream_options.include_usage` is set, with cached prompt tokens in
//! `prompt_tokens_details.cached_tokens`. Building and folding are pure; only
//! [`OpenAiBackend::complete`] does I/O.

use std::collections::BTreeMap;

use hyper::body::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::http::{HttpClient, HttpSettings, collect_body, read_stream};
use super::sse::SseParser;
use super::{
    LlmBackend, LlmError, LlmRequest, LlmResponse, LlmToolCall, ResponseIdentity, StopReason, Turn,
};
use crate::cost::{Usage, input_token_bound};
use crate::host::BoxFuture;

const PROVIDER: &str = "openai";

/// A chat-completions endpoint, streamed.
#[derive(Debug)]
pub struct OpenAiBackend {
    model: String,
    settings: HttpSettings,
    client: HttpClient,
}

impl OpenAiBackend {
    /// A backend for `model` at `settings.base_url` (the API base including `/v1`, e.g.
    /// `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`). The key is optional: local
    /// servers need none.
    pub fn new(model: &str, settings: HttpSettings) -> Result<Self, LlmError> {
        Ok(Self {
            model: model.to_owned(),
            settings,
            client: HttpClient::new()?,
        })
    }

    fn endpoint(&self) -> String {
        format!(
            "{}/chat/completions",
            self.settings.base_url.trim_end_matches('/')
        )
    }

    /// OpenAI's own API wants `max_completion_tokens` (its reasoning models refuse
    /// `max_tokens`); compatible servers know `max_tokens`.
    fn output_limit_key(&self) -> &'static str {
        if self.settings.base_url.contains("api.openai.com") {
            "max_completion_tokens"
        } else {
            "max_tokens"
        }
    }
}

/// The request body for `request`.
pub(crate) fn request_body(model: &str, limit_key: &str, request: &LlmRequest<'_>) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    for turn in request.turns {
        match turn {
            Turn::User(text) => messages.push(json!({"role": "user", "content": text})),
            Turn::Assistant { text, tool_calls } => {
                // `null` content is only allowed beside tool calls; an empty turn sends "".
                let content = if text.is_empty() && !tool_calls.is_empty() {
                    Value::Null
                } else {
                    json!(text)
                };
                let mut message = json!({"role": "assistant", "content": content});
                if !tool_calls.is_empty() {
                    message["tool_calls"] = tool_calls
                        .iter()
                        .map(|call| {
                            json!({"id": call.id, "type": "function", "function":
                            {"name": call.name, "arguments": match &call.arguments {
                                // Unparsable arguments go back as the model wrote them.
                                Value::String(raw) => raw.clone(),
                                other => other.to_string(),
                            }}})
                        })
                        .collect();
                }
                messages.push(message);
            }
            Turn::ToolResults(results) => {
                for result in results {
                    messages.push(json!({"role": "tool", "tool_call_id": result.call_id,
                                         "content": result.content}));
                }
            }
        }
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    body[limit_key] = json!(request.max_output_tokens);
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    if !request.stop_sequences.is_empty() {
        body["stop"] = json!(request.stop_sequences);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {"name": tool.name,
                       "description": tool.description, "parameters": tool.input_schema}})
            })
            .collect();
    }
    body
}

#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    /// String fragments of the arguments, or the object a server sent whole.
    fragments: String,
    object: Option<Value>,
}

/// Folds `chat.completion.chunk`s (or one `chat.completion`) into one [`LlmResponse`].
#[derive(Debug, Default)]
pub(crate) struct ChunkFold {
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    /// The text of a structured refusal, when the model sent one.
    refusal: Option<String>,
    usage: Usage,
    done: bool,
    /// The answering model and the completion's id, from the chunks.
    identity: ResponseIdentity,
}

impl ChunkFold {
    /// Applies one `data:` payload; `Ok(true)` at `[DONE]`.
    pub(crate) fn apply(&mut self, data: &str) -> Result<bool, LlmError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|error| LlmError::Malformed {
            provider: PROVIDER,
            message: format!("a chunk is not JSON ({error})"),
            usage: self.usage,
        })?;
        if let Some(error) = chunk.get("error") {
            return Err(LlmError::Api {
                provider: PROVIDER,
                kind: error
                    .get("type")
                    .or_else(|| error.get("code"))
                    .and_then(Value::as_str)
                    .unwrap_or("error")
                    .to_owned(),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                usage: self.usage,
            });
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.merge_usage(usage);
        }
        // Every chunk repeats them; the first one says.
        for (key, slot) in [
            ("model", &mut self.identity.model),
            ("id", &mut self.identity.id),
        ] {
            if slot.is_none()
                && let Some(value) = chunk.get(key).and_then(Value::as_str)
            {
                *slot = Some(value.to_owned());
            }
        }
        for choice in chunk
            .get("choices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            // Only the first choice is ours (n = 1); a server sending more is ignored beyond it.
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            let delta = choice
                .get("delta")
                .or_else(|| choice.get("message"))
                .cloned()
                .unwrap_or(Value::Null);
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                self.text.push_str(text);
            }
            // A structured refusal (`delta.refusal`) is the model declining: its text is the
            // reason, and the turn is a refusal whatever `finish_reason` says.
            if let Some(text) = delta.get("refusal").and_then(Value::as_str) {
                self.refusal.get_or_insert_with(String::new).push_str(text);
            }
            for (position, call) in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let index = call
                    .get("index")
                    .and_then(Value::as_u64)
                    .unwrap_or(position as u64);
                let partial = self.calls.entry(index).or_default();
                if let Some(id) = call
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                {
                    partial.id = Some(id.to_owned());
                }
                let function = call.get("function").cloned().unwrap_or(Value::Null);
                if let Some(name) = function.get("name").and_then(Value::as_str) {
                    partial.name.push_str(name);
                }
                match function.get("arguments") {
                    Some(Value::String(fragment)) => partial.fragments.push_str(fragment),
                    Some(object @ Value::Object(_)) => partial.object = Some(object.clone()),
                    _ => {}
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_owned());
            }
        }
        Ok(false)
    }

    fn merge_usage(&mut self, usage: &Value) {
        let prompt = usage
            .get("prompt_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let cached = usage
            .pointer("/prompt_tokens_details/cached_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            .min(prompt);
        self.usage = Usage {
            input_tokens: prompt - cached,
            output_tokens: usage
                .get("completion_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            cache_read_tokens: cached,
            cache_write_tokens: 0,
        };
    }

    pub(crate) fn usage(&self) -> Usage {
        self.usage
    }

    /// The finished turn. `turn` numbers the assistant turn, for synthesised ids. `ended_cleanly`
    /// says the connection closed without error: a stream without `[DONE]` is accepted then only
    /// when a `finish_reason` arrived (some servers omit `[DONE]`).
    pub(crate) fn finish(self, turn: usize, ended_cleanly: bool) -> Result<LlmResponse, LlmError> {
        if !(self.done || (ended_cleanly && self.finish_reason.is_some())) {
            return Err(LlmError::StreamCut {
                provider: PROVIDER,
                message: "the stream ended without [DONE] or a finish_reason".into(),
                usage: self.usage,
            });
        }
        let mut tool_calls = Vec::new();
        for (index, call) in self.calls {
            let raw = match call.object {
                Some(object) => object,
                None => Value::String(call.fragments),
            };
            // Arguments that are not a JSON object stay as the model wrote them: the loop
            // answers the call with a tool error, and the model can correct itself.
            let arguments = super::arguments_object(&raw).unwrap_or(raw);
            tool_calls.push(LlmToolCall {
                id: call.id.unwrap_or_else(|| format!("call_{turn}_{index}")),
                name: call.name,
                arguments,
            });
        }
        let raw_stop = self.finish_reason.unwrap_or_else(|| "none".to_owned());
        if let Some(refusal) = self.refusal.filter(|_| tool_calls.is_empty()) {
            return Ok(LlmResponse {
                text: if self.text.is_empty() {
                    refusal
                } else {
                    format!("{}{refusal}", self.text)
                },
                tool_calls,
                usage: self.usage,
                stop: StopReason::Refusal,
                raw_stop: "refusal".into(),
                identity: self.identity,
            });
        }
        let stop = if !tool_calls.is_empty() {
            StopReason::ToolUse
        } else {
            match raw_stop.as_str() {
                "length" => StopReason::MaxTokens,
                "content_filter" => StopReason::Refusal,
                _ => StopReason::EndTurn,
            }
        };
        Ok(LlmResponse {
            text: self.text,
            tool_calls,
            usage: self.usage,
            stop,
            raw_stop,
            identity: self.identity,
        })
    }
}

impl OpenAiBackend {
    /// One call, with errors as the provider wrote them (the trait's `complete` redacts).
    async fn complete_unredacted(&self, request: LlmRequest<'_>) -> Result<LlmResponse, LlmError> {
        let turn = request
            .turns
            .iter()
            .filter(|t| matches!(t, Turn::Assistant { .. }))
            .count()
            + 1;
        let body =
            Bytes::from(request_body(&self.model, self.output_limit_key(), &request).to_string());
        let mut headers = vec![
            (
                hyper::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (
                hyper::header::ACCEPT,
                HeaderValue::from_static("text/event-stream"),
            ),
        ];
        if let Some(key) = &self.settings.api_key {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                    LlmError::Config(
                        "the API key contains characters not allowed in a header".into(),
                    )
                })?;
            value.set_sensitive(true);
            headers.push((HeaderName::from_static("authorization"), value));
        }
        let endpoint = self.endpoint();
        let response = self
            .client
            .post(
                PROVIDER,
                &endpoint,
                &headers,
                body,
                &self.settings.retry,
                request.deadline,
            )
            .await?;
        let is_stream = super::http::is_event_stream(&response);
        let mut fold = ChunkFold::default();
        if !is_stream {
            let bytes = collect_body(PROVIDER, response.into_body()).await?;
            fold.apply(&String::from_utf8_lossy(&bytes))?;
            fold.done = true;
            return fold.finish(turn, true);
        }
        let mut parser = SseParser::new();
        let mut failure: Option<LlmError> = None;
        let read = read_stream(response.into_body(), |chunk| {
            let events = parser.feed(chunk).map_err(|error| error.to_string())?;
            for event in &events {
                match fold.apply(&event.data) {
                    Ok(true) => return Ok(false),
                    Ok(false) => {}
                    Err(error) => {
                        failure = Some(error);
                        return Ok(false);
                    }
                }
            }
            Ok(true)
        })
        .await;
        if let Some(error) = failure {
            return Err(error);
        }
        match read {
            Ok(()) => fold.finish(turn, true),
            Err(message) => Err(LlmError::StreamCut {
                provider: PROVIDER,
                message,
                usage: fold.usage(),
            }),
        }
    }
}

impl LlmBackend for OpenAiBackend {
    fn name(&self) -> &str {
        PROVIDER
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn input_token_bound(&self, request: &LlmRequest<'_>) -> u64 {
        input_token_bound(
            request_body(&self.model, self.output_limit_key(), request)
                .to_string()
                .len(),
        )
    }

    fn complete<'a>(
        &'a self,
        request: LlmRequest<'a>,
    ) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        // Whatever the provider sent back (an error body, a stream's error event) may echo the
        // key: it is taken out here, before any error is stored, shown or logged.
        Box::pin(async move {
            self.complete_unredacted(request)
                .await
                .map_err(|error| error.redacted(self.settings.api_key.as_ref()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{ExposedTool, ToolResultTurn};

    fn fold(chunks: &[Value]) -> Result<LlmResponse, LlmError> {
        let mut fold = ChunkFold::default();
        for chunk in chunks {
            fold.apply(&chunk.to_string())?;
        }
        fold.apply("[DONE]")?;
        fold.finish(1, true)
    }

    #[test]
    fn streamed_tool_calls_assemble_by_index_with_usage_at_the_end() {
        let response = fold(&[
            json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta":
                {"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                 "id": "call_abc", "type": "function",
                 "function": {"name": "sql_query", "arguments": ""}}]}, "finish_reason": null}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
                 "function": {"arguments": "{\"sql\":"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
                 "function": {"arguments": "\"SELECT 1\"}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20,
                   "prompt_tokens_details": {"cached_tokens": 64}}}),
        ])
        .expect("turn");
        assert_eq!(response.tool_calls.len(), 1);
        assert_eq!(response.tool_calls[0].id, "call_abc");
        assert_eq!(response.tool_calls[0].arguments, json!({"sql": "SELECT 1"}));
        // finish_reason said "stop", but the content has a tool call: that decides.
        assert_eq!(response.stop, StopReason::ToolUse);
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 36,
                output_tokens: 20,
                cache_read_tokens: 64,
                cache_write_tokens: 0
            }
        );
    }

    #[test]
    fn object_arguments_missing_ids_and_null_choices() {
        let response = fold(&[
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"function": {"name": "a", "arguments": {"x": 1}}},
                {"function": {"name": "b", "arguments": "{}"}}]}}]}),
            json!({"choices": null, "usage": {"prompt_tokens": 5, "completion_tokens": 1}}),
        ])
        .expect("turn");
        assert_eq!(response.tool_calls[0].id, "call_1_0");
        assert_eq!(response.tool_calls[1].id, "call_1_1");
        assert_eq!(response.tool_calls[0].arguments, json!({"x": 1}));
        assert_eq!(response.usage.input_tokens, 5);
    }

    #[test]
    fn text_turns_and_length_stops() {
        let response = fold(&[json!({"choices": [{"index": 0,
            "delta": {"content": "Hello"}, "finish_reason": "length"}]})])
        .expect("turn");
        assert_eq!(response.text, "Hello");
        assert_eq!(response.stop, StopReason::MaxTokens);
    }

    #[test]
    fn a_stream_without_done_or_finish_reason_is_cut() {
        let mut fold = ChunkFold::default();
        fold.apply(&json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]}).to_string())
            .expect("chunk");
        assert!(matches!(
            fold.finish(1, true),
            Err(LlmError::StreamCut { .. })
        ));
        let mut fold = ChunkFold::default();
        assert!(matches!(
            fold.apply("{oops"),
            Err(LlmError::Malformed { .. })
        ));
    }

    #[test]
    fn the_request_carries_tools_results_and_usage_options() {
        let tools = [ExposedTool {
            name: "demo__sql_query".into(),
            server: Some("demo".into()),
            servers: vec!["demo".into()],
            tool: "sql_query".into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}),
            read_only: true,
            destructive: false,
        }];
        let turns = [
            Turn::User("t".into()),
            Turn::Assistant {
                text: String::new(),
                tool_calls: vec![LlmToolCall {
                    id: "call_1".into(),
                    name: "demo__sql_query".into(),
                    arguments: json!({"sql": "SELECT 1"}),
                }],
            },
            Turn::ToolResults(vec![ToolResultTurn {
                call_id: "call_1".into(),
                name: "demo__sql_query".into(),
                content: "1".into(),
                result: None,
                is_error: false,
            }]),
        ];
        let request = LlmRequest {
            system: "s",
            tools: &tools,
            turns: &turns,
            max_output_tokens: 64,
            temperature: None,
            stop_sequences: &[],
            ranked_tools: &[],
            deadline: None,
        };
        let body = request_body("gpt-4.1-mini", "max_tokens", &request);
        assert!(body.get("temperature").is_none() && body.get("stop").is_none());
        let stops = ["END".to_owned()];
        let sampled = request_body(
            "m",
            "max_tokens",
            &LlmRequest {
                temperature: Some(0.7),
                stop_sequences: &stops,
                ranked_tools: &[],
                deadline: None,
                ..request
            },
        );
        assert_eq!(sampled["temperature"], json!(0.7));
        assert_eq!(sampled["stop"], json!(["END"]));
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(body["max_tokens"], json!(64));
        assert_eq!(body["tools"][0]["function"]["name"], "demo__sql_query");
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            json!("{\"sql\":\"SELECT 1\"}")
        );
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "call_1",
                                               "content": "1"})
        );
    }
}
