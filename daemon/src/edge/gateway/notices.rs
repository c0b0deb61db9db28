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

use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Bytes, Frame};
use serde_json::json;
use tokio::sync::{mpsc, watch};

use super::sessions::Session;
use super::{Endpoint, Mode};
use crate::pipeline::CallContext;

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
    let mode = match session.upgrade() {
        Some(session) => session.mode,
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
                    if now != *previous {
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
            _ = keep_alive.tick() => {
                if session.strong_count() == 0 || send(&frames, Bytes::from_static(b": keep-alive\n\n")).is_err() {
                    return;
                }
            }
            // A dropped sender (no shutdown will come) disables this branch.
            Ok(_) = shutting_down.wait_for(|down| *down) => return,
        }
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
