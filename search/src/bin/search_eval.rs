//! `search-eval`: prints Recall@1/5/10 and MRR of plain BM25 and of our ranking, on the dev and
//! test request sets, computed in the same run over the same catalog.
//!
//! Usage: `cargo run --release -p tool-cli-search --bin search-eval [-- DATA_DIR]`, where
//! `DATA_DIR` (default: this crate's `eval/`) holds `peers.json`, `catalog.json`, `dev.tsv` and
//! `test.tsv`. Any other catalog in the same format (a JSON list of servers with MCP tools) and
//! request files (`server/tool<TAB>request`) can be evaluated the same way. `--misses`
//! (`--dev-misses`) also prints every test (dev) request ours does not rank first,
//! `--dev-losses` the dev requests plain BM25 ranks first and ours does not, and
//! `--explain "QUERY"` prints our top ten for one query with the parts of their scores.
//! `--minilm DIR` (with `--features minilm`, after `scripts/install-minilm.sh DIR`) adds rows
//! for our ranking with the all-MiniLM-L6-v2 embedder instead of the hashing one, and prints
//! what the model cost: the catalog embedded in one `embed_batch` (ms per tool, wall and CPU)
//! and the test requests embedded one at a time (ms per query). `--max-tokens N` embeds at most
//! N tokens per text instead of the model's default; `--model-text name-once|no-parameters`
//! embeds another text of each tool than the index's (the name once, split into words; and
//! without the parameter names), to measure what a tool's text should be.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use tool_cli_search::embed::{Embedder, Embedding};
use tool_cli_search::eval::{self, Metrics, Request};

fn read(dir: &std::path::Path, name: &str) -> anyhow::Result<String> {
    let path = dir.join(name);
    std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
}

/// An embedder whose semantic share the evaluation can change between runs over one index, so
/// the share is chosen on the dev half without embedding the catalog again; it remembers every
/// vector it gave (the catalog's, embedded in one batch beforehand, and each request's, which the
/// dev half embeds once per share tried).
struct AdjustableShare {
    inner: Box<dyn tool_cli_search::embed::Embedder>,
    share_bits: std::sync::atomic::AtomicU32,
    known: std::sync::Mutex<std::collections::HashMap<String, Embedding>>,
}

impl AdjustableShare {
    fn remember(&self, texts: &[String], vectors: Vec<Embedding>) {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known.extend(texts.iter().cloned().zip(vectors));
    }
}

impl tool_cli_search::embed::Embedder for AdjustableShare {
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    fn embed(&self, text: &str) -> Embedding {
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(vector) = known.get(text) {
            return vector.clone();
        }
        drop(known);
        let vector = self.inner.embed(text);
        self.remember(&[text.to_owned()], vec![vector.clone()]);
        vector
    }

    fn embed_batch(&self, texts: &[&str]) -> Vec<Embedding> {
        self.inner.embed_batch(texts)
    }

    fn semantic_share(&self) -> f32 {
        f32::from_bits(self.share_bits.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// Records the texts the index asks it to embed (answering with zero vectors), so the catalog's
/// texts, exactly as the index builds them, can then be embedded in one batch.
struct Recorder {
    dimensions: usize,
    texts: std::sync::Mutex<Vec<String>>,
}

impl Embedder for Recorder {
    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed(&self, text: &str) -> Embedding {
        self.texts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text.to_owned());
        Embedding::normalized(vec![0.0; self.dimensions])
    }
}

/// CPU time this process has used (all threads), from `/proc/self/stat` (10 ms ticks); `None`
/// off Linux. On a shared machine wall time also measures the other processes.
fn process_cpu_time() -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(std::time::Duration::from_millis((utime + stime) * 10))
}

/// Which text of a tool the model embeds (`--model-text`), to measure what a tool should
/// contribute; the index asks for its own text and is answered with the vector of this one.
#[derive(Clone, Copy, PartialEq)]
enum ModelText {
    /// What the index embeds: the name once as words, the title, the description's first 512
    /// bytes, the parameter names it indexes.
    Index,
    /// Kept for old command lines: the index's own text since the index embeds the name once,
    /// split into words (`keyvault_secret_list` → `keyvault secret list`).
    NameOnce,
    /// The name once, split into words, the title and the description's opening; no parameters.
    NoParameters,
}

/// The text `variant` embeds for `doc`, whose index text is `index_text`.
fn model_text(variant: ModelText, doc: &tool_cli_search::doc::ToolDoc, index_text: &str) -> String {
    match variant {
        // The index now embeds the name once, split into words: `name-once` is its text.
        ModelText::Index | ModelText::NameOnce => index_text.to_owned(),
        ModelText::NoParameters => {
            let mut text = tool_cli_search::index::name_words(&doc.name);
            if let Some(title) = &doc.title {
                text.push(' ');
                text.push_str(title);
            }
            let mut end = doc.description.len().min(512);
            while !doc.description.is_char_boundary(end) {
                end -= 1;
            }
            if end < doc.description.len() {
                end = doc.description[..end]
                    .rfind(char::is_whitespace)
                    .unwrap_or(end);
            }
            text.push(' ');
            text.push_str(&doc.description[..end]);
            text
        }
    }
}

/// Builds the model's index over `docs`: records the texts the index embeds, embeds them (or
/// `variant`'s texts) all in one `embed_batch` (timed: the catalog figure), then builds the
/// index from those vectors.
fn build_model_index(
    docs: &[tool_cli_search::doc::ToolDoc],
    embedder: &std::sync::Arc<AdjustableShare>,
    variant: ModelText,
) -> anyhow::Result<tool_cli_search::index::Index> {
    let recorder = std::sync::Arc::new(Recorder {
        dimensions: embedder.dimensions(),
        texts: std::sync::Mutex::new(Vec::new()),
    });
    drop(eval::build_index_with(docs, recorder.clone()));
    let texts = std::mem::take(&mut *recorder.texts.lock().unwrap_or_else(|e| e.into_inner()));
    let embedded: Vec<String> = if variant == ModelText::Index {
        texts.clone()
    } else {
        // Under 2,048 tools the index is built on one thread, server by server in order of
        // first appearance, so the i-th text recorded is the i-th tool in that order.
        let mut grouped: Vec<&tool_cli_search::doc::ToolDoc> = Vec::new();
        let mut servers: Vec<&str> = Vec::new();
        for doc in docs {
            if !servers.contains(&doc.server.as_str()) {
                servers.push(&doc.server);
                grouped.extend(docs.iter().filter(|d| d.server == doc.server));
            }
        }
        anyhow::ensure!(
            grouped.len() == texts.len()
                && grouped
                    .iter()
                    .zip(&texts)
                    .all(|(doc, text)| text.starts_with(&format!("{0} {0} ", doc.name))),
            "--model-text needs the index's texts in catalog order (a catalog under 2,048 tools)"
        );
        grouped
            .iter()
            .zip(&texts)
            .map(|(doc, text)| model_text(variant, doc, text))
            .collect()
    };
    let borrowed: Vec<&str> = embedded.iter().map(String::as_str).collect();
    let cpu_before = process_cpu_time();
    let started = Instant::now();
    let vectors = embedder.embed_batch(&borrowed);
    let wall = started.elapsed().as_secs_f64();
    let cpu = process_cpu_time()
        .zip(cpu_before)
        .map_or(f64::NAN, |(after, before)| {
            after.saturating_sub(before).as_secs_f64()
        });
    println!(
        "all-MiniLM-L6-v2: {} tools embedded in {wall:.1} s ({:.1} ms per tool, {:.1} ms CPU per tool)",
        texts.len(),
        wall * 1000.0 / texts.len() as f64,
        cpu * 1000.0 / texts.len() as f64,
    );
    embedder.remember(&texts, vectors);
    Ok(eval::build_index_with(docs, embedder.clone()))
}

#[cfg(feature = "minilm")]
fn load_minilm(
    dir: &std::path::Path,
    max_tokens: Option<usize>,
) -> anyhow::Result<std::sync::Arc<AdjustableShare>> {
    let weights = std::fs::read(dir.join("model.safetensors")).with_context(|| {
        format!(
            "cannot read model.safetensors in {}; run scripts/install-minilm.sh",
            dir.display()
        )
    })?;
    let vocabulary = read(dir, "vocab.txt")?;
    let mut model = tool_cli_search::minilm::MiniLmEmbedder::from_bytes(&weights, &vocabulary)?;
    if let Some(max_tokens) = max_tokens {
        model = model.with_max_tokens(max_tokens);
    }
    println!(
        "all-MiniLM-L6-v2: at most {} tokens per text, fingerprint {:016x}",
        model.max_tokens(),
        model.fingerprint()
    );
    let share = model.semantic_share();
    Ok(std::sync::Arc::new(AdjustableShare {
        inner: Box::new(model),
        share_bits: std::sync::atomic::AtomicU32::new(share.to_bits()),
        known: std::sync::Mutex::new(std::collections::HashMap::new()),
    }))
}

#[cfg(not(feature = "minilm"))]
fn load_minilm(
    _dir: &std::path::Path,
    _max_tokens: Option<usize>,
) -> anyhow::Result<std::sync::Arc<AdjustableShare>> {
    anyhow::bail!(
        "--minilm needs the minilm feature: cargo run --release -p tool-cli-search --features minilm --bin search-eval -- --minilm DIR"
    )
}

fn row(label: &str, metrics: &Metrics) {
    println!(
        "| {label:<24} | {:>4} | {:>6.3} | {:>6.3} | {:>6.3} | {:>6.3} |",
        metrics.requests,
        metrics.recall_at_1,
        metrics.recall_at_5,
        metrics.recall_at_10,
        metrics.mrr
    );
}

fn main() -> anyhow::Result<()> {
    let mut data_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("eval");
    let mut show_misses = None;
    let mut show_losses = false;
    let mut explain = None;
    let mut minilm_dir: Option<PathBuf> = None;
    let mut max_tokens: Option<usize> = None;
    let mut model_text = ModelText::Index;
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--misses" => show_misses = Some("test.tsv"),
            "--dev-misses" => show_misses = Some("dev.tsv"),
            "--dev-losses" => show_losses = true,
            "--explain" => explain = arguments.next(),
            "--minilm" => minilm_dir = arguments.next().map(PathBuf::from),
            "--model-text" => {
                model_text = match arguments.next().as_deref() {
                    Some("index") => ModelText::Index,
                    Some("name-once") => ModelText::NameOnce,
                    Some("no-parameters") => ModelText::NoParameters,
                    other => anyhow::bail!(
                        "--model-text takes index, name-once or no-parameters, not {other:?}"
                    ),
                }
            }
            "--max-tokens" => {
                let value = arguments.next().unwrap_or_default();
                max_tokens = Some(value.parse().with_context(|| {
                    format!("--max-tokens takes a number of tokens (2 to 512), not {value:?}")
                })?);
            }
            other => data_dir = PathBuf::from(other),
        }
    }
    let mut catalogs = eval::parse_catalog(&read(&data_dir, "peers.json")?)?;
    catalogs.extend(eval::parse_catalog(&read(&data_dir, "catalog.json")?)?);
    let docs = eval::tool_docs(&catalogs);
    let started = Instant::now();
    let mut index = eval::build_index(&docs);
    let build_time = started.elapsed();
    let mut model_index = None;
    if let Some(dir) = &minilm_dir {
        let embedder = load_minilm(dir, max_tokens)?;
        let built = build_model_index(&docs, &embedder, model_text)?;
        if explain.is_some() {
            index = built;
        } else {
            model_index = Some((built, embedder));
        }
    }

    if let Some(text) = explain {
        let outcome = index.search(&tool_cli_search::search::Query::new(&text))?;
        for hit in outcome.hits {
            println!(
                "{:>6.3}  lexical {:>6.2}  semantic {:>5.2}  {}/{}",
                hit.score, hit.why.lexical, hit.why.semantic, hit.server, hit.tool
            );
        }
        return Ok(());
    }
    println!(
        "catalog: {} tools on {} servers (index built in {:.1} ms)\n",
        docs.len(),
        catalogs.len(),
        build_time.as_secs_f64() * 1000.0
    );
    println!("| ranking                  |    n |    R@1 |    R@5 |   R@10 |    MRR |");
    println!("|--------------------------|------|--------|--------|--------|--------|");
    for split in ["dev", "test"] {
        let requests: Vec<Request> =
            eval::parse_requests(&read(&data_dir, &format!("{split}.tsv"))?)?;
        eval::check_labels(&requests, &docs)?;
        row(
            &format!("BM25 ({split})"),
            &Metrics::from_ranks(&eval::ranks_bm25(&docs, &requests)),
        );
        row(
            &format!("ours ({split})"),
            &Metrics::from_ranks(&eval::ranks_ours(&index, &requests)),
        );
        let unnamed: Vec<Request> = requests
            .iter()
            .filter(|request| !eval::names_its_server(request))
            .cloned()
            .collect();
        row(
            &format!("BM25 ({split}, no server)"),
            &Metrics::from_ranks(&eval::ranks_bm25(&docs, &unnamed)),
        );
        row(
            &format!("ours ({split}, no server)"),
            &Metrics::from_ranks(&eval::ranks_ours(&index, &unnamed)),
        );
        if let Some((model_index, embedder)) = &model_index {
            // The share is chosen on dev (best MRR) and that choice is what test reports.
            if split == "dev" {
                let mut best = (f64::MIN, 0.0f32);
                for share in [0.2f32, 0.35, 0.5, 0.65, 0.8] {
                    embedder
                        .share_bits
                        .store(share.to_bits(), std::sync::atomic::Ordering::Relaxed);
                    let metrics = Metrics::from_ranks(&eval::ranks_ours(model_index, &requests));
                    row(&format!("ours+model {share:.2} (dev)"), &metrics);
                    if metrics.mrr > best.0 {
                        best = (metrics.mrr, share);
                    }
                }
                embedder
                    .share_bits
                    .store(best.1.to_bits(), std::sync::atomic::Ordering::Relaxed);
            } else {
                let cpu_before = process_cpu_time();
                let started = Instant::now();
                let ranks = eval::ranks_ours(model_index, &requests);
                let per_query = started.elapsed().as_secs_f64() * 1000.0 / requests.len() as f64;
                let cpu_per_query = process_cpu_time()
                    .zip(cpu_before)
                    .map_or(f64::NAN, |(after, before)| {
                        after.saturating_sub(before).as_secs_f64() * 1000.0
                    })
                    / requests.len() as f64;
                let share = embedder.semantic_share();
                row(
                    &format!("ours+model {share:.2} ({split})"),
                    &Metrics::from_ranks(&ranks),
                );
                println!(
                    "(test requests with the model: {per_query:.1} ms per query, {cpu_per_query:.1} ms CPU, embedding included)"
                );
            }
        }
    }

    if show_losses {
        // The dev requests plain BM25 ranks first and ours does not: where ours loses.
        let requests = eval::parse_requests(&read(&data_dir, "dev.tsv")?)?;
        let ours = eval::ranks_ours(&index, &requests);
        let bm25 = eval::ranks_bm25(&docs, &requests);
        println!("\ndev requests BM25 ranks first and ours does not:");
        for ((request, ours), bm25) in requests.iter().zip(ours).zip(bm25) {
            if bm25 == Some(1) && ours != Some(1) {
                let query = tool_cli_search::search::Query::new(&request.query);
                let got = index
                    .search(&query)
                    .ok()
                    .and_then(|o| o.hits.into_iter().next())
                    .map(|h| format!("{}/{}", h.server, h.tool))
                    .unwrap_or_default();
                let (server, tool) = &request.expected[0];
                println!(
                    "  ours {:>4}  {server}/{tool}  got {got}  <- {}",
                    ours.map_or("-".to_owned(), |r| r.to_string()),
                    request.query
                );
            }
        }
    }
    if let Some(file) = show_misses {
        let requests = eval::parse_requests(&read(&data_dir, file)?)?;
        let ranks = eval::ranks_ours(&index, &requests);
        println!("\nrequests of {file} ours does not rank first:");
        for (request, rank) in requests.iter().zip(ranks) {
            if rank != Some(1) {
                let query = tool_cli_search::search::Query::new(&request.query);
                let got = index
                    .search(&query)
                    .ok()
                    .and_then(|o| o.hits.into_iter().next())
                    .map(|h| format!("{}/{}", h.server, h.tool))
                    .unwrap_or_default();
                let (server, tool) = &request.expected[0];
                println!(
                    "  rank {:>4}  {server}/{tool}  got {got}  <- {}",
                    rank.map_or("-".to_owned(), |r| r.to_string()),
                    request.query
                );
            }
        }
    }
    Ok(())
}
