//! The hosts' resource subscriptions survive their server's restart
//! (`daemon/src/pool/connection/subscribed.rs`): the server is SIGKILLed while a host is
//! subscribed, the supervisor reconnects, and the new connection subscribes again, the 2026
//! way (the `subscriptions/listen` stream's filter names the URI again, and an update reaches
//! the host's standalone stream) and the 2025 way (one `resources/subscribe` per URI, seen in
//! the server's record). Subscriptions are counted per URI in both eras: the server is told on
//! the first subscription and the last unsubscription only.
//!
//! Input → test:
//! - a 2026-only server killed mid-subscription:
//!   `a_2026_servers_subscription_is_listened_for_again_after_it_is_killed`
//! - a 2025 server killed mid-subscription, with two hosts subscribed to one URI (one of them
//!   twice, which is one subscription):
//!   `a_2025_servers_subscription_is_sent_again_after_it_is_killed`
//! - a session `DELETE`d while subscribed releases its subscriptions (the last one reaches the
//!   server as `resources/unsubscribe`):
//!   `a_deleted_sessions_subscription_is_released_at_the_server`

use std::io::BufRead as _;
use std::time::Duration;

use serde_json::json;
use tool_cli_tests::{
    Daemon, count_recorded, eventually, example_bin, fault_server_recording, http_request_bytes,
    processes_with_marker, raw_http_exchange, unique_marker,
};

use crate::stateless_upstreams::{health_of, mcp_request, open_stream};

/// Longest wait for any one event.
const WAIT: Duration = Duration::from_secs(60);

/// SIGKILLs every process carrying `marker` (the server, wherever the subreaper put it).
fn kill_marked(marker: &str) {
    let pids = processes_with_marker(marker);
    assert!(!pids.is_empty(), "no process carries {marker}");
    for pid in pids {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Waits until `server` is ready again after `restarts` restarts.
fn wait_restarted(daemon: &Daemon, server: &str, restarts: u64) {
    assert!(
        eventually(WAIT, || {
            let health = health_of(daemon, server);
            health["state"] == "ready" && health["restarts"].as_u64() >= Some(restarts)
        }),
        "{server} never came back: {}",
        health_of(daemon, server)
    );
}

#[test]
fn a_2026_servers_subscription_is_listened_for_again_after_it_is_killed() {
    let marker = unique_marker("listen-restart");
    let _cleanup = tool_cli_tests::KillMarkedOnDrop(marker.clone());
    let daemon = Daemon::start(json!({"mcpServers": {
        "modern": {"command": example_bin("stateless_server"), "args": [&marker]},
    }}));
    wait_restarted(&daemon, "modern", 0);
    let touch = |uri: &str| {
        let touched = daemon.call_tool("modern", "touch_resource", json!({"uri": uri}));
        touched["structuredContent"]["told"].clone()
    };
    let session = daemon.open_mcp_session();
    let subscribed = mcp_request(
        &daemon,
        &session,
        "resources/subscribe",
        json!({"uri": "era://roots"}),
    );
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    assert!(
        eventually(WAIT, || touch("era://roots") == 1),
        "the server never had a stream subscribed to era://roots"
    );

    kill_marked(&marker);
    wait_restarted(&daemon, "modern", 1);
    // The new process has the pool's stream, naming the URI again.
    assert!(
        eventually(WAIT, || touch("era://roots") == 1),
        "after the restart, no stream named era://roots: the subscription was lost"
    );
    let mut stream = open_stream(&daemon, &session);
    let mut seen = String::new();
    while !seen.contains("notifications/resources/updated") {
        touch("era://roots");
        let mut line = String::new();
        let read = stream
            .read_line(&mut line)
            .expect("a notice within the wait");
        assert!(read > 0, "the stream ended early: {seen}");
        seen.push_str(&line);
    }
    assert!(seen.contains("era://roots"), "{seen}");
}

#[test]
fn a_2025_servers_subscription_is_sent_again_after_it_is_killed() {
    let mut record = std::path::PathBuf::new();
    let daemon = Daemon::start_with_dir(|dir| {
        record = dir.join("record.jsonl");
        json!({"mcpServers": {
            "fault": fault_server_recording(&record, &["--resource", "fault://watched"]),
        }})
    });
    let marker = record.to_string_lossy().into_owned();
    let _cleanup = tool_cli_tests::KillMarkedOnDrop(marker.clone());
    wait_restarted(&daemon, "fault", 0);
    let subscribe = |session: &str, method: &str| {
        let answer = mcp_request(&daemon, session, method, json!({"uri": "fault://watched"}));
        assert_eq!(answer["result"], json!({}), "{answer}");
    };
    let (first, second) = (daemon.open_mcp_session(), daemon.open_mcp_session());
    subscribe(&first, "resources/subscribe");
    // A repeat in one session is one subscription.
    subscribe(&first, "resources/subscribe");
    subscribe(&second, "resources/subscribe");
    // Counted: the server was told once.
    assert_eq!(count_recorded(&record, "resources/subscribe", None), 1);

    kill_marked(&marker);
    wait_restarted(&daemon, "fault", 1);
    assert!(
        eventually(WAIT, || count_recorded(
            &record,
            "resources/subscribe",
            None
        ) == 2),
        "the new connection never subscribed again"
    );
    let again = tool_cli_tests::recorded_messages(&record)
        .into_iter()
        .rfind(|message| message["method"] == "resources/subscribe")
        .expect("a second subscribe");
    assert_eq!(again["params"]["uri"], "fault://watched", "{again}");

    // One host's unsubscribe keeps the other's; the last one reaches the server.
    subscribe(&first, "resources/unsubscribe");
    assert_eq!(count_recorded(&record, "resources/unsubscribe", None), 0);
    subscribe(&second, "resources/unsubscribe");
    assert_eq!(count_recorded(&record, "resources/unsubscribe", None), 1);
    // An unsubscribe of nothing is not passed on.
    subscribe(&second, "resources/unsubscribe");
    assert_eq!(count_recorded(&record, "resources/unsubscribe", None), 1);
}

/// Ends the gateway session `session` with `DELETE /mcp`, as a host does when it closes.
fn delete_session(daemon: &Daemon, session: &str) {
    let host = format!("127.0.0.1:{}", daemon.port);
    let bearer = format!("Bearer {}", daemon.token);
    let headers = [
        ("Host", host.as_str()),
        ("Authorization", bearer.as_str()),
        ("Mcp-Session-Id", session),
    ];
    let deleted = raw_http_exchange(
        daemon.port,
        &http_request_bytes("DELETE", "/mcp", &headers, b""),
    )
    .expect("an HTTP answer");
    assert_eq!(deleted.status, 200, "{deleted:?}");
}

#[test]
fn a_deleted_sessions_subscription_is_released_at_the_server() {
    let mut record = std::path::PathBuf::new();
    let daemon = Daemon::start_with_dir(|dir| {
        record = dir.join("record.jsonl");
        json!({"mcpServers": {
            "fault": fault_server_recording(&record, &["--resource", "fault://watched"]),
        }})
    });
    let _cleanup = tool_cli_tests::KillMarkedOnDrop(record.to_string_lossy().into_owned());
    wait_restarted(&daemon, "fault", 0);
    let subscribe = |session: &str| {
        let answer = mcp_request(
            &daemon,
            session,
            "resources/subscribe",
            json!({"uri": "fault://watched"}),
        );
        assert_eq!(answer["result"], json!({}), "{answer}");
    };
    let (first, second) = (daemon.open_mcp_session(), daemon.open_mcp_session());
    subscribe(&first);
    subscribe(&second);
    assert_eq!(count_recorded(&record, "resources/subscribe", None), 1);

    // One session ends without unsubscribing: the other still holds the URI.
    delete_session(&daemon, &first);
    // The second session's own unsubscribe is then the last one, and reaches the server; had
    // the ended session kept its count, the pool would stay subscribed.
    let answer = mcp_request(
        &daemon,
        &second,
        "resources/unsubscribe",
        json!({"uri": "fault://watched"}),
    );
    assert_eq!(answer["result"], json!({}), "{answer}");
    assert!(
        eventually(WAIT, || count_recorded(
            &record,
            "resources/unsubscribe",
            None
        ) == 1),
        "the last unsubscribe never reached the server: the deleted session kept its count"
    );

    // A session deleted while it alone is subscribed: the server is told at once.
    let third = daemon.open_mcp_session();
    subscribe(&third);
    assert_eq!(count_recorded(&record, "resources/subscribe", None), 2);
    delete_session(&daemon, &third);
    assert!(
        eventually(WAIT, || count_recorded(
            &record,
            "resources/unsubscribe",
            None
        ) == 2),
        "deleting the only subscribed session never unsubscribed the server"
    );
}
