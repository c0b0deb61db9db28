//! `search-eval`: prints Recall@1/5 and MRR of plain BM25 and of our ranking, with the
//! ablation of every signal, on the dev and test halves of one or more evaluation sets, and
//! their macro-average (each set counting once), computed in one run.
//!
//! Usage: `cargo run --release -p tool-cli-search --bin search-eval [-- DIR...]`, where each
//! `DIR` (default: this crate's `eval/`) holds `peers.json`, `catalog.json`, `dev.tsv` and
//! `test.tsv` (`scripts/convert-public-search-sets.py` writes the public sets so). Rows: BM25
//! over name and description; BM25F with no signal; each signal alone on top of it; every
//! signal ("ours"); ours with the hashing embedder in place of the built-in static embeddings;
//! every signal but one. `--dev-only` leaves the test halves unread (for choosing). `--train`
//! learns the rerank stage's weights on the dev halves and prints leave-one-set-out figures
//! and the weights (`train.rs`; `--l2 X`, 0.001 by default). `--vector-cache FILE` keeps the
//! model's vectors between runs (`FILE.<fingerprint>`). `--static-table FILE` ranks the default
//! rows with another static table (`search-distil`'s output) in place of the built-in one. `--minilm DIR` (with `--features minilm`, after `scripts/install-minilm.sh DIR`)
//! adds the model alone, ours with the model (its built-in share σ), without the rerank stage,
//! and reciprocal-rank fusion of our lexical ranking with the model's, and prints what the
//! model cost (the catalog embedded in one `embed_batch`, ms per tool, wall and CPU);
//! `--max-tokens N` embeds at most N tokens per text. For the first `DIR` only: `--misses`
//! (`--dev-misses`) prints every test (dev) request ours does not rank first, `--dev-losses` the
//! dev requests plain BM25 ranks first and ours does not, `--explain "QUERY"` our top ten for
//! one query with the parts of their scores. `--export-pairs DIR` writes the dev halves'
//! request and tool vectors for `scripts/train-query-adapter.py`; `--adapter FILE|DIR` and
//! `--model-adapter FILE|DIR` add rows ranked with a trained query adapter (a directory: one
//! adapter per set, `SET.bin`, trained without it; `adapter.rs`).

mod adapter;
mod train;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use tool_cli_search::embed::{Embedder, Embedding};
use tool_cli_search::eval::{self, Metrics, Request};
use tool_cli_search::search::Signals;

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
    /// Where the vectors are saved (`--vector-cache`), if anywhere.
    cache: Option<PathBuf>,
}

impl AdjustableShare {
    fn remember(&self, texts: &[String], vectors: Vec<Embedding>) {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known.extend(texts.iter().cloned().zip(vectors));
    }

    fn is_known(&self, text: &str) -> bool {
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(text)
    }

    /// Reads vectors saved by `save` (a missing file is an empty cache): the evaluation's own
    /// cache, so choosing among variants does not embed the same catalogs again.
    #[cfg_attr(not(feature = "minilm"), allow(dead_code))]
    fn load(&self, path: &std::path::Path) -> anyhow::Result<()> {
        let Ok(bytes) = std::fs::read(path) else {
            return Ok(());
        };
        let word = |at: usize| -> anyhow::Result<usize> {
            let slice = bytes
                .get(at..at + 4)
                .context("the vector cache is truncated; delete it")?;
            Ok(u32::from_le_bytes([slice[0], slice[1], slice[2], slice[3]]) as usize)
        };
        let mut at = 0;
        let mut texts = Vec::new();
        let mut vectors = Vec::new();
        while at < bytes.len() {
            let length = word(at)?;
            let text = String::from_utf8_lossy(&bytes[at + 4..at + 4 + length]).into_owned();
            at += 4 + length;
            let dimensions = word(at)?;
            at += 4;
            let values: Vec<f32> = (0..dimensions)
                .map(|i| word(at + 4 * i).map(|w| f32::from_bits(w as u32)))
                .collect::<anyhow::Result<_>>()?;
            at += 4 * dimensions;
            texts.push(text);
            vectors.push(Embedding::normalized(values));
        }
        self.remember(&texts, vectors);
        Ok(())
    }

    fn save(&self, path: &std::path::Path) -> anyhow::Result<()> {
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        let mut bytes = Vec::new();
        for (text, vector) in known.iter() {
            bytes.extend_from_slice(&(text.len() as u32).to_le_bytes());
            bytes.extend_from_slice(text.as_bytes());
            bytes.extend_from_slice(&(vector.dimensions() as u32).to_le_bytes());
            for value in vector.values() {
                bytes.extend_from_slice(&value.to_le_bytes());
            }
        }
        std::fs::write(path, bytes)
            .with_context(|| format!("cannot write the vector cache {}", path.display()))
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

    fn embed_query(&self, text: &str) -> Embedding {
        let key = format!("\u{1}query\u{1}{text}");
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(vector) = known.get(&key) {
            return vector.clone();
        }
        drop(known);
        let vector = self.inner.embed_query(text);
        self.remember(&[key], vec![vector.clone()]);
        vector
    }

    fn embed_batch(&self, texts: &[&str]) -> Vec<Embedding> {
        self.inner.embed_batch(texts)
    }

    fn semantic_share(&self) -> f32 {
        f32::from_bits(self.share_bits.load(std::sync::atomic::Ordering::Relaxed))
    }

    fn semantic_share_unmatched(&self) -> f32 {
        self.inner.semantic_share_unmatched()
    }

    fn is_sentence_model(&self) -> bool {
        self.inner.is_sentence_model()
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

/// Builds the model's index over `docs`: records the texts the index embeds, embeds them all
/// in one `embed_batch` (timed: the catalog figure), then builds the index from those vectors.
fn build_model_index(
    docs: &[tool_cli_search::doc::ToolDoc],
    embedder: &std::sync::Arc<AdjustableShare>,
) -> anyhow::Result<tool_cli_search::index::Index> {
    let recorder = std::sync::Arc::new(Recorder {
        dimensions: embedder.dimensions(),
        texts: std::sync::Mutex::new(Vec::new()),
    });
    drop(eval::build_index_with(docs, recorder.clone()));
    let mut texts = std::mem::take(&mut *recorder.texts.lock().unwrap_or_else(|e| e.into_inner()));
    texts.retain(|text| !embedder.is_known(text));
    let embedded = texts.clone();
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
        "model: {} tools embedded in {wall:.1} s ({:.1} ms per tool, {:.1} ms CPU per tool)",
        texts.len(),
        wall * 1000.0 / texts.len().max(1) as f64,
        cpu * 1000.0 / texts.len().max(1) as f64,
    );
    embedder.remember(&texts, vectors);
    if let Some(cache) = &embedder.cache {
        embedder.save(cache)?;
    }
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
        "model {}: {} layers, {} dimensions, at most {} tokens per text, fingerprint {:016x}",
        dir.display(),
        model.layers(),
        model.dimensions(),
        model.max_tokens(),
        model.fingerprint()
    );
    let share = model.semantic_share();
    let fingerprint = model.fingerprint();
    let embedder = std::sync::Arc::new(AdjustableShare {
        inner: Box::new(model),
        share_bits: std::sync::atomic::AtomicU32::new(share.to_bits()),
        known: std::sync::Mutex::new(std::collections::HashMap::new()),
        cache: VECTOR_CACHE
            .get()
            .map(|path| PathBuf::from(format!("{}.{fingerprint:016x}", path.display()))),
    });
    if let Some(cache) = &embedder.cache {
        embedder.load(cache)?;
    }
    Ok(embedder)
}

/// `--static-table FILE`: a static embedding table (`search-distil`'s output) to rank the
/// default rows with in place of the built-in one, with the built-in one's shares.
static STATIC_TABLE: std::sync::OnceLock<
    std::sync::Arc<tool_cli_search::static_embed::StaticEmbedder>,
> = std::sync::OnceLock::new();

/// Our index over `docs` with the built-in static table, or `--static-table`'s.
fn default_index(docs: &[tool_cli_search::doc::ToolDoc]) -> tool_cli_search::index::Index {
    match STATIC_TABLE.get() {
        Some(table) => eval::build_index_with(docs, table.clone()),
        None => eval::build_index(docs),
    }
}

/// `--vector-cache FILE`: where the model's vectors are kept between runs (one file per model
/// fingerprint, `FILE.<fingerprint>`).
static VECTOR_CACHE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

#[cfg(not(feature = "minilm"))]
fn load_minilm(
    _dir: &std::path::Path,
    _max_tokens: Option<usize>,
) -> anyhow::Result<std::sync::Arc<AdjustableShare>> {
    anyhow::bail!(
        "--minilm needs the minilm feature: cargo run --release -p tool-cli-search --features minilm --bin search-eval -- --minilm DIR"
    )
}

/// One row of the ablation: a name and the signals it ranks with, and whether it ranks with the
/// model's index (`--minilm`) instead of the hashing one.
struct Variant {
    label: String,
    signals: Signals,
    model: bool,
    /// Ranks with the hashing embedder's index (the default before the built-in static
    /// embeddings), for the before/after comparison.
    hashing: bool,
    /// Ranks with the requests' vectors through the query adapter (`--adapter`, or
    /// `--model-adapter` for a model row).
    adapted: bool,
}

/// The rows every set is measured with: BM25F alone, each signal alone on top of it, every
/// signal, every signal but one; then, with a model, the model alone and everything with it.
fn variants(with_model: bool, adapters: &Adapters) -> Vec<Variant> {
    type Switch = fn(&mut Signals) -> &mut bool;
    let switches: [(&str, Switch); 8] = [
        ("concepts", |s| &mut s.concepts),
        ("server field", |s| &mut s.server_field),
        ("parameters", |s| &mut s.parameters),
        ("embedding", |s| &mut s.embedding),
        ("actions", |s| &mut s.actions),
        ("deprecation", |s| &mut s.deprecation),
        ("rerank", |s| &mut s.rerank),
        ("late interaction", |s| &mut s.late_interaction),
    ];
    let mut rows = vec![Variant {
        label: "BM25F (no signal)".to_owned(),
        signals: Signals::NONE,
        model: false,
        hashing: false,
        adapted: false,
    }];
    for (name, switch) in switches {
        let mut signals = Signals::NONE;
        *switch(&mut signals) = true;
        rows.push(Variant {
            label: format!("+ {name} alone"),
            signals,
            model: false,
            hashing: false,
            adapted: false,
        });
    }
    rows.push(Variant {
        label: "ours (all)".to_owned(),
        signals: Signals::ALL,
        model: false,
        hashing: false,
        adapted: false,
    });
    rows.push(Variant {
        label: "ours + late interaction".to_owned(),
        signals: Signals {
            late_interaction: true,
            ..Signals::ALL
        },
        model: false,
        hashing: false,
        adapted: false,
    });
    rows.push(Variant {
        label: "ours + feedback".to_owned(),
        signals: Signals {
            feedback: true,
            ..Signals::ALL
        },
        model: false,
        hashing: false,
        adapted: false,
    });
    rows.push(Variant {
        label: "ours, hashing embedder".to_owned(),
        signals: Signals::ALL,
        model: false,
        hashing: true,
        adapted: false,
    });
    // Late interaction is not in `ALL`: its row is "ours + late interaction" above.
    for &(name, switch) in switches
        .iter()
        .filter(|(name, _)| *name != "late interaction")
    {
        let mut signals = Signals::ALL;
        *switch(&mut signals) = false;
        rows.push(Variant {
            label: format!("all − {name}"),
            signals,
            model: false,
            hashing: false,
            adapted: false,
        });
    }
    if adapters.default.is_some() {
        rows.push(Variant {
            label: "ours + query adapter".to_owned(),
            signals: Signals::ALL,
            model: false,
            hashing: false,
            adapted: true,
        });
    }
    if with_model && adapters.model.is_some() {
        rows.push(Variant {
            label: "ours + model + q. adapter".to_owned(),
            signals: Signals::ALL,
            model: true,
            hashing: false,
            adapted: true,
        });
    }
    if with_model {
        rows.push(Variant {
            label: "model alone".to_owned(),
            signals: Signals {
                embedding: true,
                ..Signals::NONE
            },
            model: true,
            hashing: false,
            adapted: false,
        });
        rows.push(Variant {
            label: "ours + model".to_owned(),
            signals: Signals::ALL,
            model: true,
            hashing: false,
            adapted: false,
        });
        rows.push(Variant {
            label: "ours + model + late int.".to_owned(),
            signals: Signals {
                late_interaction: true,
                ..Signals::ALL
            },
            model: true,
            hashing: false,
            adapted: false,
        });
        rows.push(Variant {
            label: "ours + model + feedback".to_owned(),
            signals: Signals {
                feedback: true,
                ..Signals::ALL
            },
            model: true,
            hashing: false,
            adapted: false,
        });
        rows.push(Variant {
            label: "ours + model − rerank".to_owned(),
            signals: Signals {
                rerank: false,
                ..Signals::ALL
            },
            model: true,
            hashing: false,
            adapted: false,
        });
    }
    rows
}

/// One set's figures: per row, dev and test.
struct SetFigures {
    name: String,
    tools: usize,
    requests: (usize, usize),
    bm25: (Metrics, Metrics),
    rows: Vec<(Metrics, Metrics)>,
}

fn set_name(dir: &std::path::Path) -> String {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name == "eval" {
        "ours".to_owned()
    } else {
        name
    }
}

fn load_set(
    dir: &std::path::Path,
) -> anyhow::Result<(
    Vec<tool_cli_search::doc::ToolDoc>,
    Vec<Request>,
    Vec<Request>,
)> {
    let mut catalogs = eval::parse_catalog(&read(dir, "peers.json")?)?;
    catalogs.extend(eval::parse_catalog(&read(dir, "catalog.json")?)?);
    let docs = eval::tool_docs(&catalogs);
    let dev = eval::parse_requests(&read(dir, "dev.tsv")?)?;
    let test = eval::parse_requests(&read(dir, "test.tsv")?)?;
    eval::check_labels(&dev, &docs)?;
    eval::check_labels(&test, &docs)?;
    Ok((docs, dev, test))
}

/// `--adapter` and `--model-adapter`: a query adapter file, or a directory of one per set left
/// out (`adapter.rs`).
#[derive(Default)]
struct Adapters {
    default: Option<PathBuf>,
    model: Option<PathBuf>,
}

fn measure_set(
    dir: &std::path::Path,
    variants: &[Variant],
    minilm: Option<(&std::path::Path, Option<usize>)>,
    with_test: bool,
    adapters: &Adapters,
) -> anyhow::Result<SetFigures> {
    let (docs, dev, test) = load_set(dir)?;
    let index = default_index(&docs);
    let hashing_index = eval::build_hashing_index(&docs);
    let adapted_index = match adapter::adapter_for(adapters.default.as_deref(), &set_name(dir))? {
        Some(query_adapter) => Some(eval::build_index_with(
            &docs,
            adapter::adapted(
                std::sync::Arc::new(tool_cli_search::static_embed::BuiltInEmbedder),
                Some(&query_adapter),
            )?,
        )),
        None => None,
    };
    let mut adapted_model_index = None;
    let model_index = match minilm {
        Some((model_dir, max_tokens)) => {
            let embedder = load_minilm(model_dir, max_tokens)?;
            let model_index = build_model_index(&docs, &embedder)?;
            if let Some(query_adapter) =
                adapter::adapter_for(adapters.model.as_deref(), &set_name(dir))?
            {
                adapted_model_index = Some(eval::build_index_with(
                    &docs,
                    adapter::adapted(embedder.clone(), Some(&query_adapter))?,
                ));
            }
            Some(model_index)
        }
        None => None,
    };
    let test = if with_test { test } else { Vec::new() };
    // Reciprocal-rank fusion (k = 60) of our ranking without the embedding and the model's
    // ranking alone: the other way of fusing two rankers, measured beside the linear one.
    let fused = |requests: &[Request]| {
        let Some(model_index) = &model_index else {
            return None;
        };
        let lexical = Signals {
            embedding: false,
            ..Signals::ALL
        };
        let model_only = Signals {
            embedding: true,
            ..Signals::NONE
        };
        let ranks = requests
            .iter()
            .map(|request| {
                let mut scores: std::collections::HashMap<(String, String), f64> =
                    std::collections::HashMap::new();
                for (index, signals) in [(&index, lexical), (model_index, model_only)] {
                    for (rank, tool) in eval::ranking(index, &request.query, signals)
                        .into_iter()
                        .enumerate()
                    {
                        *scores.entry(tool).or_default() += 1.0 / (60.0 + rank as f64 + 1.0);
                    }
                }
                let mut order: Vec<((String, String), f64)> = scores.into_iter().collect();
                order.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                order
                    .iter()
                    .position(|(tool, _)| request.expected.contains(tool))
                    .map(|position| position + 1)
            })
            .collect::<Vec<_>>();
        Some(Metrics::from_ranks(&ranks))
    };
    let rrf = fused(&dev).zip(fused(&test));
    let measure = |requests: &[Request], variant: &Variant| {
        let index = match (&model_index, variant.model) {
            (Some(_), true) if variant.adapted => adapted_model_index
                .as_ref()
                .expect("an adapted row only with its adapter"),
            (Some(model_index), true) => model_index,
            _ if variant.adapted => adapted_index
                .as_ref()
                .expect("an adapted row only with its adapter"),
            _ if variant.hashing => &hashing_index,
            _ => &index,
        };
        Metrics::from_ranks(&eval::ranks_ours_with(index, requests, variant.signals))
    };
    Ok(SetFigures {
        name: set_name(dir),
        tools: docs.len(),
        requests: (dev.len(), test.len()),
        bm25: (
            Metrics::from_ranks(&eval::ranks_bm25(&docs, &dev)),
            Metrics::from_ranks(&eval::ranks_bm25(&docs, &test)),
        ),
        rows: variants
            .iter()
            .map(|variant| (measure(&dev, variant), measure(&test, variant)))
            .chain(rrf)
            .collect(),
    })
}

fn cells(metrics: &Metrics) -> String {
    if metrics.requests == 0 {
        return "     – /     – /     –".to_owned();
    }
    format!(
        "{:.3} / {:.3} / {:.3}",
        metrics.recall_at_1, metrics.recall_at_5, metrics.mrr
    )
}

fn print_table(title: &str, labels: &[String], rows: &[(Metrics, Metrics)]) {
    println!("\n{title}\n");
    println!("| ranking                    | dev R@1 / R@5 / MRR   | test R@1 / R@5 / MRR  |");
    println!("|----------------------------|-----------------------|-----------------------|");
    for (label, (dev, test)) in labels.iter().zip(rows) {
        println!("| {label:<26} | {} | {} |", cells(dev), cells(test));
    }
}

/// The mean of each figure over sets (each set counts once, whatever its size).
fn macro_average(figures: &[&Metrics]) -> Metrics {
    let count = figures.len().max(1) as f64;
    let mean = |part: fn(&Metrics) -> f64| figures.iter().map(|m| part(m)).sum::<f64>() / count;
    Metrics {
        requests: figures.iter().map(|m| m.requests).sum(),
        recall_at_1: mean(|m| m.recall_at_1),
        recall_at_5: mean(|m| m.recall_at_5),
        recall_at_10: mean(|m| m.recall_at_10),
        mrr: mean(|m| m.mrr),
    }
}

/// `--train`: the rerank weights learned on the dev halves, with and without the model, and
/// how well they do on a set left out (`train.rs`).
fn train_on_dev_halves(
    data_dirs: &[PathBuf],
    minilm_dir: Option<&std::path::Path>,
    max_tokens: Option<usize>,
    l2: f64,
) -> anyhow::Result<()> {
    let mut names = Vec::new();
    let mut hashing = Vec::new();
    let mut model = Vec::new();
    for dir in data_dirs {
        let (docs, dev, _) = load_set(dir)?;
        names.push(set_name(dir));
        let index = default_index(&docs);
        hashing.push(train::examples(&index, &dev, Signals::ALL));
        if let Some(model_dir) = minilm_dir {
            let embedder = load_minilm(model_dir, max_tokens)?;
            let model_index = build_model_index(&docs, &embedder)?;
            model.push(train::examples(&model_index, &dev, Signals::ALL));
            if let Some(cache) = &embedder.cache {
                embedder.save(cache)?;
            }
        }
    }
    use tool_cli_search::search::WEIGHTS;
    train::report("default embedder", &names, &hashing, &WEIGHTS, l2);
    if !model.is_empty() {
        train::report("with the model", &names, &model, &WEIGHTS, l2);
    }
    Ok(())
}

/// `--abstention`: per set and half, with the answer present how many best hits are claimed
/// confident and how many of those are right, and with the answer hidden how many are still
/// claimed confident; the macro-average over the sets. `--abstention-dump FILE` also writes
/// the per-request evidence (dev halves) the thresholds are chosen from.
fn measure_abstention(
    data_dirs: &[PathBuf],
    minilm_dir: Option<&std::path::Path>,
    max_tokens: Option<usize>,
    with_test: bool,
    dump_file: Option<PathBuf>,
) -> anyhow::Result<()> {
    let mut dump = dump_file.as_ref().map(|_| String::new());
    let mut rows: Vec<(String, eval::Abstention, Option<eval::Abstention>)> = Vec::new();
    for dir in data_dirs {
        let (docs, dev, test) = load_set(dir)?;
        let index = match minilm_dir {
            Some(model_dir) => {
                let embedder = load_minilm(model_dir, max_tokens)?;
                build_model_index(&docs, &embedder)?
            }
            None => default_index(&docs),
        };
        let mut set_dump = dump.as_ref().map(|_| String::new());
        let dev_figures = eval::abstention(&index, &dev, &mut set_dump);
        if let (Some(dump), Some(set_dump)) = (dump.as_mut(), set_dump) {
            for line in set_dump.lines() {
                dump.push_str(&format!("{}\t{line}\n", set_name(dir)));
            }
        }
        let test_figures = with_test.then(|| eval::abstention(&index, &test, &mut None));
        rows.push((set_name(dir), dev_figures, test_figures));
    }
    let mean = |figures: Vec<eval::Abstention>| {
        let n = figures.len().max(1) as f64;
        eval::Abstention {
            claimed: figures.iter().map(|f| f.claimed).sum::<f64>() / n,
            precision: figures.iter().map(|f| f.precision).sum::<f64>() / n,
            unsure_right: figures.iter().map(|f| f.unsure_right).sum::<f64>() / n,
            false_confidence: figures.iter().map(|f| f.false_confidence).sum::<f64>() / n,
        }
    };
    let macro_row = (
        "macro".to_owned(),
        mean(rows.iter().map(|row| row.1).collect()),
        with_test.then(|| mean(rows.iter().filter_map(|row| row.2).collect())),
    );
    rows.push(macro_row);
    println!(
        "\n| set | half | claimed confident | right when confident | R@1 when unsure | answer hidden, still confident |"
    );
    println!("|---|---|---|---|---|---|");
    for (name, dev, test) in &rows {
        for (half, figures) in [("dev", Some(*dev)), ("test", *test)] {
            if let Some(f) = figures {
                println!(
                    "| {name} | {half} | {:.3} | {:.3} | {:.3} | {:.3} |",
                    f.claimed, f.precision, f.unsure_right, f.false_confidence
                );
            }
        }
    }
    if let (Some(file), Some(dump)) = (dump_file, dump) {
        std::fs::write(&file, dump).with_context(|| format!("cannot write {}", file.display()))?;
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let mut data_dirs: Vec<PathBuf> = Vec::new();
    let mut show_misses = None;
    let mut show_losses = false;
    let mut explain = None;
    let mut minilm_dir: Option<PathBuf> = None;
    let mut max_tokens: Option<usize> = None;
    let mut with_test = true;
    let mut train_weights = false;
    let mut l2 = 1e-3;
    let mut abstention_dump: Option<Option<PathBuf>> = None;
    let mut adapters = Adapters::default();
    let mut export_pairs: Option<PathBuf> = None;
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--misses" => show_misses = Some("test.tsv"),
            "--dev-misses" => show_misses = Some("dev.tsv"),
            "--dev-losses" => show_losses = true,
            "--dev-only" => with_test = false,
            "--train" => train_weights = true,
            "--abstention" => abstention_dump = Some(None),
            "--abstention-dump" => {
                abstention_dump = Some(arguments.next().map(PathBuf::from));
            }
            "--l2" => {
                let value = arguments.next().unwrap_or_default();
                l2 = value
                    .parse()
                    .with_context(|| format!("--l2 takes a number, not {value:?}"))?;
            }
            "--vector-cache" => {
                let path = arguments.next().map(PathBuf::from).unwrap_or_default();
                VECTOR_CACHE.get_or_init(|| path);
            }
            "--static-table" => {
                let path = arguments.next().map(PathBuf::from).unwrap_or_default();
                let bytes = std::fs::read(&path)
                    .with_context(|| format!("cannot read the static table {}", path.display()))?;
                let (matched, unmatched) = tool_cli_search::static_embed::BUILT_IN_SHARE;
                let table = tool_cli_search::static_embed::StaticEmbedder::from_bytes(&bytes)
                    .with_context(|| format!("{} is no static table", path.display()))?
                    .with_share(matched, unmatched);
                STATIC_TABLE.get_or_init(|| std::sync::Arc::new(table));
            }
            "--explain" => explain = arguments.next(),
            "--adapter" => adapters.default = arguments.next().map(PathBuf::from),
            "--model-adapter" => adapters.model = arguments.next().map(PathBuf::from),
            "--export-pairs" => export_pairs = arguments.next().map(PathBuf::from),
            "--minilm" => minilm_dir = arguments.next().map(PathBuf::from),
            "--max-tokens" => {
                let value = arguments.next().unwrap_or_default();
                max_tokens = Some(value.parse().with_context(|| {
                    format!("--max-tokens takes a number of tokens (2 to 512), not {value:?}")
                })?);
            }
            other if other.starts_with("--") => anyhow::bail!(
                "unknown option {other}; expected --misses, --dev-misses, --dev-losses, --dev-only, --train, --abstention, --abstention-dump FILE, --l2 X, --explain QUERY, --minilm DIR, --max-tokens N, --vector-cache FILE, --static-table FILE, --adapter FILE|DIR, --model-adapter FILE|DIR, --export-pairs DIR"
            ),
            other => data_dirs.push(PathBuf::from(other)),
        }
    }
    if data_dirs.is_empty() {
        data_dirs.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("eval"));
    }

    if let Some(out) = export_pairs {
        for dir in &data_dirs {
            let (docs, dev, _) = load_set(dir)?;
            let set = set_name(dir);
            adapter::export_pairs(
                &out.join("static"),
                &set,
                &docs,
                &dev,
                &tool_cli_search::static_embed::BuiltInEmbedder,
            )?;
            if let Some(model_dir) = &minilm_dir {
                let embedder = load_minilm(model_dir, max_tokens)?;
                drop(build_model_index(&docs, &embedder)?);
                adapter::export_pairs(&out.join("minilm"), &set, &docs, &dev, &*embedder)?;
                if let Some(cache) = &embedder.cache {
                    embedder.save(cache)?;
                }
            }
        }
        return Ok(());
    }
    if train_weights {
        return train_on_dev_halves(&data_dirs, minilm_dir.as_deref(), max_tokens, l2);
    }
    if let Some(dump) = abstention_dump {
        return measure_abstention(
            &data_dirs,
            minilm_dir.as_deref(),
            max_tokens,
            with_test,
            dump,
        );
    }

    if explain.is_some() || show_misses.is_some() || show_losses {
        let dir = &data_dirs[0];
        let (docs, dev, test) = load_set(dir)?;
        let index = match &minilm_dir {
            Some(model_dir) => {
                let embedder = load_minilm(model_dir, max_tokens)?;
                build_model_index(&docs, &embedder)?
            }
            None => default_index(&docs),
        };
        if let Some(text) = explain {
            let outcome = index.search(&tool_cli_search::search::Query::new(&text))?;
            println!("confidence: {}", outcome.confidence.as_str());
            for hit in outcome.hits {
                println!(
                    "{:>6.3}  lexical {:>6.2}  semantic {:>5.2}  rerank {:>4.2}{}  {}/{}",
                    hit.score,
                    hit.why.lexical,
                    hit.why.semantic,
                    hit.why.rerank,
                    if hit.why.deprecated {
                        "  deprecated"
                    } else {
                        ""
                    },
                    hit.server,
                    hit.tool
                );
            }
            return Ok(());
        }
        let first_hit = |text: &str| {
            index
                .search(&tool_cli_search::search::Query::new(text))
                .ok()
                .and_then(|o| o.hits.into_iter().next())
                .map(|h| format!("{}/{}", h.server, h.tool))
                .unwrap_or_default()
        };
        if show_losses {
            // The dev requests plain BM25 ranks first and ours does not: where ours loses.
            let ours = eval::ranks_ours(&index, &dev);
            let bm25 = eval::ranks_bm25(&docs, &dev);
            println!("dev requests BM25 ranks first and ours does not:");
            for ((request, ours), bm25) in dev.iter().zip(ours).zip(bm25) {
                if bm25 == Some(1) && ours != Some(1) {
                    let (server, tool) = &request.expected[0];
                    println!(
                        "  ours {:>4}  {server}/{tool}  got {}  <- {}",
                        ours.map_or("-".to_owned(), |r| r.to_string()),
                        first_hit(&request.query),
                        request.query
                    );
                }
            }
        }
        if let Some(file) = show_misses {
            let requests = if file == "dev.tsv" { &dev } else { &test };
            let ranks = eval::ranks_ours(&index, requests);
            println!("\nrequests of {file} ours does not rank first:");
            for (request, rank) in requests.iter().zip(ranks) {
                if rank != Some(1) {
                    let (server, tool) = &request.expected[0];
                    println!(
                        "  rank {:>4}  {server}/{tool}  got {}  <- {}",
                        rank.map_or("-".to_owned(), |r| r.to_string()),
                        first_hit(&request.query),
                        request.query
                    );
                }
            }
        }
        return Ok(());
    }

    let variants = variants(minilm_dir.is_some(), &adapters);
    let mut labels: Vec<String> = vec!["BM25 (baseline)".to_owned()];
    labels.extend(variants.iter().map(|variant| variant.label.clone()));
    if minilm_dir.is_some() {
        labels.push("RRF(ours − emb., model)".to_owned());
    }
    let mut sets = Vec::new();
    for dir in &data_dirs {
        let minilm = minilm_dir
            .as_deref()
            .map(|model_dir| (model_dir, max_tokens));
        let figures = measure_set(dir, &variants, minilm, with_test, &adapters)?;
        let mut rows = vec![figures.bm25];
        rows.extend(figures.rows.iter().copied());
        print_table(
            &format!(
                "{}: {} tools, {} dev / {} test requests",
                figures.name, figures.tools, figures.requests.0, figures.requests.1
            ),
            &labels,
            &rows,
        );
        sets.push(rows);
    }
    if sets.len() > 1 {
        let averaged: Vec<(Metrics, Metrics)> = (0..labels.len())
            .map(|row| {
                let dev: Vec<&Metrics> = sets.iter().map(|set| &set[row].0).collect();
                let test: Vec<&Metrics> = sets.iter().map(|set| &set[row].1).collect();
                (macro_average(&dev), macro_average(&test))
            })
            .collect();
        let names: Vec<String> = data_dirs.iter().map(|dir| set_name(dir)).collect();
        print_table(
            &format!(
                "macro-average over {} sets ({})",
                sets.len(),
                names.join(", ")
            ),
            &labels,
            &averaged,
        );
    }
    Ok(())
}
