//! One HTTP/1.1 GET with hyper's client connection, over TCP or over rustls, bounded in time and
//! size. No connection pool: a rates lookup is one request now and then, and a fresh connection
//! per call keeps a half-dead keep-alive socket from turning into a confusing failure.
//!
//! TLS uses rustls with the ring provider and Mozilla's root certificates compiled in
//! (`webpki-roots`), so `https://` works on a machine without a CA bundle and never touches
//! OpenSSL. There is no proxy support: the URL is connected to directly.

use std::sync::{Arc, OnceLock};

use http_body_util::{BodyExt as _, Empty, Limited};
use hyper::{Request, body::Bytes, header};
use hyper_util::rt::TokioIo;
use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::TcpStream,
};
use tokio_rustls::{TlsConnector, rustls};

use super::{answer::MAX_BODY_BYTES, endpoint::Endpoint};

/// Why no answer arrived (an answer with a bad status is not an error here).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum TransportError {
    #[error("cannot connect: {0}")]
    Connect(std::io::Error),
    #[error("the TLS handshake failed: {0}")]
    Tls(std::io::Error),
    #[error("the host name {0:?} is not valid for TLS")]
    ServerName(String),
    #[error("the HTTP exchange failed: {0}")]
    Http(#[from] hyper::Error),
    #[error("the answer is larger than {MAX_BODY_BYTES} bytes or was cut off: {0}")]
    Body(String),
}

/// What came back: the status, a `Location` header if any, and the body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) location: Option<String>,
    pub(crate) body: Bytes,
}

/// Sends `GET target` to `endpoint`. The caller bounds the whole exchange with a timeout.
pub(crate) async fn get(endpoint: &Endpoint, target: &str) -> Result<Answer, TransportError> {
    let tcp = TcpStream::connect((endpoint.host.as_str(), endpoint.port))
        .await
        .map_err(TransportError::Connect)?;
    // Nagle would hold our one small request back waiting for an ACK.
    let _ = tcp.set_nodelay(true);
    if !endpoint.tls {
        return exchange(tcp, endpoint, target).await;
    }
    let name = rustls::pki_types::ServerName::try_from(endpoint.host.clone())
        .map_err(|_| TransportError::ServerName(endpoint.host.clone()))?;
    let tls = TlsConnector::from(tls_config())
        .connect(name, tcp)
        .await
        .map_err(TransportError::Tls)?;
    exchange(tls, endpoint, target).await
}

async fn exchange<S>(stream: S, endpoint: &Endpoint, target: &str) -> Result<Answer, TransportError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    // The connection task ends when the exchange does (or when this future is dropped and the
    // sender with it), so it never outlives the call.
    let driver = tokio::spawn(connection);
    let request = Request::get(target)
        .header(header::HOST, &endpoint.authority)
        .header(header::ACCEPT, "application/json")
        .header(
            header::USER_AGENT,
            concat!("tool-cli-demo/", env!("CARGO_PKG_VERSION")),
        )
        .body(Empty::<Bytes>::new())
        .expect("a GET with valid headers");
    let result = async {
        let response = sender.send_request(request).await?;
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get(header::LOCATION)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let body = Limited::new(response.into_body(), MAX_BODY_BYTES)
            .collect()
            .await
            .map_err(|error| TransportError::Body(error.to_string()))?
            .to_bytes();
        Ok(Answer {
            status,
            location,
            body,
        })
    }
    .await;
    driver.abort();
    result
}

/// The client TLS configuration, built once: ring, TLS 1.2 and 1.3, webpki roots, HTTP/1.1 ALPN.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots =
                rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Arc::new(config)
        })
        .clone()
}
