//! The pipeline's task paths over an in-memory server that runs tasks: a task-only tool run as
//! a task and recorded once with its task, a caller's own task created and followed up only by
//! its owner, a task refused for a tool that takes none, and a deadline that cancels the task.
//! Paused clock: the waits are the deadline's, not the wall's.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::TaskFollowUp;
use crate::catalog::Catalog;
use crate::error::Error;
use crate::pipeline::tests::{Recorder, owner, recorded_pipeline};
use crate::pipeline::{CallAnswer, CallContext, CallRequest, Pipeline};
use crate::provider::{
    BoxFuture, CallTicket, ServerInfo, ServerSettings, TaskRequest, ToolProvider, Upstream,
};

/// A server whose `research` tool runs only as a task and whose `echo` takes none; it notes
/// every task request it gets, and its `tasks/result` waits `result_after`.
struct TaskServer {
    info: ServerInfo,
    catalog: Arc<Catalog>,
    received: Mutex<Vec<String>>,
    result_after: Duration,
}

impl TaskServer {
    fn new(result_after: Duration) -> Arc<TaskServer> {
        Arc::new(TaskServer {
            info: ServerInfo {
                name: "lab".to_owned(),
                description: None,
                tags: Vec::new(),
                transport: tool_cli_protocol::methods::TransportKind::Stdio,
                settings: ServerSettings::default(),
            },
            catalog: Arc::new(Catalog::new(vec![
                json!({"name": "research", "inputSchema": {"type": "object"},
                       "execution": {"taskSupport": "required"}}),
                json!({"name": "echo", "inputSchema": {"type": "object"}}),
            ])),
            received: Mutex::new(Vec::new()),
            result_after,
        })
    }

    fn received(&self) -> Vec<String> {
        self.received.lock().unwrap().clone()
    }
}

impl Upstream for TaskServer {
    fn info(&self) -> &ServerInfo {
        &self.info
    }

    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog)
    }

    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        _arguments: &'a Map<String, Value>,
        _deadline: Instant,
        _ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        self.received.lock().unwrap().push(format!("call {tool}"));
        Box::pin(async { Ok(json!({"content": []})) })
    }

    fn task_request<'a>(
        &'a self,
        request: TaskRequest<'a>,
        _deadline: Instant,
        _ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        self.received
            .lock()
            .unwrap()
            .push(request.method().to_owned());
        let wait = self.result_after;
        Box::pin(async move {
            match request {
                TaskRequest::Create { .. } => {
                    Ok(json!({"task": {"taskId": "t1", "status": "working", "ttl": 60000}}))
                }
                TaskRequest::Result { task_id } => {
                    tokio::time::sleep(wait).await;
                    Ok(json!({"content": [{"type": "text", "text": "done"}],
                              "_meta": {"io.modelcontextprotocol/related-task": {"taskId": task_id}}}))
                }
                TaskRequest::Get { task_id } | TaskRequest::Cancel { task_id } => {
                    Ok(json!({"taskId": task_id, "status": "working"}))
                }
                TaskRequest::List { .. } => Ok(json!({"tasks": [{"taskId": "t1"}]})),
            }
        })
    }
}

struct Provider(Arc<TaskServer>);

impl ToolProvider for Provider {
    fn servers(&self) -> Vec<Arc<dyn Upstream>> {
        vec![Arc::clone(&self.0) as Arc<dyn Upstream>]
    }
}

fn pipeline(server: &Arc<TaskServer>) -> (Pipeline, Arc<Recorder>) {
    recorded_pipeline(&Provider(Arc::clone(server)))
}

fn request(tool: &str, task: Option<Value>) -> CallRequest {
    CallRequest {
        server: Some("lab".to_owned()),
        tool: tool.to_owned(),
        task,
        ..CallRequest::default()
    }
}

fn result_of(answer: CallAnswer) -> Value {
    match answer {
        CallAnswer::Ran(ran) => ran.result,
        CallAnswer::DryRun(_) => panic!("a dry run"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_task_only_tool_is_run_as_a_task_and_recorded_once_with_its_task() {
    let server = TaskServer::new(Duration::from_secs(3));
    let (pipeline, recorder) = pipeline(&server);
    let context = CallContext::new(owner());
    let result = result_of(
        pipeline
            .call(&context, request("research", None))
            .await
            .unwrap(),
    );
    assert_eq!(result["content"][0]["text"], "done");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        "lab:t1"
    );
    assert_eq!(server.received(), vec!["tools/call", "tasks/result"]);
    let records = recorder.0.lock().unwrap();
    assert_eq!(records.len(), 1);
    assert!(records[0].success && records[0].executed);
    assert_eq!(records[0].task_id.as_deref(), Some("lab:t1"));
}

#[tokio::test(start_paused = true)]
async fn a_callers_own_task_is_created_and_followed_up_by_its_owner_alone() {
    let server = TaskServer::new(Duration::ZERO);
    let (pipeline, recorder) = pipeline(&server);
    let mut context = CallContext::new(owner());
    context.session_id = Some("s1".to_owned());
    let created = result_of(
        pipeline
            .call(&context, request("research", Some(json!({"ttl": 1000}))))
            .await
            .unwrap(),
    );
    assert_eq!(created["task"]["taskId"], "lab:t1");
    assert_eq!(server.received(), vec!["tools/call"]);
    let status = pipeline
        .task_follow_up(&context, "getTask", TaskFollowUp::Get { task_id: "lab:t1" })
        .await
        .unwrap();
    assert_eq!(status["taskId"], "lab:t1");
    let listed = pipeline.list_tasks(&context).await.unwrap();
    assert_eq!(listed["tasks"], json!([{"taskId": "lab:t1"}]));

    // Another session of the same token, and another gateway session: not found, nothing sent.
    let mut other = CallContext::new(owner());
    other.session_id = Some("s2".to_owned());
    let mut gateway = CallContext::new(owner());
    gateway.session_id = Some("s1".to_owned());
    gateway.mcp_session = Some("m1".to_owned());
    for stranger in [&other, &gateway] {
        let error = pipeline
            .task_follow_up(stranger, "getTask", TaskFollowUp::Get { task_id: "lab:t1" })
            .await
            .unwrap_err();
        assert_eq!(error.kind(), "invalidParams");
        assert_eq!(
            pipeline.list_tasks(stranger).await.unwrap()["tasks"],
            json!([])
        );
    }
    assert_eq!(
        server.received(),
        vec!["tools/call", "tasks/get", "tasks/list"]
    );
    // The follow-ups are operations, not calls: one record, the creation's.
    assert_eq!(recorder.0.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_task_asked_of_a_tool_that_takes_none_is_refused_before_sending() {
    let server = TaskServer::new(Duration::ZERO);
    let (pipeline, recorder) = pipeline(&server);
    let context = CallContext::new(owner());
    let error = pipeline
        .call(&context, request("echo", Some(json!({}))))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "invalidParams");
    assert!(error.wire_message().contains("does not run as an MCP task"));
    assert!(server.received().is_empty());
    assert!(!recorder.0.lock().unwrap()[0].executed);
}

#[tokio::test(start_paused = true)]
async fn a_deadline_passing_while_the_task_runs_cancels_it_once() {
    let server = TaskServer::new(Duration::from_secs(3600));
    let (pipeline, recorder) = pipeline(&server);
    let context = CallContext::new(owner());
    let mut slow = request("research", None);
    slow.timeout = Some(Duration::from_secs(2));
    let error = pipeline.call(&context, slow).await.unwrap_err();
    assert_eq!(error.kind(), "timeout");
    // The cancellation is sent from a task of its own once the wait is dropped.
    for _ in 0..100 {
        if server.received().len() == 3 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(
        server.received(),
        vec!["tools/call", "tasks/result", "tasks/cancel"]
    );
    let records = recorder.0.lock().unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].task_id.as_deref(), Some("lab:t1"));
    assert_eq!(records[0].error.as_ref().unwrap().kind, "timeout");
}
