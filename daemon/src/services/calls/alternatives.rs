//! `callTool` with `alternatives: true`: when a call fails in a way another tool might get
//! around, the answer also names the tools the caller can see that best match the failed one.
//!
//! The call itself goes through the pipeline exactly as without the flag; this step runs after
//! it, on the outcome. When the failure is the server's (down, or its breaker open) and the tool
//! is read-only, the calls service tries the call once more, through the same pipeline, routed
//! among the *other* servers offering a read-only tool of that name whose schema accepts the
//! arguments (rule `alternative`; see `RoutingFacts::instead_of`), within what is left of the
//! caller's time ([`stand_in_request`]). Otherwise it only reads: it
//! asks `searchTools` (so the caller's scope and the servers' policies decide what may be named,
//! exactly as for a search) with the failed tool's name and description, and calls nothing.
//! Which failures qualify and what text is searched are pure decisions, tested here without a
//! daemon.

use tool_cli_protocol::ErrorData;
use tool_cli_protocol::search::{MAX_ALTERNATIVES, SearchToolsParams, ToolAlternative};
use tool_cli_search::search::MAX_QUERY_BYTES;

use std::time::Duration;

use tokio::time::Instant;

use super::Calls;
use crate::error::Error;
use crate::pipeline::{CallAnswer, CallContext, CallRequest, listed};

/// How much of the failed tool's description goes into the search text: its opening says what
/// it does; the whole of a long one would drown the name.
const DESCRIPTION_BYTES: usize = 1024;

/// Whether a failure is one another tool might get around: the tool or server does not exist
/// (a renamed or moved tool), the server cannot be reached or keeps failing, or it answered
/// with an error. Failures the caller must fix in the call itself (arguments, permissions,
/// confirmation, the session's guards, bad params) and a full queue (retry the same tool) do
/// not qualify.
pub(crate) fn failure_wants_alternatives(data: Option<&ErrorData>) -> bool {
    matches!(
        data,
        Some(
            ErrorData::UnknownTool { .. }
                | ErrorData::UnknownServer { .. }
                | ErrorData::ServerUnavailable { .. }
                | ErrorData::ServerExited { .. }
                | ErrorData::CircuitOpen { .. }
                | ErrorData::Timeout { .. }
                | ErrorData::Upstream { .. }
                | ErrorData::InvalidResult { .. }
        )
    )
}

/// The server a failure says is down or shed by its breaker: the failures that may move a
/// read-only call to another server. (A timeout or an upstream error may have had effects, or
/// say something about the request: those are reported, not retried elsewhere.)
pub(crate) fn server_down(data: Option<&ErrorData>) -> Option<&str> {
    match data? {
        ErrorData::CircuitOpen { server, .. }
        | ErrorData::ServerUnavailable { server, .. }
        | ErrorData::ServerExited { server, .. } => Some(server),
        _ => None,
    }
}

/// The text searched for alternatives to `tool`: its name (which the search splits at
/// underscores, humps and dashes) and the opening of its description when it is known, within
/// the search's length cap.
pub(crate) fn search_text(tool: &str, description: Option<&str>) -> String {
    let mut text = String::from(tool);
    if let Some(description) = description.filter(|d| !d.trim().is_empty()) {
        text.push_str(". ");
        text.push_str(cut(description, DESCRIPTION_BYTES));
    }
    cut(&text, MAX_QUERY_BYTES).to_owned()
}

/// The longest prefix of `text` of at most `max` bytes ending on a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The request of a stand-in call starting at `starts`: the failed one, routed elsewhere,
/// with only what is left of the caller's time. The caller's call arrived at `arrived` and had
/// its own timeout, or the failed server's (`failed_timeout`); the stand-in ends by the same
/// deadline, never by one of its own (which would give the caller up to twice its timeout).
/// `None` when no time is left.
pub(crate) fn stand_in_request(
    mut request: CallRequest,
    arrived: Instant,
    failed_timeout: Duration,
    starts: Instant,
) -> Option<CallRequest> {
    let deadline = crate::pipeline::call_deadline(
        arrived,
        request.timeout,
        request.progress_resets_timeout,
        failed_timeout,
    );
    let left = deadline.saturating_duration_since(starts);
    if left.is_zero() {
        return None;
    }
    let timeout = request.timeout.unwrap_or(failed_timeout);
    request.server = None;
    request.timeout = Some(timeout.min(left));
    if request.progress_resets_timeout.is_some() {
        request.progress_resets_timeout = Some(left);
    }
    Some(request)
}

/// For an unknown tool, the visible tool its name is a typo of, as the error's "did you mean"
/// would pick it: the closest of the error's `knownTools` within typo distance (`echo` for
/// `echoo`), with its server when the names are `server/tool` (a routed call's). A search for a
/// misspelt name finds nothing; a search for the meant one finds it.
pub(crate) fn meant_tool<'a>(
    data: Option<&'a ErrorData>,
    tool: &str,
) -> Option<(Option<&'a str>, &'a str)> {
    let Some(ErrorData::UnknownTool {
        server,
        known_tools,
        ..
    }) = data
    else {
        return None;
    };
    let routed = server == "*";
    let named = known_tools.iter().map(|known| match known.split_once('/') {
        Some((server, name)) if routed => (Some(server), name),
        _ => (None, known.as_str()),
    });
    let names: Vec<(Option<&str>, &str)> = named.collect();
    let closest = crate::suggest::closest(tool, names.iter().map(|(_, name)| *name), 1);
    let meant = *closest.first()?;
    names.into_iter().find(|(_, name)| *name == meant)
}

/// The server of the failed call, when it is known: the one named, or the one that ran it.
fn failed_server(named: Option<&str>, ran_on: Option<&str>) -> Option<String> {
    named
        .filter(|server| *server != "*")
        .or(ran_on)
        .map(str::to_owned)
}

impl Calls {
    /// Adds alternatives to a `callTool` outcome that qualifies (see
    /// [`failure_wants_alternatives`], and a tool's own error); anything else passes through
    /// unchanged.
    pub(crate) fn with_alternatives(
        &self,
        outcome: Result<CallAnswer, Error>,
        server: Option<&str>,
        tool: &str,
        context: &CallContext,
    ) -> Result<CallAnswer, Error> {
        match outcome {
            Ok(CallAnswer::Ran(mut ran)) if ran.facts.is_error => {
                let server = failed_server(server, Some(&ran.facts.server));
                ran.alternatives = Some(self.alternatives_to(server.as_deref(), tool, context));
                Ok(CallAnswer::Ran(ran))
            }
            Err(error) if failure_wants_alternatives(error.data()) => {
                let server = failed_server(server, None).or_else(|| match error.data() {
                    Some(ErrorData::UnknownTool { server, .. }) => Some(server.clone()),
                    _ => None,
                });
                let alternatives = match meant_tool(error.data(), tool) {
                    Some((meant_server, meant)) => self.alternatives_to_named(
                        server.as_deref(),
                        tool,
                        (meant_server.or(server.as_deref()), meant),
                        context,
                    ),
                    None => self.alternatives_to(server.as_deref(), tool, context),
                };
                Err(Error::WithAlternatives {
                    error: Box::new(error),
                    alternatives,
                })
            }
            other => other,
        }
    }

    /// The server to route around (and its call timeout) when `outcome` failed because the
    /// server running `tool` is down, and that tool is read-only and visible to the caller;
    /// `None` otherwise.
    pub(crate) fn stand_in_for(
        &self,
        outcome: &Result<CallAnswer, Error>,
        tool: &str,
        context: &CallContext,
    ) -> Option<(String, Duration)> {
        let failed = server_down(outcome.as_ref().err()?.data())?;
        self.pipeline.slots().iter().find_map(|slot| {
            let info = slot.upstream.info();
            if info.name != failed {
                return None;
            }
            let catalog = slot.upstream.catalog();
            let found = catalog.get(tool)?;
            (found.hints.read_only && listed(&context.grant, slot, found))
                .then(|| (failed.to_owned(), info.settings.call_timeout))
        })
    }

    /// The tools the caller can see that best match `tool` (on `server`, when known), itself
    /// excluded, at most [`MAX_ALTERNATIVES`]. A search that cannot run (a name with nothing
    /// searchable in it) finds none: the failure is what the caller must hear about.
    fn alternatives_to(
        &self,
        server: Option<&str>,
        tool: &str,
        context: &CallContext,
    ) -> Vec<ToolAlternative> {
        self.alternatives_to_named(server, tool, (server, tool), context)
    }

    /// [`Calls::alternatives_to`] for a failed `tool`, searched as `searched` (the server
    /// and tool a misspelt name was meant to be, whose own name and description find it and its
    /// kin).
    fn alternatives_to_named(
        &self,
        server: Option<&str>,
        tool: &str,
        searched: (Option<&str>, &str),
        context: &CallContext,
    ) -> Vec<ToolAlternative> {
        let description = self.visible_description(searched.0, searched.1, context);
        let query = search_text(searched.1, description.as_deref());
        let params = SearchToolsParams {
            query,
            limit: Some(MAX_ALTERNATIVES as i64 + 1),
            session_id: context.session_id.clone(),
            ..SearchToolsParams::default()
        };
        let Ok(found) = self.discovery.search_tools(params, context) else {
            return Vec::new();
        };
        found
            .results
            .into_iter()
            .filter(|hit| !(hit.tool == tool && server.is_none_or(|server| hit.server == server)))
            .take(MAX_ALTERNATIVES)
            .map(|hit| ToolAlternative {
                server: hit.server,
                tool: hit.tool,
                description: hit.description,
                score: hit.score,
            })
            .collect()
    }

    /// The description of `tool` on `server` (or on the first server offering it), if the
    /// caller may see that tool.
    fn visible_description(
        &self,
        server: Option<&str>,
        tool: &str,
        context: &CallContext,
    ) -> Option<String> {
        self.pipeline.slots().iter().find_map(|slot| {
            let name = &slot.upstream.info().name;
            if server.is_some_and(|server| server != name) {
                return None;
            }
            let catalog = slot.upstream.catalog();
            let found = catalog.get(tool)?;
            listed(&context.grant, slot, found).then(|| found.description().to_owned())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_misspelt_tool_is_searched_as_the_tool_it_was_meant_to_be() {
        let unknown = |known: &[&str]| ErrorData::UnknownTool {
            server: "fault".into(),
            tool: "echoo".into(),
            known_tools: known.iter().map(|name| (*name).to_owned()).collect(),
            discovered_tools: Vec::new(),
            tool_count: known.len(),
        };
        let typo = unknown(&["env", "echo", "sleep"]);
        assert_eq!(meant_tool(Some(&typo), "echoo"), Some((None, "echo")));
        // A routed call's names are `server/tool`.
        let routed = ErrorData::UnknownTool {
            server: "*".into(),
            tool: "echoo".into(),
            known_tools: vec!["fault/echo".into()],
            discovered_tools: Vec::new(),
            tool_count: 16,
        };
        assert_eq!(
            meant_tool(Some(&routed), "echoo"),
            Some((Some("fault"), "echo"))
        );
        // Nothing close enough to be a typo: the name itself is searched.
        let far = unknown(&["sleep", "crash"]);
        assert_eq!(meant_tool(Some(&far), "echoo"), None);
        let timeout = ErrorData::Timeout {
            server: "fault".into(),
            tool: "echo".into(),
            timeout_ms: 10,
        };
        assert_eq!(meant_tool(Some(&timeout), "echo"), None);
    }

    #[test]
    fn only_failures_another_tool_might_get_around_qualify() {
        let unknown_tool = ErrorData::UnknownTool {
            server: "fs".into(),
            tool: "read".into(),
            known_tools: Vec::new(),
            discovered_tools: Vec::new(),
            tool_count: 0,
        };
        assert!(failure_wants_alternatives(Some(&unknown_tool)));
        let timeout = ErrorData::Timeout {
            server: "fs".into(),
            tool: "read".into(),
            timeout_ms: 10,
        };
        assert!(failure_wants_alternatives(Some(&timeout)));
        let bad_params = ErrorData::InvalidParams {
            method: "callTool".into(),
            message: "no".into(),
        };
        assert!(!failure_wants_alternatives(Some(&bad_params)));
        let busy = ErrorData::Busy {
            server: "fs".into(),
            in_flight: 1,
            queued: 1,
            retry_after_ms: 10,
        };
        assert!(!failure_wants_alternatives(Some(&busy)));
        // An internal fault has no data: nothing to say about it.
        assert!(!failure_wants_alternatives(None));
    }

    #[test]
    fn only_a_server_that_is_down_or_shed_moves_a_call() {
        let open = ErrorData::CircuitOpen {
            server: "fs".into(),
            retry_after_ms: 10,
            last_error: None,
        };
        assert_eq!(server_down(Some(&open)), Some("fs"));
        let unavailable = ErrorData::ServerUnavailable {
            server: "fs".into(),
            state: "restarting".into(),
            last_error: None,
        };
        assert_eq!(server_down(Some(&unavailable)), Some("fs"));
        let exited = ErrorData::ServerExited {
            server: "fs".into(),
            exit: "exit code 1".into(),
            stderr_tail: Vec::new(),
        };
        assert_eq!(server_down(Some(&exited)), Some("fs"));
        // A timeout may have had effects; an upstream error says something about the request.
        let timeout = ErrorData::Timeout {
            server: "fs".into(),
            tool: "read".into(),
            timeout_ms: 10,
        };
        assert_eq!(server_down(Some(&timeout)), None);
        assert_eq!(server_down(None), None);
    }

    #[test]
    fn the_search_text_is_the_name_and_the_opening_of_the_description_within_the_cap() {
        assert_eq!(search_text("read_file", None), "read_file");
        assert_eq!(search_text("read_file", Some("  ")), "read_file");
        assert_eq!(
            search_text("read_file", Some("Read a file.")),
            "read_file. Read a file."
        );
        let long = "é".repeat(5_000);
        let text = search_text("t", Some(&long));
        assert!(text.len() <= 1 + 2 + DESCRIPTION_BYTES, "{}", text.len());
        let huge_name = "x".repeat(1_000_000);
        assert_eq!(search_text(&huge_name, None).len(), MAX_QUERY_BYTES);
    }

    #[test]
    fn the_failed_server_is_the_named_one_or_the_routed_one() {
        assert_eq!(failed_server(Some("fs"), None).as_deref(), Some("fs"));
        assert_eq!(failed_server(Some("*"), Some("b")).as_deref(), Some("b"));
        assert_eq!(failed_server(None, Some("b")).as_deref(), Some("b"));
        assert_eq!(failed_server(None, None), None);
    }
    #[test]
    fn a_stand_in_gets_what_is_left_of_the_callers_time() {
        let arrived = Instant::now();
        let request = |timeout: Option<u64>, progress: Option<u64>| CallRequest {
            server: Some("down".into()),
            tool: "look".into(),
            timeout: timeout.map(Duration::from_millis),
            progress_resets_timeout: progress.map(Duration::from_millis),
            task: None,
            ..CallRequest::default()
        };
        let failed_timeout = Duration::from_millis(5_000);
        let at = |ms| arrived + Duration::from_millis(ms);
        // The caller's 10 s, 3 s of it spent: 7 s left, routed elsewhere.
        let stand_in = stand_in_request(
            request(Some(10_000), None),
            arrived,
            failed_timeout,
            at(3_000),
        )
        .unwrap();
        assert_eq!(stand_in.timeout, Some(Duration::from_millis(7_000)));
        assert_eq!(stand_in.server, None);
        // No timeout of the caller's: the failed server's was the call's.
        let stand_in =
            stand_in_request(request(None, None), arrived, failed_timeout, at(1_000)).unwrap();
        assert_eq!(stand_in.timeout, Some(Duration::from_millis(4_000)));
        // A timeout restarted by progress: an idle bound within what is left in all.
        let stand_in = stand_in_request(
            request(Some(2_000), Some(60_000)),
            arrived,
            failed_timeout,
            at(50_000),
        )
        .unwrap();
        assert_eq!(stand_in.timeout, Some(Duration::from_millis(2_000)));
        assert_eq!(
            stand_in.progress_resets_timeout,
            Some(Duration::from_millis(10_000))
        );
        // Nothing left: no stand-in.
        assert!(
            stand_in_request(
                request(Some(10_000), None),
                arrived,
                failed_timeout,
                at(10_000)
            )
            .is_none()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_stand_in_call_ends_by_the_callers_deadline() {
        use crate::pipeline::tests::{Behaviour, FakeProvider, FakeServer, owner, tool};
        use std::sync::Arc;
        let look = tool(
            "look",
            json!({"type": "object"}),
            json!({"readOnlyHint": true}),
        );
        let down = Arc::new(FakeServer::new(
            "down",
            vec![(look.clone(), Behaviour::Crash)],
        ));
        let slow = Arc::new(FakeServer::new("slow", vec![(look, Behaviour::Hang)]));
        let services = crate::services::Services::for_tests(Arc::new(FakeProvider(vec![
            Arc::clone(&down),
            Arc::clone(&slow),
        ])));
        let context = CallContext::new(owner());
        let params = serde_json::from_value(json!({"server": "down", "tool": "look",
            "alternatives": true, "timeoutMs": 10_000}))
        .unwrap();
        let outcome = services.calls.call_tool(params, &context).await;
        // The server was down (its crashes retried), the stand-in ran on "slow" and hung: the
        // caller hears of the first failure, and no later than its own timeout.
        assert_eq!(outcome.unwrap_err().kind(), "serverExited");
        assert!(down.calls() > 0);
        assert_eq!(
            *slow.deadlines.lock().unwrap(),
            [context.arrived + Duration::from_secs(10)],
            "the stand-in had the caller's deadline, not one of its own"
        );
    }
}
