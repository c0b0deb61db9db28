//! `daemon/examples/embedded_bridge.rs`: a Rust program serving its own tools through the
//! daemon's library (gate, methods, call pipeline) is reached by the real `tool-cli` like a
//! daemon: discovery, calls, a tool error, validation before the tool runs, a wrong token.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;
use tool_cli_tests::output::{stderr, stdout};
use tool_cli_tests::{CLIENT_TIMEOUT, bin_dir, client_bin, run_with_timeout, scratch};

/// The running example; killed when dropped.
struct Embedded {
    child: Child,
    port: String,
    token: String,
    dir: tempfile::TempDir,
}

impl Drop for Embedded {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Embedded {
    let example = bin_dir().join("examples").join("embedded_bridge");
    assert!(
        example.exists(),
        "{} is built with the workspace's examples (`cargo build --examples`)",
        example.display()
    );
    let mut child = Command::new(&example)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the embedded bridge example");
    // It prints its two export lines once it listens; each read blocks until the next line.
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut value_of = |name: &str| {
        let line = lines.next().expect("an export line").expect("read stdout");
        line.strip_prefix(&format!("export {name}="))
            .unwrap_or_else(|| panic!("expected {name}, got {line:?}"))
            .to_owned()
    };
    let port = value_of("TOOL_CLI_PORT");
    let token = value_of("TOOL_CLI_TOKEN");
    Embedded {
        child,
        port,
        token,
        dir: scratch(),
    }
}

impl Embedded {
    fn client(&self, args: &[&str], token: &str) -> Output {
        let mut command = Command::new(client_bin());
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("TOOL_CLI_PORT", &self.port)
            .env("TOOL_CLI_TOKEN", token)
            .env("TOOL_CLI_RUNTIME_DIR", self.dir.path());
        run_with_timeout(command, CLIENT_TIMEOUT)
    }
}

#[test]
fn embedded_tools_are_served_through_the_same_gate_and_pipeline() {
    let bridge = start();
    let token = bridge.token.clone();

    // Discovery: the program's server and its tools.
    let servers = bridge.client(&[], &token);
    assert!(servers.status.success(), "{}", stderr(&servers));
    assert!(stdout(&servers).contains("calc"), "{}", stdout(&servers));
    let tools = bridge.client(&["calc"], &token);
    assert!(
        stdout(&tools).contains("add") && stdout(&tools).contains("divide"),
        "{}",
        stdout(&tools)
    );

    // A call: structured content back.
    let sum = bridge.client(&["calc", "add", r#"{"a": 2, "b": 3.5}"#], &token);
    assert!(sum.status.success(), "{}", stderr(&sum));
    let sum: Value = serde_json::from_str(&stdout(&sum)).expect("the structured result as JSON");
    assert_eq!(sum["sum"], 5.5);

    // The same call routed: the pipeline picks the only server offering `add`.
    let routed = bridge.client(&["add", r#"{"a": 1, "b": 1}"#], &token);
    assert!(routed.status.success(), "{}", stderr(&routed));
    assert!(stdout(&routed).contains('2'), "{}", stdout(&routed));

    // The tool's own error is a tool error (exit 6) with its message.
    let divided = bridge.client(&["calc", "divide", r#"{"a": 1, "b": 0}"#], &token);
    assert_eq!(divided.status.code(), Some(6), "{}", stderr(&divided));
    assert!(
        stderr(&divided).contains("cannot divide by zero"),
        "{}",
        stderr(&divided)
    );

    // Arguments that fail the schema never reach the program's code (exit 5, the path named).
    let invalid = bridge.client(&["calc", "add", r#"{"a": "two", "b": 3}"#], &token);
    assert_eq!(invalid.status.code(), Some(5), "{}", stderr(&invalid));
    assert!(stderr(&invalid).contains("/a"), "{}", stderr(&invalid));

    // The gate holds: a wrong token is refused before anything runs.
    let wrong = "0".repeat(token.len());
    let refused = bridge.client(&["calc", "add", r#"{"a": 1, "b": 1}"#], &wrong);
    assert!(
        matches!(refused.status.code(), Some(4 | 8)),
        "a wrong token exits 4 or 8: {:?} {}",
        refused.status,
        stderr(&refused)
    );
}
