use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::recording::tests::{session as recorded_session, write};
use crate::redact::SecretRedactor;

fn replay_of(messages: &[(Sender, Value)], mode: Mode) -> Arc<Replay> {
    let text = write("s", messages, Arc::new(SecretRedactor::default()));
    let recording = Recording::parse(&text, "r").unwrap();
    Arc::new(Replay::new(&recording, mode, Normalizer::default()))
}

fn messages(step: &Step) -> Vec<Value> {
    step.outgoing
        .iter()
        .map(|out| out.message.clone())
        .collect()
}

fn initialize(id: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
           "params": {"protocolVersion": "2025-06-18", "capabilities": {"roots": {}},
                      "clientInfo": {"name": "live", "version": "9"}}})
}

fn call(id: Value, text: &str, token: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "echo", "arguments": {"text": text}, "_meta": {"progressToken": token}}})
}

#[test]
fn a_session_is_replayed_with_live_ids_and_progress_tokens() {
    for mode in [Mode::Strict, Mode::Matching] {
        let replay = replay_of(&recorded_session(), mode);
        let mut session = replay.session();
        assert!(session.start().outgoing.is_empty());
        let step = session.receive(&initialize(json!("init-1")));
        let out = messages(&step);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["id"], "init-1");
        assert_eq!(out[0]["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(step.outgoing[0].owner, Some(json!("init-1")));
        assert!(step.outgoing[0].completes_owner);
        let step =
            session.receive(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert!(step.outgoing.is_empty() && step.notes.is_empty());
        let step = session.receive(&call(json!(41), "hi", json!("live-token")));
        let out = messages(&step);
        assert_eq!(out.len(), 2, "{mode:?}: {out:?}");
        assert_eq!(out[0]["method"], "notifications/progress");
        assert_eq!(out[0]["params"]["progressToken"], "live-token");
        assert_eq!(step.outgoing[0].owner, Some(json!(41)));
        assert!(!step.outgoing[0].completes_owner);
        assert_eq!(out[1]["id"], 41);
        assert_eq!(out[1]["result"]["content"][0]["text"], "Echo: hi");
        assert!(session.unreplayed().is_empty());
    }
}

#[test]
fn strict_mode_names_what_was_expected_and_what_came() {
    let replay = replay_of(&recorded_session(), Mode::Strict);
    let mut session = replay.session();
    let step = session.receive(&call(json!(1), "hi", json!(1)));
    let error = &messages(&step)[0]["error"];
    assert_eq!(error["code"], REPLAY_MISMATCH);
    let text = error["message"].as_str().unwrap();
    assert!(
        text.contains("expected {\"method\":\"initialize\"}"),
        "{text}"
    );
    assert!(
        text.contains("received {\"method\":\"tools/call\""),
        "{text}"
    );
    assert!(text.contains("line 2"), "{text}");
    assert_eq!(step.notes.len(), 1);
    // The session goes on from where it was.
    assert_eq!(
        messages(&session.receive(&initialize(json!(0))))[0]["id"],
        0
    );
}

#[test]
fn a_request_the_recording_lacks_gets_an_error_not_a_hang() {
    let replay = replay_of(&recorded_session(), Mode::Matching);
    let mut session = replay.session();
    session.receive(&initialize(json!(0)));
    let step = session.receive(&call(json!(2), "bye", json!(1)));
    let error = &messages(&step)[0]["error"];
    assert_eq!(error["code"], NOT_RECORDED);
    let text = error["message"].as_str().unwrap();
    assert!(text.contains("\"text\":\"bye\""), "{text}");
    assert!(
        text.contains("unanswered tools/call requests are") && text.contains("\"text\":\"hi\""),
        "{text}"
    );

    let step = session.receive(&json!({"jsonrpc": "2.0", "id": 3, "method": "resources/list"}));
    let text = messages(&step)[0]["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.contains("the recording has no resources/list request"),
        "{text}"
    );

    session.receive(&call(json!(4), "hi", json!(1)));
    let step = session.receive(&call(json!(5), "hi", json!(1)));
    let text = messages(&step)[0]["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("were all answered already"), "{text}");
}

#[test]
fn ping_is_always_answered_and_strays_are_noted() {
    let replay = replay_of(&recorded_session(), Mode::Strict);
    let mut session = replay.session();
    let step = session.receive(&json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}));
    assert_eq!(
        messages(&step),
        vec![json!({"jsonrpc": "2.0", "id": "p", "result": {}})]
    );
    let step = session.receive(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
    );
    assert!(step.outgoing.is_empty());
    assert!(step.notes[0].starts_with("ignored"), "{:?}", step.notes);
}

#[test]
fn concurrent_recorded_requests_do_not_wait_for_each_other() {
    let recorded = vec![
        (
            Sender::Client,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ),
        (
            Sender::Client,
            json!({"jsonrpc": "2.0", "id": 2, "method": "prompts/list"}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"prompts": []}}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}),
        ),
    ];
    let replay = replay_of(&recorded, Mode::Matching);
    let mut session = replay.session();
    // A client that asks one thing at a time, in the other order.
    let out =
        messages(&session.receive(&json!({"jsonrpc": "2.0", "id": "b", "method": "prompts/list"})));
    assert_eq!(
        out,
        vec![json!({"jsonrpc": "2.0", "id": "b", "result": {"prompts": []}})]
    );
    let out =
        messages(&session.receive(&json!({"jsonrpc": "2.0", "id": "a", "method": "tools/list"})));
    assert_eq!(
        out,
        vec![json!({"jsonrpc": "2.0", "id": "a", "result": {"tools": []}})]
    );
}

#[test]
fn a_server_request_during_a_call_waits_for_the_clients_answer() {
    let recorded = vec![
        (
            Sender::Client,
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                "params": {"name": "summarize", "arguments": {}}}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage",
                                "params": {"messages": [], "maxTokens": 10}}),
        ),
        (
            Sender::Client,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"role": "assistant",
                                "content": {"type": "text", "text": "short"}}}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "id": 7, "result": {"content": []}}),
        ),
    ];
    let replay = replay_of(&recorded, Mode::Matching);
    let mut session = replay.session();
    let step = session.receive(&json!({"jsonrpc": "2.0", "id": "x", "method": "tools/call",
                                       "params": {"name": "summarize", "arguments": {}}}));
    let out = messages(&step);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["method"], "sampling/createMessage");
    assert_eq!(out[0]["id"], 0, "server request ids are the recorded ones");
    assert_eq!(step.outgoing[0].owner, Some(json!("x")));
    let step = session.receive(
        &json!({"jsonrpc": "2.0", "id": 0, "result": {"role": "assistant",
                                       "content": {"type": "text", "text": "a live answer"}}}),
    );
    let out = messages(&step);
    assert_eq!(
        out,
        vec![json!({"jsonrpc": "2.0", "id": "x", "result": {"content": []}})]
    );
    assert!(step.outgoing[0].completes_owner);
}

#[test]
fn notifications_come_back_at_their_place() {
    let recorded = vec![
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "method": "notifications/message",
                                "params": {"level": "info", "data": "hello"}}),
        ),
        (
            Sender::Client,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": "add_tool", "arguments": {}}}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
        ),
        (
            Sender::Client,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"name": "new"}]}}),
        ),
    ];
    let replay = replay_of(&recorded, Mode::Strict);
    let mut session = replay.session();
    let start = messages(&session.start());
    assert_eq!(start[0]["method"], "notifications/message");
    let step = session.receive(&json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                                       "params": {"name": "add_tool", "arguments": {}}}));
    let out = messages(&step);
    assert_eq!(out[0]["id"], 10);
    assert_eq!(out[1]["method"], "notifications/tools/list_changed");
    assert_eq!(step.outgoing[1].owner, None, "not on any request's stream");
    let out =
        messages(&session.receive(&json!({"jsonrpc": "2.0", "id": 11, "method": "tools/list"})));
    assert_eq!(out[0]["result"]["tools"][0]["name"], "new");
}

#[test]
fn requests_never_sent_are_listed_at_the_end() {
    let replay = replay_of(&recorded_session(), Mode::Matching);
    let mut session = replay.session();
    session.receive(&initialize(json!(0)));
    let left = session.unreplayed();
    assert_eq!(left.len(), 1);
    assert!(
        left[0].starts_with("line 5: ") && left[0].contains("tools/call"),
        "{left:?}"
    );
    assert_eq!(replay.client_messages(), 3);
}
