//! A test OTLP/HTTP receiver (feature `testing`): a small HTTP server on `127.0.0.1:0` that
//! decodes `ExportTraceServiceRequest` and `ExportMetricsServiceRequest` with the official
//! `opentelemetry-proto` definitions, records what arrived, and answers as the test scripts it
//! (200, 400, 413, 429 with `Retry-After`, 500, 503, or a stall that never answers).
//!
//! No collector binary is installable here, so this stands in for one. It runs on a thread of
//! its own with its own runtime and has a synchronous API (waits use a condition variable with a
//! deadline, never a fixed sleep), so async tests and the blocking end-to-end harness can both
//! use it. Dropping it releases stalled requests and stops the server.
//!
//! ```no_run
//! let receiver = tool_cli_telemetry::testing::OtlpReceiver::start();
//! // OTEL_EXPORTER_OTLP_ENDPOINT = receiver.endpoint()
//! let spans = receiver.wait_for_spans(3, std::time::Duration::from_secs(10));
//! ```

use std::collections::VecDeque;
use std::io::Read as _;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::Metric;
/// A span as the receiver decoded it (`opentelemetry-proto`), re-exported for the tests.
pub use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use tokio::sync::watch;

/// How the receiver answers one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// 200 with an empty `Export…ServiceResponse` (the data is accepted).
    Accept,
    /// 200 with a partial success rejecting this many spans.
    AcceptRejecting(i64),
    /// This status (not accepted), with a `Retry-After` header when given.
    Status {
        /// The HTTP status.
        status: u16,
        /// The `Retry-After` value.
        retry_after: Option<String>,
    },
    /// No answer until the receiver is dropped or [`OtlpReceiver::release`] is called.
    Stall,
}

impl Reply {
    /// A plain status with no `Retry-After`.
    pub fn status(status: u16) -> Reply {
        Reply::Status {
            status,
            retry_after: None,
        }
    }
}

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Arrival {
    /// The request's path.
    pub path: String,
    /// Its headers (names lowercase).
    pub headers: Vec<(String, String)>,
    /// The body's length as sent (compressed or not).
    pub body_bytes: usize,
    /// The decoded body's length.
    pub decoded_bytes: usize,
    /// The status answered (`None` while stalled).
    pub answered: Option<u16>,
    /// The trace export, when the path was `/v1/traces` and the body decoded.
    pub traces: Option<ExportTraceServiceRequest>,
    /// The metric export, when the path was `/v1/metrics` and the body decoded.
    pub metrics: Option<ExportMetricsServiceRequest>,
}

impl Arrival {
    /// The value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header == name)
            .map(|(_, value)| value.as_str())
    }

    /// Whether the receiver accepted it (answered 2xx).
    pub fn accepted(&self) -> bool {
        matches!(self.answered, Some(status) if (200..300).contains(&status))
    }
}

#[derive(Default)]
struct State {
    arrivals: Vec<Arrival>,
    script: VecDeque<Reply>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    release: watch::Sender<u64>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The receiver; dropping it stops it.
pub struct OtlpReceiver {
    address: SocketAddr,
    secure: bool,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl OtlpReceiver {
    /// Starts a receiver on `127.0.0.1:0` that accepts everything.
    pub fn start() -> OtlpReceiver {
        OtlpReceiver::launch(None)
    }

    /// Starts a receiver that speaks HTTPS with this certificate chain and key (PEM), for the
    /// exporter's TLS path (`OTEL_EXPORTER_OTLP_CERTIFICATE` names the CA that signed it).
    pub fn start_tls(chain_pem: &str, key_pem: &str) -> OtlpReceiver {
        use tokio_rustls::rustls;
        use tokio_rustls::rustls::pki_types::pem::PemObject as _;
        use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let chain = CertificateDer::pem_slice_iter(chain_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .expect("a PEM certificate chain");
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).expect("a PEM private key");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("a usable certificate");
        OtlpReceiver::launch(Some(tokio_rustls::TlsAcceptor::from(Arc::new(config))))
    }

    fn launch(tls: Option<tokio_rustls::TlsAcceptor>) -> OtlpReceiver {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").expect("bind the OTLP receiver on loopback");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let address = listener.local_addr().expect("the receiver's address");
        let (release, _) = watch::channel(0);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            release,
        });
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let thread_shared = Arc::clone(&shared);
        let secure_flag = tls.is_some();
        let thread = std::thread::Builder::new()
            .name("otlp-receiver".to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("the receiver's runtime");
                runtime.block_on(serve(listener, thread_shared, tls, stopped));
            })
            .expect("start the receiver's thread");
        OtlpReceiver {
            address,
            secure: secure_flag,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The base URL to give as `OTEL_EXPORTER_OTLP_ENDPOINT` (`http://127.0.0.1:PORT`, or
    /// `https://` for [`OtlpReceiver::start_tls`]).
    pub fn endpoint(&self) -> String {
        let scheme = if self.secure { "https" } else { "http" };
        format!("{scheme}://{}", self.address)
    }

    /// The receiver's address.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The next requests get these answers, in order; after them, [`Reply::Accept`].
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.shared.lock().script.extend(replies);
    }

    /// Answers every stalled request (with 200) and stops stalling the ones scripted to.
    pub fn release(&self) {
        self.shared
            .lock()
            .script
            .retain(|reply| reply != &Reply::Stall);
        self.shared
            .release
            .send_modify(|generation| *generation += 1);
    }

    /// Every request so far.
    pub fn arrivals(&self) -> Vec<Arrival> {
        self.shared.lock().arrivals.clone()
    }

    /// Spans of every accepted trace export, in arrival order.
    pub fn spans(&self) -> Vec<Span> {
        accepted_spans(&self.shared.lock().arrivals)
    }

    /// Metrics of every accepted metric export, in arrival order.
    pub fn metrics(&self) -> Vec<Metric> {
        self.shared
            .lock()
            .arrivals
            .iter()
            .filter(|arrival| arrival.accepted())
            .filter_map(|arrival| arrival.metrics.as_ref())
            .flat_map(|request| &request.resource_metrics)
            .flat_map(|resource| &resource.scope_metrics)
            .flat_map(|scope| scope.metrics.clone())
            .collect()
    }

    /// Waits until `condition` holds over the arrivals, or `timeout` passes (then panics with
    /// `what`, so a test names what never came).
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        condition: impl Fn(&[Arrival]) -> bool,
    ) -> Vec<Arrival> {
        let deadline = Instant::now() + timeout;
        let mut state = self.shared.lock();
        loop {
            if condition(&state.arrivals) {
                return state.arrivals.clone();
            }
            let now = Instant::now();
            if now >= deadline {
                panic!(
                    "the OTLP receiver waited {timeout:?} for {what}; it got {} requests: {:?}",
                    state.arrivals.len(),
                    state
                        .arrivals
                        .iter()
                        .map(|arrival| (arrival.path.as_str(), arrival.answered))
                        .collect::<Vec<_>>()
                );
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }

    /// Waits until at least `count` spans were accepted; returns them all.
    pub fn wait_for_spans(&self, count: usize, timeout: Duration) -> Vec<Span> {
        let arrivals = self.wait_until(&format!("{count} spans"), timeout, |arrivals| {
            accepted_spans(arrivals).len() >= count
        });
        accepted_spans(&arrivals)
    }

    /// Waits until at least `count` requests arrived (answered or stalled).
    pub fn wait_for_requests(&self, count: usize, timeout: Duration) -> Vec<Arrival> {
        self.wait_until(&format!("{count} requests"), timeout, |arrivals| {
            arrivals.len() >= count
        })
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.release();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn accepted_spans(arrivals: &[Arrival]) -> Vec<Span> {
    arrivals
        .iter()
        .filter(|arrival| arrival.accepted())
        .filter_map(|arrival| arrival.traces.as_ref())
        .flat_map(|request| &request.resource_spans)
        .flat_map(|resource| &resource.scope_spans)
        .flat_map(|scope| scope.spans.clone())
        .collect()
}

async fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let shared = Arc::clone(&shared);
                let tls = tls.clone();
                connections.spawn(async move {
                    match tls {
                        None => connection(stream, shared).await,
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(stream).await {
                                connection(stream, shared).await;
                            }
                        }
                    }
                });
            }
        }
    }
    connections.shutdown().await;
}

async fn connection<I>(io: I, shared: Arc<Shared>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request| answer(request, Arc::clone(&shared)));
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(io), service)
        .await;
}

async fn answer(
    request: Request<Incoming>,
    shared: Arc<Shared>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let path = request.uri().path().to_owned();
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let gzipped = headers
        .iter()
        .any(|(name, value)| name == "content-encoding" && value == "gzip");
    let body = request
        .into_body()
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .unwrap_or_default();
    let decoded = if gzipped {
        let mut plain = Vec::new();
        let _ = flate2::read::GzDecoder::new(body.as_ref()).read_to_end(&mut plain);
        Bytes::from(plain)
    } else {
        body.clone()
    };
    let traces = (path == "/v1/traces")
        .then(|| ExportTraceServiceRequest::decode(decoded.clone()).ok())
        .flatten();
    let metrics = (path == "/v1/metrics")
        .then(|| ExportMetricsServiceRequest::decode(decoded.clone()).ok())
        .flatten();
    // Subscribed before the arrival is visible, so a release right after it is not missed.
    let mut released = shared.release.subscribe();
    let reply = {
        let mut state = shared.lock();
        let reply = state.script.pop_front().unwrap_or(Reply::Accept);
        state.arrivals.push(Arrival {
            path: path.clone(),
            headers,
            body_bytes: body.len(),
            decoded_bytes: decoded.len(),
            answered: None,
            traces: traces.clone(),
            metrics: metrics.clone(),
        });
        shared.changed.notify_all();
        (reply, state.arrivals.len() - 1)
    };
    let (reply, index) = reply;
    let reply = if reply == Reply::Stall {
        let _ = released.changed().await;
        Reply::Accept
    } else {
        reply
    };
    let (status, retry_after, body) = match &reply {
        Reply::Accept | Reply::Stall => (200, None, accepted_body(&path, 0)),
        Reply::AcceptRejecting(rejected) => (200, None, accepted_body(&path, *rejected)),
        Reply::Status {
            status,
            retry_after,
        } => (*status, retry_after.clone(), Vec::new()),
    };
    {
        let mut state = shared.lock();
        state.arrivals[index].answered = Some(status);
        shared.changed.notify_all();
    }
    let mut response = Response::builder()
        .status(status)
        .header("content-type", "application/x-protobuf");
    if let Some(retry_after) = retry_after {
        response = response.header("retry-after", retry_after);
    }
    Ok(response
        .body(Full::new(Bytes::from(body)))
        .expect("a valid response"))
}

fn accepted_body(path: &str, rejected: i64) -> Vec<u8> {
    if path == "/v1/metrics" {
        return ExportMetricsServiceResponse::default().encode_to_vec();
    }
    ExportTraceServiceResponse {
        partial_success: (rejected > 0).then(|| ExportTracePartialSuccess {
            rejected_spans: rejected,
            error_message: "rejected by the test receiver".to_owned(),
        }),
    }
    .encode_to_vec()
}

/// The string value of attribute `key` on a decoded span, metric point or resource.
pub fn string_attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attribute(attributes, key)?.value.as_ref()? {
        any_value::Value::StringValue(text) => Some(text),
        _ => None,
    }
}

/// The integer value of attribute `key`.
pub fn int_attribute(attributes: &[KeyValue], key: &str) -> Option<i64> {
    match attribute(attributes, key)?.value.as_ref()? {
        any_value::Value::IntValue(number) => Some(*number),
        _ => None,
    }
}

/// The value of attribute `key`.
pub fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a AnyValue> {
    attributes
        .iter()
        .find(|attribute| attribute.key == key)
        .and_then(|attribute| attribute.value.as_ref())
}
