//! The MCP face of the demo: the `sql_query` and `describe_schema` tools, the resources, and the
//! server info, wired to rmcp's `ServerHandler`; the other tools' face is `toolkit.rs`.
//!
//! This module only translates: arguments in, results and errors out. The work lives in
//! `query.rs`, `schema.rs` and `resources.rs`, which know nothing of MCP. Tool failures the agent
//! can fix (a bad statement, an unknown table, a timeout) are tool results with `isError: true`
//! and a message, so the model sees them; protocol errors are kept for bad requests, such as an
//! unknown resource URI.

use std::sync::{Arc, Mutex};

use rmcp::{
    ErrorData as McpError, Json, RoleServer, ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{
        Implementation, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
        ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities,
        ServerConfig,
    },
    service::RequestContext,
    tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::{
    database::Database,
    handles::HandleTable,
    query::{self, Pagination, QueryPage},
    rates::RatesClient,
    resources::{self, ResourceError},
    sandbox::{Sandbox, SandboxHealth},
    schema::{self, SchemaDescription},
};

const INSTRUCTIONS: &str = "A sample shop database (customers, products, orders; prices in US \
    dollars) in SQLite, read-only, plus an exchange-rate tool, a sandboxed Python tool and \
    resource handles. Call describe_schema to see the tables and how they join, then sql_query \
    with one SELECT statement; results are paged (page_size up to 200, follow next_offset). An \
    order's total is quantity * price_usd; completed orders have status 'completed'. Convert \
    dollars with rest_exchange_rate, compute with run_python, and read the documents \
    (demo://docs/readme has example queries) with open_resource and read_resource.";

/// Arguments of `sql_query`.
///
/// The field docs become the `inputSchema` descriptions agents read, and schemars keeps line
/// breaks, so each is written on one line (the tool docs below likewise).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SqlQueryArguments {
    /// Exactly one read-only SQL statement in SQLite syntax: a SELECT, or WITH … SELECT. No INSERT/UPDATE/DELETE, DDL, PRAGMA or ATTACH, and no second statement after a semicolon. Call describe_schema first to see the tables and columns.
    sql: String,
    /// Rows per page. Defaults to 50; values outside 1..=200 are clamped, and the result reports the effective_page_size used.
    #[serde(default)]
    #[schemars(extend("default" = 50))]
    page_size: Option<i64>,
    /// How many result rows to skip; pass next_offset from the previous page. Defaults to 0, must be below 100000.
    #[serde(default)]
    #[schemars(range(min = 0, max = 99_999), extend("default" = 0))]
    offset: Option<i64>,
}

/// Arguments of `describe_schema`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DescribeSchemaArguments {
    /// Describe only this table (exact name). Omit to describe every table.
    #[serde(default)]
    table: Option<String>,
}

/// The demo MCP server. Cheap to clone: rmcp clones the handler per connection.
#[derive(Debug, Clone)]
pub(crate) struct DemoServer {
    pub(crate) database: Arc<Database>,
    pub(crate) rates: Arc<RatesClient>,
    pub(crate) sandbox: Arc<Sandbox>,
    /// Open resource handles. A std mutex: every operation is a short map update, never held
    /// across an await.
    pub(crate) handles: Arc<Mutex<HandleTable>>,
    tool_router: ToolRouter<DemoServer>,
}

#[tool_router(router = tool_router, vis = "pub(crate)")]
impl DemoServer {
    pub(crate) fn new(database: Database, rates: RatesClient, sandbox: Sandbox) -> Self {
        let mut tool_router = Self::tool_router() + Self::toolkit_router();
        crate::toolkit::describe_platform(&mut tool_router, &sandbox);
        Self {
            database: Arc::new(database),
            rates: Arc::new(rates),
            sandbox: Arc::new(sandbox),
            handles: Arc::new(Mutex::new(HandleTable::default())),
            tool_router,
        }
    }

    /// Run one read-only SQL query (SELECT or WITH … SELECT) against the sample shop database (tables customers, products, orders) and get one page of rows as JSON. Results are paged: the answer says total_rows_matched, has_more and the next_offset to request. Call describe_schema first to see the columns.
    #[tool(annotations(
        title = "Read-only SQL query",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn sql_query(
        &self,
        Parameters(arguments): Parameters<SqlQueryArguments>,
    ) -> Result<Json<QueryPage>, String> {
        let pagination = Pagination::negotiate(arguments.page_size, arguments.offset)
            .map_err(|error| error.to_string())?;
        let sql = arguments.sql;
        let result = self
            .database
            .run(move |connection| {
                let statement = query::check_sql(&sql)?;
                query::fetch_page(connection, statement, pagination)
            })
            .await;
        match result {
            Ok(page) => {
                tracing::debug!(
                    tool = "sql_query",
                    rows = page.returned_rows,
                    total = page.total_rows_matched,
                    "query answered"
                );
                Ok(Json(page))
            }
            Err(error) => {
                tracing::debug!(tool = "sql_query", %error, "query refused");
                Err(error.to_string())
            }
        }
    }

    /// List the tables of the sample shop database with their columns, declared types, primary and foreign keys, and row counts. Pass table to describe just one.
    #[tool(annotations(
        title = "Describe the database schema",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn describe_schema(
        &self,
        Parameters(arguments): Parameters<DescribeSchemaArguments>,
    ) -> Result<Json<SchemaDescription>, String> {
        self.database
            .run(move |connection| schema::describe(connection, arguments.table.as_deref()))
            .await
            .map(Json)
            .map_err(|error| error.to_string())
    }
}

impl DemoServer {
    /// The server's instructions; when `run_python` runs with fewer layers than it should, or
    /// not at all, they say so too (a client that shows only the server's health sees it).
    fn instructions(&self) -> String {
        match self.sandbox.health() {
            SandboxHealth::Complete => INSTRUCTIONS.to_owned(),
            SandboxHealth::Degraded | SandboxHealth::Unavailable => {
                format!("{INSTRUCTIONS} run_python: {}", self.sandbox.describe())
            }
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for DemoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(
            Implementation::new("tool-cli-demo", env!("CARGO_PKG_VERSION"))
                .with_title("tool-cli demo server"),
        )
        .with_instructions(self.instructions())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let tables = self
            .database
            .run(schema::table_names)
            .await
            .map_err(internal_error)?;
        Ok(ListResourcesResult::with_all_items(resources::list(
            &tables,
        )))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(
            resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let result = self
            .database
            .run(move |connection| Ok(resources::read(connection, &uri)))
            .await
            .map_err(internal_error)?;
        match result {
            Ok(contents) => Ok(ReadResourceResult::new(vec![contents]).into()),
            Err(error) => match &error {
                // Before protocol 2026-07-28 this is -32002; rmcp maps it to -32602 after.
                ResourceError::NotFound { uri, valid } => Err(McpError::resource_not_found(
                    error.to_string(),
                    Some(json!({ "uri": uri, "valid_uris": valid })),
                )),
                ResourceError::Query(_) => Err(internal_error(error)),
            },
        }
    }
}

/// A failure that is ours, not the client's: logged in full, reported with its message.
pub(crate) fn internal_error(error: impl std::fmt::Display) -> McpError {
    tracing::warn!(%error, "demo server request failed");
    McpError::internal_error(error.to_string(), None)
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[test]
    fn sql_tools_declare_schemas_and_read_only_annotations() {
        let tools = DemoServer::tool_router().list_all();
        let names: Vec<_> = tools.iter().map(|tool| tool.name.as_ref()).collect();
        assert_eq!(names, ["describe_schema", "sql_query"]);
        for tool in &tools {
            let annotations = tool.annotations.as_ref().expect("annotations");
            assert_eq!(annotations.read_only_hint, Some(true));
            assert_eq!(annotations.destructive_hint, Some(false));
            assert_eq!(annotations.idempotent_hint, Some(true));
            assert_eq!(annotations.open_world_hint, Some(false));
            assert!(
                tool.output_schema.is_some(),
                "{} has no outputSchema",
                tool.name
            );
        }
        let sql_query = &tools[1];
        let input = Value::Object((*sql_query.input_schema).clone());
        assert_eq!(input["required"], serde_json::json!(["sql"]));
        assert!(input["properties"]["page_size"]["description"].is_string());
        assert_eq!(input["properties"]["page_size"]["default"], 50);
        assert_eq!(input["properties"]["offset"]["default"], 0);
        assert_eq!(input["additionalProperties"], false);
        let output = Value::Object((*sql_query.output_schema.clone().unwrap()).clone());
        for field in [
            "columns",
            "rows",
            "effective_page_size",
            "total_rows_matched",
            "has_more",
            "next_offset",
        ] {
            assert!(output["properties"][field].is_object(), "missing {field}");
        }
    }
}
