//! The session watchdog's default caps from the config file's `sessions` section, live: every
//! session is capped by them unless `openSession` gives its own, and a bad section stops the
//! daemon from starting with the member named; a `reloadConfig` that changes the section
//! applies the new caps to sessions without their own.

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{Daemon, DaemonOptions, assert_budget_exceeded, eventually, fault_server};

#[test]
fn the_configs_session_caps_refuse_calls_unless_a_session_sets_its_own() {
    let daemon = Daemon::start(json!({
        "mcpServers": {"flaky": fault_server(&[])},
        "sessions": {"maxCalls": 2, "maxWallTimeMs": 1},
    }));
    let echo = |session: &str| {
        daemon.rpc(
            "callTool",
            Some(
                json!({"server": "flaky", "tool": "echo", "arguments": {"nonce": "n"},
                        "sessionId": session}),
            ),
        )
    };
    // The config's wall-time cap of 1 ms: spent by the time a call of a session arrives.
    daemon.call("openSession", json!({"sessionId": "defaults"}));
    assert!(eventually(Duration::from_secs(5), || echo("defaults")
        .is_err_and(
            |error| error.data.as_ref().unwrap()["budget"] == "wallTimeMs"
        )));

    // A session's own wall-time cap replaces the config's; the config's call cap still holds.
    daemon.call(
        "openSession",
        json!({"sessionId": "long", "maxWallTimeMs": 3_600_000}),
    );
    assert!(echo("long").is_ok());
    assert!(echo("long").is_ok());
    assert_budget_exceeded(&echo("long").unwrap_err(), "calls", 2);

    // And its own call cap replaces the config's.
    daemon.call(
        "openSession",
        json!({"sessionId": "more", "maxCalls": 4, "maxWallTimeMs": 3_600_000}),
    );
    for _ in 0..4 {
        assert!(echo("more").is_ok());
    }
    let refused = echo("more").unwrap_err();
    assert_eq!(refused.data.unwrap()["limit"], 4);

    // A call outside any session is not capped.
    for _ in 0..3 {
        daemon.call_tool("flaky", "echo", json!({"nonce": "free"}));
    }
}

#[test]
fn a_bad_sessions_section_stops_the_daemon_naming_the_member() {
    let failure = Daemon::try_start_with(
        json!({"mcpServers": {}, "sessions": {"maxCalls": 0}}),
        DaemonOptions::default(),
    )
    .err()
    .expect("the daemon refuses the config");
    assert!(failure.contains("sessions.maxCalls"), "{failure}");
    assert!(failure.contains("at least 1"), "{failure}");
}

#[test]
fn reloading_the_config_applies_changed_session_caps() {
    let servers = json!({"flaky": fault_server(&[])});
    let daemon = Daemon::start(json!({"mcpServers": servers}));
    let echo = |session: &str| {
        daemon.rpc(
            "callTool",
            Some(
                json!({"server": "flaky", "tool": "echo", "arguments": {"nonce": "n"},
                        "sessionId": session}),
            ),
        )
    };
    let reload = |config: Value| {
        std::fs::write(&daemon.config_path, config.to_string()).expect("write the config");
        daemon.call("reloadConfig", Value::Null)
    };
    // Uncapped at start.
    for _ in 0..3 {
        assert!(echo("before").is_ok());
    }

    let reloaded = reload(json!({"mcpServers": servers, "sessions": {"maxCalls": 2}}));
    assert_eq!(reloaded["unchanged"], json!(["flaky"]), "{reloaded}");
    assert!(echo("capped").is_ok());
    assert!(echo("capped").is_ok());
    assert_budget_exceeded(&echo("capped").unwrap_err(), "calls", 2);
    // A session with its own cap keeps it.
    daemon.call("openSession", json!({"sessionId": "own", "maxCalls": 3}));
    for _ in 0..3 {
        assert!(echo("own").is_ok());
    }
    assert_budget_exceeded(&echo("own").unwrap_err(), "calls", 3);

    // The section removed: uncapped again.
    reload(json!({"mcpServers": servers}));
    assert!(echo("capped").is_ok());
}
