//! A Server-Sent Events parser: bytes in, events out, no I/O.
//!
//! Follows the HTML event-stream rules both providers rely on: lines end in `\n`, `\r\n` or `\r`
//! (even split across reads); a line starting with `:` is a comment (Anthropic's and OpenAI's
//! keep-alives); `field: value` loses one leading space; several `data` lines join with `\n`;
//! a blank line dispatches the event; an event with no `data` is dropped; an unterminated event
//! at the end of the stream is discarded (the caller sees the stream end without it). Bytes are
//! kept until a line is complete, so a UTF-8 character split across two reads survives.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, when given (Anthropic names every event; OpenAI names none).
    pub(crate) event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub(crate) data: String,
}

/// Incremental parser state.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    pending: Vec<u8>,
    /// A `\r` ended the last chunk: a `\n` starting the next one belongs to it.
    after_cr: bool,
    event: Option<String>,
    data: Option<String>,
}

/// The longest line kept; a peer sending more without a line break is broken or hostile.
pub(crate) const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// A line longer than [`MAX_LINE_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "an event-stream line exceeded {MAX_LINE_BYTES} bytes; the server is not sending server-sent events"
)]
pub(crate) struct LineTooLong;

impl SseParser {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the events completed by them.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, LineTooLong> {
        let mut events = Vec::new();
        let mut rest = bytes;
        if self.after_cr {
            self.after_cr = false;
            if let Some(stripped) = rest.strip_prefix(b"\n") {
                rest = stripped;
            }
        }
        while let Some(position) = rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
            self.pending.extend_from_slice(&rest[..position]);
            let line = std::mem::take(&mut self.pending);
            self.line(&line, &mut events);
            let terminator = rest[position];
            rest = &rest[position + 1..];
            if terminator == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.pending.extend_from_slice(rest);
        if self.pending.len() > MAX_LINE_BYTES {
            return Err(LineTooLong);
        }
        Ok(events)
    }

    fn line(&mut self, line: &[u8], events: &mut Vec<SseEvent>) {
        if line.is_empty() {
            let event = self.event.take();
            if let Some(data) = self.data.take() {
                events.push(SseEvent { event, data });
            }
            return;
        }
        if line[0] == b':' {
            return;
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            // `id` and `retry` matter to reconnecting browsers, not to one request's stream.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        chunks
            .iter()
            .flat_map(|chunk| parser.feed(chunk).expect("short lines"))
            .collect()
    }

    fn event(name: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: name.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    #[test]
    fn named_events_comments_and_multi_line_data() {
        let stream = b": keep-alive\nevent: message_start\ndata: {\"a\":1}\n\n\
                       event: ping\ndata: {}\n\ndata: line one\ndata:line two\n\n";
        assert_eq!(
            parse_all(&[stream]),
            vec![
                event(Some("message_start"), "{\"a\":1}"),
                event(Some("ping"), "{}"),
                event(None, "line one\nline two"),
            ]
        );
    }

    #[test]
    fn every_line_ending_and_any_split_point() {
        let stream: &[u8] = b"data: a\r\n\r\ndata: b\r\rdata: c\n\ndata: [DONE]\n\n";
        let expected = vec![
            event(None, "a"),
            event(None, "b"),
            event(None, "c"),
            event(None, "[DONE]"),
        ];
        for split in 0..stream.len() {
            let (first, second) = stream.split_at(split);
            assert_eq!(parse_all(&[first, second]), expected, "split at {split}");
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(parse_all(&bytes), expected);
    }

    #[test]
    fn utf8_split_across_reads_and_events_without_data() {
        let stream = "event: ping\n\ndata: caf\u{e9}\n\n".as_bytes();
        let split = stream.len() - 3; // inside the two bytes of é
        assert_eq!(
            parse_all(&[&stream[..split], &stream[split..]]),
            vec![event(None, "caf\u{e9}")]
        );
    }

    #[test]
    fn an_unterminated_event_is_not_dispatched() {
        assert_eq!(parse_all(&[b"data: {\"partial\""]), vec![]);
        assert_eq!(parse_all(&[b"data: x\n"]), vec![]);
    }

    #[test]
    fn a_field_without_colon_and_an_empty_data_line() {
        assert_eq!(parse_all(&[b"data\n\n"]), vec![event(None, "")]);
        assert_eq!(parse_all(&[b"data:\ndata:\n\n"]), vec![event(None, "\n")]);
    }

    #[test]
    fn endless_lines_are_refused() {
        let mut parser = SseParser::new();
        let chunk = vec![b'x'; 1024 * 1024];
        let mut failed = false;
        for _ in 0..10 {
            if parser.feed(&chunk).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed);
    }
}
