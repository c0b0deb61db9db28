//! What the MCP gateway tells a host between its requests, on the session's standalone stream
//! (`GET /mcp`, `daemon/src/edge/gateway/notices.rs`): driven by the official MCP Python SDK
//! client, whose transport opens that stream by itself
//! (`tests/fixtures/mcp_gateway_notices_client.py`), over HTTP and through `tool-cli mcp`, and
//! by raw HTTP. The upstream that changes is the fault server's `change_tools`, which edits its
//! list and sends `notifications/tools/list_changed`.
//!
//! Input → test:
//! - an upstream's tools change: the host is told and its next `tools/list` shows the change,
//!   over HTTP: `the_python_sdk_hears_that_its_tool_list_changed`
//! - the same through `tool-cli mcp` over stdio: `tool_cli_mcp_writes_the_streams_notices`
//! - a resource the host subscribed to is updated (server-everything's simulated updates), and
//!   the server's resource list changes (a resource its `gzip-file-as-resource` makes):
//!   `the_python_sdk_hears_resource_updates_and_list_changes`
//! - a scoped token's stream hears nothing of another server's change, and daemon shutdown
//!   ends every open stream (the daemon exits, the streams close); a progressive session's
//!   stream is never told (its meta-tools do not change):
//!   `a_scoped_stream_hears_only_its_scope_and_shutdown_ends_the_streams`
//! - `GET` without `Accept: text/event-stream` (406), without a session (400), with an unknown
//!   session (404), a second stream of one session (409); a deleted session's stream ends:
//!   `a_get_without_accept_or_session_or_a_second_one_is_refused`

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, DaemonOptions, client_bin, eventually, everything_stdio, fault_server,
    http_request_bytes, open_http_stream, raw_http_exchange, repo_root,
};

/// Longest wait for any one event.
const WAIT: Duration = Duration::from_secs(30);

/// What the daemon logs when a standalone stream opens.
const OPENED: &str = "gateway standalone stream opened";

/// How many standalone streams the daemon has opened so far.
fn streams_opened(daemon: &Daemon) -> usize {
    daemon.stderr().matches(OPENED).count()
}

/// The SDK driver, running: its stdin and its stdout's lines.
struct Driver {
    child: Child,
    lines: BufReader<ChildStdout>,
}

impl Driver {
    fn start(args: &[String], env: &[(&str, String)]) -> Driver {
        let mut child = Command::new(tool_cli_tests::peer_python())
            .arg(repo_root().join("tests/fixtures/mcp_gateway_notices_client.py"))
            .args(args)
            .envs(env.iter().map(|(name, value)| (*name, value.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the SDK driver starts");
        let lines = BufReader::new(child.stdout.take().expect("piped"));
        Driver { child, lines }
    }

    /// Its next report line (the driver has its own timeouts and exits on them).
    fn report(&mut self) -> Value {
        let mut line = String::new();
        self.lines
            .read_line(&mut line)
            .expect("the driver's stdout");
        serde_json::from_str(line.trim()).unwrap_or_else(|error| panic!("{error}: {line:?}"))
    }

    fn go(&mut self) {
        let stdin = self.child.stdin.as_mut().expect("piped");
        stdin
            .write_all(b"go\n")
            .and_then(|()| stdin.flush())
            .expect("the driver's stdin");
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn names(report: &Value, key: &str) -> Vec<String> {
    report[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key}: {report}"))
        .iter()
        .map(|name| name.as_str().unwrap().to_owned())
        .collect()
}

/// Runs the driver until it is ready, changes `flaky`'s tools once its stream is open, and
/// answers its final report.
fn hear_a_change(daemon: &Daemon, args: Vec<String>, env: &[(&str, String)]) -> Value {
    let before = streams_opened(daemon);
    let mut args = args;
    args.extend([
        "--expect".to_owned(),
        "notifications/tools/list_changed".to_owned(),
    ]);
    let mut driver = Driver::start(&args, env);
    let ready = driver.report();
    let listed = names(&ready, "ready");
    assert!(listed.contains(&"flaky__echo".to_owned()), "{ready}");
    assert!(!listed.contains(&"flaky__appeared".to_owned()), "{ready}");
    assert!(
        eventually(WAIT, || streams_opened(daemon) > before),
        "the SDK never opened its standalone stream: {}",
        daemon.stderr()
    );
    daemon.call_tool("flaky", "change_tools", json!({"add": "appeared"}));
    driver.go();
    driver.report()
}

fn assert_heard(report: &Value) {
    let methods: Vec<&str> = report["notified"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"))
        .iter()
        .filter_map(|entry| entry["method"].as_str())
        .collect();
    assert!(
        methods.contains(&"notifications/tools/list_changed"),
        "{report}"
    );
    assert!(
        names(report, "tools").contains(&"flaky__appeared".to_owned()),
        "the next tools/list shows the change: {report}"
    );
}

#[test]
fn the_python_sdk_hears_that_its_tool_list_changed() {
    let daemon = Daemon::start(json!({"mcpServers": {"flaky": fault_server(&[])}}));
    let args = vec![
        "--url".to_owned(),
        format!("http://127.0.0.1:{}/mcp", daemon.port),
        "--token".to_owned(),
        daemon.token.clone(),
    ];
    assert_heard(&hear_a_change(&daemon, args, &[]));
}

#[test]
fn tool_cli_mcp_writes_the_streams_notices() {
    let daemon = Daemon::start(json!({"mcpServers": {"flaky": fault_server(&[])}}));
    let env = [
        ("TOOL_CLI_PORT", daemon.port.to_string()),
        ("TOOL_CLI_TOKEN", daemon.token.clone()),
        (
            "TOOL_CLI_RUNTIME_DIR",
            daemon.runtime_dir.to_string_lossy().into_owned(),
        ),
    ];
    let args = vec![
        "--command".to_owned(),
        client_bin().to_string_lossy().into_owned(),
        "--arg".to_owned(),
        "mcp".to_owned(),
    ];
    assert_heard(&hear_a_change(&daemon, args, &env));
}

#[test]
fn the_python_sdk_hears_resource_updates_and_list_changes() {
    let daemon = Daemon::start(json!({"mcpServers": {"everything": everything_stdio()}}));
    let uri = "demo://resource/static/document/features.md";
    let before = streams_opened(&daemon);
    let args = [
        "--url".to_owned(),
        format!("http://127.0.0.1:{}/mcp", daemon.port),
        "--token".to_owned(),
        daemon.token.clone(),
        "--subscribe".to_owned(),
        uri.to_owned(),
        "--expect".to_owned(),
        "notifications/resources/updated".to_owned(),
        "--expect".to_owned(),
        "notifications/resources/list_changed".to_owned(),
    ];
    let mut driver = Driver::start(&args, &[]);
    driver.report();
    assert!(eventually(WAIT, || streams_opened(&daemon) > before));
    // everything sends its subscribers an update at once and every 5 s after.
    daemon.call_tool("everything", "toggle-subscriber-updates", json!({}));
    // A resource of its own session, which the server announces with resources/list_changed.
    let made = daemon.call_tool(
        "everything",
        "gzip-file-as-resource",
        json!({"name": "hello.txt", "data": "data:text/plain;base64,aGVsbG8=",
               "outputType": "resourceLink"}),
    );
    assert!(made.to_string().contains("hello.txt"), "{made}");
    driver.go();
    let report = driver.report();
    let updated: Vec<&Value> = report["notified"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"))
        .iter()
        .filter(|entry| entry["method"] == "notifications/resources/updated")
        .collect();
    assert!(!updated.is_empty(), "{report}");
    assert!(updated.iter().all(|entry| entry["uri"] == uri), "{report}");
}

fn headers<'a>(host: &'a str, bearer: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("Host", host),
        ("Content-Type", "application/json"),
        ("Authorization", bearer),
    ]
}

/// Opens a session for `token` over raw HTTP; its id.
fn open_session(daemon: &Daemon, token: &str) -> String {
    open_session_at(daemon, token, "/mcp")
}

/// [`open_session`] at `target` (`/mcp?mode=progressive`).
fn open_session_at(daemon: &Daemon, token: &str, target: &str) -> String {
    let host = format!("127.0.0.1:{}", daemon.port);
    let bearer = format!("Bearer {token}");
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let answer = raw_http_exchange(
        daemon.port,
        &http_request_bytes(
            "POST",
            target,
            &headers(&host, &bearer),
            initialize.to_string().as_bytes(),
        ),
    )
    .expect("an HTTP answer");
    answer
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session: {answer:?}"))
        .to_owned()
}

/// Opens `session`'s standalone stream; the connection, its head read (asserted 200).
fn open_stream(daemon: &Daemon, token: &str, session: &str) -> BufReader<TcpStream> {
    let host = format!("127.0.0.1:{}", daemon.port);
    let bearer = format!("Bearer {token}");
    let mut all = headers(&host, &bearer);
    all.push(("Accept", "text/event-stream"));
    all.push(("Mcp-Session-Id", session));
    let request = http_request_bytes("GET", "/mcp", &all, b"");
    open_http_stream(daemon.port, &request, WAIT).0
}

/// Reads `stream` until it has carried `count` list_changed notices in all (`seen` holds
/// what was read so far).
fn read_notices(stream: &mut BufReader<TcpStream>, seen: &mut String, count: usize) {
    while seen.matches("notifications/tools/list_changed").count() < count {
        let mut line = String::new();
        let read = stream
            .read_line(&mut line)
            .expect("a notice within the wait");
        assert!(read > 0, "the stream ended early: {seen}");
        seen.push_str(&line);
    }
}

#[test]
fn a_scoped_stream_hears_only_its_scope_and_shutdown_ends_the_streams() {
    // A grace period far past the wait: a daemon that waited for its open streams would not
    // exit within it.
    let options = DaemonOptions {
        args: vec!["--shutdown-grace-ms".to_owned(), "600000".to_owned()],
        ..DaemonOptions::default()
    };
    let mut daemon = Daemon::start_with(
        json!({"mcpServers": {
            "alpha": fault_server(&[]),
            "beta": fault_server(&[]),
        }}),
        options,
    );
    let minted = daemon.call("mintToken", json!({"servers": ["alpha"]}));
    let scoped = minted["token"].as_str().unwrap().to_owned();
    let owner_session = open_session(&daemon, &daemon.token);
    let scoped_session = open_session(&daemon, &scoped);
    let mut owner = open_stream(&daemon, &daemon.token, &owner_session);
    let mut scoped_stream = open_stream(&daemon, &scoped, &scoped_session);
    // A progressive session's six meta-tools never change: it is never told.
    let progressive_session = open_session_at(&daemon, &daemon.token, "/mcp?mode=progressive");
    let mut progressive = open_stream(&daemon, &daemon.token, &progressive_session);
    assert!(eventually(WAIT, || streams_opened(&daemon) >= 3));
    let (mut owner_seen, mut scoped_seen) = (String::new(), String::new());
    let mut progressive_seen = String::new();

    // beta's change: the owner hears it; alpha's next: both do.
    daemon.call_tool("beta", "change_tools", json!({"add": "beta_new"}));
    read_notices(&mut owner, &mut owner_seen, 1);
    daemon.call_tool("alpha", "change_tools", json!({"add": "alpha_new"}));
    read_notices(&mut owner, &mut owner_seen, 2);
    read_notices(&mut scoped_stream, &mut scoped_seen, 1);

    // Shutdown ends both streams at once rather than waiting out the grace period for them.
    daemon.signal(libc::SIGTERM);
    let exit = daemon.wait_for_exit(WAIT);
    assert!(exit.is_some(), "the daemon did not exit with streams open");
    for (stream, seen) in [
        (&mut owner, &mut owner_seen),
        (&mut scoped_stream, &mut scoped_seen),
        (&mut progressive, &mut progressive_seen),
    ] {
        let mut rest = String::new();
        stream
            .read_to_string(&mut rest)
            .expect("the stream closes rather than stalls");
        seen.push_str(&rest);
    }
    assert_eq!(
        scoped_seen
            .matches("notifications/tools/list_changed")
            .count(),
        1,
        "a token scoped to alpha hears of alpha's change alone: {scoped_seen}"
    );
    assert_eq!(
        owner_seen
            .matches("notifications/tools/list_changed")
            .count(),
        2,
        "{owner_seen}"
    );
    assert!(
        !progressive_seen.contains("list_changed"),
        "{progressive_seen}"
    );
}

#[test]
fn a_get_without_accept_or_session_or_a_second_one_is_refused() {
    let daemon = Daemon::start(json!({"mcpServers": {"flaky": fault_server(&[])}}));
    let session = open_session(&daemon, &daemon.token);
    let host = format!("127.0.0.1:{}", daemon.port);
    let bearer = format!("Bearer {}", daemon.token);
    let get = |extra: &[(&str, &str)]| {
        let mut all = headers(&host, &bearer);
        all.extend_from_slice(extra);
        raw_http_exchange(daemon.port, &http_request_bytes("GET", "/mcp", &all, b""))
            .expect("an HTTP answer")
    };
    let accept = ("Accept", "text/event-stream");
    let named = ("Mcp-Session-Id", session.as_str());
    let refused = get(&[named]);
    assert_eq!(refused.status, 406);
    assert!(
        String::from_utf8_lossy(&refused.body).contains("Accept: text/event-stream"),
        "{refused:?}"
    );
    let refused = get(&[accept]);
    assert_eq!(refused.status, 400);
    assert!(
        String::from_utf8_lossy(&refused.body).contains("Mcp-Session-Id"),
        "{refused:?}"
    );
    assert_eq!(
        get(&[
            accept,
            ("Mcp-Session-Id", "0123456789abcdef0123456789abcdef")
        ])
        .status,
        404
    );
    let mut open = open_stream(&daemon, &daemon.token, &session);
    let refused = get(&[accept, named]);
    assert_eq!(refused.status, 409);
    assert!(
        String::from_utf8_lossy(&refused.body).contains("one GET stream per session"),
        "{refused:?}"
    );
    // Ending the session ends its stream.
    let deleted = raw_http_exchange(
        daemon.port,
        &http_request_bytes(
            "DELETE",
            "/mcp",
            &[headers(&host, &bearer), vec![named]].concat(),
            b"",
        ),
    )
    .expect("an HTTP answer");
    assert_eq!(deleted.status, 200);
    let mut rest = String::new();
    open.read_to_string(&mut rest)
        .expect("the stream closes with its session rather than stalls");
    assert!(!rest.contains("list_changed"), "{rest}");
}
