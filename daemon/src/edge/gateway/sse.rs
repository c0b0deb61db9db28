//! The body of every SSE answer the gateway sends: a call's stream (`stream.rs`) and a session's
//! standalone stream (`notices.rs`). Each is a task that writes frames into a channel, and the
//! body hands them to hyper as they come; it ends when the task has written its last frame and
//! gone. Dropped (the host went away), the body aborts the task, so nothing runs on for no one:
//! a call's task cancels its call, a standalone stream's follower stops following.

use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Bytes, Frame};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// One SSE event carrying one JSON-RPC message, with its event id when it has one.
pub(super) fn event(id: Option<&str>, message: &str) -> Bytes {
    match id {
        Some(id) => Bytes::from(format!("id: {id}\nevent: message\ndata: {message}\n\n")),
        None => Bytes::from(format!("event: message\ndata: {message}\n\n")),
    }
}

/// An SSE response body: the frames `writer` sends, until it has sent its last.
pub(super) struct SseBody {
    frames: mpsc::Receiver<Bytes>,
    writer: JoinHandle<()>,
}

impl SseBody {
    /// The body of the frames `writer` sends on the channel `frames` receives from.
    pub(super) fn new(frames: mpsc::Receiver<Bytes>, writer: JoinHandle<()>) -> SseBody {
        SseBody { frames, writer }
    }
}

impl Drop for SseBody {
    fn drop(&mut self) {
        self.writer.abort();
    }
}

impl hyper::body::Body for SseBody {
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

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;

    #[test]
    fn events_carry_their_id_when_they_have_one() {
        assert_eq!(
            event(Some("n-3"), "{}"),
            Bytes::from_static(b"id: n-3\nevent: message\ndata: {}\n\n")
        );
        assert_eq!(
            event(None, "{}"),
            Bytes::from_static(b"event: message\ndata: {}\n\n")
        );
    }

    #[tokio::test]
    async fn the_body_ends_with_its_writer_and_aborts_it_when_dropped() {
        let (sender, frames) = mpsc::channel(4);
        let writer = tokio::spawn(async move {
            for text in ["a", "b"] {
                let _ = sender.send(Bytes::from(text)).await;
            }
        });
        let body = SseBody::new(frames, writer);
        let collected = body.collect().await.expect("infallible").to_bytes();
        assert_eq!(collected, Bytes::from_static(b"ab"));

        let (sender, frames) = mpsc::channel::<Bytes>(4);
        let (running, mut still_running) = mpsc::channel::<()>(1);
        let writer = tokio::spawn(async move {
            let _running = running;
            let _sender = sender;
            std::future::pending::<()>().await;
        });
        drop(SseBody::new(frames, writer));
        assert_eq!(still_running.recv().await, None, "the writer was aborted");
    }
}
