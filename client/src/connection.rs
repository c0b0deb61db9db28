//! Finding the daemon and talking JSON-RPC to it over one HTTP/1.1 connection.
//!
//! [`resolve_endpoint`] decides where the daemon is (a TCP address, or a Unix socket) and which
//! token to present, from `TOOL_CLI_SOCKET` / `TOOL_CLI_HOST` / `TOOL_CLI_PORT` /
//! `TOOL_CLI_TOKEN` or, for whatever is unset, the runtime file the daemon writes; it is pure so
//! every precedence rule is unit-tested. [`Connection`] owns the socket: one connection, opened
//! with a short connect timeout so a dead daemon is reported at once, kept alive for the identity
//! check, the handshake and the command, each request bounded by its own timeout.
//! A run is a handful of sequential requests, so a bare hyper http1 connection is all we need; a
//! pooling client would only add start-up time.
//!
//! The token is sent only after the listener proved it holds it (`POST /identity`, see
//! [`crate::identity`]): the first [`Connection::call`] makes that check, so no code path can
//! send an authenticated request to a listener that has not passed it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, StatusCode, header};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde_json::Value;
use tool_cli_protocol::runtime::{RUNTIME_FILE_NAME, RuntimeFile};
use tool_cli_protocol::{DEFAULT_HOST, Response};

use crate::error::Error;
use crate::identity;

/// Where the daemon is and how to authenticate to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) target: Target,
    pub(crate) token: String,
}

/// Where the daemon listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A TCP address (`TOOL_CLI_HOST`, `TOOL_CLI_PORT`, or the runtime file's `host`/`port`).
    Tcp { host: String, port: u16 },
    /// A Unix socket (`TOOL_CLI_SOCKET`, or the runtime file's `socket`).
    Unix { path: PathBuf },
}

/// The `Host` header sent over a Unix socket, which has no address of its own.
const UNIX_SOCKET_HOST: &str = "localhost";

impl Target {
    /// The `Host` header value: `host:port`, with brackets around an IPv6 literal, or
    /// `localhost` for a Unix socket. The identity proof is bound to exactly this text.
    pub(crate) fn host_header(&self) -> String {
        match self {
            Target::Tcp { host, port } if host.contains(':') => format!("[{host}]:{port}"),
            Target::Tcp { host, port } => format!("{host}:{port}"),
            Target::Unix { .. } => UNIX_SOCKET_HOST.to_owned(),
        }
    }

    /// Where the daemon is, for messages: `127.0.0.1:4567` or the socket's path.
    pub(crate) fn describe(&self) -> String {
        match self {
            Target::Tcp { .. } => self.host_header(),
            Target::Unix { path } => path.display().to_string(),
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
    /// `TOOL_CLI_SOCKET`.
    pub(crate) socket: Option<String>,
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
            socket: var(env::SOCKET),
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
///
/// A Unix socket is used when `TOOL_CLI_SOCKET` is set (it wins over every TCP setting), or when
/// the runtime file names one and `TOOL_CLI_PORT` is unset (a port set by hand means TCP).
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
    let env_socket = non_empty(&env.socket).map(PathBuf::from);
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

    match (&env_socket, env_port, &env_token) {
        (Some(path), _, Some(token)) => {
            return Ok(Endpoint {
                target: Target::Unix { path: path.clone() },
                token: token.clone(),
            });
        }
        (None, Some(port), Some(token)) => {
            return Ok(Endpoint {
                target: Target::Tcp {
                    host: env_host.unwrap_or_else(|| DEFAULT_HOST.to_owned()),
                    port,
                },
                token: token.clone(),
            });
        }
        _ => {}
    }

    let path = env.runtime_dir.join(RUNTIME_FILE_NAME);
    let missing = match (&env_socket, env_port, &env_token) {
        (None, None, None) => "TOOL_CLI_PORT and TOOL_CLI_TOKEN are unset",
        (None, None, Some(_)) => "TOOL_CLI_PORT is unset",
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
    let file_socket = file
        .socket
        .filter(|socket| !socket.trim().is_empty())
        .map(PathBuf::from);
    let target = match (env_socket, env_port, file_socket) {
        (Some(path), _, _) | (None, None, Some(path)) => Target::Unix { path },
        (None, port, _) => Target::Tcp {
            host: env_host.unwrap_or_else(|| reachable_host(&file.host)),
            port: port.unwrap_or(file.port),
        },
    };
    Ok(Endpoint {
        target,
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
    /// Where the connection goes, for messages.
    target: Target,
    /// The token, used as the key of the identity proof before it is ever sent.
    token: String,
    /// `Bearer <token>`, built once.
    authorization: String,
    /// The `Host` header, which HTTP/1.1 requires and the identity proof is bound to.
    host_header: String,
    /// Whether the listener proved it holds the token; until then no request carries it.
    identity_proven: bool,
    next_id: u64,
}

/// Largest answer to `POST /identity` read: a proof is ~80 bytes, and the listener is not
/// trusted yet, so it must not make us buffer whatever it likes.
const IDENTITY_ANSWER_LIMIT: usize = 4096;

impl Connection {
    /// Opens the connection (TCP or Unix socket) and the HTTP/1.1 session. Must run inside a
    /// tokio runtime, which drives the connection in a spawned task. Nothing is sent yet.
    pub(crate) async fn open(
        endpoint: &Endpoint,
        connect_timeout: Duration,
    ) -> Result<Self, Error> {
        let target = &endpoint.target;
        let sender = match target {
            Target::Tcp { host, port } => {
                let connect = tokio::net::TcpStream::connect((host.as_str(), *port));
                let stream = connect_within(target, connect_timeout, connect).await?;
                // Requests are small and sent whole; waiting for Nagle would only add latency.
                let _ = stream.set_nodelay(true);
                http_handshake(Box::new(stream)).await?
            }
            #[cfg(unix)]
            Target::Unix { path } => {
                let connect = tokio::net::UnixStream::connect(path);
                let stream = connect_within(target, connect_timeout, connect).await?;
                http_handshake(Box::new(stream)).await?
            }
            #[cfg(not(unix))]
            Target::Unix { .. } => {
                return Err(Error::Connect {
                    address: target.describe(),
                    reason: "Unix sockets are not supported on this platform".to_owned(),
                });
            }
        };
        Ok(Connection {
            sender,
            target: target.clone(),
            token: endpoint.token.clone(),
            authorization: format!("Bearer {}", endpoint.token),
            host_header: target.host_header(),
            identity_proven: false,
            next_id: 1,
        })
    }

    /// Sends one JSON-RPC request and waits at most `timeout` for its response. The first call
    /// on a connection first has the listener prove it holds the token (bounded by the same
    /// timeout), and fails without sending the token when it cannot.
    pub(crate) async fn call<P: Serialize>(
        &mut self,
        method: &str,
        params: Option<P>,
        timeout: Duration,
    ) -> Result<Value, Error> {
        if !self.identity_proven {
            match tokio::time::timeout(timeout, self.prove_identity()).await {
                Ok(outcome) => outcome?,
                Err(_elapsed) => {
                    return Err(self.unproven(format!(
                        "it did not answer POST {} within {} ms",
                        tool_cli_protocol::identity::PATH,
                        timeout.as_millis()
                    )));
                }
            }
            self.identity_proven = true;
        }
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

    /// `POST /identity` with a fresh nonce and the token's id, no `Authorization`; succeeds only
    /// when the answer is the right proof.
    async fn prove_identity(&mut self) -> Result<(), Error> {
        use tool_cli_protocol::identity::{NONCE_HEADER, PATH, TOKEN_ID_HEADER};
        let nonce = identity::new_nonce().map_err(|error| {
            Error::Other(format!(
                "cannot read random bytes for the identity check from /dev/urandom: {error}"
            ))
        })?;
        let request = Request::builder()
            .method(Method::POST)
            .uri(PATH)
            .header(header::HOST, &self.host_header)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json")
            .header(NONCE_HEADER, &nonce)
            .header(TOKEN_ID_HEADER, identity::token_id(&self.token))
            .body(Full::new(Bytes::new()))
            .map_err(|error| Error::Other(format!("cannot build the HTTP request: {error}")))?;
        let sent = async {
            self.sender.ready().await?;
            self.sender.send_request(request).await
        };
        let response = sent.await.map_err(|error| {
            self.unproven(format!("the connection failed during POST {PATH}: {error}"))
        })?;
        let status = response.status();
        let body = Limited::new(response.into_body(), IDENTITY_ANSWER_LIMIT)
            .collect()
            .await
            .map_err(|error| self.unproven(format!("its answer cannot be read: {error}")))?
            .to_bytes();
        check_identity_answer(status, &body, &self.token, &nonce, &self.host_header)
            .map_err(|reason| self.unproven(reason))
    }

    fn unproven(&self, reason: String) -> Error {
        Error::IdentityUnproven {
            address: self.target.describe(),
            unix_socket: matches!(self.target, Target::Unix { .. }),
            reason,
        }
    }

    async fn exchange(&mut self, method: &str, body: Vec<u8>) -> Result<Value, Error> {
        let request = Request::builder()
            .method(Method::POST)
            .uri("/")
            .header(header::HOST, &self.host_header)
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

/// Connects within `timeout`, turning failures into "cannot reach" errors naming the target.
async fn connect_within<S>(
    target: &Target,
    timeout: Duration,
    connect: impl Future<Output = std::io::Result<S>>,
) -> Result<S, Error> {
    match tokio::time::timeout(timeout, connect).await {
        Err(_elapsed) => Err(Error::ConnectTimeout {
            address: target.describe(),
            timeout_ms: timeout.as_millis() as u64,
        }),
        Ok(Err(error)) => {
            let reason = match (error.kind(), target) {
                (std::io::ErrorKind::ConnectionRefused, _) => "connection refused".to_owned(),
                (std::io::ErrorKind::NotFound, Target::Unix { .. }) => "no such socket".to_owned(),
                _ => error.to_string(),
            };
            Err(Error::Connect {
                address: target.describe(),
                reason,
            })
        }
        Ok(Ok(stream)) => Ok(stream),
    }
}

/// A connected byte stream: TCP or a Unix socket.
trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Stream for S {}

/// Starts the HTTP/1.1 session on a connected stream. The stream is boxed so that hyper's
/// connection code is compiled once rather than once per transport: a call makes a handful of
/// reads and writes, so the indirection costs nothing measurable, and the binary stays smaller.
async fn http_handshake(stream: Box<dyn Stream>) -> Result<SendRequest<Full<Bytes>>, Error> {
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|error| Error::Transport(error.to_string()))?;
    // The connection task ends when `sender` is dropped or the daemon closes the socket; a
    // failure there surfaces as an error of the pending request, so it is not reported twice.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// Checks the answer to `POST /identity`; the error says what was wrong with it.
fn check_identity_answer(
    status: StatusCode,
    body: &[u8],
    token: &str,
    nonce_hex: &str,
    host: &str,
) -> Result<(), String> {
    match status {
        StatusCode::OK => {}
        StatusCode::NOT_FOUND => {
            return Err(format!(
                "it answered HTTP 404 to POST {} (a tool-cli-daemon older than this tool-cli \
                 does not serve it either)",
                tool_cli_protocol::identity::PATH
            ));
        }
        StatusCode::FORBIDDEN => {
            return Err(
                "it answered HTTP 403: it knows no live token with this id (a token \
                        of another daemon, or one that was revoked or expired?)"
                    .to_owned(),
            );
        }
        other => return Err(format!("it answered HTTP {}", other.as_u16())),
    }
    let proof = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|answer| answer.get("proof")?.as_str().map(str::to_owned))
        .ok_or_else(|| {
            format!(
                "its answer is not a JSON object with a proof: {}",
                excerpt(body)
            )
        })?;
    if identity::proof_matches(&proof, token, nonce_hex, host) {
        Ok(())
    } else {
        Err("its proof is wrong".to_owned())
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
    use crate::test_support::{
        Identity, TOKEN, fake_daemon, fake_daemon_on_socket, fake_listener, header, serve,
    };

    fn env(port: Option<&str>, token: Option<&str>) -> EndpointEnv {
        EndpointEnv {
            host: None,
            port: port.map(str::to_owned),
            token: token.map(str::to_owned),
            socket: None,
            runtime_dir: PathBuf::from("/run/user/1000/tool-cli"),
        }
    }

    fn runtime_file(host: &str) -> String {
        json!({"host": host, "port": 4242, "token": "filetoken", "pid": 1, "version": "0.1.0"})
            .to_string()
    }

    fn runtime_file_with_socket(socket: &str) -> String {
        json!({"host": "127.0.0.1", "port": 0, "token": "filetoken", "pid": 1,
               "version": "0.1.0", "socket": socket})
        .to_string()
    }

    fn no_file(_: &Path) -> io::Result<String> {
        Err(io::Error::from(io::ErrorKind::NotFound))
    }

    fn tcp(host: &str, port: u16) -> Target {
        Target::Tcp {
            host: host.into(),
            port,
        }
    }

    fn unix(path: &str) -> Target {
        Target::Unix { path: path.into() }
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
                target: tcp("127.0.0.1", 1234),
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
        assert_eq!(endpoint.target, tcp("127.0.0.1", 4242));
        assert_eq!(endpoint.token, "filetoken");
        let endpoint =
            resolve_endpoint(&env(Some("5555"), None), |_| Ok(runtime_file("127.0.0.1"))).unwrap();
        assert_eq!(endpoint.target, tcp("127.0.0.1", 5555));
        assert_eq!(endpoint.token, "filetoken");
        // An empty variable is unset.
        let endpoint =
            resolve_endpoint(&env(Some(""), Some("")), |_| Ok(runtime_file("127.0.0.1"))).unwrap();
        assert_eq!(endpoint.target, tcp("127.0.0.1", 4242));
        assert_eq!(endpoint.token, "filetoken");
    }

    #[test]
    fn wildcard_bind_address_is_reached_on_loopback() {
        let endpoint = resolve_endpoint(&env(None, None), |_| Ok(runtime_file("0.0.0.0"))).unwrap();
        assert_eq!(endpoint.target, tcp("127.0.0.1", 4242));
        let endpoint = resolve_endpoint(&env(None, None), |_| Ok(runtime_file("::"))).unwrap();
        assert_eq!(endpoint.target.host_header(), "[::1]:4242");
        let mut with_host = env(None, None);
        with_host.host = Some("10.0.0.2".into());
        let endpoint = resolve_endpoint(&with_host, |_| Ok(runtime_file("0.0.0.0"))).unwrap();
        assert_eq!(endpoint.target, tcp("10.0.0.2", 4242));
    }

    #[test]
    fn socket_variable_wins_over_tcp_settings() {
        let mut with_socket = env(Some("1234"), Some("abc"));
        with_socket.socket = Some("/run/tool-cli.sock".into());
        let endpoint = resolve_endpoint(&with_socket, |_| {
            panic!("the runtime file must not be read")
        })
        .unwrap();
        assert_eq!(endpoint.target, unix("/run/tool-cli.sock"));
        assert_eq!(endpoint.token, "abc");
        // The token still comes from the runtime file when unset; its host and port are ignored.
        with_socket.token = None;
        let endpoint = resolve_endpoint(&with_socket, |_| Ok(runtime_file("127.0.0.1"))).unwrap();
        assert_eq!(endpoint.target, unix("/run/tool-cli.sock"));
        assert_eq!(endpoint.token, "filetoken");
        let message = resolve_endpoint(&with_socket, no_file)
            .unwrap_err()
            .to_string();
        assert!(message.contains("TOOL_CLI_TOKEN is unset"), "{message}");
        // Empty means unset.
        let mut empty_socket = env(Some("1234"), Some("abc"));
        empty_socket.socket = Some(" ".into());
        let endpoint = resolve_endpoint(&empty_socket, no_file).unwrap();
        assert_eq!(endpoint.target, tcp("127.0.0.1", 1234));
    }

    #[test]
    fn runtime_file_socket_is_used_unless_a_port_is_set() {
        let read = |_: &Path| {
            Ok(runtime_file_with_socket(
                "/run/user/1000/tool-cli/daemon.sock",
            ))
        };
        let endpoint = resolve_endpoint(&env(None, None), read).unwrap();
        assert_eq!(endpoint.target, unix("/run/user/1000/tool-cli/daemon.sock"));
        assert_eq!(endpoint.token, "filetoken");
        let endpoint = resolve_endpoint(&env(None, Some("abc")), read).unwrap();
        assert_eq!(endpoint.target, unix("/run/user/1000/tool-cli/daemon.sock"));
        assert_eq!(endpoint.token, "abc");
        // A port set by hand means TCP.
        let endpoint = resolve_endpoint(&env(Some("5555"), None), read).unwrap();
        assert_eq!(endpoint.target, tcp("127.0.0.1", 5555));
        // A null socket is TCP as before.
        let with_null = json!({"host": "127.0.0.1", "port": 4242, "token": "t", "pid": 1,
                               "version": "0.1.0", "socket": null})
        .to_string();
        let endpoint = resolve_endpoint(&env(None, None), |_| Ok(with_null)).unwrap();
        assert_eq!(endpoint.target, tcp("127.0.0.1", 4242));
    }

    #[test]
    fn host_header_and_description_of_each_target() {
        assert_eq!(tcp("127.0.0.1", 4567).host_header(), "127.0.0.1:4567");
        assert_eq!(tcp("::1", 4567).host_header(), "[::1]:4567");
        assert_eq!(tcp("::1", 4567).describe(), "[::1]:4567");
        assert_eq!(unix("/tmp/d.sock").host_header(), "localhost");
        assert_eq!(unix("/tmp/d.sock").describe(), "/tmp/d.sock");
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

    #[tokio::test]
    async fn silent_daemon_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        // Prove the identity, answer one request, then hold the socket without answering.
        let _holder = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let answers = vec![crate::test_support::result(json!({}))];
            serve(&mut socket, Identity::Honest, answers).await;
            std::future::pending::<()>().await;
            drop(socket);
        });
        let mut connection = Connection::open(&endpoint(port), Duration::from_secs(1))
            .await
            .unwrap();
        let first = connection.call::<Value>("getBridgeInfo", None, Duration::from_secs(5));
        first.await.unwrap();
        // Real sockets above, a paused clock from here: the timeout fires without waiting.
        tokio::time::pause();
        let error = connection
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
        let mut connection = Connection::open(&endpoint(port), Duration::from_secs(1))
            .await
            .unwrap();
        let error = connection
            .call::<Value>("getBridgeInfo", None, Duration::from_millis(2_000))
            .await
            .unwrap_err();
        assert_eq!(error.exit_code(), exit::IDENTITY);
        assert!(
            error
                .to_string()
                .contains("did not answer POST /identity within 2000 ms"),
            "{error}"
        );
    }

    /// A listener that answers the identity check wrongly in `identity`'s way: exit 8, and no
    /// request it received carries the token.
    async fn assert_token_withheld(identity: Identity, reason: &str) {
        let (port, listener) = fake_listener(identity.clone(), vec![bridge_result()]).await;
        let mut connection = Connection::open(&endpoint(port), Duration::from_secs(1))
            .await
            .unwrap();
        let error = connection
            .call::<Value>("getBridgeInfo", None, Duration::from_secs(5))
            .await
            .unwrap_err();
        // A second call must not send the token either.
        let again = connection
            .call::<Value>("listServers", None, Duration::from_secs(5))
            .await;
        assert!(again.is_err(), "{identity:?}");
        drop(connection);
        assert_eq!(error.exit_code(), exit::IDENTITY, "{identity:?}: {error}");
        let message = error.to_string();
        assert!(
            message.starts_with(&format!(
                "the listener at 127.0.0.1:{port} did not prove it holds the token, so the \
                 token was not sent (a stale TOOL_CLI_PORT, or another program on that port?)"
            )),
            "{message}"
        );
        assert!(message.contains(reason), "{identity:?}: {message}");
        let seen = listener.await.unwrap();
        assert!(!seen.is_empty(), "{identity:?}");
        for request in &seen {
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

    fn bridge_result() -> (u16, String) {
        crate::test_support::bridge_info()
    }

    #[tokio::test]
    async fn wrong_identity_answers_withhold_the_token() {
        let wrong_proof = json!({"proof": "00".repeat(32)}).to_string();
        for (identity, reason) in [
            (Identity::Answer(404, String::new()), "HTTP 404"),
            (Identity::Answer(403, String::new()), "HTTP 403"),
            (Identity::Answer(500, "{}".into()), "HTTP 500"),
            (Identity::Answer(200, wrong_proof), "its proof is wrong"),
            (Identity::Answer(200, "<html>".into()), "not a JSON object"),
            (
                Identity::Answer(200, r#"{"proof": 7}"#.into()),
                "not a JSON",
            ),
            (Identity::Close, "the connection failed"),
        ] {
            assert_token_withheld(identity, reason).await;
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
        assert_eq!(check(200, &right), Ok(()));
        // The right proof with the wrong status is still refused.
        assert!(check(201, &right).unwrap_err().contains("HTTP 201"));
        assert!(
            check(404, "")
                .unwrap_err()
                .contains("older than this tool-cli")
        );
        assert!(check(403, "").unwrap_err().contains("revoked or expired"));
        let other_host = json!({"proof": crate::identity::proof(token, &nonce, "127.0.0.1:10")});
        assert_eq!(
            check(200, &other_host.to_string()),
            Err("its proof is wrong".to_owned())
        );
        assert!(check(200, "[]").unwrap_err().contains("with a proof: []"));
    }

    #[tokio::test]
    async fn unix_socket_carries_the_same_exchange_with_host_localhost() {
        let directory = std::env::temp_dir().join(format!("tool-cli-sock-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let path = directory.join("daemon.sock");
        let _ = std::fs::remove_file(&path);
        let daemon = fake_daemon_on_socket(&path, vec![bridge_result()]);
        let endpoint = Endpoint {
            target: Target::Unix { path: path.clone() },
            token: TOKEN.into(),
        };
        let mut connection = Connection::open(&endpoint, Duration::from_secs(1))
            .await
            .unwrap();
        let info = connection
            .call::<Value>("getBridgeInfo", None, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(info["bridgeProtocol"]["major"], 1);
        drop(connection);
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
        };
        let error = Connection::open(&endpoint, Duration::from_secs(1))
            .await
            .err()
            .unwrap();
        assert_eq!(error.exit_code(), exit::UNREACHABLE);
        let message = error.to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("no such socket"), "{message}");
        // A socket file nobody listens on: refused.
        let stale = std::os::unix::net::UnixListener::bind(&path).unwrap();
        drop(stale);
        let error = Connection::open(&endpoint, Duration::from_secs(1))
            .await
            .err()
            .unwrap();
        assert_eq!(error.exit_code(), exit::UNREACHABLE);
        assert!(error.to_string().contains("connection refused"), "{error}");
        std::fs::remove_file(&path).unwrap();
    }
}
