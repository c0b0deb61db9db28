//! Tasks the gateway runs itself, for a 2026-07-28 host that declared the tasks extension and
//! calls a tool of a 2026-07-28 server. Such a server's tools declare no task support; the
//! server decides per call, and the pool follows a task it starts to the end
//! (`pool/connection/tasks.rs`). So the gateway starts the call in the background (one call
//! through the pipeline, as any other) and answers the host a task handle at once: `tasks/get`
//! reads where the call stands and, once it ended, its result or error; `tasks/cancel` drops
//! the call, which cancels the server's own task with its `tasks/cancel` (the pool does so
//! for any call that ends without the task's result).
//!
//! The same runs serve a 2025-11-25 session's `tools/call` with `task` on a 2026 server's tool
//! (`session_runs.rs`, which words them as that revision's tasks).
//!
//! A run's id is `server:run-N`, in the daemon's `server:id` form, owned by the token that
//! started it and, for a session's, by that session; anyone else asking for it is answered as
//! for an id never issued (by the daemon's task registry, `pipeline/tasks/`). At most [`MAX_RUNS`] are kept: the oldest that
//! ended is forgotten for a new one, and when all still work a new one is refused as busy
//! (a working run, maybe another token's, is never stopped to make room); one token may have
//! at most [`MAX_WORKING_PER_TOKEN`] working.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::messages::{RpcError, excerpt};
use crate::pipeline::CallContext;
use crate::services::Services;

/// Most runs remembered across every token.
pub(super) const MAX_RUNS: usize = 1024;

/// Most runs one token may have working at once, so one host cannot take every slot.
pub(super) const MAX_WORKING_PER_TOKEN: usize = 256;

/// The refusal of a new run for want of room: `why`, and what to do.
fn busy(why: String) -> RpcError {
    RpcError {
        code: i64::from(tool_cli_protocol::code::BUSY),
        message: format!(
            "{why}; cancel one (tasks/cancel) or wait for one to end, then call again"
        ),
        data: None,
    }
}

/// How often a host is told to poll a run (ms).
const POLL_INTERVAL_MS: u64 = 250;

/// Where a run stands.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum RunState {
    /// The call is in flight.
    Working,
    /// The call answered this `CallToolResult` (a tool error included).
    Completed(Value),
    /// The call failed with this JSON-RPC error object.
    Failed(Value),
    /// The host cancelled it.
    Cancelled,
}

impl RunState {
    fn status(&self) -> &'static str {
        match self {
            RunState::Working => "working",
            RunState::Completed(_) => "completed",
            RunState::Failed(_) => "failed",
            RunState::Cancelled => "cancelled",
        }
    }
}

/// One run: its owner (a token, and the session of a 2025 host), its state and when it
/// changed, the signal of its end, and how to stop it.
struct Run {
    owner: String,
    session: Option<String>,
    created_at: String,
    progress: Arc<Mutex<(RunState, String)>>,
    ended: Arc<tokio::sync::watch::Sender<bool>>,
    abort: tokio::task::AbortHandle,
}

impl Run {
    /// Whether `context`'s caller started this run: its token, and its session or none.
    fn is_of(&self, context: &CallContext) -> bool {
        self.owner == context.grant.token_id && self.session == context.mcp_session
    }
}

/// A run as a caller reads it: its state, when it was created and last changed.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RunView {
    pub(super) state: RunState,
    pub(super) created_at: String,
    pub(super) updated_at: String,
}

/// Every run, by id, and the news of runs that ended.
pub(super) struct TaskRuns {
    inner: Mutex<Inner>,
    ended: tokio::sync::broadcast::Sender<RunEnded>,
}

impl Default for TaskRuns {
    fn default() -> TaskRuns {
        TaskRuns {
            inner: Mutex::default(),
            // A listener that lags re-reads with tasks/get; nothing waits on this.
            ended: tokio::sync::broadcast::channel(64).0,
        }
    }
}

/// A run that ended, told to the standalone stream of the session that started it
/// (`notices.rs`, as a 2025 `notifications/tasks/status`).
#[derive(Debug, Clone)]
pub(super) struct RunEnded {
    pub(super) token_id: String,
    pub(super) session: Option<String>,
    pub(super) task_id: String,
    pub(super) view: RunView,
}

#[derive(Default)]
struct Inner {
    runs: HashMap<String, Run>,
    order: VecDeque<String>,
    next: u64,
}

/// Now, as the extension's timestamps are written (ISO 8601, UTC).
fn now() -> String {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as i64);
    tool_cli_trace_report::time::format_millis(millis)
}

/// The oldest of `runs` (id, still working), oldest first, that ended: the one to forget for
/// room. `None` when every run still works.
fn oldest_ended<'a>(mut runs: impl Iterator<Item = (&'a str, bool)>) -> Option<String> {
    runs.find(|(_, working)| !working)
        .map(|(task_id, _)| task_id.to_owned())
}

/// A run's `tasks/get` answer (the extension's `DetailedTask`), pure.
pub(super) fn detailed(task_id: &str, created_at: &str, state: &RunState, updated: &str) -> Value {
    let mut task = json!({
        "resultType": "complete",
        "taskId": task_id,
        "status": state.status(),
        "createdAt": created_at,
        "lastUpdatedAt": updated,
        "ttlMs": null,
    });
    match state {
        RunState::Working => task["pollIntervalMs"] = json!(POLL_INTERVAL_MS),
        RunState::Completed(result) => task["result"] = result.clone(),
        RunState::Failed(error) => task["error"] = error.clone(),
        RunState::Cancelled => {}
    }
    task
}

impl TaskRuns {
    /// Starts `tool` of `server` for the token of `context`; the extension's handle.
    pub(super) fn start(
        &self,
        services: &Arc<Services>,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        context: &CallContext,
    ) -> Result<Value, RpcError> {
        let created_at = now();
        let progress = Arc::new(Mutex::new((RunState::Working, created_at.clone())));
        let ended = Arc::new(tokio::sync::watch::channel(false).0);
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let owner = &context.grant.token_id;
        let working_for_owner = inner
            .runs
            .values()
            .filter(|run| &run.owner == owner)
            .filter(|run| {
                let progress = run.progress.lock().unwrap_or_else(|e| e.into_inner());
                progress.0 == RunState::Working
            })
            .count();
        if working_for_owner >= MAX_WORKING_PER_TOKEN {
            return Err(busy(format!(
                "this token already has {MAX_WORKING_PER_TOKEN} tasks working"
            )));
        }
        // Room is made by forgetting the oldest run that ended, never by stopping one that
        // works (it may be another token's).
        if inner.runs.len() >= MAX_RUNS {
            let ended = inner.order.iter().map(|task_id| {
                let working = inner.runs.get(task_id).is_some_and(|run| {
                    let progress = run.progress.lock().unwrap_or_else(|e| e.into_inner());
                    progress.0 == RunState::Working
                });
                (task_id.as_str(), working)
            });
            let Some(oldest) = oldest_ended(ended) else {
                return Err(busy(format!(
                    "the gateway already runs {MAX_RUNS} tasks, all still working"
                )));
            };
            inner.runs.remove(&oldest);
            inner.order.retain(|task_id| *task_id != oldest);
        }
        inner.next += 1;
        let task_id = format!("{server}:run-{}", inner.next);
        let work = {
            let services = Arc::clone(services);
            let (server, tool) = (server.to_owned(), tool.to_owned());
            let context = context.clone();
            let progress = Arc::clone(&progress);
            let ended = Arc::clone(&ended);
            let (news, owner, task_id, created_at) = (
                self.ended.clone(),
                (context.grant.token_id.clone(), context.mcp_session.clone()),
                task_id.clone(),
                created_at.clone(),
            );
            async move {
                let answer =
                    super::pass_through::run(&services, &server, &tool, arguments, &context).await;
                let state = match answer {
                    Ok(result) => RunState::Completed(result),
                    Err(error) => {
                        RunState::Failed(super::resources::daemon_error(&services, error).to_json())
                    }
                };
                let mut progress = progress.lock().unwrap_or_else(|e| e.into_inner());
                // A cancelled run stays cancelled, whatever the call answered meanwhile.
                if progress.0 == RunState::Working {
                    *progress = (state, now());
                    let view = RunView {
                        state: progress.0.clone(),
                        created_at,
                        updated_at: progress.1.clone(),
                    };
                    let _ = news.send(RunEnded {
                        token_id: owner.0,
                        session: owner.1,
                        task_id,
                        view,
                    });
                }
                ended.send_replace(true);
            }
        };
        let abort = tokio::spawn(work).abort_handle();
        inner.runs.insert(
            task_id.clone(),
            Run {
                owner: context.grant.token_id.clone(),
                session: context.mcp_session.clone(),
                created_at: created_at.clone(),
                progress,
                ended,
                abort,
            },
        );
        inner.order.push_back(task_id.clone());
        let mut handle = detailed(&task_id, &created_at, &RunState::Working, &created_at);
        handle["resultType"] = json!("task");
        Ok(handle)
    }

    /// Whether `task_id` is a run `context`'s caller started (its token, and its session or
    /// none: a stateless host's runs and a session's are not each other's).
    pub(super) fn owns(&self, task_id: &str, context: &CallContext) -> bool {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner
            .runs
            .get(task_id)
            .is_some_and(|run| run.is_of(context))
    }

    /// The news of runs that end from now on.
    pub(super) fn endings(&self) -> tokio::sync::broadcast::Receiver<RunEnded> {
        self.ended.subscribe()
    }

    /// Where run `task_id` stands now.
    pub(super) fn view(&self, task_id: &str) -> Option<RunView> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let run = inner.runs.get(task_id)?;
        let progress = run.progress.lock().unwrap_or_else(|e| e.into_inner());
        Some(RunView {
            state: progress.0.clone(),
            created_at: run.created_at.clone(),
            updated_at: progress.1.clone(),
        })
    }

    /// Where run `task_id` stands once it ended (at once if it has); `None` for a run not
    /// known. The wait lasts as long as the caller's own request: dropped with it.
    pub(super) async fn ended(&self, task_id: &str) -> Option<RunView> {
        let mut ended = {
            let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            inner.runs.get(task_id)?.ended.subscribe()
        };
        // An error is the run forgotten meanwhile (it had ended): read below as unknown.
        let _ = ended.wait_for(|ended| *ended).await;
        self.view(task_id)
    }

    /// `tasks/get` of a run the token owns (see [`TaskRuns::owns`]).
    pub(super) fn get(&self, task_id: &str) -> Option<Value> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let run = inner.runs.get(task_id)?;
        let progress = run.progress.lock().unwrap_or_else(|e| e.into_inner());
        Some(detailed(task_id, &run.created_at, &progress.0, &progress.1))
    }

    /// `tasks/cancel` of a run the token owns: stops its call (which cancels the server's
    /// task); a run that ended already is refused, as a server refuses a terminal task.
    pub(super) fn cancel(&self, task_id: &str) -> Result<Value, RpcError> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let run = inner
            .runs
            .get(task_id)
            .ok_or_else(|| RpcError::invalid_params(format!("no task {:?}", excerpt(task_id))))?;
        let mut progress = run.progress.lock().unwrap_or_else(|e| e.into_inner());
        if progress.0 != RunState::Working {
            return Err(RpcError::invalid_params(format!(
                "task {:?} is {} already, which is terminal: it cannot be cancelled",
                excerpt(task_id),
                progress.0.status()
            )));
        }
        run.abort.abort();
        *progress = (RunState::Cancelled, now());
        run.ended.send_replace(true);
        let _ = self.ended.send(RunEnded {
            token_id: run.owner.clone(),
            session: run.session.clone(),
            task_id: task_id.to_owned(),
            view: RunView {
                state: RunState::Cancelled,
                created_at: run.created_at.clone(),
                updated_at: progress.1.clone(),
            },
        });
        Ok(json!({"resultType": "complete"}))
    }

    /// The runs `context`'s caller started (see [`TaskRuns::owns`]), oldest first, as
    /// `tasks/get` answers them (without `resultType`).
    pub(super) fn list(&self, context: &CallContext) -> Vec<Value> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner
            .order
            .iter()
            .filter_map(|task_id| {
                let run = inner.runs.get(task_id)?;
                if !run.is_of(context) {
                    return None;
                }
                let progress = run.progress.lock().unwrap_or_else(|e| e.into_inner());
                let mut task = detailed(task_id, &run.created_at, &progress.0, &progress.1);
                if let Some(members) = task.as_object_mut() {
                    members.remove("resultType");
                }
                Some(task)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(task: Value) -> rmcp::model::GetTaskResult {
        serde_json::from_value(task.clone()).unwrap_or_else(|e| panic!("{e}: {task}"))
    }

    #[test]
    fn every_state_of_a_run_reads_as_rmcps_detailed_task() {
        use rmcp::model::{TaskPayload, TaskStatus};
        let at = "2026-11-28T19:00:00.000Z";
        let working = read(detailed("m:run-1", at, &RunState::Working, at));
        assert_eq!(working.task.payload, TaskPayload::Working);
        assert_eq!(working.task.task.poll_interval_ms, Some(POLL_INTERVAL_MS));
        let result = json!({"content": [{"type": "text", "text": "3"}]});
        let done = read(detailed("m:run-1", at, &RunState::Completed(result), at));
        assert_eq!(done.task.status(), TaskStatus::Completed);
        let error = json!({"code": -32001, "message": "timed out"});
        let failed = read(detailed("m:run-1", at, &RunState::Failed(error), at));
        assert_eq!(failed.task.status(), TaskStatus::Failed);
        let cancelled = read(detailed("m:run-1", at, &RunState::Cancelled, at));
        assert_eq!(cancelled.task.payload, TaskPayload::Cancelled);
        // The handle a call answers reads as the extension's CreateTaskResult.
        let mut handle = detailed("m:run-1", at, &RunState::Working, at);
        handle["resultType"] = json!("task");
        let answer: rmcp::model::ServerResult = serde_json::from_value(handle).unwrap();
        assert!(matches!(
            answer,
            rmcp::model::ServerResult::CreateTaskResult(_)
        ));
    }

    #[test]
    fn room_is_made_from_the_oldest_run_that_ended_never_a_working_one() {
        let runs = [("s:run-1", true), ("s:run-2", false), ("s:run-3", false)];
        assert_eq!(oldest_ended(runs.into_iter()), Some("s:run-2".to_owned()));
        let working = [("s:run-1", true), ("s:run-2", true)];
        assert_eq!(oldest_ended(working.into_iter()), None);
        assert_eq!(oldest_ended(std::iter::empty()), None);
    }

    #[test]
    fn timestamps_are_iso_8601() {
        let stamp = now();
        assert!(stamp.ends_with('Z') && stamp.contains('T'), "{stamp}");
    }
}
