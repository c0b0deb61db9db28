//! `search-bench`: query latency (p50/p99), index build time and memory at 1k and 10k tools.
//!
//! Usage: `cargo run --release -p tool-cli-search --bin search-bench`. The catalog is the
//! evaluation catalog (`eval/peers.json` + `eval/catalog.json`, ~2,000 tools), cut to 1,000 tools
//! or replicated under renamed servers to 10,000 (the vocabulary stays that of real tool text);
//! the queries are the 606 labeled requests. Memory is measured by a counting allocator: the
//! bytes still allocated after a build, minus those before. Prints a table; asserts nothing.
//! Build times are the minimum of seven runs (the least disturbed by other processes on a shared
//! machine) and the median; "build CPU" is the CPU time one build used (all threads, mean of the
//! seven), which other processes cannot inflate the way they inflate wall time. The one-server
//! rebuild is the minimum of five. `--builds N` only builds the 10k index N times, for a profiler.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use tool_cli_search::doc::ToolDoc;
use tool_cli_search::eval;
use tool_cli_search::index::Index;
use tool_cli_search::search::Query;

/// Counts live heap bytes, to measure what an index holds.
struct CountingAllocator;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to the system allocator with the caller's arguments unchanged;
// the counter is only bookkeeping.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(new_size, Ordering::Relaxed);
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn group_by_server(docs: &[ToolDoc]) -> Vec<(String, Vec<ToolDoc>)> {
    let mut servers: Vec<(String, Vec<ToolDoc>)> = Vec::new();
    for doc in docs {
        match servers.iter_mut().find(|(name, _)| *name == doc.server) {
            Some((_, tools)) => tools.push(doc.clone()),
            None => servers.push((doc.server.clone(), vec![doc.clone()])),
        }
    }
    servers
}

/// `count` tools: the catalog cut, or repeated with servers renamed `name~2`, `name~3`, ...
fn catalog_of(docs: &[ToolDoc], count: usize) -> Vec<ToolDoc> {
    (0..)
        .flat_map(|copy| {
            docs.iter().map(move |doc| {
                let mut doc = doc.clone();
                if copy > 0 {
                    doc.server = format!("{}~{}", doc.server, copy + 1);
                }
                doc
            })
        })
        .take(count)
        .collect()
}

/// CPU time this process has used (all threads, user + system), from `/proc/self/stat`, so a
/// build's cost can be told apart from the time other processes on a busy machine took from it.
/// Clock ticks are 10 ms (`CLK_TCK` = 100 on Linux); summed over several builds that is precise
/// enough. `None` off Linux.
fn process_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th.
    let after_name = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

fn percentile(sorted: &[Duration], share: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * share).round() as usize;
    sorted[at]
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

fn main() -> anyhow::Result<()> {
    let data_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("eval");
    let read = |name: &str| {
        let path = data_dir.join(name);
        std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
    };
    let mut catalogs = eval::parse_catalog(&read("peers.json")?)?;
    catalogs.extend(eval::parse_catalog(&read("catalog.json")?)?);
    let docs = eval::tool_docs(&catalogs);
    let mut requests = eval::parse_requests(&read("dev.tsv")?)?;
    requests.extend(eval::parse_requests(&read("test.tsv")?)?);
    // `--builds N`: only build the 10k index N times (for profilers), print nothing else.
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    if let Some(position) = arguments.iter().position(|a| a == "--builds") {
        let times: usize = arguments
            .get(position + 1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(10);
        let servers = group_by_server(&catalog_of(&docs, 10_000));
        for _ in 0..times {
            std::hint::black_box(Index::new().with_servers(servers.clone()));
        }
        return Ok(());
    }
    // Warm the constant tables (stop words, concepts) so the first build does not pay for them.
    let _ = Index::new().with_server("warm", docs[..10].to_vec());

    println!(
        "| tools  | build min / median  | build CPU | rebuild one server | memory      | per 1k tools | query p50 | query p99 |"
    );
    println!(
        "|--------|---------------------|-----------|--------------------|-------------|--------------|-----------|-----------|"
    );
    for count in [1_000, 10_000] {
        let catalog = catalog_of(&docs, count);
        let servers = group_by_server(&catalog);

        let mut builds = Vec::new();
        let mut build_cpu = Duration::ZERO;
        for _ in 0..7 {
            let input = servers.clone();
            let cpu_before = process_cpu_time();
            let started = Instant::now();
            let index = Index::new().with_servers(input);
            builds.push(started.elapsed());
            if let (Some(before), Some(after)) = (cpu_before, process_cpu_time()) {
                build_cpu += after.saturating_sub(before);
            }
            drop(index);
        }
        builds.sort();

        let before = LIVE_BYTES.load(Ordering::Relaxed);
        let index = Index::new().with_servers(servers.clone());
        let memory = LIVE_BYTES.load(Ordering::Relaxed).saturating_sub(before);

        // Replacing one server's tools in the full index (a `list_changed`).
        let (name, tools) = servers
            .iter()
            .find(|(name, _)| name == "github")
            .cloned()
            .unwrap_or_else(|| servers[0].clone());
        let mut rebuilds = Vec::new();
        for _ in 0..5 {
            let input = tools.clone();
            let started = Instant::now();
            let updated = index.with_server(&name, input);
            rebuilds.push(started.elapsed());
            drop(updated);
        }
        rebuilds.sort();

        let mut latencies = Vec::new();
        for _ in 0..3 {
            for request in &requests {
                let started = Instant::now();
                let outcome = index.search(&Query::new(&request.query));
                latencies.push(started.elapsed());
                std::hint::black_box(outcome.ok());
            }
        }
        latencies.sort();

        println!(
            "| {:>6} | {:>6.1} / {:>6.1} ms | {:>6.0} ms | {:>15.2} ms | {:>7.1} MiB | {:>8.2} MiB | {:>6.0} us | {:>6.0} us |",
            index.len(),
            builds[0].as_secs_f64() * 1000.0,
            builds[3].as_secs_f64() * 1000.0,
            build_cpu.as_secs_f64() * 1000.0 / 7.0,
            rebuilds[0].as_secs_f64() * 1000.0,
            memory as f64 / (1024.0 * 1024.0),
            memory as f64 / (1024.0 * 1024.0) / (index.len() as f64 / 1000.0),
            micros(percentile(&latencies, 0.5)),
            micros(percentile(&latencies, 0.99)),
        );
    }
    Ok(())
}
