//! `tool-cli agent "TASK"`: a run of the daemon's agent, followed live.
//!
//! The client names the run itself (`runId`), sends `runAgent` on one connection and, on a
//! second one, long-polls `agentEvents` for that run, printing a progress line per event on
//! stderr (step, tool, outcome, cost so far). When `runAgent` answers, the events not printed yet
//! are fetched once more, then the answer goes to stdout (`--json`: the whole result) and the
//! exit code says how the run ended. Ctrl-C sends `cancelAgent`; once the daemon acknowledged it
//! the command waits briefly for the run's end and exits 130.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::signal::unix::{SignalKind, signal};
use tool_cli_protocol::agent::AgentEventsResult;
use tool_cli_protocol::code;
use tool_cli_protocol::methods::name;

use super::output::Output;
use crate::args::agent::AgentCommand;
use crate::args::call::CallOptions;
use crate::client::{Client, parse_result};
use crate::error::Error;
use crate::render::AgentProgress;
use crate::sanitize;

/// How long a run may take when the user gave no `--timeout`: the daemon bounds every run
/// (`agent.timeouts.runMs`, ten minutes by default); this only guards against a daemon that never
/// answers.
const RUN_CEILING: Duration = Duration::from_secs(3600);

/// Extra time the `runAgent` request gets beyond the run's own `timeoutMs`, so that the daemon's
/// halted result arrives before our timeout.
const RUN_MARGIN: Duration = Duration::from_secs(10);

/// How long one `agentEvents` request waits for a new event.
const EVENTS_WAIT: Duration = Duration::from_secs(15);

/// The pause before asking again for the events of a run the daemon does not know yet: the
/// `runAgent` request that registers it travels on another connection and may arrive second.
const NOT_REGISTERED_RETRY: Duration = Duration::from_millis(25);

/// How long to wait for the run's end once its cancellation was acknowledged.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// Runs the agent on the task and follows it.
pub(super) async fn run(
    client: &mut Client,
    output: &mut Output<'_>,
    command: AgentCommand,
    options: &CallOptions,
    timeout_ms: Option<u64>,
) -> Result<(), Error> {
    let run_id = new_run_id();
    let params = params(&command, options, &run_id, timeout_ms);
    let wait = timeout_ms.map_or(RUN_CEILING, |ms| Duration::from_millis(ms) + RUN_MARGIN);
    let mut interrupt = signal(SignalKind::interrupt()).map_err(|source| Error::Io {
        action: "listen for Ctrl-C".to_owned(),
        source,
    })?;
    let mut events = client.sibling();
    let mut follower = Follower::default();
    progress(&format!("starting run {run_id}"));

    let outcome = {
        let run = client.call_with_timeout(name::RUN_AGENT, Some(params), wait);
        tokio::pin!(run);
        loop {
            tokio::select! {
                biased;
                result = &mut run => break Outcome::Finished(result),
                _ = interrupt.recv() => {
                    progress(&format!("interrupted: cancelling run {run_id}"));
                    let acknowledged = cancel(&mut events, &run_id).await;
                    if !acknowledged {
                        // Not registered yet (or the daemon is gone): dropping the request closes
                        // its connection, which cancels the run in the daemon all the same.
                        break Outcome::Interrupted { acknowledged, result: None };
                    }
                    let result = tokio::select! {
                        result = &mut run => Some(result),
                        _ = interrupt.recv() => None,
                        () = tokio::time::sleep(CANCEL_GRACE) => None,
                    };
                    break Outcome::Interrupted { acknowledged, result };
                }
                polled = follower.poll(&mut events, &run_id), if !follower.done => {
                    follower.show(polled).await;
                }
            }
        }
    };

    match outcome {
        Outcome::Finished(result) => {
            let result = result?;
            follower.drain(&mut events, &run_id).await;
            finish(output, &run_id, &result)
        }
        Outcome::Interrupted {
            acknowledged,
            result,
        } => {
            if result.is_some() {
                follower.drain(&mut events, &run_id).await;
            }
            Err(Error::Interrupted(if acknowledged {
                format!("the daemon cancelled run {run_id}")
            } else {
                format!(
                    "run {run_id} was not acknowledged by the daemon; the request was closed, \
                     which cancels it"
                )
            }))
        }
    }
}

enum Outcome {
    Finished(Result<Value, Error>),
    Interrupted {
        acknowledged: bool,
        result: Option<Result<Value, Error>>,
    },
}

/// `runAgent`'s params: only what was given, so the daemon's config decides the rest.
fn params(
    command: &AgentCommand,
    options: &CallOptions,
    run_id: &str,
    timeout_ms: Option<u64>,
) -> Value {
    let mut params = json!({"task": command.task, "runId": run_id});
    let mut set = |key: &str, value: Value| {
        params[key] = value;
    };
    if let Some(backend) = &command.backend {
        set("backend", json!(backend));
    }
    if let Some(model) = &command.model {
        set("model", json!(model));
    }
    if let Some(steps) = command.max_steps {
        set("maxSteps", json!(steps));
    }
    if let Some(cost) = command.max_cost_usd {
        set("costCeilingUsd", json!(cost));
    }
    if options.dry_run {
        set("dryRun", json!(true));
    }
    if let Some(session) = &options.session {
        set("sessionId", json!(session));
    }
    if let Some(timeout) = timeout_ms {
        set("timeoutMs", json!(timeout));
    }
    params
}

/// A run id of the client's choosing: unique enough per machine (pid and clock), and within the
/// daemon's alphabet.
fn new_run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or(0);
    format!("cli-{}-{nanos:x}", std::process::id())
}

/// `cancelAgent`: whether the daemon acknowledged it (it knows the run, whether or not it was
/// still going).
async fn cancel(events: &mut Client, run_id: &str) -> bool {
    // A fresh connection: the events request in flight was dropped with its future.
    let mut canceller = events.sibling();
    match canceller
        .call(name::CANCEL_AGENT, Some(json!({"runId": run_id})))
        .await
    {
        Ok(_) => true,
        Err(error) => {
            progress(&format!("cannot cancel run {run_id}: {error}"));
            false
        }
    }
}

/// Follows the run's events and prints them.
#[derive(Default)]
struct Follower {
    after: u64,
    done: bool,
    progress: AgentProgress,
    dropped_reported: u64,
}

impl Follower {
    async fn poll(&self, events: &mut Client, run_id: &str) -> Result<AgentEventsResult, Error> {
        let params = json!({"runId": run_id, "after": self.after,
                            "waitMs": EVENTS_WAIT.as_millis() as u64});
        let result = events
            .call_with_timeout(name::AGENT_EVENTS, Some(params), EVENTS_WAIT * 2)
            .await?;
        parse_result(name::AGENT_EVENTS, result)
    }

    /// Prints a page of events; an unknown run means `runAgent` has not registered it yet, so
    /// it is asked again shortly; any other failure stops the following (the run goes on).
    async fn show(&mut self, polled: Result<AgentEventsResult, Error>) {
        match polled {
            Ok(page) => self.print(page),
            Err(Error::Rpc { error, .. }) if error.code == code::INVALID_PARAMS => {
                tokio::time::sleep(NOT_REGISTERED_RETRY).await;
            }
            Err(error) => {
                progress(&format!(
                    "cannot follow the run's progress ({error}); waiting for its answer"
                ));
                self.done = true;
            }
        }
    }

    fn print(&mut self, page: AgentEventsResult) {
        for event in &page.events {
            if let Some(line) = self.progress.line(event) {
                progress(&line);
            }
        }
        if page.dropped > self.dropped_reported {
            progress(&format!(
                "{} progress events were dropped by the daemon",
                page.dropped - self.dropped_reported
            ));
            self.dropped_reported = page.dropped;
        }
        self.after = self.after.max(page.last_seq);
        self.done |= page.done;
    }

    /// The events not printed yet, once the run has ended.
    async fn drain(&mut self, events: &mut Client, run_id: &str) {
        if self.done {
            return;
        }
        let params = json!({"runId": run_id, "after": self.after, "waitMs": 0});
        if let Ok(result) = events.call(name::AGENT_EVENTS, Some(params)).await
            && let Ok(page) = parse_result::<AgentEventsResult>(name::AGENT_EVENTS, result)
        {
            self.print(page);
        }
        self.done = true;
    }
}

/// One progress line on stderr.
fn progress(line: &str) {
    eprintln!("tool-cli: agent: {}", sanitize::text(line));
}

/// The answer on stdout (the whole result with `--json`), then the exit code of the status.
fn finish(output: &mut Output<'_>, run_id: &str, result: &Value) -> Result<(), Error> {
    let text = |key: &str| result.get(key).and_then(Value::as_str).unwrap_or("");
    if output.json {
        output.emit_json(result)?;
    } else if !text("answer").is_empty() {
        output.emit_result_text(text("answer"))?;
    }
    match text("status") {
        "completed" => Ok(()),
        status => {
            let reason = match status {
                "halted" => text("haltReason"),
                _ => text("error"),
            };
            Err(Error::AgentStopped {
                run_id: run_id.to_owned(),
                status: if status.is_empty() { "failed" } else { status }.to_owned(),
                reason: if reason.is_empty() {
                    "no reason given".to_owned()
                } else {
                    reason.to_owned()
                },
            })
        }
    }
}
