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

use std::sync::Arc;

use rmcp::model::{ServerCapabilities, ServerNotification, SubscriptionFilter};
use rmcp::service::{Subscription, SubscriptionEnd};
use rmcp::{Peer, RoleClient};
use tokio::sync::{Notify, broadcast, watch};

use crate::provider::UpstreamNotice;

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
/// its own; nothing when the server announces nothing or refuses to listen.
pub(super) async fn start(connection: &super::Connection, tools_changed: Arc<Notify>) {
    let Some(filter) = connection
        .peer
        .peer_info()
        .and_then(|info| filter_for(&info.capabilities))
    else {
        return;
    };
    let Some(subscription) = open(&connection.peer, &connection.server, &filter).await else {
        return;
    };
    tokio::spawn(hear(
        connection.peer.clone(),
        filter,
        subscription,
        Listeners {
            server: connection.server.clone(),
            tools_changed,
            notices: connection.published.notices.clone(),
        },
        connection.ended.clone(),
    ));
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

/// Reads the subscription until the connection ends, reopening it when [`after_end`] says so.
async fn hear(
    peer: Peer<RoleClient>,
    filter: SubscriptionFilter,
    mut subscription: Subscription,
    listeners: Listeners,
    mut ended: watch::Receiver<bool>,
) {
    let mut reopens = 0;
    loop {
        let next = tokio::select! {
            next = subscription.next() => next,
            _ = ended.wait_for(|ended| *ended) => return,
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
        if after_end(subscription.end()) == AfterEnd::Stop || reopens == MAX_REOPENS {
            return;
        }
        reopens += 1;
        let Some(reopened) = open(&peer, &listeners.server, &filter).await else {
            return;
        };
        subscription = reopened;
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
