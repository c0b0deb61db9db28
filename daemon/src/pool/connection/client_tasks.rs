//! Client-side MCP tasks (2025-11-25): a server asks the pool, as its client, to run an
//! `elicitation/create` or `sampling/createMessage` as a task (`params.task`), then polls the
//! pool with `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel`. server-everything's
//! `trigger-elicitation-request-async` and `trigger-sampling-request-async` do this, because the
//! person (or host) answering may take minutes.
//!
//! The pool declares `tasks.requests.elicitation.create` only for a server whose questions go to
//! the caller (`"elicitation": "ask"`) and `tasks.requests.sampling.createMessage` only for one
//! with `allowSampling`, and only where it can honour them: on a stdio connection in the
//! handshake era, whose transport writes the declaration into `initialize` (rmcp 3.9's
//! `ClientCapabilities` has no `tasks` member) and hands a task-augmented request over whole, its
//! method marked ([`mark_task_augmented`]), as an rmcp custom request (rmcp's typed one would
//! drop `task`). The answer is a `CreateTaskResult` at once; the question runs through the same
//! relay as any other (`server_requests.rs`); the task ends `completed` with its result, `failed`
//! with the request's error, or `cancelled` when the server cancels it, when the call that caused
//! it ends before an answer comes (its deadline passed, say), or when its `ttl` passes. Each
//! change of status is told to the server (`notifications/tasks/status`). At most
//! [`MAX_CLIENT_TASKS`] live per connection, and they die with it (the store's drop cancels
//! them).
//!
//! The wire shapes and decisions are pure functions in `client_tasks/wire.rs`, unit-tested.

// Sampling is deprecated by rmcp for the 2026 protocol (SEP-2577); 2025-11-25, where client
// tasks live, has it.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{
    ClientNotification, CreateMessageRequestParams, CustomNotification, CustomRequest,
    ElicitRequestParams, ErrorCode,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, Peer, RoleClient};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::super::server_requests::ServerRequests;
use super::super::server_requests::Withdrawal;
use crate::provider::EventRelay;

mod wire;
use wire::{ELICITATION, Status, TASK_AUGMENTED, honoured_ttl, with_related_task};
pub(crate) use wire::{capability, declare_in_initialize, mark_task_augmented};

/// How many client tasks one connection keeps at once (live or finished and not yet expired).
pub(crate) const MAX_CLIENT_TASKS: usize = 32;

/// How often the server is told to poll (it may poll less often; the status is also pushed).
const POLL_INTERVAL_MS: u64 = 1_000;

/// One client task.
struct Entry {
    status: Status,
    status_message: Option<String>,
    created: u64,
    updated: u64,
    ttl: Duration,
    expires: Instant,
    /// The request's result (`Ok`) or error, once it ends.
    outcome: Option<Result<Value, ErrorData>>,
    /// Stops its run (the question withdrawn, the sampling dropped).
    stop: CancellationToken,
}

impl Entry {
    /// The task as MCP 2025-11-25 spells it.
    fn wire(&self, id: &str) -> Value {
        let mut task = json!({
            "taskId": id,
            "status": self.status.as_str(),
            "createdAt": crate::oauth::rfc3339(self.created),
            "lastUpdatedAt": crate::oauth::rfc3339(self.updated),
            "ttl": u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX),
            "pollInterval": POLL_INTERVAL_MS,
        });
        if let Some(message) = &self.status_message {
            task["statusMessage"] = json!(message);
        }
        task
    }
}

/// What a task runs: the request, parsed.
enum Job {
    Elicitation(ElicitRequestParams),
    Sampling(CreateMessageRequestParams),
}

/// One connection's client tasks.
pub(crate) struct ClientTasks {
    server: String,
    tasks: Mutex<HashMap<String, Entry>>,
    next: AtomicU64,
    /// Bumped at every change, for `tasks/result` to wait on.
    changed: watch::Sender<u64>,
    /// Cancels every task's run when the connection (its handler, which owns the store) goes.
    _gone: DropGuard,
    gone: CancellationToken,
}

fn invalid(message: String) -> ErrorData {
    ErrorData::invalid_params(message, None)
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

impl ClientTasks {
    pub(crate) fn new(server: &str) -> ClientTasks {
        let gone = CancellationToken::new();
        ClientTasks {
            server: server.to_owned(),
            tasks: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            changed: watch::channel(0).0,
            _gone: gone.clone().drop_guard(),
            gone,
        }
    }

    /// Answers a server request rmcp did not model: a task-augmented request (marked by the
    /// transport) or `tasks/get|result|list|cancel`.
    pub(crate) async fn answer(
        self: &Arc<Self>,
        request: CustomRequest,
        context: RequestContext<RoleClient>,
        requests: &Arc<ServerRequests>,
    ) -> Result<Value, ErrorData> {
        let params = request.params.unwrap_or(Value::Null);
        if let Some(method) = request.method.strip_prefix(TASK_AUGMENTED) {
            return self.create(method, params, requests, context.peer);
        }
        let task_id = || {
            params
                .get("taskId")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    invalid(format!("{} needs params.taskId (a string)", request.method))
                })
        };
        match request.method.as_str() {
            "tasks/get" => self.get(&task_id()?),
            // Also ends when the server withdraws the request or the connection goes.
            "tasks/result" => {
                let id = task_id()?;
                tokio::select! {
                    result = self.result(&id) => result,
                () = context.ct.cancelled() => Err(ErrorData::internal_error(
                    "the request was cancelled before the task ended",
                    None,
                )),
                }
            }
            "tasks/cancel" => self.cancel(&task_id()?, &context.peer),
            "tasks/list" => Ok(self.list()),
            other => Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("the tool-cli daemon does not answer \"{other}\""),
                None,
            )),
        }
    }

    /// Drops tasks whose `ttl` has passed (a run still going is stopped).
    fn purge(tasks: &mut HashMap<String, Entry>) {
        let now = Instant::now();
        tasks.retain(|_, entry| {
            let keep = entry.expires > now;
            if !keep {
                entry.stop.cancel();
            }
            keep
        });
    }

    /// Creates a task for `method` and starts it; the `CreateTaskResult`.
    fn create(
        self: &Arc<Self>,
        method: &str,
        mut params: Value,
        requests: &Arc<ServerRequests>,
        peer: Peer<RoleClient>,
    ) -> Result<Value, ErrorData> {
        let task = params
            .as_object_mut()
            .and_then(|params| params.remove("task"))
            .unwrap_or(Value::Null);
        let job = match method {
            ELICITATION => serde_json::from_value(params).map(Job::Elicitation),
            _ => serde_json::from_value(params).map(Job::Sampling),
        }
        .map_err(|error| invalid(format!("{method} params are not valid: {error}")))?;
        let ttl = honoured_ttl(task.get("ttl"));
        let now = unix_now();
        let stop = self.gone.child_token();
        let id = format!("client-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let entry = Entry {
            status: match job {
                Job::Elicitation(_) => Status::InputRequired,
                Job::Sampling(_) => Status::Working,
            },
            status_message: None,
            created: now,
            updated: now,
            ttl,
            expires: Instant::now() + ttl,
            outcome: None,
            stop: stop.clone(),
        };
        let created = {
            let mut tasks = self.tasks.lock().unwrap();
            Self::purge(&mut tasks);
            if tasks.len() >= MAX_CLIENT_TASKS {
                return Err(ErrorData::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!(
                        "the tool-cli daemon keeps at most {MAX_CLIENT_TASKS} tasks for server \
                         \"{}\"; wait for one to end or cancel one with tasks/cancel",
                        self.server
                    ),
                    None,
                ));
            }
            let wire = entry.wire(&id);
            tasks.insert(id.clone(), entry);
            wire
        };
        // The caller the question goes to: when its call ends first, the task is cancelled.
        let caller = requests.asking_caller();
        tracing::info!(
            server = %self.server,
            task_id = %id,
            method,
            ttl_ms = ttl.as_millis() as u64,
            "client task created"
        );
        let bounds = Bounds { stop, caller, ttl };
        tokio::spawn(run(
            Arc::downgrade(self),
            id,
            job,
            Arc::clone(requests),
            peer,
            bounds,
        ));
        Ok(json!({ "task": created }))
    }

    /// Ends task `id` (unless it has already ended) and tells the server; `false` when it had.
    fn finish(
        &self,
        id: &str,
        status: Status,
        message: Option<String>,
        outcome: Option<Result<Value, ErrorData>>,
        peer: &Peer<RoleClient>,
    ) -> bool {
        let wire = {
            let mut tasks = self.tasks.lock().unwrap();
            let Some(entry) = tasks
                .get_mut(id)
                .filter(|entry| !entry.status.is_terminal())
            else {
                return false;
            };
            entry.status = status;
            entry.status_message = message;
            entry.updated = unix_now();
            entry.outcome = outcome;
            entry.stop.cancel();
            entry.wire(id)
        };
        self.changed.send_modify(|version| *version += 1);
        let said = status.as_str();
        tracing::info!(
            server = %self.server,
            task_id = %id,
            status = said,
            "client task ended; telling the server"
        );
        let peer = peer.clone();
        tokio::spawn(async move {
            let notice = CustomNotification::new("notifications/tasks/status", Some(wire));
            let _ = peer
                .send_notification(ClientNotification::CustomNotification(notice))
                .await;
        });
        true
    }

    fn unknown(&self, id: &str, tasks: &HashMap<String, Entry>) -> ErrorData {
        let mut known: Vec<&str> = tasks.keys().map(String::as_str).collect();
        known.sort_unstable();
        invalid(format!(
            "no task \"{id}\" on this connection (the tool-cli daemon holds {} for server \
             \"{}\": {})",
            known.len(),
            self.server,
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        ))
    }

    /// `tasks/get`.
    fn get(&self, id: &str) -> Result<Value, ErrorData> {
        let mut tasks = self.tasks.lock().unwrap();
        Self::purge(&mut tasks);
        match tasks.get(id) {
            Some(entry) => {
                let status = entry.status.as_str();
                tracing::debug!(server = %self.server, task_id = %id, status, "tasks/get answered");
                Ok(entry.wire(id))
            }
            None => Err(self.unknown(id, &tasks)),
        }
    }

    /// `tasks/result`: waits until the task ends, then its request's result (or error).
    async fn result(&self, id: &str) -> Result<Value, ErrorData> {
        let mut changed = self.changed.subscribe();
        loop {
            {
                let mut tasks = self.tasks.lock().unwrap();
                Self::purge(&mut tasks);
                let Some(entry) = tasks.get(id) else {
                    return Err(self.unknown(id, &tasks));
                };
                if entry.status == Status::Cancelled {
                    return Err(ErrorData::invalid_request(
                        format!(
                            "task \"{id}\" was cancelled: {}",
                            entry.status_message.as_deref().unwrap_or("no reason given")
                        ),
                        None,
                    ));
                }
                if let Some(outcome) = &entry.outcome {
                    return outcome.clone().map(|result| with_related_task(result, id));
                }
            }
            let closed = || ErrorData::internal_error("the connection closed", None);
            tokio::select! {
                moved = changed.changed() => moved.map_err(|_| closed())?,
                () = self.gone.cancelled() => return Err(closed()),
            }
        }
    }

    /// `tasks/cancel`.
    fn cancel(&self, id: &str, peer: &Peer<RoleClient>) -> Result<Value, ErrorData> {
        {
            let tasks = self.tasks.lock().unwrap();
            match tasks.get(id) {
                None => return Err(self.unknown(id, &tasks)),
                Some(entry) if entry.status.is_terminal() => {
                    return Err(invalid(format!(
                        "task \"{id}\" has already ended ({}); only a running task can be \
                         cancelled",
                        entry.status.as_str()
                    )));
                }
                Some(_) => {}
            }
        }
        self.finish(
            id,
            Status::Cancelled,
            Some("cancelled by the server".to_owned()),
            None,
            peer,
        );
        self.get(id)
    }

    /// `tasks/list`: every task held, oldest first (one page).
    fn list(&self) -> Value {
        let mut tasks = self.tasks.lock().unwrap();
        Self::purge(&mut tasks);
        let mut listed: Vec<(&String, &Entry)> = tasks.iter().collect();
        listed.sort_by_key(|(id, entry)| (entry.created, id.len(), id.as_str()));
        json!({ "tasks": listed.into_iter().map(|(id, entry)| entry.wire(id)).collect::<Vec<_>>() })
    }
}

/// What ends a task's run besides its request's answer.
struct Bounds {
    /// Cancelled by the server's `tasks/cancel`, or with the connection.
    stop: CancellationToken,
    /// The caller its question went to: its call ending first cancels the task.
    caller: Option<Arc<dyn EventRelay>>,
    ttl: Duration,
}

/// How a task ended: its status, the status message, and the request's outcome.
type Ending = (Status, Option<String>, Option<Result<Value, ErrorData>>);

fn call_ended() -> Ending {
    let why = "the call that caused it ended before an answer came (its deadline passed or it \
               was cancelled)";
    (Status::Cancelled, Some(why.to_owned()), None)
}

fn ttl_passed(ttl: Duration) -> Ending {
    let why = format!(
        "its ttl of {} ms passed before an answer came",
        ttl.as_millis()
    );
    (Status::Cancelled, Some(why), None)
}

fn answered(outcome: Result<Value, ErrorData>) -> Ending {
    match outcome {
        Ok(result) => (Status::Completed, None, Some(Ok(result))),
        Err(error) => (
            Status::Failed,
            Some(error.message.to_string()),
            Some(Err(error)),
        ),
    }
}

/// Runs task `id`'s request through the relay until it ends, its call ends, its `ttl`
/// passes, or it is stopped (cancelled by the server, or the connection gone).
async fn run(
    store: Weak<ClientTasks>,
    id: String,
    job: Job,
    requests: Arc<ServerRequests>,
    peer: Peer<RoleClient>,
    Bounds { stop, caller, ttl }: Bounds,
) {
    let caller_ended = async {
        match &caller {
            Some(caller) => caller.ended().await,
            None => std::future::pending().await,
        }
    };
    let work = async {
        match &job {
            Job::Elicitation(params) => serde_json::to_value(
                requests
                    .elicit(params, Withdrawal::with_its_task(&stop))
                    .await,
            )
            .map_err(|error| ErrorData::internal_error(error.to_string(), None)),
            Job::Sampling(params) => requests.sample(params).await.and_then(|result| {
                serde_json::to_value(result)
                    .map_err(|error| ErrorData::internal_error(error.to_string(), None))
            }),
        }
    };
    // Biased: a call that ended is why the question closed, not an answer to it.
    let ended = tokio::select! {
        biased;
        () = stop.cancelled() => return,
        () = caller_ended => call_ended(),
        () = tokio::time::sleep(ttl) => ttl_passed(ttl),
        outcome = work => answered(outcome),
    };
    if let Some(store) = store.upgrade() {
        let (status, message, outcome) = ended;
        store.finish(&id, status, message, outcome, &peer);
    }
}
