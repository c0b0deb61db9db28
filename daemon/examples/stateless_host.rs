//! An MCP host of the stateless revision 2026-07-28: rmcp's client in discover mode (no
//! `initialize`, no session; the version, its identity and its capabilities in every
//! request's `_meta`) talking to a gateway over Streamable HTTP. The e2e tests
//! (`tests/e2e/protocol_eras.rs`) run it against the daemon's `/mcp` endpoint.
//!
//! `stateless_host URL TOKEN [--tasks] [CALL…]`, each CALL `tool={json arguments}`, or
//! `stateless_host stdio TOOL_CLI [--tasks] [CALL…]` to talk through `TOOL_CLI mcp` (launched
//! as a host launches it, with the environment it was given) over stdio: it discovers,
//! lists tools, resources and prompts, reads the first resource, makes the calls in order
//! and prints one JSON report on stdout (a failed step is reported as `{"error": …}`, not
//! an exit, so a test can assert on refusals too).
//!
//! With `--tasks` it declares the tasks extension (`io.modelcontextprotocol/tasks`) in its
//! capabilities and follows a call answered with a task as rmcp's client does: `tasks/get`
//! until the task ends, reported as `{"task": handle, "final": last tasks/get}`; a CALL
//! written `cancel:tool={…}` cancels its task (`tasks/cancel`) as soon as it is created.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, ProtocolVersion, ReadResourceRequestParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

fn report<T: serde::Serialize, E: std::fmt::Display>(answer: Result<T, E>) -> Value {
    match answer {
        Ok(value) => serde_json::to_value(value).unwrap_or(Value::Null),
        Err(error) => json!({"error": error.to_string()}),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(token)) = (args.next(), args.next()) else {
        return Err("usage: stateless_host URL TOKEN [--tasks] [tool={arguments}]…".into());
    };
    let mut args = args.peekable();
    let tasks = args.next_if(|arg| arg == "--tasks").is_some();
    let mut host = ClientConfig::default();
    if tasks {
        host.capabilities = ClientCapabilities::builder().enable_tasks().build();
    }
    let calls: Vec<(String, Value)> = args
        .map(|call| {
            let (name, arguments) = call.split_once('=').unwrap_or((&call, "{}"));
            (
                name.to_owned(),
                serde_json::from_str(arguments).unwrap_or(json!({})),
            )
        })
        .collect();
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    // `tool-cli mcp`, when it is the way in: held until the end (dropping it kills it).
    let mut relay_process = None;
    let started = if url == "stdio" {
        let mut relay = tokio::process::Command::new(&token)
            .arg("mcp")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdout = relay.stdout.take().ok_or("no stdout")?;
        let stdin = relay.stdin.take().ok_or("no stdin")?;
        relay_process = Some(relay);
        host.serve_with_lifecycle((stdout, stdin), lifecycle).await
    } else {
        // The daemon's own HTTP client for remote servers (rustls, the platform's roots).
        let client = tool_cli_daemon::pool::http_client::HttpClient::new(None)?;
        let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
        let transport = StreamableHttpClientTransport::with_client(client, config);
        host.serve_with_lifecycle(transport, lifecycle).await
    };
    let client = match started {
        Ok(client) => client,
        Err(error) => {
            println!("{}", json!({"discover": {"error": error.to_string()}}));
            return Ok(());
        }
    };
    let info = client.peer_info();
    let mut out = json!({
        "protocolVersion": info.as_ref().map(|info| info.protocol_version.to_string()),
        "serverName": info.as_ref().and_then(|info| info.server_info.as_ref()).map(|s| s.name.clone()),
        "instructions": info.as_ref().and_then(|info| info.instructions.clone()),
    });
    out["tools"] = report(client.list_all_tools().await.map(|tools| {
        tools
            .iter()
            .map(|tool| tool.name.to_string())
            .collect::<Vec<_>>()
    }));
    let resources = client.list_resources(None).await;
    if let Ok(listed) = &resources
        && let Some(first) = listed.resources.first()
    {
        let read = client
            .read_resource(ReadResourceRequestParams::new(first.uri.clone()))
            .await;
        out["firstResourceRead"] = report(read);
    }
    out["resources"] = report(resources);
    out["missingResource"] = report(
        client
            .read_resource(ReadResourceRequestParams::new("nowhere://not-a-resource"))
            .await,
    );
    out["prompts"] = report(client.list_prompts(None).await);
    let mut answers = Vec::new();
    for (name, arguments) in calls {
        let (name, cancel) = match name.strip_prefix("cancel:") {
            Some(name) => (name.to_owned(), true),
            None => (name, false),
        };
        let mut params = CallToolRequestParams::new(name);
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        if !tasks {
            answers.push(report(client.call_tool(params).await));
            continue;
        }
        let handle = match client.call_tool_once(params).await {
            Ok(CallToolResponse::Task(handle)) => handle,
            Ok(CallToolResponse::Complete(result)) => {
                answers.push(report(Ok::<_, String>(result)));
                continue;
            }
            Ok(other) => {
                answers.push(json!({"error": format!("not a result or a task: {other:?}")}));
                continue;
            }
            Err(error) => {
                answers.push(report(Err::<(), _>(error)));
                continue;
            }
        };
        let task_id = handle.task.task_id.clone();
        let mut answer = json!({"task": report(Ok::<_, String>(&handle))});
        if cancel {
            let cancelled = client.cancel_task(CancelTaskParams::new(&task_id)).await;
            answer["cancel"] = report(cancelled);
        }
        // Polled as the handle asks (within bounds), until the task ends or an error.
        let poll = std::time::Duration::from_millis(
            handle.task.poll_interval_ms.unwrap_or(200).clamp(20, 1000),
        );
        loop {
            match client.get_task(GetTaskParams::new(&task_id)).await {
                Ok(got) if !got.task.status().is_terminal() => {
                    tokio::time::sleep(poll).await;
                }
                other => {
                    answer["final"] = report(other);
                    break;
                }
            }
        }
        answers.push(answer);
    }
    out["calls"] = Value::Array(answers);
    println!("{out}");
    let _ = client.cancel().await;
    if let Some(mut relay) = relay_process {
        // Its stdin is closed with the client: it ends on its own; wait for it.
        let _ = relay.wait().await;
    }
    Ok(())
}
