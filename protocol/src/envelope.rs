//! The JSON-RPC 2.0 envelope: a request, a response, and the error object.
//!
//! The daemon side uses jsonrpsee, which has its own envelope types; these are for clients (our
//! `tool-cli`, the tests, the benchmarks) that speak the protocol without a JSON-RPC framework.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `jsonrpc` member every message carries.
pub const JSONRPC_VERSION: &str = "2.0";

/// A request id: a number or a string, as JSON-RPC 2.0 allows.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id.
    Number(u64),
    /// A string id.
    String(String),
}

/// A JSON-RPC 2.0 request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request<P = Value> {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// The id the response will carry.
    pub id: RequestId,
    /// The method name, one of [`crate::methods::name`].
    pub method: String,
    /// The method's params; omitted for methods that take none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

impl<P> Request<P> {
    /// A request with a numeric id.
    pub fn new(id: u64, method: &str, params: Option<P>) -> Self {
        Request {
            jsonrpc: JSONRPC_VERSION.to_owned(),
            id: RequestId::Number(id),
            method: method.to_owned(),
            params,
        }
    }
}

/// A JSON-RPC 2.0 response: exactly one of `result` and `error` is present.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Response {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// The id of the request this answers (`null` when the request could not be parsed).
    pub id: Option<RequestId>,
    /// The result on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

impl Response {
    /// The error answer to the request `id` (`None`: a request that could not be read).
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Response {
        Response {
            jsonrpc: JSONRPC_VERSION.to_owned(),
            id,
            result: None,
            error: Some(error),
        }
    }

    /// The result, or the error object when the call failed.
    pub fn into_result(self) -> Result<Value, ErrorObject> {
        match (self.result, self.error) {
            (_, Some(error)) => Err(error),
            (Some(result), None) => Ok(result),
            (None, None) => Ok(Value::Null),
        }
    }
}

/// A JSON-RPC 2.0 error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// One of [`crate::code`].
    pub code: i32,
    /// A one-line, human-readable message.
    pub message: String,
    /// Structured detail; for our errors an [`crate::ErrorData`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// The structured `data`, when it is one of ours.
    pub fn error_data(&self) -> Option<crate::ErrorData> {
        self.data
            .as_ref()
            .and_then(|data| serde_json::from_value(data.clone()).ok())
    }
}

impl std::fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}
