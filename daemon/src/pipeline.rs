//! The call pipeline: every tool call, from any client, takes this one path.
//!
//! resolve server → wait for its session → resolve tool → policy (token scope, config allow/deny,
//! confirmation of destructive tools) → validate arguments → bulkhead (bounded
//! concurrency and queue) → [retry loop: circuit breaker → execute with a timeout, cancelled
//! upstream on expiry] → degradation cache → record a trace. Later stages (policy, routing,
//! dry-run, cost) are added here, never as side doors, so the invariant "no tool is called
//! without passing validation" holds in one place.
//!
//! The discovery methods live here too, since they share resolution and waiting.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value};
use tool_cli_protocol::methods::{
    BreakerHealth, CallToolParams, HealthResult, LatencySummary, ListResourceTemplatesResult,
    ListResourcesResult, ListServersResult, ListToolsResult, ServerHealth, ServerState,
    ServerSummary, ToolSummary,
};

use crate::auth::Grant;
use crate::error::Error;
use crate::policy::{Denial, check_call, visible_tool};
use crate::pool::{Catalog, CatalogTool, ListKind, Pool, Server, Session, Status};
use crate::resilience::backoff::random_jitter;
use crate::resilience::breaker::{BreakerState, Outcome, Refusal};
use crate::resilience::cache::{CacheKey, is_cacheable};
use crate::resilience::retry::{FailureClass, RetryPolicy, run_with_retries, safe_to_resend};

/// How many tool names `listServers` gives as examples.
const EXAMPLE_TOOLS: usize = 3;

/// How long an HTTP server gets to answer a `ping` after a failed call before its session is
/// replaced.
const HTTP_PING_TIMEOUT: Duration = Duration::from_secs(2);

/// Resolves, validates and executes requests against the pool.
pub struct Orchestrator {
    pool: Arc<Pool>,
}

impl Orchestrator {
    /// An orchestrator over `pool`.
    pub fn new(pool: Arc<Pool>) -> Orchestrator {
        Orchestrator { pool }
    }

    /// The pool, for shutdown.
    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// The server called `name`, if the grant may see it. A server outside the scope is named
    /// as not permitted; an unknown one lists only the servers the grant may see.
    fn resolve(
        &self,
        name: &str,
        grant: &Grant,
        tool: Option<&str>,
    ) -> Result<&Arc<Server>, Error> {
        let server = self.pool.server(name).map_err(|error| match error {
            Error::UnknownServer {
                server,
                known_servers,
            } => Error::UnknownServer {
                server,
                known_servers: known_servers
                    .into_iter()
                    .filter(|name| grant.scope.permits_server(name))
                    .collect(),
            },
            other => other,
        })?;
        let now = SystemTime::now();
        if grant.scope.is_expired(now) || !grant.scope.permits_server(name) {
            let scope = grant.scope.describe(now);
            // Asked for a tool: say the tool is out of scope, which is what the caller tried.
            return Err(match tool {
                Some(tool) => Denial::ToolNotPermitted {
                    server: name.to_owned(),
                    tool: tool.to_owned(),
                    reason: format!(
                        "this token's scope ({scope}) does not include it; use a token whose \
                         scope includes \"{name}/{tool}\""
                    ),
                },
                None => Denial::ServerNotPermitted {
                    server: name.to_owned(),
                    scope,
                },
            }
            .into());
        }
        Ok(server)
    }

    /// Whether the grant may see `tool` of `server`.
    fn visible(grant: &Grant, server: &Server, tool: &CatalogTool) -> bool {
        let annotations = tool.raw.get("annotations").unwrap_or(&Value::Null);
        visible_tool(
            &grant.scope,
            &server.config.policy,
            &server.config.name,
            &tool.name,
            annotations,
        )
    }

    /// `listServers`: the servers the grant may see, with the tools it may see.
    pub fn list_servers(&self, grant: &Grant) -> ListServersResult {
        let servers = self
            .pool
            .servers()
            .iter()
            .filter(|server| grant.scope.permits_server(&server.config.name))
            .map(|server| {
                let status = server.status();
                let (tool_count, examples, instructions) = match &status {
                    Status::Ready(session) => {
                        let catalog = session.catalog();
                        let visible: Vec<String> = catalog
                            .tools()
                            .iter()
                            .filter(|tool| Self::visible(grant, server, tool))
                            .map(|tool| tool.name.clone())
                            .collect();
                        (
                            visible.len(),
                            visible.into_iter().take(EXAMPLE_TOOLS).collect(),
                            session.instructions.clone(),
                        )
                    }
                    _ => (0, Vec::new(), None),
                };
                let description = server.config.description.clone().or_else(|| {
                    instructions
                        .as_deref()
                        .and_then(|text| text.lines().find(|line| !line.trim().is_empty()))
                        // Instructions are often markdown; a heading marker is noise here.
                        .map(|line| line.trim().trim_start_matches('#').trim().to_owned())
                });
                ServerSummary {
                    name: server.config.name.clone(),
                    tool_count,
                    examples,
                    state: status.state(),
                    transport: server.transport_kind(),
                    description,
                    tags: server.config.tags.clone(),
                    error: status.error().map(str::to_owned),
                }
            })
            .collect();
        ListServersResult { servers }
    }

    async fn session(
        &self,
        server: &str,
        grant: &Grant,
        tool: Option<&str>,
    ) -> Result<(&Arc<Server>, Arc<Session>), Error> {
        let server = self.resolve(server, grant, tool)?;
        let session = server.session(server.config.call_timeout).await?;
        Ok((server, session))
    }

    /// `listTools`: the tools the grant may see.
    pub async fn list_tools(&self, server: &str, grant: &Grant) -> Result<ListToolsResult, Error> {
        let (server, session) = self.session(server, grant, None).await?;
        let tools = session
            .catalog()
            .tools()
            .iter()
            .filter(|tool| Self::visible(grant, server, tool))
            .map(|tool| ToolSummary {
                name: tool.name.clone(),
                description: tool.description.clone(),
                has_structured_output: tool.has_output_schema,
            })
            .collect();
        Ok(ListToolsResult {
            server: server.config.name.clone(),
            tools,
        })
    }

    /// `describeTool`: the tool exactly as the server listed it.
    pub async fn describe_tool(
        &self,
        server: &str,
        tool: &str,
        grant: &Grant,
    ) -> Result<Value, Error> {
        let (server, session) = self.session(server, grant, Some(tool)).await?;
        let catalog = session.catalog();
        let tool = self.tool(server, &catalog, tool, grant)?;
        Ok(tool.raw.clone())
    }

    /// Resolves a tool the grant may see: an unknown one lists only visible tools, a hidden
    /// one says why it is not permitted.
    fn tool(
        &self,
        server: &Server,
        catalog: &Catalog,
        tool: &str,
        grant: &Grant,
    ) -> Result<Arc<CatalogTool>, Error> {
        let Some(found) = catalog.get(tool) else {
            return Err(Error::UnknownTool {
                server: server.config.name.clone(),
                tool: tool.to_owned(),
                known_tools: catalog
                    .tools()
                    .iter()
                    .filter(|tool| Self::visible(grant, server, tool))
                    .map(|tool| tool.name.clone())
                    .collect(),
            });
        };
        if !Self::visible(grant, server, found) {
            let annotations = found.raw.get("annotations").unwrap_or(&Value::Null);
            // Confirmation never hides a tool, so this is a scope or policy refusal.
            check_call(
                &grant.scope,
                &server.config.policy,
                &server.config.name,
                &found.name,
                annotations,
                true,
                SystemTime::now(),
            )?;
        }
        Ok(Arc::clone(found))
    }

    /// `callTool`: the pipeline.
    #[tracing::instrument(skip_all, fields(server = %params.server, tool = %params.tool))]
    pub async fn call_tool(&self, params: CallToolParams, grant: &Grant) -> Result<Value, Error> {
        let started = Instant::now();
        let outcome = self.call_tool_inner(&params, grant).await;
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        match &outcome {
            Ok(result) => {
                let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
                let attempts = result
                    .pointer(&format!("/_meta/{}", tool_cli_protocol::meta::ATTEMPTS))
                    .and_then(Value::as_u64)
                    .unwrap_or(1);
                tracing::info!(
                    target: "tool_cli::trace",
                    session_id = params.session_id.as_deref().unwrap_or(""),
                    elapsed_ms,
                    attempts,
                    is_error,
                    "call finished"
                );
            }
            Err(error) => tracing::info!(
                target: "tool_cli::trace",
                session_id = params.session_id.as_deref().unwrap_or(""),
                elapsed_ms,
                %error,
                "call failed"
            ),
        }
        outcome
    }

    async fn call_tool_inner(
        &self,
        params: &CallToolParams,
        grant: &Grant,
    ) -> Result<Value, Error> {
        let server = self.resolve(&params.server, grant, Some(&params.tool))?;
        let timeout = match params.timeout_ms {
            Some(0) => {
                return Err(Error::InvalidParams {
                    method: "callTool".to_owned(),
                    message: "timeoutMs must be a positive number of milliseconds".to_owned(),
                });
            }
            Some(ms) => Duration::from_millis(ms.min(tool_cli_protocol::MAX_TIMEOUT_MS)),
            None => server.config.call_timeout,
        };

        // Resolve and validate against the catalog as it is now: nothing is sent otherwise.
        let session = server.session(timeout).await?;
        let catalog = session.catalog();
        let tool = self.tool(server, &catalog, &params.tool, grant)?;
        drop(session);
        // Policy: the token's scope, the config's allow/deny lists, and confirmation of
        // destructive tools.
        let annotations = tool.raw.get("annotations").cloned().unwrap_or(Value::Null);
        check_call(
            &grant.scope,
            &server.config.policy,
            &server.config.name,
            &tool.name,
            &annotations,
            params.confirm == Some(true),
            SystemTime::now(),
        )?;
        let arguments = params.arguments.clone().unwrap_or_default();
        let validator = tool.validator().map_err(|message| Error::InvalidSchema {
            server: server.config.name.clone(),
            tool: tool.name.clone(),
            message,
        })?;
        let errors = validator.check(&arguments);
        if !errors.is_empty() {
            return Err(Error::InvalidArguments {
                server: server.config.name.clone(),
                tool: tool.name.clone(),
                errors,
            });
        }

        let cache_key = (server.cache.is_some() && is_cacheable(&annotations)).then(|| {
            CacheKey::new(
                &server.config.name,
                &tool.name,
                &Value::Object(arguments.clone()),
            )
        });

        // One concurrency slot covers the call and its retries.
        let _permit = server
            .bulkhead
            .acquire()
            .await
            .map_err(|busy| Error::Busy {
                server: server.config.name.clone(),
                in_flight: busy.in_flight,
                queued: busy.queued,
                retry_after_ms: busy.retry_after_hint.as_millis() as u64,
            })?;
        // The timeout bounds the whole call, retries and waits for a restart included: each
        // attempt gets what is left of it.
        let deadline = tokio::time::Instant::now() + timeout;
        let policy = RetryPolicy::default();
        let retries = run_with_retries(
            &policy,
            safe_to_resend(&annotations),
            classify,
            |_attempt| {
                let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
                self.attempt(server, &tool.name, &arguments, remaining, timeout)
            },
            random_jitter,
        );
        // A little slack so an attempt's own timeout fires first and is recorded (breaker,
        // stats, cancellation) before this outer bound would drop it.
        let slack = Duration::from_millis(250);
        let (outcome, attempts) = match tokio::time::timeout_at(deadline + slack, retries).await {
            Ok(done) => done,
            // Out of time between attempts (a backoff sleep): the last attempt's own error was
            // transient, and the caller's time is up.
            Err(_) => (
                Err(Error::Timeout {
                    server: server.config.name.clone(),
                    tool: tool.name.clone(),
                    timeout_ms: timeout.as_millis() as u64,
                }),
                0,
            ),
        };

        match outcome {
            Ok(mut result) => {
                if let (Some(key), Some(cache)) = (cache_key, &server.cache) {
                    cache
                        .lock()
                        .unwrap()
                        .put(key, result.clone(), tokio::time::Instant::now());
                }
                set_meta(
                    &mut result,
                    tool_cli_protocol::meta::ATTEMPTS,
                    attempts.into(),
                );
                Ok(result)
            }
            Err(error) => {
                let cached = match (&cache_key, &server.cache) {
                    (Some(key), Some(cache)) if server_is_failing(&error) => cache
                        .lock()
                        .unwrap()
                        .get_fresh_with_age(key, tokio::time::Instant::now()),
                    _ => None,
                };
                let Some((mut result, age)) = cached else {
                    return Err(error);
                };
                tracing::warn!(%error, age_ms = age.as_millis() as u64, "serving a cached result");
                set_meta(
                    &mut result,
                    tool_cli_protocol::meta::DEGRADED,
                    serde_json::json!({
                        "reason": error.to_string(),
                        "ageMs": age.as_millis() as u64,
                    }),
                );
                set_meta(
                    &mut result,
                    tool_cli_protocol::meta::ATTEMPTS,
                    attempts.into(),
                );
                Ok(result)
            }
        }
    }

    /// One attempt: ask the breaker, wait for a live session, execute with the timeout, and
    /// record the outcome for the breaker and `health`.
    async fn attempt(
        &self,
        server: &Server,
        tool: &str,
        arguments: &Map<String, Value>,
        remaining: Duration,
        timeout: Duration,
    ) -> Result<Value, Error> {
        if remaining.is_zero() {
            return Err(Error::Timeout {
                server: server.config.name.clone(),
                tool: tool.to_owned(),
                timeout_ms: timeout.as_millis() as u64,
            });
        }
        let admission = server
            .breaker
            .lock()
            .unwrap()
            .try_acquire(tokio::time::Instant::now())
            .map_err(|refusal| Error::CircuitOpen {
                server: server.config.name.clone(),
                retry_after_ms: match refusal {
                    Refusal::Open { retry_after, .. } => retry_after.as_millis() as u64,
                    // One probe is running; it decides within its timeout.
                    Refusal::ProbeInFlight => remaining.as_millis() as u64,
                },
                last_error: server.stats.lock().unwrap().last_error.clone(),
            })?;
        let session = match server.session(remaining).await {
            Ok(session) => session,
            Err(error) => {
                server.breaker.lock().unwrap().abandon(admission);
                return Err(error);
            }
        };
        let started = Instant::now();
        let result = session
            .call_tool(tool, arguments.clone(), remaining)
            .await
            .map_err(|error| match error {
                // Report the caller's timeout, not what was left of it for this attempt.
                Error::Timeout { server, tool, .. } => Error::Timeout {
                    server,
                    tool,
                    timeout_ms: timeout.as_millis() as u64,
                },
                other => other,
            });
        if session.is_http()
            && matches!(
                result,
                Err(Error::Timeout { .. } | Error::ServerExited { .. })
            )
        {
            // An HTTP server that restarted has forgotten our session, and rmcp may keep
            // waiting on it: if a ping goes unanswered too, reconnect.
            let session = Arc::clone(&session);
            tokio::spawn(async move {
                if !session.is_responsive(HTTP_PING_TIMEOUT).await {
                    session.recycle();
                }
            });
        }
        let failure = match &result {
            Err(error @ (Error::ServerExited { .. } | Error::Timeout { .. })) => {
                Some(error.to_string())
            }
            // The server answered (a result, an `isError` result or its own JSON-RPC error): it
            // is alive, whatever the tool thought of the arguments.
            _ => None,
        };
        let outcome = if failure.is_some() {
            Outcome::Failure
        } else {
            Outcome::Success
        };
        server
            .breaker
            .lock()
            .unwrap()
            .record(admission, outcome, tokio::time::Instant::now());
        server
            .stats
            .lock()
            .unwrap()
            .record(started.elapsed(), failure);
        result
    }

    /// `health`: the state, restarts, calls, errors, latency and breaker of every server the
    /// grant may see.
    pub fn health(&self, grant: &Grant) -> HealthResult {
        let now = tokio::time::Instant::now();
        let servers = self
            .pool
            .servers()
            .iter()
            .filter(|server| grant.scope.permits_server(&server.config.name))
            .map(|server| {
                let status = server.status();
                let (breaker_state, failing) = {
                    let breaker = server.breaker.lock().unwrap();
                    let counts = breaker.window_counts(now);
                    // Degraded: at least half of the recent calls failed.
                    (
                        breaker.state(now),
                        counts.failures > 0 && counts.failures * 2 >= counts.calls(),
                    )
                };
                let (state, breaker) = match breaker_state {
                    BreakerState::Closed => (
                        ServerState::Degraded,
                        BreakerHealth {
                            state: "closed".to_owned(),
                            retry_after_ms: None,
                        },
                    ),
                    BreakerState::Open { until } => (
                        ServerState::CircuitOpen,
                        BreakerHealth {
                            state: "open".to_owned(),
                            retry_after_ms: Some(
                                until.saturating_duration_since(now).as_millis() as u64
                            ),
                        },
                    ),
                    BreakerState::HalfOpen { .. } => (
                        ServerState::Degraded,
                        BreakerHealth {
                            state: "halfOpen".to_owned(),
                            retry_after_ms: None,
                        },
                    ),
                };
                let state = match (&status, breaker.state.as_str()) {
                    (Status::Ready(_), "closed") if !failing => ServerState::Ready,
                    (Status::Ready(_), _) => state,
                    (other, _) => other.state(),
                };
                let (in_flight, queued) = server.bulkhead.snapshot();
                let stats = server.stats.lock().unwrap();
                ServerHealth {
                    name: server.config.name.clone(),
                    state,
                    transport: server.transport_kind(),
                    last_error: status
                        .error()
                        .map(str::to_owned)
                        .or_else(|| stats.last_error.clone()),
                    restarts: server.restarts(),
                    uptime_ms: server.uptime().map(|d| d.as_millis() as u64),
                    calls: stats.calls,
                    errors: stats.errors,
                    in_flight,
                    queued,
                    latency_ms: stats
                        .percentiles()
                        .map(|(p50, p95, samples)| LatencySummary { p50, p95, samples }),
                    breaker,
                }
            })
            .collect();
        HealthResult { servers }
    }

    /// Every page of a resource list of a server the grant may see; a server without the
    /// resources capability has none.
    async fn resource_list(
        &self,
        server: &str,
        grant: &Grant,
        kind: ListKind,
    ) -> Result<(String, Vec<Value>), Error> {
        let (server, session) = self.session(server, grant, None).await?;
        let items = if session.supports_resources {
            session.list_all(kind, server.config.call_timeout).await?
        } else {
            Vec::new()
        };
        Ok((server.config.name.clone(), items))
    }

    /// `listResources`.
    pub async fn list_resources(
        &self,
        server: &str,
        grant: &Grant,
    ) -> Result<ListResourcesResult, Error> {
        let (server, resources) = self
            .resource_list(server, grant, ListKind::Resources)
            .await?;
        Ok(ListResourcesResult { server, resources })
    }

    /// `listResourceTemplates`.
    pub async fn list_resource_templates(
        &self,
        server: &str,
        grant: &Grant,
    ) -> Result<ListResourceTemplatesResult, Error> {
        let (server, templates) = self
            .resource_list(server, grant, ListKind::ResourceTemplates)
            .await?;
        Ok(ListResourceTemplatesResult { server, templates })
    }

    /// `readResource`: the server's complete result.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        grant: &Grant,
    ) -> Result<Value, Error> {
        let (server, session) = self.session(server, grant, None).await?;
        session.read_resource(uri, server.config.call_timeout).await
    }
}

/// How the retry loop treats a failed attempt.
fn classify(error: &Error) -> FailureClass {
    match error {
        // Not connected (yet): the request never left.
        Error::ServerUnavailable { state, .. } if matches!(*state, "connecting" | "restarting") => {
            FailureClass::Transient {
                may_have_reached_server: false,
            }
        }
        // Sent, and then the server went away or went quiet: it may have acted on it.
        Error::ServerExited { .. } | Error::Timeout { .. } => FailureClass::Transient {
            may_have_reached_server: true,
        },
        _ => FailureClass::Terminal,
    }
}

/// Whether an error says the server is failing (as opposed to the call being wrong), which is
/// when a cached result of a read-only tool may stand in.
fn server_is_failing(error: &Error) -> bool {
    matches!(
        error,
        Error::ServerExited { .. }
            | Error::Timeout { .. }
            | Error::CircuitOpen { .. }
            | Error::ServerUnavailable { .. }
    )
}

/// Sets `_meta[key]` on a result object, creating `_meta` when absent.
fn set_meta(result: &mut Value, key: &str, value: Value) {
    let Some(object) = result.as_object_mut() else {
        return;
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(key.to_owned(), value);
    }
}
