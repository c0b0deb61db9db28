//! The record stage of the operations other than a tool call: a prompt (`prompts/get`), a
//! resource read (`resources/read`) and the listings (`prompts/list`, `resources/list`,
//! `resources/templates/list`). Each goes through [`execute::protected`] like a call; here it
//! gets its own upstream span identity first (a child of the request's span, sent upstream in
//! `params._meta` and the HTTP headers), and once it has been sent its [`OperationRecord`]
//! goes to the observers (the exporter turns it into the CLIENT span
//! `{mcp.method.name} {target}` and `mcp.client.operation.duration`).
//!
//! With export off nothing is recorded and the ticket carries the caller's own context through,
//! as before.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;
use tool_cli_protocol::methods::TransportKind;

use super::execute::{self, Bounds, CallOutcome, Operation};
use super::record::RecordedError;
use super::span::CallSpan;
use super::{CallContext, Pipeline, Slot};
use crate::provider::CallTicket;

/// What an operation acts on, for its span's name and attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperationTarget {
    /// Nothing in particular (a listing).
    None,
    /// A prompt, by name.
    Prompt(String),
    /// A resource, by URI.
    Resource(String),
}

/// One finished upstream operation that is not a tool call.
#[derive(Debug, Clone)]
pub struct OperationRecord {
    /// The MCP method sent (`prompts/get`).
    pub method: &'static str,
    /// What it acted on.
    pub target: OperationTarget,
    /// The configured server.
    pub server: String,
    /// How the server is reached.
    pub transport: TransportKind,
    /// The caller's tool-cli session.
    pub session_id: Option<String>,
    /// Its upstream span (with what the pool noted of the exchange).
    pub span: CallSpan,
    /// When it finished.
    pub finished_at: SystemTime,
    /// From sending to answer, retries included.
    pub latency: Duration,
    /// Attempts sent.
    pub attempts: u32,
    /// Why the last retry happened.
    pub retry_reason: Option<String>,
    /// The error the operation ended with, as the caller saw it.
    pub error: Option<RecordedError>,
}

impl Operation<'_> {
    /// The MCP method the operation sends.
    pub(super) fn mcp_method(&self) -> &'static str {
        match self {
            Operation::CallTool { .. } => "tools/call",
            Operation::ReadResource { .. } => "resources/read",
            Operation::GetPrompt { .. } => "prompts/get",
            Operation::ListResources {
                kind: crate::provider::ResourceListKind::Resources,
            } => "resources/list",
            Operation::ListResources {
                kind: crate::provider::ResourceListKind::Templates,
            } => "resources/templates/list",
            Operation::ListPrompts => "prompts/list",
            // The gateway passes only these through (`passed.rs`); a span needs a static name.
            Operation::Pass { method, .. } => match *method {
                "completion/complete" => "completion/complete",
                "resources/subscribe" => "resources/subscribe",
                "resources/unsubscribe" => "resources/unsubscribe",
                _ => "passed",
            },
            Operation::Task { request } => request.method(),
            Operation::RunAsTask { .. } => "tools/call",
        }
    }

    fn target(&self) -> OperationTarget {
        match self {
            Operation::ReadResource { uri } => OperationTarget::Resource((*uri).to_owned()),
            Operation::GetPrompt { name, .. } => OperationTarget::Prompt((*name).to_owned()),
            _ => OperationTarget::None,
        }
    }
}

impl Pipeline {
    /// Runs `operation` through [`execute::protected`] under `context`'s span, with a span of
    /// its own when export is on, and tells the observers once something was sent.
    /// `with_caller`: whether the request is made for the caller (a prompt, a read) or for no
    /// one in particular (a listing shared by every caller).
    pub(super) async fn protected_operation(
        &self,
        context: &CallContext,
        slot: &Slot,
        operation: &Operation<'_>,
        bounds: Bounds,
        with_caller: bool,
    ) -> CallOutcome {
        let base = if with_caller {
            context.ticket()
        } else {
            CallTicket {
                trace: context.ticket().trace,
                ..CallTicket::default()
            }
        };
        let span = CallSpan::for_operation(&context.trace);
        if !span.ids.is_ours() {
            return execute::protected(slot, operation, true, bounds, &self.options.retry, &base)
                .await;
        }
        let (trace, exchange) = span.upstream();
        let ticket = CallTicket {
            trace,
            exchange,
            ..base
        };
        let started = Instant::now();
        let outcome =
            execute::protected(slot, operation, true, bounds, &self.options.retry, &ticket).await;
        if outcome.attempts == 0 {
            return outcome;
        }
        let info = slot.upstream.info();
        let record = OperationRecord {
            method: operation.mcp_method(),
            target: operation.target(),
            server: info.name.clone(),
            transport: info.transport,
            session_id: context.session_id.clone(),
            span,
            finished_at: SystemTime::now(),
            latency: started.elapsed(),
            attempts: outcome.attempts,
            retry_reason: outcome.retry_reason.clone(),
            error: outcome.result.as_ref().err().map(|error| RecordedError {
                code: error.code(),
                kind: error.kind(),
                message: error.wire_message(),
            }),
        };
        for observer in &self.observers {
            observer.observe_operation(&record);
        }
        outcome
    }
}
