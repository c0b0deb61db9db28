//! The pool's answers to requests and notifications a server sends the daemon: `roots/list`
//! from the config, `elicitation/create` declined with a reason or, with `"elicitation":
//! "ask"`, relayed to the caller watching the server's one call in flight and answered with
//! what it sends back (`crate::elicitation` decides where it goes), `sampling/createMessage`
//! for a server with `allowSampling` answered by the caller when it answers sampling itself (an
//! MCP host behind the gateway), else through the agent backend (`crate::sampling`), or
//! declined with a reason (both bounded per server, so a server asking a thousand times costs a
//! counter), and
//! `notifications/message` written to the daemon's log under the server's name.
//!
//! The connection's rmcp `ClientHandler` (`connection.rs`) delegates here; the decisions are
//! in [`crate::config::server_requests`]. Nothing here is on the path of a plain tool call.

// Roots, sampling and logging are deprecated by rmcp for the 2026 protocol (SEP-2577); the
// protocol version we speak (2025-11-25) has them, and servers use them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, ErrorCode, ListRootsResult, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken, Root,
};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::config::server_requests::{
    Admission, ElicitationPolicy, RequestBudget, ServerRequestSettings,
};
use crate::provider::{CallTicket, EventRelay, UsageMeter};
use crate::sampling::{Sampler, SamplingBill};

mod elicit;
mod host;
mod withdrawal;

pub(crate) use withdrawal::Withdrawal;

/// The `_meta` key of a declined elicitation that says why.
const REASON_META: &str = "tool-cli/reason";

/// JSON-RPC code of a sampling request the daemon refuses (MCP's examples use -1 for "user
/// rejected sampling request").
const SAMPLING_REFUSED: i32 = -1;

/// Longest server log message written to the daemon's log, in characters.
const MAX_LOG_CHARS: usize = 2_000;

/// One server's settings and request counters; kept across its restarts.
pub(crate) struct ServerRequests {
    server: String,
    settings: ServerRequestSettings,
    budget: Mutex<RequestBudget>,
    /// The events buffers of its calls in flight that asked for progress, by the progress
    /// token rmcp put on each request.
    watched: Mutex<HashMap<ProgressToken, Watched>>,
    /// The agent backend that answers its sampling requests, when one is configured.
    sampler: Option<Arc<Sampler>>,
    /// What its sampling requests have cost.
    sampling_bill: Mutex<SamplingBill>,
    /// With `"elicitation": "ask"` or `allowSampling`: its calls in flight, each with the
    /// events buffer its caller reads (if any) and its usage meter, so a question goes to the
    /// one caller it can belong to and a sampling answer is billed to the one call that caused
    /// it. Empty otherwise (a plain server's calls register nothing).
    in_flight: Mutex<HashMap<u64, Caller>>,
    next_call: AtomicU64,
    /// How many of its log notifications reach the daemon's log ([`super::log_budget`]).
    log_budget: Mutex<super::log_budget::LogBudget>,
}

/// One call in flight, as the server's requests see it.
#[derive(Clone)]
struct Caller {
    /// The events buffer its caller reads, when it has a `progressId`.
    watcher: Option<Arc<dyn EventRelay>>,
    /// Its usage meter.
    usage: Option<Arc<UsageMeter>>,
}

/// Removes a call from the server's calls in flight when it ends.
pub(crate) struct InFlight<'a> {
    requests: &'a ServerRequests,
    call: u64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.requests.in_flight.lock().unwrap().remove(&self.call);
    }
}

/// A request whose progress is relayed: its call's events buffer, and the last progress relayed.
struct Watched {
    log: Arc<dyn EventRelay>,
    last_progress: Option<f64>,
}

/// Whether a progress notification moves forward. MCP's progress increases with each
/// notification, but rmcp hands notifications to the handler on tasks of their own, so under a
/// flood they can arrive out of order: an older one arriving after a newer is stale and is not
/// relayed (the caller never sees progress go backwards).
pub(crate) fn moves_forward(last: Option<f64>, progress: f64) -> bool {
    last.is_none_or(|last| progress > last)
}

/// Stops relaying a request's notifications when it ends.
pub(crate) struct Watch<'a> {
    requests: &'a ServerRequests,
    token: ProgressToken,
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        self.requests.watched.lock().unwrap().remove(&self.token);
    }
}

impl ServerRequests {
    pub(crate) fn new(
        server: &str,
        settings: ServerRequestSettings,
        sampler: Option<Arc<Sampler>>,
    ) -> ServerRequests {
        ServerRequests {
            server: server.to_owned(),
            settings,
            budget: Mutex::new(RequestBudget::new()),
            watched: Mutex::new(HashMap::new()),
            sampler,
            sampling_bill: Mutex::new(SamplingBill::default()),
            in_flight: Mutex::new(HashMap::new()),
            next_call: AtomicU64::new(0),
            log_budget: Mutex::new(super::log_budget::LogBudget::default()),
        }
    }

    /// Counts a call (`tools/call`, `resources/read`, `prompts/get`) in flight until the guard
    /// drops, with the events buffer of the caller watching it and its usage meter, for a
    /// server whose questions are relayed or that may sample; `None` (nothing done) for any
    /// other server. Taken before the request is sent, so a request arriving at once finds it.
    pub(crate) fn calling(&self, ticket: &CallTicket) -> Option<InFlight<'_>> {
        if self.settings.elicitation != ElicitationPolicy::Ask && !self.settings.allow_sampling {
            return None;
        }
        let caller = Caller {
            watcher: ticket.relay.clone().filter(|relay| relay.is_followed()),
            usage: ticket.usage.clone(),
        };
        let call = self.next_call.fetch_add(1, Ordering::Relaxed);
        self.in_flight.lock().unwrap().insert(call, caller);
        Some(InFlight {
            requests: self,
            call,
        })
    }

    /// The caller a question of the server's would go to now (its one watched call in flight),
    /// for a client task that ends when that call does (`connection/client_tasks.rs`).
    pub(crate) fn asking_caller(&self) -> Option<Arc<dyn EventRelay>> {
        crate::elicitation::route(&self.watchers()).ok()
    }

    /// What reaches the caller of each of its calls in flight, one entry per caller: a call
    /// following a task has two requests in flight at times (`tasks/get` beside
    /// `tasks/result`), both its own, so a question asked meanwhile still has one caller.
    pub(super) fn watchers(&self) -> Vec<Option<Arc<dyn EventRelay>>> {
        let in_flight: Vec<Option<Arc<dyn EventRelay>>> = self
            .in_flight
            .lock()
            .unwrap()
            .values()
            .map(|caller| caller.watcher.clone())
            .collect();
        one_per_caller(in_flight)
    }

    /// Whether the server is told, in the handshake, that it may ask for sampling: only with
    /// `allowSampling` (answered by the backend, or declined with a reason when there is none).
    pub(crate) fn advertises_sampling(&self) -> bool {
        self.settings.allow_sampling
    }

    /// Whether the server is told, in the handshake, that it may ask for URL-mode elicitation:
    /// only when its questions go to the caller (`"elicitation": "ask"`).
    pub(crate) fn advertises_url_elicitation(&self) -> bool {
        self.settings.elicitation == ElicitationPolicy::Ask
    }

    /// What its sampling requests have cost so far.
    pub(crate) fn sampling_bill(&self) -> SamplingBill {
        *self.sampling_bill.lock().unwrap()
    }

    /// Relays the progress (and the server's log messages) of the request carrying `token` to
    /// `relay`, the events buffer of the call it was made for when that asked for progress;
    /// `None` (and nothing done) for a plain call.
    pub(crate) fn watch(
        &self,
        token: &ProgressToken,
        relay: Option<&Arc<dyn EventRelay>>,
    ) -> Option<Watch<'_>> {
        let log = Arc::clone(relay?);
        self.watched.lock().unwrap().insert(
            token.clone(),
            Watched {
                log,
                last_progress: None,
            },
        );
        Some(Watch {
            requests: self,
            token: token.clone(),
        })
    }

    /// `notifications/progress`: into the events buffer of the call it belongs to.
    pub(crate) fn progress(&self, notification: &ProgressNotificationParam) {
        // The event is pushed under the lock that decided it moves forward: pushed after it, a
        // notification checked first could land after one checked later.
        let mut watched = self.watched.lock().unwrap();
        let Some(watched) = watched.get_mut(&notification.progress_token) else {
            return;
        };
        if !moves_forward(watched.last_progress, notification.progress) {
            return;
        }
        watched.last_progress = Some(notification.progress);
        let log = &watched.log;
        let mut event = serde_json::Map::new();
        event.insert("type".to_owned(), json!("progress"));
        event.insert("progress".to_owned(), json!(notification.progress));
        if let Some(total) = notification.total {
            event.insert("total".to_owned(), json!(total));
        }
        if let Some(message) = &notification.message {
            event.insert("message".to_owned(), json!(clip(message)));
        }
        log.push(event);
    }

    /// `roots/list`: the configured roots.
    pub(crate) fn list_roots(&self) -> ListRootsResult {
        let roots = self
            .settings
            .roots
            .iter()
            .map(|root| {
                let mut entry = Root::new(root.uri.clone());
                entry.name = root.name.clone();
                entry
            })
            .collect();
        tracing::debug!(server = %self.server, count = self.settings.roots.len(), "roots/list answered from the config");
        ListRootsResult::new(roots)
    }

    /// Counts a request that needs a person or a model; `Err` carries the refusal's reason when
    /// the server is over its budget.
    fn admit(&self, what: &str) -> Result<(), String> {
        let mut budget = self.budget.lock().unwrap();
        match budget.admit(Instant::now()) {
            Admission::Admitted => Ok(()),
            Admission::Refused { first } => {
                if first {
                    tracing::warn!(
                        server = %self.server,
                        refused = budget.refused(),
                        "server is asking too often ({what}); further requests this minute are \
                         declined unread"
                    );
                }
                Err(format!(
                    "declined by the tool-cli daemon: server \"{}\" made more than {} {what} \
                     requests in {} s",
                    self.server,
                    crate::config::server_requests::BUDGET_PER_WINDOW,
                    crate::config::server_requests::BUDGET_WINDOW.as_secs()
                ))
            }
        }
    }

    /// `elicitation/create`: with `"elicitation": "ask"`, relayed to the caller watching the
    /// call it belongs to and answered as that caller says; otherwise (or when it cannot be
    /// relayed or answered) declined, with why in `_meta["tool-cli/reason"]`. `withdrawn`
    /// fires when the question is withdrawn (the server cancelled its request, the call's
    /// deadline passed), and says which.
    pub(crate) async fn elicit(
        &self,
        request: &ElicitRequestParams,
        withdrawn: Withdrawal<'_>,
    ) -> ElicitResult {
        let reason = match self.admit("elicitation") {
            Err(reason) => reason,
            Ok(()) if self.settings.elicitation == ElicitationPolicy::Ask => {
                match self.relay(request, withdrawn).await {
                    Ok(answer) => return answer,
                    Err(reason) => reason,
                }
            }
            Ok(()) => {
                let message = match request {
                    ElicitRequestParams::FormElicitationParams { message, .. }
                    | ElicitRequestParams::UrlElicitationParams { message, .. } => message.as_str(),
                    _ => "",
                };
                tracing::info!(
                    server = %self.server,
                    message = %clip(message),
                    "elicitation declined: no one to ask (elicitation policy \"decline\")"
                );
                format!(
                    "declined by the tool-cli daemon: server \"{}\" has the elicitation policy \
                     \"decline\" (the daemon has no user to ask)",
                    self.server
                )
            }
        };
        let mut result = ElicitResult::new(ElicitationAction::Decline);
        result.meta = serde_json::from_value(json!({ REASON_META: reason })).ok();
        result
    }

    /// `sampling/createMessage`: answered by the agent backend when the server may sample and
    /// one is configured; otherwise refused with the reason as the error message.
    pub(crate) async fn sample(
        &self,
        request: &CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        let admitted = self.admit("sampling");
        // The caller's MCP host answers when it can (its user's own model); else the backend.
        let host = admitted.is_ok().then(|| self.sampling_host()).flatten();
        let reason = match (admitted, &self.sampler) {
            (Err(reason), _) => reason,
            (Ok(()), _) if !self.settings.allow_sampling => format!(
                "sampling declined by the tool-cli daemon: server \"{}\" is not allowed to \
                 sample (set \"allowSampling\": true in its config entry)",
                self.server
            ),
            (Ok(()), _) if host.is_some() => {
                let host = host.as_ref().expect("checked in the guard");
                match self.sample_by_host(host, request).await {
                    Ok(result) => return Ok(result),
                    Err(reason) => reason,
                }
            }
            (Ok(()), None) => format!(
                "sampling declined by the tool-cli daemon: server \"{}\" may sample, but no \
                 LLM backend is configured (set agent.backend to \"openai\" or \"anthropic\" \
                 in the daemon's config)",
                self.server
            ),
            (Ok(()), Some(sampler)) => match sampler.sample(request).await {
                Ok(sampled) => {
                    self.sampling_bill
                        .lock()
                        .unwrap()
                        .add(&sampled.usage, sampled.cost_usd);
                    self.bill_the_call(
                        sampled.usage.prompt_tokens(),
                        sampled.usage.output_tokens,
                        sampled.cost_usd,
                    );
                    tracing::info!(
                        server = %self.server,
                        backend = %sampler.describe(),
                        input_tokens = sampled.usage.prompt_tokens(),
                        output_tokens = sampled.usage.output_tokens,
                        cost_usd = sampled.cost_usd.unwrap_or(0.0),
                        "sampling request answered"
                    );
                    return Ok(sampled.result);
                }
                Err(failure) => {
                    let cost = sampler.cost_of(&failure.usage).filter(|cost| *cost > 0.0);
                    let mut bill = self.sampling_bill.lock().unwrap();
                    bill.usage.add(&failure.usage);
                    if let Some(cost) = cost {
                        *bill.cost_usd.get_or_insert(0.0) += cost;
                    }
                    drop(bill);
                    self.bill_the_call(
                        failure.usage.prompt_tokens(),
                        failure.usage.output_tokens,
                        cost,
                    );
                    format!(
                        "sampling failed in the tool-cli daemon (server \"{}\"): {}",
                        self.server, failure.reason
                    )
                }
            },
        };
        self.sampling_bill.lock().unwrap().declined += 1;
        tracing::info!(
            server = %self.server,
            messages = request.messages.len(),
            %reason,
            "sampling request declined"
        );
        Err(rmcp::ErrorData::new(
            ErrorCode(SAMPLING_REFUSED),
            reason,
            None,
        ))
    }

    /// Adds a sampling request's usage to the call that caused it: the server's one call in
    /// flight (with several, MCP does not say which asked; the usage stays in `health` only).
    fn bill_the_call(&self, tokens_in: u64, tokens_out: u64, cost_usd: Option<f64>) {
        let meters: Vec<Option<Arc<UsageMeter>>> = self
            .in_flight
            .lock()
            .unwrap()
            .values()
            .map(|caller| caller.usage.clone())
            .collect();
        if let Ok(usage) = crate::elicitation::route(&one_per_caller(meters)) {
            usage.add(tokens_in, tokens_out, cost_usd);
        }
    }

    /// `notifications/message`: into the daemon's log under the server's name, at the level
    /// MCP's maps to (debug → debug, info and notice → info, warning → warn, error and above →
    /// error), at most [`super::log_budget::LINES_PER_WINDOW`] per window and server (what is
    /// dropped is counted and said); to watching callers' event buffers (bounded) in full.
    pub(crate) fn log(&self, message: &LoggingMessageNotificationParam) {
        let text = match &message.data {
            Value::String(text) => clip(text),
            other => clip(&other.to_string()),
        };
        let logger = message.logger.as_deref().unwrap_or("");
        let server = &self.server;
        // Also to every call of this server that asked for events: a log message names no
        // request, so each one in flight may be the cause.
        let watching: Vec<Arc<dyn EventRelay>> = self
            .watched
            .lock()
            .unwrap()
            .values()
            .map(|watched| Arc::clone(&watched.log))
            .collect();
        for log in watching {
            let mut event = serde_json::Map::new();
            event.insert("type".to_owned(), json!("log"));
            event.insert("server".to_owned(), json!(server));
            event.insert(
                "level".to_owned(),
                serde_json::to_value(message.level).unwrap_or(Value::Null),
            );
            if !logger.is_empty() {
                event.insert("logger".to_owned(), json!(clip(logger)));
            }
            event.insert("data".to_owned(), json!(text));
            log.push(event);
        }
        let verdict = self
            .log_budget
            .lock()
            .unwrap()
            .admit(std::time::Instant::now());
        if let Some(dropped) = verdict.report_dropped {
            tracing::warn!(
                target: "tool_cli::server_log",
                server,
                dropped,
                "dropped {dropped} log messages of this server (more than {} in {} s)",
                super::log_budget::LINES_PER_WINDOW,
                super::log_budget::WINDOW.as_secs()
            );
        }
        if verdict.starts_dropping {
            tracing::warn!(
                target: "tool_cli::server_log",
                server,
                "this server sends more than {} log messages in {} s; dropping the rest of the \
                 window (callers watching its calls still get them)",
                super::log_budget::LINES_PER_WINDOW,
                super::log_budget::WINDOW.as_secs()
            );
        }
        if !verdict.write {
            return;
        }
        match message.level {
            LoggingLevel::Debug => {
                tracing::debug!(target: "tool_cli::server_log", server, logger, "{text}")
            }
            LoggingLevel::Info | LoggingLevel::Notice => {
                tracing::info!(target: "tool_cli::server_log", server, logger, "{text}")
            }
            LoggingLevel::Warning => {
                tracing::warn!(target: "tool_cli::server_log", server, logger, "{text}")
            }
            LoggingLevel::Error
            | LoggingLevel::Critical
            | LoggingLevel::Alert
            | LoggingLevel::Emergency => {
                tracing::error!(target: "tool_cli::server_log", server, logger, "{text}")
            }
        }
    }
}

/// `watchers` with each watched caller once (the same events buffer is the same caller); the
/// unwatched calls stay, each its own.
fn one_per_caller<T: ?Sized>(watchers: Vec<Option<Arc<T>>>) -> Vec<Option<Arc<T>>> {
    let mut kept: Vec<Option<Arc<T>>> = Vec::with_capacity(watchers.len());
    for watcher in watchers {
        let seen = watcher.as_ref().is_some_and(|watcher| {
            kept.iter()
                .flatten()
                .any(|other| std::ptr::addr_eq(Arc::as_ptr(other), Arc::as_ptr(watcher)))
        });
        if !seen {
            kept.push(watcher);
        }
    }
    kept
}

/// Upstream text for a log line: control characters out, length capped.
fn clip(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_LOG_CHARS)
        .collect();
    if text.chars().count() > MAX_LOG_CHARS {
        format!("{cleaned}…")
    } else {
        cleaned
    }
}

#[cfg(test)]
mod one_per_caller_tests {
    use std::sync::Arc;

    use super::one_per_caller;

    #[test]
    fn two_requests_of_one_caller_are_one_caller_and_strangers_stay_apart() {
        let follower = Arc::new(1);
        let other = Arc::new(1);
        let kept = one_per_caller(vec![
            Some(Arc::clone(&follower)),
            Some(Arc::clone(&follower)),
        ]);
        assert_eq!(kept.len(), 1, "a task's tasks/get beside its tasks/result");
        let kept = one_per_caller(vec![Some(Arc::clone(&follower)), Some(other)]);
        assert_eq!(kept.len(), 2, "equal values, different callers");
        let kept = one_per_caller::<i32>(vec![None, None, Some(follower)]);
        assert_eq!(kept.len(), 3, "unwatched calls cannot be told apart");
    }
}

#[cfg(test)]
mod progress_order_tests {
    use super::moves_forward;

    #[test]
    fn only_progress_that_moves_forward_is_relayed() {
        assert!(moves_forward(None, 0.0));
        assert!(moves_forward(Some(3.0), 4.0));
        assert!(
            !moves_forward(Some(4.0), 3.0),
            "an older notification arriving late"
        );
        assert!(!moves_forward(Some(4.0), 4.0), "a repeat");
        assert!(moves_forward(Some(0.5), 0.75), "fractions count");
    }
}
