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
