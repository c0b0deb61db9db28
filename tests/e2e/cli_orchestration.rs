//! The orchestration and agent surfaces of the `tool-cli` binary, against the real daemon with the
//! demo server, two real filesystem peers offering the same tools and the everything peer:
//! `session open|summary|list|close` and `TOOL_CLI_SESSION`, the routed call forms, `--dry-run`,
//! `--hint`, `--idempotency-key`, `health --tools`, and `tool-cli agent` (live progress, exit codes,
//! a cost ceiling with a scripted LLM backend, and Ctrl-C), each with its bad inputs.

use std::process::{Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::output::{assert_exit, stderr, stdout};
use tool_cli_tests::scripted_llm::{LlmReply, ScriptedLlm, agent_config, tool_call_turn};
use tool_cli_tests::{Daemon, DaemonOptions, demo_server, everything_stdio, filesystem_server};

/// Runs `tool-cli` with `args` (and `env`) and checks its exit code.
fn run(daemon: &Daemon, args: &[&str], env: &[(&str, &str)], code: i32) -> Output {
    let output = daemon.run_client(args, env);
    assert_exit(&output, code);
    output
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("stdout is not JSON ({err}):\n{}", stdout(output)))
}

/// The demo server, two filesystem servers (`docs`, `archive`) on one directory holding
/// `notes.txt` (4 lines), and the everything peer under the name of one of its tools (`echo`).
fn orchestra() -> (Daemon, String) {
    let mut file = String::new();
    let daemon = Daemon::start_with_dir(|dir| {
        let root = dir.join("shared");
        std::fs::create_dir_all(&root).unwrap();
        let path = root.join("notes.txt");
        std::fs::write(&path, "one\ntwo\nthree\nfour\n").unwrap();
        file = path.to_string_lossy().into_owned();
        json!({"mcpServers": {
            "demo": demo_server(dir),
            "docs": filesystem_server(&root),
            "archive": filesystem_server(&root),
            "echo": everything_stdio(),
        }})
    });
    (daemon, file)
}

#[test]
fn sessions_from_open_to_close_with_the_session_variable() {
    let (daemon, file) = orchestra();
    let read = format!(r#"{{"path": "{file}"}}"#);

    let opened = run(
        &daemon,
        &[
            "session",
            "open",
            "--task",
            "read the notes kept in the archive",
            "--label",
            "ci",
        ],
        &[],
        0,
    );
    let id = stdout(&opened);
    assert_eq!(id.lines().count(), 1, "the id alone: {id:?}");
    let id = id.trim().to_owned();
    assert!(!id.is_empty());

    // TOOL_CLI_SESSION attaches the call: the session's task names the archive, so routing
    // picks it by explicit mention, and says so on stderr while stdout stays the result.
    let call = run(
        &daemon,
        &["read_text_file", &read],
        &[("TOOL_CLI_SESSION", &id)],
        0,
    );
    assert!(stdout(&call).contains("three"), "{}", stdout(&call));
    assert!(
        stderr(&call).contains("routed to archive (rule explicit-mention"),
        "{}",
        stderr(&call)
    );
    // --session attaches it too.
    run(
        &daemon,
        &[
            "demo",
            "sql_query",
            r#"{"sql": "SELECT 1 AS one"}"#,
            "--session",
            &id,
        ],
        &[],
        0,
    );

    let summary = stdout(&run(&daemon, &["session", "summary", &id], &[], 0));
    for expected in [
        format!("session       {id}"),
        "task          read the notes kept in the archive".to_owned(),
        "calls         2 (2 executed, 0 errors)".to_owned(),
        "success rate  100.0%".to_owned(),
        "archive/read_text_file".to_owned(),
        "demo/sql_query".to_owned(),
        "explicit-mention  1".to_owned(),
        "named             1".to_owned(),
    ] {
        assert!(summary.contains(&expected), "{expected:?} in\n{summary}");
    }
    let summary = json_of(&run(
        &daemon,
        &["session", "summary", &id, "--json"],
        &[],
        0,
    ));
    assert_eq!(summary["calls"], json!(2));
    assert_eq!(summary["rulesFired"]["explicit-mention"], json!(1));
    assert_eq!(summary["labels"], json!(["ci"]));

    let list = stdout(&run(&daemon, &["session", "list"], &[], 0));
    let row = list
        .lines()
        .find(|line| line.starts_with(&id))
        .unwrap_or_else(|| panic!("{id} in\n{list}"));
    assert!(
        row.contains("ci") && row.contains("read the notes"),
        "{row}"
    );

    let closed = run(&daemon, &["session", "close", &id], &[], 0);
    assert_eq!(stdout(&closed), format!("closed {id}\n"));
    // Closed, it is unknown: exit 5 with the daemon's reason.
    let gone = run(&daemon, &["session", "summary", &id], &[], 5);
    assert!(stderr(&gone).contains("no session"), "{}", stderr(&gone));
}

#[test]
fn unknown_and_malformed_session_ids_are_refused() {
    let daemon = Daemon::start_demo();
    for command in ["summary", "close"] {
        let output = run(&daemon, &["session", command, "never-opened-1"], &[], 5);
        assert!(
            stderr(&output).contains("no session \"never-opened-1\""),
            "{}",
            stderr(&output)
        );
    }
    let output = run(&daemon, &["session", "summary", "not an id"], &[], 2);
    assert!(
        stderr(&output).contains("the session id must be"),
        "{}",
        stderr(&output)
    );
    let output = run(
        &daemon,
        &["demo", "sql_query", "{}"],
        &[("TOOL_CLI_SESSION", "bad id!")],
        2,
    );
    assert!(
        stderr(&output).contains("TOOL_CLI_SESSION must be"),
        "{}",
        stderr(&output)
    );
    // --json puts the refusal in the envelope.
    let output = run(
        &daemon,
        &["--json", "session", "close", "never-opened-2"],
        &[],
        5,
    );
    let envelope: Value = serde_json::from_str(stderr(&output).trim()).unwrap();
    assert_eq!(envelope["error"]["kind"], "unknownSession");
}

#[test]
fn routed_forms_dry_runs_hints_and_idempotency_keys() {
    let (daemon, file) = orchestra();
    let read = format!(r#"{{"path": "{file}"}}"#);

    // TOOL '{json}' and '*' TOOL '{json}' are routed; without a rule that separates docs and
    // archive, priority (config order) decides.
    for args in [
        vec!["read_text_file", &read],
        vec!["*", "read_text_file", &read],
    ] {
        let output = run(&daemon, &args, &[], 0);
        assert!(stdout(&output).contains("four"), "{}", stdout(&output));
        assert!(
            stderr(&output)
                .contains("routed to docs (rule priority); not archive (rejected by priority)"),
            "{}",
            stderr(&output)
        );
    }
    // '*' TOOL without arguments calls it with {}.
    let output = run(&daemon, &["*", "list_allowed_directories"], &[], 0);
    assert!(stdout(&output).contains("shared"), "{}", stdout(&output));
    // --hint names the other server.
    let output = run(
        &daemon,
        &["read_text_file", &read, "--hint", "the archive"],
        &[],
        0,
    );
    assert!(
        stderr(&output).contains("routed to archive (rule explicit-mention"),
        "{}",
        stderr(&output)
    );
    // A server named like a tool: the three-word form reaches the server, the two-word form
    // routes the tool (which only the everything peer offers).
    let output = run(
        &daemon,
        &["echo", "echo", r#"{"message": "three words"}"#],
        &[],
        0,
    );
    assert!(
        stdout(&output).contains("three words"),
        "{}",
        stdout(&output)
    );
    let output = run(&daemon, &["echo", r#"{"message": "two words"}"#], &[], 0);
    assert!(stdout(&output).contains("two words"), "{}", stdout(&output));
    // Malformed JSON in the routed form is a usage error that says what is wrong.
    let output = run(&daemon, &["read_text_file", "{path: /tmp/x}"], &[], 2);
    assert!(
        stderr(&output).contains("not valid JSON") && stderr(&output).contains("double quotes"),
        "{}",
        stderr(&output)
    );
    let output = run(&daemon, &["read_text_file", "{\"path\": 1", "more"], &[], 2);
    assert!(
        stderr(&output).contains("takes one JSON object"),
        "{}",
        stderr(&output)
    );
    // A tool nobody offers: exit 5 with the closest names.
    let output = run(&daemon, &["read_txt_file", "{}"], &[], 5);
    assert!(
        stderr(&output).contains("read_text_file"),
        "{}",
        stderr(&output)
    );

    // --dry-run prints the plan and runs nothing: the session counts the call, not an execution.
    let output = run(
        &daemon,
        &["read_text_file", &read, "--dry-run", "--session", "dry-1"],
        &[],
        0,
    );
    let plan = stdout(&output);
    for expected in [
        "dry run of docs/read_text_file: would run; nothing was sent to any server",
        "server:      docs (rule priority); not archive (rejected by priority)",
        "why:         no earlier rule separated the servers",
        "validation:  passed",
    ] {
        assert!(plan.contains(expected), "{expected:?} in\n{plan}");
    }
    let summary = daemon.call("sessionSummary", json!({"sessionId": "dry-1"}));
    assert_eq!(summary["calls"], json!(1));
    assert_eq!(summary["executed"], json!(0));
    // --json: the daemon's answer; a call the real pipeline would refuse exits with its code.
    let output = run(
        &daemon,
        &["demo", "sql_query", r#"{"sql": 7}"#, "--dry-run", "--json"],
        &[],
        5,
    );
    let plan = json_of(&output);
    assert_eq!(plan["executed"], json!(false));
    assert_eq!(plan["wouldBlockBecause"]["code"], json!(-32602));
    let output = run(
        &daemon,
        &["demo", "sql_query", r#"{"sql": 7}"#, "--dry-run"],
        &[],
        5,
    );
    assert!(
        stdout(&output).contains("would be refused (-32602)")
            && stdout(&output).contains("refused by:  -32602 invalidArguments"),
        "{}",
        stdout(&output)
    );

    // --dry-run on a tool the token cannot see is refused like the real call, nothing planned.
    let minted = daemon.call("mintToken", json!({"servers": ["demo"]}));
    let scoped = minted["token"].as_str().unwrap();
    let output = run(
        &daemon,
        &["docs", "read_text_file", &read, "--dry-run"],
        &[("TOOL_CLI_TOKEN", scoped)],
        9,
    );
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("is not permitted: this token's scope"),
        "{}",
        stderr(&output)
    );
    let output = run(
        &daemon,
        &["read_text_file", &read, "--dry-run"],
        &[("TOOL_CLI_TOKEN", scoped)],
        5,
    );
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));

    // --idempotency-key: the repeat is answered from memory; the key for another call is refused.
    let query = r#"{"sql": "SELECT count(*) AS n FROM customers"}"#;
    let first = json_of(&run(
        &daemon,
        &[
            "demo",
            "sql_query",
            query,
            "--idempotency-key",
            "k-1",
            "--json",
        ],
        &[],
        0,
    ));
    assert_ne!(first["_meta"]["tool-cli/replayed"], json!(true));
    let again = json_of(&run(
        &daemon,
        &[
            "demo",
            "sql_query",
            query,
            "--idempotency-key",
            "k-1",
            "--json",
        ],
        &[],
        0,
    ));
    assert_eq!(again["_meta"]["tool-cli/replayed"], json!(true));
    assert_eq!(again["structuredContent"], first["structuredContent"]);
    let output = run(
        &daemon,
        &[
            "demo",
            "sql_query",
            r#"{"sql": "SELECT 2"}"#,
            "--idempotency-key",
            "k-1",
        ],
        &[],
        5,
    );
    assert!(stderr(&output).contains("k-1"), "{}", stderr(&output));

    // Call flags on commands they mean nothing to are refused.
    let output = run(&daemon, &["health", "--dry-run"], &[], 2);
    assert!(
        stderr(&output).contains("--dry-run applies only"),
        "{}",
        stderr(&output)
    );

    // health --tools: a row per tool called, under its server.
    let output = run(&daemon, &["health", "--tools"], &[], 0);
    let table = stdout(&output);
    let row = table
        .lines()
        .find(|line| line.starts_with("demo") && line.contains("sql_query"))
        .unwrap_or_else(|| panic!("a sql_query row in\n{table}"));
    assert!(row.contains("closed"), "{row}");
    assert!(
        table.lines().any(|line| line.starts_with("SERVER")
            && line.contains("TOOL")
            && line.contains("LAST USED")),
        "{table}"
    );
    let health = json_of(&run(&daemon, &["health", "--tools", "--json"], &[], 0));
    let demo = health["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|server| server["name"] == "demo")
        .unwrap()
        .clone();
    let tools = demo["tools"].as_array().expect("per-tool statistics");
    let sql = tools
        .iter()
        .find(|tool| tool["name"] == "sql_query")
        .unwrap();
    // Only the first keyed call reached the server: the replay and the conflict did not, and
    // neither did the dry-runs.
    assert_eq!(sql["calls"], json!(1), "{sql:#}");
}

#[test]
fn the_agent_command_prints_progress_and_the_answer() {
    let (daemon, file) = orchestra();
    let task = format!("Read {file} and tell me how many lines it has");

    let output = run(&daemon, &["agent", &task], &[], 0);
    assert_eq!(stdout(&output), format!("{file} has 4 lines.\n"));
    let progress = stderr(&output);
    for expected in [
        "tool-cli: agent: starting run cli-",
        "started: backend offline, model offline-planner",
        "step 1: llm tool_use (0 in, 0 out tokens), $0.0000 so far",
        "step 1: call */read_text_file",
        "step 1: docs/read_text_file ok in",
        "rule priority",
        "run completed, $0.0000 in all",
    ] {
        assert!(progress.contains(expected), "{expected:?} in\n{progress}");
    }

    // --json: the whole result; --session puts the run's calls in that session.
    let output = run(
        &daemon,
        &[
            "agent",
            &task,
            "--json",
            "--session",
            "agent-cli",
            "--max-steps",
            "4",
        ],
        &[],
        0,
    );
    let result = json_of(&output);
    assert_eq!(result["status"], "completed");
    assert_eq!(result["keyFacts"]["line_count"], json!(4));
    assert!(result["runId"].as_str().unwrap().starts_with("cli-"));
    let summary = daemon.call("sessionSummary", json!({"sessionId": "agent-cli"}));
    // The run's tool call, beside its LLM calls (recorded under the server `llm`).
    let used = summary["toolsUsed"].as_array().expect("toolsUsed");
    assert!(
        used.iter().any(|tool| tool["tool"] == "read_text_file"),
        "{summary:#}"
    );

    // --dry-run plans: the tool call is a dry-run.
    let output = run(&daemon, &["agent", &task, "--dry-run", "--json"], &[], 0);
    let result = json_of(&output);
    assert_eq!(result["toolCalls"][0]["result"]["executed"], json!(false));

    // A task the toolkit cannot do: the planner says so (exit 11), naming what is missing and
    // the nearest tools (the README promises them; issue 26 found an answer without).
    let output = run(&daemon, &["agent", "Write me a poem"], &[], 11);
    assert!(
        stdout(&output).starts_with("I can't do that with the available tools"),
        "{}",
        stdout(&output)
    );
    assert!(
        stdout(&output).contains("; the nearest are "),
        "{}",
        stdout(&output)
    );
    assert!(
        stderr(&output).contains("the agent could not do the task"),
        "{}",
        stderr(&output)
    );
    // A change to the data: refused (exit 11), nothing run.
    let output = run(
        &daemon,
        &["agent", "Delete all the cancelled orders", "--json"],
        &[],
        11,
    );
    let result = json_of(&output);
    assert_eq!(result["status"], "refused", "{result:#}");
    assert_eq!(result["toolCalls"], json!([]));
    // A task whose tool fails: failed, exit 1, the tool's reason on stderr.
    let output = run(
        &daemon,
        &["agent", "What's the exchange rate from USD to XYZ?"],
        &[],
        1,
    );
    assert!(
        stderr(&output).contains("no rate from USD to XYZ"),
        "{}",
        stderr(&output)
    );

    // Bad inputs: caught before any daemon (2), or by the daemon (5).
    for (args, expected) in [
        (vec!["agent", ""], "the task is empty"),
        (
            vec!["agent", "x", "--max-cost", "-1"],
            "--max-cost must be a positive number",
        ),
        (
            vec!["agent", "x", "--max-steps", "0"],
            "--max-steps must be",
        ),
    ] {
        let output = run(&daemon, &args, &[], 2);
        assert!(stderr(&output).contains(expected), "{}", stderr(&output));
    }
    let output = run(&daemon, &["agent", "x", "--backend", "nope"], &[], 5);
    assert!(
        stderr(&output).contains("unknown agent backend \"nope\""),
        "{}",
        stderr(&output)
    );
}

fn daemon_with_llm(llm: &ScriptedLlm) -> Daemon {
    Daemon::start_with_dir_and(
        |dir| json!({"mcpServers": {"demo": demo_server(dir)}, "agent": agent_config(llm, 10.0)}),
        DaemonOptions {
            env: vec![("SCRIPTED_LLM_KEY".into(), "sk-cli-e2e-77aa".into())],
            ..DaemonOptions::default()
        },
    )
}

#[test]
fn a_run_halted_by_its_cost_ceiling_exits_10() {
    // One scripted turn per run: a tool call reporting usage that leaves no room for another.
    let turn = || LlmReply::Stream(tool_call_turn("describe_schema", &json!({}), 8_500, 100));
    let llm = ScriptedLlm::start(vec![turn(), turn()]);
    let daemon = daemon_with_llm(&llm);
    let output = run(
        &daemon,
        &["agent", "Describe the shop's tables", "--max-cost", "0.10"],
        &[],
        10,
    );
    let progress = stderr(&output);
    assert!(progress.contains("halted (cost_ceiling)"), "{progress}");
    assert!(progress.contains("Raise --max-cost"), "{progress}");
    assert_eq!(llm.requests().len(), 1, "no call past the ceiling");
    let output = run(
        &daemon,
        &[
            "--json",
            "agent",
            "Describe the shop's tables",
            "--max-cost",
            "0.10",
        ],
        &[],
        10,
    );
    let result = json_of(&output);
    assert_eq!(result["haltReason"], "cost_ceiling");
    assert!(result["usage"]["costUsd"].as_f64().unwrap() <= 0.10);
    let envelope: Value = serde_json::from_str(
        stderr(&output)
            .lines()
            .last()
            .expect("the envelope is the last line"),
    )
    .unwrap();
    assert_eq!(envelope["error"]["kind"], "agentHalted");
    assert_eq!(envelope["error"]["exitCode"], json!(10));
}

#[test]
fn ctrl_c_cancels_the_run_and_exits_130() {
    let llm = ScriptedLlm::start(vec![LlmReply::Hang]);
    let daemon = daemon_with_llm(&llm);
    let mut command = daemon.client_command();
    command
        .args(["agent", "Describe the shop's tables"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().expect("spawn tool-cli");
    let pid = child.id() as libc::pid_t;
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });

    // The run is in its LLM call, which the scripted server holds: now Ctrl-C.
    assert!(llm.wait_for_request(Duration::from_secs(60)), "no LLM call");
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our own child's.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let output = finished
        .recv_timeout(Duration::from_secs(60))
        .expect("tool-cli exits after Ctrl-C")
        .expect("its output");
    assert_exit(&output, 130);
    let progress = stderr(&output);
    assert!(
        progress.contains("interrupted: cancelling run cli-"),
        "{progress}"
    );
    assert!(
        progress.contains("tool-cli: error: interrupted: the daemon cancelled run cli-"),
        "{progress}"
    );
    assert!(stdout(&output).is_empty());
    // The daemon ended the run as cancelled, and dropped the LLM request.
    let run_id = progress
        .split("starting run ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .expect("the run id on stderr")
        .trim()
        .to_owned();
    let events = daemon.call(
        "agentEvents",
        json!({"runId": run_id, "after": 0, "waitMs": 30000}),
    );
    let last = events["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["type"], "final", "{events:#}");
    assert_eq!(last["haltReason"], "cancelled");
    assert!(llm.wait_for_hang_up(Duration::from_secs(60)));
}
