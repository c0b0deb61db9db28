//! Finding the tool for a job by what it takes, not by one server's names: a SQL tool takes a
//! `sql` (or `query`) string, a code runner a `code` string and says Python, an exchange-rate
//! tool two currencies, the resource tools a `uri` or a `handle`. Also the nearest tools to a
//! task the planner cannot do, for an honest "cannot" answer. Pure.

use serde_json::Value;

use super::words;
use crate::backend::ExposedTool;

/// The names of the tool's input properties.
pub(crate) fn properties(tool: &ExposedTool) -> Vec<&str> {
    tool.input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

fn string_property(tool: &ExposedTool, name: &str) -> bool {
    tool.input_schema
        .pointer(&format!("/properties/{name}/type"))
        .and_then(Value::as_str)
        == Some("string")
}

fn says(tool: &ExposedTool, word: &str) -> bool {
    tool.tool.to_lowercase().contains(word) || tool.description.to_lowercase().contains(word)
}

/// A tool that runs code: a `code` string, and Python named in its name or description.
pub(crate) fn code_tool(tools: &[ExposedTool]) -> Option<&ExposedTool> {
    tools
        .iter()
        .find(|tool| string_property(tool, "code") && says(tool, "python"))
}

/// The argument names of an exchange-rate tool: (from, to, amount, date).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RateTool<'a> {
    pub(crate) tool: &'a ExposedTool,
    pub(crate) from: &'a str,
    pub(crate) to: &'a str,
    pub(crate) amount: Option<&'a str>,
    pub(crate) date: Option<&'a str>,
}

/// A tool that gives an exchange rate: it speaks of rates or currencies and takes a pair of
/// currencies (`base`/`quote`, `from`/`to`, `source`/`target`).
pub(crate) fn rate_tool(tools: &[ExposedTool]) -> Option<RateTool<'_>> {
    tools.iter().find_map(|tool| {
        if !(says(tool, "rate") || says(tool, "currenc") || says(tool, "exchange")) {
            return None;
        }
        let names = properties(tool);
        let pick = |candidates: &[&str]| {
            candidates
                .iter()
                .find_map(|wanted| names.iter().find(|name| name.eq_ignore_ascii_case(wanted)))
                .copied()
        };
        Some(RateTool {
            tool,
            from: pick(&["base", "from", "source", "from_currency", "fromCurrency"])?,
            to: pick(&[
                "quote",
                "to",
                "target",
                "to_currency",
                "toCurrency",
                "symbol",
            ])?,
            amount: pick(&["amount", "value"]),
            date: pick(&["date", "day", "on"]),
        })
    })
}

/// The resource tools: list, open (takes a `uri`), read and release (take a `handle`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResourceTools<'a> {
    pub(crate) list: &'a ExposedTool,
    pub(crate) open: &'a ExposedTool,
    pub(crate) read: &'a ExposedTool,
    pub(crate) release: Option<&'a ExposedTool>,
}

/// The set of resource-handle tools, when the catalog has them all on one server.
pub(crate) fn resource_tools(tools: &[ExposedTool]) -> Option<ResourceTools<'_>> {
    let named = |verb: &str, property: Option<&str>| {
        tools.iter().find(|tool| {
            let name = tool.tool.to_lowercase();
            name.contains(verb)
                && name.contains("resource")
                && property.is_none_or(|property| string_property(tool, property))
        })
    };
    let open = named("open", Some("uri"))?;
    let same_server = |tool: &&ExposedTool| tool.servers.iter().any(|s| open.servers.contains(s));
    Some(ResourceTools {
        list: named("list", None).filter(same_server)?,
        open,
        read: named("read", Some("handle")).filter(same_server)?,
        release: named("release", Some("handle"))
            .or_else(|| named("close", Some("handle")))
            .filter(same_server),
    })
}

/// A tool that describes a database schema (`describe_schema` and the like).
pub(crate) fn schema_tool(tools: &[ExposedTool]) -> Option<&ExposedTool> {
    tools.iter().find(|tool| {
        let name = tool.tool.to_lowercase();
        (name.contains("schema") || name.contains("describe") || name.contains("list_tables"))
            && !name.contains("resource")
    })
}

/// The tools nearest to a task: those ranked by the host's search first, then the others by the
/// words they share with the task; at most `limit`, as `server/tool` labels.
pub(crate) fn nearest(
    tools: &[ExposedTool],
    ranked: &[String],
    task: &str,
    limit: usize,
) -> Vec<String> {
    let task_stems = words::content_stems(task);
    let overlap = |tool: &ExposedTool| {
        let stems = words::content_stems(&format!(
            "{} {}",
            tool.tool.replace('_', " "),
            tool.description
        ));
        task_stems
            .iter()
            .filter(|stem| stems.contains(stem))
            .count()
    };
    let mut scored: Vec<(usize, usize, &ExposedTool)> = tools
        .iter()
        .map(|tool| {
            let rank = ranked
                .iter()
                .position(|name| *name == tool.name)
                .unwrap_or(usize::MAX);
            (rank, overlap(tool), tool)
        })
        .filter(|(rank, overlap, _)| *rank != usize::MAX || *overlap > 0)
        .collect();
    scored.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, _, tool)| label(tool))
        .collect()
}

/// `server/tool`, or `*/tool` for a tool several servers offer.
pub(crate) fn label(tool: &ExposedTool) -> String {
    match &tool.server {
        Some(server) => format!("{server}/{}", tool.tool),
        None => format!("*/{}", tool.tool),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;

    pub(crate) fn tool(name: &str, description: &str, schema: Value) -> ExposedTool {
        ExposedTool {
            name: name.into(),
            server: Some("demo".into()),
            servers: vec!["demo".into()],
            tool: name.into(),
            description: description.into(),
            input_schema: schema,
            read_only: true,
            destructive: false,
        }
    }

    /// The bundled toolkit's shapes.
    pub(crate) fn toolkit() -> Vec<ExposedTool> {
        let string = json!({"type": "string"});
        vec![
            tool(
                "describe_schema",
                "Tables, columns and keys",
                json!({"type": "object", "properties": {"table": string}}),
            ),
            tool(
                "sql_query",
                "Run one read-only SELECT",
                json!({"type": "object", "properties": {"sql": string, "page_size": {"type": "integer"}}}),
            ),
            tool(
                "rest_exchange_rate",
                "Look up a currency exchange rate",
                json!({"type": "object", "properties": {"base": string, "quote": string, "date": string, "amount": {"type": "number"}}}),
            ),
            tool(
                "run_python",
                "Run a Python snippet in a sandbox",
                json!({"type": "object", "properties": {"code": string, "timeoutMs": {"type": "integer"}}}),
            ),
            tool(
                "list_resources",
                "The resources the handle tools can open",
                json!({"type": "object", "properties": {}}),
            ),
            tool(
                "open_resource",
                "Open a resource handle",
                json!({"type": "object", "properties": {"uri": string}}),
            ),
            tool(
                "read_resource",
                "Read a chunk",
                json!({"type": "object", "properties": {"handle": string, "offset": {"type": "integer"}}}),
            ),
            tool(
                "release_resource",
                "End a handle",
                json!({"type": "object", "properties": {"handle": string}}),
            ),
        ]
    }

    #[test]
    fn tools_are_found_by_their_arguments() {
        let tools = toolkit();
        assert_eq!(
            code_tool(&tools).map(|t| t.tool.as_str()),
            Some("run_python")
        );
        let rate = rate_tool(&tools).expect("rate tool");
        assert_eq!((rate.from, rate.to), ("base", "quote"));
        assert_eq!((rate.amount, rate.date), (Some("amount"), Some("date")));
        let resources = resource_tools(&tools).expect("resource tools");
        assert_eq!(resources.read.tool, "read_resource");
        assert_eq!(
            resources.release.map(|t| t.tool.as_str()),
            Some("release_resource")
        );
        assert_eq!(
            schema_tool(&tools).map(|t| t.tool.as_str()),
            Some("describe_schema")
        );
        assert!(code_tool(&tools[..3]).is_none());
        assert!(resource_tools(&tools[..6]).is_none());
    }

    #[test]
    fn nearest_tools_put_the_search_ranking_first_then_shared_words() {
        let tools = toolkit();
        assert_eq!(
            nearest(&tools, &["run_python".into()], "send a currency email", 3),
            ["demo/run_python", "demo/rest_exchange_rate"]
        );
        assert!(nearest(&tools, &[], "weather tomorrow", 3).is_empty());
    }
}
