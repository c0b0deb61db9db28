//! The options of a call (`--session`, `--hint`, `--idempotency-key`), a dry-run's plan, and
//! the note on stderr saying where a routed call went.

use tool_cli_protocol::ErrorObject;
use tool_cli_protocol::orchestration::DryRunResult;

use super::output::{Output, note};
use crate::args::call::CallOptions;
use crate::client::{Client, ToolCall, parse_result};
use crate::error::Error;
use crate::render;

/// The call with the user's options.
pub(super) fn with_options(mut call: ToolCall, options: &CallOptions) -> ToolCall {
    if let Some(session) = &options.session {
        call = call.session(session);
    }
    if let Some(hint) = &options.hint {
        call = call.hint(hint);
    }
    if let Some(key) = &options.idempotency_key {
        call = call.idempotency_key(key);
    }
    if options.dry_run {
        call = call.dry_run();
    }
    call
}

/// `--dry-run`: the plan on stdout (the raw answer with `--json`); exit 0 when the call would
/// run, else the exit code of the error the real call would get, with its message.
pub(super) async fn dry_run(
    client: &mut Client,
    output: &mut Output<'_>,
    call: &ToolCall,
) -> Result<(), Error> {
    let result = client.call_tool(call).await?;
    if output.json {
        output.emit_json(&result)?;
    }
    let plan: DryRunResult = parse_result("callTool (dryRun)", result)?;
    if !output.json {
        output.emit_text(&render::dry_run(&plan))?;
    }
    match plan.would_block_because {
        None => Ok(()),
        Some(reason) => Err(Error::Rpc {
            method: "callTool".to_owned(),
            error: Box::new(ErrorObject {
                code: reason.code,
                message: reason.message,
                data: serde_json::to_value(&reason.data).ok(),
            }),
        }),
    }
}

/// Where a routed call went, on stderr, so stdout stays the result.
pub(super) fn note_routing(result: &serde_json::Value) {
    if let Some(routed) = render::routed_note(result) {
        note(&routed);
    }
}
