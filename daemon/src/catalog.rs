//! A server's tools as discovered, each kept as the exact JSON the server sent.
//!
//! The JSON is what `describeTool` returns (unnarrowed). Everything the daemon decides from a
//! tool is read from that JSON once, here, when the catalog is built: its name, description,
//! whether it has an `outputSchema`, and its behaviour hints ([`ToolHints`]), which policy,
//! retries and the degradation cache all consult. Each tool's argument validator is compiled on
//! first use, so a server with thousands of tools costs nothing at start-up for the tools nobody
//! calls.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::overrides::ToolOverride;
use crate::validate::ArgumentValidator;

/// The tools of one server, in the order it listed them.
#[derive(Default)]
pub struct Catalog {
    tools: Vec<Arc<CatalogTool>>,
    by_name: HashMap<String, usize>,
    /// How many tools no override hides, counted once here so that `listServers` does not walk
    /// ten thousand tools per request to count them.
    unhidden: usize,
}

/// One tool.
pub struct CatalogTool {
    /// Its name, unique within the catalog.
    pub name: String,
    /// Its description (`""` when the server gave none).
    pub description: String,
    /// Whether it declares an `outputSchema` object.
    pub has_output_schema: bool,
    /// Its behaviour hints, from `annotations`.
    pub hints: ToolHints,
    /// It runs only as an MCP task (`execution.taskSupport: "required"`), which the daemon does
    /// not run: calls are refused with that reason before anything is sent.
    pub task_required: bool,
    /// Left out of listings, search and routing by a config override.
    pub hidden: bool,
    /// Its routing priority from a config override (else the server's applies).
    pub priority: Option<i64>,
    /// The tool exactly as the server listed it.
    pub raw: Value,
    validator: OnceLock<Result<Arc<ArgumentValidator>, String>>,
}

/// What a tool says about its behaviour (MCP `annotations`), parsed once.
///
/// Every hint is `true` only when the server sent the JSON boolean `true`: missing hints,
/// missing annotations and non-boolean values all mean `false`. MCP's own defaults for
/// `destructiveHint` and `openWorldHint` are `true`, but an untrusted server's hints are only
/// ever used to be *more* careful than without them (confirmation for destructive tools is also
/// configurable per server), so a missing hint never relaxes anything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolHints {
    /// `readOnlyHint`: it does not modify its environment.
    pub read_only: bool,
    /// `destructiveHint`: it may perform destructive updates.
    pub destructive: bool,
    /// `idempotentHint`: calling it again with the same arguments has no further effect.
    pub idempotent: bool,
    /// `openWorldHint`: it interacts with an open world of external entities.
    pub open_world: bool,
}

impl ToolHints {
    /// The hints of a tool's `annotations` object (`Value::Null` when it has none).
    pub fn from_annotations(annotations: &Value) -> ToolHints {
        let hint = |name: &str| annotations.get(name).and_then(Value::as_bool) == Some(true);
        ToolHints {
            read_only: hint("readOnlyHint"),
            destructive: hint("destructiveHint"),
            idempotent: hint("idempotentHint"),
            open_world: hint("openWorldHint"),
        }
    }

    /// Whether one request may call the tool more than once (a retry after a failure that may
    /// have reached the server): it is read-only or idempotent.
    pub fn safe_to_resend(&self) -> bool {
        self.read_only || self.idempotent
    }

    /// Whether its results may be cached and served while the server fails: it is read-only
    /// (`idempotentHint` is not enough: an idempotent write still writes).
    pub fn cacheable(&self) -> bool {
        self.read_only
    }
}

impl Catalog {
    /// Builds a catalog from `tools/list` items; items without a string `name` are skipped, and
    /// of two tools with the same name the first wins.
    pub fn new(items: Vec<Value>) -> Catalog {
        Catalog::with_overrides(items, &BTreeMap::new()).0
    }

    /// Builds a catalog and applies the config's overrides; also returns each override that was
    /// refused (a type clash) or names a tool the server does not have.
    pub fn with_overrides(
        items: Vec<Value>,
        overrides: &BTreeMap<String, ToolOverride>,
    ) -> (Catalog, Vec<String>) {
        let mut catalog = Catalog::default();
        let mut problems = Vec::new();
        for mut raw in items {
            let Some(name) = raw.get("name").and_then(Value::as_str).map(str::to_owned) else {
                tracing::warn!(tool = %preview(&raw), "ignoring a tool without a name");
                continue;
            };
            if catalog.by_name.contains_key(&name) {
                tracing::warn!(tool = %name, "ignoring a second tool of the same name");
                continue;
            }
            let mut hidden = false;
            let mut priority = None;
            if let Some(tool_override) = overrides.get(&name) {
                match crate::overrides::apply(&mut raw, tool_override) {
                    Ok(_) => {
                        hidden = tool_override.hidden;
                        priority = tool_override.priority;
                    }
                    Err(problem) => problems.push(problem),
                }
            }
            let description = raw
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let has_output_schema = raw.get("outputSchema").is_some_and(Value::is_object);
            let hints = ToolHints::from_annotations(raw.get("annotations").unwrap_or(&Value::Null));
            let task_required = raw
                .pointer("/execution/taskSupport")
                .and_then(Value::as_str)
                == Some("required");
            catalog.by_name.insert(name.clone(), catalog.tools.len());
            catalog.unhidden += usize::from(!hidden);
            catalog.tools.push(Arc::new(CatalogTool {
                name,
                description,
                has_output_schema,
                hints,
                task_required,
                hidden,
                priority,
                raw,
                validator: OnceLock::new(),
            }));
        }
        for name in overrides.keys() {
            if !catalog.by_name.contains_key(name) {
                problems.push(format!(
                    "tools.{name}: the server has no tool \"{name}\", so its override is unused"
                ));
            }
        }
        (catalog, problems)
    }

    /// How many tools it has.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// How many tools no override hides: what a grant that sees every tool of the server
    /// (`policy::sees_every_tool`) has listed.
    pub fn unhidden_len(&self) -> usize {
        self.unhidden
    }

    /// Whether it has no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Every tool, in the server's order.
    pub fn tools(&self) -> &[Arc<CatalogTool>] {
        &self.tools
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<CatalogTool>> {
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

/// The start of a tool's JSON, for a log line about it: a hostile server must not be able to
/// fill the log with one huge nameless tool.
fn preview(raw: &Value) -> String {
    const MAX: usize = 200;
    let text = raw.to_string();
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
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

    #[test]
    fn hints_are_true_only_for_the_boolean_true() {
        let hints = ToolHints::from_annotations(&json!({
            "readOnlyHint": true, "destructiveHint": "yes", "idempotentHint": 1,
            "openWorldHint": true
        }));
        assert_eq!(
            hints,
            ToolHints {
                read_only: true,
                destructive: false,
                idempotent: false,
                open_world: true
            }
        );
        assert_eq!(
            ToolHints::from_annotations(&Value::Null),
            ToolHints::default()
        );
        assert!(ToolHints::from_annotations(&json!({"idempotentHint": true})).safe_to_resend());
        assert!(!ToolHints::from_annotations(&json!({"idempotentHint": true})).cacheable());
        assert!(ToolHints::from_annotations(&json!({"readOnlyHint": true})).cacheable());
    }

    #[test]
    fn a_huge_nameless_tool_is_logged_as_a_preview() {
        let long = "x".repeat(10_000);
        let text = preview(&json!({ "description": long }));
        assert!(text.chars().count() <= 201, "{}", text.len());
        assert!(text.ends_with('…'));
    }
}
