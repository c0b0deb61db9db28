//! What the daemon offers and what it holds: `getBridgeInfo`, `health`, `listServers`,
//! `listTools`, `describeTool` and `searchTools`, answered by the discovery service.

use tool_cli_protocol::methods::name;
use tool_cli_protocol::params::IgnoredParams;

use super::{Access, Methods};

/// Registers the discovery methods.
pub(super) fn register(methods: &mut Methods) {
    use Access::Anyone;
    methods.add(
        name::GET_BRIDGE_INFO,
        Anyone,
        |s, _: IgnoredParams, c| async move { Ok(s.discovery.bridge_info(&c)) },
    );
    methods.add(name::HEALTH, Anyone, |s, p, c| async move {
        Ok(s.discovery.health(p, &c))
    });
    methods.add(
        name::LIST_SERVERS,
        Anyone,
        |s, _: IgnoredParams, c| async move { Ok(s.discovery.list_servers(&c)) },
    );
    methods.add(name::LIST_TOOLS, Anyone, |s, p, c| async move {
        s.discovery.list_tools(p, &c).await
    });
    methods.add(name::DESCRIBE_TOOL, Anyone, |s, p, c| async move {
        s.discovery.describe_tool(p, &c).await
    });
    methods.add(name::SEARCH_TOOLS, Anyone, |s, p, c| async move {
        s.discovery.search_tools(p, &c)
    });
}
