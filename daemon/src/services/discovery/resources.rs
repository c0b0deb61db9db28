//! Resources: `listResources`, `listResourceTemplates` and `readResource`, through the
//! pipeline's protection (bulkhead, breakers, retries) and the grant's resource scope.

use serde_json::Value;
use tool_cli_protocol::methods::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceParams, ServerParams,
};

use super::Discovery;
use crate::error::Error;
use crate::pipeline::CallContext;
use crate::provider::ResourceListKind;

impl Discovery {
    /// `listResources`.
    pub(crate) async fn list_resources(
        &self,
        params: ServerParams,
        context: &CallContext,
    ) -> Result<ListResourcesResult, Error> {
        let (server, resources) = self
            .pipeline
            .list_resources(context, &params.server, ResourceListKind::Resources)
            .await?;
        Ok(ListResourcesResult { server, resources })
    }

    /// `listResourceTemplates`.
    pub(crate) async fn list_resource_templates(
        &self,
        params: ServerParams,
        context: &CallContext,
    ) -> Result<ListResourceTemplatesResult, Error> {
        let (server, templates) = self
            .pipeline
            .list_resources(context, &params.server, ResourceListKind::Templates)
            .await?;
        Ok(ListResourceTemplatesResult { server, templates })
    }

    /// A request the MCP gateway passes to `server` unread (completion, subscriptions); the
    /// server's result.
    pub(crate) async fn pass_request(
        &self,
        server: &str,
        method: &str,
        params: &Value,
        uri: Option<&str>,
        context: &CallContext,
    ) -> Result<Value, Error> {
        self.pipeline
            .pass_request(context, server, method, params, uri)
            .await
    }

    /// `readResource`: the server's complete result.
    pub(crate) async fn read_resource(
        &self,
        params: &ReadResourceParams,
        context: &CallContext,
    ) -> Result<Value, Error> {
        self.pipeline
            .read_resource(context, &params.server, &params.uri)
            .await
    }
}
