//! The span model: one finished span as a plain value, what the builders make and the exporter
//! turns into OTLP. It holds only what the daemon emits (no events), with attribute keys from
//! [`crate::semconv`].

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::context::{SpanId, TraceId, TraceState};

/// What a span describes, as OTLP names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// Work inside the process (an agent run, a tool execution).
    Internal,
    /// A request the daemon received.
    Server,
    /// A request the daemon sent (to an MCP server, to a model).
    Client,
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    /// Text.
    String(String),
    /// A whole number.
    Int(i64),
    /// A number.
    Double(f64),
    /// A flag.
    Bool(bool),
    /// A list of texts.
    StringArray(Vec<String>),
}

impl AttributeValue {
    /// The text, when it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            AttributeValue::String(text) => Some(text),
            _ => None,
        }
    }

    /// The whole number, when it is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            AttributeValue::Int(value) => Some(*value),
            _ => None,
        }
    }
}

/// One attribute.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    /// Its name (a [`crate::semconv`] constant).
    pub key: &'static str,
    /// Its value.
    pub value: AttributeValue,
}

/// How a span ended, for the backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Nothing to say (success, by the conventions).
    Unset,
    /// It failed; the description is the error's message.
    Error(String),
}

/// When a span started and how long it lasted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Wall-clock start.
    pub start: SystemTime,
    /// How long it took.
    pub duration: Duration,
}

impl Timing {
    /// A span that ended at `end` after `duration` (what a `CallRecord` knows).
    pub fn ending_at(end: SystemTime, duration: Duration) -> Timing {
        Timing {
            start: end.checked_sub(duration).unwrap_or(end),
            duration,
        }
    }

    /// Start and end in nanoseconds since the Unix epoch.
    pub fn unix_nanos(&self) -> (u64, u64) {
        let start = self
            .start
            .duration_since(UNIX_EPOCH)
            .map(|since| u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        let length = u64::try_from(self.duration.as_nanos()).unwrap_or(u64::MAX);
        (start, start.saturating_add(length))
    }
}

/// One finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanRecord {
    /// Its name (`tools/call get-weather`, `chat gpt-4o`).
    pub name: String,
    /// What it describes.
    pub kind: SpanKind,
    /// Its trace.
    pub trace_id: TraceId,
    /// Its id.
    pub span_id: SpanId,
    /// Its parent, local or remote.
    pub parent_span_id: Option<SpanId>,
    /// Vendor state carried from the caller.
    pub trace_state: Option<TraceState>,
    /// The `sampled` flag of its context.
    pub sampled: bool,
    /// Start, nanoseconds since the Unix epoch.
    pub start_unix_nanos: u64,
    /// End, nanoseconds since the Unix epoch.
    pub end_unix_nanos: u64,
    /// Attributes, in the order they were set.
    pub attributes: Vec<Attribute>,
    /// How it ended.
    pub status: Status,
}

impl SpanRecord {
    /// The value of attribute `key`, if set.
    pub fn attribute(&self, key: &str) -> Option<&AttributeValue> {
        self.attributes
            .iter()
            .find(|attribute| attribute.key == key)
            .map(|attribute| &attribute.value)
    }
}
