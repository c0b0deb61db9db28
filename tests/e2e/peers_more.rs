//! A server with the schemas real servers publish beyond the simple ones the other peers have
//! (`tests/fixtures/schema_server.py`, the mcp 2.x SDK), over stdio and Streamable HTTP: `$ref`
//! into `$defs`, `anyOf` unions and nullable types, enums, `integer` beside `number`, bounds,
//! `additionalProperties: false`, a schema with no `properties`, a tool with no arguments, a unicode
//! tool name with a 12 KB description, `outputSchema` with `structuredContent`, and a result of
//! text, image, audio, a resource link and an embedded resource. Each is listed, described,
//! searched and called through the daemon and the `tool-cli` binary; the validator must accept
//! what the server's schema accepts and refuse what it refuses, naming the field.

use serde_json::{Value, json};
use tool_cli_protocol::ErrorData;
use tool_cli_tests::{Daemon, HttpPeer, error_data, schema_fixture};

const SERVER: &str = "schemas";
const UNICODE_TOOL: &str = "Ünïcödé_名前";

fn client_ok(daemon: &Daemon, args: &[&str]) -> String {
    let output = daemon.run_client(args, &[]);
    assert!(
        output.status.success(),
        "tool-cli {args:?}: {:?}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 stdout")
}

/// Runs `tool-cli args…`, which must fail with `code`; its stderr.
fn client_fails(daemon: &Daemon, args: &[&str], code: i32) -> String {
    let output = daemon.run_client(args, &[]);
    assert_eq!(
        output.status.code(),
        Some(code),
        "tool-cli {args:?}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The failing argument paths of a refused call.
fn refused_paths(daemon: &Daemon, tool: &str, arguments: Value) -> Vec<String> {
    let error = daemon.call_err(
        "callTool",
        json!({"server": SERVER, "tool": tool, "arguments": arguments}),
    );
    match error_data(&error) {
        ErrorData::InvalidArguments { errors, .. } => {
            errors.into_iter().map(|error| error.path).collect()
        }
        other => panic!("expected invalidArguments, got {other:?}"),
    }
}

fn exercise_schemas(daemon: &Daemon) {
    // Listing and describing: every tool, the unicode name intact, `$defs` passed through.
    let listing = client_ok(daemon, &[SERVER]);
    for tool in ["order", "nothing", UNICODE_TOOL, "rich", "strict", "bare"] {
        assert!(listing.contains(tool), "{tool} missing from:\n{listing}");
    }
    let described = daemon.call("describeTool", json!({"server": SERVER, "tool": "order"}));
    assert_eq!(
        described["inputSchema"]["$defs"]["Item"]["properties"]["sku"]["minLength"],
        3
    );
    assert!(described["outputSchema"].is_object(), "{described}");
    let help = client_ok(daemon, &[SERVER, "order"]);
    for expected in [
        "quantity: integer, required, 1 to 100",
        "ratio: number, optional",
        "item.sku: string, required, min length 3",
        r#"color: one of "red", "green", "blue""#,
        "note: string | null",
    ] {
        assert!(
            help.contains(expected),
            "{expected:?} missing from:\n{help}"
        );
    }
    let long = daemon.call(
        "describeTool",
        json!({"server": SERVER, "tool": UNICODE_TOOL}),
    );
    assert!(long["description"].as_str().unwrap().len() > 12_000);

    // Accepted as the server's schema accepts: `$ref` object, nullable, a union member, an
    // integer written as 2.0 (an integer in JSON Schema, as pydantic agrees).
    let good = json!({"item": {"sku": "abc", "gift": true}, "quantity": 2.0, "ratio": 1.5,
        "color": "green", "note": null, "shipping": {"kind": "pickup", "store": 3}});
    let result = daemon.call_tool(SERVER, "order", good);
    assert_eq!(
        result["structuredContent"],
        json!({"sku": "abc", "quantity": 2, "total": 3.0, "color": "green", "note": null})
    );
    let text = client_ok(
        daemon,
        &[
            SERVER,
            "order",
            r#"item:={"sku":"xyz"}"#,
            "quantity:=4",
            "note=hi",
        ],
    );
    let answer: Value = serde_json::from_str(&text).expect("structured output is JSON");
    assert_eq!(answer["quantity"], 4);
    assert_eq!(answer["note"], "hi");

    // Refused as the server's schema refuses, each failing field named.
    let bad = json!({"item": {"sku": "ab"}, "quantity": 2.5, "color": "purple",
        "shipping": {"kind": "boat"}});
    assert_eq!(
        refused_paths(daemon, "order", bad),
        ["/item/sku", "/quantity", "/color", "/shipping"]
    );
    assert_eq!(
        refused_paths(
            daemon,
            "order",
            json!({"item": {"sku": "abc"}, "quantity": 0})
        ),
        ["/quantity"]
    );
    assert_eq!(
        refused_paths(
            daemon,
            "order",
            json!({"item": {"sku": "abc"}, "quantity": "2"})
        ),
        ["/quantity"]
    );
    let stderr = client_fails(
        daemon,
        &[
            SERVER,
            "order",
            r#"{"item":{"sku":"abc"},"quantity":1,"color":"purple"}"#,
        ],
        5,
    );
    assert!(
        stderr.contains(r#"/color: "purple" is not one of "red", "green" or "blue""#),
        "{stderr}"
    );

    // additionalProperties false: an unknown argument is refused by name; the rest passes.
    let stderr = client_fails(daemon, &[SERVER, "strict", r#"{"name":"a","extra":1}"#], 5);
    assert!(stderr.contains("\"extra\""), "{stderr}");
    let text = client_ok(daemon, &[SERVER, "strict", "name=ada"]);
    assert_eq!(text.trim(), "strict hello ada");
    // A schema without `properties` takes any object; a tool without arguments takes `{}`.
    assert_eq!(
        client_ok(daemon, &[SERVER, "bare", r#"{"anything":[1,2]}"#]).trim(),
        "bare answered"
    );
    assert_eq!(
        client_ok(daemon, &[SERVER, "nothing", "{}"]).trim(),
        "nothing needed"
    );
    assert_eq!(
        client_ok(daemon, &[SERVER, UNICODE_TOOL, "text=héllo"]).trim(),
        "unicode says héllo"
    );

    // A result of every content type: placeholders in text, everything in JSON, bytes raw.
    let text = client_ok(daemon, &[SERVER, "rich", "{}"]);
    for expected in [
        "a rich result",
        "[image: image/png",
        "[audio: audio/wav",
        "[resource link: file:///tmp/linked.txt",
        "[embedded resource: memo://embedded",
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} missing from:\n{text}"
        );
    }
    let json_text = client_ok(daemon, &["--output", "json", SERVER, "rich", "{}"]);
    let parsed: Value = serde_json::from_str(&json_text).expect("--output json is JSON");
    let kinds: Vec<&str> = parsed["content"]
        .as_array()
        .expect("content")
        .iter()
        .map(|item| item["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["text", "image", "audio", "resource_link", "resource"]
    );
    let raw = daemon.run_client(&["--output", "raw", SERVER, "rich", "{}"], &[]);
    assert!(raw.status.success());
    assert!(
        raw.stdout.starts_with(b"\x89PNG"),
        "raw output starts with the image bytes"
    );

    // Search finds them by what they do and by the unicode name.
    let found = daemon.call("searchTools", json!({"query": "place an order"}));
    assert_eq!(found["results"][0]["tool"], "order", "{found}");
    let found = daemon.call("searchTools", json!({"query": "名前"}));
    assert_eq!(found["results"][0]["tool"], UNICODE_TOOL, "{found}");
}

#[test]
fn unusual_schemas_over_stdio() {
    let daemon = Daemon::start(json!({"mcpServers": {SERVER: schema_fixture()}}));
    exercise_schemas(&daemon);
}

#[test]
fn unusual_schemas_over_streamable_http() {
    let peer = HttpPeer::schema_fixture();
    let daemon = Daemon::start(json!({"mcpServers": {SERVER: peer.server_config()}}));
    exercise_schemas(&daemon);
}
