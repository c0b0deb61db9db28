//! The MCP face of the toolkit beyond SQL: `rest_exchange_rate`, `run_python` and the resource
//! handle tools `list_resources`, `open_resource`, `read_resource`, `release_resource`.
//!
//! Like `server.rs`, this module only translates. Arguments are read into structs whose field
//! docs become the `inputSchema` agents read; results are structs with an `outputSchema`;
//! failures an agent can act on (an unknown currency, a refused snippet, a released handle) are
//! tool results with `isError: true` and a message that says what to do instead. The new tools
//! use camelCase member names, as MCP itself does; `sql_query` keeps its snake_case.

use rmcp::{
    Json, RoleServer,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{MetaObject, ResourceContents},
    service::RequestContext,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::time::Instant;

use crate::{
    handles::{self, HandleError},
    rates::{ExchangeRate, RateRequest},
    resources,
    sandbox::{self, CodeRequest, CodeRun, Sandbox, SandboxHealth},
    schema,
    server::DemoServer,
};

/// The `_meta` key naming the client session a handle belongs to, for a connection shared by
/// several clients (the daemon's pool). Without it, the session is the connection.
pub(crate) const SESSION_META_KEY: &str = "tool-cli/sessionId";

/// Arguments of `rest_exchange_rate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExchangeRateArguments {
    /// The currency to convert from: an ISO 4217 code such as USD.
    #[schemars(length(equal = 3))]
    base: String,
    /// The currency to convert to: an ISO 4217 code such as EUR.
    #[schemars(length(equal = 3))]
    quote: String,
    /// The day of the rate as YYYY-MM-DD; omit (or pass "latest") for the latest rate.
    #[serde(default)]
    date: Option<String>,
    /// An amount of base to convert; the result's converted is amount × rate. Defaults to 1.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0, "default" = 1))]
    amount: Option<f64>,
}

/// Arguments of `run_python`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct RunPythonArguments {
    /// Python 3 source to run. Print the results you want back. Only these imports are allowed: collections, datetime, decimal, fractions, functools, itertools, json, math, random, re, statistics, string, textwrap. No open/exec/eval/getattr, no dunder names, no attributes starting with an underscore.
    #[schemars(length(min = 1, max = 65536))]
    code: String,
    /// Wall-clock limit in milliseconds: 1 to 10000, default 5000. The whole process group is killed when it passes.
    #[serde(default)]
    #[schemars(range(min = 1, max = 10_000), extend("default" = 5000))]
    timeout_ms: Option<u64>,
    /// Text made available to the snippet as the string variable STDIN.
    #[serde(default)]
    #[schemars(length(max = 65536))]
    stdin: Option<String>,
}

/// Arguments of `list_resources`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListResourcesArguments {}

/// Arguments of `open_resource`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OpenResourceArguments {
    /// The resource URI, from list_resources (for example demo://docs/returns-policy or demo://tables/orders).
    uri: String,
}

/// Arguments of `read_resource`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadResourceArguments {
    /// A handle returned by open_resource in this session.
    handle: String,
    /// Byte offset to read from; pass nextOffset from the previous read. Defaults to 0.
    #[serde(default)]
    #[schemars(extend("default" = 0))]
    offset: Option<u64>,
    /// Bytes to read: default 16384, at most 65536 (larger values are capped). A chunk ends early rather than split a UTF-8 character.
    #[serde(default)]
    #[schemars(range(min = 1), extend("default" = 16384))]
    length: Option<u64>,
}

/// Arguments of `release_resource`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReleaseResourceArguments {
    /// The handle to release; it cannot be used afterwards.
    handle: String,
}

/// One entry of `list_resources`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResourceEntry {
    /// The URI to pass to open_resource.
    uri: String,
    /// A short name.
    name: String,
    /// What it holds.
    description: Option<String>,
    /// Its media type.
    mime_type: Option<String>,
    /// Its size in bytes, when known before opening.
    size: Option<u64>,
}

/// The result of `list_resources`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ResourceList {
    /// Every resource that open_resource accepts.
    resources: Vec<ResourceEntry>,
}

/// The result of `open_resource`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OpenedResource {
    /// Pass this to read_resource and release_resource.
    handle: String,
    /// The resource opened.
    uri: String,
    /// Its size in bytes (UTF-8 text).
    size: u64,
    /// Its media type.
    mime_type: String,
    /// The handle is released after this many milliseconds without use.
    idle_expiry_ms: u64,
}

/// The result of `read_resource`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResourceChunk {
    /// The handle read.
    handle: String,
    /// The resource it is open on.
    uri: String,
    /// Its media type.
    mime_type: String,
    /// The byte offset of data.
    offset: u64,
    /// How many bytes data holds.
    length: u64,
    /// The whole resource's size in bytes.
    size: u64,
    /// The text read.
    data: String,
    /// Whether this chunk reaches the end.
    eof: bool,
    /// The offset to read next, or null at the end.
    next_offset: Option<u64>,
}

/// The result of `release_resource`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReleasedResource {
    /// The handle released.
    handle: String,
    /// The resource it was open on.
    uri: String,
    /// Handles this session still holds.
    still_open: u64,
}

/// The client session a request belongs to (see [`SESSION_META_KEY`]).
fn session_of(context: &RequestContext<RoleServer>) -> String {
    match context.meta.0.get(SESSION_META_KEY) {
        Some(serde_json::Value::String(session)) => session.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

fn handle_error(error: HandleError) -> String {
    error.to_string()
}

#[tool_router(router = toolkit_router, vis = "pub(crate)")]
impl DemoServer {
    /// Get the exchange rate from one currency to another (ISO 4217 codes such as USD, EUR, GBP, JPY) from a REST rates service, for the latest day or a given date; pass amount to convert an amount. The sample shop's prices are US dollars.
    #[tool(annotations(
        title = "Exchange rate",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = true
    ))]
    async fn rest_exchange_rate(
        &self,
        Parameters(arguments): Parameters<ExchangeRateArguments>,
    ) -> Result<Json<ExchangeRate>, String> {
        let request = RateRequest::new(
            &arguments.base,
            &arguments.quote,
            arguments.date.as_deref(),
            arguments.amount,
        )
        .map_err(|error| error.to_string())?;
        match self.rates.rate(&request).await {
            Ok(rate) => Ok(Json(rate)),
            Err(error) => {
                tracing::debug!(tool = "rest_exchange_rate", %error, "no rate");
                Err(error.to_string())
            }
        }
    }

    /// Run a short Python 3 snippet in a sandbox and get what it printed: {stdout, stderr, exitCode, timedOut, durationMs, queuedMs}. Use it to compute (sums, statistics, dates, parsing JSON or text); the snippet cannot read the host's files, use the network or see other processes, and is stopped after timeoutMs.
    #[tool(annotations(
        title = "Run Python (sandboxed)",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn run_python(
        &self,
        Parameters(arguments): Parameters<RunPythonArguments>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<CodeRun>, String> {
        let request = CodeRequest::new(arguments.code, arguments.timeout_ms, arguments.stdin)
            .map_err(|error| error.to_string())?;
        match self.sandbox.run(&request, context.ct.cancelled()).await {
            Ok(run) => Ok(Json(run)),
            Err(error) => {
                tracing::debug!(tool = "run_python", %error, "snippet not run");
                Err(error.to_string())
            }
        }
    }

    /// List the resources open_resource can open: the documents (readme, schema, returns policy, shipping rates, currency notes) and a sample of each table, with URIs, media types and sizes.
    #[tool(
        name = "list_resources",
        annotations(
            title = "List resources",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_resources_tool(
        &self,
        Parameters(_arguments): Parameters<ListResourcesArguments>,
    ) -> Result<Json<ResourceList>, String> {
        let tables = self
            .database
            .run(schema::table_names)
            .await
            .map_err(|error| error.to_string())?;
        let resources = resources::list(&tables)
            .into_iter()
            .map(|resource| ResourceEntry {
                uri: resource.uri,
                name: resource.name,
                description: resource.description,
                mime_type: resource.mime_type,
                size: resource.size,
            })
            .collect();
        Ok(Json(ResourceList { resources }))
    }

    /// Open a resource by URI and get a handle for reading it in chunks with read_resource, plus its size and media type. Handles belong to this session, at most 1000 open at once, and expire after 15 minutes unused; release them with release_resource when done.
    #[tool(annotations(
        title = "Open a resource",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn open_resource(
        &self,
        Parameters(arguments): Parameters<OpenResourceArguments>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<OpenedResource>, String> {
        let uri = arguments.uri;
        let read_uri = uri.clone();
        let contents = self
            .database
            .run(move |connection| Ok(resources::read(connection, &read_uri)))
            .await
            .map_err(|error| error.to_string())?
            .map_err(|error| error.to_string())?;
        let (text, mime_type) = match contents {
            ResourceContents::TextResourceContents {
                text, mime_type, ..
            } => (text, mime_type.unwrap_or_else(|| "text/plain".to_owned())),
            _ => {
                return Err(format!(
                    "{uri} is binary; only text resources can be opened"
                ));
            }
        };
        let session = session_of(&context);
        let opened = self
            .handles
            .lock()
            .expect("the handle table lock is never poisoned")
            .open(&session, &uri, &mime_type, text.into(), Instant::now())
            .map_err(handle_error)?;
        Ok(Json(OpenedResource {
            handle: opened.handle,
            uri,
            size: opened.size as u64,
            mime_type,
            idle_expiry_ms: handles::IDLE_EXPIRY.as_millis() as u64,
        }))
    }

    /// Read a chunk of an open resource: from offset (default 0) up to length bytes (default 16384, at most 65536). The answer says nextOffset to continue from and eof at the end.
    #[tool(
        name = "read_resource",
        annotations(
            title = "Read an open resource",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn read_resource_tool(
        &self,
        Parameters(arguments): Parameters<ReadResourceArguments>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<ResourceChunk>, String> {
        let session = session_of(&context);
        let to_usize = |value: u64| usize::try_from(value).unwrap_or(usize::MAX);
        let chunk = self
            .handles
            .lock()
            .expect("the handle table lock is never poisoned")
            .read(
                &session,
                &arguments.handle,
                to_usize(arguments.offset.unwrap_or(0)),
                arguments.length.map(to_usize),
                Instant::now(),
            )
            .map_err(handle_error)?;
        Ok(Json(ResourceChunk {
            handle: arguments.handle,
            uri: chunk.uri,
            mime_type: chunk.mime_type,
            offset: chunk.offset as u64,
            length: chunk.data.len() as u64,
            size: chunk.size as u64,
            eof: chunk.next_offset.is_none(),
            next_offset: chunk.next_offset.map(|offset| offset as u64),
            data: chunk.data,
        }))
    }

    /// Release a handle from open_resource; reading it afterwards is an error.
    #[tool(annotations(
        title = "Release a resource handle",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn release_resource(
        &self,
        Parameters(arguments): Parameters<ReleaseResourceArguments>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<ReleasedResource>, String> {
        let session = session_of(&context);
        let mut table = self
            .handles
            .lock()
            .expect("the handle table lock is never poisoned");
        let now = Instant::now();
        let uri = table
            .release(&session, &arguments.handle, now)
            .map_err(handle_error)?;
        Ok(Json(ReleasedResource {
            handle: arguments.handle,
            uri,
            still_open: table.open_count(&session, now) as u64,
        }))
    }
}

/// Writes what the sandbox found on this machine into `run_python`'s description, and tags the
/// tool so a policy can find it (`denyTools: ["run_python"]` in the daemon's config disables it).
pub(crate) fn describe_platform(router: &mut ToolRouter<DemoServer>, sandbox: &Sandbox) {
    let Some(route) = router.map.get_mut("run_python") else {
        return;
    };
    let tool = &mut route.attr;
    let state = sandbox.describe();
    let health = sandbox.health();
    let available = health != SandboxHealth::Unavailable;
    let description = tool.description.as_deref().unwrap_or_default();
    tool.description = Some(if health == SandboxHealth::Complete {
        format!("{description} {state}").into()
    } else {
        // Lead with the state, so an agent reading only the first words knows.
        format!("{state} {description}").into()
    });
    let mut meta = MetaObject::default();
    meta.0.insert(
        "tool-cli/tags".to_owned(),
        json!(["code-execution", "sandboxed"]),
    );
    meta.0
        .insert("tool-cli/available".to_owned(), json!(available));
    meta.0.insert(
        "tool-cli/sandbox".to_owned(),
        json!({
            "health": match health {
                SandboxHealth::Complete => "complete",
                SandboxHealth::Degraded => "degraded",
                SandboxHealth::Unavailable => "unavailable",
            },
            "layers": sandbox.layers(),
        }),
    );
    meta.0.insert(
        "tool-cli/allowedImports".to_owned(),
        json!(sandbox::ALLOWED_MODULES),
    );
    tool.meta = Some(meta);
}
