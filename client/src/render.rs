//! Human renderings of the daemon's results: JSON in, text out, no I/O.
//!
//! The reader is as often an agent as a person, so the text is dense and regular: one line per
//! server, tool or resource, a schema summary that ends with a copy-pasteable call, and binary
//! content reduced to a one-line placeholder so a screenshot never floods a context window with
//! base64. `--json` bypasses this module entirely; nothing here needs to be lossless.

use std::fmt::Write as _;

use serde_json::{Map, Value};
use tool_cli_protocol::meta;
use tool_cli_protocol::methods::{
    BreakerHealth, HealthResult, LatencySummary, ListServersResult, ListTokensResult,
    ListToolsResult, MintTokenResult, ServerHealth, ServerState,
};

use crate::base64;

/// Longest one-line description in a list, in characters.
const SUMMARY_WIDTH: usize = 100;

/// Widest name column; longer names push their description right rather than widen every line.
const NAME_COLUMN_MAX: usize = 28;

/// How deep nested object parameters are expanded in a schema summary.
const NESTING_MAX: usize = 2;

/// `tool-cli`: one line per server, with an indented error line for a server that is not ready.
pub(crate) fn servers(result: &ListServersResult) -> String {
    if result.servers.is_empty() {
        return "no servers are configured; add some to the daemon's config file \
                (TOOL_CLI_CONFIG)\n"
            .to_owned();
    }
    let name_width = column_width(result.servers.iter().map(|server| server.name.as_str()));
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
    for (server, status) in result.servers.iter().zip(&statuses) {
        let mut line = format!("{:<name_width$}  {:<status_width$}", server.name, status);
        if let Some(description) = &server.description {
            line.push_str("  ");
            line.push_str(&one_line(description, SUMMARY_WIDTH));
        }
        if !server.examples.is_empty() {
            let _ = write!(line, "  (e.g. {})", server.examples.join(", "));
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

/// Whether a server counts against `tool-cli health`: it is enabled and not `ready`. A server
/// still `connecting` counts too, so a script waiting for the daemon can poll until exit 0;
/// a state this version does not know counts, since it is not known to be ready.
pub(crate) fn is_unhealthy(state: ServerState) -> bool {
    !matches!(state, ServerState::Ready | ServerState::Disabled)
}

/// Marks a row of `tool-cli health` whose server is unhealthy. A plain character rather than a
/// colour: the reader is often an agent, and the output is often a pipe.
const UNHEALTHY_MARK: &str = "!";

/// `tool-cli health`: a table with one row per server, unhealthy rows marked with `!`, and each
/// server's last error on its own indented line.
pub(crate) fn health(result: &HealthResult) -> String {
    if result.servers.is_empty() {
        return "no servers are configured; add some to the daemon's config file \
                (TOOL_CLI_CONFIG)\n"
            .to_owned();
    }
    let header = [
        "SERVER",
        "STATE",
        "RESTARTS",
        "UPTIME",
        "CALLS/ERRORS",
        "IN-FLIGHT/QUEUED",
        "P50/P95",
        "BREAKER",
    ]
    .map(str::to_owned)
    .to_vec();
    let rows: Vec<Vec<String>> = result.servers.iter().map(health_row).collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            std::iter::once(&header)
                .chain(&rows)
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let format_row = |mark: &str, row: &[String]| -> String {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        let line = format!("{mark:<1} {}", cells.join("  "));
        format!("{}\n", line.trim_end())
    };

    let mut text = format_row("", &header);
    for (server, row) in result.servers.iter().zip(&rows) {
        let mark = if is_unhealthy(server.state) {
            UNHEALTHY_MARK
        } else {
            ""
        };
        text.push_str(&format_row(mark, row));
        if let Some(error) = &server.last_error {
            let _ = writeln!(
                text,
                "    last error: {}",
                flatten(error, SUMMARY_WIDTH * 2)
            );
        }
    }
    text
}

/// The cells of one server's row, in the order of the header.
fn health_row(server: &ServerHealth) -> Vec<String> {
    vec![
        truncate(&server.name, NAME_COLUMN_MAX),
        server.state.as_str().to_owned(),
        server.restarts.to_string(),
        server
            .uptime_ms
            .map(human_duration)
            .unwrap_or_else(|| "-".to_owned()),
        format!("{}/{}", server.calls, server.errors),
        format!("{}/{}", server.in_flight, server.queued),
        latency(server.latency_ms.as_ref()),
        breaker(&server.breaker),
    ]
}

/// `12ms/80ms`, or `-` before any call has been measured.
fn latency(summary: Option<&LatencySummary>) -> String {
    match summary {
        Some(summary) if summary.samples > 0 => format!(
            "{}/{}",
            human_milliseconds(summary.p50),
            human_milliseconds(summary.p95)
        ),
        _ => "-".to_owned(),
    }
}

/// `closed`, `halfOpen`, or `open, retry in 12s`.
fn breaker(breaker: &BreakerHealth) -> String {
    match breaker.retry_after_ms {
        Some(retry_after_ms) if breaker.state == "open" => {
            // Rounded up, so that "retry in 1s" is never too early.
            let seconds = retry_after_ms.div_ceil(1000);
            format!("open, retry in {}", human_duration(seconds * 1000))
        }
        _ => breaker.state.clone(),
    }
}

/// A latency: `0.4ms`, `12ms`, `1.5s`.
fn human_milliseconds(milliseconds: f64) -> String {
    if milliseconds < 10.0 {
        format!("{milliseconds:.1}ms")
    } else if milliseconds < 1000.0 {
        format!("{milliseconds:.0}ms")
    } else {
        format!("{:.1}s", milliseconds / 1000.0)
    }
}

/// A duration to the second, its two largest units: `42s`, `3m12s`, `2h05m`, `3d04h`.
pub(crate) fn human_duration(milliseconds: u64) -> String {
    let seconds = milliseconds / 1000;
    let (minutes, hours, days) = (seconds / 60, seconds / 3600, seconds / 86_400);
    if minutes == 0 {
        format!("{seconds}s")
    } else if hours == 0 {
        format!("{minutes}m{:02}s", seconds % 60)
    } else if days == 0 {
        format!("{hours}h{:02}m", minutes % 60)
    } else {
        format!("{days}d{:02}h", hours % 24)
    }
}

/// The stderr line after `tool-cli token mint`, whose stdout is only the token:
/// `minted token <id>: <scope>, expires 2025-01-02 03:04:05 UTC (in 1h00m)`.
pub(crate) fn minted_summary(minted: &MintTokenResult, now_seconds: u64) -> String {
    let lifetime = match minted.expires_at {
        Some(expires_at) => format!("expires {}", expiry(expires_at, now_seconds)),
        None => "never expires (it lives until the daemon stops)".to_owned(),
    };
    format!(
        "minted token {}: {}, {lifetime}",
        minted.token_id,
        flatten(&minted.scope, SUMMARY_WIDTH * 2)
    )
}

/// `tool-cli token list`: one row per live minted token, the scope last because it is the
/// longest and varies most.
pub(crate) fn tokens(result: &ListTokensResult, now_seconds: u64) -> String {
    if result.tokens.is_empty() {
        return "no minted tokens; mint one with `tool-cli token mint`\n".to_owned();
    }
    let rows: Vec<Vec<String>> = result
        .tokens
        .iter()
        .map(|token| {
            vec![
                token.token_id.clone(),
                token
                    .label
                    .as_deref()
                    .map(|label| flatten(label, NAME_COLUMN_MAX))
                    .unwrap_or_else(|| "-".to_owned()),
                token
                    .expires_at
                    .map(|expires_at| expiry(expires_at, now_seconds))
                    .unwrap_or_else(|| "never".to_owned()),
                flatten(&token.scope, SUMMARY_WIDTH * 2),
            ]
        })
        .collect();
    table(&["ID", "LABEL", "EXPIRES", "SCOPE"], &rows)
}

/// Left-aligned columns two spaces apart, trailing spaces trimmed.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let header: Vec<String> = header.iter().map(|cell| (*cell).to_owned()).collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            std::iter::once(&header)
                .chain(rows)
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut text = String::new();
    for row in std::iter::once(&header).chain(rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        let _ = writeln!(text, "{}", cells.join("  ").trim_end());
    }
    text
}

/// An expiry time: `2025-01-02 03:04:05 UTC (in 1h00m)`, or `(expired)` once past.
pub(crate) fn expiry(expires_at: u64, now_seconds: u64) -> String {
    let when = match expires_at.checked_sub(now_seconds) {
        Some(left) if left > 0 => format!("in {}", human_duration(left.saturating_mul(1000))),
        _ => "expired".to_owned(),
    };
    format!("{} ({when})", utc_timestamp(expires_at))
}

/// Seconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`: UTC because the client has no
/// time-zone database, and a fixed format that sorts and compares as text.
pub(crate) fn utc_timestamp(epoch_seconds: u64) -> String {
    let (days, seconds) = (epoch_seconds / 86_400, epoch_seconds % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let shifted = days + 719_468;
    let era = shifted / 146_097;
    let day_of_era = shifted - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
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
        return format!("server {} offers no tools\n", result.server);
    }
    let name_width = column_width(result.tools.iter().map(|tool| tool.name.as_str()));
    let mut text = String::new();
    for tool in &result.tools {
        let mut line = format!(
            "{:<name_width$}  {}",
            tool.name,
            one_line(&tool.description, SUMMARY_WIDTH)
        );
        if tool.has_structured_output {
            line.push_str("  [structured output]");
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    let _ = write!(
        text,
        "\nnext: `tool-cli {} TOOL` shows a tool's parameters and an example call\n",
        result.server
    );
    text
}

/// `tool-cli SERVER TOOL`: the tool's description, its parameters, output and annotations, and
/// an example call built from its required parameters.
pub(crate) fn tool_schema(server: &str, tool: &Value) -> String {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
    let mut text = format!("{server} {name}\n");
    if let Some(title) = tool
        .pointer("/annotations/title")
        .or_else(|| tool.get("title"))
        .and_then(Value::as_str)
    {
        let _ = writeln!(text, "  {title}");
    }
    if let Some(description) = tool.get("description").and_then(Value::as_str) {
        for line in description.trim().lines() {
            let _ = writeln!(text, "  {}", line.trim_end());
        }
    }

    let empty = Value::Object(Map::new());
    let input_schema = tool.get("inputSchema").unwrap_or(&empty);
    let properties = input_schema.get("properties").and_then(Value::as_object);
    text.push('\n');
    match properties {
        Some(properties) if !properties.is_empty() => {
            text.push_str("Parameters:\n");
            let required = required_names(input_schema);
            for (parameter, schema) in properties {
                describe_parameter(
                    &mut text,
                    parameter,
                    schema,
                    required.contains(&parameter.as_str()),
                    input_schema,
                    1,
                );
            }
        }
        _ => text.push_str("Parameters: none\n"),
    }

    if let Some(output_schema) = tool.get("outputSchema").filter(|schema| schema.is_object()) {
        let _ = write!(text, "Output: structured JSON (outputSchema: ");
        let fields: Vec<Value> = output_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| properties.keys().cloned().map(Value::String).collect())
            .unwrap_or_default();
        if fields.is_empty() {
            text.push_str(&type_summary(output_schema, output_schema, 0));
        } else {
            let names = list_values(&fields).replace('"', "");
            let _ = write!(text, "object with {names}");
        }
        text.push_str(")\n");
    }
    let annotations = annotation_words(tool.get("annotations"));
    if !annotations.is_empty() {
        let _ = writeln!(text, "Annotations: {}", annotations.join(", "));
    }

    let example = example_arguments(input_schema);
    let _ = write!(
        text,
        "\nExample:\n  tool-cli {} {} {}\n",
        shell_word(server),
        shell_word(name),
        shell_quote(&example)
    );
    text
}

/// Names listed in a schema's `required`.
fn required_names(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// One parameter: `name: type, required|optional, constraints`, then its description on the next
/// line; object parameters list their own properties one level deeper.
fn describe_parameter(
    text: &mut String,
    path: &str,
    schema: &Value,
    required: bool,
    root: &Value,
    depth: usize,
) {
    let schema = resolve(schema, root);
    let indent = "  ".repeat(depth);
    let mut line = format!(
        "{indent}{path}: {}, {}",
        type_summary(schema, root, 0),
        if required { "required" } else { "optional" }
    );
    for constraint in constraints(schema) {
        line.push_str(", ");
        line.push_str(&constraint);
    }
    text.push_str(&line);
    text.push('\n');
    // The schema view is where details matter (defaults, clamping, formats): the whole
    // description, not its first sentence.
    if let Some(description) = schema.get("description").and_then(Value::as_str) {
        for line in description.trim().lines() {
            let _ = writeln!(text, "{indent}    {}", line.trim_end());
        }
    }
    if depth > NESTING_MAX {
        return;
    }
    // Expand objects, and objects inside arrays, so `edits[].oldText` is visible.
    let (nested, separator) = match schema.get("items").map(|items| resolve(items, root)) {
        Some(items) if items.get("properties").is_some() => (items, "[]."),
        _ => (schema, "."),
    };
    if let Some(properties) = nested.get("properties").and_then(Value::as_object) {
        let required = required_names(nested);
        for (name, child) in properties {
            describe_parameter(
                text,
                &format!("{path}{separator}{name}"),
                child,
                required.contains(&name.as_str()),
                root,
                depth + 1,
            );
        }
    }
}

/// Follows a local `$ref` (`#/$defs/Name`), leaving the schema as is when it cannot.
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut current = schema;
    // A bound on the hops, since refs can form cycles.
    for _ in 0..8 {
        match current
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| reference.strip_prefix('#'))
            .and_then(|pointer| root.pointer(pointer))
        {
            Some(target) => current = target,
            None => break,
        }
    }
    current
}

/// A short type expression: `string`, `integer | null`, `array of string`, `one of "a", "b"`,
/// `object`, `string (uri)`; `any` when the schema does not say.
pub(crate) fn type_summary(schema: &Value, root: &Value, depth: usize) -> String {
    if depth > 4 {
        return "…".to_owned();
    }
    let schema = resolve(schema, root);
    let Some(object) = schema.as_object() else {
        return "any".to_owned();
    };
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        return format!("one of {}", list_values(values));
    }
    if let Some(value) = object.get("const") {
        return format!("constant {}", compact(value));
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(variants) = object.get(keyword).and_then(Value::as_array) {
            let mut parts: Vec<String> = Vec::new();
            for variant in variants {
                let part = type_summary(variant, root, depth + 1);
                if !parts.contains(&part) {
                    parts.push(part);
                }
            }
            return parts.join(" | ");
        }
    }
    let types: Vec<&str> = match object.get("type") {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ if object.contains_key("properties") => vec!["object"],
        _ if object.contains_key("items") => vec!["array"],
        _ => return "any".to_owned(),
    };
    types
        .iter()
        .map(|name| match *name {
            "array" => match object.get("items") {
                Some(items) if items.is_object() => {
                    let inner = type_summary(items, root, depth + 1);
                    if inner.contains(" | ") || inner.starts_with("one of") {
                        format!("array of ({inner})")
                    } else {
                        format!("array of {inner}")
                    }
                }
                _ => "array".to_owned(),
            },
            "string" => match object.get("format").and_then(Value::as_str) {
                Some(format) => format!("string ({format})"),
                None => "string".to_owned(),
            },
            other => other.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The constraints worth a glance: default, numeric range, length and item bounds, pattern.
fn constraints(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    if let Some(default) = schema.get("default") {
        found.push(format!("default {}", compact(default)));
    }
    let number = |keyword: &str| schema.get(keyword).filter(|value| value.is_number());
    match (number("minimum"), number("maximum")) {
        (Some(low), Some(high)) => found.push(format!("{low} to {high}")),
        (Some(low), None) => found.push(format!(">= {low}")),
        (None, Some(high)) => found.push(format!("<= {high}")),
        (None, None) => {}
    }
    if let Some(low) = number("exclusiveMinimum") {
        found.push(format!("> {low}"));
    }
    if let Some(high) = number("exclusiveMaximum") {
        found.push(format!("< {high}"));
    }
    for (keyword, words) in [
        ("minLength", "min length"),
        ("maxLength", "max length"),
        ("minItems", "min items"),
        ("maxItems", "max items"),
    ] {
        if let Some(value) = number(keyword) {
            found.push(format!("{words} {value}"));
        }
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        found.push(format!("pattern {pattern}"));
    }
    found
}

/// The MCP annotations as words, only those that say something.
fn annotation_words(annotations: Option<&Value>) -> Vec<&'static str> {
    let Some(annotations) = annotations else {
        return Vec::new();
    };
    let flag = |name: &str| annotations.get(name).and_then(Value::as_bool);
    let mut words = Vec::new();
    let read_only = flag("readOnlyHint") == Some(true);
    if read_only {
        words.push("read-only");
    }
    // The spec gives destructiveHint meaning only for tools that are not read-only.
    if !read_only {
        match flag("destructiveHint") {
            Some(true) => words.push("destructive"),
            Some(false) => words.push("not destructive"),
            None => {}
        }
    }
    if flag("idempotentHint") == Some(true) {
        words.push("idempotent");
    }
    if flag("openWorldHint") == Some(true) {
        words.push("open world");
    }
    words
}

/// Example arguments: every required parameter with a plausible value, as one JSON line.
fn example_arguments(input_schema: &Value) -> String {
    let properties = input_schema.get("properties").and_then(Value::as_object);
    let required = required_names(input_schema);
    let members: Vec<String> = properties
        .into_iter()
        .flatten()
        .filter(|(name, _)| required.contains(&name.as_str()))
        .map(|(name, schema)| {
            format!(
                "{}: {}",
                compact(&Value::String(name.clone())),
                compact(&example_value(name, schema, input_schema, 0))
            )
        })
        .collect();
    format!("{{{}}}", members.join(", "))
}

/// A value that fits `schema`, preferring what the schema itself offers (examples, default,
/// enum) over a placeholder such as `"<path>"` that names what to fill in.
fn example_value(name: &str, schema: &Value, root: &Value, depth: usize) -> Value {
    let schema = resolve(schema, root);
    if let Some(example) = schema
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|examples| examples.first())
    {
        return example.clone();
    }
    for keyword in ["default", "const"] {
        if let Some(value) = schema.get(keyword) {
            return value.clone();
        }
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|values| values.first())
    {
        return first.clone();
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(variant) = schema
            .get(keyword)
            .and_then(Value::as_array)
            .and_then(|variants| {
                variants
                    .iter()
                    .find(|variant| variant.get("type").and_then(Value::as_str) != Some("null"))
            })
        {
            return example_value(name, variant, root, depth + 1);
        }
    }
    let type_name = match schema.get("type") {
        Some(Value::String(name)) => name.as_str(),
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(Value::as_str)
            .find(|name| *name != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match type_name {
        "integer" | "number" => schema
            .get("minimum")
            .filter(|value| value.is_number())
            .cloned()
            .unwrap_or(Value::from(1)),
        "boolean" => Value::Bool(true),
        "null" => Value::Null,
        "array" if depth < 3 => match schema.get("items").filter(|items| items.is_object()) {
            Some(items) => Value::Array(vec![example_value(name, items, root, depth + 1)]),
            None => Value::Array(Vec::new()),
        },
        "object" if depth < 3 => {
            let mut object = Map::new();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                let required = required_names(schema);
                for (child, child_schema) in properties {
                    if required.contains(&child.as_str()) {
                        object.insert(
                            child.clone(),
                            example_value(child, child_schema, root, depth + 1),
                        );
                    }
                }
            }
            Value::Object(object)
        }
        "array" => Value::Array(Vec::new()),
        "object" => Value::Object(Map::new()),
        _ => Value::String(format!("<{name}>")),
    }
}

/// What a call prints: the body for stdout, or for stderr when the tool reported an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallOutput {
    pub(crate) body: String,
    pub(crate) is_error: bool,
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
    CallOutput { body, is_error }
}

/// One content item: text as is, everything else as a one-line placeholder.
fn content_item(item: &Value) -> String {
    let kind = item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let field = |name: &str| item.get(name).and_then(Value::as_str);
    match kind {
        "text" => field("text").unwrap_or_default().to_owned(),
        "image" | "audio" => format!(
            "[{kind}: {}, {}; use --json or --out to get the data]",
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
    let mut text = format!("{server}:\n");
    if resources.is_empty() {
        let what = if uri_key == "uriTemplate" {
            "resource templates"
        } else {
            "resources"
        };
        let _ = writeln!(text, "  (no {what})");
        return text;
    }
    let uri_width = column_width(
        resources
            .iter()
            .map(|resource| resource.get(uri_key).and_then(Value::as_str).unwrap_or("?")),
    );
    for resource in resources {
        let field = |name: &str| resource.get(name).and_then(Value::as_str);
        let uri = field(uri_key).unwrap_or("?");
        let mut line = format!("  {uri:<uri_width$}");
        let label = field("title")
            .or(field("name"))
            .filter(|label| *label != uri);
        if let Some(label) = label {
            let _ = write!(line, "  {label}");
        }
        if let Some(mime) = field("mimeType") {
            let _ = write!(line, "  ({mime})");
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
fn shell_word(word: &str) -> String {
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
mod tests {
    use serde_json::json;
    use tool_cli_protocol::methods::{ServerSummary, ToolSummary, TransportKind};

    use super::*;

    /// The `echo` tool of the reference server-everything, as it lists it.
    fn everything_echo() -> Value {
        json!({
            "name": "echo",
            "description": "Echoes back the input",
            "inputSchema": {
                "type": "object",
                "properties": {"message": {"type": "string", "description": "Message to echo"}},
                "required": ["message"],
                "additionalProperties": false,
                "$schema": "http://json-schema.org/draft-07/schema#"
            }
        })
    }

    /// `edit_file` of the reference filesystem server: an array of objects, a default.
    fn filesystem_edit_file() -> Value {
        json!({
            "name": "edit_file",
            "description": "Make line-based edits to a text file. Each edit replaces exact line \
                sequences with new content. Returns a git-style diff showing the changes made. \
                Only works within allowed directories.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "edits": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "oldText": {"type": "string", "description": "Text to search for - must match exactly"},
                                "newText": {"type": "string", "description": "Text to replace with"}
                            },
                            "required": ["oldText", "newText"],
                            "additionalProperties": false
                        }
                    },
                    "dryRun": {"type": "boolean", "default": false, "description": "Preview changes using git-style diff format"}
                },
                "required": ["path", "edits"],
                "additionalProperties": false,
                "$schema": "http://json-schema.org/draft-07/schema#"
            },
            "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false}
        })
    }

    /// A tool in the shape our demo server's `sql_query` has: enum, type array, ref, output.
    fn sql_query() -> Value {
        json!({
            "name": "sql_query",
            "description": "Run one read-only SQL query against the demo database.\nReturns rows as objects.",
            "inputSchema": {
                "type": "object",
                "$defs": {"Format": {"type": "string", "enum": ["rows", "csv"]}},
                "properties": {
                    "query": {"type": "string", "description": "The SELECT statement"},
                    "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000, "default": 100},
                    "format": {"$ref": "#/$defs/Format"},
                    "params": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}}
                },
                "required": ["query"]
            },
            "outputSchema": {
                "type": "object",
                "properties": {"columns": {"type": "array"}, "rows": {"type": "array"}}
            },
            "annotations": {"title": "SQL query", "readOnlyHint": true, "openWorldHint": false}
        })
    }

    fn server(name: &str, state: ServerState, tools: &[&str]) -> ServerSummary {
        ServerSummary {
            name: name.into(),
            tool_count: tools.len(),
            examples: tools.iter().take(3).map(|tool| tool.to_string()).collect(),
            state,
            transport: TransportKind::Stdio,
            description: None,
            tags: Vec::new(),
            error: None,
        }
    }

    #[test]
    fn servers_show_count_examples_state_and_error() {
        let mut demo = server(
            "demo",
            ServerState::Ready,
            &["sql_query", "describe_schema"],
        );
        demo.description = Some("Bundled demo database.\nMore text.".into());
        let mut github = server("github", ServerState::Failed, &[]);
        github.error = Some("spawn npx: No such file or directory".into());
        let everything = server(
            "everything",
            ServerState::Ready,
            &["echo", "add", "longRunningOperation", "x"],
        );
        let result = ListServersResult {
            servers: vec![
                demo,
                github,
                everything,
                server("slow", ServerState::Connecting, &[]),
                server("off", ServerState::Disabled, &[]),
            ],
        };
        assert_eq!(
            servers(&result),
            "\
demo        2 tools     Bundled demo database.  (e.g. sql_query, describe_schema)
github      failed
            error: spawn npx: No such file or directory
everything  4 tools     (e.g. echo, add, longRunningOperation)
slow        connecting
off         disabled

next: `tool-cli SERVER` lists a server's tools
      `tool-cli health` shows restarts, last errors and circuit breakers
"
        );
    }

    #[test]
    fn servers_not_ready_show_their_error_and_point_to_health() {
        let mut restarting = server("gh", ServerState::Restarting, &[]);
        restarting.error = Some("exit code 1.\nstderr: boom".into());
        let mut down = server("db", ServerState::Down, &[]);
        down.error = Some("gave up after 5 restarts".into());
        let result = ListServersResult {
            servers: vec![server("demo", ServerState::Ready, &["q"]), restarting, down],
        };
        assert_eq!(
            servers(&result),
            "\
demo  1 tool      (e.g. q)
gh    restarting
      error: exit code 1. stderr: boom
db    down
      error: gave up after 5 restarts

next: `tool-cli SERVER` lists a server's tools
      `tool-cli health` shows restarts, last errors and circuit breakers
"
        );
    }

    fn server_health(name: &str, state: ServerState) -> ServerHealth {
        ServerHealth {
            name: name.into(),
            state,
            transport: TransportKind::Stdio,
            last_error: None,
            restarts: 0,
            uptime_ms: None,
            calls: 0,
            errors: 0,
            in_flight: 0,
            queued: 0,
            latency_ms: None,
            breaker: BreakerHealth {
                state: "closed".into(),
                retry_after_ms: None,
            },
            tools: None,
        }
    }

    #[test]
    fn health_table_marks_unhealthy_rows_and_shows_last_errors() {
        let mut demo = server_health("demo", ServerState::Ready);
        demo.uptime_ms = Some(192_400);
        demo.calls = 42;
        demo.errors = 1;
        demo.in_flight = 2;
        demo.queued = 3;
        demo.latency_ms = Some(LatencySummary {
            p50: 12.3,
            p95: 1480.0,
            samples: 42,
        });
        let mut github = server_health("github", ServerState::CircuitOpen);
        github.restarts = 5;
        github.uptime_ms = Some(7_500_000);
        github.calls = 9;
        github.errors = 9;
        github.latency_ms = Some(LatencySummary {
            p50: 0.42,
            p95: 3.0,
            samples: 9,
        });
        github.breaker = BreakerHealth {
            state: "open".into(),
            retry_after_ms: Some(11_200),
        };
        github.last_error = Some("upstream: rate limited\n  try later".into());
        let mut off = server_health("off", ServerState::Disabled);
        off.transport = TransportKind::Http;
        let result = HealthResult {
            servers: vec![demo, github, off],
            traces: None,
        };
        assert_eq!(
            health(&result),
            "  SERVER  STATE        RESTARTS  UPTIME  CALLS/ERRORS  IN-FLIGHT/QUEUED  P50/P95      BREAKER
  demo    ready        0         3m12s   42/1          2/3               12ms/1.5s    closed
! github  circuitOpen  5         2h05m   9/9           0/0               0.4ms/3.0ms  open, retry in 12s
    last error: upstream: rate limited try later
  off     disabled     0         -       0/0           0/0               -            closed
"
        );
    }

    #[test]
    fn every_state_but_ready_and_disabled_is_unhealthy() {
        for state in [ServerState::Ready, ServerState::Disabled] {
            assert!(!is_unhealthy(state), "{state:?}");
        }
        for state in [
            ServerState::Connecting,
            ServerState::Failed,
            ServerState::Exited,
            ServerState::Restarting,
            ServerState::Down,
            ServerState::Degraded,
            ServerState::CircuitOpen,
            ServerState::Unknown,
        ] {
            assert!(is_unhealthy(state), "{state:?}");
        }
    }

    #[test]
    fn health_without_servers_says_where_to_add_them() {
        let text = health(&HealthResult {
            servers: vec![],
            traces: None,
        });
        assert!(text.contains("no servers are configured"), "{text}");
    }

    #[test]
    fn health_parses_the_wire_format() {
        let result: HealthResult = serde_json::from_value(json!({"servers": [{
            "name": "demo", "state": "restarting", "transport": "stdio",
            "lastError": "exit code 1", "restarts": 2, "calls": 3, "errors": 1,
            "inFlight": 0, "queued": 0, "breaker": {"state": "halfOpen"}
        }]}))
        .unwrap();
        let text = health(&result);
        assert!(
            text.contains("! demo    restarting  2         -       3/1"),
            "{text}"
        );
        assert!(
            text.contains("halfOpen\n    last error: exit code 1\n"),
            "{text}"
        );
    }

    #[test]
    fn human_durations_keep_two_units() {
        assert_eq!(human_duration(0), "0s");
        assert_eq!(human_duration(999), "0s");
        assert_eq!(human_duration(42_000), "42s");
        assert_eq!(human_duration(192_000), "3m12s");
        assert_eq!(human_duration(3_600_000), "1h00m");
        assert_eq!(human_duration(7_500_000), "2h05m");
        assert_eq!(human_duration(273_600_000), "3d04h");
    }

    #[test]
    fn breaker_rounds_the_retry_up() {
        let open = |retry_after_ms| BreakerHealth {
            state: "open".into(),
            retry_after_ms: Some(retry_after_ms),
        };
        assert_eq!(breaker(&open(1)), "open, retry in 1s");
        assert_eq!(breaker(&open(1000)), "open, retry in 1s");
        assert_eq!(breaker(&open(90_001)), "open, retry in 1m31s");
        let without_hint = BreakerHealth {
            state: "open".into(),
            retry_after_ms: None,
        };
        assert_eq!(breaker(&without_hint), "open");
    }

    #[test]
    fn degraded_results_get_a_warning_and_fresh_ones_none() {
        let cached = json!({
            "content": [{"type": "text", "text": "42"}],
            "_meta": {"tool-cli/attempts": 3,
                      "tool-cli/degraded": {"reason": "circuit open", "ageMs": 42_500}}
        });
        assert_eq!(
            degraded_warning("demo", &cached).as_deref(),
            Some("server \"demo\" is failing; this is a cached result from 42s ago (circuit open)")
        );
        let without_details = json!({"_meta": {"tool-cli/degraded": {}}});
        assert_eq!(
            degraded_warning("demo", &without_details).as_deref(),
            Some("server \"demo\" is failing; this is a cached result (no reason given)")
        );
        let fresh = json!({"content": [], "_meta": {"tool-cli/attempts": 1, "other": {}}});
        assert_eq!(degraded_warning("demo", &fresh), None);
        assert_eq!(degraded_warning("demo", &json!({"content": []})), None);
    }

    #[test]
    fn no_servers_says_where_to_add_them() {
        let text = servers(&ListServersResult { servers: vec![] });
        assert!(text.contains("no servers are configured"), "{text}");
    }

    #[test]
    fn tools_are_one_line_each_and_mark_structured_output() {
        let result = ListToolsResult {
            server: "demo".into(),
            tools: vec![
                ToolSummary {
                    name: "sql_query".into(),
                    description: "Run one read-only SQL query. Returns rows.".into(),
                    has_structured_output: true,
                },
                ToolSummary {
                    name: "describe_schema".into(),
                    description: "".into(),
                    has_structured_output: false,
                },
            ],
        };
        assert_eq!(
            tools(&result),
            "\
sql_query        Run one read-only SQL query.  [structured output]
describe_schema

next: `tool-cli demo TOOL` shows a tool's parameters and an example call
"
        );
    }

    #[test]
    fn one_line_takes_the_first_sentence_and_truncates_at_a_word() {
        assert_eq!(one_line("First. Second.", 100), "First.");
        assert_eq!(
            one_line("\n\n  Line one\nline two.\n\nNext paragraph", 100),
            "Line one line two."
        );
        assert_eq!(one_line("version 1.2 is out", 100), "version 1.2 is out");
        let long = "word ".repeat(40);
        let cut = one_line(&long, 30);
        assert!(cut.chars().count() <= 30, "{cut}");
        assert!(cut.ends_with("word…"), "{cut}");
        assert_eq!(one_line("ééééé", 3), "éé…");
    }

    #[test]
    fn echo_schema_summary() {
        assert_eq!(
            tool_schema("everything", &everything_echo()),
            "\
everything echo
  Echoes back the input

Parameters:
  message: string, required
      Message to echo

Example:
  tool-cli everything echo '{\"message\": \"<message>\"}'
"
        );
    }

    #[test]
    fn filesystem_schema_expands_arrays_of_objects() {
        let text = tool_schema("filesystem", &filesystem_edit_file());
        assert!(text.contains("  path: string, required\n"), "{text}");
        assert!(
            text.contains("  edits: array of object, required\n"),
            "{text}"
        );
        assert!(
            text.contains("    edits[].oldText: string, required\n        Text to search for"),
            "{text}"
        );
        assert!(
            text.contains("  dryRun: boolean, optional, default false\n      Preview changes"),
            "{text}"
        );
        assert!(text.contains("Annotations: destructive\n"), "{text}");
        assert!(
            text.ends_with(
                "tool-cli filesystem edit_file '{\"path\": \"<path>\", \"edits\": \
                 [{\"oldText\":\"<oldText>\",\"newText\":\"<newText>\"}]}'\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn sql_schema_handles_type_arrays_refs_enums_and_output() {
        let text = tool_schema("demo", &sql_query());
        assert!(
            text.starts_with("demo sql_query\n  SQL query\n  Run one read-only"),
            "{text}"
        );
        assert!(text.contains("  Returns rows as objects.\n"), "{text}");
        assert!(
            text.contains("  limit: integer | null, optional, default 100, 1 to 1000\n"),
            "{text}"
        );
        assert!(
            text.contains("  format: one of \"rows\", \"csv\", optional\n"),
            "{text}"
        );
        assert!(
            text.contains("  params: array of (string | number), optional\n"),
            "{text}"
        );
        assert!(
            text.contains("Output: structured JSON (outputSchema: object with columns, rows)\n"),
            "{text}"
        );
        assert!(text.contains("Annotations: read-only\n"), "{text}");
        assert!(
            text.ends_with("tool-cli demo sql_query '{\"query\": \"<query>\"}'\n"),
            "{text}"
        );
    }

    #[test]
    fn tool_without_parameters() {
        let tool = json!({"name": "get time", "inputSchema": {"type": "object"}});
        let text = tool_schema("clock", &tool);
        assert!(text.contains("Parameters: none\n"), "{text}");
        assert!(text.ends_with("tool-cli clock 'get time' '{}'\n"), "{text}");
    }

    #[test]
    fn example_quotes_single_quotes_for_the_shell() {
        let tool = json!({"name": "say", "inputSchema": {"type": "object",
            "properties": {"text": {"type": "string", "examples": ["it's"]}}, "required": ["text"]}});
        let text = tool_schema("s", &tool);
        assert!(
            text.ends_with("tool-cli s say '{\"text\": \"it'\\''s\"}'\n"),
            "{text}"
        );
    }

    #[test]
    fn type_summary_forms() {
        let root = json!({});
        let cases = [
            (json!({"type": "string", "format": "uri"}), "string (uri)"),
            (json!({"type": ["string", "null"]}), "string | null"),
            (
                json!({"type": "array", "items": {"type": "string"}}),
                "array of string",
            ),
            (json!({"type": "array"}), "array"),
            (
                json!({"oneOf": [{"type": "integer"}, {"type": "string"}]}),
                "integer | string",
            ),
            (json!({"const": "x"}), "constant \"x\""),
            (json!({"properties": {"a": {}}}), "object"),
            (json!({}), "any"),
            (json!(true), "any"),
        ];
        for (schema, expected) in cases {
            assert_eq!(type_summary(&schema, &root, 0), expected, "{schema}");
        }
    }

    #[test]
    fn structured_content_is_preferred_as_pretty_json() {
        let result = json!({
            "content": [{"type": "text", "text": "{\"rows\":[]}"}],
            "structuredContent": {"columns": ["n"], "rows": [{"n": 1}]}
        });
        let output = call_result(&result);
        assert!(!output.is_error);
        assert_eq!(
            output.body,
            "{\n  \"columns\": [\n    \"n\"\n  ],\n  \"rows\": [\n    {\n      \"n\": 1\n    }\n  ]\n}\n"
        );
    }

    #[test]
    fn text_items_are_joined_and_binary_items_are_placeholders() {
        let result = json!({"content": [
            {"type": "text", "text": "Here is the image:"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "A".repeat(4096), "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "test://static/resource/1", "mimeType": "text/plain", "text": "hello"}},
            {"type": "resource_link", "uri": "file:///tmp/a.txt", "name": "a.txt", "mimeType": "text/plain"},
        ]});
        let output = call_result(&result);
        assert_eq!(
            output.body,
            "Here is the image:\n\
             [image: image/png, 8 bytes; use --json or --out to get the data]\n\
             [audio: audio/wav, 3.0 KiB; use --json or --out to get the data]\n\
             [embedded resource: test://static/resource/1, text/plain, 5 bytes; use --json to see it]\n\
             [resource link: file:///tmp/a.txt (a.txt), text/plain]"
        );
        assert!(!output.body.contains("iVBOR"));
    }

    #[test]
    fn error_result_is_its_text_even_with_structured_content() {
        let result = json!({
            "content": [{"type": "text", "text": "no such table: users"}],
            "structuredContent": {"error": "x"},
            "isError": true
        });
        assert_eq!(
            call_result(&result),
            CallOutput {
                body: "no such table: users".into(),
                is_error: true
            }
        );
    }

    #[test]
    fn resources_are_grouped_with_labels() {
        let resources = vec![
            json!({"uri": "demo://schema", "name": "schema", "mimeType": "text/plain",
                   "description": "The tables. And more."}),
            json!({"uri": "file:///logo.png", "name": "file:///logo.png", "mimeType": "image/png"}),
        ];
        assert_eq!(
            resource_group("demo", &resources, "uri"),
            "\
demo:
  demo://schema     schema  (text/plain)  The tables.
  file:///logo.png  (image/png)
"
        );
        assert_eq!(
            resource_group("demo", &[], "uriTemplate"),
            "demo:\n  (no resource templates)\n"
        );
    }

    #[test]
    fn resource_meta_shows_sizes_without_bodies() {
        let result = json!({"contents": [
            {"uri": "demo://schema", "mimeType": "text/plain", "text": "CREATE TABLE t(x);"},
            {"uri": "file:///logo.png", "mimeType": "image/png", "blob": "iVBORw0KGgo="},
        ]});
        assert_eq!(
            resource_meta(&result),
            "demo://schema  text/plain  18 bytes  text\nfile:///logo.png  image/png  8 bytes  binary\n"
        );
    }

    #[test]
    fn skill_uris_are_recognised() {
        assert!(is_skill_uri("skill://pdf/SKILL.md"));
        assert!(is_skill_uri("SKILL://x"));
        assert!(!is_skill_uri("skills://x"));
        assert!(!is_skill_uri("file:///skill://"));
        assert!(!is_skill_uri("sk"));
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human_size(1), "1 byte");
        assert_eq!(human_size(1023), "1023 bytes");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(3 * 1024 * 1024), "3.0 MiB");
    }

    #[test]
    fn utc_timestamps_match_an_independent_calendar() {
        // Expected values from Python's datetime.fromtimestamp(t, UTC).
        for (seconds, text) in [
            (0, "1970-01-01 00:00:00 UTC"),
            (951_782_400, "2000-02-29 00:00:00 UTC"),
            (951_868_799, "2000-02-29 23:59:59 UTC"),
            (1_763_760_896, "2025-11-21 21:34:56 UTC"),
            (4_102_444_800, "2100-01-01 00:00:00 UTC"),
            (253_402_300_799, "9999-12-31 23:59:59 UTC"),
        ] {
            assert_eq!(utc_timestamp(seconds), text);
        }
    }

    #[test]
    fn minted_summary_names_id_scope_and_expiry() {
        let now = 1_763_760_896;
        let mut minted = MintTokenResult {
            token: "t".repeat(64),
            token_id: "a8ae6e6ee929abea".into(),
            scope: "servers demo; read-only tools".into(),
            expires_at: Some(now + 3600),
        };
        let summary = minted_summary(&minted, now);
        assert_eq!(
            summary,
            "minted token a8ae6e6ee929abea: servers demo; read-only tools, expires \
             2025-11-21 22:34:56 UTC (in 1h00m)"
        );
        assert!(
            !summary.contains(&minted.token),
            "the secret stays on stdout"
        );
        minted.expires_at = None;
        assert!(
            minted_summary(&minted, now)
                .ends_with(", never expires (it lives until the daemon stops)")
        );
    }

    #[test]
    fn token_table_lists_id_label_expiry_and_scope() {
        use tool_cli_protocol::methods::TokenInfo;
        let now = 1_763_760_896;
        let result = ListTokensResult {
            tokens: vec![
                TokenInfo {
                    token_id: "0011223344556677".into(),
                    scope: "every server; read-only tools".into(),
                    label: Some("reviewer".into()),
                    expires_at: Some(now + 90),
                },
                TokenInfo {
                    token_id: "8899aabbccddeeff".into(),
                    scope: "servers demo".into(),
                    label: None,
                    expires_at: None,
                },
            ],
        };
        assert_eq!(
            tokens(&result, now),
            "ID                LABEL     EXPIRES                             SCOPE\n\
             0011223344556677  reviewer  2025-11-21 21:36:26 UTC (in 1m30s)  every server; \
             read-only tools\n\
             8899aabbccddeeff  -         never                               servers demo\n"
        );
        assert!(tokens(&ListTokensResult { tokens: vec![] }, now).starts_with("no minted tokens"));
        assert_eq!(expiry(now, now), "2025-11-21 21:34:56 UTC (expired)");
    }
}
