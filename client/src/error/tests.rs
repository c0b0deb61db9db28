//! Unit tests of the errors: each one's exit code, kind, envelope and message.

use serde_json::json;

use super::*;

fn rpc(code: i32, data: serde_json::Value) -> Error {
    Error::Rpc {
        method: "callTool".into(),
        error: Box::new(ErrorObject {
            code,
            message: "message from the daemon".into(),
            data: Some(data),
        }),
    }
}

#[test]
fn unknown_tool_lists_known_tools_and_suggests() {
    let error = rpc(
        code::INVALID_PARAMS,
        json!({"kind": "unknownTool", "server": "demo", "tool": "sql_qurey",
                   "knownTools": ["sql_query", "describe_schema"]}),
    );
    assert_eq!(error.exit_code(), exit::INVALID_PARAMS);
    assert_eq!(
        error.to_string(),
        "server \"demo\" has no tool \"sql_qurey\"; its tools: sql_query, describe_schema; \
         did you mean \"sql_query\"?"
    );
}

#[test]
fn unknown_server_lists_known_servers() {
    let error = rpc(
        code::INVALID_PARAMS,
        json!({"kind": "unknownServer", "server": "github", "knownServers": ["demo"]}),
    );
    assert_eq!(error.exit_code(), exit::INVALID_PARAMS);
    assert_eq!(
        error.to_string(),
        "unknown server \"github\"; known servers: demo"
    );
}

#[test]
fn invalid_arguments_list_each_path() {
    let error = rpc(
        code::INVALID_PARAMS,
        json!({"kind": "invalidArguments", "server": "demo", "tool": "sql_query", "errors": [
            {"path": "", "schemaPath": "/required", "message": "\"query\" is a required property"},
            {"path": "/limit", "schemaPath": "/properties/limit/type", "message": "\"x\" is not of type \"integer\""},
        ]}),
    );
    assert_eq!(error.exit_code(), exit::INVALID_PARAMS);
    assert_eq!(
        error.to_string(),
        "arguments for demo/sql_query do not match its input schema: (root): \"query\" is a \
         required property; /limit: \"x\" is not of type \"integer\"\n\
         see `tool-cli demo sql_query` for its parameters and an example"
    );
}

#[test]
fn daemon_timeout_exits_with_the_timeout_code() {
    let error = rpc(
        code::TIMEOUT,
        json!({"kind": "timeout", "server": "demo", "tool": "sql_query", "timeoutMs": 500}),
    );
    assert_eq!(error.exit_code(), exit::TIMEOUT);
    assert!(error.to_string().contains("within 500 ms"));
}

#[test]
fn server_exited_shows_its_stderr_tail() {
    let error = rpc(
        code::SERVER_UNAVAILABLE,
        json!({"kind": "serverExited", "server": "demo", "exit": "exit code 1",
                   "stderrTail": ["panic: boom", "bye"]}),
    );
    assert_eq!(error.exit_code(), exit::OTHER);
    assert_eq!(
        error.to_string(),
        "server \"demo\" exited while the request was pending (exit code 1); its last \
             stderr lines:\n  panic: boom\n  bye"
    );
}

#[test]
fn a_result_too_large_says_the_call_ran_and_how_to_ask_for_less() {
    let error = rpc(
        code::UPSTREAM_ERROR,
        json!({"kind": "resultTooLarge", "server": "demo", "method": "sql_query",
               "bytes": 20000000, "limitBytes": 16777216,
               "hint": "ask for less in one call: the tool takes `limit`"}),
    );
    assert_eq!(
        error.to_string(),
        "the answer of server \"demo\" to sql_query was 20000000 bytes, over the 16777216-byte \
         limit, so it was dropped (the request ran; only this call failed and it is not \
         retried); ask for less in one call: the tool takes `limit`"
    );
    let unknown_size = rpc(
        code::UPSTREAM_ERROR,
        json!({"kind": "resultTooLarge", "server": "r", "method": "m", "limitBytes": 10,
               "hint": "h"}),
    );
    assert!(
        unknown_size
            .to_string()
            .starts_with("the answer of server \"r\" to m was more than the 10-byte limit"),
        "{unknown_size}"
    );
    let full = rpc(
        code::RESPONSE_TOO_LARGE,
        json!({"kind": "answerFull", "method": "callMany", "limitBytes": 1024}),
    );
    assert!(
        full.to_string()
            .starts_with("not run: the callMany answer had no room left"),
        "{full}"
    );
}

#[test]
fn server_unavailable_shows_state_and_last_error() {
    let error = rpc(
        code::SERVER_UNAVAILABLE,
        json!({"kind": "serverUnavailable", "server": "gh", "state": "failed",
                   "lastError": "spawn npx: not found"}),
    );
    assert_eq!(
        error.to_string(),
        "server \"gh\" is not available (state: failed): spawn npx: not found"
    );
}

#[test]
fn busy_names_the_load_and_when_to_retry() {
    let error = rpc(
        code::BUSY,
        json!({"kind": "busy", "server": "demo", "inFlight": 4, "queued": 16,
                   "retryAfterMs": 250}),
    );
    assert_eq!(error.exit_code(), exit::OTHER);
    assert_eq!(
        error.to_string(),
        "server \"demo\" is busy: 4 calls in flight and 16 waiting; retry in about 250 ms"
    );
}

#[test]
fn circuit_open_names_the_last_error_and_when_to_retry() {
    let error = rpc(
        code::CIRCUIT_OPEN,
        json!({"kind": "circuitOpen", "server": "gh", "retryAfterMs": 12000,
                   "lastError": "connection reset"}),
    );
    assert_eq!(error.exit_code(), exit::OTHER);
    assert_eq!(
        error.to_string(),
        "server \"gh\" is failing and its circuit breaker is open; nothing was sent; retry in \
         12000 ms (last failure: connection reset) (`tool-cli health` shows the breaker)"
    );
    let without_last_error = rpc(
        code::CIRCUIT_OPEN,
        json!({"kind": "circuitOpen", "server": "gh", "retryAfterMs": 5}),
    );
    let message = without_last_error.to_string();
    assert!(
        message.contains("circuit breaker is open; nothing was sent"),
        "{message}"
    );
    assert!(message.contains("retry in 5 ms"), "{message}");
}

#[test]
fn unhealthy_lists_each_server_with_its_state() {
    let error = Error::Unhealthy {
        unhealthy: vec![
            ("gh".into(), "down".into()),
            ("slow".into(), "circuitOpen".into()),
        ],
        enabled: 3,
    };
    assert_eq!(error.exit_code(), exit::OTHER);
    assert_eq!(
        error.to_string(),
        "2 of 3 enabled servers are not ready: gh (down), slow (circuitOpen)"
    );
}

#[test]
fn unknown_data_falls_back_to_message_and_code() {
    let error = rpc(-32099, json!({"kind": "somethingNew", "x": 1}));
    assert_eq!(error.exit_code(), exit::OTHER);
    let message = error.to_string();
    assert!(
        message.contains("message from the daemon (code -32099)"),
        "{message}"
    );
}

#[test]
fn transport_level_exit_codes() {
    assert_eq!(Error::NoDaemon("x".into()).exit_code(), exit::UNREACHABLE);
    assert_eq!(Error::AuthRefused { status: 401 }.exit_code(), exit::AUTH);
    assert_eq!(
        Error::Timeout {
            method: "callTool".into(),
            timeout_ms: 1
        }
        .exit_code(),
        exit::TIMEOUT
    );
    assert!(
        Error::NoDaemon("no daemon found".into())
            .to_string()
            .contains("tool-cli-daemon --print-env")
    );
}

#[test]
fn confirmation_required_says_to_add_yes() {
    let error = rpc(
        code::FORBIDDEN,
        json!({"kind": "confirmationRequired", "server": "db", "tool": "drop_table"}),
    );
    assert_eq!(error.exit_code(), exit::FORBIDDEN);
    assert_eq!(
        error.to_string(),
        "tool \"drop_table\" of server \"db\" is destructive; to run it, pass \"confirm\": true \
         in callTool (tool-cli: --yes)"
    );
}

#[test]
fn not_permitted_gives_its_reason() {
    let error = rpc(
        code::FORBIDDEN,
        json!({"kind": "notPermitted", "server": "fs", "tool": "write_file",
                   "reason": "the token allows read-only tools only"}),
    );
    assert_eq!(error.exit_code(), exit::FORBIDDEN);
    assert_eq!(
        error.to_string(),
        "tool \"write_file\" of server \"fs\" is not permitted: the token allows \
             read-only tools only"
    );
    let server_only = rpc(
        code::FORBIDDEN,
        json!({"kind": "notPermitted", "server": "gh", "reason": "not in the token's servers"}),
    );
    assert_eq!(
        server_only.to_string(),
        "server \"gh\" is not permitted: not in the token's servers"
    );
    let no_server = rpc(
        code::FORBIDDEN,
        json!({"kind": "notPermitted", "server": "",
                   "reason": "only the owner token may mint tokens"}),
    );
    assert_eq!(
        no_server.to_string(),
        "not permitted: only the owner token may mint tokens"
    );
    // A reason that already says it all is not prefixed twice.
    let whole = rpc(
        code::FORBIDDEN,
        json!({"kind": "notPermitted", "server": "demo", "tool": "sql_query",
                   "reason": "tool \"sql_query\" of server \"demo\" is not permitted: scope"}),
    );
    assert_eq!(
        whole.to_string(),
        "tool \"sql_query\" of server \"demo\" is not permitted: scope"
    );
    // A forbidden error of a kind we do not know still exits 9.
    assert_eq!(
        rpc(code::FORBIDDEN, json!({"kind": "somethingNew"})).exit_code(),
        exit::FORBIDDEN
    );
}

#[test]
fn unproven_identity_exits_eight_and_names_the_variable() {
    let tcp = Error::IdentityUnproven {
        address: "127.0.0.1:4567".into(),
        unix_socket: false,
        reason: "it answered HTTP 404".into(),
    };
    assert_eq!(tcp.exit_code(), exit::IDENTITY);
    assert_eq!(
        tcp.to_string(),
        "the listener at 127.0.0.1:4567 did not prove it holds the token, so the token was \
             not sent (a stale TOOL_CLI_PORT, or another program on that port?); it answered \
             HTTP 404"
    );
    let unix = Error::IdentityUnproven {
        address: "/run/d.sock".into(),
        unix_socket: true,
        reason: "its proof is wrong".into(),
    };
    assert_eq!(unix.exit_code(), exit::IDENTITY);
    assert!(
        unix.to_string()
            .contains("(a stale TOOL_CLI_SOCKET, or another program on that socket?)"),
        "{unix}"
    );
}

#[test]
fn identity_outcomes_have_their_own_exit_codes() {
    let lost = Error::ConnectionLost {
        address: "127.0.0.1:9".into(),
        reason: "reset".into(),
    };
    assert_eq!(lost.exit_code(), exit::UNREACHABLE);
    assert!(lost.to_string().contains("retry in a moment"), "{lost}");
    let legacy = Error::NoIdentityProof {
        address: "127.0.0.1:9".into(),
        status: 401,
    };
    assert_eq!(legacy.exit_code(), exit::IDENTITY);
    let message = legacy.to_string();
    assert!(
        message.starts_with("this bridge does not prove its identity (a tool-cli 1.x bridge?)"),
        "{message}"
    );
    assert!(message.contains("TOOL_CLI_REQUIRE_IDENTITY=0 or --no-identity"));
    let unknown = Error::UnknownToken {
        address: "127.0.0.1:9".into(),
    };
    assert_eq!(unknown.exit_code(), exit::AUTH);
    assert!(unknown.to_string().contains("revoked"), "{unknown}");
}

#[test]
fn envelope_carries_code_exit_code_kind_message_and_data() {
    let data = json!({"kind": "unknownTool", "server": "demo", "tool": "x",
                          "knownTools": ["sql_query"]});
    let error = rpc(code::INVALID_PARAMS, data.clone());
    assert_eq!(
        error.envelope(),
        json!({"error": {"code": -32602, "exitCode": 5, "kind": "unknownTool",
                             "message": error.to_string(), "data": data}})
    );
    let usage = Error::Usage("bad".into()).envelope();
    assert_eq!(
        usage,
        json!({"error": {"code": null, "exitCode": 2, "kind": "usage", "message": "bad",
                             "data": null}})
    );
    let tool = Error::ToolReported {
        server: "s".into(),
        tool: "t".into(),
        text: "boom".into(),
    };
    assert_eq!(tool.envelope()["error"]["kind"], "toolError");
    assert_eq!(
        tool.envelope()["error"]["data"],
        json!({"server": "s", "tool": "t"})
    );
}

#[test]
fn reference_data_shapes_have_kinds() {
    let invalid = rpc(
        code::INVALID_PARAMS,
        json!({"server": "s", "tool": "t", "validationErrors": []}),
    );
    assert_eq!(invalid.kind(), "invalidArguments");
    let unknown = rpc(
        code::INVALID_PARAMS,
        json!({"server": "s", "tool": "t", "discoveredTools": ["a"]}),
    );
    assert_eq!(unknown.kind(), "unknownTool");
    assert_eq!(unknown.exit_code(), exit::INVALID_PARAMS);
    let bare = Error::Rpc {
        method: "x".into(),
        error: Box::new(ErrorObject {
            code: -32603,
            message: "MCP error -32002: Resource not found".into(),
            data: None,
        }),
    };
    assert_eq!(bare.kind(), "rpcError");
    assert_eq!(bare.envelope()["error"]["data"], Value::Null);
}

#[test]
fn an_agent_halted_by_its_step_limit_names_step_ms_not_run_ms() {
    let stopped = |reason: &str, setting: Option<&str>| Error::AgentStopped {
        run_id: "r1".into(),
        status: "halted".into(),
        reason: reason.into(),
        setting: setting.map(str::to_owned),
    };
    let step = stopped("timeout", Some("agent.timeouts.stepMs")).to_string();
    assert!(step.contains("agent.timeouts.stepMs"), "{step}");
    assert!(!step.contains("runMs"), "{step}");
    let run = stopped("timeout", Some("timeoutMs")).to_string();
    assert!(run.contains("--timeout"), "{run}");
    assert_eq!(stopped("timeout", None).exit_code(), exit::TIMEOUT);
    assert!(
        stopped("max_steps", Some("maxSteps"))
            .to_string()
            .contains("--max-steps")
    );
}

#[test]
fn an_agent_that_cannot_or_refuses_exits_11_saying_why() {
    for (status, kind, words) in [
        ("cannot", "agentCannot", "could not do the task"),
        ("refused", "agentRefused", "refused the task"),
    ] {
        let error = Error::AgentStopped {
            run_id: "r2".into(),
            status: status.into(),
            reason: "no customer named \"Zed\"".into(),
            setting: None,
        };
        assert_eq!(error.exit_code(), exit::AGENT_DECLINED);
        assert_eq!(error.kind(), kind);
        let message = error.to_string();
        assert!(
            message.contains(words) && message.contains("Zed"),
            "{message}"
        );
    }
}
