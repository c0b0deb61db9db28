use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Value, json};

use super::*;
use crate::context::{SpanIds, extract_from_headers};
use crate::sampler::Sampler;

const CALLER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn timing() -> Timing {
    Timing {
        start: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        duration: Duration::from_millis(12),
    }
}

fn text<'a>(span: &'a SpanRecord, key: &str) -> Option<&'a str> {
    span.attribute(key).and_then(AttributeValue::as_str)
}

fn upstream<'a>(tool: &'a str) -> Upstream<'a> {
    Upstream {
        method: "tools/call",
        target: Target::Tool(tool),
        request_id: Some("7"),
        protocol_version: Some("2025-06-18"),
        mcp_session_id: None,
        transport: Transport::Stdio,
        server_address: None,
        server_port: None,
    }
}

fn hiding_secrets() -> ContentPolicy {
    ContentPolicy {
        capture: true,
        redactor: Arc::new(|value: &mut Value| {
            if let Value::Object(members) = value
                && members.contains_key("password")
            {
                members.insert("password".to_owned(), json!("[REDACTED]"));
            }
            if let Value::String(text) = value {
                *text = text.replace("sk-secret", "[REDACTED]");
            }
        }),
    }
}

#[test]
fn call_tool_is_a_server_span_named_as_an_mcp_server_span_under_the_caller() {
    let caller = extract_from_headers([CALLER], []).parent.unwrap();
    let ids = SpanIds::new(Some(&caller), &Sampler::default());
    let span = daemon_request(
        &ids,
        &DaemonRequest {
            method: "callTool",
            request_id: Some("42"),
            target: Target::Tool("get-weather"),
            listener: Listener::Tcp,
            outcome: Outcome::Ok,
            timing: timing(),
            extras: CallExtras {
                server: Some("weather"),
                session_id: Some("s-1"),
                selection_rule: Some("named"),
                attempts: Some(2),
                cost_usd: Some(0.25),
                ..CallExtras::default()
            },
            content: Content::default(),
        },
        &ContentPolicy::default(),
    );
    assert_eq!(span.name, "tools/call get-weather");
    assert_eq!(span.kind, SpanKind::Server);
    assert_eq!(span.trace_id, caller.trace_id);
    assert_eq!(span.parent_span_id, Some(caller.span_id));
    assert_eq!(span.status, Status::Unset);
    assert_eq!(text(&span, "rpc.system.name"), Some("jsonrpc"));
    assert_eq!(text(&span, "rpc.method"), Some("callTool"));
    assert_eq!(text(&span, "mcp.method.name"), Some("tools/call"));
    assert_eq!(text(&span, "gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(text(&span, "gen_ai.tool.name"), Some("get-weather"));
    assert_eq!(text(&span, "jsonrpc.request.id"), Some("42"));
    assert_eq!(text(&span, "network.transport"), Some("tcp"));
    assert_eq!(text(&span, "tool_cli.server"), Some("weather"));
    assert_eq!(text(&span, "tool_cli.session.id"), Some("s-1"));
    assert_eq!(text(&span, "tool_cli.selection.rule"), Some("named"));
    assert_eq!(
        span.attribute("tool_cli.attempts"),
        Some(&AttributeValue::Int(2))
    );
    assert_eq!(
        span.attribute("tool_cli.cost_usd"),
        Some(&AttributeValue::Double(0.25))
    );
    assert_eq!(span.attribute("error.type"), None);
    assert_eq!(span.end_unix_nanos - span.start_unix_nanos, 12_000_000);
}

#[test]
fn a_method_without_an_mcp_equivalent_is_named_by_the_method() {
    let ids = SpanIds::new(None, &Sampler::default());
    let span = daemon_request(
        &ids,
        &DaemonRequest {
            method: "runAgent",
            request_id: None,
            target: Target::None,
            listener: Listener::Unix,
            outcome: Outcome::RpcError {
                code: -32001,
                message: "budget exceeded",
                kind: Some("budgetExceeded"),
            },
            timing: timing(),
            extras: CallExtras::default(),
            content: Content::default(),
        },
        &ContentPolicy::default(),
    );
    assert_eq!(span.name, "runAgent");
    assert_eq!(span.parent_span_id, None);
    assert_eq!(span.attribute("mcp.method.name"), None);
    assert_eq!(span.attribute("jsonrpc.request.id"), None);
    assert_eq!(text(&span, "network.transport"), Some("unix"));
    assert_eq!(text(&span, "error.type"), Some("-32001"));
    assert_eq!(text(&span, "rpc.response.status_code"), Some("-32001"));
    assert_eq!(text(&span, "tool_cli.error.kind"), Some("budgetExceeded"));
    assert_eq!(span.status, Status::Error("budget exceeded".to_owned()));
}

#[test]
fn an_upstream_call_is_a_client_span_named_method_and_target() {
    let server = SpanIds::new(None, &Sampler::default());
    let ids = server.child();
    let span = mcp_client(
        &ids,
        &McpClientCall {
            upstream: Upstream {
                transport: Transport::Http,
                mcp_session_id: Some("abc"),
                server_address: Some("mcp.example"),
                server_port: Some(443),
                ..upstream("search")
            },
            outcome: Outcome::ToolError,
            timing: timing(),
            extras: CallExtras::default(),
            content: Content::default(),
        },
        &ContentPolicy::default(),
    );
    assert_eq!(span.name, "tools/call search");
    assert_eq!(span.kind, SpanKind::Client);
    assert_eq!(span.parent_span_id, Some(server.context.span_id));
    assert_eq!(text(&span, "network.transport"), Some("tcp"));
    assert_eq!(text(&span, "network.protocol.name"), Some("http"));
    assert_eq!(text(&span, "mcp.session.id"), Some("abc"));
    assert_eq!(text(&span, "mcp.protocol.version"), Some("2025-06-18"));
    assert_eq!(text(&span, "server.address"), Some("mcp.example"));
    assert_eq!(
        span.attribute("server.port"),
        Some(&AttributeValue::Int(443))
    );
    assert_eq!(text(&span, "error.type"), Some("tool_error"));
    assert!(matches!(span.status, Status::Error(_)));
}

#[test]
fn stdio_is_a_pipe_and_a_resource_uri_stays_out_of_the_name() {
    let ids = SpanIds::new(None, &Sampler::default());
    let span = mcp_client(
        &ids,
        &McpClientCall {
            upstream: Upstream {
                method: "resources/read",
                target: Target::Resource("file:///secret/report.pdf"),
                ..upstream("unused")
            },
            outcome: Outcome::Failed {
                error_type: "timeout",
                message: "no answer within 30 s",
            },
            timing: timing(),
            extras: CallExtras::default(),
            content: Content::default(),
        },
        &ContentPolicy::default(),
    );
    assert_eq!(span.name, "resources/read");
    assert_eq!(text(&span, "network.transport"), Some("pipe"));
    assert_eq!(span.attribute("network.protocol.name"), None);
    assert_eq!(
        text(&span, "mcp.resource.uri"),
        Some("file:///secret/report.pdf")
    );
    assert_eq!(text(&span, "error.type"), Some("timeout"));
    assert_eq!(span.attribute("gen_ai.operation.name"), None);
}

#[test]
fn a_prompt_names_the_span_and_sets_the_prompt_attribute() {
    let ids = SpanIds::new(None, &Sampler::default());
    let span = mcp_client(
        &ids,
        &McpClientCall {
            upstream: Upstream {
                method: "prompts/get",
                target: Target::Prompt("analyze-code"),
                ..upstream("unused")
            },
            outcome: Outcome::Ok,
            timing: timing(),
            extras: CallExtras::default(),
            content: Content::default(),
        },
        &ContentPolicy::default(),
    );
    assert_eq!(span.name, "prompts/get analyze-code");
    assert_eq!(text(&span, "gen_ai.prompt.name"), Some("analyze-code"));
}

#[test]
fn an_agents_tool_call_is_one_execute_tool_span_carrying_the_mcp_facts() {
    let run = SpanIds::new(None, &Sampler::default());
    let ids = run.child();
    let span = tool_execution(
        &ids,
        &ToolExecution {
            tool: "query",
            tool_call_id: Some("call_1"),
            upstream: Some(upstream("query")),
            outcome: Outcome::Ok,
            timing: timing(),
            extras: CallExtras {
                server: Some("demo"),
                ..CallExtras::default()
            },
            content: Content::default(),
        },
        &ContentPolicy::default(),
    );
    assert_eq!(span.name, "execute_tool query");
    assert_eq!(span.kind, SpanKind::Internal);
    assert_eq!(span.parent_span_id, Some(run.context.span_id));
    assert_eq!(text(&span, "gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(text(&span, "gen_ai.tool.type"), Some("function"));
    assert_eq!(text(&span, "gen_ai.tool.call.id"), Some("call_1"));
    assert_eq!(text(&span, "mcp.method.name"), Some("tools/call"));
    assert_eq!(text(&span, "jsonrpc.request.id"), Some("7"));
    assert_eq!(text(&span, "network.transport"), Some("pipe"));
    let tool_names = span
        .attributes
        .iter()
        .filter(|attribute| attribute.key == "gen_ai.tool.name")
        .count();
    assert_eq!(tool_names, 1, "the tool is named once");
}

#[test]
fn content_is_captured_only_when_asked_and_always_redacted() {
    let ids = SpanIds::new(None, &Sampler::default());
    let arguments = json!({"user": "ann", "password": "hunter2"});
    let result = json!({"content": [{"type": "text", "text": "ok"}]});
    let call = |outcome| McpClientCall {
        upstream: upstream("login"),
        outcome,
        timing: timing(),
        extras: CallExtras::default(),
        content: Content {
            arguments: Some(&arguments),
            result: Some(&result),
        },
    };
    let off = mcp_client(&ids, &call(Outcome::Ok), &ContentPolicy::default());
    assert_eq!(off.attribute("gen_ai.tool.call.arguments"), None);
    assert_eq!(off.attribute("gen_ai.tool.call.result"), None);

    let on = mcp_client(&ids, &call(Outcome::Ok), &hiding_secrets());
    let captured = text(&on, "gen_ai.tool.call.arguments").unwrap();
    assert!(
        captured.contains("ann") && !captured.contains("hunter2"),
        "{captured}"
    );
    assert!(text(&on, "gen_ai.tool.call.result").unwrap().contains("ok"));

    let failed = mcp_client(&ids, &call(Outcome::ToolError), &hiding_secrets());
    assert_eq!(failed.attribute("gen_ai.tool.call.result"), None);
}

#[test]
fn error_messages_on_the_status_are_redacted_even_without_capture() {
    let policy = ContentPolicy {
        capture: false,
        ..hiding_secrets()
    };
    let ids = SpanIds::new(None, &Sampler::default());
    let span = mcp_client(
        &ids,
        &McpClientCall {
            upstream: upstream("x"),
            outcome: Outcome::RpcError {
                code: -32603,
                message: "upstream said: invalid key sk-secret",
                kind: None,
            },
            timing: timing(),
            extras: CallExtras::default(),
            content: Content::default(),
        },
        &policy,
    );
    assert_eq!(
        span.status,
        Status::Error("upstream said: invalid key [REDACTED]".to_owned())
    );
}

#[test]
fn an_agent_run_and_its_model_calls_follow_the_genai_conventions() {
    let server = SpanIds::new(None, &Sampler::default());
    let run_ids = server.child();
    let run = agent_run(
        &run_ids,
        &AgentRun {
            agent_name: Some("tool-cli"),
            provider: "openai",
            request_model: Some("gpt-4o"),
            conversation_id: Some("session-9"),
            run_id: Some("run-3"),
            usage: TokenUsage {
                input: Some(1200),
                output: Some(80),
                cache_read: Some(1000),
                cache_creation: Some(0),
            },
            tool_calls: Some(3),
            cost_usd: Some(0.0123),
            outcome: Outcome::Ok,
            timing: timing(),
        },
        &ContentPolicy::default(),
    );
    assert_eq!(run.name, "invoke_agent tool-cli");
    assert_eq!(run.kind, SpanKind::Internal);
    assert_eq!(text(&run, "gen_ai.operation.name"), Some("invoke_agent"));
    assert_eq!(text(&run, "gen_ai.conversation.id"), Some("session-9"));
    assert_eq!(
        run.attribute("gen_ai.usage.cache_read.input_tokens"),
        Some(&AttributeValue::Int(1000))
    );
    assert_eq!(
        run.attribute("tool_cli.tool_calls"),
        Some(&AttributeValue::Int(3))
    );

    let chat_ids = run_ids.child();
    let reasons = ["tool_calls"];
    let call = |in_process| ChatCall {
        provider: "openai",
        request_model: "gpt-4o",
        response_model: Some("gpt-4o-2024-08-06"),
        response_id: Some("chatcmpl-1"),
        finish_reasons: &reasons,
        usage: TokenUsage {
            input: Some(400),
            output: Some(20),
            cache_read: None,
            cache_creation: Some(64),
        },
        in_process,
        streaming: true,
        max_tokens: Some(1024),
        server_address: Some("api.openai.com"),
        server_port: Some(443),
        conversation_id: Some("session-9"),
        cost_usd: None,
        outcome: Outcome::Ok,
        timing: timing(),
    };
    let chat_span = chat(&chat_ids, &call(false), &ContentPolicy::default());
    assert_eq!(chat_span.name, "chat gpt-4o");
    assert_eq!(chat_span.kind, SpanKind::Client);
    assert_eq!(chat_span.parent_span_id, Some(run_ids.context.span_id));
    assert_eq!(text(&chat_span, "gen_ai.provider.name"), Some("openai"));
    assert_eq!(text(&chat_span, "gen_ai.request.model"), Some("gpt-4o"));
    assert_eq!(
        text(&chat_span, "gen_ai.response.model"),
        Some("gpt-4o-2024-08-06")
    );
    assert_eq!(
        chat_span.attribute("gen_ai.response.finish_reasons"),
        Some(&AttributeValue::StringArray(vec!["tool_calls".to_owned()]))
    );
    assert_eq!(
        chat_span.attribute("gen_ai.usage.input_tokens"),
        Some(&AttributeValue::Int(400))
    );
    assert_eq!(
        chat_span.attribute("gen_ai.usage.cache_creation.input_tokens"),
        Some(&AttributeValue::Int(64))
    );
    assert_eq!(
        chat_span.attribute("gen_ai.usage.cache_read.input_tokens"),
        None
    );
    assert_eq!(
        chat_span.attribute("gen_ai.request.stream"),
        Some(&AttributeValue::Bool(true))
    );
    let planner = chat(&chat_ids, &call(true), &ContentPolicy::default());
    assert_eq!(planner.kind, SpanKind::Internal);
}

#[test]
fn an_empty_error_type_becomes_other() {
    let ids = SpanIds::new(None, &Sampler::default());
    let span = agent_run(
        &ids,
        &AgentRun {
            agent_name: None,
            provider: "anthropic",
            request_model: None,
            conversation_id: None,
            run_id: None,
            usage: TokenUsage::default(),
            tool_calls: None,
            cost_usd: None,
            outcome: Outcome::Failed {
                error_type: "",
                message: "cancelled",
            },
            timing: timing(),
        },
        &ContentPolicy::default(),
    );
    assert_eq!(span.name, "invoke_agent");
    assert_eq!(text(&span, "error.type"), Some("_OTHER"));
}
