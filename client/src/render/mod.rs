//! Human renderings of the daemon's results: JSON in, text out, no I/O.
//!
//! The reader is as often an agent as a person, so the text is dense and regular: one line per
//! server, tool or resource, a schema summary that ends with a copy-pasteable call (`schema.rs`),
//! the health and token tables (`health.rs`), and binary content reduced to a one-line
//! placeholder so a screenshot never floods a context window with base64. `--json` bypasses this
//! module entirely; nothing here needs to be lossless. Names that come from servers are passed
//! through [`crate::sanitize::line`] so none can forge a line; the caller sanitises the whole
//! text before it reaches a terminal.

mod health;
mod orchestration;
mod prompts;
mod schema;

use std::fmt::Write as _;

use serde_json::Value;
use tool_cli_protocol::meta;
use tool_cli_protocol::methods::{ListServersResult, ListToolsResult, ServerState};

use crate::base64;
use crate::sanitize;

pub(crate) use health::{health, human_duration, is_unhealthy, minted_summary, tokens};
pub(crate) use orchestration::{
    AgentProgress, dry_run, routed_note, session_summary, sessions, tool_health,
};
pub(crate) use prompts::{prompt_list, prompt_messages};
pub(crate) use schema::tool_schema;

/// Longest one-line description in a list, in characters.
const SUMMARY_WIDTH: usize = 100;

/// Widest name column; longer names push their description right rather than widen every line.
const NAME_COLUMN_MAX: usize = 28;

/// `tool-cli`: one line per server, with an indented error line for a server that is not ready.
pub(crate) fn servers(result: &ListServersResult) -> String {
    if result.servers.is_empty() {
        return "no servers are configured; add some to the daemon's config file \
                (TOOL_CLI_CONFIG)\n"
            .to_owned();
    }
    let names: Vec<String> = result
        .servers
        .iter()
        .map(|server| sanitize::line(&server.name).into_owned())
        .collect();
    let name_width = column_width(names.iter().map(String::as_str));
    let statuses: Vec<String> = result
        .servers
        .iter()
        .map(|server| match server.state {
            ServerState::Ready => plural(server.tool_count, "tool", "tools"),
            state => state.as_str().to_owned(),
        })
        .collect();
    let status_width = statuses
        .iter()
        .map(|status| status.len())
        .max()
        .unwrap_or(0);

    let mut text = String::new();
    for ((server, name), status) in result.servers.iter().zip(&names).zip(&statuses) {
        let mut line = format!("{name:<name_width$}  {status:<status_width$}");
        if let Some(description) = &server.description {
            line.push_str("  ");
            line.push_str(&one_line(description, SUMMARY_WIDTH));
        }
        if !server.examples.is_empty() {
            let examples: Vec<_> = server
                .examples
                .iter()
                .map(|example| sanitize::line(example))
                .collect();
            let _ = write!(line, "  (e.g. {})", examples.join(", "));
        }
        text.push_str(line.trim_end());
        text.push('\n');
        if let Some(error) = &server.error {
            let _ = writeln!(
                text,
                "{:name_width$}  error: {}",
                "",
                flatten(error, SUMMARY_WIDTH * 2)
            );
        }
    }
    text.push_str("\nnext: `tool-cli SERVER` lists a server's tools\n");
    if result
        .servers
        .iter()
        .any(|server| is_unhealthy(server.state))
    {
        text.push_str("      `tool-cli health` shows restarts, last errors and circuit breakers\n");
    }
    text
}

/// The warning for a call result that the daemon served from its cache because the server was
/// failing (`_meta["tool-cli/degraded"]`), or `None` for a fresh result.
pub(crate) fn degraded_warning(server: &str, result: &Value) -> Option<String> {
    let degraded = result.get("_meta")?.get(meta::DEGRADED)?;
    let reason = degraded
        .get("reason")
        .and_then(Value::as_str)
        .map(|reason| flatten(reason, SUMMARY_WIDTH))
        .unwrap_or_else(|| "no reason given".to_owned());
    let age = match degraded.get("ageMs").and_then(Value::as_u64) {
        Some(age_ms) => format!(" from {} ago", human_duration(age_ms)),
        None => String::new(),
    };
    Some(format!(
        "server {server:?} is failing; this is a cached result{age} ({reason})"
    ))
}

/// `tool-cli SERVER`: one line per tool, name and the first sentence of its description.
pub(crate) fn tools(result: &ListToolsResult) -> String {
    if result.tools.is_empty() {
        return format!(
            "server {} offers no tools\n",
            sanitize::line(&result.server)
        );
    }
    let names: Vec<String> = result
        .tools
        .iter()
        .map(|tool| sanitize::line(&tool.name).into_owned())
        .collect();
    let name_width = column_width(names.iter().map(String::as_str));
    let mut text = String::new();
    for (tool, name) in result.tools.iter().zip(&names) {
        let mut line = format!(
            "{name:<name_width$}  {}",
            one_line(&tool.description, SUMMARY_WIDTH)
        );
        if tool.has_structured_output {
            line.push_str("  [structured output]");
        }
        if !tool.flags.is_empty() {
            line.push_str("  [flagged]");
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    // What the daemon's detectors found (hidden instructions, another server's tools named):
    // for the person reading, since a model would read the description as it is.
    for (tool, name) in result.tools.iter().zip(&names) {
        for flag in &tool.flags {
            let _ = writeln!(text, "flagged: {name} {}", sanitize::line(flag));
        }
    }
    let _ = write!(
        text,
        "\nnext: `tool-cli {} TOOL` shows a tool's parameters and an example call\n",
        result.server
    );
    text
}

/// `tool-cli SERVER --help`: how to go on from this server, then its tools.
pub(crate) fn server_help(result: &ListToolsResult) -> String {
    let server = shell_word(&result.server);
    format!(
        "Usage: tool-cli {server} TOOL                show a tool's parameters and an example call\n       \
         tool-cli {server} TOOL ARGS_JSON      call it ('-' reads the JSON from stdin)\n       \
         tool-cli {server} TOOL key=value...   call it with key=value, key:=JSON, key=@FILE\n\n\
         Tools of {}:\n{}",
        sanitize::line(&result.server),
        tools(result)
    )
}

/// What a call prints: the body for stdout, or for stderr when the tool reported an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallOutput {
    pub(crate) body: String,
    pub(crate) is_error: bool,
    /// Whether `body` is the pretty JSON of `structuredContent` (else text and placeholders).
    pub(crate) structured: bool,
}

/// `tool-cli SERVER TOOL ARGS`: `structuredContent` as pretty JSON when present (it is what a
/// script wants to pipe into `jq`), otherwise the content items, text as is and binary items as
/// placeholders. An error result is always its text, which goes to stderr.
pub(crate) fn call_result(result: &Value) -> CallOutput {
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    if !is_error
        && let Some(structured) = result
            .get("structuredContent")
            .filter(|value| !value.is_null())
    {
        return CallOutput {
            body: pretty(structured),
            is_error,
            structured: true,
        };
    }
    let items = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let body = items
        .iter()
        .map(content_item)
        .collect::<Vec<_>>()
        .join("\n");
    CallOutput {
        body,
        is_error,
        structured: false,
    }
}

/// One binary item of a call result: an image, audio, or an embedded resource with a blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BinaryContent<'a> {
    /// `image`, `audio` or `resource`.
    pub(crate) kind: &'a str,
    pub(crate) mime_type: Option<&'a str>,
    /// The base64 data.
    pub(crate) data: &'a str,
}

/// The binary items of a call result's `content`, in order, and how many other items it has
/// (text, links, ...): what `--out` writes, and what it leaves out.
pub(crate) fn binary_contents(result: &Value) -> (Vec<BinaryContent<'_>>, usize) {
    let items = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut binaries = Vec::new();
    let mut others = 0;
    for item in items {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        let (holder, member) = match kind {
            "image" | "audio" => (item, "data"),
            "resource" => (item.get("resource").unwrap_or(&Value::Null), "blob"),
            _ => (&Value::Null, ""),
        };
        match holder.get(member).and_then(Value::as_str) {
            Some(data) => binaries.push(BinaryContent {
                kind,
                mime_type: holder.get("mimeType").and_then(Value::as_str),
                data,
            }),
            None => others += 1,
        }
    }
    (binaries, others)
}

/// One content item: text as is, everything else as a one-line placeholder.
pub(super) fn content_item(item: &Value) -> String {
    let kind = item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let field = |name: &str| item.get(name).and_then(Value::as_str);
    match kind {
        "text" => field("text").unwrap_or_default().to_owned(),
        "image" | "audio" => format!(
            "[{kind}: {}, {}; --out FILE saves it, --json shows it]",
            field("mimeType").unwrap_or("unknown type"),
            human_size(field("data").map(base64::decoded_len).unwrap_or(0))
        ),
        "resource" => {
            let resource = item.get("resource").unwrap_or(&Value::Null);
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("?");
            let mime = resource
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or("unknown type");
            format!(
                "[embedded resource: {uri}, {mime}, {}; use --json to see it]",
                human_size(content_size(resource))
            )
        }
        "resource_link" => {
            let mut line = format!("[resource link: {}", field("uri").unwrap_or("?"));
            if let Some(name) = field("name") {
                let _ = write!(line, " ({name})");
            }
            if let Some(mime) = field("mimeType") {
                let _ = write!(line, ", {mime}");
            }
            line.push(']');
            line
        }
        other => format!("[{other} content; use --json to see it]"),
    }
}

/// Size in bytes of a resource content: its text, or its decoded blob.
pub(crate) fn content_size(content: &Value) -> usize {
    if let Some(text) = content.get("text").and_then(Value::as_str) {
        return text.len();
    }
    content
        .get("blob")
        .and_then(Value::as_str)
        .map(base64::decoded_len)
        .unwrap_or(0)
}

/// Whether a URI belongs to the skills namespace, which `resource` hides and refuses.
pub(crate) fn is_skill_uri(uri: &str) -> bool {
    uri.get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("skill://"))
}

/// `tool-cli resource list`: one group per server, one line per resource.
pub(crate) fn resource_group(server: &str, resources: &[Value], uri_key: &str) -> String {
    let mut text = format!("{}:\n", sanitize::line(server));
    if resources.is_empty() {
        let what = if uri_key == "uriTemplate" {
            "resource templates"
        } else {
            "resources"
        };
        let _ = writeln!(text, "  (no {what})");
        return text;
    }
    let uri_of = |resource: &Value| {
        let uri = resource.get(uri_key).and_then(Value::as_str).unwrap_or("?");
        sanitize::line(uri).into_owned()
    };
    let uri_width = column_width(
        resources
            .iter()
            .map(uri_of)
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str),
    );
    for resource in resources {
        let field = |name: &str| resource.get(name).and_then(Value::as_str);
        let uri = &uri_of(resource);
        let mut line = format!("  {uri:<uri_width$}");
        let label = field("title")
            .or(field("name"))
            .map(sanitize::line)
            .filter(|label| label != uri);
        if let Some(label) = label {
            let _ = write!(line, "  {label}");
        }
        if let Some(mime) = field("mimeType") {
            let _ = write!(line, "  ({})", sanitize::line(mime));
        }
        if let Some(description) = field("description") {
            let _ = write!(line, "  {}", one_line(description, SUMMARY_WIDTH));
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

/// `tool-cli resource read --meta`: one line per content: uri, mime type, size, kind.
pub(crate) fn resource_meta(result: &Value) -> String {
    let mut text = String::new();
    for content in resource_contents(result) {
        let field = |name: &str| content.get(name).and_then(Value::as_str);
        let kind = if content.get("blob").is_some() {
            "binary"
        } else {
            "text"
        };
        let _ = writeln!(
            text,
            "{}  {}  {} bytes  {kind}",
            field("uri").unwrap_or("?"),
            field("mimeType").unwrap_or("unknown type"),
            content_size(content)
        );
    }
    if text.is_empty() {
        text.push_str("(no contents)\n");
    }
    text
}

/// The `contents` array of a `readResource` result.
pub(crate) fn resource_contents(result: &Value) -> &[Value] {
    result
        .get("contents")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Pretty JSON with a final newline, as `--json` and structured content print it.
pub(crate) fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    text.push('\n');
    text
}

/// Compact JSON for inline use.
fn compact(value: &Value) -> String {
    value.to_string()
}

/// `"a", "b", "c"`, shortened after eight values.
fn list_values(values: &[Value]) -> String {
    const SHOWN: usize = 8;
    let mut parts: Vec<String> = values.iter().take(SHOWN).map(compact).collect();
    if values.len() > SHOWN {
        parts.push(format!("… ({} more)", values.len() - SHOWN));
    }
    parts.join(", ")
}

/// The first paragraph of a description, cut at its first sentence when that is shorter, and
/// truncated at a word boundary to at most `max` characters with an ellipsis.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    // Descriptions are often hard-wrapped: the first paragraph, not the first line, is the unit.
    let paragraph = text
        .lines()
        .map(str::trim)
        .skip_while(|line| line.is_empty())
        .take_while(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let line = paragraph.as_str();
    // A sentence ends at ". " (not inside "e.g. foo" usually, which is rare enough in a summary).
    let sentence = match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    };
    truncate(sentence, max)
}

/// Every run of whitespace (newlines included) as one space, truncated like [`truncate`]: for
/// error messages, where every sentence matters but a line must stay a line.
fn flatten(text: &str, max: usize) -> String {
    truncate(&text.split_whitespace().collect::<Vec<_>>().join(" "), max)
}

/// `text` when it has at most `max` characters, else cut at a word boundary with an ellipsis.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    let cut = match cut.rfind(' ') {
        Some(space) if space > max / 2 => &cut[..space],
        _ => cut.as_str(),
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', ' ']))
}

/// Width of a name column: the longest name, capped.
fn column_width<'a>(names: impl Iterator<Item = &'a str>) -> usize {
    names
        .map(|name| name.chars().count())
        .max()
        .unwrap_or(0)
        .min(NAME_COLUMN_MAX)
}

fn plural(count: usize, one: &str, many: &str) -> String {
    if count == 1 {
        format!("1 {one}")
    } else {
        format!("{count} {many}")
    }
}

/// `512 bytes`, `1.5 KiB`, `3.2 MiB`.
pub(crate) fn human_size(bytes: usize) -> String {
    const KIB: f64 = 1024.0;
    let value = bytes as f64;
    if bytes < 1024 {
        plural(bytes, "byte", "bytes")
    } else if value < KIB * KIB {
        format!("{:.1} KiB", value / KIB)
    } else {
        format!("{:.1} MiB", value / (KIB * KIB))
    }
}

/// A word for a shell command line, quoted only when needed.
pub(crate) fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c));
    if plain {
        word.to_owned()
    } else {
        shell_quote(word)
    }
}

/// Single-quotes text for a POSIX shell.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests;
