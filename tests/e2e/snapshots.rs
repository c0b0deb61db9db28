//! Snapshots of every method's JSON against the bundled demo server: the wire format is a promise
//! to every client, so any change to it must show up here as a diff. Volatile values (versions)
//! are replaced by placeholders first. Update with `UPDATE_EXPECT=1 cargo test -p tool-cli-tests`
//! and review the diff like any other change to the protocol.

use expect_test::{Expect, expect};
use serde_json::{Value, json};
use tool_cli_protocol::methods::{
    BridgeInfo, ListResourceTemplatesResult, ListResourcesResult, ListServersResult,
    ListToolsResult, name,
};
use tool_cli_protocol::{BRIDGE_PROTOCOL_MAJOR, BRIDGE_PROTOCOL_NAME};
use tool_cli_tests::{Daemon, fault_server, redact};

/// Where a result carries its call id, which differs from run to run.
const CALL_ID: &str = "/_meta/tool-cli~1callId";

fn check(value: &Value, expected: Expect) {
    expected.assert_eq(&serde_json::to_string_pretty(value).expect("serialize"));
}

/// Replaces every non-empty `description` string with a placeholder. Descriptions are the demo
/// server's prose, edited for readers; the snapshots guard the daemon's shapes, not that prose.
fn without_descriptions(mut value: Value) -> Value {
    fn walk(value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, member) in map.iter_mut() {
                    if key == "description" && member.as_str().is_some_and(|d| !d.is_empty()) {
                        *member = Value::String("<description>".into());
                    } else {
                        walk(member);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut value);
    value
}

#[test]
fn get_bridge_info() {
    let daemon = Daemon::start_demo();
    let info = daemon.call(name::GET_BRIDGE_INFO, Value::Null);

    let typed: BridgeInfo = serde_json::from_value(info.clone()).expect("BridgeInfo shape");
    assert_eq!(typed.bridge_protocol.name, BRIDGE_PROTOCOL_NAME);
    assert_eq!(typed.bridge_protocol.major, BRIDGE_PROTOCOL_MAJOR);
    for method in name::ALL {
        assert!(
            typed.operations.iter().any(|op| op == method),
            "operations lacks {method}: {:?}",
            typed.operations
        );
    }
    assert_eq!(
        typed.server_implementation.version,
        env!("CARGO_PKG_VERSION"),
        "the daemon reports the workspace version"
    );

    let info = redact(
        info,
        &[
            "/serverImplementation/version",
            "/upstreamMcp/implementation/version",
        ],
    );
    check(
        &info,
        expect![[r#"
            {
              "bridgeProtocol": {
                "name": "tool-cli-bridge",
                "major": 1,
                "version": "1.0"
              },
              "serverImplementation": {
                "name": "tool-cli-daemon-rs",
                "version": "<version>"
              },
              "operations": [
                "getBridgeInfo",
                "listServers",
                "listTools",
                "describeTool",
                "callTool",
                "listResources",
                "listResourceTemplates",
                "readResource",
                "health",
                "mintToken",
                "revokeToken",
                "listTokens",
                "openSession",
                "sessionSummary",
                "listSessions",
                "closeSession",
                "callChain",
                "callMany",
                "searchTools",
                "runAgent",
                "agentEvents",
                "cancelAgent",
                "readSpilled",
                "restartServer",
                "tracesReport",
                "authLogin",
                "authComplete",
                "authStatus",
                "authLogout",
                "listPrompts",
                "getPrompt",
                "callEvents",
                "answerElicitation",
                "addServer",
                "removeServer",
                "reloadConfig",
                "reloadPins",
                "pinListing",
                "startRecording",
                "stopRecording",
                "getTask",
                "getTaskResult",
                "listTasks",
                "cancelTask"
              ],
              "capabilities": {
                "authentication": {
                  "required": true,
                  "scheme": "bearer"
                },
                "tools": {
                  "discovery": true,
                  "calls": true,
                  "inputSchemaValidation": true,
                  "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
                  "supportedJsonSchemaDialects": [
                    "https://json-schema.org/draft/2020-12/schema",
                    "https://json-schema.org/draft/2019-09/schema",
                    "http://json-schema.org/draft-07/schema#"
                  ]
                },
                "resources": {
                  "list": true,
                  "templates": true,
                  "read": true
                },
                "cancellation": {
                  "providerAbortSignal": true,
                  "perCallTimeout": true,
                  "upstreamNotification": "notifications/cancelled"
                }
              },
              "upstreamMcp": {
                "protocolVersion": "2025-11-25",
                "implementation": {
                  "name": "tool-cli-daemon-rs",
                  "version": "<version>"
                },
                "capabilities": {
                  "roots": {},
                  "sampling": {},
                  "elicitation": {
                    "form": {}
                  }
                }
              }
            }"#]],
    );
}

#[test]
fn list_servers() {
    let daemon = Daemon::start_demo();
    let servers = daemon.call(name::LIST_SERVERS, Value::Null);
    let typed: ListServersResult =
        serde_json::from_value(servers.clone()).expect("ListServersResult shape");
    assert_eq!(typed.servers.len(), 1);
    check(
        &without_descriptions(servers),
        expect![[r#"
            {
              "servers": [
                {
                  "name": "demo",
                  "toolCount": 8,
                  "examples": [
                    "describe_schema",
                    "list_resources",
                    "open_resource"
                  ],
                  "state": "ready",
                  "transport": "stdio",
                  "description": "<description>"
                }
              ]
            }"#]],
    );
}

#[test]
fn list_tools() {
    let daemon = Daemon::start_demo();
    let tools = daemon.call(name::LIST_TOOLS, json!({"server": "demo"}));
    let typed: ListToolsResult = serde_json::from_value(tools.clone()).expect("ListToolsResult");
    assert_eq!(typed.server, "demo");
    check(
        &without_descriptions(tools),
        expect![[r#"
            {
              "server": "demo",
              "tools": [
                {
                  "name": "describe_schema",
                  "description": "<description>",
                  "hasStructuredOutput": true
                },
                {
                  "name": "list_resources",
                  "description": "<description>",
                  "hasStructuredOutput": true
                },
                {
                  "name": "open_resource",
                  "description": "<description>",
                  "hasStructuredOutput": true
                },
                {
                  "name": "read_resource",
                  "description": "<description>",
                  "hasStructuredOutput": true
                },
                {
                  "name": "release_resource",
                  "description": "<description>",
                  "hasStructuredOutput": true
                },
                {
                  "name": "rest_exchange_rate",
                  "description": "<description>",
                  "hasStructuredOutput": true
                },
                {
                  "name": "run_python",
                  "description": "<description>",
                  "hasStructuredOutput": true
                },
                {
                  "name": "sql_query",
                  "description": "<description>",
                  "hasStructuredOutput": true
                }
              ]
            }"#]],
    );
}

#[test]
fn describe_tool_sql_query() {
    let daemon = Daemon::start_demo();
    let tool = daemon.call(
        name::DESCRIBE_TOOL,
        json!({"server": "demo", "tool": "sql_query"}),
    );
    assert_eq!(tool["name"], "sql_query");
    assert!(tool["inputSchema"]["properties"]["sql"].is_object());
    check(
        &without_descriptions(tool),
        expect![[r#"
            {
              "name": "sql_query",
              "description": "<description>",
              "inputSchema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "required": [
                  "sql"
                ],
                "additionalProperties": false,
                "type": "object",
                "properties": {
                  "sql": {
                    "description": "<description>",
                    "type": "string"
                  },
                  "page_size": {
                    "description": "<description>",
                    "type": [
                      "integer",
                      "null"
                    ],
                    "format": "int64",
                    "default": 50
                  },
                  "offset": {
                    "description": "<description>",
                    "type": [
                      "integer",
                      "null"
                    ],
                    "format": "int64",
                    "minimum": 0,
                    "maximum": 99999,
                    "default": 0
                  }
                }
              },
              "outputSchema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "required": [
                  "columns",
                  "rows",
                  "offset",
                  "effective_page_size",
                  "returned_rows",
                  "total_rows_matched",
                  "total_rows_exact",
                  "has_more",
                  "next_offset",
                  "cut_at_size_limit"
                ],
                "properties": {
                  "columns": {
                    "description": "<description>",
                    "type": "array",
                    "items": {
                      "type": "string"
                    }
                  },
                  "rows": {
                    "description": "<description>",
                    "type": "array",
                    "items": {
                      "type": "object",
                      "additionalProperties": true
                    }
                  },
                  "offset": {
                    "description": "<description>",
                    "type": "integer",
                    "format": "uint64",
                    "minimum": 0
                  },
                  "effective_page_size": {
                    "description": "<description>",
                    "type": "integer",
                    "format": "uint64",
                    "minimum": 0
                  },
                  "returned_rows": {
                    "description": "<description>",
                    "type": "integer",
                    "format": "uint64",
                    "minimum": 0
                  },
                  "total_rows_matched": {
                    "description": "<description>",
                    "type": "integer",
                    "format": "uint64",
                    "minimum": 0
                  },
                  "total_rows_exact": {
                    "description": "<description>",
                    "type": "boolean"
                  },
                  "has_more": {
                    "description": "<description>",
                    "type": "boolean"
                  },
                  "next_offset": {
                    "description": "<description>",
                    "type": [
                      "integer",
                      "null"
                    ],
                    "format": "uint64",
                    "minimum": 0
                  },
                  "cut_at_size_limit": {
                    "description": "<description>",
                    "type": "boolean"
                  }
                },
                "type": "object"
              },
              "annotations": {
                "title": "Read-only SQL query",
                "readOnlyHint": true,
                "destructiveHint": false,
                "idempotentHint": true,
                "openWorldHint": false
              }
            }"#]],
    );
}

#[test]
fn describe_tool_passes_schema_references_through() {
    let daemon = Daemon::start_demo();
    let tool = daemon.call(
        name::DESCRIBE_TOOL,
        json!({"server": "demo", "tool": "describe_schema"}),
    );
    assert_eq!(tool["name"], "describe_schema");
    // `$defs` and `$ref` survive unnarrowed, so a client can resolve the output schema.
    let output_schema = &tool["outputSchema"];
    assert!(
        output_schema["$defs"]["TableDescription"].is_object(),
        "{tool:#}"
    );
    assert_eq!(
        output_schema["properties"]["tables"]["items"]["$ref"],
        "#/$defs/TableDescription"
    );
    assert_eq!(tool["annotations"]["readOnlyHint"], true);
}

#[test]
fn call_tool_sql_query_first_page() {
    let daemon = Daemon::start_demo();
    let result = daemon.call_tool(
        "demo",
        "sql_query",
        json!({"sql": "SELECT id, name FROM customers ORDER BY id", "page_size": 2}),
    );
    let structured = &result["structuredContent"];
    assert_eq!(structured["effective_page_size"], 2);
    assert_eq!(structured["rows"].as_array().map(Vec::len), Some(2));
    assert_eq!(structured["has_more"], true);
    assert_eq!(structured["next_offset"], 2);
    check(
        &redact(result, &[CALL_ID]),
        expect![[r#"
            {
              "content": [
                {
                  "type": "text",
                  "text": "{\"columns\":[\"id\",\"name\"],\"rows\":[{\"id\":1,\"name\":\"Ada Okafor\"},{\"id\":2,\"name\":\"Bruno Tanaka\"}],\"offset\":0,\"effective_page_size\":2,\"returned_rows\":2,\"total_rows_matched\":50,\"total_rows_exact\":true,\"has_more\":true,\"next_offset\":2,\"cut_at_size_limit\":false}"
                }
              ],
              "structuredContent": {
                "columns": [
                  "id",
                  "name"
                ],
                "rows": [
                  {
                    "id": 1,
                    "name": "Ada Okafor"
                  },
                  {
                    "id": 2,
                    "name": "Bruno Tanaka"
                  }
                ],
                "offset": 0,
                "effective_page_size": 2,
                "returned_rows": 2,
                "total_rows_matched": 50,
                "total_rows_exact": true,
                "has_more": true,
                "next_offset": 2,
                "cut_at_size_limit": false
              },
              "isError": false,
              "_meta": {
                "tool-cli/attempts": 1,
                "tool-cli/selection": {
                  "rule": "named",
                  "server": "demo",
                  "alternatives": []
                },
                "tool-cli/callId": "<tool-cli~1callId>"
              }
            }"#]],
    );
}

#[test]
fn call_tool_sql_query_second_page_follows_next_offset() {
    let daemon = Daemon::start_demo();
    let sql = "SELECT id FROM customers ORDER BY id";
    let first = daemon.call_tool("demo", "sql_query", json!({"sql": sql, "page_size": 3}));
    let next = first["structuredContent"]["next_offset"].clone();
    let second = daemon.call_tool(
        "demo",
        "sql_query",
        json!({"sql": sql, "page_size": 3, "offset": next}),
    );
    let ids = |result: &Value| -> Vec<Value> {
        result["structuredContent"]["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|row| {
                row.as_array()
                    .map_or(row["id"].clone(), |cells| cells[0].clone())
            })
            .collect()
    };
    let (first_ids, second_ids) = (ids(&first), ids(&second));
    assert_eq!(first_ids.len(), 3);
    assert!(!second_ids.is_empty());
    assert!(
        first_ids.iter().all(|id| !second_ids.contains(id)),
        "pages overlap: {first_ids:?} then {second_ids:?}"
    );
    assert_eq!(
        first["structuredContent"]["total_rows_matched"],
        second["structuredContent"]["total_rows_matched"]
    );
}

#[test]
fn call_tool_describe_schema() {
    let daemon = Daemon::start_demo();
    let everything = daemon.call_tool("demo", "describe_schema", json!({}));
    let tables: Vec<&str> = everything["structuredContent"]["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .filter_map(|table| table["name"].as_str())
        .collect();
    assert_eq!(tables, ["customers", "orders", "products"]);

    let one = daemon.call_tool("demo", "describe_schema", json!({"table": "products"}));
    // The text content repeats the structured content; keep the snapshot to one copy.
    let text: Value = serde_json::from_str(&tool_cli_tests::text_content(&one)).expect("JSON text");
    assert_eq!(text, one["structuredContent"]);
    check(
        &redact(one, &["/content/0/text", CALL_ID]),
        expect![[r#"
            {
              "content": [
                {
                  "type": "text",
                  "text": "<text>"
                }
              ],
              "structuredContent": {
                "tables": [
                  {
                    "name": "products",
                    "kind": "table",
                    "row_count": 30,
                    "columns": [
                      {
                        "name": "id",
                        "declared_type": "INTEGER",
                        "not_null": false,
                        "primary_key": true,
                        "default_value": null
                      },
                      {
                        "name": "name",
                        "declared_type": "TEXT",
                        "not_null": true,
                        "primary_key": false,
                        "default_value": null
                      },
                      {
                        "name": "category",
                        "declared_type": "TEXT",
                        "not_null": true,
                        "primary_key": false,
                        "default_value": null
                      },
                      {
                        "name": "price_usd",
                        "declared_type": "REAL",
                        "not_null": true,
                        "primary_key": false,
                        "default_value": null
                      },
                      {
                        "name": "stock",
                        "declared_type": "INTEGER",
                        "not_null": true,
                        "primary_key": false,
                        "default_value": null
                      }
                    ],
                    "foreign_keys": [],
                    "sql": "CREATE TABLE products (\n    id INTEGER PRIMARY KEY,\n    name TEXT NOT NULL,\n    category TEXT NOT NULL,\n    price_usd REAL NOT NULL CHECK (price_usd > 0),\n    stock INTEGER NOT NULL CHECK (stock >= 0)\n)"
                  }
                ]
              },
              "isError": false,
              "_meta": {
                "tool-cli/attempts": 1,
                "tool-cli/selection": {
                  "rule": "named",
                  "server": "demo",
                  "alternatives": []
                },
                "tool-cli/callId": "<tool-cli~1callId>"
              }
            }"#]],
    );
}

#[test]
fn list_resources() {
    let daemon = Daemon::start_demo();
    let resources = daemon.call(name::LIST_RESOURCES, json!({"server": "demo"}));
    let typed: ListResourcesResult =
        serde_json::from_value(resources.clone()).expect("ListResourcesResult");
    assert!(
        typed
            .resources
            .iter()
            .any(|r| r["uri"] == "demo://docs/readme"),
        "demo://docs/readme listed"
    );
    check(
        &without_descriptions(resources),
        expect![[r#"
            {
              "server": "demo",
              "resources": [
                {
                  "uri": "demo://docs/readme",
                  "name": "readme",
                  "title": "About the demo server",
                  "description": "<description>",
                  "mimeType": "text/markdown",
                  "size": 3296
                },
                {
                  "uri": "demo://docs/schema",
                  "name": "schema",
                  "title": "Database schema",
                  "description": "<description>",
                  "mimeType": "text/plain"
                },
                {
                  "uri": "demo://docs/returns-policy",
                  "name": "returns-policy",
                  "title": "Returns policy and order statuses",
                  "description": "<description>",
                  "mimeType": "text/markdown",
                  "size": 1446
                },
                {
                  "uri": "demo://docs/shipping",
                  "name": "shipping",
                  "title": "Shipping rates",
                  "description": "<description>",
                  "mimeType": "text/plain",
                  "size": 822
                },
                {
                  "uri": "demo://docs/currency-notes",
                  "name": "currency-notes",
                  "title": "Currencies",
                  "description": "<description>",
                  "mimeType": "text/markdown",
                  "size": 1193
                },
                {
                  "uri": "demo://tables/customers",
                  "name": "table-customers",
                  "title": "Table customers",
                  "description": "<description>",
                  "mimeType": "application/json"
                },
                {
                  "uri": "demo://tables/orders",
                  "name": "table-orders",
                  "title": "Table orders",
                  "description": "<description>",
                  "mimeType": "application/json"
                },
                {
                  "uri": "demo://tables/products",
                  "name": "table-products",
                  "title": "Table products",
                  "description": "<description>",
                  "mimeType": "application/json"
                }
              ]
            }"#]],
    );
}

#[test]
fn list_resource_templates() {
    let daemon = Daemon::start_demo();
    let templates = daemon.call(name::LIST_RESOURCE_TEMPLATES, json!({"server": "demo"}));
    let typed: ListResourceTemplatesResult =
        serde_json::from_value(templates.clone()).expect("ListResourceTemplatesResult");
    assert!(
        typed
            .templates
            .iter()
            .any(|t| t["uriTemplate"] == "demo://tables/{table}"),
        "demo://tables/{{table}} listed"
    );
    check(
        &without_descriptions(templates),
        expect![[r#"
            {
              "server": "demo",
              "templates": [
                {
                  "uriTemplate": "demo://tables/{table}",
                  "name": "table",
                  "title": "Table sample",
                  "description": "<description>",
                  "mimeType": "application/json"
                }
              ]
            }"#]],
    );
}

#[test]
fn read_resource_from_template() {
    let daemon = Daemon::start_demo();
    let contents = daemon.call(
        name::READ_RESOURCE,
        json!({"server": "demo", "uri": "demo://tables/customers"}),
    );
    let text = contents["contents"][0]["text"]
        .as_str()
        .expect("text contents");
    let table: Value = serde_json::from_str(text).expect("the table sample is JSON");
    assert_eq!(table["table"], "customers");
    assert_eq!(table["rows"][0]["id"], 1);
    check(
        &redact(contents, &["/contents/0/text"]),
        expect![[r#"
        {
          "contents": [
            {
              "uri": "demo://tables/customers",
              "mimeType": "application/json",
              "text": "<text>"
            }
          ]
        }"#]],
    );
}

#[test]
fn read_resource_readme() {
    let daemon = Daemon::start_demo();
    let contents = daemon.call(
        name::READ_RESOURCE,
        json!({"server": "demo", "uri": "demo://docs/readme"}),
    );
    let item = &contents["contents"][0];
    assert_eq!(item["uri"], "demo://docs/readme");
    let text = item["text"].as_str().expect("readme is text");
    assert!(text.contains("sql_query"), "the readme explains sql_query");
}

#[test]
fn error_objects() {
    let daemon = Daemon::start_demo();
    let unknown_server = daemon.call_err(name::LIST_TOOLS, json!({"server": "nope"}));
    check(
        &serde_json::to_value(&unknown_server).expect("serialize"),
        expect![[r#"
            {
              "code": -32602,
              "message": "unknown server \"nope\"; known servers: demo",
              "data": {
                "kind": "unknownServer",
                "server": "nope",
                "knownServers": [
                  "demo"
                ]
              }
            }"#]],
    );
    let unknown_tool = daemon.call_err(
        name::DESCRIBE_TOOL,
        json!({"server": "demo", "tool": "nope"}),
    );
    check(
        &serde_json::to_value(&unknown_tool).expect("serialize"),
        expect![[r#"
            {
              "code": -32602,
              "message": "server \"demo\" has no tool \"nope\"; its tools: run_python, sql_query, open_resource, read_resource, list_resources, describe_schema, release_resource, rest_exchange_rate",
              "data": {
                "kind": "unknownTool",
                "server": "demo",
                "tool": "nope",
                "knownTools": [
                  "run_python",
                  "sql_query",
                  "open_resource",
                  "read_resource",
                  "list_resources",
                  "describe_schema",
                  "release_resource",
                  "rest_exchange_rate"
                ],
                "discoveredTools": [
                  "run_python",
                  "sql_query",
                  "open_resource",
                  "read_resource",
                  "list_resources",
                  "describe_schema",
                  "release_resource",
                  "rest_exchange_rate"
                ],
                "toolCount": 8
              }
            }"#]],
    );
    let invalid_arguments = daemon.call_err(
        name::CALL_TOOL,
        json!({"server": "demo", "tool": "sql_query", "arguments": {"sql": 7}}),
    );
    check(
        &serde_json::to_value(&invalid_arguments).expect("serialize"),
        expect![[r##"
            {
              "code": -32602,
              "message": "arguments for demo/sql_query do not match its input schema: /sql: 7 is not of type \"string\"",
              "data": {
                "kind": "invalidArguments",
                "server": "demo",
                "tool": "sql_query",
                "errors": [
                  {
                    "path": "/sql",
                    "schemaPath": "/properties/sql/type",
                    "message": "7 is not of type \"string\""
                  }
                ],
                "validationErrors": [
                  {
                    "instancePath": "/sql",
                    "schemaPath": "#/properties/sql/type",
                    "keyword": "type",
                    "params": {
                      "type": "string"
                    },
                    "message": "must be string"
                  }
                ]
              }
            }"##]],
    );
}

/// The reference bridge's error fields beside ours: `validationErrors` (ajv's format) for
/// arguments failing several keywords at once, and `discoveredTools` for an unknown tool.
#[test]
fn error_objects_carry_the_reference_fields() {
    let daemon = Daemon::start_demo();
    let invalid_arguments = daemon.call_err(
        name::CALL_TOOL,
        json!({"server": "demo", "tool": "sql_query",
               "arguments": {"offset": -1, "bogus": true, "also": 1}}),
    );
    check(
        &serde_json::to_value(&invalid_arguments).expect("serialize")["data"],
        expect![[r##"
            {
              "kind": "invalidArguments",
              "server": "demo",
              "tool": "sql_query",
              "errors": [
                {
                  "path": "/offset",
                  "schemaPath": "/properties/offset/minimum",
                  "message": "-1 is less than the minimum of 0"
                },
                {
                  "path": "",
                  "schemaPath": "/additionalProperties",
                  "message": "Additional properties are not allowed ('bogus', 'also' were unexpected)"
                },
                {
                  "path": "",
                  "schemaPath": "/required",
                  "message": "\"sql\" is a required property"
                }
              ],
              "validationErrors": [
                {
                  "instancePath": "/offset",
                  "schemaPath": "#/properties/offset/minimum",
                  "keyword": "minimum",
                  "params": {
                    "comparison": ">=",
                    "limit": 0
                  },
                  "message": "must be >= 0"
                },
                {
                  "instancePath": "",
                  "schemaPath": "#/additionalProperties",
                  "keyword": "additionalProperties",
                  "params": {
                    "additionalProperty": "bogus"
                  },
                  "message": "must NOT have additional properties"
                },
                {
                  "instancePath": "",
                  "schemaPath": "#/additionalProperties",
                  "keyword": "additionalProperties",
                  "params": {
                    "additionalProperty": "also"
                  },
                  "message": "must NOT have additional properties"
                },
                {
                  "instancePath": "",
                  "schemaPath": "#/required",
                  "keyword": "required",
                  "params": {
                    "missingProperty": "sql"
                  },
                  "message": "must have required property 'sql'"
                }
              ]
            }"##]],
    );
}

/// A server of 10,000 tools: an unknown tool's error lists the ten closest names and the count,
/// not 10,000 names.
#[test]
fn an_unknown_tool_error_stays_small_on_a_huge_server() {
    let daemon =
        Daemon::start(json!({"mcpServers": {"big": fault_server(&["--extra-tools", "10000"])}}));
    let error = daemon.call_err(
        name::CALL_TOOL,
        json!({"server": "big", "tool": "extra_4242x", "arguments": {}}),
    );
    let encoded = serde_json::to_vec(&error).expect("serialize");
    assert!(
        encoded.len() < 2_000,
        "{} bytes: {}",
        encoded.len(),
        String::from_utf8_lossy(&encoded)
    );
    check(
        &serde_json::to_value(&error).expect("serialize"),
        expect![[r#"
            {
              "code": -32602,
              "message": "server \"big\" has no tool \"extra_4242x\"; the closest of its 10016 tools: extra_4242, extra_242, extra_422, extra_424, extra_442, extra_1242, extra_2242, extra_2420, extra_2421, extra_2422",
              "data": {
                "kind": "unknownTool",
                "server": "big",
                "tool": "extra_4242x",
                "knownTools": [
                  "extra_4242",
                  "extra_242",
                  "extra_422",
                  "extra_424",
                  "extra_442",
                  "extra_1242",
                  "extra_2242",
                  "extra_2420",
                  "extra_2421",
                  "extra_2422"
                ],
                "discoveredTools": [
                  "extra_4242",
                  "extra_242",
                  "extra_422",
                  "extra_424",
                  "extra_442",
                  "extra_1242",
                  "extra_2242",
                  "extra_2420",
                  "extra_2421",
                  "extra_2422"
                ],
                "toolCount": 10016
              }
            }"#]],
    );
}

#[test]
fn describe_tool_rest_exchange_rate() {
    let daemon = Daemon::start_demo();
    let tool = daemon.call(
        name::DESCRIBE_TOOL,
        json!({"server": "demo", "tool": "rest_exchange_rate"}),
    );
    check(
        &without_descriptions(tool),
        expect![[r#"
        {
          "name": "rest_exchange_rate",
          "description": "<description>",
          "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "required": [
              "base",
              "quote"
            ],
            "additionalProperties": false,
            "type": "object",
            "properties": {
              "base": {
                "description": "<description>",
                "type": "string",
                "minLength": 3,
                "maxLength": 3
              },
              "quote": {
                "description": "<description>",
                "type": "string",
                "minLength": 3,
                "maxLength": 3
              },
              "date": {
                "description": "<description>",
                "type": [
                  "string",
                  "null"
                ],
                "default": null
              },
              "amount": {
                "description": "<description>",
                "type": [
                  "number",
                  "null"
                ],
                "format": "double",
                "default": 1,
                "exclusiveMinimum": 0
              }
            }
          },
          "outputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "required": [
              "base",
              "quote",
              "date",
              "rate",
              "amount",
              "converted",
              "source"
            ],
            "properties": {
              "base": {
                "description": "<description>",
                "type": "string"
              },
              "quote": {
                "description": "<description>",
                "type": "string"
              },
              "date": {
                "description": "<description>",
                "type": "string"
              },
              "rate": {
                "description": "<description>",
                "type": "number",
                "format": "double"
              },
              "amount": {
                "description": "<description>",
                "type": "number",
                "format": "double"
              },
              "converted": {
                "description": "<description>",
                "type": "number",
                "format": "double"
              },
              "source": {
                "description": "<description>",
                "type": "string"
              }
            },
            "type": "object"
          },
          "annotations": {
            "title": "Exchange rate",
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": true
          }
        }"#]],
    );
}

/// `run_python`'s schemas and annotations; its description and `_meta` say what this machine
/// allows, so they are left out.
#[test]
fn describe_tool_run_python() {
    let daemon = Daemon::start_demo();
    let tool = daemon.call(
        name::DESCRIBE_TOOL,
        json!({"server": "demo", "tool": "run_python"}),
    );
    let shape = json!({
        "inputSchema": tool["inputSchema"],
        "outputSchema": tool["outputSchema"],
        "annotations": tool["annotations"],
    });
    check(
        &without_descriptions(shape),
        expect![[r##"
        {
          "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "required": [
              "code"
            ],
            "additionalProperties": false,
            "type": "object",
            "properties": {
              "code": {
                "description": "<description>",
                "type": "string",
                "minLength": 1,
                "maxLength": 65536
              },
              "timeoutMs": {
                "description": "<description>",
                "type": [
                  "integer",
                  "null"
                ],
                "format": "uint64",
                "minimum": 1,
                "maximum": 10000,
                "default": 5000
              },
              "stdin": {
                "description": "<description>",
                "type": [
                  "string",
                  "null"
                ],
                "maxLength": 65536,
                "default": null
              }
            }
          },
          "outputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {
              "StoppedBy": {
                "description": "<description>",
                "oneOf": [
                  {
                    "description": "<description>",
                    "type": "string",
                    "const": "timeout"
                  },
                  {
                    "description": "<description>",
                    "type": "string",
                    "const": "outputLimit"
                  },
                  {
                    "description": "<description>",
                    "type": "string",
                    "const": "cancelled"
                  },
                  {
                    "description": "<description>",
                    "type": "string",
                    "const": "memoryLimit"
                  }
                ]
              }
            },
            "required": [
              "stdout",
              "stderr",
              "exitCode",
              "signal",
              "timedOut",
              "stoppedBy",
              "durationMs",
              "queuedMs",
              "stdoutTruncated",
              "stderrTruncated"
            ],
            "type": "object",
            "properties": {
              "stdout": {
                "description": "<description>",
                "type": "string"
              },
              "stderr": {
                "description": "<description>",
                "type": "string"
              },
              "exitCode": {
                "description": "<description>",
                "type": [
                  "integer",
                  "null"
                ],
                "format": "int32"
              },
              "signal": {
                "description": "<description>",
                "type": [
                  "string",
                  "null"
                ]
              },
              "timedOut": {
                "description": "<description>",
                "type": "boolean"
              },
              "stoppedBy": {
                "description": "<description>",
                "anyOf": [
                  {
                    "$ref": "#/$defs/StoppedBy"
                  },
                  {
                    "type": "null"
                  }
                ]
              },
              "durationMs": {
                "description": "<description>",
                "type": "integer",
                "format": "uint64",
                "minimum": 0
              },
              "queuedMs": {
                "description": "<description>",
                "type": "integer",
                "format": "uint64",
                "minimum": 0
              },
              "stdoutTruncated": {
                "description": "<description>",
                "type": "boolean"
              },
              "stderrTruncated": {
                "description": "<description>",
                "type": "boolean"
              }
            }
          },
          "annotations": {
            "title": "Run Python (sandboxed)",
            "readOnlyHint": false,
            "destructiveHint": false,
            "idempotentHint": false,
            "openWorldHint": false
          }
        }"##]],
    );
}
