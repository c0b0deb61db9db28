//! `search-eval`: prints Recall@1/5/10 and MRR of plain BM25 and of our ranking, on the dev and
//! test request sets, computed in the same run over the same catalog.
//!
//! Usage: `cargo run --release -p tool-cli-search --bin search-eval [-- DATA_DIR]`, where
//! `DATA_DIR` (default: this crate's `eval/`) holds `peers.json`, `catalog.json`, `dev.tsv` and
//! `test.tsv`. Any other catalog in the same format (a JSON list of servers with MCP tools) and
//! request files (`server/tool<TAB>request`) can be evaluated the same way. `--misses`
//! (`--dev-misses`) also prints every test (dev) request ours does not rank first, and
//! `--explain "QUERY"` prints our top ten for one query with the parts of their scores.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use tool_cli_search::eval::{self, Metrics, Request};

fn read(dir: &std::path::Path, name: &str) -> anyhow::Result<String> {
    let path = dir.join(name);
    std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
}

fn row(label: &str, metrics: &Metrics) {
    println!(
        "| {label:<16} | {:>4} | {:>6.3} | {:>6.3} | {:>6.3} | {:>6.3} |",
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
    let mut explain = None;
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--misses" => show_misses = Some("test.tsv"),
            "--dev-misses" => show_misses = Some("dev.tsv"),
            "--explain" => explain = arguments.next(),
            other => data_dir = PathBuf::from(other),
        }
    }
    let mut catalogs = eval::parse_catalog(&read(&data_dir, "peers.json")?)?;
    catalogs.extend(eval::parse_catalog(&read(&data_dir, "catalog.json")?)?);
    let docs = eval::tool_docs(&catalogs);
    let started = Instant::now();
    let index = eval::build_index(&docs);
    let build_time = started.elapsed();

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
    println!("| ranking          |    n |    R@1 |    R@5 |   R@10 |    MRR |");
    println!("|------------------|------|--------|--------|--------|--------|");
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
