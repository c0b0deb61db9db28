//! The 2026-07-28 way to hear a server's changes: a stateless server sends no notification
//! unless asked, so the pool opens one `subscriptions/listen` request per connection for the
//! change categories the server advertises, and hands what arrives on it to the same places a
//! 2025 server's notifications reach (`connection.rs`'s `PoolClient`): a new tool list wakes the
//! catalog refresher, resource and prompt list changes and resource updates go to the
//! gateway's hosts. rmcp routes the stream's notifications to the subscription, not to the
//! client handler, so they are dispatched here.
//!
//! The request is opened before the first tool listing, so a change made between the two is
//! not lost. A server that advertises changes but refuses to listen keeps its connection: its
//! catalog is then read at each connect, as before.
//!
//! The revision has no `resources/subscribe`: a host's subscription to a resource of such a
//! server (passed on by the gateway) becomes its URI in the stream's filter, and the stream is
//! opened again with the new filter ([`Control`]); the host is answered once the server has
//! acknowledged it. URIs are counted, so one host's unsubscribe leaves another's in place, and
//! kept across connections: a restarted server's first stream names them again
//! (`subscribed.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{ServerCapabilities, ServerNotification, SubscriptionFilter};
use rmcp::service::{Subscription, SubscriptionEnd};
use rmcp::{Peer, RoleClient};
use serde_json::{Value, json};
use tokio::sync::{Notify, broadcast, mpsc, oneshot, watch};

use super::subscribed::count;
use crate::error::Error;
use crate::provider::UpstreamNotice;
use tool_cli_protocol::ErrorData;

/// A stateless connection's resource subscriptions, shared between the requests that change
/// them and the task reading the stream.
pub(super) struct Control {
    /// Whether the server announces resource updates (`resources.subscribe`).
    subscribe: bool,
    /// The list changes asked for whatever the resources.
    announced: SubscriptionFilter,
    /// How many subscriptions each URI has: the server's, kept across its connections
    /// (`subscribed.rs`), so a new connection opens its stream with them.
    uris: super::subscribed::Subscribed,
    /// To the reading task: open the stream again with this filter, then say how it went.
    refilter: mpsc::Sender<(SubscriptionFilter, oneshot::Sender<Result<(), String>>)>,
}

/// The stream's filter: the list changes announced and the URIs subscribed to; `None` when
/// that is nothing (no stream is kept open then).
fn with_uris(
    announced: &SubscriptionFilter,
    uris: &BTreeMap<String, usize>,
) -> Option<SubscriptionFilter> {
    let mut filter = announced.clone();
    if !uris.is_empty() {
        filter.resource_subscriptions = Some(uris.keys().cloned().collect());
    }
    (filter != SubscriptionFilter::default()).then_some(filter)
}

impl Control {
    /// `resources/subscribe` or `resources/unsubscribe` (`method`) of `params["uri"]`, the
    /// 2026 way; the empty result a 2025 server gives.
    pub(super) async fn subscription(
        &self,
        server: &str,
        method: &str,
        params: &Value,
        timeout: std::time::Duration,
    ) -> Result<Value, Error> {
        let refused = |code: i32, message: String| -> Error {
            ErrorData::Upstream {
                server: server.to_owned(),
                code: code.into(),
                message,
                data: None,
            }
            .into()
        };
        if !self.subscribe {
            return Err(refused(
                tool_cli_protocol::code::METHOD_NOT_FOUND,
                format!("this server does not take {method} (it announces no resource updates)"),
            ));
        }
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            return Err(refused(
                tool_cli_protocol::code::INVALID_PARAMS,
                format!("{method} needs \"uri\", a string"),
            ));
        };
        // Held across the reopening, so two changes do not race each other's filters.
        let mut uris = self.uris.lock().await;
        if !count(&mut uris, uri, method == "resources/subscribe") {
            return Ok(json!({}));
        }
        let filter = with_uris(&self.announced, &uris).unwrap_or_default();
        let (done, reopened) = oneshot::channel();
        let outcome = match self.refilter.send((filter, done)).await {
            Ok(()) => match tokio::time::timeout(timeout, reopened).await {
                Ok(answered) => answered.unwrap_or_else(|_| Err("the connection ended".to_owned())),
                Err(_) => Err(format!(
                    "the server did not acknowledge the new stream within {} ms",
                    timeout.as_millis()
                )),
            },
            Err(_) => Err("the connection ended".to_owned()),
        };
        match outcome {
            Ok(()) => Ok(json!({})),
            Err(message) => {
                // Not held: counted back.
                count(&mut uris, uri, method != "resources/subscribe");
                Err(refused(
                    tool_cli_protocol::code::INTERNAL_ERROR,
                    format!("{method} as a subscriptions/listen stream failed: {message}"),
                ))
            }
        }
    }
}

/// The change categories to ask a server for: those its capabilities say it announces;
/// `None` when it announces none (then nothing is opened).
pub(super) fn filter_for(capabilities: &ServerCapabilities) -> Option<SubscriptionFilter> {
    let mut filter = SubscriptionFilter::builder();
    let mut any = false;
    if capabilities
        .tools
        .as_ref()
        .is_some_and(|tools| tools.list_changed == Some(true))
    {
        filter = filter.tools_list_changed();
        any = true;
    }
    if capabilities
        .prompts
        .as_ref()
        .is_some_and(|prompts| prompts.list_changed == Some(true))
    {
        filter = filter.prompts_list_changed();
        any = true;
    }
    if capabilities
        .resources
        .as_ref()
        .is_some_and(|resources| resources.list_changed == Some(true))
    {
        filter = filter.resources_list_changed();
        any = true;
    }
    any.then(|| filter.build())
}

/// What to do once a subscription has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AfterEnd {
    /// Open it again and re-read the tool list: notifications were dropped (we read too
    /// slowly) or the server closed the stream on a live connection.
    Reopen,
    /// Stop: the transport is gone (the supervisor reconnects and opens a new one) or we
    /// cancelled it.
    Stop,
}

/// The decision for a subscription that ended as `end`.
pub(super) fn after_end(end: Option<&SubscriptionEnd>) -> AfterEnd {
    match end {
        Some(SubscriptionEnd::Lagged { .. }) | Some(SubscriptionEnd::Graceful(_)) => {
            AfterEnd::Reopen
        }
        _ => AfterEnd::Stop,
    }
}

/// How many times one connection reopens its subscription; a server that keeps closing it
/// at once would otherwise be asked forever.
const MAX_REOPENS: usize = 8;

/// Where the notifications of one server's subscription go.
struct Listeners {
    server: String,
    tools_changed: Arc<Notify>,
    notices: broadcast::Sender<UpstreamNotice>,
}

impl Listeners {
    /// Hands one notification to where a 2025 server's would go.
    fn dispatch(&self, notification: ServerNotification) {
        // No receiver (no gateway stream open) is not an error.
        let notice = match notification {
            ServerNotification::ToolListChangedNotification(_) => {
                self.tools_changed.notify_one();
                return;
            }
            ServerNotification::ResourceListChangedNotification(_) => {
                UpstreamNotice::ResourcesChanged {
                    server: self.server.clone(),
                }
            }
            ServerNotification::PromptListChangedNotification(_) => {
                UpstreamNotice::PromptsChanged {
                    server: self.server.clone(),
                }
            }
            ServerNotification::ResourceUpdatedNotification(update) => {
                UpstreamNotice::ResourceUpdated {
                    server: self.server.clone(),
                    uri: update.params.uri,
                }
            }
            _ => return,
        };
        let _ = self.notices.send(notice);
    }
}

/// Opens `connection`'s subscription for what its server announces and hears it on a task of
/// its own; answers the [`Control`] of its resource subscriptions. A server that announces
/// nothing has no stream until a host subscribes to one of its resources.
pub(super) async fn start(connection: &super::Connection, tools_changed: Arc<Notify>) -> Control {
    let capabilities = connection
        .peer
        .peer_info()
        .map(|info| info.capabilities.clone())
        .unwrap_or_default();
    let announced = filter_for(&capabilities).unwrap_or_default();
    let subscribe = capabilities
        .resources
        .as_ref()
        .is_some_and(|resources| resources.subscribe == Some(true));
    let (refilter, requests) = mpsc::channel(1);
    let uris = connection.published.subscribed.clone();
    // The hosts' subscriptions from before a restart are in the first stream's filter.
    let wanted = with_uris(&announced, &*uris.lock().await);
    let control = Control {
        subscribe,
        announced,
        uris,
        refilter,
    };
    let opened = match &wanted {
        None => None,
        Some(filter) => open(&connection.peer, &connection.server, filter).await,
    };
    if opened.is_none() && !subscribe {
        return control;
    }
    tokio::spawn(hear(
        connection.peer.clone(),
        wanted.zip(opened),
        requests,
        Listeners {
            server: connection.server.clone(),
            tools_changed,
            notices: connection.published.notices.clone(),
        },
        connection.ended.clone(),
    ));
    control
}

/// Opens the subscription; `None` (logged) when the server refuses it.
async fn open(
    peer: &Peer<RoleClient>,
    server: &str,
    filter: &SubscriptionFilter,
) -> Option<Subscription> {
    match tokio::time::timeout(super::CONNECT_TIMEOUT, peer.listen(filter.clone())).await {
        Ok(Ok(subscription)) => Some(subscription),
        Ok(Err(error)) => {
            tracing::warn!(%server, %error, "the server refused subscriptions/listen; its changes are read at each connect");
            None
        }
        Err(_) => {
            tracing::warn!(%server, "no acknowledgment of subscriptions/listen; its changes are read at each connect");
            None
        }
    }
}

/// Reads the subscription until the connection ends, reopening it when [`after_end`] says so
/// or a [`Control`] asks with a new filter.
async fn hear(
    peer: Peer<RoleClient>,
    mut current: Option<(SubscriptionFilter, Subscription)>,
    mut requests: mpsc::Receiver<(SubscriptionFilter, oneshot::Sender<Result<(), String>>)>,
    listeners: Listeners,
    mut ended: watch::Receiver<bool>,
) {
    let mut reopens = 0;
    loop {
        let next = async {
            match current.as_mut() {
                Some((_, subscription)) => subscription.next().await,
                None => std::future::pending().await,
            }
        };
        let next = tokio::select! {
            next = next => next,
            request = requests.recv() => {
                let Some((filter, done)) = request else { return };
                let outcome = if filter == SubscriptionFilter::default() {
                    current = None;
                    Ok(())
                } else {
                    // Bounded, so a server that never acknowledges does not stop the old
                    // stream's notifications for long.
                    let listened =
                        tokio::time::timeout(super::CONNECT_TIMEOUT, peer.listen(filter.clone()));
                    match listened.await {
                        // The old stream is cancelled as it is dropped, after the new one is
                        // acknowledged: no gap.
                        Ok(Ok(subscription)) => {
                            current = Some((filter, subscription));
                            Ok(())
                        }
                        Ok(Err(error)) => Err(error.to_string()),
                        Err(_) => Err("no acknowledgment of subscriptions/listen".to_owned()),
                    }
                };
                let _ = done.send(outcome);
                continue;
            }
            () = async { let _ = ended.wait_for(|ended| *ended).await; } => return,
        };
        match next {
            Ok(Some(notification)) => {
                listeners.dispatch(notification);
                continue;
            }
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(server = %listeners.server, %error, "the subscriptions/listen stream failed");
            }
        }
        let Some((filter, subscription)) = current.take() else {
            continue;
        };
        if after_end(subscription.end()) == AfterEnd::Stop || reopens == MAX_REOPENS {
            return;
        }
        reopens += 1;
        let Some(reopened) = open(&peer, &listeners.server, &filter).await else {
            return;
        };
        current = Some((filter, reopened));
        // What changed while no subscription was open was not heard.
        listeners.tools_changed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn capabilities(value: serde_json::Value) -> ServerCapabilities {
        serde_json::from_value(value).expect("capabilities")
    }

    #[test]
    fn only_the_changes_a_server_announces_are_asked_for() {
        let filter = filter_for(&capabilities(json!({
            "tools": {"listChanged": true},
            "prompts": {},
            "resources": {"listChanged": true, "subscribe": true}
        })))
        .expect("a filter");
        assert_eq!(filter.tools_list_changed, Some(true));
        assert_eq!(filter.prompts_list_changed, None);
        assert_eq!(filter.resources_list_changed, Some(true));
        // The pool has no resource of its own to watch; hosts' subscriptions are not relayed.
        assert_eq!(filter.resource_subscriptions, None);
        assert_eq!(
            filter_for(&capabilities(
                json!({"tools": {}, "prompts": {"listChanged": false}})
            )),
            None
        );
    }

    #[test]
    fn uris_are_counted_so_one_unsubscribe_keeps_anothers_subscription() {
        let mut uris = BTreeMap::new();
        assert!(
            count(&mut uris, "a://x", true),
            "the first subscription changes the set"
        );
        assert!(!count(&mut uris, "a://x", true), "a second one does not");
        assert!(!count(&mut uris, "a://x", false), "one left");
        assert!(count(&mut uris, "a://x", false), "the last one goes");
        assert!(
            !count(&mut uris, "a://x", false),
            "an unknown URI changes nothing"
        );
        assert!(uris.is_empty());
        let announced = SubscriptionFilter::builder().tools_list_changed().build();
        assert_eq!(with_uris(&SubscriptionFilter::default(), &uris), None);
        count(&mut uris, "a://y", true);
        let filter = with_uris(&announced, &uris).expect("a filter");
        assert_eq!(filter.tools_list_changed, Some(true));
        assert_eq!(
            filter.resource_subscriptions,
            Some(vec!["a://y".to_owned()])
        );
    }

    #[test]
    fn a_subscription_is_reopened_only_when_the_connection_lives() {
        assert_eq!(
            after_end(Some(&SubscriptionEnd::Lagged { capacity: 64 })),
            AfterEnd::Reopen
        );
        let graceful = rmcp::model::SubscriptionsListenResult::complete(
            serde_json::from_value(json!(1)).expect("a request id"),
        );
        assert_eq!(
            after_end(Some(&SubscriptionEnd::Graceful(graceful))),
            AfterEnd::Reopen
        );
        assert_eq!(after_end(Some(&SubscriptionEnd::Abrupt)), AfterEnd::Stop);
        assert_eq!(after_end(Some(&SubscriptionEnd::Cancelled)), AfterEnd::Stop);
        assert_eq!(after_end(None), AfterEnd::Stop);
    }
}
