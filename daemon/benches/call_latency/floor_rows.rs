//! The floor rows of issue 26 (P2): what one `callTool` through the daemon cannot go below on
//! this machine, measured in the same rounds as the daemon's own rows.
//!
//! - (r) one HTTP/1.1 POST round trip on a kept-alive loopback connection to a std-only echo
//!   server (`daemon/examples/http_echo.rs`, a process of its own), with a JSON body the size of
//!   the `callTool` request of (b): the kernel's and the client's share of the HTTP hop;
//! - (t) `tools/call` of the same tool written as one JSON line straight to a demo server's
//!   stdin and its answer read from its stdout by a blocking std client (no rmcp, no runtime):
//!   the server's own cost plus the pipe hop.
//!
//! The daemon does both hops for a call, so (r) + (t) is the floor of (b), and (b) − ((r) + (t))
//! is the daemon's own work (issue 26's target: ≤ 30 µs).

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::HttpClient;

/// The echo server of (r) and a kept-alive connection to it.
pub(crate) struct EchoFloor {
    child: Child,
    pub(crate) http: HttpClient,
    /// The body sent each time: as long as the `callTool` request of (b).
    body: Vec<u8>,
}

impl EchoFloor {
    /// Starts `examples/http_echo` (next to the daemon) and connects to it; `call_body` is the
    /// size to mimic.
    pub(crate) fn start(daemon_exe: &Path, call_body: usize) -> Result<EchoFloor, String> {
        let exe = daemon_exe.with_file_name("examples").join("http_echo");
        if !exe.is_file() {
            return Err(format!(
                "no {}; build it first with `cargo build --release -p tool-cli-daemon --example \
                 http_echo`",
                exe.display()
            ));
        }
        let mut child = Command::new(&exe)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|err| format!("cannot start {}: {err}", exe.display()))?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout is piped"))
            .read_line(&mut line)
            .map_err(|err| format!("the echo server printed no port: {err}"))?;
        let port = line
            .trim()
            .strip_prefix("port ")
            .and_then(|port| port.parse::<u16>().ok())
            .ok_or_else(|| format!("the echo server printed {line:?}, not its port"))?;
        // The same head as the daemon's requests (the token is not checked here).
        let http = HttpClient::connect(port, "floor-has-no-token")?;
        // A JSON string padded to the size of the call's body.
        let padding = call_body.saturating_sub(r#"{"pad":""}"#.len());
        let body = serde_json::to_vec(&json!({ "pad": "x".repeat(padding) })).expect("encodes");
        Ok(EchoFloor { child, http, body })
    }

    pub(crate) fn time_one(&mut self) -> Result<Duration, String> {
        let start = Instant::now();
        let answer = self.http.post_raw(&self.body)?;
        let elapsed = start.elapsed();
        if answer.len() != self.body.len() {
            return Err(format!(
                "the echo server answered {} bytes for {}",
                answer.len(),
                self.body.len()
            ));
        }
        Ok(elapsed)
    }
}

impl Drop for EchoFloor {
    fn drop(&mut self) {
        // Closing its stdin ends it; kill in case it did not notice.
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A demo server driven by hand over its stdio: (t).
pub(crate) struct StdioFloor {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
    next_id: u64,
    request_tail: String,
}

impl StdioFloor {
    /// Spawns `tool-cli-daemon demo-server --db <dir>/floor-demo.sqlite` and makes the MCP
    /// handshake.
    pub(crate) fn start(
        daemon_exe: &Path,
        dir: &Path,
        tool: &str,
        arguments: &Map<String, Value>,
    ) -> Result<StdioFloor, String> {
        let mut child = Command::new(daemon_exe)
            .arg("demo-server")
            .arg("--db")
            .arg(dir.join("floor-demo.sqlite"))
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|err| format!("cannot start the floor's demo server: {err}"))?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let request_tail = format!(
            r#","method":"tools/call","params":{}}}"#,
            json!({ "name": tool, "arguments": arguments })
        );
        let mut floor = StdioFloor {
            child,
            stdin,
            stdout,
            line: String::with_capacity(4096),
            next_id: 1,
            request_tail,
        };
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "tool-cli-bench-floor", "version": env!("CARGO_PKG_VERSION")}}});
        floor.send(&initialize.to_string())?;
        floor.read_answer(0)?;
        floor.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
        Ok(floor)
    }

    fn send(&mut self, line: &str) -> Result<(), String> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.stdin
            .write_all(&bytes)
            .map_err(|err| format!("cannot write to the floor's demo server: {err}"))
    }

    /// Reads lines until the answer to `id` (notifications are skipped) and parses it.
    fn read_answer(&mut self, id: u64) -> Result<Value, String> {
        loop {
            self.line.clear();
            let read = self
                .stdout
                .read_line(&mut self.line)
                .map_err(|err| format!("cannot read the floor's demo server: {err}"))?;
            if read == 0 {
                return Err("the floor's demo server closed its stdout".to_owned());
            }
            let message: Value = serde_json::from_str(&self.line)
                .map_err(|err| format!("the floor's demo server wrote non-JSON: {err}"))?;
            if message.get("id") == Some(&json!(id)) {
                return Ok(message);
            }
        }
    }

    pub(crate) fn time_one(&mut self) -> Result<Duration, String> {
        let id = self.next_id;
        self.next_id += 1;
        let start = Instant::now();
        let request = format!(r#"{{"jsonrpc":"2.0","id":{id}{}"#, self.request_tail);
        self.send(&request)?;
        let answer = self.read_answer(id)?;
        let elapsed = start.elapsed();
        if answer.get("error").is_some() || answer["result"]["isError"] == json!(true) {
            return Err(format!("the floor's direct call failed: {answer}"));
        }
        Ok(elapsed)
    }
}

impl Drop for StdioFloor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
