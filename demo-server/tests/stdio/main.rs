//! The demo server end to end: the real `serve` path driven by rmcp's own client over an
//! in-process pipe, the same code `run_stdio` runs over stdin/stdout. This file covers the SQL
//! tools and the MCP resources; `toolkit.rs` the rates, code and resource-handle tools.
//!
//! Structured results are read into test-side copies of the wire format with
//! `deny_unknown_fields`, so a renamed or added field fails here before it surprises an agent.

mod toolkit;

use std::path::PathBuf;

use rmcp::{
    ClientHandler, RoleClient, ServiceError, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ErrorCode,
        Implementation, ProtocolVersion, ReadResourceRequestParams, ResourceContents,
    },
    service::RunningService,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tool_cli_demo_server::DemoOptions;

/// The shape of `sql_query`'s structuredContent, as a client would rely on it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueryPage {
    columns: Vec<String>,
    rows: Vec<Map<String, Value>>,
    offset: u64,
    effective_page_size: u64,
    returned_rows: u64,
    total_rows_matched: u64,
    total_rows_exact: bool,
    has_more: bool,
    next_offset: Option<u64>,
    cut_at_size_limit: bool,
}

/// A client that negotiates the protocol version our peers speak, rather than rmcp's newest.
#[derive(Clone)]
struct TestClient;

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("demo-server-test", "0.0.0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
}

/// A fresh directory under the system temp dir, removed on drop.
struct TemporaryDirectory(PathBuf);

impl TemporaryDirectory {
    fn new() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let path = std::env::temp_dir().join(format!(
            "tool-cli-demo-stdio-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }
}

impl Drop for TemporaryDirectory {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The options every test starts from: a database and a sandbox work root inside `directory`.
fn options(directory: &TemporaryDirectory) -> DemoOptions {
    let work_root = directory.0.join("runs");
    std::fs::create_dir_all(&work_root).unwrap();
    DemoOptions {
        db: Some(directory.0.join("data").join("demo.sqlite")),
        work_root: Some(work_root),
        ..DemoOptions::default()
    }
}

type Client = RunningService<RoleClient, TestClient>;
type Server = tokio::task::JoinHandle<anyhow::Result<()>>;

/// Starts the server on one end of a pipe and an initialized client on the other.
async fn connect(directory: &TemporaryDirectory) -> (Client, Server) {
    connect_with(options(directory)).await
}

async fn connect_with(options: DemoOptions) -> (Client, Server) {
    let (server_stream, client_stream) = tokio::io::duplex(64 * 1024);
    let (server_reader, server_writer) = tokio::io::split(server_stream);
    let server = tokio::spawn(tool_cli_demo_server::serve(
        options,
        server_reader,
        server_writer,
    ));
    let client = TestClient
        .serve(client_stream)
        .await
        .expect("initialize succeeds");
    (client, server)
}

async fn call(
    client: &RunningService<RoleClient, TestClient>,
    tool: &'static str,
    arguments: Value,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .expect("tools/call answers")
}

fn text_of(result: &CallToolResult) -> &str {
    &result.content[0].as_text().expect("text content").text
}

#[tokio::test]
async fn initialize_advertises_the_demo_server() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect(&directory).await;
    let info = client.peer_info().expect("server info");
    let implementation = info.server_info.as_ref().expect("serverInfo");
    assert_eq!(implementation.name, "tool-cli-demo");
    assert_eq!(implementation.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    assert!(info.capabilities.tools.is_some());
    assert!(info.capabilities.resources.is_some());
    assert!(info.instructions.as_deref().unwrap().contains("sql_query"));
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn tools_are_listed_with_schemas_and_annotations() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect(&directory).await;
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<_> = tools.iter().map(|tool| tool.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "describe_schema",
            "list_resources",
            "open_resource",
            "read_resource",
            "release_resource",
            "rest_exchange_rate",
            "run_python",
            "sql_query"
        ]
    );
    for tool in tools
        .iter()
        .filter(|tool| tool.name.contains("sql") || tool.name == "describe_schema")
    {
        let wire = serde_json::to_value(tool).unwrap();
        assert_eq!(wire["annotations"]["readOnlyHint"], true, "{wire}");
        assert_eq!(wire["annotations"]["destructiveHint"], false);
        assert_eq!(wire["annotations"]["idempotentHint"], true);
        assert_eq!(wire["annotations"]["openWorldHint"], false);
        assert_eq!(wire["outputSchema"]["type"], "object", "{wire}");
        assert!(wire["description"].as_str().unwrap().len() > 40);
    }
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn sql_query_pages_through_a_result() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect(&directory).await;

    let mut offset = json!(null);
    let mut ids = Vec::new();
    let mut pages = 0;
    loop {
        let result = call(
            &client,
            "sql_query",
            json!({"sql": "SELECT id, email FROM customers ORDER BY id", "page_size": 20, "offset": offset}),
        )
        .await;
        assert_eq!(result.is_error, Some(false), "{}", text_of(&result));
        let structured = result
            .structured_content
            .clone()
            .expect("structuredContent");
        // Text-only clients get the same object.
        let text: Value = serde_json::from_str(text_of(&result)).unwrap();
        assert_eq!(text, structured);
        let page: QueryPage = serde_json::from_value(structured).unwrap();
        assert_eq!(page.columns, ["id", "email"]);
        assert_eq!(page.effective_page_size, 20);
        assert_eq!(page.total_rows_matched, 50);
        assert!(page.total_rows_exact);
        assert_eq!(page.returned_rows, page.rows.len() as u64);
        assert_eq!(page.offset, offset.as_u64().unwrap_or(0));
        ids.extend(page.rows.iter().map(|row| row["id"].as_i64().unwrap()));
        pages += 1;
        assert_eq!(page.has_more, page.next_offset.is_some());
        match page.next_offset {
            Some(next) => offset = json!(next),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(ids, (1..=50).collect::<Vec<i64>>());

    // An oversized page is clamped, not refused.
    let result = call(
        &client,
        "sql_query",
        json!({"sql": "SELECT * FROM orders", "page_size": 5000}),
    )
    .await;
    let page: QueryPage = serde_json::from_value(result.structured_content.unwrap()).unwrap();
    assert_eq!((page.effective_page_size, page.returned_rows), (200, 200));
    assert_eq!(page.next_offset, Some(200));

    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

/// Issue 22, item 2: one value, one row or one page cannot make an answer a client refuses
/// (these answered with more than 16 MiB, and the daemon restarted the server for everyone).
#[tokio::test]
async fn sql_query_caps_values_rows_and_pages() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect(&directory).await;
    for (sql, expected) in [
        (
            "SELECT zeroblob(5000000)",
            "the limit for one text or blob value",
        ),
        (
            "SELECT randomblob(5000000) AS r",
            "the limit for one text or blob value",
        ),
        (
            "SELECT zeroblob(900000), zeroblob(900000), zeroblob(900000)",
            "over the 3145728 byte limit for one row",
        ),
    ] {
        let result = call(&client, "sql_query", json!({ "sql": sql })).await;
        assert_eq!(result.is_error, Some(true), "{sql}");
        assert!(
            text_of(&result).contains(expected),
            "{sql}: {}",
            text_of(&result)
        );
    }
    let result = call(
        &client,
        "sql_query",
        json!({"sql": "SELECT id, zeroblob(400000) AS payload FROM orders", "page_size": 200}),
    )
    .await;
    let answer_bytes = serde_json::to_vec(&result).unwrap().len();
    let page: QueryPage = serde_json::from_value(result.structured_content.unwrap()).unwrap();
    assert!(
        page.cut_at_size_limit && page.has_more,
        "{}",
        page.returned_rows
    );
    assert_eq!(page.next_offset, Some(page.returned_rows));
    assert!(answer_bytes < 16 * 1024 * 1024, "{answer_bytes}");
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn sql_query_refuses_writes_as_tool_errors() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect(&directory).await;
    let cases = [
        ("DELETE FROM orders", "only SELECT (or WITH … SELECT)"),
        (
            "SELECT 1; SELECT 2",
            "only one SELECT statement is allowed; got 2 statements",
        ),
        ("SELECT * FROM nope", "no such table: nope"),
        ("ATTACH DATABASE '/tmp/x' AS x", "starting with ATTACH"),
    ];
    for (sql, expected) in cases {
        let result = call(&client, "sql_query", json!({ "sql": sql })).await;
        assert_eq!(result.is_error, Some(true), "{sql}");
        assert!(
            text_of(&result).contains(expected),
            "{sql}: {}",
            text_of(&result)
        );
    }
    // The data is untouched.
    let result = call(
        &client,
        "sql_query",
        json!({"sql": "SELECT count(*) AS n FROM orders"}),
    )
    .await;
    assert_eq!(result.structured_content.unwrap()["rows"][0]["n"], 500);
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn describe_schema_lists_tables() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect(&directory).await;
    let result = call(&client, "describe_schema", json!({})).await;
    let schema = result.structured_content.unwrap();
    let names: Vec<_> = schema["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|table| table["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["customers", "orders", "products"]);

    let result = call(&client, "describe_schema", json!({"table": "users"})).await;
    assert_eq!(result.is_error, Some(true));
    assert!(text_of(&result).contains("valid tables: customers, orders, products"));
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn resources_list_and_read() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect(&directory).await;

    let uris: Vec<_> = client
        .list_all_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|resource| resource.uri)
        .collect();
    assert_eq!(
        uris,
        [
            "demo://docs/readme",
            "demo://docs/schema",
            "demo://docs/returns-policy",
            "demo://docs/shipping",
            "demo://docs/currency-notes",
            "demo://tables/customers",
            "demo://tables/orders",
            "demo://tables/products"
        ]
    );
    let templates = client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates.len(), 1);
    assert_eq!(templates[0].uri_template, "demo://tables/{table}");

    let read = |uri: &'static str| client.read_resource(ReadResourceRequestParams::new(uri));
    let readme = read("demo://docs/readme").await.unwrap();
    let ResourceContents::TextResourceContents {
        mime_type, text, ..
    } = &readme.contents[0]
    else {
        panic!("expected text")
    };
    assert_eq!(mime_type.as_deref(), Some("text/markdown"));
    assert!(text.contains("SELECT"));

    let table = read("demo://tables/products").await.unwrap();
    let ResourceContents::TextResourceContents {
        mime_type, text, ..
    } = &table.contents[0]
    else {
        panic!("expected text")
    };
    assert_eq!(mime_type.as_deref(), Some("application/json"));
    let document: Value = serde_json::from_str(text).unwrap();
    assert_eq!(document["rows"].as_array().unwrap().len(), 30);

    let error = read("demo://tables/users").await.unwrap_err();
    let ServiceError::McpError(error) = error else {
        panic!("expected an MCP error, got {error:?}")
    };
    assert_eq!(error.code, ErrorCode::RESOURCE_NOT_FOUND);
    assert!(
        error.message.contains("demo://tables/orders"),
        "{}",
        error.message
    );

    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}
