//! The orchestrator: what the RPC layer talks to.
//!
//! It owns the [`Pipeline`] (every call and resource read) over a [`ToolProvider`], and answers
//! the methods that only look: discovery (`discovery.rs`), health (`health.rs`) and the trace
//! report (`trace/report.rs`). New
//! capabilities (sessions, chains, search, the agent) are callers of the pipeline added here,
//! never side doors around it.

use std::sync::Arc;

use serde_json::Value;
use tool_cli_protocol::methods::CallToolParams;

use crate::error::Error;
use crate::pipeline::{
    CallContext, CallObserver, CallRequest, Pipeline, PipelineOptions, caller_timeout,
};
use crate::provider::{ResourceListKind, ToolProvider};
use crate::trace::Traces;

/// Serves the protocol's methods over one provider.
pub struct Orchestrator {
    pub(crate) pipeline: Pipeline,
    /// The trace writer, when traces are on: for `health` and `tracesReport` (it is also one
    /// of the pipeline's observers, which is how it gets the calls).
    pub(crate) traces: Option<Arc<Traces>>,
}

impl Orchestrator {
    /// An orchestrator over `provider` with default pipeline options and no call observers.
    pub fn new(provider: Arc<dyn ToolProvider>) -> Orchestrator {
        Orchestrator::with_options(provider, PipelineOptions::default(), Vec::new())
    }

    /// An orchestrator over `provider`; `observers` are told of every finished call.
    pub fn with_options(
        provider: Arc<dyn ToolProvider>,
        options: PipelineOptions,
        observers: Vec<Arc<dyn CallObserver>>,
    ) -> Orchestrator {
        let pipeline = Pipeline::new(provider.as_ref(), options, observers);
        Orchestrator {
            pipeline,
            traces: None,
        }
    }

    /// Reports on `traces` in `health` and answers `tracesReport` from its files. Pass the same
    /// writer among the observers of [`Orchestrator::with_options`] for calls to reach it.
    pub fn with_traces(mut self, traces: Arc<Traces>) -> Orchestrator {
        self.traces = Some(traces);
        self
    }

    /// The call pipeline.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// `callTool`.
    pub async fn call_tool(
        &self,
        params: CallToolParams,
        context: &CallContext,
    ) -> Result<Value, Error> {
        let request = CallRequest {
            server: params.server,
            tool: params.tool,
            arguments: params.arguments.unwrap_or_default(),
            timeout: caller_timeout("callTool", params.timeout_ms)?,
            confirm: params.confirm == Some(true),
            dry_run: params.dry_run == Some(true),
            hint: params.hint,
        };
        self.pipeline.call(context, request).await
    }

    /// `readResource`: the server's complete result.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        context: &CallContext,
    ) -> Result<Value, Error> {
        self.pipeline.read_resource(context, server, uri).await
    }

    /// `listResources`.
    pub async fn list_resources(
        &self,
        server: &str,
        context: &CallContext,
    ) -> Result<tool_cli_protocol::methods::ListResourcesResult, Error> {
        let (server, resources) = self
            .pipeline
            .list_resources(context, server, ResourceListKind::Resources)
            .await?;
        Ok(tool_cli_protocol::methods::ListResourcesResult { server, resources })
    }

    /// `listResourceTemplates`.
    pub async fn list_resource_templates(
        &self,
        server: &str,
        context: &CallContext,
    ) -> Result<tool_cli_protocol::methods::ListResourceTemplatesResult, Error> {
        let (server, templates) = self
            .pipeline
            .list_resources(context, server, ResourceListKind::Templates)
            .await?;
        Ok(tool_cli_protocol::methods::ListResourceTemplatesResult { server, templates })
    }
}
