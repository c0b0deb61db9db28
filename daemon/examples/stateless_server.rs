//! An MCP server that speaks only the stateless revision 2026-07-28, over stdio: the upstream
//! the e2e tests connect the pool to (`tests/e2e/protocol_eras.rs`). Built on rmcp's server with
//! its supported versions narrowed to 2026-07-28, so it answers `initialize` with `-32022`
//! (unsupported protocol version, `supported: ["2026-07-28"]`) and everything else only with
//! the version, client info and capabilities in the request's own `_meta`, as a 2026-only
//! server does.
//!
//! Tools: `add` (two numbers; structured result), `echo` (text back), `ask_name` and `roots`
//! (ask for input the 2026 way: an `input_required` result with an `elicitation/create` or a
//! `roots/list`, then answer with what the retry carried), `ask_forever` (asks at every round)
//! and `request_meta`
//! (what the request's `_meta` said: the protocol version and whether the client declared
//! elicitation), which is how a test sees that the pool carries the per-request metadata.
//!
//! Tasks (the `io.modelcontextprotocol/tasks` extension of 2026-07-28, rmcp's server side):
//! `slow_sum` answers `resultType: "task"` and completes after `ms` milliseconds, or refuses
//! with `-32021` when the request did not declare the extension; `wait_forever` is a task that
//! only ends when cancelled; `failing_task` fails with a JSON-RPC error; `lost_task` announces a task `tasks/get` does not know; `task_log`
//! tells every task's status (how a test sees that a task was cancelled at the server).
//! `ask_in_task` is a task that asks mid-task (`status: "input_required"` with
//! `inputRequests`): first the user's name (an elicitation), then, once `tasks/update`
//! answered it, the client's roots; it completes with a greeting shaped by the answers. With
//! `sample: true` it asks for a sampling (`sampling/createMessage`) instead, and completes with
//! what the model said.
//!
//! `grow_tools` adds a tool named by its `name` argument to the tool list and announces the
//! change on every open `subscriptions/listen` stream (the revision's only way to notify),
//! which is how a test sees that the pool hears a stateless server's changes; `touch_resource`
//! announces an update of the resource `uri` on the streams that subscribed to it.
//!
//! Prompts and resources ask for input the same way: the prompt `ask_name` (an elicitation; its
//! message says what the answer was), the resources `era://roots` (the client's roots) and
//! `era://forever` (asks at every round).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::model::TaskStatus;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ContentBlock, CreateTaskResult, DetailedTask, GetPromptRequestParams, GetPromptResponse,
    GetTaskParams, GetTaskResult, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, SubscriptionFilter, Task, TaskPayload, Tool,
    UpdateTaskParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::{Value, json};

#[derive(Clone, Default)]
struct StatelessServer {
    /// The tasks created so far, by id, with their current payload.
    tasks: Arc<Mutex<BTreeMap<String, (Task, TaskPayload)>>>,
}

/// Now as ISO 8601 (seconds), for a task's timestamps.
fn now_iso8601() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

impl StatelessServer {
    /// Creates a task in `working`; `finish`, when given, ends it with that payload after
    /// `after` unless it was cancelled first.
    fn start_task(&self, finish: Option<(Duration, TaskPayload)>) -> CreateTaskResult {
        let mut tasks = self
            .tasks
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let task_id = format!("task-{}", tasks.len() + 1);
        let now = now_iso8601();
        let task = Task::new(&task_id, TaskStatus::Working, &now, &now)
            .with_ttl_ms(60_000)
            .with_poll_interval_ms(50);
        tasks.insert(task_id.clone(), (task.clone(), TaskPayload::Working));
        if let Some((after, end)) = finish {
            let tasks = Arc::clone(&self.tasks);
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                let mut tasks = tasks.lock().unwrap_or_else(|poison| poison.into_inner());
                if let Some((task, payload)) = tasks.get_mut(&task_id)
                    && matches!(payload, TaskPayload::Working)
                {
                    task.status = end.status();
                    *payload = end;
                    task.last_updated_at = now_iso8601();
                }
            });
        }
        CreateTaskResult::new(task)
    }
}

fn schema(value: Value) -> Arc<serde_json::Map<String, Value>> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

impl ServerHandler for StatelessServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tasks()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .build();
        let mut config = ServerConfig::new(capabilities);
        config.instructions = Some("a 2026-07-28 test server".to_owned());
        config
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Owned(vec![ProtocolVersion::V_2026_07_28])
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // rmcp narrows it to what `get_info` advertises: the tool list's changes.
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        growing::listen(context).await;
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        asking::prompts()
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        asking::get_prompt(request)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        asking::resources()
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        asking::read_resource(request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(growing::with_grown(vec![
            Tool::new(
                "add",
                "Add two numbers",
                schema(json!({
                    "type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                    "required": ["a", "b"],
                    "additionalProperties": false
                })),
            ),
            Tool::new(
                "echo",
                "Say the text back",
                schema(json!({
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"]
                })),
            ),
            Tool::new(
                "ask_name",
                "Ask the user's name before answering (input_required)",
                schema(json!({"type": "object", "properties": {}})),
            ),
            Tool::new(
                "ask_forever",
                "Ask for input at every round (never completes)",
                schema(json!({"type": "object", "properties": {}})),
            ),
            Tool::new(
                "roots",
                "Ask for the client's roots (input_required) and answer them",
                schema(json!({"type": "object", "properties": {}})),
            ),
            Tool::new(
                "slow_sum",
                "Add two numbers as a task that completes after ms milliseconds",
                schema(json!({
                    "type": "object",
                    "properties": {
                        "a": {"type": "number"}, "b": {"type": "number"},
                        "ms": {"type": "integer"}
                    },
                    "required": ["a", "b"]
                })),
            ),
            Tool::new(
                "wait_forever",
                "A task that ends only when cancelled",
                schema(json!({"type": "object", "properties": {}})),
            ),
            Tool::new(
                "failing_task",
                "A task that fails with a JSON-RPC error",
                schema(json!({"type": "object", "properties": {}})),
            ),
            Tool::new(
                "lost_task",
                "Announce a task the server does not know",
                schema(json!({"type": "object", "properties": {}})),
            ),
            Tool::new(
                "ask_in_task",
                "A task that asks the user's name, then the client's roots, before it greets \
                 (or, with sample, asks the client's model)",
                schema(json!({"type": "object", "properties": {"sample": {"type": "boolean"}}})),
            ),
            Tool::new(
                "task_log",
                "Every task's status so far",
                schema(json!({"type": "object", "properties": {}})),
            ),
            Tool::new(
                "grow_tools",
                "Add a tool named `name` to the tool list and announce the change",
                schema(json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"]
                })),
            ),
            Tool::new(
                "touch_resource",
                "Announce that the resource `uri` was updated",
                schema(json!({
                    "type": "object",
                    "properties": {"uri": {"type": "string"}},
                    "required": ["uri"]
                })),
            ),
            Tool::new(
                "request_meta",
                "Tell what this request's _meta carried",
                schema(json!({"type": "object", "properties": {}})),
            ),
        ])))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "add" => {
                let number = |name: &str| arguments.get(name).and_then(Value::as_f64);
                let (Some(a), Some(b)) = (number("a"), number("b")) else {
                    return Err(ErrorData::invalid_params("a and b must be numbers", None));
                };
                let mut result = CallToolResult::structured(json!({"sum": a + b}));
                result.content = vec![ContentBlock::text(format!("{}", a + b))];
                result
            }
            "echo" => {
                let text = arguments.get("text").and_then(Value::as_str).unwrap_or("");
                CallToolResult::success(vec![ContentBlock::text(text.to_owned())])
            }
            "ask_name" | "ask_forever" => {
                // The 2026 way for a server to ask during a call: answer `input_required`, and
                // the client sends the call again with the answers and the state.
                let answered = request.input_responses.as_ref().and_then(|r| r.get("name"));
                if let Some(answer) = answered
                    && request.name == "ask_name"
                    && request.request_state.as_deref() == Some("asked-once")
                {
                    let action = answer
                        .get("action")
                        .and_then(Value::as_str)
                        .unwrap_or("none");
                    CallToolResult::structured(
                        json!({"action": action, "content": answer.get("content")}),
                    )
                } else {
                    return input_required(json!({"name": {
                        "method": "elicitation/create",
                        "params": {
                            "mode": "form",
                            "message": "What is your name?",
                            "requestedSchema": {
                                "type": "object",
                                "properties": {"name": {"type": "string"}},
                                "required": ["name"]
                            }
                        }
                    }}));
                }
            }
            "roots" => match request
                .input_responses
                .as_ref()
                .and_then(|r| r.get("roots"))
            {
                Some(answer) => CallToolResult::structured(answer.clone()),
                None => return input_required(json!({"roots": {"method": "roots/list"}})),
            },
            "slow_sum" | "wait_forever" | "lost_task" | "failing_task" | "ask_in_task" => {
                let declared = context
                    .client_capabilities()
                    .is_some_and(|capabilities| capabilities.supports_tasks());
                if !declared {
                    return Err(ErrorData::missing_required_client_capability(
                        ClientCapabilities::builder().enable_tasks().build(),
                    ));
                }
                let finish = match request.name.as_ref() {
                    "slow_sum" => {
                        let number = |name: &str| arguments.get(name).and_then(Value::as_f64);
                        let (Some(a), Some(b)) = (number("a"), number("b")) else {
                            return Err(ErrorData::invalid_params("a and b must be numbers", None));
                        };
                        let after = arguments.get("ms").and_then(Value::as_u64).unwrap_or(100);
                        let mut result = CallToolResult::structured(json!({"sum": a + b}));
                        result.content = vec![ContentBlock::text(format!("{}", a + b))];
                        let result = serde_json::to_value(result)
                            .ok()
                            .and_then(|value| value.as_object().cloned())
                            .unwrap_or_default();
                        Some((
                            Duration::from_millis(after),
                            TaskPayload::Completed { result },
                        ))
                    }
                    "failing_task" => {
                        let error =
                            json!({"code": -32000, "message": "the task failed on purpose"});
                        let error = error.as_object().cloned().unwrap_or_default();
                        Some((Duration::from_millis(50), TaskPayload::Failed { error }))
                    }
                    _ => None,
                };
                let mut created = self.start_task(finish);
                if request.name == "ask_in_task" {
                    let sample = arguments.get("sample").and_then(Value::as_bool) == Some(true);
                    asking_task::ask_first(&self.tasks, &created.task.task_id, sample);
                }
                if request.name == "lost_task" {
                    self.tasks
                        .lock()
                        .unwrap_or_else(|poison| poison.into_inner())
                        .remove(&created.task.task_id);
                    created.task.task_id = "forgotten".to_owned();
                }
                return Ok(CallToolResponse::Task(created));
            }
            "task_log" => {
                let tasks = self
                    .tasks
                    .lock()
                    .unwrap_or_else(|poison| poison.into_inner());
                let statuses: serde_json::Map<String, Value> = tasks
                    .iter()
                    .map(|(id, (task, _))| (id.clone(), json!(task.status)))
                    .collect();
                CallToolResult::structured(json!({"tasks": statuses}))
            }
            "grow_tools" => growing::grow(&arguments).await?,
            "touch_resource" => growing::touch(&arguments).await?,
            "request_meta" => {
                let version = context.meta.protocol_version().map(|v| v.to_string());
                let capabilities = context.meta.client_capabilities();
                let client = context.meta.client_info().map(|info| info.name);
                CallToolResult::structured(json!({
                    "protocolVersion": version,
                    "clientName": client,
                    "elicitation": capabilities.as_ref().is_some_and(|c| c.elicitation.is_some()),
                    "capabilitiesSent": capabilities.is_some(),
                }))
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no tool {other:?}"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let tasks = self
            .tasks
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let Some((task, payload)) = tasks.get(&request.task_id) else {
            return Err(ErrorData::invalid_params(
                format!("unknown task id {:?}", request.task_id),
                None,
            ));
        };
        Ok(GetTaskResult::new(DetailedTask::new(
            task.clone(),
            payload.clone(),
        )))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        asking_task::update(&self.tasks, &request)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let mut tasks = self
            .tasks
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let Some((task, payload)) = tasks.get_mut(&request.task_id) else {
            return Err(ErrorData::invalid_params(
                format!("unknown task id {:?}", request.task_id),
                None,
            ));
        };
        if !task.status.is_terminal() {
            *payload = TaskPayload::Cancelled;
            task.status = TaskStatus::Cancelled;
            task.last_updated_at = now_iso8601();
        }
        Ok(())
    }
}

/// `ask_in_task`: a task that asks for input mid-task (the tasks extension's `input_required`
/// status with `inputRequests`, answered with `tasks/update`), one question at a time.
mod asking_task {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use rmcp::ErrorData;
    use rmcp::model::{
        CallToolResult, ContentBlock, Task, TaskPayload, TaskStatus, UpdateTaskParams,
    };
    use serde_json::{Value, json};

    type Tasks = Mutex<BTreeMap<String, (Task, TaskPayload)>>;

    /// The answers each asking task was given so far, by task id (the greeting is made of them).
    static ANSWERS: Mutex<BTreeMap<String, serde_json::Map<String, Value>>> =
        Mutex::new(BTreeMap::new());

    /// Puts task `task_id` in `input_required` with `requests`.
    fn ask(tasks: &Tasks, task_id: &str, requests: Value) {
        let Ok(input_requests) = serde_json::from_value(requests) else {
            return;
        };
        let mut tasks = tasks.lock().unwrap_or_else(|poison| poison.into_inner());
        if let Some((task, payload)) = tasks.get_mut(task_id) {
            task.status = TaskStatus::InputRequired;
            task.last_updated_at = super::now_iso8601();
            *payload = TaskPayload::InputRequired { input_requests };
        }
    }

    /// The first question: the user's name, or the client's model when `sample`.
    pub(super) fn ask_first(tasks: &Tasks, task_id: &str, sample: bool) {
        if sample {
            let reply = json!({"reply": {
                "method": "sampling/createMessage",
                "params": {
                    "messages": [{"role": "user", "content": {
                        "type": "text", "text": "say hi from the task"
                    }}],
                    "maxTokens": 20
                }
            }});
            return ask(tasks, task_id, reply);
        }
        ask(
            tasks,
            task_id,
            json!({"name": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "What is your name, for the task?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"]
                    }
                }
            }}),
        );
    }

    /// `tasks/update`: takes the answers to the outstanding requests (an answer to anything
    /// else is refused, as the extension says), then asks the next question or completes.
    pub(super) fn update(tasks: &Tasks, request: &UpdateTaskParams) -> Result<(), ErrorData> {
        let outstanding: Vec<String> = {
            let tasks = tasks.lock().unwrap_or_else(|poison| poison.into_inner());
            match tasks.get(&request.task_id) {
                Some((_, TaskPayload::InputRequired { input_requests })) => {
                    input_requests.keys().cloned().collect()
                }
                Some(_) => {
                    return Err(ErrorData::invalid_params(
                        format!("task {:?} is not waiting for input", request.task_id),
                        None,
                    ));
                }
                None => {
                    return Err(ErrorData::invalid_params(
                        format!("unknown task id {:?}", request.task_id),
                        None,
                    ));
                }
            }
        };
        if let Some(stray) = request
            .input_responses
            .keys()
            .find(|key| !outstanding.contains(key))
        {
            return Err(ErrorData::invalid_params(
                format!("{stray:?} answers no outstanding input request"),
                None,
            ));
        }
        let answers = {
            let mut all = ANSWERS.lock().unwrap_or_else(|poison| poison.into_inner());
            let answers = all.entry(request.task_id.clone()).or_default();
            for (key, answer) in &request.input_responses {
                answers.insert(key.clone(), answer.clone());
            }
            answers.clone()
        };
        if !outstanding.iter().all(|key| answers.contains_key(key)) {
            return Ok(());
        }
        if let Some(reply) = answers.get("reply") {
            let said = reply.pointer("/content/text").and_then(Value::as_str);
            let greeting = format!("the model said: {}", said.unwrap_or("nothing"));
            return complete(tasks, &request.task_id, greeting, &answers);
        }
        if !answers.contains_key("roots") {
            ask(
                tasks,
                &request.task_id,
                json!({"roots": {"method": "roots/list"}}),
            );
            return Ok(());
        }
        let name = &answers["name"];
        let greeting = match (
            name.get("action").and_then(Value::as_str),
            name.pointer("/content/name").and_then(Value::as_str),
        ) {
            (Some("accept"), Some(name)) => format!("hello {name}"),
            (action, _) => format!("hello stranger ({})", action.unwrap_or("no action")),
        };
        complete(tasks, &request.task_id, greeting, &answers)
    }

    /// Completes task `task_id` with `greeting` and the answers it was given.
    fn complete(
        tasks: &Tasks,
        task_id: &str,
        greeting: String,
        answers: &serde_json::Map<String, Value>,
    ) -> Result<(), ErrorData> {
        let mut result =
            CallToolResult::structured(json!({"greeting": greeting, "answers": answers}));
        result.content = vec![ContentBlock::text(greeting)];
        let result = serde_json::to_value(result)
            .ok()
            .and_then(|value| value.as_object().cloned())
            .unwrap_or_default();
        let mut tasks = tasks.lock().unwrap_or_else(|poison| poison.into_inner());
        if let Some((task, payload)) = tasks.get_mut(task_id)
            && !task.status.is_terminal()
        {
            task.status = TaskStatus::Completed;
            task.last_updated_at = super::now_iso8601();
            *payload = TaskPayload::Completed { result };
        }
        Ok(())
    }
}

/// An `input_required` answer asking `requests`.
fn input_required(requests: Value) -> Result<CallToolResponse, ErrorData> {
    let asked = serde_json::from_value(json!({
        "resultType": "input_required",
        "requestState": "asked-once",
        "inputRequests": requests,
    }))
    .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
    Ok(CallToolResponse::InputRequired(asked))
}

/// The prompt and resources that ask for input before answering (2026-07-28's
/// `input_required` results on `prompts/get` and `resources/read`).
mod asking {
    use rmcp::ErrorData;
    use rmcp::model::{
        GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequiredResult,
        ListPromptsResult, ListResourcesResult, ReadResourceRequestParams, ReadResourceResponse,
        ReadResourceResult,
    };
    use serde::de::DeserializeOwned;
    use serde_json::{Value, json};

    fn decode<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
        serde_json::from_value(value)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))
    }

    fn asking(requests: Value) -> Result<InputRequiredResult, ErrorData> {
        decode(json!({
            "resultType": "input_required",
            "requestState": "asked-once",
            "inputRequests": requests,
        }))
    }

    pub(super) fn prompts() -> Result<ListPromptsResult, ErrorData> {
        decode(json!({"prompts": [
            {"name": "ask_name", "description": "Greets the user, asking their name first"}
        ]}))
    }

    pub(super) fn get_prompt(
        request: GetPromptRequestParams,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != "ask_name" {
            return Err(ErrorData::invalid_params(
                format!("no prompt {:?}", request.name),
                None,
            ));
        }
        let answered = request.input_responses.as_ref().and_then(|r| r.get("name"));
        match answered {
            Some(answer) if request.request_state.as_deref() == Some("asked-once") => {
                let action = answer
                    .get("action")
                    .and_then(Value::as_str)
                    .unwrap_or("none");
                decode::<GetPromptResult>(json!({"messages": [{"role": "user", "content": {
                    "type": "text", "text": format!("greet the user (asked their name: {action})")
                }}]}))
                .map(GetPromptResponse::Complete)
            }
            _ => asking(json!({"name": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "What is your name?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"]
                    }
                }
            }}))
            .map(GetPromptResponse::InputRequired),
        }
    }

    pub(super) fn resources() -> Result<ListResourcesResult, ErrorData> {
        decode(json!({"resources": [
            {"uri": "era://roots", "name": "roots", "description": "The client's roots, asked for"},
            {"uri": "era://forever", "name": "forever", "description": "Asks at every round"}
        ]}))
    }

    pub(super) fn read_resource(
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let roots = request
            .input_responses
            .as_ref()
            .and_then(|r| r.get("roots"));
        match (request.uri.as_str(), roots) {
            ("era://roots", Some(roots)) => decode::<ReadResourceResult>(json!({"contents": [
                {"uri": "era://roots", "mimeType": "application/json", "text": roots.to_string()}
            ]}))
            .map(ReadResourceResponse::Complete),
            ("era://roots" | "era://forever", _) => {
                asking(json!({"roots": {"method": "roots/list"}}))
                    .map(ReadResourceResponse::InputRequired)
            }
            (other, _) => Err(ErrorData::resource_not_found(
                format!("no resource {other:?}"),
                None,
            )),
        }
    }
}

/// The tools `grow_tools` added and the listen streams to tell: one process serves one
/// client, so the state is the process's.
mod growing {
    use std::sync::{Arc, Mutex};

    use rmcp::ErrorData;
    use rmcp::model::{CallToolResult, Tool};
    use rmcp::service::{SubscriptionContext, SubscriptionSink};
    use serde_json::{Map, Value, json};

    static GROWN: Mutex<Vec<String>> = Mutex::new(Vec::new());
    static LISTENERS: Mutex<Vec<SubscriptionSink>> = Mutex::new(Vec::new());

    /// `tools` and the tools added so far.
    pub(super) fn with_grown(mut tools: Vec<Tool>) -> Vec<Tool> {
        let grown = GROWN.lock().map(|grown| grown.clone()).unwrap_or_default();
        tools.extend(grown.into_iter().map(|name| {
            let schema = json!({"type": "object", "properties": {}});
            Tool::new(
                name,
                "Added by grow_tools",
                Arc::new(schema.as_object().cloned().unwrap_or_default()),
            )
        }));
        tools
    }

    /// Keeps a listen stream open until the client cancels it.
    pub(super) async fn listen(context: SubscriptionContext) {
        if let Ok(mut listeners) = LISTENERS.lock() {
            listeners.push(context.sink().clone());
        }
        context.cancelled().await;
    }

    /// Adds the tool and tells every open stream.
    pub(super) async fn grow(arguments: &Map<String, Value>) -> Result<CallToolResult, ErrorData> {
        let Some(name) = arguments.get("name").and_then(Value::as_str) else {
            return Err(ErrorData::invalid_params("name must be a string", None));
        };
        if let Ok(mut grown) = GROWN.lock() {
            grown.push(name.to_owned());
        }
        let listeners = LISTENERS
            .lock()
            .map(|listeners| listeners.clone())
            .unwrap_or_default();
        let mut told = 0;
        for listener in listeners {
            if listener.notify_tool_list_changed().await.is_ok() {
                told += 1;
            }
        }
        Ok(CallToolResult::structured(
            json!({"added": name, "told": told}),
        ))
    }

    /// Tells the streams subscribed to `uri` that it was updated.
    pub(super) async fn touch(arguments: &Map<String, Value>) -> Result<CallToolResult, ErrorData> {
        let Some(uri) = arguments.get("uri").and_then(Value::as_str) else {
            return Err(ErrorData::invalid_params("uri must be a string", None));
        };
        let listeners = LISTENERS
            .lock()
            .map(|listeners| listeners.clone())
            .unwrap_or_default();
        let mut told = 0;
        for listener in listeners {
            // A stream that did not subscribe to it, or has ended, refuses.
            if listener.notify_resource_updated(uri).await.is_ok() {
                told += 1;
            }
        }
        Ok(CallToolResult::structured(
            json!({"touched": uri, "told": told}),
        ))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let transport = (tokio::io::stdin(), tokio::io::stdout());
    let service = StatelessServer::default().serve(transport).await?;
    service.waiting().await?;
    Ok(())
}
