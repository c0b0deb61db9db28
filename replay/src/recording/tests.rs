use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::redact::{REDACTED, SecretRedactor};

fn facts(server: &str) -> RecordingFacts {
    RecordingFacts {
        server: server.to_owned(),
        transport: "stdio".to_owned(),
        source: json!({"command": "node", "args": ["server.js"]}),
    }
}

/// A small session: initialize, initialized, a tool call with a progress notification.
pub(crate) fn session() -> Vec<(Sender, Value)> {
    vec![
        (
            Sender::Client,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}}}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18",
                   "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}}),
        ),
        (
            Sender::Client,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ),
        (
            Sender::Client,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": {"progressToken": 5}}}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": 5, "progress": 1, "total": 2}}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "Echo: hi"}]}}),
        ),
    ]
}

pub(crate) fn write(
    server: &str,
    messages: &[(Sender, Value)],
    redactor: Arc<dyn Redact>,
) -> String {
    let mut writer = RecordingWriter::new(Vec::new(), facts(server), redactor);
    for (from, message) in messages {
        writer.record(*from, message).unwrap();
    }
    String::from_utf8(writer.finish().unwrap()).unwrap()
}

fn no_redaction() -> Arc<dyn Redact> {
    Arc::new(SecretRedactor::default())
}

#[test]
fn a_written_recording_loads_back_with_its_header_and_messages() {
    let text = write("everything", &session(), no_redaction());
    assert_eq!(text.lines().count(), 1 + 6 + 1);
    let recording = Recording::parse(&text, "rec.ndjson").unwrap();
    assert_eq!(recording.header.format, FORMAT);
    assert_eq!(recording.header.version, 1);
    assert_eq!(recording.header.server, "everything");
    assert_eq!(recording.header.transport, "stdio");
    assert_eq!(
        recording.header.protocol_version.as_deref(),
        Some("2025-06-18")
    );
    assert!(is_rfc3339_like(&recording.header.recorded_at));
    assert_eq!(recording.header.source["command"], "node");
    assert_eq!(recording.entries.len(), 6);
    assert_eq!(recording.entries[0].seq, 1);
    assert_eq!(recording.entries[5].from, Sender::Server);
    assert_eq!(
        recording.entries[2].message["method"],
        "notifications/initialized"
    );
    assert!(
        recording
            .entries
            .windows(2)
            .all(|pair| pair[0].t <= pair[1].t)
    );
    recording.check_server("everything", "rec.ndjson").unwrap();
}

fn is_rfc3339_like(text: &str) -> bool {
    crate::normalize::is_timestamp(text)
}

#[test]
fn a_server_that_never_answers_initialize_still_gets_a_header() {
    let messages = &session()[..1];
    let recording = Recording::parse(&write("s", messages, no_redaction()), "r").unwrap();
    assert_eq!(recording.header.protocol_version, None);
    assert_eq!(recording.entries.len(), 1);
}

#[test]
fn none_of_five_seeded_secrets_reaches_the_file() {
    let secrets = [
        "sk-live-AAAA1111",
        "ghp_BBBB2222",
        "Bearer-CCCC3333",
        "pw-DDDD4444",
        "xoxb-EEEE5555",
    ];
    let redactor: Arc<dyn Redact> = Arc::new(SecretRedactor::new(
        secrets.iter().map(|secret| (*secret).to_owned()),
    ));
    let facts = RecordingFacts {
        server: "remote".to_owned(),
        transport: "http".to_owned(),
        source: json!({
            "url": "https://mcp.example/mcp",
            "headers": {"Authorization": format!("Bearer {}", secrets[2])},
            "env": {"GITHUB_TOKEN": secrets[1], "PLAIN": "visible"},
        }),
    };
    let mut writer = RecordingWriter::new(Vec::new(), facts, redactor);
    let messages = [
        (
            Sender::Client,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": format!("key {}", secrets[0]),
                                                        "api_key": "whatever-it-is"}}}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [
            {"type": "text", "text": format!("login with {} ok", secrets[3])}]}}),
        ),
        (
            Sender::Client,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "post", "arguments": {"headers": {"Cookie": "session=1"},
                                                      "env": {"SLACK": secrets[4]}}}}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32000,
            "message": format!("bad token {}", secrets[4])}}),
        ),
    ];
    for (from, message) in &messages {
        writer.record(*from, message).unwrap();
    }
    let text = String::from_utf8(writer.finish().unwrap()).unwrap();
    let found: Vec<&&str> = secrets
        .iter()
        .filter(|secret| text.contains(**secret))
        .collect();
    assert!(found.is_empty(), "{found:?} in\n{text}");
    assert!(text.contains(REDACTED));
    assert!(text.contains("visible"), "what is not a secret stays");
    assert!(
        !text.contains("whatever-it-is"),
        "a credential member is replaced whole"
    );
    // Still a valid recording.
    Recording::parse(&text, "r").unwrap();
}

fn error(text: &str) -> LoadError {
    Recording::parse(text, "rec.ndjson").unwrap_err()
}

#[test]
fn a_truncated_recording_is_refused_naming_where_it_stops() {
    let text = write("s", &session(), no_redaction());
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines[..lines.len() - 1].join("\n") + "\n";
    assert_eq!(
        error(&cut),
        LoadError::Truncated {
            path: "rec.ndjson".into(),
            line: 7
        }
    );
    // Cut in the middle of a line: that line's sum cannot match.
    let half = &text[..text.len() - 20];
    assert!(matches!(
        error(half),
        LoadError::Tampered { line: 8, .. } | LoadError::Malformed { .. }
    ));
    assert_eq!(
        error(""),
        LoadError::Empty {
            path: "rec.ndjson".into()
        }
    );
    let message = error(&cut).to_string();
    assert!(
        message.contains("cut short") && message.contains("re-record"),
        "{message}"
    );
}

#[test]
fn a_changed_moved_or_removed_line_is_refused_naming_the_line() {
    let text = write("s", &session(), no_redaction());
    let changed = text.replacen("Echo: hi", "Echo: HI", 1);
    assert_eq!(
        error(&changed),
        LoadError::Tampered {
            path: "rec.ndjson".into(),
            line: 7
        }
    );
    let mut lines: Vec<&str> = text.lines().collect();
    lines.remove(3);
    assert!(matches!(
        error(&(lines.join("\n") + "\n")),
        LoadError::Tampered { line: 4, .. }
    ));
    let mut lines: Vec<&str> = text.lines().collect();
    lines.swap(2, 3);
    assert!(matches!(
        error(&(lines.join("\n") + "\n")),
        LoadError::Tampered { line: 3, .. }
    ));
    let message = error(&changed).to_string();
    assert!(
        message.contains("line 7") && message.contains("changed"),
        "{message}"
    );
}

#[test]
fn a_recording_of_another_server_is_refused() {
    let recording =
        Recording::parse(&write("everything", &session(), no_redaction()), "r").unwrap();
    let refused = recording.check_server("memory", "r").unwrap_err();
    assert!(matches!(refused, LoadError::OtherServer { .. }));
    let message = refused.to_string();
    assert!(
        message.contains("\"everything\"") && message.contains("\"memory\""),
        "{message}"
    );
}

#[test]
fn other_formats_and_newer_versions_are_refused() {
    assert!(matches!(
        error("{\"hello\": 1}\n"),
        LoadError::NotARecording { .. }
    ));
    let mut chain = crate::chain::Chain::default();
    let newer = chain.seal(json!({"format": FORMAT, "version": 2}).as_object().unwrap());
    assert!(matches!(error(&newer), LoadError::Version { found: 2, .. }));
    let mut chain = crate::chain::Chain::default();
    let other = chain.seal(
        json!({"format": "something-else", "version": 1})
            .as_object()
            .unwrap(),
    );
    assert!(matches!(error(&other), LoadError::NotARecording { .. }));
}

#[test]
fn content_after_the_end_marker_and_non_json_rpc_lines_are_refused() {
    let text = write("s", &session(), no_redaction());
    assert!(matches!(
        error(&(text.clone() + "more\n")),
        LoadError::Malformed { line: 9, .. }
    ));
    // A sealed line whose message is not JSON-RPC.
    let mut writer = RecordingWriter::new(Vec::new(), facts("s"), no_redaction());
    writer
        .record(Sender::Client, &json!({"hello": "world"}))
        .unwrap();
    let text = String::from_utf8(writer.finish().unwrap()).unwrap();
    let refused = error(&text);
    assert!(
        matches!(refused, LoadError::Malformed { line: 2, .. }),
        "{refused}"
    );
}

#[test]
fn timestamps_are_rfc3339_utc() {
    let time = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_709_210_096);
    assert_eq!(rfc3339(time), "2024-02-29T12:34:56Z");
    assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
}
