//! The prompt methods, `listPrompts` and `getPrompt`, answered by the discovery service.

use tool_cli_protocol::methods::name;

use super::{Access, Methods};

/// Registers `listPrompts` and `getPrompt`.
pub(super) fn register(methods: &mut Methods) {
    use Access::Anyone;
    methods.add(name::LIST_PROMPTS, Anyone, |s, p, c| async move {
        s.discovery.list_prompts(p, &c).await
    });
    methods.add(name::GET_PROMPT, Anyone, |s, p, c| async move {
        s.discovery.get_prompt(p, &c).await
    });
}
