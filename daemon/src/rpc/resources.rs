//! Resources and spilled answers: `listResources`, `listResourceTemplates`, `readResource` (a
//! large result is spilled to a file) and `readSpilled` (a page of such a file).

use std::sync::Arc;
use std::time::SystemTime;

use jsonrpsee::RpcModule;
use serde_json::value::RawValue;
use tool_cli_protocol::methods::{ReadResourceParams, ReadSpilledParams, ServerParams, name};

use super::{Context, SERVER_SHAPE, call_context, fit, fit_or_spill, grant, parse, to_rpc_error};
use crate::answer::{Budget, Spillable};
use crate::error::Error;
use crate::spill::{MAX_PAGE_BYTES, SpillError, SpillStore};

/// Registers the resource methods and `readSpilled`.
pub(super) fn register(module: &mut RpcModule<Context>) {
    module
        .register_async_method(
            name::LIST_RESOURCES,
            |params, context, extensions| async move {
                let params: ServerParams = parse(name::LIST_RESOURCES, &params, SERVER_SHAPE)?;
                let call = call_context(&extensions)?;
                let resources = context
                    .until_grace_over(context.services.discovery.list_resources(params, &call))
                    .await?;
                fit(
                    name::LIST_RESOURCES,
                    &resources,
                    context.budget(&extensions),
                )
                .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_async_method(
            name::LIST_RESOURCE_TEMPLATES,
            |params, context, extensions| async move {
                let params: ServerParams =
                    parse(name::LIST_RESOURCE_TEMPLATES, &params, SERVER_SHAPE)?;
                let call = call_context(&extensions)?;
                let templates = context
                    .until_grace_over(
                        context
                            .services
                            .discovery
                            .list_resource_templates(params, &call),
                    )
                    .await?;
                fit(
                    name::LIST_RESOURCE_TEMPLATES,
                    &templates,
                    context.budget(&extensions),
                )
                .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_async_method(
            name::READ_RESOURCE,
            |params, context, extensions| async move {
                let params: ReadResourceParams = parse(
                    name::READ_RESOURCE,
                    &params,
                    r#"{"server": string, "uri": string}"#,
                )?;
                let call = call_context(&extensions)?;
                let contents = context
                    .until_grace_over(context.services.discovery.read_resource(&params, &call))
                    .await?;
                fit_or_spill(
                    contents,
                    Spillable::Resource { uri: &params.uri },
                    context.budget(&extensions),
                    &context.answers.spill,
                    &call.grant.token_id,
                )
                .await
                .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_async_method(
            name::READ_SPILLED,
            |params, context, extensions| async move {
                let params: ReadSpilledParams = parse(
                    name::READ_SPILLED,
                    &params,
                    r#"{"id": string, "offset"?: integer, "length"?: integer}"#,
                )?;
                let grant = grant(&extensions)?;
                let budget = context.budget(&extensions);
                read_spilled(&context.answers.spill, params, &grant.token_id, budget)
                    .await
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
}

/// `readSpilled`: one page of a spilled answer, sized so that its text, escaped into a JSON
/// string (at most twice as long), fits this request's budget.
async fn read_spilled(
    store: &Arc<SpillStore>,
    params: ReadSpilledParams,
    token_id: &str,
    budget: Budget,
) -> Result<Box<RawValue>, Error> {
    const ENVELOPE: usize = 1024;
    let fits = (budget.bytes.saturating_sub(ENVELOPE) / 2) as u64;
    let length = params.length.unwrap_or(MAX_PAGE_BYTES).min(fits);
    let offset = params.offset.unwrap_or(0);
    let reading = {
        let store = Arc::clone(store);
        let token_id = token_id.to_owned();
        tokio::task::spawn_blocking(move || {
            store.read(&params.id, &token_id, offset, length, SystemTime::now())
        })
    };
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
    fit(name::READ_SPILLED, &page, budget)
}
