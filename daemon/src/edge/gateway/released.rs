//! Releasing the resource subscriptions of a gateway session that ended without unsubscribing
//! (`DELETE`, expiry, eviction; `sessions.rs` hands them over): each is sent on as the host's
//! `resources/unsubscribe` would have been, through the pipeline under the grant of the token
//! that opened the session, so the pool's count per URI (`pool/connection/subscribed.rs`) drops
//! and the last subscription's end reaches the server. On a task of its own: a session ends
//! inside a request (or the table's lock), which must not wait for servers.

use std::sync::Arc;

use serde_json::json;

use super::sessions::{ReleaseHook, Released};
use crate::pipeline::CallContext;
use crate::services::Services;

/// The hook a session table calls with each ended session's subscriptions.
pub(super) fn hook(services: &Arc<Services>) -> ReleaseHook {
    let services = Arc::downgrade(services);
    Arc::new(move |released: Released| {
        let Some(services) = services.upgrade() else {
            return;
        };
        // Sessions end inside requests, on the runtime; a table dropped off it has nothing
        // left to release to.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move { release(&services, released).await });
    })
}

/// Unsubscribes each of an ended session's subscriptions at its server, one after another.
pub(super) async fn release(services: &Services, released: Released) {
    for (uri, server) in released.subscriptions {
        let context = CallContext::new(released.grant.clone());
        let params = json!({"uri": uri});
        match services
            .discovery
            .pass_request(
                &server,
                "resources/unsubscribe",
                &params,
                Some(&uri),
                &context,
            )
            .await
        {
            Ok(_) => {
                tracing::info!(%server, %uri, "an ended gateway session's resource subscription released");
            }
            Err(error) => {
                // The pool counts a refused unsubscribe back: the URI stays subscribed until
                // the daemon restarts (docs/gateway.md says so).
                tracing::warn!(%server, %uri, %error, "an ended gateway session's resource subscription could not be released");
            }
        }
    }
}
