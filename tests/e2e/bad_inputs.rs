//! What a caller gets back for every kind of bad request: no token or a wrong one (HTTP 401 with
//! nothing to learn from the body), malformed JSON, an unknown method, missing or ill-typed
//! params, an unknown server or tool, and arguments that fail the tool's schema. Each error must
//! carry the code from the protocol crate and structured `data` naming what was wrong, so a
//! program can recover without parsing messages.

use serde_json::{Value, json};
use tool_cli_protocol::{ErrorData, code};
use tool_cli_tests::{Daemon, error_data, parse_response};

const LIST_SERVERS: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"listServers"}"#;

fn assert_unauthorized(daemon: &Daemon, headers: &[(&str, &str)]) {
    let (status, body) = daemon.raw_post(headers, LIST_SERVERS);
    assert_eq!(status, 401, "headers {headers:?}");
    let body = String::from_utf8_lossy(&body);
    assert!(
        !body.contains("servers") && !body.contains("demo") && !body.contains(&daemon.token),
        "a 401 reveals nothing: {body:?}"
    );
}

#[test]
fn missing_or_wrong_token_is_401() {
    let daemon = Daemon::start_demo();
    assert_unauthorized(&daemon, &[]);
    assert_unauthorized(&daemon, &[("Authorization", "Bearer ")]);
    let wrong = "0".repeat(64);
    assert_unauthorized(&daemon, &[("Authorization", &format!("Bearer {wrong}"))]);
    // The right token with one character changed, and the right token under another scheme.
    let mut near = daemon.token.clone();
    let last = if near.ends_with('0') { "1" } else { "0" };
    near.replace_range(near.len() - 1.., last);
    assert_unauthorized(&daemon, &[("Authorization", &format!("Bearer {near}"))]);
    assert_unauthorized(
        &daemon,
        &[("Authorization", &format!("Basic {}", daemon.token))],
    );
    assert_unauthorized(&daemon, &[("Authorization", &daemon.token)]);

    // And the right token works on the same daemon.
    let (status, body) = daemon.post(LIST_SERVERS);
    assert_eq!(status, 200);
    assert!(parse_response(&body).result.is_some());
}

#[test]
fn the_token_is_64_hex_characters() {
    let daemon = Daemon::start_demo();
    assert_eq!(daemon.token.len(), 64, "{}", daemon.token);
    assert!(daemon.token.chars().all(|c| c.is_ascii_hexdigit()));
}

#[test]
fn malformed_json_is_a_parse_error() {
    let daemon = Daemon::start_demo();
    let (_, body) = daemon.post(br#"{"jsonrpc":"2.0","id":1,"method":"#);
    let response = parse_response(&body);
    assert_eq!(response.id, None);
    let error = response.error.expect("error");
    assert_eq!(error.code, code::PARSE_ERROR, "{error:?}");
}

#[test]
fn json_that_is_not_a_request_is_invalid_request() {
    let daemon = Daemon::start_demo();
    let (_, body) = daemon.post(br#"{"hello":"world"}"#);
    let error = parse_response(&body).error.expect("error");
    assert_eq!(error.code, code::INVALID_REQUEST, "{error:?}");
}

#[test]
fn unknown_method() {
    let daemon = Daemon::start_demo();
    let error = daemon.call_err("dropAllTables", Value::Null);
    assert_eq!(error.code, code::METHOD_NOT_FOUND, "{error:?}");
}

fn assert_invalid_params(error: &tool_cli_protocol::ErrorObject, method: &str, field: &str) {
    assert_eq!(error.code, code::INVALID_PARAMS, "{error:?}");
    match error_data(error) {
        ErrorData::InvalidParams {
            method: reported,
            message,
        } => {
            assert_eq!(reported, method);
            assert!(
                message.contains(field),
                "message names {field}: {message:?}"
            );
        }
        other => panic!("expected invalidParams, got {other:?}"),
    }
}

#[test]
fn missing_params_name_the_missing_member() {
    let daemon = Daemon::start_demo();
    // listTools without a server lists every server's tools; describeTool needs both.
    let error = daemon.call_err("describeTool", Value::Null);
    assert_invalid_params(&error, "describeTool", "server");
    let error = daemon.call_err("listResources", json!({}));
    assert_invalid_params(&error, "listResources", "server");
    let error = daemon.call_err("describeTool", json!({"server": "demo"}));
    assert_invalid_params(&error, "describeTool", "tool");
    let error = daemon.call_err("callTool", json!({"server": "demo"}));
    assert_invalid_params(&error, "callTool", "tool");
    let error = daemon.call_err("readResource", json!({"server": "demo"}));
    assert_invalid_params(&error, "readResource", "uri");
}

#[test]
fn ill_typed_params_name_the_member() {
    let daemon = Daemon::start_demo();
    let error = daemon.call_err("listTools", json!({"server": 5}));
    assert_invalid_params(&error, "listTools", "server");
    // Arguments that are not an object are the tool's invalid arguments, in both formats, as
    // the reference bridge answers them.
    let error = daemon.call_err(
        "callTool",
        json!({"server": "demo", "tool": "sql_query", "arguments": "SELECT 1"}),
    );
    assert_eq!(error.code, code::INVALID_PARAMS, "{error:?}");
    match error_data(&error) {
        ErrorData::InvalidArguments {
            validation_errors, ..
        } => assert_eq!(validation_errors[0].message, "must be object"),
        other => panic!("expected invalidArguments, got {other:?}"),
    }
    let error = daemon.call_err(
        "callTool",
        json!({"server": "demo", "tool": "sql_query", "arguments": {"sql": "SELECT 1"},
               "timeoutMs": "soon"}),
    );
    assert_invalid_params(&error, "callTool", "timeoutMs");
}

#[test]
fn unknown_server_lists_the_known_ones() {
    let daemon = Daemon::start_demo();
    for (method, params) in [
        ("listTools", json!({"server": "nope"})),
        (
            "describeTool",
            json!({"server": "nope", "tool": "sql_query"}),
        ),
        (
            "callTool",
            json!({"server": "nope", "tool": "sql_query", "arguments": {}}),
        ),
        ("listResources", json!({"server": "nope"})),
        ("listResourceTemplates", json!({"server": "nope"})),
        (
            "readResource",
            json!({"server": "nope", "uri": "demo://docs/readme"}),
        ),
    ] {
        let error = daemon.call_err(method, params);
        assert_eq!(error.code, code::INVALID_PARAMS, "{method}: {error:?}");
        assert_eq!(
            error_data(&error),
            ErrorData::UnknownServer {
                server: "nope".into(),
                known_servers: vec!["demo".into()],
            },
            "{method}"
        );
    }
}

#[test]
fn unknown_tool_lists_the_known_ones() {
    let daemon = Daemon::start_demo();
    for (method, params) in [
        (
            "describeTool",
            json!({"server": "demo", "tool": "drop_table"}),
        ),
        (
            "callTool",
            json!({"server": "demo", "tool": "drop_table", "arguments": {}}),
        ),
    ] {
        let error = daemon.call_err(method, params);
        assert_eq!(error.code, code::INVALID_PARAMS, "{method}: {error:?}");
        match error_data(&error) {
            ErrorData::UnknownTool {
                server,
                tool,
                known_tools,
                ..
            } => {
                assert_eq!((server.as_str(), tool.as_str()), ("demo", "drop_table"));
                assert!(
                    known_tools.contains(&"sql_query".to_owned())
                        && known_tools.contains(&"describe_schema".to_owned()),
                    "{known_tools:?}"
                );
            }
            other => panic!("{method}: expected unknownTool, got {other:?}"),
        }
    }
}

fn argument_errors(daemon: &Daemon, arguments: Value) -> Vec<tool_cli_protocol::ArgumentError> {
    let error = daemon.call_err(
        "callTool",
        json!({"server": "demo", "tool": "sql_query", "arguments": arguments}),
    );
    assert_eq!(error.code, code::INVALID_PARAMS, "{error:?}");
    match error_data(&error) {
        ErrorData::InvalidArguments {
            server,
            tool,
            errors,
            ..
        } => {
            assert_eq!((server.as_str(), tool.as_str()), ("demo", "sql_query"));
            assert!(!errors.is_empty());
            errors
        }
        other => panic!("expected invalidArguments, got {other:?}"),
    }
}

#[test]
fn arguments_failing_the_schema_are_listed_with_their_path() {
    let daemon = Daemon::start_demo();

    let errors = argument_errors(&daemon, json!({"sql": 42}));
    assert!(
        errors
            .iter()
            .any(|e| e.path == "/sql" && e.schema_path.ends_with("/type")),
        "{errors:?}"
    );

    let errors = argument_errors(&daemon, json!({}));
    assert!(
        errors
            .iter()
            .any(|e| e.path.is_empty() && e.message.contains("sql")),
        "a missing required member is reported at the root, naming it: {errors:?}"
    );

    let errors = argument_errors(&daemon, json!({"sql": "SELECT 1", "page_size": "ten"}));
    assert!(errors.iter().any(|e| e.path == "/page_size"), "{errors:?}");

    // Two failures at once are both reported.
    let errors = argument_errors(&daemon, json!({"sql": 1, "page_size": "ten"}));
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert!(
        paths.contains(&"/sql") && paths.contains(&"/page_size"),
        "{errors:?}"
    );
}

#[test]
fn a_tool_error_is_a_result_not_a_protocol_error() {
    let daemon = Daemon::start_demo();
    // The demo server refuses writes; that is the tool's answer (isError), not a bridge fault.
    let result = daemon.call_tool("demo", "sql_query", json!({"sql": "DELETE FROM customers"}));
    assert_eq!(result["isError"], true, "{result:#}");
    let again = daemon.call_tool(
        "demo",
        "sql_query",
        json!({"sql": "SELECT COUNT(*) AS n FROM customers"}),
    );
    assert_ne!(again["isError"], true, "{again:#}");
}

#[test]
fn reading_an_unknown_resource_is_an_upstream_error() {
    let daemon = Daemon::start_demo();
    let error = daemon.call_err(
        "readResource",
        json!({"server": "demo", "uri": "demo://no/such/thing"}),
    );
    assert_eq!(error.code, code::UPSTREAM_ERROR, "{error:?}");
    match error_data(&error) {
        ErrorData::Upstream { server, .. } => assert_eq!(server, "demo"),
        other => panic!("expected upstream, got {other:?}"),
    }
}
