//! MCP tasks for hosts of the stateless revision 2026-07-28 through the `/mcp` gateway: the
//! `io.modelcontextprotocol/tasks` extension on the gateway's side. The host is raw HTTP here
//! (each request carrying the version, its identity and its capabilities in `_meta`, with or
//! without the extension), so nothing hides what the gateway answers.
//!
//! Input → test:
//! - a 2025-era upstream's task-only tool (server-everything's `simulate-research-query`):
//!   `server/discover` declares the extension; the call answers the extension's handle with
//!   the daemon's id (`everything:…`), `tasks/get` is polled to `completed` with the tool's
//!   result folded in, `tasks/list` lists it, a second task is cancelled (`tasks/cancel`
//!   acknowledged, the upstream's status `cancelled`), `tasks/update` is refused, arguments the
//!   schema refuses are a tool error and no task; an unknown
//!   id and another token's id are refused in the same words:
//!   `a_2026_host_runs_a_2025_servers_task_through_the_gateway`
//! - a host that does not declare the extension: the task-only tool is `-32021` with the
//!   capability it needs, the task methods too, and a plain tool still answers:
//!   `a_host_without_the_extension_is_told_what_to_declare`
//! - rmcp's client in discover mode with the extension declared
//!   (`daemon/examples/stateless_host.rs --tasks`) reads the gateway's handles and `tasks/get`
//!   answers with its own types: a 2025 server's task and a 2026 server's run completed with
//!   their results, a run cancelled, a plain tool answered at once; without the extension the
//!   task-only tool is refused; the same host through `tool-cli mcp` over stdio follows a run:
//!   `rmcps_client_follows_the_gateways_tasks_of_both_eras`
//! - a 2025 session's `tasks/list` is paged too: a page without `nextCursor` when all fit, the
//!   last task's id as a cursor giving the empty rest, a cursor naming no task or not a string
//!   refused with what would be right: `a_2025_sessions_task_list_takes_the_gateways_cursor`
//! - progressive mode: `call_write_tool` of the task-only tool, by a host with the extension,
//!   runs it as a task waited for within the call's deadline and answers the tool's result,
//!   no handle: `progressive_call_tool_waits_for_a_task_only_tool`
//! - a 2026-07-28 upstream (`daemon/examples/stateless_server.rs`, rmcp's server side of the
//!   extension): its task tool called by a host with the extension answers the gateway's
//!   handle (`modern:run-N`) at once, `tasks/get` reaches `completed` with the tool's result
//!   while the server saw its own task complete; a task cancelled with `tasks/cancel` is
//!   cancelled at the server; a failing task's error comes with `failed`; another token's id
//!   is refused as an unknown one; both runs listed; without the extension the same tool
//!   answers its result in one blocking call:
//!   `a_2026_host_runs_a_2026_servers_task_through_the_gateway`

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{Daemon, bin_dir, eventually_some, everything_stdio, example_bin, mcp_answer};

/// Longest wait for a task to reach a status.
const WAIT: Duration = Duration::from_secs(60);

/// The tasks extension's identifier.
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A 2026-07-28 request's params: `params` with the `_meta` the revision requires, the
/// extension declared or not.
fn stateless(params: Value, declares_tasks: bool) -> Value {
    let capabilities = if declares_tasks {
        json!({"extensions": {TASKS: {}}})
    } else {
        json!({})
    };
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026-host", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    params
}

/// One stateless request to `/mcp` with `token`; the JSON-RPC answer.
fn post(daemon: &Daemon, token: &str, method: &str, params: Value, declares: bool) -> Value {
    post_to(daemon, "/mcp", token, method, params, declares)
}

/// One stateless request to `target` with `token`; the JSON-RPC answer.
fn post_to(
    daemon: &Daemon,
    target: &str,
    token: &str,
    method: &str,
    params: Value,
    declares: bool,
) -> Value {
    let host = format!("127.0.0.1:{}", daemon.port);
    let auth = format!("Bearer {token}");
    let headers = [
        ("Host", host.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", auth.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method,
        "params": stateless(params, declares)});
    let answer = tool_cli_tests::raw_http_exchange(
        daemon.port,
        &tool_cli_tests::http_request_bytes("POST", target, &headers, body.to_string().as_bytes()),
    )
    .expect("an answer");
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    mcp_answer(&answer.body)
}

/// `tasks/get` polled until the task is `status`; the last answer.
fn wait_for_status(daemon: &Daemon, task_id: &str, status: &str) -> Value {
    let mut last = Value::Null;
    eventually_some(WAIT, || {
        last = post(
            daemon,
            &daemon.token,
            "tasks/get",
            json!({"taskId": task_id}),
            true,
        );
        (last["result"]["status"] == status).then_some(())
    })
    .unwrap_or_else(|| panic!("task {task_id} never {status}: {last:#}"));
    last["result"].clone()
}

/// The reason of a not-found error, with the id replaced (the same words for any id).
fn not_found_reason(answer: &Value, task_id: &str) -> String {
    assert_eq!(answer["error"]["code"], -32602, "{answer:#}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    message
        .split_once("no task")
        .map(|(_, reason)| reason.replace(task_id, "ID"))
        .unwrap_or_else(|| panic!("not a not-found error: {message}"))
}

#[test]
fn a_2026_host_runs_a_2025_servers_task_through_the_gateway() {
    let daemon = Daemon::start(json!({"mcpServers": {"everything": everything_stdio()}}));
    let discover = post(&daemon, &daemon.token, "server/discover", json!({}), true);
    assert_eq!(
        discover["result"]["capabilities"]["extensions"][TASKS],
        json!({}),
        "{discover:#}"
    );

    let call = json!({"name": "everything__simulate-research-query",
        "arguments": {"topic": "gateways"}});
    let created = post(&daemon, &daemon.token, "tools/call", call.clone(), true);
    let handle = &created["result"];
    assert_eq!(handle["resultType"], "task", "{created:#}");
    assert_eq!(handle["status"], "working", "{created:#}");
    assert_eq!(
        handle["ttlMs"], 300000,
        "the server's ttl, renamed: {created:#}"
    );
    let task_id = handle["taskId"].as_str().expect("a task id").to_owned();
    assert!(task_id.starts_with("everything:"), "{task_id}");

    // Arguments the schema refuses: a tool error saying so, as for any call, and no task.
    let invalid = post(
        &daemon,
        &daemon.token,
        "tools/call",
        json!({"name": "everything__simulate-research-query", "arguments": {}}),
        true,
    );
    assert_eq!(invalid["result"]["isError"], true, "{invalid:#}");
    assert!(invalid["result"].get("taskId").is_none(), "{invalid:#}");
    assert!(
        invalid["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("topic")),
        "{invalid:#}"
    );

    // Polled to the end: the tool's own result comes with the completed task.
    let done = wait_for_status(&daemon, &task_id, "completed");
    assert_eq!(done["resultType"], "complete", "{done:#}");
    assert_eq!(done["taskId"], task_id.as_str());
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("Research Report: gateways"), "{done:#}");

    // A second task, cancelled while it works: acknowledged, and cancelled at the server.
    let second = post(&daemon, &daemon.token, "tools/call", call, true);
    let second_id = second["result"]["taskId"]
        .as_str()
        .expect("a second task")
        .to_owned();
    let cancelled = post(
        &daemon,
        &daemon.token,
        "tasks/cancel",
        json!({"taskId": second_id}),
        true,
    );
    assert_eq!(
        cancelled["result"],
        json!({"resultType": "complete"}),
        "{cancelled:#}"
    );
    let after = wait_for_status(&daemon, &second_id, "cancelled");
    assert!(after.get("result").is_none(), "{after:#}");

    // Both listed for the token, oldest first, as the extension names a task's members.
    let listed = post(&daemon, &daemon.token, "tasks/list", json!({}), true);
    let ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter_map(|task| task["taskId"].as_str())
        .collect();
    assert_eq!(ids, [task_id.as_str(), second_id.as_str()], "{listed:#}");
    assert!(
        listed["result"]["tasks"][0].get("ttlMs").is_some(),
        "{listed:#}"
    );
    assert!(listed["result"].get("nextCursor").is_none(), "{listed:#}");

    // No input to deliver: tasks/update says so.
    let update = post(
        &daemon,
        &daemon.token,
        "tasks/update",
        json!({"taskId": task_id, "inputResponses": {}}),
        true,
    );
    assert_eq!(update["error"]["code"], -32602, "{update:#}");
    assert!(
        update["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("tasks/get")),
        "{update:#}"
    );

    // An id never issued, and this token's id asked by another token: the same words.
    let unknown = post(
        &daemon,
        &daemon.token,
        "tasks/get",
        json!({"taskId": "everything:no-such-task"}),
        true,
    );
    let unknown = not_found_reason(&unknown, "everything:no-such-task");
    let minted = daemon.call("mintToken", json!({"label": "another host"}));
    let other = minted["token"].as_str().expect("a token");
    for method in ["tasks/get", "tasks/cancel"] {
        let refused = post(&daemon, other, method, json!({"taskId": task_id}), true);
        assert_eq!(not_found_reason(&refused, &task_id), unknown, "{method}");
    }
    let others = post(&daemon, other, "tasks/list", json!({}), true);
    assert_eq!(others["result"]["tasks"], json!([]), "{others:#}");
}

#[test]
fn a_host_without_the_extension_is_told_what_to_declare() {
    let daemon = Daemon::start(json!({"mcpServers": {"everything": everything_stdio()}}));
    let refused = post(
        &daemon,
        &daemon.token,
        "tools/call",
        json!({"name": "everything__simulate-research-query", "arguments": {"topic": "x"}}),
        false,
    );
    assert_eq!(refused["error"]["code"], -32021, "{refused:#}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"][TASKS],
        json!({}),
        "{refused:#}"
    );
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("runs only as a task") && message.contains("clientCapabilities"),
        "{message}"
    );
    let get = post(
        &daemon,
        &daemon.token,
        "tasks/get",
        json!({"taskId": "everything:1"}),
        false,
    );
    assert_eq!(get["error"]["code"], -32021, "{get:#}");
    // A tool that is no task answers as before, with or without the extension.
    for declares in [false, true] {
        let echoed = post(
            &daemon,
            &daemon.token,
            "tools/call",
            json!({"name": "everything__echo", "arguments": {"message": "plain"}}),
            declares,
        );
        assert_eq!(echoed["result"]["resultType"], "complete", "{echoed:#}");
        assert_eq!(
            echoed["result"]["content"][0]["text"], "Echo: plain",
            "{echoed:#}"
        );
    }
}

#[test]
fn progressive_call_tool_waits_for_a_task_only_tool() {
    let daemon = Daemon::start(json!({"mcpServers": {"everything": everything_stdio()}}));
    let progressive = |name: &str, arguments: Value| {
        post_to(
            &daemon,
            "/mcp?mode=progressive",
            &daemon.token,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
            true,
        )
    };
    let tool = "everything__simulate-research-query";
    let described = progressive("describe_tool", json!({"tool": tool}));
    assert_ne!(described["result"]["isError"], true, "{described:#}");
    let called = progressive(
        "call_write_tool",
        json!({"tool": tool, "arguments": {"topic": "meta-tools"}}),
    );
    let result = &called["result"];
    assert_eq!(result["resultType"], "complete", "{called:#}");
    assert_ne!(result["isError"], true, "{called:#}");
    assert!(
        result.to_string().contains("Research Report: meta-tools"),
        "{called:#}"
    );
}

/// A daemon with the 2026-only test server as `modern`, once it is ready.
fn modern_daemon() -> Daemon {
    let server = example_bin("stateless_server");
    let daemon = Daemon::start(json!({"mcpServers": {"modern": {"command": server}}}));
    daemon.wait_servers_ready(&["modern"], WAIT);
    daemon
}

/// The 2026 server's own account of its tasks' statuses, by its task ids (a plain call).
fn server_task_log(daemon: &Daemon) -> Value {
    let logged = post(
        daemon,
        &daemon.token,
        "tools/call",
        json!({"name": "modern__task_log", "arguments": {}}),
        false,
    );
    logged["result"]["structuredContent"]["tasks"].clone()
}

/// A call of `tool` by a host with the extension; the handle's task id.
fn start_task(daemon: &Daemon, tool: &str, arguments: Value) -> String {
    let created = post(
        daemon,
        &daemon.token,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
        true,
    );
    let handle = &created["result"];
    assert_eq!(handle["resultType"], "task", "{created:#}");
    assert_eq!(handle["status"], "working", "{created:#}");
    handle["taskId"].as_str().expect("a task id").to_owned()
}

#[test]
fn a_2026_host_runs_a_2026_servers_task_through_the_gateway() {
    let daemon = modern_daemon();
    let discover = post(&daemon, &daemon.token, "server/discover", json!({}), true);
    assert_eq!(
        discover["result"]["capabilities"]["extensions"][TASKS],
        json!({}),
        "{discover:#}"
    );

    // Success: the handle at once, the result once the server's task completed.
    let summed = start_task(
        &daemon,
        "modern__slow_sum",
        json!({"a": 1, "b": 2, "ms": 50}),
    );
    assert!(summed.starts_with("modern:run-"), "{summed}");
    let done = wait_for_status(&daemon, &summed, "completed");
    assert_eq!(done["result"]["structuredContent"]["sum"], 3.0, "{done:#}");
    assert_eq!(done["result"]["content"][0]["text"], "3", "{done:#}");
    assert_eq!(server_task_log(&daemon)["task-1"], "completed");

    // Cancel: acknowledged, and the server's own task cancelled (by the pool's tasks/cancel).
    let waiting = start_task(&daemon, "modern__wait_forever", json!({}));
    eventually_some(WAIT, || {
        (server_task_log(&daemon)["task-2"] == "working").then_some(())
    })
    .expect("the server started the second task");
    let cancelled = post(
        &daemon,
        &daemon.token,
        "tasks/cancel",
        json!({"taskId": waiting}),
        true,
    );
    assert_eq!(
        cancelled["result"],
        json!({"resultType": "complete"}),
        "{cancelled:#}"
    );
    wait_for_status(&daemon, &waiting, "cancelled");
    eventually_some(WAIT, || {
        (server_task_log(&daemon)["task-2"] == "cancelled").then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "not cancelled at the server: {:#}",
            server_task_log(&daemon)
        )
    });
    // A task that ended cannot be cancelled again.
    let again = post(
        &daemon,
        &daemon.token,
        "tasks/cancel",
        json!({"taskId": waiting}),
        true,
    );
    assert_eq!(again["error"]["code"], -32602, "{again:#}");

    // A failing task: its error with the failed status.
    let failing = start_task(&daemon, "modern__failing_task", json!({}));
    let failed = wait_for_status(&daemon, &failing, "failed");
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("the task failed on purpose"), "{failed:#}");

    // Listed for the token, oldest first; nothing for another token, whose asking for an id
    // of this one is answered as for an id never issued.
    let listed = post(&daemon, &daemon.token, "tasks/list", json!({}), true);
    let statuses: Vec<(&str, &str)> = listed["result"]["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter_map(|task| Some((task["taskId"].as_str()?, task["status"].as_str()?)))
        .collect();
    assert_eq!(
        statuses,
        [
            (summed.as_str(), "completed"),
            (waiting.as_str(), "cancelled"),
            (failing.as_str(), "failed")
        ],
        "{listed:#}"
    );
    let unknown = post(
        &daemon,
        &daemon.token,
        "tasks/get",
        json!({"taskId": "modern:run-999"}),
        true,
    );
    let unknown = not_found_reason(&unknown, "modern:run-999");
    let minted = daemon.call("mintToken", json!({"label": "another host"}));
    let other = minted["token"].as_str().expect("a token");
    for method in ["tasks/get", "tasks/cancel"] {
        let refused = post(&daemon, other, method, json!({"taskId": summed}), true);
        assert_eq!(not_found_reason(&refused, &summed), unknown, "{method}");
    }
    let others = post(&daemon, other, "tasks/list", json!({}), true);
    assert_eq!(others["result"]["tasks"], json!([]), "{others:#}");

    // Without the extension: one blocking call, the pool following the server's task.
    let plain = post(
        &daemon,
        &daemon.token,
        "tools/call",
        json!({"name": "modern__slow_sum", "arguments": {"a": 2, "b": 3, "ms": 20}}),
        false,
    );
    assert_eq!(plain["result"]["resultType"], "complete", "{plain:#}");
    assert_eq!(
        plain["result"]["structuredContent"]["sum"], 5.0,
        "{plain:#}"
    );
}

/// Runs rmcp's 2026-era client (`stateless_host`, `--tasks` or not) against `/mcp` with `calls`;
/// its JSON report.
fn rmcp_host(daemon: &Daemon, tasks: bool, calls: &[(&str, Value)]) -> Value {
    let mut command = std::process::Command::new(bin_dir().join("examples").join("stateless_host"));
    command
        .arg(format!("http://127.0.0.1:{}/mcp", daemon.port))
        .arg(&daemon.token);
    rmcp_host_report(command, tasks, calls)
}

/// The same host talking through `tool-cli mcp` over stdio, launched with the environment
/// that finds `daemon`.
fn rmcp_host_over_stdio(daemon: &Daemon, calls: &[(&str, Value)]) -> Value {
    let client = daemon.client_command();
    let mut command = std::process::Command::new(bin_dir().join("examples").join("stateless_host"));
    command.arg("stdio").arg(client.get_program());
    for (name, value) in client.get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    rmcp_host_report(command, true, calls)
}

fn rmcp_host_report(
    mut command: std::process::Command,
    tasks: bool,
    calls: &[(&str, Value)],
) -> Value {
    if tasks {
        command.arg("--tasks");
    }
    command.args(
        calls
            .iter()
            .map(|(tool, arguments)| format!("{tool}={arguments}")),
    );
    let output = tool_cli_tests::run_with_timeout(command, WAIT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the host failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|_| panic!("not a report: {stdout}"))
}

#[test]
fn rmcps_client_follows_the_gateways_tasks_of_both_eras() {
    let server = example_bin("stateless_server");
    let daemon = Daemon::start(json!({"mcpServers": {
        "everything": everything_stdio(),
        "modern": {"command": server},
    }}));
    eventually_some(WAIT, || {
        let servers = daemon.call("listServers", Value::Null);
        let ready = servers["servers"]
            .as_array()?
            .iter()
            .all(|s| s["state"] == "ready");
        ready.then_some(())
    })
    .expect("both servers became ready");
    let report = rmcp_host(
        &daemon,
        true,
        &[
            (
                "everything__simulate-research-query",
                json!({"topic": "rmcp"}),
            ),
            ("modern__slow_sum", json!({"a": 4, "b": 5, "ms": 30})),
            ("cancel:modern__wait_forever", json!({})),
            ("everything__echo", json!({"message": "at once"})),
        ],
    );
    let calls = report["calls"].as_array().expect("calls");
    let research = &calls[0];
    assert!(
        research["task"]["taskId"]
            .as_str()
            .is_some_and(|id| id.starts_with("everything:")),
        "{research:#}"
    );
    assert_eq!(research["final"]["status"], "completed", "{research:#}");
    assert!(
        research["final"]["result"]
            .to_string()
            .contains("Research Report: rmcp"),
        "{research:#}"
    );
    let summed = &calls[1];
    assert!(
        summed["task"]["taskId"]
            .as_str()
            .is_some_and(|id| id.starts_with("modern:run-")),
        "{summed:#}"
    );
    assert_eq!(summed["final"]["status"], "completed", "{summed:#}");
    assert_eq!(summed["final"]["result"]["structuredContent"]["sum"], 9.0);
    let cancelled = &calls[2];
    assert!(cancelled["cancel"].get("error").is_none(), "{cancelled:#}");
    assert_eq!(cancelled["final"]["status"], "cancelled", "{cancelled:#}");
    assert_eq!(
        calls[3]["content"][0]["text"], "Echo: at once",
        "{report:#}"
    );

    // The same through `tool-cli mcp` over stdio, as a host launches it.
    let relayed = rmcp_host_over_stdio(
        &daemon,
        &[("modern__slow_sum", json!({"a": 1, "b": 1, "ms": 10}))],
    );
    let relayed = &relayed["calls"][0];
    assert_eq!(relayed["final"]["status"], "completed", "{relayed:#}");
    assert_eq!(relayed["final"]["result"]["structuredContent"]["sum"], 2.0);

    // Without the extension: the task-only tool is refused, the plain one answered.
    let plain = rmcp_host(
        &daemon,
        false,
        &[
            ("everything__simulate-research-query", json!({"topic": "x"})),
            ("everything__echo", json!({"message": "plain"})),
        ],
    );
    let refused = plain["calls"][0]["error"].as_str().unwrap_or_default();
    assert!(refused.contains("runs only as a task"), "{plain:#}");
    assert_eq!(plain["calls"][1]["content"][0]["text"], "Echo: plain");
}

#[test]
fn a_2025_sessions_task_list_takes_the_gateways_cursor() {
    let daemon = Daemon::start(json!({"mcpServers": {"everything": everything_stdio()}}));
    let session = daemon.open_mcp_session();
    let in_session = |id: u32, method: &str, params: Value| {
        let answer = daemon.post_mcp(
            &[("Mcp-Session-Id", session.as_str())],
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        mcp_answer(&answer.body)
    };
    let created = in_session(
        2,
        "tools/call",
        json!({"name": "everything__simulate-research-query",
            "arguments": {"topic": "paging"}, "task": {"ttl": 60000}}),
    );
    let task_id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created:#}"))
        .to_owned();
    let first = in_session(3, "tasks/list", json!({}));
    assert_eq!(
        first["result"]["tasks"][0]["taskId"],
        task_id.as_str(),
        "{first:#}"
    );
    assert!(first["result"].get("nextCursor").is_none(), "{first:#}");
    let rest = in_session(4, "tasks/list", json!({"cursor": task_id}));
    assert_eq!(rest["result"]["tasks"], json!([]), "{rest:#}");
    let stale = in_session(5, "tasks/list", json!({"cursor": "everything:gone"}));
    assert_eq!(stale["error"]["code"], -32602, "{stale:#}");
    assert!(
        stale["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("without a cursor")),
        "{stale:#}"
    );
    let number = in_session(6, "tasks/list", json!({"cursor": 3}));
    assert_eq!(number["error"]["code"], -32602, "{number:#}");
    assert!(
        number["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("nextCursor")),
        "{number:#}"
    );
    let cancelled = in_session(7, "tasks/cancel", json!({"taskId": task_id}));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled:#}");
}
