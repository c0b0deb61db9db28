//! The Anthropic and OpenAI-compatible backends against scripted fake servers on loopback that
//! replay the real wire formats, driven by the real loop.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tool_cli_agent::backend::{
    AnthropicBackend, HttpSettings, LlmBackend, OpenAiBackend, RetryPolicy,
};
use tool_cli_agent::config::ApiKey;
use tool_cli_agent::cost::{PriceTable, Usage, call_cost};
use tool_cli_agent::events::{ChannelSink, NullSink};
use tool_cli_agent::run::run;
use tool_cli_protocol::agent::{AgentEventKind, RunAgentResult, RunStatus};

use crate::common::{
    FakeLlm, MemoryHost, Reply, capture_logs, data_event, named_event, settings, text_outcome, tool,
};

const KEY: &str = "sk-test-4f1d9a7c2b";
const TASK: &str = "What is the price of item 7?";
const FINAL: &str = r#"{"answer": "It costs 42.", "keyFacts": {"price": 42}}"#;

fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 4,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(2),
    }
}

fn http(fake: &FakeLlm, base_suffix: &str) -> HttpSettings {
    HttpSettings {
        base_url: format!("{}{base_suffix}", fake.url()),
        api_key: Some(ApiKey::new(KEY)),
        retry: fast_retries(),
    }
}

/// A host with one tool whose name needs sanitizing (`lookup.price` → `lookup_price`).
fn shop() -> Arc<MemoryHost> {
    MemoryHost::new(
        vec![tool("shop", "lookup.price"), tool("shop", "list_items")],
        |call| Ok(text_outcome(call, "42")),
    )
}

async fn drive(backend: Arc<dyn LlmBackend>, host: Arc<MemoryHost>) -> RunAgentResult {
    let mut settings = settings(TASK);
    settings.cost_ceiling_usd = Some(1.0);
    settings.price = PriceTable::defaults().lookup(backend.model()).cloned();
    run(
        settings,
        host,
        backend,
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// Anthropic.

fn anthropic_tool_turn() -> Vec<String> {
    vec![
        named_event(
            "message_start",
            json!({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "model": "claude-haiku-4-5", "stop_reason": null,
            "usage": {"input_tokens": 120, "cache_creation_input_tokens": 900,
                      "cache_read_input_tokens": 0, "output_tokens": 1}}}),
        ),
        named_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        ),
        named_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "Checking the price."}}),
        ),
        named_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        named_event("ping", json!({"type": "ping"})),
        named_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_01A", "name": "lookup_price",
                              "input": {}}}),
        ),
        named_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "{\"id\": "}}),
        ),
        named_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "\"7\"}"}}),
        ),
        named_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        named_event(
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": null},
            "usage": {"output_tokens": 35}}),
        ),
        named_event("message_stop", json!({"type": "message_stop"})),
    ]
}

fn anthropic_final_turn(text: &str) -> Vec<String> {
    vec![
        named_event(
            "message_start",
            json!({"type": "message_start", "message": {
            "usage": {"input_tokens": 80, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 900, "output_tokens": 1}}}),
        ),
        ": a comment line the parser must skip\n\n".to_owned(),
        named_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        ),
        named_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": text}}),
        ),
        named_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        named_event(
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 20}}),
        ),
        named_event("message_stop", json!({"type": "message_stop"})),
    ]
}

#[tokio::test]
async fn anthropic_tool_turn_then_answer_with_cache_and_usage() {
    let (logs, _guard) = capture_logs();
    let fake = FakeLlm::start(vec![
        Reply::Sse(anthropic_tool_turn()),
        Reply::Sse(anthropic_final_turn(FINAL)),
    ])
    .await;
    let backend =
        Arc::new(AnthropicBackend::new("claude-haiku-4-5", http(&fake, "")).expect("backend"));
    let host = shop();
    let result = drive(backend, host.clone()).await;

    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    assert_eq!(result.answer, "It costs 42.");
    assert_eq!(result.key_facts["price"], json!(42));
    let calls = host.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].server.as_deref(), calls[0].tool.as_str()),
        (Some("shop"), "lookup.price")
    );
    assert_eq!(calls[0].arguments, json!({"id": "7"}));

    // Usage: both calls, cache writes then reads, priced by the default table.
    assert_eq!(result.usage.llm_calls, 2);
    assert_eq!(result.usage.tokens_in, 120 + 900 + 80 + 900);
    assert_eq!(result.usage.tokens_out, 55);
    assert_eq!(
        (result.usage.cache_write, result.usage.cache_read),
        (900, 900)
    );
    let price = PriceTable::defaults()
        .lookup("claude-haiku-4-5")
        .cloned()
        .expect("priced");
    let expected = call_cost(
        &price,
        &Usage {
            input_tokens: 120,
            output_tokens: 35,
            cache_read_tokens: 0,
            cache_write_tokens: 900,
        },
    ) + call_cost(
        &price,
        &Usage {
            input_tokens: 80,
            output_tokens: 20,
            cache_read_tokens: 900,
            cache_write_tokens: 0,
        },
    );
    assert!((result.usage.cost_usd.expect("priced") - expected).abs() < 1e-12);

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.path, "/v1/messages");
        assert_eq!(request.header("x-api-key"), Some(KEY));
        assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(request.body["stream"], json!(true));
        // cache_control on the system prompt and on the last tool only; the tool list is the
        // same on every step, so the cached prefix holds.
        assert_eq!(
            request.body["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        let tools = request.body["tools"].as_array().expect("tools");
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["list_items", "lookup_price"]);
        assert!(tools[0].get("cache_control").is_none());
        assert_eq!(tools[1]["cache_control"], json!({"type": "ephemeral"}));
        for name in names {
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            );
        }
    }
    assert_eq!(requests[0].body["tools"], requests[1].body["tools"]);
    // The tool_result answers the tool_use by its id.
    let messages = requests[1].body["messages"].as_array().expect("messages");
    let tool_use = &messages[1]["content"][1];
    assert_eq!(tool_use["type"], "tool_use");
    assert_eq!(tool_use["id"], "toolu_01A");
    let tool_result = &messages[2]["content"][0];
    assert_eq!(tool_result["type"], "tool_result");
    assert_eq!(tool_result["tool_use_id"], tool_use["id"]);
    assert_eq!(tool_result["content"], "42");

    let logs = logs.text();
    assert!(logs.contains("llm request"), "the capture works: {logs}");
    assert!(!logs.contains(KEY), "the key leaked into the logs");
    assert!(!serde_json::to_string(&result).expect("json").contains(KEY));
}

#[tokio::test]
async fn anthropic_retries_429_500_and_529_then_succeeds() {
    let (logs, _guard) = capture_logs();
    let fake = FakeLlm::start(vec![
        Reply::Status(
            429,
            vec![("retry-after", "1")],
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
        ),
        Reply::Status(
            500,
            vec![],
            json!({"type": "error", "error": {"type": "api_error",
            "message": "internal"}}),
        ),
        Reply::Status(
            529,
            vec![],
            json!({"type": "error", "error": {"type": "overloaded_error",
            "message": "Overloaded"}}),
        ),
        Reply::Sse(anthropic_final_turn(FINAL)),
    ])
    .await;
    let backend =
        Arc::new(AnthropicBackend::new("claude-haiku-4-5", http(&fake, "/v1")).expect("backend"));
    let result = drive(backend, shop()).await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    assert_eq!(fake.requests().len(), 4);
    assert_eq!(
        fake.requests()[3].path,
        "/v1/messages",
        "a base ending in /v1 is not doubled"
    );
    assert_eq!(result.usage.llm_calls, 1, "failed attempts are not billed");
    assert!(!logs.text().contains(KEY));
}

#[tokio::test]
async fn anthropic_failures_end_the_run_with_the_reason_and_the_tokens_billed() {
    let start = named_event(
        "message_start",
        json!({"type": "message_start",
        "message": {"usage": {"input_tokens": 500, "output_tokens": 1}}}),
    );
    let cases: Vec<(Reply, &str, usize)> = vec![
        // An error event inside the stream.
        (
            Reply::Sse(vec![
                start.clone(),
                named_event(
                    "error",
                    json!({"type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"}}),
                ),
            ]),
            "overloaded_error",
            1,
        ),
        // Data that is not JSON.
        (
            Reply::Sse(vec![
                start.clone(),
                "event: content_block_start\ndata: {not json\n\n".into(),
            ]),
            "malformed",
            1,
        ),
        // The connection cut mid-stream.
        (
            Reply::SseCut(vec![
                start.clone(),
                named_event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}}),
                ),
            ]),
            "ended before the answer was complete",
            1,
        ),
        // A permanent error is not retried.
        (
            Reply::Status(
                400,
                vec![],
                json!({"type": "error", "error": {
            "type": "invalid_request_error", "message": "max_tokens: too large"}}),
            ),
            "HTTP 400: max_tokens: too large",
            0,
        ),
    ];
    for (reply, expected, billed_calls) in cases {
        let fake = FakeLlm::start(vec![reply]).await;
        let backend =
            Arc::new(AnthropicBackend::new("claude-haiku-4-5", http(&fake, "")).expect("backend"));
        let result = drive(backend, shop()).await;
        assert_eq!(result.status, RunStatus::Failed, "{expected}: {result:#?}");
        let error = result.error.as_deref().expect("error");
        assert!(
            error.contains(expected),
            "{error} should contain {expected}"
        );
        assert!(!error.contains(KEY));
        assert_eq!(fake.requests().len(), 1, "{expected}: not retried");
        assert_eq!(result.usage.llm_calls, billed_calls as u32, "{expected}");
        if billed_calls == 1 {
            assert_eq!(
                result.usage.tokens_in, 500,
                "tokens reported before the failure are billed"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// OpenAI-compatible.

fn chunk(delta: Value, finish: Value) -> String {
    data_event(
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
        "model": "gpt-4.1-mini", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
    )
}

fn openai_tool_turn() -> Vec<String> {
    vec![
        chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
            "id": "call_Xy1", "type": "function",
            "function": {"name": "lookup_price", "arguments": ""}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"id\""}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": ": \"7\"}"}}]}),
            Value::Null,
        ),
        // finish_reason says "stop" although a tool call came: the content decides.
        chunk(json!({}), json!("stop")),
        data_event(
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": 300, "completion_tokens": 18, "total_tokens": 318,
                      "prompt_tokens_details": {"cached_tokens": 256}}}),
        ),
        "data: [DONE]\n\n".into(),
    ]
}

fn openai_final_turn() -> Vec<String> {
    let (head, tail) = FINAL.split_at(20);
    vec![
        chunk(json!({"role": "assistant", "content": head}), Value::Null),
        ": keep-alive\n\n".into(),
        chunk(json!({"content": tail}), Value::Null),
        chunk(json!({}), json!("stop")),
        data_event(json!({"choices": [], "usage": {"prompt_tokens": 340,
            "completion_tokens": 12}})),
        "data: [DONE]\n\n".into(),
    ]
}

#[tokio::test]
async fn openai_tool_calls_in_fragments_then_answer() {
    let (logs, _guard) = capture_logs();
    let fake = FakeLlm::start(vec![
        Reply::Sse(openai_tool_turn()),
        Reply::Sse(openai_final_turn()),
    ])
    .await;
    let backend =
        Arc::new(OpenAiBackend::new("gpt-4.1-mini", http(&fake, "/v1")).expect("backend"));
    let host = shop();
    let result = drive(backend, host.clone()).await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    assert_eq!(host.calls()[0].arguments, json!({"id": "7"}));
    assert_eq!(result.usage.tokens_in, 640);
    assert_eq!(result.usage.cache_read, 256);
    assert_eq!(result.usage.tokens_out, 30);

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert_eq!(
            request.body["stream_options"],
            json!({"include_usage": true})
        );
        assert_eq!(request.body["max_tokens"], json!(1024));
        let names: Vec<&str> = request.body["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert_eq!(names, ["list_items", "lookup_price"]);
    }
    let messages = requests[1].body["messages"].as_array().expect("messages");
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_Xy1");
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"],
        json!("{\"id\":\"7\"}")
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_Xy1", "content": "42"})
    );
    assert!(!logs.text().contains(KEY));
}

#[tokio::test]
async fn openai_compatible_servers_with_object_arguments_no_ids_and_no_done() {
    // As some local servers stream: arguments as an object, no id, no [DONE], usage inline.
    let tool_turn = vec![
        chunk(
            json!({"tool_calls": [{"function": {"name": "lookup_price",
            "arguments": {"id": "7"}}}]}),
            json!("tool_calls"),
        ),
        data_event(
            json!({"choices": null, "usage": {"prompt_tokens": 50, "completion_tokens": 5}}),
        ),
    ];
    let final_turn = vec![chunk(json!({"content": FINAL}), json!("stop"))];
    let fake = FakeLlm::start(vec![
        Reply::Status(
            503,
            vec![("retry-after-ms", "20")],
            json!({"error": {"message": "loading model"}}),
        ),
        Reply::Sse(tool_turn),
        Reply::Sse(final_turn),
    ])
    .await;
    let mut settings = http(&fake, "/v1");
    settings.api_key = None;
    let backend = Arc::new(OpenAiBackend::new("llama3.2", settings).expect("backend"));
    let host = shop();
    let mut run_settings = crate::common::settings(TASK);
    run_settings.cost_ceiling_usd = None; // an unpriced local model
    let result = run(
        run_settings,
        host.clone(),
        backend,
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    assert_eq!(result.usage.cost_usd, None, "no price, no cost");
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].header("authorization"), None);
    // The synthesised id is used for the call and its result.
    let messages = requests[2].body["messages"].as_array().expect("messages");
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_1_0");
    assert_eq!(messages[3]["tool_call_id"], "call_1_0");
}

#[tokio::test]
async fn openai_failures_end_the_run_with_the_reason() {
    let cases: Vec<(Reply, &str)> = vec![
        (
            Reply::SseCut(vec![chunk(json!({"content": "Hel"}), Value::Null)]),
            "ended before the answer was complete",
        ),
        (
            Reply::Sse(vec!["data: {\"choices\": [\n\n".into()]),
            "malformed",
        ),
        (
            Reply::Sse(vec![data_event(json!({"error": {"type": "server_error",
            "message": "model crashed"}}))]),
            "model crashed",
        ),
        (
            Reply::Status(
                401,
                vec![],
                json!({"error": {"message": "Incorrect API key provided"}}),
            ),
            "HTTP 401",
        ),
    ];
    for (reply, expected) in cases {
        let fake = FakeLlm::start(vec![reply]).await;
        let backend =
            Arc::new(OpenAiBackend::new("gpt-4.1-mini", http(&fake, "/v1")).expect("backend"));
        let result = drive(backend, shop()).await;
        assert_eq!(result.status, RunStatus::Failed, "{expected}");
        let error = result.error.expect("error");
        assert!(
            error.contains(expected),
            "{error} should contain {expected}"
        );
        assert!(!error.contains(KEY));
    }
}

#[tokio::test]
async fn a_server_that_never_answers_is_refused_without_hanging_the_test() {
    // Nothing listens on this port once the fake is dropped: connection refused, retried, then
    // reported with the endpoint (and never the key).
    let fake = FakeLlm::start(vec![]).await;
    let url = fake.url();
    drop(fake);
    let backend = Arc::new(
        AnthropicBackend::new(
            "claude-haiku-4-5",
            HttpSettings {
                base_url: url.clone(),
                api_key: Some(ApiKey::new(KEY)),
                retry: RetryPolicy {
                    max_retries: 1,
                    base_delay: Duration::from_millis(1),
                    max_delay: Duration::from_millis(5),
                },
            },
        )
        .expect("backend"),
    );
    let result = drive(backend, shop()).await;
    assert_eq!(result.status, RunStatus::Failed);
    let error = result.error.expect("error");
    assert!(
        error.contains("cannot reach the anthropic API") && error.contains(&url),
        "{error}"
    );
}

#[tokio::test]
async fn openai_malformed_arguments_go_back_as_a_tool_error_and_a_refusal_fails_the_run() {
    // A model that writes broken JSON as arguments: the call is answered with a tool error on
    // the next request (the arguments echoed as written), and the model's answer completes.
    let broken = vec![
        chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
            "id": "call_Bad", "type": "function",
            "function": {"name": "lookup_price", "arguments": "{\"id\": 7,"}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        "data: [DONE]\n\n".into(),
    ];
    let fake = FakeLlm::start(vec![Reply::Sse(broken), Reply::Sse(openai_final_turn())]).await;
    let backend =
        Arc::new(OpenAiBackend::new("gpt-4.1-mini", http(&fake, "/v1")).expect("backend"));
    let host = shop();
    let result = drive(backend, host.clone()).await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    assert!(
        host.calls().is_empty(),
        "the broken call never reached the host"
    );
    assert!(result.tool_calls[0].is_error);
    let requests = fake.requests();
    let messages = requests[1].body["messages"].as_array().expect("messages");
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"],
        json!("{\"id\": 7,")
    );
    assert_eq!(messages[3]["tool_call_id"], "call_Bad");
    let content = messages[3]["content"].as_str().expect("content");
    assert!(content.contains("not valid JSON"), "{content}");

    // A structured refusal (`delta.refusal`) fails the run with the model's reason.
    let refusal = vec![
        chunk(
            json!({"role": "assistant", "content": null, "refusal": "I can't help with that."}),
            Value::Null,
        ),
        chunk(json!({}), json!("stop")),
        "data: [DONE]\n\n".into(),
    ];
    let fake = FakeLlm::start(vec![Reply::Sse(refusal)]).await;
    let backend =
        Arc::new(OpenAiBackend::new("gpt-4.1-mini", http(&fake, "/v1")).expect("backend"));
    let result = drive(backend, shop()).await;
    assert_eq!(result.status, RunStatus::Failed);
    let error = result.error.as_deref().expect("error");
    assert!(
        error.contains("declined") && error.contains("I can't help with that."),
        "{error}"
    );
}

#[tokio::test]
async fn anthropic_malformed_input_goes_back_as_a_tool_error_with_an_empty_input() {
    let start = named_event(
        "message_start",
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 50, "output_tokens": 1}}}),
    );
    let broken = vec![
        start,
        named_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block":
                {"type": "tool_use", "id": "toolu_bad", "name": "lookup_price", "input": {}}}),
        ),
        named_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "input_json_delta", "partial_json": "{\"id\": "}}),
        ),
        named_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        named_event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        ),
        named_event("message_stop", json!({"type": "message_stop"})),
    ];
    let fake = FakeLlm::start(vec![
        Reply::Sse(broken),
        Reply::Sse(anthropic_final_turn(FINAL)),
    ])
    .await;
    let backend =
        Arc::new(AnthropicBackend::new("claude-haiku-4-5", http(&fake, "")).expect("backend"));
    let host = shop();
    let result = drive(backend, host.clone()).await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    assert!(host.calls().is_empty());
    let requests = fake.requests();
    let messages = requests[1].body["messages"].as_array().expect("messages");
    assert_eq!(messages[1]["content"][0]["input"], json!({}));
    let result_block = &messages[2]["content"][0];
    assert_eq!(result_block["tool_use_id"], "toolu_bad");
    assert_eq!(result_block["is_error"], json!(true));
}

// ---------------------------------------------------------------------------------------------
// Defects of issue 24: a key echoed back, billed failed calls, an answer cut at max_tokens.

/// Runs with a channel sink; the result and every event.
async fn drive_with_events(
    backend: Arc<dyn LlmBackend>,
    host: Arc<MemoryHost>,
) -> (RunAgentResult, Vec<AgentEventKind>) {
    let mut settings = settings(TASK);
    settings.cost_ceiling_usd = Some(1.0);
    settings.price = PriceTable::defaults().lookup(backend.model()).cloned();
    let (sink, mut receiver) = ChannelSink::new(256);
    let result = run(
        settings,
        host,
        backend,
        Arc::new(sink),
        CancellationToken::new(),
    )
    .await;
    let mut events = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        events.push(event.kind);
    }
    (result, events)
}

#[tokio::test]
async fn a_key_the_provider_echoes_is_in_no_error_event_or_result_of_either_backend() {
    let echo = |kind: &str| format!("{kind}: Incorrect API key provided: {KEY}; check it");
    let anthropic_replies = vec![
        Reply::Status(
            401,
            vec![],
            json!({"type": "error", "error": {"type": "authentication_error", "message": echo("invalid x-api-key")}}),
        ),
        Reply::Sse(vec![named_event(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": echo("overloaded")}}),
        )]),
    ];
    let openai_replies = vec![
        Reply::Status(
            401,
            vec![],
            json!({"error": {"message": echo("invalid_api_key")}}),
        ),
        Reply::Sse(vec![data_event(
            json!({"error": {"type": "server_error", "message": echo("server_error")}}),
        )]),
    ];
    let (logs, _guard) = capture_logs();
    for reply in anthropic_replies.into_iter().chain(openai_replies) {
        let openai = match &reply {
            Reply::Status(_, _, body) => body.get("type").is_none(),
            Reply::Sse(chunks) => chunks[0].starts_with("data:"),
            Reply::SseCut(_) => false,
        };
        let fake = FakeLlm::start(vec![reply]).await;
        let backend: Arc<dyn LlmBackend> = if openai {
            Arc::new(OpenAiBackend::new("gpt-4.1-mini", http(&fake, "/v1")).expect("backend"))
        } else {
            Arc::new(AnthropicBackend::new("claude-haiku-4-5", http(&fake, "")).expect("backend"))
        };
        let (result, events) = drive_with_events(backend, shop()).await;
        assert_eq!(result.status, RunStatus::Failed, "{result:#?}");
        let error = result.error.clone().expect("an error");
        assert!(!error.contains(KEY), "the key in the result: {error}");
        assert!(error.contains("[redacted]"), "{error}");
        let every_event = serde_json::to_string(&events).expect("events serialize");
        assert!(
            !every_event.contains(KEY),
            "the key in an event: {every_event}"
        );
        assert!(
            events.iter().any(
                |e| matches!(e, AgentEventKind::Error { message, .. } if message.contains("[redacted]"))
            ),
            "{events:?}"
        );
    }
    assert!(!logs.text().contains(KEY), "the key in a log line");
}

#[tokio::test]
async fn a_billed_call_that_fails_gets_its_llm_call_event() {
    let start = named_event(
        "message_start",
        json!({"type": "message_start",
        "message": {"usage": {"input_tokens": 500, "output_tokens": 1}}}),
    );
    let fake = FakeLlm::start(vec![Reply::SseCut(vec![start])]).await;
    let backend =
        Arc::new(AnthropicBackend::new("claude-haiku-4-5", http(&fake, "")).expect("backend"));
    let (result, events) = drive_with_events(backend, shop()).await;
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(result.usage.llm_calls, 1);
    let calls: Vec<&AgentEventKind> = events
        .iter()
        .filter(|e| matches!(e, AgentEventKind::LlmCall { .. }))
        .collect();
    assert_eq!(calls.len(), 1, "{events:?}");
    let AgentEventKind::LlmCall {
        usage,
        error,
        stop_reason,
        ..
    } = calls[0]
    else {
        unreachable!()
    };
    assert_eq!(usage.tokens_in, 500);
    assert_eq!(usage.cost_usd, result.usage.cost_usd);
    assert_eq!(stop_reason, "error");
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("ended before the answer was complete")),
        "{error:?}"
    );
    // The event's figures add up to the run's: nothing billed is missing from the stream.
    let Some(AgentEventKind::Final { usage: total, .. }) = events.last() else {
        panic!("a final event last: {events:?}")
    };
    assert_eq!(total.tokens_in, usage.tokens_in);
}

#[tokio::test]
async fn an_answer_cut_at_max_tokens_says_max_tokens_not_broken_json() {
    let (head, _) = FINAL.split_at(20);
    let fake = FakeLlm::start(vec![Reply::Sse(vec![
        chunk(json!({"role": "assistant", "content": head}), Value::Null),
        chunk(json!({}), json!("length")),
        data_event(
            json!({"choices": [], "usage": {"prompt_tokens": 340, "completion_tokens": 1024}}),
        ),
        "data: [DONE]\n\n".into(),
    ])])
    .await;
    let backend =
        Arc::new(OpenAiBackend::new("gpt-4.1-mini", http(&fake, "/v1")).expect("backend"));
    let result = drive(backend, shop()).await;
    assert_eq!(result.status, RunStatus::Failed);
    let error = result.error.expect("error");
    assert!(error.contains("max_tokens"), "{error}");
    assert!(error.contains("agent.maxOutputTokens"), "{error}");
    assert!(!error.contains("not a JSON object"), "{error}");
    assert_eq!(
        fake.requests().len(),
        1,
        "no corrective turn for a cut answer"
    );
}
