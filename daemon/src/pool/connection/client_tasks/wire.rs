//! The wire side of client tasks, pure: which server requests are task-augmented and how the
//! stdio transport marks them, the `tasks` capability and where it is written, the `ttl`
//! honoured, a task's status and the `_meta` that ties a result to its task.

use std::time::Duration;

use serde_json::{Map, Value, json};

/// Prefix the stdio transport puts on the method of a task-augmented server request, so rmcp
/// hands it to [`super::ClientTasks::answer`] as a custom request with its params whole.
pub(crate) const TASK_AUGMENTED: &str = "tool-cli/task-augmented/";

/// The server requests a client may be asked to run as a task (MCP 2025-11-25).
pub(super) const ELICITATION: &str = "elicitation/create";
pub(super) const SAMPLING: &str = "sampling/createMessage";

/// The `ttl` given when the server asks for none, and the longest honoured.
const DEFAULT_TTL: Duration = Duration::from_secs(600);
const MAX_TTL: Duration = Duration::from_secs(3_600);

/// The `_meta` key that ties a task's result to its task.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Marks a task-augmented `elicitation/create` or `sampling/createMessage` (a request whose
/// `params.task` is an object) by prefixing its method with [`TASK_AUGMENTED`]; anything else is
/// left alone. Returns whether it marked.
pub(crate) fn mark_task_augmented(message: &mut Value) -> bool {
    let Some(object) = message.as_object_mut() else {
        return false;
    };
    let augmented = object.contains_key("id")
        && object
            .get("params")
            .and_then(|params| params.get("task"))
            .is_some_and(Value::is_object);
    match object.get_mut("method") {
        Some(Value::String(method))
            if augmented && (method == ELICITATION || method == SAMPLING) =>
        {
            method.insert_str(0, TASK_AUGMENTED);
            true
        }
        _ => false,
    }
}

/// The `tasks` client capability to declare: which requests the pool runs as tasks, `None`
/// when neither (a server that may not ask, or whose questions are declined at once).
pub(crate) fn capability(relays_questions: bool, may_sample: bool) -> Option<Value> {
    if !relays_questions && !may_sample {
        return None;
    }
    let mut requests = Map::new();
    if relays_questions {
        requests.insert("elicitation".to_owned(), json!({"create": {}}));
    }
    if may_sample {
        requests.insert("sampling".to_owned(), json!({"createMessage": {}}));
    }
    Some(json!({"list": {}, "cancel": {}, "requests": requests}))
}

/// Writes `capability` into an `initialize` request's `params.capabilities.tasks`; `false`
/// (nothing written) for any other message.
pub(crate) fn declare_in_initialize(message: &mut Value, capability: &Value) -> bool {
    if message.get("method").and_then(Value::as_str) != Some("initialize") {
        return false;
    }
    let Some(capabilities) = message
        .pointer_mut("/params/capabilities")
        .and_then(Value::as_object_mut)
    else {
        return false;
    };
    capabilities.insert("tasks".to_owned(), capability.clone());
    true
}

/// The `ttl` honoured for a requested one (milliseconds; absent or `null` for the default).
pub(super) fn honoured_ttl(requested: Option<&Value>) -> Duration {
    match requested.and_then(Value::as_u64) {
        Some(ms) => Duration::from_millis(ms).min(MAX_TTL),
        None => DEFAULT_TTL,
    }
}

/// Where a client task stands (MCP 2025-11-25's `TaskStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub(super) fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// `result` with `_meta["io.modelcontextprotocol/related-task"]` naming task `id`.
pub(super) fn with_related_task(mut result: Value, id: &str) -> Value {
    if let Some(object) = result.as_object_mut() {
        let meta = object.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(RELATED_TASK.to_owned(), json!({ "taskId": id }));
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_task_augmented_elicitation_and_sampling_requests_are_marked() {
        let mut augmented = json!({"jsonrpc": "2.0", "id": 4, "method": "elicitation/create",
            "params": {"task": {"ttl": 600000}, "message": "?"}});
        assert!(mark_task_augmented(&mut augmented));
        assert_eq!(
            augmented["method"],
            "tool-cli/task-augmented/elicitation/create"
        );
        let mut sampling = json!({"id": "s", "method": "sampling/createMessage",
            "params": {"task": {}, "messages": [], "maxTokens": 5}});
        assert!(mark_task_augmented(&mut sampling));
        for mut untouched in [
            json!({"id": 1, "method": "elicitation/create", "params": {"message": "?"}}),
            json!({"id": 1, "method": "elicitation/create", "params": {"task": 5}}),
            json!({"id": 1, "method": "roots/list", "params": {"task": {}}}),
            json!({"method": "elicitation/create", "params": {"task": {}}}),
            json!({"id": 1, "result": {"task": {}}}),
            json!([1, 2]),
        ] {
            let before = untouched.clone();
            assert!(!mark_task_augmented(&mut untouched), "{before}");
            assert_eq!(untouched, before);
        }
    }

    #[test]
    fn the_capability_names_only_what_is_honoured_and_lands_in_initialize() {
        assert_eq!(capability(false, false), None);
        let questions = capability(true, false).unwrap();
        assert_eq!(
            questions["requests"],
            json!({"elicitation": {"create": {}}})
        );
        assert_eq!(questions["cancel"], json!({}));
        let both = capability(true, true).unwrap();
        assert_eq!(both["requests"]["sampling"], json!({"createMessage": {}}));

        let mut initialize = json!({"id": 0, "method": "initialize",
            "params": {"capabilities": {"elicitation": {}}, "protocolVersion": "2025-11-25"}});
        assert!(declare_in_initialize(&mut initialize, &both));
        assert_eq!(initialize["params"]["capabilities"]["tasks"], both);
        assert_eq!(
            initialize["params"]["capabilities"]["elicitation"],
            json!({})
        );
        let mut other = json!({"id": 1, "method": "tools/list", "params": {"capabilities": {}}});
        assert!(!declare_in_initialize(&mut other, &both));
        assert_eq!(other["params"]["capabilities"], json!({}));
    }

    #[test]
    fn the_ttl_is_the_servers_up_to_an_hour_and_ten_minutes_without_one() {
        assert_eq!(
            honoured_ttl(Some(&json!(600_000))),
            Duration::from_secs(600)
        );
        assert_eq!(honoured_ttl(Some(&json!(86_400_000))), MAX_TTL);
        assert_eq!(honoured_ttl(Some(&Value::Null)), DEFAULT_TTL);
        assert_eq!(honoured_ttl(None), DEFAULT_TTL);
        assert_eq!(honoured_ttl(Some(&json!(-5))), DEFAULT_TTL);
    }

    #[test]
    fn a_result_names_its_task_and_keeps_its_own_meta() {
        let result = with_related_task(json!({"action": "accept", "_meta": {"a": 1}}), "client-3");
        assert_eq!(result["_meta"]["a"], 1);
        assert_eq!(result["_meta"][RELATED_TASK]["taskId"], "client-3");
        assert!(Status::Cancelled.is_terminal() && !Status::InputRequired.is_terminal());
    }
}
