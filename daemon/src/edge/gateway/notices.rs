//! The standalone stream (`GET /mcp`, MCP 2025-11-25 Streamable HTTP): what the gateway tells a
//! host between its requests. One per session (a second is refused with 409, as the official
//! SDKs' servers do), held open until the host drops it, the session ends or the daemon starts
//! shutting down, with a comment line every [`KEEP_ALIVE`] so a host that went away is noticed.
//!
//! It carries `notifications/tools/list_changed` when what this session's `tools/list` would
//! answer changed: the listing is rebuilt (from the cache while the catalogs are unchanged) on
//! every move of the provider's change counter and compared with the last one the stream
//! stood for, so a scoped token hears only of changes in its scope and a server's status flap
//! that leaves the listing alone says nothing. A progressive session's listing is the six
//! meta-tools, which never change, so it is never told.
//!
//! It also passes on what the servers in the token's scope say
//! (`crate::provider::UpstreamNotice`): `notifications/resources/list_changed` and
//! `notifications/prompts/list_changed` as they come (those listings are asked of the servers
//! when the host lists, so there is nothing held to compare), and
//! `notifications/resources/updated` for a URI this session subscribed to at that server, and
//! `notifications/tasks/status` for a task this session created (`tasks.rs`).

use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Bytes, Frame};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, watch};

use super::sessions::Session;
use super::{Endpoint, Mode};
use crate::pipeline::CallContext;
use crate::provider::UpstreamNotice;

/// How often an idle stream gets a comment line.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Frames waiting for a slow host; past this, a notification is dropped (the host re-lists on
/// the next one anyway: list_changed carries no data).
const QUEUE: usize = 16;

/// The body of a standalone stream: frames written by its follower task, which it aborts when
/// the host drops it.
pub(super) struct NoticeStream {
    frames: mpsc::Receiver<Bytes>,
    follower: tokio::task::JoinHandle<()>,
}

impl NoticeStream {
    /// Opens the stream of `session` (whose slot the caller took), following the catalogs
    /// with `context`'s grant until the host goes, the session ends or `shutting_down` turns.
    pub(super) fn open(
        endpoint: Arc<Endpoint>,
        session: &Arc<Session>,
        context: CallContext,
        shutting_down: watch::Receiver<bool>,
    ) -> NoticeStream {
        let (sender, frames) = mpsc::channel(QUEUE);
        // Made here, not in the task: an unpolled task's arguments are dropped with it too.
        let slot = SlotRelease(Arc::downgrade(session));
        let changes = endpoint.services.catalog_changes();
        let follower = tokio::spawn(follow(
            endpoint,
            Arc::downgrade(session),
            context,
            sender,
            changes,
            shutting_down,
            slot,
        ));
        NoticeStream { frames, follower }
    }
}

impl Drop for NoticeStream {
    fn drop(&mut self) {
        self.follower.abort();
    }
}

impl hyper::body::Body for NoticeStream {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.frames
            .poll_recv(cx)
            .map(|frame| frame.map(|bytes| Ok(Frame::data(bytes))))
    }
}

/// One SSE event carrying `message`.
fn event(message: &str) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

/// Writes the stream until it should end; the session's slot is freed when it does (`_slot`).
async fn follow(
    endpoint: Arc<Endpoint>,
    session: Weak<Session>,
    context: CallContext,
    frames: mpsc::Sender<Bytes>,
    mut changes: watch::Receiver<u64>,
    mut shutting_down: watch::Receiver<bool>,
    _slot: SlotRelease,
) {
    let mut notices = endpoint.services.upstream_notices();
    let (mode, mut ended) = match session.upgrade() {
        Some(session) => (session.mode, session.ended()),
        None => return,
    };
    let listing =
        || super::pass_through::list_encoded(&endpoint.services, &endpoint.lists, &context);
    let mut listed = (mode == Mode::PassThrough).then(listing);
    tracing::info!(?mode, "gateway standalone stream opened");
    let mut keep_alive =
        tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
    loop {
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
                if session.strong_count() == 0 {
                    return;
                }
                if let Some(previous) = listed.as_mut() {
                    let now = listing();
                    // The same cached answer when the catalogs did not move: no byte compare.
                    if !Arc::ptr_eq(&now, previous) && now != *previous {
                        *previous = now;
                        let notice = json!({
                            "jsonrpc": "2.0",
                            "method": "notifications/tools/list_changed",
                        });
                        if send(&frames, event(&notice.to_string())).is_err() {
                            return;
                        }
                    }
                }
            }
            notice = notices.recv() => {
                let notice = match notice {
                    Ok(notice) => notice,
                    // Skipped some: the host re-lists or re-reads on the next one it gets.
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    // No server will say anything more (a provider without notices).
                    Err(broadcast::error::RecvError::Closed) => {
                        notices = broadcast::channel(1).1;
                        continue;
                    }
                };
                let Some(session) = session.upgrade() else {
                    return;
                };
                let message = match &notice {
                    UpstreamNotice::TaskStatus { server, task } => {
                        super::tasks::status_notice(&endpoint.services, server, task, &context)
                    }
                    _ => passed_on(&notice, &session, &context),
                };
                if let Some(message) = message
                    && send(&frames, event(&message.to_string())).is_err()
                {
                    return;
                }
            }
            _ = keep_alive.tick() => {
                if session.strong_count() == 0 || send(&frames, Bytes::from_static(b": keep-alive\n\n")).is_err() {
                    return;
                }
            }
            // A dropped sender (no shutdown will come) disables this branch.
            Ok(_) = shutting_down.wait_for(|down| *down) => return,
            // The host deleted its session, or it was evicted; the stream ends with it.
            _ = ended.wait_for(|ended| *ended) => return,
        }
    }
}

/// The notification a server's `notice` becomes for `session`, if its host may hear of it: a
/// server in the token's scope, and for an update, a URI the session subscribed to there.
fn passed_on(notice: &UpstreamNotice, session: &Session, context: &CallContext) -> Option<Value> {
    if !context.grant.scope.permits_server(notice.server()) {
        return None;
    }
    match notice {
        UpstreamNotice::ResourcesChanged { .. } => Some(
            json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}),
        ),
        UpstreamNotice::PromptsChanged { .. } => Some(
            json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}),
        ),
        UpstreamNotice::ResourceUpdated { server, uri } => session
            .is_subscribed(uri, server)
            .then(|| json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})),
        // Told only to the session that owns the task (`tasks.rs`).
        UpstreamNotice::TaskStatus { .. } => None,
    }
}

/// Queues a frame; `Err` when the host is gone. A full queue drops the frame.
fn send(frames: &mpsc::Sender<Bytes>, frame: Bytes) -> Result<(), ()> {
    match frames.try_send(frame) {
        Ok(()) | Err(mpsc::error::TrySendError::Full(_)) => Ok(()),
        Err(mpsc::error::TrySendError::Closed(_)) => Err(()),
    }
}

/// Frees the session's stream slot when the follower ends, however it ends.
struct SlotRelease(Weak<Session>);

impl Drop for SlotRelease {
    fn drop(&mut self) {
        if let Some(session) = self.0.upgrade() {
            session.close_notice_stream();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Grant;
    use crate::edge::gateway::sessions::SessionTable;
    use crate::edge::gateway::stream::HostCapabilities;
    use crate::policy::Scope;

    fn context(servers: Option<Vec<String>>) -> CallContext {
        CallContext::new(Grant {
            token_id: "t".to_owned(),
            is_owner: servers.is_none(),
            scope: Arc::new(Scope {
                servers,
                ..Scope::unrestricted()
            }),
        })
    }

    #[test]
    fn a_notice_reaches_its_scope_and_an_update_its_subscribers() {
        let table = SessionTable::default();
        let id = table.open("t", Mode::PassThrough, HostCapabilities::default());
        let session = table.get(&id, "t").expect("open");
        let owner = context(None);
        let scoped = context(Some(vec!["alpha".to_owned()]));
        let changed = |server: &str| UpstreamNotice::ResourcesChanged {
            server: server.to_owned(),
        };
        let method = |notice: Option<Value>| notice.map(|notice| notice["method"].clone());
        assert_eq!(
            method(passed_on(&changed("beta"), &session, &owner)),
            Some(json!("notifications/resources/list_changed"))
        );
        assert_eq!(passed_on(&changed("beta"), &session, &scoped), None);
        let prompts = UpstreamNotice::PromptsChanged {
            server: "alpha".to_owned(),
        };
        assert_eq!(
            method(passed_on(&prompts, &session, &scoped)),
            Some(json!("notifications/prompts/list_changed"))
        );
        let updated = |server: &str| UpstreamNotice::ResourceUpdated {
            server: server.to_owned(),
            uri: "demo://a".to_owned(),
        };
        // Not subscribed: nothing; subscribed at alpha: alpha's update only; unsubscribed: nothing.
        assert_eq!(passed_on(&updated("alpha"), &session, &owner), None);
        session.note_subscription("demo://a", "alpha", true);
        let update = passed_on(&updated("alpha"), &session, &owner).expect("subscribed");
        assert_eq!(update["params"]["uri"], "demo://a");
        assert_eq!(passed_on(&updated("beta"), &session, &owner), None);
        session.note_subscription("demo://a", "alpha", false);
        assert_eq!(passed_on(&updated("alpha"), &session, &owner), None);
    }
}
