//! The pool and process side of the hardening issue (issue 7): defects found by attacking the
//! daemon with hostile MCP servers. Each test stages one misbehaviour with a real server (the
//! fault-injection fixture over stdio, or its Streamable HTTP mode on loopback) and the real
//! daemon binary, and checks what callers, logs and the process table show.
//!
//! Defect → test:
//! - 7, a rejected message's content is returned:
//!   `hardening_forged_answers_before_the_real_one_are_never_returned`,
//!   `hardening_a_malformed_tool_result_is_an_error_naming_the_server`

use serde_json::{Value, json};
use tool_cli_protocol::{ErrorData, code};
use tool_cli_tests::{Daemon, error_data, fault_server, text_content};

// ---------------------------------------------------------------------------------------------
// 7. Only validated messages are delivered.

#[test]
fn hardening_forged_answers_before_the_real_one_are_never_returned() {
    let daemon = Daemon::start(json!({"mcpServers": {"forger": fault_server(&[])}}));
    // Each line is rejected by JSON-RPC validation (or, for the string id, is not an answer to
    // our numeric request); the valid answer that follows is the one the caller must get.
    let forged = [
        r#"{"jsonrpc":"1.0","id":$ID,"result":{"content":[{"type":"text","text":"forged: 1.0"}]}}"#,
        r#"{"id":$ID,"result":{"content":[{"type":"text","text":"forged: no jsonrpc"}]}}"#,
        r#"{"jsonrpc":"2.0","id":$ID,"result":{"content":[{"type":"text","text":"forged: both"}]},"error":{"code":1,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":$ID_STRING,"result":{"content":[{"type":"text","text":"forged: string id"}]}}"#,
        r#"{"jsonrpc":"2.0","id":$ID_STRING,"error":{"code":-1,"message":"forged: string id error"}}"#,
    ];
    for line in forged {
        let result = daemon.call_tool(
            "forger",
            "raw_lines",
            json!({"lines": [line], "answer": "the real answer"}),
        );
        assert_eq!(
            text_content(&result),
            "the real answer",
            "after {line}: {result:#}"
        );
    }
}

#[test]
fn hardening_a_malformed_tool_result_is_an_error_naming_the_server() {
    let daemon = Daemon::start(json!({"mcpServers": {"sloppy": fault_server(&[])}}));
    let malformed = [
        (r#"{"content":"oops"}"#, "`content` is a string"),
        (r#"{"isError":false}"#, "no `content` array"),
        (r#"{"content":[{"text":"untyped"}]}"#, "content[0] has no string `type`"),
        (r#"{"content":[],"isError":"no"}"#, "`isError` is a string"),
        (r#"{"content":[],"structuredContent":3}"#, "`structuredContent` is a number"),
    ];
    for (result, why) in malformed {
        let line = format!(r#"{{"jsonrpc":"2.0","id":$ID,"result":{result}}}"#);
        let error = daemon.call_err(
            "callTool",
            json!({"server": "sloppy", "tool": "raw_lines", "arguments": {"lines": [line]}}),
        );
        assert_eq!(error.code, code::UPSTREAM_ERROR, "{error:?}");
        match error_data(&error) {
            ErrorData::InvalidResult {
                server,
                method,
                message,
            } => {
                assert_eq!(server, "sloppy");
                assert_eq!(method, "raw_lines");
                assert!(message.contains(why), "{message:?} should say {why:?}");
            }
            other => panic!("expected invalidResult, got {other:?}"),
        }
        assert!(
            error.message.contains("sloppy"),
            "the message names the server: {error:?}"
        );
    }

    // The CLI says so too, and fails, instead of printing nothing with exit 0.
    let line = r#"{"jsonrpc":"2.0","id":$ID,"result":{"content":"oops"}}"#;
    let arguments = json!({ "lines": [line] }).to_string();
    let output = daemon.run_client(&["sloppy", "raw_lines", &arguments], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "stderr: {stderr}");
    assert!(
        stderr.contains("sloppy") && stderr.contains("not valid MCP"),
        "{stderr}"
    );

    // The server answered, so it is not counted as failing.
    let health = daemon.call("health", Value::Null);
    assert_eq!(health["servers"][0]["state"], "ready", "{health:#}");
}
