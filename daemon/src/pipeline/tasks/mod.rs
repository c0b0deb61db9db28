//! MCP tasks (protocol 2025-11-25, experimental there) through the pipeline. A task is a call:
//! the `tools/call` that creates one takes every stage (resolve, plan, execute, record) like
//! any other and is recorded once; what is new is here.
//!
//! - `registry.rs`: which caller owns which task, by the id the caller is given
//!   (`server:upstream-id`); another token's or session's task is not found.
//! - `wire.rs`: reading task answers and putting the caller's id in them (pure).
//! - `run.rs`: a tool that runs only as a task, run as one and waited for within the call's
//!   deadline, cancelled if the wait ends without its result.
//! - here: the follow-up requests of a task the caller created (`tasks/get`, `tasks/result`,
//!   `tasks/list`, `tasks/cancel`), each through the execute stage's protection like a resource
//!   read, for the JSON-RPC task methods and the MCP gateway alike.
//!
//! Kept apart from the 2025 protocol's transport details (those are the provider's,
//! `provider/tasks.rs`) so another protocol era's tasks can use the same ownership and flow.

mod registry;
pub(crate) mod run;
pub(crate) mod wire;

use std::collections::{BTreeMap, HashSet};

use serde_json::{Value, json};
use tool_cli_protocol::ErrorData;

pub(crate) use registry::{TaskEntry, TaskRegistry};

use super::execute::{Bounds, Operation};
use super::{CallContext, Pipeline, Slot, resolve_server};
use crate::error::Error;
use crate::paging::next_upstream_cursor;
use crate::provider::{TaskRequest, caller_key};

/// Most pages of one server's `tasks/list` read for one listing.
const MAX_LIST_PAGES: usize = 20;

/// Who owns the tasks a request creates: the MCP gateway session it came in on, else its
/// token and tool-cli session.
pub(crate) fn owner(context: &CallContext) -> String {
    match &context.mcp_session {
        Some(session) => caller_key(&context.grant.token_id, Some(&format!("mcp:{session}"))),
        None => caller_key(&context.grant.token_id, context.session_id.as_deref()),
    }
}

/// Checks a task-augmented call's answer (`CreateTaskResult`) and tells `created` its task id.
pub(crate) fn announce_created(
    answer: Value,
    server: &str,
    tool: &str,
    created: &(dyn Fn(&str) + Send + Sync),
) -> Result<Value, Error> {
    let upstream_id = wire::created_task_id(&answer).map_err(|malformed| {
        Error::from(ErrorData::InvalidResult {
            server: server.to_owned(),
            method: tool.to_owned(),
            message: malformed.to_string(),
        })
    })?;
    created(&upstream_id);
    Ok(answer)
}

/// A follow-up request on a task its caller created.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TaskFollowUp<'a> {
    /// Its status.
    Get { task_id: &'a str },
    /// Its result, once terminal (waits, within the server's call timeout).
    Result { task_id: &'a str },
    /// Cancel it.
    Cancel { task_id: &'a str },
}

impl TaskFollowUp<'_> {
    fn task_id(&self) -> &str {
        match self {
            TaskFollowUp::Get { task_id }
            | TaskFollowUp::Result { task_id }
            | TaskFollowUp::Cancel { task_id } => task_id,
        }
    }
}

impl Pipeline {
    /// Sends a follow-up request on a task the caller created (`method` names the caller's
    /// method in errors); the server's answer with the caller's task id in it.
    pub(crate) async fn task_follow_up(
        &self,
        context: &CallContext,
        method: &str,
        follow_up: TaskFollowUp<'_>,
    ) -> Result<Value, Error> {
        let public = follow_up.task_id();
        let entry = self
            .tasks
            .lookup(&owner(context), public)
            .ok_or_else(|| not_found(method, public))?;
        let slots = self.slots();
        let slot = resolve_server(&slots, &entry.server, &context.grant, None)?;
        let task_id = entry.upstream_id.as_str();
        let request = match follow_up {
            TaskFollowUp::Get { .. } => TaskRequest::Get { task_id },
            TaskFollowUp::Result { .. } => TaskRequest::Result { task_id },
            TaskFollowUp::Cancel { .. } => TaskRequest::Cancel { task_id },
        };
        let mut answer = self.send_task_request(context, slot, request).await?;
        match follow_up {
            TaskFollowUp::Result { .. } => wire::set_related_task_id(&mut answer, public),
            _ => wire::set_task_id(&mut answer, public),
        }
        Ok(answer)
    }

    /// The id `context`'s caller knows task `upstream_id` of `server` by, if it created it.
    pub(crate) fn own_task_id(
        &self,
        context: &CallContext,
        server: &str,
        upstream_id: &str,
    ) -> Option<String> {
        let public = TaskRegistry::public_id(server, upstream_id);
        self.tasks.lookup(&owner(context), &public).map(|_| public)
    }

    /// The tasks the caller created that their servers still know, oldest first, each as
    /// `tasks/get` would answer it (with the caller's id): `{"tasks": [...]}`. A task its
    /// server no longer lists (its `ttl` ran out) is forgotten.
    pub(crate) async fn list_tasks(&self, context: &CallContext) -> Result<Value, Error> {
        let owned = self.tasks.owned_by(&owner(context));
        let mut by_server: BTreeMap<&str, Vec<&(String, TaskEntry)>> = BTreeMap::new();
        for owned in &owned {
            by_server.entry(&owned.1.server).or_default().push(owned);
        }
        let slots = self.slots();
        let mut listed = Vec::new();
        for (server, entries) in by_server {
            let Ok(slot) = resolve_server(&slots, server, &context.grant, None) else {
                continue;
            };
            let mut known: BTreeMap<String, Value> = BTreeMap::new();
            let mut cursor: Option<String> = None;
            for _ in 0..MAX_LIST_PAGES {
                let request = TaskRequest::List {
                    cursor: cursor.as_deref(),
                };
                let mut page = self.send_task_request(context, slot, request).await?;
                if let Some(Value::Array(tasks)) = page.get_mut("tasks").map(Value::take) {
                    for task in tasks {
                        if let Ok(id) = wire::task_id(&task) {
                            known.insert(id, task);
                        }
                    }
                }
                match next_upstream_cursor(&page, cursor.as_deref()) {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            let mut gone = HashSet::new();
            for (public, entry) in entries {
                match known.remove(&entry.upstream_id) {
                    Some(mut task) => {
                        wire::set_task_id(&mut task, public);
                        listed.push(task);
                    }
                    None => {
                        gone.insert(public.clone());
                    }
                }
            }
            for public in gone {
                self.tasks.forget(&public);
            }
        }
        Ok(json!({"tasks": listed}))
    }

    /// Sends task `request` to `slot`'s server for `context`'s caller, through the execute
    /// stage's protection like a resource read, within the server's call timeout: every
    /// follow-up and every page of a listing is bounded the same way.
    async fn send_task_request(
        &self,
        context: &CallContext,
        slot: &Slot,
        request: TaskRequest<'_>,
    ) -> Result<Value, Error> {
        let timeout = slot.upstream.info().settings.call_timeout;
        self.protected_operation(
            context,
            slot,
            &Operation::Task { request },
            Bounds::fixed(timeout, context.arrived + timeout),
            true,
        )
        .await
        .result
    }
}

/// The error for a task id the caller did not create (or that was forgotten): the same
/// whether or not another caller has a task by that id.
fn not_found(method: &str, task_id: &str) -> Error {
    Error::invalid_params(
        method,
        format!(
            "no task {:?} is known to this caller; a task id comes from a call made with \
             \"task\" (or one that runs only as a task) by the same token and session, and \
             listing the tasks shows the ones still known",
            excerpt(task_id)
        ),
    )
}

/// At most 64 characters of a caller's text, for an error.
fn excerpt(text: &str) -> String {
    let mut cut: String = text.chars().take(64).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests;
