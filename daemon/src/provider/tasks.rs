//! The MCP task requests (protocol 2025-11-25, experimental there) a provider sends for the
//! pipeline: a task-augmented `tools/call` and `tasks/get`, `tasks/result`, `tasks/list`,
//! `tasks/cancel`. Plain values naming the server's own task ids; which caller may see which
//! task is the pipeline's business (`pipeline/tasks/`), not the provider's.

use serde_json::{Map, Value, json};

/// One task request to a server.
#[derive(Debug, Clone, Copy)]
pub enum TaskRequest<'a> {
    /// `tools/call` with `task` (`{ttl?}`): the server answers a `CreateTaskResult`.
    Create {
        tool: &'a str,
        arguments: &'a Map<String, Value>,
        task: &'a Value,
    },
    /// `tasks/get`: the task's status.
    Get { task_id: &'a str },
    /// `tasks/result`: the task's result, once it is terminal (the server holds the request
    /// until then).
    Result { task_id: &'a str },
    /// `tasks/list`, one page.
    List { cursor: Option<&'a str> },
    /// `tasks/cancel`.
    Cancel { task_id: &'a str },
}

impl TaskRequest<'_> {
    /// The MCP method it sends.
    pub fn method(&self) -> &'static str {
        match self {
            TaskRequest::Create { .. } => "tools/call",
            TaskRequest::Get { .. } => "tasks/get",
            TaskRequest::Result { .. } => "tasks/result",
            TaskRequest::List { .. } => "tasks/list",
            TaskRequest::Cancel { .. } => "tasks/cancel",
        }
    }

    /// What the breakers and statistics file it under: the tool for a creation (it is that
    /// tool's call), else the method.
    pub fn label(&self) -> &str {
        match self {
            TaskRequest::Create { tool, .. } => tool,
            other => other.method(),
        }
    }

    /// Its params, without `_meta` (the transport adds the caller and trace context).
    pub fn params(&self) -> Map<String, Value> {
        let value = match self {
            TaskRequest::Create {
                tool,
                arguments,
                task,
            } => json!({"name": tool, "arguments": arguments, "task": task}),
            TaskRequest::Get { task_id }
            | TaskRequest::Result { task_id }
            | TaskRequest::Cancel { task_id } => json!({"taskId": task_id}),
            TaskRequest::List {
                cursor: Some(cursor),
            } => json!({"cursor": cursor}),
            TaskRequest::List { cursor: None } => json!({}),
        };
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_names_its_method_and_params() {
        let arguments = Map::from_iter([("topic".to_owned(), json!("rust"))]);
        let task = json!({"ttl": 60000});
        let create = TaskRequest::Create {
            tool: "research",
            arguments: &arguments,
            task: &task,
        };
        assert_eq!(create.method(), "tools/call");
        assert_eq!(create.label(), "research");
        assert_eq!(
            Value::Object(create.params()),
            json!({"name": "research", "arguments": {"topic": "rust"}, "task": {"ttl": 60000}})
        );
        let get = TaskRequest::Get { task_id: "t1" };
        assert_eq!((get.method(), get.label()), ("tasks/get", "tasks/get"));
        assert_eq!(Value::Object(get.params()), json!({"taskId": "t1"}));
        let list = TaskRequest::List { cursor: None };
        assert_eq!(Value::Object(list.params()), json!({}));
        let next = TaskRequest::List { cursor: Some("c") };
        assert_eq!(Value::Object(next.params()), json!({"cursor": "c"}));
    }
}
