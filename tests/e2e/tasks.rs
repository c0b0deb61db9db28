//! MCP tasks: a tool that runs only as a task (server-everything's `simulate-research-query`,
//! `execution.taskSupport: "required"`) is refused with a clear reason before anything is sent,
//! never a silent or puzzling failure. (A result that is a task is reported the same way; see
//! `pool/result_check.rs`.)

use serde_json::json;
use tool_cli_protocol::code;
use tool_cli_tests::{Daemon, everything_stdio};

#[test]
fn a_task_only_tool_is_refused_with_a_clear_reason() {
    let daemon = Daemon::start(json!({"mcpServers": {"everything": everything_stdio()}}));
    let error = daemon.call_err(
        "callTool",
        json!({"server": "everything", "tool": "simulate-research-query",
               "arguments": {"topic": "rust"}}),
    );
    assert_eq!(error.code, code::INVALID_PARAMS, "{error:?}");
    assert!(
        error.message.contains("runs only as an MCP task")
            && error.message.contains("nothing was sent"),
        "{}",
        error.message
    );
    // An ordinary tool of the same server is unaffected.
    let echoed = daemon.call_tool("everything", "echo", json!({"message": "still here"}));
    assert_eq!(echoed["content"][0]["text"], "Echo: still here");
}
