//! `runAgent` in the daemon: runs of the agent loop (`tool-cli-agent`) over the caller's tools,
//! their events, and their cancellation.
//!
//! A run is an ordinary caller of the calls service: its tool calls go through the pipeline with
//! the caller's token, in a session (the request's `sessionId`, else one named after the run),
//! as children of the run's own call id ([`host::PipelineHost`]). Each LLM call is recorded
//! beside them (a `CallRecord` with server `llm`, its tokens and cost), so traces and
//! `sessionSummary` carry the bill.
//!
//! Runs belong to the token that started them. While a run goes, its events are kept in a
//! bounded log that `agentEvents` long-polls by sequence number; a finished run stays readable
//! for a while, then is forgotten. `runAgent` answers when the run ends; if its HTTP client goes
//! away first, the run is cancelled (and so is any tool call in flight, upstream), and it still
//! ends the way every run does, with its `final` event: the run is a task of its own, which the
//! request only waits for. `cancelAgent` cancels a run from another connection; a caller that
//! wants to follow a run's events before it ends names the run itself (`runId` in `runAgent`).
//!
//! A request is checked whole (its params, its backend, its run id) before it takes a run slot
//! or touches a session: a refused `runAgent` leaves nothing behind. Slots are shared fairly: a
//! token other than the owner keeps at most [`MAX_RUNS_PER_TOKEN`] runs going, all of them
//! together leave [`OWNER_RESERVED_RUNS`] slots free, so the owner always has room.

mod host;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tool_cli_agent::events::EventSink;
use tool_cli_agent::{Agent, AgentError, new_run_id};
use tool_cli_protocol::agent::{
    AgentEvent, AgentEventKind, AgentEventsParams, AgentEventsResult, CancelAgentParams,
    CancelAgentResult, RunAgentParams, RunAgentResult,
};
use tool_cli_protocol::methods::name;

use super::calls::Calls;
use super::discovery::Discovery;
use super::sessions::Sessions;
use crate::error::Error;
use crate::otel::{AgentSpans, ChatFacts, Telemetry};
use crate::pipeline::{CallContext, CallRecord, Pipeline, RecordedError};
use host::PipelineHost;

/// Events kept per run; older ones are dropped (and counted) past this.
const MAX_EVENTS: usize = 2048;

/// Most runs kept (running or finished, all tokens together).
const MAX_RUNS: usize = 256;

/// Most runs going at once for one token other than the owner.
pub(crate) const MAX_RUNS_PER_TOKEN: usize = 16;

/// Slots the other tokens together can never take: the owner's room.
pub(crate) const OWNER_RESERVED_RUNS: usize = 32;

/// How long a finished run's events stay readable.
const KEEP_FINISHED: Duration = Duration::from_secs(600);

/// Default and longest `agentEvents` wait.
const DEFAULT_WAIT: Duration = Duration::from_secs(20);
const MAX_WAIT: Duration = Duration::from_secs(60);

/// Longest run id a caller may choose.
const MAX_RUN_ID: usize = 64;

/// Every run, the agent they run, and what a run's tools and records go through.
pub(crate) struct Agents {
    agent: Agent,
    runs: Mutex<HashMap<(String, String), Arc<Run>>>,
    /// A run's tool calls.
    calls: Arc<Calls>,
    /// A run's tool listings and searches.
    discovery: Arc<Discovery>,
    /// A run's session.
    sessions: Arc<Sessions>,
    /// Where a run's LLM calls are recorded, beside its tool calls.
    pipeline: Arc<Pipeline>,
    /// OpenTelemetry export: a run's `invoke_agent` and `chat` spans.
    telemetry: Telemetry,
}

/// One run: its cancellation, its events, whether it has ended.
struct Run {
    /// Started with the owner token.
    owner: bool,
    cancel: CancellationToken,
    log: Mutex<EventLog>,
    /// The last event's `seq`, and whether the run ended.
    progress: watch::Sender<(u64, bool)>,
    finished_at: Mutex<Option<Instant>>,
}

#[derive(Default)]
struct EventLog {
    events: VecDeque<AgentEvent>,
    dropped: u64,
    last_seq: u64,
}

impl Agents {
    pub(crate) fn new(
        agent: Agent,
        calls: Arc<Calls>,
        discovery: Arc<Discovery>,
        sessions: Arc<Sessions>,
        pipeline: Arc<Pipeline>,
        telemetry: Telemetry,
    ) -> Agents {
        Agents {
            agent,
            runs: Mutex::new(HashMap::new()),
            calls,
            discovery,
            sessions,
            pipeline,
            telemetry,
        }
    }

    /// A run id: the caller's, checked (its alphabet, and not taken by this token), or a new
    /// one. Takes nothing: [`Agents::register`] does, once the request is known to be good.
    fn run_id(&self, token_id: &str, run_id: Option<String>) -> Result<String, Error> {
        let run_id = match run_id {
            Some(id) => {
                let valid = !id.is_empty()
                    && id.len() <= MAX_RUN_ID
                    && id
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
                if !valid {
                    return Err(Error::invalid_params(
                        "runAgent",
                        format!(
                            "runId must be 1-{MAX_RUN_ID} letters, digits, '-', '_' or '.'; \
                             leave it out and the daemon names the run"
                        ),
                    ));
                }
                id
            }
            None => new_run_id(),
        };
        if self
            .runs
            .lock()
            .unwrap()
            .contains_key(&(token_id.to_owned(), run_id.clone()))
        {
            return Err(taken(&run_id));
        }
        Ok(run_id)
    }

    /// Takes a slot for the run `run_id` of a token, within the token's share.
    fn register(&self, token_id: &str, is_owner: bool, run_id: &str) -> Result<Arc<Run>, Error> {
        let now = Instant::now();
        let mut runs = self.runs.lock().unwrap();
        let key = (token_id.to_owned(), run_id.to_owned());
        if runs.contains_key(&key) {
            return Err(taken(run_id));
        }
        runs.retain(|_, run| {
            run.finished_at
                .lock()
                .unwrap()
                .is_none_or(|at| now.duration_since(at) < KEEP_FINISHED)
        });
        let going: Vec<(&String, bool)> = runs
            .iter()
            .filter(|(_, run)| run.finished_at.lock().unwrap().is_none())
            .map(|((token, _), run)| (token, run.owner))
            .collect();
        let shares = Shares {
            mine: going.iter().filter(|(token, _)| *token == token_id).count(),
            not_owner: going.iter().filter(|(_, owner)| !owner).count(),
            all: going.len(),
        };
        if let Err(reason) = shares.admit(is_owner) {
            return Err(Error::invalid_params("runAgent", reason));
        }
        if runs.len() >= MAX_RUNS {
            // Forget the oldest finished run; every slot going was checked above.
            let oldest = runs
                .iter()
                .filter_map(|(key, run)| {
                    run.finished_at.lock().unwrap().map(|at| (at, key.clone()))
                })
                .min_by_key(|(at, _)| *at)
                .map(|(_, key)| key);
            match oldest {
                Some(oldest) => {
                    runs.remove(&oldest);
                }
                None => {
                    return Err(Error::invalid_params(
                        "runAgent",
                        format!("{MAX_RUNS} runs are going; wait for one to end"),
                    ));
                }
            }
        }
        let run = Arc::new(Run {
            owner: is_owner,
            cancel: CancellationToken::new(),
            log: Mutex::new(EventLog::default()),
            progress: watch::Sender::new((0, false)),
            finished_at: Mutex::new(None),
        });
        runs.insert(key, Arc::clone(&run));
        Ok(run)
    }

    /// The run `run_id` of `token_id`; the error names `method`, the one the caller called.
    fn get(&self, method: &str, token_id: &str, run_id: &str) -> Result<Arc<Run>, Error> {
        self.runs
            .lock()
            .unwrap()
            .get(&(token_id.to_owned(), run_id.to_owned()))
            .cloned()
            .ok_or_else(|| {
                Error::invalid_params(
                    method,
                    format!(
                        "no run \"{run_id}\" of this token (finished runs are kept 10 minutes)"
                    ),
                )
            })
    }
}

/// How many runs are going: the caller's, those of tokens other than the owner, and all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shares {
    mine: usize,
    not_owner: usize,
    all: usize,
}

impl Shares {
    /// Whether one more run may start for a token: within its own share, leaving the owner's
    /// room; the owner up to the whole table.
    fn admit(self, is_owner: bool) -> Result<(), String> {
        if is_owner {
            return if self.all < MAX_RUNS {
                Ok(())
            } else {
                Err(format!("{MAX_RUNS} runs are going; wait for one to end"))
            };
        }
        if self.mine >= MAX_RUNS_PER_TOKEN {
            return Err(format!(
                "this token has {MAX_RUNS_PER_TOKEN} runs going, its most; wait for one to end \
                 (or cancel one with cancelAgent)"
            ));
        }
        if self.not_owner >= MAX_RUNS - OWNER_RESERVED_RUNS {
            return Err(format!(
                "{} runs of other tokens are going, all the room they share; wait for one to end",
                self.not_owner
            ));
        }
        Ok(())
    }
}

fn taken(run_id: &str) -> Error {
    Error::invalid_params(
        "runAgent",
        format!("a run named \"{run_id}\" exists already; choose another runId"),
    )
}

/// Marks a run finished once its task ends, whichever way (its result, or a panic): done for
/// `agentEvents`, kept for [`KEEP_FINISHED`].
struct FinishGuard(Arc<Run>);

impl Drop for FinishGuard {
    fn drop(&mut self) {
        self.0.cancel.cancel();
        *self.0.finished_at.lock().unwrap() = Some(Instant::now());
        self.0.progress.send_modify(|(_, done)| *done = true);
    }
}

/// Cancels a run when the request waiting for it goes away (its client left, or the daemon
/// stopped waiting); the run then ends on its own, with its `final` event.
struct CancelOnDrop(CancellationToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl Agents {
    /// `runAgent`: runs the loop to its end and answers its result.
    pub(crate) async fn run_agent(
        &self,
        mut request: RunAgentParams,
        context: &CallContext,
    ) -> Result<RunAgentResult, Error> {
        const METHOD: &str = "runAgent";
        // Everything is checked before anything is taken: the id, then the request itself.
        let run_id = self.run_id(&context.grant.token_id, request.run_id.take())?;
        let session_id = request
            .session_id
            .clone()
            .unwrap_or_else(|| format!("agent-{run_id}"));
        super::sessions::check_id(METHOD, &session_id)?;
        let prepared = self
            .agent
            .prepare(request, run_id.clone(), |name| std::env::var(name).ok())
            .map_err(|error| agent_error(METHOD, error))?;
        let run = self.register(&context.grant.token_id, context.grant.is_owner, &run_id)?;
        let finish = FinishGuard(Arc::clone(&run));
        self.sessions
            .store()
            .touch(name::RUN_AGENT, &context.grant.token_id, &session_id)?;
        // The run's `invoke_agent` span, under the request's; its calls are its children.
        let spans = Arc::new(AgentSpans::begin(
            &self.telemetry,
            &context.trace.span,
            &run_id,
            &session_id,
        ));
        let mut run_context = context.clone();
        run_context.session_id = Some(session_id);
        run_context.trace.span = spans.ids().clone();
        let host = Arc::new(PipelineHost {
            calls: Arc::clone(&self.calls),
            discovery: Arc::clone(&self.discovery),
            context: run_context.clone(),
        });
        let sink = Arc::new(RunSink {
            run: Arc::clone(&run),
            pipeline: Arc::clone(&self.pipeline),
            context: run_context,
            llm: Mutex::new(String::new()),
            spans: Arc::clone(&spans),
        });
        // The run is a task of its own: if this request goes away it is cancelled, and still
        // ends as every run does, with its final event and its span.
        let cancel = CancelOnDrop(run.cancel.clone());
        let task = tokio::spawn(async move {
            let _finish = finish;
            let result = prepared.run(host, sink, run.cancel.clone()).await;
            spans.end(&result);
            result
        });
        let result = task
            .await
            .map_err(|error| Error::internal(format!("the agent run {run_id} stopped: {error}")));
        drop(cancel);
        result
    }

    /// `agentEvents`: the run's events after `after`, waiting up to `wait` for one.
    pub(crate) async fn agent_events(
        &self,
        params: AgentEventsParams,
        context: &CallContext,
    ) -> Result<AgentEventsResult, Error> {
        let after = params.after;
        let run = self.get(name::AGENT_EVENTS, &context.grant.token_id, &params.run_id)?;
        let wait = params
            .wait_ms
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_WAIT)
            .min(MAX_WAIT);
        let mut progress = run.progress.subscribe();
        let _ = tokio::time::timeout(
            wait,
            progress.wait_for(|&(last, done)| last > after || done),
        )
        .await;
        let done = progress.borrow().1;
        let log = run.log.lock().unwrap();
        let events = log
            .events
            .iter()
            .filter(|event| event.seq > after)
            .cloned()
            .collect();
        Ok(AgentEventsResult {
            events,
            done,
            dropped: log.dropped,
            last_seq: log.last_seq,
        })
    }

    /// `cancelAgent`.
    pub(crate) fn cancel_agent(
        &self,
        params: CancelAgentParams,
        context: &CallContext,
    ) -> Result<CancelAgentResult, Error> {
        let run = self.get(name::CANCEL_AGENT, &context.grant.token_id, &params.run_id)?;
        let running = run.finished_at.lock().unwrap().is_none() && !run.cancel.is_cancelled();
        run.cancel.cancel();
        Ok(CancelAgentResult { cancelled: running })
    }
}

fn agent_error(method: &str, error: AgentError) -> Error {
    Error::invalid_params(method, error.to_string())
}

/// Where a run's events go: its log (for `agentEvents`), and, for LLM calls, a record beside
/// the run's tool calls so traces and the session carry the tokens and the cost.
struct RunSink {
    run: Arc<Run>,
    pipeline: Arc<Pipeline>,
    context: CallContext,
    /// `backend:model`, from the `started` event.
    llm: Mutex<String>,
    /// The run's spans (OpenTelemetry): a `chat` span per LLM call.
    spans: Arc<AgentSpans>,
}

impl EventSink for RunSink {
    fn emit(&self, event: AgentEvent) {
        match &event.kind {
            AgentEventKind::Started { backend, model, .. } => {
                *self.llm.lock().unwrap() = format!("{backend}:{model}");
                self.spans.started(backend, model);
            }
            AgentEventKind::LlmCall {
                step,
                usage,
                latency_ms,
                stop_reason,
                error,
                response_model,
                response_id,
                ..
            } => {
                self.spans.chat(ChatFacts {
                    usage,
                    stop_reason,
                    latency: Duration::from_millis(*latency_ms),
                    response_model: response_model.as_deref(),
                    response_id: response_id.as_deref(),
                    error: error.as_deref(),
                });
                let llm = self.llm.lock().unwrap().clone();
                let mut record = CallRecord::new(&self.context.child(*step), &llm, String::new());
                record.server = Some("llm".to_owned());
                record.requested_server = Some("llm".to_owned());
                record.executed = true;
                // A failed call that was billed is traced with its tokens, as failed.
                record.success = error.is_none();
                record.error = error.as_ref().map(|message| RecordedError {
                    code: tool_cli_protocol::code::INTERNAL_ERROR,
                    kind: "llmError",
                    message: message.clone(),
                });
                record.latency = Duration::from_millis(*latency_ms);
                record.tokens_in = usage.tokens_in;
                record.tokens_out = usage.tokens_out;
                record.cost_usd = usage.cost_usd.unwrap_or(0.0);
                record.finished_at = SystemTime::now();
                // Its span is the `chat` above, not an MCP call's.
                record.span = None;
                self.pipeline.record_external(&record);
            }
            _ => {}
        }
        let seq = event.seq;
        let mut log = self.run.log.lock().unwrap();
        if log.events.len() >= MAX_EVENTS {
            log.events.pop_front();
            log.dropped += 1;
        }
        log.events.push_back(event);
        log.last_seq = log.last_seq.max(seq);
        let last = log.last_seq;
        drop(log);
        self.run.progress.send_modify(|(seen, _)| *seen = last);
    }

    fn dropped(&self) -> u64 {
        self.run.log.lock().unwrap().dropped
    }
}
