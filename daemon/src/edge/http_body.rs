//! The body of every response the edge writes: a whole answer already in memory (every
//! JSON-RPC answer, every refusal), or a stream (the MCP gateway's server-sent events).
//!
//! A whole answer is kept as the one `Bytes` it was encoded into and handed to hyper as a single
//! frame with its exact length, so the answer on the hot path is neither copied nor boxed; only
//! a stream is boxed, as its type is the gateway's.

use std::pin::Pin;
use std::task::{Context, Poll};

use http_body_util::BodyExt as _;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::{Body, Bytes, Frame, SizeHint};

/// What a streamed body may fail with.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A response of the edge.
pub(crate) type HttpResponse = hyper::Response<HttpBody>;

/// The body of a response of the edge.
#[derive(Debug)]
pub(crate) struct HttpBody(Kind);

#[derive(Debug)]
enum Kind {
    /// All of it, sent as one frame; `None` once sent (or when there is nothing to send).
    Whole(Option<Bytes>),
    /// Frames as they come.
    Stream(UnsyncBoxBody<Bytes, BoxError>),
}

impl HttpBody {
    /// No body at all.
    pub(crate) fn empty() -> HttpBody {
        HttpBody(Kind::Whole(None))
    }

    /// A body streamed from `body` (server-sent events).
    pub(crate) fn new<B>(body: B) -> HttpBody
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        HttpBody(Kind::Stream(body.map_err(Into::into).boxed_unsync()))
    }
}

impl From<Bytes> for HttpBody {
    fn from(bytes: Bytes) -> HttpBody {
        if bytes.is_empty() {
            return HttpBody::empty();
        }
        HttpBody(Kind::Whole(Some(bytes)))
    }
}

impl From<String> for HttpBody {
    fn from(text: String) -> HttpBody {
        HttpBody::from(Bytes::from(text))
    }
}

impl From<Vec<u8>> for HttpBody {
    fn from(bytes: Vec<u8>) -> HttpBody {
        HttpBody::from(Bytes::from(bytes))
    }
}

impl From<&'static str> for HttpBody {
    fn from(text: &'static str) -> HttpBody {
        HttpBody::from(Bytes::from_static(text.as_bytes()))
    }
}

impl Body for HttpBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match &mut self.0 {
            Kind::Whole(bytes) => Poll::Ready(bytes.take().map(|bytes| Ok(Frame::data(bytes)))),
            Kind::Stream(body) => Pin::new(body).poll_frame(context),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.0 {
            Kind::Whole(bytes) => bytes.is_none(),
            Kind::Stream(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Kind::Whole(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            Kind::Stream(body) => body.size_hint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_whole_body_is_one_frame_of_its_exact_length_and_a_stream_is_passed_through() {
        let body = HttpBody::from(r#"{"id":1}"#.to_owned());
        assert_eq!(body.size_hint().exact(), Some(8));
        assert!(!body.is_end_stream());
        let mut body = std::pin::pin!(body);
        let frame = body.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), r#"{"id":1}"#);
        assert!(body.is_end_stream());
        assert!(body.frame().await.is_none());

        let empty = HttpBody::from(String::new());
        assert!(empty.is_end_stream());
        assert_eq!(empty.size_hint().exact(), Some(0));

        let chunks = futures_util::stream::iter([
            Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from_static(b"a"))),
            Ok(Frame::data(Bytes::from_static(b"b"))),
        ]);
        let streamed = HttpBody::new(http_body_util::StreamBody::new(chunks));
        let collected = streamed.collect().await.unwrap().to_bytes();
        assert_eq!(collected, "ab");
    }
}
