//! Sampling through the agent backend, against the real server-everything and the scripted
//! OpenAI-compatible server on loopback: `trigger-sampling-request` gets the scripted completion
//! when the server has `allowSampling`; the backend receives the server's prompt, system prompt,
//! temperature and the capped `maxTokens`; the bill reaches `health` and the trace line of the
//! call that caused it; a failing backend is a
//! reason, not a hang; without `allowSampling` the server is not offered sampling at all; with it
//! but without a backend the request is declined with a reason; and the API key never appears in
//! the daemon's log or in an error.

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::ErrorObject;
use tool_cli_tests::scripted_llm::{LlmReply, ScriptedLlm, agent_config, final_turn};
use tool_cli_tests::{Daemon, DaemonOptions, eventually, everything_stdio, text_content};

const SCRIPTED_KEY: &str = "sk-sampling-e2e-8d2b71";

/// server-everything (with `extra` fields in its entry) and, when given, the scripted backend
/// with `samplingMaxTokens` 64; debug logging, so a key in any log line would show.
fn daemon_with(extra: Value, llm: Option<&ScriptedLlm>) -> Daemon {
    let mut entry = everything_stdio();
    for (key, value) in extra.as_object().unwrap() {
        entry[key] = value.clone();
    }
    let mut config = json!({"mcpServers": {"everything": entry}});
    if let Some(llm) = llm {
        let mut agent = agent_config(llm, 10.0);
        agent["samplingMaxTokens"] = json!(64);
        config["agent"] = agent;
    }
    Daemon::start_with(
        config,
        DaemonOptions {
            env: vec![
                ("SCRIPTED_LLM_KEY".into(), SCRIPTED_KEY.into()),
                ("RUST_LOG".into(), "debug".into()),
            ],
            ..DaemonOptions::default()
        },
    )
}

/// The tool's text, or the error's message: a server may report a failed sampling request
/// either way.
fn outcome_text(outcome: Result<Value, ErrorObject>) -> String {
    match outcome {
        Ok(result) => text_content(&result),
        Err(error) => error.message,
    }
}

fn trigger(daemon: &Daemon, prompt: &str) -> Result<Value, ErrorObject> {
    daemon.rpc(
        "callTool",
        Some(
            json!({"server": "everything", "tool": "trigger-sampling-request",
                    "arguments": {"prompt": prompt, "maxTokens": 500}}),
        ),
    )
}

#[test]
fn a_sampling_request_is_answered_by_the_agent_backend_and_billed() {
    // One scripted answer; a second request gets HTTP 500 from the script's end.
    let llm = ScriptedLlm::start(vec![LlmReply::Stream(final_turn(
        "the scripted completion",
        40,
        8,
    ))]);
    let daemon = daemon_with(json!({"allowSampling": true}), Some(&llm));

    let result = trigger(&daemon, "hello sampler").expect("the tool answers");
    let text = text_content(&result);
    assert_ne!(result["isError"], true, "{result:#}");
    assert!(text.contains("the scripted completion"), "{text}");
    assert!(text.contains("\"model\": \"scripted-model\""), "{text}");
    assert!(text.contains("\"stopReason\": \"endTurn\""), "{text}");
    assert!(text.contains("\"role\": \"assistant\""), "{text}");

    // The backend received the server's prompt, system prompt and temperature, and maxTokens
    // lowered from the server's 500 to the configured cap.
    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let body = &requests[0];
    assert_eq!(body["model"], "scripted-model");
    assert_eq!(body["max_tokens"], 64);
    assert_eq!(body["temperature"], 0.7);
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You are a helpful test server."})
    );
    assert_eq!(body["messages"][1]["role"], "user");
    assert!(
        body["messages"][1]["content"]
            .as_str()
            .is_some_and(|content| content.contains("hello sampler")),
        "{body:#}"
    );
    assert!(body.get("tools").is_none(), "{body:#}");

    // The bill: 40 + 8 tokens at $10 per million.
    let health = daemon.call("health", Value::Null);
    let sampling = &health["servers"][0]["sampling"];
    assert_eq!(sampling["answered"], 1, "{health:#}");
    assert_eq!(sampling["declined"], 0, "{health:#}");
    assert_eq!(sampling["inputTokens"], 40, "{health:#}");
    assert_eq!(sampling["outputTokens"], 8, "{health:#}");
    let cost = sampling["costUsd"].as_f64().expect("a cost");
    assert!((cost - 48.0 * 10.0 / 1e6).abs() < 1e-12, "{cost}");

    // The call that caused the request carries its tokens and cost in its trace line.
    let report = daemon.call("tracesReport", json!({"by": "tool"}));
    let group = report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|group| group["key"] == "everything/trigger-sampling-request")
        .unwrap_or_else(|| panic!("no trace of the call: {report:#}"));
    assert_eq!(group["tokensIn"], 40, "{group:#}");
    assert_eq!(group["tokensOut"], 8, "{group:#}");
    let traced = group["costUsd"].as_f64().expect("a traced cost");
    assert!((traced - 48.0 * 10.0 / 1e6).abs() < 1e-9, "{traced}");

    // The backend failing is a reason the server is told, not a hang.
    let failed = outcome_text(trigger(&daemon, "again"));
    assert!(
        failed.contains("sampling failed in the tool-cli daemon") && failed.contains("HTTP 500"),
        "{failed}"
    );
    assert!(!failed.contains(SCRIPTED_KEY), "{failed}");
    let health = daemon.call("health", Value::Null);
    assert_eq!(
        health["servers"][0]["sampling"]["declined"], 1,
        "{health:#}"
    );

    assert!(
        eventually(Duration::from_secs(10), || daemon
            .stderr()
            .contains("sampling request declined")),
        "{}",
        daemon.stderr()
    );
    let log = daemon.stderr();
    assert!(log.contains("sampling request answered"), "{log}");
    assert!(
        !log.contains(SCRIPTED_KEY),
        "the API key is in the daemon's log"
    );
}

#[test]
fn without_allow_sampling_the_server_is_not_offered_sampling() {
    let llm = ScriptedLlm::start(vec![LlmReply::Stream(final_turn("never sent", 1, 1))]);
    let daemon = daemon_with(json!({}), Some(&llm));
    // server-everything registers its sampling tool only for a client that offers sampling.
    let tools = daemon.call("listTools", json!({"server": "everything"}));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"echo"), "{names:?}");
    assert!(!names.contains(&"trigger-sampling-request"), "{names:?}");
    let refused = outcome_text(trigger(&daemon, "hello"));
    assert!(refused.contains("trigger-sampling-request"), "{refused}");
    assert!(llm.requests().is_empty(), "the backend was asked");
    let health = daemon.call("health", Value::Null);
    assert!(health["servers"][0].get("sampling").is_none(), "{health:#}");
    assert!(!daemon.stderr().contains(SCRIPTED_KEY));
}

#[test]
fn allowed_without_a_backend_is_declined_with_a_reason() {
    let daemon = daemon_with(json!({"allowSampling": true}), None);
    let declined = outcome_text(trigger(&daemon, "hello"));
    assert!(
        declined.contains("may sample, but no LLM backend is configured")
            && declined.contains("agent.backend"),
        "{declined}"
    );
    let health = daemon.call("health", Value::Null);
    assert_eq!(
        health["servers"][0]["sampling"]["declined"], 1,
        "{health:#}"
    );
    assert_eq!(
        health["servers"][0]["sampling"]["answered"], 0,
        "{health:#}"
    );
}
