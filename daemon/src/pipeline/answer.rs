//! What a call through the pipeline answers: the server's result and the facts the stages
//! established about the call (which server ran it and why, how many attempts, whether the
//! result is the tool's own error, whether a cached or stored answer stood in), as typed
//! values, or the typed verdict of a dry run.
//!
//! Every caller reads the facts from here: chains (did the step fail?), alternatives (which
//! server failed?), the agent (which server, which rule?), the record (did it succeed?). They
//! are written into the result's `_meta` once, by the edge that answers the request, and never
//! read back out of JSON.

use std::time::Duration;

use serde_json::Value;
use tool_cli_protocol::orchestration::DryRunResult;
use tool_cli_protocol::search::ToolAlternative;

use super::context::CallId;
use super::routing::Selection;

/// What one call answered.
#[derive(Debug, Clone)]
pub enum CallAnswer {
    /// The tool ran and answered (or a cached or stored answer stood in).
    Ran(RanCall),
    /// A dry run: what the call would do, and why it would be refused, if it would.
    DryRun(DryRunResult),
}

/// A call the tool answered.
#[derive(Debug, Clone)]
pub struct RanCall {
    /// The server's complete `CallToolResult`, as it answered it.
    pub result: Value,
    /// What the pipeline knows about the call.
    pub facts: CallFacts,
    /// The tools the caller may use instead of one that answered with an error (`callTool`
    /// with `alternatives: true`; the calls service finds them, the pipeline never does).
    pub alternatives: Option<Vec<ToolAlternative>>,
}

/// The facts of a call that ran.
#[derive(Debug, Clone, PartialEq)]
pub struct CallFacts {
    /// The server that ran it.
    pub server: String,
    /// How that server was chosen.
    pub selection: Selection,
    /// Attempts sent to the server.
    pub attempts: u32,
    /// Whether the result is the tool's own error (`isError: true`), decided once, as the
    /// answer is made (`is_tool_error`).
    pub is_error: bool,
    /// A cached result stood in for a failing server: why, and how old it was.
    pub degraded: Option<Degraded>,
    /// The call that ran (for a replay, the first call's id).
    pub call_id: CallId,
    /// A repeat with the same idempotency key, answered with the first call's stored answer.
    pub replayed: bool,
}

/// Why a cached result stood in for a live one.
#[derive(Debug, Clone, PartialEq)]
pub struct Degraded {
    /// The failure the live call met.
    pub reason: String,
    /// How old the cached result was.
    pub age: Duration,
}

impl CallAnswer {
    /// Whether the caller got what it asked for: false for a tool's own error and for a dry run
    /// that would be refused.
    pub fn succeeded(&self) -> bool {
        match self {
            CallAnswer::Ran(ran) => !ran.facts.is_error,
            CallAnswer::DryRun(verdict) => verdict.would_block_because.is_none(),
        }
    }

    /// The server that ran the call (or would run it).
    pub fn server(&self) -> &str {
        match self {
            CallAnswer::Ran(ran) => &ran.facts.server,
            CallAnswer::DryRun(verdict) => &verdict.server,
        }
    }

    /// The name of the routing rule that chose the server.
    pub fn selection_rule(&self) -> &str {
        match self {
            CallAnswer::Ran(ran) => ran.facts.selection.rule.as_str(),
            CallAnswer::DryRun(verdict) => &verdict.selection.rule,
        }
    }

    /// The tool's result, for a call that ran.
    pub fn result(&self) -> Option<&Value> {
        match self {
            CallAnswer::Ran(ran) => Some(&ran.result),
            CallAnswer::DryRun(_) => None,
        }
    }
}

/// Whether a `CallToolResult` reports the tool's own error (`isError: true`): the one place
/// the daemon decides it.
pub(crate) fn is_tool_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tool_errors_are_results_flagged_is_error() {
        assert!(is_tool_error(&json!({"content": [], "isError": true})));
        assert!(!is_tool_error(&json!({"content": [], "isError": false})));
        assert!(!is_tool_error(&json!({"content": []})));
        assert!(!is_tool_error(&json!({"content": [], "isError": "true"})));
    }
}
