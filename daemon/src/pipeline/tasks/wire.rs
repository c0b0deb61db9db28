//! Reading and rewriting the task objects of MCP 2025-11-25 (pure): the `CreateTaskResult` a
//! task-augmented call answers (`{task: {taskId, status, ...}}`), a task as `tasks/get` and
//! `tasks/cancel` answer it (the task's members at the top level) and `tasks/list`'s items. A
//! task's id is replaced by the one its caller is given (`registry.rs`); everything else the
//! server said passes unchanged.

use serde_json::Value;

/// What was wrong with a server's task answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TaskAnswerError {
    /// A task-augmented call answered without a `task` object.
    #[error("the server answered a task-augmented call without a \"task\" object")]
    NoTask,
    /// The task has no string `taskId`.
    #[error("the server's task has no \"taskId\" string")]
    NoTaskId,
}

/// The server's id of the task a `CreateTaskResult` announces.
pub(crate) fn created_task_id(result: &Value) -> Result<String, TaskAnswerError> {
    let task = result.get("task").ok_or(TaskAnswerError::NoTask)?;
    task_id(task)
}

/// The `taskId` of a task object.
pub(crate) fn task_id(task: &Value) -> Result<String, TaskAnswerError> {
    task.get("taskId")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or(TaskAnswerError::NoTaskId)
}

/// Sets a task object's `taskId` to `public_id`.
pub(crate) fn set_task_id(task: &mut Value, public_id: &str) {
    if let Some(object) = task.as_object_mut() {
        object.insert("taskId".to_owned(), Value::from(public_id));
    }
}

/// Rewrites the related-task id a `tasks/result` answer may carry in
/// `_meta["io.modelcontextprotocol/related-task"]`.
pub(crate) fn set_related_task_id(result: &mut Value, public_id: &str) {
    if let Some(related) = result
        .pointer_mut("/_meta/io.modelcontextprotocol~1related-task")
        .filter(|related| related.get("taskId").is_some())
    {
        set_task_id(related, public_id);
    }
}

/// The status of a task object, when it has one.
pub(crate) fn status(task: &Value) -> Option<&str> {
    task.get("status").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_created_task_is_read_and_renamed_and_a_malformed_one_refused() {
        let mut created = json!({"task": {"taskId": "abc", "status": "working", "ttl": 300000}});
        assert_eq!(created_task_id(&created), Ok("abc".to_owned()));
        set_task_id(&mut created["task"], "everything:abc");
        assert_eq!(
            created,
            json!({"task": {"taskId": "everything:abc", "status": "working", "ttl": 300000}})
        );
        assert_eq!(
            created_task_id(&json!({"content": []})),
            Err(TaskAnswerError::NoTask)
        );
        assert_eq!(
            created_task_id(&json!({"task": {"taskId": 7}})),
            Err(TaskAnswerError::NoTaskId)
        );
    }

    #[test]
    fn a_results_related_task_is_renamed_and_nothing_else_touched() {
        let mut result = json!({"content": [{"type": "text", "text": "done"}],
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "abc"}, "other": 1}});
        set_related_task_id(&mut result, "s:abc");
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
            "s:abc"
        );
        assert_eq!(result["_meta"]["other"], 1);
        let mut plain = json!({"content": []});
        set_related_task_id(&mut plain, "s:abc");
        assert_eq!(plain, json!({"content": []}));
    }
}
