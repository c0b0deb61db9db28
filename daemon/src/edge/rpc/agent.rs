//! Agent runs: `runAgent`, `agentEvents` (a run's progress, long-polled) and `cancelAgent`,
//! answered by the agents service.

use tool_cli_protocol::methods::name;

use super::{Access, Methods};

/// Registers the agent methods.
pub(super) fn register(methods: &mut Methods) {
    use Access::Anyone;
    methods.add(name::RUN_AGENT, Anyone, |s, p, c| async move {
        s.agents.run_agent(p, &c).await
    });
    methods.add(name::AGENT_EVENTS, Anyone, |s, p, c| async move {
        s.agents.agent_events(p, &c).await
    });
    methods.add(name::CANCEL_AGENT, Anyone, |s, p, c| async move {
        s.agents.cancel_agent(p, &c)
    });
}
