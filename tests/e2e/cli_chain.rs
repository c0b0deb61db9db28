//! `tool-cli chain` and `tool-cli many` against the real daemon with the demo server and the
//! everything peer: a chain whose second step takes a value from the first's result (from a
//! file, from stdin and as words), a step that fails and stops the chain, a fan-out where some
//! calls fail and the others still answer, dry-runs, sessions, and every bad input the command
//! names (a malformed or missing file, an unknown member, an unknown server, a binding to a
//! step that has not run, a pointer that is not in the result).

use std::process::Output;

use serde_json::{Value, json};
use tool_cli_tests::output::{stderr, stdout};
use tool_cli_tests::{Daemon, demo_server, everything_stdio, run_with_timeout};

/// Runs `tool-cli args…` and checks its exit code.
fn run(daemon: &Daemon, args: &[&str], code: i32) -> Output {
    let output = daemon.run_client(args, &[]);
    assert_eq!(
        output.status.code(),
        Some(code),
        "tool-cli {args:?}\nstdout:\n{}\nstderr:\n{}",
        stdout(&output),
        stderr(&output)
    );
    output
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("stdout is not JSON ({err}):\n{}", stdout(output)))
}

/// The demo server and the everything peer.
fn daemon() -> Daemon {
    Daemon::start_with_dir(
        |dir| json!({"mcpServers": {"demo": demo_server(dir), "everything": everything_stdio()}}),
    )
}

/// A greeting read from SQLite in step 0, echoed by another server in step 1.
fn greeting_chain() -> Value {
    json!({"steps": [
        {"server": "demo", "tool": "sql_query",
         "arguments": {"sql": "SELECT 'hello from step 0' AS greeting"}},
        {"server": "everything", "tool": "echo",
         "arguments": {"message": {"$from": "0", "pointer": "/structuredContent/rows/0/greeting"}}}
    ]})
}

#[test]
fn a_chain_passes_an_earlier_result_on_from_a_file_stdin_or_words() {
    let daemon = daemon();
    let file = daemon.dir().join("greeting.json");
    std::fs::write(&file, greeting_chain().to_string()).unwrap();
    let file = file.to_str().unwrap();

    let text = stdout(&run(&daemon, &["chain", file], 0));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "== step 0: demo/sql_query: ok", "{text}");
    assert!(
        text.contains("\"greeting\": \"hello from step 0\""),
        "{text}"
    );
    assert!(
        text.contains("== step 1: everything/echo: ok\nEcho: hello from step 0\n"),
        "{text}"
    );

    // `--output json`: the daemon's answer whole.
    let answer = json_of(&run(&daemon, &["chain", file, "--output", "json"], 0));
    assert_eq!(answer["completed"], true);
    assert_eq!(answer["steps"][1]["server"], "everything");
    assert_eq!(
        answer["steps"][1]["result"]["content"][0]["text"],
        "Echo: hello from step 0"
    );

    // The bare array of steps, on stdin.
    let bare = daemon.dir().join("bare.json");
    std::fs::write(&bare, greeting_chain()["steps"].to_string()).unwrap();
    let mut command = daemon.client_command();
    command
        .args(["chain", "-", "--json"])
        .stdin(std::fs::File::open(&bare).unwrap());
    let output = run_with_timeout(command, tool_cli_tests::CLIENT_TIMEOUT);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        json_of(&output)["steps"][1]["result"]["content"][0]["text"],
        "Echo: hello from step 0"
    );

    // The same chain as words; the binding lives in the JSON of the second word, and the
    // second step is routed (no server named).
    let text = stdout(&run(
        &daemon,
        &[
            "chain",
            "demo sql_query {\"sql\": \"SELECT 'routed' AS word\"}",
            "* echo {\"message\": {\"$from\": \"0\", \"pointer\": \"/structuredContent/rows/0/word\"}}",
        ],
        0,
    ));
    assert!(
        text.contains("== step 1: everything/echo (routed, rule "),
        "{text}"
    );
    assert!(text.contains("Echo: routed"), "{text}");
}

#[test]
fn a_failing_step_stops_the_chain_and_is_named_with_its_exit_code() {
    let daemon = daemon();
    // Step 1 asks for a table that does not exist: the tool reports an error (exit 6), and
    // step 2 never runs.
    let output = run(
        &daemon,
        &[
            "chain",
            "demo sql_query {\"sql\": \"SELECT 1 AS n\"}",
            "demo sql_query {\"sql\": \"SELECT * FROM no_such_table\"}",
            "everything echo {\"message\": \"never\"}",
        ],
        6,
    );
    let text = stdout(&output);
    assert!(text.contains("== step 0: demo/sql_query: ok"), "{text}");
    assert!(
        text.contains("== step 1: demo/sql_query: failed (exit 6, see stderr)"),
        "{text}"
    );
    assert!(text.contains("== step 2: not run"), "{text}");
    assert!(!text.contains("never"), "{text}");
    let error = stderr(&output);
    assert!(
        error.starts_with(
            "tool-cli: error: step 1 of 3 (demo/sql_query) failed, so the chain stopped (1 later \
             step did not run): demo/sql_query reported an error:"
        ),
        "{error}"
    );
    assert!(error.contains("no such table: no_such_table"), "{error}");

    // Arguments the schema refuses: exit 5, and with --json the envelope names the step.
    let output = run(
        &daemon,
        &[
            "chain",
            "everything echo {\"message\": \"first\"}",
            "demo sql_query {\"sqll\": \"SELECT 1\"}",
            "--json",
        ],
        5,
    );
    let answer = json_of(&output);
    assert_eq!(answer["completed"], false);
    assert_eq!(answer["steps"].as_array().unwrap().len(), 2);
    assert_eq!(answer["steps"][1]["error"]["code"], -32602);
    let envelope: Value = serde_json::from_str(stderr(&output).trim()).unwrap();
    assert_eq!(envelope["error"]["kind"], "stepsFailed");
    assert_eq!(envelope["error"]["exitCode"], 5);
    assert_eq!(envelope["error"]["data"]["ran"], 2);
    let failed = &envelope["error"]["data"]["failed"][0];
    assert_eq!(failed["index"], 1);
    assert_eq!(failed["label"], "demo/sql_query");
    assert_eq!(failed["kind"], "invalidArguments");
}

#[test]
fn many_answers_every_call_and_names_each_failure() {
    let daemon = daemon();
    let output = run(
        &daemon,
        &[
            "many",
            "demo describe_schema {\"table\": \"orders\"}",
            "everything echo {\"message\": \"hi\"}",
            "nosuch echo {}",
            "demo sql_query {\"sql\": \"SELECT * FROM nope\"}",
            "--max-concurrent",
            "2",
        ],
        5,
    );
    let text = stdout(&output);
    assert!(
        text.contains("== call 0: demo/describe_schema: ok"),
        "{text}"
    );
    assert!(text.contains("\"name\": \"orders\""), "{text}");
    assert!(
        text.contains("== call 1: everything/echo: ok\nEcho: hi\n"),
        "{text}"
    );
    assert!(
        text.contains("== call 2: nosuch/echo: failed (exit 5, see stderr)"),
        "{text}"
    );
    assert!(
        text.contains("== call 3: demo/sql_query: failed (exit 6, see stderr)"),
        "{text}"
    );
    let error = stderr(&output);
    assert!(
        error.starts_with("tool-cli: error: 2 of 4 calls failed:\n"),
        "{error}"
    );
    assert!(
        error.contains(
            "  call 2 (nosuch/echo): unknown server \"nosuch\"; known servers: demo, everything"
        ),
        "{error}"
    );
    assert!(
        error.contains("  call 3 (demo/sql_query): demo/sql_query reported an error:"),
        "{error}"
    );

    // From a file, with the width in the document: all succeed, in request order.
    let file = daemon.dir().join("calls.json");
    let calls: Vec<Value> = (0..5)
        .map(|n| json!({"server": "everything", "tool": "echo", "arguments": {"message": format!("m{n}")}}))
        .collect();
    std::fs::write(
        &file,
        json!({"calls": calls, "maxConcurrent": 3}).to_string(),
    )
    .unwrap();
    let answer = json_of(&run(
        &daemon,
        &["many", file.to_str().unwrap(), "--json"],
        0,
    ));
    let results = answer["results"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    for (n, result) in results.iter().enumerate() {
        assert_eq!(result["index"], n);
        assert_eq!(
            result["result"]["content"][0]["text"],
            format!("Echo: m{n}")
        );
    }
}

#[test]
fn dry_runs_and_sessions_cover_every_call() {
    let daemon = daemon();
    let session = stdout(&run(&daemon, &["session", "open", "--task", "chains"], 0));
    let session = session.trim();

    // A dry-run contacts no server: the plans print, and the session counts no executed call.
    let text = stdout(&run(
        &daemon,
        &[
            "chain",
            "--dry-run",
            "--session",
            session,
            "demo sql_query {\"sql\": \"SELECT 1\"}",
            "everything echo {\"message\": \"x\"}",
        ],
        0,
    ));
    assert!(
        text.contains("== step 0: demo/sql_query: would run"),
        "{text}"
    );
    assert!(
        text.contains("dry run of everything/echo: would run; nothing was sent to any server"),
        "{text}"
    );
    let summary = json_of(&run(&daemon, &["session", "summary", session, "--json"], 0));
    assert_eq!(summary["calls"], 2, "{summary}");
    assert_eq!(summary["executed"], 0, "{summary}");

    // A fan-out's dry-run that would be refused exits as the refusal would.
    let output = run(
        &daemon,
        &[
            "many",
            "--dry-run",
            "demo sql_query {\"sqll\": \"SELECT 1\"}",
            "everything echo {\"message\": \"x\"}",
        ],
        5,
    );
    let text = stdout(&output);
    assert!(
        text.contains("dry run of demo/sql_query: would be refused (-32602)"),
        "{text}"
    );
    assert!(
        text.contains("== call 1: everything/echo: would run"),
        "{text}"
    );
    assert!(
        stderr(&output).contains("call 0 of 2 (demo/sql_query) failed"),
        "{}",
        stderr(&output)
    );

    // Real calls in the session, which the summary then counts.
    run(
        &daemon,
        &[
            "many",
            "everything echo {\"message\": \"a\"}",
            "everything echo {\"message\": \"b\"}",
        ],
        0,
    );
    let output = daemon.run_client(
        &["many", "everything echo {\"message\": \"c\"}"],
        &[("TOOL_CLI_SESSION", session)],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let summary = json_of(&run(&daemon, &["session", "summary", session, "--json"], 0));
    assert_eq!(summary["executed"], 1, "{summary}");

    // A document naming another session than the flag is refused before anything is sent.
    let other = daemon.dir().join("other-session.json");
    std::fs::write(
        &other,
        json!({"steps": [{"server": "everything", "tool": "echo", "arguments": {"message": "x"}}],
               "sessionId": "another"})
        .to_string(),
    )
    .unwrap();
    let output = run(
        &daemon,
        &["chain", other.to_str().unwrap(), "--session", session],
        2,
    );
    assert!(
        stderr(&output).contains("the document's sessionId \"another\" and --session"),
        "{}",
        stderr(&output)
    );
    let summary = json_of(&run(&daemon, &["session", "summary", session, "--json"], 0));
    assert_eq!(summary["calls"], 3, "{summary}");
}

#[test]
fn bad_documents_and_references_get_clear_errors() {
    let daemon = daemon();
    let dir = daemon.dir();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };

    // Malformed JSON: exit 2, with where and what was expected.
    let malformed = write("malformed.json", "{\"steps\": [\n");
    let output = run(&daemon, &["chain", &malformed], 2);
    let error = stderr(&output);
    assert!(
        error.contains(&format!("{malformed} is not valid JSON: EOF while parsing")),
        "{error}"
    );
    assert!(error.contains("expected {\"steps\": ["), "{error}");

    // A file that is not there.
    let missing = dir.join("missing.json");
    let output = run(&daemon, &["many", missing.to_str().unwrap()], 2);
    assert!(
        stderr(&output).contains("cannot read") && stderr(&output).contains("missing.json"),
        "{}",
        stderr(&output)
    );

    // A member the protocol does not have (the daemon would silently ignore it).
    let typo = write(
        "typo.json",
        r#"[{"server": "demo", "tool": "sql_query", "args": {"sql": "SELECT 1"}}]"#,
    );
    let output = run(&daemon, &["chain", &typo], 2);
    assert!(
        stderr(&output)
            .contains("steps[0] has an unknown member \"args\"; did you mean \"arguments\"?"),
        "{}",
        stderr(&output)
    );

    // An unknown server stops the chain at its step, with the known servers listed.
    let output = run(
        &daemon,
        &["chain", "nosuch echo {}", "demo describe_schema"],
        5,
    );
    assert!(
        stderr(&output).contains(
            "step 0 of 2 (nosuch/echo) failed, so the chain stopped (1 later step did not run): \
             unknown server \"nosuch\"; known servers: demo, everything"
        ),
        "{}",
        stderr(&output)
    );

    // A binding to a step that has not run by then: refused before anything runs.
    let forward = write(
        "forward.json",
        &json!({"steps": [
            {"server": "everything", "tool": "echo", "arguments": {"message": "a"}},
            {"server": "everything", "tool": "echo",
             "arguments": {"message": {"$from": "5", "pointer": "/content/0/text"}}}
        ]})
        .to_string(),
    );
    let output = run(&daemon, &["chain", &forward], 5);
    assert!(
        stderr(&output).contains(
            "step 1 arguments/message binds to step 5, which has not run by then; a step can \
             only use the results of earlier steps (0-0)"
        ),
        "{}",
        stderr(&output)
    );
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));

    // A pointer that is not in the earlier result: that step fails, naming the pointer.
    let output = run(
        &daemon,
        &[
            "chain",
            "demo sql_query {\"sql\": \"SELECT 1 AS n\"}",
            "everything echo {\"message\": {\"$from\": \"0\", \"pointer\": \"/structuredContent/nope\"}}",
        ],
        5,
    );
    assert!(
        stderr(&output).contains("pointer \"/structuredContent/nope\" is not in step 0's result"),
        "{}",
        stderr(&output)
    );
    assert!(
        stdout(&output).contains("== step 1: everything/echo: failed (exit 5, see stderr)"),
        "{}",
        stdout(&output)
    );

    // A word that is not 'SERVER TOOL [ARGS_JSON]'.
    let output = run(&daemon, &["many", "demo describe_schema", "loose"], 2);
    assert!(
        stderr(&output)
            .contains("call 1 (\"loose\") must be one quoted word 'SERVER TOOL [ARGS_JSON]'"),
        "{}",
        stderr(&output)
    );
}
