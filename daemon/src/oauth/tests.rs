//! Renewal against a real token endpoint on loopback (single-flight, refusal, outage), and the
//! pure checks.

use super::server_auth::rfc3339;
use super::*;
use crate::config::remote::OAuthSettings;

use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// A token endpoint on loopback answering every request with `status` and `body`; counts
/// the requests.
async fn token_endpoint(status: u16, body: &'static str) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&served);
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let counter = Arc::clone(&counter);
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut chunk = [0u8; 1024];
                // Headers, then the form body (its length from content-length).
                loop {
                    let read = stream.read(&mut chunk).await.unwrap_or(0);
                    if read == 0 {
                        return;
                    }
                    request.extend_from_slice(&chunk[..read]);
                    let text = String::from_utf8_lossy(&request).to_ascii_lowercase();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length: usize = text
                            .lines()
                            .find_map(|line| line.strip_prefix("content-length:"))
                            .and_then(|value| value.trim().parse().ok())
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                counter.fetch_add(1, Ordering::SeqCst);
                let answer = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    (format!("http://127.0.0.1:{port}/token"), served)
}

fn expiring_auth(token_endpoint: String) -> Arc<ServerAuth> {
    Arc::new(ServerAuth {
        name: "remote".into(),
        url: Url::parse("http://127.0.0.1:1/mcp").unwrap(),
        settings: OAuthSettings::default(),
        ca_file: None,
        client: crate::pool::http_client::HttpClient::new(None).map_err(|err| err.to_string()),
        files: None,
        tokens: tokio::sync::Mutex::new(Some(StoredTokens {
            server_url: "http://127.0.0.1:1/mcp".into(),
            resource: "http://127.0.0.1:1/mcp".into(),
            issuer: "http://127.0.0.1:1".into(),
            token_endpoint,
            client_id: "client".into(),
            client_secret: None,
            secret_in_body: false,
            access_token: "old".into(),
            refresh_token: Some("refresh-1".into()),
            // Within the renewal margin, not yet expired.
            expires_at: Some(now_secs() + 10),
            scope: None,
        })),
        needs_login: Mutex::new(None),
        challenges: Mutex::new(step_up::Challenges::default()),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_share_one_refresh() {
    let (endpoint, served) = token_endpoint(
        200,
        r#"{"access_token":"fresh","token_type":"Bearer","expires_in":3600,"refresh_token":"refresh-2"}"#,
    )
    .await;
    let auth = expiring_auth(endpoint);
    let bearers = futures_util::future::join_all((0..8).map(|_| {
        let auth = Arc::clone(&auth);
        async move { auth.bearer().await }
    }))
    .await;
    for bearer in bearers {
        assert_eq!(bearer, Ok(Some("fresh".to_owned())));
    }
    assert_eq!(
        served.load(Ordering::SeqCst),
        1,
        "one refresh for eight requests"
    );
    let tokens = auth.tokens.lock().await;
    assert_eq!(
        tokens.as_ref().unwrap().refresh_token.as_deref(),
        Some("refresh-2")
    );
}

#[tokio::test]
async fn a_refused_refresh_asks_for_login_and_is_not_retried() {
    let (endpoint, served) = token_endpoint(
        400,
        r#"{"error":"invalid_grant","error_description":"refresh token revoked"}"#,
    )
    .await;
    let auth = expiring_auth(endpoint);
    let first = auth.bearer().await.unwrap_err();
    let BearerError::NeedsLogin(reason) = first else {
        panic!("expected NeedsLogin, got {first:?}")
    };
    assert!(
        reason.contains("invalid_grant: refresh token revoked"),
        "{reason}"
    );
    assert!(auth.waits_for_login());
    assert!(matches!(
        auth.bearer().await,
        Err(BearerError::NeedsLogin(_))
    ));
    assert_eq!(
        served.load(Ordering::SeqCst),
        1,
        "the refused refresh is not sent again"
    );
    let status = auth.status().await;
    assert_eq!(status.state, "needsLogin");
    assert!(
        status
            .reason
            .unwrap()
            .contains("tool-cli auth login remote")
    );
}

#[tokio::test]
async fn an_unreachable_token_endpoint_keeps_a_still_valid_token() {
    // Nothing listens on port 1.
    let auth = expiring_auth("http://127.0.0.1:1/token".into());
    assert_eq!(auth.bearer().await, Ok(Some("old".to_owned())));
    assert!(!auth.waits_for_login());
}

#[test]
fn times_are_rfc3339() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
    assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
}

#[test]
fn redirect_uris_must_be_loopback_http_with_a_port() {
    assert!(check_redirect_uri("http://127.0.0.1:5000/callback").is_ok());
    assert!(check_redirect_uri("http://localhost:5000/cb").is_ok());
    for bad in [
        "https://127.0.0.1:5000/callback",
        "http://evil.example:5000/callback",
        "http://127.0.0.1/callback",
        "not a url",
    ] {
        let message = check_redirect_uri(bad).unwrap_err();
        assert!(message.contains("redirectUri"), "{bad}: {message}");
    }
}
