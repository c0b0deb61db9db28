//! What a big catalog costs the daemon in memory (P6 of issue 13): a server of N generated tools
//! against the size of its `tools/list` JSON.
//!
//! It asks the fault-server fixture (`--extra-tools N`) for its tool list directly, over stdio,
//! to learn the catalog's JSON size; then starts two real daemons, one serving the fixture with
//! no extra tools (the baseline) and one with N, waits until the second has discovered every
//! tool and built its search index, and reads each daemon's `VmRSS` from `/proc`. It prints the
//! JSON size, both figures, the difference and its ratio to the JSON size (the target is ≤ 3×).
//!
//! It accounts for the daemon's growth in two ways. In the daemon: each daemon runs with
//! `RUST_LOG=tool_cli_daemon::memory=debug`, so after its last rebuild it logs glibc's state
//! (`mallinfo2`: bytes in use, free bytes kept) and what `malloc_trim` returned; and its
//! `/proc/PID/smaps` says which mappings grew (the brk heap, anonymous mappings: other threads'
//! arenas, thread stacks, big blocks; file-backed: code).
//!
//! Then it says where the memory goes: in this process, under a counting allocator, it builds
//! from the same `tools/list` what the daemon builds (the parsed items, the [`Catalog`], the
//! search documents and the search index, one compiled validator) and prints the bytes each
//! keeps live: requested bytes, and glibc chunks (what the allocator really hands out, header
//! and rounding included). The daemon's growth minus what its structures hold is allocator
//! slack (free memory the allocator keeps but cannot return) and everything else.
//!
//! ```sh
//! cargo build --release -p tool-cli-daemon -p tool-cli -p tool-cli-fault-server
//! cargo run --release -p tool-cli-daemon --example catalog_memory -- 10000
//! ```
//!
//! The binaries are found next to this example's directory (`target/<profile>/`) unless
//! `TOOL_CLI_BIN_DIR` says otherwise. This is a measurement, not a test: it asserts nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_cli_daemon::catalog::Catalog;
use tool_cli_search::doc::ToolDoc;
use tool_cli_search::index::Index;
use tool_cli_tests::{Daemon, DaemonOptions, fault_server, fault_server_bin};

/// Counts live heap bytes: requested, and as glibc chunks.
struct Counting;

/// Live bytes as requested by the program.
static REQUESTED: AtomicUsize = AtomicUsize::new(0);
/// Live bytes as glibc malloc chunks: the request plus an 8-byte header, rounded up to 16, at
/// least 32 (x86-64). Large blocks (mmapped) are rounded to pages; the difference is noise here.
static CHUNKS: AtomicUsize = AtomicUsize::new(0);
/// Live allocations.
static BLOCKS: AtomicUsize = AtomicUsize::new(0);

fn chunk(size: usize) -> usize {
    (size + 8).next_multiple_of(16).max(32)
}

fn count_in(size: usize) {
    REQUESTED.fetch_add(size, Ordering::Relaxed);
    CHUNKS.fetch_add(chunk(size), Ordering::Relaxed);
    BLOCKS.fetch_add(1, Ordering::Relaxed);
}

fn count_out(size: usize) {
    REQUESTED.fetch_sub(size, Ordering::Relaxed);
    CHUNKS.fetch_sub(chunk(size), Ordering::Relaxed);
    BLOCKS.fetch_sub(1, Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` unchanged and only counts what it did.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System`'s.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            count_in(layout.size());
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            count_in(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(pointer, layout) };
        count_out(layout.size());
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            count_out(layout.size());
            count_in(new_size);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A reading of the counters.
#[derive(Clone, Copy)]
struct Live {
    requested: usize,
    chunks: usize,
    blocks: usize,
}

impl Live {
    fn now() -> Live {
        Live {
            requested: REQUESTED.load(Ordering::Relaxed),
            chunks: CHUNKS.load(Ordering::Relaxed),
            blocks: BLOCKS.load(Ordering::Relaxed),
        }
    }

    /// These counts without `part`.
    fn less(self, part: Live) -> Live {
        self.since(part)
    }

    /// What was allocated since `before` and is still live.
    fn since(self, before: Live) -> Live {
        Live {
            requested: self.requested.saturating_sub(before.requested),
            chunks: self.chunks.saturating_sub(before.chunks),
            blocks: self.blocks.saturating_sub(before.blocks),
        }
    }
}

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
    let (json_bytes, items) = tools_list(&["--extra-tools", &extra])?;
    let listed = items.len();
    let breakdown = where_it_goes(items, json_bytes);

    let baseline = start_daemon(&[]);
    let baseline_total = wait_until_indexed(&baseline, listed - tools)?;
    let baseline_allocator = allocator_after_index(&baseline)?;
    let baseline_rss = rss_bytes(baseline.pid())?;
    let baseline_maps = Mappings::of(baseline.pid())?;
    drop(baseline);

    let daemon = start_daemon(&["--extra-tools", &extra]);
    let total = wait_until_indexed(&daemon, listed)?;
    let allocator = allocator_after_index(&daemon)?;
    let after_discovery = rss_bytes(daemon.pid())?;
    let maps = Mappings::of(daemon.pid())?;
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
         whole daemon after discovery ÷ JSON: {:.2}× (target for the growth: ≤ 3×)\n\n\
         In the daemons, after their last rebuild and `malloc_trim` (glibc `mallinfo2`, \
         `/proc/PID/smaps`):\n\n{}\n{breakdown}",
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
        daemon_side(
            (&baseline_allocator, &baseline_maps),
            (&allocator, &maps),
            json_bytes
        ),
    ))
}

/// A daemon serving the fault server with `args`, logging its allocator's state.
fn start_daemon(args: &[&str]) -> Daemon {
    Daemon::start_with(
        json!({"mcpServers": {"big": fault_server(args)}}),
        DaemonOptions {
            env: vec![(
                "RUST_LOG".to_owned(),
                "warn,tool_cli_daemon=info,tool_cli_daemon::memory=debug".to_owned(),
            )],
            ..DaemonOptions::default()
        },
    )
}

/// What a daemon logged of its allocator after a release (`memory.rs`), as `key=value` fields.
#[derive(Default)]
struct AllocatorLog {
    in_use: usize,
    free: usize,
    resident_before: usize,
    resident_after: usize,
}

/// Waits for the daemon's log of its allocator after the search index build, and parses it.
fn allocator_after_index(daemon: &Daemon) -> Result<AllocatorLog, String> {
    let deadline = Instant::now() + INDEX_TIMEOUT;
    loop {
        let stderr = daemon.stderr();
        let line = stderr.lines().rev().find(|line| {
            line.contains("freed memory returned to the system")
                && line.contains("building the search index")
        });
        if let Some(line) = line {
            let field = |name: &str| -> usize {
                line.split_whitespace()
                    .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
                    .and_then(|value| value.parse().ok())
                    .unwrap_or(0)
            };
            return Ok(AllocatorLog {
                in_use: field("in_use_bytes"),
                free: field("free_bytes"),
                resident_before: field("resident_before"),
                resident_after: field("resident_after"),
            });
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the daemon logged no allocator state after its index build within \
                 {INDEX_TIMEOUT:?}; stderr:\n{stderr}"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A process's resident memory by kind of mapping, from `/proc/PID/smaps`.
#[derive(Default)]
struct Mappings {
    /// The brk heap: the main arena.
    heap: usize,
    /// Anonymous mappings: the other threads' arenas, thread stacks, blocks glibc mmaps.
    anonymous: usize,
    /// The main thread's stack.
    stack: usize,
    /// Mapped files: the binary's code and data, shared libraries.
    files: usize,
    /// How many anonymous mappings there are.
    anonymous_count: usize,
}

impl Mappings {
    fn of(pid: u32) -> Result<Mappings, String> {
        let path = format!("/proc/{pid}/smaps");
        let smaps =
            std::fs::read_to_string(&path).map_err(|err| format!("cannot read {path}: {err}"))?;
        Ok(Mappings::parse(&smaps))
    }

    fn parse(smaps: &str) -> Mappings {
        let mut maps = Mappings::default();
        // The kind of the mapping whose fields follow.
        let mut kind: Option<&str> = None;
        for line in smaps.lines() {
            let mut fields = line.split_whitespace();
            let Some(first) = fields.next() else { continue };
            if first.contains('-') && !first.ends_with(':') {
                // A mapping's header: address range, permissions, offset, device, inode, path.
                let path = fields.nth(4);
                kind = Some(match path {
                    None => "anonymous",
                    Some("[heap]") => "heap",
                    Some("[stack]") => "stack",
                    Some(other) if other.starts_with('[') => "other",
                    Some(_) => "files",
                });
                if kind == Some("anonymous") {
                    maps.anonymous_count += 1;
                }
            } else if first == "Rss:" {
                let kib: usize = fields.next().and_then(|v| v.parse().ok()).unwrap_or(0);
                let bytes = kib * 1024;
                match kind {
                    Some("heap") => maps.heap += bytes,
                    Some("anonymous") => maps.anonymous += bytes,
                    Some("stack") => maps.stack += bytes,
                    Some("files") => maps.files += bytes,
                    _ => {}
                }
            }
        }
        maps
    }
}

/// The daemons' own account: allocator state and mappings, baseline against the big catalog.
fn daemon_side(
    baseline: (&AllocatorLog, &Mappings),
    big: (&AllocatorLog, &Mappings),
    json_bytes: usize,
) -> String {
    let mib = |bytes: usize| bytes as f64 / (1024.0 * 1024.0);
    let row = |what: &str, before: usize, after: usize| {
        let growth = after as f64 - before as f64;
        format!(
            "| {what} | {:.2} MiB | {:.2} MiB | {:+.2} MiB | {:+.2}× |\n",
            mib(before),
            mib(after),
            growth / (1024.0 * 1024.0),
            growth / json_bytes as f64,
        )
    };
    let (base_log, base_maps) = baseline;
    let (log, maps) = big;
    let mut out = String::from(
        "| | baseline | big catalog | growth | growth ÷ JSON |\n|---|--:|--:|--:|--:|\n",
    );
    out += &row(
        "heap in use (`mallinfo2` uordblks + hblkhd)",
        base_log.in_use,
        log.in_use,
    );
    out += &row("free bytes glibc keeps (fordblks)", base_log.free, log.free);
    out += &row(
        "resident before the last `malloc_trim`",
        base_log.resident_before,
        log.resident_before,
    );
    out += &row(
        "resident after it",
        base_log.resident_after,
        log.resident_after,
    );
    out += &row("resident: brk heap (main arena)", base_maps.heap, maps.heap);
    out += &row(
        &format!(
            "resident: anonymous mappings (arenas, stacks, big blocks; {} → {})",
            base_maps.anonymous_count, maps.anonymous_count
        ),
        base_maps.anonymous,
        maps.anonymous,
    );
    out += &row("resident: main stack", base_maps.stack, maps.stack);
    out += &row("resident: mapped files (code)", base_maps.files, maps.files);
    out
}

/// The byte size of the fault server's whole `tools/list` result, and its items.
fn tools_list(args: &[&str]) -> Result<(usize, Vec<Value>), String> {
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
    let mut answer = loop {
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
    if answer["result"].get("nextCursor").is_some() {
        return Err(
            "the fault server paged its tool list; run it without --tools-page-size".into(),
        );
    }
    let bytes = serde_json::to_string(&answer["result"]["tools"])
        .expect("JSON encodes")
        .len();
    match answer["result"]["tools"].take() {
        Value::Array(tools) => Ok((bytes, tools)),
        _ => Err("tools/list answered without a tools array".into()),
    }
}

/// Builds, in this process, what the daemon builds from `items`, and reports what each piece
/// keeps live.
fn where_it_goes(items: Vec<Value>, json_bytes: usize) -> String {
    // The items as the pool hands them to the catalog: parsed again from text, so the count
    // is of a fresh tree.
    let text = serde_json::to_string(&items).expect("JSON encodes");
    drop(items);
    let before_tree = Live::now();
    let items: Vec<Value> = serde_json::from_str(&text).expect("JSON decodes");
    let tree = Live::now().since(before_tree);
    drop(text);

    // Building the catalog consumes the items: what it keeps is what is live beyond the
    // counts without the tree.
    let without_tree = Live::now().less(tree);
    let catalog = Catalog::new(items);
    let catalog_bytes = Live::now().since(without_tree);

    // The search documents as `tool_search.rs` makes them, then the index built from them
    // (which keeps some of the documents' strings and drops the rest), on a thread of its own
    // as the daemon does it: the build's thread-local word table goes with the thread.
    let before_docs = Live::now();
    let (index, docs_bytes, with_word_table) = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let docs: Vec<ToolDoc> = catalog
                    .tools()
                    .iter()
                    .map(|tool| ToolDoc::from_mcp_tool("big", &tool.json(), None, &[]))
                    .collect();
                let docs_bytes = Live::now().since(before_docs);
                let index = Index::new().with_servers([("big".to_owned(), docs)]);
                (index, docs_bytes, Live::now().since(before_docs))
            })
            .join()
            .expect("the index build does not panic")
    });
    // Counted from before the documents: the index keeps some of their strings.
    let index_bytes = Live::now().since(before_docs);

    // The first compilation also fills the validator crate's lazily built statics; the second
    // is what each further cached validator costs.
    let compile = |position: usize| {
        jsonschema::options()
            .should_validate_formats(true)
            .build(&catalog.tools()[position].input_schema_or_any_object())
    };
    let before_validator = Live::now();
    let first_validator = compile(catalog.len() - 1);
    let first_validator_bytes = Live::now().since(before_validator);
    let before_validator = Live::now();
    let validator = compile(catalog.len() - 2);
    let validator_bytes = Live::now().since(before_validator);

    let mib = |bytes: usize| bytes as f64 / (1024.0 * 1024.0);
    let row = |what: &str, live: Live| {
        format!(
            "| {what} | {:.2} MiB | {:.2} MiB | {:.2}× | {} |\n",
            mib(live.requested),
            mib(live.chunks),
            live.chunks as f64 / json_bytes as f64,
            live.blocks,
        )
    };
    let mut out = format!(
        "Where it goes ({} tools, counted in this process; chunks ÷ JSON in the fourth column):\n\n\
         | structure | requested | malloc chunks | ÷ JSON | allocations |\n\
         |---|--:|--:|--:|--:|\n",
        catalog.len()
    );
    out += &row(
        "`tools/list` items as `Value` trees (while discovering)",
        tree,
    );
    out += &row("the catalog (kept)", catalog_bytes);
    out += &row("the search documents (while indexing)", docs_bytes);
    out += &row(
        "the search index and the build thread's word table (while indexing)",
        with_word_table,
    );
    out += &row(
        "the search index, with the document strings it keeps (kept)",
        index_bytes,
    );
    out += &row(
        "the first compiled validator, with the validator crate's statics",
        first_validator_bytes,
    );
    out += &row(
        "each further compiled validator (the cache keeps ≤ 256)",
        validator_bytes,
    );
    let parts = index.footprint();
    out += &format!(
        "\nThe kept index by part (`Index::footprint`: heap bytes without allocator overhead; \
         {} postings, {} terms):\n\n| part | MiB | ÷ JSON |\n|---|--:|--:|\n",
        parts.postings, parts.shard_terms
    );
    for (what, bytes) in [
        ("postings", parts.posting_bytes),
        ("terms (lists, ranges, text)", parts.term_bytes),
        (
            "term table (statistics, shard lists)",
            parts.term_table_bytes,
        ),
        ("tools (names, descriptions, tags, facts)", parts.tool_bytes),
        ("field lengths and BM25F factors", parts.length_bytes),
        ("hashing embeddings", parts.embedding_bytes),
        ("model vectors", parts.model_vector_bytes),
        ("total", parts.total_bytes()),
    ] {
        out += &format!(
            "| {what} | {:.2} | {:.2}× |\n",
            mib(bytes),
            bytes as f64 / json_bytes as f64
        );
    }
    drop((validator, first_validator, index, catalog));
    out
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
