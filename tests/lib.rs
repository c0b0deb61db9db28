//! Shared harness of the end-to-end tests: start the real `tool-cli-daemon` on a config written
//! to a fresh temp dir, talk to it over loopback HTTP, run the real `tool-cli` binary against it,
//! and build configs for the real MCP peers installed by `scripts/install-peers.sh`.
//!
//! Everything here is synchronous and uses only `std::net` and `std::process`, so a test can send
//! exactly the bytes it wants (a malformed body, a wrong token) and nothing hides what the
//! binaries do. Every process a test starts is owned by a value whose `Drop` stops it, so a
//! panicking test leaves no daemon, no peer and no child of either behind.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

pub mod output;
pub mod scripted_llm;

use serde_json::{Value, json};
use tempfile::TempDir;
use tool_cli_protocol::runtime::{RUNTIME_FILE_NAME, RuntimeFile};
use tool_cli_protocol::{ErrorObject, Request, Response};

/// How long a daemon may take to print its `export` lines: every configured server's first
/// connection attempt must settle first, and Node or Python peers start in about a second.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one HTTP exchange with the daemon may take before the test fails.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a process is given to exit after SIGTERM before it is killed.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(15);

/// How long one run of the `tool-cli` binary may take.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// Where things are.

/// The directory holding the built `tool-cli-daemon` and `tool-cli` binaries: `TOOL_CLI_BIN_DIR`
/// when set, else the profile directory this test binary was built into
/// (`target/<profile>/deps/e2e-…` → `target/<profile>/`).
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TOOL_CLI_BIN_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("the path of the running test binary");
    let mut dir = exe
        .parent()
        .expect("test binary has a directory")
        .to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir
}

fn binary(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.is_file(),
        "{} is missing; build them first: cargo build --workspace \
         (or point TOOL_CLI_BIN_DIR at the directory holding tool-cli-daemon and tool-cli)",
        path.display()
    );
    path
}

/// The `tool-cli-daemon` binary under test.
pub fn daemon_bin() -> PathBuf {
    binary("tool-cli-daemon")
}

/// The `tool-cli` client binary under test.
pub fn client_bin() -> PathBuf {
    binary("tool-cli")
}

/// The `tool-cli-replay` binary (record/replay of MCP sessions; crate `tool-cli-replay`).
pub fn replay_bin() -> PathBuf {
    binary("tool-cli-replay")
}

/// The root of the checkout (where `node_modules/` and `.peers/` are installed).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// A fresh, uniquely named temp dir, removed when dropped.
pub fn scratch() -> TempDir {
    tempfile::Builder::new()
        .prefix("tool-cli-e2e-")
        .tempdir()
        .expect("create a temp dir")
}

// ---------------------------------------------------------------------------------------------
// Peer configs.

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

// ---------------------------------------------------------------------------------------------
// The daemon.

/// Options for starting a daemon beyond its config.
#[derive(Default)]
pub struct DaemonOptions {
    /// Extra environment variables for the daemon.
    pub env: Vec<(String, String)>,
    /// Extra command-line arguments (after `--config … --print-env`).
    pub args: Vec<String>,
    /// Set `TOOL_CLI_TOKEN` to this instead of letting the daemon pick one.
    pub token: Option<String>,
    /// Variables removed from the daemon's environment (`RUST_LOG`, to see its default
    /// logging).
    pub remove_env: Vec<String>,
    /// Start without `--config`, as the README's quick start does: the daemon runs the bundled
    /// default unless `HOME` (set it in `env`) holds `.config/tool-cli/servers.json`. The config
    /// given is then not written.
    pub no_config_flag: bool,
    /// The daemon's working directory (by default the test's).
    pub current_dir: Option<PathBuf>,
}

/// A running `tool-cli-daemon`, stopped with SIGTERM (then SIGKILL) on drop.
pub struct Daemon {
    child: Option<Child>,
    /// The daemon's TCP port, from its `export TOOL_CLI_PORT=` line.
    pub port: u16,
    /// The bearer token, from its `export TOOL_CLI_TOKEN=` line.
    pub token: String,
    /// Its `TOOL_CLI_RUNTIME_DIR`.
    pub runtime_dir: PathBuf,
    /// The config file it was started with.
    pub config_path: PathBuf,
    stderr: Arc<Mutex<Vec<u8>>>,
    next_id: AtomicU64,
    // Declared last so it is removed after the process is gone.
    dir: TempDir,
}

impl Daemon {
    /// Writes `config` to a fresh temp dir and starts the daemon on it with `--print-env`.
    pub fn start(config: Value) -> Daemon {
        Daemon::start_with(config, DaemonOptions::default())
    }

    /// A daemon whose only server is the demo server (on a temp database).
    pub fn start_demo() -> Daemon {
        Daemon::start_with_dir(|dir| json!({"mcpServers": {"demo": demo_server(dir)}}))
    }

    /// Like [`Daemon::start`], with the config built from the daemon's own temp dir (for servers
    /// that need files: a demo database, a filesystem root).
    pub fn start_with_dir(config: impl FnOnce(&Path) -> Value) -> Daemon {
        let dir = scratch();
        let config = config(dir.path());
        Daemon::launch(dir, config, DaemonOptions::default())
    }

    /// [`Daemon::start_with_dir`] with extra options.
    pub fn start_with_dir_and(
        config: impl FnOnce(&Path) -> Value,
        options: DaemonOptions,
    ) -> Daemon {
        let dir = scratch();
        let config = config(dir.path());
        Daemon::launch(dir, config, options)
    }

    /// Like [`Daemon::start`], with extra options.
    pub fn start_with(config: Value, options: DaemonOptions) -> Daemon {
        Daemon::launch(scratch(), config, options)
    }

    /// Like [`Daemon::start_with`], but a daemon that exits before printing its export lines
    /// (say, because the port it was told to bind is taken) is an `Err` with its exit status and
    /// stderr, not a panic, so a test can react to the failure.
    pub fn try_start_with(config: Value, options: DaemonOptions) -> Result<Daemon, String> {
        Daemon::try_launch(scratch(), config, options)
    }

    fn launch(dir: TempDir, config: Value, options: DaemonOptions) -> Daemon {
        Daemon::try_launch(dir, config, options).unwrap_or_else(|failure| panic!("{failure}"))
    }

    fn try_launch(dir: TempDir, config: Value, options: DaemonOptions) -> Result<Daemon, String> {
        let config_path = dir.path().join("servers.json");
        std::fs::write(
            &config_path,
            serde_json::to_vec_pretty(&config).expect("serialize config"),
        )
        .expect("write config");
        // The daemon refuses a config writable by group or others; the mode must not depend on
        // the umask of whoever runs the tests.
        std::fs::set_permissions(&config_path, std::fs::Permissions::from_mode(0o600))
            .expect("chmod 600 the config");
        let runtime_dir = dir.path().join("runtime");
        let mut command = daemon_command(&runtime_dir);
        if !options.no_config_flag {
            command.arg("--config").arg(&config_path);
        }
        command
            .arg("--print-env")
            .args(&options.args)
            .envs(options.env.iter().map(|(k, v)| (k, v)));
        if let Some(token) = &options.token {
            command.env(tool_cli_protocol::env::TOKEN, token);
        }
        for name in &options.remove_env {
            command.env_remove(name);
        }
        if let Some(dir) = &options.current_dir {
            command.current_dir(dir);
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("spawn tool-cli-daemon");
        let stderr = capture(child.stderr.take().expect("piped stderr"));
        let lines = lines_of(child.stdout.take().expect("piped stdout"));

        let mut daemon = Daemon {
            child: Some(child),
            port: 0,
            token: String::new(),
            runtime_dir,
            config_path,
            stderr,
            next_id: AtomicU64::new(1),
            dir,
        };
        let mut port = None;
        let mut token = None;
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        while port.is_none() || token.is_none() {
            let remaining = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(remaining.min(Duration::from_millis(100))) {
                Ok(line) => {
                    if let Some(value) = line.strip_prefix("export TOOL_CLI_PORT=") {
                        port = Some(
                            value
                                .trim()
                                .parse::<u16>()
                                .unwrap_or_else(|err| panic!("bad port line {line:?}: {err}")),
                        );
                    } else if let Some(value) = line.strip_prefix("export TOOL_CLI_TOKEN=") {
                        token = Some(value.trim().to_owned());
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = daemon.wait_for_exit(Duration::from_secs(5));
                    // Its whole stderr, not what the reader thread has copied so far: the thread
                    // ends (dropping its handle on the buffer) at end of file.
                    let drained = Instant::now() + Duration::from_secs(5);
                    while Arc::strong_count(&daemon.stderr) > 1 && Instant::now() < drained {
                        thread::sleep(Duration::from_millis(5));
                    }
                    return Err(format!(
                        "tool-cli-daemon closed its stdout before printing its export lines \
                         (exit: {status:?}); stderr:\n{}",
                        daemon.stderr()
                    ));
                }
            }
            if Instant::now() >= deadline {
                panic!(
                    "tool-cli-daemon printed no export lines within {STARTUP_TIMEOUT:?}; \
                     stderr:\n{}",
                    daemon.stderr()
                );
            }
        }
        daemon.port = port.expect("port");
        daemon.token = token.expect("token");
        Ok(daemon)
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("daemon still owned").id()
    }

    /// The daemon's temp dir (config, runtime dir, scratch files).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Everything the daemon wrote to stderr so far.
    pub fn stderr(&self) -> String {
        text_of(&self.stderr)
    }

    /// Path of its runtime file.
    pub fn runtime_file(&self) -> PathBuf {
        self.runtime_dir.join(RUNTIME_FILE_NAME)
    }

    /// Reads and parses its runtime file.
    pub fn read_runtime_file(&self) -> RuntimeFile {
        let path = self.runtime_file();
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("read {}: {err}", path.display()));
        serde_json::from_str(&text)
            .unwrap_or_else(|err| panic!("runtime file {text:?} does not parse: {err}"))
    }

    /// A JSON-RPC call with the right token. Panics unless the HTTP status is 200 and the
    /// response is a well-formed JSON-RPC 2.0 response to this request.
    pub fn rpc(&self, method: &str, params: Option<Value>) -> Result<Value, ErrorObject> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = Request::new(id, method, params);
        let body = serde_json::to_vec(&request).expect("serialize request");
        let (status, response) = self.post(&body);
        assert_eq!(
            status,
            200,
            "HTTP status of {method}; body: {}",
            String::from_utf8_lossy(&response)
        );
        let response = parse_response(&response);
        assert_eq!(
            response.id,
            Some(tool_cli_protocol::RequestId::Number(id)),
            "response id"
        );
        response.into_result()
    }

    /// [`Daemon::rpc`] with another token (a minted one), which must be accepted (HTTP 200).
    pub fn rpc_as(
        &self,
        token: &str,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ErrorObject> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = serde_json::to_vec(&Request::new(id, method, params)).expect("serialize");
        let auth = format!("Bearer {token}");
        let (status, response) = self.raw_post(&[("Authorization", auth.as_str())], &body);
        assert_eq!(
            status,
            200,
            "HTTP status of {method}; body: {}",
            String::from_utf8_lossy(&response)
        );
        parse_response(&response).into_result()
    }

    /// [`Daemon::rpc`] that must succeed.
    pub fn call(&self, method: &str, params: Value) -> Value {
        let params = if params.is_null() { None } else { Some(params) };
        self.rpc(method, params).unwrap_or_else(|err| {
            panic!(
                "{method} failed: {err:?}\ndaemon stderr:\n{}",
                self.stderr()
            )
        })
    }

    /// [`Daemon::rpc`] that must fail; returns the error object.
    pub fn call_err(&self, method: &str, params: Value) -> ErrorObject {
        let params = if params.is_null() { None } else { Some(params) };
        match self.rpc(method, params) {
            Ok(result) => panic!("{method} succeeded but should have failed: {result:#}"),
            Err(err) => err,
        }
    }

    /// `callTool` that must succeed; returns the `CallToolResult`.
    pub fn call_tool(&self, server: &str, tool: &str, arguments: Value) -> Value {
        self.call(
            "callTool",
            json!({"server": server, "tool": tool, "arguments": arguments}),
        )
    }

    /// POSTs `body` to `/` with the right token; returns the HTTP status and body.
    pub fn post(&self, body: &[u8]) -> (u16, Vec<u8>) {
        let auth = format!("Bearer {}", self.token);
        self.raw_post(&[("Authorization", auth.as_str())], body)
    }

    /// POSTs `body` to `/` with exactly `headers` (plus Host, Content-Type, Content-Length and
    /// Connection); returns the HTTP status and body.
    pub fn raw_post(&self, headers: &[(&str, &str)], body: &[u8]) -> (u16, Vec<u8>) {
        http_post(self.port, "/", headers, body)
    }

    /// A `tool-cli` command pointed at this daemon through `TOOL_CLI_PORT` / `TOOL_CLI_TOKEN`.
    pub fn client_command(&self) -> Command {
        let mut command = client_command();
        command
            .env(tool_cli_protocol::env::PORT, self.port.to_string())
            .env(tool_cli_protocol::env::TOKEN, &self.token)
            .env(tool_cli_protocol::env::RUNTIME_DIR, &self.runtime_dir);
        command
    }

    /// Runs `tool-cli args…` against this daemon with extra `env`, within [`CLIENT_TIMEOUT`].
    pub fn run_client(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = self.client_command();
        command.args(args).envs(env.iter().copied());
        run_with_timeout(command, CLIENT_TIMEOUT)
    }

    /// Direct children of the daemon (the stdio MCP servers) as `(pid, process group)`.
    pub fn children(&self) -> Vec<(i32, i32)> {
        children_of(self.pid() as i32)
    }

    /// Sends `signal` to the daemon.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) has no memory-safety preconditions; the pid is our own child.
        let rc = unsafe { libc::kill(self.pid() as libc::pid_t, signal) };
        assert_eq!(rc, 0, "kill({}, {signal})", self.pid());
    }

    /// Waits up to `timeout` for the daemon to exit; `None` if it is still running.
    pub fn wait_for_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        wait_timeout(child, timeout)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let Some(child) = self.child.take() else {
            return;
        };
        // Remember the children's process groups before the daemon goes: if it has to be
        // killed, they are orphaned and must be cleaned up here.
        let groups: Vec<i32> = children_of(child.id() as i32)
            .into_iter()
            .map(|(_, pgid)| pgid)
            .collect();
        stop_process(child);
        if thread::panicking() {
            eprintln!(
                "--- stderr of tool-cli-daemon on port {} ---\n{}",
                self.port,
                self.stderr()
            );
        }
        for pgid in groups {
            if !live_processes_in_group(pgid).is_empty() && pgid > 1 {
                // SAFETY: kill(2) has no memory-safety preconditions.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
            }
        }
    }
}

/// A `tool-cli-daemon` command with a clean `TOOL_CLI_*` environment and the given runtime dir.
/// Its state directory (the trace file) is `state/` beside the runtime dir, so no test writes
/// to the home directory of whoever runs it.
pub fn daemon_command(runtime_dir: &Path) -> Command {
    let mut command = Command::new(daemon_bin());
    clear_tool_cli_env(&mut command);
    command
        .env(tool_cli_protocol::env::RUNTIME_DIR, runtime_dir)
        .env("XDG_STATE_HOME", runtime_dir.with_file_name("state"))
        // No search model from the home directory: a test that wants one names it in its
        // config (tests/e2e/search_model.rs), the others rank the same on every machine.
        .env(tool_cli_protocol::env::SEARCH_MODEL, "off")
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
        );
    command
}

/// A `tool-cli` command with a clean `TOOL_CLI_*` environment.
pub fn client_command() -> Command {
    let mut command = Command::new(client_bin());
    clear_tool_cli_env(&mut command);
    command.stdin(Stdio::null());
    command
}

fn clear_tool_cli_env(command: &mut Command) {
    for (key, _) in std::env::vars_os() {
        if key
            .to_string_lossy()
            .starts_with(tool_cli_protocol::env::PREFIX)
        {
            command.env_remove(key);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP/1.1 over loopback.

/// POSTs `body` to `127.0.0.1:port` at `path` with `headers`; returns the status and the body.
/// A minimal HTTP/1.1 client: one request per connection, `Content-Length` or chunked bodies.
/// Panics on any I/O failure; [`try_http_post`] returns it instead.
pub fn http_post(port: u16, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, Vec<u8>) {
    try_http_post(port, path, headers, body)
        .unwrap_or_else(|err| panic!("POST {path} to 127.0.0.1:{port}: {err}"))
}

/// [`http_post`] that reports a refused, reset or malformed exchange as an error, for tests where
/// an unanswered request is the outcome under test (a daemon shutting down mid-request).
pub fn try_http_post(
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<(u16, Vec<u8>)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    stream.set_write_timeout(Some(REQUEST_TIMEOUT))?;
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;

    let response = read_http_response(&mut BufReader::new(stream))?;
    Ok((response.status, response.body))
}

/// One HTTP/1.1 response as read off the wire, headers included (for the tests of the HTTP
/// gate, which look at statuses and headers, not only at bodies).
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Every header, in order, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(candidate, _)| candidate.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// Reads one HTTP/1.1 response: the status line, the headers, and a `Content-Length`, chunked or
/// read-until-close body.
pub fn read_http_response(reader: &mut impl BufRead) -> std::io::Result<HttpResponse> {
    let malformed = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    let mut status_line = String::new();
    if reader.read_line(&mut status_line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the connection closed without a response",
        ));
    }
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| malformed(format!("bad HTTP status line {status_line:?}")))?;
    let mut headers = Vec::new();
    let mut content_length = None;
    let mut chunked = false;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(malformed("the connection closed inside the headers".into()));
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            content_length = value.parse::<usize>().ok();
        } else if name.eq_ignore_ascii_case("transfer-encoding")
            && value.to_ascii_lowercase().contains("chunked")
        {
            chunked = true;
        }
        headers.push((name.to_owned(), value.to_owned()));
    }
    let mut body = Vec::new();
    if status == 204 || status == 304 {
        // No body by definition.
    } else if chunked {
        loop {
            let mut size_line = String::new();
            reader.read_line(&mut size_line)?;
            let size_text = size_line.trim().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| malformed(format!("bad chunk size line {size_line:?}")))?;
            if size == 0 {
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..])?;
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf)?;
        }
    } else if let Some(length) = content_length {
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
    } else {
        reader.read_to_end(&mut body)?;
    }
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}

/// The bytes of one HTTP/1.1 request with exactly `headers` plus `Content-Length` (the body's)
/// and `Connection: close`: no `Host`, no `Content-Type` unless given, so a test of the HTTP gate
/// controls every header the daemon sees.
pub fn http_request_bytes(
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let mut request = format!("{method} {target} HTTP/1.1\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// Sends the raw bytes of one HTTP request to `127.0.0.1:port` and reads one response. A daemon
/// may answer (413, 401) and close before the whole request is written; the response is read all
/// the same.
pub fn raw_http_exchange(port: u16, request: &[u8]) -> std::io::Result<HttpResponse> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    stream.set_write_timeout(Some(REQUEST_TIMEOUT))?;
    let written = stream.write_all(request).and_then(|()| stream.flush());
    match read_http_response(&mut BufReader::new(stream)) {
        Ok(response) => Ok(response),
        Err(read_error) => Err(written.err().unwrap_or(read_error)),
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `count` random bytes from the OS, as lowercase hex (nonces, unguessable tokens).
pub fn random_hex(count: usize) -> String {
    let mut bytes = vec![0u8; count];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut urandom| urandom.read_exact(&mut bytes))
        .expect("read /dev/urandom");
    hex(&bytes)
}

/// The public id of a token (`tool_cli_protocol::identity::TOKEN_ID_RULE`): the first 8 bytes of
/// its SHA-256, as 16 lowercase hex characters.
pub fn token_id(token: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(token.as_bytes());
    hex(&digest[..8])
}

/// The proof a daemon holding `token` must answer `POST /identity` with: HMAC-SHA256 keyed by
/// the token over `tool_cli_protocol::identity::message(nonce, host)`, as lowercase hex.
pub fn identity_proof(token: &str, nonce: &str, host: &str) -> String {
    use hmac::{KeyInit as _, Mac as _};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(token.as_bytes())
        .expect("HMAC takes a key of any length");
    mac.update(tool_cli_protocol::identity::message(nonce, host).as_bytes());
    hex(&mac.finalize().into_bytes())
}

/// Parses a JSON-RPC 2.0 response body, panicking with the body when it is not one.
pub fn parse_response(body: &[u8]) -> Response {
    let response: Response = serde_json::from_slice(body).unwrap_or_else(|err| {
        panic!(
            "not a JSON-RPC response ({err}): {}",
            String::from_utf8_lossy(body)
        )
    });
    assert_eq!(response.jsonrpc, "2.0", "jsonrpc member");
    assert!(
        response.result.is_some() != response.error.is_some(),
        "exactly one of result and error: {}",
        String::from_utf8_lossy(body)
    );
    response
}

// ---------------------------------------------------------------------------------------------
// Processes.

fn capture(mut stream: impl Read + Send + 'static) -> Arc<Mutex<Vec<u8>>> {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&buffer);
    thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => sink
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(&chunk[..n]),
            }
        }
    });
    buffer
}

fn text_of(buffer: &Arc<Mutex<Vec<u8>>>) -> String {
    String::from_utf8_lossy(&buffer.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
}

fn lines_of(stream: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        // Keeps draining after the receiver is gone so the daemon never blocks on stdout.
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            let _ = sender.send(line);
        }
    });
    receiver
}

fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// SIGTERM, wait up to [`SHUTDOWN_TIMEOUT`], then SIGKILL.
fn stop_process(mut child: Child) {
    if child.try_wait().ok().flatten().is_some() {
        return;
    }
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our unreaped child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    if wait_timeout(&mut child, SHUTDOWN_TIMEOUT).is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// SIGTERM to the child's whole process group, a short wait, then SIGKILL to the group.
fn stop_process_group(mut child: Child) {
    let pgid = child.id() as libc::pid_t;
    // SAFETY: kill(2) has no memory-safety preconditions; the group is the child's own.
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    if wait_timeout(&mut child, Duration::from_secs(5)).is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    if !live_processes_in_group(pgid).is_empty() {
        // SAFETY: as above.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

/// Runs `command` with stdout and stderr captured; kills it and panics after `timeout`.
pub fn run_with_timeout(mut command: Command, timeout: Duration) -> Output {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .unwrap_or_else(|err| panic!("spawn {command:?}: {err}"));
    let stdout = capture(child.stdout.take().expect("piped stdout"));
    let stderr = capture(child.stderr.take().expect("piped stderr"));
    let Some(status) = wait_timeout(&mut child, timeout) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "{command:?} did not finish within {timeout:?}; stderr so far:\n{}",
            text_of(&stderr)
        );
    };
    // The reader threads finish at EOF, right after the exit; give them a moment.
    let drained = Instant::now() + Duration::from_secs(5);
    while Arc::strong_count(&stdout) > 1 || Arc::strong_count(&stderr) > 1 {
        if Instant::now() >= drained {
            break;
        }
        thread::sleep(Duration::from_millis(5));
    }
    let take = |buffer: &Arc<Mutex<Vec<u8>>>| {
        std::mem::take(&mut *buffer.lock().unwrap_or_else(|e| e.into_inner()))
    };
    Output {
        status,
        stdout: take(&stdout),
        stderr: take(&stderr),
    }
}

/// One line of `/proc/<pid>/stat`: `(state, parent pid, process group)`.
fn proc_stat(pid: i32) -> Option<(char, i32, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces; fields follow the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

fn all_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Live (non-zombie) direct children of `parent`, as `(pid, process group)`.
pub fn children_of(parent: i32) -> Vec<(i32, i32)> {
    all_pids()
        .into_iter()
        .filter_map(|pid| {
            let (state, ppid, pgrp) = proc_stat(pid)?;
            (ppid == parent && state != 'Z').then_some((pid, pgrp))
        })
        .collect()
}

/// Live (non-zombie) processes in process group `pgid`. `kill(-pgid, 0)` answers first; the
/// `/proc` scan then leaves out zombies, which an init that does not reap would keep around.
pub fn live_processes_in_group(pgid: i32) -> Vec<i32> {
    // SAFETY: kill(2) with signal 0 only checks for existence.
    let exists = unsafe { libc::kill(-pgid, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !exists {
        return Vec::new();
    }
    all_pids()
        .into_iter()
        .filter(
            |&pid| matches!(proc_stat(pid), Some((state, _, pgrp)) if pgrp == pgid && state != 'Z'),
        )
        .collect()
}

/// Whether `pid` is a live (non-zombie) process. A zombie counts as gone: it runs nothing, and
/// an init that does not reap would keep it around for ever.
pub fn process_is_alive(pid: i32) -> bool {
    matches!(proc_stat(pid), Some((state, _, _)) if state != 'Z')
}

/// Live (non-zombie) processes with `marker` as one of their command-line arguments: how a test
/// finds what a fault server detached (`tool-cli-fault-server --linger MARKER`), wherever in the
/// process tree it ended up.
pub fn processes_with_marker(marker: &str) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
                cmdline
                    .split(|&b| b == 0)
                    .any(|arg| arg == marker.as_bytes())
            }) && process_is_alive(pid)
        })
        .collect()
}

/// A fresh marker for [`processes_with_marker`], unique to this test run.
pub fn unique_marker(what: &str) -> String {
    format!(
        "tool-cli-test-{what}-{}-{}",
        std::process::id(),
        random_hex(4)
    )
}

/// SIGKILLs every process carrying the marker when dropped, so a failing test leaves nothing
/// behind that escaped its daemon.
pub struct KillMarkedOnDrop(pub String);

impl Drop for KillMarkedOnDrop {
    fn drop(&mut self) {
        for pid in processes_with_marker(&self.0) {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The parent of `pid` (zombies included), if it exists.
pub fn parent_of(pid: i32) -> Option<i32> {
    proc_stat(pid).map(|(_, ppid, _)| ppid)
}

/// The resident set size of `pid` in KiB, from `VmRSS` in `/proc/<pid>/status`.
pub fn vm_rss_kib(pid: u32) -> u64 {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("read {path}: {err}"));
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS line in {path}:\n{status}"))
}

/// Waits up to `timeout` for `condition`, polling; returns whether it became true.
pub fn eventually(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------------------------
// Results.

/// The text of every `text` content item of a `CallToolResult`, joined by newlines.
pub fn text_content(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("CallToolResult without content: {result:#}"))
        .iter()
        .filter(|item| item["type"] == "text")
        .filter_map(|item| item["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The structured `data` of an error, as our wire type.
pub fn error_data(error: &ErrorObject) -> tool_cli_protocol::ErrorData {
    error
        .error_data()
        .unwrap_or_else(|| panic!("error without a known structured data member: {error:?}"))
}

/// Replaces the values at the given JSON pointers with `"<name>"` placeholders, for snapshots.
pub fn redact(mut value: Value, pointers: &[&str]) -> Value {
    for pointer in pointers {
        if let Some(slot) = value.pointer_mut(pointer) {
            let name = pointer.rsplit('/').next().unwrap_or(pointer);
            *slot = Value::String(format!("<{name}>"));
        }
    }
    value
}

// ---------------------------------------------------------------------------------------------
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
