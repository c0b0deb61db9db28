//! MCP task requests on a live connection (`provider/tasks.rs`): a task-augmented `tools/call`
//! and `tasks/get|result|list|cancel`. rmcp 3.9 models tasks as the 2026-07-28 extension, whose
//! shapes differ from 2025-11-25's, so nothing here goes through its typed results: over stdio
//! the request goes around rmcp (`direct.rs`) and its result arrives whole; elsewhere it is an
//! rmcp custom request, whose result the stdio tap also keeps raw.

use std::time::Duration;

use rmcp::model::{ClientRequest, CustomRequest};
use serde_json::Value;

use super::super::direct::request_line;
use super::Connection;
use crate::error::Error;
use crate::provider::{CALLER_META_KEY, CallTicket, TaskRequest};

impl Connection {
    /// Sends one task request for the caller `ticket` names; the server's result, unnarrowed.
    pub(crate) async fn task_request(
        &self,
        request: TaskRequest<'_>,
        timeout: Duration,
        ticket: &CallTicket,
    ) -> Result<Value, Error> {
        let _caller_in_flight = self.callers.enter(ticket.caller.clone());
        let _in_flight = self.published.server_requests.calling(ticket);
        let mut params = request.params();
        let mut meta = serde_json::Map::new();
        if let Some(context) = &ticket.trace {
            meta.insert("traceparent".to_owned(), Value::from(context.traceparent()));
            if let Some(state) = &context.trace_state {
                meta.insert("tracestate".to_owned(), Value::from(state.as_str()));
            }
        }
        if let Some(caller) = ticket.caller.as_deref() {
            meta.insert(CALLER_META_KEY.to_owned(), Value::from(caller));
        }
        let method = request.method();
        let label = request.label();
        match &self.direct {
            Some(direct) => {
                let line = |id| {
                    let mut params = params.clone();
                    let mut meta = meta.clone();
                    meta.insert("progressToken".to_owned(), Value::from(id));
                    params.insert("_meta".to_owned(), Value::Object(meta));
                    request_line(id, method, &params)
                };
                self.direct_request(direct, line, (label, timeout), ticket)
                    .await
            }
            None => {
                if !meta.is_empty() {
                    params.insert("_meta".to_owned(), Value::Object(meta));
                }
                let request = ClientRequest::CustomRequest(CustomRequest::new(
                    method,
                    Some(Value::Object(params)),
                ));
                self.request(request, label, timeout, ticket).await
            }
        }
    }
}
