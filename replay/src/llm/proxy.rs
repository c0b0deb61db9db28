//! The LLM recording proxy: a reverse proxy on `127.0.0.1:0` in front of a provider. Point the
//! agent's `baseUrl` at it; each request goes to the upstream unchanged (its API key included),
//! the answer streams back as it arrives, and the exchange is recorded (redacted) once the
//! answer is complete.
//!
//! `accept-encoding` is not passed on, so the upstream answers uncompressed and the recorded
//! chunks are the bytes the client read. An upstream that cannot be reached gets the client a
//! 502 with the reason, and nothing is recorded.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::ServerName;

use super::{Bytes as Recorded, LlmWriter, RecordedRequest, RecordedResponse};
use crate::body::{ChannelBody, channel};
use crate::redact::{Redact, SecretRedactor};

/// Largest request body passed on.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// Request headers never passed upstream: hop-by-hop ones, `host` (set anew) and
/// `accept-encoding` (so the answer is recorded as read).
const NOT_FORWARDED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "accept-encoding",
    "content-length",
];

/// Why the proxy could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmProxyError {
    /// The upstream URL is not usable.
    #[error(
        "--upstream {url}: {reason}; expected an http:// or https:// base URL such as https://api.openai.com/v1"
    )]
    Upstream {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// A `--redact-env` variable is unset.
    #[error(
        "--redact-env {0}: the variable is not set, so its value cannot be redacted; set it or drop the flag"
    )]
    UnsetSecret(String),
    /// The recording cannot be written.
    #[error("--out {path}: {reason}")]
    Output {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The listener cannot be bound.
    #[error("cannot listen on 127.0.0.1: {0}")]
    Listen(std::io::Error),
}

/// Where requests go.
#[derive(Debug, Clone)]
pub struct Upstream {
    secure: bool,
    host: String,
    port: u16,
    base_path: String,
    url: String,
}

impl Upstream {
    /// Parses a base URL.
    pub fn parse(url: &str) -> Result<Upstream, LlmProxyError> {
        let invalid = |reason: &str| LlmProxyError::Upstream {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: hyper::Uri = url.parse().map_err(|_| invalid("not a URL"))?;
        let secure = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(invalid("the scheme is not http or https")),
        };
        let authority = uri.authority().ok_or_else(|| invalid("it names no host"))?;
        if authority.as_str().contains('@') {
            return Err(invalid(
                "credentials in the URL would be recorded; pass them as headers",
            ));
        }
        let host = authority.host().trim_matches(['[', ']']).to_owned();
        let port = authority
            .port_u16()
            .unwrap_or(if secure { 443 } else { 80 });
        Ok(Upstream {
            secure,
            host,
            port,
            base_path: uri.path().trim_end_matches('/').to_owned(),
            url: url.trim_end_matches('/').to_owned(),
        })
    }

    /// The base path (`/v1`), appended to the proxy's own address to make its base URL.
    pub fn base_path(&self) -> &str {
        &self.base_path
    }

    fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default = if self.secure { 443 } else { 80 };
        if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// The recorder the proxy writes through (taken out to finish it once the proxy stopped).
pub type SharedWriter<W> = Arc<Mutex<Option<LlmWriter<W>>>>;

/// How long exchanges still streaming at shutdown get to finish (and be recorded).
const DRAIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves the proxy on `listener` until `shutdown`, recording into `writer`.
pub async fn serve<W: Write + Send + 'static>(
    listener: TcpListener,
    upstream: Upstream,
    writer: SharedWriter<W>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let tls = tokio_rustls::TlsConnector::from(Arc::new(tls_config()));
    let upstream = Arc::new(upstream);
    // Each exchange holds a clone until it is recorded; all dropped means all recorded.
    let (in_flight, mut all_recorded) = tokio::sync::mpsc::channel::<()>(1);
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let (upstream, writer, tls) = (Arc::clone(&upstream), Arc::clone(&writer), tls.clone());
                let in_flight = in_flight.clone();
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let (upstream, writer, tls) =
                            (Arc::clone(&upstream), Arc::clone(&writer), tls.clone());
                        let in_flight = in_flight.clone();
                        async move {
                            Ok::<_, std::convert::Infallible>(
                                forward(&upstream, &tls, writer, in_flight, request).await,
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        }
    }
    drop(in_flight);
    // Let exchanges in flight finish, so their lines are written.
    let _ = tokio::time::timeout(DRAIN, async {
        while connections.join_next().await.is_some() {}
        let _ = all_recorded.recv().await;
    })
    .await;
    connections.abort_all();
}

async fn forward<W: Write + Send + 'static>(
    upstream: &Upstream,
    tls: &tokio_rustls::TlsConnector,
    writer: SharedWriter<W>,
    in_flight: tokio::sync::mpsc::Sender<()>,
    request: Request<Incoming>,
) -> Response<ChannelBody> {
    let started = Instant::now();
    let (parts, body) = request.into_parts();
    let body = match http_body_util::Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return failure(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is too large",
            );
        }
    };
    let path = parts
        .uri
        .path_and_query()
        .map(|path| path.as_str().to_owned())
        .unwrap_or_else(|| "/".to_owned());
    let mut outgoing = Request::builder()
        .method(parts.method.clone())
        .uri(path.as_str())
        .header(hyper::header::HOST, upstream.authority());
    let mut recorded_headers = Vec::new();
    for (name, value) in &parts.headers {
        if NOT_FORWARDED.contains(&name.as_str()) {
            continue;
        }
        outgoing = outgoing.header(name, value);
        recorded_headers.push((
            name.as_str().to_owned(),
            String::from_utf8_lossy(value.as_bytes()).into_owned(),
        ));
    }
    let Ok(outgoing) = outgoing.body(Full::new(body.clone())) else {
        return failure(StatusCode::BAD_REQUEST, "the request cannot be passed on");
    };
    let mut sender = match connect(upstream, tls).await {
        Ok(sender) => sender,
        Err(reason) => return failure(StatusCode::BAD_GATEWAY, &reason),
    };
    let response = match sender.send_request(outgoing).await {
        Ok(response) => response,
        Err(error) => {
            return failure(
                StatusCode::BAD_GATEWAY,
                &format!("the upstream {} failed: {error}", upstream.url),
            );
        }
    };
    let (parts_back, mut upstream_body) = response.into_parts();
    let headers: Vec<(String, String)> = parts_back
        .headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let mut answer = Response::builder().status(parts_back.status);
    for (name, value) in &parts_back.headers {
        if !super::DROPPED_RESPONSE_HEADERS.contains(&name.as_str()) {
            answer = answer.header(name, value);
        }
    }
    let (client, body_out) = channel();
    let recorded_request = RecordedRequest {
        method: parts.method.as_str().to_owned(),
        path,
        headers: recorded_headers,
        body: Recorded::of(&body),
    };
    let status = parts_back.status.as_u16();
    tokio::spawn(async move {
        // Keeps the connection's driver alive until the body is read.
        let _sender = sender;
        let _in_flight = in_flight;
        let mut chunks = Vec::new();
        while let Some(frame) = upstream_body.frame().await {
            let Ok(frame) = frame else { break };
            if let Ok(data) = frame.into_data() {
                chunks.push(Recorded::of(&data));
                let _ = client.send(data);
            }
        }
        drop(client);
        let response = RecordedResponse {
            status,
            headers,
            chunks,
        };
        let mut writer = writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(writer) = writer.as_mut()
            && let Err(error) = writer.record(started, recorded_request, response)
        {
            eprintln!("tool-cli-replay: cannot write the LLM recording: {error}");
        }
    });
    answer.body(body_out).unwrap_or_else(|_| {
        failure(
            StatusCode::BAD_GATEWAY,
            "the upstream's headers are invalid",
        )
    })
}

async fn connect(
    upstream: &Upstream,
    tls: &tokio_rustls::TlsConnector,
) -> Result<SendRequest<Full<Bytes>>, String> {
    let stream = TcpStream::connect((upstream.host.as_str(), upstream.port))
        .await
        .map_err(|error| format!("cannot reach the upstream {}: {error}", upstream.url))?;
    if upstream.secure {
        let name = ServerName::try_from(upstream.host.clone())
            .map_err(|error| format!("the upstream's host name: {error}"))?;
        let stream = tls
            .connect(name, stream)
            .await
            .map_err(|error| format!("TLS with the upstream {}: {error}", upstream.url))?;
        handshake(TokioIo::new(stream)).await
    } else {
        handshake(TokioIo::new(stream)).await
    }
}

async fn handshake<T>(io: TokioIo<T>) -> Result<SendRequest<Full<Bytes>>, String>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|error| format!("HTTP with the upstream: {error}"))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

fn failure(status: StatusCode, message: &str) -> Response<ChannelBody> {
    let (sender, body) = channel();
    let _ = sender.send(Bytes::from(
        serde_json::json!({"error": {"type": "replay_proxy", "message": message}}).to_string(),
    ));
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(body)
        .expect("a valid response")
}

fn tls_config() -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs().certs;
    if native.is_empty() {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    } else {
        let _ = roots.add_parsable_certificates(native);
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

/// `llm-record`: records until `stop`, then writes the end marker.
pub async fn run(
    upstream_url: &str,
    out: &std::path::Path,
    redact_env: &[String],
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), LlmProxyError> {
    let upstream = Upstream::parse(upstream_url)?;
    let mut secrets = Vec::new();
    for name in redact_env {
        secrets.push(std::env::var(name).map_err(|_| LlmProxyError::UnsetSecret(name.clone()))?);
    }
    let redactor: Arc<dyn Redact> = Arc::new(SecretRedactor::new(secrets));
    let output = |error: std::io::Error| LlmProxyError::Output {
        path: out.display().to_string(),
        reason: error.to_string(),
    };
    let file = {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(out)
            .map_err(output)?
    };
    let writer = Arc::new(Mutex::new(Some(
        LlmWriter::new(std::io::BufWriter::new(file), &upstream.url, redactor).map_err(output)?,
    )));
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(LlmProxyError::Listen)?;
    let address = listener.local_addr().map_err(LlmProxyError::Listen)?;
    println!("http://{address}{}", upstream.base_path());
    serve(listener, upstream, Arc::clone(&writer), stop).await;
    let finished = writer
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .take();
    if let Some(writer) = finished {
        writer.finish().map_err(output)?;
    }
    Ok(())
}
