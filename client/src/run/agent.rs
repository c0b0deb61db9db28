//! `tool-cli agent "TASK"`: a run of the daemon's agent, followed live.
//!
//! The client names the run itself (`runId`), sends `runAgent` on one connection and, on a
//! second one, long-polls `agentEvents` for that run, printing a progress line per event on
//! stderr (step, tool, outcome, cost so far), with a spinner between events when stderr is a
//! terminal. When `runAgent` answers, the events not printed yet are fetched once more, then the
//! answer goes to stdout (`--json`: the whole result) and the exit code says how the run ended.
//! Ctrl-C sends `cancelAgent` on a third connection; once the daemon acknowledged it the command
//! waits briefly for the run's end and exits 130.
//!
//! The events request in flight is a future that owns its connection and survives the turns of
//! the loop (a spinner tick must not cancel it); each answer hands the connection back for the
//! next request.

use std::future::Future;
use std::io::IsTerminal as _;
use std::pin::Pin;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::signal::unix::{SignalKind, signal};
use tool_cli_protocol::agent::{AgentEventsResult, RunAgentResult, RunStatus};
use tool_cli_protocol::code;
use tool_cli_protocol::methods::name;

use super::admin::older_daemon;
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

/// How many times a run the daemon does not know is asked for before the client stops following
/// it (and just waits for its answer): 5 s of retries.
const NOT_REGISTERED_ATTEMPTS: u32 = 200;

/// How long to wait for the run's end once its cancellation was acknowledged.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// How often the spinner turns.
const SPIN: Duration = Duration::from_millis(125);

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
    let mut follower = Follower::new(run_id.clone(), std::io::stderr().is_terminal());
    let mut canceller = client.sibling();
    let mut polling = Some(follower.next_poll(client.sibling(), None));
    let mut spinner = tokio::time::interval(SPIN);
    follower.display.line(&format!("starting run {run_id}"));

    let outcome = {
        let run = client.call_with_timeout(name::RUN_AGENT, Some(params), wait);
        tokio::pin!(run);
        loop {
            tokio::select! {
                biased;
                result = &mut run => break Outcome::Finished(result),
                _ = interrupt.recv() => {
                    follower.display.line(&format!("interrupted: cancelling run {run_id}"));
                    let acknowledged = cancel(&mut canceller, &run_id, &mut follower.display).await;
                    if !acknowledged {
                        // Not registered yet (or the daemon is gone): dropping the request closes
                        // its connection, which cancels the run in the daemon all the same.
                        break Outcome::Interrupted { acknowledged, ended: false };
                    }
                    let ended = tokio::select! {
                        _ = &mut run => true,
                        _ = interrupt.recv() => false,
                        () = tokio::time::sleep(CANCEL_GRACE) => false,
                    };
                    break Outcome::Interrupted { acknowledged, ended };
                }
                (events, polled) = async { polling.as_mut().expect("guarded").await },
                    if polling.is_some() =>
                {
                    polling = follower.show(polled).map(|delay| follower.next_poll(events, delay));
                }
                _ = spinner.tick(), if follower.display.terminal => follower.display.spin(),
            }
        }
    };
    drop(polling);

    match outcome {
        Outcome::Finished(result) => {
            let result = result.map_err(|error| older_daemon(error, "agent"))?;
            follower.drain(client).await;
            follower.display.clear();
            finish(output, &run_id, result)
        }
        Outcome::Interrupted {
            acknowledged,
            ended,
        } => {
            if ended {
                follower.drain(client).await;
            }
            follower.display.clear();
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
    Interrupted { acknowledged: bool, ended: bool },
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
async fn cancel(canceller: &mut Client, run_id: &str, display: &mut Display) -> bool {
    match canceller
        .call(name::CANCEL_AGENT, Some(json!({"runId": run_id})))
        .await
    {
        Ok(_) => true,
        Err(error) => {
            display.line(&format!("cannot cancel run {run_id}: {error}"));
            false
        }
    }
}

/// An `agentEvents` request in flight, owning its connection, which it hands back.
type EventsPoll = Pin<Box<dyn Future<Output = (Client, Result<AgentEventsResult, Error>)>>>;

/// Follows the run's events and prints them.
struct Follower {
    run_id: String,
    after: u64,
    done: bool,
    not_registered: u32,
    dropped_reported: u64,
    display: Display,
}

impl Follower {
    fn new(run_id: String, terminal: bool) -> Follower {
        Follower {
            run_id,
            after: 0,
            done: false,
            not_registered: 0,
            dropped_reported: 0,
            display: Display {
                terminal,
                ..Display::default()
            },
        }
    }

    /// The next long-poll, after `delay` when there is one.
    fn next_poll(&self, mut events: Client, delay: Option<Duration>) -> EventsPoll {
        let params = json!({"runId": self.run_id, "after": self.after,
                            "waitMs": EVENTS_WAIT.as_millis() as u64});
        Box::pin(async move {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            let result = match events
                .call_with_timeout(name::AGENT_EVENTS, Some(params), EVENTS_WAIT * 2)
                .await
            {
                Ok(result) => parse_result(name::AGENT_EVENTS, result),
                Err(error) => Err(error),
            };
            (events, result)
        })
    }

    /// Prints a page of events. `Some(delay)` asks for the next page (after the delay), `None`
    /// stops following: the run ended, or its events cannot be had (the run goes on, and its
    /// answer will come). An unknown run means `runAgent` has not registered it yet.
    fn show(&mut self, polled: Result<AgentEventsResult, Error>) -> Option<Option<Duration>> {
        match polled {
            Ok(page) => {
                self.print(page);
                (!self.done).then_some(None)
            }
            Err(Error::Rpc { error, .. })
                if error.code == code::INVALID_PARAMS
                    && self.after == 0
                    && self.not_registered < NOT_REGISTERED_ATTEMPTS =>
            {
                self.not_registered += 1;
                Some(Some(NOT_REGISTERED_RETRY))
            }
            Err(error) => {
                self.display.line(&format!(
                    "cannot follow the run's progress ({error}); waiting for its answer"
                ));
                self.done = true;
                None
            }
        }
    }

    fn print(&mut self, page: AgentEventsResult) {
        for event in &page.events {
            if let Some(line) = self.display.progress.line(event) {
                self.display.line(&line);
            }
            if let Some(step) = event.kind.step() {
                self.display.step = u64::from(step);
            }
        }
        if page.dropped > self.dropped_reported {
            self.display.line(&format!(
                "{} progress events were dropped by the daemon",
                page.dropped - self.dropped_reported
            ));
            self.dropped_reported = page.dropped;
        }
        self.after = self.after.max(page.last_seq);
        self.done |= page.done;
    }

    /// The events not printed yet, once the run has ended.
    async fn drain(&mut self, client: &mut Client) {
        if self.done {
            return;
        }
        let params = json!({"runId": self.run_id, "after": self.after, "waitMs": 0});
        if let Ok(result) = client.call(name::AGENT_EVENTS, Some(params)).await
            && let Ok(page) = parse_result::<AgentEventsResult>(name::AGENT_EVENTS, result)
        {
            self.print(page);
        }
        self.done = true;
    }
}

/// The progress on stderr: a line per event, and on a terminal a spinner line between them
/// that each line replaces.
#[derive(Default)]
struct Display {
    terminal: bool,
    progress: AgentProgress,
    step: u64,
    frame: usize,
    spinner_shown: bool,
}

impl Display {
    /// One progress line.
    fn line(&mut self, line: &str) {
        self.clear();
        eprintln!("tool-cli: agent: {}", sanitize::text(line));
    }

    /// Turns the spinner (a terminal only).
    fn spin(&mut self) {
        const FRAMES: [char; 4] = ['|', '/', '-', '\\'];
        self.frame = (self.frame + 1) % FRAMES.len();
        let cost = if self.progress.unpriced {
            "cost unknown".to_owned()
        } else {
            format!("${:.4}", self.progress.cost_usd)
        };
        // Carriage return and erase-line: the spinner rewrites its own line.
        eprint!(
            "\r\x1b[2K{} working: step {}, {cost} so far",
            FRAMES[self.frame], self.step
        );
        self.spinner_shown = true;
    }

    /// Erases the spinner line, if one is shown.
    fn clear(&mut self) {
        if self.spinner_shown {
            eprint!("\r\x1b[2K");
            self.spinner_shown = false;
        }
    }
}

/// The answer on stdout (the whole result with `--json`, as the daemon sent it), then the exit
/// code of the status.
fn finish(output: &mut Output<'_>, run_id: &str, result: Value) -> Result<(), Error> {
    let run: RunAgentResult = parse_result(name::RUN_AGENT, result.clone())?;
    if output.json {
        output.emit_json(&result)?;
    } else if !run.answer.is_empty() {
        output.emit_result_text(&run.answer)?;
    }
    let reason = match run.status {
        RunStatus::Completed => return Ok(()),
        RunStatus::Halted => run
            .halt_reason
            .map(|reason| reason.as_str().to_owned())
            .unwrap_or_default(),
        // The answer (on stdout already) says why; keyFacts.reason says it short.
        RunStatus::Cannot | RunStatus::Refused => run
            .key_facts
            .get("reason")
            .and_then(Value::as_str)
            .map_or_else(|| run.answer.clone(), str::to_owned),
        RunStatus::Failed => run.error.clone().unwrap_or_default(),
    };
    Err(Error::AgentStopped {
        run_id: run_id.to_owned(),
        status: run.status.as_str().to_owned(),
        reason: if reason.is_empty() {
            "no reason given".to_owned()
        } else {
            reason
        },
        setting: run.halt_detail.and_then(|detail| detail.setting),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run out of steps as the daemon answers it: its events, then its result, with a member
    /// a newer daemon might add.
    fn halted_run() -> (Value, Value) {
        let usage = json!({"tokensIn": 0, "tokensOut": 0, "cacheRead": 0, "cacheWrite": 0,
                           "costUsd": 0.0, "llmCalls": 1});
        let answer = "no final answer: the run halted (max_steps) after 1 tool calls";
        let events = json!({"events": [
            {"runId": "r1", "seq": 1, "type": "started", "task": "Which customer?",
             "backend": "offline", "model": "offline-planner",
             "availableTools": ["demo/describe_schema", "demo/sql_query"]},
            {"runId": "r1", "seq": 2, "type": "llm_call", "step": 1, "usage": usage,
             "stopReason": "tool_use", "toolCalls": 1, "latencyMs": 0},
            {"runId": "r1", "seq": 3, "type": "tool_call", "step": 1, "server": "demo",
             "tool": "describe_schema", "arguments": {}, "dryRun": false},
            {"runId": "r1", "seq": 4, "type": "tool_result", "step": 1, "server": "demo",
             "tool": "describe_schema", "isError": false, "resultSummary": "{\"tables\":[]}",
             "latencyMs": 2, "selectionRule": "named"},
            {"runId": "r1", "seq": 5, "type": "final", "status": "halted", "answer": answer,
             "haltReason": "max_steps",
             "haltDetail": {"message": "the step budget of 1 ran out", "setting": "maxSteps"},
             "usage": usage}],
            "done": true, "dropped": 0, "lastSeq": 5});
        let result = json!({"runId": "r1", "status": "halted", "answer": answer, "keyFacts": {},
            "toolCalls": [{"step": 1, "server": "demo", "tool": "describe_schema",
                "arguments": {}, "resultSummary": "{\"tables\":[]}", "isError": false,
                "latencyMs": 2, "selectionRule": "named"}],
            "usage": usage, "haltReason": "max_steps",
            "haltDetail": {"message": "the step budget of 1 ran out", "setting": "maxSteps"},
            "availableTools": ["demo/describe_schema", "demo/sql_query"],
            "backend": "offline", "model": "offline-planner", "eventsDropped": 0,
            "newerMember": {"kept": true}});
        (events, result)
    }

    /// Output to a buffer, not a terminal, as plain text or `--json`.
    fn output_to(stdout: &mut Vec<u8>, json: bool) -> Output<'_> {
        Output {
            json,
            out: None,
            stdout,
            terminal: false,
        }
    }

    #[test]
    fn a_typed_run_is_followed_and_finished_by_its_status() {
        let (events, result) = halted_run();
        let mut follower = Follower::new("r1".into(), false);
        let page = parse_result::<AgentEventsResult>(name::AGENT_EVENTS, events).expect("a page");
        follower.print(page);
        assert_eq!((follower.after, follower.done), (5, true));
        assert_eq!(follower.display.step, 1);
        assert!(!follower.display.progress.unpriced);

        let mut stdout = Vec::new();
        let mut output = output_to(&mut stdout, false);
        let stopped = finish(&mut output, "r1", result.clone()).unwrap_err();
        let Error::AgentStopped {
            status,
            reason,
            setting,
            ..
        } = stopped
        else {
            panic!("{stopped:?}");
        };
        assert_eq!(
            (status.as_str(), reason.as_str(), setting.as_deref()),
            ("halted", "max_steps", Some("maxSteps"))
        );
        assert_eq!(
            String::from_utf8(stdout).unwrap(),
            "no final answer: the run halted (max_steps) after 1 tool calls\n"
        );

        // `--json` shows the result as the daemon sent it, members this client does not know too.
        let mut stdout = Vec::new();
        let mut output = output_to(&mut stdout, true);
        let _ = finish(&mut output, "r1", result.clone());
        let shown: Value = serde_json::from_slice(&stdout).expect("JSON on stdout");
        assert_eq!(shown, result);
    }

    #[test]
    fn a_completed_run_succeeds_and_a_malformed_result_is_named() {
        let (_, mut result) = halted_run();
        result["status"] = json!("completed");
        let mut stdout = Vec::new();
        let mut output = output_to(&mut stdout, false);
        assert!(finish(&mut output, "r1", result.clone()).is_ok());
        result["status"] = json!("finished-somehow");
        let error = finish(&mut output, "r1", result).unwrap_err();
        assert!(
            matches!(&error, Error::Protocol(message) if message.contains("runAgent")),
            "{error:?}"
        );
    }
}
