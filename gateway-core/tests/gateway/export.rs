//! Export of the ~2,000-tool evaluation catalog, and of a catalog with broken schemas, to
//! OpenAPI 3.1, OpenAI and Anthropic tools.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use tool_cli_gateway_core::export::{
    ExportOptions, ExportTool, NoteKind, OPENAI_MAX_TOOLS, OpenAiShape, anthropic, openai, openapi,
};
use tool_cli_gateway_core::meta_tools::definitions;
use tool_cli_gateway_core::provider_schema::is_valid_tool_name;

use crate::util::{CatalogServer, evaluation_catalog};

fn export_tools(catalog: &[CatalogServer]) -> Vec<ExportTool<'_>> {
    catalog
        .iter()
        .flat_map(|server| {
            server.tools.iter().map(move |tool| ExportTool {
                server: &server.name,
                tool,
            })
        })
        .collect()
}

/// Every `$ref` under `value`.
fn references(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(members) => {
            for (key, member) in members {
                match (key.as_str(), member) {
                    ("$ref", Value::String(reference)) => found.push(reference.clone()),
                    _ => references(member, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| references(item, found)),
        _ => {}
    }
}

#[test]
fn the_whole_catalog_exports_to_all_three_formats() {
    let catalog = evaluation_catalog();
    let tools = export_tools(&catalog);
    let total = tools.len();
    let options = ExportOptions::default();

    let chat = openai(&tools, OpenAiShape::ChatCompletions, &options);
    assert_eq!(
        chat.exported,
        total,
        "{:?}",
        chat.notes
            .iter()
            .filter(|n| n.kind == NoteKind::Refused)
            .collect::<Vec<_>>()
    );
    let names: BTreeSet<&str> = chat
        .document
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), total, "names are unique");
    assert!(names.iter().all(|name| is_valid_tool_name(name)));
    assert!(
        chat.notes.iter().any(|note| note.kind == NoteKind::Warning
            && note
                .message
                .contains(&format!("at most {OPENAI_MAX_TOOLS}"))),
        "a warning about OpenAI's 128-tool limit"
    );
    for tool in chat.document.as_array().unwrap() {
        assert_eq!(tool["type"], "function");
        assert_eq!(tool["function"]["parameters"]["type"], "object");
    }

    let responses = openai(&tools, OpenAiShape::Responses, &options);
    assert_eq!(
        responses.document[0]["name"],
        chat.document[0]["function"]["name"]
    );
    assert_eq!(responses.document[0]["type"], "function");

    let claude = anthropic(&tools, &options);
    assert_eq!(claude.exported, total);
    for tool in claude.document.as_array().unwrap() {
        assert!(is_valid_tool_name(tool["name"].as_str().unwrap()));
        assert_eq!(tool["input_schema"]["type"], "object");
    }

    let document = openapi(&tools, &options);
    assert_eq!(document.exported, total);
    assert_eq!(document.document["openapi"], "3.1.0");
    let paths = document.document["paths"].as_object().unwrap();
    assert_eq!(paths.len(), total);
    let mut operation_ids = BTreeSet::new();
    for (path, item) in paths {
        let operation = &item["post"];
        assert_eq!(
            path,
            &format!("/tools/{}", operation["operationId"].as_str().unwrap())
        );
        assert!(operation_ids.insert(operation["operationId"].as_str().unwrap().to_owned()));
        assert!(operation["x-mcp-server"].is_string() && operation["x-mcp-tool"].is_string());
    }
    let mut found = Vec::new();
    references(&document.document, &mut found);
    assert!(found.len() >= 2 * total);
    for reference in &found {
        let pointer = reference.strip_prefix('#').expect("only local references");
        assert!(
            document.document.pointer(pointer).is_some(),
            "{reference} does not resolve"
        );
    }
    assert!(
        document.document.get("servers").is_none(),
        "no base URL given, none written"
    );
    eprintln!(
        "export of the evaluation catalog: {total} tools to OpenAI, Anthropic and OpenAPI 3.1 ({} references, all resolving)",
        found.len()
    );
}

#[test]
fn a_catalog_with_non_object_schemas_exports_what_it_can_and_says_why_not_the_rest() {
    let tools = [
        json!({"name": "good", "description": "Fine.", "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}}}),
        json!({"name": "untyped", "description": "No type.", "inputSchema": {"properties": {"a": {"type": "string"}}}}),
        json!({"name": "missing", "description": "No schema."}),
        json!({"name": "string", "description": "A string schema.", "inputSchema": {"type": "string"}}),
        json!({"name": "array", "description": "An array schema.", "inputSchema": {"type": "array", "items": {}}}),
        json!({"name": "never", "description": "False.", "inputSchema": false}),
        json!({"name": "text", "description": "Not a schema.", "inputSchema": "object"}),
        json!({"name": "nullable", "description": "Object or null.", "inputSchema": {"type": ["object", "null"]}}),
        json!({"name": "with.defs", "description": "Refs.", "inputSchema": {
            "type": "object",
            "properties": {"where": {"$ref": "#/$defs/place"}},
            "$defs": {"place": {"type": "object", "properties": {"city": {"type": "string"}}}}
        }}),
        json!({"description": "No name."}),
    ];
    let export_list: Vec<ExportTool<'_>> = tools
        .iter()
        .map(|tool| ExportTool {
            server: "mixed",
            tool,
        })
        .collect();
    for export in [
        openai(
            &export_list,
            OpenAiShape::ChatCompletions,
            &ExportOptions::default(),
        ),
        anthropic(&export_list, &ExportOptions::default()),
        openapi(&export_list, &ExportOptions::default()),
    ] {
        assert_eq!(export.exported, 5);
        let refused: BTreeSet<&str> = export
            .notes
            .iter()
            .filter(|note| note.kind == NoteKind::Refused)
            .map(|note| note.tool.as_str())
            .collect();
        assert_eq!(
            refused,
            BTreeSet::from(["", "array", "never", "string", "text"])
        );
        let adjusted: BTreeSet<&str> = export
            .notes
            .iter()
            .filter(|note| note.kind == NoteKind::Adjusted)
            .map(|note| note.tool.as_str())
            .collect();
        assert_eq!(adjusted, BTreeSet::from(["missing", "nullable", "untyped"]));
        for note in &export.notes {
            assert!(!note.message.is_empty());
        }
    }
    let document = openapi(&export_list, &ExportOptions::default()).document;
    let mut found = Vec::new();
    references(&document, &mut found);
    for reference in &found {
        assert!(document.pointer(&reference[1..]).is_some(), "{reference}");
    }
    assert!(
        found
            .iter()
            .any(|reference| reference.contains(".input/$defs/place")),
        "{found:?}"
    );
}

#[test]
fn strict_is_marked_only_where_the_schema_already_meets_it() {
    let meta = definitions();
    let loose = json!({"name": "loose", "description": "Optional a.", "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}}});
    let mut export_list: Vec<ExportTool<'_>> = meta
        .iter()
        .map(|tool| ExportTool {
            server: "gateway",
            tool,
        })
        .collect();
    export_list.push(ExportTool {
        server: "other",
        tool: &loose,
    });
    let options = ExportOptions {
        strict_when_compatible: true,
        ..ExportOptions::default()
    };
    let chat = openai(&export_list, OpenAiShape::ChatCompletions, &options);
    let claude = anthropic(&export_list, &options);
    for tool in chat.document.as_array().unwrap() {
        let strict = tool["function"].get("strict") == Some(&json!(true));
        assert_eq!(strict, tool["function"]["name"] != "other__loose", "{tool}");
    }
    for tool in claude.document.as_array().unwrap() {
        let strict = tool.get("strict") == Some(&json!(true));
        assert_eq!(strict, tool["name"] != "other__loose", "{tool}");
    }
    // Without the option nothing is marked.
    let plain = openai(
        &export_list,
        OpenAiShape::ChatCompletions,
        &ExportOptions::default(),
    );
    assert!(
        plain
            .document
            .as_array()
            .unwrap()
            .iter()
            .all(|tool| tool["function"].get("strict").is_none())
    );
}

#[test]
fn an_openapi_base_url_and_title_are_written_when_given() {
    let tool = json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}, "annotations": {"readOnlyHint": true}});
    let document = openapi(
        &[ExportTool {
            server: "s",
            tool: &tool,
        }],
        &ExportOptions {
            title: Some("My tools".to_owned()),
            server_url: Some("http://127.0.0.1:8080".to_owned()),
            ..ExportOptions::default()
        },
    )
    .document;
    assert_eq!(document["info"]["title"], "My tools");
    assert_eq!(document["servers"][0]["url"], "http://127.0.0.1:8080");
    let operation = &document["paths"]["/tools/s__t"]["post"];
    assert_eq!(operation["x-mcp-access"], "read");
    assert_eq!(operation["x-mcp-annotations"]["readOnlyHint"], true);
    assert_eq!(
        operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/s__t.result"
    );
    assert_eq!(
        document["components"]["schemas"]["s__t.result"]["properties"]["structuredContent"]["$ref"],
        "#/components/schemas/s__t.output"
    );
}
