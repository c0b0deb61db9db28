//! The hosts' resource subscriptions to one server, kept across its connections: a server that
//! restarts (killed, crashed, `restartServer`, a config change) has forgotten them, and the
//! hosts, still subscribed at the gateway, would wait for updates that never come. So each URI
//! is counted per server in [`Subscribed`] (kept in the server's `Published`, which outlives its
//! connections), and each new connection subscribes to every URI again: a 2025 server with one
//! `resources/subscribe` per URI ([`replay`]), a 2026-07-28 server by opening its
//! `subscriptions/listen` stream with the URIs in the filter (`listen.rs`).
//!
//! The counting rule is the same in both eras ([`count`]): the server is told on
//! a URI's first subscription and its last unsubscription only, so one host's unsubscribe
//! leaves another host's subscription in place, and a refused request is counted back.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::model::{ClientRequest, CustomRequest};
use serde_json::{Value, json};

use super::Connection;
use crate::error::Error;
use crate::provider::CallTicket;

/// Counts one subscription (`subscribe`) or unsubscription of `uri`; whether the set of URIs
/// changed (its first subscription or its last unsubscription).
pub(super) fn count(uris: &mut BTreeMap<String, usize>, uri: &str, subscribe: bool) -> bool {
    if subscribe {
        let held = uris.entry(uri.to_owned()).or_insert(0);
        *held += 1;
        return *held == 1;
    }
    match uris.get_mut(uri) {
        Some(held) if *held > 1 => {
            *held -= 1;
            false
        }
        Some(_) => {
            uris.remove(uri);
            true
        }
        None => false,
    }
}

/// The subscribed URIs of one server and how many subscriptions each has.
#[derive(Clone, Default)]
pub(crate) struct Subscribed(Arc<tokio::sync::Mutex<BTreeMap<String, usize>>>);

impl Subscribed {
    /// The counts, held while a subscription changes or is sent again, so two changes do not
    /// race each other (or a replay).
    pub(super) async fn lock(&self) -> tokio::sync::MutexGuard<'_, BTreeMap<String, usize>> {
        self.0.lock().await
    }
}

impl Connection {
    /// `resources/subscribe` or `resources/unsubscribe` of a 2025 server, counted: sent on a
    /// URI's first subscription and last unsubscription; the empty result otherwise.
    pub(super) async fn counted_subscription(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        ticket: &CallTicket,
    ) -> Result<Value, Error> {
        let Some(uri) = params.get("uri").and_then(Value::as_str).map(str::to_owned) else {
            // Nothing to count: the server says what is wrong with it.
            return self.send_unread(method, params, timeout, ticket).await;
        };
        let subscribe = method == "resources/subscribe";
        let mut uris = self.published.subscribed.lock().await;
        if !count(&mut uris, &uri, subscribe) {
            return Ok(json!({}));
        }
        let sent = self.send_unread(method, params, timeout, ticket).await;
        if sent.is_err() {
            // Not held by the server: counted back.
            count(&mut uris, &uri, !subscribe);
        }
        sent
    }

    /// Sends a request the pool does not read (`requests.rs`'s `pass_request`).
    pub(super) async fn send_unread(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        ticket: &CallTicket,
    ) -> Result<Value, Error> {
        let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
        let _caller_in_flight = self.callers.enter(ticket.caller.clone());
        self.request(request, method, timeout, ticket).await
    }
}

/// Subscribes a new 2025 connection to every URI the hosts hold, on a task of its own (the
/// connection serves meanwhile; a subscription arriving meanwhile waits for the replay). A URI
/// the server refuses now stays counted: the hosts still want it, and the next connection
/// tries again.
pub(super) fn replay(connection: &Arc<Connection>) {
    let connection: Weak<Connection> = Arc::downgrade(connection);
    tokio::spawn(async move {
        let Some(connection) = connection.upgrade() else {
            return;
        };
        let subscribed = connection.published.subscribed.clone();
        let uris = subscribed.lock().await;
        for uri in uris.keys() {
            let sent = connection
                .send_unread(
                    "resources/subscribe",
                    json!({"uri": uri}),
                    super::CONNECT_TIMEOUT,
                    &CallTicket::default(),
                )
                .await;
            match sent {
                Ok(_) => {
                    tracing::info!(server = %connection.server, %uri, "resource subscription sent again after a reconnect")
                }
                Err(error) => {
                    tracing::warn!(server = %connection.server, %uri, %error, "the server refused a resource subscription sent again after a reconnect")
                }
            }
        }
    });
}
