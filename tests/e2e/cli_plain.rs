//! The plain `tool-cli` lines (`tool-cli`, `SERVER`, `SERVER TOOL`, `SERVER TOOL ARGS`) take a
//! fast path: no clap command tree, and requests over a blocking socket with no async runtime.
//! Whatever they print must be what the full path prints. Each line of a table is run twice
//! against the same daemon: as it is (the fast path), and with `--output text` (which changes
//! no output but makes clap read the line) and `TOOL_CLI_HOST=localhost` (a host name, which
//! only the runtime's transport resolves); stdout, stderr and the exit code must be the same,
//! with and without a daemon id beside the address (the call in one request, or after the
//! identity proof and the handshake).
//!
//! - success, bad JSON, unknown server, unknown tool, an unknown parameter, a tool error,
//!   routed calls, names that look like subcommands, `--`, `-` (stdin), non-UTF-8:
//!   `plain_lines_print_what_the_full_path_prints`
//! - stdout a pipe nobody reads any more (`tool-cli | head -0`): the client is not killed by
//!   SIGPIPE and exits 0, on the fast path and the full one, and `completions` prints no error:
//!   `a_closed_stdout_pipe_is_not_a_failure`

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt as _;
use std::process::{Output, Stdio};

use tool_cli_tests::{Daemon, run_with_timeout};

/// Runs `tool-cli` with `args` (and `stdin`) against `daemon`, on the fast path or the full one.
fn run(
    daemon: &Daemon,
    args: &[OsString],
    daemon_id: Option<&str>,
    full_path: bool,
    stdin: &str,
) -> Output {
    let mut command = daemon.client_command();
    if full_path {
        command.args(["--output", "text"]);
        command.env(tool_cli_protocol::env::HOST, "localhost");
    }
    command.args(args);
    if let Some(id) = daemon_id {
        command.env(tool_cli_protocol::env::DAEMON_ID, id);
    }
    let input = tempfile::NamedTempFile::new().expect("a stdin file");
    std::fs::write(input.path(), stdin).expect("write stdin");
    command.stdin(Stdio::from(
        std::fs::File::open(input.path()).expect("open stdin"),
    ));
    run_with_timeout(command, std::time::Duration::from_secs(30))
}

/// `text` with every word shaped like a `health` uptime (`42s`, `3m12s`, `2h05m`, `3d04h`)
/// replaced by `UPTIME`, and the words of each line joined by one space.
fn mask_uptimes(text: &str) -> String {
    let is_uptime = |word: &str| {
        let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        let unit = &word[digits.len()..];
        let (leading, second) = match digits.find(|c: char| c.is_ascii_alphabetic()) {
            Some(at) => (&digits[..at], &digits[at + 1..]),
            None => (digits, ""),
        };
        !leading.is_empty()
            && leading.bytes().all(|b| b.is_ascii_digit())
            && second.bytes().all(|b| b.is_ascii_digit())
            && matches!(unit, "s" | "m" | "h")
    };
    text.lines()
        .map(|line| {
            line.split_whitespace()
                .map(|word| if is_uptime(word) { "UPTIME" } else { word })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn uptimes_are_masked_and_nothing_else() {
    assert_eq!(
        mask_uptimes("  demo    ready  0         1s      22/0   4.2ms/7.6ms  closed"),
        "demo ready 0 UPTIME 22/0 4.2ms/7.6ms closed"
    );
    for uptime in ["0s", "59s", "3m12s", "2h05m", "3d04h"] {
        assert_eq!(mask_uptimes(uptime), "UPTIME", "{uptime}");
    }
    for other in ["s", "12", "4.2ms", "ready", "22/0", "sql_query"] {
        assert_eq!(mask_uptimes(other), other, "{other}");
    }
}

#[test]
fn plain_lines_print_what_the_full_path_prints() {
    let daemon = Daemon::start_demo();
    let daemon_id = daemon
        .read_runtime_file()
        .daemon_id
        .expect("the daemon writes its id");
    let words = |words: &[&str]| -> Vec<OsString> { words.iter().map(OsString::from).collect() };
    let mut lines: Vec<Vec<OsString>> = [
        &[][..],
        &["demo"],
        &["demo", "sql_query"],
        &[
            "demo",
            "sql_query",
            r#"{"sql": "SELECT id, name FROM customers ORDER BY id", "page_size": 2}"#,
        ],
        &["demo", "sql_query", "sql=SELECT 2 AS two"],
        &["demo", "sql_query", r#"{"sql": "#],
        &["demo", "sql_query", "[1]"],
        &["demo", "sql_query", r#"{"sql":"#, r#""x"}"#],
        &["demo", "sql_query", r#"{"sql": "SELECT * FROM nowhere"}"#],
        &["demo", "sql_query", r#"{"sqll": "SELECT 1"}"#],
        &["no_such_server"],
        &["demo", "no_such_tool"],
        &["demo", "no_such_tool", "{}"],
        &["sql_query", r#"{"sql": "SELECT 3 AS three"}"#],
        &["*", "sql_query", r#"{"sql": "SELECT 4 AS four"}"#],
        &["helth"],
        &["demo", "health"],
        &["demo", "resource", "list"],
        &["health"],
        &["--", "demo"],
        &["demo", "sql_query", "-"],
    ]
    .iter()
    .map(|line| words(line))
    .collect();
    lines.push(vec![
        OsString::from("demo"),
        OsString::from_vec(vec![b's', 0xff]),
    ]);
    let stdin = r#"{"sql": "SELECT 5 AS five"}"#;
    let mut fast_successes = 0;
    for id in [None, Some(daemon_id.as_str())] {
        for line in &lines {
            let fast = run(&daemon, line, id, false, stdin);
            let full = run(&daemon, line, id, true, stdin);
            // `health` shows each server's uptime, which may tick between the two runs (and
            // widen its column): compared with the uptime masked and spaces collapsed.
            let is_health = line.iter().any(|word| word == "health");
            let shown = |output: &Output| {
                let stdout = String::from_utf8_lossy(&output.stdout);
                let stdout = if is_health {
                    mask_uptimes(&stdout)
                } else {
                    stdout.into_owned()
                };
                format!(
                    "exit {:?}\nstdout:\n{}\nstderr:\n{}",
                    output.status.code(),
                    stdout,
                    String::from_utf8_lossy(&output.stderr)
                )
            };
            assert_eq!(
                shown(&fast),
                shown(&full),
                "{line:?} (daemon id: {})",
                id.is_some()
            );
            fast_successes += usize::from(fast.status.success());
        }
    }
    // The table is not all failures: discovery and calls answered on both paths.
    assert!(fast_successes >= 2 * 8, "{fast_successes}");
}

#[test]
fn a_closed_stdout_pipe_is_not_a_failure() {
    let daemon = Daemon::start_demo();
    let call: &[&str] = &["demo", "sql_query", r#"{"sql": "SELECT 1 AS one"}"#];
    let lines: [(&[&str], bool); 3] = [
        (call, false),
        (call, true),
        // A completion script is written in one go, daemon or not.
        (&["completions", "bash"], false),
    ];
    for (line, full_path) in lines {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        // The reading end is gone before the client writes a byte.
        drop(reader);
        let mut command = daemon.client_command();
        if full_path {
            command.args(["--output", "text"]);
        }
        command
            .args(line)
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::piped());
        let output = command.output().expect("run tool-cli");
        assert_eq!(
            output.status.code(),
            Some(0),
            "{:?} ({line:?}, full path: {full_path}); stderr: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            output.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
