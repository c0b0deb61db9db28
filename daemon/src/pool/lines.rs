//! Reading a stdio server's stdout line by line, within a size limit, with a line buffer that
//! does not keep the memory of the largest message ever read.
//!
//! One buffer serves every line of a connection. A big message (a catalog of 10,000 tools sends a
//! `tools/list` of several megabytes) grows it, and `Vec::clear` keeps the capacity, so without
//! [`reuse`] the connection would hold as much again as its largest message for as long as it
//! lives, though every later line is small.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use super::oversized::OversizedLine;

/// A line buffer that grew beyond this is freed once its line is handled, instead of kept.
/// Ordinary messages (a tool call's answer, a notification) stay far below it, so their reads
/// never allocate once the buffer has grown to their size.
pub(crate) const KEPT_LINE_CAPACITY: usize = 1024 * 1024;

/// What [`read_line_capped`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LineRead {
    /// A line (without its `\n`) is in the buffer.
    Line,
    /// The stream ended with no line pending.
    Eof,
    /// The line is longer than the limit; the buffer holds part of it.
    TooLong,
}

/// Reads up to and excluding the next `\n` into `line`, never buffering more than `max` bytes.
///
/// Cancel-safe: it only awaits in `fill_buf`, and `line` keeps what was read so far.
pub(crate) async fn read_line_capped(
    reader: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            // A final line without a newline still counts.
            return Ok(if line.is_empty() {
                LineRead::Eof
            } else {
                LineRead::Line
            });
        }
        let (chunk, found) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (&available[..at], Some(at)),
            None => (available, None),
        };
        if line.len() + chunk.len() > max {
            return Ok(LineRead::TooLong);
        }
        line.extend_from_slice(chunk);
        let consumed = found.map_or(chunk.len(), |at| at + 1);
        reader.consume(consumed);
        if found.is_some() {
            return Ok(LineRead::Line);
        }
    }
}

/// What [`skip_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Skip {
    /// The line ended (its newline read).
    Ended,
    /// The stream ended first.
    Eof,
    /// More than the ceiling went past without a newline.
    BeyondCeiling,
}

/// Reads on to the end of an over-long line, handing each chunk to `scanner` (which keeps only
/// what says which request the line answers) and keeping none of it here: memory stays flat
/// whatever the line's length. Gives up once `ceiling` bytes have gone past.
///
/// Cancel-safe like [`read_line_capped`]: what went past is in `scanner`.
pub(crate) async fn skip_line(
    reader: &mut (impl AsyncBufRead + Unpin),
    scanner: &mut OversizedLine,
    ceiling: u64,
) -> std::io::Result<Skip> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(Skip::Eof);
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(at) => {
                scanner.feed(&available[..at]);
                reader.consume(at + 1);
                return Ok(Skip::Ended);
            }
            None => {
                let length = available.len();
                scanner.feed(available);
                reader.consume(length);
                if scanner.bytes() > ceiling {
                    return Ok(Skip::BeyondCeiling);
                }
            }
        }
    }
}

/// Empties `line` for the next read, and frees its memory when a big message had grown it past
/// [`KEPT_LINE_CAPACITY`]: the next big message pays for its own allocation, and the connection
/// does not hold the largest one's size for the rest of its life.
pub(crate) fn reuse(line: &mut Vec<u8>) {
    if line.capacity() > KEPT_LINE_CAPACITY {
        *line = Vec::new();
    } else {
        line.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn read_all(input: &[u8], max: usize) -> Vec<Result<String, &'static str>> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            let mut line = Vec::new();
            match read_line_capped(&mut reader, &mut line, max).await.unwrap() {
                LineRead::Line => out.push(Ok(String::from_utf8(line).unwrap())),
                LineRead::Eof => return out,
                LineRead::TooLong => {
                    out.push(Err("too long"));
                    return out;
                }
            }
        }
    }

    #[tokio::test]
    async fn lines_are_split_across_small_buffers_and_capped() {
        assert_eq!(
            read_all(b"abc\ndefgh\nij", 10).await,
            vec![Ok("abc".into()), Ok("defgh".into()), Ok("ij".into())]
        );
        assert_eq!(
            read_all(b"abc\n0123456789ab\n", 10).await,
            vec![Ok("abc".into()), Err("too long")]
        );
        assert_eq!(
            read_all(b"0123456789\n", 10).await,
            vec![Ok("0123456789".into())]
        );
    }

    #[tokio::test]
    async fn an_over_long_line_is_skipped_to_its_end_and_the_next_one_read() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":3,"result":{{"t":"{}"}}}}"#,
            "z".repeat(50)
        );
        let input = format!("{big}\n{{\"small\":1}}\n");
        let mut reader = BufReader::with_capacity(8, input.as_bytes());
        let mut line = Vec::new();
        let read = read_line_capped(&mut reader, &mut line, 16).await.unwrap();
        assert_eq!(read, LineRead::TooLong);
        let mut scanner = OversizedLine::new();
        scanner.feed(&line);
        line.clear();
        let skipped = skip_line(&mut reader, &mut scanner, 1000).await.unwrap();
        assert_eq!(skipped, Skip::Ended);
        let found = scanner.finish();
        assert_eq!(found.bytes, big.len() as u64);
        assert_eq!(
            found.answers,
            Some(super::super::oversized::ResponseId::Number(3))
        );
        let read = read_line_capped(&mut reader, &mut line, 16).await.unwrap();
        assert_eq!(read, LineRead::Line);
        assert_eq!(line, b"{\"small\":1}");

        // A line that never ends is given up on at the ceiling, and so is a stream that ends.
        let endless = vec![b'x'; 5000];
        let mut reader = BufReader::with_capacity(64, &endless[..]);
        let mut scanner = OversizedLine::new();
        let skipped = skip_line(&mut reader, &mut scanner, 1000).await.unwrap();
        assert_eq!(skipped, Skip::BeyondCeiling);
        let skipped = skip_line(&mut reader, &mut scanner, u64::MAX)
            .await
            .unwrap();
        assert_eq!(skipped, Skip::Eof);
        assert_eq!(scanner.bytes(), 5000);
    }

    #[tokio::test]
    async fn a_big_line_does_not_leave_its_memory_in_the_buffer() {
        // A 3 MiB line (a big `tools/list`), then small ones, as a server sends them.
        let big = vec![b'x'; 3 * KEPT_LINE_CAPACITY];
        let mut input = big.clone();
        input.extend_from_slice(b"\n{\"small\":1}\n{\"small\":2}\n");
        let mut reader = BufReader::new(&input[..]);
        let mut line = Vec::new();

        let read = read_line_capped(&mut reader, &mut line, 4 * KEPT_LINE_CAPACITY).await;
        assert_eq!(read.unwrap(), LineRead::Line);
        assert_eq!(line, big);
        assert!(line.capacity() >= big.len());
        reuse(&mut line);
        assert_eq!(line.capacity(), 0, "the big line's memory is freed");

        let read = read_line_capped(&mut reader, &mut line, 4 * KEPT_LINE_CAPACITY).await;
        assert_eq!(read.unwrap(), LineRead::Line);
        assert_eq!(line, b"{\"small\":1}");
        let small_capacity = line.capacity();
        assert!(small_capacity <= KEPT_LINE_CAPACITY);
        reuse(&mut line);
        // A small line's buffer is kept for the next read: no allocation per message.
        assert!(line.is_empty());
        assert_eq!(line.capacity(), small_capacity);
        let read = read_line_capped(&mut reader, &mut line, 4 * KEPT_LINE_CAPACITY).await;
        assert_eq!(read.unwrap(), LineRead::Line);
        assert_eq!(line, b"{\"small\":2}");
    }
}
