//! The MCP recording format (NDJSON, version 1), its writer and its strict loader.
//!
//! ```text
//! {"sum":"…","format":"tool-cli-mcp-recording","version":1,"server":"everything","transport":"stdio","protocolVersion":"2025-06-18","recordedAt":"2026-05-01T09:30:00Z","source":{…}}
//! {"sum":"…","seq":1,"t":0.0,"from":"client","message":{"jsonrpc":"2.0","id":0,"method":"initialize",…}}
//! {"sum":"…","seq":2,"t":0.412,"from":"server","message":{"jsonrpc":"2.0","id":0,"result":{…}}}
//! …
//! {"sum":"…","end":true,"messages":42,"duration":3.5}
//! ```
//!
//! - Line 1, the header: the format's name and version, the server's configured name, the
//!   transport it was recorded over (`stdio` or `http`), the MCP version the server answered
//!   `initialize` with (`null` if it never did), when (RFC 3339, UTC), and `source`, free JSON
//!   saying how the server was started (command and arguments, URL, headers, env), redacted like
//!   the messages.
//! - One line per JSON-RPC message in either direction, notifications and server-to-client
//!   requests included: `seq` counts from 1, `t` is seconds since the recording began, `from`
//!   is `client` or `server`, `message` the message as it was sent (redacted).
//! - The end marker: how many messages there are and how long the session lasted.
//! - Every line carries `sum`, the checksum chain of `chain.rs`.
//!
//! Redaction happens in the writer, before anything reaches the file. The loader refuses a file
//! that is empty, of another format or a newer version, cut short (no end marker), changed
//! (a sum that does not match), with a line missing (`seq` jumps), or with a malformed message,
//! naming the line; [`Recording::check_server`] refuses a recording of another server.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::chain::{Chain, ChainError};
use crate::redact::Redact;

/// The header's `format`.
pub const FORMAT: &str = "tool-cli-mcp-recording";
/// The format version this crate writes and reads.
pub const VERSION: u32 = 1;
/// Messages held before the header is written when no `initialize` answer comes.
const MAX_PENDING: usize = 16;

/// Line 1 of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`] for what this crate writes.
    pub version: u32,
    /// The server's configured name.
    pub server: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// The MCP version of the server's `initialize` answer.
    pub protocol_version: Option<String>,
    /// When the recording began (RFC 3339, UTC).
    pub recorded_at: String,
    /// How the server was started (redacted).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub source: Value,
}

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sender {
    /// The MCP client (the daemon).
    Client,
    /// The MCP server.
    Server,
}

/// One message of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Its position, from 1.
    pub seq: u64,
    /// Seconds since the recording began.
    pub t: f64,
    /// Who sent it.
    pub from: Sender,
    /// The JSON-RPC message (redacted).
    pub message: Value,
}

/// The last line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Trailer {
    end: bool,
    messages: u64,
    duration: f64,
}

/// What the writer needs to know up front.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordingFacts {
    /// The server's configured name.
    pub server: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// How it was started (command, arguments, URL, headers, env); redacted before writing.
    pub source: Value,
}

/// Writes a recording line by line (each line flushed, so a crash loses at most the end marker).
pub struct RecordingWriter<W: Write> {
    out: W,
    chain: Chain,
    redactor: Arc<dyn Redact>,
    started: Instant,
    /// Until the header is written: its facts, and the messages seen so far.
    pending_header: Option<Header>,
    pending: Vec<(Sender, Value, f64)>,
    messages: u64,
}

impl<W: Write> RecordingWriter<W> {
    /// A writer into `out`; nothing is written until the server answers `initialize` (so the
    /// header can name the protocol version) or a few messages went by.
    pub fn new(out: W, facts: RecordingFacts, redactor: Arc<dyn Redact>) -> RecordingWriter<W> {
        let mut source = facts.source;
        redactor.redact(&mut source);
        RecordingWriter {
            out,
            chain: Chain::default(),
            redactor,
            started: Instant::now(),
            pending_header: Some(Header {
                format: FORMAT.to_owned(),
                version: VERSION,
                server: facts.server,
                transport: facts.transport,
                protocol_version: None,
                recorded_at: rfc3339(SystemTime::now()),
                source,
            }),
            pending: Vec::new(),
            messages: 0,
        }
    }

    /// Records one message (redacted first).
    pub fn record(&mut self, from: Sender, message: &Value) -> std::io::Result<()> {
        let t = (self.started.elapsed().as_secs_f64() * 1e6).round() / 1e6;
        let mut message = message.clone();
        self.redactor.redact(&mut message);
        if let Some(header) = &mut self.pending_header {
            let version = (from == Sender::Server)
                .then(|| message.pointer("/result/protocolVersion"))
                .flatten()
                .and_then(Value::as_str);
            if let Some(version) = version {
                header.protocol_version = Some(version.to_owned());
            }
            let answered = version.is_some();
            self.pending.push((from, message, t));
            if answered || self.pending.len() >= MAX_PENDING {
                self.write_header()?;
            }
            return Ok(());
        }
        self.write_entry(from, message, t)
    }

    fn write_header(&mut self) -> std::io::Result<()> {
        if let Some(header) = self.pending_header.take() {
            let members = to_members(&header);
            self.write_line(&members)?;
            for (from, message, t) in std::mem::take(&mut self.pending) {
                self.write_entry(from, message, t)?;
            }
        }
        Ok(())
    }

    fn write_entry(&mut self, from: Sender, message: Value, t: f64) -> std::io::Result<()> {
        self.messages += 1;
        let entry = Entry {
            seq: self.messages,
            t,
            from,
            message,
        };
        self.write_line(&to_members(&entry))
    }

    fn write_line(&mut self, members: &Map<String, Value>) -> std::io::Result<()> {
        let mut line = self.chain.seal(members);
        line.push('\n');
        self.out.write_all(line.as_bytes())?;
        self.out.flush()
    }

    /// Writes the end marker; the recording is complete.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.write_header()?;
        let trailer = Trailer {
            end: true,
            messages: self.messages,
            duration: (self.started.elapsed().as_secs_f64() * 1e3).round() / 1e3,
        };
        self.write_line(&to_members(&trailer))?;
        Ok(self.out)
    }
}

fn to_members(value: &impl Serialize) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(members)) => members,
        _ => Map::new(),
    }
}

/// A loaded, verified recording.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// Its header.
    pub header: Header,
    /// Its messages, in order.
    pub entries: Vec<Entry>,
}

/// Why a recording was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("{path}: cannot read it ({reason})")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        reason: String,
    },
    /// The file is empty.
    #[error(
        "{path}: the file is empty; expected a tool-cli MCP recording (NDJSON, a header line first)"
    )]
    Empty {
        /// The file.
        path: String,
    },
    /// Line 1 is not a header of this format.
    #[error(
        "{path}: line 1 is not a tool-cli MCP recording header ({reason}); expected a line like \
         {{\"sum\":…,\"format\":\"tool-cli-mcp-recording\",\"version\":1,…}}"
    )]
    NotARecording {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A newer format version.
    #[error(
        "{path}: format version {found} is newer than this replay reads (version 1); use the tool-cli that recorded it"
    )]
    Version {
        /// The file.
        path: String,
        /// The version found.
        found: u32,
    },
    /// A line's checksum does not match.
    #[error(
        "{path}: line {line} was changed, moved or inserted after recording (its checksum does \
         not follow the line before); re-record the session instead of editing it"
    )]
    Tampered {
        /// The file.
        path: String,
        /// The line, from 1.
        line: usize,
    },
    /// A line is not what the format says.
    #[error("{path}: line {line} is malformed: {reason}")]
    Malformed {
        /// The file.
        path: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// No end marker.
    #[error(
        "{path}: the recording stops after line {line} without its end marker: it was cut short \
         (the recorder did not finish, or the file was truncated); re-record the session"
    )]
    Truncated {
        /// The file.
        path: String,
        /// The last line present.
        line: usize,
    },
    /// A recording of another server.
    #[error(
        "{path}: the recording is of server {recorded:?}, not {expected:?}; replay it as \
         {recorded:?}, or record {expected:?}"
    )]
    OtherServer {
        /// The file.
        path: String,
        /// The server recorded.
        recorded: String,
        /// The server it was to stand for.
        expected: String,
    },
}

impl Recording {
    /// Reads and verifies the recording at `path`.
    pub fn load(path: &Path) -> Result<Recording, LoadError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| LoadError::Read {
            path: name.clone(),
            reason: error.to_string(),
        })?;
        Recording::parse(&text, &name)
    }

    /// Verifies a recording's text; `path` names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<Recording, LoadError> {
        let path = path.to_owned();
        let mut lines = text.split('\n').enumerate().peekable();
        let mut chain = Chain::default();
        let malformed = |line: usize, reason: String| LoadError::Malformed {
            path: path.clone(),
            line,
            reason,
        };
        let (_, first) = lines.next().unwrap_or((0, ""));
        if first.trim().is_empty() {
            return Err(LoadError::Empty { path });
        }
        let not_a_recording = |reason: &str| LoadError::NotARecording {
            path: path.clone(),
            reason: reason.to_owned(),
        };
        let body = chain.verify(first).map_err(|error| match error {
            ChainError::NoSum => not_a_recording("it does not start with a sum"),
            ChainError::Mismatch => LoadError::Tampered {
                path: path.clone(),
                line: 1,
            },
        })?;
        let raw: Value = serde_json::from_str(&body).map_err(|_| not_a_recording("not JSON"))?;
        if raw.get("format").and_then(Value::as_str) != Some(FORMAT) {
            return Err(not_a_recording("its format is not tool-cli-mcp-recording"));
        }
        match raw.get("version").and_then(Value::as_u64) {
            Some(1) => {}
            Some(found) if found > 1 => {
                return Err(LoadError::Version {
                    path,
                    found: u32::try_from(found).unwrap_or(u32::MAX),
                });
            }
            _ => return Err(not_a_recording("its version is not 1")),
        }
        let header: Header =
            serde_json::from_value(raw).map_err(|error| not_a_recording(&error.to_string()))?;

        let mut entries = Vec::new();
        let mut last_line = 1;
        while let Some((index, line)) = lines.next() {
            let number = index + 1;
            if line.is_empty() && lines.peek().is_none() {
                break;
            }
            last_line = number;
            let body = chain.verify(line).map_err(|error| match error {
                ChainError::NoSum => malformed(number, "it does not start with a sum".to_owned()),
                ChainError::Mismatch => LoadError::Tampered {
                    path: path.clone(),
                    line: number,
                },
            })?;
            let value: Value = serde_json::from_str(&body)
                .map_err(|error| malformed(number, format!("not JSON ({error})")))?;
            if value.get("end").is_some() {
                let trailer: Trailer = serde_json::from_value(value)
                    .map_err(|error| malformed(number, format!("a bad end marker ({error})")))?;
                if trailer.messages != entries.len() as u64 {
                    return Err(malformed(
                        number,
                        format!(
                            "the end marker counts {} messages, the file holds {}",
                            trailer.messages,
                            entries.len()
                        ),
                    ));
                }
                if lines.any(|(_, rest)| !rest.is_empty()) {
                    return Err(malformed(
                        number + 1,
                        "there is content after the end marker".to_owned(),
                    ));
                }
                return Ok(Recording { header, entries });
            }
            let entry: Entry = serde_json::from_value(value)
                .map_err(|error| malformed(number, error.to_string()))?;
            let expected = entries.len() as u64 + 1;
            if entry.seq != expected {
                return Err(malformed(
                    number,
                    format!(
                        "seq {} where {expected} was expected (a line is missing)",
                        entry.seq
                    ),
                ));
            }
            check_message(&entry.message).map_err(|reason| malformed(number, reason))?;
            entries.push(entry);
        }
        Err(LoadError::Truncated {
            path,
            line: last_line,
        })
    }

    /// Refuses a recording of a server other than `expected`.
    pub fn check_server(&self, expected: &str, path: &str) -> Result<(), LoadError> {
        if self.header.server == expected {
            return Ok(());
        }
        Err(LoadError::OtherServer {
            path: path.to_owned(),
            recorded: self.header.server.clone(),
            expected: expected.to_owned(),
        })
    }
}

/// A JSON-RPC 2.0 request, notification or response.
fn check_message(message: &Value) -> Result<(), String> {
    let Value::Object(members) = message else {
        return Err("the message is not a JSON object".to_owned());
    };
    if members.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err("the message is not JSON-RPC 2.0 (\"jsonrpc\":\"2.0\")".to_owned());
    }
    let has_method = members.get("method").is_some_and(Value::is_string);
    let is_response = members.contains_key("result") || members.contains_key("error");
    match (has_method, is_response) {
        (true, false) => Ok(()),
        (false, true) if members.contains_key("id") => Ok(()),
        _ => Err("the message is neither a request, a notification nor a response".to_owned()),
    }
}

/// `time` as RFC 3339 in UTC, to the second.
pub fn rfc3339(time: SystemTime) -> String {
    let seconds = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0);
    let days = (seconds / 86_400) as i64;
    let of_day = seconds % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

#[cfg(test)]
pub(crate) mod tests;
