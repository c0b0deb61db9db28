//! A server's tools as discovered, each kept as the exact JSON the server sent.
//!
//! The JSON is what `describeTool` returns (unnarrowed). Everything the daemon decides from a
//! tool is read from that JSON once, here, when the catalog is built: its name, description,
//! whether it has an `outputSchema`, and its behaviour hints ([`ToolHints`]), which policy,
//! retries and the degradation cache all consult.
//!
//! A server may list ten thousand tools, so what is kept per tool is small: the JSON once, as
//! compact text (a `serde_json::Value` tree of the same tool takes several times its size), the
//! few facts above, and the name. The description is not copied: it is read where it lies in
//! the tool's JSON text (a decoded copy is kept only when the JSON escapes a character in it).
//! Lookups by name go through a name-sorted list of positions rather than a map holding a second
//! copy of every name. Argument validators are compiled on first use and kept in a bounded cache
//! shared by the catalog's tools (`validator_cache.rs`), so tools nobody calls cost nothing and
//! calling all of them does not keep thousands of compiled schemas.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

pub mod flags;
pub(crate) mod overrides;
pub mod pin_hold;
pub mod pin_items;
mod task_support;
pub(crate) mod validate;
mod validator_cache;

use overrides::ToolOverride;
pub use task_support::TaskSupport;
use validate::{ArgumentValidator, InvalidSchema};
use validator_cache::ValidatorCache;

/// How many compiled validators a catalog keeps: the tools called recently, however many it has.
const CACHED_VALIDATORS: usize = 256;

/// The tools of one server, in the order it listed them.
#[derive(Default)]
pub struct Catalog {
    tools: Vec<Arc<CatalogTool>>,
    /// Positions in `tools`, sorted by name: a lookup is a binary search over the names the
    /// tools already hold.
    by_name: Vec<u32>,
    /// How many tools no override hides, counted once here so that `listServers` does not walk
    /// ten thousand tools per request to count them.
    unhidden: usize,
    /// What the pin check holds back (`pin_hold.rs`): set when the catalog is published and
    /// again when the pin store is reloaded, in place (the tools' `pin_held` flags with it).
    pin_hold: std::sync::RwLock<Arc<pin_hold::PinHold>>,
}

/// One tool.
pub struct CatalogTool {
    /// Whether it declares an `outputSchema` object.
    pub has_output_schema: bool,
    /// Its behaviour hints, from `annotations`.
    pub hints: ToolHints,
    /// Whether it runs as an MCP task (`execution.taskSupport`): a required one the pipeline
    /// runs as a task and waits for (`pipeline/tasks/`), a forbidden one refuses a caller's
    /// `task` before anything is sent.
    pub task_support: TaskSupport,
    /// Left out of listings, search and routing by a config override.
    pub hidden: bool,
    /// A config override changed it (its JSON carries `_meta["tool-cli/overridden"]`).
    pub overridden: bool,
    /// Its routing priority from a config override (else the server's applies).
    pub priority: Option<i64>,
    /// Held back by the pin check: it changed or appeared since its server was pinned (the
    /// catalog's [`pin_hold::PinHold`] has the refusal). An atomic so that reloading the pin
    /// store re-marks the published catalog without rebuilding it.
    pin_held: std::sync::atomic::AtomicBool,
    /// What all the catalog's tools share: its text and its compiled validators.
    shared: Arc<Shared>,
    /// Where in the text this tool's JSON is.
    raw: Span,
    /// Where in the text its name is (unique within the catalog): inside its JSON, or after it
    /// when the JSON escapes a character of it. A span, not a `String`: ten thousand tools are
    /// ten thousand allocations fewer.
    name: Span,
    /// Where in the text its description is: inside its JSON, or after it when the JSON
    /// escapes a character of it (empty when it has none).
    description: Span,
    /// Its position in the catalog: its key in the validator cache.
    position: u32,
}

/// One allocation for the catalog's text and one for its validators, whatever its size.
struct Shared {
    /// Every tool's compact JSON (after overrides), back to back; after a tool's JSON, the
    /// decoded text of its name and description when the JSON escapes a character in them.
    text: Box<str>,
    /// The compiled validators, by tool position.
    validators: ValidatorCache,
}

/// A byte range of a catalog's text, in half the size of a `Range<usize>`.
#[derive(Clone, Copy)]
struct Span {
    start: u32,
    end: u32,
}

impl Span {
    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// `start..end` of a text the build keeps under `u32::MAX` bytes.
fn span(start: usize, end: usize) -> Span {
    Span {
        start: start as u32,
        end: end as u32,
    }
}

/// Where a tool's `name` and `description` lie in its JSON text: read without copying.
#[derive(serde::Deserialize)]
struct Located<'a> {
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    description: Option<&'a RawValue>,
}

/// Where the content of `found`, a JSON string within `json`, lies in `json`; `None` when it is
/// not a string, or when the JSON escapes a character in it (the content then differs from the
/// JSON's bytes).
fn content_range(json: &str, found: &RawValue) -> Option<std::ops::Range<usize>> {
    let quoted = found.get();
    if quoted.len() < 2 || !quoted.starts_with('"') || quoted.contains('\\') {
        return None;
    }
    let start = (quoted.as_ptr() as usize).checked_sub(json.as_ptr() as usize)? + 1;
    Some(start..start + quoted.len() - 2)
}

/// What the first pass of a build notes about a tool.
struct Facts {
    raw: Span,
    name: Span,
    description: Span,
    has_output_schema: bool,
    hints: ToolHints,
    task_support: TaskSupport,
    hidden: bool,
    overridden: bool,
    priority: Option<i64>,
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
    ///
    /// It works in two passes so that what the catalog keeps is not scattered over the memory
    /// the parsed `items` occupied: scattered, each small kept allocation would pin a page of
    /// freed tree (a `Value` tree is about fifteen times the size of its JSON), and the daemon's
    /// resident memory would stay at the size of the trees. The first pass writes everything
    /// kept as text into one buffer (a single large allocation) and notes each tool's facts in
    /// one vector; the items are then dropped, and only the second pass makes the per-tool
    /// allocations.
    pub fn with_overrides(
        items: Vec<Value>,
        overrides: &BTreeMap<String, ToolOverride>,
    ) -> (Catalog, Vec<String>) {
        let mut problems = Vec::new();
        // Bytes, so that serde_json writes each tool's JSON straight into it; always UTF-8.
        let mut text: Vec<u8> = Vec::new();
        let mut facts: Vec<Facts> = Vec::with_capacity(items.len());
        {
            // Names seen so far, to skip a second tool of the same name.
            let mut seen = std::collections::HashSet::new();
            for mut raw in items {
                let Some(name) = raw.get("name").and_then(Value::as_str).map(str::to_owned) else {
                    tracing::warn!(tool = %preview(&raw), "ignoring a tool without a name");
                    continue;
                };
                if facts.len() >= u32::MAX as usize || text.len() >= (u32::MAX as usize) / 2 {
                    tracing::warn!(tool = %name, "ignoring tools past the catalog's capacity");
                    break;
                }
                if !seen.insert(name.clone()) {
                    tracing::warn!(tool = %name, "ignoring a second tool of the same name");
                    continue;
                }
                let mut hidden = false;
                let mut priority = None;
                if let Some(tool_override) = overrides.get(&name) {
                    match crate::catalog::overrides::apply(&mut raw, tool_override) {
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
                    .unwrap_or_default();
                let hints =
                    ToolHints::from_annotations(raw.get("annotations").unwrap_or(&Value::Null));
                let raw_start = text.len();
                serde_json::to_writer(&mut text, &raw).expect("a JSON value encodes");
                let raw_end = text.len();
                // The name and the description as they lie in the JSON just written, when its
                // bytes are their text (no escapes): nothing is copied.
                let (name_at, description_at) = {
                    let json =
                        std::str::from_utf8(&text[raw_start..]).expect("serde_json writes UTF-8");
                    let located: Located<'_> = serde_json::from_str(json).unwrap_or(Located {
                        name: None,
                        description: None,
                    });
                    let within = |found: Option<&RawValue>, value: &str| {
                        found
                            .and_then(|found| content_range(json, found))
                            .filter(|range| json[range.clone()] == *value)
                            .map(|range| span(raw_start + range.start, raw_start + range.end))
                    };
                    (
                        within(located.name, &name),
                        within(located.description, description),
                    )
                };
                let mut decoded = |value: &str| {
                    let start = text.len();
                    text.extend_from_slice(value.as_bytes());
                    span(start, text.len())
                };
                let name_at = name_at.unwrap_or_else(|| decoded(&name));
                let description_at = description_at.unwrap_or_else(|| decoded(description));
                facts.push(Facts {
                    raw: span(raw_start, raw_end),
                    name: name_at,
                    description: description_at,
                    has_output_schema: raw.get("outputSchema").is_some_and(Value::is_object),
                    hints,
                    task_support: TaskSupport::of(raw.pointer("/execution/taskSupport")),
                    hidden,
                    overridden: raw.pointer("/_meta/tool-cli~1overridden").is_some(),
                    priority,
                });
            }
            // `items` (consumed above) and `seen` are gone here, before anything kept is made.
        }
        let shared = Arc::new(Shared {
            text: String::from_utf8(text)
                .expect("the catalog's text is JSON and strings")
                .into_boxed_str(),
            validators: ValidatorCache::new(CACHED_VALIDATORS),
        });
        let mut catalog = Catalog {
            tools: Vec::with_capacity(facts.len()),
            by_name: Vec::new(),
            unhidden: 0,
            pin_hold: Default::default(),
        };
        for (position, facts) in facts.into_iter().enumerate() {
            catalog.unhidden += usize::from(!facts.hidden);
            catalog.tools.push(Arc::new(CatalogTool {
                name: facts.name,
                has_output_schema: facts.has_output_schema,
                hints: facts.hints,
                task_support: facts.task_support,
                hidden: facts.hidden,
                overridden: facts.overridden,
                priority: facts.priority,
                pin_held: Default::default(),
                shared: Arc::clone(&shared),
                raw: facts.raw,
                description: facts.description,
                position: position as u32,
            }));
        }
        let tools = &catalog.tools;
        let mut by_name: Vec<u32> = (0..tools.len() as u32).collect();
        by_name.sort_unstable_by(|&a, &b| tools[a as usize].name().cmp(tools[b as usize].name()));
        catalog.by_name = by_name;
        for name in overrides.keys() {
            if catalog.get(name).is_none() {
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

    /// How many tools neither an override nor the pin check hides: what a grant that sees
    /// every tool of the server (`policy::sees_every_tool`) has listed.
    pub fn unhidden_len(&self) -> usize {
        self.unhidden - self.pin_hold().held_count()
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
        let tools = &self.tools;
        self.by_name
            .binary_search_by(|&at| tools[at as usize].name().cmp(name))
            .ok()
            .map(|found| &tools[self.by_name[found] as usize])
    }

    #[cfg(test)]
    pub(crate) fn names(&self) -> Vec<String> {
        self.tools
            .iter()
            .map(|tool| tool.name().to_owned())
            .collect()
    }
}

impl CatalogTool {
    /// Whether listings, search and routing show it: no config override hides it and the pin
    /// check does not hold it back.
    pub fn is_listed(&self) -> bool {
        !self.hidden && !self.pin_held.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Its name, unique within the catalog.
    pub fn name(&self) -> &str {
        &self.shared.text[self.name.range()]
    }

    /// Its description (`""` when the server gave none, or gave something else than a string).
    pub fn description(&self) -> &str {
        &self.shared.text[self.description.range()]
    }

    /// The tool exactly as the server listed it (after overrides): what `describeTool` answers,
    /// sent as it is without being parsed again.
    pub fn raw_json(&self) -> &RawValue {
        serde_json::from_str(&self.shared.text[self.raw.range()])
            .expect("the catalog holds valid JSON")
    }

    /// The tool's JSON, parsed (a new value each time: for the rare reader that needs more than
    /// the facts kept on [`CatalogTool`]).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.shared.text[self.raw.range()])
            .expect("the catalog holds valid JSON")
    }

    /// Its `inputSchema`, parsed, if it has one.
    pub fn input_schema(&self) -> Option<Value> {
        match self.json() {
            Value::Object(mut tool) => tool.remove("inputSchema"),
            _ => None,
        }
    }

    /// Its `inputSchema`, or the schema of any object when it has none (what validation and
    /// the agent assume).
    pub fn input_schema_or_any_object(&self) -> Value {
        self.input_schema()
            .unwrap_or_else(|| serde_json::json!({"type": "object"}))
    }

    /// The compiled validator of its `inputSchema`, or why the schema is invalid.
    pub(crate) fn validator(&self) -> Result<Arc<ArgumentValidator>, InvalidSchema> {
        self.shared.validators.get_or_compile(self.position, || {
            ArgumentValidator::compile(&self.input_schema_or_any_object()).map(Arc::new)
        })
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
        assert_eq!(b.description(), "B");
        assert_eq!(b.json()["x-vendor"], 1);
        assert_eq!(
            b.raw_json().get(),
            r#"{"name":"b","description":"B","inputSchema":{"type":"object"},"x-vendor":1}"#
        );
        assert!(catalog.get("c").is_none());
        assert!(catalog.get("").is_none());
        assert!(!b.has_output_schema);
        assert!(catalog.get("a").unwrap().has_output_schema);
    }

    #[test]
    fn names_and_descriptions_are_read_from_the_json_without_a_copy() {
        let items = vec![
            json!({"name": "plain", "description": "Reads a file.", "inputSchema": {
                "type": "object", "properties": {"name": {"description": "not the tool's"}}}}),
            json!({"inputSchema": {"type": "object"}, "description": "after the schema",
                   "name": "late"}),
            json!({"name": "none"}),
        ];
        let json_bytes: usize = items.iter().map(|item| item.to_string().len()).sum();
        let catalog = Catalog::new(items);
        // Everything the catalog keeps as text is the tools' JSON: no second copy of a name or
        // a description.
        assert_eq!(catalog.tools()[0].shared.text.len(), json_bytes);
        assert_eq!(catalog.get("plain").unwrap().description(), "Reads a file.");
        assert_eq!(
            catalog.get("late").unwrap().description(),
            "after the schema"
        );
        assert_eq!(catalog.get("none").unwrap().description(), "");
    }

    #[test]
    fn escaped_names_and_descriptions_are_kept_decoded() {
        let catalog = Catalog::new(vec![
            json!({"name": "say_\"hi\"", "description": "line one\nline \u{e9} \\ two"}),
            json!({"name": "typed", "description": 42}),
            json!({"name": "après", "description": "café ☕"}),
        ]);
        let quoted = catalog
            .get("say_\"hi\"")
            .expect("found by its decoded name");
        assert_eq!(quoted.name(), "say_\"hi\"");
        assert_eq!(quoted.description(), "line one\nline é \\ two");
        assert_eq!(quoted.json()["description"], "line one\nline é \\ two");
        assert_eq!(
            catalog.get("typed").unwrap().description(),
            "",
            "not a string"
        );
        assert_eq!(catalog.get("après").unwrap().description(), "café ☕");
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
