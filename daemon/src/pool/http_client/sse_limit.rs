//! A server's SSE stream, parsed into events, with a cap on the size of one event.
//!
//! The cap is the daemon's `--max-message-bytes`, as for stdio: an event over it ends the stream
//! with an error worded as rmcp words its own ("SSE event exceeded the maximum size of N bytes",
//! which `pool/http.rs` reads to answer `resultTooLarge`), before the event is held in memory
//! whole. The count follows what the SSE parser keeps of an event: every field line but comments,
//! plus the newline that joins two `data` lines; a blank line ends the event.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::{Stream, StreamExt as _};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use sse_stream::SseStream;

/// Why the byte stream under an SSE stream ended.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SseBodyError {
    /// Reading the body failed.
    #[error(transparent)]
    Source(Box<dyn std::error::Error + Send + Sync>),
    /// One event is larger than accepted.
    #[error("SSE event exceeded the maximum size of {max_size} bytes")]
    EventTooLarge { max_size: usize },
}

/// Counts the bytes of the event being received, line by line.
#[derive(Debug)]
struct EventSize {
    max_size: usize,
    /// Bytes of the event's complete lines so far (comments excluded).
    kept: usize,
    /// Bytes of the line being received.
    line: usize,
    line_is_comment: bool,
    after_carriage_return: bool,
}

impl EventSize {
    fn new(max_size: usize) -> EventSize {
        EventSize {
            max_size,
            kept: 0,
            line: 0,
            line_is_comment: false,
            after_carriage_return: false,
        }
    }

    /// Takes in the next bytes; `Some(n)` when the event goes over the cap at byte `n`.
    fn take(&mut self, chunk: &[u8]) -> Option<usize> {
        for (at, &byte) in chunk.iter().enumerate() {
            // "\r\n" is one line end.
            if std::mem::take(&mut self.after_carriage_return) && byte == b'\n' {
                continue;
            }
            match byte {
                b'\r' | b'\n' => {
                    self.after_carriage_return = byte == b'\r';
                    self.end_line();
                }
                _ => {
                    if self.line == 0 {
                        self.line_is_comment = byte == b':';
                    }
                    self.line += 1;
                }
            }
            if self.kept.saturating_add(self.line) > self.max_size {
                return Some(at);
            }
        }
        None
    }

    fn end_line(&mut self) {
        match (self.line, self.line_is_comment) {
            // A blank line ends the event.
            (0, _) => self.kept = 0,
            (_, true) => {}
            // The parser joins data lines with a newline.
            (line, false) => self.kept = self.kept.saturating_add(line + 1),
        }
        self.line = 0;
        self.line_is_comment = false;
    }
}

/// A byte stream that fails once an event is over the cap, and then ends. The bytes before the
/// one that went over are passed on first, so the events complete before it are not lost with
/// the chunk.
struct Capped<S> {
    inner: S,
    size: EventSize,
    /// The error to give on the next poll, after the bytes before it.
    failing: Option<SseBodyError>,
    ended: bool,
}

impl<S, E> Stream for Capped<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::error::Error + Send + Sync + 'static,
{
    type Item = Result<Bytes, SseBodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(error) = self.failing.take() {
            self.ended = true;
            return Poll::Ready(Some(Err(error)));
        }
        if self.ended {
            return Poll::Ready(None);
        }
        let item = match self.inner.poll_next_unpin(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(item) => item,
        };
        Poll::Ready(match item {
            None => None,
            Some(Ok(chunk)) => match self.size.take(&chunk) {
                None => Some(Ok(chunk)),
                Some(over_at) => {
                    let error = SseBodyError::EventTooLarge {
                        max_size: self.size.max_size,
                    };
                    match over_at {
                        0 => {
                            self.ended = true;
                            Some(Err(error))
                        }
                        _ => {
                            self.failing = Some(error);
                            Some(Ok(chunk.slice(..over_at)))
                        }
                    }
                }
            },
            Some(Err(error)) => {
                self.ended = true;
                Some(Err(SseBodyError::Source(Box::new(error))))
            }
        })
    }
}

/// The events of an SSE body, none larger than `max_event_size` bytes.
pub fn bounded_sse_stream<S, E>(bytes: S, max_event_size: usize) -> BoxedSseResponse
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let capped = Capped {
        inner: bytes.boxed(),
        size: EventSize::new(max_event_size),
        failing: None,
        ended: false,
    };
    SseStream::from_bytes_stream(capped).boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn events(chunks: &[&'static str], max: usize) -> Vec<Result<String, String>> {
        let bytes = futures_util::stream::iter(
            chunks
                .iter()
                .map(|chunk| Ok::<_, std::io::Error>(Bytes::from_static(chunk.as_bytes())))
                .collect::<Vec<_>>(),
        );
        let stream = bounded_sse_stream(bytes, max);
        stream
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .map(|item| {
                item.map(|event| event.data.unwrap_or_default())
                    .map_err(|error| error.to_string())
            })
            .collect()
    }

    #[tokio::test]
    async fn events_within_the_cap_pass_whole_across_chunks() {
        let got = events(&["data: {\"a\"", ":1}\n", "\ndata: x\r\n\r\n"], 16).await;
        assert_eq!(got, vec![Ok("{\"a\":1}".to_owned()), Ok("x".to_owned())]);
    }

    #[tokio::test]
    async fn an_event_over_the_cap_ends_the_stream_with_rmcps_wording() {
        let got = events(
            &["data: small\n\n", "data: this event is too large\n\n"],
            16,
        )
        .await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], Ok("small".to_owned()));
        let error = got[1].as_ref().unwrap_err();
        assert!(
            error.contains("SSE event exceeded the maximum size of 16 bytes"),
            "{error}"
        );
        assert_eq!(
            crate::pool::http::size_limit_in(error),
            Some(16),
            "pool/http.rs must read the limit from the error"
        );
    }

    #[tokio::test]
    async fn events_before_the_oversized_one_in_the_same_chunk_are_kept() {
        let got = events(
            &["data: a\n\ndata: b\n\ndata: this one is too large\n\n"],
            16,
        )
        .await;
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[..2], [Ok("a".to_owned()), Ok("b".to_owned())]);
        assert!(got[2].is_err(), "{got:?}");
    }

    #[tokio::test]
    async fn the_cap_counts_an_event_not_the_stream() {
        // Three 11-byte events under a 12-byte cap: each fits, the stream is 39 bytes.
        let got = events(&["data: one\n\ndata: two\n\ndata: six\n\n"], 12).await;
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got.iter().all(Result::is_ok), "{got:?}");
    }

    #[tokio::test]
    async fn comments_do_not_count_towards_the_cap() {
        // Each comment line is within the cap; together they are far over it.
        let got = events(&[": ping\n: ping\n: ping\n: ping\n", "data: ok\n\n"], 10).await;
        assert_eq!(got, vec![Ok("ok".to_owned())]);
    }

    #[tokio::test]
    async fn data_lines_of_one_event_add_up() {
        // "data: abc" twice is two 9-byte lines plus their joins: 20 bytes, over a 15-byte cap.
        let got = events(&["data: abc\ndata: abc\n\n"], 15).await;
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].is_err(), "{got:?}");
    }
}
