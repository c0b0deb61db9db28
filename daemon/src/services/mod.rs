//! The services: what the daemon does, one service per area of the protocol, each owning its
//! state. The edge (`edge/rpc`) holds them and registers each JSON-RPC method against the one
//! service of its area; a gateway or any other edge would hold the same [`Services`].
//!
//! ```text
//! agents ──▶ calls ──▶ discovery ──▶ sessions          admin ──▶ metrics
//!              └─────▶ events
//!   (the ToolHost of a run is calls + discovery)        (servers, tokens, traces, OAuth)
//! ```
//!
//! - `calls`: `callTool` (with alternatives and a stand-in), `callChain`, `callMany`.
//! - `discovery`: servers, tools, descriptions, health, search, resources and prompts.
//! - `sessions`: the session store and its methods.
//! - `agents`: `runAgent`, `agentEvents`, `cancelAgent`.
//! - `admin`: the owner's methods: servers at run time, restarts, tokens, the trace report,
//!   remote sign-in.
//! - `metrics`: the `/metrics` page.
//! - `events`: `callEvents` and `answerElicitation` (the buffers a call's relay fills).
//!
//! Every method takes the request's [`CallContext`]. The rule for new work: a method goes into
//! the service of its area, and `edge/rpc/<area>.rs` registers it in one line. Services sit
//! above the call pipeline (`pipeline/`) and never reach the edge.

pub(crate) mod admin;
pub(crate) mod agents;
pub(crate) mod calls;
pub(crate) mod discovery;
pub(crate) mod events;
pub(crate) mod metrics;
pub(crate) mod sessions;

use std::sync::Arc;

use tool_cli_agent::Agent;
use tool_cli_agent::config::AgentConfig;

use crate::auth::TokenStore;
use crate::config::search::SearchSettings;
use crate::oauth::RemoteAuth;
use crate::otel::Telemetry;
use crate::pipeline::{CallContext, CallObserver, Pipeline, PipelineOptions};
use crate::provider::ToolProvider;
use crate::redact::SharedSecrets;
use crate::tool_search::ToolSearch;
use crate::trace::Traces;
use admin::Admin;
use agents::Agents;
use discovery::Discovery;
use events::Events;
use metrics::{CallMetrics, Metrics};
use sessions::Sessions;

pub use admin::{EnvLookup, ServerManager};
pub use calls::Calls;
pub use sessions::SessionLimits;

/// Settings of the services.
#[derive(Debug, Clone, Default)]
pub struct ServiceOptions {
    /// The call pipeline's.
    pub pipeline: PipelineOptions,
    /// The session store's.
    pub sessions: SessionLimits,
    /// `runAgent`'s (the config's `agent` key).
    pub agent: AgentConfig,
    /// Tool search's model and vector cache (the config's `search` key).
    pub search: SearchSettings,
    /// What the gateway does with a tool the detectors flag (the config's `flags.gateway`).
    pub gateway_flags: crate::catalog::flags::GatewayFlagPolicy,
}

/// Every service of one daemon, over one provider.
pub struct Services {
    pub(crate) calls: Arc<Calls>,
    pub(crate) discovery: Arc<Discovery>,
    pub(crate) sessions: Arc<Sessions>,
    pub(crate) agents: Arc<Agents>,
    pub(crate) admin: Arc<Admin>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) events: Arc<Events>,
    /// The configured secrets no error may carry out.
    secrets: SharedSecrets,
    /// OpenTelemetry export (off unless configured).
    telemetry: Telemetry,
    /// The provider's change counter (a server's status or catalog changed), for the
    /// gateway's standalone stream.
    catalog_changes: tokio::sync::watch::Receiver<u64>,
    /// The provider's server notifications, for the gateway's standalone stream.
    upstream_notices: tokio::sync::broadcast::Receiver<crate::provider::UpstreamNotice>,
}

impl Services {
    /// A receiver of the provider's change counter: it moves whenever a server's status or
    /// catalog changes.
    pub(crate) fn catalog_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.catalog_changes.clone()
    }

    /// A receiver of the servers' notifications for the gateway's hosts, from now on.
    pub(crate) fn upstream_notices(
        &self,
    ) -> tokio::sync::broadcast::Receiver<crate::provider::UpstreamNotice> {
        self.upstream_notices.resubscribe()
    }

    /// The services over `provider` with default options, authenticating with `tokens`: what
    /// a harness embedding the daemon needs (see [`ServicesBuilder`] for the rest).
    pub fn new(provider: Arc<dyn ToolProvider>, tokens: Arc<TokenStore>) -> Arc<Services> {
        Services::builder(provider, tokens).build()
    }

    /// The services over `provider` with a fresh owner token, for unit tests.
    #[cfg(test)]
    pub(crate) fn for_tests(provider: Arc<dyn ToolProvider>) -> Arc<Services> {
        let tokens = Arc::new(TokenStore::new(crate::auth::Token::generate()));
        Services::new(provider, tokens)
    }

    /// A builder of the services over `provider`, authenticating with `tokens`.
    pub fn builder(provider: Arc<dyn ToolProvider>, tokens: Arc<TokenStore>) -> ServicesBuilder {
        ServicesBuilder {
            provider,
            tokens,
            options: ServiceOptions::default(),
            observers: Vec::new(),
            traces: None,
            remote_auth: None,
            manager: None,
            secrets: SharedSecrets::default(),
            telemetry: Telemetry::disabled(),
        }
    }

    /// The calls service: `callTool` in process, for a harness or a benchmark that calls
    /// without the HTTP edge.
    pub fn calls(&self) -> &Calls {
        &self.calls
    }

    /// The tokens requests authenticate with (the gate's, and `mintToken`'s).
    pub fn tokens(&self) -> &Arc<TokenStore> {
        self.admin.tokens()
    }

    /// The configured secrets errors are cleaned of (the handle the log writer reads too).
    pub fn secrets(&self) -> &SharedSecrets {
        &self.secrets
    }

    /// OpenTelemetry export: the handle every span and metric is recorded through.
    pub fn telemetry(&self) -> &Telemetry {
        &self.telemetry
    }

    /// Waits, at most `timeout`, until tool search ranks with its model: every connected
    /// server's tools indexed and embedded (or the model failed to load). `false` when the time
    /// ran out (search then ranks lexically until the vectors are there).
    pub async fn search_ready(&self, timeout: std::time::Duration) -> bool {
        self.discovery.search_ready(timeout).await
    }

    /// `reloadConfig`, for SIGHUP: the owner's reload of the config file.
    pub async fn reload_config(
        &self,
    ) -> Result<tool_cli_protocol::manage::ReloadConfigResult, crate::error::Error> {
        let context = CallContext::new(self.tokens().owner_grant());
        self.reload_config_as(&context).await
    }

    /// `reloadConfig` (and SIGHUP): the servers' difference through the admin service, then
    /// the sections the other services hold: `flags.gateway` for the gateway's listings, the
    /// `sessions` caps for every session without its own. A file that does not load changes
    /// none of them.
    pub(crate) async fn reload_config_as(
        &self,
        context: &CallContext,
    ) -> Result<tool_cli_protocol::manage::ReloadConfigResult, crate::error::Error> {
        let result = self.admin.reload_config(context).await?;
        if let Some(settings) = self.admin.service_settings().await {
            self.discovery.set_gateway_flags(settings.gateway_flags);
            self.sessions
                .store()
                .set_default_caps(settings.sessions.max_calls, settings.sessions.max_wall);
        }
        Ok(result)
    }
}

/// Builds [`Services`]: the provider and tokens, then what a full daemon adds (observers,
/// traces, remote sign-in, a server manager, the configured secrets).
#[must_use]
pub struct ServicesBuilder {
    provider: Arc<dyn ToolProvider>,
    tokens: Arc<TokenStore>,
    options: ServiceOptions,
    observers: Vec<Arc<dyn CallObserver>>,
    traces: Option<Arc<Traces>>,
    remote_auth: Option<Arc<RemoteAuth>>,
    manager: Option<Arc<ServerManager>>,
    secrets: SharedSecrets,
    telemetry: Telemetry,
}

impl ServicesBuilder {
    /// The services' settings.
    pub fn options(mut self, options: ServiceOptions) -> ServicesBuilder {
        self.options = options;
        self
    }

    /// Tells `observer` of every finished call (the session store and the metrics are
    /// observers always).
    pub fn observer(mut self, observer: Arc<dyn CallObserver>) -> ServicesBuilder {
        self.observers.push(observer);
        self
    }

    /// Writes every call to `traces`, reports on it in `health` and answers `tracesReport`
    /// from its files.
    pub fn traces(mut self, traces: Arc<Traces>) -> ServicesBuilder {
        self.observers
            .push(Arc::clone(&traces) as Arc<dyn CallObserver>);
        self.traces = Some(traces);
        self
    }

    /// Serves the `auth*` methods from `remote_auth` (the pool's).
    pub fn remote_auth(mut self, remote_auth: Arc<RemoteAuth>) -> ServicesBuilder {
        self.remote_auth = Some(remote_auth);
        self
    }

    /// Lets `addServer`, `removeServer` and `reloadConfig` change the servers through
    /// `manager` (over the same pool as the provider).
    pub fn manager(mut self, manager: Arc<ServerManager>) -> ServicesBuilder {
        self.manager = Some(manager);
        self
    }

    /// Cleans every error of the secrets `secrets` holds (the handle the log writer reads and
    /// the server manager updates).
    pub fn secrets(mut self, secrets: SharedSecrets) -> ServicesBuilder {
        self.secrets = secrets;
        self
    }

    /// Exports spans and metrics through `telemetry` (started by the caller from the config's
    /// `telemetry` section and the `OTEL_*` variables): the requests' spans at the edge, the
    /// calls' upstream spans from their records. `capture_content`: `captureContent`.
    pub fn telemetry(mut self, telemetry: Telemetry, capture_content: bool) -> ServicesBuilder {
        if telemetry.is_enabled() {
            self.observers.push(Arc::new(crate::otel::SpanObserver::new(
                telemetry.clone(),
                capture_content,
            )));
        }
        self.telemetry = telemetry;
        self
    }

    /// The services.
    pub fn build(self) -> Arc<Services> {
        let ServicesBuilder {
            provider,
            tokens,
            options,
            mut observers,
            traces,
            remote_auth,
            manager,
            secrets,
            telemetry,
        } = self;
        let catalog_changes = provider.changes();
        let upstream_notices = provider.notices();
        let sessions = Arc::new(Sessions::new(options.sessions));
        observers.push(sessions.observer());
        let counters = Arc::new(CallMetrics::default());
        observers.push(Arc::clone(&counters) as Arc<dyn CallObserver>);
        let pipeline = Arc::new(Pipeline::new(
            provider.as_ref(),
            options.pipeline,
            observers,
        ));
        let metrics = Arc::new(Metrics::new(
            counters,
            Arc::clone(&pipeline),
            telemetry.clone(),
        ));
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
        let discovery = Arc::new(Discovery::new(
            Arc::clone(&pipeline),
            Arc::clone(&sessions),
            search,
            traces.clone(),
            telemetry.clone(),
            options.gateway_flags,
        ));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(discovery::follow_flags(
                Arc::downgrade(&discovery),
                provider.changes(),
            ));
        }
        let events = Arc::new(Events::default());
        let calls = Arc::new(Calls::new(
            Arc::clone(&pipeline),
            Arc::clone(&sessions),
            Arc::clone(&discovery),
            Arc::clone(&events),
        ));
        // The config was validated when it loaded; a refusal here would be a bug, so say so and
        // keep serving with the defaults rather than fail to start.
        let agent = Agent::new(options.agent).unwrap_or_else(|error| {
            tracing::error!(%error, "the agent config was refused; runAgent uses the defaults");
            Agent::new(AgentConfig::default()).expect("the default agent config is valid")
        });
        let agents = Arc::new(Agents::new(
            agent,
            Arc::clone(&calls),
            Arc::clone(&discovery),
            Arc::clone(&sessions),
            Arc::clone(&pipeline),
            telemetry.clone(),
        ));
        let admin = Arc::new(Admin::new(admin::AdminParts {
            pipeline,
            metrics: Arc::clone(&metrics),
            tokens,
            traces,
            remote_auth,
            manager,
        }));
        Arc::new(Services {
            calls,
            discovery,
            sessions,
            agents,
            admin,
            metrics,
            events,
            secrets,
            telemetry,
            catalog_changes,
            upstream_notices,
        })
    }
}
