//! The `tool-cli` conveniences end to end: `key=value` arguments (typed by the tool's schema),
//! `key:=JSON`, `key=@FILE`, `--args-file`, their errors (mixed forms, bad JSON, a missing file,
//! an unknown key with the closest name), against the demo server and the npm
//! `server-everything`; `--output raw` on an image; and shell completion through a real bash,
//! with live names from a daemon and none without one.

use std::process::{Command, Output};

use serde_json::{Value, json};
use tool_cli_tests::output::{assert_exit, stderr, stdout};
use tool_cli_tests::{
    CLIENT_TIMEOUT, Daemon, bin_dir, client_command, everything_stdio, run_with_timeout, scratch,
};

fn json_stdout(output: &Output) -> Value {
    assert_exit(output, 0);
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("stdout is not JSON ({error}):\n{}", stdout(output)))
}

#[test]
fn key_value_calls_the_demo_server() {
    let daemon = Daemon::start_demo();

    // page_size is typed by the schema (integer), sql stays a string.
    let page = json_stdout(&daemon.run_client(
        &[
            "demo",
            "sql_query",
            "sql=SELECT name FROM customers ORDER BY id",
            "page_size=2",
        ],
        &[],
    ));
    assert_eq!(page["effective_page_size"], 2);
    assert_eq!(page["returned_rows"], 2);
    assert_eq!(page["rows"].as_array().map(Vec::len), Some(2));
    assert_eq!(page["has_more"], true);

    // key:=JSON, and key=@FILE (the SQL read from a file).
    let dir = scratch();
    let sql_file = dir.path().join("query.sql");
    std::fs::write(&sql_file, "SELECT count(*) AS n FROM customers").unwrap();
    let counted = json_stdout(&daemon.run_client(
        &[
            "demo",
            "sql_query",
            &format!("sql=@{}", sql_file.display()),
            "offset:=0",
        ],
        &[],
    ));
    assert_eq!(counted["rows"][0]["n"], 50);

    // --args-file with the whole object.
    let args_file = dir.path().join("args.json");
    std::fs::write(
        &args_file,
        json!({"sql": "SELECT 7 AS seven", "page_size": 1}).to_string(),
    )
    .unwrap();
    let seven = json_stdout(&daemon.run_client(
        &[
            "demo",
            "sql_query",
            "--args-file",
            &args_file.to_string_lossy(),
        ],
        &[],
    ));
    assert_eq!(seven["rows"], json!([{"seven": 7}]));

    // --output raw: the content exactly, with no newline added.
    let raw = daemon.run_client(
        &[
            "demo",
            "sql_query",
            "sql=SELECT 1 AS one",
            "--output",
            "raw",
        ],
        &[],
    );
    assert_exit(&raw, 0);
    let raw_text = stdout(&raw);
    assert!(!raw_text.ends_with('\n'), "{raw_text:?}");
    let raw_json: Value = serde_json::from_str(&raw_text).expect("the tool's text is JSON");
    assert_eq!(raw_json["rows"], json!([{"one": 1}]));
}

#[test]
fn key_value_errors_say_what_is_wrong() {
    let daemon = Daemon::start_demo();

    // An unknown key: refused by the daemon, named with the closest parameter by the client.
    let unknown = daemon.run_client(&["demo", "sql_query", "sq=SELECT 1"], &[]);
    assert_exit(&unknown, 5);
    assert!(
        stderr(&unknown).contains(
            "demo/sql_query has no parameter \"sq\" (its parameters: sql, page_size, offset); \
             did you mean \"sql\"?"
        ),
        "{}",
        stderr(&unknown)
    );
    // The same with --json: the envelope's kind and suggestion are for programs.
    let envelope = daemon.run_client(&["demo", "sql_query", "sq=SELECT 1", "--json"], &[]);
    assert_exit(&envelope, 5);
    let envelope: Value = serde_json::from_slice(&envelope.stderr).expect("a JSON envelope");
    assert_eq!(envelope["error"]["kind"], "unknownParameter");
    assert_eq!(envelope["error"]["data"]["suggestion"], "sql");

    // With an ambiguous value the schema is fetched first, and the key checked before sending.
    let checked = daemon.run_client(&["demo", "sql_query", "sql=SELECT 1", "pagesize=3"], &[]);
    assert_exit(&checked, 5);
    assert!(
        stderr(&checked).contains("did you mean \"page_size\"?"),
        "{}",
        stderr(&checked)
    );

    for (words, expected) in [
        (
            &["sql=SELECT 1", "{\"page_size\": 1}"][..],
            "cannot mix argument forms",
        ),
        (&["sql=SELECT 1", "sql=SELECT 2"][..], "is given twice"),
        (
            &["sql=SELECT 1", "page_size:=[1"][..],
            "the value of page_size:= is not valid JSON",
        ),
        (
            &["sql=@/nonexistent/tool-cli/query.sql"][..],
            "cannot read the file for sql=@/nonexistent/tool-cli/query.sql",
        ),
    ] {
        let mut args = vec!["demo", "sql_query"];
        args.extend_from_slice(words);
        let output = daemon.run_client(&args, &[]);
        assert_exit(&output, 2);
        assert!(
            stderr(&output).contains(expected),
            "{words:?}: {}",
            stderr(&output)
        );
    }

    let both = daemon.run_client(
        &[
            "demo",
            "sql_query",
            "sql=SELECT 1",
            "--args-file",
            "args.json",
        ],
        &[],
    );
    assert_exit(&both, 2);
    assert!(
        stderr(&both).contains("--args-file cannot be combined"),
        "{}",
        stderr(&both)
    );
    let contradiction = daemon.run_client(&["demo", "--json", "--output", "raw"], &[]);
    assert_exit(&contradiction, 2);
    assert!(stderr(&contradiction).contains("contradict"));
}

#[test]
fn key_value_against_server_everything_with_output_raw_image() {
    let daemon = Daemon::start(json!({"mcpServers": {"everything": everything_stdio()}}));

    // get-sum's a and b are numbers in its schema: typed as numbers, so the sum is computed.
    let sum = daemon.run_client(&["everything", "get-sum", "a=2", "b=40"], &[]);
    assert_exit(&sum, 0);
    assert!(stdout(&sum).contains("42"), "{}", stdout(&sum));

    let echoed = daemon.run_client(&["everything", "echo", "message=hello, peer"], &[]);
    assert_exit(&echoed, 0);
    assert_eq!(stdout(&echoed), "Echo: hello, peer\n");

    // echo's schema lets unknown names through, so a misspelt one is caught as the required
    // one missing; the refusal names the look-alike (nothing reaches the server).
    let misspelt = daemon.run_client(&["everything", "echo", "mesage=hi"], &[]);
    assert_exit(&misspelt, 5);
    assert!(
        stderr(&misspelt).contains(
            "the arguments have \"mesage\", which the schema does not declare: did you mean \"message\"?"
        ),
        "{}",
        stderr(&misspelt)
    );

    // A number-looking value for a string parameter stays a string.
    let echoed = daemon.run_client(&["everything", "echo", "message=42"], &[]);
    assert_exit(&echoed, 0);
    assert_eq!(stdout(&echoed), "Echo: 42\n");

    // --output raw on an image result: the PNG's bytes on stdout, the caption left out.
    // (A call without arguments takes `{}`: `SERVER TOOL` alone describes the tool.)
    let image = daemon.run_client(
        &["everything", "get-tiny-image", "{}", "--output", "raw"],
        &[],
    );
    assert_exit(&image, 0);
    assert!(
        image.stdout.starts_with(b"\x89PNG\r\n\x1a\n"),
        "stdout holds the PNG itself: {:?}",
        String::from_utf8_lossy(&image.stdout[..image.stdout.len().min(80)])
    );
    assert!(
        stderr(&image).contains("left out its"),
        "the caption is reported as left out: {}",
        stderr(&image)
    );
}

/// Runs `script` in a real bash with `tool-cli` on the PATH and the given environment.
fn bash(script: &str, env: &[(&str, &str)]) -> Output {
    let path = format!(
        "{}:{}",
        bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("bash");
    command.arg("-c").arg(script).env("PATH", path);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("TOOL_CLI_") {
            command.env_remove(key);
        }
    }
    command.envs(env.iter().copied());
    run_with_timeout(command, CLIENT_TIMEOUT)
}

/// Completes `words` (the last one being completed) with the generated bash script.
const COMPLETE: &str = r#"source <(tool-cli completions bash) || exit 1
COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_tool_cli_live tool-cli "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}""#;

fn complete(words: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|word| format!("'{word}'")).collect();
    let script = format!("set -- {}\n{COMPLETE}", quoted.join(" "));
    let output = bash(&script, env);
    assert_exit(&output, 0);
    stdout(&output)
        .lines()
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn completions_with_and_without_a_daemon() {
    let daemon = Daemon::start_demo();
    let port = daemon.read_runtime_file().port.to_string();
    let token = daemon.read_runtime_file().token;
    let runtime_dir = daemon.runtime_file().parent().unwrap().to_owned();
    let runtime_dir = runtime_dir.to_string_lossy().into_owned();
    let env = [
        ("TOOL_CLI_PORT", port.as_str()),
        ("TOOL_CLI_TOKEN", token.as_str()),
        ("TOOL_CLI_RUNTIME_DIR", runtime_dir.as_str()),
    ];

    // The hidden helper prints live names.
    let servers = daemon.run_client(&["__complete", "servers"], &[]);
    assert_exit(&servers, 0);
    assert_eq!(stdout(&servers), "demo\n");

    // Through bash: servers (and subcommands) first, then the server's tools, then parameters.
    let first = complete(&["tool-cli", "d"], &env);
    assert_eq!(first, ["demo", "daemon"]);
    let tools = complete(&["tool-cli", "demo", "sql"], &env);
    assert_eq!(tools, ["sql_query"]);
    let parameters = complete(&["tool-cli", "demo", "sql_query", "sql=x", "p"], &env);
    assert_eq!(parameters, ["page_size="]);
    // Flags and subcommands still complete as clap knows them.
    let values = complete(&["tool-cli", "--output", "r"], &env);
    assert_eq!(values, ["raw"]);
    let actions = complete(&["tool-cli", "daemon", "st"], &env);
    assert_eq!(actions, ["start", "stop", "status"]);

    // Without a daemon: nothing, exit 0, however the daemon is looked for.
    let empty = scratch();
    let empty_dir = empty.path().to_string_lossy().into_owned();
    let no_daemon = [("TOOL_CLI_RUNTIME_DIR", empty_dir.as_str())];
    let mut helper = client_command();
    helper
        .args(["__complete", "servers"])
        .env("TOOL_CLI_RUNTIME_DIR", &empty_dir);
    let helper = run_with_timeout(helper, CLIENT_TIMEOUT);
    assert_exit(&helper, 0);
    assert_eq!(stdout(&helper), "");
    assert_eq!(stderr(&helper), "");
    assert_eq!(complete(&["tool-cli", "d"], &no_daemon), ["daemon"]);
    assert!(complete(&["tool-cli", "demo", ""], &no_daemon).is_empty());

    // A daemon that has gone (its port closed) is no daemon either.
    drop(daemon);
    assert_eq!(complete(&["tool-cli", "d"], &env), ["daemon"]);
}

#[test]
fn completion_scripts_for_every_shell() {
    for (shell, marker) in [
        ("bash", "complete -F _tool_cli_live"),
        ("zsh", "compdef _tool_cli_live tool-cli"),
        ("fish", "complete -c tool-cli -f -a '(__tool_cli_live)'"),
    ] {
        let mut command = client_command();
        command.args(["completions", shell]);
        let output = run_with_timeout(command, CLIENT_TIMEOUT);
        assert_exit(&output, 0);
        assert!(stdout(&output).contains(marker), "{shell}");
    }
    // The bash script is valid bash.
    let syntax = bash(
        "source <(tool-cli completions bash) && type _tool_cli_live",
        &[],
    );
    assert_exit(&syntax, 0);

    let mut command = client_command();
    command.args(["completions", "powershell"]);
    let output = run_with_timeout(command, CLIENT_TIMEOUT);
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("[possible values: bash, zsh, fish]"),
        "{}",
        stderr(&output)
    );
}

/// Arguments over the daemon's `--max-body-bytes` are refused before the daemon reads them; the
/// client shows the daemon's reason (the limit, the flag), not a broken pipe, and exits 1.
#[test]
fn arguments_over_the_body_limit_are_refused_with_the_limit_named() {
    let daemon = Daemon::start_demo();
    let dir = scratch();
    let args_file = dir.path().join("big.json");
    let sql = format!("SELECT '{}' AS big", "x".repeat(5 * 1024 * 1024));
    std::fs::write(&args_file, json!({ "sql": sql }).to_string()).unwrap();
    let refused = daemon.run_client(
        &[
            "demo",
            "sql_query",
            "--args-file",
            &args_file.to_string_lossy(),
        ],
        &[],
    );
    assert_exit(&refused, 1);
    let text = stderr(&refused);
    assert!(
        text.contains("over the daemon's limit of 4194304 bytes")
            && text.contains("--max-body-bytes"),
        "{text}"
    );
    assert!(!text.contains("Broken pipe"), "{text}");
    // The daemon keeps serving.
    let after = json_stdout(&daemon.run_client(&["demo", "sql_query", "sql=SELECT 1 AS one"], &[]));
    assert_eq!(after["rows"], json!([{"one": 1}]));
}
