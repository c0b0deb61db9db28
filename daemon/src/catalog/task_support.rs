//! A tool's `execution.taskSupport` (MCP 2025-11-25, tasks being experimental there): whether
//! a `tools/call` may, must or must not carry a `task` member. Read once when the catalog is
//! built; an unknown value is read as the spec's default, `forbidden`, so nothing is sent as a
//! task to a server that did not say it takes one.

use serde_json::Value;

/// How a tool takes task-augmented calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    /// No `task` member may be sent (the default when `execution.taskSupport` is absent).
    #[default]
    Forbidden,
    /// Either way.
    Optional,
    /// Only as a task: a call without `task` is an error for the server.
    Required,
}

impl TaskSupport {
    /// The support a tool's `execution.taskSupport` value declares.
    pub fn of(declared: Option<&Value>) -> TaskSupport {
        match declared.and_then(Value::as_str) {
            Some("required") => TaskSupport::Required,
            Some("optional") => TaskSupport::Optional,
            _ => TaskSupport::Forbidden,
        }
    }

    /// The wire word, for errors.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }

    /// Whether a call may carry a `task` member.
    pub fn takes_tasks(self) -> bool {
        self != TaskSupport::Forbidden
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_declared_support_is_read_and_anything_else_forbids() {
        assert_eq!(
            TaskSupport::of(Some(&json!("required"))),
            TaskSupport::Required
        );
        assert_eq!(
            TaskSupport::of(Some(&json!("optional"))),
            TaskSupport::Optional
        );
        assert_eq!(
            TaskSupport::of(Some(&json!("forbidden"))),
            TaskSupport::Forbidden
        );
        assert_eq!(TaskSupport::of(None), TaskSupport::Forbidden);
        assert_eq!(
            TaskSupport::of(Some(&json!("Required"))),
            TaskSupport::Forbidden
        );
        assert_eq!(TaskSupport::of(Some(&json!(true))), TaskSupport::Forbidden);
        assert!(TaskSupport::Optional.takes_tasks() && !TaskSupport::Forbidden.takes_tasks());
    }
}
