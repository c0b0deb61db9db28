//! The `tool-cli-replay` binary against real peers: recording `server-everything` (the npm peer
//! installed by `scripts/install-peers.sh`) through the stdio proxy, replaying it over stdio and
//! over Streamable HTTP, refusing bad recordings, and recording then replaying LLM exchanges
//! byte for byte.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_replay::llm::proxy::{Upstream, serve as serve_proxy};
use tool_cli_replay::llm::server::{LlmReplay, serve as serve_replay};
use tool_cli_replay::llm::{LlmRecording, LlmWriter};
use tool_cli_replay::normalize::Normalizer;
use tool_cli_replay::recording::{Recording, Sender};
use tool_cli_replay::redact::SecretRedactor;

const BINARY: &str = env!("CARGO_BIN_EXE_tool-cli-replay");

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("replay/ has a parent")
        .to_path_buf()
}

fn which(program: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| panic!("{program} is not on PATH (the npm peers need Node 20+)"))
}

fn everything() -> Vec<String> {
    let server = repo_root().join("node_modules/.bin/mcp-server-everything");
    assert!(
        server.exists(),
        "{} is missing; run scripts/install-peers.sh",
        server.display()
    );
    vec![
        which("node").display().to_string(),
        server.display().to_string(),
        "stdio".to_owned(),
    ]
}

/// A process speaking MCP over its stdio; killed on drop.
struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// Notifications seen while waiting for answers.
    notifications: Vec<Value>,
}

impl Peer {
    fn start(arguments: &[&str], extra: &[String]) -> Peer {
        let mut child = Command::new(BINARY)
            .args(arguments)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tool-cli-replay");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Peer {
            child,
            stdin,
            stdout,
            notifications: Vec::new(),
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write a line");
        stdin.flush().expect("flush");
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        let read = self.stdout.read_line(&mut line).expect("read a line");
        assert!(
            read > 0,
            "the peer closed its stdout; stderr: {}",
            self.stderr()
        );
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line:?}"))
    }

    /// Sends a request and reads until its answer, keeping notifications aside.
    fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.read();
            if message.get("id") == Some(&id) && message.get("method").is_none() {
                return message;
            }
            self.notifications.push(message);
        }
    }

    fn notify(&mut self, method: &str) {
        self.send(&json!({"jsonrpc": "2.0", "method": method}));
    }

    /// Closes stdin and waits for the exit code.
    fn finish(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("wait");
        (status.code().unwrap_or(-1), self.stderr())
    }

    fn stderr(&mut self) -> String {
        let mut text = String::new();
        if let Some(stderr) = self.child.stderr.as_mut() {
            let _ = stderr.read_to_string(&mut text);
        }
        text
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn initialize_params() -> Value {
    json!({"protocolVersion": "2025-06-18", "capabilities": {},
           "clientInfo": {"name": "replay-test", "version": "1"}})
}

/// One session: initialize, list tools, two calls (one with progress), answers returned.
fn session(peer: &mut Peer, ids: [Value; 4]) -> Vec<Value> {
    let [init, list, echo, add] = ids;
    let mut answers = vec![peer.request(init, "initialize", initialize_params())];
    peer.notify("notifications/initialized");
    answers.push(peer.request(list, "tools/list", json!({})));
    answers.push(peer.request(
        echo,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "hello replay"}}),
    ));
    answers.push(peer.request(
        add,
        "tools/call",
        json!({"name": "get-sum", "arguments": {"a": 2, "b": 40}}),
    ));
    answers
}

fn without_ids(answers: &[Value]) -> Vec<Value> {
    answers
        .iter()
        .map(|answer| {
            let mut copy = answer.clone();
            copy.as_object_mut().unwrap().remove("id");
            copy
        })
        .collect()
}

fn record_everything(dir: &Path) -> (PathBuf, Vec<Value>) {
    let file = dir.join("everything.ndjson");
    let mut arguments = vec![
        "record".to_owned(),
        "--out".to_owned(),
        file.display().to_string(),
        "--server".to_owned(),
        "everything".to_owned(),
        "--".to_owned(),
    ];
    arguments.extend(everything());
    let mut proxy = Peer::start(&[], &arguments);
    let answers = session(&mut proxy, [json!(0), json!(1), json!(2), json!(3)]);
    let (code, stderr) = proxy.finish();
    assert_eq!(
        code, 0,
        "the proxy passes the server's exit code on; stderr: {stderr}"
    );
    (file, answers)
}

#[test]
fn a_session_recorded_through_the_proxy_replays_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let (file, recorded_answers) = record_everything(dir.path());
    assert!(
        recorded_answers[2].to_string().contains("hello replay"),
        "{:?}",
        recorded_answers[2]
    );
    let recording = Recording::load(&file).expect("the recording loads");
    assert_eq!(recording.header.server, "everything");
    assert_eq!(recording.header.transport, "stdio");
    assert!(recording.header.protocol_version.is_some());
    assert!(
        recording.header.source["args"]
            .to_string()
            .contains("stdio")
    );
    let sent = recording
        .entries
        .iter()
        .filter(|entry| entry.from == Sender::Client)
        .count();
    assert_eq!(sent, 5, "4 requests and notifications/initialized");
    let mode = std::fs::metadata(&file).unwrap().permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o600
    );

    // The replay answers the same session, with the live ids, in any id scheme.
    let path = file.display().to_string();
    let mut replay = Peer::start(&["--server", "everything", &path], &[]);
    let replayed = session(&mut replay, [json!("a"), json!("b"), json!(30), json!("d")]);
    assert_eq!(replayed[0]["id"], "a");
    assert_eq!(replayed[2]["id"], 30);
    assert_eq!(without_ids(&replayed), without_ids(&recorded_answers));
    // What the recording lacks is an error at once, naming what was received.
    let missing = replay.request(
        json!(99),
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "never recorded"}}),
    );
    assert_eq!(missing["error"]["code"], -32051);
    let message = missing["error"]["message"].as_str().unwrap();
    assert!(message.contains("never recorded"), "{message}");
    assert!(message.contains("all answered already"), "{message}");
    let (code, _) = replay.finish();
    assert_eq!(code, 0);

    // Strict mode: the same session in order replays; a different first request is refused.
    let mut strict = Peer::start(&["--strict", &path], &[]);
    let answers = session(&mut strict, [json!(5), json!(6), json!(7), json!(8)]);
    assert_eq!(without_ids(&answers), without_ids(&recorded_answers));
    drop(strict);
    let mut strict = Peer::start(&["--strict", &path], &[]);
    let refused = strict.request(json!(1), "tools/list", json!({}));
    assert_eq!(refused["error"]["code"], -32050);
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("expected {\"method\":\"initialize\"}"),
        "{message}"
    );
    assert!(
        message.contains("received {\"method\":\"tools/list\""),
        "{message}"
    );
}

#[test]
fn bad_recordings_are_refused_at_load_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = record_everything(dir.path());
    let text = std::fs::read_to_string(&file).unwrap();
    let cases = [
        (
            "truncated.ndjson",
            {
                let lines: Vec<&str> = text.lines().collect();
                lines[..lines.len() - 1].join("\n") + "\n"
            },
            "cut short",
        ),
        (
            "tampered.ndjson",
            text.replacen("hello replay", "hello REPLAY", 1),
            "was changed",
        ),
        ("empty.ndjson", String::new(), "empty"),
    ];
    for (name, content, reason) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        let peer = Peer::start(&[&path.display().to_string()], &[]);
        let (code, stderr) = peer.finish();
        assert_eq!(code, 2, "{name}");
        assert!(stderr.contains(reason), "{name}: {stderr}");
    }
    let peer = Peer::start(&["--server", "memory", &file.display().to_string()], &[]);
    let (code, stderr) = peer.finish();
    assert_eq!(code, 2);
    assert!(
        stderr.contains("is of server \"everything\", not \"memory\""),
        "{stderr}"
    );
}

#[test]
fn a_stopped_proxy_finishes_its_recording_and_leaves_no_server_behind() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stopped.ndjson");
    let mut arguments = vec![
        "record".to_owned(),
        "--out".to_owned(),
        file.display().to_string(),
        "--server".to_owned(),
        "everything".to_owned(),
        "--".to_owned(),
    ];
    arguments.extend(everything());
    let mut proxy = Peer::start(&[], &arguments);
    proxy.request(json!(0), "initialize", initialize_params());
    let pid = proxy.child.id();
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    let server: Vec<u32> = children
        .split_whitespace()
        .filter_map(|child| child.parse().ok())
        .collect();
    assert_eq!(server.len(), 1, "the proxy runs the server as its child");
    // SAFETY: signalling the test's own child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    let status = proxy.child.wait().unwrap();
    assert!(
        status.code().is_some(),
        "the proxy exits by itself on SIGTERM"
    );
    let recording = Recording::load(&file).expect("a complete recording");
    assert_eq!(recording.entries.len(), 2);
    // The server is gone (reaped by the proxy, not an orphan).
    assert!(
        !Path::new(&format!("/proc/{}", server[0])).exists() || {
            let stat =
                std::fs::read_to_string(format!("/proc/{}/stat", server[0])).unwrap_or_default();
            stat.split_whitespace().nth(2) == Some("Z")
        }
    );
}

// ---------------------------------------------------------------------------------------------
// Streamable HTTP.

/// One HTTP/1.1 exchange on a fresh connection: status, headers, body.
fn http(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(name, value)| name == "transfer-encoding" && value == "chunked");
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    (status, headers, body)
}

fn dechunk(mut text: &str) -> String {
    let mut body = String::new();
    loop {
        let (size, rest) = text.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return body;
        }
        body.push_str(&rest[..size]);
        text = &rest[size + 2..];
    }
}

/// The messages of a POST's answer: one JSON body, or the events of a stream.
fn answers_of(headers: &[(String, String)], body: &str) -> Vec<Value> {
    match header(headers, "content-type") {
        Some("application/json") => vec![serde_json::from_str(body).unwrap()],
        Some("text/event-stream") => body
            .split("\n\n")
            .filter_map(|event| event.lines().find_map(|line| line.strip_prefix("data: ")))
            .map(|data| serde_json::from_str(data).unwrap())
            .collect(),
        other => panic!("unexpected content type {other:?}: {body}"),
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(header, _)| header == name)
        .map(|(_, value)| value.as_str())
}

#[test]
fn a_recording_replays_over_streamable_http() {
    let dir = tempfile::tempdir().unwrap();
    let (file, recorded_answers) = record_everything(dir.path());
    let mut server = Command::new(BINARY)
        .args([
            "--http",
            "--server",
            "everything",
            &file.display().to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(server.stdout.as_mut().unwrap())
        .read_line(&mut first)
        .unwrap();
    struct Stop(Child);
    impl Drop for Stop {
        fn drop(&mut self) {
            // SAFETY: signalling the test's own child.
            unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
            let _ = self.0.wait();
        }
    }
    let url = first.trim().to_owned();
    let _stop = Stop(server);
    let address: SocketAddr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let json_type = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];

    let (status, headers, body) = http(
        address,
        "POST",
        "/mcp",
        &json_type,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()})
            .to_string(),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(header(&headers, "content-type"), Some("application/json"));
    let session = header(&headers, "mcp-session-id")
        .expect("a session id")
        .to_owned();
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"], recorded_answers[0]["result"]);

    let with_session = [
        json_type[0],
        json_type[1],
        ("mcp-session-id", session.as_str()),
    ];
    let (status, _, _) = http(
        address,
        "POST",
        "/mcp",
        &with_session,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    );
    assert_eq!(status, 202);
    let (status, headers, body) = http(
        address,
        "POST",
        "/mcp",
        &with_session,
        &json!({"jsonrpc": "2.0", "id": "t", "method": "tools/list", "params": {}}).to_string(),
    );
    assert_eq!(status, 200);
    let messages = answers_of(&headers, &body);
    let tools = messages.last().unwrap();
    assert_eq!(tools["id"], "t");
    assert_eq!(tools["result"], recorded_answers[1]["result"]);

    let (status, _, body) = http(
        address,
        "POST",
        "/mcp",
        &[json_type[0]],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string(),
    );
    assert_eq!(status, 400, "no session id: {body}");
    let (status, _, _) = http(address, "GET", "/mcp", &with_session, "");
    assert_eq!(status, 405);
    let (status, _, _) = http(address, "DELETE", "/mcp", &with_session, "");
    assert_eq!(status, 200);
    let (status, _, _) = http(
        address,
        "POST",
        "/mcp",
        &with_session,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).to_string(),
    );
    assert_eq!(status, 404, "the session is closed");
}

// ---------------------------------------------------------------------------------------------
// LLM exchanges.

/// A loopback upstream that streams an OpenAI-style SSE reply in several writes.
fn sse_upstream(reply: &'static str) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let requests = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap();
                }
                head.push_str(&line);
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            requests.lock().unwrap().push(head);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-request-id: req-1\r\ntransfer-encoding: chunked\r\n\r\n",
            );
            for part in reply.split_inclusive("\n\n") {
                let _ = stream.write_all(format!("{:x}\r\n{part}\r\n", part.len()).as_bytes());
                let _ = stream.flush();
            }
            let _ = stream.write_all(b"0\r\n\r\n");
        }
    });
    (address, seen)
}

const SSE_REPLY: &str = "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n\
data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"lo\"}}],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":2}}\n\n\
data: [DONE]\n\n";

#[test]
fn llm_exchanges_recorded_through_the_proxy_replay_byte_for_byte_100_times() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (upstream_address, upstream_requests) = sse_upstream(SSE_REPLY);
    let api_key = "sk-test-SECRET-0001";
    let request_body =
        json!({"model": "gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": "hi"}]})
            .to_string();

    // Record.
    let writer = Arc::new(Mutex::new(Some(
        LlmWriter::new(
            Vec::new(),
            &format!("http://{upstream_address}/v1"),
            Arc::new(SecretRedactor::new([api_key.to_owned()])),
        )
        .unwrap(),
    )));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let proxy_address = listener.local_addr().unwrap();
    let proxy = runtime.spawn(serve_proxy(
        listener,
        Upstream::parse(&format!("http://{upstream_address}/v1")).unwrap(),
        Arc::clone(&writer),
        async {
            let _ = stopped.await;
        },
    ));
    let authorization = format!("Bearer {api_key}");
    let headers = [
        ("content-type", "application/json"),
        ("authorization", authorization.as_str()),
        ("accept-encoding", "gzip"),
    ];
    let (status, recorded_headers, live_body) = http(
        proxy_address,
        "POST",
        "/v1/chat/completions",
        &headers,
        &request_body,
    );
    assert_eq!(status, 200);
    assert_eq!(
        live_body, SSE_REPLY,
        "the proxy passes the stream on unchanged"
    );
    assert_eq!(header(&recorded_headers, "x-request-id"), Some("req-1"));
    let upstream_saw = upstream_requests.lock().unwrap()[0].to_ascii_lowercase();
    assert!(upstream_saw.contains(&format!(
        "authorization: bearer {}",
        api_key.to_ascii_lowercase()
    )));
    assert!(!upstream_saw.contains("accept-encoding"));
    let _ = stop.send(());
    runtime.block_on(proxy).unwrap();
    let finished = writer.lock().unwrap().take().unwrap().finish().unwrap();
    let text = String::from_utf8(finished).unwrap();
    assert!(
        !text.contains(api_key),
        "the API key never reaches the file"
    );
    let recording = LlmRecording::parse(&text, "llm.ndjson").unwrap();
    assert_eq!(recording.exchanges.len(), 1);
    assert!(
        recording.exchanges[0].response.chunks.len() >= 3,
        "kept chunk by chunk"
    );

    // Replay 100 times: the same bytes each time, with no upstream.
    let replay = Arc::new(LlmReplay::new(recording, Normalizer::default()));
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let replay_address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = runtime.spawn(serve_replay(replay, listener, async {
        let _ = stopped.await;
    }));
    let upstream_calls = upstream_requests.lock().unwrap().len();
    for _ in 0..100 {
        let (status, headers, body) = http(
            replay_address,
            "POST",
            "/v1/chat/completions",
            &headers,
            &request_body,
        );
        assert_eq!(status, 200);
        assert_eq!(header(&headers, "content-type"), Some("text/event-stream"));
        assert_eq!(body.as_bytes(), SSE_REPLY.as_bytes());
    }
    assert_eq!(
        upstream_requests.lock().unwrap().len(),
        upstream_calls,
        "no network"
    );

    // A request the recording lacks: 404 naming it and what was recorded.
    let other = json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "bye"}]})
        .to_string();
    let (status, _, body) = http(
        replay_address,
        "POST",
        "/v1/chat/completions",
        &headers,
        &other,
    );
    assert_eq!(status, 404);
    let error: Value = serde_json::from_str(&body).unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("\"content\":\"bye\""), "{message}");
    assert!(
        message.contains("requests to /v1/chat/completions are: #1"),
        "{message}"
    );
    let _ = stop.send(());
    runtime.block_on(server).unwrap();
}

/// A stream carries a request's progress and a server request, stays open while the answer
/// waits for the client's reply (sent on another POST), then ends with the answer.
#[test]
fn http_streams_carry_progress_and_wait_for_the_clients_reply() {
    use tool_cli_replay::recording::{RecordingFacts, RecordingWriter};
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sampling.ndjson");
    let mut writer = RecordingWriter::new(
        std::fs::File::create(&file).unwrap(),
        RecordingFacts {
            server: "summarizer".to_owned(),
            transport: "http".to_owned(),
            source: Value::Null,
        },
        Arc::new(SecretRedactor::default()),
    );
    let messages = [
        (
            Sender::Client,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize_params()}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}}, "serverInfo": {"name": "summarizer", "version": "1"}}}),
        ),
        (
            Sender::Client,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ),
        (
            Sender::Client,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "summarize", "arguments": {"text": "long"}, "_meta": {"progressToken": "p"}}}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": "p", "progress": 1}}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage",
            "params": {"messages": [], "maxTokens": 20}}),
        ),
        (
            Sender::Client,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"role": "assistant",
            "content": {"type": "text", "text": "short"}, "model": "m"}}),
        ),
        (
            Sender::Server,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "short"}]}}),
        ),
    ];
    for (from, message) in &messages {
        writer.record(*from, message).unwrap();
    }
    writer.finish().unwrap();

    let mut server = Command::new(BINARY)
        .args(["--http", &file.display().to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(server.stdout.as_mut().unwrap())
        .read_line(&mut first)
        .unwrap();
    struct Stop(Child);
    impl Drop for Stop {
        fn drop(&mut self) {
            // SAFETY: signalling the test's own child.
            unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
            let _ = self.0.wait();
        }
    }
    let _stop = Stop(server);
    let address: SocketAddr = first
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let json_type = ("content-type", "application/json");
    let (_, headers, _) = http(address, "POST", "/mcp", &[json_type],
        &json!({"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": initialize_params()}).to_string());
    let session = header(&headers, "mcp-session-id").unwrap().to_owned();
    let with_session = [json_type, ("mcp-session-id", session.as_str())];
    http(
        address,
        "POST",
        "/mcp",
        &with_session,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    );

    // The call's stream: read it as it comes.
    let call = json!({"jsonrpc": "2.0", "id": "call-1", "method": "tools/call",
        "params": {"name": "summarize", "arguments": {"text": "long"}, "_meta": {"progressToken": 77}}}).to_string();
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(stream, "POST /mcp HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\ncontent-type: application/json\r\nmcp-session-id: {session}\r\ncontent-length: {}\r\n\r\n{call}", call.len()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut seen = String::new();
    while !seen.contains("sampling/createMessage") {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the stream ended early: {seen}"
        );
        seen.push_str(&line);
    }
    assert!(seen.contains("text/event-stream"), "{seen}");
    assert!(
        seen.contains("\"progressToken\":77"),
        "the live progress token: {seen}"
    );
    assert!(
        !seen.contains("\"id\":\"call-1\""),
        "no answer before the client's reply: {seen}"
    );

    let (status, _, _) = http(
        address,
        "POST",
        "/mcp",
        &with_session,
        &json!({"jsonrpc": "2.0", "id": 0, "result": {"role": "assistant",
                "content": {"type": "text", "text": "live"}, "model": "m"}})
        .to_string(),
    );
    assert_eq!(status, 202);
    let mut rest = String::new();
    reader.read_to_string(&mut rest).unwrap();
    assert!(
        rest.contains("\"id\":\"call-1\"") && rest.contains("\"text\":\"short\""),
        "{rest}"
    );
}
