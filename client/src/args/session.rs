//! `tool-cli session open|summary|list|close`: the grammar of the session commands, checked
//! without a daemon.

use clap::Subcommand;
use tool_cli_protocol::orchestration::OpenSessionParams;

use super::call::check_session_id;
use crate::error::Error;

/// `tool-cli session ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum SessionAction {
    /// Open a session and print its id alone on stdout:
    /// SESSION=$(tool-cli session open --task "...")
    Open {
        /// What the agent is doing, in words; routing reads it (explicit mention, similarity)
        #[arg(long, value_name = "TEXT")]
        task: Option<String>,

        /// A free label shown by `tool-cli session list`; repeatable
        #[arg(long = "label", value_name = "L")]
        labels: Vec<String>,
    },
    /// What a session did: calls, errors, success rate, latency, tokens, cost, tools used and
    /// the routing rules that fired
    Summary {
        /// The session's id, as printed by `tool-cli session open`
        #[arg(value_name = "ID")]
        id: String,
    },
    /// This token's sessions, most recently used first
    List,
    /// End a session; exit 5 when this token has no session with that id
    Close {
        /// The session's id
        #[arg(value_name = "ID")]
        id: String,
    },
}

/// A checked session command.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SessionCommand {
    /// `openSession`.
    Open(OpenSessionParams),
    /// `sessionSummary`.
    Summary { session_id: String },
    /// `listSessions`.
    List,
    /// `closeSession`.
    Close { session_id: String },
}

/// Checks what can be checked without a daemon: ids have the daemon's shape, a task or label is
/// not blank.
pub(crate) fn command(action: SessionAction) -> Result<SessionCommand, Error> {
    Ok(match action {
        SessionAction::Open { task, labels } => {
            if task.as_deref().is_some_and(|task| task.trim().is_empty()) {
                return Err(Error::Usage(
                    "--task is empty; describe what the session is for, or leave --task out"
                        .to_owned(),
                ));
            }
            if labels.iter().any(|label| label.trim().is_empty()) {
                return Err(Error::Usage(
                    "a --label is empty; give each label some text".to_owned(),
                ));
            }
            SessionCommand::Open(OpenSessionParams {
                task,
                labels,
                session_id: None,
                ..OpenSessionParams::default()
            })
        }
        SessionAction::Summary { id } => SessionCommand::Summary {
            session_id: check_session_id(id.trim(), "the session id")?,
        },
        SessionAction::List => SessionCommand::List,
        SessionAction::Close { id } => SessionCommand::Close {
            session_id: check_session_id(id.trim(), "the session id")?,
        },
    })
}
