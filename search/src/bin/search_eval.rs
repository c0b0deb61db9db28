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
//! for our ranking with the all-MiniLM-L6-v2 embedder instead of the hashing one.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use tool_cli_search::embed::Embedder;
use tool_cli_search::eval::{self, Metrics, Request};

fn read(dir: &std::path::Path, name: &str) -> anyhow::Result<String> {
    let path = dir.join(name);
    std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
}

/// An embedder whose semantic share the evaluation can change between runs over one index, so
/// the share is chosen on the dev half without embedding the catalog again.
struct AdjustableShare {
    inner: Box<dyn tool_cli_search::embed::Embedder>,
    share_bits: std::sync::atomic::AtomicU32,
}

impl tool_cli_search::embed::Embedder for AdjustableShare {
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    fn embed(&self, text: &str) -> tool_cli_search::embed::Embedding {
        self.inner.embed(text)
    }

    fn semantic_share(&self) -> f32 {
        f32::from_bits(self.share_bits.load(std::sync::atomic::Ordering::Relaxed))
    }
}

#[cfg(feature = "minilm")]
fn load_minilm(dir: &std::path::Path) -> anyhow::Result<std::sync::Arc<AdjustableShare>> {
    let weights = std::fs::read(dir.join("model.safetensors")).with_context(|| {
        format!(
            "cannot read model.safetensors in {}; run scripts/install-minilm.sh",
            dir.display()
        )
    })?;
    let vocabulary = read(dir, "vocab.txt")?;
    let model = tool_cli_search::minilm::MiniLmEmbedder::from_bytes(&weights, &vocabulary)?;
    let share = model.semantic_share();
    Ok(std::sync::Arc::new(AdjustableShare {
        inner: Box::new(model),
        share_bits: std::sync::atomic::AtomicU32::new(share.to_bits()),
    }))
}

#[cfg(not(feature = "minilm"))]
fn load_minilm(_dir: &std::path::Path) -> anyhow::Result<std::sync::Arc<AdjustableShare>> {
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
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--misses" => show_misses = Some("test.tsv"),
            "--dev-misses" => show_misses = Some("dev.tsv"),
            "--dev-losses" => show_losses = true,
            "--explain" => explain = arguments.next(),
            "--minilm" => minilm_dir = arguments.next().map(PathBuf::from),
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
        let started = Instant::now();
        let embedder = load_minilm(dir)?;
        let built = eval::build_index_with(&docs, embedder.clone());
        println!(
            "all-MiniLM-L6-v2 index built in {:.1} s",
            started.elapsed().as_secs_f64()
        );
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
                let started = Instant::now();
                let ranks = eval::ranks_ours(model_index, &requests);
                let per_query = started.elapsed().as_secs_f64() * 1000.0 / requests.len() as f64;
                let share = embedder.semantic_share();
                row(
                    &format!("ours+model {share:.2} ({split})"),
                    &Metrics::from_ranks(&ranks),
                );
                eprintln!("({per_query:.1} ms per query with the model)");
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
