//! The MCP task methods (`getTask`, `getTaskResult`, `listTasks`, `cancelTask`): follow-up
//! requests on a task a `callTool` with `task` created, by the same token and session, through
//! the pipeline (`pipeline/tasks/`), which knows whose task is whose.

use serde_json::Value;
use tool_cli_protocol::methods::{ListTasksParams, TaskParams, name};

use super::Calls;
use crate::error::Error;
use crate::pipeline::CallContext;
use crate::pipeline::tasks::TaskFollowUp;

impl Calls {
    /// `getTask`: the task's status, as its server says.
    pub async fn get_task(
        &self,
        params: TaskParams,
        context: &CallContext,
    ) -> Result<Value, Error> {
        let context = in_session(context, params.session_id);
        let follow_up = TaskFollowUp::Get {
            task_id: &params.task_id,
        };
        self.pipeline
            .task_follow_up(&context, name::GET_TASK, follow_up)
            .await
    }

    /// `getTaskResult`: the task's result (its `CallToolResult`), once it is terminal.
    pub async fn get_task_result(
        &self,
        params: TaskParams,
        context: &CallContext,
    ) -> Result<Value, Error> {
        let context = in_session(context, params.session_id);
        let follow_up = TaskFollowUp::Result {
            task_id: &params.task_id,
        };
        self.pipeline
            .task_follow_up(&context, name::GET_TASK_RESULT, follow_up)
            .await
    }

    /// `cancelTask`: cancels the task; the task as it is after.
    pub async fn cancel_task(
        &self,
        params: TaskParams,
        context: &CallContext,
    ) -> Result<Value, Error> {
        let context = in_session(context, params.session_id);
        let follow_up = TaskFollowUp::Cancel {
            task_id: &params.task_id,
        };
        self.pipeline
            .task_follow_up(&context, name::CANCEL_TASK, follow_up)
            .await
    }

    /// A follow-up on a task for the MCP gateway, whose errors name the MCP `method`.
    pub(crate) async fn task_follow_up(
        &self,
        method: &str,
        follow_up: TaskFollowUp<'_>,
        context: &CallContext,
    ) -> Result<Value, Error> {
        self.pipeline
            .task_follow_up(context, method, follow_up)
            .await
    }

    /// The id `context`'s caller knows task `upstream_id` of `server` by, if it created it.
    pub(crate) fn own_task_id(
        &self,
        context: &CallContext,
        server: &str,
        upstream_id: &str,
    ) -> Option<String> {
        self.pipeline.own_task_id(context, server, upstream_id)
    }

    /// `listTasks`: the caller's tasks their servers still know.
    pub async fn list_tasks(
        &self,
        params: ListTasksParams,
        context: &CallContext,
    ) -> Result<Value, Error> {
        let context = in_session(context, params.session_id);
        self.pipeline.list_tasks(&context).await
    }
}

/// `context` in the session the params name (tasks are their creator's token and session's).
fn in_session(context: &CallContext, session_id: Option<String>) -> CallContext {
    let mut context = context.clone();
    context.session_id = session_id;
    context
}
