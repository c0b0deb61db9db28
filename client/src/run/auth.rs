//! `tool-cli auth login|status|logout`. The daemon does the OAuth work (discovery, registration,
//! the token exchange, storage); the client's part of a login is the loopback redirect listener
//! and the user: it prints the authorization URL (and opens a browser when a person is at a
//! terminal), then takes whichever comes first, the browser's redirect to
//! `http://127.0.0.1:PORT/callback` or the redirect URL pasted on stdin (the headless path, for a
//! browser on another machine), and hands it to the daemon. The listener reads its connections side
//! by side within a deadline and takes only a redirect carrying this login's `state`, so another
//! local process can neither stall it nor end the login with a forged redirect.

use std::io::BufRead as _;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tool_cli_protocol::methods::name;
use tool_cli_protocol::remote_auth::{
    AuthLoginResult, AuthLogoutResult, AuthStatusResult, ServerAuthStatus,
};

use super::output::Output;
use crate::args::auth::AuthCommand;
use crate::client::{Client, parse_result};
use crate::error::Error;
use crate::sanitize;

/// Discovery and registration are a few requests to the authorization server.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(90);

/// The token exchange, then the server's reconnection with the new token.
const COMPLETE_TIMEOUT: Duration = Duration::from_secs(120);

/// How long the login waits for the user.
const USER_TIMEOUT: Duration = Duration::from_secs(600);

/// Largest redirect request read from the browser.
const MAX_REQUEST_BYTES: usize = 16 * 1024;

/// How long one connection to the redirect listener may take to send its request head: any
/// local process can connect, and one that sends nothing must not hold the browser's redirect up.
const REQUEST_HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// Most connections whose request heads are read at once. A newer connection takes the place
/// of the oldest (closed unread): idle connections cannot keep the browser's redirect out, since
/// the browser sends its request the moment it connects.
const MAX_PENDING_CONNECTIONS: usize = 32;

pub(super) async fn run(
    client: &mut Client,
    output: &mut Output<'_>,
    command: AuthCommand,
) -> Result<(), Error> {
    match command {
        AuthCommand::Login {
            server,
            open_browser,
        } => login(client, output, &server, open_browser).await,
        AuthCommand::Status => {
            let result = client.call(name::AUTH_STATUS, None).await?;
            if output.json {
                return output.emit_json(&result);
            }
            let status: AuthStatusResult = parse_result(name::AUTH_STATUS, result)?;
            if status.servers.is_empty() {
                return output.emit_text("no remote (http/https) servers are configured");
            }
            let lines: Vec<String> = status.servers.iter().map(describe).collect();
            output.emit_text(&lines.join("\n"))
        }
        AuthCommand::Logout { server } => {
            let result = client
                .call(name::AUTH_LOGOUT, Some(json!({ "server": server })))
                .await?;
            if output.json {
                return output.emit_json(&result);
            }
            let logout: AuthLogoutResult = parse_result(name::AUTH_LOGOUT, result)?;
            output.emit_text(&if logout.removed {
                format!("signed out of {}: its tokens are deleted", logout.server)
            } else {
                format!("no tokens were held for {}", logout.server)
            })
        }
    }
}

/// One line of `auth status`.
fn describe(status: &ServerAuthStatus) -> String {
    let mut line = format!("{}: {}", status.server, status.state);
    if let Some(issuer) = &status.issuer {
        line.push_str(&format!(", issuer {issuer}"));
    }
    if let Some(expires_at) = &status.expires_at {
        line.push_str(&format!(", expires {expires_at}"));
    }
    if status.refreshable {
        line.push_str(", refreshable");
    }
    if let Some(reason) = &status.reason {
        line.push_str(&format!(" ({reason})"));
    }
    line
}

async fn login(
    client: &mut Client,
    output: &mut Output<'_>,
    server: &str,
    open_browser: bool,
) -> Result<(), Error> {
    let listener = TcpListener::bind("127.0.0.1:0").await.map_err(|err| {
        Error::Other(format!("cannot listen for the redirect on loopback: {err}"))
    })?;
    let port = listener
        .local_addr()
        .map_err(|err| Error::Other(err.to_string()))?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let result = client
        .call_with_timeout(
            name::AUTH_LOGIN,
            Some(json!({ "server": server, "redirectUri": redirect_uri })),
            LOGIN_TIMEOUT,
        )
        .await?;
    let started: AuthLoginResult = parse_result(name::AUTH_LOGIN, result)?;
    let url = sanitize::line(&started.authorization_url).into_owned();
    eprintln!(
        "To sign in to {server}, open this URL in a browser:\n\n  {url}\n\nWaiting for the \
         redirect to {redirect_uri} (or paste the address the browser was sent to and press \
         Enter)…"
    );
    if open_browser && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        open_in_browser(&started.authorization_url);
    }
    let pasted = pasted_lines();
    let state = query_value(&started.authorization_url, "state");
    let redirect = tokio::time::timeout(
        USER_TIMEOUT,
        wait_for_redirect(&listener, pasted, port, state.as_deref()),
    )
    .await
    .map_err(|_| {
        Error::Other(format!(
            "no redirect within {} minutes; run `tool-cli auth login {server}` again",
            USER_TIMEOUT.as_secs() / 60
        ))
    })?;
    let (redirect_url, browser) = match redirect {
        Redirect::Browser(url, stream) => (url, Some(stream)),
        Redirect::Pasted(url) => (url, None),
    };
    let completed = client
        .call_with_timeout(
            name::AUTH_COMPLETE,
            Some(json!({ "server": server, "redirectUrl": redirect_url })),
            COMPLETE_TIMEOUT,
        )
        .await;
    if let Some(stream) = browser {
        let page = match &completed {
            Ok(_) => format!("Signed in to {server}. You can close this tab."),
            Err(_) => format!("Signing in to {server} failed; see the terminal."),
        };
        answer_browser(stream, &page).await;
    }
    let result = completed?;
    if output.json {
        return output.emit_json(&result);
    }
    let status: ServerAuthStatus = parse_result(name::AUTH_COMPLETE, result)?;
    output.emit_text(&format!("signed in: {}", describe(&status)))
}

enum Redirect {
    Browser(String, TcpStream),
    Pasted(String),
}

/// Lines typed on stdin, read on a thread of their own (a blocking read must not hold the
/// runtime open at exit); the channel closes at end of input.
fn pasted_lines() -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

/// Waits for the redirect: connections are read side by side, each within
/// [`REQUEST_HEAD_TIMEOUT`], so a connection that stalls holds nothing up; a `/callback` whose
/// `state` is not the one of this login (`expected_state`, from the authorization URL) is another
/// process's guess, answered 400 and waited past rather than ending the login.
async fn wait_for_redirect(
    listener: &TcpListener,
    mut pasted: tokio::sync::mpsc::UnboundedReceiver<String>,
    port: u16,
    expected_state: Option<&str>,
) -> Redirect {
    let mut stdin_open = true;
    let mut reading = tokio::task::JoinSet::new();
    // The readers still running, oldest first.
    let mut pending: std::collections::VecDeque<tokio::task::AbortHandle> =
        std::collections::VecDeque::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                if pending.len() >= MAX_PENDING_CONNECTIONS
                    && let Some(oldest) = pending.pop_front()
                {
                    oldest.abort();
                }
                pending.push_back(reading.spawn(tokio::time::timeout(
                    REQUEST_HEAD_TIMEOUT,
                    read_request_target(stream),
                )));
            }
            Some(read) = reading.join_next_with_id(), if !reading.is_empty() => {
                let id = match &read {
                    Ok((id, _)) => *id,
                    Err(error) => error.id(),
                };
                pending.retain(|handle| handle.id() != id);
                let Ok((_, Ok(Some((target, mut stream))))) = read else { continue };
                if !state_matches(&target, expected_state) {
                    let _ = stream
                        .write_all(
                            b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\n\
                              connection: close\r\n\r\nThis redirect is not the one of the \
                              sign-in tool-cli is waiting for (its state differs).\n",
                        )
                        .await;
                    continue;
                }
                return Redirect::Browser(format!("http://127.0.0.1:{port}{target}"), stream);
            }
            line = pasted.recv(), if stdin_open => match line {
                Some(line) if !line.trim().is_empty() => return Redirect::Pasted(line.trim().to_owned()),
                Some(_) => {}
                None => stdin_open = false,
            },
        }
    }
}

/// The target of a `GET /callback?…` request; other requests (a browser's `/favicon.ico`) are
/// answered 404 and waited past.
async fn read_request_target(mut stream: TcpStream) -> Option<(String, TcpStream)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buffer.windows(4).any(|window| window == b"\r\n\r\n") {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 || buffer.len() + read > MAX_REQUEST_BYTES {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let head = String::from_utf8_lossy(&buffer);
    let mut words = head.lines().next()?.split(' ');
    let (method, target) = (words.next()?, words.next()?);
    if method == "GET" && (target == "/callback" || target.starts_with("/callback?")) {
        return Some((target.to_owned(), stream));
    }
    let _ = stream
        .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        .await;
    None
}

/// Whether a redirect target carries the login's `state` (any target does when the
/// authorization URL named none: the daemon checks what it is given either way).
fn state_matches(target: &str, expected: Option<&str>) -> bool {
    match expected {
        None => true,
        Some(expected) => query_value(target, "state").as_deref() == Some(expected),
    }
}

/// The percent-decoded value of `key` in the query of `url` (or of a request target).
fn query_value(url: &str, key: &str) -> Option<String> {
    let (_, query) = url.split_once('?')?;
    let query = query.split('#').next().unwrap_or_default();
    query.split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(name) == key).then(|| percent_decode(value))
    })
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |at: usize| {
            bytes
                .get(at)
                .and_then(|&b| char::from(b).to_digit(16))
                .map(|d| d as u8)
        };
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(high), Some(low)) => {
                decoded.push(high * 16 + low);
                i += 3;
            }
            (b'+', _, _) => {
                decoded.push(b' ');
                i += 1;
            }
            (byte, _, _) => {
                decoded.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

async fn answer_browser(mut stream: TcpStream, page: &str) {
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{page}",
        page.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Opens `url` with the desktop's opener; a machine without one just has the printed URL.
fn open_in_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Ok(mut child) = spawned {
        // Reaped on a thread so it never lingers as a zombie while we wait for the user.
        std::thread::spawn(move || {
            let _ = child.wait();
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_redirect_with_the_logins_state_is_taken() {
        let url = "https://as.example/authorize?response_type=code&state=a%2Bb%3D&x=1";
        let state = query_value(url, "state");
        assert_eq!(state.as_deref(), Some("a+b="));
        assert!(state_matches(
            "/callback?code=c&state=a%2Bb%3D",
            state.as_deref()
        ));
        assert!(!state_matches(
            "/callback?code=c&state=guess",
            state.as_deref()
        ));
        assert!(!state_matches("/callback?code=c", state.as_deref()));
        assert!(state_matches("/callback?code=c", None));
        assert_eq!(query_value("/callback?error=access_denied", "state"), None);
    }

    #[test]
    fn status_lines_say_state_expiry_and_what_to_do() {
        let line = describe(&ServerAuthStatus {
            server: "remote".into(),
            state: "needsLogin".into(),
            issuer: None,
            scope: None,
            expires_at: None,
            refreshable: false,
            reason: Some("run `tool-cli auth login remote` to sign in".into()),
        });
        assert_eq!(
            line,
            "remote: needsLogin (run `tool-cli auth login remote` to sign in)"
        );
        let line = describe(&ServerAuthStatus {
            server: "remote".into(),
            state: "authorized".into(),
            issuer: Some("https://as".into()),
            scope: Some("mcp".into()),
            expires_at: Some("2026-01-01T00:00:00Z".into()),
            refreshable: true,
            reason: None,
        });
        assert_eq!(
            line,
            "remote: authorized, issuer https://as, expires 2026-01-01T00:00:00Z, refreshable"
        );
    }

    /// The issue: 32 idle local connections to the redirect listener (any local process can
    /// open them) filled it, and the browser's redirect was closed unread.
    #[tokio::test]
    async fn idle_local_connections_cannot_stall_the_redirect() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut idle = Vec::new();
        for _ in 0..MAX_PENDING_CONNECTIONS + 8 {
            idle.push(TcpStream::connect(("127.0.0.1", port)).await.unwrap());
        }
        let mut browser = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        browser
            .write_all(b"GET /callback?code=c1&state=s1 HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            .await
            .unwrap();
        let (_typing, pasted) = tokio::sync::mpsc::unbounded_channel();
        // Only a guard against hanging: the redirect is already there to be read.
        let redirect = tokio::time::timeout(
            Duration::from_secs(60),
            wait_for_redirect(&listener, pasted, port, Some("s1")),
        )
        .await
        .expect("the browser's redirect was never taken");
        match redirect {
            Redirect::Browser(url, _) => {
                assert_eq!(
                    url,
                    format!("http://127.0.0.1:{port}/callback?code=c1&state=s1")
                );
            }
            Redirect::Pasted(line) => panic!("nothing was pasted: {line}"),
        }
    }
}
