//! Resilience of the pool against the fault-injection fixture (`tool-cli-fault-server`): restart
//! supervision, crashes mid-call, timeouts, retries, the circuit breaker, the bulkhead, the
//! degradation cache, catalog freshness, message bounds, process hygiene, the child environment
//! and the `health` method. Every test drives real processes and asserts on what the caller gets
//! back and on what reached the server (the fixture's `--record` file), never on how long it took,
//! except where a measured time is the only way to tell "failed at once" from "timed out".
//!
//! Scenario → test:
//! - restart supervision, backoff, parked `down`:
//!   `a_server_that_exits_after_initialize_is_restarted_with_backoff_then_parked_down`
//! - crash mid-call (`serverExited` at once, not re-sent, reaped, restarted):
//!   `a_crash_mid_call_fails_at_once_and_the_server_is_restarted`
//! - retries (a read-only call during a restart; `_meta["tool-cli/attempts"]`):
//!   `a_read_only_call_during_a_restart_is_retried_and_succeeds`,
//!   `a_read_only_call_cut_by_a_crash_is_retried_on_the_restarted_server`
//! - timeouts (`-32002`, `notifications/cancelled`, `inFlight` back to 0):
//!   `a_timed_out_call_is_cancelled_upstream_and_frees_its_slot`
//! - circuit breaker (open, nothing sent, half-open probe closes it):
//!   `repeated_timeouts_open_the_circuit_and_a_probe_closes_it`,
//!   `tool_errors_and_invalid_arguments_do_not_count_against_the_breaker`
//! - bulkhead (`-32004 busy`): `a_full_bulkhead_refuses_the_overflow_call_with_busy`
//! - degradation cache: `a_cached_read_only_result_is_served_while_the_circuit_is_open`
//! - catalog freshness: `tools_list_changed_refreshes_the_catalog`
//! - bounds: `an_answer_over_the_size_limit_fails_that_call_alone_and_the_server_keeps_serving`,
//!   `a_ten_megabyte_result_arrives_intact_while_another_server_answers`,
//!   `garbage_lines_on_stdout_are_ignored`,
//!   `a_line_that_never_ends_closes_the_connection_and_the_server_restarts`,
//!   `a_stderr_flood_completes_and_memory_stays_bounded`
//! - process hygiene:
//!   `sigterm_with_200_concurrent_calls_answers_each_accepted_call_once_and_leaves_no_process`,
//!   `sigkill_of_the_daemon_takes_its_servers_and_their_grandchildren_down`,
//!   `a_restarted_daemon_replaces_a_stale_runtime_file`
//! - child environment: `a_server_sees_only_allow_listed_and_configured_variables`
//! - `health`: `health_reports_every_server_with_counters_latency_and_breaker`

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;
use tool_cli_protocol::methods::{
    HealthResult, ListServersResult, ServerHealth, ServerState, ServerSummary,
};
use tool_cli_protocol::{ErrorData, ErrorObject, Request, RequestId, code, meta};
use tool_cli_tests::{
    Daemon, DaemonOptions, SHUTDOWN_TIMEOUT, children_of, count_recorded, error_data, eventually,
    fault_server, fault_server_recording, live_processes_in_group, parent_of, parse_response,
    process_is_alive, recorded_messages, text_content, try_http_post, vm_rss_kib,
};

/// How long a restarted server may take to be `ready` again: the first backoff is at most
/// 500 ms, a retry adds a little, and the fixture starts in milliseconds.
const RESTART_TIMEOUT: Duration = Duration::from_secs(15);

/// A generous ceiling on the daemon's resident memory after moving tens of megabytes through it.
const RSS_BOUND_KIB: u64 = 200 * 1024;

// ---------------------------------------------------------------------------------------------
// Helpers.

fn servers(daemon: &Daemon) -> ListServersResult {
    serde_json::from_value(daemon.call("listServers", Value::Null)).expect("listServers result")
}

fn summary(daemon: &Daemon, server: &str) -> ServerSummary {
    servers(daemon)
        .servers
        .into_iter()
        .find(|summary| summary.name == server)
        .unwrap_or_else(|| panic!("{server} is not listed"))
}

fn health(daemon: &Daemon) -> HealthResult {
    serde_json::from_value(daemon.call("health", Value::Null)).expect("health result")
}

fn server_health(daemon: &Daemon, server: &str) -> ServerHealth {
    health(daemon)
        .servers
        .into_iter()
        .find(|health| health.name == server)
        .unwrap_or_else(|| panic!("{server} is not in health"))
}

/// Waits until `server` is `ready`, returning every state it was seen in on the way.
fn wait_until_ready(daemon: &Daemon, server: &str, must_have_left_ready: bool) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let ready = eventually(RESTART_TIMEOUT, || {
        let state = summary(daemon, server).state;
        if seen.last().map(String::as_str) != Some(state.as_str()) {
            seen.push(state.as_str().to_owned());
        }
        let left_ready = seen.iter().any(|state| state != "ready");
        state == ServerState::Ready && (left_ready || !must_have_left_ready)
    });
    assert!(
        ready,
        "{server} was not ready again within {RESTART_TIMEOUT:?}; states seen: {seen:?}; \
         now: {:?}",
        summary(daemon, server)
    );
    seen
}

/// `callTool` with the given extra params (e.g. `timeoutMs`), returning the outcome and how long
/// the daemon took to answer.
fn timed_call(
    daemon: &Daemon,
    server: &str,
    tool: &str,
    arguments: Value,
    extra: Value,
) -> (Result<Value, ErrorObject>, Duration) {
    let mut params = json!({"server": server, "tool": tool, "arguments": arguments});
    if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
        params.extend(extra.clone());
    }
    let started = Instant::now();
    let outcome = daemon.rpc("callTool", Some(params));
    (outcome, started.elapsed())
}

fn attempts(result: &Value) -> Option<u64> {
    result["_meta"][meta::ATTEMPTS].as_u64()
}

fn echo(daemon: &Daemon, server: &str, nonce: &str) -> Value {
    let result = daemon.call_tool(server, "echo", json!({"nonce": nonce}));
    assert_eq!(text_content(&result), nonce, "{result:#}");
    result
}

/// The `pid` and `pgid` of a fault server, from its `env` tool.
fn pid_and_group(daemon: &Daemon, server: &str) -> (i32, i32) {
    let result = daemon.call_tool(server, "env", json!({}));
    let structured = &result["structuredContent"];
    let pid = structured["pid"].as_i64().expect("env reports a pid") as i32;
    let pgid = structured["pgid"].as_i64().expect("env reports a pgid") as i32;
    (pid, pgid)
}

/// True once `pid` is gone or no longer an unreaped child of `parent`.
fn reaped_by(pid: i32, parent: u32) -> bool {
    parent_of(pid) != Some(parent as i32)
}

/// Calls that each outlive their timeout until the breaker is open (≥ 5 calls in the window,
/// all failing): five suffice on a quiet machine, but a call whose 100 ms were spent before it
/// was sent (a loaded machine) fails without telling the breaker, so keep going (at most 30)
/// until `health` says it opened. Each must fail with a timeout, or with `circuitOpen`.
fn open_the_breaker(daemon: &Daemon, server: &str) -> Vec<i32> {
    let mut codes = Vec::new();
    while server_health(daemon, server).breaker.state != "open" {
        assert!(
            codes.len() < 30,
            "the breaker never opened: codes {codes:?}"
        );
        let (outcome, _) = timed_call(
            daemon,
            server,
            "sleep",
            json!({"ms": 2000}),
            json!({"timeoutMs": 100}),
        );
        let error = outcome.expect_err("a 2 s sleep with a 100 ms timeout fails");
        assert!(
            error.code == code::TIMEOUT || error.code == code::CIRCUIT_OPEN,
            "expected a timeout or an open circuit: {error:?}"
        );
        codes.push(error.code);
    }
    codes
}

/// Kills the listed process groups when dropped, so a failing test leaves no orphan behind after
/// its daemon was killed (the harness only cleans up the children of a live daemon).
struct KillGroupsOnDrop(Vec<i32>);

impl Drop for KillGroupsOnDrop {
    fn drop(&mut self) {
        for &pgid in &self.0 {
            if pgid > 1 && !live_processes_in_group(pgid).is_empty() {
                // SAFETY: kill(2) has no memory-safety preconditions.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Restart supervision.

#[test]
fn a_server_that_exits_after_initialize_is_restarted_with_backoff_then_parked_down() {
    let record = tool_cli_tests::scratch();
    let record_path = record.path().join("quitter.jsonl");
    let daemon = Daemon::start(json!({"mcpServers": {
        "quitter": fault_server_recording(&record_path, &["--exit-after-initialize", "5"]),
        "steady": fault_server(&[]),
    }}));

    let started = Instant::now();
    let mut states: Vec<String> = Vec::new();
    let mut steady_answered_during_restarts = false;
    let parked = eventually(Duration::from_secs(60), || {
        let quitter = summary(&daemon, "quitter");
        if states.last().map(String::as_str) != Some(quitter.state.as_str()) {
            states.push(quitter.state.as_str().to_owned());
        }
        if quitter.state == ServerState::Restarting && !steady_answered_during_restarts {
            echo(&daemon, "steady", "during the restarts");
            steady_answered_during_restarts = true;
        }
        quitter.state == ServerState::Down
    });
    let elapsed = started.elapsed();
    let spawns = count_recorded(&record_path, "initialize", None);
    println!(
        "exit-after-initialize: down after {elapsed:?}, {spawns} spawns, states seen {states:?}"
    );
    assert!(
        parked,
        "quitter was not parked down within 60 s ({spawns} spawns so far); states seen: \
         {states:?}; now: {:?}",
        summary(&daemon, "quitter")
    );
    assert!(
        states.iter().any(|state| state == "restarting"),
        "quitter went through `restarting` before `down`: {states:?}"
    );
    assert!(
        (2..=11).contains(&spawns),
        "quitter was spawned {spawns} times: at least one restart, at most 1 + 10 restarts"
    );

    let quitter = summary(&daemon, "quitter");
    let why = quitter.error.as_deref().unwrap_or_default();
    assert!(!why.is_empty(), "a down server says why: {quitter:?}");
    assert_eq!(quitter.tool_count, 0, "{quitter:?}");
    let quitter_health = server_health(&daemon, "quitter");
    assert_eq!(
        quitter_health.state,
        ServerState::Down,
        "{quitter_health:?}"
    );
    assert!(
        quitter_health.restarts >= 1 && quitter_health.restarts <= 10,
        "restarts counted: {quitter_health:?}"
    );

    // Parked means parked: no process is left running for it, only `steady`'s.
    let (steady_pid, _) = pid_and_group(&daemon, "steady");
    // Each server runs under the daemon's subreaper (`tool-cli-daemon subreaper`), so the
    // fault servers are the daemon's children or grandchildren.
    let fault_children = || -> Vec<i32> {
        daemon
            .children()
            .into_iter()
            .flat_map(|(pid, _)| {
                std::iter::once(pid).chain(children_of(pid).into_iter().map(|(child, _)| child))
            })
            .filter(|pid| is_fault_server(*pid))
            .collect()
    };
    assert!(
        eventually(Duration::from_secs(5), || fault_children() == [steady_pid]),
        "a process is still running for the parked server: fault-server children {:?}, \
         steady is {steady_pid}",
        fault_children()
    );

    let error = daemon.call_err(
        "callTool",
        json!({"server": "quitter", "tool": "echo", "arguments": {"nonce": "x"}}),
    );
    assert_eq!(error.code, code::SERVER_UNAVAILABLE, "{error:?}");
    match error_data(&error) {
        ErrorData::ServerUnavailable { server, state, .. } => {
            assert_eq!(server, "quitter");
            assert_eq!(state, "down");
        }
        other => panic!("expected serverUnavailable, got {other:?}"),
    }

    // The other server never noticed.
    echo(&daemon, "steady", "after the parking");
    let steady = server_health(&daemon, "steady");
    assert_eq!(steady.state, ServerState::Ready, "{steady:?}");
    assert_eq!(steady.restarts, 0, "{steady:?}");
}

/// Whether `pid` runs the fault-server binary (the daemon may have other children, e.g. a reaper).
fn is_fault_server(pid: i32) -> bool {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .map(|exe| exe.ends_with("tool-cli-fault-server"))
        .unwrap_or(false)
}

// ---------------------------------------------------------------------------------------------
// Crashes mid-call and retries.

/// A daemon with a recorded fault server `flaky` (plus `extra_flaky_config` members in its config
/// entry) and a plain one `steady`. Returns the record file and the temp dir holding it.
fn flaky_and_steady(extra_flaky_config: Value) -> (Daemon, PathBuf, TempDir) {
    let dir = tool_cli_tests::scratch();
    let record = dir.path().join("flaky.jsonl");
    let mut flaky = fault_server_recording(&record, &[]);
    if let (Some(flaky), Some(extra)) = (flaky.as_object_mut(), extra_flaky_config.as_object()) {
        flaky.extend(extra.clone());
    }
    let daemon =
        Daemon::start(json!({"mcpServers": {"flaky": flaky, "steady": fault_server(&[])}}));
    (daemon, record, dir)
}

#[test]
fn a_crash_mid_call_fails_at_once_and_the_server_is_restarted() {
    let (daemon, record, _dir) = flaky_and_steady(json!({}));
    echo(&daemon, "flaky", "before");
    let (old_pid, old_group) = pid_and_group(&daemon, "flaky");

    let (outcome, elapsed) = timed_call(
        &daemon,
        "flaky",
        "crash",
        json!({"code": 7, "after_ms": 100}),
        json!({"timeoutMs": 30_000}),
    );
    println!("crash mid-call: answered after {elapsed:?} (call timeout 30 s)");
    let error = outcome.expect_err("a call whose server crashes fails");
    assert_eq!(error.code, code::SERVER_UNAVAILABLE, "{error:?}");
    match error_data(&error) {
        ErrorData::ServerExited {
            server,
            exit,
            stderr_tail,
        } => {
            assert_eq!(server, "flaky");
            assert!(exit.contains("exit code 7"), "exit status: {exit:?}");
            assert!(
                stderr_tail
                    .iter()
                    .any(|line| line.contains("crashing with 7")),
                "stderr tail: {stderr_tail:?}"
            );
        }
        other => panic!("expected serverExited, got {other:?}"),
    }
    // At once, not when the 30 s timeout ran out: a timeout would be `-32002 timeout`, and the
    // error above is the exit itself. The call was not retried (crash is not idempotent).
    assert_eq!(
        count_recorded(&record, "tools/call", Some("crash")),
        1,
        "the crashing call was sent exactly once"
    );

    // The other server is unaffected, even while flaky restarts.
    echo(&daemon, "steady", "meanwhile");

    let states = wait_until_ready(&daemon, "flaky", true);
    assert!(
        states.iter().any(|state| state == "restarting"),
        "flaky went through `restarting`: {states:?}"
    );
    let (new_pid, _) = pid_and_group(&daemon, "flaky");
    assert_ne!(new_pid, old_pid, "a new process serves flaky");
    assert!(
        eventually(Duration::from_secs(5), || reaped_by(old_pid, daemon.pid())),
        "the crashed child {old_pid} was not reaped by the daemon"
    );
    assert!(
        live_processes_in_group(old_group).is_empty(),
        "the crashed child's group {old_group} is empty"
    );
    // `crash` is not read-only or idempotent: it reached the server once and was never re-sent.
    let crashes = count_recorded(&record, "tools/call", Some("crash"));
    assert_eq!(crashes, 1, "crash was sent {crashes} times");
    let flaky = server_health(&daemon, "flaky");
    assert!(flaky.restarts >= 1, "{flaky:?}");
    // Connected again; `health` may still call it degraded while the crash is a recent failure.
    assert!(
        matches!(flaky.state, ServerState::Ready | ServerState::Degraded),
        "{flaky:?}"
    );
    echo(&daemon, "flaky", "after");
}

#[test]
fn a_read_only_call_during_a_restart_is_retried_and_succeeds() {
    let (daemon, _record, _dir) = flaky_and_steady(json!({}));
    let first = echo(&daemon, "flaky", "normal");
    assert_eq!(
        attempts(&first),
        Some(1),
        "a normal call takes one attempt: {first:#}"
    );

    let crash = daemon.call_err(
        "callTool",
        json!({"server": "flaky", "tool": "crash", "arguments": {"code": 9}}),
    );
    assert_eq!(crash.code, code::SERVER_UNAVAILABLE, "{crash:?}");
    // Straight away, while flaky is restarting: `echo` is read-only, so the daemon may retry it.
    let state_before = summary(&daemon, "flaky").state;
    let (outcome, elapsed) = timed_call(
        &daemon,
        "flaky",
        "echo",
        json!({"nonce": "during the restart"}),
        json!({}),
    );
    let result = outcome.unwrap_or_else(|error| {
        panic!("echo right after a crash (state {state_before:?}) failed: {error:?}")
    });
    assert_eq!(text_content(&result), "during the restart");
    let taken = attempts(&result).unwrap_or_else(|| panic!("no attempts in _meta: {result:#}"));
    println!(
        "read-only call during restart: state {state_before:?} when sent, {taken} attempts, \
         answered after {elapsed:?}"
    );
    assert!(
        (1..=3).contains(&taken),
        "attempts within the retry budget: {taken}"
    );
}

#[test]
fn a_read_only_call_cut_by_a_crash_is_retried_on_the_restarted_server() {
    let (daemon, record, _dir) = flaky_and_steady(json!({}));
    echo(&daemon, "flaky", "before");
    let (result, crash) = thread::scope(|scope| {
        let sleeper = scope.spawn(|| {
            daemon.rpc(
                "callTool",
                Some(json!({"server": "flaky", "tool": "sleep", "arguments": {"ms": 1500}})),
            )
        });
        // Crash only once the sleep reached the server, so it is cut mid-call.
        assert!(
            eventually(Duration::from_secs(10), || count_recorded(
                &record,
                "tools/call",
                Some("sleep")
            ) == 1),
            "the sleep call never reached flaky"
        );
        let crash = daemon.call_err(
            "callTool",
            json!({"server": "flaky", "tool": "crash", "arguments": {"code": 3}}),
        );
        (sleeper.join().expect("caller thread"), crash)
    });
    assert_eq!(crash.code, code::SERVER_UNAVAILABLE, "{crash:?}");
    let result = result.unwrap_or_else(|error| {
        panic!("the read-only sleep cut by a crash was not retried: {error:?}")
    });
    assert_eq!(text_content(&result), "slept 1500");
    let taken = attempts(&result).unwrap_or_else(|| panic!("no attempts in _meta: {result:#}"));
    let sent = count_recorded(&record, "tools/call", Some("sleep"));
    println!("read-only call cut by a crash: {taken} attempts, sent {sent} times");
    assert!(
        (2..=3).contains(&taken),
        "a retried call reports its attempts: {taken}"
    );
    assert_eq!(
        sent, taken as usize,
        "each attempt reached a server exactly once"
    );
}

// ---------------------------------------------------------------------------------------------
// Timeouts.

#[test]
fn a_timed_out_call_is_cancelled_upstream_and_frees_its_slot() {
    let (daemon, record, _dir) = flaky_and_steady(json!({}));
    let (outcome, elapsed) = timed_call(
        &daemon,
        "flaky",
        "hang",
        json!({}),
        json!({"timeoutMs": 300}),
    );
    println!("timeout: hang with timeoutMs 300 answered after {elapsed:?}");
    let error = outcome.expect_err("a call that never answers times out");
    assert_eq!(error.code, code::TIMEOUT, "{error:?}");
    match error_data(&error) {
        ErrorData::Timeout {
            server,
            tool,
            timeout_ms,
        } => {
            assert_eq!((server.as_str(), tool.as_str()), ("flaky", "hang"));
            assert_eq!(timeout_ms, 300);
        }
        other => panic!("expected timeout, got {other:?}"),
    }

    let calls: Vec<Value> = recorded_messages(&record)
        .into_iter()
        .filter(|message| message["method"] == "tools/call" && message["params"]["name"] == "hang")
        .collect();
    assert_eq!(
        calls.len(),
        1,
        "hang is not read-only: sent once: {calls:?}"
    );
    let request_id = calls[0]["id"].clone();
    assert!(
        eventually(Duration::from_secs(5), || {
            recorded_messages(&record).iter().any(|message| {
                message["method"] == "notifications/cancelled"
                    && message["params"]["requestId"] == request_id
            })
        }),
        "no notifications/cancelled for request {request_id} reached the server; recorded: {:?}",
        recorded_messages(&record)
    );
    let flaky = server_health(&daemon, "flaky");
    assert_eq!(flaky.in_flight, 0, "{flaky:?}");
    assert_eq!(flaky.queued, 0, "{flaky:?}");
    echo(&daemon, "flaky", "still answering");
}

// ---------------------------------------------------------------------------------------------
// Circuit breaker.

#[test]
fn repeated_timeouts_open_the_circuit_and_a_probe_closes_it() {
    let (daemon, record, _dir) = flaky_and_steady(json!({}));
    let codes = open_the_breaker(&daemon, "flaky");
    let sent_before = count_recorded(&record, "tools/call", None);

    let (outcome, elapsed) = timed_call(
        &daemon,
        "flaky",
        "echo",
        json!({"nonce": "refused"}),
        json!({}),
    );
    println!("breaker: codes of the slow calls {codes:?}; refused call answered after {elapsed:?}");
    let error = outcome.expect_err("an open circuit refuses the call");
    assert_eq!(error.code, code::CIRCUIT_OPEN, "{error:?}");
    match error_data(&error) {
        ErrorData::CircuitOpen {
            server,
            retry_after_ms,
            ..
        } => {
            assert_eq!(server, "flaky");
            assert!(
                retry_after_ms <= 5_000,
                "retry after the 5 s cooldown at most: {retry_after_ms}"
            );
        }
        other => panic!("expected circuitOpen, got {other:?}"),
    }
    assert_eq!(
        count_recorded(&record, "tools/call", None),
        sent_before,
        "nothing is sent while the circuit is open"
    );
    let open = server_health(&daemon, "flaky");
    assert_eq!(open.breaker.state, "open", "{open:?}");
    assert_eq!(open.state, ServerState::CircuitOpen, "{open:?}");
    assert!(open.errors >= 1, "{open:?}");
    // Another server's breaker is its own.
    echo(&daemon, "steady", "unaffected");

    // After the cooldown one probe goes through; its success closes the circuit.
    let mut refusals = 0;
    let probed = eventually(Duration::from_secs(15), || {
        match daemon.rpc(
            "callTool",
            Some(json!({"server": "flaky", "tool": "echo", "arguments": {"nonce": "probe"}})),
        ) {
            Ok(result) => {
                assert_eq!(text_content(&result), "probe");
                true
            }
            Err(error) => {
                assert_eq!(
                    error.code,
                    code::CIRCUIT_OPEN,
                    "only circuitOpen while cooling down: {error:?}"
                );
                refusals += 1;
                false
            }
        }
    });
    println!("breaker: {refusals} refusals before the probe succeeded");
    assert!(probed, "no probe was let through within 15 s");
    let closed = server_health(&daemon, "flaky");
    assert_eq!(closed.breaker.state, "closed", "{closed:?}");
    let after = echo(&daemon, "flaky", "closed again");
    assert_eq!(attempts(&after), Some(1), "{after:#}");
}

#[test]
fn tool_errors_and_invalid_arguments_do_not_count_against_the_breaker() {
    let (daemon, _record, _dir) = flaky_and_steady(json!({}));
    for _ in 0..10 {
        let result = daemon.call_tool("flaky", "fail", json!({}));
        assert_eq!(result["isError"], true, "{result:#}");
        let error = daemon.call_err(
            "callTool",
            json!({"server": "flaky", "tool": "echo", "arguments": {"nonce": 5}}),
        );
        assert_eq!(error.code, code::INVALID_PARAMS, "{error:?}");
    }
    echo(&daemon, "flaky", "breaker closed");
    let flaky = server_health(&daemon, "flaky");
    println!(
        "breaker after 10 isError + 10 invalid: calls {}, errors {}, breaker {:?}",
        flaky.calls, flaky.errors, flaky.breaker
    );
    assert_eq!(flaky.breaker.state, "closed", "{flaky:?}");
    assert_eq!(flaky.errors, 0, "{flaky:?}");
    assert_eq!(flaky.state, ServerState::Ready, "{flaky:?}");
}

// ---------------------------------------------------------------------------------------------
// Bulkhead.

#[test]
fn a_full_bulkhead_refuses_the_overflow_call_with_busy() {
    let (daemon, record, _dir) = flaky_and_steady(json!({"maxConcurrent": 2, "maxQueued": 1}));
    let sleep = || {
        daemon.rpc(
            "callTool",
            Some(json!({"server": "flaky", "tool": "sleep", "arguments": {"ms": 1500}})),
        )
    };
    thread::scope(|scope| {
        let admitted: Vec<_> = (0..3).map(|_| scope.spawn(sleep)).collect();
        assert!(
            eventually(Duration::from_secs(10), || {
                let flaky = server_health(&daemon, "flaky");
                flaky.in_flight == 2 && flaky.queued == 1
            }),
            "two calls running and one queued: {:?}",
            server_health(&daemon, "flaky")
        );
        let (outcome, elapsed) =
            timed_call(&daemon, "flaky", "sleep", json!({"ms": 1500}), json!({}));
        // Ordering, not timing: the refusal came while every admitted call was still running.
        let none_finished = admitted.iter().all(|call| !call.is_finished());
        println!("bulkhead: the overflow call was refused after {elapsed:?}");
        let error = outcome.expect_err("the fourth call is refused");
        assert_eq!(error.code, code::BUSY, "{error:?}");
        match error_data(&error) {
            ErrorData::Busy {
                server,
                in_flight,
                queued,
                retry_after_ms,
            } => {
                assert_eq!(server, "flaky");
                assert_eq!((in_flight, queued), (2, 1));
                assert!(retry_after_ms > 0, "a retry hint is given");
            }
            other => panic!("expected busy, got {other:?}"),
        }
        assert!(
            none_finished,
            "busy was answered at once, not after waiting for a slot"
        );
        for call in admitted {
            let result = call
                .join()
                .expect("caller thread")
                .unwrap_or_else(|error| panic!("an admitted call failed: {error:?}"));
            assert_eq!(text_content(&result), "slept 1500");
        }
    });
    assert_eq!(
        count_recorded(&record, "tools/call", Some("sleep")),
        3,
        "the refused call was never sent"
    );
}

// ---------------------------------------------------------------------------------------------
// Degradation cache.

#[test]
fn a_cached_read_only_result_is_served_while_the_circuit_is_open() {
    let (daemon, record, _dir) = flaky_and_steady(json!({"cacheTtlMs": 60_000}));
    let fresh = echo(&daemon, "flaky", "cached");
    assert!(
        fresh["_meta"].get(meta::DEGRADED).is_none(),
        "a fresh result is not degraded: {fresh:#}"
    );
    open_the_breaker(&daemon, "flaky");
    let sent_before = count_recorded(&record, "tools/call", None);

    let served = daemon.call_tool("flaky", "echo", json!({"nonce": "cached"}));
    assert_eq!(text_content(&served), "cached", "{served:#}");
    let degraded = &served["_meta"][meta::DEGRADED];
    println!("degradation cache: served {degraded}");
    assert!(
        degraded["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "degraded says why: {served:#}"
    );
    assert!(
        degraded["ageMs"].as_u64().is_some(),
        "degraded says how old: {served:#}"
    );
    assert_eq!(
        count_recorded(&record, "tools/call", None),
        sent_before,
        "the cached answer did not reach the server"
    );

    // Other arguments were never cached: the open circuit shows through.
    let error = daemon.call_err(
        "callTool",
        json!({"server": "flaky", "tool": "echo", "arguments": {"nonce": "never seen"}}),
    );
    assert_eq!(error.code, code::CIRCUIT_OPEN, "{error:?}");
}

// ---------------------------------------------------------------------------------------------
// Catalog freshness.

fn tool_names(daemon: &Daemon, server: &str) -> BTreeSet<String> {
    let listed = daemon.call("listTools", json!({"server": server}));
    listed["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("listTools without tools: {listed:#}"))
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn tools_list_changed_refreshes_the_catalog() {
    let (daemon, record, _dir) = flaky_and_steady(json!({}));
    let before = tool_names(&daemon, "flaky");
    assert!(before.contains("fail") && !before.contains("new_tool"));
    let lists_before = count_recorded(&record, "tools/list", None);

    let changed = daemon.call_tool(
        "flaky",
        "change_tools",
        json!({"add": "new_tool", "remove": "fail"}),
    );
    assert_eq!(text_content(&changed), "changed");
    let mut last = before;
    assert!(
        eventually(Duration::from_secs(5), || {
            last = tool_names(&daemon, "flaky");
            last.contains("new_tool") && !last.contains("fail")
        }),
        "listTools did not catch up with the change: {last:?}"
    );

    let error = daemon.call_err(
        "callTool",
        json!({"server": "flaky", "tool": "fail", "arguments": {}}),
    );
    assert_eq!(error.code, code::INVALID_PARAMS, "{error:?}");
    match error_data(&error) {
        ErrorData::UnknownTool {
            tool, known_tools, ..
        } => {
            assert_eq!(tool, "fail");
            assert!(known_tools.iter().any(|known| known == "new_tool"));
        }
        other => panic!("expected unknownTool, got {other:?}"),
    }
    let result = daemon.call_tool("flaky", "new_tool", json!({"nonce": "fresh"}));
    assert_eq!(text_content(&result), "fresh");

    // A burst of changes ends with every change visible.
    for index in 0..5 {
        daemon.call_tool(
            "flaky",
            "change_tools",
            json!({"add": format!("burst_{index}")}),
        );
    }
    assert!(
        eventually(Duration::from_secs(5), || {
            last = tool_names(&daemon, "flaky");
            (0..5).all(|index| last.contains(&format!("burst_{index}")))
        }),
        "the burst's tools are not all listed: {last:?}"
    );
    let refreshes = count_recorded(&record, "tools/list", None) - lists_before;
    println!("catalog: 6 list_changed notifications caused {refreshes} tools/list refreshes");
}

// ---------------------------------------------------------------------------------------------
// Bounds.

/// A daemon with `flaky` and `steady` fault servers and a 1 MiB message limit.
fn daemon_with_one_mebibyte_limit() -> Daemon {
    Daemon::start_with(
        json!({"mcpServers": {"flaky": fault_server(&[]), "steady": fault_server(&[])}}),
        DaemonOptions {
            args: vec!["--max-message-bytes".into(), "1048576".into()],
            ..DaemonOptions::default()
        },
    )
}

fn assert_closed_for_size(error: &ErrorObject, limit: &str) {
    assert_eq!(error.code, code::SERVER_UNAVAILABLE, "{error:?}");
    match error_data(error) {
        ErrorData::ServerExited { server, exit, .. } => {
            assert_eq!(server, "flaky");
            assert!(
                exit.contains(limit) && exit.contains("without ending the line"),
                "the exit names the size limit: {exit:?}"
            );
        }
        other => panic!("expected serverExited, got {other:?}"),
    }
}

#[test]
fn an_answer_over_the_size_limit_fails_that_call_alone_and_the_server_keeps_serving() {
    let scratch = tool_cli_tests::scratch();
    let record = scratch.path().join("flaky.jsonl");
    let daemon = Daemon::start_with(
        json!({"mcpServers": {"flaky": fault_server_recording(&record, &[])}}),
        DaemonOptions {
            args: vec!["--max-message-bytes".into(), "1048576".into()],
            ..DaemonOptions::default()
        },
    );
    let (pid, _) = pid_and_group(&daemon, "flaky");
    // Another caller, with a token of its own, has a call in flight on the same server
    // throughout: a read-only call that answers once a partner joins it.
    let other = daemon.call("mintToken", json!({"servers": ["flaky"]}))["token"]
        .as_str()
        .expect("a minted token")
        .to_owned();
    thread::scope(|scope| {
        let waiting = scope.spawn(|| {
            daemon.rpc_as(
                &other,
                "callTool",
                Some(json!({"server": "flaky", "tool": "rendezvous",
                            "arguments": {"key": "oversized", "parties": 2}})),
            )
        });
        assert!(
            eventually(Duration::from_secs(10), || {
                count_recorded(&record, "tools/call", Some("rendezvous")) == 1
            }),
            "the other caller's call never reached the server"
        );
        // The direct path (the id first), and rmcp's path (a call that relays its events) with
        // the id last, as the TypeScript SDK writes it.
        for (arguments, extra) in [
            (json!({"bytes": 2_000_000}), json!({})),
            (
                json!({"bytes": 2_000_000, "id_last": true}),
                json!({"progress": true, "progressId": "oversized"}),
            ),
        ] {
            let (outcome, _) = timed_call(&daemon, "flaky", "huge", arguments.clone(), extra);
            let error = outcome.expect_err("an answer over the limit fails its call");
            assert_eq!(error.code, code::UPSTREAM_ERROR, "{error:?}");
            match error_data(&error) {
                ErrorData::ResultTooLarge {
                    server,
                    method,
                    bytes,
                    limit_bytes,
                    hint,
                } => {
                    assert_eq!((server.as_str(), method.as_str()), ("flaky", "huge"));
                    let bytes = bytes.expect("a skipped line's size is known");
                    assert!(
                        (2_000_000..2_000_200).contains(&bytes),
                        "{arguments}: {bytes}"
                    );
                    assert_eq!(limit_bytes, 1_048_576);
                    assert!(hint.contains("--max-message-bytes"), "{hint}");
                }
                other => panic!("{arguments}: expected resultTooLarge, got {other:?}"),
            }
            assert!(
                error.message.contains("only this call failed"),
                "{}",
                error.message
            );
        }
        // The call in flight all along is answered as soon as its partner arrives.
        let partner = daemon.call_tool(
            "flaky",
            "rendezvous",
            json!({"key": "oversized", "parties": 2}),
        );
        assert_eq!(text_content(&partner), "met 2");
        let waited = waiting
            .join()
            .expect("caller thread")
            .expect("the other caller's call succeeds");
        assert_eq!(text_content(&waited), "met 2");
    });
    // Each sent once, never retried; the same process, never restarted; no failure counted.
    assert_eq!(count_recorded(&record, "tools/call", Some("huge")), 2);
    assert_eq!(pid_and_group(&daemon, "flaky").0, pid, "the same process");
    let flaky = server_health(&daemon, "flaky");
    assert_eq!(flaky.restarts, 0, "{flaky:?}");
    assert_eq!(flaky.breaker.state, "closed", "{flaky:?}");
    echo(&daemon, "flaky", "still serving");
}

#[test]
fn a_ten_megabyte_result_arrives_intact_while_another_server_answers() {
    let daemon = Daemon::start(json!({"mcpServers": {
        "big": fault_server(&[]),
        "steady": fault_server(&[]),
    }}));
    let rss_before = vm_rss_kib(daemon.pid());
    let (huge, echoes_meanwhile) = thread::scope(|scope| {
        let huge = scope.spawn(|| {
            daemon.rpc(
                "callTool",
                Some(json!({"server": "big", "tool": "huge", "arguments": {"bytes": 10_000_000}})),
            )
        });
        let mut echoes = 0;
        while !huge.is_finished() || echoes == 0 {
            echo(&daemon, "steady", &format!("meanwhile {echoes}"));
            echoes += 1;
        }
        (huge.join().expect("caller thread"), echoes)
    });
    let result = huge.unwrap_or_else(|error| panic!("the 10 MB answer failed: {error:?}"));
    let text = text_content(&result);
    assert_eq!(text.len(), 10_000_000, "the text arrives whole");
    assert!(text.bytes().all(|byte| byte == b'a'), "and unaltered");
    let rss_after = vm_rss_kib(daemon.pid());
    println!(
        "10 MB result: {echoes_meanwhile} echo calls answered meanwhile; daemon VmRSS \
         {rss_before} KiB before, {rss_after} KiB after"
    );
    assert!(
        rss_after < RSS_BOUND_KIB,
        "daemon VmRSS {rss_after} KiB after a 10 MB result (before: {rss_before} KiB), \
         bound {RSS_BOUND_KIB} KiB"
    );
}

#[test]
fn garbage_lines_on_stdout_are_ignored() {
    let daemon = Daemon::start(json!({"mcpServers": {"noisy": fault_server(&["--banner"])}}));
    let result = daemon.call_tool("noisy", "garbage", json!({"lines": 5}));
    assert_eq!(text_content(&result), "ok");
    echo(&daemon, "noisy", "after the garbage");
    let noisy = server_health(&daemon, "noisy");
    assert_eq!(
        noisy.restarts, 0,
        "garbage is not a reason to restart: {noisy:?}"
    );
    assert_eq!(noisy.state, ServerState::Ready, "{noisy:?}");
}

#[test]
fn a_line_that_never_ends_closes_the_connection_and_the_server_restarts() {
    let daemon = daemon_with_one_mebibyte_limit();
    let (_, old_group) = pid_and_group(&daemon, "flaky");
    // An over-long line is skipped to its end; one past 64 times the limit is no answer but a
    // server that stopped writing lines.
    let (outcome, elapsed) = timed_call(
        &daemon,
        "flaky",
        "no_newline",
        json!({"bytes": 70_000_000}),
        json!({"timeoutMs": 30_000}),
    );
    println!("no newline: answered after {elapsed:?}");
    assert_closed_for_size(
        &outcome.expect_err("a line past the ceiling fails the call"),
        "1048576",
    );
    wait_until_ready(&daemon, "flaky", false);
    echo(&daemon, "flaky", "clean restart");
    assert!(
        eventually(Duration::from_secs(5), || live_processes_in_group(
            old_group
        )
        .is_empty()),
        "the old process group {old_group} was stopped"
    );
    echo(&daemon, "steady", "unaffected");
}

#[test]
fn a_stderr_flood_completes_and_memory_stays_bounded() {
    let daemon = Daemon::start(json!({"mcpServers": {"loud": fault_server(&[])}}));
    let rss_before = vm_rss_kib(daemon.pid());
    let result = daemon.call_tool("loud", "stderr_flood", json!({"bytes": 10_000_000}));
    assert_eq!(text_content(&result), "flooded 10000000");
    echo(&daemon, "loud", "after the flood");
    let rss_after = vm_rss_kib(daemon.pid());
    println!("stderr flood of 10 MB: daemon VmRSS {rss_before} KiB before, {rss_after} KiB after");
    assert!(
        rss_after < RSS_BOUND_KIB,
        "daemon VmRSS {rss_after} KiB after a 10 MB stderr flood (before: {rss_before} KiB), \
         bound {RSS_BOUND_KIB} KiB"
    );
}

// ---------------------------------------------------------------------------------------------
// Process hygiene.

/// What one raw HTTP exchange came to: the status and body, or why there was no answer.
type HttpOutcome = std::io::Result<(u16, Vec<u8>)>;

#[test]
fn sigterm_with_200_concurrent_calls_answers_each_accepted_call_once_and_leaves_no_process() {
    const CALLS: usize = 200;
    // 13 servers × the default 16 concurrent calls ≥ 200: every call can be running at once.
    const SERVERS: usize = 13;
    let scratch = tool_cli_tests::scratch();
    let records: Vec<PathBuf> = (0..SERVERS)
        .map(|index| scratch.path().join(format!("s{index}.jsonl")))
        .collect();
    let config: serde_json::Map<String, Value> = records
        .iter()
        .enumerate()
        .map(|(index, record)| (format!("s{index}"), fault_server_recording(record, &[])))
        .collect();
    let mut daemon = Daemon::start(json!({"mcpServers": config}));
    let children = daemon.children();
    let _cleanup = KillGroupsOnDrop(children.iter().map(|(_, pgid)| *pgid).collect());
    let (port, auth) = (daemon.port, format!("Bearer {}", daemon.token));

    let refused = AtomicUsize::new(0);
    let outcomes: Vec<(u64, HttpOutcome)> = thread::scope(|scope| {
        let calls: Vec<_> = (0..CALLS)
            .map(|index| {
                let (auth, refused) = (&auth, &refused);
                scope.spawn(move || {
                    let id = 10_000 + index as u64;
                    let request = Request::new(
                        id,
                        "callTool",
                        Some(
                            json!({"server": format!("s{}", index % SERVERS), "tool": "sleep",
                                    "arguments": {"ms": 1000}}),
                        ),
                    );
                    let body = serde_json::to_vec(&request).expect("serialize request");
                    let outcome =
                        try_http_post(port, "/", &[("Authorization", auth.as_str())], &body);
                    if matches!(outcome, Ok((429, _))) {
                        refused.fetch_add(1, Ordering::SeqCst);
                    }
                    (id, outcome)
                })
            })
            .collect();
        // Signal only once every call has either reached its server or been refused outright.
        let mut reached = 0;
        let settled = eventually(Duration::from_secs(20), || {
            reached = records
                .iter()
                .map(|record| count_recorded(record, "tools/call", Some("sleep")))
                .sum();
            reached + refused.load(Ordering::SeqCst) == CALLS
        });
        assert!(
            settled,
            "only {reached} calls reached a server and {} were refused",
            refused.load(Ordering::SeqCst)
        );
        println!(
            "sigterm: {reached} calls in flight at the servers, {} refused with 429, then SIGTERM",
            refused.load(Ordering::SeqCst)
        );
        daemon.signal(libc::SIGTERM);
        calls
            .into_iter()
            .map(|call| call.join().expect("caller thread"))
            .collect()
    });

    let mut answered = HashMap::new();
    let (mut slept, mut errors, mut refused_count) = (0, 0, 0);
    for (id, outcome) in outcomes {
        let (status, body) =
            outcome.unwrap_or_else(|err| panic!("call {id} got no HTTP answer: {err}"));
        if status == 429 {
            refused_count += 1;
            continue;
        }
        assert_eq!(status, 200, "call {id}: {}", String::from_utf8_lossy(&body));
        let response = parse_response(&body);
        assert_eq!(response.id, Some(RequestId::Number(id)), "response id");
        *answered.entry(id).or_insert(0) += 1;
        match response.into_result() {
            Ok(result) => {
                assert_eq!(text_content(&result), "slept 1000");
                slept += 1;
            }
            Err(_) => errors += 1,
        }
    }
    println!(
        "sigterm: {} accepted calls answered ({slept} results, {errors} errors), \
         {refused_count} refused before the signal",
        answered.len()
    );
    assert!(
        answered.values().all(|count| *count == 1),
        "each call answered once"
    );
    assert_eq!(answered.len() + refused_count, CALLS);
    // The connection limit is well above 200 and the grace period longer than the calls: every
    // call is accepted and finishes with its result.
    assert_eq!(refused_count, 0, "no call is refused");
    assert_eq!(slept, CALLS, "every call in flight at SIGTERM finished");

    let status = daemon
        .wait_for_exit(SHUTDOWN_TIMEOUT)
        .unwrap_or_else(|| panic!("daemon still running {SHUTDOWN_TIMEOUT:?} after SIGTERM"));
    assert_eq!(status.code(), Some(0), "exit status {status:?}");
    for (pid, pgid) in children {
        assert!(
            eventually(Duration::from_secs(5), || live_processes_in_group(pgid)
                .is_empty()),
            "processes {:?} left in the group {pgid} of the daemon's child {pid}",
            live_processes_in_group(pgid)
        );
    }
}

#[test]
fn sigkill_of_the_daemon_takes_its_servers_and_their_grandchildren_down() {
    let mut daemon = Daemon::start(json!({"mcpServers": {
        "leaky": fault_server(&["--spawn-grandchild-at-start"]),
    }}));
    let (server_pid, server_group) = pid_and_group(&daemon, "leaky");
    let grandchildren: Vec<i32> = children_of(server_pid)
        .into_iter()
        .map(|(pid, _)| pid)
        .collect();
    assert!(
        !grandchildren.is_empty(),
        "the server {server_pid} has its `sleep 1000` grandchild"
    );
    let _cleanup = KillGroupsOnDrop(vec![server_group]);

    daemon.signal(libc::SIGKILL);
    daemon
        .wait_for_exit(Duration::from_secs(5))
        .expect("a killed daemon exits");
    let started = Instant::now();
    let mut survivors = Vec::new();
    let gone = eventually(Duration::from_secs(10), || {
        survivors = std::iter::once(server_pid)
            .chain(grandchildren.iter().copied())
            .filter(|pid| process_is_alive(*pid))
            .collect();
        survivors.is_empty()
    });
    println!(
        "sigkill: server {server_pid} and grandchildren {grandchildren:?} gone after {:?}",
        started.elapsed()
    );
    assert!(
        gone,
        "still alive 10 s after the daemon was killed: {survivors:?}"
    );
}

#[test]
fn a_restarted_daemon_replaces_a_stale_runtime_file() {
    let mut first = Daemon::start(json!({"mcpServers": {}}));
    let runtime_dir = first.runtime_dir.clone();
    let runtime_file = first.runtime_file();
    first.signal(libc::SIGKILL);
    first
        .wait_for_exit(Duration::from_secs(5))
        .expect("a killed daemon exits");
    assert!(
        runtime_file.exists(),
        "a killed daemon leaves its runtime file behind"
    );

    let second = Daemon::start_with(
        json!({"mcpServers": {}}),
        DaemonOptions {
            env: vec![(
                tool_cli_protocol::env::RUNTIME_DIR.to_owned(),
                runtime_dir.to_string_lossy().into_owned(),
            )],
            ..DaemonOptions::default()
        },
    );
    let text = std::fs::read_to_string(&runtime_file).expect("read the runtime file");
    let runtime: tool_cli_protocol::runtime::RuntimeFile =
        serde_json::from_str(&text).expect("runtime file parses");
    assert_eq!(runtime.pid, second.pid(), "{text}");
    assert_eq!(runtime.port, second.port, "{text}");
    assert_eq!(runtime.token, second.token, "{text}");
    second.call("listServers", Value::Null);
}

// ---------------------------------------------------------------------------------------------
// Child environment.

#[test]
fn a_server_sees_only_allow_listed_and_configured_variables() {
    const ALLOW_LIST: &[&str] = &[
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TZ",
        "TMPDIR",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
        "XDG_STATE_HOME",
    ];
    let mut server = fault_server(&[]);
    server["env"] = json!({"CONFIGURED_FOR_TEST": "yes"});
    let daemon = Daemon::start_with(
        json!({"mcpServers": {"probe": server}}),
        DaemonOptions {
            env: vec![
                ("TOOL_CLI_TIMEOUT_MS".into(), "1234".into()),
                ("INHERITED_SECRET_FOR_TEST".into(), "must not leak".into()),
            ],
            ..DaemonOptions::default()
        },
    );
    let result = daemon.call_tool("probe", "env", json!({}));
    let env = result["structuredContent"]["env"]
        .as_object()
        .unwrap_or_else(|| panic!("env tool without an env map: {result:#}"))
        .clone();
    let names: BTreeSet<&str> = env.keys().map(String::as_str).collect();
    println!("child environment: {names:?}");
    let tool_cli: Vec<&&str> = names
        .iter()
        .filter(|name| name.starts_with(tool_cli_protocol::env::PREFIX))
        .collect();
    assert!(
        tool_cli.is_empty(),
        "TOOL_CLI_* reached a server: {tool_cli:?}"
    );
    let unexpected: Vec<&&str> = names
        .iter()
        .filter(|name| !ALLOW_LIST.contains(name) && **name != "CONFIGURED_FOR_TEST")
        .collect();
    assert!(
        unexpected.is_empty(),
        "variables neither allow-listed nor configured: {unexpected:?}"
    );
    assert_eq!(env.get("CONFIGURED_FOR_TEST"), Some(&json!("yes")));
}

// ---------------------------------------------------------------------------------------------
// The `health` method.

#[test]
fn health_reports_every_server_with_counters_latency_and_breaker() {
    const KEYS: &[&str] = &[
        "name",
        "state",
        "transport",
        "lastError",
        "restarts",
        "uptimeMs",
        "calls",
        "errors",
        "inFlight",
        "queued",
        "latencyMs",
        "breaker",
    ];
    let mut off = fault_server(&[]);
    off["enabled"] = json!(false);
    let daemon = Daemon::start(json!({"mcpServers": {"live": fault_server(&[]), "off": off}}));
    let info = daemon.call("getBridgeInfo", Value::Null);
    assert!(
        info["operations"]
            .as_array()
            .is_some_and(|operations| operations.iter().any(|op| op == "health")),
        "getBridgeInfo.operations lists health: {info:#}"
    );

    for index in 0..3 {
        echo(&daemon, "live", &format!("call {index}"));
    }
    let failed = daemon.call_tool("live", "fail", json!({}));
    assert_eq!(failed["isError"], true);

    let raw = daemon.call("health", Value::Null);
    println!("health: {raw:#}");
    let servers = raw["servers"]
        .as_array()
        .unwrap_or_else(|| panic!("health without servers: {raw:#}"));
    for server in servers {
        let unknown: Vec<&String> = server
            .as_object()
            .expect("a server is an object")
            .keys()
            .filter(|key| !KEYS.contains(&key.as_str()))
            .collect();
        assert!(unknown.is_empty(), "unknown health members {unknown:?}");
    }
    let health: HealthResult = serde_json::from_value(raw.clone()).expect("health parses");
    let names: Vec<&str> = health.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["live", "off"], "config order");

    let live = &health.servers[0];
    assert_eq!(live.state, ServerState::Ready, "{live:?}");
    assert_eq!(
        live.transport,
        tool_cli_protocol::methods::TransportKind::Stdio
    );
    assert_eq!(live.restarts, 0);
    assert!(live.uptime_ms.is_some(), "a ready server has an uptime");
    assert_eq!(live.calls, 4, "three echoes and a fail reached the server");
    assert_eq!(live.errors, 0, "isError is not an error of the server");
    assert_eq!((live.in_flight, live.queued), (0, 0));
    let latency = live
        .latency_ms
        .as_ref()
        .unwrap_or_else(|| panic!("latency after four calls: {live:?}"));
    assert!(latency.samples >= 4, "{latency:?}");
    assert!(
        latency.p50 >= 0.0 && latency.p50 <= latency.p95,
        "{latency:?}"
    );
    assert_eq!(live.breaker.state, "closed");
    assert_eq!(live.breaker.retry_after_ms, None);

    let off = &health.servers[1];
    assert_eq!(off.state, ServerState::Disabled, "{off:?}");
    assert_eq!(off.uptime_ms, None);
    assert_eq!(off.calls, 0);
}

/// A scoped token's `health` shows its servers' state and counts, but not the last call error:
/// that can be another caller's (a timeout naming its tool, a crash with its stderr). The
/// owner sees it.
#[test]
fn a_scoped_token_does_not_see_other_callers_last_error_in_health() {
    let daemon = Daemon::start(json!({"mcpServers": {"live": fault_server(&[])}}));
    let timed_out = daemon.call_err(
        "callTool",
        json!({"server": "live", "tool": "hang", "arguments": {}, "timeoutMs": 200}),
    );
    assert_eq!(
        timed_out.code,
        tool_cli_protocol::code::TIMEOUT,
        "{timed_out:?}"
    );
    let owner = server_health(&daemon, "live");
    let error = owner.last_error.as_deref().unwrap_or_default();
    assert!(error.contains("hang"), "the owner sees it: {owner:?}");

    let minted = daemon.call("mintToken", json!({"servers": ["live"]}));
    let scoped = minted["token"].as_str().unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "health"}).to_string();
    let auth = format!("Bearer {scoped}");
    let (status, answer) = daemon.raw_post(&[("Authorization", auth.as_str())], body.as_bytes());
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    let live = &answer["result"]["servers"][0];
    assert_eq!(live["name"], "live", "{answer}");
    // Its one call failed: degraded, with the counts that say so.
    assert_eq!(live["state"], "degraded", "{answer}");
    assert_eq!(live["errors"], 1, "counts stay: {answer}");
    assert!(live.get("lastError").is_none(), "{answer}");
    assert!(!answer.to_string().contains("hang"), "{answer}");
}
