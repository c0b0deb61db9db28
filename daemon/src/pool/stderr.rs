//! A bounded ring of a server's recent stderr lines.
//!
//! A server that floods stderr must never block (a full pipe would stall the child) nor grow our
//! memory, so the pipe is drained continuously and only the last [`STDERR_RING_BYTES`] are kept;
//! they go into error messages when the server dies.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Bytes of stderr kept per server.
pub(crate) const STDERR_RING_BYTES: usize = 64 * 1024;

/// Longest single line kept; longer lines are cut.
const MAX_LINE_BYTES: usize = 4096;

/// Recent stderr lines of one server.
pub(crate) struct StderrRing {
    server: String,
    lines: Mutex<Ring>,
    /// `true` once the pipe has closed and every line in it was kept.
    drained: tokio::sync::watch::Sender<bool>,
}

#[derive(Default)]
struct Ring {
    lines: VecDeque<String>,
    bytes: usize,
}

impl StderrRing {
    pub(crate) fn new(server: &str) -> StderrRing {
        StderrRing {
            server: server.to_owned(),
            lines: Mutex::new(Ring::default()),
            drained: tokio::sync::watch::Sender::new(false),
        }
    }

    /// Reads the pipe until it closes, logging each line at debug level.
    pub(crate) async fn drain(self: std::sync::Arc<Self>, pipe: impl AsyncRead + Unpin) {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => {
                    self.drained.send_replace(true);
                    return;
                }
                Ok(_) => {
                    let text = String::from_utf8_lossy(&buf[..buf.len().min(MAX_LINE_BYTES)]);
                    let text = text.trim_end();
                    tracing::debug!(server = %self.server, line = %text, "server stderr");
                    self.push(text.to_owned());
                }
            }
        }
    }

    fn push(&self, line: String) {
        let mut ring = self.lines.lock().unwrap();
        ring.bytes += line.len();
        ring.lines.push_back(line);
        while ring.bytes > STDERR_RING_BYTES {
            let Some(old) = ring.lines.pop_front() else {
                break;
            };
            ring.bytes -= old.len();
        }
    }

    /// Waits until the pipe has closed and all of it was read, or `timeout` (a grandchild may
    /// hold the pipe open): the lines of a child that just exited are then all in the ring.
    pub(crate) async fn drained_within(&self, timeout: std::time::Duration) {
        let mut drained = self.drained.subscribe();
        let _ = tokio::time::timeout(timeout, drained.wait_for(|drained| *drained)).await;
    }

    /// The last `count` lines, oldest first.
    pub(crate) fn tail(&self, count: usize) -> Vec<String> {
        let ring = self.lines.lock().unwrap();
        let skip = ring.lines.len().saturating_sub(count);
        ring.lines.iter().skip(skip).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_the_newest_lines_within_its_budget() {
        let ring = StderrRing::new("s");
        for i in 0..20_000 {
            ring.push(format!("line {i:05}"));
        }
        let tail = ring.tail(2);
        assert_eq!(tail, vec!["line 19998".to_owned(), "line 19999".to_owned()]);
        let kept = ring.lines.lock().unwrap();
        assert!(kept.bytes <= STDERR_RING_BYTES);
    }

    #[tokio::test]
    async fn drain_reads_until_the_pipe_closes() {
        let ring = std::sync::Arc::new(StderrRing::new("s"));
        std::sync::Arc::clone(&ring)
            .drain(&b"first\nsecond\nno newline"[..])
            .await;
        assert_eq!(ring.tail(5), vec!["first", "second", "no newline"]);
    }

    #[tokio::test]
    async fn a_reader_waits_for_the_lines_still_in_the_pipe() {
        let ring = std::sync::Arc::new(StderrRing::new("s"));
        let (mut writer, reader) = tokio::io::duplex(64);
        let draining = tokio::spawn(std::sync::Arc::clone(&ring).drain(reader));
        let waiting = {
            let ring = std::sync::Arc::clone(&ring);
            tokio::spawn(async move {
                ring.drained_within(std::time::Duration::from_secs(3600))
                    .await;
                ring.tail(5)
            })
        };
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"cannot start: no such file\n")
            .await
            .unwrap();
        drop(writer);
        assert_eq!(waiting.await.unwrap(), vec!["cannot start: no such file"]);
        draining.await.unwrap();
        // A pipe some grandchild keeps open: the wait ends at its timeout.
        let open = std::sync::Arc::new(StderrRing::new("t"));
        let (_writer, reader) = tokio::io::duplex(64);
        tokio::spawn(std::sync::Arc::clone(&open).drain(reader));
        open.drained_within(std::time::Duration::from_millis(1))
            .await;
    }
}
