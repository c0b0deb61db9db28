//! The daemon under test: [`Daemon`] starts the real `tool-cli-daemon` on a config in a fresh
//! temp dir and stops it (SIGTERM, then SIGKILL) on drop; [`daemon_command`] and
//! [`client_command`] build the binaries' commands with a clean `TOOL_CLI_*` environment.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;
use tool_cli_protocol::runtime::{RUNTIME_FILE_NAME, RuntimeFile};
use tool_cli_protocol::{ErrorObject, Request};

use crate::{
    CLIENT_TIMEOUT, STARTUP_TIMEOUT, capture, children_of, client_bin, daemon_bin, demo_server,
    http_post, lines_of, live_processes_in_group, parse_response, run_with_timeout, scratch,
    stop_process, text_of, wait_timeout,
};

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
    /// The daemon's TCP port, from its `export TOOL_CLI_PORT=` line (0 on a Unix socket).
    pub port: u16,
    /// Its Unix socket, from its `export TOOL_CLI_SOCKET=` line (started with `--socket`).
    pub socket: Option<PathBuf>,
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
            socket: None,
            token: String::new(),
            runtime_dir,
            config_path,
            stderr,
            next_id: AtomicU64::new(1),
            dir,
        };
        let mut port = None;
        let mut socket = None;
        let mut token = None;
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        while (port.is_none() && socket.is_none()) || token.is_none() {
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
                    } else if let Some(value) = line.strip_prefix("export TOOL_CLI_SOCKET=") {
                        // Shell-quoted: `'PATH'` (the test paths hold no quote).
                        socket = Some(PathBuf::from(value.trim().trim_matches('\'')));
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
        daemon.port = port.unwrap_or(0);
        daemon.socket = socket;
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

    /// Waits (at most `wait`) until each of `servers` is `ready` in `listServers`; panics with
    /// the last list and the daemon's stderr if one is not.
    pub fn wait_servers_ready(&self, servers: &[&str], wait: Duration) {
        let mut last = Value::Null;
        let ready = crate::eventually(wait, || {
            last = self.call("listServers", Value::Null);
            let listed = last["servers"].as_array().cloned().unwrap_or_default();
            servers.iter().all(|name| {
                listed
                    .iter()
                    .any(|server| server["name"] == *name && server["state"] == "ready")
            })
        });
        assert!(
            ready,
            "{servers:?} not all ready: {last:#}\ndaemon stderr:\n{}",
            self.stderr()
        );
    }

    /// Long-polls `callEvents` of the call watched as `progress_id`, from event `after` on,
    /// until one of type `kind` arrives (`after` moves past what was read); panics if the call
    /// ends first.
    pub fn next_call_event(&self, progress_id: &str, after: &mut u64, kind: &str) -> Value {
        loop {
            let page = self.call(
                tool_cli_protocol::methods::name::CALL_EVENTS,
                json!({"progressId": progress_id, "after": *after, "waitMs": 20000}),
            );
            for event in page["events"].as_array().expect("callEvents lists events") {
                *after = event["seq"].as_u64().expect("every event has its seq");
                if event["type"] == kind {
                    return event.clone();
                }
            }
            assert_eq!(page["done"], false, "the call ended without a {kind} event");
        }
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

    /// Runs `tool-cli ARGS… --elicitation ask` against this daemon with `answers` typed into its
    /// form (stdin from a file, as a user's terminal would hand the lines over), asserts it
    /// succeeded within a minute, and returns its stdout and stderr.
    pub fn answer_cli_form(&self, args: &[&str], answers: &str) -> (String, String) {
        let dir = crate::scratch();
        let input = dir.path().join("answers");
        std::fs::write(&input, answers).expect("write the answers");
        let mut command = self.client_command();
        command
            .args(args)
            .args(["--elicitation", "ask"])
            .stdin(Stdio::from(
                std::fs::File::open(&input).expect("the answers"),
            ));
        let output = crate::run_with_timeout(command, Duration::from_secs(60));
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{stdout}\n{stderr}");
        (stdout, stderr)
    }

    /// A `tool-cli` command pointed at this daemon through `TOOL_CLI_PORT` / `TOOL_CLI_TOKEN`.
    pub fn client_command(&self) -> Command {
        let mut command = client_command();
        command
            .env(tool_cli_protocol::env::PORT, self.port.to_string())
            .env(tool_cli_protocol::env::TOKEN, &self.token)
            .env(tool_cli_protocol::env::RUNTIME_DIR, &self.runtime_dir)
            // The pin store the daemon checks (see `daemon_command`).
            .env(
                tool_cli_protocol::env::PINS,
                self.runtime_dir.with_file_name("pins.json"),
            );
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

    /// Stops the daemon as a user would (SIGTERM) and waits for it to exit, so what it writes
    /// on its way out (trace lines, a recording's end) is on disk when this returns.
    pub fn stop_gracefully(mut self) {
        self.signal(libc::SIGTERM);
        assert!(
            self.wait_for_exit(Duration::from_secs(30)).is_some(),
            "the daemon stops on SIGTERM"
        );
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
        // The pin store of this test (absent unless the test pins): a pins.json in the home
        // directory of whoever runs the tests must not hold back a test's tools.
        .env(
            tool_cli_protocol::env::PINS,
            runtime_dir.with_file_name("pins.json"),
        )
        // No search model from the home directory: a test that wants one names it in its
        // config (tests/e2e/search_model.rs), the others rank the same on every machine.
        .env(tool_cli_protocol::env::SEARCH_MODEL, "off")
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
        );
    command
}

/// A `tool-cli` command with a clean `TOOL_CLI_*` environment, and auto-start off
/// (`TOOL_CLI_NO_AUTOSTART=1`): a test that finds no daemon must not leave one behind. A test
/// of auto-start removes the variable and stops what it started.
pub fn client_command() -> Command {
    let mut command = Command::new(client_bin());
    clear_tool_cli_env(&mut command);
    command
        .stdin(Stdio::null())
        .env(tool_cli_protocol::env::NO_AUTOSTART, "1");
    command
}

fn clear_tool_cli_env(command: &mut Command) {
    for (key, _) in std::env::vars_os() {
        let name = key.to_string_lossy();
        // `OTEL_*` too: a developer's collector settings must not turn export on in a test;
        // and `TRACEPARENT`/`TRACESTATE`, which the client sends on.
        if name.starts_with(tool_cli_protocol::env::PREFIX)
            || name.starts_with("OTEL_")
            || name == "TRACEPARENT"
            || name == "TRACESTATE"
        {
            command.env_remove(key);
        }
    }
}
