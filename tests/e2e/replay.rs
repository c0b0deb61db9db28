//! Record and replay through the real daemon (issue 28 item 2, before the daemon records by
//! itself): `tool-cli-replay record` stands between the daemon and server-everything as a
//! configured stdio server, then `tool-cli-replay FILE` stands in for the server, and the daemon
//! cannot tell: the same tools, the same answers, a clear error for what was never recorded, and
//! no secret of the server's environment in the file.

use serde_json::{Value, json};
use tool_cli_tests::{Daemon, everything_stdio, replay_bin, scratch};

/// server-everything's command line, recorded through the proxy: `record … -- node everything
/// stdio`, with a secret in the server's environment that `get-env` will show.
fn recording_server(file: &std::path::Path, secret: &str) -> Value {
    let everything = everything_stdio();
    let mut args = vec![
        json!("record"),
        json!("--out"),
        json!(file),
        json!("--server"),
        json!("everything"),
        json!("--redact-env"),
        json!("EVERYTHING_API_KEY"),
        json!("--"),
        everything["command"].clone(),
    ];
    args.extend(everything["args"].as_array().expect("args").iter().cloned());
    json!({
        "command": replay_bin(),
        "args": args,
        "env": {"EVERYTHING_API_KEY": secret},
    })
}

fn tool_names(daemon: &Daemon) -> Vec<String> {
    let listed = daemon.call("listTools", json!({"server": "everything"}));
    let mut names: Vec<String> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["name"].as_str().expect("name").to_owned())
        .collect();
    names.sort();
    names
}

/// The calls of the session; the same in both runs.
fn calls(daemon: &Daemon) -> Vec<Value> {
    vec![
        daemon.call_tool(
            "everything",
            "echo",
            json!({"message": "recorded through the daemon"}),
        ),
        daemon.call_tool("everything", "get-sum", json!({"a": 19, "b": 23})),
        daemon.call_tool(
            "everything",
            "get-structured-content",
            json!({"location": "New York"}),
        ),
        daemon.call_tool("everything", "get-env", json!({})),
    ]
}

#[test]
fn a_session_recorded_through_the_daemon_replays_through_the_daemon() {
    let dir = scratch();
    let file = dir.path().join("everything.ndjson");
    let secret = "sk-everything-7c4f19";

    let recording =
        Daemon::start(json!({"mcpServers": {"everything": recording_server(&file, secret)}}));
    let recorded_tools = tool_names(&recording);
    assert!(
        recorded_tools.contains(&"echo".to_owned()),
        "{recorded_tools:?}"
    );
    let recorded = calls(&recording);
    assert!(
        recorded[0]
            .to_string()
            .contains("recorded through the daemon")
    );
    assert!(recorded[1].to_string().contains("42"), "{:#}", recorded[1]);
    assert!(
        recorded[3].to_string().contains(secret),
        "get-env shows the live secret to the caller: {:#}",
        recorded[3]
    );
    recording.stop_gracefully();

    let text = std::fs::read_to_string(&file).expect("the recording was written");
    assert!(
        !text.contains(secret),
        "the server's secret is redacted in the file"
    );
    let last = text.lines().last().expect("lines");
    assert!(
        last.contains("\"end\":true"),
        "the recording is complete: {last}"
    );

    // The recording stands in for the server.
    let replaying = Daemon::start(json!({"mcpServers": {"everything": {
        "command": replay_bin(),
        "args": ["--server", "everything", file],
    }}}));
    assert_eq!(tool_names(&replaying), recorded_tools);
    let replayed = calls(&replaying);
    assert_eq!(replayed[..3], recorded[..3]);
    assert!(
        replayed[3].to_string().contains("[REDACTED]"),
        "{:#}",
        replayed[3]
    );
    assert!(!replayed[3].to_string().contains(secret));

    // A call the recording lacks fails at once with the reason, not a hang.
    let missing = replaying.rpc(
        "callTool",
        Some(json!({
            "server": "everything",
            "tool": "echo",
            "arguments": {"message": "never recorded"},
        })),
    );
    let text = match missing {
        Ok(result) => panic!("a call the recording lacks succeeded: {result:#}"),
        Err(error) => format!("{error:?}"),
    };
    assert!(text.contains("not in the recording"), "{text}");
    assert!(text.contains("never recorded"), "{text}");
    replaying.stop_gracefully();
}

/// The daemon's own `record` and `replay` members (no proxy on the command line): five secrets
/// seeded in the server's environment are in no line of the file, and the replayed daemon
/// answers byte for byte what the recording daemon answered.
#[test]
fn the_config_records_a_server_and_replays_the_recording() {
    let dir = scratch();
    let file = dir.path().join("recorded-by-config.ndjson");
    let secrets: Vec<String> = (1..=5)
        .map(|index| format!("sk-seeded-{index}-4e7a9c{index}"))
        .collect();
    let mut entry = everything_stdio();
    let mut env = serde_json::Map::new();
    for (index, _) in secrets.iter().enumerate() {
        env.insert(
            format!("SEEDED_SECRET_{index}"),
            json!(format!("${{SEEDED_SECRET_{index}}}")),
        );
    }
    entry["env"] = Value::Object(env);
    entry["record"] = json!(file);
    let recording = Daemon::start_with(
        json!({"mcpServers": {"everything": entry}}),
        tool_cli_tests::DaemonOptions {
            env: secrets
                .iter()
                .enumerate()
                .map(|(index, secret)| (format!("SEEDED_SECRET_{index}"), secret.clone()))
                .collect(),
            ..Default::default()
        },
    );
    let recorded_tools = tool_names(&recording);
    let recorded = calls(&recording);
    for secret in &secrets {
        assert!(
            recorded[3].to_string().contains(secret.as_str()),
            "get-env shows the live secrets to the caller: {:#}",
            recorded[3]
        );
    }
    recording.stop_gracefully();

    let text = std::fs::read_to_string(&file).expect("the daemon wrote the recording");
    let leaked: Vec<&String> = secrets
        .iter()
        .filter(|secret| text.contains(secret.as_str()))
        .collect();
    assert!(leaked.is_empty(), "0 of 5 secrets in the file: {leaked:?}");
    assert!(text.lines().last().unwrap().contains("\"end\":true"));

    let replaying = Daemon::start(json!({"mcpServers": {"everything": {"replay": file}}}));
    assert_eq!(tool_names(&replaying), recorded_tools);
    let replayed = calls(&replaying);
    assert_eq!(
        serde_json::to_string(&replayed[..3]).unwrap(),
        serde_json::to_string(&recorded[..3]).unwrap(),
        "byte-identical answers"
    );
    assert!(replayed[3].to_string().contains("[REDACTED]"));
    replaying.stop_gracefully();

    // `replay` beside a command is refused with the reason.
    let refused = Daemon::try_start_with(
        json!({"mcpServers": {"everything": {"replay": file, "command": "npx"}}}),
        tool_cli_tests::DaemonOptions::default(),
    )
    .err()
    .expect("refused");
    assert!(
        refused.contains("\"replay\" without \"command\""),
        "{refused}"
    );
}

#[test]
fn a_recording_of_another_server_is_refused_when_the_daemon_starts_it() {
    let dir = scratch();
    let file = dir.path().join("everything.ndjson");
    let recording = Daemon::start(
        json!({"mcpServers": {"everything": recording_server(&file, "sk-unused-1234")}}),
    );
    recording.call_tool("everything", "echo", json!({"message": "x"}));
    recording.stop_gracefully();

    let daemon = Daemon::start(json!({"mcpServers": {"memory": {
        "command": replay_bin(),
        "args": ["--server", "memory", file],
    }}}));
    let listed = daemon.call("listServers", json!({}));
    let memory = &listed["servers"][0];
    assert_ne!(memory["state"], "ready", "{listed:#}");
    let reason = memory["error"].as_str().unwrap_or_default();
    assert!(
        reason.contains("is of server \"everything\", not \"memory\""),
        "the daemon shows the replay's reason: {listed:#}"
    );
}

/// A `tool-cli-replay` HTTP mode (`llm-record`, `llm-serve`) as a child: the base URL it
/// prints, and SIGTERM then a wait on drop.
struct LlmSide {
    child: std::process::Child,
    base_url: String,
}

impl LlmSide {
    fn start(args: &[&str]) -> LlmSide {
        use std::io::BufRead as _;
        let mut child = std::process::Command::new(replay_bin())
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("start tool-cli-replay");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().expect("stdout"))
            .read_line(&mut line)
            .expect("its base URL");
        LlmSide {
            child,
            base_url: line.trim().to_owned(),
        }
    }

    /// SIGTERM, then its exit code.
    fn stop(mut self) -> Option<i32> {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        self.child.wait().ok().and_then(|status| status.code())
    }
}

impl Drop for LlmSide {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A run with its volatile members (the run id, the daemon's call ids, durations, clock times)
/// taken out.
fn comparable(value: &Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .filter(|(name, _)| {
                    !matches!(
                        name.as_str(),
                        "runId"
                            | "callId"
                            | "tool-cli/callId"
                            | "durationMs"
                            | "at"
                            | "startedAt"
                            | "elapsedMs"
                            | "latencyMs"
                    )
                })
                .map(|(name, member)| (name.clone(), comparable(member)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(comparable).collect()),
        other => other.clone(),
    }
}

#[test]
fn an_agent_run_recorded_through_llm_record_replays_identically_100_times() {
    use tool_cli_tests::scripted_llm::{
        LlmReply, ScriptedLlm, agent_config, final_turn, tool_call_turn,
    };
    use tool_cli_tests::{DaemonOptions, demo_server};
    const KEY: &str = "sk-scripted-replay-90ab1c";

    let llm = ScriptedLlm::start(vec![
        LlmReply::Stream(tool_call_turn("describe_schema", &json!({}), 900, 20)),
        LlmReply::Stream(tool_call_turn(
            "describe_schema",
            &json!({"table": "orders"}),
            1400,
            25,
        )),
        LlmReply::Stream(final_turn(
            &json!({"answer": "The shop keeps customers, orders and products.",
                    "keyFacts": {"tables": 3, "orders": 500}})
            .to_string(),
            1900,
            30,
        )),
    ]);
    let dir = scratch();
    let file = dir.path().join("agent-llm.ndjson");
    let file_arg = file.display().to_string();
    let recorder = LlmSide::start(&[
        "llm-record",
        "--upstream",
        &llm.base_url(),
        "--out",
        &file_arg,
    ]);
    let start_daemon = |base_url: &str| {
        let base_url = base_url.to_owned();
        Daemon::start_with_dir_and(
            move |dir| {
                let mut agent = agent_config(&llm_stub(), 1.0);
                agent["baseUrl"] = json!(base_url);
                json!({"mcpServers": {"demo": demo_server(dir)}, "agent": agent})
            },
            DaemonOptions {
                env: vec![("SCRIPTED_LLM_KEY".into(), KEY.into())],
                ..DaemonOptions::default()
            },
        )
    };
    let task = |run_id: &str| {
        json!({"task": "Describe the shop's tables", "tools": ["demo/describe_schema"],
               "runId": run_id})
    };
    let recording_daemon = start_daemon(&recorder.base_url);
    let recorded = recording_daemon.call("runAgent", task("recorded"));
    assert_eq!(recorded["status"], "completed", "{recorded:#}");
    assert_eq!(
        recorded["toolCalls"].as_array().map(Vec::len),
        Some(2),
        "{recorded:#}"
    );
    let recorded_events = recording_daemon.call(
        "agentEvents",
        json!({"runId": "recorded", "after": 0, "waitMs": 0}),
    );
    recording_daemon.stop_gracefully();
    assert_eq!(recorder.stop(), Some(0));
    assert_eq!(llm.requests().len(), 3);
    drop(llm);
    let text = std::fs::read_to_string(&file).expect("the LLM recording");
    assert!(!text.contains(KEY), "the API key is not in the recording");
    assert!(
        text.lines()
            .last()
            .unwrap_or_default()
            .contains("\"end\":true")
    );

    // The provider is gone; the recording answers.
    let server = LlmSide::start(&["llm-serve", &file_arg]);
    let daemon = start_daemon(&server.base_url);
    for index in 0..100 {
        let run_id = format!("replay-{index}");
        let replayed = daemon.call("runAgent", task(&run_id));
        assert_eq!(comparable(&replayed), comparable(&recorded), "run {index}");
        let events = daemon.call(
            "agentEvents",
            json!({"runId": run_id, "after": 0, "waitMs": 0}),
        );
        assert_eq!(
            comparable(&events),
            comparable(&recorded_events),
            "run {index}"
        );
    }
    daemon.stop_gracefully();
}

/// `agent_config` needs a scripted server only for its URL, which the test replaces.
fn llm_stub() -> tool_cli_tests::scripted_llm::ScriptedLlm {
    tool_cli_tests::scripted_llm::ScriptedLlm::start(Vec::new())
}
