//! A server's tools as discovered, each kept as the exact JSON the server sent.
//!
//! The JSON is what `describeTool` returns (unnarrowed); the name, description and
//! output-schema flag are read from it once for `listTools`. Each tool's argument validator is
//! compiled on first use, so a server with thousands of tools costs nothing at start-up for the
//! tools nobody calls.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::validate::ArgumentValidator;

/// The tools of one server, in the order it listed them.
#[derive(Default)]
pub(crate) struct Catalog {
    tools: Vec<Arc<CatalogTool>>,
    by_name: HashMap<String, usize>,
}

/// One tool.
pub(crate) struct CatalogTool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) has_output_schema: bool,
    /// The tool exactly as the server listed it.
    pub(crate) raw: Value,
    validator: OnceLock<Result<Arc<ArgumentValidator>, String>>,
}

impl Catalog {
    /// Builds a catalog from `tools/list` items; items without a string `name` are skipped, and
    /// of two tools with the same name the first wins.
    pub(crate) fn new(items: Vec<Value>) -> Catalog {
        let mut catalog = Catalog::default();
        for raw in items {
            let Some(name) = raw.get("name").and_then(Value::as_str).map(str::to_owned) else {
                tracing::warn!(tool = %raw, "ignoring a tool without a name");
                continue;
            };
            if catalog.by_name.contains_key(&name) {
                tracing::warn!(tool = %name, "ignoring a second tool of the same name");
                continue;
            }
            let description = raw
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let has_output_schema = raw.get("outputSchema").is_some_and(Value::is_object);
            catalog.by_name.insert(name.clone(), catalog.tools.len());
            catalog.tools.push(Arc::new(CatalogTool {
                name,
                description,
                has_output_schema,
                raw,
                validator: OnceLock::new(),
            }));
        }
        catalog
    }

    pub(crate) fn len(&self) -> usize {
        self.tools.len()
    }

    pub(crate) fn tools(&self) -> &[Arc<CatalogTool>] {
        &self.tools
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Arc<CatalogTool>> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    #[cfg(test)]
    pub(crate) fn names(&self) -> Vec<String> {
        self.tools.iter().map(|tool| tool.name.clone()).collect()
    }
}

impl CatalogTool {
    /// The compiled validator of its `inputSchema`, or why the schema is invalid.
    pub(crate) fn validator(&self) -> Result<Arc<ArgumentValidator>, String> {
        self.validator
            .get_or_init(|| {
                let schema = self
                    .raw
                    .get("inputSchema")
                    .cloned()
                    .unwrap_or_else(|| serde_json::json!({"type": "object"}));
                ArgumentValidator::compile(&schema).map(Arc::new)
            })
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_order_skips_nameless_and_duplicate_tools() {
        let catalog = Catalog::new(vec![
            json!({"name": "b", "description": "B", "inputSchema": {"type": "object"},
                   "x-vendor": 1}),
            json!({"description": "no name"}),
            json!({"name": "a", "inputSchema": {"type": "object"},
                   "outputSchema": {"type": "object"}}),
            json!({"name": "b", "description": "second"}),
        ]);
        assert_eq!(catalog.names(), vec!["b", "a"]);
        let b = catalog.get("b").unwrap();
        assert_eq!(b.description, "B");
        assert_eq!(b.raw["x-vendor"], 1);
        assert!(!b.has_output_schema);
        assert!(catalog.get("a").unwrap().has_output_schema);
    }
}
