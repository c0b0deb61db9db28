//! The query adapter's side of the evaluation: `--export-pairs DIR` writes, for every set's dev
//! half, the requests' and the tools' vectors (the built-in static embeddings', and the model's
//! with `--minilm`) for `scripts/train-query-adapter.py`; `--adapter FILE|DIR` and
//! `--model-adapter FILE|DIR` rank with a trained adapter on the requests, where a directory
//! holds one adapter per set, `SET.bin`, trained without that set (leave one set out).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use tool_cli_search::doc::ToolDoc;
use tool_cli_search::embed::{Embedder, Embedding};
use tool_cli_search::eval::Request;
use tool_cli_search::query_adapter::{AdaptedEmbedder, QueryAdapter};

/// The adapter to rank one set with: `path` itself, or `path/SET.bin` when it is a directory.
pub(crate) fn adapter_for(
    path: Option<&Path>,
    set: &str,
) -> anyhow::Result<Option<Arc<QueryAdapter>>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let file = if path.is_dir() {
        path.join(format!("{set}.bin"))
    } else {
        path.to_path_buf()
    };
    let bytes = std::fs::read(&file)
        .with_context(|| format!("cannot read the query adapter {}", file.display()))?;
    let adapter = QueryAdapter::from_bytes(&bytes)
        .with_context(|| format!("cannot use the query adapter {}", file.display()))?;
    Ok(Some(Arc::new(adapter)))
}

/// `inner` with its requests adapted by `adapter`, or `inner` itself.
pub(crate) fn adapted(
    inner: Arc<dyn Embedder>,
    adapter: Option<&Arc<QueryAdapter>>,
) -> anyhow::Result<Arc<dyn Embedder>> {
    Ok(match adapter {
        Some(adapter) => Arc::new(AdaptedEmbedder::new(inner, adapter.clone())?),
        None => inner,
    })
}

/// The tools of `docs` grouped by server as the index shards them, each with the text the
/// index embeds for it.
fn tool_texts(docs: &[ToolDoc]) -> Vec<((String, String), String)> {
    let mut servers: Vec<(String, Vec<ToolDoc>)> = Vec::new();
    for doc in docs {
        match servers.iter_mut().find(|(name, _)| *name == doc.server) {
            Some((_, shard)) => shard.push(doc.clone()),
            None => servers.push((doc.server.clone(), vec![doc.clone()])),
        }
    }
    servers
        .iter()
        .flat_map(|(server, shard)| {
            let texts = tool_cli_search::index::embedding_texts(shard);
            shard
                .iter()
                .map(|doc| (server.clone(), doc.name.clone()))
                .zip(texts)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn write_vectors(path: &Path, vectors: &[Embedding]) -> anyhow::Result<()> {
    let mut bytes = Vec::new();
    for vector in vectors {
        for value in vector.values() {
            bytes.extend_from_slice(&value.to_le_bytes());
        }
    }
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// Writes `out/SET/{tools.f32, queries.f32, labels.txt, shape.txt}` for one set's dev half:
/// the tools' vectors in shard order, the requests' vectors, per request the indices of its
/// right tools (comma-separated), and `tools requests dimensions`.
pub(crate) fn export_pairs(
    out: &Path,
    set: &str,
    docs: &[ToolDoc],
    dev: &[Request],
    embedder: &dyn Embedder,
) -> anyhow::Result<()> {
    let dir: PathBuf = out.join(set);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tools = tool_texts(docs);
    let texts: Vec<&str> = tools.iter().map(|(_, text)| text.as_str()).collect();
    // One at a time: the evaluation's model embedder answers these from the vectors it made
    // for the index in one batch.
    let tool_vectors: Vec<Embedding> = texts.iter().map(|text| embedder.embed(text)).collect();
    let queries: Vec<Embedding> = dev
        .iter()
        .map(|request| embedder.embed_query(&request.query))
        .collect();
    let mut labels = String::new();
    for request in dev {
        let indices: Vec<String> = request
            .expected
            .iter()
            .filter_map(|expected| tools.iter().position(|(key, _)| key == expected))
            .map(|index| index.to_string())
            .collect();
        labels.push_str(&indices.join(","));
        labels.push('\n');
    }
    write_vectors(&dir.join("tools.f32"), &tool_vectors)?;
    write_vectors(&dir.join("queries.f32"), &queries)?;
    std::fs::write(dir.join("labels.txt"), labels)?;
    std::fs::write(
        dir.join("shape.txt"),
        format!("{} {} {}\n", tools.len(), dev.len(), embedder.dimensions()),
    )?;
    println!(
        "{set}: {} tools, {} dev requests, {} dimensions -> {}",
        tools.len(),
        dev.len(),
        embedder.dimensions(),
        dir.display()
    );
    Ok(())
}
