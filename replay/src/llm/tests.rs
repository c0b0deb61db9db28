use std::sync::Arc;
use std::time::Instant;

use super::*;
use crate::redact::SecretRedactor;

fn exchange(body: &str, chunks: &[&str]) -> (RecordedRequest, RecordedResponse) {
    (
        RecordedRequest {
            method: "POST".to_owned(),
            path: "/v1/messages".to_owned(),
            headers: vec![
                ("content-type".to_owned(), "application/json".to_owned()),
                ("x-api-key".to_owned(), "sk-ant-SECRET".to_owned()),
                ("anthropic-version".to_owned(), "2023-06-01".to_owned()),
            ],
            body: Bytes::of(body.as_bytes()),
        },
        RecordedResponse {
            status: 200,
            headers: vec![
                ("content-type".to_owned(), "text/event-stream".to_owned()),
                ("content-length".to_owned(), "99".to_owned()),
                ("request-id".to_owned(), "req_1".to_owned()),
            ],
            chunks: chunks
                .iter()
                .map(|chunk| Bytes::of(chunk.as_bytes()))
                .collect(),
        },
    )
}

fn write(exchanges: &[(RecordedRequest, RecordedResponse)]) -> String {
    let redactor = Arc::new(SecretRedactor::new(["sk-ant-SECRET".to_owned()]));
    let mut writer = LlmWriter::new(Vec::new(), "https://api.anthropic.com", redactor).unwrap();
    for (request, response) in exchanges {
        writer
            .record(Instant::now(), request.clone(), response.clone())
            .unwrap();
    }
    String::from_utf8(writer.finish().unwrap()).unwrap()
}

#[test]
fn exchanges_round_trip_with_headers_filtered_and_secrets_out() {
    let body = r#"{"model":"claude","max_tokens":100,"messages":[{"role":"user","content":"key sk-ant-SECRET"}]}"#;
    let text = write(&[exchange(
        body,
        &[
            "event: a\ndata: {}\n\n",
            "event: b\ndata: {\"usage\":{\"output_tokens\":3}}\n\n",
        ],
    )]);
    assert!(!text.contains("sk-ant-SECRET"), "{text}");
    assert!(
        !text.contains("x-api-key"),
        "an API key header is never recorded"
    );
    let recording = LlmRecording::parse(&text, "r").unwrap();
    assert_eq!(recording.upstream, "https://api.anthropic.com");
    let exchange = &recording.exchanges[0];
    assert_eq!(
        exchange.request.headers,
        vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("anthropic-version".to_owned(), "2023-06-01".to_owned()),
        ]
    );
    assert_eq!(
        exchange.response.headers.len(),
        2,
        "content-length is not kept"
    );
    assert_eq!(exchange.response.chunks.len(), 2);
    assert!(
        String::from_utf8(exchange.response.body())
            .unwrap()
            .contains("\"output_tokens\":3")
    );
    // Counts are not credentials: max_tokens survives redaction.
    assert!(text.contains("max_tokens"), "{text}");
}

#[test]
fn binary_bodies_are_kept_as_base64() {
    let bytes = [0u8, 159, 146, 150];
    assert_eq!(Bytes::of(&bytes), Bytes::Base64("AJ+Slg==".to_owned()));
    assert_eq!(Bytes::of(&bytes).to_vec(), bytes);
}

#[test]
fn damaged_llm_recordings_are_refused() {
    let text = write(&[exchange("{}", &["x"]), exchange("{\"a\":1}", &["y"])]);
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines[..lines.len() - 1].join("\n");
    assert!(matches!(
        LlmRecording::parse(&cut, "r"),
        Err(LlmLoadError::Truncated { line: 3, .. })
    ));
    let changed = text.replacen("\"y\"", "\"z\"", 1);
    assert!(matches!(
        LlmRecording::parse(&changed, "r"),
        Err(LlmLoadError::Tampered { line: 3, .. })
    ));
    let mcp = crate::recording::tests::write("s", &[], Arc::new(SecretRedactor::default()));
    assert!(matches!(
        LlmRecording::parse(&mcp, "r"),
        Err(LlmLoadError::NotARecording { .. })
    ));
}

#[test]
fn request_keys_ignore_member_order_timestamps_and_named_pointers() {
    let normalizer = Normalizer {
        ignore: vec!["/metadata".to_owned()],
    };
    let a = request_key(
        "POST",
        "/v1/chat",
        br#"{"b":1,"a":"2026-01-01T00:00:00Z","metadata":{"run":1}}"#,
        &normalizer,
    );
    let b = request_key(
        "POST",
        "/v1/chat",
        br#"{"a":"2027-02-02T10:00:00Z","b":1,"metadata":{"run":2}}"#,
        &normalizer,
    );
    assert_eq!(a, b);
    assert_ne!(
        a,
        request_key("POST", "/v1/other", br#"{"b":1}"#, &normalizer)
    );
    assert_eq!(
        request_key("GET", "/x", b"plain", &normalizer),
        "GET /x plain"
    );
}
