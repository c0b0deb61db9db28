//! Prompts (`listPrompts`, `getPrompt`, `tool-cli prompt list|get`) against the reference
//! `server-everything`, which offers `simple-prompt` (no arguments) and `args-prompt` (`city`
//! required, `state` optional): rendering with and without arguments, missing required
//! arguments and unknown prompts refused before `prompts/get` is sent, and scoped tokens that
//! see no prompt until granted one.

use serde_json::{Value, json};
use tool_cli_protocol::code;
use tool_cli_protocol::methods::name;
use tool_cli_tests::{Daemon, everything_stdio};

fn everything() -> Daemon {
    Daemon::start(json!({"mcpServers": {"everything": everything_stdio()}}))
}

fn prompt_names(result: &Value) -> Vec<String> {
    result["prompts"]
        .as_array()
        .expect("prompts array")
        .iter()
        .map(|entry| {
            assert_eq!(entry["server"], "everything", "{entry}");
            entry["prompt"]["name"].as_str().expect("name").to_owned()
        })
        .collect()
}

#[test]
fn everything_prompts_are_listed_and_rendered() {
    let daemon = everything();
    let listed = daemon.call(name::LIST_PROMPTS, json!({"server": "everything"}));
    let names = prompt_names(&listed);
    assert!(names.contains(&"simple-prompt".to_owned()), "{listed:#}");
    assert!(names.contains(&"args-prompt".to_owned()), "{listed:#}");
    let args_prompt = listed["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["prompt"]["name"] == "args-prompt")
        .unwrap();
    assert_eq!(args_prompt["prompt"]["arguments"][0]["name"], "city");
    assert_eq!(args_prompt["prompt"]["arguments"][0]["required"], true);
    // Across servers (no `server`), the same prompts.
    let across = daemon.call(name::LIST_PROMPTS, Value::Null);
    assert_eq!(prompt_names(&across), names);

    let simple = daemon.call(
        name::GET_PROMPT,
        json!({"server": "everything", "name": "simple-prompt"}),
    );
    assert_eq!(
        simple["messages"][0]["content"]["text"],
        "This is a simple prompt without arguments."
    );
    let weather = daemon.call(
        name::GET_PROMPT,
        json!({"server": "everything", "name": "args-prompt",
               "arguments": {"city": "Paris", "state": "TX"}}),
    );
    assert_eq!(weather["messages"][0]["role"], "user");
    assert_eq!(
        weather["messages"][0]["content"]["text"],
        "What's weather in Paris, TX?"
    );
}

#[test]
fn missing_required_arguments_unknown_prompts_and_bad_params_are_named() {
    let daemon = everything();
    let missing = daemon.call_err(
        name::GET_PROMPT,
        json!({"server": "everything", "name": "args-prompt", "arguments": {"state": "TX"}}),
    );
    assert_eq!(missing.code, code::INVALID_PARAMS, "{missing:?}");
    assert!(
        missing
            .message
            .contains("needs the argument \"city\" (Name of the city)"),
        "{}",
        missing.message
    );

    let undeclared = daemon.call_err(
        name::GET_PROMPT,
        json!({"server": "everything", "name": "args-prompt", "arguments": {"city": "x", "sate": "y"}}),
    );
    assert_eq!(undeclared.code, code::INVALID_PARAMS);
    assert!(
        undeclared.message.contains("no argument \"sate\"")
            && undeclared.message.contains("did you mean \"state\""),
        "{}",
        undeclared.message
    );

    let unknown = daemon.call_err(
        name::GET_PROMPT,
        json!({"server": "everything", "name": "simple-promt"}),
    );
    assert_eq!(unknown.code, code::INVALID_PARAMS);
    assert!(
        unknown.message.contains("has no prompt \"simple-promt\"")
            && unknown.message.contains("did you mean \"simple-prompt\""),
        "{}",
        unknown.message
    );

    let not_strings = daemon.call_err(
        name::GET_PROMPT,
        json!({"server": "everything", "name": "args-prompt", "arguments": {"city": 5}}),
    );
    assert_eq!(not_strings.code, code::INVALID_PARAMS);
    assert!(
        not_strings
            .message
            .contains("\"arguments\"?: {string: string}"),
        "{}",
        not_strings.message
    );

    let no_server = daemon.call_err(
        name::GET_PROMPT,
        json!({"server": "nowhere", "name": "simple-prompt"}),
    );
    assert_eq!(no_server.code, code::INVALID_PARAMS, "{no_server:?}");
    assert_eq!(no_server.data.as_ref().unwrap()["kind"], "unknownServer");
}

#[test]
fn a_scoped_token_sees_prompts_only_when_granted() {
    let daemon = everything();
    let plain = daemon.call(name::MINT_TOKEN, json!({"servers": ["everything"]}));
    let plain = plain["token"].as_str().unwrap();
    let listed = daemon
        .rpc_as(plain, name::LIST_PROMPTS, Some(json!({})))
        .expect("listPrompts");
    assert_eq!(listed["prompts"], json!([]), "{listed:#}");
    let refused = daemon
        .rpc_as(
            plain,
            name::GET_PROMPT,
            Some(json!({"server": "everything", "name": "simple-prompt"})),
        )
        .unwrap_err();
    assert_eq!(refused.code, code::FORBIDDEN, "{refused:?}");
    assert!(
        refused
            .message
            .contains("--prompt \"everything/simple-prompt\""),
        "{}",
        refused.message
    );

    let granted = daemon.call(
        name::MINT_TOKEN,
        json!({"servers": ["everything"], "prompts": ["everything/simple-*"]}),
    );
    assert!(
        granted["scope"]
            .as_str()
            .unwrap()
            .contains("prompts everything/simple-*"),
        "{granted}"
    );
    let granted = granted["token"].as_str().unwrap();
    let listed = daemon
        .rpc_as(
            granted,
            name::LIST_PROMPTS,
            Some(json!({"server": "everything"})),
        )
        .expect("listPrompts");
    assert_eq!(prompt_names(&listed), vec!["simple-prompt".to_owned()]);
    let simple = daemon
        .rpc_as(
            granted,
            name::GET_PROMPT,
            Some(json!({"server": "everything", "name": "simple-prompt"})),
        )
        .expect("granted getPrompt");
    assert!(simple["messages"].is_array(), "{simple:#}");
    let other = daemon
        .rpc_as(
            granted,
            name::GET_PROMPT,
            Some(
                json!({"server": "everything", "name": "args-prompt", "arguments": {"city": "x"}}),
            ),
        )
        .unwrap_err();
    assert_eq!(other.code, code::FORBIDDEN);

    let bad_glob = daemon.call_err(name::MINT_TOKEN, json!({"prompts": ["simple-prompt"]}));
    assert_eq!(bad_glob.code, code::INVALID_PARAMS);
    assert!(
        bad_glob.message.contains("\"server/prompt\""),
        "{}",
        bad_glob.message
    );
}

#[test]
fn the_cli_lists_and_prints_prompts() {
    let daemon = everything();
    let listed = daemon.run_client(&["prompt", "list", "--server", "everything"], &[]);
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{listed:?}");
    assert!(
        stdout.contains("everything/args-prompt(city*, state)"),
        "{stdout}"
    );

    let got = daemon.run_client(
        &["prompt", "get", "everything", "args-prompt", "city=Lyon"],
        &[],
    );
    let stdout = String::from_utf8_lossy(&got.stdout);
    assert!(got.status.success(), "{got:?}");
    assert_eq!(stdout, "[user]\nWhat's weather in Lyon?\n");

    let json_out = daemon.run_client(
        &["prompt", "get", "everything", "simple-prompt", "--json"],
        &[],
    );
    let parsed: Value = serde_json::from_slice(&json_out.stdout).expect("--json prints JSON");
    assert_eq!(parsed["messages"][0]["role"], "user");

    let missing = daemon.run_client(&["prompt", "get", "everything", "args-prompt"], &[]);
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("\"city\""), "{stderr}");

    let malformed = daemon.run_client(&["prompt", "get", "everything", "args-prompt", "Lyon"], &[]);
    assert_eq!(malformed.status.code(), Some(2), "{malformed:?}");
    let stderr = String::from_utf8_lossy(&malformed.stderr);
    assert!(stderr.contains("KEY=VALUE"), "{stderr}");

    let mint = daemon.run_client(&["token", "mint", "--prompt", "everything/*"], &[]);
    assert!(mint.status.success(), "{mint:?}");
    let token = String::from_utf8_lossy(&mint.stdout).trim().to_owned();
    let scoped = daemon.run_client(
        &["prompt", "list"],
        &[(tool_cli_protocol::env::TOKEN, token.as_str())],
    );
    let stdout = String::from_utf8_lossy(&scoped.stdout);
    assert!(stdout.contains("everything/simple-prompt()"), "{scoped:?}");
}
