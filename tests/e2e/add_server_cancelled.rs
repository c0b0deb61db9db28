//! `addServer` cancelled mid-start (the caller drops its HTTP connection while the new server is
//! still starting) leaves nothing behind: the server is taken out of the pool and stopped, and
//! the name can be added again.

use std::io::Write as _;
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, eventually, fault_server, fault_server_recording, http_request_bytes,
    processes_with_marker, recorded_messages,
};

fn server_names(daemon: &Daemon) -> Vec<String> {
    daemon.call("listServers", Value::Null)["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn an_add_server_whose_caller_hangs_up_mid_start_leaves_no_server_behind() {
    let daemon = Daemon::start(json!({"mcpServers": {"base": fault_server(&[])}}));
    let scratch = tempfile::tempdir().unwrap();
    let record = scratch.path().join("slow.jsonl");
    // Answers `initialize` after a minute: the first attempt is still under way when the
    // caller hangs up.
    let entry = fault_server_recording(&record, &["--slow-start", "60000"]);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "addServer",
                      "params": {"name": "slow", "config": entry}})
    .to_string();
    let host = format!("127.0.0.1:{}", daemon.port);
    let auth = format!("Bearer {}", daemon.token);
    let request = http_request_bytes(
        "POST",
        "/",
        &[
            ("Host", host.as_str()),
            ("Content-Type", "application/json"),
            ("Authorization", auth.as_str()),
        ],
        body.as_bytes(),
    );
    let mut connection = TcpStream::connect(("127.0.0.1", daemon.port)).unwrap();
    connection.write_all(&request).unwrap();
    // Mid-start: the server has its `initialize` and has not answered it.
    assert!(
        eventually(Duration::from_secs(10), || recorded_messages(&record)
            .iter()
            .any(|message| message["method"] == "initialize")),
        "the new server never got its initialize"
    );
    assert!(server_names(&daemon).contains(&"slow".to_owned()));
    drop(connection);

    // Rolled back: out of the pool, its process stopped.
    let marker = record.to_string_lossy().into_owned();
    assert!(
        eventually(Duration::from_secs(10), || !server_names(&daemon)
            .contains(&"slow".to_owned())),
        "{:?}",
        server_names(&daemon)
    );
    assert!(
        eventually(Duration::from_secs(10), || processes_with_marker(&marker)
            .is_empty()),
        "the cancelled server's process is still running"
    );
    // The name is free again, and a server added under it can be removed as usual.
    let added = daemon.call(
        "addServer",
        json!({"name": "slow", "config": fault_server(&[])}),
    );
    assert_eq!(added["state"], "ready", "{added}");
    daemon.call("removeServer", json!({"name": "slow"}));
    assert!(!server_names(&daemon).contains(&"slow".to_owned()));
}
