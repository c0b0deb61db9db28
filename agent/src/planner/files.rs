//! The offline planner's file rule: which tool reads a file, where a relative path points, and
//! how many lines a text has. Pure.

use serde_json::{Map, Value, json};

use crate::backend::ExposedTool;

/// Tool names that read a whole text file, best first: the filesystem server's current
/// `read_text_file`, then its older `read_file`.
const READ_TOOLS: [&str; 2] = ["read_text_file", "read_file"];

/// The tool to read a file with: a known reader taking `path`, preferring one whose server the
/// task names ("with the docs server").
pub(crate) fn read_tool<'a>(tools: &'a [ExposedTool], task: &str) -> Option<&'a ExposedTool> {
    let takes_path = |tool: &&ExposedTool| tool.input_schema.pointer("/properties/path").is_some();
    let task = task.to_lowercase();
    let mentioned = |tool: &&ExposedTool| {
        tool.servers
            .iter()
            .any(|server| task.contains(&server.to_lowercase()))
    };
    for name in READ_TOOLS {
        let candidates: Vec<&ExposedTool> = tools
            .iter()
            .filter(|t| t.tool == name)
            .filter(takes_path)
            .collect();
        if let Some(tool) = candidates
            .iter()
            .copied()
            .find(mentioned)
            .or(candidates.first().copied())
        {
            return Some(tool);
        }
    }
    None
}

/// The directories a `list_allowed_directories` answer names (one per line after a heading).
pub(crate) fn allowed_directories(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| line.starts_with('/'))
        .map(str::to_owned)
        .collect()
}

/// `path` made absolute against the first allowed directory when it is relative.
pub(crate) fn resolve(path: &str, directories: &[String]) -> String {
    if path.starts_with('/') {
        return path.to_owned();
    }
    match directories.first() {
        Some(directory) => format!(
            "{}/{}",
            directory.trim_end_matches('/'),
            path.trim_start_matches("./")
        ),
        None => path.to_owned(),
    }
}

/// Lines as `wc -l` counts them plus a last line without a newline: `"a\nb\n"` and `"a\nb"`
/// both have 2, `""` has 0.
pub(crate) fn line_count(text: &str) -> usize {
    text.lines().count()
}

/// The file's text from a read result: its text content, or `structuredContent.content`.
pub(crate) fn file_text(result: &Value) -> Option<String> {
    if let Some(text) = result
        .pointer("/structuredContent/content")
        .and_then(Value::as_str)
    {
        return Some(text.to_owned());
    }
    let texts: Vec<&str> = result
        .get("content")?
        .as_array()?
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    (!texts.is_empty()).then(|| texts.concat())
}

/// The answer and key facts for a file's line count.
pub(crate) fn facts(
    path: &str,
    text: &str,
    tool: &ExposedTool,
    server: Option<&str>,
) -> (String, Map<String, Value>) {
    let lines = line_count(text);
    let answer = format!(
        "{path} has {lines} line{}.",
        if lines == 1 { "" } else { "s" }
    );
    let mut key_facts = Map::new();
    key_facts.insert("path".into(), json!(path));
    key_facts.insert("line_count".into(), json!(lines));
    key_facts.insert("characters".into(), json!(text.chars().count()));
    key_facts.insert("tool".into(), json!(tool.tool));
    if let Some(server) = server {
        key_facts.insert("server".into(), json!(server));
    }
    (answer, key_facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(server: &str, name: &str) -> ExposedTool {
        ExposedTool {
            name: format!("{server}__{name}"),
            server: Some(server.into()),
            servers: vec![server.into()],
            tool: name.into(),
            description: String::new(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            read_only: true,
            destructive: false,
        }
    }

    #[test]
    fn the_newer_reader_wins_and_a_named_server_wins_among_equals() {
        let tools = [
            tool("a", "read_file"),
            tool("b", "read_text_file"),
            tool("c", "read_text_file"),
        ];
        assert_eq!(
            read_tool(&tools, "read x").map(|t| t.name.as_str()),
            Some("b__read_text_file")
        );
        assert_eq!(
            read_tool(&tools, "read x with the c server").map(|t| t.name.as_str()),
            Some("c__read_text_file")
        );
        assert_eq!(
            read_tool(&tools[..1], "read x").map(|t| t.tool.as_str()),
            Some("read_file")
        );
        assert!(read_tool(&[], "read x").is_none());
    }

    #[test]
    fn relative_paths_resolve_against_the_first_allowed_directory() {
        let dirs = allowed_directories("Allowed directories:\n/tmp/root\n/srv");
        assert_eq!(dirs, ["/tmp/root", "/srv"]);
        assert_eq!(resolve("./notes.txt", &dirs), "/tmp/root/notes.txt");
        assert_eq!(resolve("/etc/x", &dirs), "/etc/x");
        assert_eq!(resolve("a.txt", &[]), "a.txt");
    }

    #[test]
    fn lines_are_counted_with_or_without_a_final_newline() {
        assert_eq!(line_count(""), 0);
        assert_eq!(line_count("one"), 1);
        assert_eq!(line_count("a\nb\n"), 2);
        assert_eq!(line_count("a\r\nb\r\nc"), 3);
        assert_eq!(line_count("\n\n"), 2);
    }

    #[test]
    fn text_comes_from_content_or_structured_content() {
        assert_eq!(
            file_text(&json!({"content": [{"type": "text", "text": "a\nb"}]})).as_deref(),
            Some("a\nb")
        );
        assert_eq!(
            file_text(&json!({"structuredContent": {"content": "x"}, "content": []})).as_deref(),
            Some("x")
        );
    }
}
