//! The JSON document of `tool-cli chain FILE` and `tool-cli many FILE`, checked, and the command
//! line's flags merged into it: the `callChain` or `callMany` params to send.
//!
//! The daemon ignores members it does not know, so a step written `{"args": {...}}` would run
//! with no arguments at all; here every member is checked against the protocol's names (with
//! the closest one suggested) and its JSON type, and each message names the file and the place
//! (`steps[1].arguments`). What only the daemon can judge (the 64-step and 256-call limits,
//! bindings that look forward, unknown servers and tools) is left to it, so there is one rule
//! for every client. Pure: the text comes in, the params go out.
//!
//! Flags fill in what the document leaves out: `--session` (or `TOOL_CLI_SESSION`) the
//! session, `--timeout` the chain's timeout or each call's, `--max-concurrent` the fan-out's
//! width; `--dry-run` and `--yes` turn on `dryRun` and `confirm` everywhere. A session or width
//! the document sets differently from the flag is a usage error rather than a silent choice.

use serde_json::{Map, Value};
use tool_cli_protocol::methods::{CallToolParams, name};
use tool_cli_protocol::orchestration::{CallChainParams, CallManyParams, ChainStep};

use super::chain::{BatchKind, CallWord};
use super::describe_json_error;
use crate::error::{Error, did_you_mean};
use tool_cli_protocol::json::kind as json_kind;

/// What the command line adds to the document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BatchFlags {
    /// `--session`, else `TOOL_CLI_SESSION`.
    pub(crate) session: Option<String>,
    /// `--dry-run`.
    pub(crate) dry_run: bool,
    /// `--yes`.
    pub(crate) confirm: bool,
    /// `--timeout` or `TOOL_CLI_TIMEOUT_MS`, in milliseconds.
    pub(crate) timeout_ms: Option<u64>,
    /// `--max-concurrent` (`many`).
    pub(crate) max_concurrent: Option<usize>,
}

/// The request to send.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BatchRequest {
    /// `callChain`.
    Chain(CallChainParams),
    /// `callMany`.
    Many(CallManyParams),
}

/// One call as it was asked for, to label its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Requested {
    /// `None`: routed.
    pub(crate) server: Option<String>,
    pub(crate) tool: String,
    /// Whether it is a dry-run (its result is a plan).
    pub(crate) dry_run: bool,
}

impl BatchRequest {
    /// The JSON-RPC method.
    pub(crate) fn method(&self) -> &'static str {
        match self {
            BatchRequest::Chain(_) => name::CALL_CHAIN,
            BatchRequest::Many(_) => name::CALL_MANY,
        }
    }

    /// The params as JSON.
    pub(crate) fn params(&self) -> Value {
        let encoded = match self {
            BatchRequest::Chain(params) => serde_json::to_value(params),
            BatchRequest::Many(params) => serde_json::to_value(params),
        };
        encoded.expect("plain data types always encode")
    }

    /// Each call, in order.
    pub(crate) fn requested(&self) -> Vec<Requested> {
        match self {
            BatchRequest::Chain(params) => params
                .steps
                .iter()
                .map(|step| Requested {
                    server: step.server.clone(),
                    tool: step.tool.clone(),
                    dry_run: params.dry_run == Some(true),
                })
                .collect(),
            BatchRequest::Many(params) => params
                .calls
                .iter()
                .map(|call| Requested {
                    server: call.server.clone(),
                    tool: call.tool.clone(),
                    dry_run: call.dry_run == Some(true),
                })
                .collect(),
        }
    }

    /// The longest the daemon may take, when the request bounds it: a chain's `timeoutMs`.
    pub(crate) fn timeout_ms(&self) -> Option<u64> {
        match self {
            BatchRequest::Chain(params) => params.timeout_ms,
            BatchRequest::Many(_) => None,
        }
    }
}

/// The JSON type a member must have.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Text,
    Object,
    Array,
    Boolean,
    Count,
}

impl Kind {
    fn accepts(self, value: &Value) -> bool {
        match self {
            Kind::Text => value.is_string(),
            Kind::Object => value.is_object(),
            Kind::Array => value.is_array(),
            Kind::Boolean => value.is_boolean(),
            Kind::Count => value.is_u64(),
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Kind::Text => "a string",
            Kind::Object => "a JSON object",
            Kind::Array => "an array",
            Kind::Boolean => "true or false",
            Kind::Count => "a whole number of 0 or more",
        }
    }
}

/// `callChain`'s members (`CallChainParams`).
const CHAIN_MEMBERS: &[(&str, Kind)] = &[
    ("steps", Kind::Array),
    ("sessionId", Kind::Text),
    ("timeoutMs", Kind::Count),
    ("confirm", Kind::Boolean),
    ("dryRun", Kind::Boolean),
];

/// A step's members (`ChainStep`).
const STEP_MEMBERS: &[(&str, Kind)] = &[
    ("server", Kind::Text),
    ("tool", Kind::Text),
    ("arguments", Kind::Object),
    ("bind", Kind::Object),
    ("hint", Kind::Text),
];

/// `callMany`'s members (`CallManyParams`).
const MANY_MEMBERS: &[(&str, Kind)] = &[
    ("calls", Kind::Array),
    ("maxConcurrent", Kind::Count),
    ("sessionId", Kind::Text),
];

/// A call's members (`CallToolParams`).
const CALL_MEMBERS: &[(&str, Kind)] = &[
    ("server", Kind::Text),
    ("tool", Kind::Text),
    ("arguments", Kind::Object),
    ("timeoutMs", Kind::Count),
    ("sessionId", Kind::Text),
    ("confirm", Kind::Boolean),
    ("dryRun", Kind::Boolean),
    ("hint", Kind::Text),
    ("idempotencyKey", Kind::Text),
    ("alternatives", Kind::Boolean),
    ("progress", Kind::Boolean),
    ("progressId", Kind::Text),
    ("resetTimeoutOnProgress", Kind::Boolean),
    ("maxTotalTimeoutMs", Kind::Count),
];

/// Names people write for a member, and the member they mean.
const ALIASES: &[(&str, &str)] = &[
    ("args", "arguments"),
    ("params", "arguments"),
    ("parameters", "arguments"),
    ("input", "arguments"),
    ("name", "tool"),
    ("session", "sessionId"),
    ("timeout", "timeoutMs"),
];

/// The params of the document `text`; `origin` names it in messages (`steps.json`, `stdin`).
pub(crate) fn from_document(
    kind: BatchKind,
    text: &str,
    origin: &str,
) -> Result<BatchRequest, Error> {
    let (top, item, list) = match kind {
        BatchKind::Chain => (CHAIN_MEMBERS, STEP_MEMBERS, "steps"),
        BatchKind::Many => (MANY_MEMBERS, CALL_MEMBERS, "calls"),
    };
    let shape = match kind {
        BatchKind::Chain => {
            "{\"steps\": [{\"server\": \"demo\", \"tool\": \"sql_query\", \"arguments\": {...}}, \
             ...]} or just the array of steps"
        }
        BatchKind::Many => {
            "{\"calls\": [{\"server\": \"demo\", \"tool\": \"sql_query\", \"arguments\": {...}}, \
             ...]} or just the array of calls"
        }
    };
    if text.trim().is_empty() {
        return Err(Error::Usage(format!("{origin} is empty; expected {shape}")));
    }
    let document: Value = serde_json::from_str(text).map_err(|error| {
        Error::Usage(format!(
            "{origin} is not valid JSON: {} at line {}, column {}; expected {shape}",
            describe_json_error(&error),
            error.line(),
            error.column()
        ))
    })?;
    let mut document = match document {
        Value::Array(items) => {
            let mut object = Map::new();
            object.insert(list.to_owned(), Value::Array(items));
            object
        }
        Value::Object(object) => object,
        other => {
            return Err(Error::Usage(format!(
                "{origin} holds {}; expected {shape}",
                json_kind(&other)
            )));
        }
    };
    check_members(&document, top, origin, "the document")?;
    let items = match document.get(list) {
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(Value::Array(_)) => {
            return Err(Error::Usage(format!(
                "{origin} has no {list}: \"{list}\" is empty; give at least one {}",
                kind.item()
            )));
        }
        _ => {
            return Err(Error::Usage(format!(
                "{origin} has no \"{list}\"; expected {shape}"
            )));
        }
    };
    for (index, entry) in items.iter().enumerate() {
        let at = format!("{list}[{index}]");
        let Value::Object(members) = entry else {
            return Err(Error::Usage(format!(
                "{origin}: {at} must be a JSON object such as {{\"server\": \"demo\", \"tool\": \
                 \"sql_query\", \"arguments\": {{...}}}}, got {}",
                json_kind(entry)
            )));
        };
        check_members(members, item, origin, &at)?;
        match members.get("tool") {
            Some(Value::String(tool)) if !tool.trim().is_empty() => {}
            _ => {
                return Err(Error::Usage(format!(
                    "{origin}: {at} names no tool; each {} needs \"tool\" (and \"server\", or \
                     none to let the daemon route it)",
                    kind.item()
                )));
            }
        }
        if kind == BatchKind::Many && members.get("sessionId").is_some_and(|id| !id.is_null()) {
            return Err(Error::Usage(format!(
                "{origin}: {at}.sessionId would be ignored: the calls of `tool-cli many` share \
                 one session; set \"sessionId\" at the top of the document or use --session"
            )));
        }
    }
    // Null members mean "not given", as for the daemon; dropping them keeps the checks above the
    // only ones.
    drop_nulls(&mut document);
    let decoded = match kind {
        BatchKind::Chain => {
            serde_json::from_value(Value::Object(document)).map(BatchRequest::Chain)
        }
        BatchKind::Many => serde_json::from_value(Value::Object(document)).map(BatchRequest::Many),
    };
    decoded.map_err(|error| Error::Usage(format!("{origin} does not fit {shape}: {error}")))
}

/// The params of calls given as words.
pub(crate) fn from_words(kind: BatchKind, calls: Vec<CallWord>) -> BatchRequest {
    match kind {
        BatchKind::Chain => BatchRequest::Chain(CallChainParams {
            steps: calls
                .into_iter()
                .map(|call| ChainStep {
                    server: call.server,
                    tool: call.tool,
                    arguments: call.arguments,
                    bind: None,
                    hint: None,
                })
                .collect(),
            ..CallChainParams::default()
        }),
        BatchKind::Many => BatchRequest::Many(CallManyParams {
            calls: calls
                .into_iter()
                .map(|call| CallToolParams {
                    server: call.server,
                    tool: call.tool,
                    arguments: Some(call.arguments),
                    ..CallToolParams::default()
                })
                .collect(),
            ..CallManyParams::default()
        }),
    }
}

/// The request with the command line's flags merged in (see the module's comment).
pub(crate) fn with_flags(request: BatchRequest, flags: &BatchFlags) -> Result<BatchRequest, Error> {
    let on = |flag: bool, member: Option<bool>| if flag { Some(true) } else { member };
    Ok(match request {
        BatchRequest::Chain(mut params) => {
            params.session_id = merged_session(params.session_id, flags)?;
            params.timeout_ms = params.timeout_ms.or(flags.timeout_ms);
            params.confirm = on(flags.confirm, params.confirm);
            params.dry_run = on(flags.dry_run, params.dry_run);
            BatchRequest::Chain(params)
        }
        BatchRequest::Many(mut params) => {
            params.session_id = merged_session(params.session_id, flags)?;
            params.max_concurrent = match (params.max_concurrent, flags.max_concurrent) {
                (Some(document), Some(flag)) if document != flag => {
                    return Err(Error::Usage(format!(
                        "the document's maxConcurrent {document} and --max-concurrent {flag} \
                         differ; give the width one way"
                    )));
                }
                (document, flag) => document.or(flag),
            };
            for call in &mut params.calls {
                call.timeout_ms = call.timeout_ms.or(flags.timeout_ms);
                call.confirm = on(flags.confirm, call.confirm);
                call.dry_run = on(flags.dry_run, call.dry_run);
            }
            BatchRequest::Many(params)
        }
    })
}

fn merged_session(document: Option<String>, flags: &BatchFlags) -> Result<Option<String>, Error> {
    match (document, &flags.session) {
        (Some(document), Some(flag)) if document != *flag => Err(Error::Usage(format!(
            "the document's sessionId {document:?} and --session (or TOOL_CLI_SESSION) {flag:?} \
             differ; give the session one way"
        ))),
        (document, flag) => Ok(document.or_else(|| flag.clone())),
    }
}

/// Every member of `object` is one of `known` and of its type; `at` names the object.
fn check_members(
    object: &Map<String, Value>,
    known: &[(&str, Kind)],
    origin: &str,
    at: &str,
) -> Result<(), Error> {
    for (key, value) in object {
        let Some((_, kind)) = known.iter().find(|(name, _)| name == key) else {
            let names: Vec<String> = known.iter().map(|(name, _)| (*name).to_owned()).collect();
            let suggestion = ALIASES
                .iter()
                .find(|(alias, meant)| alias == key && names.iter().any(|name| name == meant))
                .map(|(_, meant)| *meant)
                .or_else(|| did_you_mean(key, &names));
            let hint = suggestion
                .map(|name| format!("did you mean \"{name}\"? "))
                .unwrap_or_default();
            return Err(Error::Usage(format!(
                "{origin}: {at} has an unknown member {key:?}; {hint}expected one of {}",
                names.join(", ")
            )));
        };
        if !value.is_null() && !kind.accepts(value) {
            let place = if at == "the document" {
                key.clone()
            } else {
                format!("{at}.{key}")
            };
            return Err(Error::Usage(format!(
                "{origin}: {place} must be {}, got {}",
                kind.expected(),
                json_kind(value)
            )));
        }
    }
    Ok(())
}

/// Removes null members of the document and of its steps or calls.
fn drop_nulls(document: &mut Map<String, Value>) {
    document.retain(|_, value| !value.is_null());
    for list in ["steps", "calls"] {
        if let Some(Value::Array(items)) = document.get_mut(list) {
            for item in items {
                if let Value::Object(members) = item {
                    members.retain(|_, value| !value.is_null());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn usage(result: Result<BatchRequest, Error>) -> String {
        match result {
            Err(Error::Usage(message)) => message,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn a_chain_document_or_its_bare_steps_become_the_params() {
        let text = r#"{"steps": [
            {"server": "demo", "tool": "sql_query", "arguments": {"sql": "SELECT 1 AS n"}},
            {"tool": "echo", "arguments": {"message": {"$from": "0", "pointer": "/x"}},
             "bind": {"/n": {"$from": 0, "pointer": "/y"}}, "hint": "everything"}
        ], "timeoutMs": 5000, "dryRun": null}"#;
        let BatchRequest::Chain(params) =
            from_document(BatchKind::Chain, text, "steps.json").unwrap()
        else {
            panic!("not a chain")
        };
        assert_eq!(params.steps.len(), 2);
        assert_eq!(params.steps[0].server.as_deref(), Some("demo"));
        assert_eq!(params.steps[1].server, None);
        assert_eq!(
            params.steps[1].arguments["message"],
            json!({"$from": "0", "pointer": "/x"})
        );
        assert_eq!(params.timeout_ms, Some(5000));
        assert_eq!(params.dry_run, None);
        let bare = r#"[{"server": "demo", "tool": "schema"}]"#;
        let request = from_document(BatchKind::Chain, bare, "stdin").unwrap();
        assert_eq!(
            request.params(),
            json!({"steps": [{"server": "demo", "tool": "schema", "arguments": {}}]})
        );
        assert_eq!(request.method(), "callChain");
    }

    #[test]
    fn a_many_document_keeps_every_call_member() {
        let text = r#"{"calls": [{"server": "demo", "tool": "schema", "timeoutMs": 100,
                        "idempotencyKey": "k", "alternatives": true}], "maxConcurrent": 2}"#;
        let request = from_document(BatchKind::Many, text, "calls.json").unwrap();
        assert_eq!(request.method(), "callMany");
        assert_eq!(
            request.params(),
            json!({"calls": [{"server": "demo", "tool": "schema", "timeoutMs": 100,
                              "idempotencyKey": "k", "alternatives": true}],
                   "maxConcurrent": 2})
        );
    }

    #[test]
    fn the_member_tables_match_the_protocol_types() {
        // Every member the protocol's types write is in the tables, and nothing else.
        let call = CallToolParams {
            server: Some("s".into()),
            tool: "t".into(),
            arguments: Some(Map::new()),
            timeout_ms: Some(1),
            session_id: Some("x".into()),
            confirm: Some(true),
            dry_run: Some(true),
            hint: Some("h".into()),
            idempotency_key: Some("k".into()),
            alternatives: Some(true),
            progress: Some(true),
            progress_id: Some("p".into()),
            reset_timeout_on_progress: Some(true),
            max_total_timeout_ms: Some(1),
            task: None,
        };
        let step = ChainStep {
            server: Some("s".into()),
            tool: "t".into(),
            arguments: Map::new(),
            bind: Some(Map::new()),
            hint: Some("h".into()),
        };
        let chain = CallChainParams {
            steps: vec![step.clone()],
            session_id: Some("x".into()),
            timeout_ms: Some(1),
            confirm: Some(true),
            dry_run: Some(true),
        };
        let many = CallManyParams {
            calls: vec![call.clone()],
            max_concurrent: Some(1),
            session_id: Some("x".into()),
        };
        let keys = |value: Value| -> Vec<String> {
            let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
            keys.sort();
            keys
        };
        let names = |table: &[(&str, Kind)]| -> Vec<String> {
            let mut names: Vec<String> = table.iter().map(|(name, _)| (*name).into()).collect();
            names.sort();
            names
        };
        assert_eq!(keys(json!(call)), names(CALL_MEMBERS));
        assert_eq!(keys(json!(step)), names(STEP_MEMBERS));
        assert_eq!(keys(json!(chain)), names(CHAIN_MEMBERS));
        assert_eq!(keys(json!(many)), names(MANY_MEMBERS));
    }

    #[test]
    fn malformed_documents_say_where_and_what_was_expected() {
        let chain = |text: &str| usage(from_document(BatchKind::Chain, text, "steps.json"));
        let message = chain("{\"steps\": [");
        assert!(
            message.starts_with("steps.json is not valid JSON: EOF while parsing"),
            "{message}"
        );
        assert!(message.contains("expected {\"steps\": ["), "{message}");
        assert_eq!(
            chain("  "),
            "steps.json is empty; expected {\"steps\": [{\"server\": \"demo\", \"tool\": \
             \"sql_query\", \"arguments\": {...}}, ...]} or just the array of steps"
        );
        assert!(chain("42").starts_with("steps.json holds a number; expected"));
        assert!(chain("{}").starts_with("steps.json has no \"steps\"; expected"));
        assert_eq!(
            chain("[]"),
            "steps.json has no steps: \"steps\" is empty; give at least one step"
        );
        assert_eq!(
            chain(r#"[{"server": "demo", "tool": "t", "args": {}}]"#),
            "steps.json: steps[0] has an unknown member \"args\"; did you mean \"arguments\"? \
             expected one of server, tool, arguments, bind, hint"
        );
        assert!(
            chain(r#"{"steps": [{"tool": "t"}], "dry_run": true}"#).contains(
                "the document has an unknown member \"dry_run\"; did you mean \"dryRun\"?"
            )
        );
        assert_eq!(
            chain(r#"[{"server": "demo", "tool": "t", "arguments": "SELECT 1"}]"#),
            "steps.json: steps[0].arguments must be a JSON object, got a string"
        );
        assert_eq!(
            chain(r#"{"steps": [{"tool": "t"}], "timeoutMs": -5}"#),
            "steps.json: timeoutMs must be a whole number of 0 or more, got a number"
        );
        assert!(chain(r#"[{"server": "demo"}]"#).starts_with("steps.json: steps[0] names no tool"),);
        assert!(chain(r#"[{"server": "demo", "tool": " "}]"#).contains("names no tool"));
        assert!(chain(r#"["demo schema"]"#).starts_with(
            "steps.json: steps[0] must be a JSON object such as {\"server\": \"demo\""
        ));
        let many = usage(from_document(
            BatchKind::Many,
            r#"[{"tool": "t", "sessionId": "s1"}]"#,
            "stdin",
        ));
        assert!(
            many.starts_with("stdin: calls[0].sessionId would be ignored"),
            "{many}"
        );
    }

    #[test]
    fn words_become_steps_or_calls() {
        let calls = vec![CallWord {
            server: None,
            tool: "echo".into(),
            arguments: json!({"message": "hi"}).as_object().unwrap().clone(),
        }];
        assert_eq!(
            from_words(BatchKind::Chain, calls.clone()).params(),
            json!({"steps": [{"tool": "echo", "arguments": {"message": "hi"}}]})
        );
        let many = from_words(BatchKind::Many, calls);
        assert_eq!(
            many.params(),
            json!({"calls": [{"tool": "echo", "arguments": {"message": "hi"}}]})
        );
        assert_eq!(
            many.requested(),
            vec![Requested {
                server: None,
                tool: "echo".into(),
                dry_run: false
            }]
        );
    }

    #[test]
    fn flags_fill_in_and_contradictions_are_refused() {
        let flags = BatchFlags {
            session: Some("s1".into()),
            dry_run: true,
            confirm: true,
            timeout_ms: Some(9000),
            max_concurrent: Some(3),
        };
        let chain = from_document(
            BatchKind::Chain,
            r#"{"steps": [{"tool": "t"}], "timeoutMs": 100}"#,
            "x",
        )
        .unwrap();
        let merged = with_flags(chain, &flags).unwrap();
        assert_eq!(
            merged.params(),
            json!({"steps": [{"tool": "t", "arguments": {}}], "sessionId": "s1",
                   "timeoutMs": 100, "confirm": true, "dryRun": true})
        );
        assert!(merged.requested()[0].dry_run);
        assert_eq!(merged.timeout_ms(), Some(100));
        let many = from_document(
            BatchKind::Many,
            r#"[{"tool": "a"}, {"tool": "b", "timeoutMs": 5}]"#,
            "x",
        )
        .unwrap();
        let merged = with_flags(many, &flags).unwrap();
        assert_eq!(
            merged.params(),
            json!({"calls": [
                {"tool": "a", "timeoutMs": 9000, "confirm": true, "dryRun": true},
                {"tool": "b", "timeoutMs": 5, "confirm": true, "dryRun": true}],
                "maxConcurrent": 3, "sessionId": "s1"})
        );
        assert_eq!(merged.timeout_ms(), None);

        let other_session = from_document(
            BatchKind::Chain,
            r#"{"steps": [{"tool": "t"}], "sessionId": "s2"}"#,
            "x",
        )
        .unwrap();
        assert!(
            usage(with_flags(other_session, &flags))
                .starts_with("the document's sessionId \"s2\" and --session")
        );
        let other_width = from_document(
            BatchKind::Many,
            r#"{"calls": [{"tool": "t"}], "maxConcurrent": 4}"#,
            "x",
        )
        .unwrap();
        assert!(
            usage(with_flags(other_width, &flags))
                .starts_with("the document's maxConcurrent 4 and --max-concurrent 3 differ")
        );
        // The same value both ways is no contradiction; no flags change nothing.
        let same = from_document(
            BatchKind::Many,
            r#"{"calls": [{"tool": "t"}], "sessionId": "s1"}"#,
            "x",
        )
        .unwrap();
        with_flags(same.clone(), &flags).unwrap();
        assert_eq!(
            with_flags(same.clone(), &BatchFlags::default()).unwrap(),
            same
        );
    }
}
