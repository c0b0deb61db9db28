//! Unit tests of the link: the HTTP status mapping, and the identity check against scripted
//! listeners on real loopback sockets (honest, lying, silent, resetting, a 1.x bridge).

use serde_json::json;
use tokio::net::TcpListener;

use super::*;
use crate::error::exit;
use crate::test_support::{
    IdentityScript, TOKEN, fake_daemon, fake_daemon_on_socket, fake_listener, header, serve,
};

const SECOND: Duration = Duration::from_secs(1);
const FIVE_SECONDS: Duration = Duration::from_secs(5);

fn endpoint(port: u16) -> Endpoint {
    crate::test_support::endpoint(port)
}

async fn connect(port: u16) -> Result<DaemonLink, Error> {
    DaemonLink::connect(&endpoint(port), SECOND, FIVE_SECONDS, true, false).await
}

#[test]
fn http_statuses_map_to_errors() {
    let ok = br#"{"jsonrpc":"2.0","id":1,"result":{"servers":[]}}"#;
    assert_eq!(
        decode_response("listServers", StatusCode::OK, ok).unwrap(),
        json!({"servers": []})
    );
    let error = decode_response("x", StatusCode::UNAUTHORIZED, b"").unwrap_err();
    assert_eq!(error.exit_code(), exit::AUTH);
    let error = decode_response("x", StatusCode::FORBIDDEN, b"").unwrap_err();
    assert_eq!(error.exit_code(), exit::AUTH);
    let error = decode_response("x", StatusCode::INTERNAL_SERVER_ERROR, b"oops").unwrap_err();
    assert!(
        matches!(error, Error::Http { status: 500, .. }),
        "{error:?}"
    );
    let error = decode_response("x", StatusCode::OK, b"<html>").unwrap_err();
    assert!(matches!(error, Error::Protocol(_)), "{error:?}");
}

#[test]
fn json_rpc_error_wins_over_its_http_status() {
    let body = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad",
        "data":{"kind":"unknownServer","server":"x","knownServers":["demo"]}}}"#;
    for status in [StatusCode::OK, StatusCode::BAD_REQUEST] {
        let error = decode_response("listTools", status, body).unwrap_err();
        assert_eq!(error.exit_code(), exit::INVALID_PARAMS);
    }
}

#[tokio::test]
async fn two_requests_share_one_connection_and_carry_the_token() {
    let answers = vec![
        (
            200,
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}"#.to_owned(),
        ),
        (
            200,
            r#"{"jsonrpc":"2.0","id":2,"result":{"b":2}}"#.to_owned(),
        ),
    ];
    let (port, daemon) = fake_daemon(answers).await;
    let mut link = connect(port).await.unwrap();
    assert_eq!(link.identity(), Identity::Proven);
    let first = link
        .call::<Value>("getBridgeInfo", None, FIVE_SECONDS)
        .await;
    assert_eq!(first.unwrap(), json!({"a": 1}));
    let params = json!({"server": "demo"});
    let next = link.call("listTools", Some(params), FIVE_SECONDS).await;
    assert_eq!(next.unwrap(), json!({"b": 2}));
    drop(link);
    let seen = daemon.await.unwrap();
    assert_eq!(
        seen.len(),
        2,
        "both requests arrived on the one accepted connection"
    );
    for request in &seen {
        assert!(request.starts_with("POST / HTTP/1.1\r\n"), "{request}");
        let lower = request.to_lowercase();
        assert!(
            lower.contains("authorization: bearer secret\r\n"),
            "{request}"
        );
        assert!(
            lower.contains("content-type: application/json\r\n"),
            "{request}"
        );
    }
    assert!(seen[1].contains(r#""method":"listTools""#), "{}", seen[1]);
    assert!(
        seen[1].contains(r#""params":{"server":"demo"}"#),
        "{}",
        seen[1]
    );
    assert!(!seen[0].contains("params"), "{}", seen[0]);
}

#[tokio::test]
async fn refused_token_is_an_auth_error() {
    let (port, _daemon) = fake_daemon(vec![(401, String::new())]).await;
    let mut link = connect(port).await.unwrap();
    let error = link
        .call::<Value>("getBridgeInfo", None, FIVE_SECONDS)
        .await
        .unwrap_err();
    assert_eq!(error.exit_code(), exit::AUTH);
}

#[tokio::test]
async fn closed_port_is_unreachable() {
    // Bind then drop a listener to get a port that is very likely closed.
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap().port()
    };
    let error = connect(port).await.err().unwrap();
    assert_eq!(error.exit_code(), exit::UNREACHABLE);
    assert!(error.to_string().contains("connection refused"), "{error}");
}

#[tokio::test]
async fn nothing_on_the_default_port_says_why_it_was_tried() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut fallback = endpoint(port);
    fallback.fallback = Some("TOOL_CLI_PORT is unset and there is no runtime file at /x".into());
    let error = DaemonLink::connect(&fallback, SECOND, FIVE_SECONDS, true, false)
        .await
        .err()
        .unwrap();
    assert_eq!(error.exit_code(), exit::UNREACHABLE);
    let message = error.to_string();
    assert!(
        message.contains("no runtime file at /x, and nothing answers on the default port"),
        "{message}"
    );
}

#[tokio::test]
async fn silent_daemon_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // Prove the identity, answer one request, then hold the socket without answering.
    let _holder = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let answers = vec![crate::test_support::result(json!({}))];
        serve(&mut socket, IdentityScript::Honest, answers).await;
        std::future::pending::<()>().await;
        drop(socket);
    });
    let mut link = connect(port).await.unwrap();
    let first = link.call::<Value>("getBridgeInfo", None, FIVE_SECONDS);
    first.await.unwrap();
    // Real sockets above, a paused clock from here: the timeout fires without waiting.
    tokio::time::pause();
    let error = link
        .call::<Value>("callTool", None, Duration::from_millis(2_000))
        .await
        .unwrap_err();
    assert_eq!(error.exit_code(), exit::TIMEOUT);
    assert!(error.to_string().contains("2000 ms"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn listener_silent_on_identity_gets_no_token() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let _holder = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        std::future::pending::<()>().await;
        drop(socket);
    });
    let error = DaemonLink::connect(
        &endpoint(port),
        SECOND,
        Duration::from_millis(2_000),
        true,
        false,
    )
    .await
    .err()
    .unwrap();
    assert_eq!(error.exit_code(), exit::IDENTITY);
    assert!(
        error
            .to_string()
            .contains("did not answer POST /identity within 2000 ms"),
        "{error}"
    );
}

/// Connects to a listener scripted to answer the identity check with `script`; returns the
/// outcome and every request the listener saw, after checking none carried the token.
async fn against(
    script: IdentityScript,
    require_identity: bool,
) -> (Result<(), Error>, Vec<String>) {
    let (port, listener) = fake_listener(script, vec![crate::test_support::bridge_info()]).await;
    let outcome = DaemonLink::connect(
        &endpoint(port),
        SECOND,
        FIVE_SECONDS,
        require_identity,
        false,
    )
    .await
    .map(drop);
    let seen = listener.await.unwrap();
    (outcome, seen)
}

fn assert_no_token(seen: &[String]) {
    assert!(!seen.is_empty());
    for request in seen {
        assert!(
            request.starts_with("POST /identity HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(!request.contains(TOKEN), "{request}");
        assert!(
            !request.to_lowercase().contains("authorization"),
            "{request}"
        );
    }
}

#[tokio::test]
async fn wrong_identity_answers_withhold_the_token() {
    let wrong_proof = json!({"proof": "00".repeat(32)}).to_string();
    for (script, reason) in [
        (
            IdentityScript::Answer(403, String::new()),
            "HTTP 403 without a reason",
        ),
        (IdentityScript::Answer(500, "{}".into()), "HTTP 500"),
        (
            IdentityScript::Answer(200, wrong_proof),
            "its proof is wrong",
        ),
        (
            IdentityScript::Answer(200, "<html>".into()),
            "not a JSON object",
        ),
        (
            IdentityScript::Answer(200, r#"{"proof": 7}"#.into()),
            "not a JSON",
        ),
    ] {
        let (outcome, seen) = against(script.clone(), true).await;
        let error = outcome.unwrap_err();
        assert_eq!(error.exit_code(), exit::IDENTITY, "{script:?}: {error}");
        let message = error.to_string();
        assert!(
            message.starts_with("the listener at 127.0.0.1:"),
            "{message}"
        );
        assert!(
            message.contains(
                "did not prove it holds the token, so the token was not sent (a stale \
                 TOOL_CLI_PORT, or another program on that port?)"
            ),
            "{message}"
        );
        assert!(message.contains(reason), "{script:?}: {message}");
        assert_no_token(&seen);
    }
}

#[tokio::test]
async fn a_bridge_without_the_identity_check_needs_the_opt_in() {
    // A tool-cli 1.x bridge answers 401 {"error":"Unauthorized"}; an older daemon of ours, 404.
    for status in [401, 404] {
        let script = IdentityScript::Answer(status, r#"{"error":"Unauthorized"}"#.into());
        let (outcome, seen) = against(script.clone(), true).await;
        let error = outcome.unwrap_err();
        assert_eq!(error.exit_code(), exit::IDENTITY);
        assert!(
            error
                .to_string()
                .starts_with("this bridge does not prove its identity (a tool-cli 1.x bridge?)"),
            "{error}"
        );
        assert_no_token(&seen);

        // Allowed: the link is made, and says the listener proved nothing.
        let (port, listener) =
            fake_listener(script, vec![crate::test_support::bridge_info()]).await;
        let mut link = DaemonLink::connect(&endpoint(port), SECOND, FIVE_SECONDS, false, false)
            .await
            .unwrap();
        assert_eq!(link.identity(), Identity::NotServed { status });
        link.call::<Value>("getBridgeInfo", None, FIVE_SECONDS)
            .await
            .unwrap();
        drop(link);
        let seen = listener.await.unwrap();
        assert_eq!(
            header(&seen[1], "authorization").as_deref(),
            Some("Bearer secret")
        );
    }
    // The opt-in does not excuse a wrong proof: that listener claims an identity it lacks.
    let wrong_proof = json!({"proof": "00".repeat(32)}).to_string();
    let (outcome, seen) = against(IdentityScript::Answer(200, wrong_proof), false).await;
    assert_eq!(outcome.unwrap_err().exit_code(), exit::IDENTITY);
    assert_no_token(&seen);
}

#[tokio::test]
async fn an_unknown_token_id_is_an_auth_error_without_sending_it() {
    let body = json!({"error": "unknownTokenId"}).to_string();
    let (outcome, seen) = against(IdentityScript::Answer(403, body), true).await;
    let error = outcome.unwrap_err();
    assert_eq!(error.exit_code(), exit::AUTH);
    assert!(matches!(error, Error::UnknownToken { .. }), "{error:?}");
    assert_no_token(&seen);
}

#[tokio::test]
async fn a_reset_or_close_during_the_identity_check_is_unreachable() {
    for script in [IdentityScript::Reset, IdentityScript::Close] {
        let (outcome, seen) = against(script.clone(), true).await;
        let error = outcome.unwrap_err();
        assert_eq!(error.exit_code(), exit::UNREACHABLE, "{script:?}: {error}");
        let message = error.to_string();
        assert!(message.contains("retry in a moment"), "{message}");
        assert!(message.contains("the token was not sent"), "{message}");
        assert_no_token(&seen);
    }
}

#[test]
fn identity_answer_checks() {
    let (token, nonce, host) = (TOKEN, "ab".repeat(32), "127.0.0.1:9");
    let right = json!({"proof": crate::identity::proof(token, &nonce, host)}).to_string();
    let check = |status: u16, body: &str| {
        check_identity_answer(
            StatusCode::from_u16(status).unwrap(),
            body.as_bytes(),
            token,
            &nonce,
            host,
        )
    };
    assert_eq!(check(200, &right), IdentityAnswer::Proven);
    // The right proof with the wrong status is still refused.
    assert!(
        matches!(check(201, &right), IdentityAnswer::Wrong(reason) if reason.contains("HTTP 201"))
    );
    assert_eq!(check(404, ""), IdentityAnswer::NotServed);
    assert_eq!(
        check(401, r#"{"error":"Unauthorized"}"#),
        IdentityAnswer::NotServed
    );
    assert_eq!(
        check(403, r#"{"error":"unknownTokenId"}"#),
        IdentityAnswer::UnknownToken
    );
    // The marker counts only with 403.
    assert!(matches!(
        check(200, r#"{"error":"unknownTokenId"}"#),
        IdentityAnswer::Wrong(_)
    ));
    let other_host = json!({"proof": crate::identity::proof(token, &nonce, "127.0.0.1:10")});
    assert_eq!(
        check(200, &other_host.to_string()),
        IdentityAnswer::Wrong("its proof is wrong".to_owned())
    );
    assert!(
        matches!(check(200, "[]"), IdentityAnswer::Wrong(reason) if reason.contains("with a proof: []"))
    );
}

#[tokio::test]
async fn unix_socket_carries_the_same_exchange_with_host_localhost() {
    let directory = std::env::temp_dir().join(format!("tool-cli-sock-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let path = directory.join("daemon.sock");
    let _ = std::fs::remove_file(&path);
    let daemon = fake_daemon_on_socket(&path, vec![crate::test_support::bridge_info()]);
    let endpoint = Endpoint {
        target: Target::Unix { path: path.clone() },
        token: TOKEN.into(),
        fallback: None,
        daemon_id: None,
    };
    let mut link = DaemonLink::connect(&endpoint, SECOND, FIVE_SECONDS, true, false)
        .await
        .unwrap();
    let info = link
        .call::<Value>("getBridgeInfo", None, FIVE_SECONDS)
        .await
        .unwrap();
    assert_eq!(info["bridgeProtocol"]["major"], 1);
    drop(link);
    let seen = daemon.await.unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(header(&seen[0], "host").as_deref(), Some("localhost"));
    assert_eq!(
        header(&seen[0], "authorization").as_deref(),
        Some("Bearer secret")
    );
    std::fs::remove_dir_all(&directory).unwrap();
}

#[tokio::test]
async fn missing_socket_is_unreachable_and_names_the_path() {
    let path = std::env::temp_dir().join(format!("tool-cli-none-{}.sock", std::process::id()));
    let endpoint = Endpoint {
        target: Target::Unix { path: path.clone() },
        token: TOKEN.into(),
        fallback: None,
        daemon_id: None,
    };
    let connect = || DaemonLink::connect(&endpoint, SECOND, FIVE_SECONDS, true, false);
    let error = connect().await.err().unwrap();
    assert_eq!(error.exit_code(), exit::UNREACHABLE);
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("no such socket"), "{message}");
    // A socket file nobody listens on: refused.
    let stale = std::os::unix::net::UnixListener::bind(&path).unwrap();
    drop(stale);
    let error = connect().await.err().unwrap();
    assert_eq!(error.exit_code(), exit::UNREACHABLE);
    assert!(error.to_string().contains("connection refused"), "{error}");
    std::fs::remove_file(&path).unwrap();
}

/// The issue: at the daemon's connection cap, a vouched link (no identity check) reported a
/// closed connection as a transport failure (exit 1) instead of "cannot reach" (exit 3).
#[tokio::test]
async fn a_vouched_daemon_closing_before_any_answer_is_unreachable() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let peer = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        drop(socket);
    });
    let mut link = DaemonLink::connect(&endpoint(port), SECOND, FIVE_SECONDS, true, true)
        .await
        .unwrap();
    peer.await.unwrap();
    let error = link
        .call::<Value>("listServers", None, FIVE_SECONDS)
        .await
        .unwrap_err();
    assert_eq!(error.exit_code(), exit::UNREACHABLE, "{error:?}");
    assert!(error.to_string().contains("retry in a moment"), "{error}");
}
