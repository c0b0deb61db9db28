//! In-process daemon tests: the production `server::run` and `Pool` on `127.0.0.1:0`, driven
//! over real loopback HTTP, with real MCP servers as child processes (the bundled demo server
//! and the fault-injection fixture).
//!
//! Unlike the end-to-end tests these see the daemon's internals (the pool after shutdown), and
//! they start in milliseconds, so they cover the request path's edge cases.

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::oneshot;
use tool_cli_daemon::auth::{Token, TokenStore};
use tool_cli_daemon::config::{self, ConfigSource};
use tool_cli_daemon::pool::{Pool, PoolOptions};
use tool_cli_daemon::provider::ToolProvider;
use tool_cli_daemon::server::{Listener, ServeOptions};
use tool_cli_daemon::services::Services;
use tool_cli_tests::{eventually, http_post, live_processes_in_group, parse_response};

struct InProcess {
    port: u16,
    token: String,
    pool: Arc<Pool>,
    shutdown: Mutex<Option<oneshot::Sender<()>>>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
    _dir: tempfile::TempDir,
}

fn fault_server() -> PathBuf {
    tool_cli_tests::bin_dir().join("tool-cli-fault-server")
}

impl InProcess {
    /// Starts a daemon whose servers are given as `mcpServers` JSON; `{dir}` in a string is
    /// replaced by a fresh temp dir.
    async fn start(servers: Value) -> Arc<InProcess> {
        InProcess::start_with(servers, PoolOptions::default()).await
    }

    /// [`InProcess::start`] with pool options of the test's choosing (fast restart schedules).
    async fn start_with(servers: Value, options: PoolOptions) -> Arc<InProcess> {
        let dir = tempfile::tempdir().unwrap();
        let text = json!({ "mcpServers": servers })
            .to_string()
            .replace("{dir}", dir.path().to_str().unwrap());
        let config = config::parse(&text, ConfigSource::File("test.json".into()), &|_| None)
            .expect("test config is valid");
        let pool = Pool::new(&config, options);
        pool.start().await;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let token = Token::generate();
        let services = Services::new(
            Arc::clone(&pool) as Arc<dyn ToolProvider>,
            Arc::new(TokenStore::new(token.clone())),
        );
        let (shutdown, stop) = oneshot::channel::<()>();
        let served = tokio::spawn(tool_cli_daemon::server::run(
            Listener::Tcp(listener),
            services,
            async {
                let _ = stop.await;
            },
            ServeOptions {
                grace: Duration::from_secs(5),
                ..ServeOptions::default()
            },
        ));
        Arc::new(InProcess {
            port,
            token: token.expose().to_owned(),
            pool,
            shutdown: Mutex::new(Some(shutdown)),
            served,
            _dir: dir,
        })
    }

    async fn post(&self, body: Vec<u8>, token: Option<String>) -> (u16, Vec<u8>) {
        let port = self.port;
        tokio::task::spawn_blocking(move || {
            let auth = token.map(|t| format!("Bearer {t}"));
            let headers: Vec<(&str, &str)> = auth
                .as_deref()
                .map(|a| vec![("Authorization", a)])
                .unwrap_or_default();
            http_post(port, "/", &headers, &body)
        })
        .await
        .unwrap()
    }

    async fn rpc(&self, method: &str, params: Value) -> Value {
        self.rpc_as(&self.token, method, params).await
    }

    /// [`InProcess::rpc`] with another token (a minted one).
    async fn rpc_as(&self, token: &str, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (status, body) = self
            .post(body.to_string().into_bytes(), Some(token.to_owned()))
            .await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        serde_json::from_slice(&body).unwrap()
    }

    /// The state `listServers` gives the first server.
    async fn first_state(&self) -> Value {
        self.rpc("listServers", json!({})).await["result"]["servers"][0]["state"].clone()
    }

    /// Waits (polling, up to `limit`) until the first server is in `state`.
    async fn wait_for_state(&self, state: &str, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < deadline {
            if self.first_state().await == state {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    fn begin_shutdown(&self) {
        if let Some(shutdown) = self.shutdown.lock().unwrap().take() {
            let _ = shutdown.send(());
        }
    }

    /// Stops serving (draining in-flight requests), then closes the pool.
    async fn stop(self: Arc<Self>) {
        self.begin_shutdown();
        let this = Arc::into_inner(self).expect("no request still holds the daemon");
        this.served.await.unwrap().unwrap();
        this.pool.shutdown().await;
    }
}

fn demo() -> Value {
    json!({
        "command": env!("CARGO_BIN_EXE_tool-cli-daemon"),
        "args": ["demo-server", "--db", "{dir}/demo.sqlite"]
    })
}

fn fault(args: &[&str]) -> Value {
    json!({ "command": fault_server(), "args": args })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_need_the_token_and_get_one_answer_each() {
    let daemon = InProcess::start(json!({ "demo": demo() })).await;
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"getBridgeInfo"}"#.to_vec();

    let (status, reply) = daemon.post(body.clone(), None).await;
    assert_eq!(
        (status, reply.as_slice()),
        (401, &br#"{"error":"Unauthorized"}"#[..])
    );
    let (status, _) = daemon.post(body.clone(), Some("f".repeat(64))).await;
    assert_eq!(status, 401);
    let (status, reply) = daemon.post(body, Some(daemon.token.clone())).await;
    assert_eq!(status, 200);
    assert_eq!(
        parse_response(&reply).result.unwrap()["bridgeProtocol"]["name"],
        "tool-cli-bridge"
    );

    // A batch gets one answer per request, each with its own id.
    let batch = json!([
        {"jsonrpc": "2.0", "id": "a", "method": "listServers"},
        {"jsonrpc": "2.0", "id": "b", "method": "nope"},
        {"jsonrpc": "2.0", "id": "c", "method": "listTools", "params": {"server": "demo"}},
    ]);
    let (_, reply) = daemon
        .post(batch.to_string().into_bytes(), Some(daemon.token.clone()))
        .await;
    let replies: Vec<Value> = serde_json::from_slice(&reply).unwrap();
    let mut ids: Vec<&str> = replies.iter().map(|r| r["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["a", "b", "c"]);
    let unknown = replies.iter().find(|r| r["id"] == "b").unwrap();
    assert_eq!(unknown["error"]["code"], -32601);

    // Batches are capped.
    let huge: Vec<Value> = (0..101)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "getBridgeInfo"}))
        .collect();
    let (_, reply) = daemon
        .post(
            Value::from(huge).to_string().into_bytes(),
            Some(daemon.token.clone()),
        )
        .await;
    let reply: Value = serde_json::from_slice(&reply).unwrap();
    assert!(
        reply["error"]["message"].as_str().unwrap().contains("atch"),
        "{reply}"
    );

    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_server_answers_through_the_pipeline() {
    let daemon = InProcess::start(json!({ "demo": demo() })).await;
    let reply = daemon
        .rpc(
            "callTool",
            json!({"server": "demo", "tool": "sql_query",
                   "arguments": {"sql": "SELECT count(*) AS n FROM customers"}}),
        )
        .await;
    assert_eq!(reply["result"]["structuredContent"]["rows"][0]["n"], 50);

    let reply = daemon
        .rpc(
            "callTool",
            json!({"server": "demo", "tool": "sql_query", "arguments": {"sql": 1, "bogus": true}}),
        )
        .await;
    assert_eq!(reply["error"]["code"], -32602);
    assert_eq!(reply["error"]["data"]["kind"], "invalidArguments");
    let paths: Vec<&str> = reply["error"]["data"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"/sql"), "{paths:?}");
    assert!(paths.contains(&""), "{paths:?}");
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_to_one_server_are_pipelined_not_serialized() {
    let daemon = InProcess::start(json!({ "fault": fault(&[]) })).await;

    // A call that never answers is in flight while 50 others complete.
    let hanging = {
        let daemon = Arc::clone(&daemon);
        tokio::spawn(async move {
            daemon
                .rpc(
                    "callTool",
                    json!({"server": "fault", "tool": "hang", "arguments": {}, "timeoutMs": 3000}),
                )
                .await
        })
    };
    let mut calls = Vec::new();
    for i in 0..50 {
        let daemon = Arc::clone(&daemon);
        calls.push(tokio::spawn(async move {
            let nonce = format!("nonce-{i}");
            let reply = daemon
                .rpc(
                    "callTool",
                    json!({"server": "fault", "tool": "echo", "arguments": {"nonce": nonce}}),
                )
                .await;
            (nonce, reply)
        }));
    }
    for call in calls {
        let (nonce, reply) = call.await.unwrap();
        assert_eq!(
            reply["result"]["structuredContent"]["nonce"], nonce,
            "{reply}"
        );
    }
    assert!(
        !hanging.is_finished(),
        "the hanging call cannot have been answered"
    );
    // It ends with its own timeout, not with the others.
    let reply = hanging.await.unwrap();
    assert_eq!(reply["error"]["code"], -32002);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_cancels_upstream_and_the_server_keeps_serving() {
    let record = tempfile::NamedTempFile::new().unwrap();
    let record_path = record.path().to_str().unwrap().to_owned();
    let daemon = InProcess::start(json!({ "fault": fault(&["--record", &record_path]) })).await;

    let reply = daemon
        .rpc(
            "callTool",
            // Long enough that the call surely reaches the server first on a loaded machine (a
            // deadline that passes before sending has nothing to cancel upstream).
            json!({"server": "fault", "tool": "hang", "arguments": {}, "timeoutMs": 1500}),
        )
        .await;
    assert_eq!(reply["error"]["code"], -32002, "{reply}");
    assert_eq!(reply["error"]["data"]["timeoutMs"], 1500);

    // The server got the call and then its cancellation, naming the same request id.
    let recorded = || -> Vec<Value> {
        std::fs::read_to_string(record.path())
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    assert!(eventually(Duration::from_secs(30), || recorded()
        .iter()
        .any(|m| m["method"] == "notifications/cancelled")));
    let recorded = recorded();
    let call = recorded
        .iter()
        .find(|m| m["method"] == "tools/call" && m["params"]["name"] == "hang")
        .expect("the hang call reached the server");
    let cancel = recorded
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .unwrap();
    assert_eq!(cancel["params"]["requestId"], call["id"]);

    let reply = daemon
        .rpc(
            "callTool",
            json!({"server": "fault", "tool": "echo", "arguments": {"nonce": "after"}}),
        )
        .await;
    assert_eq!(reply["result"]["structuredContent"]["nonce"], "after");
    daemon.stop().await;
}

/// Issue 7, item 1: a server that exits while a process it detached (its own session, inheriting
/// stdout) keeps the pipe open used to stay `ready` with every call timing out. Its exit status is
/// enough: pending calls fail at once and the server is restarted. This pool has no subreaper
/// (that is the daemon binary's), so the detached process lives on here and the guard kills it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_leaving_its_stdout_held_open_is_noticed_and_restarted() {
    let marker = tool_cli_tests::unique_marker("held-stdout");
    let _cleanup = tool_cli_tests::KillMarkedOnDrop(marker.clone());
    let daemon = InProcess::start(json!({ "detacher": fault(&[]) })).await;
    let pending = {
        let daemon = Arc::clone(&daemon);
        tokio::spawn(async move {
            daemon
                .rpc(
                    "callTool",
                    json!({"server": "detacher", "tool": "hang", "arguments": {}, "timeoutMs": 120000}),
                )
                .await
        })
    };
    let reply = daemon
        .rpc(
            "callTool",
            json!({"server": "detacher", "tool": "detach",
                   "arguments": {"marker": marker, "exit": 0}, "timeoutMs": 120000}),
        )
        .await;
    for reply in [reply, pending.await.unwrap()] {
        let data = &reply["error"]["data"];
        // Before the fix: a timeout after two minutes, the server `ready` all along.
        assert_eq!(data["kind"], "serverExited", "{reply}");
        let exit = data["exit"].as_str().unwrap();
        assert!(
            exit.contains("still holds its stdout open") && exit.contains("exit code 0"),
            "{reply}"
        );
    }
    assert!(
        !tool_cli_tests::processes_with_marker(&marker).is_empty(),
        "the detached process is what held the pipe open"
    );
    // `health` would say `degraded` while the two failures are in the breaker's window; the
    // pool's own state is in `listServers`.
    let restarted = eventually(Duration::from_secs(30), || {
        let (servers, health) = tokio::task::block_in_place(|| {
            let runtime = tokio::runtime::Handle::current();
            (
                runtime.block_on(daemon.rpc("listServers", json!({}))),
                runtime.block_on(daemon.rpc("health", json!({}))),
            )
        });
        servers["result"]["servers"][0]["state"] == "ready"
            && health["result"]["servers"][0]["restarts"] == 1
    });
    assert!(
        restarted,
        "the server was restarted once and is ready again"
    );
    let reply = daemon
        .rpc(
            "callTool",
            json!({"server": "detacher", "tool": "echo", "arguments": {"nonce": "back"}}),
        )
        .await;
    assert_eq!(
        reply["result"]["structuredContent"]["nonce"], "back",
        "{reply}"
    );
    daemon.stop().await;
}

/// Pool options that park a server after its first failed restart, and probe a parked server
/// every `probe`.
fn park_quickly(probe: Duration) -> PoolOptions {
    use tool_cli_daemon::resilience::backoff::Backoff;
    use tool_cli_daemon::resilience::restart::RestartPolicy;
    let fast = |delay| Backoff {
        base: delay,
        factor: 1.0,
        max: delay,
    };
    PoolOptions {
        restart: RestartPolicy {
            backoff: fast(Duration::from_millis(10)),
            max_restarts: 1,
            probe: fast(probe),
            ..RestartPolicy::default()
        },
        ..PoolOptions::default()
    }
}

/// Issue 7, item 9: a parked server used to stay `down` until the daemon restarted. Now it is
/// probed on a slow schedule (30 s doubling to 10 min by default; 100 ms here), and comes back by
/// itself once its cause is fixed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_server_is_probed_and_comes_back_once_it_can_start() {
    let dir = tempfile::tempdir().unwrap();
    let fixed = dir.path().join("fixed");
    let daemon = InProcess::start_with(
        json!({ "late": fault(&["--fail-start-unless", fixed.to_str().unwrap()]) }),
        park_quickly(Duration::from_millis(100)),
    )
    .await;
    assert!(
        daemon.wait_for_state("down", Duration::from_secs(30)).await,
        "parked: {}",
        daemon.rpc("listServers", json!({})).await
    );
    let servers = daemon.rpc("listServers", json!({})).await;
    let why = servers["result"]["servers"][0]["error"].as_str().unwrap();
    assert!(why.contains("trying again in"), "{why}");
    std::fs::write(&fixed, "").unwrap();
    assert!(
        daemon
            .wait_for_state("ready", Duration::from_secs(30))
            .await,
        "a probe brought it back: {}",
        daemon.rpc("listServers", json!({})).await
    );
    let reply = daemon
        .rpc(
            "callTool",
            json!({"server": "late", "tool": "echo", "arguments": {"nonce": "probed"}}),
        )
        .await;
    assert_eq!(
        reply["result"]["structuredContent"]["nonce"], "probed",
        "{reply}"
    );
    daemon.stop().await;
}

/// Issue 7, item 9: `restartServer` (owner token only) tries a parked server at once, whatever
/// its probe schedule says, and reports where it stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_server_brings_a_parked_server_back_at_once_for_the_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let fixed = dir.path().join("fixed");
    // A probe an hour away: only the explicit restart can bring it back within the test.
    let daemon = InProcess::start_with(
        json!({ "late": fault(&["--fail-start-unless", fixed.to_str().unwrap()]) }),
        park_quickly(Duration::from_secs(3600)),
    )
    .await;
    assert!(daemon.wait_for_state("down", Duration::from_secs(30)).await);

    // Still broken: the restart is tried, and it says so.
    let reply = daemon.rpc("restartServer", json!({"server": "late"})).await;
    let result = &reply["result"];
    assert_eq!(result["server"], "late", "{reply}");
    assert_ne!(result["state"], "ready", "{reply}");
    assert!(
        result["error"].as_str().unwrap().contains("exit code 1"),
        "{reply}"
    );

    // A scoped token may not restart anything.
    let minted = daemon.rpc("mintToken", json!({"servers": ["late"]})).await;
    let scoped = minted["result"]["token"].as_str().unwrap().to_owned();
    let refused = daemon
        .rpc_as(&scoped, "restartServer", json!({"server": "late"}))
        .await;
    assert_eq!(
        refused["error"]["data"]["kind"], "notPermitted",
        "{refused}"
    );

    std::fs::write(&fixed, "").unwrap();
    let reply = daemon.rpc("restartServer", json!({"server": "late"})).await;
    assert_eq!(reply["result"]["state"], "ready", "{reply}");
    assert!(
        reply["result"]["restarts"].as_u64().unwrap() >= 2,
        "{reply}"
    );
    assert_eq!(daemon.first_state().await, "ready");

    let unknown = daemon.rpc("restartServer", json!({"server": "nope"})).await;
    assert_eq!(
        unknown["error"]["data"]["kind"], "unknownServer",
        "{unknown}"
    );
    daemon.stop().await;
}

/// Taking out a parked server (what `removeServer` and `reloadConfig` do) used to wait forever:
/// the parked supervisor stopped without ever saying `exited`, so the reload never answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_server_can_be_taken_out_and_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let never = dir.path().join("never");
    // A probe an hour away: the supervisor sits parked for the whole test.
    let daemon = InProcess::start_with(
        json!({ "late": fault(&["--fail-start-unless", never.to_str().unwrap()]) }),
        park_quickly(Duration::from_secs(3600)),
    )
    .await;
    assert!(daemon.wait_for_state("down", Duration::from_secs(30)).await);
    let server = daemon.pool.take_out("late").expect("it is configured");
    // A guard against a hang, not a timing assertion: retiring takes milliseconds.
    let retired = tokio::time::timeout(
        Duration::from_secs(60),
        daemon.pool.retire(server, Duration::from_secs(1)),
    )
    .await
    .expect("retiring a parked server finishes");
    assert_eq!(retired.abandoned_calls, 0);
    // This harness's orchestrator has no server manager to follow the pool, so it still lists
    // the server it knew: stopped, no longer parked.
    assert_eq!(daemon.first_state().await, "exited");
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_fails_pending_calls_with_the_exit_and_stderr() {
    let record = tempfile::NamedTempFile::new().unwrap();
    let record_path = record.path().to_str().unwrap().to_owned();
    let daemon = InProcess::start(json!({
        "fault": fault(&["--record", &record_path]),
        "demo": demo(),
    }))
    .await;
    let pending = {
        let daemon = Arc::clone(&daemon);
        tokio::spawn(async move {
            daemon
                .rpc(
                    "callTool",
                    json!({"server": "fault", "tool": "hang", "arguments": {}}),
                )
                .await
        })
    };
    // Crash the server only once it has the hanging call: an event, not a delay. Sent earlier,
    // the crash could overtake it and the hang would meet a restarting server instead.
    let record_file = record.path().to_owned();
    let received = tokio::task::spawn_blocking(move || {
        eventually(Duration::from_secs(30), || {
            tool_cli_tests::count_recorded(&record_file, "tools/call", Some("hang")) == 1
        })
    })
    .await
    .unwrap();
    assert!(received, "the hanging call never reached the server");
    let reply = daemon
        .rpc(
            "callTool",
            json!({"server": "fault", "tool": "crash", "arguments": {"code": 7}}),
        )
        .await;
    for reply in [reply, pending.await.unwrap()] {
        let data = &reply["error"]["data"];
        assert_eq!(data["kind"], "serverExited", "{reply}");
        assert_eq!(data["server"], "fault");
        assert!(
            data["exit"].as_str().unwrap().contains("exit code 7"),
            "{reply}"
        );
        assert!(
            data["stderrTail"]
                .as_array()
                .unwrap()
                .iter()
                .any(|line| line.as_str().unwrap().contains("crashing with 7")),
            "{reply}"
        );
    }
    // The other server is unaffected.
    let reply = daemon
        .rpc(
            "callTool",
            json!({"server": "demo", "tool": "sql_query", "arguments": {"sql": "SELECT 1 AS one"}}),
        )
        .await;
    assert_eq!(reply["result"]["structuredContent"]["rows"][0]["one"], 1);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dying_servers_stderr_reaches_only_a_caller_that_had_it_alone() {
    let record = tempfile::NamedTempFile::new().unwrap();
    let record_path = record.path().to_str().unwrap().to_owned();
    let daemon = InProcess::start(json!({"fault": fault(&["--record", &record_path])})).await;
    // Another caller (a token of its own) has a call in flight when the owner's call kills the
    // server: the server's last words may be about either call, so neither gets them.
    let minted = daemon.rpc("mintToken", json!({"servers": ["fault"]})).await;
    let other = minted["result"]["token"].as_str().unwrap().to_owned();
    let pending = {
        let daemon = Arc::clone(&daemon);
        tokio::spawn(async move {
            daemon
                .rpc_as(
                    &other,
                    "callTool",
                    json!({"server": "fault", "tool": "hang", "arguments": {}}),
                )
                .await
        })
    };
    let record_file = record.path().to_owned();
    let received = tokio::task::spawn_blocking(move || {
        eventually(Duration::from_secs(30), || {
            tool_cli_tests::count_recorded(&record_file, "tools/call", Some("hang")) == 1
        })
    })
    .await
    .unwrap();
    assert!(received, "the other caller's call never reached the server");
    let reply = daemon
        .rpc(
            "callTool",
            json!({"server": "fault", "tool": "crash", "arguments": {"code": 7}}),
        )
        .await;
    for reply in [reply, pending.await.unwrap()] {
        let data = &reply["error"]["data"];
        assert_eq!(data["kind"], "serverExited", "{reply}");
        assert!(
            data["exit"].as_str().unwrap().contains("exit code 7"),
            "how it ended is everyone's: {reply}"
        );
        assert_eq!(
            data["stderrTail"],
            json!([]),
            "what it said is not: {reply}"
        );
    }
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_calls_in_flight_finish_then_stops_every_child_group() {
    let record = tempfile::NamedTempFile::new().unwrap();
    let record_path = record.path().to_str().unwrap().to_owned();
    let daemon = InProcess::start(json!({
        "fault": fault(&[
            "--ignore-sigterm",
            "--ignore-stdin-eof",
            "--spawn-grandchild-at-start",
            "--record",
            &record_path,
        ]),
    }))
    .await;
    let env = daemon
        .rpc(
            "callTool",
            json!({"server": "fault", "tool": "env", "arguments": {}}),
        )
        .await;
    let pgid = env["result"]["structuredContent"]["pgid"].as_i64().unwrap() as i32;
    assert!(
        live_processes_in_group(pgid).len() >= 2,
        "server and grandchild run"
    );

    let slow = {
        let daemon = Arc::clone(&daemon);
        tokio::spawn(async move {
            daemon
                .rpc(
                    "callTool",
                    json!({"server": "fault", "tool": "sleep", "arguments": {"ms": 700}}),
                )
                .await
        })
    };
    // Ask the daemon to stop once the server has the call: an event, not a delay.
    let record_file = record.path().to_owned();
    let received = tokio::task::spawn_blocking(move || {
        eventually(Duration::from_secs(30), || {
            tool_cli_tests::count_recorded(&record_file, "tools/call", Some("sleep")) == 1
        })
    })
    .await
    .unwrap();
    assert!(received, "the call never reached the server");
    daemon.begin_shutdown();
    let reply = slow.await.unwrap();
    assert_eq!(
        reply["result"]["content"][0]["text"], "slept 700",
        "{reply}"
    );
    daemon.stop().await;
    // The server ignores both stdin EOF and SIGTERM: only the SIGKILL to its group stops it,
    // and its grandchild with it.
    assert!(
        live_processes_in_group(pgid).is_empty(),
        "left: {:?}",
        live_processes_in_group(pgid)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_follows_every_page_of_the_tool_list() {
    let record = tempfile::NamedTempFile::new().unwrap();
    let record_path = record.path().to_str().unwrap().to_owned();
    let daemon = InProcess::start(json!({
        "paged": fault(&["--tools-page-size", "4", "--extra-tools", "20", "--record", &record_path]),
    }))
    .await;
    let reply = daemon.rpc("listTools", json!({"server": "paged"})).await;
    let names: Vec<&str> = reply["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    // The fixture's 16 tools plus 20 extras, 4 per page: 9 pages, every tool once, in order.
    assert_eq!(names.len(), 36, "{names:?}");
    assert_eq!(names.first(), Some(&"echo"));
    assert_eq!(names.last(), Some(&"extra_19"));
    let pages = std::fs::read_to_string(record.path())
        .unwrap()
        .lines()
        .filter(|line| line.contains("\"tools/list\""))
        .count();
    assert_eq!(pages, 9);

    // A tool from the last page is callable.
    let reply = daemon
        .rpc(
            "callTool",
            json!({"server": "paged", "tool": "extra_19", "arguments": {"nonce": "last"}}),
        )
        .await;
    assert_eq!(
        reply["result"]["structuredContent"]["nonce"], "last",
        "{reply}"
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_timeout_bounds_retries_too() {
    let record = tempfile::NamedTempFile::new().unwrap();
    let record_path = record.path().to_str().unwrap().to_owned();
    let daemon = InProcess::start(json!({ "fault": fault(&["--record", &record_path]) })).await;
    // `sleep` is read-only, so a timed-out attempt could be retried; but the 400 ms belong to
    // the whole call, so the first attempt uses them all and nothing is sent again.
    let reply = daemon
        .rpc(
            "callTool",
            json!({"server": "fault", "tool": "sleep", "arguments": {"ms": 5000}, "timeoutMs": 400}),
        )
        .await;
    assert_eq!(reply["error"]["code"], -32002, "{reply}");
    assert_eq!(reply["error"]["data"]["timeoutMs"], 400);
    let sent = std::fs::read_to_string(record.path())
        .unwrap()
        .lines()
        .filter(|line| line.contains("\"tools/call\""))
        .count();
    assert_eq!(sent, 1, "the call was sent once");
    daemon.stop().await;
}

// ---------------------------------------------------------------------------------------------
// runAgent (issue 24): a run outlives its request and ends with its final event; a refused
// request takes nothing; run slots are shared per token, and the owner always has room.

/// Sends `body` on a connection of its own and holds it open, unread, until `release` is
/// dropped or sent to; then closes it. The daemon sees a client that went away.
fn held_request(port: u16, token: &str, body: &Value) -> std::sync::mpsc::Sender<()> {
    use std::io::Write as _;
    let (release, released) = std::sync::mpsc::channel::<()>();
    let body = body.to_string();
    let token = token.to_owned();
    std::thread::spawn(move || {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let request = format!(
            "POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
             Authorization: Bearer {token}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let _ = released.recv();
        drop(stream);
    });
    release
}

/// The run's events so far (waiting up to `wait_ms` for one after `after`), or `None` when the
/// daemon does not know the run (yet).
async fn events_of(
    daemon: &InProcess,
    token: &str,
    run_id: &str,
    after: u64,
    wait_ms: u64,
) -> Option<Value> {
    let reply = daemon
        .rpc_as(
            token,
            "agentEvents",
            json!({"runId": run_id, "after": after, "waitMs": wait_ms}),
        )
        .await;
    reply.get("result").cloned()
}

/// Waits until the run has emitted an event of `kind`.
async fn wait_for_event(daemon: &InProcess, token: &str, run_id: &str, kind: &str) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while tokio::time::Instant::now() < deadline {
        if let Some(page) = events_of(daemon, token, run_id, 0, 2000).await
            && page["events"]
                .as_array()
                .unwrap()
                .iter()
                .any(|event| event["type"] == kind)
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_client_goes_away_is_cancelled_and_still_ends_with_its_final_event() {
    let daemon = InProcess::start(json!({"fault": fault(&[])})).await;
    let token = daemon.token.clone();
    let release = held_request(
        daemon.port,
        &token,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "runAgent",
                "params": {"task": "hang", "runId": "gone-1"}}),
    );
    // The run is in its tool call, which never answers.
    assert!(wait_for_event(&daemon, &token, "gone-1", "tool_call").await);
    drop(release);
    // The request went away: the run is cancelled and ends the way every run ends.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut page = Value::Null;
    while tokio::time::Instant::now() < deadline {
        page = events_of(&daemon, &token, "gone-1", 0, 5000).await.unwrap();
        if page["done"] == json!(true) {
            break;
        }
    }
    assert_eq!(page["done"], json!(true), "{page:#}");
    let events = page["events"].as_array().unwrap();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final", "{page:#}");
    assert_eq!(last["status"], "halted");
    assert_eq!(last["haltReason"], "cancelled");
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_run_takes_no_run_id_and_touches_no_session() {
    let daemon = InProcess::start(json!({"fault": fault(&[])})).await;
    for bad in [
        json!({"task": "Echo hello", "runId": "again", "sessionId": "refused-session", "backend": "nope"}),
        json!({"task": "", "runId": "again", "sessionId": "refused-session"}),
        json!({"task": "Echo hello", "runId": "again", "sessionId": "refused-session", "maxSteps": 0}),
        json!({"task": "Echo hello", "runId": "again", "sessionId": "refused-session", "model": "gpt-4o"}),
    ] {
        let reply = daemon.rpc("runAgent", bad.clone()).await;
        assert_eq!(reply["error"]["code"], -32602, "{bad}: {reply}");
    }
    let sessions = daemon.rpc("listSessions", json!({})).await;
    assert!(
        !sessions.to_string().contains("refused-session"),
        "a refused run touched its session: {sessions}"
    );
    // The id is still free: a good request under it runs.
    let reply = daemon
        .rpc("runAgent", json!({"task": "Echo hello", "runId": "again"}))
        .await;
    assert_eq!(reply["result"]["runId"], "again", "{reply}");
    assert!(reply.get("error").is_none(), "{reply}");
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_token_runs_within_its_share_and_the_owner_always_has_room() {
    let daemon = InProcess::start(json!({"fault": fault(&[])})).await;
    let minted = daemon
        .rpc(
            "mintToken",
            json!({"servers": ["fault"], "label": "sub-agent"}),
        )
        .await;
    let sub = minted["result"]["token"]
        .as_str()
        .expect("a token")
        .to_owned();
    // Sixteen runs of the other token, each stuck in a call that never answers.
    let mut held = Vec::new();
    for i in 0..16 {
        let run_id = format!("sub-{i}");
        held.push(held_request(
            daemon.port,
            &sub,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "runAgent",
                    "params": {"task": "hang", "runId": run_id}}),
        ));
    }
    for i in 0..16 {
        assert!(
            wait_for_event(&daemon, &sub, &format!("sub-{i}"), "started").await,
            "run sub-{i} never started"
        );
    }
    // The seventeenth is refused, saying why.
    let refused = daemon
        .rpc_as(&sub, "runAgent", json!({"task": "hang", "runId": "sub-16"}))
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("16 runs going"), "{message}");
    // The owner still runs.
    let owner = daemon
        .rpc(
            "runAgent",
            json!({"task": "Echo hello", "runId": "owner-1"}),
        )
        .await;
    assert!(owner.get("error").is_none(), "{owner}");
    assert_eq!(owner["result"]["runId"], "owner-1");
    // Cleanup: every held run is cancelled and ends.
    drop(held);
    for i in 0..16 {
        assert!(
            wait_for_event(&daemon, &sub, &format!("sub-{i}"), "final").await,
            "run sub-{i} never ended"
        );
    }
    daemon.stop().await;
}

/// The issue: `listTools {"server": "*"}` was refused although docs/protocol.md says it lists
/// every visible tool, as without `server`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_tools_of_server_star_lists_every_server_s_tools() {
    let daemon = InProcess::start(json!({ "demo": demo(), "fault": fault(&[]) })).await;
    let star = daemon.rpc("listTools", json!({"server": "*"})).await;
    let all = daemon.rpc("listTools", json!({})).await;
    assert_eq!(star["result"], all["result"], "{star}");
    assert_eq!(star["result"]["server"], "*");
    let servers: std::collections::BTreeSet<&str> = star["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["server"].as_str().unwrap())
        .collect();
    assert_eq!(servers, ["demo", "fault"].into());
    daemon.stop().await;
}

/// The issue: a batch over 100 requests was answered -32010, the code docs/protocol.md gives
/// `authFailed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_over_the_limit_is_an_invalid_request_saying_the_limit() {
    let daemon = InProcess::start(json!({ "demo": demo() })).await;
    let huge: Vec<Value> = (0..101)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "getBridgeInfo"}))
        .collect();
    let (status, reply) = daemon
        .post(
            Value::from(huge).to_string().into_bytes(),
            Some(daemon.token.clone()),
        )
        .await;
    assert_eq!(status, 200);
    let reply: Value = serde_json::from_slice(&reply).unwrap();
    assert_eq!(reply["id"], Value::Null, "{reply}");
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("101 requests") && message.contains("at most 100"),
        "{message}"
    );
    daemon.stop().await;
}

/// The issue (compatibility with the reference bridge): a non-object `arguments` got -32602
/// without `validationErrors`, which the reference gives (ajv's "must be object").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_object_arguments_are_invalid_arguments_in_both_formats() {
    let daemon = InProcess::start(json!({ "demo": demo() })).await;
    for arguments in [json!([1, 2]), json!("select 1"), json!(7)] {
        let reply = daemon
            .rpc(
                "callTool",
                json!({"server": "demo", "tool": "sql_query", "arguments": arguments}),
            )
            .await;
        let error = &reply["error"];
        assert_eq!(error["code"], -32602, "{reply}");
        assert_eq!(error["data"]["kind"], "invalidArguments", "{reply}");
        assert_eq!(error["data"]["server"], "demo");
        assert_eq!(error["data"]["tool"], "sql_query");
        assert_eq!(
            error["data"]["validationErrors"],
            json!([{"instancePath": "", "schemaPath": "#/type", "keyword": "type",
                    "params": {"type": "object"}, "message": "must be object"}]),
            "{reply}"
        );
        assert_eq!(error["data"]["errors"][0]["path"], "");
    }
    // An unknown tool is still that, whatever the arguments.
    let reply = daemon
        .rpc(
            "callTool",
            json!({"server": "demo", "tool": "nope", "arguments": [1]}),
        )
        .await;
    assert_eq!(reply["error"]["data"]["kind"], "unknownTool", "{reply}");
    daemon.stop().await;
}

/// The issue (compatibility): our 401 had an empty body; the reference answers
/// `{"error":"Unauthorized"}`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_gets_the_reference_s_401_body() {
    let daemon = InProcess::start(json!({ "demo": demo() })).await;
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"getBridgeInfo"}"#.to_vec();
    for token in [None, Some("f".repeat(64))] {
        let (status, reply) = daemon.post(body.clone(), token).await;
        assert_eq!(status, 401);
        let reply: Value = serde_json::from_slice(&reply).expect("a JSON body");
        assert_eq!(reply, json!({"error": "Unauthorized"}));
    }
    daemon.stop().await;
}

/// The issue: `alternatives: true` on a misspelt tool (`echoo`) listed no alternative while the
/// error itself suggested `echo`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_misspelt_tool_s_alternatives_start_with_the_tool_it_was_meant_to_be() {
    let daemon = InProcess::start(json!({ "fault": fault(&[]) })).await;
    for server in [Some("fault"), None] {
        let mut params = json!({"tool": "echoo", "arguments": {}, "alternatives": true});
        if let Some(server) = server {
            params["server"] = json!(server);
        }
        let reply = daemon.rpc("callTool", params).await;
        let error = &reply["error"];
        assert_eq!(error["data"]["kind"], "unknownTool", "{reply}");
        assert!(
            error["message"].as_str().unwrap().contains("echo"),
            "{reply}"
        );
        let first = &error["data"]["alternatives"][0];
        assert_eq!(
            (first["server"].as_str(), first["tool"].as_str()),
            (Some("fault"), Some("echo")),
            "{reply}"
        );
    }
    daemon.stop().await;
}
