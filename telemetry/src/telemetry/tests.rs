use super::*;

const CALLER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn a_disabled_handle_passes_the_callers_context_through_and_records_nothing() {
    let telemetry = Telemetry::disabled();
    assert!(!telemetry.is_enabled());
    let parent = telemetry.extract_from_headers([CALLER], []).unwrap();
    let ids = telemetry.begin(Some(&parent));
    assert!(!ids.recorded);
    assert_eq!(ids.upstream_context(), Some(&parent));
    assert_eq!(telemetry.begin(None).upstream_context(), None);
    let health = telemetry.health();
    assert!(!health.enabled);
    assert_eq!(health.spans_enqueued, 0);
}

#[test]
fn malformed_contexts_are_counted_even_when_export_is_off() {
    let telemetry = Telemetry::disabled();
    assert_eq!(telemetry.extract_from_headers(["nonsense"], []), None);
    assert_eq!(
        telemetry.extract_from_meta(Some(&serde_json::json!({"traceparent": 1}))),
        None
    );
    // A valid traceparent with a broken tracestate is kept, and counted.
    assert!(telemetry.extract_from_headers([CALLER], ["=x"]).is_some());
    assert_eq!(telemetry.health().malformed_trace_context, 3);
    // Clones share the counter.
    let clone = telemetry.clone();
    clone.extract_from_headers(["x"], []);
    assert_eq!(telemetry.health().malformed_trace_context, 4);
}
