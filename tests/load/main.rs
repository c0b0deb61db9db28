//! `tool-cli-load`: load and slow-loris harness for `tool-cli-daemon`, printing a table.
//!
//! Run it against release builds (the daemon and the fault-injection server are found next to
//! this binary, or in `TOOL_CLI_BIN_DIR`):
//!
//! ```text
//! cargo build --release -p tool-cli-daemon -p tool-cli-fault-server
//! cargo run --release -p tool-cli-tests --bin tool-cli-load
//! cargo run --release -p tool-cli-tests --bin tool-cli-load -- --concurrency 200 --total 2000
//! ```
//!
//! Phase 1 starts a daemon whose only server is the fault fixture (`echo`, which answers
//! instantly), opens `--concurrency` keep-alive connections (default 1,000) each on its own
//! thread, and sends `--total` `callTool`s (default 10,000) spread over them, every one with a
//! unique request id and a unique nonce. It checks that every id got exactly one response and
//! that the response carries that request's nonce, and reports throughput, p50/p99/max latency
//! and the daemon's `VmRSS`, sampled every 250 ms throughout and for 2 s after (the samples are
//! printed so a plateau, or a climb, is visible).
//!
//! Phase 2 opens `--slow-loris` connections (default 500) that send a partial request head and
//! then one more header line per second, never finishing it, reconnecting whenever the daemon
//! drops them; meanwhile a well-behaved client makes sequential calls, each on a fresh
//! connection, for `--slow-loris-seconds` (default 20). It reports the client's p50/p99/max, how
//! many slow connections the daemon dropped and after how long (its header-read timeout), and
//! the daemon's `VmRSS` meanwhile. The run fails with exit code 1 when any call is lost,
//! duplicated or answered with the wrong nonce, or when the client's p99 under slow-loris is 1 s
//! or more.
//!
//! Phase 3, with `--soak-seconds S` (default 0: skipped), is the soak of `soak.rs`: clients
//! calling for S seconds while faults are injected into a second server, then a SIGKILL of the
//! daemon and a count of the processes that outlived it (none may).
//!
//! `--short` is the mode `.ci/run` runs (about 45 s, on debug builds too): 2,000 calls over 100
//! connections, 50 slow-loris connections for 5 s and a 20 s soak with 20 clients. The long
//! modes (the defaults, `--soak-seconds 300 --soak-clients 50`) are for benchmarks.
//!
//! Everything is on loopback; every loop is bounded by a count or a deadline.

mod soak;

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_cli_tests::{Daemon, fault_server_bin, random_hex, read_http_response, vm_rss_kib};

/// Stack of each client thread: they only format and parse small messages.
const THREAD_STACK_BYTES: usize = 256 * 1024;

/// How often the daemon's resident memory is sampled.
const RSS_SAMPLE_INTERVAL: Duration = Duration::from_millis(250);

/// How long sampling goes on after phase 1's last answer.
const RSS_SETTLE: Duration = Duration::from_secs(2);

/// The bound on the well-behaved client's p99 latency while slow-loris connections are open.
const SLOW_LORIS_P99_BOUND: Duration = Duration::from_secs(1);

/// How long one request may take before the harness gives up on it.
const IO_TIMEOUT: Duration = Duration::from_secs(60);

struct Options {
    concurrency: usize,
    total: usize,
    slow_loris: usize,
    slow_loris_seconds: u64,
    soak: soak::SoakOptions,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        concurrency: 1000,
        total: 10_000,
        slow_loris: 500,
        slow_loris_seconds: 20,
        soak: soak::SoakOptions {
            seconds: 0,
            clients: 50,
        },
    };
    let mut arguments = std::env::args().skip(1);
    while let Some(flag) = arguments.next() {
        let mut value = |flag: &str| -> Result<u64, String> {
            let text = arguments
                .next()
                .ok_or_else(|| format!("{flag} needs a number"))?;
            text.parse()
                .map_err(|_| format!("{flag} got {text:?}, expected a whole number"))
        };
        match flag.as_str() {
            "--concurrency" => options.concurrency = value("--concurrency")? as usize,
            "--total" => options.total = value("--total")? as usize,
            "--slow-loris" => options.slow_loris = value("--slow-loris")? as usize,
            "--slow-loris-seconds" => options.slow_loris_seconds = value("--slow-loris-seconds")?,
            "--soak-seconds" => options.soak.seconds = value("--soak-seconds")?,
            "--soak-clients" => options.soak.clients = value("--soak-clients")?.max(1) as usize,
            "--short" => {
                options.concurrency = 100;
                options.total = 2_000;
                options.slow_loris = 50;
                options.slow_loris_seconds = 5;
                options.soak = soak::SoakOptions {
                    seconds: 20,
                    clients: 20,
                };
            }
            "-h" | "--help" => {
                return Err(
                    "usage: tool-cli-load [--short] [--concurrency N] [--total N] \
                            [--slow-loris N] [--slow-loris-seconds S] [--soak-seconds S] \
                            [--soak-clients N]"
                        .to_owned(),
                );
            }
            other => return Err(format!("unknown flag {other:?}; try --help")),
        }
    }
    if options.concurrency == 0 || options.total < options.concurrency {
        return Err("--total must be at least --concurrency, which must be at least 1".into());
    }
    Ok(options)
}

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("tool-cli-load: {message}");
            return ExitCode::from(2);
        }
    };
    raise_descriptor_limit();
    let daemon = Daemon::start(json!({"mcpServers": {"echo": {
        "command": fault_server_bin(),
        // The bulkhead must not be what is measured: every connection may have a call in flight.
        "maxConcurrent": options.concurrency,
        "maxQueued": options.concurrency,
    }}}));
    let mut report = Report::default();
    let mut ok = true;

    eprintln!(
        "phase 1: {} callTool over {} connections…",
        options.total, options.concurrency
    );
    let load = run_load(&daemon, &options);
    ok &= load.verify(&mut report, options.total);

    eprintln!(
        "phase 2: {} slow-loris connections for {} s…",
        options.slow_loris, options.slow_loris_seconds
    );
    let loris = run_slow_loris(&daemon, &options);
    ok &= loris.verify(&mut report);
    drop(daemon);

    if options.soak.seconds > 0 {
        eprintln!(
            "phase 3: soak, {} clients for {} s with faults injected, then SIGKILL…",
            options.soak.clients, options.soak.seconds
        );
        ok &= soak::run(&options.soak, &mut report);
    }

    report.print();
    println!(
        "\nVmRSS samples (KiB, every {RSS_SAMPLE_INTERVAL:?}), phase 1 and {RSS_SETTLE:?} after:"
    );
    println!("{}", format_samples(&load.rss_samples));
    println!("VmRSS samples (KiB), phase 2:");
    println!("{}", format_samples(&loris.rss_samples));
    if ok {
        println!("\nresult: PASS");
        ExitCode::SUCCESS
    } else {
        println!("\nresult: FAIL");
        ExitCode::FAILURE
    }
}

/// 1,000 threads each hold a socket; make sure the soft descriptor limit allows it.
fn raise_descriptor_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max.min(65_536);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// Samples the daemon's `VmRSS` every [`RSS_SAMPLE_INTERVAL`] on its own thread.
struct RssSampler {
    running: Arc<AtomicBool>,
    thread: thread::JoinHandle<Vec<u64>>,
}

impl RssSampler {
    fn start(pid: u32) -> RssSampler {
        let running = Arc::new(AtomicBool::new(true));
        let flag = Arc::clone(&running);
        let thread = thread::spawn(move || {
            let mut samples = vec![vm_rss_kib(pid)];
            while flag.load(Ordering::Relaxed) {
                thread::sleep(RSS_SAMPLE_INTERVAL);
                samples.push(vm_rss_kib(pid));
            }
            samples
        });
        RssSampler { running, thread }
    }

    fn stop(self) -> Vec<u64> {
        self.running.store(false, Ordering::Relaxed);
        self.thread.join().expect("sampler thread")
    }
}

// ---------------------------------------------------------------------------------------------
// Phase 1: many concurrent calls.

/// What one request came back as.
enum Outcome {
    /// The right id and the right nonce.
    Ok,
    /// A JSON-RPC error, by code.
    RpcError(i64),
    /// Answered with another request's id or nonce, or malformed.
    Wrong(String),
    /// The connection failed before an answer.
    Io(String),
}

struct Load {
    elapsed: Duration,
    latencies: Vec<Duration>,
    /// Request id → every outcome recorded for it (exactly one is expected).
    outcomes: HashMap<u64, Vec<Outcome>>,
    rss_samples: Vec<u64>,
}

fn call_body(id: u64, nonce: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": id, "method": "callTool",
        "params": {"server": "echo", "tool": "echo", "arguments": {"nonce": nonce}},
    }))
    .expect("serialize")
}

/// One keep-alive HTTP/1.1 connection to the daemon.
struct Connection {
    reader: BufReader<TcpStream>,
    head: String,
}

impl Connection {
    fn open(daemon: &Daemon) -> std::io::Result<Connection> {
        let stream = TcpStream::connect(("127.0.0.1", daemon.port))?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        stream.set_nodelay(true)?;
        let head = format!(
            "POST / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Authorization: Bearer {}\r\n",
            daemon.port, daemon.token
        );
        Ok(Connection {
            reader: BufReader::new(stream),
            head,
        })
    }

    fn exchange(&mut self, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        let mut request = self.head.clone().into_bytes();
        request.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        request.extend_from_slice(body);
        let stream = self.reader.get_mut();
        stream.write_all(&request)?;
        stream.flush()?;
        let response = read_http_response(&mut self.reader)?;
        Ok((response.status, response.body))
    }

    fn open_again(previous: &Connection) -> std::io::Result<Connection> {
        let address = previous.reader.get_ref().peer_addr()?;
        let stream = TcpStream::connect(address)?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        stream.set_nodelay(true)?;
        Ok(Connection {
            reader: BufReader::new(stream),
            head: previous.head.clone(),
        })
    }
}

fn judge(id: u64, nonce: &str, status: u16, body: &[u8]) -> Outcome {
    if status != 200 {
        return Outcome::Wrong(format!("HTTP {status}"));
    }
    let Ok(answer) = serde_json::from_slice::<Value>(body) else {
        return Outcome::Wrong(format!("not JSON: {}", String::from_utf8_lossy(body)));
    };
    if answer["id"].as_u64() != Some(id) {
        return Outcome::Wrong(format!("id {} for request {id}", answer["id"]));
    }
    if let Some(code) = answer["error"]["code"].as_i64() {
        return Outcome::RpcError(code);
    }
    let text = answer["result"]["content"][0]["text"].as_str();
    if text != Some(nonce) {
        return Outcome::Wrong(format!("nonce {text:?} for {nonce:?}"));
    }
    Outcome::Ok
}

fn run_load(daemon: &Daemon, options: &Options) -> Load {
    let sampler = RssSampler::start(daemon.pid());

    let next_id = Arc::new(AtomicU64::new(1));
    let remaining = Arc::new(AtomicUsize::new(options.total));
    let barrier = Arc::new(Barrier::new(options.concurrency + 1));
    let run_tag = random_hex(4);
    let mut workers = Vec::with_capacity(options.concurrency);
    for _ in 0..options.concurrency {
        let next_id = Arc::clone(&next_id);
        let remaining = Arc::clone(&remaining);
        let barrier = Arc::clone(&barrier);
        let run_tag = run_tag.clone();
        let mut connection = Connection::open(daemon).expect("connect to the daemon");
        let worker = thread::Builder::new()
            .stack_size(THREAD_STACK_BYTES)
            .spawn(move || {
                let mut results: Vec<(u64, Outcome, Duration)> = Vec::new();
                barrier.wait();
                // Each thread takes calls from the shared budget until it is spent, so the
                // total is exact whatever the split.
                while remaining
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                    .is_ok()
                {
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    let nonce = format!("{run_tag}-{id}");
                    let body = call_body(id, &nonce);
                    let started = Instant::now();
                    let outcome = match connection.exchange(&body) {
                        Ok((status, body)) => judge(id, &nonce, status, &body),
                        Err(err) => Outcome::Io(err.to_string()),
                    };
                    if matches!(outcome, Outcome::Io(_)) {
                        // Start over on a fresh connection for the next call.
                        if let Ok(fresh) = Connection::open_again(&connection) {
                            connection = fresh;
                        }
                    }
                    results.push((id, outcome, started.elapsed()));
                }
                results
            })
            .expect("spawn a client thread");
        workers.push(worker);
    }
    barrier.wait();
    let started = Instant::now();
    let mut outcomes: HashMap<u64, Vec<Outcome>> = HashMap::new();
    let mut latencies = Vec::with_capacity(options.total);
    for worker in workers {
        for (id, outcome, latency) in worker.join().expect("client thread") {
            outcomes.entry(id).or_default().push(outcome);
            latencies.push(latency);
        }
    }
    let elapsed = started.elapsed();
    // A few more seconds of samples after the last answer show whether memory settles.
    thread::sleep(RSS_SETTLE);
    let rss_samples = sampler.stop();
    Load {
        elapsed,
        latencies,
        outcomes,
        rss_samples,
    }
}

impl Load {
    fn verify(&self, report: &mut Report, total: usize) -> bool {
        let mut ok = 0usize;
        let mut rpc_errors: HashMap<i64, usize> = HashMap::new();
        let mut wrong = Vec::new();
        let mut io = Vec::new();
        let mut duplicated = 0usize;
        for (id, outcomes) in &self.outcomes {
            if outcomes.len() != 1 {
                duplicated += 1;
            }
            for outcome in outcomes {
                match outcome {
                    Outcome::Ok => ok += 1,
                    Outcome::RpcError(code) => *rpc_errors.entry(*code).or_default() += 1,
                    Outcome::Wrong(what) => wrong.push(format!("id {id}: {what}")),
                    Outcome::Io(what) => io.push(format!("id {id}: {what}")),
                }
            }
        }
        let missing = total.saturating_sub(self.outcomes.len());
        let seconds = self.elapsed.as_secs_f64();
        let mut latencies = self.latencies.clone();
        latencies.sort_unstable();
        let first = self.rss_samples.first().copied().unwrap_or(0);
        let peak = self.rss_samples.iter().copied().max().unwrap_or(0);
        let last = self.rss_samples.last().copied().unwrap_or(0);

        report.row("load", "calls sent", total.to_string());
        report.row("load", "answered with own nonce", ok.to_string());
        report.row(
            "load",
            "JSON-RPC errors",
            format!("{} {rpc_errors:?}", rpc_errors.values().sum::<usize>()),
        );
        report.row("load", "wrong id/nonce", wrong.len().to_string());
        report.row("load", "connection failures", io.len().to_string());
        report.row(
            "load",
            "ids answered ≠ once",
            (duplicated + missing).to_string(),
        );
        report.row("load", "wall time", format!("{seconds:.2} s"));
        report.row(
            "load",
            "throughput",
            format!("{:.0} calls/s", total as f64 / seconds),
        );
        report.row(
            "load",
            "latency p50",
            format_ms(percentile(&latencies, 50.0)),
        );
        report.row(
            "load",
            "latency p99",
            format_ms(percentile(&latencies, 99.0)),
        );
        report.row(
            "load",
            "latency max",
            format_ms(latencies.last().copied().unwrap_or_default()),
        );
        report.row(
            "load",
            "daemon VmRSS first/peak/last",
            format!("{first} / {peak} / {last} KiB"),
        );
        for line in wrong.iter().chain(&io).take(5) {
            eprintln!("  e.g. {line}");
        }
        ok == total && duplicated == 0 && missing == 0
    }
}

// ---------------------------------------------------------------------------------------------
// Phase 2: slow-loris connections and a real client.

struct SlowLoris {
    opened: usize,
    /// How long each slow connection the daemon dropped had been open.
    dropped_after: Vec<Duration>,
    rss_samples: Vec<u64>,
    latencies: Vec<Duration>,
    failures: Vec<String>,
}

fn run_slow_loris(daemon: &Daemon, options: &Options) -> SlowLoris {
    let stop = Arc::new(AtomicBool::new(false));
    let opened = Arc::new(AtomicUsize::new(0));
    let dropped_after = Arc::new(Mutex::new(Vec::new()));
    let sampler = RssSampler::start(daemon.pid());
    let port = daemon.port;
    let mut lorises = Vec::with_capacity(options.slow_loris);
    for index in 0..options.slow_loris {
        let stop = Arc::clone(&stop);
        let opened = Arc::clone(&opened);
        let dropped_after = Arc::clone(&dropped_after);
        let loris = thread::Builder::new()
            .stack_size(THREAD_STACK_BYTES)
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
                        thread::sleep(Duration::from_millis(100));
                        continue;
                    };
                    opened.fetch_add(1, Ordering::Relaxed);
                    let connected = Instant::now();
                    let head = format!("POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n");
                    let mut alive = stream.write_all(head.as_bytes()).is_ok();
                    let mut line = 0u64;
                    while alive && !stop.load(Ordering::Relaxed) {
                        // One header line a second, in small sleeps so stopping is prompt.
                        for _ in 0..10 {
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                            thread::sleep(Duration::from_millis(100));
                        }
                        line += 1;
                        alive = stream
                            .write_all(format!("X-Loris-{index}-{line}: a\r\n").as_bytes())
                            .is_ok();
                    }
                    if !alive {
                        dropped_after
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(connected.elapsed());
                    }
                }
            })
            .expect("spawn a slow-loris thread");
        lorises.push(loris);
    }
    // Let them all connect before measuring.
    let settle = Instant::now() + Duration::from_secs(10);
    while opened.load(Ordering::Relaxed) < options.slow_loris && Instant::now() < settle {
        thread::sleep(Duration::from_millis(50));
    }

    let mut latencies = Vec::new();
    let mut failures = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(options.slow_loris_seconds);
    let mut id = 1_000_000_000u64;
    while Instant::now() < deadline {
        id += 1;
        let nonce = format!("loris-{id}");
        let started = Instant::now();
        let outcome = Connection::open(daemon).and_then(|mut c| c.exchange(&call_body(id, &nonce)));
        let latency = started.elapsed();
        match outcome {
            Ok((status, body)) => match judge(id, &nonce, status, &body) {
                Outcome::Ok => latencies.push(latency),
                Outcome::RpcError(code) => failures.push(format!("error {code}")),
                Outcome::Wrong(what) | Outcome::Io(what) => failures.push(what),
            },
            Err(err) => failures.push(err.to_string()),
        }
        thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    for loris in lorises {
        let _ = loris.join();
    }
    let mut dropped_after =
        std::mem::take(&mut *dropped_after.lock().unwrap_or_else(|e| e.into_inner()));
    dropped_after.sort_unstable();
    SlowLoris {
        opened: opened.load(Ordering::Relaxed),
        dropped_after,
        rss_samples: sampler.stop(),
        latencies,
        failures,
    }
}

impl SlowLoris {
    fn verify(&self, report: &mut Report) -> bool {
        let mut latencies = self.latencies.clone();
        latencies.sort_unstable();
        let p99 = percentile(&latencies, 99.0);
        report.row(
            "slow-loris",
            "slow connections opened",
            self.opened.to_string(),
        );
        report.row(
            "slow-loris",
            "dropped by the daemon",
            self.dropped_after.len().to_string(),
        );
        report.row(
            "slow-loris",
            "dropped after (p50 / max)",
            format!(
                "{:.1} s / {:.1} s",
                percentile(&self.dropped_after, 50.0).as_secs_f64(),
                self.dropped_after
                    .last()
                    .copied()
                    .unwrap_or_default()
                    .as_secs_f64()
            ),
        );
        report.row(
            "slow-loris",
            "daemon VmRSS peak",
            format!(
                "{} KiB",
                self.rss_samples.iter().max().copied().unwrap_or(0)
            ),
        );
        report.row(
            "slow-loris",
            "client calls ok / failed",
            format!("{} / {}", latencies.len(), self.failures.len()),
        );
        report.row(
            "slow-loris",
            "client p50",
            format_ms(percentile(&latencies, 50.0)),
        );
        report.row("slow-loris", "client p99 (bound 1 s)", format_ms(p99));
        report.row(
            "slow-loris",
            "client max",
            format_ms(latencies.last().copied().unwrap_or_default()),
        );
        for failure in self.failures.iter().take(5) {
            eprintln!("  e.g. {failure}");
        }
        !latencies.is_empty() && self.failures.is_empty() && p99 < SLOW_LORIS_P99_BOUND
    }
}

// ---------------------------------------------------------------------------------------------
// Reporting.

#[derive(Default)]
struct Report {
    rows: Vec<(String, String, String)>,
}

impl Report {
    fn row(&mut self, phase: &str, metric: &str, value: String) {
        self.rows.push((phase.to_owned(), metric.to_owned(), value));
    }

    fn print(&self) {
        let width = |pick: fn(&(String, String, String)) -> &String, title: &str| {
            self.rows
                .iter()
                .map(|row| pick(row).chars().count())
                .chain([title.len()])
                .max()
                .unwrap_or(0)
        };
        let phase = width(|row| &row.0, "phase");
        let metric = width(|row| &row.1, "metric");
        println!("| {:phase$} | {:metric$} | value", "phase", "metric");
        println!("|-{}-|-{}-|------", "-".repeat(phase), "-".repeat(metric));
        for (p, m, v) in &self.rows {
            println!("| {p:phase$} | {m:metric$} | {v}");
        }
    }
}

fn percentile(sorted: &[Duration], percent: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((percent / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn format_ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}

fn format_samples(samples: &[u64]) -> String {
    samples
        .chunks(12)
        .map(|chunk| {
            chunk
                .iter()
                .map(|kib| format!("{kib:>7}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}
