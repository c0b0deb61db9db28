//! Serving recorded LLM exchanges on loopback: a request is matched by method, path and
//! normalised body ([`super::request_key`]) and answered with the recorded status, headers and
//! body, chunk by chunk, byte for byte.
//!
//! Identical requests recorded several times are answered in recorded order, round and round
//! (the k-th identical request gets recording number k modulo their count), so replaying a run
//! again through the same server gives the same answers again. A request that matches nothing
//! gets 404 with a JSON error naming it and the recorded requests to the same path; a 4xx is
//! not retried by the agent's client, so the run fails at once with that message.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use http_body_util::BodyExt as _;
use hyper::body::{Body, Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpListener;

use super::{LlmRecording, request_key};
use crate::normalize::{Normalizer, short};

/// Largest request body read.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// A recording indexed for serving.
#[derive(Debug)]
pub struct LlmReplay {
    recording: LlmRecording,
    normalizer: Normalizer,
    by_key: HashMap<String, (Vec<usize>, AtomicUsize)>,
}

impl LlmReplay {
    /// Indexes `recording`.
    pub fn new(recording: LlmRecording, normalizer: Normalizer) -> LlmReplay {
        let mut by_key: HashMap<String, (Vec<usize>, AtomicUsize)> = HashMap::new();
        for (index, exchange) in recording.exchanges.iter().enumerate() {
            let key = request_key(
                &exchange.request.method,
                &exchange.request.path,
                &exchange.request.body.to_vec(),
                &normalizer,
            );
            by_key
                .entry(key)
                .or_insert_with(|| (Vec::new(), AtomicUsize::new(0)))
                .0
                .push(index);
        }
        LlmReplay {
            recording,
            normalizer,
            by_key,
        }
    }

    /// The recorded exchange that answers this request, if any.
    pub fn answer(&self, method: &str, path: &str, body: &[u8]) -> Option<&super::Exchange> {
        let key = request_key(method, path, body, &self.normalizer);
        let (indices, served) = self.by_key.get(&key)?;
        let turn = served.fetch_add(1, Ordering::Relaxed) % indices.len();
        Some(&self.recording.exchanges[indices[turn]])
    }

    fn miss(&self, method: &str, path: &str, body: &[u8]) -> String {
        let key = request_key(method, path, body, &self.normalizer);
        let same_path: Vec<String> = self
            .recording
            .exchanges
            .iter()
            .filter(|exchange| exchange.request.path == path)
            .map(|exchange| {
                format!(
                    "#{}: {}",
                    exchange.seq,
                    short(
                        &request_key(
                            &exchange.request.method,
                            &exchange.request.path,
                            &exchange.request.body.to_vec(),
                            &self.normalizer
                        ),
                        200
                    )
                )
            })
            .take(3)
            .collect();
        let recorded = if same_path.is_empty() {
            format!("the recording has no request to {path}")
        } else {
            format!(
                "the recording's requests to {path} are: {}",
                same_path.join("; ")
            )
        };
        format!(
            "no recorded exchange matches {}; {recorded}",
            short(&key, 300)
        )
    }
}

/// A body sent as the recorded chunks, one frame each.
pub struct Chunks {
    chunks: VecDeque<hyper::body::Bytes>,
}

impl Body for Chunks {
    type Data = hyper::body::Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<hyper::body::Bytes>, Infallible>>> {
        Poll::Ready(self.chunks.pop_front().map(|chunk| Ok(Frame::data(chunk))))
    }
}

/// The path of the upstream's base URL (`/v1` for `https://api.openai.com/v1`), so the printed
/// base URL is a drop-in replacement.
pub fn base_path(upstream: &str) -> String {
    upstream
        .parse::<hyper::Uri>()
        .map(|uri| uri.path().trim_end_matches('/').to_owned())
        .unwrap_or_default()
}

/// Serves `replay` on `listener` until `shutdown`.
pub async fn serve(
    replay: Arc<LlmReplay>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) {
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let replay = Arc::clone(&replay);
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let replay = Arc::clone(&replay);
                        async move { Ok::<_, Infallible>(answer(&replay, request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        }
    }
    connections.shutdown().await;
}

async fn answer(replay: &LlmReplay, request: Request<Incoming>) -> Response<Chunks> {
    let method = request.method().as_str().to_owned();
    let path = request
        .uri()
        .path_and_query()
        .map(|path| path.as_str().to_owned())
        .unwrap_or_else(|| "/".to_owned());
    let body = match http_body_util::Limited::new(request.into_body(), MAX_BODY)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is too large",
            );
        }
    };
    let Some(exchange) = replay.answer(&method, &path, &body) else {
        let message = replay.miss(&method, &path, &body);
        eprintln!("tool-cli-replay: {message}");
        return error(StatusCode::NOT_FOUND, &message);
    };
    let mut response = Response::builder().status(exchange.response.status);
    for (name, value) in &exchange.response.headers {
        response = response.header(name.as_str(), value.as_str());
    }
    let chunks = exchange
        .response
        .chunks
        .iter()
        .map(|chunk| hyper::body::Bytes::from(chunk.to_vec()))
        .collect();
    response.body(Chunks { chunks }).unwrap_or_else(|_| {
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "a recorded header is invalid",
        )
    })
}

fn error(status: StatusCode, message: &str) -> Response<Chunks> {
    let body = json!({"error": {"type": "replay_mismatch", "message": message}}).to_string();
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Chunks {
            chunks: VecDeque::from([hyper::body::Bytes::from(body)]),
        })
        .expect("a valid response")
}
