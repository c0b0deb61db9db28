//! The HTTP transport: jsonrpsee over an already-bound listener, behind the auth layer.
//!
//! `main` and the tests call the same [`run`] with a listener on `127.0.0.1:0` and a shutdown
//! future, so tests exercise the production path. Shutdown stops accepting, gives in-flight
//! requests a grace period to finish, and then returns so the caller can close the pool.

use std::future::Future;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::server::{BatchRequestConfig, Server, ServerConfig};

use crate::auth::{AuthLayer, Token};
use crate::pipeline::Orchestrator;
use crate::shape::RequestShapeLayer;

/// Most requests in one JSON-RPC batch.
const MAX_BATCH_LEN: u32 = 100;

/// Most connections at once. Every agent process on the machine may hold one, and a slow tool
/// call holds one for its whole duration, so this is well above jsonrpsee's default of 100.
const MAX_CONNECTIONS: u32 = 1024;

/// Serves the protocol on `listener` until `shutdown` resolves, then drains for up to `grace`.
pub async fn run(
    listener: TcpListener,
    token: Token,
    orchestrator: Arc<Orchestrator>,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let http_middleware = tower::ServiceBuilder::new()
        .layer(AuthLayer::new(token))
        .layer(RequestShapeLayer);
    let config = ServerConfig::builder()
        .http_only()
        .max_request_body_size(crate::shape::MAX_REQUEST_BODY_BYTES as u32)
        .max_connections(MAX_CONNECTIONS)
        .set_batch_request_config(BatchRequestConfig::Limit(MAX_BATCH_LEN))
        .build();
    let server = Server::builder()
        .set_config(config)
        .set_http_middleware(http_middleware)
        .build_from_tcp(listener)?;
    let handle = server.start(crate::rpc::module(orchestrator));
    shutdown.await;
    tracing::info!("shutting down: no new requests; draining those in flight");
    let _ = handle.stop();
    if tokio::time::timeout(grace, handle.stopped()).await.is_err() {
        tracing::warn!(
            grace_ms = grace.as_millis() as u64,
            "requests still in flight after the grace period"
        );
    }
    Ok(())
}
