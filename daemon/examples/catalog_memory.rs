//! What a big catalog costs the daemon in memory (P6 of issue 13): a server of N generated tools
//! against the size of its `tools/list` JSON.
//!
//! It asks the fault-server fixture (`--extra-tools N`) for its tool list directly, over stdio,
//! to learn the catalog's JSON size; then starts two real daemons, one serving the fixture with
//! no extra tools (the baseline) and one with N, waits until the second has discovered every
//! tool and built its search index, and reads each daemon's `VmRSS` from `/proc`. It prints the
//! JSON size, both figures, the difference and its ratio to the JSON size (the target is ≤ 3×).
//!
//! ```sh
//! cargo build --release -p tool-cli-daemon -p tool-cli -p tool-cli-fault-server
//! cargo run --release -p tool-cli-daemon --example catalog_memory -- 10000
//! ```
//!
//! The binaries are found next to this example's directory (`target/<profile>/`) unless
//! `TOOL_CLI_BIN_DIR` says otherwise. This is a measurement, not a test: it asserts nothing.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_cli_tests::{Daemon, fault_server, fault_server_bin};

/// How long the daemon gets to index the catalog for search after discovering it.
const INDEX_TIMEOUT: Duration = Duration::from_secs(120);

fn main() -> ExitCode {
    let tools = match std::env::args().nth(1) {
        None => 10_000,
        Some(text) => match text.parse::<usize>() {
            Ok(count) if (1..=1_000_000).contains(&count) => count,
            _ => {
                eprintln!(
                    "catalog_memory: {text:?} is not a tool count; expected a whole number \
                     from 1 to 1000000"
                );
                return ExitCode::from(2);
            }
        },
    };
    if std::env::var_os("TOOL_CLI_BIN_DIR").is_none() {
        // target/<profile>/examples/catalog_memory → target/<profile>/
        let exe = std::env::current_exe().expect("the path of this program");
        if let Some(profile_dir) = exe.parent().and_then(|examples| examples.parent()) {
            // SAFETY: set before any other thread exists.
            unsafe { std::env::set_var("TOOL_CLI_BIN_DIR", profile_dir) };
        }
    }
    match measure(tools) {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("catalog_memory: error: {err}");
            ExitCode::FAILURE
        }
    }
}

fn measure(tools: usize) -> Result<String, String> {
    let extra = tools.to_string();
    let (json_bytes, listed) = tools_list_size(&["--extra-tools", &extra])?;

    let baseline = Daemon::start(json!({"mcpServers": {"big": fault_server(&[])}}));
    let baseline_total = wait_until_indexed(&baseline, listed - tools)?;
    let baseline_rss = rss_bytes(baseline.pid())?;
    drop(baseline);

    let daemon =
        Daemon::start(json!({"mcpServers": {"big": fault_server(&["--extra-tools", &extra])}}));
    let total = wait_until_indexed(&daemon, listed)?;
    let after_discovery = rss_bytes(daemon.pid())?;
    // One call of a tool (its validator compiled), one describeTool and one listTools page: what
    // a client touching the catalog adds.
    daemon.call(
        "callTool",
        json!({"server": "big", "tool": "extra_4242", "arguments": {"nonce": "n"}}),
    );
    daemon.call(
        "describeTool",
        json!({"server": "big", "tool": "extra_4242"}),
    );
    daemon.call("listTools", json!({"server": "big"}));
    let after_use = rss_bytes(daemon.pid())?;

    let mib = |bytes: usize| bytes as f64 / (1024.0 * 1024.0);
    let ratio = |bytes: usize| bytes as f64 / json_bytes as f64;
    let grown = after_discovery.saturating_sub(baseline_rss);
    let grown_use = after_use.saturating_sub(baseline_rss);
    Ok(format!(
        "catalog: {total} tools ({tools} generated + {} built in; baseline daemon {baseline_total})\n\
         tools/list JSON: {json_bytes} bytes ({:.2} MiB)\n\
         daemon VmRSS, baseline (no generated tools): {:.1} MiB\n\
         daemon VmRSS, after discovery and search index: {:.1} MiB (+{:.1} MiB, {:.2}× the JSON)\n\
         daemon VmRSS, after callTool, describeTool and listTools: {:.1} MiB (+{:.1} MiB, {:.2}× the JSON)\n\
         whole daemon after discovery ÷ JSON: {:.2}× (target for the growth: ≤ 3×)\n",
        listed - tools,
        mib(json_bytes),
        mib(baseline_rss),
        mib(after_discovery),
        mib(grown),
        ratio(grown),
        mib(after_use),
        mib(grown_use),
        ratio(grown_use),
        ratio(after_discovery),
    ))
}

/// The byte size of the fault server's whole `tools/list` result, and how many tools it lists.
fn tools_list_size(args: &[&str]) -> Result<(usize, usize), String> {
    let mut child = Command::new(fault_server_bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|err| format!("cannot start the fault server: {err}"))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "catalog_memory", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    for message in &messages {
        writeln!(stdin, "{message}")
            .map_err(|err| format!("writing to the fault server: {err}"))?;
    }
    let mut line = String::new();
    let answer = loop {
        line.clear();
        let read = stdout
            .read_line(&mut line)
            .map_err(|err| format!("reading the fault server: {err}"))?;
        if read == 0 {
            return Err("the fault server closed its stdout before listing its tools".into());
        }
        let message: Value = serde_json::from_str(&line)
            .map_err(|err| format!("the fault server wrote a line that is not JSON: {err}"))?;
        if message["id"] == 2 {
            break message;
        }
    };
    drop(stdin);
    let _ = child.wait();
    let tools = answer["result"]["tools"]
        .as_array()
        .ok_or("tools/list answered without a tools array")?;
    if answer["result"].get("nextCursor").is_some() {
        return Err(
            "the fault server paged its tool list; run it without --tools-page-size".into(),
        );
    }
    let bytes = serde_json::to_string(&answer["result"]["tools"])
        .expect("JSON encodes")
        .len();
    Ok((bytes, tools.len()))
}

/// Waits until the daemon lists `expected` tools for `big` and its search index holds them all;
/// returns the count.
fn wait_until_indexed(daemon: &Daemon, expected: usize) -> Result<usize, String> {
    let servers = daemon.call("listServers", Value::Null);
    let count = servers["servers"][0]["toolCount"].as_u64().unwrap_or(0) as usize;
    if count != expected {
        return Err(format!(
            "the daemon lists {count} tools for big, expected {expected}: {servers}"
        ));
    }
    let deadline = Instant::now() + INDEX_TIMEOUT;
    loop {
        let found = daemon.call("searchTools", json!({"query": "nonce echo", "limit": 1}));
        if found["catalogSize"].as_u64() == Some(expected as u64) {
            return Ok(count);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the search index did not reach {expected} tools within {INDEX_TIMEOUT:?}: {found}"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A process's resident set, from `/proc/PID/status`.
fn rss_bytes(pid: u32) -> Result<usize, String> {
    let path = format!("/proc/{pid}/status");
    let status =
        std::fs::read_to_string(&path).map_err(|err| format!("cannot read {path}: {err}"))?;
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| {
            value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<usize>()
                .ok()
        })
        .ok_or_else(|| format!("{path} has no VmRSS line"))?;
    Ok(kib * 1024)
}
