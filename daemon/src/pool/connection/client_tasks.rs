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
//! The wire shapes and decisions are pure functions at the bottom, unit-tested.

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
use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::super::server_requests::ServerRequests;
use crate::provider::EventRelay;

/// Prefix the stdio transport puts on the method of a task-augmented server request, so rmcp
/// hands it to [`ClientTasks::answer`] as a custom request with its params whole.
pub(crate) const TASK_AUGMENTED: &str = "tool-cli/task-augmented/";

/// The server requests a client may be asked to run as a task (MCP 2025-11-25).
const ELICITATION: &str = "elicitation/create";
const SAMPLING: &str = "sampling/createMessage";

/// How many client tasks one connection keeps at once (live or finished and not yet expired).
pub(crate) const MAX_CLIENT_TASKS: usize = 32;

/// The `ttl` given when the server asks for none, and the longest honoured.
const DEFAULT_TTL: Duration = Duration::from_secs(600);
const MAX_TTL: Duration = Duration::from_secs(3_600);

/// How often the server is told to poll (it may poll less often; the status is also pushed).
const POLL_INTERVAL_MS: u64 = 1_000;

/// The `_meta` key that ties a task's result to its task.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Marks a task-augmented `elicitation/create` or `sampling/createMessage` (a request whose
/// `params.task` is an object) by prefixing its method with [`TASK_AUGMENTED`]; anything else is
/// left alone. Returns whether it marked.
pub(crate) fn mark_task_augmented(message: &mut Value) -> bool {
    let Some(object) = message.as_object_mut() else {
        return false;
    };
    let augmented = object.contains_key("id")
        && object
            .get("params")
            .and_then(|params| params.get("task"))
            .is_some_and(Value::is_object);
    match object.get_mut("method") {
        Some(Value::String(method))
            if augmented && (method == ELICITATION || method == SAMPLING) =>
        {
            method.insert_str(0, TASK_AUGMENTED);
            true
        }
        _ => false,
    }
}

/// The `tasks` client capability to declare: which requests the pool runs as tasks, `None`
/// when neither (a server that may not ask, or whose questions are declined at once).
pub(crate) fn capability(relays_questions: bool, may_sample: bool) -> Option<Value> {
    if !relays_questions && !may_sample {
        return None;
    }
    let mut requests = Map::new();
    if relays_questions {
        requests.insert("elicitation".to_owned(), json!({"create": {}}));
    }
    if may_sample {
        requests.insert("sampling".to_owned(), json!({"createMessage": {}}));
    }
    Some(json!({"list": {}, "cancel": {}, "requests": requests}))
}

/// Writes `capability` into an `initialize` request's `params.capabilities.tasks`; `false`
/// (nothing written) for any other message.
pub(crate) fn declare_in_initialize(message: &mut Value, capability: &Value) -> bool {
    if message.get("method").and_then(Value::as_str) != Some("initialize") {
        return false;
    }
    let Some(capabilities) = message
        .pointer_mut("/params/capabilities")
        .and_then(Value::as_object_mut)
    else {
        return false;
    };
    capabilities.insert("tasks".to_owned(), capability.clone());
    true
}

/// The `ttl` honoured for a requested one (milliseconds; absent or `null` for the default).
fn honoured_ttl(requested: Option<&Value>) -> Duration {
    match requested.and_then(Value::as_u64) {
        Some(ms) => Duration::from_millis(ms).min(MAX_TTL),
        None => DEFAULT_TTL,
    }
}

/// Where a client task stands (MCP 2025-11-25's `TaskStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

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
            "tasks/result" => self.result(&task_id()?).await,
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
        tracing::info!(server = %self.server, task_id = %id, method, ttl_ms = ttl.as_millis() as u64, "client task created");
        tokio::spawn(run(
            Arc::downgrade(self),
            id,
            job,
            Arc::clone(requests),
            peer,
            (stop, caller, ttl),
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
        tracing::info!(server = %self.server, task_id = %id, status = status.as_str(), "client task ended; telling the server");
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
                tracing::debug!(server = %self.server, task_id = %id, status = entry.status.as_str(), "tasks/get answered");
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
            tokio::select! {
                moved = changed.changed() => if moved.is_err() { return Err(ErrorData::internal_error("the connection closed", None)); },
                () = self.gone.cancelled() => return Err(ErrorData::internal_error("the connection closed", None)),
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

/// `result` with `_meta["io.modelcontextprotocol/related-task"]` naming task `id`.
fn with_related_task(mut result: Value, id: &str) -> Value {
    if let Some(object) = result.as_object_mut() {
        let meta = object.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(RELATED_TASK.to_owned(), json!({ "taskId": id }));
        }
    }
    result
}

/// Runs task `id`'s request through the relay until it ends, its call ends, its `ttl`
/// passes, or it is stopped (cancelled by the server, or the connection gone).
async fn run(
    store: Weak<ClientTasks>,
    id: String,
    job: Job,
    requests: Arc<ServerRequests>,
    peer: Peer<RoleClient>,
    (stop, caller, ttl): (CancellationToken, Option<Arc<dyn EventRelay>>, Duration),
) {
    let caller_ended = async {
        match &caller {
            Some(caller) => caller.ended().await,
            None => std::future::pending().await,
        }
    };
    let work = async {
        match &job {
            Job::Elicitation(params) => serde_json::to_value(requests.elicit(params, &stop).await)
                .map_err(|error| ErrorData::internal_error(error.to_string(), None)),
            Job::Sampling(params) => requests.sample(params).await.and_then(|result| {
                serde_json::to_value(result)
                    .map_err(|error| ErrorData::internal_error(error.to_string(), None))
            }),
        }
    };
    let ended = tokio::select! {
        biased;
        () = stop.cancelled() => return,
        () = caller_ended => (Status::Cancelled, Some("the call that caused it ended before an answer came (its deadline passed or it was cancelled)".to_owned()), None),
        () = tokio::time::sleep(ttl) => (Status::Cancelled, Some(format!("its ttl of {} ms passed before an answer came", ttl.as_millis())), None),
        outcome = work => match outcome {
            Ok(result) => (Status::Completed, None, Some(Ok(result))),
            Err(error) => (Status::Failed, Some(error.message.to_string()), Some(Err(error))),
        },
    };
    if let Some(store) = store.upgrade() {
        let (status, message, outcome) = ended;
        store.finish(&id, status, message, outcome, &peer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_task_augmented_elicitation_and_sampling_requests_are_marked() {
        let mut augmented = json!({"jsonrpc": "2.0", "id": 4, "method": "elicitation/create",
            "params": {"task": {"ttl": 600000}, "message": "?"}});
        assert!(mark_task_augmented(&mut augmented));
        assert_eq!(
            augmented["method"],
            "tool-cli/task-augmented/elicitation/create"
        );
        let mut sampling = json!({"id": "s", "method": "sampling/createMessage",
            "params": {"task": {}, "messages": [], "maxTokens": 5}});
        assert!(mark_task_augmented(&mut sampling));
        for mut untouched in [
            json!({"id": 1, "method": "elicitation/create", "params": {"message": "?"}}),
            json!({"id": 1, "method": "elicitation/create", "params": {"task": 5}}),
            json!({"id": 1, "method": "roots/list", "params": {"task": {}}}),
            json!({"method": "elicitation/create", "params": {"task": {}}}),
            json!({"id": 1, "result": {"task": {}}}),
            json!([1, 2]),
        ] {
            let before = untouched.clone();
            assert!(!mark_task_augmented(&mut untouched), "{before}");
            assert_eq!(untouched, before);
        }
    }

    #[test]
    fn the_capability_names_only_what_is_honoured_and_lands_in_initialize() {
        assert_eq!(capability(false, false), None);
        let questions = capability(true, false).unwrap();
        assert_eq!(
            questions["requests"],
            json!({"elicitation": {"create": {}}})
        );
        assert_eq!(questions["cancel"], json!({}));
        let both = capability(true, true).unwrap();
        assert_eq!(both["requests"]["sampling"], json!({"createMessage": {}}));

        let mut initialize = json!({"id": 0, "method": "initialize",
            "params": {"capabilities": {"elicitation": {}}, "protocolVersion": "2025-11-25"}});
        assert!(declare_in_initialize(&mut initialize, &both));
        assert_eq!(initialize["params"]["capabilities"]["tasks"], both);
        assert_eq!(
            initialize["params"]["capabilities"]["elicitation"],
            json!({})
        );
        let mut other = json!({"id": 1, "method": "tools/list", "params": {"capabilities": {}}});
        assert!(!declare_in_initialize(&mut other, &both));
        assert_eq!(other["params"]["capabilities"], json!({}));
    }

    #[test]
    fn the_ttl_is_the_servers_up_to_an_hour_and_ten_minutes_without_one() {
        assert_eq!(
            honoured_ttl(Some(&json!(600_000))),
            Duration::from_secs(600)
        );
        assert_eq!(honoured_ttl(Some(&json!(86_400_000))), MAX_TTL);
        assert_eq!(honoured_ttl(Some(&Value::Null)), DEFAULT_TTL);
        assert_eq!(honoured_ttl(None), DEFAULT_TTL);
        assert_eq!(honoured_ttl(Some(&json!(-5))), DEFAULT_TTL);
    }

    #[test]
    fn a_result_names_its_task_and_keeps_its_own_meta() {
        let result = with_related_task(json!({"action": "accept", "_meta": {"a": 1}}), "client-3");
        assert_eq!(result["_meta"]["a"], 1);
        assert_eq!(result["_meta"][RELATED_TASK]["taskId"], "client-3");
        assert!(Status::Cancelled.is_terminal() && !Status::InputRequired.is_terminal());
    }
}
