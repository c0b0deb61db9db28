//! Phase 3: the soak. `--soak-clients` threads (default 50) call for `--soak-seconds` while
//! faults are injected into a second server: crashes (the server exits under its callers),
//! hangs (cut off by a short call timeout), garbage lines on stdout, and processes that detach
//! into a new session and hold the server's stdout. Every request must get exactly one
//! well-formed answer under its own id (the echo server's with its own nonce); the daemon's
//! `VmRSS` and open descriptors are read before and after; then the daemon is SIGKILLed and no
//! process of any server's tree, detached ones included, may survive it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, KillMarkedOnDrop, eventually, fault_server_bin, processes_with_marker, random_hex,
    unique_marker, vm_rss_kib,
};

use crate::{Connection, Report, THREAD_STACK_BYTES, format_ms, percentile};

/// One request in this many goes to the fault server.
const FAULT_EVERY: u64 = 5;

/// How often the fault server is restarted under its callers.
const FORCED_RESTART_EVERY: Duration = Duration::from_secs(1);

/// The call timeout of a `hang` (the answer is a timeout error after it).
const HANG_TIMEOUT_MS: u64 = 300;

/// How long descriptors may take to settle back after the clients hang up.
const SETTLE: Duration = Duration::from_secs(10);

/// Descriptors the daemon may hold beyond its count before the soak (a restarted server's pipes
/// replace the old ones; a handful of slack for timers and the log).
const FD_SLACK: usize = 16;

pub(crate) struct SoakOptions {
    pub(crate) seconds: u64,
    pub(crate) clients: usize,
}

/// What the fault server is asked, in turn. Half are plain calls (`chaos-echo`), so that the
/// server's own breaker stays closed and faults keep reaching it; each faulty tool's breaker
/// still opens and sheds its calls, as it should.
const FAULTS: [&str; 8] = [
    "crash",
    "chaos-echo",
    "hang",
    "chaos-echo",
    "garbage",
    "chaos-echo",
    "detach",
    "chaos-echo",
];

/// What one request was and what came back.
struct Sent {
    id: u64,
    kind: &'static str,
    outcome: Result<Answer, String>,
    latency: Duration,
}

enum Answer {
    /// A result (for echo: with the request's own nonce).
    Result,
    /// A JSON-RPC error, by code.
    Error(i64),
    /// The answer of another request, or not a JSON-RPC response.
    Wrong(String),
}

/// Runs the soak; adds its rows to `report` and says whether it held.
pub(crate) fn run(options: &SoakOptions, report: &mut Report) -> bool {
    let marker = unique_marker("soak");
    let _cleanup = KillMarkedOnDrop(marker.clone());
    let mut daemon = Daemon::start(json!({"mcpServers": {
        "echo": {
            "command": fault_server_bin(),
            "maxConcurrent": options.clients,
            "maxQueued": options.clients,
        },
        "chaos": {"command": fault_server_bin(), "timeoutMs": 5_000},
    }}));
    let pid = daemon.pid();
    let rss_before = vm_rss_kib(pid);
    let fds_before = open_fds(pid);

    let deadline = Instant::now() + Duration::from_secs(options.seconds);
    let next_id = Arc::new(AtomicU64::new(1));
    let run_tag = random_hex(4);
    let mut workers = Vec::with_capacity(options.clients);
    for _ in 0..options.clients {
        let next_id = Arc::clone(&next_id);
        let run_tag = run_tag.clone();
        let marker = marker.clone();
        let mut connection = Connection::open(&daemon).expect("connect to the daemon");
        let worker = thread::Builder::new()
            .stack_size(THREAD_STACK_BYTES)
            .spawn(move || {
                let mut sent = Vec::new();
                while Instant::now() < deadline {
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    let (kind, body, nonce) = request(id, &run_tag, &marker);
                    let started = Instant::now();
                    let outcome = connection
                        .exchange(&body)
                        .map_err(|err| err.to_string())
                        .map(|(status, body)| judge(id, nonce.as_deref(), status, &body));
                    if outcome.is_err()
                        && let Ok(fresh) = Connection::open_again(&connection)
                    {
                        connection = fresh;
                    }
                    sent.push(Sent {
                        id,
                        kind,
                        outcome,
                        latency: started.elapsed(),
                    });
                }
                sent
            })
            .expect("spawn a soak client");
        workers.push(worker);
    }
    let started = Instant::now();
    let mut rss_peak = rss_before;
    // Breakers shed a failing server's calls, as they should; restarting the server under its
    // callers every second (which also clears its breakers) keeps the faults coming.
    let mut forced_restarts = 0u64;
    let mut last_restart = Instant::now();
    while workers.iter().any(|worker| !worker.is_finished()) {
        rss_peak = rss_peak.max(vm_rss_kib(pid));
        if Instant::now() < deadline && last_restart.elapsed() >= FORCED_RESTART_EVERY {
            last_restart = Instant::now();
            let restarted = daemon.rpc("restartServer", Some(json!({"server": "chaos"})));
            forced_restarts += u64::from(restarted.is_ok());
        }
        thread::sleep(Duration::from_millis(250));
    }
    let mut sent: Vec<Sent> = Vec::new();
    for worker in workers {
        sent.extend(worker.join().expect("soak client"));
    }
    let elapsed = started.elapsed();
    // The clients have hung up: wait for the daemon to let go of their connections.
    let mut fds_after = open_fds(pid);
    eventually(SETTLE, || {
        fds_after = open_fds(pid);
        fds_after <= fds_before + FD_SLACK
    });
    let rss_after = vm_rss_kib(pid);
    let health = daemon.call("health", Value::Null);
    let restarts: u64 = health["servers"]
        .as_array()
        .map(|servers| servers.iter().filter_map(|s| s["restarts"].as_u64()).sum())
        .unwrap_or(0);

    // Kill the daemon without warning: its reaper must take every server's tree down with it.
    let tree = descendants(pid as i32);
    let detached_alive = processes_with_marker(&marker).len();
    daemon.signal(libc::SIGKILL);
    daemon
        .wait_for_exit(Duration::from_secs(10))
        .expect("a SIGKILLed daemon exits");
    let mut orphans = Vec::new();
    eventually(Duration::from_secs(15), || {
        orphans = tree
            .iter()
            .copied()
            .filter(|&pid| is_alive(pid))
            .chain(processes_with_marker(&marker))
            .collect::<HashSet<i32>>()
            .into_iter()
            .collect();
        orphans.is_empty()
    });

    verify(
        report,
        &sent,
        Facts {
            options,
            elapsed,
            rss: (rss_before, rss_peak, rss_after),
            fds: (fds_before, fds_after),
            restarts,
            forced_restarts,
            tree: tree.len(),
            detached_alive,
            orphans: &orphans,
        },
    )
}

/// Request `id`: mostly an echo with a nonce, every [`FAULT_EVERY`]th a fault.
fn request(id: u64, run_tag: &str, marker: &str) -> (&'static str, Vec<u8>, Option<String>) {
    if !id.is_multiple_of(FAULT_EVERY) {
        let nonce = format!("{run_tag}-{id}");
        let body = json!({
            "jsonrpc": "2.0", "id": id, "method": "callTool",
            "params": {"server": "echo", "tool": "echo", "arguments": {"nonce": nonce}},
        });
        return (
            "echo",
            serde_json::to_vec(&body).expect("serialize"),
            Some(nonce),
        );
    }
    let kind = FAULTS[((id / FAULT_EVERY) % FAULTS.len() as u64) as usize];
    let (tool, arguments, timeout_ms) = match kind {
        "crash" => ("crash", json!({"code": 9}), None),
        "hang" => ("hang", json!({}), Some(HANG_TIMEOUT_MS)),
        "garbage" => ("garbage", json!({"lines": 5}), None),
        // Into a new session, holding the server's stdout, until its tree is killed.
        "detach" => ("detach", json!({"marker": marker}), None),
        _ => ("echo", json!({"nonce": format!("{run_tag}-{id}")}), None),
    };
    let mut params = json!({"server": "chaos", "tool": tool, "arguments": arguments});
    if let Some(timeout_ms) = timeout_ms {
        params["timeoutMs"] = json!(timeout_ms);
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "callTool", "params": params});
    (kind, serde_json::to_vec(&body).expect("serialize"), None)
}

fn judge(id: u64, nonce: Option<&str>, status: u16, body: &[u8]) -> Answer {
    if status != 200 {
        return Answer::Wrong(format!("HTTP {status}"));
    }
    let Ok(answer) = serde_json::from_slice::<Value>(body) else {
        return Answer::Wrong(format!("not JSON: {}", String::from_utf8_lossy(body)));
    };
    if answer["id"].as_u64() != Some(id) {
        return Answer::Wrong(format!("id {} for request {id}", answer["id"]));
    }
    if let Some(code) = answer["error"]["code"].as_i64() {
        return Answer::Error(code);
    }
    if !answer["result"].is_object() {
        return Answer::Wrong(format!("neither result nor error: {answer}"));
    }
    if let Some(nonce) = nonce {
        let text = answer["result"]["content"][0]["text"].as_str();
        if text != Some(nonce) {
            return Answer::Wrong(format!("nonce {text:?} for {nonce:?}"));
        }
    }
    Answer::Result
}

struct Facts<'a> {
    options: &'a SoakOptions,
    elapsed: Duration,
    rss: (u64, u64, u64),
    fds: (usize, usize),
    restarts: u64,
    forced_restarts: u64,
    tree: usize,
    detached_alive: usize,
    orphans: &'a [i32],
}

fn verify(report: &mut Report, sent: &[Sent], facts: Facts<'_>) -> bool {
    let mut answers: HashMap<u64, usize> = HashMap::new();
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    let mut errors: BTreeMap<i64, usize> = BTreeMap::new();
    let mut lost = Vec::new();
    let mut wrong = Vec::new();
    let mut echo_ok = 0usize;
    let mut echo_latencies = Vec::new();
    for request in sent {
        *by_kind.entry(request.kind).or_default() += 1;
        match &request.outcome {
            Err(io) => lost.push(format!("id {} ({}): {io}", request.id, request.kind)),
            Ok(answer) => {
                *answers.entry(request.id).or_default() += 1;
                match answer {
                    Answer::Result if request.kind == "echo" => echo_ok += 1,
                    Answer::Result => {}
                    Answer::Error(code) => *errors.entry(*code).or_default() += 1,
                    Answer::Wrong(what) => {
                        wrong.push(format!("id {} ({}): {what}", request.id, request.kind));
                    }
                }
            }
        }
        if request.kind == "echo" {
            echo_latencies.push(request.latency);
        }
    }
    echo_latencies.sort_unstable();
    let duplicated = answers.values().filter(|&&count| count != 1).count();
    let faults: usize = by_kind
        .iter()
        .filter(|(kind, _)| **kind != "echo")
        .map(|(_, count)| count)
        .sum();
    let seconds = facts.elapsed.as_secs_f64();
    let (rss_before, rss_peak, rss_after) = facts.rss;
    let (fds_before, fds_after) = facts.fds;

    let soak = "soak";
    report.row(
        soak,
        "clients × duration",
        format!("{} × {:.0} s", facts.options.clients, seconds),
    );
    report.row(soak, "requests sent", sent.len().to_string());
    report.row(
        soak,
        "throughput",
        format!("{:.0} requests/s", sent.len() as f64 / seconds),
    );
    report.row(
        soak,
        "fault-server calls (faults and plain)",
        format!("{faults} {by_kind:?}"),
    );
    report.row(
        soak,
        "echo answered with own nonce",
        format!("{echo_ok} of {}", by_kind.get("echo").copied().unwrap_or(0)),
    );
    report.row(soak, "JSON-RPC errors by code", format!("{errors:?}"));
    report.row(soak, "answers lost (no answer)", lost.len().to_string());
    report.row(soak, "wrong id / nonce / shape", wrong.len().to_string());
    report.row(soak, "ids answered more than once", duplicated.to_string());
    report.row(
        soak,
        "server restarts (forced by restartServer)",
        format!("{} ({})", facts.restarts, facts.forced_restarts),
    );
    report.row(
        soak,
        "echo latency p50 / p99",
        format!(
            "{} / {}",
            format_ms(percentile(&echo_latencies, 50.0)),
            format_ms(percentile(&echo_latencies, 99.0))
        ),
    );
    report.row(
        soak,
        "daemon VmRSS before/peak/after",
        format!("{rss_before} / {rss_peak} / {rss_after} KiB"),
    );
    report.row(
        soak,
        "daemon open fds before/after",
        format!("{fds_before} / {fds_after}"),
    );
    report.row(
        soak,
        "processes under the daemon / detached, at SIGKILL",
        format!("{} / {}", facts.tree, facts.detached_alive),
    );
    report.row(
        soak,
        "orphans after SIGKILL",
        facts.orphans.len().to_string(),
    );
    for line in lost.iter().chain(&wrong).take(5) {
        eprintln!("  e.g. {line}");
    }
    if !facts.orphans.is_empty() {
        eprintln!("  orphans: {:?}", facts.orphans);
    }
    let echo_total = by_kind.get("echo").copied().unwrap_or(0);
    lost.is_empty()
        && wrong.is_empty()
        && duplicated == 0
        && echo_ok == echo_total
        && faults > 0
        && facts.restarts > 0
        && facts.orphans.is_empty()
        && fds_after <= fds_before + FD_SLACK
}

/// Open file descriptors of `pid`.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

/// Every live process below `root`, by parent links in `/proc`.
fn descendants(root: i32) -> Vec<i32> {
    let parents: Vec<(i32, i32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, parent_of(pid)?)))
        .collect();
    let mut found = vec![root];
    let mut index = 0;
    while index < found.len() {
        let parent = found[index];
        found.extend(
            parents
                .iter()
                .filter(|(_, ppid)| *ppid == parent)
                .map(|(pid, _)| *pid),
        );
        index += 1;
    }
    found.remove(0);
    found
}

/// The parent pid, from `/proc/PID/stat` (the field after the parenthesised name).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split(' ').nth(1)?.parse().ok()
}

/// Alive and not a zombie.
fn is_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|at| stat[at + 2..].chars().next())
            .is_some_and(|state| state != 'Z')
    })
}
