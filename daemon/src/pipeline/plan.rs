//! The second stage: everything decided about a call before anything is sent, as one value.
//!
//! [`plan`] applies the guards (call depth, and whatever the caller's session refuses: a loop,
//! a spent budget), checks policy (the token's scope, the config's allow/deny lists,
//! confirmation of destructive tools), validates the arguments against the tool's schema, and —
//! for a dry-run — asks the breakers and the bulkhead whether they would admit the call. It has no side effects: the
//! [`CallPlan`] it returns is what a dry-run reports, and what the execute stage carries out when
//! the plan is not blocked.

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};
use tokio::time::Instant;
use tool_cli_protocol::ErrorData;
use tool_cli_protocol::orchestration::{
    AlternativeInfo, BlockedReason, DryRunResult, SelectionInfo, ToolHintsInfo,
};

use super::guards::Refused;
use super::resolve::Resolved;
use super::routing::Selection;
use crate::catalog::TaskSupport;
use crate::error::Error;
use crate::policy::{Denial, check_call};
use crate::resilience::breaker::Refusal;

/// A call, fully decided.
pub(crate) struct CallPlan {
    /// The server, tool and how they were chosen.
    pub(crate) resolved: Resolved,
    /// The arguments, validated.
    pub(crate) arguments: Map<String, Value>,
    /// The call's timeout (the caller's, else the server's).
    pub(crate) timeout: Duration,
    /// When the call must be answered by: arrival plus the timeout (with
    /// `resetTimeoutOnProgress`, arrival plus the most it may take in all).
    pub(crate) deadline: Instant,
    /// With `resetTimeoutOnProgress`, the most the call may take in all: `timeout` is then an
    /// idle timeout, restarted by each progress notification of the call, within `deadline`.
    pub(crate) progress_resets_timeout: Option<Duration>,
    /// Whether it runs as an MCP task, and for whom.
    pub(crate) task: TaskMode,
    /// Why the call may not go ahead, when it may not.
    pub(crate) blocked: Option<Error>,
}

/// How a call runs with respect to MCP tasks (`pipeline/tasks/`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TaskMode {
    /// A plain `tools/call`.
    Plain,
    /// As a task the caller follows itself: this `task` member is sent, and the answer is the
    /// server's `CreateTaskResult`.
    Follow(Value),
    /// As a task the daemon waits for (the tool runs only as one): the answer is its result.
    Await,
}

/// What the plan stage needs to know besides the resolved call.
pub(crate) struct PlanInput<'a> {
    /// The caller's scope.
    pub(crate) grant: &'a crate::auth::Grant,
    /// The call's arguments.
    pub(crate) arguments: Map<String, Value>,
    /// The caller's timeout, if any.
    pub(crate) timeout: Option<Duration>,
    /// When the request arrived.
    pub(crate) arrived: Instant,
    /// Whether the caller confirmed a destructive tool.
    pub(crate) confirm: bool,
    /// `resetTimeoutOnProgress`: the most the call may take in all.
    pub(crate) progress_resets_timeout: Option<Duration>,
    /// Whether this is a dry-run (which also asks the breakers and bulkhead).
    pub(crate) dry_run: bool,
    /// A guard's refusal (call depth, the session's loop detector or budget), decided by the
    /// caller before planning.
    pub(crate) guard: Option<Error>,
    /// The `task` member the caller asked to send (run as a task it follows itself).
    pub(crate) task: Option<Value>,
}

/// When a call that arrived at `arrived` must be answered by on a server whose call timeout is
/// `server_timeout`: arrival plus the caller's timeout, else the server's (with
/// `resetTimeoutOnProgress`, plus the most it may take in all).
pub(crate) fn deadline(
    arrived: Instant,
    timeout: Option<Duration>,
    progress_resets_timeout: Option<Duration>,
    server_timeout: Duration,
) -> Instant {
    arrived + progress_resets_timeout.unwrap_or(timeout.unwrap_or(server_timeout))
}

/// Decides a call.
pub(crate) fn plan(resolved: Resolved, input: PlanInput<'_>) -> CallPlan {
    let info = resolved.slot.upstream.info();
    let timeout = input.timeout.unwrap_or(info.settings.call_timeout);
    let deadline = deadline(
        input.arrived,
        input.timeout,
        input.progress_resets_timeout,
        info.settings.call_timeout,
    );
    let blocked = check(&resolved, &input).err();
    let task = match (input.task, resolved.tool.task_support) {
        (Some(task), _) => TaskMode::Follow(task),
        (None, TaskSupport::Required) => TaskMode::Await,
        (None, _) => TaskMode::Plain,
    };
    CallPlan {
        resolved,
        arguments: input.arguments,
        timeout,
        deadline,
        progress_resets_timeout: input.progress_resets_timeout,
        task,
        blocked,
    }
}

/// The checks, in order; the first refusal wins.
fn check(resolved: &Resolved, input: &PlanInput<'_>) -> Result<(), Error> {
    let info = resolved.slot.upstream.info();
    let tool = &resolved.tool;
    // Guards first: a loop of invalid calls must be stopped before validation fails it again.
    if let Some(refusal) = &input.guard {
        return Err(clone_error(refusal));
    }
    // Policy. A dry-run may explain a destructive call without confirmation: it then reports
    // that confirmation would be needed.
    check_call(
        &input.grant.scope,
        &info.settings.policy,
        &info.name,
        tool.name(),
        &tool.hints,
        input.confirm,
        SystemTime::now(),
    )
    .map_err(|denial: Denial| Error::from(denial))?;
    // Pinning: a tool that changed (or appeared) since its server was pinned is not run until a
    // person approves it. After policy, so a caller that may not call it learns nothing more.
    if let Some(refusal) = super::resolve::pin_refusal(&resolved.slot, tool) {
        return Err(refusal);
    }
    // A task asked of a tool that does not run as one: say so rather than let the server
    // answer with a riddle. (A tool that runs only as a task is run as one: `TaskMode::Await`.)
    if input.task.is_some() && !tool.task_support.takes_tasks() {
        return Err(Error::invalid_params(
            "callTool",
            format!(
                "tool \"{}\" of server \"{}\" does not run as an MCP task (its \
                 execution.taskSupport is \"{}\"); call it without \"task\"; nothing was sent",
                tool.name(),
                info.name,
                tool.task_support.as_str()
            ),
        ));
    }
    // Validation.
    let validator = tool.validator().map_err(|invalid| {
        Error::from(ErrorData::InvalidSchema {
            server: info.name.clone(),
            tool: tool.name().to_owned(),
            message: invalid.to_string(),
        })
    })?;
    let violations = validator.check(&input.arguments);
    if !violations.is_empty() {
        return Err(Error::invalid_arguments(
            &info.name,
            tool.name(),
            violations,
        ));
    }
    // Admission: only asked for a dry-run; a real call takes its admissions in the execute stage.
    if input.dry_run {
        let guards = &resolved.slot.guards;
        let now = Instant::now();
        if let Some(refused) = guards.would_refuse(tool.name(), now) {
            return Err(circuit_open(&info.name, tool.name(), refused, None));
        }
        let (in_flight, queued) = guards.bulkhead.snapshot();
        if in_flight >= guards.bulkhead.max_concurrent() && queued >= guards.bulkhead.max_queued() {
            return Err(ErrorData::Busy {
                server: info.name.clone(),
                in_flight,
                queued,
                retry_after_ms: guards.bulkhead.hold_estimate().as_millis() as u64,
            }
            .into());
        }
    }
    Ok(())
}

/// A copy of a guard's refusal (errors are not `Clone`: internal ones carry log-only detail).
pub(crate) fn clone_error(error: &Error) -> Error {
    match error {
        Error::Reported(data) => Error::Reported(data.clone()),
        other => Error::internal(other.to_string()),
    }
}

/// The error for a breaker refusal of `tool` on `server`.
pub(crate) fn circuit_open(
    server: &str,
    tool: &str,
    refused: Refused,
    last_error: Option<String>,
) -> Error {
    let (refusal, which) = match refused {
        Refused::Server(refusal) => (refusal, None),
        Refused::Tool(refusal) => (refusal, Some(tool)),
    };
    let retry_after_ms = match refusal {
        Refusal::Open { retry_after, .. } => retry_after.as_millis() as u64,
        // One probe is running; it decides within its timeout.
        Refusal::ProbeInFlight => 1000,
    };
    let last_error = match which {
        Some(tool) => Some(format!(
            "calls of \"{tool}\" keep failing the server{}; other tools still work",
            last_error.map(|e| format!(" ({e})")).unwrap_or_default()
        )),
        None => last_error,
    };
    ErrorData::CircuitOpen {
        server: server.to_owned(),
        retry_after_ms,
        last_error,
    }
    .into()
}

impl CallPlan {
    /// The dry-run answer: what would be done, and why it would be refused if it would.
    pub(crate) fn dry_run_result(&self) -> DryRunResult {
        let tool = &self.resolved.tool;
        DryRunResult {
            executed: false,
            server: self.resolved.slot.upstream.info().name.clone(),
            tool: tool.name().to_owned(),
            arguments: self.arguments.clone(),
            selection: selection_info(&self.resolved.selection),
            timeout_ms: self.timeout.as_millis() as u64,
            hints: ToolHintsInfo {
                read_only: tool.hints.read_only,
                destructive: tool.hints.destructive,
                idempotent: tool.hints.idempotent,
            },
            would_block_because: self.blocked.as_ref().map(|error| BlockedReason {
                code: error.code(),
                message: error.wire_message(),
                data: error.to_data(),
            }),
        }
    }
}

/// The wire form of a selection.
pub(crate) fn selection_info(selection: &Selection) -> SelectionInfo {
    SelectionInfo {
        rule: selection.rule.as_str().to_owned(),
        server: selection.server.clone(),
        alternatives: selection
            .alternatives
            .iter()
            .map(|rejected| AlternativeInfo {
                server: rejected.server.clone(),
                rejected_by: rejected.rejected_by.as_str().to_owned(),
            })
            .collect(),
    }
}
