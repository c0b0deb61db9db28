//! Many callers at once: requests multiplexed onto one MCP connection must each get their own
//! answer back. Every call carries a nonce that the server echoes, so a crossed wire shows up as
//! a wrong nonce rather than as a lucky pass.

use std::sync::Barrier;
use std::thread;

use serde_json::json;
use tool_cli_tests::{Daemon, everything_stdio, python_fixture, text_content};

const CALLS: usize = 50;

#[test]
fn fifty_concurrent_calls_to_one_stdio_server_each_get_their_own_answer() {
    let daemon = Daemon::start(json!({"mcpServers": {"everything": everything_stdio()}}));
    let barrier = Barrier::new(CALLS);
    thread::scope(|scope| {
        let handles: Vec<_> = (0..CALLS)
            .map(|index| {
                let (daemon, barrier) = (&daemon, &barrier);
                scope.spawn(move || {
                    let nonce = format!("nonce-{index}-{}", index * 7919);
                    barrier.wait();
                    let result = daemon.call_tool("everything", "echo", json!({"message": nonce}));
                    (nonce, text_content(&result))
                })
            })
            .collect();
        for handle in handles {
            let (nonce, answer) = handle.join().expect("caller thread");
            assert_eq!(answer, format!("Echo: {nonce}"));
        }
    });
}

#[test]
fn concurrent_calls_across_two_servers_do_not_cross() {
    let daemon = Daemon::start_with_dir(|dir| {
        json!({"mcpServers": {
            "demo": tool_cli_tests::demo_server(dir),
            "py": python_fixture(),
        }})
    });
    let barrier = Barrier::new(CALLS);
    thread::scope(|scope| {
        let handles: Vec<_> = (0..CALLS)
            .map(|index| {
                let (daemon, barrier) = (&daemon, &barrier);
                scope.spawn(move || {
                    let nonce = format!("n{index}x{}", index * 104_729);
                    barrier.wait();
                    if index % 2 == 0 {
                        let result = daemon.call_tool(
                            "demo",
                            "sql_query",
                            json!({"sql": format!("SELECT '{nonce}' AS nonce")}),
                        );
                        let row = &result["structuredContent"]["rows"][0];
                        let value = row
                            .get("nonce")
                            .or_else(|| row.get(0))
                            .cloned()
                            .unwrap_or_default();
                        (nonce, value.as_str().unwrap_or_default().to_owned())
                    } else {
                        let result = daemon.call_tool("py", "echo", json!({"text": nonce}));
                        (nonce, text_content(&result))
                    }
                })
            })
            .collect();
        for handle in handles {
            let (nonce, answer) = handle.join().expect("caller thread");
            assert_eq!(answer, nonce);
        }
    });
}

/// The entries of one JSON-RPC batch run at once, and the answers come back in request order.
/// Four `rendezvous` calls each wait until all four are running on the server at the same time,
/// so they can only all succeed if the daemon sends them concurrently (one after the other, the
/// first would fail saying only one party arrived). Errors of single entries stay theirs.
#[test]
fn a_batch_runs_its_entries_at_once_and_answers_in_order() {
    let daemon = tool_cli_tests::Daemon::start(
        json!({"mcpServers": {"alpha": tool_cli_tests::fault_server(&[])}}),
    );
    let parties = 4;
    let meet = |index: usize| {
        json!({"jsonrpc": "2.0", "id": format!("meet-{index}"), "method": "callTool",
               "params": {"server": "alpha", "tool": "rendezvous",
                          "arguments": {"key": "batch", "parties": parties}}})
    };
    let batch = json!([
        meet(0),
        {"jsonrpc": "2.0", "id": "bad-arguments", "method": "callTool",
         "params": {"server": "alpha", "tool": "echo", "arguments": {"nonce": 7}}},
        meet(1),
        {"jsonrpc": "2.0", "method": "getBridgeInfo"},
        {"jsonrpc": "2.0", "id": "no-method", "method": "noSuchMethod"},
        meet(2),
        42,
        meet(3),
    ]);
    let (status, body) = daemon.post(batch.to_string().as_bytes());
    assert_eq!(status, 200);
    let answers: Vec<serde_json::Value> = serde_json::from_slice(&body).expect("a batch answer");
    let ids: Vec<&serde_json::Value> = answers.iter().map(|answer| &answer["id"]).collect();
    assert_eq!(
        ids,
        [
            &json!("meet-0"),
            &json!("bad-arguments"),
            &json!("meet-1"),
            &json!("no-method"),
            &json!("meet-2"),
            &serde_json::Value::Null,
            &json!("meet-3"),
        ],
        "one answer per request, in request order, none for the notification: {answers:#?}"
    );
    for index in [0, 2, 4, 6] {
        assert_eq!(
            text_content(&answers[index]["result"]),
            format!("met {parties}"),
            "{:#}",
            answers[index]
        );
    }
    assert_eq!(
        answers[1]["error"]["code"],
        tool_cli_protocol::code::INVALID_PARAMS,
        "{:#}",
        answers[1]
    );
    assert_eq!(answers[3]["error"]["code"], -32601, "{:#}", answers[3]);
    assert_eq!(answers[5]["error"]["code"], -32600, "{:#}", answers[5]);
}

/// A burst of a hundred calls to one stdio server whose `maxConcurrent` (16, the old default) is
/// below it is queued, not refused: with the default `maxQueued` every call gets its answer (P3
/// of issue 13; it used to refuse 20 of 100 as busy).
#[test]
fn a_hundred_concurrent_calls_to_one_server_are_queued_not_refused() {
    const BURST: usize = 100;
    let mut server = tool_cli_tests::fault_server(&[]);
    server["maxConcurrent"] = json!(16);
    let daemon = tool_cli_tests::Daemon::start(json!({"mcpServers": {"alpha": server}}));
    let barrier = Barrier::new(BURST);
    thread::scope(|scope| {
        let handles: Vec<_> = (0..BURST)
            .map(|index| {
                let (daemon, barrier) = (&daemon, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    // Each holds its slot for a while, so the burst overflows 16 slots.
                    let slow = daemon.rpc(
                        "callTool",
                        Some(json!({"server": "alpha", "tool": "sleep",
                                    "arguments": {"ms": 20}})),
                    );
                    let echoed = daemon.call_tool(
                        "alpha",
                        "echo",
                        json!({"nonce": format!("burst-{index}")}),
                    );
                    (index, slow, text_content(&echoed))
                })
            })
            .collect();
        for handle in handles {
            let (index, slow, echoed) = handle.join().expect("caller thread");
            let slow = slow.unwrap_or_else(|error| panic!("call {index} refused: {error:?}"));
            assert_eq!(text_content(&slow), "slept 20");
            assert_eq!(echoed, format!("burst-{index}"));
        }
    });
}

/// With the default limits, a hundred calls to one stdio server all run on it at once: each is a
/// `rendezvous` that waits until all hundred have arrived at the server, so they can only succeed
/// if the daemon lets every one through together (at a limit of 16, the first 16 would wait for
/// parties that never come and fail saying how many arrived). One burst, then no queue: P3 of
/// issue 13.
#[test]
fn by_default_a_hundred_calls_to_one_stdio_server_run_at_once() {
    const PARTIES: usize = 100;
    let daemon = tool_cli_tests::Daemon::start(
        json!({"mcpServers": {"alpha": tool_cli_tests::fault_server(&[])}}),
    );
    let barrier = Barrier::new(PARTIES);
    thread::scope(|scope| {
        let handles: Vec<_> = (0..PARTIES)
            .map(|index| {
                let (daemon, barrier) = (&daemon, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    let met = daemon.rpc(
                        "callTool",
                        Some(json!({"server": "alpha", "tool": "rendezvous",
                                    "arguments": {"key": "default-limit", "parties": PARTIES}})),
                    );
                    (index, met)
                })
            })
            .collect();
        for handle in handles {
            let (index, met) = handle.join().expect("caller thread");
            let met = met.unwrap_or_else(|error| panic!("call {index} failed: {error:?}"));
            assert_eq!(text_content(&met), format!("met {PARTIES}"), "{met:#}");
        }
    });
}
