//! Finding the daemon and talking JSON-RPC to it over one HTTP/1.1 connection.
//!
//! [`resolve_endpoint`] decides where the daemon is and which token to present, from
//! `TOOL_CLI_HOST` / `TOOL_CLI_PORT` / `TOOL_CLI_TOKEN` or, for whatever is unset, the runtime file
//! the daemon writes; it is pure so every precedence rule is unit-tested. [`Connection`] owns the
//! socket: one TCP connection, opened with a short connect timeout so a dead daemon is reported at
//! once, kept alive for the handshake and the command, each request bounded by its own timeout.
//! A run is a handful of sequential requests, so a bare hyper http1 connection is all we need; a
//! pooling client would only add start-up time.

use std::path::{Path, PathBuf};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, StatusCode, header};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde_json::Value;
use tool_cli_protocol::runtime::{RUNTIME_FILE_NAME, RuntimeFile};
use tool_cli_protocol::{DEFAULT_HOST, Response};

use crate::error::Error;

/// Where the daemon is and how to authenticate to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) token: String,
}

impl Endpoint {
    /// `host:port`, with brackets around an IPv6 literal, as in a URL or a `Host` header.
    pub(crate) fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// The environment variables that locate the daemon, read by the caller.
#[derive(Debug, Clone, Default)]
pub(crate) struct EndpointEnv {
    /// `TOOL_CLI_HOST`.
    pub(crate) host: Option<String>,
    /// `TOOL_CLI_PORT`.
    pub(crate) port: Option<String>,
    /// `TOOL_CLI_TOKEN`.
    pub(crate) token: Option<String>,
    /// The runtime directory, from `tool_cli_protocol::runtime::runtime_dir`.
    pub(crate) runtime_dir: PathBuf,
}

impl EndpointEnv {
    /// Reads the process environment.
    pub(crate) fn from_process() -> Self {
        use tool_cli_protocol::env;
        let var = |name: &str| std::env::var(name).ok();
        let runtime_dir = tool_cli_protocol::runtime::runtime_dir(
            std::env::var_os(env::RUNTIME_DIR).map(PathBuf::from),
            std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from),
            std::env::temp_dir(),
            current_uid(),
        );
        EndpointEnv {
            host: var(env::HOST),
            port: var(env::PORT),
            token: var(env::TOKEN),
            runtime_dir,
        }
    }
}

#[cfg(unix)]
fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail (POSIX).
    unsafe { libc::getuid() }
}

#[cfg(not(unix))]
fn current_uid() -> u32 {
    0
}

/// Decides the endpoint. Variables that are set win; whatever is missing (port or token) comes
/// from the runtime file, which is read only then. An empty variable counts as unset, because
/// `TOOL_CLI_TOKEN= tool-cli` is how people unset a variable for one command.
pub(crate) fn resolve_endpoint(
    env: &EndpointEnv,
    read_file: impl FnOnce(&Path) -> std::io::Result<String>,
) -> Result<Endpoint, Error> {
    let non_empty = |value: &Option<String>| {
        value
            .as_deref()
            .map(str::trim)
            .filter(|value| !value.is_empty())
            .map(str::to_owned)
    };
    let env_host = non_empty(&env.host);
    let env_token = non_empty(&env.token);
    let env_port = match non_empty(&env.port) {
        Some(text) => Some(
            text.parse::<u16>()
                .ok()
                .filter(|port| *port != 0)
                .ok_or_else(|| {
                    Error::NoDaemon(format!(
                        "TOOL_CLI_PORT must be a TCP port number between 1 and 65535, got {text:?}"
                    ))
                })?,
        ),
        None => None,
    };

    if let (Some(port), Some(token)) = (env_port, env_token.clone()) {
        return Ok(Endpoint {
            host: env_host.unwrap_or_else(|| DEFAULT_HOST.to_owned()),
            port,
            token,
        });
    }

    let path = env.runtime_dir.join(RUNTIME_FILE_NAME);
    let missing = match (env_port, &env_token) {
        (None, None) => "TOOL_CLI_PORT and TOOL_CLI_TOKEN are unset",
        (None, Some(_)) => "TOOL_CLI_PORT is unset",
        _ => "TOOL_CLI_TOKEN is unset",
    };
    let text = read_file(&path).map_err(|error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            Error::NoDaemon(format!(
                "no daemon found: {missing} and there is no runtime file at {}",
                path.display()
            ))
        } else {
            Error::NoDaemon(format!(
                "no daemon found: {missing} and the runtime file {} cannot be read ({error})",
                path.display()
            ))
        }
    })?;
    let file: RuntimeFile = serde_json::from_str(&text).map_err(|error| {
        Error::NoDaemon(format!(
            "no daemon found: {missing} and the runtime file {} is not valid ({error})",
            path.display()
        ))
    })?;
    Ok(Endpoint {
        host: env_host.unwrap_or_else(|| reachable_host(&file.host)),
        port: env_port.unwrap_or(file.port),
        token: env_token.unwrap_or(file.token),
    })
}

/// A daemon bound to every interface is reached on loopback.
fn reachable_host(bound: &str) -> String {
    match bound {
        "" | "0.0.0.0" => DEFAULT_HOST.to_owned(),
        "::" | "[::]" => "::1".to_owned(),
        other => other
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned(),
    }
}

/// One keep-alive HTTP/1.1 connection to the daemon, speaking JSON-RPC.
pub(crate) struct Connection {
    sender: SendRequest<Full<Bytes>>,
    /// `Bearer <token>`, built once.
    authorization: String,
    /// `host:port` for the `Host` header, which HTTP/1.1 requires.
    address: String,
    next_id: u64,
}

impl Connection {
    /// Opens the TCP connection and the HTTP/1.1 session. Must run inside a tokio runtime, which
    /// drives the connection in a spawned task.
    pub(crate) async fn open(
        endpoint: &Endpoint,
        connect_timeout: Duration,
    ) -> Result<Self, Error> {
        let address = endpoint.address();
        let connect = tokio::net::TcpStream::connect((endpoint.host.as_str(), endpoint.port));
        let stream = match tokio::time::timeout(connect_timeout, connect).await {
            Err(_elapsed) => {
                return Err(Error::ConnectTimeout {
                    address,
                    timeout_ms: connect_timeout.as_millis() as u64,
                });
            }
            Ok(Err(error)) => {
                let reason = match error.kind() {
                    std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
                    _ => error.to_string(),
                };
                return Err(Error::Connect { address, reason });
            }
            Ok(Ok(stream)) => stream,
        };
        // Requests are small and sent whole; waiting for Nagle would only add latency.
        let _ = stream.set_nodelay(true);
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| Error::Transport(error.to_string()))?;
        // The connection task ends when `sender` is dropped or the daemon closes the socket; a
        // failure there surfaces as an error of the pending request, so it is not reported twice.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Connection {
            sender,
            authorization: format!("Bearer {}", endpoint.token),
            address,
            next_id: 1,
        })
    }

    /// Sends one JSON-RPC request and waits at most `timeout` for its response.
    pub(crate) async fn call<P: Serialize>(
        &mut self,
        method: &str,
        params: Option<P>,
        timeout: Duration,
    ) -> Result<Value, Error> {
        let id = self.next_id;
        self.next_id += 1;
        let request = tool_cli_protocol::Request::new(id, method, params);
        let body = serde_json::to_vec(&request).map_err(|error| {
            Error::Other(format!("cannot encode the {method} request: {error}"))
        })?;
        match tokio::time::timeout(timeout, self.exchange(method, body)).await {
            Ok(result) => result,
            Err(_elapsed) => Err(Error::Timeout {
                method: method.to_owned(),
                timeout_ms: timeout.as_millis() as u64,
            }),
        }
    }

    async fn exchange(&mut self, method: &str, body: Vec<u8>) -> Result<Value, Error> {
        let request = Request::builder()
            .method(Method::POST)
            .uri("/")
            .header(header::HOST, &self.address)
            .header(header::AUTHORIZATION, &self.authorization)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|error| Error::Other(format!("cannot build the HTTP request: {error}")))?;
        self.sender
            .ready()
            .await
            .map_err(|error| Error::Transport(error.to_string()))?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|error| Error::Transport(error.to_string()))?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|error| Error::Transport(error.to_string()))?
            .to_bytes();
        decode_response(method, status, &bytes)
    }
}

/// Interprets an HTTP response to a JSON-RPC request.
fn decode_response(method: &str, status: StatusCode, body: &[u8]) -> Result<Value, Error> {
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        return Err(Error::AuthRefused {
            status: status.as_u16(),
        });
    }
    // A JSON-RPC error may come with a non-200 status from some servers; prefer its content.
    match serde_json::from_slice::<Response>(body) {
        Ok(response) if status.is_success() || response.error.is_some() => {
            response.into_result().map_err(|error| Error::Rpc {
                method: method.to_owned(),
                error: Box::new(error),
            })
        }
        Err(error) if status.is_success() => Err(Error::Protocol(format!(
            "the answer to {method} is not a JSON-RPC response ({error}): {}",
            excerpt(body)
        ))),
        _ => Err(Error::Http {
            status: status.as_u16(),
            body: excerpt(body),
        }),
    }
}

/// The start of a body, for messages.
fn excerpt(body: &[u8]) -> String {
    const LIMIT: usize = 300;
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(LIMIT) {
        Some((index, _)) => format!("{}…", &text[..index]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use serde_json::json;
    use tokio::net::TcpListener;

    use super::*;
    use crate::error::exit;
    use crate::test_support::fake_daemon;

    fn env(port: Option<&str>, token: Option<&str>) -> EndpointEnv {
        EndpointEnv {
            host: None,
            port: port.map(str::to_owned),
            token: token.map(str::to_owned),
            runtime_dir: PathBuf::from("/run/user/1000/tool-cli"),
        }
    }

    fn runtime_file(host: &str) -> String {
        json!({"host": host, "port": 4242, "token": "filetoken", "pid": 1, "version": "0.1.0"})
            .to_string()
    }

    fn no_file(_: &Path) -> io::Result<String> {
        Err(io::Error::from(io::ErrorKind::NotFound))
    }

    #[test]
    fn environment_wins_and_file_is_not_read() {
        let endpoint = resolve_endpoint(&env(Some("1234"), Some("abc")), |_| {
            panic!("the runtime file must not be read")
        })
        .unwrap();
        assert_eq!(
            endpoint,
            Endpoint {
                host: "127.0.0.1".into(),
                port: 1234,
                token: "abc".into()
            }
        );
    }

    #[test]
    fn runtime_file_fills_what_is_unset() {
        let read = |path: &Path| {
            assert_eq!(path, Path::new("/run/user/1000/tool-cli/daemon.json"));
            Ok(runtime_file("127.0.0.1"))
        };
        let endpoint = resolve_endpoint(&env(None, None), read).unwrap();
        assert_eq!(
            (endpoint.port, endpoint.token.as_str()),
            (4242, "filetoken")
        );
        let endpoint =
            resolve_endpoint(&env(Some("5555"), None), |_| Ok(runtime_file("127.0.0.1"))).unwrap();
        assert_eq!(
            (endpoint.port, endpoint.token.as_str()),
            (5555, "filetoken")
        );
        // An empty variable is unset.
        let endpoint =
            resolve_endpoint(&env(Some(""), Some("")), |_| Ok(runtime_file("127.0.0.1"))).unwrap();
        assert_eq!(
            (endpoint.port, endpoint.token.as_str()),
            (4242, "filetoken")
        );
    }

    #[test]
    fn wildcard_bind_address_is_reached_on_loopback() {
        let endpoint = resolve_endpoint(&env(None, None), |_| Ok(runtime_file("0.0.0.0"))).unwrap();
        assert_eq!(endpoint.host, "127.0.0.1");
        let endpoint = resolve_endpoint(&env(None, None), |_| Ok(runtime_file("::"))).unwrap();
        assert_eq!(endpoint.address(), "[::1]:4242");
        let mut with_host = env(None, None);
        with_host.host = Some("10.0.0.2".into());
        let endpoint = resolve_endpoint(&with_host, |_| Ok(runtime_file("0.0.0.0"))).unwrap();
        assert_eq!(endpoint.host, "10.0.0.2");
    }

    #[test]
    fn missing_daemon_says_what_is_missing_and_how_to_start_one() {
        let error = resolve_endpoint(&env(None, None), no_file).unwrap_err();
        assert_eq!(error.exit_code(), exit::UNREACHABLE);
        let message = error.to_string();
        assert!(
            message.contains("TOOL_CLI_PORT and TOOL_CLI_TOKEN are unset"),
            "{message}"
        );
        assert!(
            message.contains("/run/user/1000/tool-cli/daemon.json"),
            "{message}"
        );
        assert!(message.contains("tool-cli-daemon --print-env"), "{message}");
        let message = resolve_endpoint(&env(Some("1"), None), no_file)
            .unwrap_err()
            .to_string();
        assert!(message.contains("TOOL_CLI_TOKEN is unset"), "{message}");
    }

    #[test]
    fn bad_port_and_bad_runtime_file_are_reported() {
        for port in ["http", "0", "70000"] {
            let error = resolve_endpoint(&env(Some(port), Some("t")), no_file).unwrap_err();
            assert_eq!(error.exit_code(), exit::UNREACHABLE);
            assert!(
                error.to_string().contains("TOOL_CLI_PORT must be"),
                "{error}"
            );
        }
        let error = resolve_endpoint(&env(None, None), |_| Ok("{".into())).unwrap_err();
        assert!(error.to_string().contains("is not valid"), "{error}");
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

    fn endpoint(port: u16) -> Endpoint {
        crate::test_support::endpoint(port)
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
        let mut connection = Connection::open(&endpoint(port), Duration::from_secs(1))
            .await
            .unwrap();
        let second = Duration::from_secs(5);
        let first = connection
            .call::<Value>("getBridgeInfo", None, second)
            .await;
        assert_eq!(first.unwrap(), json!({"a": 1}));
        let params = json!({"server": "demo"});
        let next = connection.call("listTools", Some(params), second).await;
        assert_eq!(next.unwrap(), json!({"b": 2}));
        drop(connection);
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
        let mut connection = Connection::open(&endpoint(port), Duration::from_secs(1))
            .await
            .unwrap();
        let error = connection
            .call::<Value>("getBridgeInfo", None, Duration::from_secs(5))
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
        let error = Connection::open(&endpoint(port), Duration::from_secs(1))
            .await
            .err()
            .unwrap();
        assert_eq!(error.exit_code(), exit::UNREACHABLE);
        assert!(error.to_string().contains("connection refused"), "{error}");
    }

    #[tokio::test(start_paused = true)]
    async fn silent_daemon_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        // Accept and hold the socket without ever answering.
        let _holder = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            std::future::pending::<()>().await;
            drop(socket);
        });
        let mut connection = Connection::open(&endpoint(port), Duration::from_secs(1))
            .await
            .unwrap();
        let error = connection
            .call::<Value>("callTool", None, Duration::from_millis(2_000))
            .await
            .unwrap_err();
        assert_eq!(error.exit_code(), exit::TIMEOUT);
        assert!(error.to_string().contains("2000 ms"), "{error}");
    }
}
