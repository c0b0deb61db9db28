//! `tool-cli record --server S --out FILE` and the daemon's `startRecording`/`stopRecording`
//! (issue 28 item 2): a configured server is restarted under the recording proxy, every
//! caller's calls to it are written (five secrets seeded in its environment: none in the
//! file), it runs unrecorded again when the recording stops, and `{"replay": FILE}` answers
//! the same calls byte for byte. Bad input: an unknown server, a file nowhere writable, a
//! second recording, a scoped token, the daemon stopping mid-recording.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::methods::name;
use tool_cli_tests::{Daemon, DaemonOptions, eventually_some, everything_stdio, scratch};

/// A `tool-cli record` child, killed if the test fails before it exits.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

const SECRETS: usize = 5;

fn seeded_secrets() -> Vec<String> {
    (1..=SECRETS)
        .map(|index| format!("sk-record-{index}-93b1f{index}"))
        .collect()
}

/// server-everything with the seeded secrets in its environment (through `${VAR}`).
fn everything_with_secrets(secrets: &[String]) -> Daemon {
    let mut entry = everything_stdio();
    let env: serde_json::Map<String, Value> = (0..secrets.len())
        .map(|index| {
            (
                format!("RECORD_SECRET_{index}"),
                json!(format!("${{RECORD_SECRET_{index}}}")),
            )
        })
        .collect();
    entry["env"] = Value::Object(env);
    Daemon::start_with(
        json!({"mcpServers": {"everything": entry}}),
        DaemonOptions {
            env: secrets
                .iter()
                .enumerate()
                .map(|(index, secret)| (format!("RECORD_SECRET_{index}"), secret.clone()))
                .collect(),
            ..Default::default()
        },
    )
}

/// The session's calls, the same against the recorded server and the replay.
fn calls(daemon: &Daemon) -> Vec<Value> {
    vec![
        daemon.call_tool(
            "everything",
            "echo",
            json!({"message": "recorded by tool-cli record"}),
        ),
        daemon.call_tool("everything", "get-sum", json!({"a": 40, "b": 2})),
        daemon.call_tool(
            "everything",
            "get-structured-content",
            json!({"location": "Chicago"}),
        ),
        daemon.call_tool("everything", "get-env", json!({})),
    ]
}

fn error_text(daemon: &Daemon, method: &str, params: Value) -> String {
    let error = daemon.call_err(method, params);
    format!(
        "{} {}",
        error.message,
        error.data.clone().unwrap_or_default()
    )
}

/// An answer without the daemon's own call id (a counter of the daemon's calls, not part of
/// the server's answer), as JSON text.
fn answer_text(answers: &[Value]) -> String {
    let answers: Vec<Value> = answers
        .iter()
        .cloned()
        .map(|mut answer| {
            if let Some(meta) = answer.get_mut("_meta").and_then(Value::as_object_mut) {
                meta.remove("tool-cli/callId");
            }
            answer
        })
        .collect();
    serde_json::to_string(&answers).unwrap()
}

fn replayed(file: &Path) -> Daemon {
    Daemon::start(json!({"mcpServers": {"everything": {"replay": file}}}))
}

#[test]
fn tool_cli_record_records_every_callers_calls_and_the_recording_replays() {
    let dir = scratch();
    let file = dir.path().join("session.ndjson");
    let secrets = seeded_secrets();
    let daemon = everything_with_secrets(&secrets);

    let mut record = KillOnDrop(
        daemon
            .client_command()
            .args(["record", "--server", "everything", "--calls", "5", "--out"])
            .arg(&file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tool-cli record"),
    );
    let mut stderr = BufReader::new(record.0.stderr.take().expect("stderr"));
    let mut line = String::new();
    stderr.read_line(&mut line).expect("the note");
    assert!(
        line.contains("recording everything to") && line.contains("session.ndjson"),
        "{line}"
    );

    // Calls from a script (JSON-RPC) and from the CLI are recorded alike.
    let recorded = calls(&daemon);
    let cli = daemon.run_client(&["everything", "echo", "message=sent by the cli"], &[]);
    assert!(cli.status.success(), "{cli:?}");
    for secret in &secrets {
        assert!(
            recorded[3].to_string().contains(secret.as_str()),
            "get-env shows the live secrets to the caller: {:#}",
            recorded[3]
        );
    }
    let status = eventually_some(Duration::from_secs(60), || record.0.try_wait().unwrap())
        .expect("tool-cli record stops after 5 answered calls");
    let mut summary = String::new();
    std::io::Read::read_to_string(&mut record.0.stdout.take().unwrap(), &mut summary).unwrap();
    assert!(status.success(), "{summary}");
    assert!(
        summary.starts_with("recorded everything: ") && summary.contains(" bytes, to "),
        "{summary}"
    );

    let text = std::fs::read_to_string(&file).expect("the recording");
    let leaked: Vec<&String> = secrets
        .iter()
        .filter(|secret| text.contains(secret.as_str()))
        .collect();
    assert!(leaked.is_empty(), "0 of 5 secrets in the file: {leaked:?}");
    assert!(text.lines().last().unwrap().contains("\"end\":true"));
    assert!(
        summary.contains(&format!(
            "{} lines, {} bytes",
            text.lines().count(),
            text.len()
        )),
        "the summary counts the file: {summary}"
    );
    assert!(text.contains("recorded by tool-cli record"));
    assert!(
        text.contains("sent by the cli"),
        "the CLI's call is recorded too"
    );

    // Unrecorded again: a call after the stop is not written.
    let after = daemon.call_tool("everything", "echo", json!({"message": "after the stop"}));
    assert!(after.to_string().contains("after the stop"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    daemon.stop_gracefully();

    let replaying = replayed(&file);
    let replay = calls(&replaying);
    assert_eq!(
        answer_text(&replay[..3]),
        answer_text(&recorded[..3]),
        "byte-identical answers"
    );
    assert!(
        replay[3].to_string().contains("[REDACTED]"),
        "{:#}",
        replay[3]
    );
    replaying.stop_gracefully();
}

#[test]
fn recording_refuses_bad_input_and_stops_from_the_cli() {
    let dir = scratch();
    let file = dir.path().join("rec.ndjson");
    let daemon = everything_with_secrets(&seeded_secrets());
    let start = |server: &str, out: &Path| json!({"server": server, "out": out});

    let unknown = error_text(&daemon, name::START_RECORDING, start("nope", &file));
    assert!(
        unknown.contains("nope") && unknown.contains("everything"),
        "{unknown}"
    );
    let missing = dir.path().join("no-such-dir").join("rec.ndjson");
    let text = error_text(
        &daemon,
        name::START_RECORDING,
        start("everything", &missing),
    );
    assert!(text.contains("does not exist"), "{text}");
    let text = error_text(
        &daemon,
        name::START_RECORDING,
        json!({"server": "everything", "out": "relative.ndjson"}),
    );
    assert!(text.contains("absolute"), "{text}");
    // Not writable even for root: /proc refuses new files.
    let text = error_text(
        &daemon,
        name::START_RECORDING,
        start("everything", Path::new("/proc/self/rec.ndjson")),
    );
    assert!(text.contains("cannot be written"), "{text}");
    let text = error_text(
        &daemon,
        name::STOP_RECORDING,
        json!({"server": "everything"}),
    );
    assert!(text.contains("is not being recorded"), "{text}");

    // A scoped token may not record.
    let scoped = daemon.call(name::MINT_TOKEN, json!({"servers": ["everything"]}));
    let scoped = scoped["token"].as_str().unwrap();
    let refused = daemon
        .rpc_as(
            scoped,
            name::START_RECORDING,
            Some(start("everything", &file)),
        )
        .expect_err("a scoped token is refused");
    assert_eq!(refused.code, -32006, "{refused:?}");
    assert!(
        !file.exists(),
        "nothing was written for a refused recording"
    );

    // One recording at a time per server.
    let started = daemon.call(name::START_RECORDING, start("everything", &file));
    assert_eq!(started["state"], "ready", "{started:#}");
    let other = dir.path().join("second.ndjson");
    let text = error_text(&daemon, name::START_RECORDING, start("everything", &other));
    assert!(text.contains("being recorded already"), "{text}");
    daemon.call_tool("everything", "echo", json!({"message": "one call"}));

    // `tool-cli record --stop` ends a recording whose `tool-cli record` is gone.
    let stopped = daemon.run_client(&["record", "--server", "everything", "--stop"], &[]);
    let stdout = String::from_utf8_lossy(&stopped.stdout);
    assert!(
        stopped.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&stopped.stderr)
    );
    assert!(stdout.contains("recorded everything: "), "{stdout}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("one call") && text.lines().last().unwrap().contains("\"end\":true"));

    // The CLI without a file says what it needs.
    let usage = daemon.run_client(&["record", "--server", "everything"], &[]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&usage.stderr).contains("--out FILE"));
    daemon.stop_gracefully();
}

#[test]
fn the_daemon_stopping_mid_recording_leaves_a_recording_that_replays() {
    let dir = scratch();
    let file = dir.path().join("cut.ndjson");
    let daemon = everything_with_secrets(&seeded_secrets());
    daemon.call(
        name::START_RECORDING,
        json!({"server": "everything", "out": file}),
    );
    let recorded = daemon.call_tool("everything", "get-sum", json!({"a": 1, "b": 2}));
    daemon.stop_gracefully();

    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.lines().last().unwrap().contains("\"end\":true"),
        "{text}"
    );
    // The replay checks the checksum chain before it serves.
    let replaying = replayed(&file);
    let replay = replaying.call_tool("everything", "get-sum", json!({"a": 1, "b": 2}));
    assert_eq!(answer_text(&[replay]), answer_text(&[recorded]));
    replaying.stop_gracefully();
}

#[test]
fn servers_recorded_by_their_config_are_refused_with_the_reason() {
    let dir = scratch();
    let peer = tool_cli_tests::HttpPeer::everything();
    let mut configured = everything_stdio();
    configured["record"] = json!(dir.path().join("by-config.ndjson"));
    let mut remote = peer.server_config();
    remote["record"] = json!(dir.path().join("remote-by-config.ndjson"));
    let daemon = Daemon::start(json!({"mcpServers": {
        "configured": configured,
        "remote": remote,
    }}));
    let out = dir.path().join("rec.ndjson");
    for server in ["configured", "remote"] {
        let text = error_text(
            &daemon,
            name::START_RECORDING,
            json!({"server": server, "out": out}),
        );
        assert!(text.contains("already"), "{server}: {text}");
    }
    // The CLI shows the daemon's reason and fails.
    let cli = daemon.run_client(
        &[
            "record",
            "--server",
            "remote",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert!(!cli.status.success());
    assert!(
        String::from_utf8_lossy(&cli.stderr).contains("records it already"),
        "{cli:?}"
    );
    daemon.stop_gracefully();
}

/// A Streamable HTTP server recorded through the HTTP client's tap: secrets in its headers
/// (`${VAR}`) are in no line of the file, and the recording replays through the daemon with
/// the same answers.
#[test]
fn tool_cli_record_records_a_streamable_http_server() {
    let dir = scratch();
    let file = dir.path().join("remote.ndjson");
    let secrets = seeded_secrets();
    let peer = tool_cli_tests::HttpPeer::everything();
    let mut remote = peer.server_config();
    remote["headers"] = json!({
        "Authorization": "Bearer ${RECORD_SECRET_0}",
        "X-Api-Key": "${RECORD_SECRET_1}",
        "X-Tenant": "${RECORD_SECRET_2}-${RECORD_SECRET_3}-${RECORD_SECRET_4}",
    });
    let daemon = Daemon::start_with(
        json!({"mcpServers": {"remote": remote}}),
        DaemonOptions {
            env: secrets
                .iter()
                .enumerate()
                .map(|(index, secret)| (format!("RECORD_SECRET_{index}"), secret.clone()))
                .collect(),
            ..Default::default()
        },
    );
    let started = daemon.call(
        name::START_RECORDING,
        json!({"server": "remote", "out": file}),
    );
    assert_eq!(started["state"], "ready", "{started:#}");
    let echo = json!({"message": format!("echo {}", secrets[1])});
    let recorded = [
        daemon.call_tool("remote", "echo", echo),
        daemon.call_tool("remote", "get-sum", json!({"a": 20, "b": 22})),
    ];
    assert!(
        recorded[0].to_string().contains("echo"),
        "{:#}",
        recorded[0]
    );
    let stopped = daemon.call(name::STOP_RECORDING, json!({"server": "remote"}));
    assert_eq!(stopped["complete"], true, "{stopped:#}");
    daemon.stop_gracefully();

    let text = std::fs::read_to_string(&file).unwrap();
    let leaked: Vec<&String> = secrets
        .iter()
        .filter(|secret| text.contains(secret.as_str()))
        .collect();
    assert!(leaked.is_empty(), "0 of 5 secrets in the file: {leaked:?}");
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("\"transport\":\"http\"")
    );
    assert!(text.lines().last().unwrap().contains("\"end\":true"));

    let replaying = Daemon::start(json!({"mcpServers": {"remote": {"replay": file}}}));
    let echo_redacted = json!({"message": "echo [redacted]"});
    let replay = [
        replaying.call_tool("remote", "echo", echo_redacted),
        replaying.call_tool("remote", "get-sum", json!({"a": 20, "b": 22})),
    ];
    assert_eq!(answer_text(&replay[1..]), answer_text(&recorded[1..]));
    assert!(
        replay[0].to_string().contains("[redacted]"),
        "{:#}",
        replay[0]
    );
    replaying.stop_gracefully();
}
