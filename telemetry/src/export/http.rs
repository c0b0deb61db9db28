//! The HTTP client the exporter thread posts OTLP with: hyper's HTTP/1.1 on one kept
//! connection, over plain TCP or rustls (ring provider, the platform's roots or Mozilla's, and
//! an optional CA file), every request bounded by the signal's timeout.
//!
//! It runs on the exporter's own current-thread runtime, so it works whatever runtime (or none)
//! the caller has: the daemon's tokio multi-thread runtime never runs exporter I/O.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderName, HeaderValue};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{self, RootCertStore};

use crate::settings::{Compression, Endpoint, SignalSettings};

/// Most of a collector's answer body read (an `ExportTraceServiceResponse` is a few bytes; an
/// error text longer than this is cut).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Why a collector client could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The CA file is unreadable or holds no certificate.
    #[error(
        "OTEL_EXPORTER_OTLP_CERTIFICATE {path}: {reason}; expected a readable PEM file with at \
         least one certificate"
    )]
    Certificate {
        /// The file.
        path: String,
        /// What was wrong.
        reason: String,
    },
    /// A header cannot be sent.
    #[error(
        "header {name:?} cannot be sent over HTTP; expected a token name and a printable value"
    )]
    Header {
        /// The header's name.
        name: String,
    },
    /// rustls refused the configuration.
    #[error("cannot set up TLS for the collector: {0}")]
    Tls(String),
}

/// A collector's answer.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) retry_after: Option<String>,
    pub(crate) body: Bytes,
}

/// Why no answer came.
#[derive(Debug)]
pub(crate) enum PostError {
    Connect(String),
    TimedOut,
    Broken(String),
}

impl std::fmt::Display for PostError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PostError::Connect(reason) => write!(formatter, "cannot connect: {reason}"),
            PostError::TimedOut => write!(formatter, "no answer within the export timeout"),
            PostError::Broken(reason) => write!(formatter, "the exchange failed: {reason}"),
        }
    }
}

/// One signal's collector.
pub(crate) struct Collector {
    endpoint: Endpoint,
    headers: Vec<(HeaderName, HeaderValue)>,
    tls: Option<tokio_rustls::TlsConnector>,
    timeout: Duration,
    compression: Compression,
    connection: Option<SendRequest<Full<Bytes>>>,
}

impl Collector {
    /// A client for `settings`; reads the CA file now, so a bad one fails at start-up.
    pub(crate) fn new(settings: &SignalSettings) -> Result<Collector, ClientError> {
        let headers = settings
            .headers
            .iter()
            .map(|(name, value)| {
                let header_name = HeaderName::from_bytes(name.as_bytes());
                let header_value = HeaderValue::from_str(value);
                match (header_name, header_value) {
                    (Ok(name), Ok(mut value)) => {
                        value.set_sensitive(true);
                        Ok((name, value))
                    }
                    _ => Err(ClientError::Header { name: name.clone() }),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let tls = if settings.endpoint.secure {
            Some(tokio_rustls::TlsConnector::from(Arc::new(tls_config(
                settings.certificate.as_deref(),
            )?)))
        } else {
            None
        };
        Ok(Collector {
            endpoint: settings.endpoint.clone(),
            headers,
            tls,
            timeout: settings.timeout,
            compression: settings.compression,
            connection: None,
        })
    }

    /// The request body of an encoded message: compressed when the settings say so (once per
    /// export, not per attempt).
    pub(crate) fn encode_body(&self, message: Vec<u8>) -> Bytes {
        match self.compression {
            Compression::None => Bytes::from(message),
            Compression::Gzip => Bytes::from(gzip(&message)),
        }
    }

    /// The collector's URL, for messages.
    pub(crate) fn endpoint_display(&self) -> String {
        self.endpoint.display_url()
    }

    /// Posts one body; the whole exchange (connecting included) is bounded by the timeout. A
    /// failed exchange drops the connection, so the next one starts afresh.
    pub(crate) async fn post(&mut self, body: Bytes) -> Result<Answer, PostError> {
        match tokio::time::timeout(self.timeout, self.exchange(body)).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(error)) => {
                self.connection = None;
                Err(error)
            }
            Err(_) => {
                self.connection = None;
                Err(PostError::TimedOut)
            }
        }
    }

    async fn exchange(&mut self, body: Bytes) -> Result<Answer, PostError> {
        let mut sender = match self.connection.take() {
            Some(sender) if !sender.is_closed() => sender,
            _ => self.connect().await?,
        };
        sender
            .ready()
            .await
            .map_err(|error| PostError::Broken(error.to_string()))?;
        let mut request = hyper::Request::post(self.endpoint.path_and_query.as_str())
            .header(hyper::header::HOST, self.endpoint.authority())
            .header(hyper::header::CONTENT_TYPE, "application/x-protobuf")
            .header(
                hyper::header::USER_AGENT,
                concat!("tool-cli-telemetry/", env!("CARGO_PKG_VERSION")),
            )
            .body(Full::new(body))
            .map_err(|error| PostError::Broken(error.to_string()))?;
        if self.compression == Compression::Gzip {
            request.headers_mut().insert(
                hyper::header::CONTENT_ENCODING,
                HeaderValue::from_static("gzip"),
            );
        }
        for (name, value) in &self.headers {
            request.headers_mut().insert(name.clone(), value.clone());
        }
        let response = sender
            .send_request(request)
            .await
            .map_err(|error| PostError::Broken(error.to_string()))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(hyper::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map(|collected| collected.to_bytes())
            .unwrap_or_default();
        self.connection = Some(sender);
        Ok(Answer {
            status,
            retry_after,
            body,
        })
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, PostError> {
        let stream = TcpStream::connect((self.endpoint.host.as_str(), self.endpoint.port))
            .await
            .map_err(|error| PostError::Connect(error.to_string()))?;
        let _ = stream.set_nodelay(true);
        match &self.tls {
            None => handshake(TokioIo::new(stream)).await,
            Some(connector) => {
                let name = ServerName::try_from(self.endpoint.host.clone())
                    .map_err(|error| PostError::Connect(error.to_string()))?;
                let stream = connector
                    .connect(name, stream)
                    .await
                    .map_err(|error| PostError::Connect(format!("TLS: {error}")))?;
                handshake(TokioIo::new(stream)).await
            }
        }
    }
}

async fn handshake<T>(io: TokioIo<T>) -> Result<SendRequest<Full<Bytes>>, PostError>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|error| PostError::Connect(error.to_string()))?;
    // Drives the connection on the exporter's runtime; it ends when the sender is dropped.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

fn gzip(body: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4),
        flate2::Compression::fast(),
    );
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(body);
    encoder.finish().unwrap_or_default()
}

/// The platform's root certificates, read once per process.
fn platform_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| rustls_native_certs::load_native_certs().certs)
}

fn tls_config(certificate: Option<&Path>) -> Result<rustls::ClientConfig, ClientError> {
    let mut roots = RootCertStore::empty();
    let platform = platform_roots();
    if platform.is_empty() {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    } else {
        let _ = roots.add_parsable_certificates(platform.iter().cloned());
    }
    if let Some(path) = certificate {
        let error = |reason: String| ClientError::Certificate {
            path: path.display().to_string(),
            reason,
        };
        let bytes = std::fs::read(path).map_err(|err| error(format!("cannot read it ({err})")))?;
        let certs = CertificateDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| error(format!("is not valid PEM ({err})")))?;
        if certs.is_empty() {
            return Err(error("holds no \"BEGIN CERTIFICATE\" block".to_owned()));
        }
        for cert in certs {
            roots
                .add(cert)
                .map_err(|err| error(format!("holds a certificate rustls cannot use ({err})")))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| ClientError::Tls(error.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
