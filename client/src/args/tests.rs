//! Unit tests of the grammar: every form, flag and refusal, without a process.

use serde_json::json;

use super::*;
use crate::error::exit;

fn no_stdin() -> std::io::Result<String> {
    panic!("stdin must not be read")
}

fn parse_ok(args: &[&str]) -> Invocation {
    let argv = std::iter::once("tool-cli").chain(args.iter().copied());
    match parse(argv, &ArgsEnv::default(), no_stdin) {
        Ok(invocation) => invocation,
        Err(outcome) => panic!("{args:?} failed: {outcome:?}"),
    }
}

fn command(args: &[&str]) -> Command {
    parse_ok(args).command
}

/// The usage message of our own validation, panicking on success or on a clap error.
fn usage_error(args: &[&str]) -> String {
    let argv = std::iter::once("tool-cli").chain(args.iter().copied());
    match parse(argv, &ArgsEnv::default(), no_stdin) {
        Err(ParseOutcome::Usage(error)) => {
            assert_eq!(error.exit_code(), exit::USAGE);
            error.to_string()
        }
        other => panic!("{args:?}: expected a usage error, got {other:?}"),
    }
}

/// The clap error kind, panicking when clap accepted the line.
fn clap_error(args: &[&str]) -> clap::Error {
    let argv = std::iter::once("tool-cli").chain(args.iter().copied());
    match parse(argv, &ArgsEnv::default(), no_stdin) {
        Err(ParseOutcome::Clap(error)) => error,
        other => panic!("{args:?}: expected a clap error, got {other:?}"),
    }
}

fn object(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[test]
fn clap_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn each_word_goes_one_step_deeper() {
    assert_eq!(command(&[]), Command::ListServers);
    assert_eq!(
        command(&["demo"]),
        Command::ListTools {
            server: "demo".into()
        }
    );
    assert_eq!(
        command(&["demo", "sql_query"]),
        Command::DescribeTool {
            server: "demo".into(),
            tool: "sql_query".into()
        }
    );
    assert_eq!(
        command(&["demo", "sql_query", r#"{"query": "select 1", "limit": 5}"#]),
        Command::CallTool {
            server: "demo".into(),
            tool: "sql_query".into(),
            arguments: object(json!({"query": "select 1", "limit": 5})),
        }
    );
}

#[test]
fn empty_object_is_a_call_without_arguments() {
    assert_eq!(
        command(&["demo", "describe_schema", "{}"]),
        Command::CallTool {
            server: "demo".into(),
            tool: "describe_schema".into(),
            arguments: Map::new(),
        }
    );
}

#[test]
fn defaults_without_flags() {
    let invocation = parse_ok(&["demo"]);
    assert!(!invocation.json);
    assert_eq!(invocation.out, None);
    // No timeout given: each server's configured timeout applies to its calls.
    assert_eq!(invocation.timeout_ms, None);
    assert!(invocation.require_identity);
    assert!(invocation.warnings.is_empty());
}

#[test]
fn flags_are_accepted_anywhere() {
    for args in [
        &[
            "--json",
            "--out",
            "f.json",
            "--timeout",
            "500",
            "demo",
            "t",
            "{}",
        ][..],
        &[
            "demo",
            "--json",
            "t",
            "--out",
            "f.json",
            "{}",
            "--timeout",
            "500",
        ],
        &["demo", "t", "{}", "--timeout=500", "--out=f.json", "--json"],
    ] {
        let invocation = parse_ok(args);
        assert!(invocation.json, "{args:?}");
        assert_eq!(invocation.out, Some(PathBuf::from("f.json")), "{args:?}");
        assert_eq!(invocation.timeout_ms, Some(500), "{args:?}");
        assert!(
            matches!(invocation.command, Command::CallTool { .. }),
            "{args:?}"
        );
    }
}

#[test]
fn invalid_json_names_line_and_column() {
    let message = usage_error(&["demo", "t", "{\"a\": 1,\n \"b\" 2}"]);
    assert!(message.contains("not valid JSON"), "{message}");
    assert!(message.contains("line 2, column 6"), "{message}");
    assert!(message.contains("on the command line"), "{message}");
}

#[test]
fn json_without_quotes_suggests_single_quotes() {
    let message = usage_error(&["demo", "t", "{query: select}"]);
    assert!(
        message.contains("wrap the whole object in single quotes"),
        "{message}"
    );
}

#[test]
fn non_object_json_says_what_it_got() {
    for (text, kind) in [
        ("[1, 2]", "got an array"),
        ("\"x\"", "got a string"),
        ("42", "got a number"),
        ("null", "got null"),
        ("true", "got a boolean"),
    ] {
        let message = usage_error(&["demo", "t", text]);
        assert!(message.contains("must be a JSON object"), "{message}");
        assert!(message.contains(kind), "{text}: {message}");
    }
}

#[test]
fn empty_arguments_are_refused() {
    let message = usage_error(&["demo", "t", "  "]);
    assert!(message.contains("empty"), "{message}");
}

#[test]
fn dash_reads_arguments_from_stdin() {
    let argv = ["tool-cli", "demo", "t", "-", "--json"];
    let invocation = parse(argv, &ArgsEnv::default(), || {
        Ok("{\"query\": \"select 1\"}\n".to_owned())
    })
    .unwrap();
    assert!(invocation.json);
    assert_eq!(
        invocation.command,
        Command::CallTool {
            server: "demo".into(),
            tool: "t".into(),
            arguments: object(json!({"query": "select 1"})),
        }
    );
}

#[test]
fn bad_stdin_is_a_usage_error_naming_stdin() {
    let argv = ["tool-cli", "demo", "t", "-"];
    match parse(argv, &ArgsEnv::default(), || Ok("[]".to_owned())) {
        Err(ParseOutcome::Usage(error)) => {
            let message = error.to_string();
            assert!(message.contains("from stdin"), "{message}");
            assert!(message.contains("got an array"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    match parse(argv, &ArgsEnv::default(), || {
        Err(std::io::Error::other("closed"))
    }) {
        Err(ParseOutcome::Usage(error)) => {
            assert!(error.to_string().contains("cannot read"), "{error}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn json_split_by_the_shell_asks_for_quotes() {
    let message = usage_error(&["demo", "t", "{\"query\":", "select 1}"]);
    assert!(message.contains("got 2"), "{message}");
    assert!(message.contains("single quotes"), "{message}");
}

#[test]
fn unknown_flag_is_a_clap_usage_error() {
    let error = clap_error(&["--frobnicate"]);
    assert_eq!(error.kind(), clap::error::ErrorKind::UnknownArgument);
    assert_eq!(error.exit_code(), exit::USAGE);
}

#[test]
fn help_and_version_exit_zero() {
    for flag in ["--help", "-h", "--version", "-V"] {
        let error = clap_error(&[flag]);
        assert_eq!(error.exit_code(), exit::OK, "{flag}");
    }
    let help = clap_error(&["--help"]).render().to_string();
    for needle in [
        "Exit codes",
        "TOOL_CLI_TOKEN",
        "tool-cli SERVER TOOL",
        "resource",
    ] {
        assert!(help.contains(needle), "help lacks {needle}");
    }
}

#[test]
fn resource_subcommands() {
    assert_eq!(
        command(&["resource", "list"]),
        Command::ListResources { server: None }
    );
    assert_eq!(
        command(&["resource", "list", "--server", "demo"]),
        Command::ListResources {
            server: Some("demo".into())
        }
    );
    assert_eq!(
        command(&["resource", "templates", "--server=demo"]),
        Command::ListResourceTemplates {
            server: Some("demo".into())
        }
    );
    assert_eq!(
        command(&["resource", "read", "demo://schema"]),
        Command::ReadResource {
            server: None,
            uri: "demo://schema".into(),
            meta: false
        }
    );
    assert_eq!(
        command(&[
            "resource",
            "read",
            "--meta",
            "demo://schema",
            "--server",
            "demo"
        ]),
        Command::ReadResource {
            server: Some("demo".into()),
            uri: "demo://schema".into(),
            meta: true
        }
    );
}

#[test]
fn skill_uris_are_refused_by_read() {
    let message = usage_error(&["resource", "read", "skill://pdf/SKILL.md"]);
    assert!(message.contains("is a skill"), "{message}");
}

#[test]
fn global_flags_work_with_resource_subcommands() {
    let invocation = parse_ok(&["--json", "resource", "list", "--timeout", "100"]);
    assert_eq!(invocation.command, Command::ListResources { server: None });
    assert!(invocation.json);
    assert_eq!(invocation.timeout_ms, Some(100));
    let invocation = parse_ok(&["--timeout=7", "resource", "--json", "templates"]);
    assert_eq!(
        invocation.command,
        Command::ListResourceTemplates { server: None }
    );
    assert!(invocation.json);
    assert_eq!(invocation.timeout_ms, Some(7));
    let invocation = parse_ok(&["resource", "read", "file:///a.png", "--out", "a.png"]);
    assert_eq!(invocation.out, Some(PathBuf::from("a.png")));
}

#[test]
fn meta_excludes_out_and_json() {
    clap_error(&["resource", "read", "x://y", "--meta", "--json"]);
    clap_error(&["resource", "read", "x://y", "--meta", "--out", "f"]);
}

#[test]
fn resource_read_needs_a_uri() {
    let error = clap_error(&["resource", "read"]);
    assert_eq!(error.exit_code(), exit::USAGE);
}

#[test]
fn resource_subcommand_wins_and_double_dash_reaches_a_server_named_resource() {
    assert!(matches!(
        clap_error(&["resource"]).kind(),
        clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            | clap::error::ErrorKind::MissingSubcommand
    ));
    assert_eq!(
        command(&["--", "resource"]),
        Command::ListTools {
            server: "resource".into()
        }
    );
    assert_eq!(
        command(&["--", "resource", "list"]),
        Command::DescribeTool {
            server: "resource".into(),
            tool: "list".into()
        }
    );
}

#[test]
fn hoisting_moves_only_a_subcommand_in_server_position() {
    let hoisted = |args: &[&str]| -> Vec<String> {
        hoist_subcommand(args.iter().copied())
            .into_iter()
            .map(|word| word.into_string().unwrap())
            .collect()
    };
    assert_eq!(
        hoisted(&[
            "t",
            "--json",
            "--out",
            "f",
            "--timeout",
            "5",
            "resource",
            "list"
        ]),
        [
            "t",
            "resource",
            "--json",
            "--out",
            "f",
            "--timeout",
            "5",
            "list"
        ]
    );
    assert_eq!(
        hoisted(&["t", "--out=f", "resource"]),
        ["t", "resource", "--out=f"]
    );
    assert_eq!(
        hoisted(&["t", "demo", "resource"]),
        ["t", "demo", "resource"]
    );
    assert_eq!(hoisted(&["t", "--", "resource"]), ["t", "--", "resource"]);
    assert_eq!(
        hoisted(&["t", "--json", "health"]),
        ["t", "health", "--json"]
    );
    assert_eq!(hoisted(&["t", "--", "health"]), ["t", "--", "health"]);
    assert_eq!(
        hoisted(&["t", "--yes", "--json", "token", "list"]),
        ["t", "token", "--yes", "--json", "list"]
    );
    assert_eq!(hoisted(&["t", "--", "token"]), ["t", "--", "token"]);
    assert_eq!(
        hoisted(&["t", "--out", "resource"]),
        ["t", "--out", "resource"]
    );
}

#[test]
fn resource_as_a_tool_name_after_a_server() {
    assert_eq!(
        command(&["demo", "resource"]),
        Command::DescribeTool {
            server: "demo".into(),
            tool: "resource".into()
        }
    );
    assert_eq!(
        command(&["--json", "--", "demo", "resource", "{}"]),
        Command::CallTool {
            server: "demo".into(),
            tool: "resource".into(),
            arguments: Map::new()
        }
    );
    assert_eq!(
        command(&["demo", "--json", "resource"]),
        Command::DescribeTool {
            server: "demo".into(),
            tool: "resource".into()
        }
    );
}

#[test]
fn health_subcommand_with_flags_anywhere() {
    for args in [
        &["health"][..],
        &["health", "--json"],
        &["--json", "health"],
        &["--timeout", "500", "health", "--json"],
    ] {
        let invocation = parse_ok(args);
        assert_eq!(
            invocation.command,
            Command::Health { tools: false },
            "{args:?}"
        );
        assert_eq!(invocation.json, args.contains(&"--json"), "{args:?}");
    }
    assert_eq!(parse_ok(&["--timeout=500", "health"]).timeout_ms, Some(500));
}

#[test]
fn health_subcommand_wins_and_double_dash_reaches_a_server_named_health() {
    assert_eq!(
        command(&["--", "health"]),
        Command::ListTools {
            server: "health".into()
        }
    );
    assert_eq!(
        command(&["--json", "--", "health", "check", "{}"]),
        Command::CallTool {
            server: "health".into(),
            tool: "check".into(),
            arguments: Map::new()
        }
    );
    assert_eq!(
        command(&["demo", "health"]),
        Command::DescribeTool {
            server: "demo".into(),
            tool: "health".into()
        }
    );
    let message = usage_error(&["health", "check", "{}"]);
    assert!(message.contains("takes no arguments, got 2"), "{message}");
    assert!(
        message.contains("`tool-cli -- health check {}`"),
        "{message}"
    );
}

#[test]
fn help_documents_the_health_exit_code() {
    let help = clap_error(&["--help"]).render().to_string();
    assert!(
        help.contains("health exits 1 when any server is unhealthy, so scripts can check it"),
        "{help}"
    );
    assert!(
        help.contains("tool-cli health [--tools] [--json]"),
        "{help}"
    );
    let help = clap_error(&["health", "--help"]).render().to_string();
    assert!(help.contains("exit 1 if any is unhealthy"), "{help}");
}

#[test]
fn a_server_named_like_a_resource_action_is_just_a_server() {
    assert_eq!(
        command(&["list"]),
        Command::ListTools {
            server: "list".into()
        }
    );
}

#[test]
fn timeout_from_flag_env_or_none() {
    let env = ArgsEnv {
        timeout_ms: Some("1234".into()),
        ..ArgsEnv::default()
    };
    let from_env = parse(["tool-cli"], &env, no_stdin).unwrap();
    assert_eq!(from_env.timeout_ms, Some(1234));
    let flag_wins = parse(["tool-cli", "--timeout", "99"], &env, no_stdin).unwrap();
    assert_eq!(flag_wins.timeout_ms, Some(99));
    let empty_env = ArgsEnv {
        timeout_ms: Some(String::new()),
        ..ArgsEnv::default()
    };
    let default = parse(["tool-cli"], &empty_env, no_stdin).unwrap();
    assert_eq!(default.timeout_ms, None);
}

#[test]
fn large_timeout_is_clamped_with_a_warning() {
    let invocation = parse_ok(&["--timeout", "999999"]);
    assert_eq!(
        invocation.timeout_ms,
        Some(tool_cli_protocol::MAX_TIMEOUT_MS)
    );
    assert_eq!(invocation.warnings.len(), 1);
    assert!(invocation.warnings[0].contains("300000"));
}

#[test]
fn bad_timeouts_are_usage_errors() {
    for bad in ["abc", "-5", "0", "1.5", "", "99999999999999999999999"] {
        let message = usage_error(&["--timeout", bad]);
        assert!(message.contains("--timeout"), "{bad}: {message}");
    }
    let env = ArgsEnv {
        timeout_ms: Some("soon".into()),
        ..ArgsEnv::default()
    };
    match parse(["tool-cli"], &env, no_stdin) {
        Err(ParseOutcome::Usage(error)) => {
            assert!(error.to_string().contains("TOOL_CLI_TIMEOUT_MS"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn yes_confirms_a_call_anywhere_on_the_line() {
    for args in [
        &["--yes", "demo", "drop", "{}"][..],
        &["demo", "drop", "{}", "--yes"],
        &["demo", "--yes", "drop", "{}"],
    ] {
        let invocation = parse_ok(args);
        assert!(invocation.confirm, "{args:?}");
        assert!(
            matches!(invocation.command, Command::CallTool { .. }),
            "{args:?}"
        );
    }
    assert!(!parse_ok(&["demo", "drop", "{}"]).confirm);
}

#[test]
fn token_mint_collects_repeated_globs_and_options() {
    assert_eq!(
        command(&["token", "mint"]),
        Command::MintToken(MintTokenParams::default())
    );
    let invocation = parse_ok(&[
        "--json",
        "token",
        "mint",
        "--server",
        "demo",
        "--server=fs*",
        "--tool",
        "fs/read_*",
        "--read-only",
        "--ttl",
        "3600",
        "--label",
        "sub-agent 1",
    ]);
    assert!(invocation.json);
    assert_eq!(
        invocation.command,
        Command::MintToken(MintTokenParams {
            resources: None,
            prompts: None,
            servers: Some(vec!["demo".into(), "fs*".into()]),
            tools: Some(vec!["fs/read_*".into()]),
            read_only: true,
            ttl_seconds: Some(3600),
            label: Some("sub-agent 1".into()),
            gateway_mode: None,
        })
    );
}

#[test]
fn token_mint_refuses_malformed_tool_globs_and_zero_ttl() {
    for glob in ["read_*", "/read_*", "fs/"] {
        let message = usage_error(&["token", "mint", "--tool", glob]);
        assert!(message.contains("SERVER/TOOL_GLOB"), "{glob}: {message}");
    }
    let message = usage_error(&["token", "mint", "--ttl", "0"]);
    assert!(message.contains("at least 1 second"), "{message}");
    assert_eq!(
        clap_error(&["token", "mint", "--ttl", "-5"]).exit_code(),
        exit::USAGE
    );
    assert_eq!(
        clap_error(&["token", "mint", "--ttl", "1h"]).exit_code(),
        exit::USAGE
    );
}

#[test]
fn token_list_and_revoke() {
    assert_eq!(command(&["token", "list"]), Command::ListTokens);
    assert_eq!(command(&["--json", "token", "list"]), Command::ListTokens);
    assert_eq!(
        command(&["token", "revoke", "a8ae6e6ee929abea"]),
        Command::RevokeToken {
            token_id: "a8ae6e6ee929abea".into()
        }
    );
    // The token itself is turned into its id, and never sent.
    let token = "0123456789abcdef".repeat(4);
    assert_eq!(
        command(&["token", "revoke", &token]),
        Command::RevokeToken {
            token_id: "a8ae6e6ee929abea".into()
        }
    );
    let message = usage_error(&["token", "revoke", "A8AE6E6EE929ABEA-secret"]);
    assert!(message.contains("expected a token id"), "{message}");
    assert!(
        !message.contains("secret"),
        "the argument is not echoed: {message}"
    );
    assert_eq!(clap_error(&["token", "revoke"]).exit_code(), exit::USAGE);
}

#[test]
fn token_subcommand_wins_and_double_dash_reaches_a_server_named_token() {
    assert_eq!(clap_error(&["token"]).exit_code(), exit::USAGE);
    assert_eq!(
        command(&["--", "token"]),
        Command::ListTools {
            server: "token".into()
        }
    );
    assert_eq!(
        command(&["--", "token", "mint", "{}"]),
        Command::CallTool {
            server: "token".into(),
            tool: "mint".into(),
            arguments: Map::new()
        }
    );
    assert_eq!(
        command(&["demo", "token"]),
        Command::DescribeTool {
            server: "demo".into(),
            tool: "token".into()
        }
    );
    assert_eq!(
        command(&["--timeout", "5", "token", "list"]),
        Command::ListTokens
    );
}

#[test]
fn help_documents_the_new_exit_codes_tokens_and_socket() {
    let help = clap_error(&["--help"]).render().to_string();
    for needle in [
        "8  the listener did not prove it holds the token",
        "9  not permitted",
        "--yes",
        "TOOL_CLI_SOCKET",
        "tool-cli token mint",
        "TOKEN=$(tool-cli token mint --server demo)",
        "tool-cli -- token",
    ] {
        assert!(help.contains(needle), "help lacks {needle}:\n{help}");
    }
    let help = clap_error(&["token", "mint", "--help"])
        .render()
        .to_string();
    for needle in [
        "--server <GLOB>",
        "--tool <SERVER/TOOL_GLOB>",
        "--read-only",
        "--ttl",
    ] {
        assert!(help.contains(needle), "mint help lacks {needle}:\n{help}");
    }
}

#[test]
fn identity_opt_out_by_flag_or_environment() {
    assert!(parse_ok(&["demo"]).require_identity);
    assert!(!parse_ok(&["--no-identity", "demo"]).require_identity);
    assert!(!parse_ok(&["demo", "t", "{}", "--no-identity"]).require_identity);
    let env = ArgsEnv {
        require_identity: Some("0".into()),
        ..ArgsEnv::default()
    };
    assert!(
        !parse(["tool-cli"], &env, no_stdin)
            .unwrap()
            .require_identity
    );
    let env = ArgsEnv {
        require_identity: Some("maybe".into()),
        ..ArgsEnv::default()
    };
    match parse(["tool-cli"], &env, no_stdin) {
        Err(ParseOutcome::Usage(error)) => {
            assert!(error.to_string().contains("TOOL_CLI_REQUIRE_IDENTITY"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn server_help_lists_the_servers_tools() {
    for args in [
        &["demo", "--help"][..],
        &["demo", "-h"],
        &["--help", "demo"],
        &["--json", "demo", "--help"],
    ] {
        assert_eq!(
            command(args),
            Command::ServerHelp {
                server: "demo".into()
            },
            "{args:?}"
        );
    }
    assert_eq!(
        command(&["demo", "sql_query", "--help"]),
        Command::DescribeTool {
            server: "demo".into(),
            tool: "sql_query".into()
        }
    );
    // After `--`, `--help` is a word like any other: here, a tool's name.
    assert_eq!(
        command(&["--", "demo", "--help"]),
        Command::DescribeTool {
            server: "demo".into(),
            tool: "--help".into()
        }
    );
    // Without a server, and for subcommands, clap's own help.
    for args in [&["--help"][..], &["resource", "--help"], &["health", "-h"]] {
        assert_eq!(clap_error(args).exit_code(), exit::OK, "{args:?}");
    }
}

#[test]
fn daemon_subcommands() {
    assert_eq!(
        command(&["daemon", "start"]),
        Command::Daemon(DaemonCommand::Start {
            config: None,
            daemon_args: Vec::new()
        })
    );
    assert_eq!(
        command(&[
            "--timeout",
            "5000",
            "daemon",
            "start",
            "--config",
            "s.json",
            "--",
            "--shutdown-grace-ms",
            "100"
        ]),
        Command::Daemon(DaemonCommand::Start {
            config: Some(PathBuf::from("s.json")),
            daemon_args: vec!["--shutdown-grace-ms".into(), "100".into()]
        })
    );
    assert_eq!(
        command(&["daemon", "stop"]),
        Command::Daemon(DaemonCommand::Stop)
    );
    assert_eq!(
        command(&["--json", "daemon", "status"]),
        Command::Daemon(DaemonCommand::Status)
    );
    assert_eq!(
        command(&["--", "daemon"]),
        Command::ListTools {
            server: "daemon".into()
        }
    );
    assert_eq!(clap_error(&["daemon"]).exit_code(), exit::USAGE);
    let help = clap_error(&["--help"]).render().to_string();
    assert!(help.contains("tool-cli daemon start"), "{help}");
    assert!(help.contains("TOOL_CLI_REQUIRE_IDENTITY=0"), "{help}");
}
