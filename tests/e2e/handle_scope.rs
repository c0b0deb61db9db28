//! Who may use what a call left behind, through the daemon's one shared connection per server:
//! the demo server's resource handles and the daemon's spilled answers, with two tokens (the
//! owner and a minted scoped one) and two sessions of one token. Another caller's handle or
//! answer must be exactly as unknown as one never made: the same error, not a hint that it
//! exists.

use serde_json::{Value, json};
use tool_cli_tests::{Daemon, DaemonOptions, demo_server};

/// The demo server, with results over 4000 bytes spilled.
fn daemon() -> Daemon {
    Daemon::start_with_dir_and(
        |dir| json!({"mcpServers": {"demo": demo_server(dir)}}),
        DaemonOptions {
            args: vec!["--max-response-bytes".into(), "4000".into()],
            ..DaemonOptions::default()
        },
    )
}

/// `callTool` on demo with `token` (the owner's when `None`) and `session`.
fn call(
    daemon: &Daemon,
    token: Option<&str>,
    session: Option<&str>,
    tool: &str,
    arguments: Value,
) -> Value {
    let mut params = json!({"server": "demo", "tool": tool, "arguments": arguments});
    if let Some(session) = session {
        params["sessionId"] = json!(session);
    }
    let answer = match token {
        None => daemon.rpc("callTool", Some(params)),
        Some(token) => daemon.rpc_as(token, "callTool", Some(params)),
    };
    answer.unwrap_or_else(|error| panic!("callTool {tool}: {error:?}"))
}

fn open(daemon: &Daemon, token: Option<&str>, session: Option<&str>) -> String {
    let opened = call(
        daemon,
        token,
        session,
        "open_resource",
        json!({"uri": "demo://docs/readme"}),
    );
    assert_ne!(opened["isError"], true, "{opened}");
    opened["structuredContent"]["handle"]
        .as_str()
        .expect("a handle")
        .to_owned()
}

/// Reads 64 bytes through `handle`: `Ok(data)` or `Err(the tool's error text)`.
fn read(
    daemon: &Daemon,
    token: Option<&str>,
    session: Option<&str>,
    handle: &str,
) -> Result<String, String> {
    let result = call(
        daemon,
        token,
        session,
        "read_resource",
        json!({"handle": handle, "length": 64}),
    );
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    if result["isError"] == true {
        Err(text)
    } else {
        Ok(result["structuredContent"]["data"]
            .as_str()
            .expect("data")
            .to_owned())
    }
}

#[test]
fn handles_stay_with_the_token_and_session_that_opened_them() {
    let daemon = daemon();
    let minted = daemon.call(
        "mintToken",
        json!({"servers": ["demo"], "label": "sub-agent"}),
    );
    let scoped = minted["token"].as_str().expect("a token").to_owned();
    let scoped = Some(scoped.as_str());

    // What a handle nobody made looks like, to compare the refusals with.
    let never = "h-0123456789abcdef0123456789abcdef";
    let unknown = read(&daemon, scoped, None, never).unwrap_err();
    assert!(
        unknown.starts_with(&format!("no open handle \"{never}\" in this session")),
        "{unknown}"
    );
    let as_unknown = |refusal: String, handle: &str| {
        assert_eq!(refusal.replace(handle, never), unknown, "{refusal}");
    };

    // The owner's handle (no session): the owner's next call reads it, the scoped token cannot,
    // nor release it, nor tell it from a handle never made.
    let owners = open(&daemon, None, None);
    let first = read(&daemon, None, None, &owners).expect("the owner reads its handle");
    assert!(!first.is_empty());
    as_unknown(read(&daemon, scoped, None, &owners).unwrap_err(), &owners);
    let release = call(
        &daemon,
        scoped,
        None,
        "release_resource",
        json!({"handle": owners}),
    );
    assert_eq!(release["isError"], true, "{release}");
    assert_eq!(
        read(&daemon, None, None, &owners).as_deref(),
        Ok(first.as_str())
    );

    // And the other way round.
    let scopeds = open(&daemon, scoped, None);
    assert!(read(&daemon, scoped, None, &scopeds).is_ok());
    as_unknown(read(&daemon, None, None, &scopeds).unwrap_err(), &scopeds);

    // Two sessions of one token: each keeps its own, and neither is the token's sessionless one.
    let in_s1 = open(&daemon, None, Some("s1"));
    assert!(read(&daemon, None, Some("s1"), &in_s1).is_ok());
    as_unknown(read(&daemon, None, Some("s2"), &in_s1).unwrap_err(), &in_s1);
    as_unknown(read(&daemon, None, None, &in_s1).unwrap_err(), &in_s1);
    as_unknown(
        read(&daemon, None, Some("s1"), &owners).unwrap_err(),
        &owners,
    );
    // The scoped token's session of the same name is another session still.
    as_unknown(
        read(&daemon, scoped, Some("s1"), &in_s1).unwrap_err(),
        &in_s1,
    );

    // Released: its owner hears so, anyone else hears "unknown" as before.
    let released = call(
        &daemon,
        None,
        Some("s1"),
        "release_resource",
        json!({"handle": in_s1}),
    );
    assert_ne!(released["isError"], true, "{released}");
    let again = read(&daemon, None, Some("s1"), &in_s1).unwrap_err();
    assert!(again.contains("was already released"), "{again}");
    as_unknown(read(&daemon, None, Some("s2"), &in_s1).unwrap_err(), &in_s1);
}

#[test]
fn a_spilled_answer_is_read_only_by_its_token() {
    let daemon = daemon();
    let minted = daemon.call("mintToken", json!({"servers": ["demo"]}));
    let scoped = minted["token"].as_str().expect("a token").to_owned();

    let result = call(
        &daemon,
        None,
        Some("s1"),
        "sql_query",
        json!({"sql": "SELECT * FROM orders", "page_size": 200}),
    );
    let id = result["_meta"]["tool-cli/spilled"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("not spilled: {result}"))
        .to_owned();
    let page = daemon.call("readSpilled", json!({"id": id, "length": 100}));
    assert_eq!(page["offset"], 0);
    assert!(page["totalBytes"].as_u64().unwrap() > 4000, "{page}");

    let refused = |id: &str| {
        daemon
            .rpc_as(&scoped, "readSpilled", Some(json!({"id": id})))
            .expect_err("another token's answer")
    };
    let theirs = refused(&id);
    let never = refused("00000000000000000000000000000000");
    assert_eq!(theirs.code, -32602);
    assert_eq!(
        theirs
            .message
            .replace(&id, "00000000000000000000000000000000"),
        never.message
    );
    // The owner still reads it whole.
    let whole = daemon.call("readSpilled", json!({"id": id}));
    assert_eq!(whole["totalBytes"], page["totalBytes"]);
}
