//! The call pipeline: every tool call, from any client, takes this one path.
//!
//! resolve server → wait for its session → resolve tool → validate arguments → execute with a
//! timeout (cancelled upstream on expiry) → record a trace. Later stages (policy, routing,
//! circuit breakers, retries, dry-run, cost) are added here, never as side doors, so the
//! invariant "no tool is called without passing validation" holds in one place.
//!
//! The discovery methods live here too, since they share resolution and waiting.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tool_cli_protocol::methods::{
    CallToolParams, ListResourceTemplatesResult, ListResourcesResult, ListServersResult,
    ListToolsResult, ServerSummary, ToolSummary,
};

use crate::error::Error;
use crate::pool::{ListKind, Pool, Server, Session, Status};

/// How many tool names `listServers` gives as examples.
const EXAMPLE_TOOLS: usize = 3;

/// Resolves, validates and executes requests against the pool.
pub struct Orchestrator {
    pool: Arc<Pool>,
}

impl Orchestrator {
    /// An orchestrator over `pool`.
    pub fn new(pool: Arc<Pool>) -> Orchestrator {
        Orchestrator { pool }
    }

    /// The pool, for shutdown.
    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// `listServers`.
    pub fn list_servers(&self) -> ListServersResult {
        let servers = self
            .pool
            .servers()
            .iter()
            .map(|server| {
                let status = server.status();
                let (tool_count, examples, instructions) = match &status {
                    Status::Ready(session) => (
                        session.catalog.len(),
                        session
                            .catalog
                            .tools()
                            .iter()
                            .take(EXAMPLE_TOOLS)
                            .map(|tool| tool.name.clone())
                            .collect(),
                        session.instructions.clone(),
                    ),
                    _ => (0, Vec::new(), None),
                };
                let description = server.config.description.clone().or_else(|| {
                    instructions
                        .as_deref()
                        .and_then(|text| text.lines().find(|line| !line.trim().is_empty()))
                        // Instructions are often markdown; a heading marker is noise here.
                        .map(|line| line.trim().trim_start_matches('#').trim().to_owned())
                });
                ServerSummary {
                    name: server.config.name.clone(),
                    tool_count,
                    examples,
                    state: status.state(),
                    transport: server.transport_kind(),
                    description,
                    tags: server.config.tags.clone(),
                    error: status.error().map(str::to_owned),
                }
            })
            .collect();
        ListServersResult { servers }
    }

    async fn session(&self, server: &str) -> Result<(&Arc<Server>, Arc<Session>), Error> {
        let server = self.pool.server(server)?;
        let session = server.session(server.config.call_timeout).await?;
        Ok((server, session))
    }

    /// `listTools`.
    pub async fn list_tools(&self, server: &str) -> Result<ListToolsResult, Error> {
        let (server, session) = self.session(server).await?;
        let tools = session
            .catalog
            .tools()
            .iter()
            .map(|tool| ToolSummary {
                name: tool.name.clone(),
                description: tool.description.clone(),
                has_structured_output: tool.has_output_schema,
            })
            .collect();
        Ok(ListToolsResult {
            server: server.config.name.clone(),
            tools,
        })
    }

    /// `describeTool`: the tool exactly as the server listed it.
    pub async fn describe_tool(&self, server: &str, tool: &str) -> Result<Value, Error> {
        let (server, session) = self.session(server).await?;
        let tool = session
            .catalog
            .get(tool)
            .ok_or_else(|| Error::UnknownTool {
                server: server.config.name.clone(),
                tool: tool.to_owned(),
                known_tools: session.catalog.names(),
            })?;
        Ok(tool.raw.clone())
    }

    /// `callTool`: the pipeline.
    #[tracing::instrument(skip_all, fields(server = %params.server, tool = %params.tool))]
    pub async fn call_tool(&self, params: CallToolParams) -> Result<Value, Error> {
        let started = Instant::now();
        let outcome = self.call_tool_inner(&params).await;
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        match &outcome {
            Ok(result) => {
                let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
                tracing::info!(
                    target: "tool_cli::trace",
                    session_id = params.session_id.as_deref().unwrap_or(""),
                    elapsed_ms,
                    is_error,
                    "call finished"
                );
            }
            Err(error) => tracing::info!(
                target: "tool_cli::trace",
                session_id = params.session_id.as_deref().unwrap_or(""),
                elapsed_ms,
                %error,
                "call failed"
            ),
        }
        outcome
    }

    async fn call_tool_inner(&self, params: &CallToolParams) -> Result<Value, Error> {
        let timeout = match params.timeout_ms {
            Some(0) => {
                return Err(Error::InvalidParams {
                    method: "callTool".to_owned(),
                    message: "timeoutMs must be a positive number of milliseconds".to_owned(),
                });
            }
            Some(ms) => Duration::from_millis(ms.min(tool_cli_protocol::MAX_TIMEOUT_MS)),
            None => self.pool.server(&params.server)?.config.call_timeout,
        };
        let (server, session) = self.session(&params.server).await?;
        let tool = session
            .catalog
            .get(&params.tool)
            .ok_or_else(|| Error::UnknownTool {
                server: server.config.name.clone(),
                tool: params.tool.clone(),
                known_tools: session.catalog.names(),
            })?;
        let arguments = params.arguments.clone().unwrap_or_default();
        let validator = tool.validator().map_err(|message| Error::InvalidSchema {
            server: server.config.name.clone(),
            tool: tool.name.clone(),
            message,
        })?;
        let errors = validator.check(&arguments);
        if !errors.is_empty() {
            return Err(Error::InvalidArguments {
                server: server.config.name.clone(),
                tool: tool.name.clone(),
                errors,
            });
        }
        session.call_tool(&tool.name, arguments, timeout).await
    }

    /// `listResources`. A server without the resources capability has none.
    pub async fn list_resources(&self, server: &str) -> Result<ListResourcesResult, Error> {
        let (server, session) = self.session(server).await?;
        let resources = if session.supports_resources {
            session
                .list_all(ListKind::Resources, server.config.call_timeout)
                .await?
        } else {
            Vec::new()
        };
        Ok(ListResourcesResult {
            server: server.config.name.clone(),
            resources,
        })
    }

    /// `listResourceTemplates`.
    pub async fn list_resource_templates(
        &self,
        server: &str,
    ) -> Result<ListResourceTemplatesResult, Error> {
        let (server, session) = self.session(server).await?;
        let templates = if session.supports_resources {
            session
                .list_all(ListKind::ResourceTemplates, server.config.call_timeout)
                .await?
        } else {
            Vec::new()
        };
        Ok(ListResourceTemplatesResult {
            server: server.config.name.clone(),
            templates,
        })
    }

    /// `readResource`: the server's complete result.
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<Value, Error> {
        let (server, session) = self.session(server).await?;
        session.read_resource(uri, server.config.call_timeout).await
    }
}
