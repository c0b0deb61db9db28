//! `ToolDoc`, the searchable text of one tool, and how it is read from an MCP `tools/list` item.
//!
//! The index never sees raw JSON: the daemon converts each catalog tool once, where the catalog
//! enters, and passes the parsed value on. Over-long texts are cut here (at a character boundary)
//! so one tool with a 50 KB description can neither slow a rebuild down nor drown the length
//! statistics of every other tool.

use serde_json::Value;

use crate::text::truncate_at_char_boundary;

/// The most bytes of a description that are kept and indexed. Real descriptions that matter for
/// retrieval say what the tool does in their first paragraphs; what follows is usually examples.
pub const MAX_DESCRIPTION_BYTES: usize = 8 * 1024;

/// The most bytes kept of a name, a title, a parameter's name or description, or a tag.
pub const MAX_SHORT_TEXT_BYTES: usize = 1024;

/// The most parameters kept per tool (including one level of nested properties).
pub const MAX_PARAMETERS: usize = 64;

/// The searchable text of one tool.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolDoc {
    /// The server that provides the tool (its name in the servers config).
    pub server: String,
    /// The tool's name as the server lists it.
    pub name: String,
    /// A human title (`title`, or `annotations.title`), when the server gives one.
    pub title: Option<String>,
    /// The description; empty when the server gives none.
    pub description: String,
    /// The input parameters: names and descriptions.
    pub parameters: Vec<ParamDoc>,
    /// The server's description from the servers config.
    pub server_description: Option<String>,
    /// Tags (the server's, from the servers config); also what `Query::tags` filters on.
    pub tags: Vec<String>,
}

/// One input parameter of a tool.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParamDoc {
    /// The property name (`path`, or `options.recursive` for a nested one).
    pub name: String,
    /// Its description, empty when it has none.
    pub description: String,
}

fn capped(text: &str, max_bytes: usize) -> String {
    truncate_at_char_boundary(text, max_bytes).to_owned()
}

fn string_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

impl ToolDoc {
    /// Reads a tool from an MCP `tools/list` item: `name`, `title` (or `annotations.title`),
    /// `description`, and `inputSchema.properties` with their descriptions, nested objects one
    /// level deep. Missing or mistyped members read as empty; nothing here fails, because a tool
    /// the daemon accepted must be searchable even when its metadata is poor.
    pub fn from_mcp_tool(
        server: &str,
        tool: &Value,
        server_description: Option<&str>,
        tags: &[String],
    ) -> ToolDoc {
        let title = string_at(tool, "title")
            .or_else(|| tool.get("annotations").and_then(|a| string_at(a, "title")))
            .filter(|t| !t.trim().is_empty())
            .map(|t| capped(t, MAX_SHORT_TEXT_BYTES));
        let mut parameters = Vec::new();
        if let Some(properties) = tool
            .get("inputSchema")
            .and_then(|schema| schema.get("properties"))
            .and_then(Value::as_object)
        {
            for (name, property) in properties {
                push_parameter(&mut parameters, name, property);
                let nested = property
                    .get("properties")
                    .or_else(|| property.get("items").and_then(|i| i.get("properties")))
                    .and_then(Value::as_object);
                for (inner_name, inner) in nested.into_iter().flatten() {
                    push_parameter(&mut parameters, &format!("{name}.{inner_name}"), inner);
                }
            }
        }
        ToolDoc {
            server: capped(server, MAX_SHORT_TEXT_BYTES),
            name: capped(
                string_at(tool, "name").unwrap_or_default(),
                MAX_SHORT_TEXT_BYTES,
            ),
            title,
            description: capped(
                string_at(tool, "description").unwrap_or_default(),
                MAX_DESCRIPTION_BYTES,
            ),
            parameters,
            server_description: server_description.map(|d| capped(d, MAX_DESCRIPTION_BYTES)),
            tags: tags
                .iter()
                .map(|t| capped(t, MAX_SHORT_TEXT_BYTES))
                .collect(),
        }
    }

    /// Applies the length caps to a document built by hand, so the index holds the same
    /// bounded texts whichever way a document was made.
    pub(crate) fn capped(mut self) -> ToolDoc {
        cap_in_place(&mut self.description, MAX_DESCRIPTION_BYTES);
        cap_in_place(&mut self.name, MAX_SHORT_TEXT_BYTES);
        if let Some(title) = &mut self.title {
            cap_in_place(title, MAX_SHORT_TEXT_BYTES);
        }
        self.parameters.truncate(MAX_PARAMETERS);
        for parameter in &mut self.parameters {
            cap_in_place(&mut parameter.name, MAX_SHORT_TEXT_BYTES);
            cap_in_place(&mut parameter.description, MAX_SHORT_TEXT_BYTES);
        }
        if let Some(description) = &mut self.server_description {
            cap_in_place(description, MAX_DESCRIPTION_BYTES);
        }
        for tag in &mut self.tags {
            cap_in_place(tag, MAX_SHORT_TEXT_BYTES);
        }
        self
    }
}

/// Cuts `text` to at most `max_bytes` at a character boundary, without copying.
fn cap_in_place(text: &mut String, max_bytes: usize) {
    let kept = truncate_at_char_boundary(text, max_bytes).len();
    text.truncate(kept);
}

/// The most allowed values of one parameter that are indexed.
const MAX_ENUM_VALUES: usize = 32;

fn push_parameter(parameters: &mut Vec<ParamDoc>, name: &str, property: &Value) {
    if parameters.len() >= MAX_PARAMETERS {
        return;
    }
    let mut description = string_at(property, "description")
        .unwrap_or_default()
        .to_owned();
    // The values a parameter allows say what the tool can do ("unit": celsius / fahrenheit,
    // "state": open / closed / merged); a request often names one of them.
    let values: Vec<String> = property
        .get("enum")
        .or_else(|| property.get("items").and_then(|items| items.get("enum")))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|value| match value {
            Value::String(text) => Some(text.clone()),
            Value::Number(number) => Some(number.to_string()),
            _ => None,
        })
        .take(MAX_ENUM_VALUES)
        .collect();
    if !values.is_empty() {
        if !description.is_empty() {
            description.push(' ');
        }
        description.push_str("One of: ");
        description.push_str(&values.join(", "));
        description.push('.');
    }
    parameters.push(ParamDoc {
        name: capped(name, MAX_SHORT_TEXT_BYTES),
        description: capped(&description, MAX_SHORT_TEXT_BYTES),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_name_title_description_and_nested_parameters() {
        let tool = json!({
            "name": "search_issues",
            "annotations": {"title": "Search issues"},
            "description": "Find issues by text",
            "inputSchema": {"type": "object", "properties": {
                "q": {"type": "string", "description": "search text"},
                "filter": {"type": "object", "properties": {"state": {"description": "open or closed"}}}
            }}
        });
        let doc = ToolDoc::from_mcp_tool("github", &tool, Some("GitHub"), &["code".to_owned()]);
        assert_eq!(doc.name, "search_issues");
        assert_eq!(doc.title.as_deref(), Some("Search issues"));
        assert_eq!(doc.description, "Find issues by text");
        let names: Vec<&str> = doc.parameters.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["q", "filter", "filter.state"]);
        assert_eq!(doc.parameters[2].description, "open or closed");
        assert_eq!(doc.server_description.as_deref(), Some("GitHub"));
        assert_eq!(doc.tags, ["code"]);
    }

    #[test]
    fn allowed_values_are_part_of_a_parameters_text() {
        let tool = json!({
            "name": "get_weather",
            "inputSchema": {"type": "object", "properties": {
                "unit": {"type": "string", "description": "Temperature unit", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "array", "items": {"enum": [1, 3, 7]}},
                "plain": {"type": "string"}
            }}
        });
        let doc = ToolDoc::from_mcp_tool("w", &tool, None, &[]);
        assert_eq!(
            doc.parameters[0].description,
            "Temperature unit One of: celsius, fahrenheit."
        );
        assert_eq!(doc.parameters[1].description, "One of: 1, 3, 7.");
        assert_eq!(doc.parameters[2].description, "");
    }

    #[test]
    fn missing_or_mistyped_members_read_as_empty() {
        let doc = ToolDoc::from_mcp_tool("s", &json!({"name": "t", "description": 7}), None, &[]);
        assert_eq!(doc.description, "");
        assert!(doc.title.is_none());
        assert!(doc.parameters.is_empty());
    }

    #[test]
    fn a_50_kb_description_is_cut_at_a_character_boundary() {
        let description = "é".repeat(25_000);
        let doc = ToolDoc::from_mcp_tool(
            "s",
            &json!({"name": "t", "description": description}),
            None,
            &[],
        );
        assert!(doc.description.len() <= MAX_DESCRIPTION_BYTES);
        assert!(doc.description.len() >= MAX_DESCRIPTION_BYTES - 1);
        assert!(doc.description.chars().all(|c| c == 'é'));
    }
}
