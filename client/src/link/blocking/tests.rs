//! Unit tests of the blocking link: answer heads parsed without a socket, then the identity
//! check and requests against scripted listeners on real loopback sockets, each served by a
//! thread that reads the requests it gets and writes what the test says.

use std::io::{BufRead as _, BufReader};
use std::net::TcpListener;

use serde_json::json;

use super::*;
use crate::error::exit;
use crate::test_support::{TOKEN, header};

const SECOND: Duration = Duration::from_secs(1);
const FIVE_SECONDS: Duration = Duration::from_secs(5);

#[test]
fn heads_say_how_the_body_is_framed() {
    let head = |text: &str| parse_head(text.as_bytes()).unwrap().unwrap();
    let plain = head("HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\n{}");
    assert_eq!(
        plain,
        Head {
            status: 200,
            framing: Framing::Length(12),
            closes: false,
            length: 39
        }
    );
    let chunked = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(chunked.framing, Framing::Chunked);
    let closing =
        head("HTTP/1.1 401 Unauthorized\r\nConnection: close\r\ncontent-length: 0\r\n\r\n");
    assert!(closing.closes);
    assert_eq!(closing.status, 401);
    assert_eq!(head("HTTP/1.1 200 OK\r\n\r\n").framing, Framing::UntilClose);
    assert!(head("HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n").closes);
    assert_eq!(
        head("HTTP/1.1 204 No Content\r\n\r\n").framing,
        Framing::Length(0)
    );
    assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\ncontent-le").unwrap(), None);
    assert!(parse_head(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
    let bad_length = parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n").unwrap_err();
    assert!(bad_length.contains("Content-Length"), "{bad_length}");
}

#[test]
fn only_ip_addresses_are_reached_without_a_runtime() {
    let tcp = |host: &str| Target::Tcp {
        host: host.into(),
        port: 4000,
    };
    assert!(can_reach(&tcp("127.0.0.1")));
    assert!(can_reach(&tcp("::1")));
    assert!(!can_reach(&tcp("localhost")));
    assert!(!can_reach(&Target::Unix {
        path: "/run/tool-cli.sock".into()
    }));
}

/// What the scripted listener answers to each request, after reading it whole.
enum Reply {
    /// The right identity proof, computed from the request.
    Proof,
    /// These bytes, as they are.
    Bytes(String),
    /// Nothing: the connection stays open and silent.
    Silence,
}

/// A listener on loopback answering one connection's requests with `replies`; the thread's
/// result is the requests it read.
fn listener(replies: Vec<Reply>) -> (Endpoint, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let thread = std::thread::spawn(move || {
        let (socket, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(socket.try_clone().unwrap());
        let mut writer = socket;
        let mut requests = Vec::new();
        for reply in replies {
            let Some(request) = read_request(&mut reader) else {
                break;
            };
            let answer = match reply {
                Reply::Proof => {
                    let nonce =
                        header(&request, tool_cli_protocol::identity::NONCE_HEADER).unwrap();
                    let host = header(&request, "host").unwrap();
                    let proof = identity::proof(TOKEN, &nonce, &host);
                    let body = json!({ "proof": proof }).to_string();
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    )
                }
                Reply::Bytes(bytes) => bytes,
                Reply::Silence => {
                    requests.push(request);
                    // Held open until the client gives up and closes it.
                    let _ = read_request(&mut reader);
                    return requests;
                }
            };
            requests.push(request);
            writer.write_all(answer.as_bytes()).unwrap();
        }
        requests
    });
    (crate::test_support::endpoint(port), thread)
}

/// One request, head and `Content-Length` body, as text; `None` at the end of the stream.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<String> {
    let mut text = String::new();
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
        text.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(text + &String::from_utf8_lossy(&body))
}

fn ok(body: &str) -> Reply {
    Reply::Bytes(format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    ))
}

#[test]
fn the_proof_comes_first_then_requests_share_the_connection() {
    let chunked = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\
                   10\r\n{\"jsonrpc\":\"2.0\"\r\n19\r\n,\"id\":3,\"result\":{\"c\":3}}\r\n0\r\n\r\n";
    let (endpoint, peer) = listener(vec![
        Reply::Proof,
        ok(r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}"#),
        ok(r#"{"jsonrpc":"2.0","id":2,"result":{"b":2}}"#),
        Reply::Bytes(chunked.to_owned()),
    ]);
    let mut link = BlockingLink::connect(&endpoint, SECOND, FIVE_SECONDS, true, false).unwrap();
    assert_eq!(link.identity(), Identity::Proven);
    let first = link.call::<Value>("getBridgeInfo", None, FIVE_SECONDS);
    assert_eq!(first.unwrap(), json!({"a": 1}));
    let second = link.call("listTools", Some(json!({"server": "demo"})), FIVE_SECONDS);
    assert_eq!(second.unwrap(), json!({"b": 2}));
    let third = link.call::<Value>("listServers", None, FIVE_SECONDS);
    assert_eq!(third.unwrap(), json!({"c": 3}));
    assert!(!link.is_closed());
    drop(link);
    let seen = peer.join().unwrap();
    assert_eq!(seen.len(), 4, "all on the one accepted connection");
    assert!(
        seen[0].starts_with("POST /identity HTTP/1.1\r\n"),
        "{}",
        seen[0]
    );
    assert!(
        !seen[0].contains(TOKEN) && header(&seen[0], "authorization").is_none(),
        "the proof is asked without the token: {}",
        seen[0]
    );
    for request in &seen[1..] {
        assert!(request.starts_with("POST / HTTP/1.1\r\n"), "{request}");
        assert_eq!(header(request, "authorization").unwrap(), "Bearer secret");
        assert_eq!(header(request, "content-type").unwrap(), "application/json");
        assert!(header(request, "host").unwrap().starts_with("127.0.0.1:"));
    }
    assert!(
        seen[2].contains(r#""params":{"server":"demo"}"#),
        "{}",
        seen[2]
    );
}

#[test]
fn a_wrong_proof_is_refused_and_the_token_never_sent() {
    let (endpoint, peer) = listener(vec![ok(&json!({"proof": "00".repeat(32)}).to_string())]);
    let error = BlockingLink::connect(&endpoint, SECOND, FIVE_SECONDS, true, false)
        .err()
        .unwrap();
    assert!(matches!(error, Error::IdentityUnproven { .. }), "{error:?}");
    assert!(error.to_string().contains("its proof is wrong"), "{error}");
    let seen = peer.join().unwrap();
    assert_eq!(seen.len(), 1);
    assert!(!seen[0].contains(TOKEN), "{}", seen[0]);
}

#[test]
fn a_bridge_without_the_proof_is_accepted_only_when_allowed() {
    let not_served =
        || Reply::Bytes("HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n".into());
    let (endpoint, _peer) = listener(vec![not_served()]);
    let error = BlockingLink::connect(&endpoint, SECOND, FIVE_SECONDS, true, false)
        .err()
        .unwrap();
    assert!(
        matches!(error, Error::NoIdentityProof { status: 401, .. }),
        "{error:?}"
    );
    let (endpoint, _peer) = listener(vec![not_served()]);
    let link = BlockingLink::connect(&endpoint, SECOND, FIVE_SECONDS, false, false).unwrap();
    assert_eq!(link.identity(), Identity::NotServed { status: 401 });
}

#[test]
fn a_vouched_listener_gets_the_call_first() {
    let (endpoint, peer) = listener(vec![ok(r#"{"jsonrpc":"2.0","id":1,"result":7}"#)]);
    let mut link = BlockingLink::connect(&endpoint, SECOND, FIVE_SECONDS, true, true).unwrap();
    assert_eq!(link.identity(), Identity::Vouched);
    assert_eq!(
        link.call::<Value>("listServers", None, FIVE_SECONDS)
            .unwrap(),
        json!(7)
    );
    drop(link);
    let seen = peer.join().unwrap();
    assert!(seen[0].starts_with("POST / HTTP/1.1\r\n"), "{}", seen[0]);
}

#[test]
fn statuses_and_broken_answers_map_to_the_async_link_s_errors() {
    let (endpoint, _peer) = listener(vec![
        Reply::Bytes("HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n".into()),
        Reply::Bytes("HTTP/1.1 500 Oops\r\nconnection: close\r\n\r\noops".into()),
    ]);
    let mut link = BlockingLink::connect(&endpoint, SECOND, FIVE_SECONDS, true, true).unwrap();
    let refused = link
        .call::<Value>("listServers", None, FIVE_SECONDS)
        .unwrap_err();
    assert_eq!(refused.exit_code(), exit::AUTH);
    // A body framed by the end of the connection is read to that end, and the link is done.
    let failed = link
        .call::<Value>("listServers", None, FIVE_SECONDS)
        .unwrap_err();
    assert!(
        matches!(&failed, Error::Http { status: 500, body } if body == "oops"),
        "{failed:?}"
    );
    assert!(link.is_closed());

    let (endpoint, _peer) = listener(vec![Reply::Bytes(
        "HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\n{".into(),
    )]);
    let mut link = BlockingLink::connect(&endpoint, SECOND, FIVE_SECONDS, true, true).unwrap();
    let cut = link
        .call::<Value>("listServers", None, FIVE_SECONDS)
        .unwrap_err();
    assert!(
        matches!(&cut, Error::Transport(text) if text.contains("closed before")),
        "{cut:?}"
    );
}

#[test]
fn a_silent_daemon_is_a_timeout_naming_the_method() {
    let (endpoint, peer) = listener(vec![Reply::Silence]);
    let mut link = BlockingLink::connect(&endpoint, SECOND, FIVE_SECONDS, true, true).unwrap();
    let wait = Duration::from_millis(50);
    let error = link.call::<Value>("callTool", None, wait).unwrap_err();
    assert!(
        matches!(&error, Error::Timeout { method, timeout_ms: 50 } if method == "callTool"),
        "{error:?}"
    );
    assert_eq!(error.exit_code(), exit::TIMEOUT);
    drop(link);
    assert_eq!(peer.join().unwrap().len(), 1);
}

#[test]
fn a_closed_port_is_unreachable() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let endpoint = crate::test_support::endpoint(port);
    let error = BlockingLink::connect(&endpoint, SECOND, FIVE_SECONDS, true, false)
        .err()
        .unwrap();
    assert_eq!(error.exit_code(), exit::UNREACHABLE);
    assert!(error.to_string().contains("connection refused"), "{error}");
}

#[test]
fn a_token_with_a_line_break_is_never_written_as_a_header() {
    let (endpoint, peer) = listener(vec![]);
    let endpoint = Endpoint {
        token: "secret\r\nx-injected: 1".into(),
        ..endpoint
    };
    let mut link = BlockingLink::connect(&endpoint, SECOND, FIVE_SECONDS, true, true).unwrap();
    let error = link
        .call::<Value>("listServers", None, FIVE_SECONDS)
        .unwrap_err();
    assert!(
        error.to_string().contains("cannot build the HTTP request"),
        "{error}"
    );
    drop(link);
    assert!(peer.join().unwrap().is_empty(), "nothing was sent");
    assert!(is_header_value("Bearer abc\tdef é"));
    assert!(!is_header_value("Bearer abc\n"));
    assert!(!is_header_value("Bearer \u{7f}"));
}

/// A listener that closes every connection it accepts, as a daemon at its connection cap does:
/// `read_first` reads the request first (so the close resets the connection), else it closes
/// before anything arrives.
fn closing_listener(read_first: bool) -> (Endpoint, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let thread = std::thread::spawn(move || {
        let (socket, _) = listener.accept().unwrap();
        if read_first {
            let mut byte = [0u8; 1];
            let _ = std::io::Read::read(&mut &socket, &mut byte);
        }
        drop(socket);
    });
    (crate::test_support::endpoint(port), thread)
}

/// The issue: at the daemon's connection cap, the `TOOL_CLI_DAEMON_ID` fast path (no identity
/// check) exited 1, "did the daemon stop?", where the checked path exits 3 with a retry hint.
#[test]
fn a_vouched_daemon_closing_before_any_answer_is_unreachable() {
    for read_first in [false, true] {
        let (endpoint, peer) = closing_listener(read_first);
        let mut link = BlockingLink::connect(&endpoint, SECOND, FIVE_SECONDS, true, true).unwrap();
        let error = link
            .call::<Value>("listServers", None, FIVE_SECONDS)
            .unwrap_err();
        peer.join().unwrap();
        assert_eq!(error.exit_code(), exit::UNREACHABLE, "{error:?}");
        assert_eq!(error.kind(), "connectionLost");
        let message = error.to_string();
        assert!(message.contains("retry in a moment"), "{message}");
        assert!(!message.contains("the token was not sent"), "{message}");
    }
}
