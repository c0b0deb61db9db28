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
//!
//! With `--features minilm` and `--minilm DIR` (the model's directory, after
//! `scripts/install-minilm.sh DIR`; or `TOOL_CLI_MINILM_DIR`), it also times the
//! all-MiniLM-L6-v2 embedder: one request at a time (`embed`, p50/p99 over the requests) and a
//! catalog of tools in one `embed_batch`, each with the CPU time it used. `--model-only` skips
//! the index rows; `--max-tokens N` times another truncation. Without the feature or the directory the model rows are skipped with a note.

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
    let model_dir = arguments
        .iter()
        .position(|a| a == "--minilm")
        .and_then(|position| arguments.get(position + 1))
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("TOOL_CLI_MINILM_DIR").map(PathBuf::from));
    if arguments.iter().any(|a| a == "--model-only") {
        return model_rows(model_dir.as_deref(), &docs, &requests);
    }
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
    model_rows(model_dir.as_deref(), &docs, &requests)
}

/// The text the index embeds for a tool when its embedder is a model (`index.rs`): the name
/// twice, the title, the description's first 512 bytes, the parameter names (the index also
/// leaves out parameters most of a server's tools share; that only shortens some texts).
#[cfg(feature = "minilm")]
fn model_text(doc: &ToolDoc) -> String {
    let mut text = format!("{0} {0} ", doc.name);
    if let Some(title) = &doc.title {
        text.push_str(title);
        text.push(' ');
    }
    let mut end = doc.description.len().min(512);
    while !doc.description.is_char_boundary(end) {
        end -= 1;
    }
    text.push_str(&doc.description[..end]);
    for parameter in &doc.parameters {
        text.push(' ');
        text.push_str(&parameter.name);
    }
    text
}

/// The model's rows: query latency (`embed`, one request at a time, as the daemon embeds a
/// query) and catalog throughput (`embed_batch` over 1,000 tools, as the daemon embeds a
/// catalog), each with the CPU time used, since on a shared machine wall time says as much
/// about the other processes as about this one.
#[cfg(feature = "minilm")]
fn model_rows(
    dir: Option<&std::path::Path>,
    docs: &[ToolDoc],
    requests: &[eval::Request],
) -> anyhow::Result<()> {
    use tool_cli_search::embed::Embedder;
    let Some(dir) = dir else {
        println!("\n(model rows skipped: pass --minilm DIR or set TOOL_CLI_MINILM_DIR)");
        return Ok(());
    };
    let weights = std::fs::read(dir.join("model.safetensors")).with_context(|| {
        format!(
            "cannot read model.safetensors in {}; run scripts/install-minilm.sh",
            dir.display()
        )
    })?;
    let vocabulary = std::fs::read_to_string(dir.join("vocab.txt"))
        .with_context(|| format!("cannot read vocab.txt in {}", dir.display()))?;
    let started = Instant::now();
    let mut model = tool_cli_search::minilm::MiniLmEmbedder::from_bytes(&weights, &vocabulary)?;
    let load = started.elapsed();
    // `--max-tokens N`: time another truncation.
    let arguments: Vec<String> = std::env::args().collect();
    if let Some(max_tokens) = arguments
        .iter()
        .position(|a| a == "--max-tokens")
        .and_then(|position| arguments.get(position + 1)?.parse().ok())
    {
        model = model.with_max_tokens(max_tokens);
    }
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    println!(
        "\nmodel: {} layers of {} units, {} tokens at most, {threads} threads available, loaded in {:.0} ms (fingerprint {:016x})\n",
        model.layers(),
        model.dimensions(),
        model.max_tokens(),
        load.as_secs_f64() * 1000.0,
        model.fingerprint()
    );
    println!(
        "| model work (tokens: mean per text)          | wall p50 / p99 or total | CPU per item |"
    );
    println!(
        "|---------------------------------------------|-------------------------|--------------|"
    );
    // Warm up (page in the weights, start the allocator's arenas).
    std::hint::black_box(model.embed_batch(&["warm up", "the model"]));

    let queries: Vec<&str> = requests
        .iter()
        .map(|r| r.query.as_str())
        .take(300)
        .collect();
    let mut latencies = Vec::with_capacity(queries.len());
    let cpu_before = process_cpu_time();
    for query in &queries {
        let started = Instant::now();
        std::hint::black_box(model.embed(query));
        latencies.push(started.elapsed());
    }
    let cpu = process_cpu_time()
        .zip(cpu_before)
        .map(|(a, b)| a.saturating_sub(b));
    latencies.sort();
    let tokens = |texts: &[&str]| {
        texts.iter().map(|t| model.token_count(t)).sum::<usize>() as f64 / texts.len() as f64
    };
    println!(
        "| query (embed), {:>3} requests, {:.0} tokens | {:>7.1} / {:>5.1} ms       | {:>9.1} ms |",
        queries.len(),
        tokens(&queries),
        percentile(&latencies, 0.5).as_secs_f64() * 1000.0,
        percentile(&latencies, 0.99).as_secs_f64() * 1000.0,
        cpu.map_or(f64::NAN, |cpu| cpu.as_secs_f64() * 1000.0
            / queries.len() as f64),
    );

    let texts: Vec<String> = catalog_of(docs, 1_000).iter().map(model_text).collect();
    let borrowed: Vec<&str> = texts.iter().map(String::as_str).collect();

    // As in the daemon: a background pass embeds the 1,000 tools on one thread at nice 10
    // (`with_batch_threads(1)`) while queries arrive one after another, each embedded on one
    // thread (`with_query_threads(1)`) and then searched in a 1,000-tool index. Wall time per
    // query is what a caller waits; nothing is cached (every request is distinct).
    let weights_again = std::fs::read(dir.join("model.safetensors"))?;
    let background =
        tool_cli_search::minilm::MiniLmEmbedder::from_bytes(&weights_again, &vocabulary)?
            .with_batch_threads(1);
    let single = tool_cli_search::minilm::MiniLmEmbedder::from_bytes(&weights_again, &vocabulary)?
        .with_query_threads(1);
    let index = eval::build_index(&catalog_of(docs, 1_000));
    for (label, query_model) in [("1 thread", &single), ("2 threads", &model)] {
        let done = std::sync::atomic::AtomicBool::new(false);
        let latencies = std::thread::scope(|scope| {
            scope.spawn(|| {
                lower_priority();
                let mut rounds = 0;
                while !done.load(std::sync::atomic::Ordering::Relaxed) && rounds < 20 {
                    for chunk in borrowed.chunks(16) {
                        if done.load(std::sync::atomic::Ordering::Relaxed) {
                            break;
                        }
                        std::hint::black_box(background.embed_batch(chunk));
                    }
                    rounds += 1;
                }
            });
            let mut latencies = Vec::with_capacity(queries.len());
            for query in &queries {
                let started = Instant::now();
                let vector = query_model.embed(query);
                std::hint::black_box(index.search(&tool_cli_search::search::Query {
                    model_query: Some(&vector),
                    ..tool_cli_search::search::Query::new(query)
                })?);
                latencies.push(started.elapsed());
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            anyhow::Ok(latencies)
        })?;
        let mut latencies = latencies;
        latencies.sort();
        println!(
            "| query + search, {label}, background pass   | {:>7.1} / {:>5.1} ms       |            – |",
            percentile(&latencies, 0.5).as_secs_f64() * 1000.0,
            percentile(&latencies, 0.99).as_secs_f64() * 1000.0,
        );
    }

    let cpu_before = process_cpu_time();
    let started = Instant::now();
    let vectors = model.embed_batch(&borrowed);
    let wall = started.elapsed();
    let cpu = process_cpu_time()
        .zip(cpu_before)
        .map(|(a, b)| a.saturating_sub(b));
    std::hint::black_box(vectors);
    println!(
        "| catalog (embed_batch), {} tools, {:.0} tokens | {:>8.2} s total        | {:>9.1} ms |",
        texts.len(),
        tokens(&borrowed),
        wall.as_secs_f64(),
        cpu.map_or(f64::NAN, |cpu| cpu.as_secs_f64() * 1000.0
            / texts.len() as f64),
    );
    Ok(())
}

/// Lowers this thread's CPU priority as the daemon's embedding thread does (nice 10).
#[cfg(feature = "minilm")]
fn lower_priority() {
    // SAFETY: `setpriority` on this thread's id only reads its arguments.
    #[cfg(target_os = "linux")]
    unsafe {
        let thread = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, thread as libc::id_t, 10);
    }
}

#[cfg(not(feature = "minilm"))]
fn model_rows(
    _dir: Option<&std::path::Path>,
    _docs: &[ToolDoc],
    _requests: &[eval::Request],
) -> anyhow::Result<()> {
    println!(
        "\n(model rows skipped: build with --features minilm and pass --minilm DIR to time all-MiniLM-L6-v2)"
    );
    Ok(())
}
