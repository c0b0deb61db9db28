use serde_json::json;

use super::*;

const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn a_valid_traceparent_round_trips() {
    let (trace_id, span_id, sampled) = parse_traceparent(VALID).unwrap();
    assert_eq!(trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(span_id.to_string(), "00f067aa0ba902b7");
    assert!(sampled);
    let context = SpanContext {
        trace_id,
        span_id,
        sampled,
        trace_state: None,
    };
    assert_eq!(context.traceparent(), VALID);
    let unsampled = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
    assert!(!unsampled.unwrap().2);
}

#[test]
fn malformed_traceparents_are_refused_with_a_reason() {
    let cases = [
        ("", "shorter"),
        (
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            "shorter",
        ),
        (
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "trace id",
        ),
        (
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "all zeros",
        ),
        (
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "all zeros",
        ),
        (
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "version ff",
        ),
        (
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "exactly 55",
        ),
        (
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
            "separated",
        ),
        (
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "version",
        ),
        (
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01",
            "parent id",
        ),
        (
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "flags",
        ),
    ];
    for (text, reason) in cases {
        let error = parse_traceparent(text).unwrap_err();
        assert!(error.contains(reason), "{text:?}: {error}");
    }
}

#[test]
fn a_later_version_is_read_by_its_first_four_fields() {
    let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds";
    assert!(parse_traceparent(later).is_ok());
    let glued = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x";
    assert!(parse_traceparent(glued).is_err());
}

#[test]
fn tracestate_is_checked_as_the_recommendation_says() {
    assert_eq!(
        parse_tracestate("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE")
            .unwrap()
            .as_str(),
        "rojo=00f067aa0ba902b7, congo=t61rcWkgMzE"
    );
    assert!(parse_tracestate("tenant@vendor=x").is_ok());
    for bad in ["", "novalue", "UPPER=x", "a=", "a=b=c", "a=b,c"] {
        assert!(parse_tracestate(bad).is_err(), "{bad:?}");
    }
    let many: Vec<String> = (0..33).map(|index| format!("k{index}=v")).collect();
    assert!(parse_tracestate(&many.join(",")).is_err());
}

#[test]
fn headers_give_the_parent_and_a_bad_tracestate_keeps_the_traceparent() {
    let extraction = extract_from_headers([VALID], ["rojo=1", "congo=2"]);
    let parent = extraction.parent.unwrap();
    assert_eq!(parent.trace_state.unwrap().as_str(), "rojo=1,congo=2");
    assert_eq!(extraction.malformed, None);

    let extraction = extract_from_headers([VALID], ["=broken"]);
    assert!(extraction.parent.unwrap().trace_state.is_none());
    assert!(matches!(
        extraction.malformed,
        Some(Malformed::Tracestate(_))
    ));

    let extraction = extract_from_headers([VALID, VALID], []);
    assert!(extraction.parent.is_none());
    assert!(matches!(
        extraction.malformed,
        Some(Malformed::Traceparent(_))
    ));

    assert_eq!(extract_from_headers([], []), Extraction::default());
}

#[test]
fn meta_gives_the_parent_from_unprefixed_keys() {
    let meta = json!({"traceparent": VALID, "tracestate": "rojo=1", "progressToken": 7});
    let parent = extract_from_meta(Some(&meta)).parent.unwrap();
    assert_eq!(parent.traceparent(), VALID);
    assert_eq!(parent.trace_state.unwrap().as_str(), "rojo=1");

    let extraction = extract_from_meta(Some(&json!({"traceparent": 5})));
    assert!(extraction.parent.is_none());
    assert!(extraction.malformed.is_some());

    let extraction = extract_from_meta(Some(&json!({"traceparent": "garbage"})));
    assert!(extraction.parent.is_none());
    assert!(extraction.malformed.is_some());

    assert_eq!(extract_from_meta(None), Extraction::default());
    assert_eq!(
        extract_from_meta(Some(&json!({"progressToken": 1}))),
        Extraction::default()
    );
}

#[test]
fn injection_keeps_other_meta_members_and_refuses_a_non_object_meta() {
    let ids = SpanIds::new(None, &Sampler::AlwaysOn);
    let mut params =
        json!({"name": "echo", "_meta": {"progressToken": 3, "tracestate": "stale=1"}})
            .as_object()
            .unwrap()
            .clone();
    assert!(inject_into_params(&ids.context, &mut params));
    assert_eq!(params["_meta"]["progressToken"], 3);
    assert_eq!(params["_meta"]["traceparent"], ids.context.traceparent());
    assert!(
        params["_meta"].get("tracestate").is_none(),
        "a stale tracestate is not kept"
    );

    let mut without_meta = json!({"name": "echo"}).as_object().unwrap().clone();
    assert!(inject_into_params(&ids.context, &mut without_meta));
    assert!(without_meta["_meta"]["traceparent"].is_string());

    let mut odd = json!({"_meta": "not an object"})
        .as_object()
        .unwrap()
        .clone();
    assert!(!inject_into_params(&ids.context, &mut odd));
    assert_eq!(odd["_meta"], "not an object");
}

#[test]
fn header_pairs_carry_tracestate_only_when_there_is_one() {
    let parent = extract_from_headers([VALID], ["rojo=1"]).parent.unwrap();
    let ids = SpanIds::new(Some(&parent), &Sampler::default());
    let pairs = header_pairs(&ids.context);
    assert_eq!(pairs.len(), 2);
    assert_eq!(pairs[0].0, "traceparent");
    assert_eq!(pairs[1], ("tracestate", "rojo=1".to_owned()));
    let root = SpanIds::new(None, &Sampler::default());
    assert_eq!(header_pairs(&root.context).len(), 1);
}

#[test]
fn a_child_continues_the_callers_trace_and_sampling_decision() {
    let parent = extract_from_headers([VALID], []).parent.unwrap();
    let server = SpanIds::new(Some(&parent), &Sampler::default());
    assert_eq!(server.context.trace_id, parent.trace_id);
    assert_eq!(server.parent_span_id, Some(parent.span_id));
    assert_ne!(server.context.span_id, parent.span_id);
    assert!(server.recorded);
    let client = server.child();
    assert_eq!(client.context.trace_id, parent.trace_id);
    assert_eq!(client.parent_span_id, Some(server.context.span_id));

    let unsampled = extract_from_headers(
        ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"],
        [],
    )
    .parent
    .unwrap();
    let server = SpanIds::new(Some(&unsampled), &Sampler::default());
    assert!(!server.recorded);
    assert!(!server.child().recorded);
    assert!(server.child().context.traceparent().ends_with("-00"));
}

#[test]
fn pass_through_forwards_the_callers_context_or_nothing() {
    let parent = extract_from_headers([VALID], []).parent.unwrap();
    let ids = SpanIds::pass_through(Some(&parent));
    assert_eq!(ids.upstream_context(), Some(&parent));
    assert_eq!(ids.child().upstream_context(), Some(&parent));
    assert!(!ids.recorded);
    let none = SpanIds::pass_through(None);
    assert_eq!(none.upstream_context(), None);
    assert_eq!(none.child().upstream_context(), None);
}

#[test]
fn random_ids_are_never_zero_and_differ() {
    let a = SpanIds::new(None, &Sampler::AlwaysOn);
    let b = SpanIds::new(None, &Sampler::AlwaysOn);
    assert_ne!(a.context.trace_id, b.context.trace_id);
    assert_ne!(a.context.span_id, b.context.span_id);
    assert!(parse_traceparent(&a.context.traceparent()).is_ok());
}

/// Our reading agrees with the OpenTelemetry SDK's `TraceContextPropagator` (the reference
/// implementation) on valid and invalid values.
#[test]
fn extraction_agrees_with_the_sdk_propagator() {
    use opentelemetry::propagation::TextMapPropagator as _;
    use opentelemetry::trace::TraceContextExt as _;
    use std::collections::HashMap;

    let propagator = opentelemetry_sdk::propagation::TraceContextPropagator::new();
    let cases = [
        VALID,
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "garbage",
    ];
    for text in cases {
        let mut carrier = HashMap::new();
        carrier.insert("traceparent".to_owned(), text.to_owned());
        let sdk = propagator.extract(&carrier);
        let sdk_span = sdk.span();
        let sdk_context = sdk_span.span_context();
        let ours = extract_from_headers([text], []).parent;
        assert_eq!(ours.is_some(), sdk_context.is_valid(), "{text}");
        if let Some(ours) = ours {
            assert_eq!(
                ours.trace_id.to_string(),
                sdk_context.trace_id().to_string()
            );
            assert_eq!(ours.span_id.to_string(), sdk_context.span_id().to_string());
            assert_eq!(ours.sampled, sdk_context.is_sampled());
        }
    }
}
