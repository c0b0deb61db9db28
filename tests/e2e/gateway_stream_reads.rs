//! SSE answers to `resources/read` and `prompts/get` at the MCP gateway
//! (`daemon/src/edge/gateway/mod.rs`, `STREAMED_METHODS`): a server that reports progress, logs
//! or asks a question while it reads a resource or renders a prompt
//! (`tests/fixtures/talking_reads_server.py`) is heard by a host that accepts
//! `text/event-stream`, as during a `tools/call`; a host that drops the stream or cancels the
//! request cancels it at the server. Driven over raw HTTP.
//!
//! Input → test:
//! - a read's log messages and progress, a read's question answered (accept), a prompt's log,
//!   progress and question (declined), and a read without `Accept: text/event-stream` answered
//!   as one JSON body: `reads_and_prompts_stream_what_the_server_says`
//! - a streamed read the host drops, a streamed prompt the host cancels with
//!   `notifications/cancelled`: `a_dropped_or_cancelled_read_cancels_it_at_the_server`
//!
//! And URL-mode elicitation on a call's stream (`url_elicitation.rs`), with
//! `@modelcontextprotocol/server-everything`'s `trigger-url-elicitation` (offered only to a
//! client that declares URL mode: the daemon does so for a server with `"elicitation": "ask"`
//! alone): a host that declared `elicitation.url` is asked and its accept reaches the server; a
//! form-only host is not asked, the server is told it was declined (with the reason), and the
//! URL comes back in the call's result; the same tool's error path (`-32042`) goes back to a URL
//! host as that error, and names its pages in a form-only host's result:
//! `url_elicitation_asks_a_url_host_and_comes_back_in_a_form_only_hosts_result`

use std::io::{BufRead as _, BufReader};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, HttpResponse, eventually, everything_stdio, http_request_bytes, open_http_stream,
    raw_http_exchange, repo_root,
};

/// Longest wait for any one event.
const WAIT: Duration = Duration::from_secs(30);

/// A daemon whose server `talk` talks while it reads; cancellations it saw go to `cancelled.txt`.
fn talking_daemon() -> Daemon {
    Daemon::start_with_dir(|dir| {
        json!({"mcpServers": {"talk": {
            "command": tool_cli_tests::peer_python(),
            "args": [
                repo_root().join("tests/fixtures/talking_reads_server.py"),
                dir.join("cancelled.txt"),
            ],
            "elicitation": "ask",
        }}})
    })
}

fn post(daemon: &Daemon, headers: &[(&str, &str)], body: &Value) -> HttpResponse {
    let host = format!("127.0.0.1:{}", daemon.port);
    let bearer = format!("Bearer {}", daemon.token);
    let mut all = vec![
        ("Host", host.as_str()),
        ("Content-Type", "application/json"),
        ("Authorization", bearer.as_str()),
    ];
    all.extend_from_slice(headers);
    raw_http_exchange(
        daemon.port,
        &http_request_bytes("POST", "/mcp", &all, body.to_string().as_bytes()),
    )
    .expect("an HTTP answer")
}

/// Opens a session whose host shows forms; its id.
fn open_session(daemon: &Daemon) -> String {
    open_session_with(daemon, json!({"elicitation": {}}))
}

/// Opens a session whose host declared `capabilities`; its id.
fn open_session_with(daemon: &Daemon, capabilities: Value) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "raw", "version": "1"}}});
    let answer = post(daemon, &[], &initialize);
    answer
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session: {answer:?}"))
        .to_owned()
}

/// Posts `request` accepting an SSE answer; the open connection, its headers read and checked
/// to be an event stream.
fn start_streamed(daemon: &Daemon, session: &str, request: &Value) -> BufReader<TcpStream> {
    let host = format!("127.0.0.1:{}", daemon.port);
    let bearer = format!("Bearer {}", daemon.token);
    let headers = [
        ("Host", host.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", bearer.as_str()),
        ("Mcp-Session-Id", session),
    ];
    let request_bytes =
        http_request_bytes("POST", "/mcp", &headers, request.to_string().as_bytes());
    let (reader, event_stream) = open_http_stream(daemon.port, &request_bytes, WAIT);
    assert!(event_stream, "a streamed answer to {request}");
    reader
}

/// The next JSON-RPC message of an SSE answer (each event is one chunk), or `None` at its end.
fn next_message(reader: &mut BufReader<TcpStream>) -> Option<Value> {
    loop {
        let mut line = String::new();
        if reader
            .read_line(&mut line)
            .expect("the stream goes on or ends")
            == 0
            || line == "0\r\n"
        {
            return None;
        }
        if let Some(data) = line.strip_prefix("data: ") {
            return Some(serde_json::from_str(data.trim()).expect("a JSON message"));
        }
    }
}

/// Every message up to and including the first that `stop` accepts (or the end).
fn messages_until(
    reader: &mut BufReader<TcpStream>,
    mut stop: impl FnMut(&Value) -> bool,
) -> Vec<Value> {
    let mut messages = Vec::new();
    while let Some(message) = next_message(reader) {
        let done = stop(&message);
        messages.push(message);
        if done {
            break;
        }
    }
    messages
}

fn of_method<'a>(messages: &'a [Value], method: &str) -> Vec<&'a Value> {
    messages
        .iter()
        .filter(|message| message["method"] == method)
        .collect()
}

/// The host's answer to our question `question`.
fn answer_question(daemon: &Daemon, session: &str, question: &Value, result: Value) {
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": result});
    let posted = post(daemon, &[("Mcp-Session-Id", session)], &answer);
    assert_eq!(posted.status, 202, "{posted:?}");
}

#[test]
fn reads_and_prompts_stream_what_the_server_says() {
    let daemon = talking_daemon();
    let session = open_session(&daemon);

    // A read that logs and reports progress.
    let read = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                      "params": {"uri": "talk://progress", "_meta": {"progressToken": "read-1"}}});
    let mut stream = start_streamed(&daemon, &session, &read);
    let messages = messages_until(&mut stream, |_| false);
    let logs: Vec<&Value> = of_method(&messages, "notifications/message")
        .into_iter()
        .map(|message| &message["params"]["data"])
        .collect();
    assert_eq!(
        logs,
        [&json!("reading step 1"), &json!("reading step 2")],
        "{messages:?}"
    );
    let progress = of_method(&messages, "notifications/progress");
    assert_eq!(progress.len(), 2, "{messages:?}");
    for (step, notice) in progress.iter().enumerate() {
        assert_eq!(notice["params"]["progressToken"], "read-1", "{messages:?}");
        assert_eq!(notice["params"]["progress"], json!(step as f64 + 1.0));
    }
    let answer = messages.last().expect("an answer");
    assert_eq!(answer["id"], 1, "the answer comes last: {messages:?}");
    assert_eq!(
        answer["result"]["contents"][0]["text"],
        "read after two steps"
    );

    // A read that asks the host; the host accepts.
    let read = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                      "params": {"uri": "talk://ask"}});
    let mut stream = start_streamed(&daemon, &session, &read);
    let asked = messages_until(&mut stream, |message| {
        message["method"] == "elicitation/create"
    });
    let question = asked.last().expect("a question");
    assert_eq!(question["params"]["message"], "Which colour to read?");
    answer_question(
        &daemon,
        &session,
        question,
        json!({"action": "accept", "content": {"colour": "teal"}}),
    );
    let rest = messages_until(&mut stream, |_| false);
    let answer = rest.last().expect("an answer");
    assert_eq!(answer["id"], 2, "{rest:?}");
    let text = answer["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("action=accept") && text.contains("teal"),
        "{answer}"
    );

    // A prompt that logs, reports progress and asks; the host declines.
    let get = json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/get",
                     "params": {"name": "talk__talk_prompt", "_meta": {"progressToken": 9}}});
    let mut stream = start_streamed(&daemon, &session, &get);
    let asked = messages_until(&mut stream, |message| {
        message["method"] == "elicitation/create"
    });
    assert_eq!(
        of_method(&asked, "notifications/message")[0]["params"]["data"],
        "rendering the prompt",
        "{asked:?}"
    );
    let progress = of_method(&asked, "notifications/progress");
    assert_eq!(progress[0]["params"]["progressToken"], 9, "{asked:?}");
    let question = asked.last().expect("a question");
    assert_eq!(question["params"]["message"], "Which colour to render?");
    answer_question(&daemon, &session, question, json!({"action": "decline"}));
    let rest = messages_until(&mut stream, |_| false);
    let answer = rest.last().expect("an answer");
    assert_eq!(answer["id"], 3, "{rest:?}");
    let said = answer["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(said.contains("action=decline"), "{answer}");

    // Without Accept: text/event-stream, one JSON body as before.
    let read = json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read",
                      "params": {"uri": "talk://progress"}});
    let plain = post(&daemon, &[("Mcp-Session-Id", session.as_str())], &read);
    assert_eq!(plain.header("content-type"), Some("application/json"));
    let answer: Value = serde_json::from_slice(&plain.body).expect("a JSON answer");
    assert_eq!(
        answer["result"]["contents"][0]["text"],
        "read after two steps"
    );
}

/// Waits until the server wrote `line` to its file of cancellations.
fn wait_for_cancellation(daemon: &Daemon, line: &str) {
    let file = daemon.dir().join("cancelled.txt");
    let deadline = Instant::now() + WAIT;
    while !std::fs::read_to_string(&file).is_ok_and(|text| text.lines().any(|seen| seen == line)) {
        assert!(
            Instant::now() < deadline,
            "the server never saw {line:?} cancelled"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_dropped_or_cancelled_read_cancels_it_at_the_server() {
    let daemon = talking_daemon();
    let session = open_session(&daemon);
    let is_waiting = |message: &Value| message["method"] == "notifications/message";

    // The host drops the stream of a read the server is working on.
    let read = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                      "params": {"uri": "talk://hang"}});
    let mut dropped = start_streamed(&daemon, &session, &read);
    let said = messages_until(&mut dropped, is_waiting);
    assert!(
        said.last().is_some_and(is_waiting),
        "the server said it waits: {said:?}"
    );
    drop(dropped);
    wait_for_cancellation(&daemon, "resources/read talk://hang");

    // The host cancels a prompt it asked for: the stream ends with no answer.
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "prompts/get",
                     "params": {"name": "talk__hang_prompt"}});
    let mut cancelled = start_streamed(&daemon, &session, &get);
    let said = messages_until(&mut cancelled, is_waiting);
    assert!(said.last().is_some_and(is_waiting), "{said:?}");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 2, "reason": "the user pressed stop"}});
    assert_eq!(
        post(&daemon, &[("Mcp-Session-Id", session.as_str())], &cancel).status,
        202
    );
    let rest = messages_until(&mut cancelled, |_| false);
    assert!(
        rest.iter().all(|message| message.get("result").is_none()),
        "no answer to a cancelled request: {rest:?}"
    );
    wait_for_cancellation(&daemon, "prompts/get hang_prompt");

    // The daemon still answers the session.
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    assert_eq!(
        post(&daemon, &[("Mcp-Session-Id", session.as_str())], &ping).status,
        200
    );
}

/// The gateway names of the tools a session lists.
fn listed_tools(daemon: &Daemon, session: &str) -> Vec<String> {
    let list = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"});
    let answer = post(daemon, &[("Mcp-Session-Id", session)], &list);
    let answer: Value = serde_json::from_slice(&answer.body).expect("a JSON answer");
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {answer}"))
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect()
}

/// The texts of a `tools/call` answer's content.
fn texts(answer: &Value) -> Vec<String> {
    answer["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content: {answer}"))
        .iter()
        .filter_map(|item| item["text"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn url_elicitation_asks_a_url_host_and_comes_back_in_a_form_only_hosts_result() {
    let mut asking = everything_stdio();
    asking["elicitation"] = json!("ask");
    let daemon = Daemon::start(json!({"mcpServers": {
        "asking": asking,
        "plain": everything_stdio(),
    }}));
    let url_host = open_session_with(&daemon, json!({"elicitation": {"form": {}, "url": {}}}));
    // Offered only to the server whose questions reach the caller (the tool registers itself
    // once the server saw URL mode declared, and may be listed a moment later).
    assert!(
        eventually(WAIT, || listed_tools(&daemon, &url_host)
            .iter()
            .any(|name| name == "asking__trigger-url-elicitation")),
        "{:?}",
        listed_tools(&daemon, &url_host)
    );
    assert!(
        !listed_tools(&daemon, &url_host)
            .iter()
            .any(|name| name == "plain__trigger-url-elicitation"),
        "a server whose questions are declined is not offered URL mode"
    );
    let call = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "asking__trigger-url-elicitation",
            "arguments": {"url": "https://example.com/sign-in", "message": "Sign in to continue"}}})
    };

    // A host that opens pages is asked as the server asked; its accept reaches the server.
    let mut stream = start_streamed(&daemon, &url_host, &call(1));
    let asked = messages_until(&mut stream, |message| {
        message["method"] == "elicitation/create"
    });
    let question = asked.last().expect("a question");
    assert_eq!(question["params"]["mode"], "url", "{question}");
    assert_eq!(question["params"]["url"], "https://example.com/sign-in");
    assert_eq!(question["params"]["message"], "Sign in to continue");
    answer_question(&daemon, &url_host, question, json!({"action": "accept"}));
    let rest = messages_until(&mut stream, |_| false);
    let answer = rest.last().expect("an answer");
    assert_eq!(answer["id"], 1, "{rest:?}");
    let said = texts(answer).join("\n");
    assert!(
        said.contains("User completed the URL elicitation flow"),
        "{said}"
    );
    assert!(answer["result"]["_meta"]["tool-cli/urlElicitations"].is_null());

    // A form-only host is not asked; the server hears it was declined, and why; the host gets
    // the page in the call's result.
    let form_host = open_session_with(&daemon, json!({"elicitation": {"form": {}}}));
    let mut stream = start_streamed(&daemon, &form_host, &call(2));
    let messages = messages_until(&mut stream, |_| false);
    assert!(
        of_method(&messages, "elicitation/create").is_empty(),
        "{messages:?}"
    );
    let answer = messages.last().expect("an answer");
    assert_eq!(answer["id"], 2, "{messages:?}");
    let said = texts(answer);
    assert!(
        said[0].contains("User declined to open the URL"),
        "the server's own answer first: {said:?}"
    );
    assert!(
        said.iter().any(|text| text.contains("cannot ask about")),
        "the server was told why: {said:?}"
    );
    let page = said.last().expect("our text last");
    assert!(
        page.contains("https://example.com/sign-in") && page.contains("Sign in to continue"),
        "{page}"
    );
    let named = &answer["result"]["_meta"]["tool-cli/urlElicitations"];
    assert_eq!(named[0]["url"], "https://example.com/sign-in", "{answer}");
    assert!(
        named[0]["elicitationId"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );

    // The error path (`-32042`, the pages to open before asking again): a URL host gets the
    // error as the server sent it, a form-only host the pages in its result. (Each call names
    // its own URL: everything treats a second call with the same one as the retry.)
    let by_error = |id: u64, url: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "asking__trigger-url-elicitation",
            "arguments": {"url": url, "errorPath": true}}})
    };
    let mut stream = start_streamed(&daemon, &url_host, &by_error(3, "https://example.com/a"));
    let messages = messages_until(&mut stream, |_| false);
    let answer = messages.last().expect("an answer");
    assert_eq!(answer["id"], 3, "{messages:?}");
    assert_eq!(answer["error"]["code"], -32042, "{answer}");
    let pages = &answer["error"]["data"]["elicitations"];
    assert_eq!(pages[0]["mode"], "url", "{answer}");
    let prerequisite = pages[0]["url"].as_str().expect("a page").to_owned();

    let mut stream = start_streamed(&daemon, &form_host, &by_error(4, "https://example.com/b"));
    let messages = messages_until(&mut stream, |_| false);
    let answer = messages.last().expect("an answer");
    assert_eq!(answer["id"], 4, "{messages:?}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        texts(answer)
            .iter()
            .any(|text| text.contains(&prerequisite)),
        "{answer}"
    );
    assert_eq!(
        answer["result"]["_meta"]["tool-cli/urlElicitations"][0]["url"],
        prerequisite.as_str()
    );
}
