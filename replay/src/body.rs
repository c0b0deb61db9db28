//! A response body fed by a channel, for answers that stream (an MCP event stream that waits
//! for the client, an LLM reply passed on as it arrives); it ends when the sender is dropped.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame};
use tokio::sync::mpsc;

/// The body; create it with [`channel`].
pub(crate) struct ChannelBody {
    receiver: mpsc::UnboundedReceiver<Bytes>,
}

/// A sender and the body it feeds.
pub(crate) fn channel() -> (mpsc::UnboundedSender<Bytes>, ChannelBody) {
    let (sender, receiver) = mpsc::unbounded_channel();
    (sender, ChannelBody { receiver })
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.receiver
            .poll_recv(cx)
            .map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }
}
