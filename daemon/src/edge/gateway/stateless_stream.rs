//! What an upstream server says while a 2026-07-28 host's call runs, sent as the SSE answer to
//! the call's POST: the stateless revision has no session and no standalone stream, so the
//! answer's own stream is the only way a notification reaches the host (rmcp's stateless
//! server answers the same way: `serve_negotiated_request_directly`, its SSE stream carrying
//! the handler's notifications before the response).
//!
//! The call takes the one pipeline a 2025 session's streamed call takes (`Endpoint::settle`,
//! `stream::event_stream` with a [`HostRelay`](super::stream::HostRelay)), with two differences
//! the revision makes:
//! - `notifications/progress` go under the request's own `_meta.progressToken`, only when it
//!   gave one (as in 2025);
//! - `notifications/message` go only when the request names a least level in
//!   `_meta["io.modelcontextprotocol/logLevel"]` (SEP-2575: `logging/setLevel` is gone, and a
//!   server sends no log message to a request that did not ask); a level MCP does not have is
//!   `-32602` naming the levels.
//!
//! A stateless host declares no way to answer a server's question on this stream (the revision
//! asks through `input_required` results instead), so a server's elicitation or sampling
//! request during the call is declined with the reason, as for a 2025 host without those
//! capabilities. A host that drops the stream cancels the call, traced as cancelled.

use std::sync::Arc;

use hyper::header;
use serde_json::Value;

use super::messages::{RpcError, excerpt};
use super::sessions::Session;
use super::stream;

/// `_meta` key of a 2026-era request's least log level (SEP-2575).
const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// The least log level rank a 2026-07-28 request asks for: its
/// `_meta["io.modelcontextprotocol/logLevel"]`, or [`stream::NO_LOG_MESSAGES`] when it names
/// none; an error saying what would be right for anything but an MCP level.
pub(super) fn request_log_level(params: &Value) -> Result<usize, RpcError> {
    let Some(level) = params
        .get("_meta")
        .and_then(|meta| meta.get(META_LOG_LEVEL))
    else {
        return Ok(stream::NO_LOG_MESSAGES);
    };
    level
        .as_str()
        .and_then(stream::log_level_rank)
        .ok_or_else(|| {
            RpcError::invalid_params(format!(
                "params._meta[{META_LOG_LEVEL:?}] is {}; it is one of MCP's log levels: debug, \
                 info, notice, warning, error, critical, alert, emergency (or leave it out for \
                 no log messages)",
                excerpt(&level.to_string())
            ))
        })
}

/// Whether a 2026-07-28 request is answered with an SSE stream: a request whose server may
/// talk while it runs, from a host that accepts one.
pub(super) fn streams(method: &str, headers: &hyper::header::HeaderMap) -> bool {
    super::STREAMED_METHODS.contains(&method) && super::accepts_event_stream(headers)
}

impl super::Endpoint {
    /// A 2026-07-28 request of [`super::STREAMED_METHODS`] answered with an SSE stream: the
    /// call runs in a task of its own, whose relay sends the host the call's progress and the
    /// log messages at or above `log_level`; the stream ends with the answer (to the request's
    /// id), `worded` as the revision words it (`stateless_answer::answer_body`).
    pub(super) fn stream_stateless(
        self: &Arc<Self>,
        session: Arc<Session>,
        method: &str,
        params: &Value,
        mut context: crate::pipeline::CallContext,
        log_level: usize,
        worded: impl FnOnce(Result<super::Reply, RpcError>) -> String + Send + 'static,
    ) -> crate::edge::http_body::HttpResponse {
        let (relay, messages) = session.relay_at(stream::progress_token(params), Some(log_level));
        context.relay = Some(Arc::clone(&relay) as Arc<dyn crate::provider::EventRelay>);
        let endpoint = Arc::clone(self);
        let (method, params) = (method.to_owned(), params.clone());
        let call = tokio::spawn(async move {
            let answer = endpoint.settle(&session, &method, &params, &context).await;
            Some(worded(answer))
        });
        hyper::Response::builder()
            .status(hyper::StatusCode::OK)
            .header(header::CONTENT_TYPE, "text/event-stream")
            .header(header::CACHE_CONTROL, "no-cache")
            .body(crate::edge::http_body::HttpBody::new(stream::event_stream(
                messages, call, relay,
            )))
            .expect("static response parts are valid")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_request_naming_no_log_level_gets_no_log_messages() {
        assert_eq!(request_log_level(&json!({})), Ok(stream::NO_LOG_MESSAGES));
        assert_eq!(
            request_log_level(&json!({"_meta": {"progressToken": 1}})),
            Ok(stream::NO_LOG_MESSAGES)
        );
        // No MCP level reaches it.
        assert!(stream::log_level_rank("emergency").unwrap() < stream::NO_LOG_MESSAGES);
    }

    #[test]
    fn a_named_log_level_is_its_rank_and_anything_else_is_refused() {
        let asking = |level: Value| json!({"_meta": {META_LOG_LEVEL: level}});
        assert_eq!(request_log_level(&asking(json!("debug"))), Ok(0));
        assert_eq!(request_log_level(&asking(json!("warning"))), Ok(3));
        for bad in [json!("verbose"), json!(3), json!(null)] {
            let refused = request_log_level(&asking(bad.clone())).unwrap_err();
            assert_eq!(refused.code, -32602, "{bad}");
            assert!(refused.message.contains("debug, info"), "{refused:?}");
        }
    }
}
