//! The gateway's JSON-RPC messages, pure: what a host sent (a request, a notification, or an
//! answer to us), the errors we answer with, and a session's mode.

use serde_json::{Value, json};

/// How a session shows the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Every visible tool as `server__tool`.
    PassThrough,
    /// The six meta-tools of `tool_cli_gateway_core::meta_tools`.
    Progressive,
}

impl From<tool_cli_protocol::methods::GatewayMode> for Mode {
    fn from(mode: tool_cli_protocol::methods::GatewayMode) -> Mode {
        match mode {
            tool_cli_protocol::methods::GatewayMode::PassThrough => Mode::PassThrough,
            tool_cli_protocol::methods::GatewayMode::Progressive => Mode::Progressive,
        }
    }
}

impl Mode {
    /// `progressive` or `pass-through` (also `passthrough`, `pass_through`).
    pub(crate) fn parse(text: &str) -> Result<Mode, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "progressive" => Ok(Mode::Progressive),
            "pass-through" | "passthrough" | "pass_through" => Ok(Mode::PassThrough),
            _ => Err(format!(
                "unknown gateway mode {:?}; expected progressive or pass-through",
                excerpt(text)
            )),
        }
    }
}

/// What one POST body holds.
#[derive(Debug, PartialEq)]
pub(crate) enum Incoming {
    /// A request: it gets one answer.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification (`notifications/initialized`, `notifications/cancelled`, …).
    Notification { method: String, params: Value },
    /// A host's answer to a request of ours (an elicitation): its id, and its result or error.
    Response {
        id: Value,
        answer: Result<Value, Value>,
    },
}

/// A JSON-RPC error to answer with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) data: Option<Value>,
}

impl RpcError {
    pub(crate) fn parse_error(message: String) -> RpcError {
        RpcError {
            code: -32700,
            message,
            data: None,
        }
    }

    pub(crate) fn invalid_request(message: String) -> RpcError {
        RpcError {
            code: -32600,
            message,
            data: None,
        }
    }

    pub(crate) fn method_not_found(method: &str) -> RpcError {
        RpcError {
            code: -32601,
            message: format!(
                "method {:?} is not served by this gateway; it serves initialize, ping, \
                 tools/list, tools/call, resources/list, resources/templates/list, \
                 resources/read, resources/subscribe, resources/unsubscribe, prompts/list, \
                 prompts/get, completion/complete, logging/setLevel, tasks/get, \
                 tasks/result, tasks/list and tasks/cancel",
                excerpt(method)
            ),
            data: None,
        }
    }

    pub(crate) fn invalid_params(message: String) -> RpcError {
        RpcError {
            code: -32602,
            message,
            data: None,
        }
    }

    /// MCP's "resource not found".
    pub(crate) fn resource_not_found(uri: &str) -> RpcError {
        RpcError {
            code: -32002,
            message: format!(
                "no resource {:?} among the resources this token can see, nor a resource \
                 template it fits; resources/list and resources/templates/list give them",
                excerpt(uri)
            ),
            data: Some(json!({"uri": excerpt(uri)})),
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

/// Parses one POST body.
pub(crate) fn parse(body: &[u8]) -> Result<Incoming, RpcError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|error| RpcError::parse_error(format!("the body is not JSON: {error}")))?;
    let Value::Object(members) = value else {
        let what = if value.is_array() {
            "a batch (an array); MCP since 2025-06-18 sends one message per request"
        } else {
            "not an object"
        };
        return Err(RpcError::invalid_request(format!(
            "the body is {what}; expected one JSON-RPC message"
        )));
    };
    if members.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(RpcError::invalid_request(
            "the message has no \"jsonrpc\": \"2.0\"".to_owned(),
        ));
    }
    let id = members.get("id").cloned();
    match (members.get("method"), id) {
        (Some(Value::String(method)), Some(id)) => {
            if !(id.is_string() || id.is_i64() || id.is_u64()) {
                return Err(RpcError::invalid_request(
                    "the request's id must be a string or an integer".to_owned(),
                ));
            }
            let params = members.get("params").cloned().unwrap_or(Value::Null);
            if !(params.is_object() || params.is_null()) {
                return Err(RpcError::invalid_request(format!(
                    "the params of {:?} must be an object",
                    excerpt(method)
                )));
            }
            Ok(Incoming::Request {
                id,
                method: method.clone(),
                params,
            })
        }
        (Some(Value::String(method)), None) => Ok(Incoming::Notification {
            method: method.clone(),
            params: members.get("params").cloned().unwrap_or(Value::Null),
        }),
        (Some(_), _) => Err(RpcError::invalid_request(
            "the message's method must be a string".to_owned(),
        )),
        (None, id) if members.contains_key("result") || members.contains_key("error") => {
            let answer = match members.get("result") {
                Some(result) => Ok(result.clone()),
                None => Err(members.get("error").cloned().unwrap_or(Value::Null)),
            };
            Ok(Incoming::Response {
                id: id.unwrap_or(Value::Null),
                answer,
            })
        }
        (None, _) => Err(RpcError::invalid_request(
            "the message has no method, result or error".to_owned(),
        )),
    }
}

/// Refuses a `cursor`: every list is answered whole, so a cursor was never given out.
pub(crate) fn no_cursor(params: &Value) -> Result<(), RpcError> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(()),
        Some(_) => Err(RpcError::invalid_params(
            "unknown cursor: this gateway answers every list in one page and never gives out a \
             cursor"
                .to_owned(),
        )),
    }
}

/// At most 64 characters of what a host sent, for a message.
pub(crate) fn excerpt(text: &str) -> String {
    const LONGEST: usize = 64;
    let mut kept: String = text.chars().take(LONGEST).collect();
    if kept.len() < text.len() {
        kept.push('…');
    }
    kept
}

/// The mode asked for by the query (`mode=progressive|pass-through`) or the mode header; `None`
/// when neither names one.
pub(super) fn requested_mode(
    query: Option<&str>,
    headers: &hyper::header::HeaderMap,
) -> Result<Option<Mode>, String> {
    if let Some(query) = query {
        let mut mode = None;
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            match pair.split_once('=') {
                Some(("mode", value)) => mode = Some(Mode::parse(value)?),
                _ => {
                    return Err(format!(
                        "unexpected query {:?}; the gateway takes only mode=progressive or \
                         mode=pass-through",
                        excerpt(pair)
                    ));
                }
            }
        }
        if mode.is_some() {
            return Ok(mode);
        }
    }
    match headers.get(super::MODE_HEADER) {
        None => Ok(None),
        Some(value) => Mode::parse(value.to_str().unwrap_or("?")).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_notifications_and_answers_are_told_apart() {
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(Incoming::Request {
                id: json!(1),
                method: "ping".to_owned(),
                params: Value::Null
            })
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Incoming::Notification {
                method: "notifications/initialized".to_owned(),
                params: Value::Null
            })
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Ok(Incoming::Response {
                id: json!("a"),
                answer: Ok(json!({}))
            })
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":"a","error":{"code":-1}}"#),
            Ok(Incoming::Response {
                id: json!("a"),
                answer: Err(json!({"code": -1}))
            })
        );
    }

    #[test]
    fn bad_messages_say_what_is_wrong() {
        assert_eq!(parse(b"{").unwrap_err().code, -32700);
        let batch = parse(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).unwrap_err();
        assert_eq!(batch.code, -32600);
        assert!(batch.message.contains("batch"), "{}", batch.message);
        let params = parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#);
        assert!(params.unwrap_err().message.contains("must be an object"));
        let id = parse(br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#).unwrap_err();
        assert!(id.message.contains("string or an integer"));
        assert_eq!(
            parse(br#"{"id":1,"method":"ping"}"#).unwrap_err().code,
            -32600
        );
    }

    #[test]
    fn modes_and_cursors() {
        assert_eq!(Mode::parse("Progressive"), Ok(Mode::Progressive));
        assert_eq!(Mode::parse("pass-through"), Ok(Mode::PassThrough));
        assert!(Mode::parse("x".repeat(500).as_str()).unwrap_err().len() < 200);
        assert!(no_cursor(&json!({})).is_ok());
        assert_eq!(no_cursor(&json!({"cursor": "x"})).unwrap_err().code, -32602);
    }

    #[test]
    fn the_mode_comes_from_the_query_then_the_header() {
        let mut headers = hyper::header::HeaderMap::new();
        assert_eq!(requested_mode(None, &headers), Ok(None));
        assert_eq!(
            requested_mode(Some("mode=progressive"), &headers),
            Ok(Some(Mode::Progressive))
        );
        headers.insert(
            super::super::MODE_HEADER,
            hyper::header::HeaderValue::from_static("progressive"),
        );
        assert_eq!(requested_mode(None, &headers), Ok(Some(Mode::Progressive)));
        assert_eq!(
            requested_mode(Some("mode=pass-through"), &headers),
            Ok(Some(Mode::PassThrough))
        );
        let refused = requested_mode(Some("token=abc"), &headers).unwrap_err();
        assert!(refused.contains("mode=progressive"), "{refused}");
        let refused = requested_mode(Some("mode=fast"), &headers).unwrap_err();
        assert!(refused.contains("\"fast\""), "{refused}");
    }
}
