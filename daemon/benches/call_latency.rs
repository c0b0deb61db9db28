//! Call latency: what the daemon costs per tool call, against a direct rmcp client measured in
//! the same run.
//!
//! The bench starts a real `tool-cli-daemon` (release build, default logging, its own temp dir
//! and an explicit config naming only the bundled demo server) and a second copy of the demo
//! server driven directly by an rmcp client. It then times, in interleaved rounds so that the
//! noise of a shared machine hits every measurement alike:
//!
//! - (a) `tool-cli demo sql_query '{"sql":"select 1"}'` as a whole process against the warm daemon;
//! - (b) `callTool` of the same tool over one kept-alive HTTP/1.1 connection, from a minimal
//!   blocking client written here so that the figure is the daemon's and not a client library's;
//! - (c) the baseline: `tools/call` of the same tool with rmcp over the demo server's stdio;
//! - (d) `tool-cli --version` as a process: the client's cold start, no daemon involved;
//! - (e) `tool-cli` with no arguments (`getBridgeInfo` + `listServers`) as a process;
//! - (f) `getBridgeInfo` over the connection of (b): the daemon's HTTP, auth and JSON-RPC floor
//!   without the MCP hop;
//! - (g) as (b), against a second daemon with `RUST_LOG=warn`;
//! - (h) as (b), in a session (`sessionId`): the session store's guards, routing facts and record;
//! - (i) as (h), routed (no `server`): the five routing rules over the demo server's catalog;
//! - (j) a process that does nothing (`daemon/examples/noop.rs`, release): the floor of any
//!   process per call, which (a) is held against (P1 of issue 13).
//! - (k) `listServers` over a kept-alive connection to a third daemon serving the fault-server
//!   fixture with 10,000 generated tools (P6 of issue 13: ≤ 100 µs);
//! - (l) `describeTool` of one of those 10,000 tools on that daemon, and (m) `describeTool` of
//!   `demo`'s `sql_query` on the first daemon: a lookup that stays flat whatever the catalog's
//!   size has (l) ≈ (m).
//!
//! - (r) one HTTP/1.1 POST round trip to a std-only loopback echo server, body the size of (b)'s
//!   request, and (t) `tools/call` written straight to a demo server's stdin by a blocking std
//!   client: (r) + (t) is the floor of (b), and (b) − floor the daemon's own work (issue 26, P2).
//!
//! (h) − (b) and (i) − (b) are what sessions and routing add to a call.
//!
//! A second table, from `call_latency/issue13_rows.rs`, holds (n) mcporter's warm daemon against
//! (a), and (o)–(q) a burst of 100 concurrent calls through the daemon against the same burst
//! sent straight to the server (P1 and P3 of issue 13), timed in the same rounds.
//!
//! It prints a markdown table of medians and tails with each median's ratio to (c). Counts come
//! from the environment (`TOOL_CLI_BENCH_CALLS`, `TOOL_CLI_BENCH_PROCESSES`,
//! `TOOL_CLI_BENCH_ROUNDS`); `scripts/bench.sh` builds everything and runs it. This is a
//! benchmark, not a test: nothing here asserts on time.

use std::fs::File;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt as _;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use serde_json::{Map, Value, json};

// Rows (n)–(q) live in their own file (a crate root finds modules beside it, hence the path).
#[path = "call_latency/issue13_rows.rs"]
mod issue13_rows;
// Rows (r) and (t), the floor of (b) (issue 26, P2).
#[path = "call_latency/floor_rows.rs"]
mod floor_rows;

/// The server and tool every call measurement uses.
const SERVER: &str = "demo";
const TOOL: &str = "sql_query";
/// A query that touches no table, so the figures are the plumbing's and not SQLite's.
const SQL: &str = "select 1";
/// The server of the big-catalog rows (k) and (l): the fault-server fixture with this many
/// generated tools (`extra_0` …), besides its built-in ones.
const BIG_SERVER: &str = "big";
const BIG_TOOLS: usize = 10_000;

/// How long the daemon gets to print its port and token before we give up on it.
const DAEMON_READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the daemon gets to stop after SIGTERM before it is killed.
const DAEMON_STOP_TIMEOUT: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    let counts = match issue13_rows::Counts::from_env() {
        Ok(counts) => counts,
        Err(err) => {
            eprintln!("call_latency: {err}");
            return ExitCode::from(2);
        }
    };
    // `cargo bench` passes `--bench` (and any filter); this bench has no options of its own.
    let settings = match Settings::from_env() {
        Ok(settings) => settings,
        Err(err) => {
            eprintln!("call_latency: {err}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(run(&settings, counts)) {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("call_latency: error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Iteration counts, from the environment.
struct Settings {
    /// Timed calls of each in-process measurement: (b), (c), (f) and (g).
    calls: usize,
    /// Timed runs of each whole-process measurement: (a), (d) and (e).
    processes: usize,
    /// Rounds the measurements are interleaved in.
    rounds: usize,
}

impl Settings {
    fn from_env() -> Result<Settings, String> {
        let calls = count_from_env("TOOL_CLI_BENCH_CALLS", 20_000)?;
        let processes = count_from_env("TOOL_CLI_BENCH_PROCESSES", 2_000)?;
        let rounds = count_from_env("TOOL_CLI_BENCH_ROUNDS", 50)?;
        Ok(Settings {
            calls,
            processes,
            // A round must hold at least one iteration of everything.
            rounds: rounds.min(calls).min(processes),
        })
    }

    /// Warm-up iterations before timing starts: a tenth, and enough to fill caches and pools.
    fn warmup_calls(&self) -> usize {
        (self.calls / 10).max(50)
    }

    fn warmup_processes(&self) -> usize {
        (self.processes / 10).max(5)
    }

    /// How many of `total` iterations go in `round`, spreading the remainder evenly.
    fn share(&self, total: usize, round: usize) -> usize {
        total * (round + 1) / self.rounds - total * round / self.rounds
    }
}

fn count_from_env(name: &str, default: usize) -> Result<usize, String> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(text) => match text.trim().parse::<usize>() {
            Ok(count) if (1..=10_000_000).contains(&count) => Ok(count),
            _ => Err(format!(
                "{name}={text:?} is not a count; expected a whole number from 1 to 10000000"
            )),
        },
    }
}

/// Everything that gets timed, in table order.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    ProcessCall,
    KeptAliveCall,
    DirectRmcp,
    ProcessVersion,
    ProcessListServers,
    KeptAliveBridgeInfo,
    KeptAliveCallQuiet,
    KeptAliveSessionCall,
    KeptAliveRoutedCall,
    ProcessNoop,
    BigListServers,
    BigDescribeTool,
    DescribeTool,
    FloorHttpEcho,
    FloorDirectStdio,
}

impl Kind {
    const ALL: [Kind; 15] = [
        Kind::ProcessCall,
        Kind::KeptAliveCall,
        Kind::DirectRmcp,
        Kind::ProcessVersion,
        Kind::ProcessListServers,
        Kind::KeptAliveBridgeInfo,
        Kind::KeptAliveCallQuiet,
        Kind::KeptAliveSessionCall,
        Kind::KeptAliveRoutedCall,
        Kind::ProcessNoop,
        Kind::BigListServers,
        Kind::BigDescribeTool,
        Kind::DescribeTool,
        Kind::FloorHttpEcho,
        Kind::FloorDirectStdio,
    ];

    fn label(self) -> &'static str {
        match self {
            Kind::ProcessCall => {
                "(a) `tool-cli demo sql_query '{\"sql\":\"select 1\"}'`, one process per call"
            }
            Kind::KeptAliveCall => "(b) `callTool` over one kept-alive HTTP/1.1 connection",
            Kind::DirectRmcp => "(c) baseline: rmcp `tools/call` over stdio, no daemon",
            Kind::ProcessVersion => "(d) `tool-cli --version`, one process per run",
            Kind::ProcessListServers => "(e) `tool-cli` (`getBridgeInfo` + `listServers`)",
            Kind::KeptAliveBridgeInfo => "(f) `getBridgeInfo` over the connection of (b)",
            Kind::KeptAliveCallQuiet => "(g) as (b), daemon with `RUST_LOG=warn` (no per-call log)",
            Kind::KeptAliveSessionCall => "(h) as (b), in a session (`sessionId`)",
            Kind::KeptAliveRoutedCall => "(i) as (h), routed: no `server`, the daemon picks",
            Kind::ProcessNoop => "(j) a release binary whose `main` is empty, one process per run",
            Kind::BigListServers => "(k) `listServers`, daemon serving 10,000 tools",
            Kind::BigDescribeTool => "(l) `describeTool` of one of 10,000 tools",
            Kind::DescribeTool => "(m) `describeTool` of `demo`'s `sql_query` (6 tools)",
            Kind::FloorHttpEcho => {
                "(r) floor: one HTTP/1.1 POST round trip to a std loopback echo server"
            }
            Kind::FloorDirectStdio => {
                "(t) floor: `tools/call` as a line on the demo server's stdio, std client"
            }
        }
    }

    fn is_process(self) -> bool {
        matches!(
            self,
            Kind::ProcessCall | Kind::ProcessVersion | Kind::ProcessListServers | Kind::ProcessNoop
        )
    }
}

/// The processes and connections under test, and the temp dir they live in.
struct Fixture {
    /// Dropped first: the daemons stop before their directory goes.
    _daemon: Daemon,
    _quiet_daemon: Daemon,
    _big_daemon: Daemon,
    http: HttpClient,
    quiet_http: HttpClient,
    big_http: HttpClient,
    direct: DirectClient,
    echo_floor: floor_rows::EchoFloor,
    stdio_floor: floor_rows::StdioFloor,
    process_call: Command,
    process_version: Command,
    process_list_servers: Command,
    process_noop: Command,
    call_arguments: Map<String, Value>,
    _dir: TempDir,
}

impl Fixture {
    async fn time_one(&mut self, kind: Kind) -> Result<Duration, String> {
        match kind {
            Kind::ProcessCall => time_process(&mut self.process_call),
            Kind::ProcessVersion => time_process(&mut self.process_version),
            Kind::ProcessListServers => time_process(&mut self.process_list_servers),
            Kind::ProcessNoop => time_process(&mut self.process_noop),
            Kind::KeptAliveCall | Kind::KeptAliveCallQuiet => {
                let http = if kind == Kind::KeptAliveCall {
                    &mut self.http
                } else {
                    &mut self.quiet_http
                };
                let params = json!({
                    "server": SERVER,
                    "tool": TOOL,
                    "arguments": &self.call_arguments,
                });
                let start = Instant::now();
                let result = http.call("callTool", &params)?;
                let elapsed = start.elapsed();
                check_call_result(&result)?;
                Ok(elapsed)
            }
            Kind::KeptAliveSessionCall | Kind::KeptAliveRoutedCall => {
                let mut params = json!({
                    "tool": TOOL,
                    "arguments": &self.call_arguments,
                    "sessionId": "bench",
                });
                if kind == Kind::KeptAliveSessionCall {
                    params["server"] = json!(SERVER);
                }
                let start = Instant::now();
                let result = self.http.call("callTool", &params)?;
                let elapsed = start.elapsed();
                check_call_result(&result)?;
                Ok(elapsed)
            }
            Kind::KeptAliveBridgeInfo => {
                let start = Instant::now();
                self.http.call("getBridgeInfo", &Value::Null)?;
                Ok(start.elapsed())
            }
            Kind::BigListServers => {
                let start = Instant::now();
                let result = self.big_http.call("listServers", &Value::Null)?;
                let elapsed = start.elapsed();
                if result["servers"][0]["toolCount"].as_u64() < Some(BIG_TOOLS as u64) {
                    return Err(format!("listServers of the big daemon: {result}"));
                }
                Ok(elapsed)
            }
            Kind::BigDescribeTool => {
                let params = json!({"server": BIG_SERVER, "tool": "extra_4242"});
                let start = Instant::now();
                let result = self.big_http.call("describeTool", &params)?;
                let elapsed = start.elapsed();
                if result["name"] != "extra_4242" {
                    return Err(format!("describeTool of the big daemon: {result}"));
                }
                Ok(elapsed)
            }
            Kind::DescribeTool => {
                let params = json!({"server": SERVER, "tool": TOOL});
                let start = Instant::now();
                let result = self.http.call("describeTool", &params)?;
                let elapsed = start.elapsed();
                if result["name"] != TOOL {
                    return Err(format!("describeTool: {result}"));
                }
                Ok(elapsed)
            }
            Kind::FloorHttpEcho => self.echo_floor.time_one(),
            Kind::FloorDirectStdio => self.stdio_floor.time_one(),
            Kind::DirectRmcp => {
                let params =
                    CallToolRequestParams::new(TOOL).with_arguments(self.call_arguments.clone());
                let start = Instant::now();
                let result = self
                    .direct
                    .service
                    .call_tool(params)
                    .await
                    .map_err(|err| format!("direct rmcp call failed: {err}"))?;
                let elapsed = start.elapsed();
                if result.is_error == Some(true) {
                    return Err(format!("direct rmcp call returned an error: {result:?}"));
                }
                Ok(elapsed)
            }
        }
    }
}

async fn run(settings: &Settings, counts: issue13_rows::Counts) -> Result<String, String> {
    let daemon_exe = PathBuf::from(env!("CARGO_BIN_EXE_tool-cli-daemon"));
    let client_exe = match std::env::var_os("TOOL_CLI_BENCH_CLIENT") {
        Some(path) => PathBuf::from(path),
        None => daemon_exe.with_file_name("tool-cli"),
    };
    if !client_exe.is_file() {
        return Err(format!(
            "no client binary at {}; build it first with `cargo build --release -p tool-cli` \
             (same CARGO_TARGET_DIR), or set TOOL_CLI_BENCH_CLIENT",
            client_exe.display()
        ));
    }

    let fault_server_exe = daemon_exe.with_file_name("tool-cli-fault-server");
    if !fault_server_exe.is_file() {
        return Err(format!(
            "no fault server at {}; build it first with `cargo build --release -p \
             tool-cli-fault-server` (same CARGO_TARGET_DIR)",
            fault_server_exe.display()
        ));
    }

    let dir = TempDir::create()?;
    let demo = |exe: &PathBuf, flavour: &str| {
        json!({ SERVER: {
            "command": exe,
            "args": ["demo-server", "--db", dir.path().join(format!("{flavour}-demo.sqlite"))],
        }})
    };
    let daemon = Daemon::start(
        &daemon_exe,
        dir.path(),
        "default",
        demo(&daemon_exe, "default"),
    )?;
    // A/B of two builds in one run: (g) runs the daemon (and its demo server) named here.
    let quiet_exe =
        std::env::var_os("TOOL_CLI_BENCH_DAEMON_G").map_or(daemon_exe.clone(), PathBuf::from);
    let quiet_daemon = Daemon::start(&quiet_exe, dir.path(), "quiet", demo(&quiet_exe, "quiet"))?;
    let big_daemon = Daemon::start(
        &daemon_exe,
        dir.path(),
        "big",
        json!({ BIG_SERVER: {
            "command": &fault_server_exe,
            "args": ["--extra-tools", BIG_TOOLS.to_string()],
        }}),
    )?;
    // Rows (n)–(q): their daemon, mcporter's (its first call starts it) and their servers.
    let mut issue13 =
        issue13_rows::Issue13Rows::start(counts, &daemon_exe, &fault_server_exe).await?;
    // Connected once every daemon is up: a connection left idle while the big daemon discovers
    // its 10,000 tools would be closed by the daemon's idle timeout.
    let http = HttpClient::connect(daemon.port, &daemon.token)?;
    let quiet_http = HttpClient::connect(quiet_daemon.port, &quiet_daemon.token)?;
    let big_http = HttpClient::connect(big_daemon.port, &big_daemon.token)?;
    let direct = DirectClient::start(&daemon_exe, dir.path()).await?;

    let mut call_arguments = Map::new();
    call_arguments.insert("sql".to_owned(), Value::from(SQL));
    let client_command = |args: &[&str]| {
        let mut command = Command::new(&client_exe);
        command
            .args(args)
            .env_remove("TOOL_CLI_HOST")
            .env_remove("TOOL_CLI_TIMEOUT_MS")
            .env("TOOL_CLI_PORT", daemon.port.to_string())
            .env("TOOL_CLI_TOKEN", &daemon.token)
            .env(
                "TOOL_CLI_DAEMON_ID",
                daemon.daemon_id.as_deref().unwrap_or(""),
            )
            .env("TOOL_CLI_RUNTIME_DIR", dir.path().join("default-runtime"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    };
    let call_json = serde_json::to_string(&call_arguments).expect("JSON encodes");
    // The body of (b)'s request, for the echo floor to send as many bytes.
    let call_body_len = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "callTool",
        "params": { "server": SERVER, "tool": TOOL, "arguments": &call_arguments },
    }))
    .expect("JSON encodes")
    .len();
    let echo_floor = floor_rows::EchoFloor::start(&daemon_exe, call_body_len)?;
    let stdio_floor =
        floor_rows::StdioFloor::start(&daemon_exe, dir.path(), TOOL, &call_arguments)?;
    let mut fixture = Fixture {
        echo_floor,
        stdio_floor,
        process_call: client_command(&[SERVER, TOOL, &call_json]),
        process_version: client_command(&["--version"]),
        process_list_servers: client_command(&[]),
        process_noop: {
            let noop = daemon_exe.with_file_name("examples").join("noop");
            if !noop.is_file() {
                return Err(format!(
                    "no {}; build it first with `cargo build --release -p tool-cli-daemon \
                     --example noop`",
                    noop.display()
                ));
            }
            let mut command = Command::new(noop);
            command
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            command
        },
        _daemon: daemon,
        _quiet_daemon: quiet_daemon,
        _big_daemon: big_daemon,
        http,
        quiet_http,
        big_http,
        direct,
        call_arguments,
        _dir: dir,
    };

    check_processes_once(&mut fixture)?;

    // Warm-up: every path once through its caches, pools and lazily built state.
    for kind in Kind::ALL {
        let count = if kind.is_process() {
            settings.warmup_processes()
        } else {
            settings.warmup_calls()
        };
        for _ in 0..count {
            fixture.time_one(kind).await?;
        }
    }
    issue13.warm_up().await?;

    let load_before = load_average();
    let wall = Instant::now();
    // samples[kind][round]: the rounds are kept apart for the per-round ratios.
    let mut samples: Vec<Vec<Vec<Duration>>> =
        vec![Vec::with_capacity(settings.rounds); Kind::ALL.len()];
    for round in 0..settings.rounds {
        let mut this_round: Vec<Vec<Duration>> = vec![Vec::new(); Kind::ALL.len()];
        // Rotate who goes first, so no measurement always follows the same neighbour.
        for offset in 0..Kind::ALL.len() {
            let index = (round + offset) % Kind::ALL.len();
            let kind = Kind::ALL[index];
            let total = if kind.is_process() {
                settings.processes
            } else {
                settings.calls
            };
            for _ in 0..settings.share(total, round) {
                let elapsed = fixture.time_one(kind).await?;
                this_round[index].push(elapsed);
            }
        }
        for (kind_samples, round_samples) in samples.iter_mut().zip(this_round) {
            kind_samples.push(round_samples);
        }
        issue13.run_round(settings, round).await?;
    }
    let wall = wall.elapsed();
    let load_after = load_average();
    // After the rounds (see there why): the kept-alive connections are not used again.
    issue13.run_mcporter_phase(&mut fixture.process_call)?;

    fixture.direct.stop().await;
    drop(fixture);

    let issue13_table = issue13.render();
    drop(issue13);
    Ok(render_report(settings, &samples, wall, &load_before, &load_after) + &issue13_table)
}

/// Runs each client command once with its output captured, so a broken setup fails loudly
/// here instead of as a table of fast failures.
fn check_processes_once(fixture: &mut Fixture) -> Result<(), String> {
    let call = fixture.http.call(
        "callTool",
        &json!({ "server": SERVER, "tool": TOOL, "arguments": &fixture.call_arguments }),
    )?;
    check_call_result(&call)?;
    for command in [
        &mut fixture.process_call,
        &mut fixture.process_version,
        &mut fixture.process_list_servers,
        &mut fixture.process_noop,
    ] {
        let output = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .map_err(|err| format!("cannot run {command:?}: {err}"))?;
        command.stdout(Stdio::null()).stderr(Stdio::null());
        if !output.status.success() {
            return Err(format!(
                "{command:?} failed ({}): {}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    Ok(())
}

fn check_call_result(result: &Value) -> Result<(), String> {
    if result.get("isError") == Some(&Value::Bool(true)) {
        return Err(format!("the tool reported an error: {result}"));
    }
    Ok(())
}

fn time_process(command: &mut Command) -> Result<Duration, String> {
    let start = Instant::now();
    let status = command
        .status()
        .map_err(|err| format!("cannot run {command:?}: {err}"))?;
    let elapsed = start.elapsed();
    if !status.success() {
        return Err(format!("{command:?} failed: {status}"));
    }
    Ok(elapsed)
}

/// A private temp directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn create() -> Result<TempDir, String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let path =
            std::env::temp_dir().join(format!("tool-cli-bench-{}-{nanos:08x}", std::process::id()));
        std::fs::create_dir(&path)
            .map_err(|err| format!("cannot create {}: {err}", path.display()))?;
        Ok(TempDir(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The daemon under test; stopped with SIGTERM (so it stops its servers) on drop.
struct Daemon {
    child: Child,
    port: u16,
    token: String,
    /// `TOOL_CLI_DAEMON_ID`, when the daemon prints one.
    daemon_id: Option<String>,
}

impl Daemon {
    /// Starts a daemon named `flavour` in `dir`: `"quiet"` runs it with `RUST_LOG=warn`, anything
    /// else with its default log level.
    fn start(exe: &Path, dir: &Path, flavour: &str, servers: Value) -> Result<Daemon, String> {
        let config_path = dir.join(format!("{flavour}-servers.json"));
        let config = json!({ "mcpServers": servers });
        std::fs::write(&config_path, config.to_string())
            .map_err(|err| format!("cannot write {}: {err}", config_path.display()))?;
        let log_path = dir.join(format!("{flavour}-daemon.log"));
        let log = File::create(&log_path)
            .map_err(|err| format!("cannot create {}: {err}", log_path.display()))?;
        // Logs go to a file: the daemon as deployed, minus a terminal. Each daemon gets its own
        // runtime dir, so neither overwrites the other's runtime file.
        let runtime_dir = dir.join(format!("{flavour}-runtime"));
        std::fs::create_dir(&runtime_dir)
            .map_err(|err| format!("cannot create {}: {err}", runtime_dir.display()))?;
        let mut command = Command::new(exe);
        command
            .arg("--config")
            .arg(&config_path)
            .args(["--port", "0", "--print-env"])
            .env("TOOL_CLI_RUNTIME_DIR", &runtime_dir)
            .env("HOME", dir)
            .env_remove("TOOL_CLI_TOKEN")
            .env_remove("TOOL_CLI_CONFIG")
            .env_remove("RUST_LOG");
        if flavour == "quiet" {
            command.env("RUST_LOG", "warn");
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|err| format!("cannot start {}: {err}", exe.display()))?;

        // Read the `export` lines on a thread, so a daemon that never gets ready cannot hang us.
        let stdout = child.stdout.take().expect("stdout is piped");
        let (lines_tx, lines_rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if lines_tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + DAEMON_READY_TIMEOUT;
        let (mut port, mut token, mut daemon_id) = (None, None, None);
        // Read to the end of what it prints (it closes stdout after the last line), so the
        // daemon id that follows the token is not missed.
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match lines_rx.recv_timeout(left) {
                Ok(line) => line,
                Err(mpsc::RecvTimeoutError::Disconnected) if port.is_some() && token.is_some() => {
                    break;
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                    return Err(format!(
                        "the daemon did not print its port and token within {} s; its log:\n{log}",
                        DAEMON_READY_TIMEOUT.as_secs()
                    ));
                }
            };
            if let Some(value) = line.strip_prefix("export TOOL_CLI_PORT=") {
                port = value.trim().parse::<u16>().ok();
            } else if let Some(value) = line.strip_prefix("export TOOL_CLI_TOKEN=") {
                token = Some(value.trim().to_owned());
            } else if let Some(value) = line.strip_prefix("export TOOL_CLI_DAEMON_ID=") {
                daemon_id = Some(value.trim().to_owned());
            }
        }
        Ok(Daemon {
            child,
            port: port.expect("loop ends with a port"),
            token: token.expect("loop ends with a token"),
            daemon_id,
        })
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let Ok(pid) = libc::pid_t::try_from(self.child.id()) else {
            let _ = self.child.kill();
            let _ = self.child.wait();
            return;
        };
        // SAFETY: `kill` has no memory-safety preconditions; the pid is our own child, not yet
        // reaped, so it cannot have been reused.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + DAEMON_STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal blocking HTTP/1.1 client on one kept-alive connection: one `write` per request,
/// `Content-Length` bodies only. It does as little as possible so the figure is the daemon's.
struct HttpClient {
    stream: TcpStream,
    head: String,
    buffer: Vec<u8>,
    next_id: u64,
}

impl HttpClient {
    fn connect(port: u16, token: &str) -> Result<HttpClient, String> {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .map_err(|err| format!("cannot connect to the daemon on port {port}: {err}"))?;
        stream
            .set_nodelay(true)
            .map_err(|err| format!("cannot set TCP_NODELAY: {err}"))?;
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(|err| format!("cannot set a read timeout: {err}"))?;
        let head = format!(
            "POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nAccept: application/json\r\n"
        );
        Ok(HttpClient {
            stream,
            head,
            buffer: Vec::with_capacity(16 * 1024),
            next_id: 1,
        })
    }

    /// Sends one JSON-RPC request and returns its `result`.
    fn call(&mut self, method: &str, params: &Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut envelope = json!({ "jsonrpc": "2.0", "id": id, "method": method });
        if !params.is_null() {
            envelope["params"] = params.clone();
        }
        let body = serde_json::to_vec(&envelope).expect("JSON encodes");
        let mut request = Vec::with_capacity(self.head.len() + body.len() + 32);
        request.extend_from_slice(self.head.as_bytes());
        write!(request, "Content-Length: {}\r\n\r\n", body.len()).expect("writes to a Vec");
        request.extend_from_slice(&body);
        self.stream
            .write_all(&request)
            .map_err(|err| format!("{method}: cannot send: {err}"))?;

        let (status, body) = self.read_response(method)?;
        if status != 200 {
            return Err(format!(
                "{method}: HTTP {status}: {}",
                String::from_utf8_lossy(&body)
            ));
        }
        let mut response: Value = serde_json::from_slice(&body)
            .map_err(|err| format!("{method}: the response is not JSON: {err}"))?;
        if let Some(error) = response.get("error") {
            return Err(format!("{method}: JSON-RPC error: {error}"));
        }
        if response.get("id") != Some(&json!(id)) {
            return Err(format!("{method}: response to another request: {response}"));
        }
        response
            .get_mut("result")
            .map(Value::take)
            .ok_or_else(|| format!("{method}: a response without a result: {response}"))
    }

    /// POSTs `body` as it is and returns the answer's body (the echo floor, (r)).
    fn post_raw(&mut self, body: &[u8]) -> Result<Vec<u8>, String> {
        let mut request = Vec::with_capacity(self.head.len() + body.len() + 32);
        request.extend_from_slice(self.head.as_bytes());
        write!(request, "Content-Length: {}\r\n\r\n", body.len()).expect("writes to a Vec");
        request.extend_from_slice(body);
        self.stream
            .write_all(&request)
            .map_err(|err| format!("echo: cannot send: {err}"))?;
        let (status, body) = self.read_response("echo")?;
        if status != 200 {
            return Err(format!("echo: HTTP {status}"));
        }
        Ok(body)
    }

    fn read_response(&mut self, method: &str) -> Result<(u16, Vec<u8>), String> {
        let mut chunk = [0u8; 16 * 1024];
        let head_end = loop {
            if let Some(at) = find(&self.buffer, b"\r\n\r\n") {
                break at + 4;
            }
            self.fill(&mut chunk, method)?;
        };
        let head = std::str::from_utf8(&self.buffer[..head_end])
            .map_err(|_| format!("{method}: response head is not UTF-8"))?;
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse::<u16>().ok())
            .ok_or_else(|| format!("{method}: bad status line in {head:?}"))?;
        let mut content_length = None;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let (name, value) = (name.trim(), value.trim());
            if name.eq_ignore_ascii_case("content-length") {
                content_length = value.parse::<usize>().ok();
            } else if name.eq_ignore_ascii_case("connection") && value.eq_ignore_ascii_case("close")
            {
                return Err(format!(
                    "{method}: the daemon closed the kept-alive connection"
                ));
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                return Err(format!(
                    "{method}: a {value} body; this client reads Content-Length bodies only"
                ));
            }
        }
        let length =
            content_length.ok_or_else(|| format!("{method}: no Content-Length in {head:?}"))?;
        while self.buffer.len() < head_end + length {
            self.fill(&mut chunk, method)?;
        }
        let body = self.buffer[head_end..head_end + length].to_vec();
        self.buffer.drain(..head_end + length);
        Ok((status, body))
    }

    fn fill(&mut self, chunk: &mut [u8], method: &str) -> Result<(), String> {
        let read = self
            .stream
            .read(chunk)
            .map_err(|err| format!("{method}: cannot read the response: {err}"))?;
        if read == 0 {
            return Err(format!("{method}: the daemon closed the connection"));
        }
        self.buffer.extend_from_slice(&chunk[..read]);
        Ok(())
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// The baseline: our own rmcp client of a demo server we spawn, as an agent without the daemon
/// would do it.
struct DirectClient {
    service: rmcp::service::RunningService<rmcp::RoleClient, ClientConfig>,
    child: tokio::process::Child,
}

impl DirectClient {
    async fn start(exe: &Path, dir: &Path) -> Result<DirectClient, String> {
        let log_path = dir.join("direct-demo.log");
        let log = File::create(&log_path)
            .map_err(|err| format!("cannot create {}: {err}", log_path.display()))?;
        let mut child = tokio::process::Command::new(exe)
            .arg("demo-server")
            .arg("--db")
            .arg(dir.join("direct-demo.sqlite"))
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| format!("cannot start the demo server: {err}"))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stdin = child.stdin.take().expect("stdin is piped");

        let mut config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("tool-cli-bench", env!("CARGO_PKG_VERSION")),
        );
        // rmcp's default is newer than what the demo server (and the daemon) speak.
        config.protocol_version = ProtocolVersion::V_2025_11_25;
        let service = tokio::time::timeout(DAEMON_READY_TIMEOUT, config.serve((stdout, stdin)))
            .await
            .map_err(|_| "the demo server did not answer initialize".to_owned())?
            .map_err(|err| {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                format!("the MCP handshake with the demo server failed: {err}; its log:\n{log}")
            })?;
        Ok(DirectClient { service, child })
    }

    async fn stop(&mut self) {
        let _ = self.service.close().await;
        let _ = self.child.kill().await;
    }
}

/// Order statistics of one measurement.
struct Stats {
    count: usize,
    min: Duration,
    median: Duration,
    p90: Duration,
    p99: Duration,
}

impl Stats {
    fn from_samples(mut samples: Vec<Duration>) -> Stats {
        samples.sort_unstable();
        // Nearest-rank percentiles: the smallest sample with at least `p` of them at or below.
        let rank = |p: f64| {
            let index = (p * samples.len() as f64).ceil() as usize;
            samples[index.clamp(1, samples.len()) - 1]
        };
        Stats {
            count: samples.len(),
            min: samples[0],
            median: rank(0.5),
            p90: rank(0.9),
            p99: rank(0.99),
        }
    }
}

/// The ratio of two measurements' medians within each round, summarised as median and range:
/// how much of a ratio is the code and how much the machine's mood.
fn per_round_ratios(numerator: &[Vec<Duration>], denominator: &[Vec<Duration>]) -> String {
    // A round can hold none of a rarer measurement (30 bursts over 50 rounds): skipped.
    let mut ratios: Vec<f64> = numerator
        .iter()
        .zip(denominator)
        .filter(|(top, bottom)| !top.is_empty() && !bottom.is_empty())
        .map(|(top, bottom)| {
            let top = Stats::from_samples(top.clone()).median;
            let bottom = Stats::from_samples(bottom.clone()).median;
            top.as_secs_f64() / bottom.as_secs_f64()
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    if ratios.is_empty() {
        return "no round measured both".to_owned();
    }
    format!(
        "per-round {:.2}× (range {:.2}×–{:.2}× over {} rounds)",
        ratios[ratios.len().div_ceil(2) - 1],
        ratios[0],
        ratios[ratios.len() - 1],
        ratios.len()
    )
}

/// (b) − ((r) + (t)) within each round, from each round's medians, summarised as median and range.
fn per_round_over_floor(
    ours: &[Vec<Duration>],
    echo: &[Vec<Duration>],
    stdio: &[Vec<Duration>],
) -> String {
    let median = |samples: &Vec<Duration>| Stats::from_samples(samples.clone()).median;
    let mut over: Vec<f64> = ours
        .iter()
        .zip(echo)
        .zip(stdio)
        .filter(|((ours, echo), stdio)| !ours.is_empty() && !echo.is_empty() && !stdio.is_empty())
        .map(|((ours, echo), stdio)| {
            (median(ours).as_secs_f64() - median(echo).as_secs_f64() - median(stdio).as_secs_f64())
                * 1e6
        })
        .collect();
    over.sort_by(f64::total_cmp);
    if over.is_empty() {
        return "no round measured all three".to_owned();
    }
    format!(
        "per-round (b) − floor {:+.1} µs, range {:+.1} to {:+.1} µs over {} rounds",
        over[over.len().div_ceil(2) - 1],
        over[0],
        over[over.len() - 1],
        over.len()
    )
}

fn render_report(
    settings: &Settings,
    samples: &[Vec<Vec<Duration>>],
    wall: Duration,
    load_before: &str,
    load_after: &str,
) -> String {
    let index = |kind: Kind| {
        Kind::ALL
            .iter()
            .position(|&each| each == kind)
            .expect("every kind is in ALL")
    };
    let stats: Vec<Stats> = samples
        .iter()
        .map(|rounds| Stats::from_samples(rounds.concat()))
        .collect();
    let baseline = &stats[index(Kind::DirectRmcp)];
    let ratio = |stats: &Stats| stats.median.as_secs_f64() / baseline.median.as_secs_f64();

    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    line(String::new());
    line("## tool-cli call latency".to_owned());
    line(String::new());
    line("| measurement | runs | min | median | p90 | p99 | median ÷ (c) |".to_owned());
    line("|---|--:|--:|--:|--:|--:|--:|".to_owned());
    for (kind, stats) in Kind::ALL.iter().zip(&stats) {
        line(format!(
            "| {} | {} | {} | {} | {} | {} | {:.2}× |",
            kind.label(),
            stats.count,
            human(stats.min),
            human(stats.median),
            human(stats.p90),
            human(stats.p99),
            ratio(stats),
        ));
    }
    line(String::new());
    let kept_alive = &stats[index(Kind::KeptAliveCall)];
    let process_call = &stats[index(Kind::ProcessCall)];
    let bridge_info = &stats[index(Kind::KeptAliveBridgeInfo)];
    let version = &stats[index(Kind::ProcessVersion)];
    let quiet = &stats[index(Kind::KeptAliveCallQuiet)];
    let added = |stats: &Stats| human(stats.median.saturating_sub(baseline.median));
    let rounds = |kind: Kind| samples[index(kind)].as_slice();
    line(format!(
        "- (b) ÷ (c), medians: **{:.2}×** ({}); the daemon adds {} per call over direct rmcp, \
         of which {} is the HTTP + auth + JSON-RPC floor measured by (f); without the per-call \
         log line, (g), it adds {}.",
        ratio(kept_alive),
        per_round_ratios(rounds(Kind::KeptAliveCall), rounds(Kind::DirectRmcp)),
        added(kept_alive),
        human(bridge_info.median),
        added(quiet),
    ));
    if let Some(exe) = std::env::var_os("TOOL_CLI_BENCH_DAEMON_G") {
        line(format!(
            "- A/B: (g) ran `{}`; (b) ÷ (g), medians: **{:.3}×** ({}).",
            PathBuf::from(exe).display(),
            kept_alive.median.as_secs_f64() / quiet.median.as_secs_f64(),
            per_round_ratios(
                rounds(Kind::KeptAliveCall),
                rounds(Kind::KeptAliveCallQuiet)
            ),
        ));
    }
    let session = &stats[index(Kind::KeptAliveSessionCall)];
    let routed = &stats[index(Kind::KeptAliveRoutedCall)];
    let over_b = |stats: &Stats| {
        let delta = stats.median.as_secs_f64() - kept_alive.median.as_secs_f64();
        format!("{:+.1} µs", delta * 1e6)
    };
    line(format!(
        "- Orchestration stages, medians against (b): a session adds {} (h), a session and \
         routing {} (i).",
        over_b(session),
        over_b(routed),
    ));
    line(format!(
        "- (a) ÷ (c), medians: **{:.2}×** ({}); a whole `tool-cli` call adds {} over direct \
         rmcp, of which {} is starting the client process at all, per (d).",
        ratio(process_call),
        per_round_ratios(rounds(Kind::ProcessCall), rounds(Kind::DirectRmcp)),
        added(process_call),
        human(version.median),
    ));
    let big_describe = &stats[index(Kind::BigDescribeTool)];
    let describe = &stats[index(Kind::DescribeTool)];
    line(format!(
        "- P6: `listServers` with 10,000 tools (k) {} median (target ≤ 100 µs); `describeTool` \
         among 10,000 tools (l) ÷ among 6 (m), medians: **{:.2}×** ({}) (flat: ≈ 1×).",
        human(stats[index(Kind::BigListServers)].median),
        big_describe.median.as_secs_f64() / describe.median.as_secs_f64(),
        per_round_ratios(rounds(Kind::BigDescribeTool), rounds(Kind::DescribeTool)),
    ));
    let echo = &stats[index(Kind::FloorHttpEcho)];
    let stdio = &stats[index(Kind::FloorDirectStdio)];
    let floor = echo.median + stdio.median;
    let micros = |duration: Duration| duration.as_secs_f64() * 1e6;
    line(format!(
        "- **P2**: floor = (r) {} + (t) {} = {}; ours (b) {}, (g) {}; **ours − floor: (b) {:+.1} µs, \
         (g) {:+.1} µs** ({}; target ≤ 30 µs). (c) rmcp − (t): {:+.1} µs is rmcp's own cost.",
        human(echo.median),
        human(stdio.median),
        human(floor),
        human(kept_alive.median),
        human(quiet.median),
        micros(kept_alive.median) - micros(floor),
        micros(quiet.median) - micros(floor),
        per_round_over_floor(
            rounds(Kind::KeptAliveCall),
            rounds(Kind::FloorHttpEcho),
            rounds(Kind::FloorDirectStdio)
        ),
        micros(baseline.median) - micros(stdio.median),
    ));
    let noop = &stats[index(Kind::ProcessNoop)];
    line(format!(
        "- P1: (a) ÷ (j), medians: **{:.2}×** ({}) a whole `tool-cli` call against spawning a \
         process that does nothing (target ≤ 1.3×).",
        process_call.median.as_secs_f64() / noop.median.as_secs_f64(),
        per_round_ratios(rounds(Kind::ProcessCall), rounds(Kind::ProcessNoop)),
    ));
    line(String::new());
    line(format!(
        "Timed: {} calls each of (b), (c), (f), (g), (h), (i), (k), (l), (m), (r), (t) and {} runs each of (a), (d), (e), and (j), interleaved \
         in {} rounds after {} / {} warm-up iterations; {:.1} s of timing.",
        settings.calls,
        settings.processes,
        settings.rounds,
        settings.warmup_calls(),
        settings.warmup_processes(),
        wall.as_secs_f64(),
    ));
    line(format!(
        "Machine: {} CPUs ({}), `{}`; load average before {}, after {}.",
        std::thread::available_parallelism().map_or(0, usize::from),
        cpu_model(),
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|text| format!("Linux {}", text.trim()))
            .unwrap_or_else(|_| std::env::consts::OS.to_owned()),
        load_before,
        load_after,
    ));
    line(format!(
        "Command: `TOOL_CLI_BENCH_CALLS={} TOOL_CLI_BENCH_PROCESSES={} TOOL_CLI_BENCH_ROUNDS={} \
         cargo bench -p tool-cli-daemon --bench call_latency` (or `scripts/bench.sh`).",
        settings.calls, settings.processes, settings.rounds,
    ));
    out
}

/// A duration in µs below a millisecond and in ms above.
fn human(duration: Duration) -> String {
    let micros = duration.as_secs_f64() * 1e6;
    if micros < 1000.0 {
        format!("{micros:.1} µs")
    } else {
        format!("{:.2} ms", micros / 1000.0)
    }
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, model)| model.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}
