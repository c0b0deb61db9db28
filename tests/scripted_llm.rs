//! A scripted OpenAI-compatible chat-completions server on `127.0.0.1:0`, for driving the daemon's
//! agent with an LLM backend without a network: each request gets the next scripted reply (a
//! real streamed body, as the agent crate's own fake servers replay them), or is held open until
//! the daemon hangs up. Every request is recorded, and arrivals and hang-ups can be waited for.
//!
//! Blocking threads rather than an async server, like the rest of this harness: one thread
//! accepts, one per connection answers.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

/// One scripted answer.
pub enum LlmReply {
    /// 200 `text/event-stream` with this body.
    Stream(String),
    /// Read the request, answer nothing, and hold the connection until the client closes it.
    Hang,
}

/// The server; stopped on drop.
pub struct ScriptedLlm {
    address: SocketAddr,
    requests: Arc<Mutex<Vec<Value>>>,
    arrivals: Mutex<mpsc::Receiver<()>>,
    hang_ups: Mutex<mpsc::Receiver<()>>,
    stop: Arc<AtomicBool>,
}

impl ScriptedLlm {
    /// Serves `replies` in order, one per request; a request past the script gets HTTP 500.
    pub fn start(replies: Vec<LlmReply>) -> ScriptedLlm {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let address = listener.local_addr().expect("local address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let stop = Arc::new(AtomicBool::new(false));
        let (arrived, arrivals) = mpsc::channel();
        let (hung_up, hang_ups) = mpsc::channel();
        {
            let requests = Arc::clone(&requests);
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    let requests = Arc::clone(&requests);
                    let replies = Arc::clone(&replies);
                    let (arrived, hung_up, stop) = (arrived.clone(), hung_up.clone(), stop.clone());
                    thread::spawn(move || {
                        serve(stream, &requests, &replies, &arrived, &hung_up, &stop);
                    });
                }
            });
        }
        ScriptedLlm {
            address,
            requests,
            arrivals: Mutex::new(arrivals),
            hang_ups: Mutex::new(hang_ups),
            stop,
        }
    }

    /// The `baseUrl` for the daemon's `agent` config (`…/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// Every request body received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().expect("requests").clone()
    }

    /// Waits up to `timeout` for the next request to arrive; whether one did.
    pub fn wait_for_request(&self, timeout: Duration) -> bool {
        self.arrivals
            .lock()
            .expect("arrivals")
            .recv_timeout(timeout)
            .is_ok()
    }

    /// Waits up to `timeout` for the client to close a held (`Hang`) connection.
    pub fn wait_for_hang_up(&self, timeout: Duration) -> bool {
        self.hang_ups
            .lock()
            .expect("hang-ups")
            .recv_timeout(timeout)
            .is_ok()
    }
}

impl Drop for ScriptedLlm {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.address);
    }
}

fn serve(
    stream: TcpStream,
    requests: &Mutex<Vec<Value>>,
    replies: &Mutex<VecDeque<LlmReply>>,
    arrived: &mpsc::Sender<()>,
    hung_up: &mpsc::Sender<()>,
    stop: &AtomicBool,
) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
    let mut writer = stream;
    // Keep-alive: answer requests on this connection until the client closes it.
    loop {
        let Some(body) = read_request(&mut reader) else {
            return;
        };
        requests
            .lock()
            .expect("requests")
            .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
        let reply = replies.lock().expect("replies").pop_front();
        let _ = arrived.send(());
        match reply {
            Some(LlmReply::Stream(text)) => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
                    text.len()
                );
                if writer
                    .write_all(head.as_bytes())
                    .and_then(|()| writer.write_all(text.as_bytes()))
                    .is_err()
                {
                    return;
                }
            }
            Some(LlmReply::Hang) => {
                // Hold the connection until the client goes (or the server is dropped).
                let _ = writer.set_read_timeout(Some(Duration::from_millis(100)));
                let mut byte = [0u8; 1];
                loop {
                    match reader.read(&mut byte) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(error)
                            if matches!(
                                error.kind(),
                                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                            ) =>
                        {
                            if stop.load(Ordering::SeqCst) {
                                return;
                            }
                        }
                        Err(_) => break,
                    }
                }
                let _ = hung_up.send(());
                return;
            }
            None => {
                let body = r#"{"error":{"message":"the script is exhausted"}}"#;
                let _ = write!(
                    writer,
                    "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
            }
        }
    }
}

/// One request's body (by `content-length`); `None` at the end of the connection.
fn read_request(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut length = 0usize;
    let mut first = true;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            if first {
                continue;
            }
            break;
        }
        first = false;
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

/// One streamed chat-completions chunk.
fn chunk(delta: Value, finish: Value) -> String {
    let chunk = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                       "model": "scripted-model",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {chunk}\n\n")
}

/// A streamed turn that calls `tool` with `arguments`, reporting this usage.
pub fn tool_call_turn(
    tool: &str,
    arguments: &Value,
    prompt_tokens: u64,
    completion: u64,
) -> String {
    let usage = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
                       "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                                 "total_tokens": prompt_tokens + completion}});
    [
        chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                   "id": "call_1", "type": "function",
                   "function": {"name": tool, "arguments": arguments.to_string()}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        format!("data: {usage}\n\n"),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat()
}

/// A streamed final turn with `text` as the content, reporting this usage.
pub fn final_turn(text: &str, prompt_tokens: u64, completion: u64) -> String {
    let usage = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
                       "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                                 "total_tokens": prompt_tokens + completion}});
    [
        chunk(json!({"role": "assistant", "content": text}), Value::Null),
        chunk(json!({}), json!("stop")),
        format!("data: {usage}\n\n"),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat()
}

/// The daemon's `agent` config for a backend at `llm`: model `scripted-model` priced at `rate`
/// USD per million tokens of every kind, its key in the variable `SCRIPTED_LLM_KEY`, no retries.
pub fn agent_config(llm: &ScriptedLlm, rate: f64) -> Value {
    json!({
        "backend": "openai",
        "model": "scripted-model",
        "baseUrl": llm.base_url(),
        "apiKeyEnv": "SCRIPTED_LLM_KEY",
        "prices": {"scripted-model": {"input": rate, "output": rate, "cacheWrite": rate,
                                      "cacheRead": rate, "effective": "2026-01-01"}},
        "maxRetries": 0
    })
}
