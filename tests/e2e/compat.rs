//! Our `tool-cli` against a tool-cli 1.x bridge: the `tool-cli-reference-bridge` fixture, written
//! from the reference protocol as documented (no `POST /identity`: it answers 401 there, as to
//! every path it does not know; the reference's error shapes).
//!
//! Without the opt-in the CLI refuses it (exit 8, the hint, and the token never sent: the
//! bridge's own request log shows it); with `TOOL_CLI_REQUIRE_IDENTITY=0` or `--no-identity` every
//! command works: servers, tools, describe, calls (text, structured, failing), invalid arguments
//! and unknown tools rendered from `validationErrors` / `discoveredTools`, resources, `--json`,
//! `--out`, and the sanitising of hostile server text.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc;

use serde_json::{Value, json};
use tempfile::TempDir;
use tool_cli_tests::output::{assert_exit, stderr, stdout};
use tool_cli_tests::{
    CLIENT_TIMEOUT, STARTUP_TIMEOUT, bin_dir, client_command, http_post, run_with_timeout, scratch,
};

/// A running `tool-cli-reference-bridge`, killed on drop.
struct ReferenceBridge {
    child: Child,
    port: u16,
    token: String,
    /// Its stderr, one request per line (`request POST / authorization=valid`).
    log: mpsc::Receiver<String>,
    markers: u32,
    // Held open: the bridge exits when its stdin closes.
    _stdin: ChildStdin,
    // An empty runtime dir, so the client finds no daemon of ours by accident.
    runtime_dir: TempDir,
}

impl ReferenceBridge {
    fn start() -> ReferenceBridge {
        let binary = bin_dir().join("tool-cli-reference-bridge");
        assert!(
            binary.is_file(),
            "{} is missing; build it first: cargo build -p tool-cli-reference-bridge",
            binary.display()
        );
        let mut child = Command::new(&binary)
            .env_remove("TOOL_CLI_TOKEN")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the reference bridge");
        let stdin = child.stdin.take().expect("piped stdin");
        let exports = lines(child.stdout.take().expect("piped stdout"));
        let log = lines(child.stderr.take().expect("piped stderr"));
        let (mut port, mut token) = (None, None);
        while port.is_none() || token.is_none() {
            let line = exports
                .recv_timeout(STARTUP_TIMEOUT)
                .expect("the bridge prints its export lines");
            if let Some(value) = line.strip_prefix("export TOOL_CLI_PORT=") {
                port = value.parse().ok();
            } else if let Some(value) = line.strip_prefix("export TOOL_CLI_TOKEN=") {
                token = Some(value.to_owned());
            }
        }
        ReferenceBridge {
            child,
            port: port.expect("port"),
            token: token.expect("token"),
            log,
            markers: 0,
            _stdin: stdin,
            runtime_dir: scratch(),
        }
    }

    /// `tool-cli` pointed at the bridge through `TOOL_CLI_PORT` / `TOOL_CLI_TOKEN`.
    fn client(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = client_command();
        command
            .env("TOOL_CLI_PORT", self.port.to_string())
            .env("TOOL_CLI_TOKEN", &self.token)
            .env("TOOL_CLI_RUNTIME_DIR", self.runtime_dir.path())
            .args(args)
            .envs(env.iter().copied());
        run_with_timeout(command, CLIENT_TIMEOUT)
    }

    /// `tool-cli` with the opt-in that accepts a bridge without the identity proof.
    fn trusted(&self, args: &[&str]) -> Output {
        self.client(args, &[("TOOL_CLI_REQUIRE_IDENTITY", "0")])
    }

    /// A method's raw result, asked of the bridge directly.
    fn rpc(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let authorization = format!("Bearer {}", self.token);
        let (status, answer) = http_post(
            self.port,
            "/",
            &[("Authorization", authorization.as_str())],
            body.to_string().as_bytes(),
        );
        assert_eq!(status, 200);
        let answer: Value = serde_json::from_slice(&answer).expect("a JSON answer");
        answer["result"].clone()
    }

    /// The requests the bridge logged since the last call. A marker request of ours is sent
    /// and waited for, so every request made before it is known to be in the log.
    fn requests_since_last_look(&mut self) -> Vec<String> {
        self.markers += 1;
        let marker = format!("/marker-{}", self.markers);
        let (status, _) = http_post(self.port, &marker, &[], b"");
        assert_eq!(status, 401, "the bridge refuses what it does not know");
        let mut seen = Vec::new();
        loop {
            let line = self
                .log
                .recv_timeout(CLIENT_TIMEOUT)
                .expect("the bridge logs the marker request");
            if line.contains(&marker) {
                return seen;
            }
            seen.push(line);
        }
    }
}

impl Drop for ReferenceBridge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The lines of a child's stream, read on a thread.
fn lines(stream: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

fn trusted_ok(bridge: &ReferenceBridge, args: &[&str]) -> String {
    let output = bridge.trusted(args);
    assert_exit(&output, 0);
    stdout(&output)
}

#[test]
fn a_1x_bridge_is_refused_without_the_opt_in_and_never_gets_the_token() {
    let mut bridge = ReferenceBridge::start();
    for args in [&[][..], &["ref"], &["ref", "echo", r#"{"text": "x"}"#]] {
        let output = bridge.client(args, &[]);
        assert_exit(&output, 8);
        let message = stderr(&output);
        assert!(
            message.contains("this bridge does not prove its identity (a tool-cli 1.x bridge?)"),
            "{message}"
        );
        assert!(
            message.contains("TOOL_CLI_REQUIRE_IDENTITY=0 or --no-identity"),
            "{message}"
        );
        assert!(stdout(&output).is_empty());
    }
    // An explicit TOOL_CLI_REQUIRE_IDENTITY=1 is the default.
    assert_exit(
        &bridge.client(&[], &[("TOOL_CLI_REQUIRE_IDENTITY", "1")]),
        8,
    );
    let requests = bridge.requests_since_last_look();
    assert_eq!(requests.len(), 4, "{requests:?}");
    for request in &requests {
        assert_eq!(
            request, "request POST /identity authorization=absent",
            "only the identity check was sent, and without the token"
        );
    }
    // With --json, the same refusal as an envelope.
    let output = bridge.client(&["--json"], &[]);
    assert_exit(&output, 8);
    let envelope: Value = serde_json::from_str(stderr(&output).trim()).expect("a JSON envelope");
    assert_eq!(envelope["error"]["kind"], "noIdentityProof");
    assert_eq!(envelope["error"]["exitCode"], 8);
    assert_eq!(envelope["error"]["data"]["status"], 401);
}

#[test]
fn discovery_and_calls_work_with_the_opt_in() {
    let mut bridge = ReferenceBridge::start();
    let servers = trusted_ok(&bridge, &[]);
    // The reference lists servers (and each one's tools) sorted by name.
    assert!(servers.starts_with("hostile "), "{servers}");
    assert!(
        servers.contains("\nref ") && servers.contains("4 tools  (e.g. add, echo, fail)"),
        "{servers}"
    );

    let tools = trusted_ok(&bridge, &["ref"]);
    assert!(tools.contains("echo   Echo the text back"), "{tools}");
    assert!(
        tools.contains("add    Add two integers.  [structured output]"),
        "{tools}"
    );

    let schema = trusted_ok(&bridge, &["ref", "echo"]);
    assert!(schema.contains("text: string, required"), "{schema}");
    assert!(
        schema.contains("times: integer, optional, >= 1"),
        "{schema}"
    );

    assert_eq!(
        trusted_ok(&bridge, &["ref", "echo", r#"{"text": "hi", "times": 2}"#]),
        "hi hi\n"
    );
    // Structured output is printed as JSON, ready for jq.
    let sum: Value = serde_json::from_str(&trusted_ok(
        &bridge,
        &["ref", "add", r#"{"a": 2, "b": 40}"#],
    ))
    .expect("JSON");
    assert_eq!(sum, json!({"sum": 42}));

    // The flag works as the variable does.
    let output = bridge.client(
        &["--no-identity", "ref", "echo", r#"{"text": "flag"}"#],
        &[],
    );
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "flag\n");

    // Every command sent the token after the 401 to /identity, and nothing else.
    let requests = bridge.requests_since_last_look();
    assert!(
        requests.iter().all(
            |request| request == "request POST /identity authorization=absent"
                || request == "request POST / authorization=valid"
        ),
        "{requests:?}"
    );
}

#[test]
fn the_reference_error_shapes_are_rendered_like_ours() {
    let bridge = ReferenceBridge::start();
    let invalid = bridge.trusted(&["ref", "echo", r#"{"times": 0, "extra": true}"#]);
    assert_exit(&invalid, 5);
    assert_eq!(
        stderr(&invalid),
        "tool-cli: error: arguments for ref/echo do not match its input schema: (root): must \
         have required property 'text'; /times: must be >= 1; (root): must NOT have additional \
         properties\n\
         see `tool-cli ref echo` for its parameters and an example\n"
    );

    let unknown = bridge.trusted(&["ref", "ecko", "{}"]);
    assert_exit(&unknown, 5);
    assert_eq!(
        stderr(&unknown),
        "tool-cli: error: server \"ref\" has no tool \"ecko\"; its tools: add, echo, fail, \
         image; did you mean \"echo\"?\n"
    );

    let unknown_server = bridge.trusted(&["nope"]);
    assert_exit(&unknown_server, 5);
    assert!(stderr(&unknown_server).contains("Unknown server: nope"));

    let failed = bridge.trusted(&["ref", "fail", "{}"]);
    assert_exit(&failed, 6);
    assert_eq!(
        stderr(&failed),
        "tool-cli: error: ref/fail reported an error:\nthe tool failed on purpose\n"
    );
    assert!(stdout(&failed).is_empty());

    // --json: the raw data beside our kind and exit code, for scripts written for either.
    let output = bridge.trusted(&["--json", "ref", "ecko", "{}"]);
    assert_exit(&output, 5);
    let envelope: Value = serde_json::from_str(stderr(&output).trim()).expect("a JSON envelope");
    assert_eq!(envelope["error"]["code"], -32602);
    assert_eq!(envelope["error"]["exitCode"], 5);
    assert_eq!(envelope["error"]["kind"], "unknownTool");
    assert_eq!(
        envelope["error"]["data"]["discoveredTools"],
        json!(["add", "echo", "fail", "image"])
    );
    assert!(stdout(&output).is_empty());
}

/// The reference sorts servers, tools, resources and `discoveredTools` by name (ours keeps the
/// config's and the servers' order: docs/protocol.md, "What stays different"); the client shows
/// a bridge's listing in the order it was given.
#[test]
fn the_reference_sorts_its_listings_and_the_client_keeps_its_order() {
    let bridge = ReferenceBridge::start();
    let names = |items: &Value| -> Vec<String> {
        items
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let servers = bridge.rpc("listServers", json!({}));
    assert_eq!(names(&servers["servers"]), ["hostile", "ref"]);
    let tools = bridge.rpc("listTools", json!({"server": "ref"}));
    assert_eq!(names(&tools["tools"]), ["add", "echo", "fail", "image"]);
    let resources = bridge.rpc("listResources", json!({"server": "ref"}));
    assert_eq!(
        names(&resources["resources"]),
        ["changelog", "readme", "skill"]
    );
    let listing = trusted_ok(&bridge, &["ref"]);
    let shown: Vec<&str> = listing
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| ["add", "echo", "fail", "image"].contains(name))
        .collect();
    assert_eq!(shown, ["add", "echo", "fail", "image"], "{listing}");
}

#[test]
fn json_output_is_the_bridges_raw_result() {
    let bridge = ReferenceBridge::start();
    let parse = |args: &[&str]| -> Value {
        serde_json::from_str(&trusted_ok(&bridge, args)).expect("JSON on stdout")
    };
    assert_eq!(parse(&["--json"]), bridge.rpc("listServers", json!({})));
    assert_eq!(
        parse(&["--json", "ref"]),
        bridge.rpc("listTools", json!({"server": "ref"}))
    );
    assert_eq!(
        parse(&["--json", "ref", "echo"]),
        bridge.rpc("describeTool", json!({"server": "ref", "tool": "echo"}))
    );
    let arguments = json!({"a": 1, "b": 2});
    assert_eq!(
        parse(&["--json", "ref", "add", &arguments.to_string()]),
        bridge.rpc(
            "callTool",
            json!({"server": "ref", "tool": "add", "arguments": arguments})
        )
    );
}

#[test]
fn resources_work_with_the_opt_in() {
    let bridge = ReferenceBridge::start();
    let listed = trusted_ok(&bridge, &["resource", "list", "--server", "ref"]);
    assert_eq!(
        listed,
        "ref:\n  ref://changelog  changelog  (text/plain)\n  \
         ref://readme     readme  (text/plain)  What this bridge is.\n"
    );
    let templates = trusted_ok(&bridge, &["resource", "templates", "--server", "ref"]);
    assert!(templates.contains("ref://items/{id}  item"), "{templates}");
    assert_eq!(
        trusted_ok(
            &bridge,
            &["resource", "read", "--server", "ref", "ref://items/7"]
        ),
        "item 7\n"
    );
    let missing = bridge.trusted(&["resource", "read", "--server", "ref", "ref://nope"]);
    assert_exit(&missing, 1);
    assert!(
        stderr(&missing).contains("MCP error -32002: Resource not found: ref://nope"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn out_saves_an_image_result_from_a_1x_bridge() {
    let bridge = ReferenceBridge::start();
    let dir = scratch();
    let file = dir.path().join("tiny.png");
    let file_text = file.to_string_lossy().into_owned();
    let printed = trusted_ok(&bridge, &["ref", "image", "{}", "--out", &file_text]);
    let bytes = std::fs::read(&file).expect("the --out file");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{bytes:?}");
    assert_eq!(
        printed,
        format!("wrote {} bytes to {file_text}\n", bytes.len())
    );
}

#[test]
fn hostile_server_text_never_reaches_the_terminal_raw() {
    let bridge = ReferenceBridge::start();
    let is_raw_control = |text: &str| {
        text.chars()
            .any(|c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c))
    };
    for args in [
        &[][..],
        &["hostile"],
        &["resource", "list", "--server", "hostile"],
    ] {
        let listing = trusted_ok(&bridge, args);
        assert!(!is_raw_control(&listing), "{args:?}: {listing:?}");
        assert!(
            listing.contains("^[]0;pwned^G^[[2J"),
            "{args:?}: {listing:?}"
        );
    }
    // A tool's text result is data: to a pipe, byte for byte.
    let piped = trusted_ok(&bridge, &["hostile", "ansi", "{}"]);
    assert_eq!(
        piped,
        "\u{1b}[31mred\u{1b}[0m and \u{1b}]0;pwned\u{7}plain\n"
    );
    // --json keeps the raw data, escaped so that no terminal interprets it.
    let described = trusted_ok(&bridge, &["--json", "hostile"]);
    assert!(!is_raw_control(&described), "{described:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&described).unwrap(),
        bridge.rpc("listTools", json!({"server": "hostile"}))
    );
}
