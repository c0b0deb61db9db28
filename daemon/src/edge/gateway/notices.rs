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
//! `notifications/tasks/status` for a task this session created (`tasks.rs`), and for a run
//! of a 2026 server's tool it started when the run ends (`session_runs.rs`).
//!
//! Every message carries an event id (`replay.rs`): a host that reconnects with
//! `Last-Event-ID` takes the session's slot over (the stream it replaces ends), gets the
//! messages it missed, and hears of a tool list that changed while no stream was open.

use std::sync::{Arc, Weak};
use std::time::Duration;

use hyper::body::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, watch};

use super::sessions::Session;
use super::sse::SseBody;
use super::{Endpoint, Mode};
use crate::pipeline::CallContext;
use crate::provider::UpstreamNotice;

/// How often an idle stream gets a comment line.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Frames waiting for a slow host; past this, a notification is dropped (the host re-lists on
/// the next one anyway: list_changed carries no data).
const QUEUE: usize = 16;

/// Opens the standalone stream of `session` (whose slot the caller took): the frames its
/// follower task writes, in the gateway's SSE body (`sse.rs`), which aborts the follower when
/// the host drops it. The follower follows the catalogs with `context`'s grant until the host
/// goes, the session ends or `shutting_down` turns.
///
/// `generation` is the slot's owner (`NoticeLog::open`); `resume_after`, a `Last-Event-ID` the
/// caller checked: the events after it are sent first, and a pass-through listing that changed
/// since the last stream stood for it is told at once.
pub(super) fn open(
    endpoint: Arc<Endpoint>,
    session: &Arc<Session>,
    context: CallContext,
    shutting_down: watch::Receiver<bool>,
    generation: u64,
    resume_after: Option<String>,
) -> SseBody {
    let (sender, frames) = mpsc::channel(QUEUE);
    // Made here, not in the task: an unpolled task's arguments are dropped with it too.
    let slot = SlotRelease(Arc::downgrade(session), generation);
    let changes = endpoint.services.catalog_changes();
    let follower = tokio::spawn(follow(
        endpoint,
        Follower {
            session: Arc::downgrade(session),
            generation,
            frames: sender,
        },
        context,
        changes,
        shutting_down,
        (slot, resume_after),
    ));
    SseBody::new(frames, follower)
}

/// The `Last-Event-ID` of a reconnect to `session`'s stream (`None`: a new stream), or the 400
/// saying why the stream cannot resume from it (not one of its ids, or what came after it is
/// no longer held).
pub(super) fn resumption(
    headers: &hyper::HeaderMap,
    session: &Session,
) -> Result<Option<String>, Box<crate::edge::http_body::HttpResponse>> {
    let Some(last_event_id) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let checked = match last_event_id.to_str() {
        Ok(text) => session
            .notices
            .after(text)
            .map(|_| text.to_owned())
            .map_err(|refusal| refusal.to_string()),
        Err(_) => Err("Last-Event-ID is not text; open the stream without it".to_owned()),
    };
    checked.map(Some).map_err(|why| {
        Box::new(super::error_answer(
            hyper::StatusCode::BAD_REQUEST,
            None,
            super::messages::RpcError::invalid_request(why),
        ))
    })
}

/// One SSE event carrying `message`, with its event id.
fn event(id: &str, message: &str) -> Bytes {
    super::sse::event(Some(id), message)
}

/// What a stream's follower writes to, and as which owner of the session's slot.
struct Follower {
    session: Weak<Session>,
    generation: u64,
    frames: mpsc::Sender<Bytes>,
}

impl Follower {
    /// Records `message` in the session's replay buffer (with the `listing` a `list_changed`
    /// tells of) and sends it with its event id; `Err` when the stream should end (the host is
    /// gone, the session ended, or a reconnect took the slot over and will send it).
    fn emit(&self, message: &Value, listing: Option<Arc<str>>) -> Result<(), ()> {
        let session = self.session.upgrade().ok_or(())?;
        let text: Arc<str> = Arc::from(message.to_string());
        let id = session
            .notices
            .record(self.generation, Arc::clone(&text), listing)
            .ok_or(())?;
        send(&self.frames, event(&id, &text))
    }
}

/// A `notifications/tools/list_changed`.
fn list_changed() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
}

/// Writes the stream until it should end; the session's slot is freed when it does (`slot`).
async fn follow(
    endpoint: Arc<Endpoint>,
    follower: Follower,
    context: CallContext,
    mut changes: watch::Receiver<u64>,
    mut shutting_down: watch::Receiver<bool>,
    (_slot, resume_after): (SlotRelease, Option<String>),
) {
    let mut notices = endpoint.services.upstream_notices();
    let mut runs_ended = endpoint.stateless.runs.endings();
    let session = follower.session.clone();
    let (mode, mut ended, mut owner, last_listing) = match session.upgrade() {
        Some(session) => (
            session.mode,
            session.ended(),
            session.notices.owner(),
            session.notices.last_listing(),
        ),
        None => return,
    };
    let generation = follower.generation;
    let frames = &follower.frames;
    let listing =
        || super::pass_through::list_encoded(&endpoint.services, &endpoint.lists, &context);
    let mut listed = None;
    let mut missed_a_change = false;
    if mode == Mode::PassThrough {
        let now = listing();
        // A reconnect is told of a change it missed while no stream was open.
        missed_a_change = resume_after.is_some() && last_listing.is_some_and(|last| last != now);
        // A missed change notes the listing with its notice (below), so that a reconnect
        // coming between the two cannot see the one without the other.
        if !missed_a_change && let Some(session) = session.upgrade() {
            session.notices.note_listing(Arc::clone(&now));
        }
        listed = Some(now);
    }
    if let Some(last_event_id) = &resume_after {
        // Checked by the caller; it fails here only if a burst evicted it meanwhile.
        let Some(replayed) = session
            .upgrade()
            .and_then(|session| session.notices.after(last_event_id).ok())
        else {
            return;
        };
        // Waiting for room: the replay may be longer than the queue, and none of it may drop.
        for (id, message) in replayed {
            if frames.send(event(&id, &message)).await.is_err() {
                return;
            }
        }
    }
    if missed_a_change && follower.emit(&list_changed(), listed.clone()).is_err() {
        return;
    }
    tracing::info!(
        ?mode,
        resumed = resume_after.is_some(),
        "gateway standalone stream opened"
    );
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
                        *previous = Arc::clone(&now);
                        if follower.emit(&list_changed(), Some(now)).is_err() {
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
                    && follower.emit(&message, None).is_err()
                {
                    return;
                }
            }
            // A run this session started ended (`session_runs.rs`): told as a 2025 task status.
            Ok(ended) = runs_ended.recv() => {
                let mine = ended.token_id == context.grant.token_id
                    && ended.session == context.mcp_session;
                let task = super::session_runs::task(&ended.task_id, &ended.view);
                let told = json!({"jsonrpc": "2.0", "method": "notifications/tasks/status",
                    "params": task});
                if mine && follower.emit(&told, None).is_err() {
                    return;
                }
            }
            _ = keep_alive.tick() => {
                if session.strong_count() == 0 || send(frames, Bytes::from_static(b": keep-alive\n\n")).is_err() {
                    return;
                }
            }
            // A reconnect with Last-Event-ID took the session's slot over: this stream's
            // connection is most likely dead; the new one carries on.
            _ = owner.wait_for(|owner| *owner != generation) => return,
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

/// Frees the session's stream slot (if this stream, the generation, still holds it) when the
/// follower ends, however it ends.
struct SlotRelease(Weak<Session>, u64);

impl Drop for SlotRelease {
    fn drop(&mut self) {
        if let Some(session) = self.0.upgrade() {
            session.notices.close(self.1);
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
        let id = table.open(
            &context(None).grant,
            Mode::PassThrough,
            HostCapabilities::default(),
        );
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
