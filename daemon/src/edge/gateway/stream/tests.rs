//! The host relay's messages and answers, without a socket.

use super::*;

fn relay(
    progress: Option<Value>,
    log_level: Option<usize>,
) -> (Arc<HostRelay>, mpsc::Receiver<Value>) {
    let host = HostCapabilities {
        elicitation: true,
        sampling: true,
        url_elicitation: false,
    };
    HostRelay::new(7, progress, host, log_level)
}

fn event_of(kind: &str, members: Value) -> Map<String, Value> {
    let mut event = members.as_object().unwrap().clone();
    event.insert("type".to_owned(), json!(kind));
    event
}

#[test]
fn progress_goes_out_under_the_hosts_token_only_when_it_gave_one() {
    let (with, mut sent) = relay(Some(json!("p-1")), None);
    with.push(event_of("progress", json!({"progress": 50, "total": 100})));
    assert_eq!(
        sent.try_recv().unwrap(),
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
               "params": {"progressToken": "p-1", "progress": 50, "total": 100}})
    );
    let beats = with.progress_beats();
    assert_eq!(*beats.borrow(), 1);
    let (without, mut sent) = relay(None, None);
    without.push(event_of("progress", json!({"progress": 1})));
    assert!(sent.try_recv().is_err());
}

#[test]
fn log_messages_below_the_level_are_not_sent() {
    let (relay, mut sent) = relay(None, log_level_rank("warning"));
    relay.push(event_of("log", json!({"level": "info", "data": "quiet"})));
    relay.push(event_of(
        "log",
        json!({"level": "error", "logger": "db", "data": "loud"}),
    ));
    assert_eq!(
        sent.try_recv().unwrap(),
        json!({"jsonrpc": "2.0", "method": "notifications/message",
               "params": {"level": "error", "logger": "db", "data": "loud"}})
    );
    assert!(sent.try_recv().is_err());
}

#[test]
fn a_question_goes_to_the_host_and_its_answer_to_the_server() {
    let (relay, mut sent) = relay(None, None);
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}},
                        "required": ["name"]});
    let (question, mut waiting) =
        relay.ask(schema, event_of("elicitation", json!({"message": "who?"})));
    let request = sent.try_recv().unwrap();
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "who?");
    let id = request["id"].clone();
    assert_eq!(id, json!(format!("tool-cli/7/{question}")));
    // Another call's id, and an answer that does not fit, are told apart.
    assert_eq!(
        relay.answer(&json!("tool-cli/8/e1"), &Ok(json!({}))),
        Answered::NotOurs
    );
    assert_eq!(
        relay.answer(
            &id,
            &Ok(json!({"action": "accept", "content": {"name": "Ada"}}))
        ),
        Answered::Delivered
    );
    let (action, content) = waiting.try_recv().unwrap();
    assert_eq!(action, ElicitationAnswer::Accept);
    assert_eq!(content.unwrap()["name"], "Ada");
    assert!(matches!(
        relay.answer(&id, &Ok(json!({"action": "decline"}))),
        Answered::Declined(_)
    ));
}

#[tokio::test]
async fn a_sampling_request_goes_to_the_host_and_its_answer_back() {
    let (relay, mut sent) = relay(None, None);
    let asked = relay.sample(json!({"messages": [], "maxTokens": 10}));
    let mut asked = std::pin::pin!(asked);
    // Polled once, the request is out.
    assert!(futures_util::poll!(asked.as_mut()).is_pending());
    let request = sent.try_recv().unwrap();
    assert_eq!(request["method"], "sampling/createMessage");
    assert_eq!(request["params"]["maxTokens"], 10);
    let answer = json!({"role": "assistant", "content": {"type": "text", "text": "hi"},
                        "model": "host-model"});
    assert_eq!(
        relay.answer(&request["id"], &Ok(answer.clone())),
        Answered::Delivered
    );
    assert_eq!(asked.await, Ok(answer));
    // A host error, and a call that ends first.
    let refused = relay.sample(json!({}));
    let mut refused = std::pin::pin!(refused);
    assert!(futures_util::poll!(refused.as_mut()).is_pending());
    let id = sent.try_recv().unwrap()["id"].clone();
    relay.answer(&id, &Err(json!({"code": -1, "message": "user rejected"})));
    assert!(refused.await.unwrap_err().contains("user rejected"));
    let orphan = relay.sample(json!({}));
    relay.finish();
    assert!(orphan.await.unwrap_err().contains("ended"));
}

#[test]
fn host_capabilities_come_from_initialize() {
    assert_eq!(HostCapabilities::of(None), HostCapabilities::default());
    let both = HostCapabilities::of(Some(&json!({"elicitation": {}, "sampling": {}})));
    assert!(both.elicitation && both.sampling);
    assert!(
        !both.url_elicitation,
        "an empty elicitation object is forms only"
    );
    let url_only = HostCapabilities::of(Some(&json!({"elicitation": {"url": {}}})));
    assert!(!url_only.elicitation && url_only.url_elicitation);
    let form = HostCapabilities::of(Some(&json!({"elicitation": {"form": {}, "url": {}}})));
    assert!(form.elicitation && form.url_elicitation && !form.sampling);
}

fn sign_in() -> crate::provider::UrlQuestion {
    crate::provider::UrlQuestion {
        message: "Sign in".to_owned(),
        url: "https://example.com/sign-in".to_owned(),
        elicitation_id: "e-1".to_owned(),
    }
}

#[test]
fn a_url_question_goes_to_a_url_host_and_into_a_form_only_hosts_result() {
    use crate::provider::UrlRelay;
    // A host that opens pages is asked, and its accept reaches the server without content.
    let host = HostCapabilities {
        elicitation: true,
        sampling: false,
        url_elicitation: true,
    };
    let (relay, mut sent) = HostRelay::new(3, None, host, None);
    let UrlRelay::Asked(_, mut answer) = relay.ask_url(&sign_in()) else {
        panic!("a URL host is asked");
    };
    let asked = sent.try_recv().unwrap();
    assert_eq!(asked["method"], "elicitation/create");
    assert_eq!(asked["params"]["mode"], "url");
    assert_eq!(asked["params"]["url"], "https://example.com/sign-in");
    assert_eq!(asked["params"]["elicitationId"], "e-1");
    assert_eq!(
        relay.answer(&asked["id"], &Ok(json!({"action": "accept"}))),
        Answered::Delivered
    );
    assert_eq!(
        answer.try_recv().unwrap(),
        (
            tool_cli_protocol::elicitation::ElicitationAnswer::Accept,
            None
        )
    );

    // A form-only host is not asked; the URL goes into the call's result.
    let (relay, mut sent) = relay_for_forms();
    assert!(matches!(relay.ask_url(&sign_in()), UrlRelay::InResult));
    assert!(sent.try_recv().is_err(), "nothing is sent to the host");
    let answer =
        relay.with_shown_urls(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#.to_owned());
    assert!(answer.contains("https://example.com/sign-in"), "{answer}");
    assert_eq!(
        relay.with_shown_urls(answer.clone()),
        answer,
        "named once, in the one answer"
    );
}

fn relay_for_forms() -> (
    std::sync::Arc<HostRelay>,
    tokio::sync::mpsc::Receiver<Value>,
) {
    let host = HostCapabilities {
        elicitation: true,
        sampling: false,
        url_elicitation: false,
    };
    HostRelay::new(4, None, host, None)
}

#[test]
fn a_declining_host_or_an_answer_that_does_not_fit_declines_the_question() {
    let (relay, mut sent) = relay(None, None);
    let schema = json!({"type": "object", "properties": {"age": {"type": "integer"}}});
    let (_, mut first) = relay.ask(schema.clone(), Map::new());
    let id = sent.try_recv().unwrap()["id"].clone();
    assert_eq!(
        relay.answer(&id, &Ok(json!({"action": "decline"}))),
        Answered::Delivered
    );
    assert_eq!(first.try_recv().unwrap().0, ElicitationAnswer::Decline);
    let (_, mut second) = relay.ask(schema.clone(), Map::new());
    let id = sent.try_recv().unwrap()["id"].clone();
    let refused = relay.answer(
        &id,
        &Ok(json!({"action": "accept", "content": {"age": "old"}})),
    );
    assert!(
        matches!(&refused, Answered::Declined(why) if why.contains("age")),
        "{refused:?}"
    );
    // The waiter was dropped: the server's request is declined with the reason.
    assert!(second.try_recv().is_err());
    let (_, mut third) = relay.ask(schema, Map::new());
    let id = sent.try_recv().unwrap()["id"].clone();
    let refused = relay.answer(
        &id,
        &Err(json!({"code": -32601, "message": "no forms here"})),
    );
    assert!(matches!(&refused, Answered::Declined(why) if why.contains("no forms here")));
    assert!(third.try_recv().is_err());
}
