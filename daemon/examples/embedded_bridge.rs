//! A Rust program serving its own tools over the tool-cli protocol: the same gate (bearer token,
//! `Host` check, identity proof), JSON-RPC methods and call pipeline (validation, policy,
//! breakers, deadlines, sessions, routing) as `tool-cli-daemon`, with no MCP server behind it.
//!
//! ```text
//! cargo run -p tool-cli-daemon --example embedded_bridge
//! # prints: export TOOL_CLI_PORT=… / export TOOL_CLI_TOKEN=… ; then, in another shell:
//! tool-cli calc add '{"a": 2, "b": 3}'
//! ```
//!
//! A harness implements [`ToolProvider`] (its servers) and [`Upstream`] (one server: its info,
//! its catalog of MCP tool definitions, and `call_tool`), builds the [`Services`] over it and
//! runs [`server::run`]. The pipeline validates arguments against each tool's `inputSchema`
//! before `call_tool` is reached, so `call_tool` may trust their shape.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio::time::Instant;
use tool_cli_daemon::auth::{Token, TokenStore};
use tool_cli_daemon::catalog::Catalog;
use tool_cli_daemon::error::Error;
use tool_cli_daemon::provider::{
    BoxFuture, CallTicket, ServerInfo, ServerSettings, ToolProvider, Upstream,
};
use tool_cli_daemon::server::{self, Listener, ServeOptions};
use tool_cli_daemon::services::Services;
use tool_cli_protocol::methods::TransportKind;

/// One server, `calc`, with two tools computed in process.
struct Calculator {
    info: ServerInfo,
    catalog: Arc<Catalog>,
}

impl Calculator {
    fn new() -> Calculator {
        let number = json!({"type": "number"});
        let tools = vec![
            json!({
                "name": "add",
                "description": "Add two numbers",
                "inputSchema": {"type": "object", "properties": {"a": number, "b": number},
                                "required": ["a", "b"], "additionalProperties": false},
                "outputSchema": {"type": "object", "properties": {"sum": number},
                                 "required": ["sum"]},
                "annotations": {"readOnlyHint": true},
            }),
            json!({
                "name": "divide",
                "description": "Divide a by b; dividing by zero is a tool error",
                "inputSchema": {"type": "object", "properties": {"a": number, "b": number},
                                "required": ["a", "b"], "additionalProperties": false},
                "annotations": {"readOnlyHint": true},
            }),
        ];
        Calculator {
            info: ServerInfo {
                name: "calc".to_owned(),
                description: Some("arithmetic served by an embedding program".to_owned()),
                tags: vec!["math".to_owned()],
                transport: TransportKind::Unknown,
                settings: ServerSettings::default(),
            },
            catalog: Arc::new(Catalog::new(tools)),
        }
    }
}

impl Upstream for Calculator {
    fn info(&self) -> &ServerInfo {
        &self.info
    }

    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog)
    }

    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: &'a Map<String, Value>,
        _deadline: Instant,
        _ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        Box::pin(async move {
            // Validated by the pipeline: both are numbers.
            let a = arguments["a"].as_f64().unwrap_or_default();
            let b = arguments["b"].as_f64().unwrap_or_default();
            Ok(match tool {
                "add" => json!({
                    "content": [{"type": "text", "text": (a + b).to_string()}],
                    "structuredContent": {"sum": a + b},
                }),
                "divide" if b == 0.0 => json!({
                    "content": [{"type": "text", "text": "cannot divide by zero: give a non-zero b"}],
                    "isError": true,
                }),
                _ => json!({"content": [{"type": "text", "text": (a / b).to_string()}]}),
            })
        })
    }
}

struct Tools(Vec<Arc<dyn Upstream>>);

impl ToolProvider for Tools {
    fn servers(&self) -> Vec<Arc<dyn Upstream>> {
        self.0.clone()
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let provider = Arc::new(Tools(vec![Arc::new(Calculator::new())]));
    let token = Token::generate();
    let services = Services::new(provider, Arc::new(TokenStore::new(token.clone())));
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    // What a harness hands its children; `tool-cli` reads the same two variables.
    println!("export TOOL_CLI_PORT={port}");
    println!("export TOOL_CLI_TOKEN={}", token.expose());
    use std::io::Write as _;
    std::io::stdout().flush()?;
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    server::run(
        Listener::Tcp(listener),
        services,
        shutdown,
        ServeOptions::default(),
    )
    .await
}
