//! The third stage: carrying out a plan with the server's protection around it.
//!
//! bulkhead (a slot for the whole call, waiting at most until the deadline) → retry loop of
//! [breakers (the server's and the tool's) → the upstream call, bounded by the deadline] →
//! degradation cache. The deadline was fixed when the request arrived, so no wait — for the
//! connection, for a slot, between retries — can stretch a call past its timeout.
//!
//! The result is a [`CallOutcome`]: the answer or error, how many attempts were made, and
//! whether a cached result stood in. Recording it (traces, statistics, sessions) is the next
//! stage's job; this one only updates what protection needs (breakers, bulkhead, cache, the
//! server's attempt statistics).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};
use tokio::time::Instant;
use tool_cli_protocol::ErrorData;

use super::Slot;
use super::answer::Degraded;
use super::guards::Admissions;
use super::plan::TaskMode;
use super::plan::{CallPlan, circuit_open};
use super::progress_timeout::{self, Bounded};
use crate::error::Error;
use crate::provider::{CallTicket, ResourceListKind, TaskRequest};
use crate::resilience::backoff::random_jitter;
use crate::resilience::breaker::Outcome;
use crate::resilience::cache::CacheKey;
use crate::resilience::retry::{FailureClass, RetryPolicy, run_with_retries};

/// How a call went.
pub(crate) struct CallOutcome {
    /// The result, or why there is none.
    pub(crate) result: Result<Value, Error>,
    /// Attempts sent to the server (0 when none was).
    pub(crate) attempts: u32,
    /// Why the last retry happened, if one did.
    pub(crate) retry_reason: Option<String>,
    /// A cached result was served instead: why, and how old it was.
    pub(crate) degraded: Option<Degraded>,
}

/// An operation the execute stage can protect: a tool call, a resource read, a prompt, or a
/// listing of resources or prompts; whatever is sent to a server goes through here.
pub(crate) enum Operation<'a> {
    /// `tools/call`.
    CallTool {
        tool: &'a str,
        arguments: &'a Map<String, Value>,
    },
    /// `resources/read` (always safe to re-send).
    ReadResource { uri: &'a str },
    /// `prompts/get` (renders text; always safe to re-send).
    GetPrompt {
        name: &'a str,
        arguments: &'a Map<String, Value>,
    },
    /// `resources/list` or `resources/templates/list`, every page (always safe to re-send):
    /// the items as a JSON array.
    ListResources { kind: ResourceListKind },
    /// `prompts/list`, every page (always safe to re-send): the items as a JSON array.
    ListPrompts,
    /// A request passed on unread for the MCP gateway (`completion/complete`,
    /// `resources/subscribe`, `resources/unsubscribe`; each safe to re-send).
    Pass { method: &'a str, params: &'a Value },
    /// One MCP task request (`tasks/`): a task-augmented `tools/call`, or `tasks/*`.
    Task { request: TaskRequest<'a> },
    /// A tool that runs only as a task, run as one and waited for (`tasks/run.rs`); `created`
    /// is told the server's task id.
    RunAsTask {
        tool: &'a str,
        arguments: &'a Map<String, Value>,
        created: &'a (dyn Fn(&str) + Send + Sync),
    },
}

impl Operation<'_> {
    /// The name the breakers and statistics file the operation under.
    fn label(&self) -> &str {
        match self {
            Operation::CallTool { tool, .. } => tool,
            Operation::ReadResource { .. } => "resources/read",
            Operation::GetPrompt { .. } => "prompts/get",
            Operation::ListResources {
                kind: ResourceListKind::Resources,
            } => "resources/list",
            Operation::ListResources {
                kind: ResourceListKind::Templates,
            } => "resources/templates/list",
            Operation::ListPrompts => "prompts/list",
            Operation::Pass { method, .. } => method,
            Operation::Task { request } => request.label(),
            Operation::RunAsTask { tool, .. } => tool,
        }
    }
}

/// How long an operation may take: what a timeout reports, the deadline, and (for a timeout
/// that progress restarts) the most the call may take in all.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// What a timeout error reports: the caller's whole timeout, not what was left of it for
    /// one attempt. With `progress_resets_timeout`, an idle timeout each progress notification
    /// of the call restarts ([`super::progress_timeout`]).
    pub(crate) timeout: Duration,
    /// When the operation must have ended, whatever it waits for.
    pub(crate) deadline: Instant,
    /// The most the call may take in all, when its timeout restarts on progress (the deadline
    /// is then this from its arrival).
    pub(crate) progress_resets_timeout: Option<Duration>,
}

impl Bounds {
    /// Bounds of an operation whose timeout does not restart on progress.
    pub(crate) fn fixed(timeout: Duration, deadline: Instant) -> Bounds {
        Bounds {
            timeout,
            deadline,
            progress_resets_timeout: None,
        }
    }
}

/// Carries out an unblocked plan for the caller `ticket` names; `sent` counts the attempts the
/// breakers let through as they go, so that a caller whose future is dropped mid-call (the
/// client went away) still knows whether anything reached the server.
/// A call that creates an MCP task tells `created` the server's task id as soon as it exists.
pub(crate) async fn execute(
    plan: &CallPlan,
    retry: &RetryPolicy,
    ticket: &CallTicket,
    sent: &AtomicU32,
    created: &(dyn Fn(&str) + Send + Sync),
) -> CallOutcome {
    let slot = &plan.resolved.slot;
    let tool = &plan.resolved.tool;
    // A task's handle is no result to serve again; a task's result is the task's alone.
    let plain = plan.task == TaskMode::Plain;
    let cache_key = (plain && slot.guards.cache.is_some() && tool.hints.cacheable()).then(|| {
        CacheKey::new(
            ticket.caller.as_deref().unwrap_or(""),
            &slot.upstream.info().name,
            tool.name(),
            &Value::Object(plan.arguments.clone()),
        )
    });
    let operation = match &plan.task {
        TaskMode::Plain => Operation::CallTool {
            tool: tool.name(),
            arguments: &plan.arguments,
        },
        TaskMode::Follow(task) => Operation::Task {
            request: TaskRequest::Create {
                tool: tool.name(),
                arguments: &plan.arguments,
                task,
            },
        },
        TaskMode::Await => Operation::RunAsTask {
            tool: tool.name(),
            arguments: &plan.arguments,
            created,
        },
    };
    let bounds = Bounds {
        timeout: plan.timeout,
        deadline: plan.deadline,
        progress_resets_timeout: plan.progress_resets_timeout,
    };
    let mut outcome = protected_counting(
        slot,
        &operation,
        tool.hints.safe_to_resend(),
        bounds,
        retry,
        ticket,
        sent,
    )
    .await;
    if matches!(plan.task, TaskMode::Follow(_)) {
        let server = &slot.upstream.info().name;
        outcome.result = outcome.result.and_then(|answer| {
            super::tasks::announce_created(answer, server, tool.name(), created)
        });
    }

    let Some(cache) = &slot.guards.cache else {
        return outcome;
    };
    let Some(key) = cache_key else {
        return outcome;
    };
    match &outcome.result {
        Ok(result) => cache
            .lock()
            .unwrap()
            .put(key, result.clone(), Instant::now()),
        Err(error) if server_is_failing(error) => {
            let cached = cache
                .lock()
                .unwrap()
                .get_fresh_with_age(&key, Instant::now());
            if let Some((result, age)) = cached {
                tracing::warn!(%error, age_ms = age.as_millis() as u64, "serving a cached result");
                outcome.degraded = Some(Degraded {
                    reason: error.wire_message(),
                    age,
                });
                outcome.result = Ok(result);
            }
        }
        Err(_) => {}
    }
    outcome
}

/// Runs one operation under the slot's bulkhead, breakers and retries, within its `bounds`,
/// for the caller `ticket` names.
pub(crate) async fn protected(
    slot: &Slot,
    operation: &Operation<'_>,
    safe_to_resend: bool,
    bounds: Bounds,
    retry: &RetryPolicy,
    ticket: &CallTicket,
) -> CallOutcome {
    let sent = AtomicU32::new(0);
    protected_counting(
        slot,
        operation,
        safe_to_resend,
        bounds,
        retry,
        ticket,
        &sent,
    )
    .await
}

/// [`protected`], counting the attempts sent in the caller's `sent`.
async fn protected_counting(
    slot: &Slot,
    operation: &Operation<'_>,
    safe_to_resend: bool,
    bounds: Bounds,
    retry: &RetryPolicy,
    ticket: &CallTicket,
    sent: &AtomicU32,
) -> CallOutcome {
    let Bounds {
        timeout,
        deadline,
        progress_resets_timeout,
    } = bounds;
    let server = &slot.upstream.info().name;
    let timed_out = || Error::timeout(server, operation.label(), timeout.as_millis() as u64);
    // One concurrency slot covers the call and its retries; waiting for it counts against the
    // deadline like everything else.
    // A call whose timeout restarts on progress has made none while it waits for a slot.
    let admit_by = match progress_resets_timeout {
        Some(_) => deadline.min(Instant::now() + timeout),
        None => deadline,
    };
    let _permit = match tokio::time::timeout_at(admit_by, slot.guards.bulkhead.acquire()).await {
        Ok(Ok(permit)) => permit,
        Ok(Err(busy)) => {
            return not_sent(
                ErrorData::Busy {
                    server: server.clone(),
                    in_flight: busy.in_flight,
                    queued: busy.queued,
                    retry_after_ms: busy.retry_after_hint.as_millis() as u64,
                }
                .into(),
            );
        }
        Err(_) => return not_sent(timed_out()),
    };
    // Why the last transient failure happened (a std mutex: the classifier is a `Fn`, and the
    // call's future must stay `Send`).
    let last_transient = std::sync::Mutex::new(None::<&'static str>);
    // Attempts the breakers let through (a refused one sends nothing), counted outside the
    // retry loop (in the caller's `sent`) so that they are known even when the outer bound
    // below drops it, or the caller drops this whole future.
    let retries = run_with_retries(
        retry,
        safe_to_resend,
        |error: &Error| {
            let class = classify(error);
            if matches!(class, FailureClass::Transient { .. }) {
                *last_transient.lock().unwrap() = Some(error.kind());
            }
            class
        },
        |_attempt| attempt(slot, operation, bounds, ticket, sent),
        random_jitter,
    );
    // A little slack so an attempt's own timeout fires first and is recorded (breaker, stats,
    // cancellation) before this outer bound would drop it.
    let slack = Duration::from_millis(250);
    let (result, attempts) = match tokio::time::timeout_at(deadline + slack, retries).await {
        Ok((result, _)) => (result, sent.load(Ordering::Relaxed)),
        // Out of time between attempts (a backoff sleep), or an attempt that outlived its own
        // deadline by the slack (a starved task): the caller's time is up. A dropped attempt
        // has told the breakers itself (`InFlight`).
        Err(_) => (
            Err(out_of_time(
                server,
                operation.label(),
                timeout,
                progress_resets_timeout,
            )),
            sent.load(Ordering::Relaxed),
        ),
    };
    let retry_reason = if attempts > 1 {
        last_transient.into_inner().unwrap().map(str::to_owned)
    } else {
        None
    };
    CallOutcome {
        result,
        attempts,
        retry_reason,
        degraded: None,
    }
}

/// The timeout error of a call whose deadline has passed: the caller's timeout, or with a
/// timeout that progress restarts, the most the call could take in all (the deadline's).
fn out_of_time(
    server: &str,
    label: &str,
    timeout: Duration,
    progress_resets_timeout: Option<Duration>,
) -> Error {
    let bound = progress_resets_timeout.unwrap_or(timeout);
    Error::timeout(server, label, bound.as_millis() as u64)
}

fn not_sent(error: Error) -> CallOutcome {
    CallOutcome {
        result: Err(error),
        attempts: 0,
        retry_reason: None,
        degraded: None,
    }
}

/// One attempt: ask the breakers, send within what is left of the deadline, and record the
/// outcome for the breakers and `health`; `sent` counts it once the breakers let it through.
async fn attempt(
    slot: &Slot,
    operation: &Operation<'_>,
    bounds: Bounds,
    ticket: &CallTicket,
    sent: &AtomicU32,
) -> Result<Value, Error> {
    let Bounds {
        timeout,
        deadline,
        progress_resets_timeout,
    } = bounds;
    let server = &slot.upstream.info().name;
    let label = operation.label();
    let timed_out = || Error::timeout(server, label, timeout.as_millis() as u64);
    if Instant::now() >= deadline {
        return Err(out_of_time(server, label, timeout, progress_resets_timeout));
    }
    let admissions = slot
        .guards
        .admit(label, Instant::now())
        .map_err(|refused| {
            let last_error = slot
                .guards
                .stats
                .lock()
                .unwrap()
                .last_error_of(ticket.caller.as_deref());
            circuit_open(server, label, refused, last_error)
        })?;
    sent.fetch_add(1, Ordering::Relaxed);
    let started = Instant::now();
    let mut in_flight = InFlight {
        slot,
        label,
        admissions: Some(admissions),
        deadline,
        started,
        timeout,
        caller: ticket.caller.clone(),
    };
    let call = async {
        match operation {
            Operation::CallTool { tool, arguments } => {
                slot.upstream
                    .call_tool(tool, arguments, deadline, ticket)
                    .await
            }
            Operation::ReadResource { uri } => {
                slot.upstream.read_resource(uri, deadline, ticket).await
            }
            Operation::GetPrompt { name, arguments } => {
                slot.upstream
                    .get_prompt(name, arguments, deadline, ticket)
                    .await
            }
            Operation::ListResources { kind } => slot
                .upstream
                .list_resources(*kind, deadline, ticket)
                .await
                .map(Value::Array),
            Operation::ListPrompts => slot
                .upstream
                .list_prompts(deadline, ticket)
                .await
                .map(Value::Array),
            Operation::Pass { method, params } => {
                slot.upstream
                    .pass_request(method, params, deadline, ticket)
                    .await
            }
            Operation::Task { request } => {
                slot.upstream.task_request(*request, deadline, ticket).await
            }
            Operation::RunAsTask {
                tool,
                arguments,
                created,
            } => {
                super::tasks::run::run_to_completion(
                    &slot.upstream,
                    tool,
                    arguments,
                    deadline,
                    ticket,
                    *created,
                )
                .await
            }
        }
    };
    // Report the caller's timeout, not what was left of it for this attempt; with a timeout
    // that progress restarts, the upstream's own bound is the most the call may take in all.
    let call = async {
        call.await
            .map_err(|error| match (error.data(), progress_resets_timeout) {
                (Some(ErrorData::Timeout { .. }), None) => timed_out(),
                (Some(ErrorData::Timeout { .. }), Some(max_total)) => {
                    Error::timeout(server, label, max_total.as_millis() as u64)
                }
                _ => error,
            })
    };
    // The attempt ends at the deadline whatever the upstream does (dropping the request cancels
    // it upstream), so its failure is always recorded before the outer bound could drop it.
    let result = match progress_resets_timeout {
        None => match tokio::time::timeout_at(deadline, call).await {
            Ok(result) => result,
            Err(_) => Err(timed_out()),
        },
        Some(max_total) => {
            let beats = ticket.relay.as_ref().map(|relay| relay.progress_beats());
            // Boxed: this rarer bound's state would double the size of every call's future
            // (each level above moves it whole as it is awaited).
            match Box::pin(progress_timeout::bounded(call, timeout, deadline, beats)).await {
                Bounded::Done(result) => result,
                Bounded::Idle => Err(timed_out()),
                Bounded::Deadline => {
                    Err(Error::timeout(server, label, max_total.as_millis() as u64))
                }
            }
        }
    };
    let now = Instant::now();
    let admissions = in_flight
        .admissions
        .take()
        .expect("the admissions are taken once, here");
    match result.as_ref().err().and_then(Error::data) {
        // Not connected, or refused for authorization: nothing ran, so the breakers learn
        // nothing.
        Some(ErrorData::ServerUnavailable { .. } | ErrorData::AuthRequired { .. }) => {
            slot.guards.abandon(label, admissions)
        }
        Some(ErrorData::ServerExited { .. } | ErrorData::Timeout { .. }) => {
            slot.guards.record(label, admissions, Outcome::Failure, now);
            let message = result.as_ref().err().map(Error::wire_message);
            slot.guards.stats.lock().unwrap().record(
                started.elapsed(),
                message,
                ticket.caller.clone(),
            );
        }
        // The server answered (a result, an `isError` result or its own JSON-RPC error): it is
        // alive, whatever the tool thought of the arguments.
        _ => {
            slot.guards.record(label, admissions, Outcome::Success, now);
            slot.guards
                .stats
                .lock()
                .unwrap()
                .record(started.elapsed(), None, None);
        }
    }
    result
}

/// An attempt between its admission and the recording of its outcome. If it is dropped in
/// between — the caller went away, or the call's outer bound gave up on a starved task — the
/// breakers still learn of it: as a timeout once its deadline has passed (it was sent and did
/// not answer in time), else as abandoned (the caller left; the server is not to blame).
struct InFlight<'a> {
    slot: &'a Slot,
    label: &'a str,
    admissions: Option<Admissions>,
    deadline: Instant,
    started: Instant,
    timeout: Duration,
    /// Whose attempt it is, for the statistics' last error.
    caller: Option<Arc<str>>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let Some(admissions) = self.admissions.take() else {
            return;
        };
        let now = Instant::now();
        if now < self.deadline {
            self.slot.guards.abandon(self.label, admissions);
            return;
        }
        self.slot
            .guards
            .record(self.label, admissions, Outcome::Failure, now);
        let server = &self.slot.upstream.info().name;
        let message =
            Error::timeout(server, self.label, self.timeout.as_millis() as u64).wire_message();
        self.slot.guards.stats.lock().unwrap().record(
            self.started.elapsed(),
            Some(message),
            self.caller.take(),
        );
    }
}

/// How the retry loop treats a failed attempt.
fn classify(error: &Error) -> FailureClass {
    match error.data() {
        // Not connected (yet): the request never left.
        Some(ErrorData::ServerUnavailable { state, .. })
            if matches!(state.as_str(), "connecting" | "restarting") =>
        {
            FailureClass::Transient {
                may_have_reached_server: false,
            }
        }
        // Sent, and then the server went away or went quiet: it may have acted on it.
        Some(ErrorData::ServerExited { .. } | ErrorData::Timeout { .. }) => {
            FailureClass::Transient {
                may_have_reached_server: true,
            }
        }
        _ => FailureClass::Terminal,
    }
}

/// Whether an error says the server is failing (as opposed to the call being wrong), which is
/// when a cached result of a read-only tool may stand in.
fn server_is_failing(error: &Error) -> bool {
    matches!(
        error.data(),
        Some(
            ErrorData::ServerExited { .. }
                | ErrorData::Timeout { .. }
                | ErrorData::CircuitOpen { .. }
                | ErrorData::ServerUnavailable { .. }
                | ErrorData::Busy { .. }
        )
    )
}

/// When the outcome is recorded, for statistics.
pub(crate) fn now() -> SystemTime {
    SystemTime::now()
}
