//! `tool-cli export openapi|openai|anthropic [--server S]`: the pool's tool definitions as an
//! OpenAPI 3.1 document, an OpenAI tools array or an Anthropic tools array. Pure: tool JSON in,
//! a document and notes out.
//!
//! - **Names**: every tool is exported under its gateway name ([`crate::names`]), which fits
//!   both providers' `^[a-zA-Z0-9_-]{1,64}$` and is unique; two tools that would share a name
//!   (a forged collision) are both refused with a note.
//! - **Input schemas**: MCP passes arguments as an object, so an export's parameters are an
//!   object schema. A tool whose `inputSchema` is missing, `true` or `{}` is exported as
//!   taking any object (`{"type": "object"}`), with a note; one that lacks `"type": "object"`
//!   but is plainly an object schema (it has `properties`, `required` or
//!   `additionalProperties`, a `type` list holding `object`, a `$ref` to an object
//!   definition, or alternatives that are all objects) gets the type added, with a note. A
//!   tool whose schema is `false`, of another type (`"string"`, `"array"`, …) or not a schema
//!   at all is **refused**, with a note saying why: no object of arguments could satisfy it,
//!   so no export could call it. Wrapping such a schema in an object would change what the
//!   tool receives, which is for the tool's author to decide, not an exporter.
//! - **Strict**: with `strict_when_compatible`, a tool whose schema already meets a
//!   provider's strict rules ([`crate::provider_schema`]) is marked `strict: true`; no schema
//!   is rewritten to make it strict (that would change what `null` and absent mean).
//! - **OpenAPI**: one `POST /tools/{name}` per tool, `operationId` the gateway name, the input
//!   schema as the request body, the MCP `CallToolResult` as the response (its
//!   `structuredContent` typed by the tool's `outputSchema` when it has one), the server as the
//!   tag, and `x-mcp-server`, `x-mcp-tool`, `x-mcp-annotations` for the way back. Each schema
//!   becomes a component and its local `$ref`s are rewritten to point inside it, since a
//!   `#/$defs/…` would otherwise resolve against the document's root. The daemon serves no
//!   REST endpoint at these paths today; the document describes the tools, and `servers` is
//!   written only when a base URL is given.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::meta_tools::Access;
use crate::names::GatewayNames;
use crate::provider_schema::{Provider, strict_problems};

/// One tool to export: its server and its MCP definition (`tools/list` item).
#[derive(Debug, Clone, Copy)]
pub struct ExportTool<'a> {
    /// The server it belongs to.
    pub server: &'a str,
    /// Its definition as the server listed it.
    pub tool: &'a Value,
}

/// How to export.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// Mark `strict: true` on tools whose schemas already meet the provider's strict rules.
    pub strict_when_compatible: bool,
    /// OpenAPI only: the document's title (default "tool-cli tools").
    pub title: Option<String>,
    /// OpenAPI only: the base URL written in `servers` (none by default).
    pub server_url: Option<String>,
}

/// Which OpenAI API shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OpenAiShape {
    /// Chat Completions: `{"type": "function", "function": {"name", "description",
    /// "parameters"}}`.
    #[default]
    ChatCompletions,
    /// Responses: `{"type": "function", "name", "description", "parameters"}`.
    Responses,
}

/// What a note is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    /// The tool was left out.
    Refused,
    /// The tool was exported with a change to its schema.
    Adjusted,
    /// Exported as it is, with something to know.
    Warning,
}

/// Something the export did not take as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportNote {
    /// The server (empty for a note about the whole export).
    pub server: String,
    /// The tool's own name (empty for a note about the whole export).
    pub tool: String,
    /// Refused, adjusted or a warning.
    pub kind: NoteKind,
    /// What and why.
    pub message: String,
}

impl std::fmt::Display for ExportNote {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            NoteKind::Refused => "refused",
            NoteKind::Adjusted => "adjusted",
            NoteKind::Warning => "warning",
        };
        if self.tool.is_empty() {
            write!(formatter, "{kind}: {}", self.message)
        } else {
            write!(
                formatter,
                "{kind}: {}/{}: {}",
                self.server, self.tool, self.message
            )
        }
    }
}

/// An export: the document and what it noted.
#[derive(Debug, Clone, PartialEq)]
pub struct Export {
    /// The tools array or the OpenAPI document.
    pub document: Value,
    /// One note per tool refused or adjusted, and any warnings.
    pub notes: Vec<ExportNote>,
    /// How many tools it holds.
    pub exported: usize,
}

impl Export {
    /// How many tools were refused.
    pub fn refused(&self) -> usize {
        self.notes
            .iter()
            .filter(|note| note.kind == NoteKind::Refused)
            .count()
    }
}

/// OpenAI accepts at most this many tools in one request.
pub const OPENAI_MAX_TOOLS: usize = 128;

/// A tool ready to be written: its name, text and object schema.
struct Prepared<'a> {
    name: String,
    server: &'a str,
    tool_name: String,
    title: Option<String>,
    description: String,
    input_schema: Value,
    output_schema: Option<Value>,
    annotations: Option<Value>,
}

/// The tools that can be exported, in gateway-name order, and notes on the rest.
fn prepare<'a>(tools: &[ExportTool<'a>], notes: &mut Vec<ExportNote>) -> Vec<Prepared<'a>> {
    let named: Vec<(&'a str, String, &'a Value)> = tools
        .iter()
        .filter_map(|export| {
            let name = export.tool.get("name").and_then(Value::as_str);
            if name.is_none() {
                notes.push(ExportNote {
                    server: export.server.to_owned(),
                    tool: String::new(),
                    kind: NoteKind::Refused,
                    message: "a tool without a string \"name\" cannot be exported".to_owned(),
                });
            }
            name.map(|name| (export.server, name.to_owned(), export.tool))
        })
        .collect();
    let names = GatewayNames::build(
        named
            .iter()
            .map(|(server, tool, _)| ((*server).to_owned(), tool.clone())),
    );
    for collision in names.collisions() {
        for address in collision.tools {
            notes.push(ExportNote {
                server: address.server,
                tool: address.tool,
                kind: NoteKind::Refused,
                message: format!(
                    "shares the gateway name {} with another tool; both are left out",
                    collision.gateway_name
                ),
            });
        }
    }
    let mut prepared: BTreeMap<String, Prepared<'a>> = BTreeMap::new();
    for (server, tool_name, tool) in named {
        let Some(name) = names.name_of(server, &tool_name) else {
            continue;
        };
        if prepared.contains_key(&name) {
            continue;
        }
        let mut note = |kind, message: String| {
            notes.push(ExportNote {
                server: server.to_owned(),
                tool: tool_name.clone(),
                kind,
                message,
            })
        };
        let input_schema = match object_schema(tool.get("inputSchema")) {
            Ok((schema, adjustment)) => {
                if let Some(adjustment) = adjustment {
                    note(NoteKind::Adjusted, adjustment);
                }
                schema
            }
            Err(reason) => {
                note(NoteKind::Refused, reason);
                continue;
            }
        };
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if description.is_empty() {
            note(
                NoteKind::Warning,
                "has no description; a model has only its name to go by".to_owned(),
            );
        }
        prepared.insert(
            name.clone(),
            Prepared {
                name,
                server,
                tool_name: tool_name.clone(),
                title: tool.get("title").and_then(Value::as_str).map(str::to_owned),
                description,
                input_schema,
                output_schema: tool
                    .get("outputSchema")
                    .filter(|schema| schema.is_object())
                    .cloned(),
                annotations: tool
                    .get("annotations")
                    .filter(|value| value.is_object())
                    .cloned(),
            },
        );
    }
    prepared.into_values().collect()
}

/// The object schema to export for an `inputSchema`, with a note when it was adjusted; or
/// why the tool cannot be exported.
fn object_schema(input: Option<&Value>) -> Result<(Value, Option<String>), String> {
    let any_object = || json!({"type": "object"});
    let Some(input) = input.filter(|value| !value.is_null()) else {
        return Ok((
            any_object(),
            Some("has no inputSchema; exported as taking any object of arguments".to_owned()),
        ));
    };
    let members = match input {
        Value::Bool(true) => {
            return Ok((
                any_object(),
                Some(
                    "inputSchema is `true`; exported as taking any object of arguments".to_owned(),
                ),
            ));
        }
        Value::Bool(false) => {
            return Err(
                "inputSchema is `false`: no arguments satisfy it, so it cannot be called"
                    .to_owned(),
            );
        }
        Value::Object(members) => members,
        other => {
            return Err(format!(
                "inputSchema is {}, not a JSON Schema object",
                json_kind(other)
            ));
        }
    };
    if members.is_empty() {
        return Ok((
            any_object(),
            Some("inputSchema is {}; exported as taking any object of arguments".to_owned()),
        ));
    }
    match members.get("type") {
        Some(Value::String(kind)) if kind == "object" => return Ok((input.clone(), None)),
        Some(Value::String(kind)) => {
            return Err(format!(
                "inputSchema has type \"{kind}\", but MCP passes a tool's arguments as an object, \
                 so no call could satisfy it; fix the tool's schema"
            ));
        }
        Some(Value::Array(kinds)) => {
            if kinds.iter().any(|kind| kind == "object") {
                let mut schema = members.clone();
                schema.insert("type".to_owned(), json!("object"));
                return Ok((
                    Value::Object(schema),
                    Some(format!(
                        "inputSchema has type {}; exported as \"object\", the only type arguments can have",
                        Value::Array(kinds.clone())
                    )),
                ));
            }
            return Err(format!(
                "inputSchema has type {}, none of them \"object\", but MCP passes a tool's \
                 arguments as an object; fix the tool's schema",
                Value::Array(kinds.clone())
            ));
        }
        Some(other) => return Err(format!("inputSchema's type is {other}, not a type name")),
        None => {}
    }
    if is_plainly_object(members, members) {
        let mut schema = Map::new();
        schema.insert("type".to_owned(), json!("object"));
        schema.extend(members.clone());
        return Ok((
            Value::Object(schema),
            Some("inputSchema has no \"type\"; exported with \"type\": \"object\"".to_owned()),
        ));
    }
    Err("inputSchema does not say it takes an object (no \"type\", properties or object alternatives); fix the tool's schema".to_owned())
}

/// How many `$ref`s and alternatives deep [`is_plainly_object`] looks (a cycle of `$ref`s
/// ends here rather than looping).
const MAX_SCHEMA_DEPTH: usize = 16;

/// Whether a schema without `type` can only describe objects.
fn is_plainly_object(schema: &Map<String, Value>, root: &Map<String, Value>) -> bool {
    is_plainly_object_within(schema, root, MAX_SCHEMA_DEPTH)
}

fn is_plainly_object_within(
    schema: &Map<String, Value>,
    root: &Map<String, Value>,
    depth: usize,
) -> bool {
    if depth == 0 {
        return false;
    }
    if schema.get("type") == Some(&json!("object")) {
        return true;
    }
    if [
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
    ]
    .iter()
    .any(|keyword| schema.contains_key(*keyword))
    {
        return true;
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str)
        && let Some(target) = local_definition(root, reference)
    {
        return target
            .as_object()
            .is_some_and(|target| is_plainly_object_within(target, root, depth - 1));
    }
    for keyword in ["anyOf", "oneOf", "allOf"] {
        if let Some(alternatives) = schema.get(keyword).and_then(Value::as_array)
            && !alternatives.is_empty()
            && alternatives.iter().all(|alternative| {
                alternative
                    .as_object()
                    .is_some_and(|a| is_plainly_object_within(a, root, depth - 1))
            })
        {
            return true;
        }
    }
    false
}

fn local_definition<'a>(root: &'a Map<String, Value>, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    let mut current: Option<&Value> = None;
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        current = match current {
            None => root.get(&token),
            Some(value) => value.get(&token),
        };
        current?;
    }
    current
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The tools as an OpenAI `tools` array.
pub fn openai(tools: &[ExportTool<'_>], shape: OpenAiShape, options: &ExportOptions) -> Export {
    let mut notes = Vec::new();
    let prepared = prepare(tools, &mut notes);
    if prepared.len() > OPENAI_MAX_TOOLS {
        notes.push(ExportNote {
            server: String::new(),
            tool: String::new(),
            kind: NoteKind::Warning,
            message: format!(
                "{} tools; OpenAI accepts at most {OPENAI_MAX_TOOLS} in one request (export one \
                 server, or use the gateway's progressive mode)",
                prepared.len()
            ),
        });
    }
    let array: Vec<Value> = prepared
        .iter()
        .map(|tool| {
            let mut function = Map::new();
            function.insert("name".to_owned(), json!(tool.name));
            function.insert("description".to_owned(), json!(tool.description));
            function.insert("parameters".to_owned(), tool.input_schema.clone());
            if options.strict_when_compatible
                && strict_problems(Provider::OpenAi, &tool.input_schema).is_empty()
            {
                function.insert("strict".to_owned(), json!(true));
            }
            match shape {
                OpenAiShape::ChatCompletions => {
                    json!({"type": "function", "function": Value::Object(function)})
                }
                OpenAiShape::Responses => {
                    let mut flat = Map::new();
                    flat.insert("type".to_owned(), json!("function"));
                    flat.extend(function);
                    Value::Object(flat)
                }
            }
        })
        .collect();
    Export {
        exported: array.len(),
        document: Value::Array(array),
        notes,
    }
}

/// The tools as an Anthropic `tools` array.
pub fn anthropic(tools: &[ExportTool<'_>], options: &ExportOptions) -> Export {
    let mut notes = Vec::new();
    let prepared = prepare(tools, &mut notes);
    let array: Vec<Value> = prepared
        .iter()
        .map(|tool| {
            let mut definition = Map::new();
            definition.insert("name".to_owned(), json!(tool.name));
            definition.insert("description".to_owned(), json!(tool.description));
            definition.insert("input_schema".to_owned(), tool.input_schema.clone());
            if options.strict_when_compatible
                && strict_problems(Provider::Anthropic, &tool.input_schema).is_empty()
            {
                definition.insert("strict".to_owned(), json!(true));
            }
            Value::Object(definition)
        })
        .collect();
    Export {
        exported: array.len(),
        document: Value::Array(array),
        notes,
    }
}

/// The tools as an OpenAPI 3.1 document.
pub fn openapi(tools: &[ExportTool<'_>], options: &ExportOptions) -> Export {
    let mut notes = Vec::new();
    let prepared = prepare(tools, &mut notes);
    let mut paths = Map::new();
    let mut schemas = Map::new();
    schemas.insert("CallToolResult".to_owned(), call_tool_result(None));
    for tool in &prepared {
        let input_component = format!("{}.input", tool.name);
        schemas.insert(
            input_component.clone(),
            rebased(&tool.input_schema, &input_component),
        );
        let result_schema = match &tool.output_schema {
            Some(output) => {
                let output_component = format!("{}.output", tool.name);
                schemas.insert(output_component.clone(), rebased(output, &output_component));
                let result_component = format!("{}.result", tool.name);
                schemas.insert(
                    result_component.clone(),
                    call_tool_result(Some(&output_component)),
                );
                component_ref(&result_component)
            }
            None => component_ref("CallToolResult"),
        };
        let mut operation = Map::new();
        operation.insert("operationId".to_owned(), json!(tool.name));
        operation.insert(
            "summary".to_owned(),
            json!(tool.title.clone().unwrap_or_else(|| tool.tool_name.clone())),
        );
        if !tool.description.is_empty() {
            operation.insert("description".to_owned(), json!(tool.description));
        }
        operation.insert("tags".to_owned(), json!([tool.server]));
        operation.insert(
            "requestBody".to_owned(),
            json!({
                "required": true,
                "content": {"application/json": {"schema": component_ref(&input_component)}}
            }),
        );
        operation.insert(
            "responses".to_owned(),
            json!({
                "200": {
                    "description": "The tool's result (MCP CallToolResult); isError true when the tool reports a failure.",
                    "content": {"application/json": {"schema": result_schema}}
                }
            }),
        );
        operation.insert("x-mcp-server".to_owned(), json!(tool.server));
        operation.insert("x-mcp-tool".to_owned(), json!(tool.tool_name));
        let annotations = tool.annotations.clone().unwrap_or(Value::Null);
        operation.insert(
            "x-mcp-access".to_owned(),
            json!(Access::of(&annotations).label()),
        );
        if !annotations.is_null() {
            operation.insert("x-mcp-annotations".to_owned(), annotations);
        }
        paths.insert(
            format!("/tools/{}", tool.name),
            json!({"post": Value::Object(operation)}),
        );
    }
    let mut document = Map::new();
    document.insert("openapi".to_owned(), json!("3.1.0"));
    document.insert(
        "info".to_owned(),
        json!({
            "title": options.title.clone().unwrap_or_else(|| "tool-cli tools".to_owned()),
            "version": "1",
            "description": "The tools of a tool-cli pool, one POST operation each: the request body is the tool's arguments, the response its MCP CallToolResult. Operation ids are the gateway's tool names (server__tool)."
        }),
    );
    if let Some(url) = &options.server_url {
        document.insert("servers".to_owned(), json!([{"url": url}]));
    }
    document.insert("paths".to_owned(), Value::Object(paths));
    document.insert(
        "components".to_owned(),
        json!({"schemas": Value::Object(schemas)}),
    );
    Export {
        exported: prepared.len(),
        document: Value::Object(document),
        notes,
    }
}

fn component_ref(component: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{component}")})
}

/// MCP's `CallToolResult`, its `structuredContent` typed by `output` when given.
fn call_tool_result(output: Option<&str>) -> Value {
    let structured = match output {
        Some(component) => component_ref(component),
        None => json!({"type": "object"}),
    };
    json!({
        "type": "object",
        "properties": {
            "content": {
                "type": "array",
                "description": "Content blocks (text, image, audio, resource links, embedded resources).",
                "items": {"type": "object", "properties": {"type": {"type": "string"}}, "required": ["type"]}
            },
            "structuredContent": structured,
            "isError": {"type": "boolean"}
        },
        "required": ["content"]
    })
}

/// `schema` with its local `$ref`s (`#`, `#/$defs/…`) rewritten to point inside the component
/// it becomes.
fn rebased(schema: &Value, component: &str) -> Value {
    let base = format!("#/components/schemas/{component}");
    match schema {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(key, value)| {
                    let value = match (key.as_str(), value) {
                        ("$ref", Value::String(reference)) if reference.starts_with('#') => {
                            json!(format!("{base}{}", &reference[1..]))
                        }
                        // Data positions hold no references.
                        ("const" | "default" | "enum" | "examples", other) => other.clone(),
                        (_, other) => rebased(other, component),
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.iter().map(|item| rebased(item, component)).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(server: &str, tool: &Value) -> Vec<ExportNote> {
        openai(
            &[ExportTool { server, tool }],
            OpenAiShape::ChatCompletions,
            &ExportOptions::default(),
        )
        .notes
    }

    #[test]
    fn object_schemas_pass_and_others_are_adjusted_or_refused() {
        let cases = [
            (json!({"type": "object"}), None),
            (json!(null), Some(NoteKind::Adjusted)),
            (json!(true), Some(NoteKind::Adjusted)),
            (json!({}), Some(NoteKind::Adjusted)),
            (json!({"properties": {"a": {}}}), Some(NoteKind::Adjusted)),
            (
                json!({"type": ["object", "null"]}),
                Some(NoteKind::Adjusted),
            ),
            (
                json!({"anyOf": [{"type": "object"}, {"properties": {}}]}),
                Some(NoteKind::Adjusted),
            ),
            (
                json!({"$ref": "#/$defs/a", "$defs": {"a": {"type": "object"}}}),
                Some(NoteKind::Adjusted),
            ),
            (json!(false), Some(NoteKind::Refused)),
            (json!({"type": "string"}), Some(NoteKind::Refused)),
            (json!({"type": ["string", "null"]}), Some(NoteKind::Refused)),
            (json!({"type": 5}), Some(NoteKind::Refused)),
            (json!("object"), Some(NoteKind::Refused)),
            (json!([1]), Some(NoteKind::Refused)),
            (
                json!({"anyOf": [{"type": "object"}, {"type": "string"}]}),
                Some(NoteKind::Refused),
            ),
            (json!({"$ref": "#/$defs/missing"}), Some(NoteKind::Refused)),
            (json!({"$ref": "#"}), Some(NoteKind::Refused)),
            (
                json!({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}),
                Some(NoteKind::Refused),
            ),
        ];
        for (schema, expected) in cases {
            let tool = json!({"name": "t", "description": "d", "inputSchema": schema});
            let tool = if schema.is_null() {
                json!({"name": "t", "description": "d"})
            } else {
                tool
            };
            let notes = one("s", &tool);
            assert_eq!(
                notes.first().map(|note| note.kind),
                expected,
                "{schema}: {notes:?}"
            );
        }
    }

    #[test]
    fn a_string_schema_is_refused_with_the_reason() {
        let tool =
            json!({"name": "echo", "description": "Echo.", "inputSchema": {"type": "string"}});
        let export = openai(
            &[ExportTool {
                server: "s",
                tool: &tool,
            }],
            OpenAiShape::ChatCompletions,
            &ExportOptions::default(),
        );
        assert_eq!(export.exported, 0);
        assert_eq!(export.refused(), 1);
        assert_eq!(
            export.notes[0].to_string(),
            "refused: s/echo: inputSchema has type \"string\", but MCP passes a tool's arguments \
             as an object, so no call could satisfy it; fix the tool's schema"
        );
    }

    #[test]
    fn local_refs_are_rebased_into_the_component() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/x"}, "self": {"$ref": "#"}, "d": {"default": {"$ref": "#/keep"}}},
            "$defs": {"x": {"type": "string"}}
        });
        let rebased = rebased(&schema, "s__t.input");
        assert_eq!(
            rebased["properties"]["a"]["$ref"],
            "#/components/schemas/s__t.input/$defs/x"
        );
        assert_eq!(
            rebased["properties"]["self"]["$ref"],
            "#/components/schemas/s__t.input"
        );
        assert_eq!(rebased["properties"]["d"]["default"]["$ref"], "#/keep");
    }
}
