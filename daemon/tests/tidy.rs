//! Tidy tests: rules about the daemon's own source that keep its layers the way
//! `ARCHITECTURE.md` draws them, checked by reading `daemon/src` (in the style of rust-analyzer's
//! `tidy.rs`). They compile nothing and start nothing: each reads the files, strips comments,
//! literals and `#[cfg(test)]` modules, and draws the graph of `crate::`/`super::`/`self::` paths
//! between modules.
//!
//! The figures the architecture issue quotes ("imports running back up", "circles") come from
//! [`upward_imports`] and [`circles`]; `cargo test -p tool-cli-daemon --test tidy -- --nocapture
//! structure_figures` prints them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path inside the library crate, `["pool", "http"]` for `pool/http.rs`; the crate root is
/// the empty path.
type Module = Vec<String>;

/// The floors of the daemon, lowest first. A module may import from its own floor and the floors
/// below it; an import of a higher floor "runs back up". Keep in step with `ARCHITECTURE.md`.
const FLOORS: &[(&str, &[&str])] = &[
    (
        "ground: leaf helpers every wing may use",
        &[
            "error",
            "redact",
            "log_text",
            "log_filter",
            "memory",
            "paging",
            "suggest",
            "runtime_file",
            "subreaper",
            "reaper",
        ],
    ),
    ("settings", &["config", "catalog", "policy", "auth"]),
    (
        "upstreams",
        &[
            "provider",
            "resilience",
            "oauth",
            "pool",
            "elicitation",
            "sampling",
        ],
    ),
    ("the call path", &["pipeline"]),
    (
        "the pipeline's observers and helpers of the services",
        &["trace", "tool_search", "otel"],
    ),
    ("services", &["services"]),
    ("the edge", &["edge"]),
];

/// Files allowed over [`MAX_LINES`] lines, each with the reason it stays whole.
const LONG_FILES: &[(&str, &str)] = &[
    (
        "pipeline/tests.rs",
        "one test module over the in-memory provider; its cases share fixtures",
    ),
    (
        "policy/tests.rs",
        "table-like cases of the policy rules, one per rule and edge",
    ),
    (
        "pool/stdio.rs",
        "the stdio child's transport: spawn, frame, read and reap in one state machine",
    ),
    (
        "pipeline/idempotency.rs",
        "the idempotency store and its unit tests (about half the file)",
    ),
    (
        "edge/answer.rs",
        "the answer writer and its unit tests (about half the file)",
    ),
    (
        "services/calls/chain.rs",
        "a chain's steps, bindings and its unit tests",
    ),
    (
        "pool/mod.rs",
        "the pool's public face: one type and its methods, the rest already split out",
    ),
    (
        "trace/writer.rs",
        "the trace writer and its rotation; unit tests about a third",
    ),
    (
        "tool_search/mod.rs",
        "the daemon's side of tool search with its tests",
    ),
    (
        "services/sessions/store.rs",
        "the session store and its unit tests",
    ),
    (
        "edge/spill.rs",
        "spilling large answers to files, with its unit tests",
    ),
    (
        "pipeline/mod.rs",
        "the pipeline's one path (resolve, plan, execute, record) and its observers",
    ),
    ("elicitation.rs", "the elicitation relay and its unit tests"),
];

/// The line count above which a file needs an entry in [`LONG_FILES`].
const MAX_LINES: usize = 600;

struct SourceFile {
    /// Path relative to `daemon/src`, with `/` separators.
    relative: String,
    module: Module,
    /// The code with comments, string and char literals blanked and test modules removed.
    code: String,
    line_count: usize,
}

/// `daemon/src`, or the folder `TIDY_DAEMON_SRC` names (to draw the figures of another revision,
/// say one extracted with `git archive`).
fn source_root() -> PathBuf {
    match std::env::var_os("TIDY_DAEMON_SRC") {
        Some(folder) => PathBuf::from(folder),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
    }
}

/// Every file of the library crate (the binary's `main.rs` and `main/` are left out: they use the
/// library by its name, as any embedder would).
fn library_sources() -> Vec<SourceFile> {
    let root = source_root();
    let mut paths = Vec::new();
    collect_rust_files(&root, &mut paths);
    let mut files: Vec<SourceFile> = paths
        .into_iter()
        .filter_map(|path| {
            let relative = path
                .strip_prefix(&root)
                .ok()?
                .to_string_lossy()
                .replace('\\', "/");
            if relative == "main.rs" || relative.starts_with("main/") {
                return None;
            }
            let text = std::fs::read_to_string(&path).expect("read a daemon source file");
            Some(SourceFile {
                module: module_of(&relative),
                code: remove_test_modules(&blank_comments_and_literals(&text)),
                line_count: text.lines().count(),
                relative,
            })
        })
        .collect();
    files.sort_by(|a, b| a.relative.cmp(&b.relative));
    files
}

fn collect_rust_files(directory: &Path, into: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(directory)
        .expect("read a daemon source folder")
        .map(|entry| entry.expect("a folder entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_rust_files(&path, into);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            into.push(path);
        }
    }
}

fn module_of(relative: &str) -> Module {
    let without_extension = relative.trim_end_matches(".rs");
    let mut segments: Vec<String> = without_extension.split('/').map(str::to_owned).collect();
    if segments
        .last()
        .is_some_and(|last| last == "mod" || last == "lib")
    {
        segments.pop();
    }
    segments
}

/// Whether a file holds only tests (a `tests.rs` or `*_tests.rs` module, declared under
/// `#[cfg(test)]`): tests may reach anywhere.
fn is_test_file(relative: &str) -> bool {
    let name = relative.rsplit('/').next().unwrap_or(relative);
    name == "tests.rs" || name.ends_with("_tests.rs") || relative.contains("/tests/")
}

/// Replaces comments, string literals and char literals by spaces (newlines kept), so that a path
/// written in a doc comment or an error message is not taken for an import.
fn blank_comments_and_literals(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for byte in &mut out[from..to] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    };
    let mut index = 0;
    while index < bytes.len() {
        let rest = &bytes[index..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |p| index + p);
            blank(&mut out, index, end);
            index = end;
        } else if rest.starts_with(b"/*") {
            let mut depth = 0usize;
            let mut cursor = index;
            while cursor < bytes.len() {
                if bytes[cursor..].starts_with(b"/*") {
                    depth += 1;
                    cursor += 2;
                } else if bytes[cursor..].starts_with(b"*/") {
                    depth -= 1;
                    cursor += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    cursor += 1;
                }
            }
            blank(&mut out, index, cursor);
            index = cursor;
        } else if (rest.starts_with(b"r\"") || rest.starts_with(b"r#"))
            && (index == 0 || !is_identifier_byte(bytes[index - 1]))
        {
            let hashes = rest[1..].iter().take_while(|&&b| b == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                index += 1;
                continue;
            }
            let mut closing = vec![b'"'];
            closing.extend(std::iter::repeat_n(b'#', hashes));
            let body_start = index + 2 + hashes;
            let end = bytes[body_start..]
                .windows(closing.len())
                .position(|window| window == closing.as_slice())
                .map_or(bytes.len(), |p| body_start + p + closing.len());
            blank(&mut out, index, end);
            index = end;
        } else if rest[0] == b'"' {
            let mut cursor = index + 1;
            while cursor < bytes.len() && bytes[cursor] != b'"' {
                cursor += if bytes[cursor] == b'\\' { 2 } else { 1 };
            }
            let end = (cursor + 1).min(bytes.len());
            blank(&mut out, index, end);
            index = end;
        } else if rest[0] == b'\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a): only the former is blanked.
            if rest.get(1) == Some(&b'\\') {
                let end = rest[2..]
                    .iter()
                    .position(|&b| b == b'\'')
                    .map_or(bytes.len(), |p| index + 3 + p);
                blank(&mut out, index, end);
                index = end;
            } else {
                let char_length = std::str::from_utf8(&rest[1..rest.len().min(5)])
                    .ok()
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(2)]).ok())
                    .and_then(|s| s.chars().next())
                    .map_or(1, char::len_utf8);
                if rest.get(1 + char_length) == Some(&b'\'') {
                    blank(&mut out, index, index + 2 + char_length);
                    index += 2 + char_length;
                } else {
                    index += 1;
                }
            }
        } else {
            index += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_identifier_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Removes every `#[cfg(test)] mod name { … }` block (and `#[cfg(test)] mod name;`), so the
/// rules see the code that ships.
fn remove_test_modules(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        let item = trimmed.strip_prefix("pub(crate) ").unwrap_or(trimmed);
        if let Some(module) = item.strip_prefix("mod ") {
            let open = module.find(['{', ';']).unwrap_or(module.len());
            if module[open..].starts_with(';') {
                rest = &module[open + 1..];
                continue;
            }
            let mut depth = 0usize;
            let mut end = module.len();
            for (offset, character) in module[open..].char_indices() {
                match character {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = open + offset + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            rest = &module[end..];
        } else {
            out.push_str("#[cfg(test)]");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Every path the code names from `crate::`, `super::` or `self::`, with `use` trees expanded:
/// `use crate::{pool::Pool, pipeline::{Plan, Run}}` gives three paths.
fn named_paths(code: &str) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let mut paths = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        let starts_path = ["crate::", "super::", "self::"]
            .iter()
            .find(|prefix| code[index..].starts_with(*prefix));
        let at_boundary =
            index == 0 || !(is_identifier_byte(bytes[index - 1]) || bytes[index - 1] == b':');
        match starts_path {
            Some(_) if at_boundary => {
                let mut cursor = index;
                let mut found = Vec::new();
                parse_use_tree(code, &mut cursor, Vec::new(), &mut found);
                paths.extend(found);
                index = cursor.max(index + 1);
            }
            _ => index += 1,
        }
    }
    paths
}

fn skip_spaces(code: &str, cursor: &mut usize) {
    while code[*cursor..].starts_with(|c: char| c.is_whitespace()) {
        *cursor += code[*cursor..].chars().next().map_or(1, char::len_utf8);
    }
}

fn identifier(code: &str, cursor: &mut usize) -> Option<String> {
    let start = *cursor;
    while code
        .as_bytes()
        .get(*cursor)
        .is_some_and(|&b| is_identifier_byte(b))
    {
        *cursor += 1;
    }
    (*cursor > start).then(|| code[start..*cursor].to_owned())
}

fn parse_use_tree(
    code: &str,
    cursor: &mut usize,
    prefix: Vec<String>,
    into: &mut Vec<Vec<String>>,
) {
    let mut path = prefix;
    loop {
        skip_spaces(code, cursor);
        if code[*cursor..].starts_with('{') {
            *cursor += 1;
            loop {
                skip_spaces(code, cursor);
                if code[*cursor..].starts_with('}') {
                    *cursor += 1;
                    return;
                }
                if *cursor >= code.len() {
                    return;
                }
                let before = *cursor;
                parse_use_tree(code, cursor, path.clone(), into);
                skip_spaces(code, cursor);
                // Past a comma, or one byte on when the entry read nothing (never loop in place).
                if code[*cursor..].starts_with(',') || *cursor == before {
                    *cursor += 1;
                }
            }
        }
        if code[*cursor..].starts_with('*') {
            *cursor += 1;
            into.push(path);
            return;
        }
        match identifier(code, cursor) {
            Some(segment) => path.push(segment),
            None => {
                if !path.is_empty() {
                    into.push(path);
                }
                return;
            }
        }
        if code[*cursor..].starts_with("::") {
            *cursor += 2;
        } else {
            into.push(path);
            return;
        }
    }
}

/// The module a named path lands in: the longest prefix of it that is a module of the crate.
fn resolve(from: &Module, path: &[String], modules: &BTreeSet<Module>) -> Option<Module> {
    let mut absolute: Module = Vec::new();
    let mut segments = path.iter().peekable();
    match segments.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segments.next();
        }
        Some("self") | Some("super") => {
            absolute = from.clone();
            while let Some(segment) = segments.peek() {
                match segment.as_str() {
                    "self" => {}
                    "super" => {
                        absolute.pop()?;
                    }
                    _ => break,
                }
                segments.next();
            }
        }
        _ => return None,
    }
    let mut best = modules.contains(&absolute).then(|| absolute.clone());
    for segment in segments {
        absolute.push(segment.clone());
        if modules.contains(&absolute) {
            best = Some(absolute.clone());
        }
    }
    best
}

/// The import graph between the library's modules: an edge for every module a file's shipped code
/// names, leaving out a module's own ancestors and descendants (a folder's `mod.rs` and the files
/// under it are one room with a front door) and test files.
fn import_graph(files: &[SourceFile]) -> BTreeMap<Module, BTreeSet<Module>> {
    let modules: BTreeSet<Module> = files.iter().map(|file| file.module.clone()).collect();
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for file in files.iter().filter(|file| !is_test_file(&file.relative)) {
        let targets = graph.entry(file.module.clone()).or_default();
        for path in named_paths(&file.code) {
            let Some(target) = resolve(&file.module, &path, &modules) else {
                continue;
            };
            let related = target.starts_with(&file.module) || file.module.starts_with(&target);
            if !related {
                targets.insert(target);
            }
        }
    }
    graph
}

fn floor_of(module: &Module) -> Option<usize> {
    let wing = module.first()?;
    FLOORS
        .iter()
        .position(|(_, wings)| wings.contains(&wing.as_str()))
}

fn display(module: &Module) -> String {
    if module.is_empty() {
        "lib".to_owned()
    } else {
        module.join("/")
    }
}

/// Every import from a module to a module on a higher floor, as `from -> to`.
fn upward_imports(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<String> {
    let mut upward = Vec::new();
    for (from, targets) in graph {
        for to in targets {
            if let (Some(from_floor), Some(to_floor)) = (floor_of(from), floor_of(to))
                && to_floor > from_floor
            {
                upward.push(format!("{} -> {}", display(from), display(to)));
            }
        }
    }
    upward
}

/// The circles of the graph: its strongly connected components of more than one module
/// (Tarjan's algorithm), each sorted.
fn circles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<Module, BTreeSet<Module>>,
        next_index: usize,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        components: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a Module) {
            self.index.insert(node, self.next_index);
            self.low.insert(node, self.next_index);
            self.next_index += 1;
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.graph.get(node).into_iter().flatten() {
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    component.push(display(member));
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.components.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        next_index: 0,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node) {
            walk.visit(node);
        }
    }
    walk.components.sort();
    walk.components
}

#[test]
fn every_wing_of_the_library_has_a_floor() {
    let unplaced: BTreeSet<String> = library_sources()
        .iter()
        .filter(|file| !file.module.is_empty() && floor_of(&file.module).is_none())
        .map(|file| file.module[0].clone())
        .collect();
    assert!(
        unplaced.is_empty(),
        "wings with no floor in tidy.rs's FLOORS (add them): {unplaced:?}"
    );
}

#[test]
fn structure_figures() {
    let graph = import_graph(&library_sources());
    let upward = upward_imports(&graph);
    let circles = circles(&graph);
    let edges: usize = graph.values().map(BTreeSet::len).sum();
    println!("modules: {}, imports between them: {edges}", graph.len());
    println!("imports running back up: {}", upward.len());
    for import in &upward {
        println!("  {import}");
    }
    println!("circles: {}", circles.len());
    for circle in &circles {
        println!("  {}", circle.join(" <-> "));
    }
}

#[test]
fn no_import_runs_back_up() {
    let upward = upward_imports(&import_graph(&library_sources()));
    assert!(
        upward.is_empty(),
        "{} imports run back up a floor:\n{}",
        upward.len(),
        upward.join("\n")
    );
}

#[test]
fn the_modules_close_no_circle() {
    let circles = circles(&import_graph(&library_sources()));
    assert!(
        circles.len() <= 1,
        "{} circles (at most one allowed):\n{}",
        circles.len(),
        circles
            .iter()
            .map(|circle| circle.join(" <-> "))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn pool_and_pipeline_import_neither_services_nor_the_edge() {
    let graph = import_graph(&library_sources());
    let offending: Vec<String> = graph
        .iter()
        .filter(|(from, _)| matches!(from.first().map(String::as_str), Some("pool" | "pipeline")))
        .flat_map(|(from, targets)| {
            targets
                .iter()
                .filter(|to| matches!(to.first().map(String::as_str), Some("services" | "edge")))
                .map(move |to| format!("{} -> {}", display(from), display(to)))
        })
        .collect();
    assert!(
        offending.is_empty(),
        "the lower floors reach up:\n{}",
        offending.join("\n")
    );
}

/// The types a service module defines: every `struct`/`enum` declared under `services/`.
fn declared_types(file: &SourceFile) -> Vec<String> {
    let mut names = Vec::new();
    for keyword in ["struct ", "enum "] {
        let mut rest = file.code.as_str();
        while let Some(at) = rest.find(keyword) {
            let before_ok = at == 0 || !is_identifier_byte(rest.as_bytes()[at - 1]);
            rest = &rest[at + keyword.len()..];
            let mut cursor = 0;
            if before_ok && let Some(name) = identifier(rest, &mut cursor) {
                names.push(name);
            }
        }
    }
    names
}

/// The type an `impl` block is for: the last identifier before its `{` that follows `for`, or the
/// first after `impl` (generics skipped).
fn implemented_types(code: &str) -> Vec<String> {
    let mut types = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("impl") {
        let before_ok = at == 0 || !is_identifier_byte(rest.as_bytes()[at - 1]);
        let after = &rest[at + 4..];
        rest = after;
        if !before_ok || after.starts_with(|c: char| is_identifier_byte(c as u8)) {
            continue;
        }
        let Some(header_end) = after.find(['{', ';']) else {
            break;
        };
        let header = &after[..header_end];
        let header = header.split(" where ").next().unwrap_or(header);
        let target = match header.rfind(" for ") {
            Some(for_at) => &header[for_at + 5..],
            None => header,
        };
        let without_generics = strip_generics(target);
        if let Some(name) = without_generics
            .split(|c: char| !is_identifier_byte(c as u8) && c != ':')
            .rfind(|word| !word.is_empty())
            .map(|path| path.rsplit("::").next().unwrap_or(path).to_owned())
        {
            types.push(name);
        }
    }
    types
}

fn strip_generics(text: &str) -> String {
    let mut depth = 0usize;
    let mut out = String::new();
    for character in text.chars() {
        match character {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(character),
            _ => {}
        }
    }
    out.trim().to_owned()
}

#[test]
fn a_service_type_is_implemented_only_in_its_own_module() {
    let files = library_sources();
    // Names declared once in the crate, by the module declaring them (a name declared twice, as
    // two private `Entry` types, cannot be told apart by this reader and is left out).
    let mut declared: BTreeMap<String, Vec<Module>> = BTreeMap::new();
    for file in files.iter().filter(|file| !is_test_file(&file.relative)) {
        for name in declared_types(file) {
            declared.entry(name).or_default().push(file.module.clone());
        }
    }
    let home: BTreeMap<String, Module> = declared
        .into_iter()
        .filter(|(_, modules)| {
            modules.len() == 1 && modules[0].first().is_some_and(|wing| wing == "services")
        })
        .map(|(name, mut modules)| (name, modules.remove(0)))
        .collect();
    let mut strays = Vec::new();
    for file in files.iter().filter(|file| !is_test_file(&file.relative)) {
        for name in implemented_types(&file.code) {
            if let Some(module) = home.get(&name)
                && !file.module.starts_with(module)
            {
                strays.push(format!(
                    "impl {name} in {} (declared in {})",
                    file.relative,
                    display(module)
                ));
            }
        }
    }
    assert!(
        strays.is_empty(),
        "service types implemented outside their module:\n{}",
        strays.join("\n")
    );
}

#[test]
fn no_file_is_long_without_a_reason() {
    let files = library_sources();
    let allowed: BTreeMap<&str, &str> = LONG_FILES.iter().copied().collect();
    let long: Vec<String> = files
        .iter()
        .filter(|file| file.line_count > MAX_LINES && !allowed.contains_key(file.relative.as_str()))
        .map(|file| format!("{} ({} lines)", file.relative, file.line_count))
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines: split them or add them to LONG_FILES in tidy.rs with the reason:\n{}",
        long.join("\n")
    );
    let stale: Vec<&str> = LONG_FILES
        .iter()
        .filter(|(relative, _)| {
            !files
                .iter()
                .any(|file| file.relative == *relative && file.line_count > MAX_LINES)
        })
        .map(|(relative, _)| *relative)
        .collect();
    assert!(
        stale.is_empty(),
        "LONG_FILES entries no longer needed (remove them): {stale:?}"
    );
}

#[test]
fn the_reader_sees_imports_through_use_trees() {
    let code = "use crate::{pool::Pool, pipeline::{Plan, run::Run}};\nfn f() { super::x::y(); }";
    let paths = named_paths(code);
    let joined: Vec<String> = paths.iter().map(|path| path.join("::")).collect();
    assert_eq!(
        joined,
        [
            "crate::pool::Pool",
            "crate::pipeline::Plan",
            "crate::pipeline::run::Run",
            "super::x::y"
        ]
    );
    let blanked = blank_comments_and_literals(
        "let a = \"crate::x\"; // crate::y\nlet c = 'c'; fn g<'a>() {}",
    );
    assert!(!blanked.contains("crate::"));
    assert!(blanked.contains("<'a>"));
}

#[test]
fn the_figures_count_circles_and_imports_running_up() {
    let module = |path: &str| -> Module { path.split('/').map(str::to_owned).collect() };
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    // pool/http <-> pool/connection is a circle; pool/lines -> services runs up.
    graph
        .entry(module("pool/http"))
        .or_default()
        .insert(module("pool/connection"));
    graph
        .entry(module("pool/connection"))
        .or_default()
        .insert(module("pool/http"));
    graph
        .entry(module("pool/lines"))
        .or_default()
        .insert(module("services"));
    graph
        .entry(module("services"))
        .or_default()
        .insert(module("pool"));
    assert_eq!(circles(&graph), [["pool/connection", "pool/http"]]);
    assert_eq!(upward_imports(&graph), ["pool/lines -> services"]);
}

/// The `Upstream` methods that send a request a tool or server acts on.
const UPSTREAM_REQUESTS: &[&str] = &[
    "call_tool",
    "read_resource",
    "get_prompt",
    "list_resources",
    "list_prompts",
    "task_request",
];

#[test]
fn only_the_pipelines_execute_stage_sends_requests_to_an_upstream() {
    let mut strays = Vec::new();
    for file in library_sources()
        .iter()
        .filter(|file| !is_test_file(&file.relative))
    {
        // `pipeline/tasks/run.rs` runs inside one of the execute stage's attempts (a task created and
        // waited for is one attempt), and cancels what the attempt leaves behind.
        if file.relative == "pipeline/execute.rs"
            || file.relative == "pipeline/tasks/run.rs"
            || file.relative.starts_with("pool/")
        {
            continue;
        }
        let squeezed: String = file.code.split_whitespace().collect();
        for method in UPSTREAM_REQUESTS {
            if squeezed.contains(&format!("upstream.{method}(")) {
                strays.push(format!("{} calls upstream.{method}", file.relative));
            }
        }
    }
    assert!(
        strays.is_empty(),
        "requests to a server go through pipeline/execute.rs (validation, policy, breakers):\n{}",
        strays.join("\n")
    );
}
