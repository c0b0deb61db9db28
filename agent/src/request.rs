//! What a caller asks of a run and what it gets back: `runAgent`'s params and result are wire
//! types, defined once in `tool_cli_protocol::agent` (`RunAgentParams`, `RunAgentResult` and
//! their parts), which the agent reads and fills. The agent's own code and tests import them
//! from there; this module keeps the names the daemon's telemetry (`daemon/src/otel/agent.rs`)
//! imports them by, so that wing need not change when the types moved.

pub use tool_cli_protocol::agent::{RunStatus, UsageTotals};

/// A run's result: the same type as `tool_cli_protocol::agent::RunAgentResult`.
pub type AgentResult = tool_cli_protocol::agent::RunAgentResult;
