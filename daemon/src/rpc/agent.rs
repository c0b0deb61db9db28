//! Agent runs: `runAgent`, `agentEvents` (a run's progress, long-polled) and `cancelAgent`,
//! answered by the agents service.

use jsonrpsee::types::Params;
use tool_cli_protocol::methods::name;

use super::{Access, FromParams, Methods};
use crate::error::Error;

/// Registers the agent methods.
pub(super) fn register(methods: &mut Methods) {
    use Access::Anyone;
    methods.add(
        name::RUN_AGENT,
        Anyone,
        |s, p: RunAgentParams, c| async move { s.agents.run_agent(p.0, &c).await },
    );
    methods.add(name::AGENT_EVENTS, Anyone, |s, p, c| async move {
        s.agents.agent_events(p, &c).await
    });
    methods.add(name::CANCEL_AGENT, Anyone, |s, p, c| async move {
        s.agents.cancel_agent(p, &c)
    });
}

/// `runAgent`'s params, checked by the agent's request type when the run is prepared.
struct RunAgentParams(serde_json::Value);

impl FromParams for RunAgentParams {
    fn from_params(method: &str, params: &Params<'_>) -> Result<RunAgentParams, Error> {
        const SHAPE: &str = r#"{"task": string, "runId"?: string, "sessionId"?: string, "backend"?: string, "model"?: string, "maxSteps"?: integer, "costCeilingUsd"?: number, "dryRun"?: boolean, "confirmDestructive"?: boolean, "answerSchema"?: object, "servers"?: [string], "tools"?: [string], "toolLimit"?: integer, "timeoutMs"?: integer}"#;
        match params.as_str() {
            None => Err(Error::invalid_params(
                method,
                format!("missing params; expected {SHAPE}"),
            )),
            Some(text) => super::parse(method, text, SHAPE).map(RunAgentParams),
        }
    }

    fn check_shape() -> Result<(), String> {
        Ok(())
    }
}
