//! Sampling answered by the caller's MCP host (a host behind the gateway that declared
//! `sampling`): which caller that is (the server's one call in flight, as for a question) and
//! the exchange with it, bounded by the server's `elicitationTimeoutMs`.

use std::sync::Arc;

use rmcp::model::{CreateMessageRequestParams, CreateMessageResult};

use super::ServerRequests;
use crate::provider::EventRelay;

impl ServerRequests {
    /// The caller of the server's one call in flight, when it answers sampling itself.
    pub(super) fn sampling_host(&self) -> Option<Arc<dyn EventRelay>> {
        if !self.settings.allow_sampling {
            return None;
        }
        let watchers = self.watchers();
        crate::elicitation::route(&watchers)
            .ok()
            .filter(|watcher| watcher.can_sample())
    }

    /// Relays a sampling request to the caller and reads its answer, within the server's
    /// `elicitationTimeoutMs` (the host asks its user first); `Err` is the reason to decline
    /// with.
    pub(super) async fn sample_by_host(
        &self,
        host: &Arc<dyn EventRelay>,
        request: &CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, String> {
        self.ask_host(host, request).await.map_err(|why| {
            format!(
                "sampling declined by the tool-cli daemon: server \"{}\" asked the caller's \
                 MCP host, but {why}",
                self.server
            )
        })
    }

    async fn ask_host(
        &self,
        host: &Arc<dyn EventRelay>,
        request: &CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, String> {
        let params = serde_json::to_value(request)
            .map_err(|error| format!("the request could not be encoded: {error}"))?;
        let timeout = self.settings.elicitation_timeout;
        tracing::info!(server = %self.server, "sampling request relayed to the caller's MCP host");
        let answer = tokio::time::timeout(timeout, host.sample(params))
            .await
            .map_err(|_| {
                format!(
                    "no answer came within {} ms (the server's elicitationTimeoutMs)",
                    timeout.as_millis()
                )
            })??;
        serde_json::from_value(answer)
            .map_err(|error| format!("its answer is not a CreateMessageResult: {error}"))
    }
}
