//! Resources and spilled answers: `listResources`, `listResourceTemplates` and `readResource`
//! (a large result is spilled to a file), answered by the discovery service, and `readSpilled`
//! (a page of such a file), the edge's own.

use std::sync::Arc;
use std::time::SystemTime;

use tool_cli_protocol::methods::{ReadResourceParams, ReadSpilledParams, name};

use super::{Access, Answering, Encoded, Methods, ResourceContents};
use crate::answer::fit;
use crate::error::Error;
use crate::spill::{MAX_PAGE_BYTES, SpillError};

/// Registers the resource methods and `readSpilled`.
pub(super) fn register(methods: &mut Methods) {
    use Access::Anyone;
    methods.add(name::LIST_RESOURCES, Anyone, |s, p, c| async move {
        s.discovery.list_resources(p, &c).await
    });
    methods.add(
        name::LIST_RESOURCE_TEMPLATES,
        Anyone,
        |s, p, c| async move { s.discovery.list_resource_templates(p, &c).await },
    );
    methods.add(
        name::READ_RESOURCE,
        Anyone,
        |s, p: ReadResourceParams, c| async move {
            let contents = s.discovery.read_resource(&p, &c).await?;
            Ok(ResourceContents {
                uri: p.uri,
                contents,
            })
        },
    );
    methods.add_answering(name::READ_SPILLED, Anyone, |_, p, c, a| {
        read_spilled(p, c.grant.token_id, a)
    });
}

/// `readSpilled`: one page of a spilled answer, sized so that its text, escaped into a JSON
/// string (at most twice as long), fits this request's budget.
fn read_spilled(
    params: ReadSpilledParams,
    token_id: String,
    answering: &Answering,
) -> impl Future<Output = Result<Encoded, Error>> + Send + use<> {
    const ENVELOPE: usize = 1024;
    let budget = answering.budget;
    let store = Arc::clone(&answering.spill);
    async move {
        let fits = (budget.bytes.saturating_sub(ENVELOPE) / 2) as u64;
        let length = params.length.unwrap_or(MAX_PAGE_BYTES).min(fits);
        let offset = params.offset.unwrap_or(0);
        let reading = tokio::task::spawn_blocking(move || {
            store.read(&params.id, &token_id, offset, length, SystemTime::now())
        });
        let page = reading
            .await
            .map_err(|error| Error::internal(format!("reading a spilled answer failed: {error}")))?
            .map_err(|error| match error {
                SpillError::UnknownId(_)
                | SpillError::OffsetPastEnd { .. }
                | SpillError::InsideCharacter(_) => {
                    Error::invalid_params(name::READ_SPILLED, error.to_string())
                }
                other => Error::internal(other.to_string()),
            })?;
        fit(name::READ_SPILLED, &page, budget).map(Encoded)
    }
}
