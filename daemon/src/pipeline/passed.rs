//! Requests the MCP gateway passes to one server without reading them (`completion/complete`,
//! `resources/subscribe`, `resources/unsubscribe`), through the same protection as a call (a
//! slot, the breakers, retries, statistics) and the grant's scope: the server must be one the
//! grant may see, and a URI one of its resources the grant may read.

use serde_json::Value;

use super::execute::{Bounds, Operation};
use super::{CallContext, Pipeline, check_resource, resolve_server};
use crate::error::Error;

impl Pipeline {
    /// Sends `method` with `params` to `server`, for a resource `uri` when it names one; the
    /// server's result.
    pub async fn pass_request(
        &self,
        context: &CallContext,
        server: &str,
        method: &str,
        params: &Value,
        uri: Option<&str>,
    ) -> Result<Value, Error> {
        let slots = self.slots();
        let slot = resolve_server(&slots, server, &context.grant, None)?;
        if let Some(uri) = uri {
            check_resource(&context.grant, server, uri)?;
        }
        let timeout = slot.upstream.info().settings.call_timeout;
        let outcome = self
            .protected_operation(
                context,
                slot,
                &Operation::Pass { method, params },
                Bounds::fixed(timeout, context.arrived + timeout),
                true,
            )
            .await;
        outcome.result
    }
}
