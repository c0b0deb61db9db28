//! The dispatch: the daemon's one hyper service, from a request's head to its answer.
//!
//! Each request goes through three steps, each owned by its module: the gate decides on the head
//! alone (`gate.rs`: refusals, the identity challenge, `/metrics`, the MCP gateway, and the grant
//! of a JSON-RPC request); the body is read within its size and time limits ([`read_body`]); the
//! JSON-RPC request, notification or batch in it is answered through jsonrpsee's method table
//! (`dispatch/jsonrpc.rs`). That is all one future per request, polled by the connection's own
//! task: no tower layers, no task or channel between the socket and the method. It replaced
//! jsonrpsee's server crate behind two tower layers of ours (docs/benchmarks.md, "First build
//! (issue 26)").

mod jsonrpc;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::FutureExt as _;
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use jsonrpsee::ConnectionId;

pub(crate) use self::jsonrpc::MethodTable;
use crate::edge::gate::{Admission, Gate};
use crate::edge::http_body::{BoxError, HttpResponse};
use crate::edge::shape::{BODY_READ_TIMEOUT, closing_status, plain_status, too_large};

/// What every connection's service shares.
struct Shared {
    gate: Arc<Gate>,
    methods: MethodTable,
    max_body_bytes: usize,
}

/// The service of one connection.
#[derive(Clone)]
pub(crate) struct Dispatch {
    shared: Arc<Shared>,
    connection: ConnectionId,
}

impl Dispatch {
    /// A service answering with `methods` what `gate` lets through, bodies within
    /// `max_body_bytes`.
    pub(crate) fn new(gate: Arc<Gate>, methods: MethodTable, max_body_bytes: usize) -> Dispatch {
        Dispatch {
            shared: Arc::new(Shared {
                gate,
                methods,
                max_body_bytes,
            }),
            connection: ConnectionId(0),
        }
    }

    /// The service of the connection numbered `connection` (what methods see as its id).
    pub(crate) fn for_connection(&self, connection: usize) -> Dispatch {
        Dispatch {
            shared: Arc::clone(&self.shared),
            connection: ConnectionId(connection),
        }
    }
}

impl<B> hyper::service::Service<Request<B>> for Dispatch
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, Infallible>> + Send>>;

    fn call(&self, request: Request<B>) -> Self::Future {
        match self.shared.gate.admit(request) {
            Admission::Rpc(request) => {
                let shared = Arc::clone(&self.shared);
                let connection = self.connection;
                Box::pin(async move {
                    let (parts, body) = request.into_parts();
                    let body = match read_body(body, shared.max_body_bytes).await {
                        Ok(body) => body,
                        Err(refusal) => return Ok(refusal),
                    };
                    Ok(shared
                        .methods
                        .answer(body, parts.extensions, connection)
                        .await)
                })
            }
            Admission::Answered(response) => Box::pin(std::future::ready(Ok(response))),
            Admission::Answering(answer) => Box::pin(answer.map(Ok)),
        }
    }
}

/// Reads a JSON-RPC request's body whole, within `limit` bytes and [`BODY_READ_TIMEOUT`]; what
/// does not fit or does not arrive is answered here.
async fn read_body<B>(body: B, limit: usize) -> Result<Bytes, HttpResponse>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let collect = Limited::new(body, limit).collect();
    let Ok(collected) = tokio::time::timeout(BODY_READ_TIMEOUT, collect).await else {
        return Err(closing_status(StatusCode::REQUEST_TIMEOUT));
    };
    match collected {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<LengthLimitError>() => Err(too_large(limit)),
        // The body ended early or broke (a Content-Length that lied, say).
        Err(_) => Err(plain_status(StatusCode::BAD_REQUEST)),
    }
}

#[cfg(test)]
mod tests;
