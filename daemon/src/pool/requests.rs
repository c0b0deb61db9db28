//! The pool's answers to requests and notifications a server sends the daemon: `roots/list`
//! from the config, `elicitation/create` and `sampling/createMessage` declined with a reason
//! (bounded per server, so a server asking a thousand times costs a counter), and
//! `notifications/message` written to the daemon's log under the server's name.
//!
//! The connection's rmcp `ClientHandler` (`connection.rs`) delegates here; the decisions are
//! in [`crate::server_requests`]. Nothing here is on the path of a plain tool call.

// Roots, sampling and logging are deprecated by rmcp for the 2026 protocol (SEP-2577); the
// protocol version we speak (2025-11-25) has them, and servers use them.
#![allow(deprecated)]

use std::sync::Mutex;

use rmcp::model::{
    CreateMessageRequestParams, ElicitRequestParams, ElicitResult, ElicitationAction, ErrorCode,
    ListRootsResult, LoggingLevel, LoggingMessageNotificationParam, Root,
};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::server_requests::{Admission, RequestBudget, ServerRequestSettings};

/// The `_meta` key of a declined elicitation that says why.
const REASON_META: &str = "tool-cli/reason";

/// JSON-RPC code of a sampling request the daemon refuses (MCP's examples use -1 for "user
/// rejected sampling request").
const SAMPLING_REFUSED: i32 = -1;

/// Longest server log message written to the daemon's log, in characters.
const MAX_LOG_CHARS: usize = 2_000;

/// One server's settings and request counters; kept across its restarts.
pub(crate) struct ServerRequests {
    server: String,
    settings: ServerRequestSettings,
    budget: Mutex<RequestBudget>,
}

impl ServerRequests {
    pub(crate) fn new(server: &str, settings: ServerRequestSettings) -> ServerRequests {
        ServerRequests {
            server: server.to_owned(),
            settings,
            budget: Mutex::new(RequestBudget::new()),
        }
    }

    /// `roots/list`: the configured roots.
    pub(crate) fn list_roots(&self) -> ListRootsResult {
        let roots = self
            .settings
            .roots
            .iter()
            .map(|root| {
                let mut entry = Root::new(root.uri.clone());
                entry.name = root.name.clone();
                entry
            })
            .collect();
        tracing::debug!(server = %self.server, count = self.settings.roots.len(), "roots/list answered from the config");
        ListRootsResult::new(roots)
    }

    /// Counts a request that needs a person or a model; `Err` carries the refusal's reason when
    /// the server is over its budget.
    fn admit(&self, what: &str) -> Result<(), String> {
        let mut budget = self.budget.lock().unwrap();
        match budget.admit(Instant::now()) {
            Admission::Admitted => Ok(()),
            Admission::Refused { first } => {
                if first {
                    tracing::warn!(
                        server = %self.server,
                        refused = budget.refused(),
                        "server is asking too often ({what}); further requests this minute are \
                         declined unread"
                    );
                }
                Err(format!(
                    "declined by the tool-cli daemon: server \"{}\" made more than {} {what} \
                     requests in {} s",
                    self.server,
                    crate::server_requests::BUDGET_PER_WINDOW,
                    crate::server_requests::BUDGET_WINDOW.as_secs()
                ))
            }
        }
    }

    /// `elicitation/create`: declined, with why in `_meta["tool-cli/reason"]`.
    pub(crate) fn elicit(&self, request: &ElicitRequestParams) -> ElicitResult {
        let reason = match self.admit("elicitation") {
            Err(reason) => reason,
            Ok(()) => {
                let message = match request {
                    ElicitRequestParams::FormElicitationParams { message, .. }
                    | ElicitRequestParams::UrlElicitationParams { message, .. } => message.as_str(),
                    _ => "",
                };
                tracing::info!(
                    server = %self.server,
                    message = %clip(message),
                    "elicitation declined: no one to ask (elicitation policy \"decline\")"
                );
                format!(
                    "declined by the tool-cli daemon: server \"{}\" has the elicitation policy \
                     \"decline\" (the daemon has no user to ask)",
                    self.server
                )
            }
        };
        let mut result = ElicitResult::new(ElicitationAction::Decline);
        result.meta = serde_json::from_value(json!({ REASON_META: reason })).ok();
        result
    }

    /// `sampling/createMessage`: refused with the reason as the error message.
    pub(crate) fn sample(&self, request: &CreateMessageRequestParams) -> rmcp::ErrorData {
        let reason = match self.admit("sampling") {
            Err(reason) => reason,
            Ok(()) if !self.settings.allow_sampling => format!(
                "sampling declined by the tool-cli daemon: server \"{}\" is not allowed to \
                 sample (set \"allowSampling\": true in its config entry)",
                self.server
            ),
            Ok(()) => format!(
                "sampling declined by the tool-cli daemon: server \"{}\" may sample, but this \
                 daemon does not yet answer sampling requests through its agent backend",
                self.server
            ),
        };
        tracing::info!(
            server = %self.server,
            messages = request.messages.len(),
            %reason,
            "sampling request declined"
        );
        rmcp::ErrorData::new(ErrorCode(SAMPLING_REFUSED), reason, None)
    }

    /// `notifications/message`: into the daemon's log under the server's name, at the level
    /// MCP's maps to (debug → debug, info and notice → info, warning → warn, error and above →
    /// error).
    pub(crate) fn log(&self, message: &LoggingMessageNotificationParam) {
        let text = match &message.data {
            Value::String(text) => clip(text),
            other => clip(&other.to_string()),
        };
        let logger = message.logger.as_deref().unwrap_or("");
        let server = &self.server;
        match message.level {
            LoggingLevel::Debug => {
                tracing::debug!(target: "tool_cli::server_log", server, logger, "{text}")
            }
            LoggingLevel::Info | LoggingLevel::Notice => {
                tracing::info!(target: "tool_cli::server_log", server, logger, "{text}")
            }
            LoggingLevel::Warning => {
                tracing::warn!(target: "tool_cli::server_log", server, logger, "{text}")
            }
            LoggingLevel::Error
            | LoggingLevel::Critical
            | LoggingLevel::Alert
            | LoggingLevel::Emergency => {
                tracing::error!(target: "tool_cli::server_log", server, logger, "{text}")
            }
        }
    }
}

/// Upstream text for a log line: control characters out, length capped.
fn clip(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_LOG_CHARS)
        .collect();
    if text.chars().count() > MAX_LOG_CHARS {
        format!("{cleaned}…")
    } else {
        cleaned
    }
}
