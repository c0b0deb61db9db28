//! Requests to a stdio server that skip rmcp's service task: the hot path of a tool call.
//!
//! Through rmcp, a request crosses four tasks before it reaches the child and two on the way
//! back (the caller, rmcp's service loop, the send task it spawns, a stdin writer; the stdout
//! reader, the service loop again), each a wake-up and a queue. Here the caller writes its line
//! to the child's stdin itself, under the lock every writer of that pipe takes, and waits on a
//! oneshot that the stdout reader resolves when the answer arrives: one hand-off in all.
//!
//! Direct requests have ids from [`FIRST_DIRECT_ID`] up, above anything rmcp's own counter (a
//! `u32`) can reach, so the reader knows an answer is ours by its id alone and never hands it to
//! rmcp. Everything else on the pipe (the handshake, listings, pings, a server's own requests and
//! notifications, progress among them) still goes through rmcp, and so does a call that relays
//! its events (`callEvents`): its answer must not overtake the notifications sent before it. A
//! direct request carries a progress token equal to its id, as rmcp's requests carry theirs.
//!
//! Writing from the caller's task must never leave half a line in the pipe when the caller goes
//! away (a client disconnecting, a timeout): [`write_line`] writes at once when the pipe has
//! room, and otherwise hands the rest of the line, with the lock, to a task of its own that
//! finishes it whatever happens to the caller.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::Poll;

use serde::{Deserialize as _, Serialize};
use serde_json::Value;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;

/// The first id of a direct request; rmcp numbers its own requests with a `u32` from 0.
pub(crate) const FIRST_DIRECT_ID: i64 = 1 << 32;

/// The child's stdin, shared by everything that writes to it; `None` once a write has failed.
///
/// The lock is tokio's, so a writer waiting for a slow reader does not block a runtime thread,
/// and it is fair, so lines go out in the order their writers asked for it.
pub(crate) type SharedStdin = Arc<tokio::sync::Mutex<Option<Box<dyn AsyncWrite + Send + Unpin>>>>;

/// Writes `line` (a whole message with its newline) to `stdin`.
///
/// The line is written from the calling task when the pipe takes it at once, which is the usual
/// case (a request is far smaller than a pipe's buffer). When it does not, the rest of the write
/// moves to a spawned task holding the lock, so that dropping the caller never tears a line. A
/// pipe that failed once is not written to again.
pub(crate) async fn write_line(stdin: SharedStdin, line: Vec<u8>) -> std::io::Result<()> {
    let guard = stdin.lock_owned().await;
    let mut write = Box::pin(async move {
        let mut guard = guard;
        let broken = || std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let writer = guard.as_mut().ok_or_else(broken)?;
        let written = match writer.write_all(&line).await {
            Ok(()) => writer.flush().await,
            Err(error) => Err(error),
        };
        if written.is_err() {
            *guard = None;
        }
        written
    });
    match std::future::poll_fn(|context| Poll::Ready(write.as_mut().poll(context))).await {
        Poll::Ready(written) => written,
        Poll::Pending => tokio::spawn(write)
            .await
            .unwrap_or_else(|join| Err(std::io::Error::other(join))),
    }
}

/// How a server answered a direct request.
#[derive(Debug)]
pub(crate) enum Answer {
    /// The `result` member, whole.
    Result(Value),
    /// The `error` member.
    Error(rmcp::ErrorData),
    /// An answer over the size limit, skipped by the reader: its size in bytes.
    TooLarge(u64),
}

/// The direct requests of one stdio connection: the ids in flight and where their answers go.
pub(crate) struct DirectRequests {
    /// The child's stdin; held weakly, so that the pipe closes when rmcp's transport closes it.
    stdin: Weak<tokio::sync::Mutex<Option<Box<dyn AsyncWrite + Send + Unpin>>>>,
    next_id: AtomicI64,
    /// `None` once the stream has ended: no answer can come any more.
    pending: Mutex<Option<HashMap<i64, oneshot::Sender<Answer>>>>,
}

/// A registered direct request: its id and where its answer will arrive.
pub(crate) struct Pending {
    pub(crate) id: i64,
    pub(crate) answer: oneshot::Receiver<Answer>,
}

impl DirectRequests {
    pub(crate) fn new(stdin: &SharedStdin) -> DirectRequests {
        DirectRequests {
            stdin: Arc::downgrade(stdin),
            next_id: AtomicI64::new(FIRST_DIRECT_ID),
            pending: Mutex::new(Some(HashMap::new())),
        }
    }

    /// A new id whose answer will be delivered; `None` once the stream has ended.
    pub(crate) fn register(&self) -> Option<Pending> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, answer) = oneshot::channel();
        self.pending.lock().unwrap().as_mut()?.insert(id, sender);
        Some(Pending { id, answer })
    }

    /// Stops waiting for the answer to `id` (answered, timed out or abandoned).
    pub(crate) fn forget(&self, id: i64) {
        if let Some(pending) = self.pending.lock().unwrap().as_mut() {
            pending.remove(&id);
        }
    }

    /// Writes one message to the child's stdin; `BrokenPipe` once the pipe is closed.
    pub(crate) async fn send(&self, line: Vec<u8>) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .upgrade()
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        write_line(stdin, line).await
    }

    /// Tells the server, from a task of its own, that the request `id` is abandoned: the caller
    /// is gone or out of time and must not wait for a pipe the server does not read.
    pub(crate) fn cancel(self: &Arc<Self>, id: i64, reason: &str) {
        self.forget(id);
        let line = message_line(&serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": reason},
        }));
        let direct = Arc::clone(self);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = direct.send(line).await;
            });
        }
    }

    /// Takes `message` if it answers a direct request (delivering it to its caller, or dropping
    /// it when nobody waits any more); gives it back otherwise.
    pub(crate) fn offer(&self, mut message: Value) -> Result<(), Value> {
        let Some(id) = direct_answer_id(&message) else {
            return Err(message);
        };
        // Not a valid response: the reader judges it as any other line.
        let Some(answer) = take_answer(&mut message) else {
            return Err(message);
        };
        let sender = self
            .pending
            .lock()
            .unwrap()
            .as_mut()
            .and_then(|pending| pending.remove(&id));
        match sender {
            Some(sender) => {
                let _ = sender.send(answer);
            }
            None => tracing::debug!(id, "an answer to a request nobody waits for any more"),
        }
        Ok(())
    }

    /// Tells the caller of request `id` that its answer, `bytes` long, was too large and was
    /// skipped; whether anybody was waiting for it.
    pub(crate) fn too_large(&self, id: i64, bytes: u64) -> bool {
        let sender = self
            .pending
            .lock()
            .unwrap()
            .as_mut()
            .and_then(|pending| pending.remove(&id));
        sender.is_some_and(|sender| sender.send(Answer::TooLarge(bytes)).is_ok())
    }

    /// The stream has ended: every caller still waiting learns it at once.
    pub(crate) fn close(&self) {
        self.pending.lock().unwrap().take();
    }
}

/// The id of `message` if it is a response to a direct request (a number in our range).
fn direct_answer_id(message: &Value) -> Option<i64> {
    let object = message.as_object()?;
    if object.contains_key("method") {
        return None;
    }
    object
        .get("id")?
        .as_i64()
        .filter(|id| *id >= FIRST_DIRECT_ID)
}

/// A JSON-RPC 2.0 response's outcome, moved out of it: exactly one of `result` and `error`,
/// `jsonrpc` "2.0", and an error that has a code and a message. `None`, and `message` left as it
/// was, for anything else.
fn take_answer(message: &mut Value) -> Option<Answer> {
    let object = message.as_object_mut()?;
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return None;
    }
    match (object.get("result"), object.get("error")) {
        (Some(_), None) => object.remove("result").map(Answer::Result),
        (None, Some(error)) => rmcp::ErrorData::deserialize(error).ok().map(Answer::Error),
        _ => None,
    }
}

/// One request line: `{"jsonrpc":"2.0","id":…,"method":…,"params":…}` and a newline, with
/// `_meta.progressToken` set to the id so the server's progress can be told apart.
pub(crate) fn request_line<P: Serialize>(id: i64, method: &str, params: &P) -> Vec<u8> {
    #[derive(Serialize)]
    struct Request<'a, P> {
        jsonrpc: &'static str,
        id: i64,
        method: &'a str,
        params: &'a P,
    }
    message_line(&Request {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
}

/// The `params` of a `tools/call`: the tool's name, its arguments and the progress token.
#[derive(Serialize)]
pub(crate) struct CallToolParams<'a> {
    pub(crate) name: &'a str,
    pub(crate) arguments: &'a serde_json::Map<String, Value>,
    #[serde(rename = "_meta")]
    pub(crate) meta: ProgressMeta<'a>,
}

/// `_meta`: a progress token and, when known, the caller key (`crate::provider::caller_key`).
#[derive(Serialize)]
pub(crate) struct ProgressMeta<'a> {
    #[serde(rename = "progressToken")]
    pub(crate) progress_token: i64,
    /// Who the call is for ([`crate::provider::CALLER_META_KEY`]).
    #[serde(rename = "tool-cli/sessionId", skip_serializing_if = "Option::is_none")]
    pub(crate) caller: Option<&'a str>,
}

fn message_line<T: Serialize>(message: &T) -> Vec<u8> {
    // Our own types and JSON values always encode.
    let mut line = serde_json::to_vec(message).unwrap_or_default();
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::AsyncReadExt as _;

    fn shared(writer: impl AsyncWrite + Send + Unpin + 'static) -> SharedStdin {
        Arc::new(tokio::sync::Mutex::new(Some(Box::new(writer))))
    }

    #[test]
    fn a_call_line_carries_the_arguments_and_a_progress_token() {
        let arguments = json!({"sql": "select 1"});
        let line = request_line(
            FIRST_DIRECT_ID,
            "tools/call",
            &CallToolParams {
                name: "sql_query",
                arguments: arguments.as_object().unwrap(),
                meta: ProgressMeta {
                    progress_token: FIRST_DIRECT_ID,
                    caller: Some("c-1"),
                },
            },
        );
        assert_eq!(line.last(), Some(&b'\n'));
        let sent: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            sent,
            json!({"jsonrpc": "2.0", "id": 4294967296_i64, "method": "tools/call", "params": {
                "name": "sql_query", "arguments": {"sql": "select 1"},
                "_meta": {"progressToken": 4294967296_i64, "tool-cli/sessionId": "c-1"}}})
        );
    }

    #[test]
    fn only_valid_answers_in_our_range_are_taken() {
        let stdin = shared(tokio::io::sink());
        let direct = DirectRequests::new(&stdin);
        let mut first = direct.register().unwrap();
        let mut second = direct.register().unwrap();
        assert_eq!(second.id, first.id + 1);

        // rmcp's own ids, notifications and requests of the server are given back untouched.
        for other in [
            json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}),
            json!({"jsonrpc": "2.0", "id": first.id, "method": "roots/list"}),
            json!({"jsonrpc": "2.0", "id": first.id.to_string(), "result": {}}),
        ] {
            assert_eq!(direct.offer(other.clone()), Err(other));
        }
        // In our range but not a valid response: not delivered, judged by the reader.
        for invalid in [
            json!({"jsonrpc": "1.0", "id": first.id, "result": {}}),
            json!({"id": first.id, "result": {}}),
            json!({"jsonrpc": "2.0", "id": first.id, "result": {}, "error": {"code": 1, "message": "m"}}),
            json!({"jsonrpc": "2.0", "id": first.id, "error": {"message": "no code"}}),
        ] {
            assert_eq!(direct.offer(invalid.clone()), Err(invalid));
        }
        assert!(first.answer.try_recv().is_err(), "nothing delivered yet");

        let result = json!({"content": [{"type": "text", "text": "1"}], "x-extra": true});
        assert_eq!(
            direct.offer(json!({"jsonrpc": "2.0", "id": first.id, "result": result})),
            Ok(())
        );
        assert!(matches!(first.answer.try_recv(), Ok(Answer::Result(r)) if r == result));
        assert_eq!(
            direct.offer(json!({"jsonrpc": "2.0", "id": second.id,
                "error": {"code": -32602, "message": "bad", "data": {"why": 1}}})),
            Ok(())
        );
        match second.answer.try_recv() {
            Ok(Answer::Error(error)) => {
                assert_eq!(error.code.0, -32602);
                assert_eq!(error.message, "bad");
                assert_eq!(error.data, Some(json!({"why": 1})));
            }
            other => panic!("expected the error, got {other:?}"),
        }
        // A late answer (its caller gave up) is taken and dropped, not handed to rmcp.
        assert_eq!(
            direct.offer(json!({"jsonrpc": "2.0", "id": first.id, "result": {}})),
            Ok(())
        );
    }

    #[test]
    fn an_oversized_answer_reaches_its_caller_alone() {
        let stdin = shared(tokio::io::sink());
        let direct = DirectRequests::new(&stdin);
        let mut first = direct.register().unwrap();
        let mut second = direct.register().unwrap();
        assert!(direct.too_large(first.id, 20_000_000));
        assert!(matches!(
            first.answer.try_recv(),
            Ok(Answer::TooLarge(20_000_000))
        ));
        assert!(!direct.too_large(first.id, 1), "answered once");
        assert!(
            second.answer.try_recv().is_err(),
            "the other caller still waits"
        );
        assert!(!direct.too_large(FIRST_DIRECT_ID + 99, 1), "nobody waits");
    }

    #[test]
    fn the_end_of_the_stream_ends_every_wait_and_refuses_new_requests() {
        let stdin = shared(tokio::io::sink());
        let direct = DirectRequests::new(&stdin);
        let mut waiting = direct.register().unwrap();
        direct.close();
        assert!(matches!(
            waiting.answer.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        ));
        assert!(direct.register().is_none());
    }

    #[tokio::test]
    async fn a_line_the_pipe_cannot_take_at_once_is_finished_after_its_caller_is_gone() {
        // A 16-byte pipe: the line cannot be written in one go.
        let (writer, mut reader) = tokio::io::duplex(16);
        let stdin = shared(writer);
        let line = b"{\"jsonrpc\":\"2.0\",\"method\":\"a long notification line\"}\n".to_vec();
        {
            let write = write_line(Arc::clone(&stdin), line.clone());
            tokio::pin!(write);
            // Polled until the pipe is full, then dropped, as a caller that goes away.
            assert!(futures_util::FutureExt::now_or_never(write.as_mut()).is_none());
        }
        let direct = DirectRequests::new(&stdin);
        let second = b"{\"next\":1}\n".to_vec();
        let sending = tokio::spawn(async move { direct.send(second).await });
        let mut read = vec![0; line.len() + 11];
        reader.read_exact(&mut read).await.unwrap();
        sending.await.unwrap().unwrap();
        assert_eq!(
            &read[..line.len()],
            &line[..],
            "the first line went out whole"
        );
        assert_eq!(&read[line.len()..], b"{\"next\":1}\n");
    }

    #[tokio::test]
    async fn writes_fail_once_the_pipe_is_closed_or_broken() {
        let (writer, reader) = tokio::io::duplex(64);
        let stdin = shared(writer);
        let direct = DirectRequests::new(&stdin);
        drop(reader);
        let error = direct.send(b"{}\n".to_vec()).await.unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe);
        // The failed pipe is not written to again; and once its last holder is gone, neither.
        assert!(stdin.lock().await.is_none());
        drop(stdin);
        let error = direct.send(b"{}\n".to_vec()).await.unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe);
    }
}
