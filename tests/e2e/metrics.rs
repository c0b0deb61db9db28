//! `GET /metrics`: the Prometheus page, read over real HTTP from a real daemon serving the real
//! filesystem peer.
//!
//! - counts, errors, refusals and latency histograms per (server, tool), per-server state,
//!   breaker, restarts and in-flight gauges, process basics:
//!   `calls_are_counted_per_server_and_tool`
//! - without a token (401), with a scoped token (403), with a query string (400), with POST
//!   (405): `the_page_is_behind_the_owner_token`

use serde_json::{Value, json};
use tool_cli_protocol::methods::name;
use tool_cli_tests::{
    Daemon, HttpResponse, filesystem_server, http_request_bytes, raw_http_exchange,
};

fn get(daemon: &Daemon, target: &str, token: Option<&str>) -> HttpResponse {
    let host = format!("127.0.0.1:{}", daemon.port);
    let auth = token.map(|token| format!("Bearer {token}"));
    let mut headers = vec![("Host", host.as_str())];
    if let Some(auth) = &auth {
        headers.push(("Authorization", auth.as_str()));
    }
    raw_http_exchange(
        daemon.port,
        &http_request_bytes("GET", target, &headers, b""),
    )
    .expect("GET /metrics")
}

/// The value of the sample line `series` (name and labels exactly as written).
fn sample(page: &str, series: &str) -> Option<f64> {
    page.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|value| value.parse().expect("a number"))
}

#[test]
fn calls_are_counted_per_server_and_tool() {
    let daemon = Daemon::start_with_dir(|dir| {
        std::fs::write(dir.join("a.txt"), "hello").unwrap();
        json!({"mcpServers": {"fs": filesystem_server(dir)}})
    });
    let root = daemon.dir().canonicalize().unwrap();
    for _ in 0..3 {
        daemon.call_tool("fs", "list_directory", json!({"path": root}));
    }
    // A tool error (outside the allowed root) and a refusal (invalid arguments).
    let outside = daemon.call_tool("fs", "read_text_file", json!({"path": "/etc/hostname"}));
    assert_eq!(outside["isError"], true);
    let refused = daemon.call_err(
        name::CALL_TOOL,
        json!({"server": "fs", "tool": "read_text_file", "arguments": {"path": 7}}),
    );
    assert_eq!(refused.code, -32602);

    let response = get(&daemon, "/metrics", Some(&daemon.token));
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let page = String::from_utf8(response.body).unwrap();
    let list = r#"{server="fs",tool="list_directory"}"#;
    let read = r#"{server="fs",tool="read_text_file"}"#;
    assert_eq!(
        sample(&page, &format!("tool_cli_tool_calls_total{list}")),
        Some(3.0)
    );
    assert_eq!(
        sample(&page, &format!("tool_cli_tool_errors_total{list}")),
        Some(0.0)
    );
    assert_eq!(
        sample(&page, &format!("tool_cli_tool_calls_total{read}")),
        Some(2.0)
    );
    assert_eq!(
        sample(&page, &format!("tool_cli_tool_errors_total{read}")),
        Some(2.0)
    );
    assert_eq!(
        sample(&page, &format!("tool_cli_tool_refused_total{read}")),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &page,
            r#"tool_cli_tool_call_duration_seconds_bucket{server="fs",tool="list_directory",le="+Inf"}"#
        ),
        Some(3.0)
    );
    assert_eq!(
        sample(
            &page,
            &format!("tool_cli_tool_call_duration_seconds_count{list}")
        ),
        Some(3.0)
    );
    assert!(
        sample(
            &page,
            &format!("tool_cli_tool_call_duration_seconds_sum{list}")
        )
        .unwrap()
            > 0.0
    );
    assert_eq!(
        sample(&page, r#"tool_cli_server_state{server="fs",state="ready"}"#),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &page,
            r#"tool_cli_server_breaker_state{server="fs",state="closed"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(&page, r#"tool_cli_server_restarts_total{server="fs"}"#),
        Some(0.0)
    );
    assert_eq!(
        sample(&page, r#"tool_cli_server_in_flight_calls{server="fs"}"#),
        Some(0.0)
    );
    assert!(sample(&page, r#"tool_cli_server_tools{server="fs"}"#).unwrap() >= 10.0);
    assert!(sample(&page, "process_resident_memory_bytes").unwrap() > 0.0);
    assert!(sample(&page, "process_open_fds").unwrap() > 0.0);

    // A restart on request is counted.
    daemon.call(name::RESTART_SERVER, json!({"server": "fs"}));
    let page = String::from_utf8(get(&daemon, "/metrics", Some(&daemon.token)).body).unwrap();
    assert_eq!(
        sample(&page, r#"tool_cli_server_restarts_total{server="fs"}"#),
        Some(1.0)
    );
}

#[test]
fn the_page_is_behind_the_owner_token() {
    let daemon =
        Daemon::start_with_dir(|dir| json!({"mcpServers": {"fs": filesystem_server(dir)}}));
    assert_eq!(get(&daemon, "/metrics", None).status, 401);
    assert_eq!(get(&daemon, "/metrics", Some(&"ab".repeat(32))).status, 401);
    assert_eq!(
        get(&daemon, "/metrics?format=text", Some(&daemon.token)).status,
        400
    );
    let scoped: Value = daemon.call(name::MINT_TOKEN, json!({"servers": ["fs"]}));
    let scoped = scoped["token"].as_str().unwrap();
    let refused = get(&daemon, "/metrics", Some(scoped));
    assert_eq!(refused.status, 403);
    assert!(refused.body.is_empty());
    let auth = format!("Bearer {}", daemon.token);
    let (status, _) =
        tool_cli_tests::http_post(daemon.port, "/metrics", &[("Authorization", &auth)], b"{}");
    assert_eq!(status, 405);
}

#[test]
fn a_removed_servers_series_leave_the_page_and_the_others_stay() {
    let daemon = Daemon::start_with_dir(|dir| {
        std::fs::write(dir.join("a.txt"), "hello").unwrap();
        json!({"mcpServers": {"fs": filesystem_server(dir), "gone": filesystem_server(dir)}})
    });
    let root = daemon.dir().canonicalize().unwrap();
    daemon.call_tool("fs", "list_directory", json!({"path": root}));
    daemon.call_tool("gone", "list_directory", json!({"path": root}));
    let page = String::from_utf8(get(&daemon, "/metrics", Some(&daemon.token)).body).unwrap();
    assert!(page.contains("server=\"gone\""), "{page}");

    let removed = daemon.call(name::REMOVE_SERVER, json!({"name": "gone"}));
    assert_eq!(removed["server"], "gone", "{removed}");
    let page = String::from_utf8(get(&daemon, "/metrics", Some(&daemon.token)).body).unwrap();
    assert!(
        !page.contains("\"gone\""),
        "a removed server's series linger:\n{page}"
    );
    assert_eq!(
        sample(
            &page,
            "tool_cli_tool_calls_total{server=\"fs\",tool=\"list_directory\"}"
        ),
        Some(1.0),
        "{page}"
    );
}
