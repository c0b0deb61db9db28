//! Runtime server management against a real daemon, real stdio peers (the filesystem server, the
//! demo server, the fault server) and the real `tool-cli`.
//!
//! - `tool-cli server add NAME -- COMMAND…`, `server list`, `server remove`; the new server's
//!   tools are callable and searchable; its process is gone after the remove:
//!   `servers_are_added_used_and_removed_through_the_cli`
//! - bad inputs: add of an existing name, add of a command that does not exist, add of an
//!   invalid entry, remove of an unknown server, a scoped token (-32006):
//!   `bad_management_requests_are_refused_with_what_would_be_right`
//! - `reloadConfig`: unchanged servers keep their process and their call in flight finishes on a
//!   removed server before it stops; changed ones restart, added ones start, removed ones stop:
//!   `a_reload_applies_only_what_changed_and_drains_what_it_removes`
//! - `removeServer` while a `getPrompt` is in flight: the prompt finishes before the server
//!   stops: `removing_a_server_lets_its_prompt_in_flight_finish_first`
//! - an invalid file on reload changes nothing and says what is wrong; SIGHUP reloads:
//!   `an_invalid_reload_keeps_the_old_config_and_sighup_reloads`

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::methods::name;
use tool_cli_tests::{
    Daemon, demo_server, eventually, fault_server, filesystem_server, http_request_bytes,
    live_processes_in_group, raw_http_exchange,
};

/// The daemon's children whose command line contains `marker`, as `(pid, process group)`.
fn children_running(daemon: &Daemon, marker: &str) -> Vec<(i32, i32)> {
    daemon
        .children()
        .into_iter()
        .filter(|(pid, _)| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|line| String::from_utf8_lossy(&line).contains(marker))
                .unwrap_or(false)
        })
        .collect()
}

fn server_names(daemon: &Daemon) -> Vec<String> {
    daemon.call(name::LIST_SERVERS, Value::Null)["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|server| server["name"].as_str().unwrap().to_owned())
        .collect()
}

fn write_config(daemon: &Daemon, config: &Value) {
    std::fs::write(
        &daemon.config_path,
        serde_json::to_vec_pretty(config).unwrap(),
    )
    .unwrap();
}

/// A metric's value from `/metrics`.
fn metric(daemon: &Daemon, series: &str) -> Option<f64> {
    let host = format!("127.0.0.1:{}", daemon.port);
    let auth = format!("Bearer {}", daemon.token);
    let request = http_request_bytes(
        "GET",
        "/metrics",
        &[("Host", &host), ("Authorization", &auth)],
        b"",
    );
    let page = raw_http_exchange(daemon.port, &request).expect("GET /metrics");
    String::from_utf8(page.body)
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn servers_are_added_used_and_removed_through_the_cli() {
    let daemon = Daemon::start_with_dir(|dir| json!({"mcpServers": {"demo": demo_server(dir)}}));
    let root = daemon.dir().join("files");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("note.txt"), "added at run time").unwrap();
    let root = root.canonicalize().unwrap();
    let entry = filesystem_server(&root);
    let mut args = vec![
        "server".to_owned(),
        "add".to_owned(),
        "fs".to_owned(),
        "--".to_owned(),
    ];
    args.push(entry["command"].as_str().unwrap().to_owned());
    args.extend(
        entry["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned()),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let added = daemon.run_client(&args, &[]);
    let stdout = String::from_utf8_lossy(&added.stdout);
    assert!(
        added.status.success(),
        "server add: {stdout}{}",
        String::from_utf8_lossy(&added.stderr)
    );
    assert!(stdout.starts_with("added fs: ready, "), "{stdout}");

    let listed = daemon.run_client(&["server", "list"], &[]);
    let listing = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listing.contains("fs") && listing.contains("demo"),
        "{listing}"
    );
    let read = daemon.call_tool(
        "fs",
        "read_text_file",
        json!({"path": root.join("note.txt")}),
    );
    assert_eq!(read["content"][0]["text"], "added at run time");
    // Routing and search see it: a routed call and a search find the new server's tool.
    let routed = daemon.call(
        name::CALL_TOOL,
        json!({"tool": "list_allowed_directories", "arguments": {}}),
    );
    assert_eq!(
        routed["_meta"]["tool-cli/selection"]["server"], "fs",
        "{routed}"
    );
    let found = daemon.call(name::SEARCH_TOOLS, json!({"query": "read a text file"}));
    assert!(found.to_string().contains("\"fs\""), "{found}");
    let fs_process = children_running(&daemon, "mcp-server-filesystem");
    assert_eq!(fs_process.len(), 1);

    let removed = daemon.run_client(&["server", "remove", "fs"], &[]);
    assert!(
        removed.status.success(),
        "{}",
        String::from_utf8_lossy(&removed.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&removed.stdout).trim(),
        "removed fs"
    );
    assert_eq!(server_names(&daemon), ["demo"]);
    assert!(children_running(&daemon, "mcp-server-filesystem").is_empty());
    assert!(
        live_processes_in_group(fs_process[0].1).is_empty(),
        "no orphan left behind"
    );
    let gone = daemon.call_err(
        name::CALL_TOOL,
        json!({"server": "fs", "tool": "read_text_file", "arguments": {"path": "x"}}),
    );
    assert_eq!(gone.code, -32602, "{gone:?}");
    // The demo server was never touched.
    daemon.call_tool("demo", "describe_schema", json!({}));
}

#[test]
fn bad_management_requests_are_refused_with_what_would_be_right() {
    let daemon = Daemon::start_with_dir(|dir| json!({"mcpServers": {"demo": demo_server(dir)}}));
    let exists = daemon.call_err(
        name::ADD_SERVER,
        json!({"name": "demo", "config": {"command": "true"}}),
    );
    assert_eq!(exists.code, -32602);
    assert!(
        exists.message.contains("already running"),
        "{}",
        exists.message
    );

    let missing = daemon.call_err(
        name::ADD_SERVER,
        json!({"name": "ghost", "config": {"command": "/nonexistent/mcp-server"}}),
    );
    assert_eq!(missing.code, -32602);
    assert!(
        missing.message.contains("did not start"),
        "{}",
        missing.message
    );
    assert!(
        missing.message.contains("/nonexistent/mcp-server"),
        "{}",
        missing.message
    );
    assert_eq!(
        server_names(&daemon),
        ["demo"],
        "a server that cannot start is not kept"
    );

    let invalid = daemon.call_err(
        name::ADD_SERVER,
        json!({"name": "bad", "config": {"command": "x", "url": "http://127.0.0.1:1/"}}),
    );
    assert_eq!(invalid.code, -32602);
    assert!(invalid.message.contains("invalid"), "{}", invalid.message);
    let bad_name = daemon.call_err(
        name::ADD_SERVER,
        json!({"name": "-bad", "config": {"command": "true"}}),
    );
    assert_eq!(bad_name.code, -32602);
    let no_config = daemon.call_err(name::ADD_SERVER, json!({"name": "x"}));
    assert!(
        no_config.message.contains("config"),
        "{}",
        no_config.message
    );

    let unknown = daemon.call_err(name::REMOVE_SERVER, json!({"name": "nope"}));
    assert_eq!(unknown.code, -32602);
    assert!(unknown.message.contains("nope"), "{}", unknown.message);
    let cli = daemon.run_client(&["server", "remove", "nope"], &[]);
    assert!(!cli.status.success());
    let cli = daemon.run_client(&["server", "add", "x"], &[]);
    assert_eq!(cli.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&cli.stderr).contains("-- COMMAND"));

    // Scoped tokens may not manage servers, and say why.
    let scoped = daemon.call(name::MINT_TOKEN, json!({"servers": ["demo"]}));
    let scoped = scoped["token"].as_str().unwrap();
    for (method, params) in [
        (
            name::ADD_SERVER,
            json!({"name": "y", "config": {"command": "true"}}),
        ),
        (name::REMOVE_SERVER, json!({"name": "demo"})),
        (name::RELOAD_CONFIG, json!({})),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let auth = format!("Bearer {scoped}");
        let (status, answer) = tool_cli_tests::http_post(
            daemon.port,
            "/",
            &[("Authorization", &auth)],
            body.to_string().as_bytes(),
        );
        assert_eq!(status, 200);
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(answer["error"]["code"], -32006, "{method}: {answer}");
    }
    assert_eq!(server_names(&daemon), ["demo"]);
}

fn reload_config(dir: &Path) -> Value {
    json!({"mcpServers": {
        "keep": demo_server(&dir.join("keep")),
        "change": demo_server(&dir.join("change")),
        "slow": fault_server(&["--extra-tools", "1"]),
    }})
}

#[test]
fn a_reload_applies_only_what_changed_and_drains_what_it_removes() {
    let daemon = Daemon::start_with_dir(|dir| {
        std::fs::create_dir(dir.join("keep")).unwrap();
        std::fs::create_dir(dir.join("change")).unwrap();
        std::fs::create_dir(dir.join("fresh")).unwrap();
        reload_config(dir)
    });
    let dir = daemon.dir().to_path_buf();
    let keep = children_running(&daemon, "keep/demo.sqlite");
    let change = children_running(&daemon, "change/demo.sqlite");
    let slow = children_running(&daemon, "tool-cli-fault-server");
    assert_eq!((keep.len(), change.len(), slow.len()), (1, 1, 1));

    // A call in flight on the server the reload removes.
    let in_flight = std::thread::scope(|scope| {
        let call = scope.spawn(|| daemon.call_tool("slow", "sleep", json!({"ms": 1500})));
        assert!(
            eventually(Duration::from_secs(10), || {
                metric(&daemon, r#"tool_cli_server_in_flight_calls{server="slow"}"#) == Some(1.0)
            }),
            "the call never started"
        );
        let mut next = reload_config(&dir);
        let servers = next["mcpServers"].as_object_mut().unwrap();
        servers.remove("slow");
        servers["change"]["description"] = json!("now described");
        servers.insert("fresh".to_owned(), demo_server(&dir.join("fresh")));
        write_config(&daemon, &next);
        let reloaded = daemon.call(name::RELOAD_CONFIG, Value::Null);
        (call.join().unwrap(), reloaded)
    });
    let (result, reloaded) = in_flight;
    assert_eq!(
        result["content"][0]["text"], "slept 1500",
        "the call in flight finished: {result}"
    );
    assert_eq!(reloaded["added"], json!(["fresh"]), "{reloaded}");
    assert_eq!(reloaded["changed"], json!(["change"]));
    assert_eq!(reloaded["removed"], json!(["slow"]));
    assert_eq!(reloaded["unchanged"], json!(["keep"]));
    assert_eq!(reloaded["abandonedCalls"], 0);
    assert!(reloaded.get("failed").is_none(), "{reloaded}");

    assert_eq!(
        children_running(&daemon, "keep/demo.sqlite"),
        keep,
        "unchanged: same process"
    );
    let changed = children_running(&daemon, "change/demo.sqlite");
    assert_eq!(changed.len(), 1);
    assert_ne!(changed, change, "changed: a new process");
    assert!(live_processes_in_group(change[0].1).is_empty());
    assert!(children_running(&daemon, "tool-cli-fault-server").is_empty());
    assert!(
        live_processes_in_group(slow[0].1).is_empty(),
        "removed: stopped, no orphan"
    );
    assert_eq!(children_running(&daemon, "fresh/demo.sqlite").len(), 1);

    let mut names = server_names(&daemon);
    names.sort();
    assert_eq!(names, ["change", "fresh", "keep"]);
    let servers = daemon.call(name::LIST_SERVERS, Value::Null);
    assert!(servers.to_string().contains("now described"), "{servers}");
    daemon.call_tool("fresh", "describe_schema", json!({}));
    daemon.call_tool("keep", "describe_schema", json!({}));
}

#[test]
fn removing_a_server_lets_its_prompt_in_flight_finish_first() {
    let scratch = tool_cli_tests::scratch();
    let record = scratch.path().join("prompting.jsonl");
    let release = scratch.path().join("release");
    let daemon = Daemon::start(json!({"mcpServers": {
        "prompting": tool_cli_tests::fault_server_recording(&record, &["--prompts"]),
    }}));
    let (rendered, removed) = std::thread::scope(|scope| {
        let rendering = scope.spawn(|| {
            daemon.rpc(
                name::GET_PROMPT,
                Some(json!({"server": "prompting", "name": "wait_for_file",
                            "arguments": {"path": release.to_str().unwrap()}})),
            )
        });
        assert!(
            eventually(Duration::from_secs(10), || {
                tool_cli_tests::count_recorded(&record, "prompts/get", None) == 1
            }),
            "the prompt never reached the server"
        );
        let removing =
            scope.spawn(|| daemon.call(name::REMOVE_SERVER, json!({"name": "prompting"})));
        // Taken out of the set at once; stopped only once its prompt is done.
        assert!(
            eventually(Duration::from_secs(10), || server_names(&daemon).is_empty()),
            "the server was not taken out"
        );
        std::fs::write(&release, b"go").unwrap();
        (rendering.join().unwrap(), removing.join().unwrap())
    });
    let rendered = rendered.expect("the prompt in flight finished before its server stopped");
    assert_eq!(
        rendered["messages"][0]["content"]["text"],
        format!("{} exists", release.display())
    );
    assert_eq!(removed["abandonedCalls"], 0, "{removed}");
}

#[test]
fn an_invalid_reload_keeps_the_old_config_and_sighup_reloads() {
    let daemon = Daemon::start_with_dir(|dir| json!({"mcpServers": {"demo": demo_server(dir)}}));
    let dir = daemon.dir().to_path_buf();
    std::fs::write(&daemon.config_path, "{\"mcpServers\": {\"demo\": ").unwrap();
    let refused = daemon.call_err(name::RELOAD_CONFIG, Value::Null);
    assert_eq!(refused.code, -32602);
    assert!(
        refused.message.contains("invalid JSON"),
        "{}",
        refused.message
    );
    assert!(
        refused.message.contains("previous config keeps serving"),
        "{}",
        refused.message
    );
    write_config(&daemon, &json!({"mcpServers": {"demo": {"command": ""}}}));
    let refused = daemon.call_err(name::RELOAD_CONFIG, Value::Null);
    assert!(refused.message.contains("command"), "{}", refused.message);
    daemon.call_tool("demo", "describe_schema", json!({}));
    let params = daemon.call_err(name::RELOAD_CONFIG, json!({"path": "/etc/passwd"}));
    assert!(
        params.message.contains("takes no params"),
        "{}",
        params.message
    );

    // SIGHUP reads the (now valid) file: a second server appears.
    std::fs::create_dir(dir.join("second")).unwrap();
    write_config(
        &daemon,
        &json!({"mcpServers": {"demo": demo_server(&dir), "second": demo_server(&dir.join("second"))}}),
    );
    daemon.signal(libc::SIGHUP);
    assert!(
        eventually(Duration::from_secs(30), || server_names(&daemon).len() == 2),
        "SIGHUP did not reload; stderr:\n{}",
        daemon.stderr()
    );
    assert!(eventually(Duration::from_secs(30), || daemon
        .stderr()
        .contains("config reloaded")));
    daemon.call_tool("second", "describe_schema", json!({}));
}
