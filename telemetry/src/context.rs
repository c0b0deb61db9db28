//! W3C Trace Context: span identities, the `traceparent` and `tracestate` texts, reading them
//! from a caller (HTTP headers, or an MCP request's `params._meta`) and writing them into an
//! upstream request, so that CLI → daemon → MCP server is one trace.
//!
//! Reading never fails the caller: a malformed `traceparent` is ignored (the span becomes a
//! root) and reported in [`Extraction::malformed`] so the daemon can count it; a malformed
//! `tracestate` is dropped and the `traceparent` kept, as the W3C recommendation says. The MCP
//! conventions put the keys unprefixed in `params._meta` (SEP-414).
//!
//! [`SpanIds`] is the identity of a span the daemon is about to make, chosen before the work
//! starts so that its context can be injected into the upstream request the span describes.

use std::fmt;
use std::num::{NonZeroU64, NonZeroU128};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::sampler::Sampler;

/// The `traceparent` key, in `params._meta` and as an HTTP header.
pub const TRACEPARENT: &str = "traceparent";
/// The `tracestate` key, in `params._meta` and as an HTTP header.
pub const TRACESTATE: &str = "tracestate";

/// Most `tracestate` list members the W3C recommendation allows.
const MAX_TRACESTATE_MEMBERS: usize = 32;

/// A trace's 16-byte id (never all zeros).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(NonZeroU128);

/// A span's 8-byte id (never all zeros).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId(NonZeroU64);

impl TraceId {
    /// A random id from the thread's RNG.
    pub fn random() -> TraceId {
        loop {
            if let Some(id) = NonZeroU128::new(rand::random::<u128>()) {
                return TraceId(id);
            }
        }
    }

    /// The id of this number; `None` for zero, which is invalid.
    pub fn from_u128(value: u128) -> Option<TraceId> {
        NonZeroU128::new(value).map(TraceId)
    }

    /// The big-endian bytes, as OTLP carries them.
    pub fn to_bytes(self) -> [u8; 16] {
        self.0.get().to_be_bytes()
    }
}

impl SpanId {
    /// A random id from the thread's RNG.
    pub fn random() -> SpanId {
        loop {
            if let Some(id) = NonZeroU64::new(rand::random::<u64>()) {
                return SpanId(id);
            }
        }
    }

    /// The id of this number; `None` for zero, which is invalid.
    pub fn from_u64(value: u64) -> Option<SpanId> {
        NonZeroU64::new(value).map(SpanId)
    }

    /// The big-endian bytes, as OTLP carries them.
    pub fn to_bytes(self) -> [u8; 8] {
        self.0.get().to_be_bytes()
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{:032x}", self.0)
    }
}

impl fmt::Debug for TraceId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "TraceId({self})")
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{:016x}", self.0)
    }
}

impl fmt::Debug for SpanId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "SpanId({self})")
    }
}

/// A validated `tracestate` value, passed on unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceState(Arc<str>);

impl TraceState {
    /// The header text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A span's identity as a `traceparent` carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanContext {
    /// The trace.
    pub trace_id: TraceId,
    /// The span.
    pub span_id: SpanId,
    /// The `sampled` flag: whether the trace is being recorded.
    pub sampled: bool,
    /// Vendor state, passed on.
    pub trace_state: Option<TraceState>,
}

impl SpanContext {
    /// The `traceparent` text (version 00).
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            self.trace_id,
            self.span_id,
            u8::from(self.sampled)
        )
    }
}

/// Why a context from a caller was ignored (entirely, or its `tracestate` only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// The `traceparent` is ignored; the span becomes a root.
    Traceparent(&'static str),
    /// The `tracestate` is dropped; the `traceparent` is kept.
    Tracestate(&'static str),
}

/// What a caller's context said.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Extraction {
    /// The caller's span, to be the parent of ours.
    pub parent: Option<SpanContext>,
    /// What was ignored, if anything (the daemon counts it).
    pub malformed: Option<Malformed>,
}

/// Parses a `traceparent`: `version-traceid-spanid-flags` in lowercase hex. Version `ff` is
/// invalid; a later version than `00` is read by its first four fields, as the recommendation
/// asks. Returns the trace, the span and whether the `sampled` flag is set.
pub fn parse_traceparent(text: &str) -> Result<(TraceId, SpanId, bool), &'static str> {
    let text = text.trim_matches(|c| c == ' ' || c == '\t');
    let bytes = text.as_bytes();
    if bytes.len() < 55 {
        return Err("shorter than 55 characters");
    }
    let version = hex_u8(&bytes[0..2]).ok_or("the version is not two lowercase hex digits")?;
    if version == 0xff {
        return Err("version ff is invalid");
    }
    if version == 0 && bytes.len() != 55 {
        return Err("version 00 must be exactly 55 characters");
    }
    if version != 0 && bytes.len() > 55 && bytes[55] != b'-' {
        return Err("a later version's extra fields must follow a '-'");
    }
    if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
        return Err("the fields are not separated by '-' where expected");
    }
    let trace = hex_u128(&bytes[3..35]).ok_or("the trace id is not 32 lowercase hex digits")?;
    let span = hex_u64(&bytes[36..52]).ok_or("the parent id is not 16 lowercase hex digits")?;
    let flags = hex_u8(&bytes[53..55]).ok_or("the flags are not two lowercase hex digits")?;
    let trace_id = TraceId::from_u128(trace).ok_or("the trace id is all zeros")?;
    let span_id = SpanId::from_u64(span).ok_or("the parent id is all zeros")?;
    Ok((trace_id, span_id, flags & 0x01 == 0x01))
}

/// Checks a `tracestate`: at most 32 `key=value` members separated by commas.
pub fn parse_tracestate(text: &str) -> Result<TraceState, &'static str> {
    let mut members = 0;
    for member in text.split(',') {
        let member = member.trim_matches(|c| c == ' ' || c == '\t');
        if member.is_empty() {
            continue;
        }
        members += 1;
        if members > MAX_TRACESTATE_MEMBERS {
            return Err("more than 32 list members");
        }
        let (key, value) = member.split_once('=').ok_or("a list member has no '='")?;
        if !valid_tracestate_key(key) {
            return Err("a key is not lowercase letters, digits, _-*/ (with one @)");
        }
        let value_ok = !value.is_empty()
            && value.len() <= 256
            && value
                .bytes()
                .all(|byte| (0x20..=0x7e).contains(&byte) && byte != b',' && byte != b'=')
            && !value.ends_with(' ');
        if !value_ok {
            return Err("a value is empty, too long or holds characters it may not");
        }
    }
    if members == 0 {
        return Err("no list member");
    }
    Ok(TraceState(Arc::from(text.trim())))
}

fn valid_tracestate_key(key: &str) -> bool {
    let part_ok = |part: &str, first_may_be_digit: bool, max: usize| {
        let bytes = part.as_bytes();
        !bytes.is_empty()
            && bytes.len() <= max
            && (bytes[0].is_ascii_lowercase() || (first_may_be_digit && bytes[0].is_ascii_digit()))
            && bytes.iter().all(|byte| {
                byte.is_ascii_lowercase() || byte.is_ascii_digit() || b"_-*/".contains(byte)
            })
    };
    match key.split_once('@') {
        None => part_ok(key, true, 256),
        Some((tenant, system)) => part_ok(tenant, true, 241) && part_ok(system, false, 14),
    }
}

fn hex_digit(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        _ => None,
    }
}

fn hex_u8(bytes: &[u8]) -> Option<u8> {
    Some(hex_digit(bytes[0])? << 4 | hex_digit(bytes[1])?)
}

fn hex_u64(bytes: &[u8]) -> Option<u64> {
    bytes.iter().try_fold(0u64, |value, byte| {
        Some(value << 4 | u64::from(hex_digit(*byte)?))
    })
}

fn hex_u128(bytes: &[u8]) -> Option<u128> {
    bytes.iter().try_fold(0u128, |value, byte| {
        Some(value << 4 | u128::from(hex_digit(*byte)?))
    })
}

/// The caller's context from its `traceparent` and `tracestate` values (HTTP headers: every
/// value of each header, in order). Two `traceparent` headers are ambiguous and ignored; several
/// `tracestate` headers are one list, as HTTP combines them.
pub fn extract_from_headers<'a>(
    traceparent: impl IntoIterator<Item = &'a str>,
    tracestate: impl IntoIterator<Item = &'a str>,
) -> Extraction {
    let mut parents = traceparent.into_iter();
    let Some(first) = parents.next() else {
        return Extraction::default();
    };
    if parents.next().is_some() {
        return Extraction {
            parent: None,
            malformed: Some(Malformed::Traceparent("more than one traceparent header")),
        };
    }
    let states: Vec<&str> = tracestate.into_iter().collect();
    let state = (!states.is_empty()).then(|| states.join(","));
    extract(first, state.as_deref())
}

/// The caller's context from an MCP request's `params._meta` (unprefixed keys). A `_meta` that
/// is absent or carries no `traceparent` gives no parent and no complaint.
pub fn extract_from_meta(meta: Option<&Value>) -> Extraction {
    let Some(Value::Object(meta)) = meta else {
        return Extraction::default();
    };
    match meta.get(TRACEPARENT) {
        None => Extraction::default(),
        Some(Value::String(traceparent)) => {
            let state = match meta.get(TRACESTATE) {
                Some(Value::String(state)) => Some(state.as_str()),
                Some(_) => {
                    let mut extraction = extract(traceparent, None);
                    if extraction.malformed.is_none() {
                        extraction.malformed =
                            Some(Malformed::Tracestate("_meta.tracestate is not a string"));
                    }
                    return extraction;
                }
                None => None,
            };
            extract(traceparent, state)
        }
        Some(_) => Extraction {
            parent: None,
            malformed: Some(Malformed::Traceparent("_meta.traceparent is not a string")),
        },
    }
}

fn extract(traceparent: &str, tracestate: Option<&str>) -> Extraction {
    match parse_traceparent(traceparent) {
        Err(reason) => Extraction {
            parent: None,
            malformed: Some(Malformed::Traceparent(reason)),
        },
        Ok((trace_id, span_id, sampled)) => {
            let (trace_state, malformed) = match tracestate.map(parse_tracestate) {
                None => (None, None),
                Some(Ok(state)) => (Some(state), None),
                Some(Err(reason)) => (None, Some(Malformed::Tracestate(reason))),
            };
            Extraction {
                parent: Some(SpanContext {
                    trace_id,
                    span_id,
                    sampled,
                    trace_state,
                }),
                malformed,
            }
        }
    }
}

/// Writes `context` into an MCP request's params as `_meta.traceparent` (and `tracestate`),
/// creating `_meta` if needed and keeping its other members. Returns `false`, changing
/// nothing, when `_meta` exists but is not an object (writing into it would break the request).
pub fn inject_into_params(context: &SpanContext, params: &mut Map<String, Value>) -> bool {
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else {
        return false;
    };
    meta.insert(TRACEPARENT.to_owned(), Value::String(context.traceparent()));
    match &context.trace_state {
        Some(state) => {
            meta.insert(
                TRACESTATE.to_owned(),
                Value::String(state.as_str().to_owned()),
            );
        }
        None => {
            // A stale tracestate from the caller's own `_meta` must not ride on our context.
            meta.remove(TRACESTATE);
        }
    }
    true
}

/// The HTTP headers carrying `context` (for a Streamable HTTP request): `traceparent` and, when
/// there is one, `tracestate`.
pub fn header_pairs(context: &SpanContext) -> Vec<(&'static str, String)> {
    let mut pairs = vec![(TRACEPARENT, context.traceparent())];
    if let Some(state) = &context.trace_state {
        pairs.push((TRACESTATE, state.as_str().to_owned()));
    }
    pairs
}

/// The identity of a span the daemon is about to make: its context (injected into what it
/// sends), its parent, and whether it is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanIds {
    /// The span's own context (what a child or an upstream request sees as its parent).
    pub context: SpanContext,
    /// The parent span, local or the caller's.
    pub parent_span_id: Option<SpanId>,
    /// Whether the span goes to the exporter (sampled, and export on).
    pub recorded: bool,
    /// Whether the span's context should be sent upstream: false when export is off and no
    /// caller sent a context (nothing to continue).
    pub propagate: bool,
    /// Export is off: the context is the caller's own, not a span of ours.
    pass_through: bool,
}

impl SpanIds {
    /// A new span under `parent` (the caller's, when it sent one), sampled by `sampler`.
    pub fn new(parent: Option<&SpanContext>, sampler: &Sampler) -> SpanIds {
        let (trace_id, parent_span_id, trace_state, parent_sampled) = match parent {
            Some(parent) => (
                parent.trace_id,
                Some(parent.span_id),
                parent.trace_state.clone(),
                Some(parent.sampled),
            ),
            None => (TraceId::random(), None, None, None),
        };
        let sampled = sampler.should_sample(trace_id, parent_sampled);
        SpanIds {
            context: SpanContext {
                trace_id,
                span_id: SpanId::random(),
                sampled,
                trace_state,
            },
            parent_span_id,
            recorded: sampled,
            propagate: true,
            pass_through: false,
        }
    }

    /// What a daemon with export off does: no span of its own; the caller's context, if any,
    /// is passed on unchanged so the upstream server still joins the caller's trace.
    pub fn pass_through(parent: Option<&SpanContext>) -> SpanIds {
        match parent {
            Some(parent) => SpanIds {
                context: parent.clone(),
                parent_span_id: None,
                recorded: false,
                propagate: true,
                pass_through: true,
            },
            None => SpanIds {
                context: SpanContext {
                    trace_id: TraceId::from_u128(1).expect("1 is not zero"),
                    span_id: SpanId::from_u64(1).expect("1 is not zero"),
                    sampled: false,
                    trace_state: None,
                },
                parent_span_id: None,
                recorded: false,
                propagate: false,
                pass_through: true,
            },
        }
    }

    /// A local child span: same trace, same sampling decision. Under a pass-through identity
    /// the child is a pass-through too.
    pub fn child(&self) -> SpanIds {
        if self.pass_through {
            return self.clone();
        }
        SpanIds {
            context: SpanContext {
                trace_id: self.context.trace_id,
                span_id: SpanId::random(),
                sampled: self.context.sampled,
                trace_state: self.context.trace_state.clone(),
            },
            parent_span_id: Some(self.context.span_id),
            recorded: self.recorded,
            propagate: self.propagate,
            pass_through: false,
        }
    }

    /// The context to inject into an upstream request, when there is one to send.
    pub fn upstream_context(&self) -> Option<&SpanContext> {
        self.propagate.then_some(&self.context)
    }

    /// Whether this is a span of ours (export on, sampled or not), so its metrics are
    /// recorded; false for a pass-through of the caller's context with export off.
    pub fn is_ours(&self) -> bool {
        !self.pass_through
    }
}

#[cfg(test)]
mod tests;
