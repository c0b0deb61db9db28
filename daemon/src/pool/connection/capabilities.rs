//! What the pool declares as an MCP client in the handshake: roots, elicitation (form, and URL
//! mode where a question can reach a user), sampling where allowed; and the `tasks` capability
//! a stdio transport writes in beside them (`client_tasks.rs`), which rmcp's types do not carry.

// Roots and sampling are deprecated by rmcp for the 2026 protocol (SEP-2577); the protocol
// version we speak (2025-11-25) has them, and servers use them.
#[allow(deprecated)]
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitationCapability, FormElicitationCapability,
    RootsCapabilities, SamplingCapability,
};

use super::super::MCP_PROTOCOL_VERSION;

#[allow(deprecated)]
/// Our identity and capabilities as an MCP client; `sampling` only for a server with
/// `allowSampling`, so the others do not offer tools that need it, and URL-mode elicitation
/// (`url_elicitation`) only for a server whose questions go to the caller (`"elicitation":
/// "ask"`), the only ones a web page to open can reach a user from.
pub(crate) fn client_config(sampling: bool, url_elicitation: bool) -> ClientConfig {
    // Roots (from the config) and elicitation are declared so servers may ask: the answers are
    // the config's roots and reasoned declines (`requests.rs`), never silence.
    let mut capabilities = ClientCapabilities::default();
    capabilities.roots = Some(RootsCapabilities::default());
    let mut elicitation =
        ElicitationCapability::new().with_form(FormElicitationCapability::default());
    if url_elicitation {
        elicitation = elicitation.with_url(rmcp::model::UrlElicitationCapability::new());
    }
    capabilities.elicitation = Some(elicitation);
    if sampling {
        capabilities.sampling = Some(SamplingCapability::default());
    }
    let mut config = ClientConfig::new(
        capabilities,
        rmcp::model::Implementation::new(
            tool_cli_protocol::IMPLEMENTATION_NAME,
            env!("CARGO_PKG_VERSION"),
        ),
    );
    config.protocol_version = MCP_PROTOCOL_VERSION;
    config
}

/// The `tasks` capability for a server's settings: which of its requests the pool runs as
/// client tasks (`client_tasks.rs`), `None` for none.
pub(crate) fn client_tasks_capability(
    requests: &super::super::server_requests::ServerRequests,
) -> Option<serde_json::Value> {
    super::client_tasks::capability(
        requests.advertises_url_elicitation(),
        requests.advertises_sampling(),
    )
}
