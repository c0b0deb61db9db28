//! The loop with a scripted backend: the cost ceiling, guards, timeouts, cancellation, events.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng as _};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tool_cli_agent::backend::{LlmError, LlmRequest, LlmResponse, LlmToolCall, StopReason, Turn};
use tool_cli_agent::config::Timeouts;
use tool_cli_agent::cost::Usage;
use tool_cli_agent::events::{ChannelSink, NullSink};
use tool_cli_agent::host::ToolError;
use tool_cli_agent::run::run;
use tool_cli_protocol::agent::{AgentEventKind, HaltReason, RunStatus};

use crate::common::{MemoryHost, ScriptedBackend, flat_price, settings, text_outcome, tool};

fn call(id: &str, name: &str, arguments: Value) -> LlmResponse {
    LlmResponse {
        text: String::new(),
        tool_calls: vec![LlmToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }],
        usage: Usage::default(),
        stop: StopReason::ToolUse,
        raw_stop: "tool_use".into(),
        identity: Default::default(),
    }
}

fn answer(text: &str) -> LlmResponse {
    LlmResponse {
        text: text.into(),
        tool_calls: Vec::new(),
        usage: Usage::default(),
        stop: StopReason::EndTurn,
        raw_stop: "end_turn".into(),
        identity: Default::default(),
    }
}

const GOOD: &str = r#"{"answer": "done", "keyFacts": {"n": 1}}"#;

fn host() -> Arc<MemoryHost> {
    let mut danger = tool("ops", "drop_table");
    danger.destructive = true;
    MemoryHost::new(vec![tool("db", "get_row"), danger], |call| {
        Ok(text_outcome(call, "row"))
    })
}

#[tokio::test]
async fn large_usage_halts_at_the_ceiling_without_passing_it() {
    // Every turn bills all it may: the whole input bound and the full max_tokens of output.
    let backend = ScriptedBackend::with_bound(40_000, |request, turn| {
        let mut response = call(
            &format!("c{turn}"),
            "get_row",
            json!({"id": turn.to_string()}),
        );
        response.usage = Usage {
            input_tokens: 10_000,
            cache_write_tokens: 30_000,
            cache_read_tokens: 0,
            output_tokens: request.max_output_tokens,
        };
        Ok(response)
    });
    let mut settings = settings("fetch rows until told to stop");
    settings.max_steps = 50;
    settings.cost_ceiling_usd = Some(0.25);
    settings.price = Some(flat_price(1.0)); // $1 per million tokens of any kind
    let result = run(
        settings,
        host(),
        backend.clone(),
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.status, RunStatus::Halted);
    assert_eq!(result.halt_reason, Some(HaltReason::CostCeiling));
    let spent = result.usage.cost_usd.expect("priced");
    assert!(spent <= 0.25, "spent {spent}");
    // Each call's worst case is 41,024 tokens ≈ $0.041: six fit, a seventh could not.
    assert_eq!(result.usage.llm_calls, 6);
    assert!(result.answer.contains("cost_ceiling"), "{}", result.answer);
}

#[tokio::test]
async fn the_ceiling_lowers_max_tokens_before_it_halts() {
    let backend = ScriptedBackend::with_bound(1_000, |request, turn| {
        let mut response = call(
            &format!("c{turn}"),
            "get_row",
            json!({"id": turn.to_string()}),
        );
        response.usage = Usage {
            input_tokens: 1_000,
            output_tokens: request.max_output_tokens,
            ..Usage::default()
        };
        Ok(response)
    });
    let mut settings = settings("t");
    settings.max_steps = 50;
    settings.max_output_tokens = 4_000;
    settings.cost_ceiling_usd = Some(0.012);
    settings.price = Some(flat_price(1.0));
    let result = run(
        settings,
        host(),
        backend.clone(),
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.halt_reason, Some(HaltReason::CostCeiling));
    let budgets: Vec<u64> = backend.seen().iter().map(|(max, _)| *max).collect();
    assert_eq!(budgets[0], 4_000);
    assert!(
        budgets.iter().any(|b| *b < 4_000 && *b >= 256),
        "{budgets:?}"
    );
    assert!(result.usage.cost_usd.expect("priced") <= 0.012);
}

/// Random ceilings, prices, bounds and usages (within what each call was allowed): the run's
/// total never passes its ceiling.
#[tokio::test]
async fn randomized_runs_never_pass_the_ceiling() {
    let mut rng = StdRng::seed_from_u64(20_261_123);
    for round in 0..200 {
        let bound = rng.random_range(100..60_000);
        let seed = rng.random_range(0..u64::MAX);
        let backend = ScriptedBackend::with_bound(bound, move |request, turn| {
            let mut rng = StdRng::seed_from_u64(seed ^ turn as u64);
            let input = rng.random_range(0..=bound);
            let read = rng.random_range(0..=input);
            let mut response = call(
                &format!("c{turn}"),
                "get_row",
                json!({"id": turn.to_string()}),
            );
            response.usage = Usage {
                input_tokens: input - read,
                cache_read_tokens: read,
                cache_write_tokens: 0,
                output_tokens: rng.random_range(0..=request.max_output_tokens),
            };
            Ok(response)
        });
        let ceiling = rng.random_range(0.001..0.5);
        let price = flat_price(rng.random_range(0.05..20.0));
        let mut settings = settings("t");
        settings.max_steps = 50;
        settings.max_output_tokens = rng.random_range(1..8_000);
        settings.cost_ceiling_usd = Some(ceiling);
        settings.price = Some(price.clone());
        let result = run(
            settings,
            host(),
            backend,
            Arc::new(NullSink),
            CancellationToken::new(),
        )
        .await;
        let spent = result.usage.cost_usd.expect("priced");
        assert!(spent <= ceiling, "round {round}: spent {spent} > {ceiling}");
    }
}

#[tokio::test]
async fn destructive_tools_need_confirmation_and_dry_runs_mark_every_call() {
    fn script(_: &LlmRequest<'_>, turn: usize) -> Result<LlmResponse, LlmError> {
        Ok(match turn {
            1 => call("c1", "drop_table", json!({"id": "t"})),
            _ => answer(GOOD),
        })
    }
    let host_refusing = host();
    let result = run(
        settings("drop it"),
        host_refusing.clone(),
        ScriptedBackend::new(script),
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.status, RunStatus::Completed);
    assert!(
        host_refusing.calls().is_empty(),
        "the host never saw the destructive call"
    );
    assert!(result.tool_calls[0].is_error);
    assert!(
        result.tool_calls[0]
            .result_summary
            .contains("confirmDestructive")
    );

    let confirmed = host();
    let mut with_confirmation = settings("drop it");
    with_confirmation.confirm_destructive = true;
    run(
        with_confirmation,
        confirmed.clone(),
        ScriptedBackend::new(script),
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(confirmed.calls().len(), 1);
    assert!(confirmed.calls()[0].confirm_destructive);

    let dry = host();
    let mut dry_run = settings("drop it");
    dry_run.dry_run = true;
    run(
        dry_run,
        dry.clone(),
        ScriptedBackend::new(script),
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(dry.calls().len(), 1, "a destructive tool may be dry-run");
    assert!(dry.calls().iter().all(|c| c.dry_run));
}

#[tokio::test]
async fn repeating_a_call_is_refused_then_halts_the_run() {
    let backend = ScriptedBackend::new(|_, turn| {
        Ok(call(&format!("c{turn}"), "get_row", json!({"id": "1"})))
    });
    let host = host();
    let result = run(
        settings("t"),
        host.clone(),
        backend,
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.halt_reason, Some(HaltReason::LoopDetected));
    assert_eq!(
        host.calls().len(),
        1,
        "only the first call reached the host"
    );
    assert!(result.tool_calls[1].result_summary.contains("exact call"));
}

#[tokio::test]
async fn an_invalid_answer_gets_one_corrective_turn() {
    let backend = ScriptedBackend::new(|request, turn| {
        Ok(match turn {
            1 => answer("The answer is 4."),
            _ => {
                // The corrective instruction is the last turn the model sees.
                match request.turns.last() {
                    Some(Turn::User(text)) if text.contains("JSON") => answer(GOOD),
                    other => panic!("expected the corrective turn, got {other:?}"),
                }
            }
        })
    });
    let result = run(
        settings("t"),
        host(),
        backend,
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(result.usage.llm_calls, 2);

    let stubborn = ScriptedBackend::new(|_, _| Ok(answer(r#"{"answer": 4}"#)));
    let result = run(
        settings("t"),
        host(),
        stubborn,
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.status, RunStatus::Failed);
    let error = result.error.expect("error");
    assert!(
        error.contains("answerSchema") && error.contains("keyFacts"),
        "{error}"
    );
    assert_eq!(result.usage.llm_calls, 2, "exactly one corrective turn");
}

#[tokio::test]
async fn max_steps_halts_with_what_the_model_said() {
    let backend = ScriptedBackend::new(|_, turn| {
        let mut response = call(
            &format!("c{turn}"),
            "get_row",
            json!({"id": turn.to_string()}),
        );
        response.text = format!("still looking ({turn})");
        Ok(response)
    });
    let mut settings = settings("t");
    settings.max_steps = 3;
    let result = run(
        settings,
        host(),
        backend,
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.halt_reason, Some(HaltReason::MaxSteps));
    assert_eq!(result.usage.llm_calls, 3);
    assert_eq!(result.answer, "still looking (3)");
    assert_eq!(
        result.tool_calls.iter().map(|c| c.step).collect::<Vec<_>>(),
        [1, 2, 3]
    );
}

#[tokio::test]
async fn unknown_tools_and_host_errors_are_shown_to_the_model() {
    let backend = ScriptedBackend::new(|request, turn| {
        Ok(match turn {
            1 => call("c1", "no_such_tool", json!({})),
            2 => {
                let Some(Turn::ToolResults(results)) = request.turns.last() else {
                    panic!("results expected")
                };
                assert!(results[0].is_error && results[0].content.contains("get_row"));
                call("c2", "get_row", json!({"id": "x"}))
            }
            _ => answer(GOOD),
        })
    });
    let host = MemoryHost::new(vec![tool("db", "get_row")], |_| {
        Err(ToolError::InvalidArguments(
            "/id: \"x\" is not a number; pass a number".into(),
        ))
    });
    let result = run(
        settings("t"),
        host,
        backend,
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.status, RunStatus::Completed);
    assert!(result.tool_calls[1].is_error);
    assert!(
        result.tool_calls[1]
            .result_summary
            .starts_with("invalid arguments")
    );
}

#[tokio::test]
async fn events_follow_the_run_in_order() {
    let backend = ScriptedBackend::new(|_, turn| {
        Ok(match turn {
            1 => call("c1", "get_row", json!({"id": "1"})),
            _ => answer(GOOD),
        })
    });
    let (sink, mut receiver) = ChannelSink::new(64);
    let result = run(
        settings("t"),
        host(),
        backend,
        Arc::new(sink),
        CancellationToken::new(),
    )
    .await;
    let mut kinds = Vec::new();
    let mut seqs = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        assert_eq!(event.run_id, "run_test");
        seqs.push(event.seq);
        kinds.push(
            serde_json::to_value(&event).expect("json")["type"]
                .as_str()
                .expect("type")
                .to_owned(),
        );
        if let AgentEventKind::ToolResult { selection_rule, .. } = &event.kind {
            assert_eq!(selection_rule.as_deref(), Some("named"));
        }
    }
    assert_eq!(
        kinds,
        [
            "started",
            "llm_call",
            "tool_call",
            "tool_result",
            "llm_call",
            "final"
        ]
    );
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    assert_eq!(result.events_dropped, 0);
}

#[tokio::test]
async fn a_slow_consumer_drops_events_but_never_holds_the_run() {
    let backend = ScriptedBackend::new(|_, turn| {
        Ok(match turn {
            1..=5 => call(
                &format!("c{turn}"),
                "get_row",
                json!({"id": turn.to_string()}),
            ),
            _ => answer(GOOD),
        })
    });
    let (sink, _receiver) = ChannelSink::new(2);
    let result = run(
        settings("t"),
        host(),
        backend,
        Arc::new(sink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.status, RunStatus::Completed);
    assert!(result.events_dropped > 0);
}

#[tokio::test]
async fn cancelling_halts_a_run_waiting_on_a_tool() {
    let backend = ScriptedBackend::new(|_, _| Ok(call("c1", "get_row", json!({"id": "1"}))));
    let host = MemoryHost::hanging(vec![tool("db", "get_row")]);
    let (sink, mut receiver) = ChannelSink::new(64);
    let cancel = CancellationToken::new();
    let running = tokio::spawn(run(
        settings("t"),
        host.clone(),
        backend,
        Arc::new(sink),
        cancel.clone(),
    ));
    // Wait for the call to be under way, then cancel.
    while let Some(event) = receiver.recv().await {
        if matches!(event.kind, AgentEventKind::ToolCall { .. }) {
            break;
        }
    }
    cancel.cancel();
    let result = running.await.expect("run task");
    assert_eq!(result.status, RunStatus::Halted);
    assert_eq!(result.halt_reason, Some(HaltReason::Cancelled));
    assert_eq!(host.calls().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_tool_past_the_step_timeout_is_a_tool_error_and_the_run_goes_on() {
    let backend = ScriptedBackend::new(|request, turn| {
        Ok(match turn {
            1 => call("c1", "get_row", json!({"id": "1"})),
            _ => {
                let Some(Turn::ToolResults(results)) = request.turns.last() else {
                    panic!("results expected")
                };
                assert!(
                    results[0].content.contains("step timeout"),
                    "{}",
                    results[0].content
                );
                answer(GOOD)
            }
        })
    });
    let mut settings = settings("t");
    settings.timeouts = Timeouts {
        step_ms: 1_000,
        run_ms: 60_000,
    };
    let result = run(
        settings,
        MemoryHost::hanging(vec![tool("db", "get_row")]),
        backend,
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.status, RunStatus::Completed);
    assert!(result.tool_calls[0].is_error);
}

#[tokio::test(start_paused = true)]
async fn the_whole_run_timeout_halts_a_stuck_model() {
    let mut settings = settings("t");
    settings.timeouts = Timeouts {
        step_ms: 60_000,
        run_ms: 5_000,
    };
    let started = tokio::time::Instant::now();
    let result = run(
        settings,
        host(),
        ScriptedBackend::hanging(),
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.halt_reason, Some(HaltReason::Timeout));
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(5),
        "paused clock: exactly the run limit"
    );
    let detail = result.halt_detail.expect("which limit fired");
    assert_eq!(detail.setting.as_deref(), Some("agent.timeouts.runMs"));
    assert!(detail.message.contains("5000 ms"), "{detail:?}");
    assert!(
        result.answer.contains("agent.timeouts.runMs"),
        "{}",
        result.answer
    );
}

#[tokio::test(start_paused = true)]
async fn a_step_timeout_names_the_step_limit_and_its_setting_not_the_run_limit() {
    let mut settings = settings("t");
    settings.timeouts = Timeouts {
        step_ms: 2_000,
        run_ms: 60_000,
    };
    let (sink, mut receiver) = ChannelSink::new(64);
    let result = run(
        settings,
        host(),
        ScriptedBackend::hanging(),
        Arc::new(sink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.halt_reason, Some(HaltReason::Timeout));
    let detail = result.halt_detail.clone().expect("which limit fired");
    assert_eq!(detail.setting.as_deref(), Some("agent.timeouts.stepMs"));
    assert!(detail.message.contains("2000 ms"), "{detail:?}");
    assert!(!result.answer.contains("runMs"), "{}", result.answer);
    // The final event carries the same detail.
    let mut last = None;
    while let Ok(event) = receiver.try_recv() {
        last = Some(event.kind);
    }
    assert!(
        matches!(&last, Some(AgentEventKind::Final { halt_detail: Some(d), .. }) if *d == detail),
        "{last:?}"
    );
    // A request's timeoutMs is named as the run limit it set.
    let mut settings = settings_with_request_limit();
    settings.timeouts = Timeouts {
        step_ms: 60_000,
        run_ms: 1_000,
    };
    let result = run(
        settings,
        host(),
        ScriptedBackend::hanging(),
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(
        result.halt_detail.and_then(|d| d.setting).as_deref(),
        Some("timeoutMs")
    );
}

fn settings_with_request_limit() -> tool_cli_agent::run::RunSettings {
    let mut settings = settings("t");
    settings.run_limit_from_request = true;
    settings
}

#[tokio::test]
async fn large_catalogs_show_the_searched_subset_fixed_for_the_run() {
    let tools: Vec<_> = (0..40)
        .map(|i| tool("big", &format!("tool_{i}")))
        .chain([tool("big", "weather_forecast")])
        .collect();
    let host = MemoryHost::new(tools, |call| Ok(text_outcome(call, "sunny")));
    let backend = ScriptedBackend::new(|request, turn| {
        assert_eq!(request.tools.len(), 5);
        assert!(request.tools.iter().any(|t| t.name == "weather_forecast"));
        Ok(match turn {
            1 => call("c1", "weather_forecast", json!({})),
            _ => answer(GOOD),
        })
    });
    let mut settings = settings("what is the weather forecast");
    settings.tool_limit = 5;
    let result = run(
        settings,
        host,
        backend,
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(result.available_tools.len(), 5);
}

#[tokio::test]
async fn a_planner_without_a_rule_fails_with_its_reason_and_costs_nothing() {
    let backend = ScriptedBackend::new(|_, _| Err(LlmError::NoPlan("no rule for this".into())));
    let mut settings = settings("t");
    settings.cost_ceiling_usd = Some(0.1);
    settings.price = Some(flat_price(1.0));
    let result = run(
        settings,
        host(),
        backend,
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(result.error.as_deref(), Some("no rule for this"));
    assert_eq!(result.usage.cost_usd, Some(0.0));
}

#[tokio::test]
async fn malformed_arguments_and_parallel_calls_are_answered_as_tool_results() {
    // One turn with three calls: arguments that are not JSON, arguments that are JSON but not
    // an object, and a good call. Each gets its own result in the one results turn; only the
    // good one reaches the host, and the model then answers.
    let backend = ScriptedBackend::new(|request, turn| {
        Ok(match turn {
            1 => {
                let mut response = call("c1", "get_row", json!("{\"id\": "));
                response.tool_calls.push(LlmToolCall {
                    id: "c2".into(),
                    name: "get_row".into(),
                    arguments: json!("[1, 2]"),
                });
                response.tool_calls.push(LlmToolCall {
                    id: "c3".into(),
                    name: "get_row".into(),
                    arguments: json!({"id": "7"}),
                });
                response
            }
            _ => {
                let Some(Turn::ToolResults(results)) = request.turns.last() else {
                    panic!("results expected")
                };
                assert_eq!(results.len(), 3);
                let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
                assert_eq!(ids, ["c1", "c2", "c3"]);
                assert!(results[0].is_error && results[0].content.contains("not valid JSON"));
                assert!(results[1].is_error && results[1].content.contains("got an array"));
                assert!(!results[2].is_error && results[2].content.contains("row"));
                answer(GOOD)
            }
        })
    });
    let host = host();
    let result = run(
        settings("t"),
        host.clone(),
        backend,
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.status, RunStatus::Completed, "{result:#?}");
    assert_eq!(result.tool_calls.len(), 3);
    assert!(result.tool_calls[0].is_error && result.tool_calls[1].is_error);
    assert_eq!(
        host.calls().len(),
        1,
        "only the well-formed call reached the host"
    );
    assert_eq!(host.calls()[0].arguments, json!({"id": "7"}));
}

#[tokio::test]
async fn a_final_answer_that_declares_cannot_or_refused_ends_with_that_status() {
    for (text, status) in [
        (
            r#"{"answer": "No customer is named Zed.", "keyFacts": {"cannot": true, "reason": "no customer named Zed"}}"#,
            RunStatus::Cannot,
        ),
        (
            r#"{"answer": "Refused: that would delete rows.", "keyFacts": {"refused": true}}"#,
            RunStatus::Refused,
        ),
        (GOOD, RunStatus::Completed),
    ] {
        let backend = ScriptedBackend::new(move |_, _| Ok(answer(text)));
        let (sink, mut receiver) = ChannelSink::new(64);
        let result = run(
            settings("t"),
            host(),
            backend,
            Arc::new(sink),
            CancellationToken::new(),
        )
        .await;
        assert_eq!(result.status, status, "{text}");
        assert!(result.error.is_none() && result.halt_reason.is_none());
        let mut last = None;
        while let Ok(event) = receiver.try_recv() {
            last = Some(event.kind);
        }
        assert!(
            matches!(last, Some(AgentEventKind::Final { status: s, .. }) if s == status),
            "{text}"
        );
    }
}

#[tokio::test]
async fn a_servers_entry_no_visible_tool_comes_from_fails_the_run_before_any_call() {
    let backend = ScriptedBackend::new(|_, _| Ok(answer(GOOD)));
    let mut settings = settings("t");
    settings.servers = Some(vec!["db".into(), "nosuch".into()]);
    let result = run(
        settings,
        host(),
        backend.clone(),
        Arc::new(NullSink),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.status, RunStatus::Failed);
    let error = result.error.expect("the reason");
    assert!(
        error.contains("\"nosuch\"") && error.contains("db, ops"),
        "{error}"
    );
    assert!(backend.seen().is_empty(), "no LLM call was made");
}
