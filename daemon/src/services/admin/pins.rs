//! `reloadPins` and `pinListing`: the owner's side of the pin check (`docs/pinning.md`).
//! `tool-cli pin` reads a server's tools, instructions, prompts and resource templates through
//! `pinListing` (held back ones too, since a person must see what changed before approving it)
//! and sends `reloadPins` after writing the store, so an approval takes effect at once.

use tool_cli_protocol::manage::{PinListingResult, PinStatusResult};
use tool_cli_protocol::methods::{ServerParams, name};

use super::Admin;
use crate::error::Error;
use crate::pipeline::{CallContext, resolve_server};

impl Admin {
    /// `reloadPins`.
    pub(crate) fn reload_pins(&self, _context: &CallContext) -> Result<PinStatusResult, Error> {
        Ok(self.manager(name::RELOAD_PINS)?.pool().reload_pins())
    }

    /// `pinListing`.
    pub(crate) async fn pin_listing(
        &self,
        params: ServerParams,
        context: &CallContext,
    ) -> Result<PinListingResult, Error> {
        let slots = self.pipeline.slots();
        let slot = resolve_server(&slots, &params.server, &context.grant, None)?;
        if slot.upstream.catalog().is_empty() {
            // Its first connection may be under way: its tools are worth the wait.
            let deadline = tokio::time::Instant::now() + slot.upstream.info().settings.call_timeout;
            slot.upstream.wait_ready(deadline).await?;
        }
        let mut notes = Vec::new();
        let prompts = self
            .pipeline
            .prompts_for_pins(context, slot)
            .await
            .unwrap_or_else(|error| {
                notes.push(format!("prompts not listed: {}", error.wire_message()));
                Vec::new()
            });
        let resource_templates = self
            .pipeline
            .templates_for_pins(context, slot)
            .await
            .unwrap_or_else(|error| {
                notes.push(format!(
                    "resource templates not listed: {}",
                    error.wire_message()
                ));
                Vec::new()
            });
        Ok(PinListingResult {
            server: slot.upstream.info().name.clone(),
            tools: slot.upstream.catalog().pin_checked_tools(),
            instructions: slot.upstream.handshake_instructions(),
            prompts,
            resource_templates,
            notes,
        })
    }
}
