//! The real MCP peers a test configures (Node and Python servers installed by
//! `scripts/install-peers.sh`, the fixtures under `tests/fixtures/`, the fault server), and
//! [`HttpPeer`]/[`HttpFaultServer`]: peers speaking Streamable HTTP, stopped on drop.

use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::{
    STARTUP_TIMEOUT, binary, capture, daemon_bin, repo_root, scratch, stop_process_group, text_of,
};

fn require_peer(path: &Path, what: &str) -> String {
    assert!(
        path.exists(),
        "{what} is not installed ({} is missing); run scripts/install-peers.sh first",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// Absolute path of a program on `PATH`, so configs do not depend on the environment the daemon
/// gives its children.
pub fn which(program: &str) -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(program);
        if candidate.is_file() {
            return candidate.to_string_lossy().into_owned();
        }
    }
    panic!("{program} is not on PATH; the Node peers need Node 20+ (see scripts/install-peers.sh)")
}

fn node_peer(bin: &str) -> String {
    require_peer(
        &repo_root().join("node_modules/.bin").join(bin),
        &format!("the npm peer {bin}"),
    )
}

/// The demo server (the daemon's own `demo-server` subcommand) on a SQLite file inside `dir`,
/// so tests never touch `$HOME`.
pub fn demo_server(dir: &Path) -> Value {
    json!({
        "command": daemon_bin(),
        "args": ["demo-server", "--db", dir.join("demo.sqlite")],
    })
}

/// `@modelcontextprotocol/server-everything` over stdio.
pub fn everything_stdio() -> Value {
    json!({
        "command": which("node"),
        "args": [node_peer("mcp-server-everything"), "stdio"],
    })
}

/// `@modelcontextprotocol/server-filesystem` serving `root`.
pub fn filesystem_server(root: &Path) -> Value {
    json!({
        "command": which("node"),
        "args": [node_peer("mcp-server-filesystem"), root],
    })
}

/// `@modelcontextprotocol/server-memory` keeping its graph in `file`.
pub fn memory_server(file: &Path) -> Value {
    json!({
        "command": which("node"),
        "args": [node_peer("mcp-server-memory")],
        "env": {"MEMORY_FILE_PATH": file},
    })
}

fn venv_python() -> String {
    require_peer(
        &repo_root().join(".peers/venv/bin/python"),
        "the Python peer venv",
    )
}

/// `mcp-server-time` (PyPI) with UTC as its local time zone.
pub fn time_server() -> Value {
    let bin = require_peer(
        &repo_root().join(".peers/venv/bin/mcp-server-time"),
        "the PyPI peer mcp-server-time",
    );
    json!({"command": bin, "args": ["--local-timezone", "UTC"]})
}

/// `mcp-server-fetch` (PyPI), allowed to fetch loopback pages and not asking robots.txt.
pub fn fetch_server() -> Value {
    let bin = require_peer(
        &repo_root().join(".peers/venv/bin/mcp-server-fetch"),
        "the PyPI peer mcp-server-fetch",
    );
    json!({"command": bin, "args": ["--ignore-robots-txt", "--allow-private-ips"]})
}

/// Path of the Python fixture server (`tests/fixtures/structured_server.py`).
pub fn python_fixture_path() -> PathBuf {
    repo_root().join("tests/fixtures/structured_server.py")
}

/// The Python fixture server (mcp 2.x `MCPServer`) over stdio: `weather` with structured output,
/// `echo`, `sleep` and `crash`.
pub fn python_fixture() -> Value {
    json!({"command": venv_python(), "args": [python_fixture_path()]})
}

/// The Python fixture server that asks its client things (`tests/fixtures/asking_server.py`:
/// `ask_many(count)` elicits `count` times) over stdio.
pub fn asking_fixture() -> Value {
    json!({"command": venv_python(), "args": [repo_root().join("tests/fixtures/asking_server.py")]})
}

/// The `tool-cli-fault-server` fixture binary (`cargo build -p tool-cli-fault-server`), built
/// next to the daemon.
pub fn fault_server_bin() -> PathBuf {
    binary("tool-cli-fault-server")
}

/// A config entry for the fault-injection fixture with these flags (see its `args.rs`).
pub fn fault_server(args: &[&str]) -> Value {
    json!({"command": fault_server_bin(), "args": args})
}

/// [`fault_server`] that appends every message it receives to `record` (`--record`), so a test
/// can count what reached the server: `initialize` per spawn, `tools/call` per attempt,
/// `notifications/cancelled`. The file is appended to across restarts.
pub fn fault_server_recording(record: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--record".to_owned(), record.to_string_lossy().into_owned()];
    all.extend(args.iter().map(|arg| (*arg).to_owned()));
    json!({"command": fault_server_bin(), "args": all})
}

/// Every JSON message in a fault server's `--record` file, in arrival order; lines that are not
/// JSON are left out, and a file not created yet reads as empty.
pub fn recorded_messages(record: &Path) -> Vec<Value> {
    let text = match std::fs::read_to_string(record) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => panic!("read {}: {err}", record.display()),
    };
    text.lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// How many recorded messages have this `method` (and, for `tools/call`, this tool name when
/// `tool` is given).
pub fn count_recorded(record: &Path, method: &str, tool: Option<&str>) -> usize {
    recorded_messages(record)
        .iter()
        .filter(|message| message["method"] == method)
        .filter(|message| tool.is_none_or(|tool| message["params"]["name"] == tool))
        .count()
}

/// A free loopback port: bind `127.0.0.1:0`, read the port, release it.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// A peer MCP server speaking Streamable HTTP, started by the test and stopped on drop.
pub struct HttpPeer {
    child: Option<Child>,
    port: u16,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl HttpPeer {
    /// `@modelcontextprotocol/server-everything` in `streamableHttp` mode on a free port.
    pub fn everything() -> HttpPeer {
        HttpPeer::start("server-everything streamableHttp", |port| {
            let mut command = Command::new(which("node"));
            command
                .arg(node_peer("mcp-server-everything"))
                .arg("streamableHttp")
                .env("PORT", port.to_string());
            command
        })
    }

    /// The Python fixture in `--http` mode on a free port.
    pub fn python_fixture() -> HttpPeer {
        HttpPeer::start("structured_server.py --http", |port| {
            let mut command = Command::new(venv_python());
            command
                .arg(python_fixture_path())
                .arg("--http")
                .arg(port.to_string());
            command
        })
    }

    /// Starts the peer on a free port. A port found free can be taken by another test before the
    /// peer binds it, so the peer counts as up only once it accepts connections *and* has logged
    /// its port (both peers do); a peer that lost the race exits and is retried on a new port.
    fn start(what: &str, command_for_port: impl Fn(u16) -> Command) -> HttpPeer {
        const ATTEMPTS: usize = 3;
        let mut last_failure = String::new();
        for _ in 0..ATTEMPTS {
            let port = free_port();
            let mut command = command_for_port(port);
            command
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .process_group(0);
            let mut child = command
                .spawn()
                .unwrap_or_else(|err| panic!("cannot start {what}: {err}"));
            let stderr = capture(child.stderr.take().expect("piped stderr"));
            let mut peer = HttpPeer {
                child: Some(child),
                port,
                stderr,
            };
            let deadline = Instant::now() + STARTUP_TIMEOUT;
            loop {
                let logged_port = text_of(&peer.stderr).contains(&port.to_string());
                if logged_port && TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return peer;
                }
                if let Some(status) = peer
                    .child
                    .as_mut()
                    .and_then(|c| c.try_wait().ok().flatten())
                {
                    last_failure = format!(
                        "{what} exited with {status} before serving on port {port}; stderr:\n{}",
                        text_of(&peer.stderr)
                    );
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{what} did not serve on port {port} within {STARTUP_TIMEOUT:?}; stderr:\n{}",
                    text_of(&peer.stderr)
                );
                thread::sleep(Duration::from_millis(25));
            }
        }
        panic!("{what} failed to start {ATTEMPTS} times; last time: {last_failure}")
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// A daemon config entry for it.
    pub fn server_config(&self) -> Value {
        json!({"url": self.url()})
    }
}

impl Drop for HttpPeer {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            stop_process_group(child);
        }
        if thread::panicking() {
            eprintln!(
                "--- stderr of the HTTP peer on port {} ---\n{}",
                self.port,
                text_of(&self.stderr)
            );
        }
    }
}

/// The fault-injection fixture as a Streamable HTTP server (`tool-cli-fault-server --http`): it
/// binds `127.0.0.1:0` itself and writes the port to a file, so no port is guessed. Stopped on
/// drop.
pub struct HttpFaultServer {
    child: Option<Child>,
    port: u16,
    stderr: Arc<Mutex<Vec<u8>>>,
    _dir: TempDir,
}

impl HttpFaultServer {
    /// Starts it with these extra flags (`--http-status CODE`, `--http-reset`; see its
    /// `args.rs`).
    pub fn start(args: &[&str]) -> HttpFaultServer {
        let dir = scratch();
        let port_file = dir.path().join("port");
        let mut child = Command::new(fault_server_bin())
            .arg("--http")
            .arg(&port_file)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("start tool-cli-fault-server --http");
        let stderr = capture(child.stderr.take().expect("piped stderr"));
        let mut server = HttpFaultServer {
            child: Some(child),
            port: 0,
            stderr,
            _dir: dir,
        };
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if let Some(port) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|text| text.trim().parse().ok())
            {
                server.port = port;
                return server;
            }
            if let Some(status) = server
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!(
                    "tool-cli-fault-server --http exited with {status}; stderr:\n{}",
                    text_of(&server.stderr)
                );
            }
            assert!(
                Instant::now() < deadline,
                "tool-cli-fault-server --http wrote no port within {STARTUP_TIMEOUT:?}"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// `http://127.0.0.1:<port>` followed by `path_and_query`.
    pub fn url(&self, path_and_query: &str) -> String {
        format!("http://127.0.0.1:{}{path_and_query}", self.port)
    }
}

impl Drop for HttpFaultServer {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            stop_process_group(child);
        }
        if thread::panicking() {
            eprintln!(
                "--- stderr of tool-cli-fault-server --http ---\n{}",
                text_of(&self.stderr)
            );
        }
    }
}

// More peers: unusual schemas and a hostile server (tests/e2e/peers_more.rs, attacks_more.rs).

/// Path of the unusual-schema fixture (`tests/fixtures/schema_server.py`, mcp 2.x).
pub fn schema_fixture_path() -> PathBuf {
    repo_root().join("tests/fixtures/schema_server.py")
}

/// The unusual-schema fixture over stdio: `$ref`/`$defs`, `anyOf`, nullable, enums, integer vs
/// number, `additionalProperties: false`, no-argument tools, a unicode name, rich content.
pub fn schema_fixture() -> Value {
    json!({"command": venv_python(), "args": [schema_fixture_path()]})
}

/// The hostile fixture (`tests/fixtures/hostile_server.py`, standard library only) with these
/// flags: hostile tool names, schemas that are not schemas, replies to ids never sent, a flood of
/// `notifications/tools/list_changed` on request.
pub fn hostile_fixture(args: &[&str]) -> Value {
    let mut all = vec![
        repo_root()
            .join("tests/fixtures/hostile_server.py")
            .to_string_lossy()
            .into_owned(),
    ];
    all.extend(args.iter().map(|arg| (*arg).to_owned()));
    json!({"command": venv_python(), "args": all})
}

impl HttpPeer {
    /// The unusual-schema fixture in `--http` mode (Streamable HTTP) on a free port.
    pub fn schema_fixture() -> HttpPeer {
        HttpPeer::start("schema_server.py --http", |port| {
            let mut command = Command::new(venv_python());
            command
                .arg(schema_fixture_path())
                .arg("--http")
                .arg(port.to_string());
            command
        })
    }
}

/// The Python of the peers' venv (`.peers/venv`), which has the official MCP SDK the client
/// drivers under `tests/fixtures/` use.
pub fn peer_python() -> String {
    let path = repo_root().join(".peers/venv/bin/python");
    assert!(
        path.exists(),
        "the Python peer venv is missing: run scripts/install-peers.sh"
    );
    path.to_string_lossy().into_owned()
}

/// Runs the client driver `tests/fixtures/{fixture}` with `args` and `env` under the peers'
/// Python, for at most `timeout`, and returns the one JSON report it prints on stdout; a driver
/// that fails, or prints something else, fails the test with its output.
pub fn python_driver_report(
    fixture: &str,
    args: &[String],
    env: &[(&str, String)],
    timeout: Duration,
) -> Value {
    let mut command = Command::new(peer_python());
    command
        .arg(repo_root().join("tests/fixtures").join(fixture))
        .args(args)
        .envs(env.iter().map(|(name, value)| (*name, value.as_str())));
    let output = crate::run_with_timeout(command, timeout);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the driver {fixture} failed: {}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}
