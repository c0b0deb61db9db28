//! The orchestrator: what the RPC layer talks to.
//!
//! It owns the [`Pipeline`] (every call and resource read) over a [`ToolProvider`] and the
//! [`SessionStore`], and answers the methods that only look: discovery (`discovery.rs`),
//! health (`health.rs`) and the trace report (`trace/report.rs`). Everything that makes calls — `callTool`, chains and fan-outs
//! (`chain.rs`), the agent (`agent_runs`) — goes through [`Orchestrator::call`], which consults the
//! caller's session (routing facts, loop and budget guards) and hands the call to the pipeline.
//! New capabilities are callers of the pipeline added here, never side doors around it.

mod alternatives;
mod chain;
mod search;

pub(crate) use chain::{Room, StepSink};

use std::sync::Arc;

use serde_json::Value;
use tool_cli_protocol::methods::CallToolParams;
use tool_cli_protocol::orchestration::{
    ListSessionsResult, OpenSessionParams, OpenSessionResult, SessionSummary,
};

use tool_cli_agent::Agent;
use tool_cli_agent::config::AgentConfig;

use crate::agent_runs::AgentRuns;
use crate::error::Error;
use crate::manage::ServerManager;
use crate::metrics::CallMetrics;
use crate::pipeline::{
    CallContext, CallExtras, CallObserver, CallRequest, Pipeline, PipelineOptions, RoutingFacts,
    arguments_hash, caller_timeout,
};
use crate::provider::{ResourceListKind, ToolProvider};
use crate::sessions::{SessionLimits, SessionStore};
use crate::tool_search::ToolSearch;
use crate::trace::Traces;

/// Settings of the orchestrator.
#[derive(Debug, Clone, Default)]
pub struct OrchestratorOptions {
    /// The call pipeline's.
    pub pipeline: PipelineOptions,
    /// The session store's.
    pub sessions: SessionLimits,
    /// `runAgent`'s (the config's `agent` key).
    pub agent: AgentConfig,
    /// Tool search's model and vector cache (the config's `search` key).
    pub search: crate::config_search::SearchSettings,
}

/// Serves the protocol's methods over one provider.
pub struct Orchestrator {
    pub(crate) pipeline: Pipeline,
    pub(crate) sessions: Arc<SessionStore>,
    pub(crate) search: Arc<ToolSearch>,
    pub(crate) agents: AgentRuns,
    /// The trace writer, when traces are on: for `health` and `tracesReport` (it is also one
    /// of the pipeline's observers, which is how it gets the calls).
    pub(crate) traces: Option<Arc<Traces>>,
    /// The remote servers' OAuth state, for `authLogin` and the other `auth*` methods (the
    /// pool owns it; an orchestrator over another provider has none).
    pub(crate) remote_auth: Option<Arc<crate::oauth::RemoteAuth>>,
    /// The buffered progress and log events of calls made with `progress: true`.
    pub(crate) call_events: crate::call_events::CallEventHub,
    /// Every call's counters for `/metrics` (also one of the pipeline's observers).
    pub(crate) metrics: Arc<CallMetrics>,
    /// Adds, removes and reloads servers (`manage/`), when the provider is the daemon's pool.
    pub(crate) manager: Option<Arc<ServerManager>>,
}

impl Orchestrator {
    /// An orchestrator over `provider` with default options and no call observers.
    pub fn new(provider: Arc<dyn ToolProvider>) -> Orchestrator {
        Orchestrator::with_options(provider, OrchestratorOptions::default(), Vec::new())
    }

    /// An orchestrator over `provider`; `observers` are told of every finished call (the
    /// session store is one, always).
    pub fn with_options(
        provider: Arc<dyn ToolProvider>,
        options: OrchestratorOptions,
        mut observers: Vec<Arc<dyn CallObserver>>,
    ) -> Orchestrator {
        let sessions = Arc::new(SessionStore::new(options.sessions));
        observers.push(Arc::clone(&sessions) as Arc<dyn CallObserver>);
        let metrics = Arc::new(CallMetrics::default());
        observers.push(Arc::clone(&metrics) as Arc<dyn CallObserver>);
        let pipeline = Pipeline::new(provider.as_ref(), options.pipeline, observers);
        let search = ToolSearch::start(&options.search);
        // Keep the search index current in the background when there is a runtime to do it in;
        // without one (a synchronous test), queries index what they need on the spot.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let slots = pipeline.slots_handle();
            runtime.spawn(crate::tool_search::follow_changes(
                Arc::clone(&search),
                move || slots.current(),
                provider.changes(),
            ));
        }
        // The config was validated when it loaded; a refusal here would be a bug, so say so and
        // keep serving with the defaults rather than fail to start.
        let agent = Agent::new(options.agent).unwrap_or_else(|error| {
            tracing::error!(%error, "the agent config was refused; runAgent uses the defaults");
            Agent::new(AgentConfig::default()).expect("the default agent config is valid")
        });
        Orchestrator {
            pipeline,
            sessions,
            search,
            agents: AgentRuns::new(agent),
            traces: None,
            remote_auth: None,
            call_events: Default::default(),
            metrics,
            manager: None,
        }
    }

    /// Reports on `traces` in `health` and answers `tracesReport` from its files. Pass the same
    /// writer among the observers of [`Orchestrator::with_options`] for calls to reach it.
    pub fn with_traces(mut self, traces: Arc<Traces>) -> Orchestrator {
        self.traces = Some(traces);
        self
    }

    /// Serves the `auth*` methods from `remote_auth` (the pool's).
    pub fn with_remote_auth(mut self, remote_auth: Arc<crate::oauth::RemoteAuth>) -> Orchestrator {
        self.remote_auth = Some(remote_auth);
        self
    }

    /// Lets `addServer`, `removeServer` and `reloadConfig` change the servers through
    /// `manager` (over the same pool this orchestrator was made with).
    pub fn with_manager(mut self, manager: Arc<ServerManager>) -> Orchestrator {
        self.manager = Some(manager);
        self
    }

    /// Waits, at most `timeout`, until tool search ranks with its model: every connected
    /// server's tools indexed and embedded (or the model failed to load). Returns at once
    /// without a model; `false` when the time ran out (search then ranks lexically until the
    /// vectors are there).
    pub async fn search_ready(&self, timeout: std::time::Duration) -> bool {
        let search = Arc::clone(&self.search);
        let slots = self.pipeline.slots();
        // Index what is connected now, so the first pass covers it.
        let _ = tokio::task::spawn_blocking(move || {
            if search.has_unindexed(&slots) {
                search.refresh(&slots);
            }
        })
        .await;
        self.search.until_embedded(timeout).await
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
        let mut context = context.clone();
        context.session_id = params.session_id.clone();
        // A dry run makes no call, so it has no failure to find alternatives for.
        let alternatives = params.alternatives == Some(true) && params.dry_run != Some(true);
        let server = params.server.clone();
        let tool = params.tool.clone();
        let request = call_request(params)?;
        if !alternatives {
            return self.call(&context, request).await;
        }
        let retry = request.clone();
        let outcome = self.call(&context, request).await;
        // A read-only tool whose server is down (or whose breaker is open) is tried once on
        // the best other server offering it, within what is left of the caller's time; failing
        // that, the answer names alternatives.
        let stand_in =
            self.stand_in_for(&outcome, &tool, &context)
                .and_then(|(failed, failed_timeout)| {
                    let child = context.child(0);
                    let retry = alternatives::stand_in_request(
                        retry,
                        context.arrived,
                        failed_timeout,
                        child.arrived,
                    )?;
                    Some((failed, child, retry))
                });
        let outcome = match stand_in {
            Some((failed, child, retry)) => {
                let stand_in = self.call_routed(&child, retry, Some(failed)).await;
                if stand_in.is_ok() { stand_in } else { outcome }
            }
            None => outcome,
        };
        self.with_alternatives(outcome, server.as_deref(), &tool, &context)
    }

    /// Makes one call through the pipeline, with what the caller's session says about it.
    pub async fn call(&self, context: &CallContext, request: CallRequest) -> Result<Value, Error> {
        self.call_routed(context, request, None).await
    }

    /// [`Orchestrator::call`], routed away from `instead_of` when given (rule `alternative`).
    async fn call_routed(
        &self,
        context: &CallContext,
        request: CallRequest,
        instead_of: Option<String>,
    ) -> Result<Value, Error> {
        let mut extras = match &context.session_id {
            None => CallExtras::default(),
            Some(id) => {
                let session = self.sessions.touch(
                    tool_cli_protocol::methods::name::CALL_TOOL,
                    &context.grant.token_id,
                    id,
                )?;
                let hash = arguments_hash(&request.arguments);
                let advice = self.sessions.advise(
                    &session,
                    request.server.as_deref().filter(|name| *name != "*"),
                    &request.tool,
                    &hash,
                );
                CallExtras {
                    routing: RoutingFacts {
                        mention_text: advice.task,
                        most_recent: advice.most_recent,
                        instead_of: None,
                    },
                    guard: advice.refusal,
                    arguments_hash: Some(hash),
                }
            }
        };
        extras.routing.instead_of = instead_of;
        // The server sees who the call is for (an opaque key of the token and session), so
        // state it keeps per client stays with the client that made it.
        let caller = crate::caller::key(&context.grant.token_id, context.session_id.as_deref());
        crate::caller::with_caller(caller, self.pipeline.call_with(context, request, extras)).await
    }

    /// `openSession`.
    pub fn open_session(
        &self,
        params: OpenSessionParams,
        context: &CallContext,
    ) -> Result<OpenSessionResult, Error> {
        let session_id = self.sessions.open(
            &context.grant.token_id,
            params.session_id.as_deref(),
            params.task,
            params.labels,
        )?;
        Ok(OpenSessionResult { session_id })
    }

    /// `sessionSummary`.
    pub fn session_summary(
        &self,
        id: &str,
        context: &CallContext,
    ) -> Result<SessionSummary, Error> {
        self.sessions.summary(&context.grant.token_id, id)
    }

    /// `listSessions`.
    pub fn list_sessions(&self, context: &CallContext) -> ListSessionsResult {
        ListSessionsResult {
            sessions: self.sessions.list(&context.grant.token_id),
        }
    }

    /// `closeSession`.
    pub fn close_session(&self, id: &str, context: &CallContext) -> Result<(), Error> {
        self.sessions.close(&context.grant.token_id, id)
    }

    /// `readResource`: the server's complete result.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        context: &CallContext,
    ) -> Result<Value, Error> {
        // Who it is for, as for a call: the pool then knows whose request was in flight (a
        // server's last words go only to a caller that had it to itself).
        let caller = crate::caller::key(&context.grant.token_id, context.session_id.as_deref());
        crate::caller::with_caller(caller, self.pipeline.read_resource(context, server, uri)).await
    }

    /// `listPrompts`.
    pub async fn list_prompts(
        &self,
        server: Option<&str>,
        context: &CallContext,
    ) -> Result<tool_cli_protocol::methods::ListPromptsResult, Error> {
        self.pipeline
            .list_prompts(&context.grant, context.arrived, server)
            .await
    }

    /// `getPrompt`: the server's complete `GetPromptResult`.
    pub async fn get_prompt(
        &self,
        params: &tool_cli_protocol::methods::GetPromptParams,
        context: &CallContext,
    ) -> Result<Value, Error> {
        let arguments = params.arguments.clone().unwrap_or_default();
        let caller = crate::caller::key(&context.grant.token_id, context.session_id.as_deref());
        let rendering = self.pipeline.get_prompt(
            &context.grant,
            context.arrived,
            &params.server,
            &params.name,
            &arguments,
        );
        crate::caller::with_caller(caller, rendering).await
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

    /// `restartServer` (the RPC layer has checked the owner token).
    pub async fn restart_server(
        &self,
        server: &str,
        context: &CallContext,
    ) -> Result<tool_cli_protocol::methods::RestartServerResult, Error> {
        let (server, status) = self.pipeline.restart_server(context, server).await?;
        Ok(tool_cli_protocol::methods::RestartServerResult {
            server,
            state: status.state,
            restarts: status.restarts,
            error: status.error,
        })
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

/// A pipeline request from `callTool`'s params.
pub(crate) fn call_request(params: CallToolParams) -> Result<CallRequest, Error> {
    Ok(CallRequest {
        server: params.server,
        tool: params.tool,
        arguments: params.arguments.unwrap_or_default(),
        timeout: caller_timeout("callTool", params.timeout_ms)?,
        confirm: params.confirm == Some(true),
        dry_run: params.dry_run == Some(true),
        hint: params.hint,
        idempotency_key: params.idempotency_key,
        progress_resets_timeout: crate::pipeline::progress_timeout::max_total(
            params.reset_timeout_on_progress,
            params.max_total_timeout_ms,
        )?,
    })
}
