//! Which tools the model sees, and under which names.
//!
//! Pure decisions over the host's tool list: filter by the request's `servers` / `tools`, keep
//! every tool when the catalog is small, else the host's ranked `searchTools` answer cut to the
//! limit; then name each tool for the providers' pattern `^[a-zA-Z0-9_-]{1,64}$`. Tools with the
//! same name and the same input schema on several servers become one routed tool (the daemon's
//! routing picks the server and reports the rule); same name with different schemas get
//! server-qualified names. Names are made unique deterministically (sorted input, numbered
//! suffixes), and [`Catalog::resolve`] maps a name back. The set is fixed for the run so a
//! provider's prompt cache holds.

use std::collections::{BTreeMap, BTreeSet};

use crate::backend::ExposedTool;
use crate::host::ToolInfo;

/// The longest name providers accept.
pub const MAX_NAME_LEN: usize = 64;

/// The tools of a run and the map from exposed names back to them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    tools: Vec<ExposedTool>,
}

impl Catalog {
    /// Names `tools` (already filtered and limited) for the model.
    pub fn build(mut tools: Vec<ToolInfo>) -> Self {
        tools.sort_by(|a, b| (&a.name, &a.server).cmp(&(&b.name, &b.server)));
        tools.dedup_by(|a, b| a.name == b.name && a.server == b.server);
        let mut groups: BTreeMap<String, Vec<ToolInfo>> = BTreeMap::new();
        for tool in tools {
            groups.entry(tool.name.clone()).or_default().push(tool);
        }
        // (wanted name, exposed tool) before uniqueness.
        let mut wanted: Vec<(String, ExposedTool)> = Vec::new();
        for (name, group) in groups {
            let same_schema = group
                .windows(2)
                .all(|pair| pair[0].input_schema == pair[1].input_schema);
            if group.len() == 1 || same_schema {
                let servers: Vec<String> = group.iter().map(|t| t.server.clone()).collect();
                let first = &group[0];
                let description = if servers.len() > 1 {
                    format!(
                        "{} (offered by servers {}; the daemon picks one)",
                        first.description,
                        servers.join(", ")
                    )
                } else {
                    first.description.clone()
                };
                wanted.push((
                    sanitize(&name),
                    ExposedTool {
                        name: String::new(),
                        server: (servers.len() == 1).then(|| servers[0].clone()),
                        servers,
                        tool: name.clone(),
                        description,
                        input_schema: first.input_schema.clone(),
                        read_only: group.iter().all(|t| t.read_only),
                        destructive: group.iter().any(|t| t.destructive),
                    },
                ));
            } else {
                for tool in group {
                    wanted.push((
                        sanitize(&format!("{}__{}", tool.server, tool.name)),
                        ExposedTool {
                            name: String::new(),
                            server: Some(tool.server.clone()),
                            servers: vec![tool.server.clone()],
                            tool: tool.name.clone(),
                            description: format!("[{}] {}", tool.server, tool.description),
                            input_schema: tool.input_schema.clone(),
                            read_only: tool.read_only,
                            destructive: tool.destructive,
                        },
                    ));
                }
            }
        }
        let mut taken = BTreeSet::new();
        let mut exposed = Vec::with_capacity(wanted.len());
        for (name, mut tool) in wanted {
            tool.name = unique(&name, &mut taken);
            exposed.push(tool);
        }
        exposed.sort_by(|a, b| a.name.cmp(&b.name));
        Self { tools: exposed }
    }

    /// The tools, sorted by exposed name.
    pub fn tools(&self) -> &[ExposedTool] {
        &self.tools
    }

    /// The tool behind an exposed name.
    pub fn resolve(&self, name: &str) -> Option<&ExposedTool> {
        self.tools.iter().find(|tool| tool.name == name)
    }

    /// `server/tool` per tool (`*/tool` for routed ones), for results and events.
    pub fn labels(&self) -> Vec<String> {
        self.tools
            .iter()
            .map(|tool| match &tool.server {
                Some(server) => format!("{server}/{}", tool.tool),
                None => format!("*/{}", tool.tool),
            })
            .collect()
    }
}

/// `name` with every character outside `[a-zA-Z0-9_-]` replaced by `_`, cut to 64 characters
/// (long names keep a hash of the whole so two long names sharing a prefix stay apart).
pub fn sanitize(name: &str) -> String {
    let mut clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        clean.push_str("tool");
    }
    if clean.len() > MAX_NAME_LEN {
        let hash = format!("{:08x}", fnv1a(name.as_bytes()) as u32);
        clean.truncate(MAX_NAME_LEN - hash.len() - 1);
        clean.push('_');
        clean.push_str(&hash);
    }
    clean
}

/// `name`, or `name_2`, `name_3`, … (cut to fit 64), whichever is free first.
fn unique(name: &str, taken: &mut BTreeSet<String>) -> String {
    if taken.insert(name.to_owned()) {
        return name.to_owned();
    }
    for number in 2.. {
        let suffix = format!("_{number}");
        let mut candidate: String = name.chars().take(MAX_NAME_LEN - suffix.len()).collect();
        candidate.push_str(&suffix);
        if taken.insert(candidate.clone()) {
            return candidate;
        }
    }
    unreachable!("some numbered suffix is always free")
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Whether `tool` passes the request's `servers` and `tools` filters.
pub fn passes_filters(
    tool: &ToolInfo,
    servers: Option<&[String]>,
    tools: Option<&[String]>,
) -> bool {
    if let Some(servers) = servers
        && !servers.iter().any(|server| server == &tool.server)
    {
        return false;
    }
    if let Some(patterns) = tools {
        let qualified = format!("{}/{}", tool.server, tool.name);
        return patterns.iter().any(|pattern| {
            if pattern.contains('/') {
                glob(pattern, &qualified)
            } else {
                glob(pattern, &tool.name)
            }
        });
    }
    true
}

/// `*` matches any run of characters; everything else matches itself.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || !text[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(position) => rest = &rest[position + part.len()..],
            None => return false,
        }
    }
    true
}

/// The tools to expose: all of `visible` when there are at most `limit`, else the first
/// `limit` of `ranked` (the host's search answer) that are visible. A host whose search answer
/// is the full list in its own order still yields at most `limit`.
pub fn choose(
    visible: Vec<ToolInfo>,
    ranked: Option<Vec<ToolInfo>>,
    limit: usize,
) -> Vec<ToolInfo> {
    if visible.len() <= limit {
        return visible;
    }
    let Some(ranked) = ranked else {
        return visible.into_iter().take(limit).collect();
    };
    let allowed: BTreeSet<(String, String)> = visible
        .iter()
        .map(|t| (t.server.clone(), t.name.clone()))
        .collect();
    let mut seen = BTreeSet::new();
    ranked
        .into_iter()
        .filter(|t| allowed.contains(&(t.server.clone(), t.name.clone())))
        .filter(|t| seen.insert((t.server.clone(), t.name.clone())))
        .take(limit)
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn info(server: &str, name: &str, schema: serde_json::Value) -> ToolInfo {
        ToolInfo {
            server: server.into(),
            name: name.into(),
            description: format!("{name} on {server}"),
            input_schema: schema,
            read_only: true,
            destructive: false,
        }
    }

    #[test]
    fn names_fit_the_provider_pattern() {
        assert_eq!(sanitize("read_file"), "read_file");
        assert_eq!(sanitize("fs.read file/v2"), "fs_read_file_v2");
        assert_eq!(sanitize(""), "tool");
        let long = "x".repeat(100);
        let clean = sanitize(&long);
        assert_eq!(clean.len(), 64);
        assert_ne!(clean, sanitize(&format!("{long}y")));
        assert!(
            sanitize("émoji✨tool")
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        );
    }

    #[test]
    fn same_name_same_schema_is_one_routed_tool() {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
        let catalog = Catalog::build(vec![
            info("fs_b", "read_file", schema.clone()),
            info("fs_a", "read_file", schema),
            info("demo", "sql_query", json!({"type": "object"})),
        ]);
        let read = catalog.resolve("read_file").expect("routed tool");
        assert_eq!(read.server, None);
        assert_eq!(read.servers, ["fs_a", "fs_b"]);
        assert_eq!(
            catalog
                .resolve("sql_query")
                .and_then(|t| t.server.as_deref()),
            Some("demo")
        );
        assert_eq!(catalog.labels(), ["*/read_file", "demo/sql_query"]);
    }

    #[test]
    fn same_name_other_schema_is_qualified_and_collisions_are_numbered() {
        let catalog = Catalog::build(vec![
            info(
                "github",
                "read_file",
                json!({"type": "object", "required": ["repo"]}),
            ),
            info(
                "fs",
                "read_file",
                json!({"type": "object", "required": ["path"]}),
            ),
            // Sanitizes to the same name as "a.b" below.
            info("x", "a_b", json!({})),
            info("x", "a.b", json!({})),
        ]);
        let names: Vec<&str> = catalog.tools().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["a_b", "a_b_2", "fs__read_file", "github__read_file"]
        );
        assert_eq!(
            catalog.resolve("a_b_2").map(|t| t.tool.as_str()),
            Some("a_b")
        );
        assert_eq!(catalog.resolve("a_b").map(|t| t.tool.as_str()), Some("a.b"));
        // The same input in another order gives the same names.
        let mut again = catalog.tools().to_vec();
        again.reverse();
        assert_eq!(
            Catalog::build(vec![
                info("x", "a.b", json!({})),
                info(
                    "fs",
                    "read_file",
                    json!({"type": "object", "required": ["path"]})
                ),
                info("x", "a_b", json!({})),
                info(
                    "github",
                    "read_file",
                    json!({"type": "object", "required": ["repo"]})
                ),
            ]),
            catalog
        );
    }

    #[test]
    fn filters_and_globs() {
        let tool = info("fs", "read_text_file", json!({}));
        assert!(passes_filters(&tool, None, None));
        assert!(passes_filters(&tool, Some(&["fs".into()]), None));
        assert!(!passes_filters(&tool, Some(&["demo".into()]), None));
        assert!(passes_filters(&tool, None, Some(&["read_*".into()])));
        assert!(passes_filters(&tool, None, Some(&["fs/*_file".into()])));
        assert!(!passes_filters(&tool, None, Some(&["demo/*".into()])));
        assert!(glob("*", ""));
        assert!(glob("a*b*c", "aXbYc"));
        assert!(!glob("a*b*c", "aXcYb"));
    }

    #[test]
    fn small_catalogs_are_whole_large_ones_follow_the_ranking() {
        let tools: Vec<ToolInfo> = (0..5)
            .map(|i| info("s", &format!("t{i}"), json!({})))
            .collect();
        assert_eq!(choose(tools.clone(), None, 5).len(), 5);
        let ranked = vec![
            tools[3].clone(),
            info("hidden", "t9", json!({})),
            tools[1].clone(),
        ];
        let chosen = choose(tools.clone(), Some(ranked), 2);
        let names: Vec<&str> = chosen.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["t3", "t1"]);
        assert_eq!(choose(tools, None, 3).len(), 3);
    }
}
