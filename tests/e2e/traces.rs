//! Traces end to end: the real daemon with the bundled demo server writes one line per call to
//! a real file, and `tool-cli traces report` (from the file, without a daemon) and the daemon's
//! `tracesReport` agree about it.
//!
//! - every kind of call (success, tool error, invalid arguments, dry-run, unknown tool) → one
//!   line each, with the right members and nothing else:
//!   `each_kind_of_call_writes_exactly_one_line_with_its_facts`
//! - the default file is private, in `$XDG_STATE_HOME/tool-cli`:
//!   `the_default_trace_file_is_private_in_the_state_directory`
//! - `--file` and the RPC give the same report, corrupt lines skipped and counted, in every
//!   output format: `the_report_from_the_file_and_from_the_daemon_agree`
//! - an unwritable directory and a full disk never fail a call, and `health` says what is lost:
//!   `an_unwritable_trace_directory_never_fails_a_call`, `a_full_disk_never_fails_a_call`
//! - rotation at `maxBytes` keeps `keep` files, and the report reads them all:
//!   `rotation_keeps_keep_files_and_the_report_reads_them_all`
//! - verbose traces never contain a secret: `verbose_traces_redact_secrets`
//! - bad report inputs, an empty file, a scoped token, `--no-traces`:
//!   `bad_report_inputs_are_clear_errors`, `an_empty_trace_file_is_an_empty_report`,
//!   `no_traces_writes_nothing_and_says_how_to_get_a_report`

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};
use tool_cli_protocol::code;
use tool_cli_protocol::methods::name;
use tool_cli_tests::{Daemon, DaemonOptions, demo_server, scratch};

/// Longest wait for the writer to account for the calls made.
const WAIT: Duration = Duration::from_secs(30);

/// The test's own copy of the line format: a member the daemon adds without updating this
/// (and `docs/traces.md`) fails here.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)]
struct Line {
    schema_version: u32,
    ts: String,
    session_id: Option<String>,
    step: Option<u32>,
    call_id: String,
    parent_call_id: Option<String>,
    depth: u32,
    server: Option<String>,
    tool: String,
    arguments_hash: String,
    latency_ms: f64,
    success: bool,
    executed: bool,
    dry_run: bool,
    selection_rule: Option<String>,
    alternatives: Vec<Value>,
    attempt: u32,
    retries: u32,
    retry_reason: Option<String>,
    corrective_retry: bool,
    error: Option<LineError>,
    degraded: bool,
    tokens_in: u64,
    tokens_out: u64,
    cost_usd: f64,
    arguments: Option<Value>,
    result: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LineError {
    code: i32,
    kind: String,
    message: String,
}

/// Where [`traced`] puts the trace file, inside the daemon's dir.
const TRACE_FILE: &str = "traces/traces.jsonl";

/// A daemon serving the demo server and tracing to [`TRACE_FILE`] in its dir, with the extra
/// `traces` members `extra` returns (it gets the daemon's dir, to prepare files in it);
/// returns it and the trace file.
fn traced(extra: impl FnOnce(&Path) -> Value, options: DaemonOptions) -> (Daemon, PathBuf) {
    let daemon = Daemon::start_with_dir_and(
        |dir| {
            let mut section = json!({"path": dir.join(TRACE_FILE)});
            section
                .as_object_mut()
                .unwrap()
                .extend(extra(dir).as_object().unwrap().clone());
            json!({"mcpServers": {"demo": demo_server(dir)}, "traces": section})
        },
        options,
    );
    let path = daemon.dir().join(TRACE_FILE);
    (daemon, path)
}

/// A `tool-cli` with no daemon in its environment at all, run to the end.
fn client_without_daemon(args: &[&str]) -> std::process::Output {
    let mut command = tool_cli_tests::client_command();
    command.args(args);
    tool_cli_tests::run_with_timeout(command, tool_cli_tests::CLIENT_TIMEOUT)
}

/// Polls `health` until its `traces` satisfies `until`; returns that `traces`.
fn wait_for_traces(daemon: &Daemon, until: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let health = daemon.call(name::HEALTH, Value::Null);
        if until(&health["traces"]) {
            return health["traces"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "the trace writer never got there: {:#}",
            health["traces"]
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every line of the trace file, parsed both ways, once the writer has written `count`.
fn lines_after(daemon: &Daemon, path: &Path, count: u64) -> Vec<(Line, Value)> {
    wait_for_traces(daemon, |traces| traces["written"] == count);
    let text = std::fs::read_to_string(path).expect("read the trace file");
    text.lines()
        .map(|line| {
            let typed: Line =
                serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}"));
            (typed, serde_json::from_str(line).unwrap())
        })
        .collect()
}

fn call(daemon: &Daemon, params: Value) -> Result<Value, tool_cli_protocol::ErrorObject> {
    daemon.rpc(name::CALL_TOOL, Some(params))
}

#[test]
fn each_kind_of_call_writes_exactly_one_line_with_its_facts() {
    let (daemon, path) = traced(|_| json!({}), DaemonOptions::default());
    let select = json!({"sql": "select 1 as n"});

    let ok = call(
        &daemon,
        json!({"server": "demo", "tool": "sql_query", "arguments": select}),
    )
    .unwrap();
    let tool_error = call(
        &daemon,
        json!({"server": "demo", "tool": "sql_query",
        "arguments": {"sql": "delete from customers"}}),
    )
    .unwrap();
    assert_eq!(tool_error["isError"], true, "{tool_error:#}");
    let invalid = call(
        &daemon,
        json!({"server": "demo", "tool": "sql_query",
        "arguments": {"sql": 5}}),
    )
    .unwrap_err();
    assert_eq!(invalid.code, code::INVALID_PARAMS);
    let dry = call(
        &daemon,
        json!({"server": "demo", "tool": "sql_query", "arguments": select,
        "dryRun": true}),
    )
    .unwrap();
    assert_eq!(dry["executed"], false);
    let unknown = call(
        &daemon,
        json!({"server": "demo", "tool": "nope", "arguments": {}}),
    )
    .unwrap_err();
    assert_eq!(unknown.code, code::INVALID_PARAMS);

    let lines = lines_after(&daemon, &path, 5);
    assert_eq!(lines.len(), 5, "exactly one line per call");
    for (line, raw) in &lines {
        assert_eq!(line.schema_version, 1);
        assert_eq!(
            raw.as_object().unwrap().len(),
            25,
            "every member, no payloads: {raw}"
        );
        assert!(line.ts.ends_with('Z') && line.ts.len() == 24, "{}", line.ts);
        assert_eq!((line.depth, line.session_id.as_deref()), (0, None));
        assert_eq!(line.server.as_deref(), Some("demo"));
        assert_eq!(line.arguments_hash.len(), 16);
        assert!(line.latency_ms >= 0.0);
        assert_eq!(
            (line.tokens_in, line.tokens_out, line.cost_usd),
            (0, 0, 0.0)
        );
    }
    let [
        (ok_line, ok_raw),
        (tool_line, _),
        (invalid_line, _),
        (dry_line, _),
        (unknown_line, _),
    ] = &lines[..]
    else {
        unreachable!()
    };

    assert_eq!(
        ok_line.call_id, ok["_meta"]["tool-cli/callId"],
        "the result names its line"
    );
    assert!(ok_line.success && ok_line.executed && !ok_line.dry_run);
    assert_eq!((ok_line.attempt, ok_line.retries), (1, 0));
    assert_eq!(ok_line.selection_rule.as_deref(), Some("named"));
    assert!(ok_line.error.is_none());

    assert_eq!(tool_line.tool, "sql_query");
    assert!(
        !tool_line.success && tool_line.executed,
        "isError is a failure that ran"
    );
    assert!(
        tool_line.error.is_none(),
        "a tool's own error is not a protocol error"
    );

    assert!(!invalid_line.success && !invalid_line.executed);
    assert_eq!(invalid_line.attempt, 0);
    let error = invalid_line.error.as_ref().unwrap();
    assert_eq!(
        (error.code, error.kind.as_str()),
        (code::INVALID_PARAMS, "invalidArguments")
    );
    assert_eq!(error.message, invalid.message);

    assert!(dry_line.dry_run && !dry_line.executed && dry_line.success);
    assert_eq!(
        dry_line.arguments_hash, ok_line.arguments_hash,
        "same arguments, same hash"
    );
    assert_ne!(tool_line.arguments_hash, ok_line.arguments_hash);

    assert_eq!(unknown_line.tool, "nope");
    assert!(!unknown_line.executed && unknown_line.selection_rule.is_none());
    assert_eq!(unknown_line.error.as_ref().unwrap().kind, "unknownTool");

    // The shape of a line, as documented in docs/traces.md.
    let mut shown = ok_raw.clone();
    for (member, placeholder) in [
        ("ts", "<ts>"),
        ("callId", "<callId>"),
        ("latencyMs", "<ms>"),
    ] {
        shown[member] = json!(placeholder);
    }
    expect_test::expect![[r#"{"schemaVersion":1,"ts":"<ts>","sessionId":null,"step":null,"callId":"<callId>","parentCallId":null,"depth":0,"server":"demo","tool":"sql_query","argumentsHash":"fffa2830236e8e8b","latencyMs":"<ms>","success":true,"executed":true,"dryRun":false,"selectionRule":"named","alternatives":[],"attempt":1,"retries":0,"retryReason":null,"correctiveRetry":false,"error":null,"degraded":false,"tokensIn":0,"tokensOut":0,"costUsd":0.0}"#]]
    .assert_eq(&shown.to_string());
}

#[test]
fn the_default_trace_file_is_private_in_the_state_directory() {
    let daemon = Daemon::start_demo();
    daemon.call_tool("demo", "sql_query", json!({"sql": "select 1"}));
    let traces = wait_for_traces(&daemon, |traces| traces["written"] == 1);
    // The harness points XDG_STATE_HOME at `state/` in the daemon's dir.
    let state = daemon.dir().join("state");
    let path = state.join("tool-cli/traces.jsonl");
    assert_eq!(traces["path"], path.to_string_lossy().as_ref());
    assert_eq!(
        (traces["dropped"].as_u64(), traces.get("lastError")),
        (Some(0), None)
    );
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&state.join("tool-cli")), 0o700);
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn the_report_from_the_file_and_from_the_daemon_agree() {
    let (daemon, path) = traced(|_| json!({}), DaemonOptions::default());
    for sql in ["select 1", "select 2", "select 3", "delete from customers"] {
        call(
            &daemon,
            json!({"server": "demo", "tool": "sql_query", "arguments": {"sql": sql}}),
        )
        .unwrap();
    }
    call(
        &daemon,
        json!({"server": "demo", "tool": "describe_schema", "arguments": {},
        "dryRun": true}),
    )
    .unwrap();
    wait_for_traces(&daemon, |traces| traces["written"] == 5);
    // A line cut short (a crash mid-write) and a stray line: skipped and counted.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut file, b"{\"schemaVersion\":1,\"ts\nnot json at all\n").unwrap();
    drop(file);

    let path_text = path.to_str().unwrap();
    for (params, flags) in [
        (json!({"by": "tool"}), &["--by", "tool"][..]),
        (
            json!({"by": "server", "executedOnly": true}),
            &["--by", "server", "--executed-only"],
        ),
        (
            json!({"by": "day", "since": "2000-01-01"}),
            &["--by", "day", "--since", "2000-01-01"],
        ),
        (json!({"by": "session"}), &["--by", "session"]),
    ] {
        let from_daemon = daemon.call(name::TRACES_REPORT, params.clone());
        let mut args = vec!["traces", "report", "--json", "--file", path_text];
        args.extend_from_slice(flags);
        // No daemon in the environment at all: --file must not need one.
        let output = client_without_daemon(&args);
        assert!(output.status.success(), "{args:?}: {output:?}");
        let from_file: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(from_file, from_daemon, "{params}");
    }

    let report = daemon.call(name::TRACES_REPORT, json!({"by": "tool"}));
    assert_eq!(
        (report["lines"].as_u64(), report["corruptLines"].as_u64()),
        (Some(5), Some(2))
    );
    assert_eq!(report["files"], json!([path_text]));
    let groups: Vec<(&str, u64, u64)> = report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|group| {
            (
                group["key"].as_str().unwrap(),
                group["calls"].as_u64().unwrap(),
                group["errors"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        groups,
        [("demo/sql_query", 4, 1), ("demo/describe_schema", 1, 0)]
    );
    assert_eq!(report["total"]["successRate"], 0.8);
    assert_eq!(report["total"]["dryRuns"], 1);
    let executed = daemon.call(name::TRACES_REPORT, json!({"executedOnly": true}));
    assert_eq!(executed["total"]["calls"], 4);

    // The human forms, through the daemon.
    let output = daemon.run_client(&["traces", "report", "--by", "server"], &[]);
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("server  calls  errors  success"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("demo        5       1    80.0%"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("total       5       1    80.0%"),
        "{text}"
    );
    assert_eq!(
        lines[3], "5 calls from 1 file (5 lines read, 2 corrupt lines skipped)",
        "{text}"
    );
    let output = daemon.run_client(&["traces", "report", "--markdown", "--by", "server"], &[]);
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.starts_with("| server | calls | errors |"), "{text}");
    assert!(text.contains("| **total** | 5 | 1 | 80.0% |"), "{text}");
}

#[test]
fn an_unwritable_trace_directory_never_fails_a_call() {
    let (daemon, _) = traced(
        |dir| {
            // A regular file where the trace directory should be: not even root can create it.
            let blocker = dir.join("blocker");
            std::fs::write(&blocker, "").unwrap();
            json!({"path": blocker.join("traces/traces.jsonl")})
        },
        DaemonOptions::default(),
    );
    for n in 0..3 {
        let result = daemon.call_tool("demo", "sql_query", json!({"sql": format!("select {n}")}));
        assert_ne!(result["isError"], true, "{result:#}");
    }
    let traces = wait_for_traces(&daemon, |traces| traces["dropped"] == 3);
    assert_eq!(traces["written"], 0);
    let error = traces["lastError"].as_str().unwrap();
    assert!(
        error.starts_with("cannot create the trace directory"),
        "{error}"
    );
    assert!(
        error.contains("traces.path"),
        "says what would be right: {error}"
    );
    // Nothing was written: the report is empty, not an error.
    let report = daemon.call(name::TRACES_REPORT, Value::Null);
    assert_eq!(
        (report["files"].clone(), report["total"]["calls"].clone()),
        (json!([]), json!(0))
    );
}

#[test]
fn a_full_disk_never_fails_a_call() {
    // /dev/full takes the open and fails every write with ENOSPC, exactly like a full disk.
    let daemon = Daemon::start_with_dir_and(
        |dir| json!({"mcpServers": {"demo": demo_server(dir)}}),
        DaemonOptions {
            args: vec!["--traces".into(), "/dev/full".into()],
            ..DaemonOptions::default()
        },
    );
    for n in 0..2 {
        let result = daemon.call_tool("demo", "sql_query", json!({"sql": format!("select {n}")}));
        assert_ne!(result["isError"], true, "{result:#}");
    }
    let traces = wait_for_traces(&daemon, |traces| traces["dropped"] == 2);
    assert_eq!(
        (traces["path"].as_str(), traces["written"].as_u64()),
        (Some("/dev/full"), Some(0))
    );
    let error = traces["lastError"].as_str().unwrap();
    assert!(error.contains("No space left on device"), "{error}");
    assert!(error.contains("free some space"), "{error}");
}

#[test]
fn rotation_keeps_keep_files_and_the_report_reads_them_all() {
    let (daemon, path) = traced(
        |_| json!({"maxBytes": 1024, "keep": 2}),
        DaemonOptions::default(),
    );
    for n in 0..12 {
        daemon.call_tool("demo", "sql_query", json!({"sql": format!("select {n}")}));
    }
    wait_for_traces(&daemon, |traces| traces["written"] == 12);
    let rotated = |index: u32| PathBuf::from(format!("{}.{index}", path.display()));
    let files = [rotated(2), rotated(1), path.clone()];
    let mut kept = 0;
    for file in &files {
        let size = std::fs::metadata(file).unwrap().len();
        assert!(size > 0 && size <= 1024, "{}: {size} bytes", file.display());
        kept += std::fs::read_to_string(file).unwrap().lines().count() as u64;
    }
    assert!(!rotated(3).exists(), "only keep = 2 rotated files");
    assert!(kept < 12, "the oldest lines went with the oldest file");

    let report = daemon.call(name::TRACES_REPORT, json!({"by": "server"}));
    let names: Vec<String> = files
        .iter()
        .map(|file| file.display().to_string())
        .collect();
    assert_eq!(report["files"], json!(names), "oldest first");
    assert_eq!(report["lines"].as_u64(), Some(kept));
    assert_eq!(report["total"]["calls"].as_u64(), Some(kept));
    assert_eq!(report["corruptLines"], 0);
}

#[test]
fn verbose_traces_redact_secrets() {
    const CONFIGURED: &str = "sk-e2e-configured-0123456789";
    let daemon = Daemon::start_with_dir_and(
        |dir| {
            let mut demo = demo_server(dir);
            demo["env"] = json!({"DEMO_API_KEY": "${TRACES_E2E_SECRET}"});
            json!({"mcpServers": {"demo": demo},
                   "traces": {"path": dir.join(TRACE_FILE), "verbose": true}})
        },
        DaemonOptions {
            env: vec![("TRACES_E2E_SECRET".into(), CONFIGURED.into())],
            ..DaemonOptions::default()
        },
    );
    let path = daemon.dir().join(TRACE_FILE);
    // The configured secret in the arguments and, echoed by the query, in the result.
    let result = daemon.call_tool(
        "demo",
        "sql_query",
        json!({"sql": format!("select '{CONFIGURED}' as leaked")}),
    );
    assert!(
        result.to_string().contains(CONFIGURED),
        "the caller still gets it: {result}"
    );
    // A credential-named member (refused by the tool's schema, traced all the same).
    let _ = call(
        &daemon,
        json!({"server": "demo", "tool": "sql_query",
        "arguments": {"sql": "select 1", "password": "hunter2-e2e"}}),
    );

    let lines = lines_after(&daemon, &path, 2);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains(CONFIGURED), "{text}");
    assert!(!text.contains("hunter2-e2e"), "{text}");
    let (first, _) = &lines[0];
    assert_eq!(
        first.arguments.as_ref().unwrap()["sql"],
        "select '[redacted]' as leaked"
    );
    assert!(
        first
            .result
            .as_ref()
            .unwrap()
            .to_string()
            .contains("[redacted]")
    );
    let (second, _) = &lines[1];
    assert_eq!(second.arguments.as_ref().unwrap()["password"], "[redacted]");
}

#[test]
fn bad_report_inputs_are_clear_errors() {
    let (daemon, _) = traced(|_| json!({}), DaemonOptions::default());
    let error = daemon.call_err(name::TRACES_REPORT, json!({"since": "yesterday"}));
    assert_eq!(error.code, code::INVALID_PARAMS);
    assert!(
        error.message.contains("\"yesterday\"") && error.message.contains("24h"),
        "{error:?}"
    );
    let error = daemon.call_err(name::TRACES_REPORT, json!({"by": "week"}));
    assert_eq!(error.code, code::INVALID_PARAMS);
    assert!(error.message.contains("\"day\" | \"server\""), "{error:?}");

    let output = daemon.run_client(&["traces", "report", "--since", "yesterday"], &[]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--since \"yesterday\" is neither a duration"),
        "{stderr}"
    );

    // A scoped token sees neither the report nor the writer in health.
    let minted = daemon.call(name::MINT_TOKEN, json!({"servers": ["demo"]}));
    let token = minted["token"].as_str().unwrap();
    let env = [(tool_cli_protocol::env::TOKEN, token)];
    let output = daemon.run_client(&["traces", "report"], &env);
    assert_eq!(output.status.code(), Some(9), "not permitted: {output:?}");
    let output = daemon.run_client(&["health", "--json"], &env);
    let health: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(health.get("traces").is_none(), "{health:#}");
    let owner = daemon.call(name::HEALTH, Value::Null);
    assert!(owner.get("traces").is_some(), "{owner:#}");
}

#[test]
fn an_empty_trace_file_is_an_empty_report() {
    let dir = scratch();
    let path = dir.path().join("traces.jsonl");
    std::fs::write(&path, "").unwrap();
    let output = client_without_daemon(&["traces", "report", "--file", path.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "no calls in the trace files\n0 calls from 1 file (0 lines read)\n"
    );
}

#[test]
fn no_traces_writes_nothing_and_says_how_to_get_a_report() {
    let daemon = Daemon::start_with_dir_and(
        |dir| json!({"mcpServers": {"demo": demo_server(dir)}}),
        DaemonOptions {
            args: vec!["--no-traces".into()],
            ..DaemonOptions::default()
        },
    );
    daemon.call_tool("demo", "sql_query", json!({"sql": "select 1"}));
    let health = daemon.call(name::HEALTH, Value::Null);
    assert!(health.get("traces").is_none(), "{health:#}");
    let error = daemon.call_err(name::TRACES_REPORT, Value::Null);
    assert_eq!(error.code, code::INVALID_PARAMS);
    assert!(error.message.contains("--file"), "{error:?}");
    assert!(
        !daemon.dir().join("state").exists(),
        "no state directory was created"
    );
}

#[test]
fn a_call_resent_after_a_validation_refusal_in_its_session_is_traced_as_a_corrective_retry() {
    let (daemon, path) = traced(|_| json!({}), DaemonOptions::default());
    let session = daemon.call("openSession", json!({"task": "count the orders"}))["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = call(
        &daemon,
        json!({"server": "demo", "tool": "sql_query", "arguments": {"sql": 5},
               "sessionId": session}),
    )
    .unwrap_err();
    assert_eq!(refused.code, -32602, "{refused:?}");
    call(
        &daemon,
        json!({"server": "demo", "tool": "sql_query",
               "arguments": {"sql": "select count(*) as n from orders"}, "sessionId": session}),
    )
    .unwrap();
    // Outside the session, the same pair of calls is no corrective retry.
    call(
        &daemon,
        json!({"server": "demo", "tool": "sql_query", "arguments": {"sql": 6}}),
    )
    .unwrap_err();
    call(
        &daemon,
        json!({"server": "demo", "tool": "sql_query", "arguments": {"sql": "select 2"}}),
    )
    .unwrap();
    let lines = lines_after(&daemon, &path, 4);
    let flags: Vec<bool> = lines
        .iter()
        .map(|(_, raw)| raw["correctiveRetry"] == true)
        .collect();
    assert_eq!(flags, [false, true, false, false], "{lines:#?}");
}
