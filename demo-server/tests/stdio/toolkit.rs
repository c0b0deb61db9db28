//! The toolkit tools over MCP: `rest_exchange_rate` against the built-in rates service and
//! against a misbehaving one started here, `run_python` with the machine's real Python (and with
//! none), and the resource-handle tools, including sessions and the open-handle bound. Also the
//! sample-data facts `docs/toolkit.md` promises to the agent planner.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, MetaObject, ReadResourceRequestParams,
    RequestMetaObject, ResourceContents,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::TcpListener,
};

use super::{Client, TemporaryDirectory, call, connect, connect_with, options, text_of};

/// `rest_exchange_rate`'s structuredContent as a client relies on it.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct ExchangeRate {
    base: String,
    quote: String,
    date: String,
    rate: f64,
    amount: f64,
    converted: f64,
    source: String,
}

/// `run_python`'s structuredContent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CodeRun {
    stdout: String,
    stderr: String,
    exit_code: Option<i32>,
    signal: Option<String>,
    timed_out: bool,
    stopped_by: Option<String>,
    duration_ms: u64,
    queued_ms: u64,
    stdout_truncated: bool,
    stderr_truncated: bool,
}

/// `open_resource`'s structuredContent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Opened {
    handle: String,
    uri: String,
    size: u64,
    mime_type: String,
    idle_expiry_ms: u64,
}

/// `read_resource`'s structuredContent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Chunk {
    handle: String,
    uri: String,
    mime_type: String,
    offset: u64,
    length: u64,
    size: u64,
    data: String,
    eof: bool,
    next_offset: Option<u64>,
}

fn structured<T: serde::de::DeserializeOwned>(result: &CallToolResult) -> T {
    assert_eq!(result.is_error, Some(false), "{}", text_of(result));
    serde_json::from_value(
        result
            .structured_content
            .clone()
            .expect("structuredContent"),
    )
    .expect("the documented shape")
}

/// The message of a tool error.
fn tool_error(result: &CallToolResult) -> String {
    assert_eq!(
        result.is_error,
        Some(true),
        "expected a tool error: {result:?}"
    );
    text_of(result).to_owned()
}

/// Calls a tool as a given client session (`_meta["tool-cli/sessionId"]`).
async fn call_as(
    client: &Client,
    session: &str,
    tool: &'static str,
    arguments: Value,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    let mut meta = serde_json::Map::new();
    meta.insert("tool-cli/sessionId".to_owned(), json!(session));
    let mut params = CallToolRequestParams::new(tool).with_arguments(arguments);
    params.meta = Some(RequestMetaObject(MetaObject(meta)));
    client.call_tool(params).await.expect("tools/call answers")
}

#[tokio::test]
async fn exchange_rates_from_the_built_in_service() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect(&directory).await;
    let result = call(
        &client,
        "rest_exchange_rate",
        json!({"base": "usd", "quote": "EUR", "amount": 100}),
    )
    .await;
    let rate: ExchangeRate = structured(&result);
    assert_eq!((rate.base.as_str(), rate.quote.as_str()), ("USD", "EUR"));
    assert_eq!(
        (rate.rate, rate.amount, rate.converted),
        (0.925926, 100.0, 92.5926)
    );
    assert_eq!(rate.date, "2025-06-30");
    assert!(
        rate.source.starts_with("http://127.0.0.1:"),
        "{}",
        rate.source
    );

    let result = call(
        &client,
        "rest_exchange_rate",
        json!({"base": "GBP", "quote": "JPY", "date": "2024-02-29"}),
    )
    .await;
    let rate: ExchangeRate = structured(&result);
    assert_eq!((rate.rate, rate.date.as_str()), (188.235294, "2024-02-29"));

    let message = tool_error(
        &call(
            &client,
            "rest_exchange_rate",
            json!({"base": "USD", "quote": "XYZ"}),
        )
        .await,
    );
    assert!(
        message.starts_with(
            "the rates service has no rate from USD to XYZ for latest (HTTP 404: not found)"
        ),
        "{message}"
    );
    let message = tool_error(
        &call(
            &client,
            "rest_exchange_rate",
            json!({"base": "USD", "quote": "EUR", "date": "2024-02-30"}),
        )
        .await,
    );
    assert!(
        message.contains("is not a date; use YYYY-MM-DD"),
        "{message}"
    );
    let message = tool_error(
        &call(
            &client,
            "rest_exchange_rate",
            json!({"base": "dollars", "quote": "EUR"}),
        )
        .await,
    );
    assert!(message.contains("is not a currency code"), "{message}");
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

/// A rates service that misbehaves by date: 500, bad JSON, a hang, a redirect, JSON without
/// rates; and a proper Frankfurter-shaped answer for `latest`.
async fn misbehaving_rates_service() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let target = head.split_whitespace().nth(1).unwrap_or("").to_owned();
                let (status, body) = match target.split('?').next().unwrap_or("") {
                    "/v1/latest" => (
                        "200 OK",
                        r#"{"amount":1.0,"base":"USD","date":"2025-01-03","rates":{"EUR":0.9712}}"#,
                    ),
                    "/v1/2024-01-01" => (
                        "500 Internal Server Error",
                        r#"{"message":"database offline"}"#,
                    ),
                    "/v1/2024-01-02" => ("200 OK", "<html>not json</html>"),
                    "/v1/2024-01-03" => {
                        // Hold the connection open and never answer.
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        return;
                    }
                    "/v1/2024-01-04" => ("301 Moved Permanently", ""),
                    _ => ("200 OK", r#"{"base":"USD","date":"2024-01-05"}"#),
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nLocation: https://elsewhere.example/v1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    format!("http://{address}/v1")
}

#[tokio::test]
async fn remote_rate_failures_are_tool_errors() {
    let directory = TemporaryDirectory::new();
    let url = misbehaving_rates_service().await;
    let (client, server) = connect_with(tool_cli_demo_server::DemoOptions {
        rates_url: Some(url.clone()),
        rates_timeout: Some(Duration::from_millis(500)),
        ..options(&directory)
    })
    .await;
    let rate: ExchangeRate = structured(
        &call(
            &client,
            "rest_exchange_rate",
            json!({"base": "USD", "quote": "EUR"}),
        )
        .await,
    );
    assert_eq!(
        (rate.rate, rate.date.as_str(), rate.source.as_str()),
        (0.9712, "2025-01-03", url.as_str())
    );
    for (date, expected) in [
        (
            "2024-01-01",
            "the rates service failed (HTTP 500: database offline); try again later".to_owned(),
        ),
        (
            "2024-01-02",
            "the rates service's answer is not the expected JSON".to_owned(),
        ),
        (
            "2024-01-03",
            format!("the rates service at {url} did not answer within 500 ms"),
        ),
        (
            "2024-01-04",
            "redirected (HTTP 301) to https://elsewhere.example/v1".to_owned(),
        ),
        ("2024-01-05", "it has no \"rates\" object".to_owned()),
    ] {
        let result = call(
            &client,
            "rest_exchange_rate",
            json!({"base": "USD", "quote": "EUR", "date": date}),
        )
        .await;
        let message = tool_error(&result);
        assert!(message.contains(&expected), "{date}: {message}");
    }
    // The server is still serving after all that.
    structured::<ExchangeRate>(
        &call(
            &client,
            "rest_exchange_rate",
            json!({"base": "USD", "quote": "EUR"}),
        )
        .await,
    );
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_rates_service_that_is_down_is_a_tool_error() {
    let directory = TemporaryDirectory::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (client, server) = connect_with(tool_cli_demo_server::DemoOptions {
        rates_url: Some(format!("http://127.0.0.1:{port}")),
        ..options(&directory)
    })
    .await;
    let message = tool_error(
        &call(
            &client,
            "rest_exchange_rate",
            json!({"base": "USD", "quote": "EUR"}),
        )
        .await,
    );
    assert!(
        message.starts_with(&format!(
            "cannot reach the rates service at http://127.0.0.1:{port}: cannot connect"
        )),
        "{message}"
    );
    // https to a plain-HTTP listener fails in the TLS handshake, cleanly.
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();

    let plain = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = plain.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = plain.accept().await {
            let _ = stream
                .write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
                .await;
        }
    });
    let (client, server) = connect_with(tool_cli_demo_server::DemoOptions {
        rates_url: Some(format!("https://{address}")),
        ..options(&directory)
    })
    .await;
    let message = tool_error(
        &call(
            &client,
            "rest_exchange_rate",
            json!({"base": "USD", "quote": "EUR"}),
        )
        .await,
    );
    assert!(message.contains("the TLS handshake failed"), "{message}");
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_bad_rates_url_stops_the_server_at_startup() {
    let directory = TemporaryDirectory::new();
    let (server_stream, _client_stream) = tokio::io::duplex(1024);
    let (reader, writer) = tokio::io::split(server_stream);
    let error = tool_cli_demo_server::serve(
        tool_cli_demo_server::DemoOptions {
            rates_url: Some("ftp://rates.example".to_owned()),
            ..options(&directory)
        },
        reader,
        writer,
    )
    .await
    .unwrap_err();
    assert!(
        error.to_string().starts_with(
            "the rates URL \"ftp://rates.example\" is not usable: the scheme must be http or https"
        ),
        "{error}"
    );
}

#[tokio::test]
async fn run_python_runs_and_refuses() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect(&directory).await;
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools.iter().find(|tool| tool.name == "run_python").unwrap();
    let wire = serde_json::to_value(tool).unwrap();
    assert_eq!(wire["annotations"]["readOnlyHint"], false);
    assert_eq!(wire["annotations"]["destructiveHint"], false);
    assert_eq!(
        wire["_meta"]["tool-cli/tags"],
        json!(["code-execution", "sandboxed"])
    );
    assert_eq!(wire["_meta"]["tool-cli/available"], true);
    assert!(
        wire["description"]
            .as_str()
            .unwrap()
            .contains("Here: Python 3."),
        "{wire}"
    );
    // The CI machine grants every layer (root, user namespaces, seccomp, Landlock, cgroup v1
    // pids and memory); a machine without one would say "degraded" here.
    assert_eq!(
        wire["_meta"]["tool-cli/sandbox"]["health"], "complete",
        "{wire}"
    );
    let layers = wire["_meta"]["tool-cli/sandbox"]["layers"].to_string();
    for layer in [
        "network namespace",
        "seccomp",
        "Landlock ABI",
        "memory cgroup",
    ] {
        assert!(layers.contains(layer), "{layer}: {layers}");
    }
    assert_eq!(
        wire["inputSchema"]["properties"]["timeoutMs"]["maximum"],
        10_000
    );

    let run: CodeRun = structured(
        &call(
            &client,
            "run_python",
            json!({"code": "import math\nprint(round(math.pi * 2, 4))"}),
        )
        .await,
    );
    assert_eq!(
        (run.stdout.as_str(), run.exit_code, run.timed_out),
        ("6.2832\n", Some(0), false)
    );
    assert!(run.stderr.is_empty() && run.signal.is_none() && run.stopped_by.is_none());
    assert!(!run.stdout_truncated && !run.stderr_truncated);

    let run: CodeRun = structured(
        &call(
            &client,
            "run_python",
            json!({"code": "while True: pass", "timeoutMs": 300}),
        )
        .await,
    );
    assert!(run.timed_out && run.duration_ms >= 300, "{run:?}");

    let message = tool_error(
        &call(
            &client,
            "run_python",
            json!({"code": "import os\nos.system('id')"}),
        )
        .await,
    );
    assert!(
        message.starts_with("the code was refused before running"),
        "{message}"
    );
    let message = tool_error(
        &call(
            &client,
            "run_python",
            json!({"code": "print(1)", "timeoutMs": 60000}),
        )
        .await,
    );
    assert!(
        message.contains("timeoutMs 60000 is out of range"),
        "{message}"
    );
    // Every run directory is gone.
    assert_eq!(
        std::fs::read_dir(directory.0.join("runs")).unwrap().count(),
        0
    );
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

/// Issue 22's escape chain through the real server: main's static check accepted it and it
/// read the daemon's runtime file; now the guard refuses it before it runs (and the kernel
/// contains it past the guard: `sandbox::tests::escape_chain_is_contained_by_the_kernel_*`).
#[tokio::test]
async fn run_python_refuses_the_escape_chain() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect(&directory).await;
    let secret = directory.0.join("runtime.json");
    std::fs::write(&secret, "owner-token-SECRET").unwrap();
    let target = json!({"runtime_file": secret, "daemon_pid": std::process::id()});
    let code = include_str!("../../src/sandbox/escape_chain.py");
    let result = call(
        &client,
        "run_python",
        json!({"code": code, "stdin": target.to_string()}),
    )
    .await;
    let message = tool_error(&result);
    assert!(
        message.starts_with("the code was refused before running")
            && message.contains("'__match_args__'")
            && message.contains("'__subclasshook__'"),
        "{message}"
    );
    assert!(!format!("{result:?}").contains("SECRET"));
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

/// Issue 22, item 7: snippets beyond one per CPU queue instead of sharing the cores (ten 1 s
/// snippets on 2 cores all timed out at 5 s); each reports how long it waited.
#[tokio::test]
async fn concurrent_run_python_calls_queue_behind_the_slots() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect(&directory).await;
    let slots = std::thread::available_parallelism().map_or(1, |count| count.get());
    let calls = slots + 4;
    let runs = futures_util::future::join_all((0..calls).map(|index| {
        let client = &client;
        async move {
            structured::<CodeRun>(
                &call(
                    client,
                    "run_python",
                    json!({"code": format!("print(sum(range({index} * 1000)))")}),
                )
                .await,
            )
        }
    }))
    .await;
    for (index, run) in runs.iter().enumerate() {
        assert_eq!(
            (run.stdout.trim(), run.exit_code, run.timed_out),
            (
                (0..index as u64 * 1000).sum::<u64>().to_string().as_str(),
                Some(0),
                false
            ),
            "{run:?}"
        );
    }
    // At most `slots` ran at once, so the others waited for a slot.
    let waited = runs.iter().filter(|run| run.queued_ms > 0).count();
    assert!(waited >= calls - slots, "{runs:?}");
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn without_python_run_python_is_listed_as_unavailable() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect_with(tool_cli_demo_server::DemoOptions {
        python: Some("/nonexistent/python3".into()),
        ..options(&directory)
    })
    .await;
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools
        .iter()
        .find(|tool| tool.name == "run_python")
        .expect("still listed");
    let description = tool.description.as_deref().unwrap();
    assert!(description.starts_with("UNAVAILABLE on this machine: the Python interpreter /nonexistent/python3 cannot be used"), "{description}");
    assert_eq!(
        serde_json::to_value(tool).unwrap()["_meta"]["tool-cli/available"],
        false
    );
    let message = tool_error(&call(&client, "run_python", json!({"code": "print(1)"})).await);
    assert!(
        message.starts_with("run_python is unavailable on this machine"),
        "{message}"
    );
    // The server's instructions say so too.
    let instructions = client
        .peer_info()
        .and_then(|info| info.instructions.clone())
        .unwrap_or_default();
    assert!(
        instructions.contains("run_python: UNAVAILABLE on this machine"),
        "{instructions}"
    );
    // Everything else works.
    structured::<ExchangeRate>(
        &call(
            &client,
            "rest_exchange_rate",
            json!({"base": "USD", "quote": "EUR"}),
        )
        .await,
    );
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn resource_handles_read_in_chunks_and_end_on_release() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect(&directory).await;
    let listed = call(&client, "list_resources", json!({})).await;
    let uris: Vec<String> = listed.structured_content.as_ref().unwrap()["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|resource| resource["uri"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        uris.contains(&"demo://docs/returns-policy".to_owned()),
        "{uris:?}"
    );
    assert!(uris.contains(&"demo://tables/orders".to_owned()));

    let opened: Opened = structured(
        &call(
            &client,
            "open_resource",
            json!({"uri": "demo://tables/orders"}),
        )
        .await,
    );
    assert_eq!(
        (opened.uri.as_str(), opened.mime_type.as_str()),
        ("demo://tables/orders", "application/json")
    );
    assert_eq!(opened.idle_expiry_ms, 15 * 60 * 1000);
    let mut text = String::new();
    let mut offset = 0;
    let mut chunks = 0;
    loop {
        let chunk: Chunk = structured(
            &call(
                &client,
                "read_resource",
                json!({"handle": opened.handle, "offset": offset, "length": 4096}),
            )
            .await,
        );
        assert_eq!(
            (chunk.handle.as_str(), chunk.offset, chunk.size),
            (opened.handle.as_str(), offset, opened.size)
        );
        assert_eq!(
            (chunk.uri.as_str(), chunk.mime_type.as_str()),
            ("demo://tables/orders", "application/json")
        );
        assert!(chunk.length <= 4096 && chunk.length == chunk.data.len() as u64);
        text.push_str(&chunk.data);
        chunks += 1;
        match chunk.next_offset {
            Some(next) => offset = next,
            None => {
                assert!(chunk.eof);
                break;
            }
        }
    }
    assert!(chunks > 3, "{} bytes came in {chunks} chunks", opened.size);
    // The chunks add up to exactly what resources/read serves.
    let whole = client
        .read_resource(ReadResourceRequestParams::new("demo://tables/orders"))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text: whole, .. } = &whole.contents[0] else {
        panic!("expected text")
    };
    assert_eq!(&text, whole);

    let released = call(
        &client,
        "release_resource",
        json!({"handle": opened.handle}),
    )
    .await;
    assert_eq!(
        released.structured_content.as_ref().unwrap()["stillOpen"],
        0
    );
    let message =
        tool_error(&call(&client, "read_resource", json!({"handle": opened.handle})).await);
    assert!(
        message.contains("was already released; open the resource again"),
        "{message}"
    );
    let message = tool_error(
        &call(
            &client,
            "open_resource",
            json!({"uri": "demo://docs/nothing"}),
        )
        .await,
    );
    assert!(
        message.contains("valid URIs: demo://docs/readme"),
        "{message}"
    );
    let message = tool_error(&call(&client, "read_resource", json!({"handle": "h-made-up"})).await);
    assert!(
        message.contains("no open handle \"h-made-up\" in this session"),
        "{message}"
    );
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn handles_belong_to_their_session() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect(&directory).await;
    let opened: Opened = structured(
        &call_as(
            &client,
            "alice",
            "open_resource",
            json!({"uri": "demo://docs/shipping"}),
        )
        .await,
    );
    let message = tool_error(
        &call_as(
            &client,
            "bob",
            "read_resource",
            json!({"handle": opened.handle}),
        )
        .await,
    );
    // Exactly what a handle never made gets: bob cannot learn that alice's exists.
    let unknown = format!(
        "no open handle {:?} in this session; pass a handle returned by open_resource (handles \
         are per session and end when released or idle)",
        opened.handle
    );
    assert_eq!(message, unknown);
    let message = tool_error(
        &call(
            &client,
            "release_resource",
            json!({"handle": opened.handle}),
        )
        .await,
    );
    assert_eq!(message, unknown);
    let chunk: Chunk = structured(
        &call_as(
            &client,
            "alice",
            "read_resource",
            json!({"handle": opened.handle}),
        )
        .await,
    );
    assert!(chunk.data.starts_with("SHIPPING RATES") && chunk.eof);

    // Another connection is another session altogether: the handle does not exist there.
    let other_directory = TemporaryDirectory::new();
    let (other, other_server) = connect(&other_directory).await;
    let message = tool_error(
        &call_as(
            &other,
            "alice",
            "read_resource",
            json!({"handle": opened.handle}),
        )
        .await,
    );
    assert!(message.contains("no open handle"), "{message}");
    for (client, server) in [(client, server), (other, other_server)] {
        client.cancel().await.unwrap();
        server.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn open_handles_are_bounded() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect(&directory).await;
    let mut first = None;
    for _ in 0..1000 {
        let opened: Opened = structured(
            &call(
                &client,
                "open_resource",
                json!({"uri": "demo://docs/readme"}),
            )
            .await,
        );
        first.get_or_insert(opened.handle);
    }
    let message = tool_error(
        &call(
            &client,
            "open_resource",
            json!({"uri": "demo://docs/readme"}),
        )
        .await,
    );
    assert_eq!(
        message,
        "too many open handles: this session already holds 1000; release some with release_resource before opening more"
    );
    // Another session still may, and releasing one makes room.
    structured::<Opened>(
        &call_as(
            &client,
            "other",
            "open_resource",
            json!({"uri": "demo://docs/readme"}),
        )
        .await,
    );
    call(
        &client,
        "release_resource",
        json!({"handle": first.unwrap()}),
    )
    .await;
    structured::<Opened>(
        &call(
            &client,
            "open_resource",
            json!({"uri": "demo://docs/readme"}),
        )
        .await,
    );
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}

/// The facts `docs/toolkit.md` documents for the agent planner: each customer's completed-order
/// count and total, and all-orders total, from the query a planner would write.
#[tokio::test]
async fn the_documented_customer_totals() {
    let directory = TemporaryDirectory::new();
    let (client, server) = connect(&directory).await;
    for (name, completed_orders, completed_total, all_orders, all_total) in [
        ("Dana Lindqvist", 5, 339.89, 6, 619.88),
        ("Ada Moreau", 8, 637.87, 11, 1097.79),
        ("Julia Garcia", 6, 319.91, 8, 461.87),
        ("Ada Okafor", 57, 5579.4, 66, 8198.17),
    ] {
        let sql = format!(
            "SELECT count(*) AS all_orders, round(sum(o.quantity * p.price_usd), 2) AS all_total, \
             sum(o.status = 'completed') AS completed_orders, \
             round(sum(CASE WHEN o.status = 'completed' THEN o.quantity * p.price_usd ELSE 0 END), 2) AS completed_total \
             FROM orders o JOIN customers c ON c.id = o.customer_id JOIN products p ON p.id = o.product_id \
             WHERE c.name = '{name}'"
        );
        let result = call(&client, "sql_query", json!({ "sql": sql })).await;
        let row = &result.structured_content.unwrap()["rows"][0];
        assert_eq!(
            row,
            &json!({"all_orders": all_orders, "all_total": all_total,
                    "completed_orders": completed_orders, "completed_total": completed_total}),
            "{name}"
        );
    }
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}
