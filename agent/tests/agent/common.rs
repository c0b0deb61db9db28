//! Shared helpers: an in-memory tool host, a scripted backend, a scripted fake LLM HTTP server
//! on loopback, a ToolHost over a real daemon's JSON-RPC, and log capture.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt as _;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tool_cli_agent::answer::{AnswerSchema, default_answer_schema};
use tool_cli_agent::backend::{LlmBackend, LlmError, LlmRequest, LlmResponse};
use tool_cli_agent::config::Timeouts;
use tool_cli_agent::cost::ModelPrice;
use tool_cli_agent::host::{BoxFuture, ToolCall, ToolCallOutcome, ToolError, ToolHost, ToolInfo};
use tool_cli_agent::run::RunSettings;
use tool_cli_tests::Daemon;

// ---------------------------------------------------------------------------------------------
// Settings.

/// Run settings with the defaults a test usually wants.
pub(crate) fn settings(task: &str) -> RunSettings {
    RunSettings {
        run_id: "run_test".into(),
        task: task.into(),
        max_steps: 8,
        cost_ceiling_usd: None,
        price: None,
        max_output_tokens: 1024,
        tool_limit: 32,
        timeouts: Timeouts::default(),
        run_limit_from_request: false,
        dry_run: false,
        confirm_destructive: false,
        answer_schema: AnswerSchema::compile(default_answer_schema()).expect("default schema"),
        servers: None,
        tools: None,
    }
}

/// A price with every rate `rate` USD per million tokens.
pub(crate) fn flat_price(rate: f64) -> ModelPrice {
    ModelPrice {
        input: rate,
        output: rate,
        cache_write: rate,
        cache_read: rate,
        effective: "2026-01-01".into(),
        long_prompt: None,
    }
}

// ---------------------------------------------------------------------------------------------
// An in-memory tool host.

type Handler = dyn Fn(&ToolCall) -> Result<ToolCallOutcome, ToolError> + Send + Sync;

/// Tools answered by a closure; records every call it gets.
pub(crate) struct MemoryHost {
    pub(crate) tools: Vec<ToolInfo>,
    handler: Box<Handler>,
    pub(crate) calls: Mutex<Vec<ToolCall>>,
    /// When set, `call_tool` never answers (for timeouts and cancellation).
    pub(crate) hang: bool,
}

impl MemoryHost {
    pub(crate) fn new(
        tools: Vec<ToolInfo>,
        handler: impl Fn(&ToolCall) -> Result<ToolCallOutcome, ToolError> + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            tools,
            handler: Box::new(handler),
            calls: Mutex::new(Vec::new()),
            hang: false,
        })
    }

    pub(crate) fn hanging(tools: Vec<ToolInfo>) -> Arc<Self> {
        Arc::new(Self {
            tools,
            handler: Box::new(|_| unreachable!("a hanging host never answers")),
            calls: Mutex::new(Vec::new()),
            hang: true,
        })
    }

    pub(crate) fn calls(&self) -> Vec<ToolCall> {
        self.calls.lock().expect("calls").clone()
    }
}

/// A text result as an MCP server sends it.
pub(crate) fn text_outcome(call: &ToolCall, text: &str) -> ToolCallOutcome {
    ToolCallOutcome {
        server: call.server.clone().unwrap_or_else(|| "routed".into()),
        tool: call.tool.clone(),
        result: json!({"content": [{"type": "text", "text": text}], "isError": false}),
        is_error: false,
        latency: Duration::from_millis(3),
        selection_rule: Some(
            if call.server.is_some() {
                "named"
            } else {
                "priority"
            }
            .into(),
        ),
    }
}

pub(crate) fn tool(server: &str, name: &str) -> ToolInfo {
    ToolInfo {
        server: server.into(),
        name: name.into(),
        description: format!("{name} of {server}"),
        input_schema: json!({"type": "object", "properties": {"id": {"type": "string"}}}),
        read_only: true,
        destructive: false,
    }
}

impl ToolHost for MemoryHost {
    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolInfo>, ToolError>> {
        Box::pin(async move { Ok(self.tools.clone()) })
    }

    fn search_tools<'a>(
        &'a self,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ToolInfo>, ToolError>> {
        // Rank by how many of the tool's name parts the query mentions.
        Box::pin(async move {
            let query = query.to_lowercase();
            let mut ranked = self.tools.clone();
            ranked.sort_by_key(|t| {
                std::cmp::Reverse(t.name.split('_').filter(|p| query.contains(*p)).count())
            });
            ranked.truncate(limit);
            Ok(ranked)
        })
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'_, Result<ToolCallOutcome, ToolError>> {
        Box::pin(async move {
            self.calls.lock().expect("calls").push(call.clone());
            if self.hang {
                std::future::pending::<()>().await;
            }
            (self.handler)(&call)
        })
    }
}

// ---------------------------------------------------------------------------------------------
// A scripted backend.

type Script = dyn Fn(&LlmRequest<'_>, usize) -> Result<LlmResponse, LlmError> + Send + Sync;

/// A backend whose every turn comes from a closure given the request and the turn number.
pub(crate) struct ScriptedBackend {
    script: Box<Script>,
    turns: Mutex<usize>,
    pub(crate) bound: u64,
    pub(crate) seen: Mutex<Vec<(u64, usize)>>,
    /// When set, `complete` never answers.
    pub(crate) hang: bool,
}

impl ScriptedBackend {
    pub(crate) fn new(
        script: impl Fn(&LlmRequest<'_>, usize) -> Result<LlmResponse, LlmError> + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            script: Box::new(script),
            turns: Mutex::new(0),
            bound: 1_000,
            seen: Mutex::new(Vec::new()),
            hang: false,
        })
    }

    pub(crate) fn with_bound(
        bound: u64,
        script: impl Fn(&LlmRequest<'_>, usize) -> Result<LlmResponse, LlmError> + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            script: Box::new(script),
            turns: Mutex::new(0),
            bound,
            seen: Mutex::new(Vec::new()),
            hang: false,
        })
    }

    pub(crate) fn hanging() -> Arc<Self> {
        Arc::new(Self {
            script: Box::new(|_, _| unreachable!("never answers")),
            turns: Mutex::new(0),
            bound: 1,
            seen: Mutex::new(Vec::new()),
            hang: true,
        })
    }

    /// (max_output_tokens, number of turns in the request) of every call.
    pub(crate) fn seen(&self) -> Vec<(u64, usize)> {
        self.seen.lock().expect("seen").clone()
    }
}

impl LlmBackend for ScriptedBackend {
    fn name(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "scripted-model"
    }

    fn input_token_bound(&self, _request: &LlmRequest<'_>) -> u64 {
        self.bound
    }

    fn complete<'a>(
        &'a self,
        request: LlmRequest<'a>,
    ) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        Box::pin(async move {
            if self.hang {
                std::future::pending::<()>().await;
            }
            self.seen
                .lock()
                .expect("seen")
                .push((request.max_output_tokens, request.turns.len()));
            let turn = {
                let mut turns = self.turns.lock().expect("turns");
                *turns += 1;
                *turns
            };
            (self.script)(&request, turn)
        })
    }
}

// ---------------------------------------------------------------------------------------------
// A scripted fake LLM server on loopback.

/// One scripted answer of the fake server.
pub(crate) enum Reply {
    /// 200 `text/event-stream` with these chunks, each sent as its own frame.
    Sse(Vec<String>),
    /// 200 `text/event-stream` with these chunks, then the connection is cut.
    SseCut(Vec<String>),
    /// A status with headers and a JSON body.
    Status(u16, Vec<(&'static str, &'static str)>, Value),
}

/// One request the fake server received.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Value,
}

impl Recorded {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub(crate) struct FakeLlm {
    pub(crate) addr: SocketAddr,
    pub(crate) requests: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Body = BoxBody<Bytes, io::Error>;

impl FakeLlm {
    /// Serves `replies` in order, one per request, on `127.0.0.1:0`.
    pub(crate) async fn start(replies: Vec<Reply>) -> FakeLlm {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let recorded = requests.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let recorded = recorded.clone();
                let replies = replies.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request: Request<Incoming>| {
                        let recorded = recorded.clone();
                        let replies = replies.clone();
                        async move {
                            let path = request.uri().path().to_owned();
                            let headers = request
                                .headers()
                                .iter()
                                .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("").to_owned()))
                                .collect();
                            let bytes = request
                                .into_body()
                                .collect()
                                .await
                                .map(|c| c.to_bytes())
                                .unwrap_or_default();
                            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                            recorded.lock().expect("requests").push(Recorded {
                                path,
                                headers,
                                body,
                            });
                            let reply = replies.lock().expect("replies").pop_front();
                            Ok::<_, Infallible>(respond(reply))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        FakeLlm {
            addr,
            requests,
            task,
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("requests").clone()
    }
}

fn respond(reply: Option<Reply>) -> Response<Body> {
    let stream = |chunks: Vec<String>, cut: bool| {
        let frames: Vec<Result<Frame<Bytes>, io::Error>> = chunks
            .into_iter()
            .map(|chunk| Ok(Frame::data(Bytes::from(chunk))))
            .collect();
        // The cut comes after one yield: hyper flushes what it has whenever the body is
        // pending, so the client receives the head and the chunks before the connection dies.
        let tail = futures_util::stream::iter(cut.then_some(())).then(|()| async {
            tokio::task::yield_now().await;
            Err(io::Error::new(io::ErrorKind::ConnectionReset, "cut"))
        });
        BoxBody::new(StreamBody::new(
            futures_util::stream::iter(frames).chain(tail),
        ))
    };
    match reply {
        Some(Reply::Sse(chunks)) => Response::builder()
            .header("content-type", "text/event-stream")
            .body(stream(chunks, false))
            .expect("response"),
        Some(Reply::SseCut(chunks)) => Response::builder()
            .header("content-type", "text/event-stream")
            .body(stream(chunks, true))
            .expect("response"),
        Some(Reply::Status(status, headers, body)) => {
            let mut builder = Response::builder()
                .status(status)
                .header("content-type", "application/json");
            for (name, value) in headers {
                builder = builder.header(name, value);
            }
            builder
                .body(
                    Full::new(Bytes::from(body.to_string()))
                        .map_err(|never| match never {})
                        .boxed(),
                )
                .expect("response")
        }
        None => Response::builder()
            .status(500)
            .body(
                Full::new(Bytes::from_static(
                    b"{\"error\":{\"message\":\"script exhausted\"}}",
                ))
                .map_err(|never| match never {})
                .boxed(),
            )
            .expect("response"),
    }
}

/// An SSE event with a name, as Anthropic sends them.
pub(crate) fn named_event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// An SSE event without a name, as OpenAI sends them.
pub(crate) fn data_event(data: Value) -> String {
    format!("data: {data}\n\n")
}

// ---------------------------------------------------------------------------------------------
// Log capture.

/// Everything written through the tracing subscriber installed by [`capture_logs`].
#[derive(Clone, Default)]
pub(crate) struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("logs")).into_owned()
    }
}

impl io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().expect("logs").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Captures every log line at TRACE on this thread until the guard drops (tests using it run
/// on a current-thread runtime, so every task logs here).
pub(crate) fn capture_logs() -> (Logs, tracing::subscriber::DefaultGuard) {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    (logs, tracing::subscriber::set_default(subscriber))
}

// ---------------------------------------------------------------------------------------------
// A ToolHost over a real daemon.

/// Speaks JSON-RPC to a real `tool-cli-daemon` (the harness's blocking client, on the blocking
/// pool). Records the calls it makes.
pub(crate) struct DaemonHost {
    pub(crate) daemon: Arc<Daemon>,
    pub(crate) calls: Mutex<Vec<ToolCall>>,
}

impl DaemonHost {
    pub(crate) fn new(daemon: Daemon) -> Arc<Self> {
        Arc::new(Self {
            daemon: Arc::new(daemon),
            calls: Mutex::new(Vec::new()),
        })
    }

    async fn rpc(&self, method: &'static str, params: Value) -> Result<Value, ToolError> {
        let daemon = self.daemon.clone();
        tokio::task::spawn_blocking(move || daemon.rpc(method, Some(params)))
            .await
            .map_err(|error| ToolError::Other(format!("the rpc task failed: {error}")))?
            .map_err(|error| {
                let kind = error
                    .data
                    .as_ref()
                    .and_then(|d| d.get("kind"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let message = error.message.clone();
                match (error.code, kind.as_str()) {
                    (_, "unknownTool" | "unknownServer") => ToolError::UnknownTool(message),
                    (_, "invalidArguments") => ToolError::InvalidArguments(message),
                    (_, "confirmationRequired") => ToolError::Refused(message),
                    (_, "notPermitted") => ToolError::NotPermitted(message),
                    (-32002, _) => ToolError::Timeout(message),
                    (-32001 | -32004 | -32005, _) => ToolError::Unavailable(message),
                    _ => ToolError::Other(message),
                }
            })
    }
}

impl ToolHost for DaemonHost {
    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolInfo>, ToolError>> {
        Box::pin(async move {
            let servers = self.rpc("listServers", json!({})).await?;
            let mut tools = Vec::new();
            for server in servers["servers"].as_array().into_iter().flatten() {
                let name = server["name"].as_str().unwrap_or_default().to_owned();
                if server["state"] != "ready" {
                    continue;
                }
                let listed = self.rpc("listTools", json!({"server": name})).await?;
                for summary in listed["tools"].as_array().into_iter().flatten() {
                    let tool = summary["name"].as_str().unwrap_or_default();
                    let described = self
                        .rpc("describeTool", json!({"server": name, "tool": tool}))
                        .await?;
                    tools.push(ToolInfo {
                        server: name.clone(),
                        name: tool.to_owned(),
                        description: described["description"].as_str().unwrap_or("").to_owned(),
                        input_schema: described["inputSchema"].clone(),
                        read_only: described["annotations"]["readOnlyHint"] == json!(true),
                        destructive: described["annotations"]["destructiveHint"] == json!(true),
                    });
                }
            }
            Ok(tools)
        })
    }

    fn search_tools<'a>(
        &'a self,
        _query: &'a str,
        _limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ToolInfo>, ToolError>> {
        // The daemon's own ranking (`searchTools`), mapped back to the listed tools.
        Box::pin(async move {
            let all = self.list_tools().await?;
            let found = self
                .rpc(
                    "searchTools",
                    json!({"query": _query, "limit": _limit.clamp(1, 100)}),
                )
                .await?;
            Ok(found["results"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|hit| {
                    all.iter()
                        .find(|t| {
                            hit["server"] == t.server.as_str() && hit["tool"] == t.name.as_str()
                        })
                        .cloned()
                })
                .collect())
        })
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'_, Result<ToolCallOutcome, ToolError>> {
        Box::pin(async move {
            self.calls.lock().expect("calls").push(call.clone());
            let mut params = json!({"tool": call.tool, "arguments": call.arguments,
                                    "dryRun": call.dry_run, "confirm": call.confirm_destructive});
            if let Some(server) = &call.server {
                params["server"] = json!(server);
            }
            if let Some(hint) = &call.hint {
                params["hint"] = json!(hint);
            }
            let started = std::time::Instant::now();
            let result = self.rpc("callTool", params).await?;
            let selection = result
                .pointer("/_meta/tool-cli~1selection")
                .or_else(|| result.get("selection"));
            Ok(ToolCallOutcome {
                server: selection
                    .and_then(|s| s.get("server"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or(call.server.clone())
                    .unwrap_or_default(),
                tool: call.tool.clone(),
                is_error: result.get("isError") == Some(&json!(true)),
                selection_rule: selection
                    .and_then(|s| s.get("rule"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                result,
                latency: started.elapsed(),
            })
        })
    }
}
