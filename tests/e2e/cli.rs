//! The `tool-cli` binary end to end: progressive discovery one word at a time, calls whose output
//! pipes into a JSON parser, `--json` (and its error envelope on stderr), `--out` (the bytes of an
//! image), `SERVER --help`, resources, finding the daemon through the runtime file, a server's own
//! call timeout, a scoped token that sees nothing, and the documented exit codes for every kind of
//! failure (a dead port fails fast with 3, a reset during the identity check is 3, an unknown or
//! revoked token is 4).

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::output::{assert_exit, stderr, stdout};
use tool_cli_tests::{
    Daemon, client_command, count_recorded, eventually, everything_stdio, fault_server,
    fault_server_recording, free_port, python_fixture, run_with_timeout, scratch,
};

fn run_ok(daemon: &Daemon, args: &[&str]) -> String {
    let output = daemon.run_client(args, &[]);
    assert_exit(&output, 0);
    stdout(&output)
}

#[test]
fn progressive_discovery() {
    let daemon = Daemon::start_demo();

    let servers = run_ok(&daemon, &[]);
    assert!(servers.contains("demo"), "{servers}");

    let tools = run_ok(&daemon, &["demo"]);
    assert!(
        tools.contains("sql_query") && tools.contains("describe_schema"),
        "{tools}"
    );

    let schema = run_ok(&daemon, &["demo", "sql_query"]);
    for parameter in ["sql", "page_size", "offset"] {
        assert!(
            schema.contains(parameter),
            "schema shows {parameter}:\n{schema}"
        );
    }

    let call = run_ok(
        &daemon,
        &[
            "demo",
            "sql_query",
            r#"{"sql": "SELECT id, name FROM customers ORDER BY id", "page_size": 3}"#,
        ],
    );
    // Human output of a tool with structuredContent is that JSON: it pipes straight into jq.
    let parsed: Value = serde_json::from_str(&call)
        .unwrap_or_else(|err| panic!("stdout of a call is JSON ({err}):\n{call}"));
    assert_eq!(
        parsed["rows"].as_array().map(Vec::len),
        Some(3),
        "{parsed:#}"
    );
    assert_eq!(parsed["has_more"], true);
}

#[test]
fn arguments_can_come_from_stdin() {
    let daemon = Daemon::start_demo();
    let mut command = daemon.client_command();
    command.args(["demo", "sql_query", "-"]);
    let dir = scratch();
    let input = dir.path().join("args.json");
    std::fs::write(&input, r#"{"sql": "SELECT 7 AS seven"}"#).expect("write args");
    command.stdin(std::fs::File::open(&input).expect("open args"));
    let output = run_with_timeout(command, Duration::from_secs(60));
    assert_exit(&output, 0);
    assert!(stdout(&output).contains('7'), "{}", stdout(&output));
}

#[test]
fn json_output_is_lossless() {
    let daemon = Daemon::start_demo();

    let servers: Value = serde_json::from_str(&run_ok(&daemon, &["--json"])).expect("JSON");
    assert_eq!(servers["servers"][0]["name"], "demo");

    let schema: Value =
        serde_json::from_str(&run_ok(&daemon, &["--json", "demo", "sql_query"])).expect("JSON");
    assert_eq!(
        schema,
        daemon.call(
            "describeTool",
            json!({"server": "demo", "tool": "sql_query"})
        ),
        "--json of a schema is describeTool's result"
    );

    let call: Value = serde_json::from_str(&run_ok(
        &daemon,
        &[
            "--json",
            "demo",
            "sql_query",
            r#"{"sql": "SELECT 1 AS one"}"#,
        ],
    ))
    .expect("JSON");
    assert!(
        call["content"].is_array(),
        "the complete CallToolResult: {call:#}"
    );
    assert!(call["structuredContent"].is_object(), "{call:#}");
}

#[test]
fn out_writes_the_body_to_a_file() {
    let daemon = Daemon::start_demo();
    let dir = scratch();
    let file = dir.path().join("result.json");
    let file_text = file.to_string_lossy().into_owned();
    let printed = run_ok(
        &daemon,
        &[
            "--out",
            &file_text,
            "demo",
            "sql_query",
            r#"{"sql": "SELECT 1 AS one"}"#,
        ],
    );
    assert!(
        printed.contains(&file_text),
        "the summary names the file: {printed}"
    );
    assert_eq!(printed.trim().lines().count(), 1, "one line: {printed}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("read --out file"))
            .expect("the file holds JSON");
    assert_eq!(written["total_rows_matched"], 1, "{written:#}");
}

#[test]
fn resources_list_templates_and_read() {
    let daemon = Daemon::start_demo();
    let listed = run_ok(&daemon, &["resource", "list"]);
    assert!(listed.contains("demo://docs/readme"), "{listed}");
    let templates = run_ok(&daemon, &["resource", "templates", "--server", "demo"]);
    assert!(templates.contains("demo://tables/{table}"), "{templates}");
    let readme = run_ok(
        &daemon,
        &["resource", "read", "--server", "demo", "demo://docs/readme"],
    );
    assert!(readme.contains("sql_query"), "{readme}");
    // With a single connected server, --server may be left out.
    let table = run_ok(&daemon, &["resource", "read", "demo://tables/customers"]);
    assert!(!table.trim().is_empty());
}

#[test]
fn the_runtime_file_is_enough_to_find_the_daemon() {
    let daemon = Daemon::start_demo();
    let mut command = client_command();
    command.env(tool_cli_protocol::env::RUNTIME_DIR, &daemon.runtime_dir);
    let output = run_with_timeout(command, Duration::from_secs(60));
    assert_exit(&output, 0);
    assert!(stdout(&output).contains("demo"));
}

#[test]
fn exit_codes_say_what_went_wrong() {
    let daemon = Daemon::start_demo();

    let unknown_server = daemon.run_client(&["nope"], &[]);
    assert_exit(&unknown_server, 5);
    assert!(
        stderr(&unknown_server).contains("demo"),
        "lists known servers"
    );
    assert!(stdout(&unknown_server).is_empty(), "stdout stays clean");

    let unknown_tool = daemon.run_client(&["demo", "drop_table"], &[]);
    assert_exit(&unknown_tool, 5);
    assert!(
        stderr(&unknown_tool).contains("sql_query"),
        "lists known tools"
    );

    let invalid = daemon.run_client(&["demo", "sql_query", r#"{"sql": 5}"#], &[]);
    assert_exit(&invalid, 5);
    assert!(stderr(&invalid).contains("sql"), "{}", stderr(&invalid));

    let not_an_object = daemon.run_client(&["demo", "sql_query", "[1, 2]"], &[]);
    assert_exit(&not_an_object, 2);

    let tool_error = daemon.run_client(
        &["demo", "sql_query", r#"{"sql": "DELETE FROM orders"}"#],
        &[],
    );
    assert_exit(&tool_error, 6);

    let wrong_token = "f".repeat(64);
    // A token the daemon does not know is never sent, and it is reported as a token problem
    // (4), not as an impostor (8): the daemon says it knows no such token id.
    let refused = daemon.run_client(&[], &[("TOOL_CLI_TOKEN", wrong_token.as_str())]);
    assert_exit(&refused, 4);
    let message = stderr(&refused);
    assert!(
        message.contains("knows no live token with this id"),
        "{message}"
    );
    assert!(message.contains("the token was not sent"), "{message}");
}

#[test]
fn a_revoked_token_exits_4() {
    let daemon = Daemon::start_demo();
    let minted = daemon.call("mintToken", json!({"servers": ["demo"]}));
    let token = minted["token"].as_str().expect("a token").to_owned();
    assert_exit(
        &daemon.run_client(&[], &[("TOOL_CLI_TOKEN", token.as_str())]),
        0,
    );
    daemon.call("revokeToken", json!({"tokenId": minted["tokenId"]}));
    let revoked = daemon.run_client(&[], &[("TOOL_CLI_TOKEN", token.as_str())]);
    assert_exit(&revoked, 4);
    assert!(stderr(&revoked).contains("revoked"), "{}", stderr(&revoked));
}

#[test]
fn a_reset_during_the_identity_check_exits_3_with_a_retry_hint() {
    use std::io::Read as _;
    use std::os::fd::AsRawFd as _;
    // What a daemon at its connection cap does: accept, then drop the connection at once.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let resetter = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        let mut request = Vec::new();
        let mut chunk = [0u8; 1024];
        while !request.windows(4).any(|window| window == b"\r\n\r\n") {
            let read = stream.read(&mut chunk).expect("read the request");
            assert!(read > 0, "the client closed first");
            request.extend_from_slice(&chunk[..read]);
        }
        // A zero linger turns the close into a reset (RST).
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: setsockopt on an open socket with a properly sized linger value.
        let set = unsafe {
            libc::setsockopt(
                stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        assert_eq!(set, 0);
        String::from_utf8_lossy(&request).into_owned()
    });
    let mut command = client_command();
    command
        .env("TOOL_CLI_PORT", port.to_string())
        .env("TOOL_CLI_TOKEN", "0".repeat(64))
        .env("TOOL_CLI_RUNTIME_DIR", scratch().path());
    let output = run_with_timeout(command, Duration::from_secs(30));
    let request = resetter.join().expect("the listener thread");
    assert_exit(&output, 3);
    let message = stderr(&output);
    assert!(message.contains("retry in a moment"), "{message}");
    assert!(message.contains("the token was not sent"), "{message}");
    assert!(request.starts_with("POST /identity "), "{request}");
    assert!(!request.contains(&"0".repeat(64)), "{request}");
}

#[test]
fn a_servers_configured_timeout_applies_when_none_is_given() {
    // 700 ms, not the CLI's 30 s default: the CLI sends no timeoutMs of its own.
    let mut slow = fault_server(&[]);
    slow["timeoutMs"] = json!(700);
    let daemon = Daemon::start(json!({"mcpServers": {"slow": slow}}));
    let output = daemon.run_client(&["slow", "sleep", r#"{"ms": 20000}"#], &[]);
    assert_exit(&output, 7);
    let message = stderr(&output);
    assert!(
        message.contains("did not answer within 700 ms") && message.contains("raise --timeout"),
        "{message}"
    );
    // Within its timeout, the same tool answers.
    let output = daemon.run_client(&["slow", "sleep", r#"{"ms": 10}"#], &[]);
    assert_exit(&output, 0);
    // A timeout the user gives wins over the server's.
    let output = daemon.run_client(
        &["--timeout", "300", "slow", "sleep", r#"{"ms": 20000}"#],
        &[],
    );
    assert_exit(&output, 7);
    assert!(
        stderr(&output).contains("within 300 ms"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn out_saves_the_bytes_of_an_image_result() {
    let daemon = Daemon::start(json!({"mcpServers": {"everything": everything_stdio()}}));
    let dir = scratch();
    let file = dir.path().join("tiny.png");
    let file_text = file.to_string_lossy().into_owned();
    let output = daemon.run_client(
        &["everything", "get-tiny-image", "{}", "--out", &file_text],
        &[],
    );
    assert_exit(&output, 0);
    let bytes = std::fs::read(&file).expect("the --out file");
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "the file holds the PNG itself, not a placeholder: {:?}",
        String::from_utf8_lossy(&bytes[..bytes.len().min(80)])
    );
    assert_eq!(
        stdout(&output),
        format!("wrote {} bytes to {file_text}\n", bytes.len())
    );
}

#[test]
fn server_help_lists_that_servers_tools() {
    let daemon = Daemon::start_demo();
    for flag in ["--help", "-h"] {
        let help = run_ok(&daemon, &["demo", flag]);
        assert!(help.starts_with("Usage: tool-cli demo TOOL"), "{help}");
        assert!(help.contains("sql_query"), "{help}");
        assert!(help.contains("describe_schema"), "{help}");
    }
    let schema = run_ok(&daemon, &["demo", "sql_query", "--help"]);
    assert!(schema.contains("Parameters:"), "{schema}");
}

#[test]
fn json_failures_print_an_envelope_on_stderr() {
    let daemon = Daemon::start_demo();
    let output = daemon.run_client(&["--json", "nope"], &[]);
    assert_exit(&output, 5);
    assert!(stdout(&output).is_empty());
    let envelope: Value =
        serde_json::from_str(stderr(&output).trim()).expect("stderr is one JSON object");
    let error = &envelope["error"];
    assert_eq!(error["code"], -32602);
    assert_eq!(error["exitCode"], 5);
    assert_eq!(error["kind"], "unknownServer");
    assert_eq!(error["data"]["knownServers"], json!(["demo"]));
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("unknown server")
    );

    // A failure on the client's side has no JSON-RPC code.
    let mut command = client_command();
    command
        .args(["--json", "demo"])
        .env("TOOL_CLI_PORT", free_port().to_string())
        .env("TOOL_CLI_TOKEN", "0".repeat(64))
        .env("TOOL_CLI_RUNTIME_DIR", scratch().path());
    let output = run_with_timeout(command, Duration::from_secs(10));
    assert_exit(&output, 3);
    let envelope: Value = serde_json::from_str(stderr(&output).trim()).expect("JSON");
    assert_eq!(envelope["error"]["code"], Value::Null, "{envelope}");
    assert_eq!(envelope["error"]["kind"], "unreachable");

    // A usage error too.
    let output = daemon.run_client(&["--json", "demo", "sql_query", "[1]"], &[]);
    assert_exit(&output, 2);
    let envelope: Value = serde_json::from_str(stderr(&output).trim()).expect("JSON");
    assert_eq!(envelope["error"]["kind"], "usage");
}

#[test]
fn a_scoped_token_that_sees_no_server_is_told_so() {
    let daemon = Daemon::start_demo();
    let minted = daemon.call("mintToken", json!({"servers": ["no-such-server*"]}));
    let token = minted["token"].as_str().expect("a token");
    let output = daemon.run_client(&[], &[("TOOL_CLI_TOKEN", token)]);
    assert_exit(&output, 0);
    let text = stdout(&output);
    assert!(
        text.starts_with("this token can see no server: its scope matches none"),
        "{text}"
    );
    assert!(!text.contains("add some"), "{text}");
}

#[test]
fn a_timeout_exits_7() {
    let daemon = Daemon::start(json!({"mcpServers": {"py": python_fixture()}}));
    let output = daemon.run_client(
        &["--timeout", "300", "py", "sleep", r#"{"ms": 10000}"#],
        &[],
    );
    assert_exit(&output, 7);
}

#[test]
fn a_dead_port_exits_3_quickly_with_a_clear_message() {
    let port = free_port().to_string();
    let mut command = client_command();
    command
        .env(tool_cli_protocol::env::PORT, &port)
        .env(tool_cli_protocol::env::TOKEN, "0".repeat(64))
        .env(tool_cli_protocol::env::RUNTIME_DIR, scratch().path());
    // Bounded well below the default request timeout: a refused connection must not wait it out.
    let output = run_with_timeout(command, Duration::from_secs(10));
    assert_exit(&output, 3);
    let message = stderr(&output);
    assert!(
        message.contains(&port),
        "the message names the port: {message}"
    );
    assert!(stdout(&output).is_empty());
}

#[test]
fn no_daemon_and_no_runtime_file_exits_3() {
    let dir = scratch();
    let mut command = client_command();
    command.env(tool_cli_protocol::env::RUNTIME_DIR, dir.path());
    let output = run_with_timeout(command, Duration::from_secs(10));
    assert_exit(&output, 3);
    assert!(!stderr(&output).is_empty());
}

#[test]
fn help_and_version_need_no_daemon() {
    for flag in ["--help", "--version"] {
        let mut command = client_command();
        command.arg(flag);
        let output = run_with_timeout(command, Duration::from_secs(10));
        assert_exit(&output, 0);
        assert!(!stdout(&output).is_empty(), "{flag} prints something");
    }
}

#[test]
fn a_client_that_goes_away_has_its_call_cancelled_upstream() {
    let dir = scratch();
    let record = dir.path().join("hang.jsonl");
    let daemon = Daemon::start(json!({"mcpServers": {
        "flaky": fault_server_recording(&record, &[])
    }}));
    let mut command = daemon.client_command();
    command
        .args(["flaky", "hang", "{}"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut client = command.spawn().expect("spawn tool-cli");
    let reached = eventually(Duration::from_secs(30), || {
        count_recorded(&record, "tools/call", Some("hang")) == 1
    });
    assert!(reached, "the call reached the server");
    // The client dies mid-call (as a dropped future does in the library): its connection goes,
    // and the daemon tells the server to stop.
    client.kill().expect("kill tool-cli");
    client.wait().expect("reap tool-cli");
    let cancelled = eventually(Duration::from_secs(30), || {
        count_recorded(&record, "notifications/cancelled", None) == 1
    });
    assert!(cancelled, "notifications/cancelled reached the server");
}
