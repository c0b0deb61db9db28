//! The caller's W3C trace context, from the `TRACEPARENT` and `TRACESTATE` environment
//! variables (the convention CLIs and CI systems use to hand a trace to a child process), sent
//! on every request to the daemon as the `traceparent` and `tracestate` headers. The daemon's
//! request span then continues the script's trace, and its upstream calls continue the
//! daemon's, so script → `tool-cli` → daemon → MCP server is one trace (docs/observability.md).
//!
//! A value that is not a W3C `traceparent` is not sent (the daemon would ignore it anyway): the
//! command says once on stderr what was wrong and runs as if the variable were unset.
//! [`parse`] is the pure check; [`from_environment`] reads the variables once per process.

use std::sync::OnceLock;

/// A trace context to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallerTraceContext {
    /// The `traceparent` header's value.
    pub(crate) traceparent: String,
    /// The `tracestate` header's value, when there is one.
    pub(crate) tracestate: Option<String>,
}

/// The context of `TRACEPARENT`/`TRACESTATE`, read once; `None` when unset or malformed (a
/// malformed value is reported on stderr the first time).
pub(crate) fn from_environment() -> Option<&'static CallerTraceContext> {
    static CONTEXT: OnceLock<Option<CallerTraceContext>> = OnceLock::new();
    CONTEXT
        .get_or_init(|| {
            let traceparent = std::env::var("TRACEPARENT").ok();
            let tracestate = std::env::var("TRACESTATE").ok();
            match parse(traceparent.as_deref(), tracestate.as_deref()) {
                Ok(context) => context,
                Err(problem) => {
                    eprintln!(
                        "tool-cli: warning: ignoring TRACEPARENT: {problem}; it must look \
                         like 00-<32 hex digits>-<16 hex digits>-<2 hex digits>"
                    );
                    None
                }
            }
        })
        .as_ref()
}

/// Checks a `traceparent` (and takes the `tracestate` that goes with it) as W3C Trace Context
/// level 1 defines them: `version-traceid-parentid-flags`, lowercase hex, neither id all
/// zeros, version `ff` invalid; a later version may append fields after a `-`. An empty or
/// unset `TRACEPARENT` is no context. A `tracestate` is sent only with a valid `traceparent`
/// and only when it is a legal header value.
pub(crate) fn parse(
    traceparent: Option<&str>,
    tracestate: Option<&str>,
) -> Result<Option<CallerTraceContext>, String> {
    let Some(traceparent) = traceparent.map(str::trim).filter(|value| !value.is_empty()) else {
        return Ok(None);
    };
    check_traceparent(traceparent)?;
    let tracestate = tracestate
        .map(str::trim)
        .filter(|state| !state.is_empty() && state.bytes().all(|byte| (0x20..0x7f).contains(&byte)))
        .map(str::to_owned);
    Ok(Some(CallerTraceContext {
        traceparent: traceparent.to_owned(),
        tracestate,
    }))
}

fn check_traceparent(value: &str) -> Result<(), String> {
    let is_hex = |part: &str| {
        part.bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    };
    let shown = crate::sanitize::text(value);
    let parts: Vec<&str> = value.splitn(5, '-').collect();
    if parts.len() < 4 {
        return Err(format!("\"{shown}\" has {} fields, not 4", parts.len()));
    }
    let (version, trace_id, parent_id, flags) = (parts[0], parts[1], parts[2], parts[3]);
    if version.len() != 2 || !is_hex(version) || version == "ff" {
        return Err(format!("\"{shown}\" has an invalid version \"{version}\""));
    }
    if version == "00" && parts.len() > 4 {
        return Err(format!("\"{shown}\" has more than 4 fields for version 00"));
    }
    if trace_id.len() != 32 || !is_hex(trace_id) || trace_id.bytes().all(|byte| byte == b'0') {
        return Err(format!(
            "\"{shown}\" has an invalid trace id (32 lowercase hex digits, not all zero)"
        ));
    }
    if parent_id.len() != 16 || !is_hex(parent_id) || parent_id.bytes().all(|byte| byte == b'0') {
        return Err(format!(
            "\"{shown}\" has an invalid parent id (16 lowercase hex digits, not all zero)"
        ));
    }
    if flags.len() != 2 || !is_hex(flags) {
        return Err(format!("\"{shown}\" has invalid flags \"{flags}\""));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn unset_or_empty_is_no_context() {
        assert_eq!(parse(None, Some("a=b")), Ok(None));
        assert_eq!(parse(Some("  "), None), Ok(None));
    }

    #[test]
    fn a_valid_context_is_sent_with_its_state() {
        assert_eq!(
            parse(Some(VALID), Some("vendor=abc")),
            Ok(Some(CallerTraceContext {
                traceparent: VALID.to_owned(),
                tracestate: Some("vendor=abc".to_owned()),
            }))
        );
        // A later version may carry more fields.
        let future = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra";
        assert!(parse(Some(future), None).unwrap().is_some());
    }

    #[test]
    fn a_state_that_is_no_header_value_is_dropped_not_the_context() {
        let context = parse(Some(VALID), Some("a=b\r\nx: y")).unwrap().unwrap();
        assert_eq!(context.tracestate, None);
    }

    #[test]
    fn malformed_contexts_are_refused_naming_the_bad_part() {
        for (value, expected) in [
            ("garbage", "fields"),
            (
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "version",
            ),
            (
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                "trace id",
            ),
            (
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                "trace id",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                "parent id",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
                "flags",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
                "more than 4",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\n",
                "flags",
            ),
        ] {
            let problem = parse(Some(value), None).expect_err(value);
            assert!(problem.contains(expected), "{value}: {problem}");
        }
    }
}
