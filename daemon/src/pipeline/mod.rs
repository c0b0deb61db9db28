//! The call pipeline: every tool call and resource read, from any client, takes this one path.
//!
//! ```text
//! resolve ──▶ plan ──────────────────────────▶ execute ─────────────────────────▶ record
//! server +    policy, validation, guards,       bulkhead → retry [breakers →        CallRecord →
//! tool, or    admission (dry-run): a CallPlan   upstream call within the deadline]  observers
//! routing     — what a dry-run returns          → degradation cache: a CallOutcome  (traces,
//!                                                                                   sessions)
//! ```
//!
//! Each stage passes a plain value to the next (`resolve::Resolved`, `plan::CallPlan`,
//! `execute::CallOutcome`, [`CallRecord`]), and a [`CallContext`] (grant, call id, session,
//! arrival time, event relay) travels alongside. What the caller gets is a [`CallAnswer`]: the
//! server's result with the typed facts of the call, or a dry run's verdict. Deciding is separate from doing: `resolve` and `plan` have no
//! side effects, so a dry-run is the plan itself. The pipeline talks to servers only through the
//! [`ToolProvider`] seam, so the stages are unit-tested over an in-memory provider.
//!
//! Invariant: nothing reaches an upstream except through `execute`, and `execute` only runs a
//! plan that passed validation and policy (`plan.blocked` is `None`).

mod abandoned;
mod answer;
mod context;
mod execute;
mod guards;
mod idempotency;
mod membership;
mod operation;
mod passed;
mod plan;
pub(crate) mod progress_timeout;
mod prompts;
mod record;
mod resolve;
pub(crate) mod routing;
pub mod span;
mod stats;
pub(crate) mod tasks;
mod template_pins;

use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use tokio::time::Instant;
use tool_cli_protocol::ErrorData;
use tracing::Instrument as _;

pub use answer::{CallAnswer, CallFacts, Degraded, RanCall};
pub use context::{CallContext, CallId, CallRequest};
pub use operation::{OperationRecord, OperationTarget};
pub use record::{CallObserver, CallRecord, RecordedError, arguments_hash};

use crate::error::Error;
use crate::policy::Denial;
use crate::provider::{CallTicket, ResourceListKind, ToolProvider, Upstream, UsageMeter};
use crate::resilience::breaker::BreakerConfig;
use crate::resilience::retry::RetryPolicy;
use abandoned::{CallMarks, PendingRecord};
use execute::{Bounds, CallOutcome, Operation};
pub(crate) use guards::ServerGuards;
use idempotency::{Begin, IdempotencyStore};
use plan::PlanInput;
pub(crate) use plan::{deadline as call_deadline, selection_info};
pub(crate) use resolve::{
    RoutingFacts, listed, pin_refusal, server as resolve_server, tool as resolve_tool, visible,
};
use tool_cli_search::embed::{Embedder, HashEmbedder};

/// Default most nested calls (chains of chains, agents calling chains).
pub const DEFAULT_MAX_DEPTH: u32 = 8;

/// Settings of the pipeline that are not per server.
#[derive(Debug, Clone)]
pub struct PipelineOptions {
    /// How each server's (and each tool's) circuit breaker decides.
    pub breaker: BreakerConfig,
    /// How failed attempts are retried.
    pub retry: RetryPolicy,
    /// Most nested calls.
    pub max_depth: u32,
    /// How long an idempotency key's answer is kept for repeats.
    pub idempotency_ttl: Duration,
}

impl Default for PipelineOptions {
    fn default() -> Self {
        PipelineOptions {
            breaker: BreakerConfig::default(),
            retry: RetryPolicy::default(),
            max_depth: DEFAULT_MAX_DEPTH,
            idempotency_ttl: idempotency::DEFAULT_TTL,
        }
    }
}

/// One server as the pipeline sees it: the provider's upstream and the protection around it.
pub(crate) struct Slot {
    pub(crate) upstream: Arc<dyn Upstream>,
    pub(crate) guards: ServerGuards,
}

/// The servers, swapped whole when the set changes.
pub(crate) struct SlotTable(RwLock<Arc<Vec<Arc<Slot>>>>);

impl SlotTable {
    /// The servers now.
    pub(crate) fn current(&self) -> Arc<Vec<Arc<Slot>>> {
        Arc::clone(&self.0.read().unwrap())
    }
}

/// The call pipeline over one provider.
pub struct Pipeline {
    slots: Arc<SlotTable>,
    /// Compares a session's task with tool descriptions (routing's similarity rule).
    embedder: Arc<dyn Embedder>,
    idempotency: Arc<IdempotencyStore>,
    observers: Vec<Arc<dyn CallObserver>>,
    wants_payloads: bool,
    options: PipelineOptions,
    /// Which caller owns which MCP task (`tasks/`).
    tasks: tasks::TaskRegistry,
}

/// What the session store (or any caller) supplies for one call beyond the request: routing
/// facts, a guard's refusal, and the arguments' hash when the caller already computed it (the
/// session's loop guard needs it first), so it is computed once per call.
#[derive(Default)]
pub(crate) struct CallExtras {
    pub(crate) routing: RoutingFacts,
    pub(crate) guard: Option<Error>,
    pub(crate) arguments_hash: Option<String>,
    /// The session saw this tool refused for its arguments just before (a corrective retry).
    pub(crate) corrective_retry: bool,
}

impl Pipeline {
    /// A pipeline over `provider`'s servers; `observers` are told of every finished call.
    pub fn new(
        provider: &dyn ToolProvider,
        options: PipelineOptions,
        observers: Vec<Arc<dyn CallObserver>>,
    ) -> Pipeline {
        let slots = provider
            .servers()
            .into_iter()
            .map(|upstream| {
                let guards = ServerGuards::new(&upstream.info().settings, options.breaker);
                Arc::new(Slot { upstream, guards })
            })
            .collect();
        let wants_payloads = observers.iter().any(|observer| observer.wants_payloads());
        Pipeline {
            slots: Arc::new(SlotTable(RwLock::new(Arc::new(slots)))),
            embedder: Arc::new(HashEmbedder),
            idempotency: IdempotencyStore::new(options.idempotency_ttl),
            observers,
            wants_payloads,
            options,
            tasks: tasks::TaskRegistry::default(),
        }
    }

    /// Every server, in provider order.
    pub(crate) fn slots(&self) -> Arc<Vec<Arc<Slot>>> {
        self.slots.current()
    }

    /// A handle that reads the servers later (for background tasks).
    pub(crate) fn slots_handle(&self) -> Arc<SlotTable> {
        Arc::clone(&self.slots)
    }

    /// The pipeline's options.
    pub fn options(&self) -> &PipelineOptions {
        &self.options
    }

    /// Makes (or, with `dry_run`, explains) one tool call: the server's complete
    /// `CallToolResult` and the facts of the call, or a dry run's verdict.
    pub async fn call(
        &self,
        context: &CallContext,
        request: CallRequest,
    ) -> Result<CallAnswer, Error> {
        self.call_with(context, request, CallExtras::default())
            .await
    }

    /// [`Pipeline::call`] with routing facts and a guard's verdict from the caller's session.
    pub(crate) async fn call_with(
        &self,
        context: &CallContext,
        request: CallRequest,
        mut extras: CallExtras,
    ) -> Result<CallAnswer, Error> {
        let span = tracing::info_span!(
            "call",
            call_id = %context.call_id,
            server = request.server.as_deref().unwrap_or("*"),
            tool = %request.tool,
        );
        // Boxed: the call's whole state (every stage's future) lives behind one pointer, so the
        // callers above (the calls service, the RPC handler, jsonrpsee's wrapper) each hold and
        // move a pointer as they await it, not the ~9 KB state (callgrind: memcpy was a fifth of
        // a `callTool`'s instructions).
        Box::pin(
            async move {
                let hash = extras
                    .arguments_hash
                    .take()
                    .unwrap_or_else(|| arguments_hash(&request.arguments));
                let mut record = CallRecord::new(context, &request.tool, hash);
                record.dry_run = request.dry_run;
                record.requested_server = request.server.clone().filter(|name| name != "*");
                if self.wants_payloads {
                    record.arguments = Some(Value::Object(request.arguments.clone()));
                }
                // Dropped before the answer (the client went away), it records the call as
                // abandoned: every call still produces exactly one record.
                let mut pending = PendingRecord::new(self, context.arrived, record);
                let (record, marks) = pending.parts();
                let answer = self.run_once(context, request, extras, record, marks).await;
                let mut record = pending.answered();
                record.finished_at = SystemTime::now();
                record.latency = context.arrived.elapsed();
                match &answer {
                    Ok(answer) => {
                        record.success = answer.succeeded();
                        if self.wants_payloads {
                            record.result = Some(match answer {
                                CallAnswer::Ran(ran) => ran.result.clone(),
                                CallAnswer::DryRun(verdict) => {
                                    serde_json::to_value(verdict).unwrap_or_default()
                                }
                            });
                        }
                    }
                    Err(error) => {
                        record.success = false;
                        record.error = Some(RecordedError {
                            code: error.code(),
                            kind: error.kind(),
                            message: error.wire_message(),
                        });
                    }
                }
                self.record(&record);
                answer
            }
            .instrument(span),
        )
        .await
    }

    /// Runs the call, unless its idempotency key says it ran already (or is running).
    async fn run_once(
        &self,
        context: &CallContext,
        request: CallRequest,
        extras: CallExtras,
        record: &mut CallRecord,
        marks: &CallMarks,
    ) -> Result<CallAnswer, Error> {
        let Some(key) = request.idempotency_key.clone().filter(|_| !request.dry_run) else {
            return self.run(context, request, extras, record, marks).await;
        };
        let fingerprint = idempotency::fingerprint(
            record.requested_server.as_deref(),
            &request.tool,
            &record.arguments_hash,
        );
        loop {
            match self
                .idempotency
                .begin(&context.grant.token_id, &key, &fingerprint)?
            {
                Begin::Replay(stored) => return stored.replay(&key),
                Begin::Wait(done) => {
                    if let Some(stored) = idempotency::wait(done).await {
                        return stored.replay(&key);
                    }
                    // The first call stored nothing: this one runs (or waits for whoever does).
                }
                Begin::Run(ticket) => {
                    let answer = self.run(context, request, extras, record, marks).await;
                    ticket.finish(&answer, record.executed);
                    return answer;
                }
            }
        }
    }

    async fn run(
        &self,
        context: &CallContext,
        request: CallRequest,
        extras: CallExtras,
        record: &mut CallRecord,
        marks: &CallMarks,
    ) -> Result<CallAnswer, Error> {
        let slots = self.slots();
        let server = request.server.as_deref().filter(|name| *name != "*");
        record.corrective_retry = extras.corrective_retry;
        let guard = extras.guard.or_else(|| {
            (context.depth > self.options.max_depth).then(|| {
                Error::invalid_params(
                    "callTool",
                    format!(
                        "calls are nested {} deep, more than the limit of {}; a chain or agent \
                         that calls itself is the usual cause",
                        context.depth, self.options.max_depth
                    ),
                )
            })
        });
        // A guard refuses before any work, even resolution; a dry-run still resolves, to explain
        // what would have been called and why it would be refused.
        if let Some(refusal) = guard.as_ref().filter(|_| !request.dry_run) {
            return Err(plan::clone_error(refusal));
        }
        // A server that never connected has no catalog yet: wait for its first connection
        // (within the call's time, as it would be on that server) rather than call its tools
        // unknown.
        let bound = FirstWait {
            arrived: context.arrived,
            timeout: request.timeout,
            progress_resets_timeout: request.progress_resets_timeout,
        };
        wait_for_first_connections(&slots, &context.grant, server, bound).await?;

        let mut routing = extras.routing;
        if let Some(hint) = &request.hint {
            routing.mention_text = Some(match routing.mention_text.take() {
                Some(task) => format!("{task}\n{hint}"),
                None => hint.clone(),
            });
        }
        let resolved = resolve::resolve(
            &slots,
            &context.grant,
            server,
            &request.tool,
            &request.arguments,
            &routing,
            self.embedder.as_ref(),
        )?;
        record.server = Some(resolved.slot.upstream.info().name.clone());
        record.selection = Some(resolved.selection.clone());
        if let Some(span) = &mut record.span {
            span.transport = Some(resolved.slot.upstream.info().transport);
        }

        let plan = plan::plan(
            resolved,
            PlanInput {
                grant: &context.grant,
                arguments: request.arguments,
                timeout: request.timeout,
                arrived: context.arrived,
                confirm: request.confirm,
                progress_resets_timeout: request.progress_resets_timeout,
                dry_run: request.dry_run,
                guard,
                task: request.task,
            },
        );
        if request.dry_run {
            return Ok(CallAnswer::DryRun(plan.dry_run_result()));
        }
        if let Some(blocked) = plan.blocked {
            return Err(blocked);
        }
        // The server's sampling requests during the call are billed to it.
        let usage = Arc::new(UsageMeter::default());
        // The upstream span's context goes with the request, so the server joins the trace.
        let ticket = CallTicket {
            usage: Some(Arc::clone(&usage)),
            trace: record
                .span
                .as_ref()
                .and_then(|span| span.ids.upstream_context().cloned()),
            exchange: record.span.as_ref().and_then(|span| span.exchange.clone()),
            // A 2026 server may run the call as a task the pool follows itself: noted for
            // the line, also when the call is dropped mid-task.
            task: Some(Arc::clone(&marks.ran_as_task)),
            ..context.ticket()
        };
        // A task the call creates is its caller's (`tasks/`), noted as soon as it exists.
        let owner = tasks::owner(context);
        let created = |upstream_id: &str| {
            let public = self.tasks.register(
                &owner,
                tasks::TaskEntry {
                    server: plan.resolved.slot.upstream.info().name.clone(),
                    upstream_id: upstream_id.to_owned(),
                    tool: plan.resolved.tool.name().to_owned(),
                },
            );
            *marks.task_id.lock().unwrap() = Some(public);
        };
        let CallOutcome {
            result,
            attempts,
            retry_reason,
            degraded,
        } = execute::execute(&plan, &self.options.retry, &ticket, &marks.sent, &created).await;
        record.task_id = marks.task_id(Some(&plan.resolved.slot.upstream.info().name));
        let sampled = usage.totals();
        record.tokens_in += sampled.tokens_in;
        record.tokens_out += sampled.tokens_out;
        record.cost_usd += sampled.cost_usd;
        record.executed = attempts > 0;
        record.attempts = attempts;
        record.retry_reason = retry_reason;
        record.degraded = degraded.is_some();
        let mut result = result?;
        if let Some(public) = &record.task_id {
            match plan.task {
                plan::TaskMode::Follow(_) => match result.get_mut("task") {
                    Some(task) => tasks::wire::set_task_id(task, public),
                    None => return Err(Error::internal("a created task lost its \"task\"")),
                },
                _ => tasks::wire::set_related_task_id(&mut result, public),
            }
        }
        let is_error = answer::is_tool_error(&result);
        Ok(CallAnswer::Ran(RanCall {
            result,
            facts: CallFacts {
                server: plan.resolved.slot.upstream.info().name.clone(),
                selection: plan.resolved.selection,
                attempts,
                is_error,
                degraded,
                call_id: context.call_id,
                replayed: false,
            },
            alternatives: None,
        }))
    }

    /// Tells every observer of something done on a call's behalf that is not a tool call (an
    /// agent's LLM call, with its tokens and cost).
    pub(crate) fn record_external(&self, record: &CallRecord) {
        for observer in &self.observers {
            observer.observe(record);
        }
    }

    /// Updates the per-tool statistics, logs the call (target `tool_cli::trace`, off by
    /// default) and tells every observer.
    fn record(&self, record: &CallRecord) {
        let elapsed_ms = record.latency.as_secs_f64() * 1000.0;
        let session_id = record.session_id.as_deref().unwrap_or("");
        let server = record.server.as_deref().unwrap_or("");
        match &record.error {
            None => tracing::info!(
                target: "tool_cli::trace",
                session_id,
                server,
                tool = %record.tool,
                elapsed_ms,
                attempts = record.attempts,
                success = record.success,
                dry_run = record.dry_run,
                "call finished"
            ),
            Some(error) => tracing::info!(
                target: "tool_cli::trace",
                session_id,
                server,
                tool = %record.tool,
                elapsed_ms,
                attempts = record.attempts,
                error = %error.message,
                "call failed"
            ),
        }
        if (record.executed || record.was_abandoned())
            && let Some(server) = &record.server
            && let Some(slot) = self
                .slots()
                .iter()
                .find(|slot| &slot.upstream.info().name == server)
        {
            if record.was_abandoned() {
                slot.guards.stats.lock().unwrap().abandoned += 1;
            }
            if record.executed {
                slot.guards.record_tool_call(
                    &record.tool,
                    record.latency,
                    record.success,
                    execute::now(),
                );
            }
        }
        for observer in &self.observers {
            observer.observe(record);
        }
    }

    /// Reads a resource through the same protection as a tool call (bulkhead, breakers,
    /// retries, statistics), after the grant's resource scope allows it.
    pub async fn read_resource(
        &self,
        context: &CallContext,
        server: &str,
        uri: &str,
    ) -> Result<Value, Error> {
        let slots = self.slots();
        let slot = resolve_server(&slots, server, &context.grant, None)?;
        check_resource(&context.grant, server, uri)?;
        self.refuse_read_through_held_template(context, slot, uri)
            .await?;
        let timeout = slot.upstream.info().settings.call_timeout;
        let outcome = self
            .protected_operation(
                context,
                slot,
                &Operation::ReadResource { uri },
                Bounds::fixed(timeout, context.arrived + timeout),
                true,
            )
            .await;
        outcome.result
    }

    /// Every item of a resource list of a server the grant may see, filtered by its resource
    /// scope. A server without resources has none.
    pub async fn list_resources(
        &self,
        context: &CallContext,
        server: &str,
        kind: ResourceListKind,
    ) -> Result<(String, Vec<Value>), Error> {
        let slots = self.slots();
        let slot = resolve_server(&slots, server, &context.grant, None)?;
        let name = slot.upstream.info().name.clone();
        let items = self.resource_items(context, slot, kind).await?;
        let items = match kind {
            ResourceListKind::Resources => items
                .into_iter()
                .filter(|item| {
                    item.get("uri")
                        .and_then(Value::as_str)
                        .is_some_and(|uri| context.grant.scope.permits_resource(&name, uri))
                })
                .collect(),
            // A template is not a URI: show it when the scope reaches any resource of the server;
            // reads of what it expands to are checked one by one. One the pin check holds back
            // is not listed (`docs/pinning.md`).
            ResourceListKind::Templates => {
                use tool_cli_gateway_core::pin::ItemKind;
                slot.upstream
                    .pin_item_hold(ItemKind::ResourceTemplate, &items)
                    .retain_admitted(ItemKind::ResourceTemplate, items)
            }
        };
        Ok((name, items))
    }

    /// Every resource template of `slot`'s server, those the pin check holds back included
    /// (`pinListing`: a person must see what changed to approve it).
    pub(crate) async fn templates_for_pins(
        &self,
        context: &CallContext,
        slot: &Slot,
    ) -> Result<Vec<Value>, Error> {
        self.resource_items(context, slot, ResourceListKind::Templates)
            .await
    }

    /// Every item of a resource list of `slot`'s server (none when the grant reaches none of
    /// its resources), through the same protection as a call: a slot, the breakers, retries,
    /// statistics.
    async fn resource_items(
        &self,
        context: &CallContext,
        slot: &Slot,
        kind: ResourceListKind,
    ) -> Result<Vec<Value>, Error> {
        let timeout = slot.upstream.info().settings.call_timeout;
        let deadline = context.arrived + timeout;
        slot.upstream.wait_ready(deadline).await?;
        if !context
            .grant
            .scope
            .permits_any_resource(&slot.upstream.info().name)
        {
            return Ok(Vec::new());
        }
        let outcome = self
            .protected_operation(
                context,
                slot,
                &Operation::ListResources { kind },
                Bounds::fixed(timeout, deadline),
                false,
            )
            .await;
        Ok(listed_items(outcome.result?))
    }
}

impl Pipeline {
    /// Restarts a server now (a parked one is tried at once, a live connection replaced) and
    /// clears its breakers, the server's and its tools': what an operator does once the cause of
    /// the failures is fixed. Waits for the new attempt to settle, at most the server's call
    /// timeout (and at least the default one, so a short `timeoutMs` does not cut the wait for a
    /// slow start). Answers the server's name and where it stands then.
    pub async fn restart_server(
        &self,
        context: &CallContext,
        server: &str,
    ) -> Result<(String, crate::provider::UpstreamStatus), Error> {
        let slots = self.slots();
        let slot = resolve_server(&slots, server, &context.grant, None)?;
        let info = slot.upstream.info();
        let wait = info
            .settings
            .call_timeout
            .max(crate::config::DEFAULT_CALL_TIMEOUT);
        slot.upstream.restart(context.arrived + wait).await?;
        // After the restart, so failures of the old connection recorded meanwhile are gone too.
        slot.guards.reset_breakers(Instant::now());
        tracing::info!(server = %info.name, "server restarted on request; breakers cleared");
        Ok((info.name.clone(), slot.upstream.status()))
    }
}

/// The items of a listing that went through [`execute::protected`] (as a JSON array).
fn listed_items(listing: Value) -> Vec<Value> {
    match listing {
        Value::Array(items) => items,
        _ => Vec::new(),
    }
}

/// Refuses a read the grant's resource scope does not include.
fn check_resource(grant: &crate::auth::Grant, server: &str, uri: &str) -> Result<(), Error> {
    let now = SystemTime::now();
    if grant.scope.is_expired(now) {
        return Err(Denial::ScopeExpired {
            scope: grant.scope.describe(now),
        }
        .into());
    }
    if grant.scope.permits_resource(server, uri) {
        return Ok(());
    }
    Err(ErrorData::NotPermitted {
        server: server.to_owned(),
        tool: None,
        reason: format!(
            "this token's scope ({}) does not include the resource \"{uri}\"; use a token minted \
             with a resource grant such as --resource \"{server}/*\"",
            grant.scope.describe(now)
        ),
    }
    .into())
}

/// What bounds a call's wait for a server's first connection: the deadline the call would have
/// on that server (`plan::deadline`), never more.
struct FirstWait {
    arrived: Instant,
    timeout: Option<Duration>,
    progress_resets_timeout: Option<Duration>,
}

impl FirstWait {
    fn deadline(&self, slot: &Slot) -> Instant {
        plan::deadline(
            self.arrived,
            self.timeout,
            self.progress_resets_timeout,
            slot.upstream.info().settings.call_timeout,
        )
    }
}

/// Waits (until the call's deadline on each server at most) for servers whose tools are not
/// known yet. A named server that never connected must connect first: if it cannot, the call
/// fails with why (it is unavailable), not with an unknown tool. A routed call waits only for
/// servers making their first connection right now, and routes among whoever is known. A server
/// that has connected once keeps its last catalog while it restarts, so it is never waited for
/// here.
async fn wait_for_first_connections(
    slots: &[Arc<Slot>],
    grant: &crate::auth::Grant,
    server: Option<&str>,
    bound: FirstWait,
) -> Result<(), Error> {
    use tool_cli_protocol::methods::ServerState;
    if let Some(name) = server {
        // Outside the grant's scope: resolution refuses it without saying more.
        if grant.scope.permits_server(name)
            && let Some(slot) = slots.iter().find(|slot| slot.upstream.info().name == name)
            && slot.upstream.catalog().is_empty()
        {
            slot.upstream.wait_ready(bound.deadline(slot)).await?;
        }
        return Ok(());
    }
    let connecting: Vec<_> = slots
        .iter()
        .filter(|slot| {
            grant.scope.permits_server(&slot.upstream.info().name)
                && slot.upstream.catalog().is_empty()
                && slot.upstream.status().state == ServerState::Connecting
        })
        .map(|slot| slot.upstream.wait_ready(bound.deadline(slot)))
        .collect();
    for wait in connecting {
        let _ = wait.await;
    }
    Ok(())
}

/// A timeout given in milliseconds by a caller: positive, clamped to the protocol's maximum.
pub fn caller_timeout(method: &str, timeout_ms: Option<u64>) -> Result<Option<Duration>, Error> {
    match timeout_ms {
        Some(0) => Err(Error::invalid_params(
            method,
            "timeoutMs must be a positive number of milliseconds",
        )),
        Some(ms) => Ok(Some(Duration::from_millis(
            ms.min(tool_cli_protocol::MAX_TIMEOUT_MS),
        ))),
        None => Ok(None),
    }
}

#[cfg(test)]
mod golden;
#[cfg(test)]
pub(crate) mod tests;
