//! Serving a replay over Streamable HTTP (MCP 2025-06-18) on a loopback listener.
//!
//! - `POST {path}` with one JSON-RPC message (or an old-style batch). `initialize` opens a
//!   session (a new `Mcp-Session-Id`, one engine session each); other messages must carry the
//!   header (400 without it, 404 for a session that is not open).
//! - A request is answered with `application/json` when its answer is all there is, or with a
//!   `text/event-stream` carrying the notifications and server requests it owns, then the
//!   answer (the stream stays open while the answer waits for the client's reply to a server
//!   request, which arrives on another POST).
//! - A notification or a response gets 202 Accepted.
//! - `GET` gets 405: this server offers no stream of its own, so a message the recording's
//!   server sent outside any request is dropped (and noted). `DELETE` closes the session.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt as _, Either, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::body::{ChannelBody, channel};
use crate::engine::{Outgoing, Replay, Session};
use crate::normalize::canonical;

/// The session header.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// Largest request body read.
const MAX_BODY: usize = 16 * 1024 * 1024;

type ResponseBody = Either<Full<Bytes>, ChannelBody>;

fn event(message: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

struct OpenSession {
    session: Session,
    /// Open event streams of requests still waiting for their answer, by canonical live id.
    streams: HashMap<String, mpsc::UnboundedSender<Bytes>>,
}

struct State {
    replay: Arc<Replay>,
    path: String,
    sessions: Mutex<HashMap<String, OpenSession>>,
    log: Box<dyn Fn(&str) + Send + Sync>,
}

/// Serves `replay` at `path` (e.g. `/mcp`) on `listener` until `shutdown` completes.
pub async fn serve(
    replay: Arc<Replay>,
    listener: TcpListener,
    path: &str,
    log: impl Fn(&str) + Send + Sync + 'static,
    shutdown: impl Future<Output = ()>,
) {
    let state = Arc::new(State {
        replay,
        path: path.to_owned(),
        sessions: Mutex::new(HashMap::new()),
        log: Box::new(log),
    });
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let state = Arc::clone(&state);
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let state = Arc::clone(&state);
                        async move { Ok::<_, Infallible>(handle(&state, request).await) }
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

fn plain(status: StatusCode, text: &str) -> Response<ResponseBody> {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain; charset=utf-8")
        .body(Either::Left(Full::new(Bytes::from(text.to_owned()))))
        .expect("a valid response")
}

async fn handle(state: &State, request: Request<Incoming>) -> Response<ResponseBody> {
    if request.uri().path() != state.path {
        return plain(
            StatusCode::NOT_FOUND,
            &format!("this replay serves MCP at {}", state.path),
        );
    }
    let session_id = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    match *request.method() {
        Method::POST => {}
        Method::DELETE => {
            let removed = session_id
                .and_then(|id| lock(&state.sessions).remove(&id))
                .is_some();
            return if removed {
                plain(StatusCode::OK, "")
            } else {
                plain(StatusCode::NOT_FOUND, "no such session")
            };
        }
        Method::GET => {
            let mut response = plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "this replay offers no server-initiated stream; use POST",
            );
            response.headers_mut().insert(
                "allow",
                hyper::header::HeaderValue::from_static("POST, DELETE"),
            );
            return response;
        }
        _ => return plain(StatusCode::METHOD_NOT_ALLOWED, "use POST"),
    }
    let body = match http_body_util::Limited::new(request.into_body(), MAX_BODY)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return plain(StatusCode::PAYLOAD_TOO_LARGE, "the body is too large"),
    };
    let messages = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Array(batch)) => batch,
        Ok(message) => vec![message],
        Err(error) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &super::parse_error(&error.to_string()),
                None,
            );
        }
    };
    let opens = messages
        .iter()
        .any(|message| message.get("method").and_then(Value::as_str) == Some("initialize"));
    let mut sessions = lock(&state.sessions);
    let (id, new_session) = if opens {
        let id = format!("{:032x}", rand::random::<u128>());
        let mut session = state.replay.session();
        let start = session.start();
        for note in &start.notes {
            (state.log)(note);
        }
        if !start.outgoing.is_empty() {
            (state.log)(&format!(
                "{} message(s) the server sent before initialize are dropped: over HTTP there \
                 is no stream for them",
                start.outgoing.len()
            ));
        }
        sessions.insert(
            id.clone(),
            OpenSession {
                session,
                streams: HashMap::new(),
            },
        );
        (id, true)
    } else {
        match session_id {
            None => {
                return plain(
                    StatusCode::BAD_REQUEST,
                    "missing Mcp-Session-Id: send initialize first, then the session id it returns",
                );
            }
            Some(id) if sessions.contains_key(&id) => (id, false),
            Some(_) => return plain(StatusCode::NOT_FOUND, "no such session; initialize again"),
        }
    };
    let open = sessions.get_mut(&id).expect("the session was just found");
    // The first request of the POST, whose stream this response is.
    let own = messages
        .iter()
        .find(|message| message.get("method").is_some() && message.get("id").is_some())
        .and_then(|message| message.get("id"))
        .map(canonical);
    let mut mine: Vec<Value> = Vec::new();
    let mut answered = false;
    for message in &messages {
        let step = open.session.receive(message);
        for note in &step.notes {
            (state.log)(note);
        }
        for outgoing in step.outgoing {
            route(
                open,
                outgoing,
                own.as_deref(),
                &mut mine,
                &mut answered,
                &*state.log,
            );
        }
    }
    let session_header = new_session.then_some(id.as_str());
    let Some(own) = own else {
        return accepted(session_header);
    };
    if answered && mine.len() == 1 {
        return json_response(StatusCode::OK, &mine[0], session_header);
    }
    let (sender, body) = channel();
    for message in &mine {
        let _ = sender.send(event(message));
    }
    if !answered {
        open.streams.insert(own, sender);
    }
    let mut response = Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache");
    if let Some(id) = session_header {
        response = response.header(SESSION_HEADER, id);
    }
    response
        .body(Either::Right(body))
        .expect("a valid response")
}

/// Sends one outgoing message where it belongs: this POST's response, another request's open
/// stream, or nowhere (noted).
fn route(
    open: &mut OpenSession,
    outgoing: Outgoing,
    own: Option<&str>,
    mine: &mut Vec<Value>,
    answered: &mut bool,
    log: &dyn Fn(&str),
) {
    let owner = outgoing.owner.as_ref().map(canonical);
    match owner {
        Some(owner) if Some(owner.as_str()) == own => {
            *answered |= outgoing.completes_owner;
            mine.push(outgoing.message);
        }
        Some(owner) => match open.streams.get(&owner) {
            Some(stream) => {
                let _ = stream.send(event(&outgoing.message));
                if outgoing.completes_owner {
                    open.streams.remove(&owner);
                }
            }
            None => log(&format!(
                "dropped (its request's stream is closed): {}",
                outgoing.message
            )),
        },
        None => log(&format!(
            "dropped (sent outside any request; this replay has no GET stream): {}",
            outgoing.message
        )),
    }
}

fn json_response(
    status: StatusCode,
    message: &Value,
    session: Option<&str>,
) -> Response<ResponseBody> {
    let mut response = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    if let Some(id) = session {
        response = response.header(SESSION_HEADER, id);
    }
    response
        .body(Either::Left(Full::new(Bytes::from(message.to_string()))))
        .expect("a valid response")
}

fn accepted(session: Option<&str>) -> Response<ResponseBody> {
    let mut response = Response::builder().status(StatusCode::ACCEPTED);
    if let Some(id) = session {
        response = response.header(SESSION_HEADER, id);
    }
    response
        .body(Either::Left(Full::new(Bytes::new())))
        .expect("a valid response")
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
