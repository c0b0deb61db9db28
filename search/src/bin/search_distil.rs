//! `search-distil`: makes the static token embedding table the default build ranks with
//! (`search/static/`, `static_embed.rs`) from all-MiniLM-L6-v2, by model2vec's method: every
//! entry of the model's vocabulary through the model alone, PCA to `--dimensions` (128), SIF
//! weights from Zipf's law over the vocabulary's order (`--sif`, 1e-4), `i8` rows. Each token
//! is framed `[SEP] token [CLS]`, or `[CLS] token [SEP]` with `--sentence-order`.
//!
//! Usage (after `bash scripts/install-minilm.sh target/minilm`):
//! `cargo run --release -p tool-cli-search --features minilm --bin search-distil -- target/minilm search/static/all-minilm-l6-v2-static.bin`
//! Deterministic on one machine; another CPU's kernels may round the model's outputs otherwise
//! and move a few `i8` values by one.

use anyhow::Context;
use tool_cli_search::minilm::MiniLmEmbedder;
use tool_cli_search::static_embed::{StaticEmbedder, distilled_vectors};

fn main() -> anyhow::Result<()> {
    let mut positional = Vec::new();
    let mut dimensions = 128;
    let mut sif = 1e-4;
    let mut sentence_order = false;
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--dimensions" => {
                let value = arguments.next().unwrap_or_default();
                dimensions = value
                    .parse()
                    .with_context(|| format!("--dimensions takes a number, not {value:?}"))?;
            }
            "--sif" => {
                let value = arguments.next().unwrap_or_default();
                sif = value
                    .parse()
                    .with_context(|| format!("--sif takes a number, not {value:?}"))?;
            }
            "--sentence-order" => sentence_order = true,
            other if other.starts_with("--") => {
                anyhow::bail!(
                    "unknown option {other}; expected --dimensions N, --sif X, --sentence-order"
                )
            }
            other => positional.push(std::path::PathBuf::from(other)),
        }
    }
    let [model_dir, out] = positional.as_slice() else {
        anyhow::bail!("usage: search-distil MODEL_DIR OUT [--dimensions N] [--sif X]");
    };
    let weights = std::fs::read(model_dir.join("model.safetensors")).with_context(|| {
        format!(
            "cannot read model.safetensors in {}; run scripts/install-minilm.sh",
            model_dir.display()
        )
    })?;
    let vocabulary = std::fs::read_to_string(model_dir.join("vocab.txt"))
        .with_context(|| format!("cannot read vocab.txt in {}", model_dir.display()))?;
    let model = MiniLmEmbedder::from_bytes(&weights, &vocabulary)?;
    let started = std::time::Instant::now();
    let outputs = model.vocabulary_outputs_framed(sentence_order);
    eprintln!(
        "{} vocabulary entries through the model in {:.1} s",
        outputs.len(),
        started.elapsed().as_secs_f64()
    );
    let vectors = distilled_vectors(&outputs, dimensions, sif);
    let tokens: Vec<String> = outputs.into_iter().map(|(token, _)| token).collect();
    let table = StaticEmbedder::table_bytes(&tokens, &vectors);
    StaticEmbedder::from_bytes(&table).context("the table just made does not read back")?;
    std::fs::write(out, &table).with_context(|| format!("cannot write {}", out.display()))?;
    eprintln!("{} bytes -> {}", table.len(), out.display());
    Ok(())
}
