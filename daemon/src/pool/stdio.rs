//! Stdio servers: the MCP transport over a child's pipes (the child itself is `child.rs`).
//!
//! rmcp's own child-process transport would read stdout lines of any length and know nothing of
//! the child's exit, so we implement rmcp's [`Transport`] over the child's stdin/stdout here:
//! bounded lines, non-JSON lines skipped, a line over the limit skipped while it is read (its
//! request alone fails, `oversized.rs`), and the end of the stream when the child exits. The
//! transport also taps the raw JSON of the responses we pass through to clients, so
//! `describeTool` and `callTool` are never narrowed to the fields rmcp's types know. Answers to
//! the requests sent around rmcp (`direct.rs`, the tool calls) go straight to their callers.
//! Reading lines within the size limit is `lines.rs`; the tapped results wait in `raw_results.rs`.
//! It also writes the client `tasks` capability into `initialize` (rmcp's types have no such
//! member) and then hands a server's task-augmented request over whole
//! (`connection/client_tasks.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{ClientRequest, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::Deserialize as _;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, watch};

use super::child::ExitInfo;
use super::direct::FIRST_DIRECT_ID;
use super::direct::{DirectRequests, SharedStdin, write_line};
use super::lines::{LineRead, Skip, read_line_capped, skip_line};
use super::oversized::{
    OversizedAnswers, OversizedLine, ResponseId, SKIP_CEILING_FACTOR, SkippedLine,
};
use super::raw_results::{RawResults, id_key};

/// Largest line we accept from a server's stdout. A bigger message is skipped and the request
/// it answers fails with `resultTooLarge`; the connection stays.
pub(crate) const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// After the child has exited, how long its stdout is still read for the messages it wrote
/// before exiting. Those are already in the pipe, so this only matters when something else (a
/// detached grandchild) holds the pipe open and end-of-file never comes.
const EXIT_DRAIN: Duration = Duration::from_millis(200);

/// Why the stream ended when the child exited but its stdout stayed open.
pub(crate) const EXITED_WITH_STDOUT_HELD: &str =
    "the server process exited, but a process it started still holds its stdout open";

/// rmcp transport over a child's stdin/stdout with bounded reads.
pub(crate) struct StdioTransport {
    /// The child's stdin, which rmcp's sends and the direct requests write to, each line whole
    /// under its lock (no writer task: that was one more wake-up on every request's way). The
    /// pipe closes when the transport lets go of it on `close` and the sends in flight are done.
    stdin: Option<SharedStdin>,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    raw: Arc<RawResults>,
    direct: Arc<DirectRequests>,
    /// The `tasks` client capability to write into `initialize` (`connection/client_tasks.rs`).
    client_tasks: Option<Value>,
    /// Set once it has been: from then on task-augmented requests are marked for the handler.
    tasks_declared: Arc<AtomicBool>,
}

/// The pipes and bookkeeping a [`StdioTransport`] runs over.
pub(crate) struct StdioParts<R, W> {
    /// The child's stdout.
    pub(crate) stdout: R,
    /// The child's stdin.
    pub(crate) stdin: W,
    /// Largest message accepted.
    pub(crate) max_message_bytes: usize,
    /// Where wanted raw results are tapped.
    pub(crate) raw: Arc<RawResults>,
    /// Where the ids of rmcp's requests whose answers were skipped for size are noted.
    pub(crate) oversized: Arc<OversizedAnswers>,
    /// Receives why the stream ended.
    pub(crate) closed: Arc<Mutex<Option<String>>>,
    /// Becomes `Some` when the child exits (`ChildProcess::exit_watch`).
    pub(crate) exited: watch::Receiver<Option<ExitInfo>>,
}

impl StdioTransport {
    /// Starts the reader task.
    ///
    /// The stream ends at end-of-file on stdout, or shortly after the child exits even if
    /// end-of-file never comes: a server that started a detached process (its own session,
    /// inheriting stdout) and then exited must not look alive for as long as that process lives.
    pub(crate) fn new<R, W>(server: &str, parts: StdioParts<R, W>) -> StdioTransport
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let StdioParts {
            stdout,
            stdin,
            max_message_bytes,
            raw,
            oversized,
            closed,
            exited,
        } = parts;
        let stdin: Box<dyn AsyncWrite + Send + Unpin> = Box::new(stdin);
        let stdin: SharedStdin = Arc::new(tokio::sync::Mutex::new(Some(stdin)));
        let direct = Arc::new(DirectRequests::new(&stdin));

        let (in_tx, in_rx) = mpsc::channel(256);
        let reader_raw = Arc::clone(&raw);
        let reader_direct = Arc::clone(&direct);
        let tasks_declared = Arc::new(AtomicBool::new(false));
        let reader_tasks_declared = Arc::clone(&tasks_declared);
        let server = server.to_owned();
        tokio::spawn(async move {
            let reason = read_messages(
                &server,
                stdout,
                max_message_bytes,
                Taps {
                    raw: &reader_raw,
                    direct: &reader_direct,
                    oversized: &oversized,
                    tasks_declared: &reader_tasks_declared,
                },
                &in_tx,
                exited,
            )
            .await;
            tracing::debug!(server, reason, "stdout closed");
            *closed.lock().unwrap() = Some(reason);
            // Only now: the reason is known to whoever learns of the end.
            reader_direct.close();
        });
        StdioTransport {
            stdin: Some(stdin),
            incoming: in_rx,
            raw,
            direct,
            client_tasks: None,
            tasks_declared,
        }
    }

    /// Declares `capability` as the client's `tasks` in the handshake (rmcp's capabilities have
    /// no such member), so the server may ask for its requests to run as tasks.
    pub(crate) fn declare_client_tasks(&mut self, capability: Option<Value>) {
        self.client_tasks = capability;
    }

    /// The requests that go around rmcp on this transport's pipes.
    pub(crate) fn direct(&self) -> Arc<DirectRequests> {
        Arc::clone(&self.direct)
    }
}

/// Where the reader delivers what is not for rmcp.
#[derive(Clone, Copy)]
struct Taps<'a> {
    /// Raw results of rmcp's requests we pass through unnarrowed.
    raw: &'a RawResults,
    /// Answers to direct requests.
    direct: &'a DirectRequests,
    /// Answers to rmcp's requests that were skipped for their size.
    oversized: &'a OversizedAnswers,
    /// Whether the `tasks` capability was declared: then a task-augmented request is marked.
    tasks_declared: &'a AtomicBool,
}

/// What one step of reading stdout came to.
enum Read {
    /// A line within the limit, or the end of the stream, or a line that is too long.
    Line(LineRead),
    /// The end of an over-long line being skipped.
    Skipped(Skip),
}

/// Reads the next line, or goes on skipping the over-long one under way (`skipping`).
/// Cancel-safe: what was read so far is in `line` or `skipping`.
async fn read_step(
    reader: &mut (impl tokio::io::AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
    skipping: &mut Option<OversizedLine>,
    max_message_bytes: usize,
) -> std::io::Result<Read> {
    match skipping {
        Some(scanner) => {
            let ceiling = max_message_bytes.saturating_mul(SKIP_CEILING_FACTOR) as u64;
            skip_line(reader, scanner, ceiling).await.map(Read::Skipped)
        }
        None => read_line_capped(reader, line, max_message_bytes)
            .await
            .map(Read::Line),
    }
}

/// Reads newline-delimited JSON-RPC messages until the stream ends; returns why it ended.
///
/// A line over `max_message_bytes` is read on to its end without being kept, and the request
/// it answers (found on the way) fails alone; only a line that never ends (past
/// [`SKIP_CEILING_FACTOR`] times the limit) ends the stream.
///
/// Once `exited` says the child is gone, reading goes on only for [`EXIT_DRAIN`] (what the child
/// wrote before it exited is already in the pipe), so the stream ends whatever its descendants do
/// with the pipe.
async fn read_messages(
    server: &str,
    stdout: impl AsyncRead + Unpin,
    max_message_bytes: usize,
    taps: Taps<'_>,
    sink: &mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
    mut exited: watch::Receiver<Option<ExitInfo>>,
) -> String {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    let mut skipping: Option<OversizedLine> = None;
    let mut ignored_lines = 0u64;
    let mut drain_until: Option<tokio::time::Instant> = None;
    loop {
        // `read_step` is cancel-safe (it only awaits in `fill_buf`), and `line` and `skipping`
        // keep what it had read, so switching to draining mid-line loses nothing.
        let read = match drain_until {
            None => tokio::select! {
                read = read_step(&mut reader, &mut line, &mut skipping, max_message_bytes) => read,
                () = process_exited(&mut exited) => {
                    drain_until = Some(tokio::time::Instant::now() + EXIT_DRAIN);
                    continue;
                }
            },
            Some(deadline) => {
                match tokio::time::timeout_at(
                    deadline,
                    read_step(&mut reader, &mut line, &mut skipping, max_message_bytes),
                )
                .await
                {
                    Ok(read) => read,
                    Err(_) => {
                        tracing::warn!(server, "{EXITED_WITH_STDOUT_HELD}");
                        return EXITED_WITH_STDOUT_HELD.to_owned();
                    }
                }
            }
        };
        match read {
            Ok(Read::Line(LineRead::Eof) | Read::Skipped(Skip::Eof)) => {
                return "the server closed its stdout".to_owned();
            }
            Ok(Read::Line(LineRead::TooLong)) => {
                // Skip the rest of it as it comes, keeping none of it.
                let mut scanner = OversizedLine::new();
                scanner.feed(&line);
                line = Vec::new();
                skipping = Some(scanner);
                continue;
            }
            Ok(Read::Skipped(Skip::BeyondCeiling)) => {
                let ceiling = max_message_bytes.saturating_mul(SKIP_CEILING_FACTOR);
                tracing::warn!(server, ceiling, "a line without end on stdout");
                return format!(
                    "the server wrote more than {ceiling} bytes without ending the line \
                     (messages may be at most {max_message_bytes} bytes)"
                );
            }
            Ok(Read::Skipped(Skip::Ended)) => {
                if let Some(scanner) = skipping.take() {
                    let skipped = scanner.finish();
                    if let Some(message) = answer_skipped(server, &skipped, max_message_bytes, taps)
                        && sink.send(message).await.is_err()
                    {
                        return "the connection was closed".to_owned();
                    }
                }
                continue;
            }
            Ok(Read::Line(LineRead::Line)) => {}
            Err(err) => return format!("reading the server's stdout failed: {err}"),
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            super::lines::reuse(&mut line);
            continue;
        }
        let message = match decode(text, taps) {
            Ok(Some(message)) => message,
            Ok(None) => {
                super::lines::reuse(&mut line);
                continue;
            }
            Err(rejected) => {
                ignored_lines += 1;
                // Banners and stray prints happen; log the first few, then every thousandth.
                if ignored_lines <= 5 || ignored_lines.is_multiple_of(1000) {
                    let preview = String::from_utf8_lossy(&text[..text.len().min(200)]);
                    tracing::warn!(
                        server,
                        ignored_lines,
                        why = rejected.describe(),
                        %preview,
                        "ignoring a line on stdout"
                    );
                }
                super::lines::reuse(&mut line);
                continue;
            }
        };
        super::lines::reuse(&mut line);
        if sink.send(message).await.is_err() {
            return "the connection was closed".to_owned();
        }
    }
}

/// The JSON-RPC error code of the stand-in answer rmcp gets for a request whose answer was
/// skipped; the connection turns it into `resultTooLarge` from what [`OversizedAnswers`] noted.
const SKIPPED_ANSWER_CODE: i32 = tool_cli_protocol::code::UPSTREAM_ERROR;

/// Fails the request a skipped line answered, alone: a direct request's caller is told at once;
/// for one of rmcp's, the id is noted and the stand-in error answer returned, for the reader to
/// hand rmcp in place of the answer, so the request ends now rather than at its timeout.
fn answer_skipped(
    server: &str,
    skipped: &SkippedLine,
    max_message_bytes: usize,
    taps: Taps<'_>,
) -> Option<RxJsonRpcMessage<RoleClient>> {
    let bytes = skipped.bytes;
    let Some(id) = &skipped.answers else {
        tracing::warn!(
            server,
            bytes,
            max_message_bytes,
            "skipped a line over the size limit that answers no request of ours"
        );
        return None;
    };
    tracing::warn!(
        server,
        bytes,
        max_message_bytes,
        id = %id.key(),
        "skipped an answer over the size limit; its request fails alone"
    );
    if let ResponseId::Number(number) = id
        && *number >= FIRST_DIRECT_ID
    {
        taps.direct.too_large(*number, bytes);
        return None;
    }
    taps.oversized.record(id.key(), Some(bytes));
    let id_value: Value = serde_json::from_str(&id.key()).ok()?;
    let stand_in = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id_value,
        "error": {
            "code": SKIPPED_ANSWER_CODE,
            "message": format!(
                "the answer of {bytes} bytes was over the {max_message_bytes}-byte limit and was skipped"
            ),
        },
    });
    ServerJsonRpcMessage::deserialize(stand_in).ok()
}

/// Resolves once the child has exited; never, if nobody can tell any more.
async fn process_exited(exited: &mut watch::Receiver<Option<ExitInfo>>) {
    if exited.wait_for(Option::is_some).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Why a line from a server's stdout was not passed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rejected {
    /// Not JSON at all: a banner or a stray print.
    NotJson,
    /// JSON, but not a valid JSON-RPC 2.0 message (wrong or missing `jsonrpc`, both `result` and
    /// `error`, …).
    NotJsonRpc,
    /// A response whose id is a string of digits. We only ever send numeric ids, and rmcp would
    /// take `"7"` as the answer to request 7; an answer must carry the id exactly as it was sent.
    StringId,
}

impl Rejected {
    fn describe(self) -> &'static str {
        match self {
            Rejected::NotJson => "not JSON",
            Rejected::NotJsonRpc => "not a valid JSON-RPC 2.0 message",
            Rejected::StringId => {
                "a response whose id is a string, though every request we send has a numeric id"
            }
        }
    }
}

/// Parses one line into a message rmcp accepts, or delivers it to its caller (`None`) when it
/// answers a direct request. The raw result of a response we pass through
/// unnarrowed is tapped only after the line has passed validation, under its exact id, so what
/// a caller gets is never a line that was rejected.
///
/// The line is parsed once. A wanted result (a tool call's, a listing's) is moved out of the
/// parsed message before rmcp sees it and replaced by `{}`: rmcp's typed decoding of a result is
/// an untagged union of some twenty result types tried in turn, each failure building an error,
/// and its outcome would be thrown away for the raw result anyway. The envelope (`jsonrpc`, `id`,
/// `result` and `error` never both) is still checked by rmcp's own decoding, so the lines rejected
/// are the same as before.
fn decode(text: &[u8], taps: Taps<'_>) -> Result<Option<RxJsonRpcMessage<RoleClient>>, Rejected> {
    let value: Value = serde_json::from_slice(text).map_err(|_| Rejected::NotJson)?;
    let Err(mut value) = taps.direct.offer(value) else {
        return Ok(None);
    };
    if taps.tasks_declared.load(Ordering::Relaxed) {
        super::connection::mark_task_augmented(&mut value);
    }
    let raw = taps.raw;
    let tapped = take_wanted_result(&mut value, raw);
    let message = ServerJsonRpcMessage::deserialize(value).map_err(|_| Rejected::NotJsonRpc)?;
    match &message {
        JsonRpcMessage::Response(response) => {
            if is_numeric_string(&response.id) {
                return Err(Rejected::StringId);
            }
            if let Some((key, result)) = tapped {
                raw.offer(key, result);
            }
        }
        JsonRpcMessage::Error(error) if error.id.as_ref().is_some_and(is_numeric_string) => {
            return Err(Rejected::StringId);
        }
        _ => {}
    }
    Ok(Some(message))
}

/// Moves the `result` of a response whose id is wanted out of `value`, leaving `{}` in its place
/// so the envelope still decodes as a response; returns the id's key and the result.
fn take_wanted_result(value: &mut Value, raw: &RawResults) -> Option<(String, Value)> {
    let object = value.as_object_mut()?;
    let key = match object.get("id")? {
        // The same text `id_key` makes of the request id we sent.
        Value::Number(number) => number.to_string(),
        Value::String(text) => serde_json::to_string(text).ok()?,
        _ => return None,
    };
    if !object.contains_key("result") || !raw.is_wanted(&key) {
        return None;
    }
    let result = object.insert("result".to_owned(), Value::Object(serde_json::Map::new()))?;
    Some((key, result))
}

/// Whether `id` is a string rmcp would match to a numeric request id.
fn is_numeric_string(id: &rmcp::model::RequestId) -> bool {
    matches!(id, rmcp::model::NumberOrString::String(text) if text.parse::<i64>().is_ok())
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item
            && matches!(
                request.request,
                ClientRequest::CallToolRequest(_)
                    | ClientRequest::ListToolsRequest(_)
                    | ClientRequest::ListResourcesRequest(_)
                    | ClientRequest::ListResourceTemplatesRequest(_)
                    | ClientRequest::ReadResourceRequest(_)
                    // Passed on unread (completions, subscriptions, MCP tasks): rmcp's typed
                    // results would narrow what the server said.
                    | ClientRequest::CustomRequest(_)
            )
        {
            self.raw.want(id_key(&request.id));
        }
        let stdin = self.stdin.clone();
        let declaring = self.client_tasks.as_ref().filter(|_| {
            matches!(&item, JsonRpcMessage::Request(request)
                if matches!(request.request, ClientRequest::InitializeRequest(_)))
        });
        let encoded = match declaring {
            // Only the handshake goes through a JSON value, to have the declaration written in.
            Some(capability) => serde_json::to_value(&item).and_then(|mut message| {
                if super::connection::declare_in_initialize(&mut message, capability) {
                    self.tasks_declared.store(true, Ordering::Relaxed);
                }
                serde_json::to_vec(&message)
            }),
            None => serde_json::to_vec(&item),
        }
        .map(|mut bytes| {
            bytes.push(b'\n');
            bytes
        });
        async move {
            let bytes = encoded.map_err(std::io::Error::other)?;
            let stdin =
                stdin.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
            write_line(stdin, bytes).await
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Letting go of stdin closes the pipe (once the sends in flight are done with it): the
        // polite way to ask an MCP server to exit.
        self.stdin = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A direct-request table over no pipe, for the tests of rmcp's side.
    fn no_direct() -> DirectRequests {
        let stdin: SharedStdin = Arc::new(tokio::sync::Mutex::new(None));
        DirectRequests::new(&stdin)
    }

    fn decode(
        text: &[u8],
        raw: &RawResults,
    ) -> Result<Option<RxJsonRpcMessage<RoleClient>>, Rejected> {
        super::decode(
            text,
            Taps {
                raw,
                direct: &no_direct(),
                oversized: &OversizedAnswers::new(1024),
                tasks_declared: &AtomicBool::new(false),
            },
        )
    }

    #[tokio::test(start_paused = true)]
    async fn the_stream_ends_when_the_child_exits_even_if_stdout_stays_open() {
        use tokio::io::AsyncWriteExt as _;
        const NOTIFICATION: &[u8] =
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n";
        // The writer half stays open throughout, like a detached grandchild holding the pipe.
        let (mut writer, reader) = tokio::io::duplex(1024);
        let (exit_tx, exit_rx) = watch::channel(None);
        let (sink, mut received) = mpsc::channel(8);
        let reading = tokio::spawn(async move {
            let raw = RawResults::default();
            let direct = no_direct();
            let oversized = OversizedAnswers::new(1024);
            let taps = Taps {
                raw: &raw,
                direct: &direct,
                oversized: &oversized,
                tasks_declared: &AtomicBool::new(false),
            };
            read_messages("t", reader, 1024, taps, &sink, exit_rx).await
        });
        writer.write_all(NOTIFICATION).await.unwrap();
        assert!(received.recv().await.is_some());
        // Written just before the exit: still delivered.
        writer.write_all(NOTIFICATION).await.unwrap();
        exit_tx.send_replace(Some(ExitInfo {
            description: "exit code 0".into(),
        }));
        assert_eq!(reading.await.unwrap(), EXITED_WITH_STDOUT_HELD);
        assert!(received.recv().await.is_some());
        assert!(received.recv().await.is_none());
        drop(writer);
    }

    #[tokio::test]
    async fn an_oversized_answer_fails_its_request_alone_and_the_stream_goes_on() {
        use tokio::io::AsyncWriteExt as _;
        const LIMIT: usize = 1024;
        let (mut writer, reader) = tokio::io::duplex(4096);
        let (_exit_tx, exit_rx) = watch::channel(None);
        let (sink, mut received) = mpsc::channel(8);
        let stdin: SharedStdin = Arc::new(tokio::sync::Mutex::new(None));
        let direct = Arc::new(DirectRequests::new(&stdin));
        let oversized = Arc::new(OversizedAnswers::new(LIMIT));
        let raw = Arc::new(RawResults::default());
        let mut direct_call = direct.register().unwrap();
        let mut other_direct_call = direct.register().unwrap();
        let reading = tokio::spawn({
            let (direct, oversized, raw) = (
                Arc::clone(&direct),
                Arc::clone(&oversized),
                Arc::clone(&raw),
            );
            async move {
                let taps = Taps {
                    raw: &raw,
                    direct: &direct,
                    oversized: &oversized,
                    tasks_declared: &AtomicBool::new(false),
                };
                read_messages("t", reader, LIMIT, taps, &sink, exit_rx).await
            }
        });
        let filler = "a".repeat(10 * LIMIT);
        // A direct call's answer, id first; then one of rmcp's requests' answers with the id
        // last (the TypeScript SDK's order); then a garbage line over the limit; then the
        // other direct call's ordinary answer.
        let lines = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{filler}\"}}]}}}}\n\
             {{\"result\":{{\"contents\":[{{\"text\":\"{filler}\"}}]}},\"jsonrpc\":\"2.0\",\"id\":7}}\n\
             {filler}\n\
             {{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{\"content\":[]}}}}\n",
            direct_call.id, other_direct_call.id
        );
        let sizes: Vec<u64> = lines.lines().map(|line| line.len() as u64).collect();
        let writing = tokio::spawn(async move {
            writer.write_all(lines.as_bytes()).await.unwrap();
            writer
        });
        let answer = (&mut direct_call.answer).await.unwrap();
        assert!(
            matches!(answer, super::super::direct::Answer::TooLarge(bytes) if bytes == sizes[0]),
            "{answer:?}"
        );
        // rmcp's request ends now, with the stand-in error, and its size is noted.
        let stand_in = received.recv().await.unwrap();
        assert!(
            matches!(&stand_in, JsonRpcMessage::Error(error)
                if error.id == Some(rmcp::model::NumberOrString::Number(7))),
            "{stand_in:?}"
        );
        assert_eq!(oversized.take("7"), Some(Some(sizes[1])));
        // The stream went on: the other call's answer arrived whole.
        match (&mut other_direct_call.answer).await.unwrap() {
            super::super::direct::Answer::Result(result) => {
                assert_eq!(result, serde_json::json!({"content": []}));
            }
            other => panic!("expected the answer, got {other:?}"),
        }
        drop(writing.await.unwrap());
        assert_eq!(reading.await.unwrap(), "the server closed its stdout");
    }

    #[tokio::test]
    async fn a_line_without_end_ends_the_stream_at_the_ceiling() {
        use tokio::io::AsyncWriteExt as _;
        const LIMIT: usize = 64;
        let (mut writer, reader) = tokio::io::duplex(4096);
        let (_exit_tx, exit_rx) = watch::channel(None);
        let (sink, _received) = mpsc::channel(8);
        let reading = tokio::spawn(async move {
            let raw = RawResults::default();
            let direct = no_direct();
            let oversized = OversizedAnswers::new(LIMIT);
            let taps = Taps {
                raw: &raw,
                direct: &direct,
                oversized: &oversized,
                tasks_declared: &AtomicBool::new(false),
            };
            read_messages("t", reader, LIMIT, taps, &sink, exit_rx).await
        });
        let endless = vec![b'x'; LIMIT * SKIP_CEILING_FACTOR + 1];
        writer.write_all(&endless).await.unwrap();
        let reason = reading.await.unwrap();
        assert!(
            reason.starts_with("the server wrote more than 4096 bytes without ending the line"),
            "{reason}"
        );
    }

    #[tokio::test]
    async fn end_of_file_still_ends_the_stream_when_the_child_lives_on() {
        let (_exit_tx, exit_rx) = watch::channel(None);
        let (sink, _received) = mpsc::channel(8);
        let raw = RawResults::default();
        let direct = no_direct();
        let oversized = OversizedAnswers::new(1024);
        let taps = Taps {
            raw: &raw,
            direct: &direct,
            oversized: &oversized,
            tasks_declared: &AtomicBool::new(false),
        };
        let reason = read_messages("t", &b""[..], 1024, taps, &sink, exit_rx).await;
        assert_eq!(reason, "the server closed its stdout");
    }

    #[test]
    fn decode_skips_garbage_and_taps_results() {
        let raw = RawResults::default();
        assert_eq!(
            decode(b"Starting server...", &raw).err(),
            Some(Rejected::NotJson)
        );
        raw.want("7".into());
        let line = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"x-extra":true}}"#;
        assert!(decode(line, &raw).is_ok());
        assert_eq!(raw.take("7").unwrap()["x-extra"], true);
    }

    #[test]
    fn rejected_lines_are_never_tapped_and_the_valid_answer_after_them_is() {
        let forged = [
            (
                &br#"{"jsonrpc":"1.0","id":7,"result":{"content":[],"forged":1}}"#[..],
                Rejected::NotJsonRpc,
            ),
            (
                br#"{"id":7,"result":{"content":[],"forged":2}}"#,
                Rejected::NotJsonRpc,
            ),
            (
                br#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"forged":3},"error":{"code":1,"message":"m"}}"#,
                Rejected::NotJsonRpc,
            ),
            (
                br#"{"jsonrpc":"2.0","id":"7","result":{"content":[],"forged":4}}"#,
                Rejected::StringId,
            ),
            (
                br#"{"jsonrpc":"2.0","id":"7","error":{"code":1,"message":"forged 5"}}"#,
                Rejected::StringId,
            ),
        ];
        for (line, why) in forged {
            let raw = RawResults::default();
            raw.want("7".into());
            assert_eq!(
                decode(line, &raw).err(),
                Some(why),
                "{}",
                String::from_utf8_lossy(line)
            );
            let valid = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"real":true}}"#;
            assert!(decode(valid, &raw).is_ok());
            assert_eq!(
                raw.take("7"),
                Some(serde_json::json!({"content": [], "real": true}))
            );
        }
        // A string id that is not a number cannot be mistaken for ours: rmcp ignores it.
        let raw = RawResults::default();
        assert!(decode(br#"{"jsonrpc":"2.0","id":"abc","result":{}}"#, &raw).is_ok());
    }

    #[test]
    fn a_task_augmented_request_reaches_the_handler_whole_once_tasks_are_declared() {
        use rmcp::model::ServerRequest;
        let line = br#"{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"task":{"ttl":1000},"mode":"form","message":"?","requestedSchema":{"type":"object","properties":{}}}}"#;
        let decoded = |declared: bool| {
            let message = super::decode(
                line,
                Taps {
                    raw: &RawResults::default(),
                    direct: &no_direct(),
                    oversized: &OversizedAnswers::new(1024),
                    tasks_declared: &AtomicBool::new(declared),
                },
            );
            match message {
                Ok(Some(JsonRpcMessage::Request(request))) => request.request,
                other => panic!("not a request: {other:?}"),
            }
        };
        match decoded(true) {
            ServerRequest::CustomRequest(custom) => {
                assert_eq!(custom.method, "tool-cli/task-augmented/elicitation/create");
                assert_eq!(custom.params.unwrap()["task"]["ttl"], 1000);
            }
            other => panic!("not handed over whole: {other:?}"),
        }
        // Not declared (an old connection, a 2026 one): rmcp's own elicitation, `task` unread.
        assert!(matches!(decoded(false), ServerRequest::ElicitRequest(_)));
    }

    /// A transport over in-memory pipes standing for a server's stdin and stdout (1 KiB lines),
    /// and the sender of its exit status (kept alive so the transport does not see an exit).
    fn transport_over(
        stdin: tokio::io::DuplexStream,
        stdout: tokio::io::DuplexStream,
    ) -> (watch::Sender<Option<ExitInfo>>, StdioTransport) {
        let (exit_tx, exited) = watch::channel(None);
        let transport = StdioTransport::new(
            "t",
            StdioParts {
                stdout,
                stdin,
                max_message_bytes: 1024,
                raw: Arc::default(),
                oversized: Arc::new(OversizedAnswers::new(1024)),
                closed: Arc::default(),
                exited,
            },
        );
        (exit_tx, transport)
    }

    #[tokio::test]
    async fn the_handshake_declares_client_tasks_when_asked_to() {
        use rmcp::model::{ClientRequest, InitializeRequest};
        use tokio::io::AsyncBufReadExt as _;
        let (stdin, server_reads) = tokio::io::duplex(4096);
        let (_server_writes, stdout) = tokio::io::duplex(64);
        let (_exit_tx, mut transport) = transport_over(stdin, stdout);
        let capability = serde_json::json!({"requests": {"elicitation": {"create": {}}}});
        transport.declare_client_tasks(Some(capability.clone()));
        let config = super::super::connection::client_config(false, true);
        let initialize = ClientRequest::InitializeRequest(InitializeRequest::new(config));
        transport
            .send(JsonRpcMessage::request(
                initialize,
                rmcp::model::NumberOrString::Number(0),
            ))
            .await
            .unwrap();
        let mut line = String::new();
        tokio::io::BufReader::new(server_reads)
            .read_line(&mut line)
            .await
            .unwrap();
        let sent: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(sent["params"]["capabilities"]["tasks"], capability);
        assert!(sent["params"]["capabilities"]["elicitation"].is_object());
        assert!(transport.tasks_declared.load(Ordering::Relaxed));
    }

    #[tokio::test]
    async fn sends_write_whole_lines_in_order_and_close_ends_the_pipe() {
        use rmcp::model::{ClientNotification, ProgressNotification, ProgressNotificationParam};
        use tokio::io::AsyncReadExt as _;
        let (stdin, mut server_reads) = tokio::io::duplex(64);
        let (_server_writes, stdout) = tokio::io::duplex(64);
        let (_exit_tx, mut transport) = transport_over(stdin, stdout);
        // The pipe holds 64 bytes: each line waits for the server to read, and the sends still
        // go out whole and in the order they were made.
        let progress_notice = |step: u32| {
            JsonRpcMessage::notification(ClientNotification::ProgressNotification(
                ProgressNotification::new(ProgressNotificationParam::new(
                    rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(7)),
                    f64::from(step),
                )),
            ))
        };
        let mut sends = Vec::new();
        for step in 0..5 {
            sends.push(transport.send(progress_notice(step)));
        }
        let sending = tokio::spawn(async move {
            for send in sends {
                send.await.unwrap();
            }
        });
        transport.close().await.unwrap();
        let mut written = String::new();
        server_reads.read_to_string(&mut written).await.unwrap();
        sending.await.unwrap();
        let progress: Vec<f64> = written
            .lines()
            .map(|line| {
                let value: Value = serde_json::from_str(line).unwrap();
                value["params"]["progress"].as_f64().unwrap()
            })
            .collect();
        assert_eq!(progress, [0.0, 1.0, 2.0, 3.0, 4.0]);
        // Closed: a later send fails instead of writing.
        let late = transport.send(progress_notice(9));
        assert_eq!(
            late.await.unwrap_err().kind(),
            std::io::ErrorKind::BrokenPipe
        );
    }

    #[test]
    fn a_wanted_result_is_moved_out_whole_and_others_are_left_to_rmcp() {
        let raw = RawResults::default();
        raw.want("3".into());
        let line = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}],"structuredContent":{"rows":[[1]]},"x-extra":[1,2]}}"#;
        let message = decode(line, &raw).unwrap().unwrap();
        assert!(
            matches!(message, JsonRpcMessage::Response(ref response) if response.id == rmcp::model::NumberOrString::Number(3))
        );
        assert_eq!(
            raw.take("3"),
            Some(
                serde_json::json!({"content": [{"type": "text", "text": "hi"}], "structuredContent": {"rows": [[1]]}, "x-extra": [1, 2]})
            )
        );
        // Not wanted (a ping's answer, say): nothing is tapped, rmcp decodes it as before.
        assert!(decode(br#"{"jsonrpc":"2.0","id":4,"result":{}}"#, &raw).is_ok());
        assert_eq!(raw.take("4"), None);
        assert_eq!(raw.len(), 0);
    }

    #[tokio::test]
    async fn answers_to_direct_requests_go_to_their_callers_and_the_rest_to_rmcp() {
        use tokio::io::AsyncWriteExt as _;
        let (mut server_writes, stdout) = tokio::io::duplex(1024);
        let (stdin, _server_reads) = tokio::io::duplex(1024);
        let (_exit_tx, mut transport) = transport_over(stdin, stdout);
        let direct = transport.direct();
        let pending = direct.register().unwrap();
        let waiting = direct.register().unwrap();
        let answer = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}}\n\
             {{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{\"content\":[],\"x\":1}}}}\n\
             {{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{{}}}}\n",
            pending.id
        );
        server_writes.write_all(answer.as_bytes()).await.unwrap();
        match pending.answer.await.unwrap() {
            super::super::direct::Answer::Result(result) => {
                assert_eq!(result, serde_json::json!({"content": [], "x": 1}));
            }
            other => panic!("expected a result, got {other:?}"),
        }
        // rmcp gets the notification and its own response, not the direct answer.
        let first = transport.receive().await.unwrap();
        assert!(
            matches!(first, JsonRpcMessage::Notification(_)),
            "{first:?}"
        );
        let second = transport.receive().await.unwrap();
        assert!(
            matches!(second, JsonRpcMessage::Response(ref response) if response.id == rmcp::model::NumberOrString::Number(0)),
            "{second:?}"
        );
        // The end of the stream ends the wait of a request still in flight.
        drop(server_writes);
        assert!(transport.receive().await.is_none());
        assert!(waiting.answer.await.is_err());
        assert!(direct.register().is_none());
    }
}
