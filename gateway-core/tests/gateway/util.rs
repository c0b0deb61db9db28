//! Shared helpers: the evaluation catalog of real-world tool definitions and a small
//! deterministic random generator.

use std::path::PathBuf;

use serde_json::Value;

/// One server of the evaluation catalog: its name and its tools (MCP JSON).
pub(crate) struct CatalogServer {
    pub(crate) name: String,
    pub(crate) tools: Vec<Value>,
}

/// The tool search's evaluation catalogs (`search/eval/peers.json`, the real peers' tools, and
/// `search/eval/catalog.json`, 194 servers modelled on real services): ~2,000 tools.
pub(crate) fn evaluation_catalog() -> Vec<CatalogServer> {
    let directory = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../search/eval");
    let mut servers = Vec::new();
    for file in ["peers.json", "catalog.json"] {
        let text = std::fs::read_to_string(directory.join(file)).unwrap();
        let parsed: Vec<Value> = serde_json::from_str(&text).unwrap();
        for server in parsed {
            servers.push(CatalogServer {
                name: server["name"].as_str().unwrap().to_owned(),
                tools: server["tools"].as_array().unwrap().clone(),
            });
        }
    }
    servers
}

/// xorshift64*: a fixed sequence, so every run builds the same corpus.
pub(crate) struct Random(u64);

impl Random {
    pub(crate) fn new(seed: u64) -> Random {
        Random(seed.max(1))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}
