//! A tool call that shows its progress on stderr while it runs.
//!
//! The client names the call itself (`progressId`), sends `callTool` on its connection and, on a
//! second one, long-polls `callEvents` for that id: the server's `notifications/progress` for the
//! call and its `notifications/message` while the call runs. On a terminal they draw an
//! [`indicatif`] bar (log messages printed above it); otherwise, when `--progress` asked for them,
//! each event is one plain line (`progress 3/10 message`, `[server level] text`) that a script can
//! read. Progress only moves forward: a notification overtaken by a later one (the daemon relays
//! them as they are handled, which under a flood is not always the order they were sent) is not
//! shown. stdout stays the result alone. When the call answers, the events not shown yet are
//! fetched once more (the call's buffer keeps them a minute), then the bar is cleared.
//!
//! A question the server asks during the call (an `elicitation` event, relayed when the
//! server's config says `"elicitation": "ask"`) is answered through `elicitation.rs`: a form on
//! stderr, or a decline. A call that only needs to answer questions follows its events without
//! showing them ([`Display::Hidden`]).
//!
//! The events request in flight is a future that owns its connection and survives the turns of
//! the loop; each answer hands the connection back for the next request (as `tool-cli agent`
//! does). The daemon bounds what a flood costs: a call keeps its newest 256 events and counts the
//! rest, so one page is at most 256 lines and a dropped count.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Value, json};
use tool_cli_protocol::methods::{CallEventsResult, name};

use crate::args::ProgressChoice;
use crate::client::{Client, ToolCall, parse_result};
use crate::error::Error;
use crate::sanitize;

/// How long one `callEvents` request waits for a new event.
const EVENTS_WAIT: Duration = Duration::from_secs(15);

/// How often the bar's spinner turns.
const TICK: Duration = Duration::from_millis(120);

/// The bar's length: progress is drawn as a share of it, since MCP's progress and total are
/// numbers, not counts.
const BAR_UNITS: u64 = 1000;

/// How a call's progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Display {
    /// An indicatif bar on the terminal, log messages above it.
    Bar,
    /// One plain line per event on stderr.
    Lines,
    /// Nothing shown but the server's questions (`--elicitation ask` without progress).
    Hidden,
}

/// Whether and how the call shows progress: `--no-progress` and a dry-run never; `--progress` as
/// a bar on a terminal, else as lines; neither flag, a bar on a terminal and nothing otherwise.
pub(super) fn display(
    choice: ProgressChoice,
    dry_run: bool,
    stderr_terminal: bool,
) -> Option<Display> {
    match (choice, dry_run, stderr_terminal) {
        (ProgressChoice::Off, _, _) | (_, true, _) => None,
        (_, false, true) => Some(Display::Bar),
        (ProgressChoice::On, false, false) => Some(Display::Lines),
        (ProgressChoice::Auto, false, false) => None,
    }
}

/// One event as a line: `progress 3/10 message` (no `/10` without a total), a server log
/// message as `[server level] text` (the event's server, else `server`, the one called). `None`
/// for an event of a kind this client does not know.
pub(super) fn event_line(event: &Value, server: &str) -> Option<String> {
    let text = |key: &str| event.get(key).and_then(Value::as_str);
    match text("type")? {
        "progress" => {
            let mut line = format!("progress {}", number(event.get("progress")?.as_f64()?));
            if let Some(total) = event.get("total").and_then(Value::as_f64) {
                line.push_str(&format!("/{}", number(total)));
            }
            if let Some(message) = text("message").filter(|message| !message.is_empty()) {
                line.push(' ');
                line.push_str(&sanitize::line(message));
            }
            Some(line)
        }
        "log" => {
            let data = match event.get("data") {
                Some(Value::String(data)) => data.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            Some(format!(
                "[{} {}] {}",
                sanitize::line(text("server").unwrap_or(server)),
                sanitize::line(text("level").unwrap_or("info")),
                sanitize::line(&data)
            ))
        }
        _ => None,
    }
}

/// A progress number as a person writes it: `3`, not `3.0`; `0.25` as is.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// Calls the tool with a fresh `progressId` and shows its events as `display` says until it
/// answers; the call's result (or error) is returned as [`Client::call_tool`] would.
/// `asks` says whether the server's questions are asked of the user (else declined).
pub(super) async fn call_tool(
    client: &mut Client,
    call: ToolCall,
    (display, asks): (Display, bool),
    (server, tool): (&str, &str),
) -> Result<Value, Error> {
    let progress_id = new_progress_id();
    let call = call.progress_id(&progress_id);
    let mut shown = Shown::new(display, server, tool);
    let answers = client.sibling();
    let mut polling = Some(next_poll(client.sibling(), &progress_id, 0, EVENTS_WAIT));
    let result = {
        let run = client.call_tool(&call);
        tokio::pin!(run);
        loop {
            tokio::select! {
                biased;
                result = &mut run => break result,
                (events, polled) = async { polling.as_mut().expect("guarded").await },
                    if polling.is_some() =>
                {
                    polling = match polled {
                        Ok(page) => {
                            for question in shown.page(&page) {
                                let bar = shown.bar.as_ref();
                                if let Err(error) = super::elicitation::answer(
                                    &answers, &progress_id, &question, asks, bar,
                                )
                                .await
                                {
                                    shown.line(&format!(
                                        "tool-cli: note: the server's question was not answered \
                                         ({error})"
                                    ));
                                }
                            }
                            (!page.done)
                                .then(|| next_poll(events, &progress_id, shown.after, EVENTS_WAIT))
                        }
                        Err(error) => {
                            shown.line(&format!(
                                "tool-cli: note: cannot follow the call's progress ({error}); \
                                 waiting for its answer"
                            ));
                            shown.done = true;
                            None
                        }
                    };
                }
            }
        }
    };
    drop(polling);
    // The events that arrived after the last page, unless the daemon could not be reached.
    if !shown.done && matches!(result, Ok(_) | Err(Error::Rpc { .. })) {
        let (_, last) =
            next_poll(client.sibling(), &progress_id, shown.after, Duration::ZERO).await;
        if let Ok(page) = last {
            shown.page(&page);
        }
    }
    shown.finish();
    result
}

/// A `callEvents` request in flight, owning its connection, which it hands back.
type EventsPoll = Pin<Box<dyn Future<Output = (Client, Result<CallEventsResult, Error>)>>>;

/// The next long-poll for the events after `after`.
fn next_poll(mut events: Client, progress_id: &str, after: u64, wait: Duration) -> EventsPoll {
    let params = json!({"progressId": progress_id, "after": after,
                        "waitMs": wait.as_millis() as u64});
    Box::pin(async move {
        let result = match events
            .call_with_timeout(name::CALL_EVENTS, Some(params), wait * 2 + EVENTS_WAIT)
            .await
        {
            Ok(result) => parse_result(name::CALL_EVENTS, result),
            Err(error) => Err(error),
        };
        (events, result)
    })
}

/// A `progressId` of the client's choosing: unique enough per machine (pid and clock).
fn new_progress_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or(0);
    format!("cli-{}-{nanos:x}", std::process::id())
}

/// What has been shown: the last `seq`, how many events were missed (gaps in the `seq`s: the
/// daemon's `dropped` counts every event its buffer let go, read or not), and the bar.
struct Shown {
    display: Display,
    server: String,
    after: u64,
    missed: u64,
    done: bool,
    /// The last progress shown.
    last_progress: Option<f64>,
    bar: Option<ProgressBar>,
}

impl Shown {
    fn new(display: Display, server: &str, tool: &str) -> Shown {
        let bar = (display == Display::Bar).then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix} {wide_msg}")
                    .expect("the template is valid"),
            );
            bar.set_prefix(format!(
                "{}/{}",
                sanitize::line(server),
                sanitize::line(tool)
            ));
            bar.enable_steady_tick(TICK);
            bar
        });
        Shown {
            display,
            server: server.to_owned(),
            after: 0,
            missed: 0,
            done: false,
            last_progress: None,
            bar,
        }
    }

    /// Shows a page of events; the server's questions in it, to answer.
    fn page(&mut self, page: &CallEventsResult) -> Vec<Value> {
        let mut questions = Vec::new();
        let mut missed = 0;
        for event in &page.events {
            let seq = event.get("seq").and_then(Value::as_u64).unwrap_or(0);
            if seq <= self.after {
                continue;
            }
            // The seqs between are events the call's buffer let go before this client read them.
            missed += seq - self.after - 1;
            self.after = seq;
            if !self.moves_forward(event) {
                continue;
            }
            match (&self.bar, event.get("type").and_then(Value::as_str)) {
                (_, Some("elicitation")) => questions.push(event.clone()),
                (_, Some("elicitationClosed")) => self.line(&format!(
                    "tool-cli: note: the server's question was declined by the daemon: {}",
                    sanitize::line(event.get("reason").and_then(Value::as_str).unwrap_or(""))
                )),
                (_, _) if self.display == Display::Hidden => {}
                (Some(bar), Some("progress")) => draw(bar, event),
                _ => {
                    if let Some(line) = event_line(event, &self.server) {
                        self.line(&line);
                    }
                }
            }
        }
        if missed > 0 && self.display != Display::Hidden {
            self.line(&format!(
                "tool-cli: note: {missed} progress events were dropped by the daemon before they \
                 could be shown (a call keeps its newest 256)"
            ));
            self.missed += missed;
        }
        self.done |= page.done;
        questions
    }

    /// Whether the event is not a progress notification that a later one has overtaken: the
    /// daemon relays a server's notifications as they are handled, which under a flood is not
    /// always the order they were sent, and MCP's progress only increases.
    fn moves_forward(&mut self, event: &Value) -> bool {
        if event.get("type").and_then(Value::as_str) != Some("progress") {
            return true;
        }
        let Some(progress) = event.get("progress").and_then(Value::as_f64) else {
            return true;
        };
        if self.last_progress.is_some_and(|last| progress <= last) {
            return false;
        }
        self.last_progress = Some(progress);
        true
    }

    /// A line on stderr, above the bar when there is one.
    fn line(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// A progress event on the bar: a share of it when the total is known, else the count.
fn draw(bar: &ProgressBar, event: &Value) {
    let progress = event.get("progress").and_then(Value::as_f64).unwrap_or(0.0);
    let total = event
        .get("total")
        .and_then(Value::as_f64)
        .filter(|total| *total > 0.0);
    let message = event
        .get("message")
        .and_then(Value::as_str)
        .map(|message| sanitize::line(message).into_owned())
        .unwrap_or_default();
    match total {
        Some(total) => {
            if bar.length() != Some(BAR_UNITS) {
                bar.set_length(BAR_UNITS);
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {prefix} [{bar:20}] {msg}")
                        .expect("the template is valid")
                        .progress_chars("=> "),
                );
            }
            bar.set_position(((progress / total).clamp(0.0, 1.0) * BAR_UNITS as f64) as u64);
            bar.set_message(format!("{}/{} {message}", number(progress), number(total)));
        }
        None => bar.set_message(format!("{} {message}", number(progress))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_display_follows_the_flags_and_the_terminal() {
        use ProgressChoice::{Auto, Off, On};
        assert_eq!(display(Auto, false, true), Some(Display::Bar));
        assert_eq!(display(Auto, false, false), None);
        assert_eq!(display(On, false, true), Some(Display::Bar));
        assert_eq!(display(On, false, false), Some(Display::Lines));
        assert_eq!(display(Off, false, true), None);
        assert_eq!(display(On, true, false), None, "a dry-run runs nothing");
    }

    #[test]
    fn progress_only_moves_forward_and_drops_are_counted_once() {
        let mut shown = Shown::new(Display::Lines, "everything", "t");
        let progress = |seq: u64, progress: f64| json!({"seq": seq, "type": "progress", "progress": progress, "total": 9.0});
        let page = CallEventsResult {
            events: vec![
                progress(1, 1.0),
                // 2 was let go by the daemon's buffer.
                progress(3, 3.0),
                progress(4, 2.0),
                json!({"seq": 5, "type": "log", "level": "info", "data": "x"}),
                progress(6, 4.0),
            ],
            done: false,
            dropped: 7,
        };
        let mut probe = Shown::new(Display::Lines, "everything", "t");
        assert!(probe.moves_forward(&page.events[0]));
        assert!(probe.moves_forward(&page.events[1]));
        assert!(!probe.moves_forward(&page.events[2]), "overtaken by 3");
        assert!(probe.moves_forward(&page.events[3]), "logs always pass");
        assert!(probe.moves_forward(&page.events[4]));
        shown.page(&page);
        assert_eq!(
            (shown.after, shown.missed),
            (6, 1),
            "missed from the seq gap"
        );
        // A page repeating old seqs shows nothing again and misses nothing more.
        shown.page(&page);
        assert_eq!((shown.after, shown.missed), (6, 1));
    }

    #[test]
    fn events_become_plain_lines() {
        let line = |event: Value| event_line(&event, "everything");
        assert_eq!(
            line(json!({"seq": 1, "type": "progress", "progress": 3.0, "total": 10.0})),
            Some("progress 3/10".to_owned())
        );
        assert_eq!(
            line(json!({"type": "progress", "progress": 0.5, "message": "half\nway"})),
            Some("progress 0.5 half^Jway".to_owned())
        );
        assert_eq!(
            line(json!({"type": "log", "level": "warning", "data": "disk low"})),
            Some("[everything warning] disk low".to_owned())
        );
        assert_eq!(
            line(json!({"type": "log", "server": "other", "level": "info",
                        "data": {"a": 1}})),
            Some("[other info] {\"a\":1}".to_owned())
        );
        assert_eq!(line(json!({"type": "hologram"})), None);
        assert_eq!(line(json!({"type": "progress"})), None);
    }
}
