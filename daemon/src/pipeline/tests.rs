//! Unit tests of the pipeline's stages over an in-memory provider: no child processes, tokio's
//! paused clock for every timing question.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::time::Instant;
use tool_cli_protocol::ErrorData;
use tool_cli_protocol::methods::TransportKind;

use super::*;
use crate::auth::Grant;
use crate::catalog::Catalog;
use crate::policy::{Scope, ServerPolicy};
use crate::provider::{BoxFuture, CallTicket, ServerInfo, ServerSettings, Upstream};

/// What a fake tool does when called.
#[derive(Clone, Copy)]
pub(crate) enum Behaviour {
    /// Answers `{"content": [{"type": "text", "text": <arguments>}]}`.
    Echo,
    /// Answers an `isError` result.
    ToolError,
    /// Never answers (the deadline ends it).
    Hang,
    /// The server "exits" while the call is pending.
    Crash,
    /// Crashes on the first call, answers afterwards.
    CrashOnce,
    /// Answers a text block of this many bytes.
    Big(usize),
    /// Asks for sampling while it runs (100 tokens in, 20 out, $0.01, billed to the call's
    /// meter), tells its progress to the call's relay, then answers as `Echo`.
    Samples,
}

/// An in-memory server: a catalog and a behaviour per tool, counting what reaches it.
pub(crate) struct FakeServer {
    info: ServerInfo,
    catalog: Arc<Catalog>,
    behaviours: Vec<(String, Behaviour)>,
    calls: AtomicU32,
    received: Mutex<Vec<(String, Map<String, Value>)>>,
    /// The ticket of every call, in order.
    pub(crate) tickets: Mutex<Vec<CallTicket>>,
    /// The deadline of every call and every wait for a connection, in order.
    pub(crate) deadlines: Mutex<Vec<Instant>>,
    /// Never connects: waits for it last until their deadline, then fail.
    never_connects: bool,
    /// Its resource listings fail as if it had exited.
    listings_fail: bool,
    listings: AtomicU32,
}

impl FakeServer {
    pub(crate) fn new(name: &str, tools: Vec<(Value, Behaviour)>) -> FakeServer {
        FakeServer::with_settings(name, tools, ServerSettings::default(), Vec::new())
    }

    pub(crate) fn with_settings(
        name: &str,
        tools: Vec<(Value, Behaviour)>,
        settings: ServerSettings,
        tags: Vec<String>,
    ) -> FakeServer {
        let behaviours = tools
            .iter()
            .map(|(tool, behaviour)| (tool["name"].as_str().unwrap().to_owned(), *behaviour))
            .collect();
        FakeServer {
            info: ServerInfo {
                name: name.to_owned(),
                description: None,
                tags,
                transport: TransportKind::Stdio,
                settings,
            },
            catalog: Arc::new(Catalog::new(tools.into_iter().map(|(t, _)| t).collect())),
            behaviours,
            calls: AtomicU32::new(0),
            received: Mutex::new(Vec::new()),
            tickets: Mutex::new(Vec::new()),
            deadlines: Mutex::new(Vec::new()),
            never_connects: false,
            listings_fail: false,
            listings: AtomicU32::new(0),
        }
    }

    /// A server still making its first connection, which never succeeds.
    pub(crate) fn never_connecting(name: &str, settings: ServerSettings) -> FakeServer {
        FakeServer {
            never_connects: true,
            ..FakeServer::with_settings(name, Vec::new(), settings, Vec::new())
        }
    }

    /// A server with resources whose listings fail as if it had exited.
    pub(crate) fn failing_listings(name: &str) -> FakeServer {
        FakeServer {
            listings_fail: true,
            ..FakeServer::new(name, Vec::new())
        }
    }

    pub(crate) fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Upstream for FakeServer {
    fn info(&self) -> &ServerInfo {
        &self.info
    }

    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog)
    }

    fn status(&self) -> crate::provider::UpstreamStatus {
        let mut status = crate::provider::UpstreamStatus::ready();
        if self.never_connects {
            status.state = tool_cli_protocol::methods::ServerState::Connecting;
        }
        status
    }

    fn wait_ready(&self, deadline: Instant) -> BoxFuture<'_, Result<(), Error>> {
        self.deadlines.lock().unwrap().push(deadline);
        let server = self.info.name.clone();
        let never = self.never_connects;
        Box::pin(async move {
            if !never {
                return Ok(());
            }
            tokio::time::sleep_until(deadline).await;
            Err(ErrorData::ServerUnavailable {
                server,
                state: "connecting".into(),
                last_error: None,
            }
            .into())
        })
    }

    fn supports_resources(&self) -> bool {
        self.listings_fail
    }

    fn list_resources<'a>(
        &'a self,
        _kind: crate::provider::ResourceListKind,
        _deadline: Instant,
        _ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Vec<Value>, Error>> {
        self.listings.fetch_add(1, Ordering::SeqCst);
        let server = self.info.name.clone();
        let fail = self.listings_fail;
        Box::pin(async move {
            if fail {
                return Err(ErrorData::ServerExited {
                    server,
                    exit: "exit code 1".into(),
                    stderr_tail: Vec::new(),
                }
                .into());
            }
            Ok(Vec::new())
        })
    }

    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: &'a Map<String, Value>,
        deadline: Instant,
        ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        let count = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        self.tickets.lock().unwrap().push(ticket.clone());
        self.deadlines.lock().unwrap().push(deadline);
        self.received
            .lock()
            .unwrap()
            .push((tool.to_owned(), arguments.clone()));
        let behaviour = self
            .behaviours
            .iter()
            .find(|(name, _)| name == tool)
            .map(|(_, behaviour)| *behaviour)
            .unwrap();
        let server = self.info.name.clone();
        Box::pin(async move {
            let crash = || -> Error {
                ErrorData::ServerExited {
                    server: server.clone(),
                    exit: "exit code 1".into(),
                    stderr_tail: Vec::new(),
                }
                .into()
            };
            match behaviour {
                Behaviour::Echo => Ok(json!({
                    "content": [{"type": "text", "text": Value::Object(arguments.clone()).to_string()}]
                })),
                Behaviour::ToolError => Ok(json!({
                    "content": [{"type": "text", "text": "no such row"}], "isError": true
                })),
                Behaviour::Hang => {
                    tokio::time::sleep_until(deadline).await;
                    Err(Error::timeout(&server, tool, 0))
                }
                Behaviour::Crash => Err(crash()),
                Behaviour::CrashOnce if count == 1 => Err(crash()),
                Behaviour::CrashOnce => {
                    Ok(json!({"content": [], "structuredContent": {"ok": true}}))
                }
                Behaviour::Big(bytes) => Ok(json!({
                    "content": [{"type": "text", "text": "b".repeat(bytes)}]
                })),
                Behaviour::Samples => {
                    if let Some(usage) = &ticket.usage {
                        usage.add(100, 20, Some(0.01));
                    }
                    if let Some(relay) = &ticket.relay {
                        let event = json!({"type": "progress", "progress": 1});
                        relay.push(event.as_object().unwrap().clone());
                    }
                    Ok(json!({"content": [{"type": "text", "text": "sampled"}]}))
                }
            }
        })
    }
}

pub(crate) struct FakeProvider(pub(crate) Vec<Arc<FakeServer>>);

impl ToolProvider for FakeProvider {
    fn servers(&self) -> Vec<Arc<dyn Upstream>> {
        self.0
            .iter()
            .map(|server| Arc::clone(server) as Arc<dyn Upstream>)
            .collect()
    }
}

/// Remembers every record.
#[derive(Default)]
pub(crate) struct Recorder(pub(crate) Mutex<Vec<CallRecord>>);

impl CallObserver for Recorder {
    fn observe(&self, record: &CallRecord) {
        self.0.lock().unwrap().push(record.clone());
    }
}

pub(crate) fn tool(name: &str, schema: Value, annotations: Value) -> Value {
    json!({"name": name, "description": format!("the {name} tool"), "inputSchema": schema,
           "annotations": annotations})
}

fn object_schema() -> Value {
    json!({"type": "object"})
}

pub(crate) fn owner() -> Grant {
    Grant {
        token_id: "owner".into(),
        is_owner: true,
        scope: Arc::new(Scope::unrestricted()),
    }
}

fn scoped(tools: &[&str]) -> Grant {
    Grant {
        token_id: "scoped".into(),
        is_owner: false,
        scope: Arc::new(
            Scope::from_params(
                None,
                Some(tools.iter().map(|&t| t.to_owned()).collect()),
                None,
                false,
                None,
                std::time::SystemTime::now(),
            )
            .unwrap(),
        ),
    }
}

fn pipeline(servers: Vec<Arc<FakeServer>>) -> (Pipeline, Arc<Recorder>) {
    recorded_pipeline(&FakeProvider(servers))
}

/// A pipeline over `provider`'s servers with the default options, and the recorder of its
/// records: the setup of the pipeline's tests and of its parts' (tasks…).
pub(crate) fn recorded_pipeline(provider: &dyn ToolProvider) -> (Pipeline, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let pipeline = Pipeline::new(
        provider,
        PipelineOptions::default(),
        vec![Arc::clone(&recorder) as Arc<dyn CallObserver>],
    );
    (pipeline, recorder)
}

/// The answer of a call that ran (a dry run's is a test failure).
fn ran(answer: CallAnswer) -> RanCall {
    match answer {
        CallAnswer::Ran(ran) => ran,
        CallAnswer::DryRun(verdict) => panic!("a dry run's verdict: {verdict:?}"),
    }
}

/// A dry run's verdict as it goes on the wire.
fn verdict(answer: CallAnswer) -> Value {
    match answer {
        CallAnswer::DryRun(verdict) => serde_json::to_value(verdict).unwrap(),
        CallAnswer::Ran(ran) => panic!("a call that ran: {ran:?}"),
    }
}

/// The selection of a call that ran, as it goes on the wire.
fn selection(answer: CallAnswer) -> Value {
    serde_json::to_value(selection_info(&ran(answer).facts.selection)).unwrap()
}

fn request(server: Option<&str>, tool: &str, arguments: Value) -> CallRequest {
    CallRequest {
        server: server.map(str::to_owned),
        tool: tool.to_owned(),
        arguments: arguments.as_object().cloned().unwrap_or_default(),
        ..CallRequest::default()
    }
}

fn kind(error: &Error) -> &'static str {
    error.kind()
}

#[tokio::test]
async fn a_named_call_runs_every_stage_and_is_recorded_once() {
    let demo = Arc::new(FakeServer::new(
        "demo",
        vec![(tool("echo", object_schema(), Value::Null), Behaviour::Echo)],
    ));
    let (pipeline, recorder) = pipeline(vec![Arc::clone(&demo)]);
    let context = CallContext::new(owner());
    let result = pipeline
        .call(&context, request(Some("demo"), "echo", json!({"a": 1})))
        .await
        .unwrap();
    let ran = ran(result);
    assert_eq!(ran.result["content"][0]["text"], r#"{"a":1}"#);
    assert_eq!(ran.facts.attempts, 1);
    assert_eq!(ran.facts.selection.rule.as_str(), "named");
    assert_eq!(ran.facts.call_id, context.call_id);
    assert!(!ran.facts.is_error && !ran.facts.replayed && ran.facts.degraded.is_none());
    let records = recorder.0.lock().unwrap();
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert!(record.executed && record.success && !record.dry_run);
    assert_eq!(record.server.as_deref(), Some("demo"));
    assert_eq!(record.attempts, 1);
    assert_eq!(record.arguments_hash.len(), 16);
    assert!(record.arguments.is_none(), "no observer asked for payloads");
}

#[tokio::test]
async fn invalid_arguments_and_policy_refusals_never_reach_the_server() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}},
                        "required": ["n"]});
    let demo = Arc::new(FakeServer::new(
        "demo",
        vec![
            (tool("count", schema, Value::Null), Behaviour::Echo),
            (
                tool("drop", object_schema(), json!({"destructiveHint": true})),
                Behaviour::Echo,
            ),
        ],
    ));
    let (pipeline, recorder) = pipeline(vec![Arc::clone(&demo)]);
    let context = CallContext::new(owner());
    let error = pipeline
        .call(&context, request(Some("demo"), "count", json!({"n": "x"})))
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "invalidArguments");
    let error = pipeline
        .call(&context, request(Some("demo"), "drop", json!({})))
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "confirmationRequired");
    assert_eq!(demo.calls(), 0);
    let records = recorder.0.lock().unwrap();
    assert_eq!(records.len(), 2);
    assert!(records.iter().all(|r| !r.executed && !r.success));
    assert_eq!(records[0].error.as_ref().unwrap().kind, "invalidArguments");
}

#[tokio::test]
async fn a_dry_run_explains_without_contacting_the_server() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let demo = Arc::new(FakeServer::new(
        "demo",
        vec![
            (tool("count", schema, Value::Null), Behaviour::Echo),
            (
                tool("drop", object_schema(), json!({"destructiveHint": true})),
                Behaviour::Echo,
            ),
        ],
    ));
    let (pipeline, recorder) = pipeline(vec![Arc::clone(&demo)]);
    let context = CallContext::new(owner());
    let mut dry = request(Some("demo"), "count", json!({"n": 3}));
    dry.dry_run = true;
    let answer = verdict(pipeline.call(&context, dry).await.unwrap());
    assert_eq!(answer["executed"], false);
    assert_eq!(answer["server"], "demo");
    assert_eq!(answer["arguments"], json!({"n": 3}));
    assert_eq!(answer["selection"]["rule"], "named");
    assert!(answer.get("wouldBlockBecause").is_none(), "{answer}");

    // A destructive tool is explained without confirmation; the answer says what is missing.
    let mut dry = request(Some("demo"), "drop", json!({}));
    dry.dry_run = true;
    let answer = verdict(pipeline.call(&context, dry).await.unwrap());
    assert_eq!(
        answer["wouldBlockBecause"]["data"]["kind"],
        "confirmationRequired"
    );
    // So are arguments that would fail validation.
    let mut dry = request(Some("demo"), "count", json!({"n": "three"}));
    dry.dry_run = true;
    let answer = verdict(pipeline.call(&context, dry).await.unwrap());
    assert_eq!(
        answer["wouldBlockBecause"]["data"]["kind"],
        "invalidArguments"
    );
    assert_eq!(answer["wouldBlockBecause"]["code"], -32602);

    assert_eq!(demo.calls(), 0, "a dry-run contacts no server");
    let records = recorder.0.lock().unwrap();
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|r| r.dry_run && !r.executed));
    assert_eq!(
        records.iter().map(|r| r.success).collect::<Vec<_>>(),
        vec![true, false, false]
    );
}

#[tokio::test]
async fn a_scoped_grant_learns_nothing_about_tools_outside_its_scope() {
    let demo = Arc::new(FakeServer::new(
        "demo",
        vec![
            (tool("echo", object_schema(), Value::Null), Behaviour::Echo),
            (
                tool("secret", object_schema(), Value::Null),
                Behaviour::Echo,
            ),
        ],
    ));
    let other = Arc::new(FakeServer::new(
        "other",
        vec![(tool("echo", object_schema(), Value::Null), Behaviour::Echo)],
    ));
    let (pipeline, _) = pipeline(vec![Arc::clone(&demo), Arc::clone(&other)]);
    let context = CallContext::new(scoped(&["demo/echo"]));
    // A tool outside the scope, existing or not, gets the same refusal (but for its name).
    let missing = pipeline
        .call(&context, request(Some("demo"), "nope", json!({})))
        .await
        .unwrap_err();
    let hidden = pipeline
        .call(&context, request(Some("demo"), "secret", json!({})))
        .await
        .unwrap_err();
    assert_eq!(kind(&hidden), "notPermitted");
    assert_eq!(
        missing.to_string().replace("nope", "secret"),
        hidden.to_string()
    );
    // A name the scope would allow is told it does not exist, with the tools it may see.
    let context = CallContext::new(scoped(&["demo/e*"]));
    let error = pipeline
        .call(&context, request(Some("demo"), "ech", json!({})))
        .await
        .unwrap_err();
    let Some(ErrorData::UnknownTool { known_tools, .. }) = error.data() else {
        panic!("{error}");
    };
    assert_eq!(known_tools, &vec!["echo".to_owned()]);
    let context = CallContext::new(scoped(&["demo/echo"]));
    // A server outside the scope, existing or not, gets the same refusal: nothing says which
    // names exist beyond the scope.
    for server in ["nowhere", "other"] {
        let error = pipeline
            .call(&context, request(Some(server), "echo", json!({})))
            .await
            .unwrap_err();
        assert_eq!(kind(&error), "notPermitted", "{server}: {error}");
        assert!(!error.to_string().contains("other") || server == "other");
    }
    // Routed, only the server in scope is a candidate.
    let result = pipeline
        .call(&context, request(None, "echo", json!({})))
        .await
        .unwrap();
    let chosen = &selection(result);
    assert_eq!(chosen["server"], "demo");
    assert_eq!(chosen["alternatives"], json!([]));
    assert_eq!(other.calls(), 0);
}

#[tokio::test]
async fn a_routed_call_to_a_tool_nobody_offers_suggests_close_names() {
    let fs = Arc::new(FakeServer::new(
        "fs",
        vec![(
            tool("read_file", object_schema(), Value::Null),
            Behaviour::Echo,
        )],
    ));
    let (pipeline, _) = pipeline(vec![fs]);
    let error = pipeline
        .call(
            &CallContext::new(owner()),
            request(None, "read_fiel", json!({})),
        )
        .await
        .unwrap_err();
    let Some(ErrorData::UnknownTool {
        server,
        known_tools,
        ..
    }) = error.data()
    else {
        panic!("{error}");
    };
    assert_eq!(server, "*");
    assert_eq!(known_tools, &vec!["fs/read_file".to_owned()]);
    assert!(error.to_string().contains("did you mean: fs/read_file"));
}

#[tokio::test]
async fn routing_uses_argument_types_then_priority() {
    let by_path = json!({"type": "object", "properties": {"path": {"type": "string"}},
                         "required": ["path"], "additionalProperties": false});
    let by_repo = json!({"type": "object", "properties": {"repo": {"type": "string"},
                         "path": {"type": "string"}}, "required": ["repo", "path"]});
    let fs = Arc::new(FakeServer::new(
        "fs",
        vec![(tool("read_file", by_path, Value::Null), Behaviour::Echo)],
    ));
    let github = Arc::new(FakeServer::with_settings(
        "github",
        vec![(tool("read_file", by_repo, Value::Null), Behaviour::Echo)],
        ServerSettings {
            priority: 5,
            ..ServerSettings::default()
        },
        vec!["git".into()],
    ));
    let (pipeline, _) = pipeline(vec![Arc::clone(&fs), Arc::clone(&github)]);
    let context = CallContext::new(owner());
    let result = pipeline
        .call(
            &context,
            request(None, "read_file", json!({"repo": "a/b", "path": "x"})),
        )
        .await
        .unwrap();
    let chosen = &selection(result);
    assert_eq!(chosen["server"], "github");
    assert_eq!(chosen["rule"], "argument-type");
    assert_eq!(
        chosen["alternatives"],
        json!([{"server": "fs", "rejectedBy": "argument-type"}])
    );
    // Only fs accepts a bare path.
    let result = pipeline
        .call(&context, request(None, "read_file", json!({"path": "x"})))
        .await
        .unwrap();
    assert_eq!(selection(result)["server"], "fs");
    // Neither accepts an empty object: priority decides (github has 5).
    let dry = CallRequest {
        dry_run: true,
        ..request(None, "read_file", json!({}))
    };
    let answer = verdict(pipeline.call(&context, dry).await.unwrap());
    assert_eq!(answer["selection"]["rule"], "priority");
    assert_eq!(answer["selection"]["server"], "github");
    // A hint naming a tag decides before anything else.
    let mut hinted = request(None, "read_file", json!({"path": "x"}));
    hinted.hint = Some("from git please".into());
    let result = pipeline.call(&context, hinted).await.unwrap_err();
    // The hint chose github, whose schema then refuses the arguments: the refusal names it.
    let Some(ErrorData::InvalidArguments { server, .. }) = result.data() else {
        panic!("{result}");
    };
    assert_eq!(server, "github");
}

#[tokio::test(start_paused = true)]
async fn a_read_only_call_cut_by_a_crash_is_retried_and_a_write_is_not() {
    let demo = Arc::new(FakeServer::new(
        "demo",
        vec![
            (
                tool("read", object_schema(), json!({"readOnlyHint": true})),
                Behaviour::CrashOnce,
            ),
            (
                tool("write", object_schema(), Value::Null),
                Behaviour::Crash,
            ),
        ],
    ));
    let (pipeline, recorder) = pipeline(vec![Arc::clone(&demo)]);
    let context = CallContext::new(owner());
    let result = pipeline
        .call(&context, request(Some("demo"), "read", json!({})))
        .await
        .unwrap();
    assert_eq!(ran(result).facts.attempts, 2);
    let error = pipeline
        .call(&context, request(Some("demo"), "write", json!({})))
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "serverExited");
    assert_eq!(demo.calls(), 3, "two attempts of read, one of write");
    let records = recorder.0.lock().unwrap();
    assert_eq!(records[0].retry_reason.as_deref(), Some("serverExited"));
    assert_eq!(records[0].retries(), 1);
    assert_eq!(records[1].retries(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_deadline_starts_at_arrival_and_bounds_the_wait_for_a_slot() {
    // One slot, a deep queue: the second call waits behind a hanging first one.
    let demo = Arc::new(FakeServer::with_settings(
        "demo",
        vec![(tool("hang", object_schema(), Value::Null), Behaviour::Hang)],
        ServerSettings {
            max_concurrent: 1,
            max_queued: 10,
            ..ServerSettings::default()
        },
        Vec::new(),
    ));
    let (pipeline, _) = pipeline(vec![Arc::clone(&demo)]);
    let pipeline = Arc::new(pipeline);
    let mut slow = request(Some("demo"), "hang", json!({}));
    slow.timeout = Some(Duration::from_secs(10));
    let first = {
        let pipeline = Arc::clone(&pipeline);
        tokio::spawn(async move { pipeline.call(&CallContext::new(owner()), slow).await })
    };
    // Let the first call take the slot.
    while demo.calls() == 0 {
        tokio::task::yield_now().await;
    }
    let started = Instant::now();
    let mut queued = request(Some("demo"), "hang", json!({}));
    queued.timeout = Some(Duration::from_secs(1));
    let error = pipeline
        .call(&CallContext::new(owner()), queued)
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "timeout");
    // Paused time: exactly the caller's timeout passed, not the first call's 10 s.
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    assert_eq!(demo.calls(), 1, "the queued call was never sent");
    let _ = first.await;
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_keeps_crashing_the_server_is_stopped_at_the_tool() {
    let demo = Arc::new(FakeServer::new(
        "demo",
        vec![
            (tool("bomb", object_schema(), Value::Null), Behaviour::Crash),
            (tool("echo", object_schema(), Value::Null), Behaviour::Echo),
        ],
    ));
    let (pipeline, _) = pipeline(vec![Arc::clone(&demo)]);
    let context = CallContext::new(owner());
    let mut refused = None;
    for _ in 0..20 {
        let error = pipeline
            .call(&context, request(Some("demo"), "bomb", json!({})))
            .await
            .unwrap_err();
        if kind(&error) == "circuitOpen" {
            refused = Some(error);
            break;
        }
        // Others keep calling in between.
        for _ in 0..3 {
            pipeline
                .call(&context, request(Some("demo"), "echo", json!({})))
                .await
                .unwrap();
        }
    }
    let refused = refused.expect("the tool's breaker opened");
    assert!(
        refused.to_string().contains("calls of \"bomb\""),
        "{refused}"
    );
    let bomb_calls = demo.calls();
    assert!(bomb_calls < 40, "stopped after a handful of crashes");
    pipeline
        .call(&context, request(Some("demo"), "echo", json!({})))
        .await
        .expect("other tools of the server still work");
}

#[tokio::test]
async fn a_tool_error_result_is_a_result_and_counts_as_unsuccessful() {
    let demo = Arc::new(FakeServer::new(
        "demo",
        vec![(
            tool("lookup", object_schema(), Value::Null),
            Behaviour::ToolError,
        )],
    ));
    let (pipeline, recorder) = pipeline(vec![demo]);
    let result = pipeline
        .call(
            &CallContext::new(owner()),
            request(Some("demo"), "lookup", json!({})),
        )
        .await
        .unwrap();
    let ran = ran(result);
    assert_eq!(ran.result["isError"], true);
    assert!(ran.facts.is_error);
    let records = recorder.0.lock().unwrap();
    assert!(records[0].executed && !records[0].success && records[0].error.is_none());
}

#[tokio::test]
async fn calls_nested_past_the_depth_limit_are_refused() {
    let demo = Arc::new(FakeServer::new(
        "demo",
        vec![(tool("echo", object_schema(), Value::Null), Behaviour::Echo)],
    ));
    let (pipeline, _) = pipeline(vec![Arc::clone(&demo)]);
    let mut context = CallContext::new(owner());
    for step in 0..=DEFAULT_MAX_DEPTH {
        context = context.child(step);
    }
    let error = pipeline
        .call(&context, request(Some("demo"), "echo", json!({})))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("nested 9 deep"), "{error}");
    assert_eq!(demo.calls(), 0);
}

#[test]
fn a_policy_denial_of_a_config_denied_tool_hides_it() {
    let policy =
        ServerPolicy::from_json(json!({"denyTools": ["secret"]}).as_object().unwrap()).unwrap();
    let demo = FakeServer::with_settings(
        "demo",
        vec![(
            tool("secret", object_schema(), Value::Null),
            Behaviour::Echo,
        )],
        ServerSettings {
            policy,
            ..ServerSettings::default()
        },
        Vec::new(),
    );
    let slot = Slot {
        guards: ServerGuards::new(&demo.info.settings, PipelineOptions::default().breaker),
        upstream: Arc::new(demo),
    };
    let secret = Arc::clone(slot.upstream.catalog().get("secret").unwrap());
    assert!(!visible(&owner(), &slot, &secret));
}

#[tokio::test(start_paused = true)]
async fn repeated_timeouts_of_a_read_only_tool_open_the_servers_breaker() {
    let demo = Arc::new(FakeServer::new(
        "demo",
        vec![
            (
                tool("slow", object_schema(), json!({"readOnlyHint": true})),
                Behaviour::Hang,
            ),
            (tool("echo", object_schema(), Value::Null), Behaviour::Echo),
        ],
    ));
    let (pipeline, _) = pipeline(vec![Arc::clone(&demo)]);
    for _ in 0..5 {
        let mut slow = request(Some("demo"), "slow", json!({}));
        slow.timeout = Some(Duration::from_millis(100));
        let mut context = CallContext::new(owner());
        context.session_id = Some("alice".into());
        let error = pipeline.call(&context, slow).await.unwrap_err();
        assert_eq!(kind(&error), "timeout");
    }
    let last_error = |error: &Error| match error.data() {
        Some(ErrorData::CircuitOpen { last_error, .. }) => last_error.clone(),
        other => panic!("not a circuitOpen refusal: {other:?}"),
    };
    // An `echo` call as `caller`: refused by the open breaker, whoever asks.
    let echo_as = |caller: &'static str| {
        let pipeline = &pipeline;
        async move {
            let mut context = CallContext::new(owner());
            context.session_id = Some(caller.into());
            let call = pipeline.call(&context, request(Some("demo"), "echo", json!({})));
            let error = call.await.unwrap_err();
            assert_eq!(kind(&error), "circuitOpen", "{error}");
            error
        }
    };
    // The caller whose calls timed out is told why the breaker opened.
    let error = echo_as("alice").await;
    let why = last_error(&error).expect("the failing caller sees the last error");
    assert!(why.contains("demo/slow did not answer"), "{why}");
    // Another caller is refused too, without another caller's failure (it names a tool that
    // caller may not be allowed to see).
    let error = echo_as("bob").await;
    assert_eq!(last_error(&error), None, "{error}");
}

#[tokio::test(start_paused = true)]
async fn the_wait_for_a_first_connection_ends_with_the_calls_deadline_on_that_server() {
    let settings = |seconds| ServerSettings {
        call_timeout: Duration::from_secs(seconds),
        ..ServerSettings::default()
    };
    let slow = Arc::new(FakeServer::never_connecting("slow", settings(5)));
    let slower = Arc::new(FakeServer::never_connecting("slower", settings(7)));
    let (pipeline, _) = pipeline(vec![Arc::clone(&slow), Arc::clone(&slower)]);
    // Named, with no timeout of the caller's: the server's own call timeout, not 60 s.
    let context = CallContext::new(owner());
    let error = pipeline
        .call(&context, request(Some("slow"), "look", json!({})))
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "serverUnavailable");
    assert_eq!(
        *slow.deadlines.lock().unwrap(),
        [context.arrived + Duration::from_secs(5)]
    );
    // The caller's timeout when it gives one.
    slow.deadlines.lock().unwrap().clear();
    let context = CallContext::new(owner());
    let mut timed = request(Some("slow"), "look", json!({}));
    timed.timeout = Some(Duration::from_secs(2));
    pipeline.call(&context, timed).await.unwrap_err();
    assert_eq!(
        *slow.deadlines.lock().unwrap(),
        [context.arrived + Duration::from_secs(2)]
    );
    // Routed: each server making its first connection is waited for up to its own.
    slow.deadlines.lock().unwrap().clear();
    let context = CallContext::new(owner());
    let error = pipeline
        .call(&context, request(None, "look", json!({})))
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "unknownTool");
    assert_eq!(
        *slow.deadlines.lock().unwrap(),
        [context.arrived + Duration::from_secs(5)]
    );
    assert_eq!(
        slower.deadlines.lock().unwrap().last(),
        Some(&(context.arrived + Duration::from_secs(7)))
    );
}

#[tokio::test(start_paused = true)]
async fn resource_listings_take_the_servers_protection_like_calls() {
    let broken = Arc::new(FakeServer::failing_listings("broken"));
    let (pipeline, _) = pipeline(vec![Arc::clone(&broken)]);
    let mut kinds = Vec::new();
    let mut reached = Vec::new();
    for _ in 0..8 {
        let error = pipeline
            .list_resources(
                &CallContext::new(owner()),
                "broken",
                crate::provider::ResourceListKind::Resources,
            )
            .await
            .unwrap_err();
        kinds.push(kind(&error));
        reached.push(broken.listings.load(Ordering::SeqCst));
    }
    // The failures (each retried: a listing is safe to re-send) opened the breaker, which then
    // refused without asking the server.
    assert_eq!(kinds.first(), Some(&"serverExited"), "{kinds:?}");
    assert_eq!(kinds[2..], ["circuitOpen"; 6], "{kinds:?}");
    assert_eq!(reached[0], 3, "{reached:?}");
    assert!(
        reached[2..].iter().all(|count| *count == reached[1]),
        "nothing reached the server once it was open: {reached:?}"
    );
    let reached = reached[1];
    // And they are counted in the server's statistics.
    let slot = &pipeline.slots()[0];
    assert_eq!(slot.guards.stats.lock().unwrap().calls, u64::from(reached));
}

/// What the pipeline hands the upstream with each call: the caller key of the context's token
/// and session, the context's event relay, and a meter whose usage lands in the call's record.
#[tokio::test]
async fn a_calls_ticket_carries_its_caller_relay_and_meter_to_the_upstream() {
    #[derive(Default)]
    struct Events(Mutex<Vec<Map<String, Value>>>);
    impl crate::provider::EventRelay for Events {
        fn is_followed(&self) -> bool {
            true
        }
        fn push(&self, event: Map<String, Value>) {
            self.0.lock().unwrap().push(event);
        }
        fn ask(
            &self,
            _schema: Value,
            _event: Map<String, Value>,
        ) -> (
            String,
            tokio::sync::oneshot::Receiver<crate::provider::RelayedAnswer>,
        ) {
            unreachable!("no question is asked")
        }
        fn close_question(&self, _id: &str, _reason: &str) -> bool {
            false
        }
        fn ended(&self) -> BoxFuture<'_, ()> {
            Box::pin(std::future::pending())
        }
        fn progress_beats(&self) -> tokio::sync::watch::Receiver<u64> {
            tokio::sync::watch::channel(0).1
        }
    }
    let demo = Arc::new(FakeServer::new(
        "demo",
        vec![(
            tool("ask", object_schema(), Value::Null),
            Behaviour::Samples,
        )],
    ));
    let (pipeline, records) = pipeline(vec![Arc::clone(&demo)]);
    let events = Arc::new(Events::default());
    let mut context = CallContext::new(owner());
    context.session_id = Some("s1".into());
    context.relay = Some(Arc::clone(&events) as Arc<dyn crate::provider::EventRelay>);
    pipeline
        .call(&context, request(Some("demo"), "ask", json!({})))
        .await
        .unwrap();
    let first = demo.tickets.lock().unwrap()[0].clone();
    let expected = crate::provider::caller_key("owner", Some("s1"));
    assert_eq!(first.caller.as_deref(), Some(expected.as_str()));
    assert_eq!(
        events.0.lock().unwrap().len(),
        1,
        "the relay got the progress"
    );
    let record = records.0.lock().unwrap().last().cloned().unwrap();
    assert_eq!((record.tokens_in, record.tokens_out), (100, 20));
    assert!((record.cost_usd - 0.01).abs() < 1e-9);
    // Another session of the same token is another caller.
    context.session_id = Some("s2".into());
    pipeline
        .call(&context, request(Some("demo"), "ask", json!({})))
        .await
        .unwrap();
    let second = demo.tickets.lock().unwrap()[1].clone();
    assert_ne!(second.caller, first.caller);
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_by_its_caller_is_recorded_once_as_cancelled_and_counted() {
    let demo = Arc::new(FakeServer::new(
        "demo",
        vec![(tool("hang", object_schema(), Value::Null), Behaviour::Hang)],
    ));
    let (pipeline, recorder) = pipeline(vec![Arc::clone(&demo)]);
    let context = CallContext::new(owner());
    {
        let call = pipeline.call(&context, request(Some("demo"), "hang", json!({})));
        tokio::pin!(call);
        // Drive the call until the server has it (the paused clock moves to this timer only
        // once everything else waits), then drop it: the client went away.
        let cut = tokio::time::timeout(Duration::from_millis(1), call.as_mut()).await;
        assert!(cut.is_err(), "the hanging call cannot answer");
        assert_eq!(demo.calls(), 1);
    }
    let records = recorder.0.lock().unwrap();
    assert_eq!(
        records.len(),
        1,
        "exactly one record for the abandoned call"
    );
    let record = &records[0];
    assert!(record.was_abandoned());
    assert!(record.executed && !record.success);
    assert_eq!(record.attempts, 1);
    assert_eq!(record.server.as_deref(), Some("demo"));
    let error = record.error.as_ref().unwrap();
    assert_eq!(
        (error.code, error.kind),
        (tool_cli_protocol::code::CANCELLED, "cancelled")
    );
    assert!(
        error.message.contains("cancelled at its server"),
        "{error:?}"
    );
    let slot = &pipeline.slots()[0];
    assert_eq!(slot.guards.stats.lock().unwrap().abandoned, 1);
    assert_eq!(
        slot.guards.tools.lock().unwrap().get("hang").unwrap().calls,
        1
    );
    // An abandoned call is no failure of the server's: the breaker learns nothing from it.
    assert_eq!(slot.guards.stats.lock().unwrap().errors, 0);
}

#[tokio::test]
async fn a_call_that_answers_is_not_recorded_as_abandoned() {
    let demo = Arc::new(FakeServer::new(
        "demo",
        vec![(tool("echo", object_schema(), Value::Null), Behaviour::Echo)],
    ));
    let (pipeline, recorder) = pipeline(vec![Arc::clone(&demo)]);
    let context = CallContext::new(owner());
    pipeline
        .call(&context, request(Some("demo"), "echo", json!({})))
        .await
        .unwrap();
    let records = recorder.0.lock().unwrap();
    assert_eq!(records.len(), 1);
    assert!(!records[0].was_abandoned() && records[0].error.is_none());
    assert_eq!(
        pipeline.slots()[0].guards.stats.lock().unwrap().abandoned,
        0
    );
}
