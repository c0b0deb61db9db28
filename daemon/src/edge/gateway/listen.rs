//! `subscriptions/listen` for hosts of the stateless revision 2026-07-28: that revision has no
//! standalone stream, so a host that wants to hear of changes opens one long request with the
//! categories it wants (`notifications`, rmcp's `SubscriptionFilter`), and the gateway answers
//! it with an SSE stream: first `notifications/subscriptions/acknowledged` with the categories
//! it accepted, then the notifications of those categories as they come, each with the
//! request's id in `_meta["io.modelcontextprotocol/subscriptionId"]`, until the host drops the
//! request (or the daemon shuts down: the stream then ends with the request's result,
//! `{"resultType": "complete", "_meta": {subscriptionId}}`).
//!
//! Accepted: `toolsListChanged` (pass-through mode; told when what this token's `tools/list`
//! answers changed, compared as the session streams compare it; a progressive listing never
//! changes), `promptsListChanged` and `resourcesListChanged` (a server in the token's scope
//! said so). Not accepted, so left out of the acknowledgment: `resourceSubscriptions` (a
//! resource's server is not subscribed upstream for a stateless host; a 2025 session's
//! `resources/subscribe` does that). The revision has no filter member for task statuses
//! (rmcp 3.9 routes none on a listen stream), so a stateless host polls `tasks/get`.

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::messages::{Mode, RpcError};
use crate::pipeline::CallContext;
use crate::provider::UpstreamNotice;

/// `_meta` key of a notification's subscription.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// How often an idle stream gets a comment line, so a host that went away is noticed.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Frames waiting for a slow host; past this a notification is dropped (they carry no data:
/// the host re-lists on the next one).
const QUEUE: usize = 16;

/// What a listen stream tells, as accepted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Accepted {
    pub(super) tools: bool,
    pub(super) prompts: bool,
    pub(super) resources: bool,
}

impl Accepted {
    /// The acknowledgment's `notifications`: the accepted categories only.
    fn filter(self) -> Value {
        let mut filter = json!({});
        for (on, key) in [
            (self.tools, "toolsListChanged"),
            (self.prompts, "promptsListChanged"),
            (self.resources, "resourcesListChanged"),
        ] {
            if on {
                filter[key] = json!(true);
            }
        }
        filter
    }
}

/// The categories accepted of a listen request's `params` in `mode` (pure), or what was wrong
/// with them.
pub(super) fn accept(params: &Value, mode: Mode) -> Result<Accepted, RpcError> {
    let filter = match params.get("notifications") {
        Some(Value::Object(filter)) => filter,
        Some(other) => {
            return Err(RpcError::invalid_params(format!(
                "subscriptions/listen's \"notifications\" is {}, not an object such as \
                 {{\"toolsListChanged\": true}}",
                tool_cli_protocol::json::kind(other)
            )));
        }
        None => {
            return Err(RpcError::invalid_params(
                "subscriptions/listen needs \"notifications\", an object such as \
                 {\"toolsListChanged\": true, \"resourcesListChanged\": true}"
                    .to_owned(),
            ));
        }
    };
    let asked = |key: &str| filter.get(key).and_then(Value::as_bool) == Some(true);
    Ok(Accepted {
        tools: asked("toolsListChanged") && mode == Mode::PassThrough,
        prompts: asked("promptsListChanged"),
        resources: asked("resourcesListChanged"),
    })
}

/// `message` with the subscription's id in its params' `_meta`.
fn tagged(mut message: Value, subscription: &Value) -> Value {
    if !message.get("params").is_some_and(Value::is_object) {
        message["params"] = json!({});
    }
    message["params"]["_meta"] = json!({SUBSCRIPTION_ID: subscription});
    message
}

/// The notification a server's `notice` becomes on a stream that accepted `accepted` for the
/// caller of `context` (pure): a list change of a server in the token's scope.
pub(super) fn passed_on(
    notice: &UpstreamNotice,
    accepted: Accepted,
    context: &CallContext,
) -> Option<Value> {
    if !context.grant.scope.permits_server(notice.server()) {
        return None;
    }
    let method = match notice {
        UpstreamNotice::ResourcesChanged { .. } if accepted.resources => {
            "notifications/resources/list_changed"
        }
        UpstreamNotice::PromptsChanged { .. } if accepted.prompts => {
            "notifications/prompts/list_changed"
        }
        _ => return None,
    };
    Some(json!({"jsonrpc": "2.0", "method": method}))
}

/// Queues a frame; `Err` when the host is gone. A full queue drops the frame.
fn send(frames: &mpsc::Sender<Bytes>, frame: Bytes) -> Result<(), ()> {
    match frames.try_send(frame) {
        Ok(()) | Err(mpsc::error::TrySendError::Full(_)) => Ok(()),
        Err(mpsc::error::TrySendError::Closed(_)) => Err(()),
    }
}

impl super::Endpoint {
    /// A stateless host's `subscriptions/listen` (request `id`): the SSE stream, or the
    /// refusal of its filter as one JSON answer.
    pub(super) fn listen(
        &self,
        grant: &crate::auth::Grant,
        mode: Mode,
        id: Value,
        params: &Value,
    ) -> crate::edge::http_body::HttpResponse {
        let answer = |body: Value, content_type: &str| {
            hyper::Response::builder()
                .status(hyper::StatusCode::OK)
                .header(hyper::header::CONTENT_TYPE, content_type)
                .body(crate::edge::http_body::HttpBody::from(body.to_string()))
                .expect("static response parts are valid")
        };
        let accepted = match accept(params, mode) {
            Ok(accepted) => accepted,
            Err(error) => {
                let error = super::stateless_answer::error_of_revision(error).to_json();
                return answer(
                    json!({"jsonrpc": "2.0", "id": id, "error": error}),
                    "application/json",
                );
            }
        };
        let context = CallContext::new(grant.clone());
        let services = Arc::clone(&self.services);
        let mut shutting_down = self.shutting_down.clone();
        let (frames, body) = mpsc::channel(QUEUE);
        let mut changes = services.catalog_changes();
        let mut notices = services.upstream_notices();
        let writer = tokio::spawn(async move {
            let emit = |message: Value| {
                send(
                    &frames,
                    super::sse::event(None, &tagged(message, &id).to_string()),
                )
            };
            let acknowledged = json!({"jsonrpc": "2.0",
                "method": "notifications/subscriptions/acknowledged",
                "params": {"notifications": accepted.filter()}});
            if emit(acknowledged).is_err() {
                return;
            }
            let listing = || super::pass_through::list(&services, &context).to_string();
            let mut listed = accepted.tools.then(listing);
            let mut keep_alive =
                tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
            loop {
                tokio::select! {
                    changed = changes.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        if let Some(previous) = listed.as_mut() {
                            let now = listing();
                            if now != *previous {
                                *previous = now;
                                let told = json!({"jsonrpc": "2.0",
                                    "method": "notifications/tools/list_changed"});
                                if emit(told).is_err() {
                                    return;
                                }
                            }
                        }
                    }
                    notice = notices.recv() => {
                        let notice = match notice {
                            Ok(notice) => notice,
                            Err(broadcast::error::RecvError::Lagged(_)) => continue,
                            Err(broadcast::error::RecvError::Closed) => {
                                notices = broadcast::channel(1).1;
                                continue;
                            }
                        };
                        if let Some(message) = passed_on(&notice, accepted, &context)
                            && emit(message).is_err()
                        {
                            return;
                        }
                    }
                    _ = keep_alive.tick() => {
                        if send(&frames, Bytes::from_static(b": keep-alive\n\n")).is_err() {
                            return;
                        }
                    }
                    // A dropped sender (no shutdown will come) disables this branch.
                    Ok(_) = shutting_down.wait_for(|down| *down) => {
                        let ended = json!({"jsonrpc": "2.0", "id": id, "result":
                            {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: id}}});
                        let _ = send(&frames, super::sse::event(None, &ended.to_string()));
                        return;
                    }
                }
            }
        });
        hyper::Response::builder()
            .status(hyper::StatusCode::OK)
            .header(hyper::header::CONTENT_TYPE, "text/event-stream")
            .header(hyper::header::CACHE_CONTROL, "no-cache")
            .body(crate::edge::http_body::HttpBody::new(
                super::sse::SseBody::new(body, writer),
            ))
            .expect("static response parts are valid")
    }
}

/// Adds what a listen stream tells to a discover result's capabilities: `listChanged` of
/// tools (pass-through only), prompts and resources.
pub(super) fn advertise(discover: &mut Value, mode: Mode) {
    let Some(capabilities) = discover
        .get_mut("capabilities")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for (key, on) in [
        ("tools", mode == Mode::PassThrough),
        ("prompts", true),
        ("resources", true),
    ] {
        if on && let Some(capability) = capabilities.get_mut(key).and_then(Value::as_object_mut) {
            capability.insert("listChanged".to_owned(), json!(true));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accepted_filter_is_what_was_asked_and_served() {
        let asked = json!({"notifications": {"toolsListChanged": true,
            "resourcesListChanged": true, "resourceSubscriptions": ["file:///a"]}});
        let accepted = accept(&asked, Mode::PassThrough).unwrap();
        assert_eq!(
            accepted.filter(),
            json!({"toolsListChanged": true, "resourcesListChanged": true})
        );
        // rmcp reads it as the filter it sent, less what was not accepted.
        let read: rmcp::model::SubscriptionFilter =
            serde_json::from_value(accepted.filter()).unwrap();
        assert_eq!(read.tools_list_changed, Some(true));
        assert_eq!(read.resource_subscriptions, None);
        // A progressive listing never changes.
        let progressive = accept(&asked, Mode::Progressive).unwrap();
        assert!(!progressive.tools && progressive.resources);
        let missing = accept(&json!({}), Mode::PassThrough).unwrap_err();
        assert!(missing.message.contains("toolsListChanged"), "{missing:?}");
        let wrong = accept(&json!({"notifications": []}), Mode::PassThrough).unwrap_err();
        assert!(wrong.message.contains("not an object"), "{wrong:?}");
    }

    #[test]
    fn notifications_carry_the_subscription_and_reads_as_rmcps() {
        let told = tagged(
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
            &json!(7),
        );
        assert_eq!(told["params"]["_meta"][SUBSCRIPTION_ID], 7);
        let read: rmcp::model::ServerJsonRpcMessage = serde_json::from_value(told).unwrap();
        assert!(matches!(read, rmcp::model::JsonRpcMessage::Notification(_)));
        let acknowledged = tagged(
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                "params": {"notifications": {"promptsListChanged": true}}}),
            &json!("s-1"),
        );
        let read: rmcp::model::ServerJsonRpcMessage = serde_json::from_value(acknowledged).unwrap();
        assert!(matches!(read, rmcp::model::JsonRpcMessage::Notification(_)));
    }

    fn context(servers: Option<Vec<String>>) -> CallContext {
        CallContext::new(crate::auth::Grant {
            token_id: "t".to_owned(),
            is_owner: servers.is_none(),
            scope: Arc::new(crate::policy::Scope {
                servers,
                ..crate::policy::Scope::unrestricted()
            }),
        })
    }

    #[test]
    fn a_list_change_reaches_a_stream_that_accepted_it_in_its_scope_only() {
        let all = Accepted {
            tools: true,
            prompts: true,
            resources: true,
        };
        let resources = UpstreamNotice::ResourcesChanged {
            server: "beta".to_owned(),
        };
        let told = passed_on(&resources, all, &context(None)).expect("told");
        assert_eq!(told["method"], "notifications/resources/list_changed");
        let scoped = context(Some(vec!["alpha".to_owned()]));
        assert_eq!(passed_on(&resources, all, &scoped), None);
        let tools_only = Accepted {
            tools: true,
            ..Accepted::default()
        };
        assert_eq!(passed_on(&resources, tools_only, &context(None)), None);
        let prompts = UpstreamNotice::PromptsChanged {
            server: "alpha".to_owned(),
        };
        let told = passed_on(&prompts, all, &scoped).expect("in scope");
        assert_eq!(told["method"], "notifications/prompts/list_changed");
        // Updates of resources are not accepted on these streams.
        let updated = UpstreamNotice::ResourceUpdated {
            server: "alpha".to_owned(),
            uri: "demo://a".to_owned(),
        };
        assert_eq!(passed_on(&updated, all, &context(None)), None);
    }

    #[test]
    fn discover_advertises_the_list_changes_a_stream_tells() {
        let mut discover = json!({"capabilities": {"tools": {}, "prompts": {}, "resources": {}}});
        advertise(&mut discover, Mode::PassThrough);
        let capabilities: rmcp::model::ServerCapabilities =
            serde_json::from_value(discover["capabilities"].clone()).unwrap();
        assert_eq!(capabilities.tools.unwrap().list_changed, Some(true));
        let mut progressive = json!({"capabilities": {"tools": {}, "prompts": {}}});
        advertise(&mut progressive, Mode::Progressive);
        assert!(
            progressive["capabilities"]["tools"]
                .get("listChanged")
                .is_none()
        );
        assert_eq!(progressive["capabilities"]["prompts"]["listChanged"], true);
    }
}
