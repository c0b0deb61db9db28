//! Unit tests of the list, call-result and resource renderings.

use serde_json::json;
use tool_cli_protocol::methods::{ServerSummary, ToolSummary, TransportKind};

use super::*;

fn server(name: &str, state: ServerState, tools: &[&str]) -> ServerSummary {
    ServerSummary {
        warnings: Vec::new(),
        name: name.into(),
        tool_count: tools.len(),
        examples: tools.iter().take(3).map(|tool| tool.to_string()).collect(),
        state,
        transport: TransportKind::Stdio,
        description: None,
        tags: Vec::new(),
        error: None,
    }
}

#[test]
fn servers_show_count_examples_state_and_error() {
    let mut demo = server(
        "demo",
        ServerState::Ready,
        &["sql_query", "describe_schema"],
    );
    demo.description = Some("Bundled demo database.\nMore text.".into());
    let mut github = server("github", ServerState::Failed, &[]);
    github.error = Some("spawn npx: No such file or directory".into());
    let everything = server(
        "everything",
        ServerState::Ready,
        &["echo", "add", "longRunningOperation", "x"],
    );
    let result = ListServersResult {
        servers: vec![
            demo,
            github,
            everything,
            server("slow", ServerState::Connecting, &[]),
            server("off", ServerState::Disabled, &[]),
        ],
    };
    assert_eq!(
        servers(&result),
        "\
demo        2 tools     Bundled demo database.  (e.g. sql_query, describe_schema)
github      failed
            error: spawn npx: No such file or directory
everything  4 tools     (e.g. echo, add, longRunningOperation)
slow        connecting
off         disabled

next: `tool-cli SERVER` lists a server's tools
      `tool-cli health` shows restarts, last errors and circuit breakers
"
    );
}

#[test]
fn servers_not_ready_show_their_error_and_point_to_health() {
    let mut restarting = server("gh", ServerState::Restarting, &[]);
    restarting.error = Some("exit code 1.\nstderr: boom".into());
    let mut down = server("db", ServerState::Down, &[]);
    down.error = Some("gave up after 5 restarts".into());
    let result = ListServersResult {
        servers: vec![server("demo", ServerState::Ready, &["q"]), restarting, down],
    };
    assert_eq!(
        servers(&result),
        "\
demo  1 tool      (e.g. q)
gh    restarting
      error: exit code 1. stderr: boom
db    down
      error: gave up after 5 restarts

next: `tool-cli SERVER` lists a server's tools
      `tool-cli health` shows restarts, last errors and circuit breakers
"
    );
}

#[test]
fn degraded_results_get_a_warning_and_fresh_ones_none() {
    let cached = json!({
        "content": [{"type": "text", "text": "42"}],
        "_meta": {"tool-cli/attempts": 3,
                  "tool-cli/degraded": {"reason": "circuit open", "ageMs": 42_500}}
    });
    assert_eq!(
        degraded_warning("demo", &cached).as_deref(),
        Some("server \"demo\" is failing; this is a cached result from 42s ago (circuit open)")
    );
    let without_details = json!({"_meta": {"tool-cli/degraded": {}}});
    assert_eq!(
        degraded_warning("demo", &without_details).as_deref(),
        Some("server \"demo\" is failing; this is a cached result (no reason given)")
    );
    let fresh = json!({"content": [], "_meta": {"tool-cli/attempts": 1, "other": {}}});
    assert_eq!(degraded_warning("demo", &fresh), None);
    assert_eq!(degraded_warning("demo", &json!({"content": []})), None);
}

#[test]
fn no_servers_says_where_to_add_them() {
    let text = servers(&ListServersResult { servers: vec![] });
    assert!(text.contains("no servers are configured"), "{text}");
}

#[test]
fn tools_are_one_line_each_and_mark_structured_output() {
    let result = ListToolsResult {
        next_cursor: None,
        tool_count: None,
        server: "demo".into(),
        tools: vec![
            ToolSummary {
                server: None,
                overridden: false,
                flags: Vec::new(),
                name: "sql_query".into(),
                description: "Run one read-only SQL query. Returns rows.".into(),
                has_structured_output: true,
            },
            ToolSummary {
                server: None,
                overridden: false,
                flags: Vec::new(),
                name: "describe_schema".into(),
                description: "".into(),
                has_structured_output: false,
            },
        ],
    };
    assert_eq!(
        tools(&result),
        "\
sql_query        Run one read-only SQL query.  [structured output]
describe_schema

next: `tool-cli demo TOOL` shows a tool's parameters and an example call
"
    );
}

#[test]
fn flagged_tools_are_marked_and_their_flags_listed_after_the_tools() {
    let result = ListToolsResult {
        next_cursor: None,
        tool_count: None,
        server: "notes".into(),
        tools: vec![ToolSummary {
            server: None,
            overridden: false,
            flags: vec!["/description: prompt markup (\"<important>\") in \"…\"".into()],
            name: "find".into(),
            description: "Finds notes.".into(),
            has_structured_output: false,
        }],
    };
    let text = tools(&result);
    assert!(
        text.starts_with("find  Finds notes.  [flagged]\n"),
        "{text}"
    );
    assert!(
        text.contains("flagged: find /description: prompt markup"),
        "{text}"
    );
}

#[test]
fn one_line_takes_the_first_sentence_and_truncates_at_a_word() {
    assert_eq!(one_line("First. Second.", 100), "First.");
    assert_eq!(
        one_line("\n\n  Line one\nline two.\n\nNext paragraph", 100),
        "Line one line two."
    );
    assert_eq!(one_line("version 1.2 is out", 100), "version 1.2 is out");
    let long = "word ".repeat(40);
    let cut = one_line(&long, 30);
    assert!(cut.chars().count() <= 30, "{cut}");
    assert!(cut.ends_with("word…"), "{cut}");
    assert_eq!(one_line("ééééé", 3), "éé…");
}

#[test]
fn structured_content_is_preferred_as_pretty_json() {
    let result = json!({
        "content": [{"type": "text", "text": "{\"rows\":[]}"}],
        "structuredContent": {"columns": ["n"], "rows": [{"n": 1}]}
    });
    let output = call_result(&result);
    assert!(!output.is_error);
    assert_eq!(
        output.body,
        "{\n  \"columns\": [\n    \"n\"\n  ],\n  \"rows\": [\n    {\n      \"n\": 1\n    }\n  ]\n}\n"
    );
}

#[test]
fn text_items_are_joined_and_binary_items_are_placeholders() {
    let result = json!({"content": [
        {"type": "text", "text": "Here is the image:"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "audio", "data": "A".repeat(4096), "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "test://static/resource/1", "mimeType": "text/plain", "text": "hello"}},
        {"type": "resource_link", "uri": "file:///tmp/a.txt", "name": "a.txt", "mimeType": "text/plain"},
    ]});
    let output = call_result(&result);
    assert_eq!(
        output.body,
        "Here is the image:\n\
             [image: image/png, 8 bytes; --out FILE saves it, --json shows it]\n\
             [audio: audio/wav, 3.0 KiB; --out FILE saves it, --json shows it]\n\
             [embedded resource: test://static/resource/1, text/plain, 5 bytes; use --json to see it]\n\
             [resource link: file:///tmp/a.txt (a.txt), text/plain]"
    );
    assert!(!output.body.contains("iVBOR"));
}

#[test]
fn error_result_is_its_text_even_with_structured_content() {
    let result = json!({
        "content": [{"type": "text", "text": "no such table: users"}],
        "structuredContent": {"error": "x"},
        "isError": true
    });
    assert_eq!(
        call_result(&result),
        CallOutput {
            body: "no such table: users".into(),
            is_error: true,
            structured: false,
        }
    );
}

#[test]
fn resources_are_grouped_with_labels() {
    let resources = vec![
        json!({"uri": "demo://schema", "name": "schema", "mimeType": "text/plain",
                   "description": "The tables. And more."}),
        json!({"uri": "file:///logo.png", "name": "file:///logo.png", "mimeType": "image/png"}),
    ];
    assert_eq!(
        resource_group("demo", &resources, "uri"),
        "\
demo:
  demo://schema     schema  (text/plain)  The tables.
  file:///logo.png  (image/png)
"
    );
    assert_eq!(
        resource_group("demo", &[], "uriTemplate"),
        "demo:\n  (no resource templates)\n"
    );
}

#[test]
fn resource_meta_shows_sizes_without_bodies() {
    let result = json!({"contents": [
        {"uri": "demo://schema", "mimeType": "text/plain", "text": "CREATE TABLE t(x);"},
        {"uri": "file:///logo.png", "mimeType": "image/png", "blob": "iVBORw0KGgo="},
    ]});
    assert_eq!(
        resource_meta(&result),
        "demo://schema  text/plain  18 bytes  text\nfile:///logo.png  image/png  8 bytes  binary\n"
    );
}

#[test]
fn skill_uris_are_recognised() {
    assert!(is_skill_uri("skill://pdf/SKILL.md"));
    assert!(is_skill_uri("SKILL://x"));
    assert!(!is_skill_uri("skills://x"));
    assert!(!is_skill_uri("file:///skill://"));
    assert!(!is_skill_uri("sk"));
}

#[test]
fn human_sizes() {
    assert_eq!(human_size(1), "1 byte");
    assert_eq!(human_size(1023), "1023 bytes");
    assert_eq!(human_size(1536), "1.5 KiB");
    assert_eq!(human_size(3 * 1024 * 1024), "3.0 MiB");
}

#[test]
fn binary_contents_are_found_with_the_count_of_other_items() {
    let result = json!({"content": [
        {"type": "text", "text": "a picture"},
        {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
        {"type": "resource", "resource": {"uri": "x://y", "mimeType": "audio/wav", "blob": "UklGRg=="}},
        {"type": "resource", "resource": {"uri": "x://t", "text": "t"}},
    ]});
    let (binaries, others) = binary_contents(&result);
    assert_eq!(others, 2);
    assert_eq!(
        binaries,
        vec![
            BinaryContent {
                kind: "image",
                mime_type: Some("image/png"),
                data: "iVBORw0KGgo="
            },
            BinaryContent {
                kind: "resource",
                mime_type: Some("audio/wav"),
                data: "UklGRg=="
            },
        ]
    );
}

#[test]
fn server_help_says_how_to_go_on_then_lists_the_tools() {
    let tools = ListToolsResult {
        next_cursor: None,
        tool_count: None,
        server: "my server".into(),
        tools: vec![ToolSummary {
            server: None,
            overridden: false,
            flags: Vec::new(),
            name: "echo".into(),
            description: "Echoes.".into(),
            has_structured_output: false,
        }],
    };
    let help = server_help(&tools);
    assert!(
        help.starts_with("Usage: tool-cli 'my server' TOOL "),
        "{help}"
    );
    assert!(
        help.contains("\nTools of my server:\necho  Echoes.\n"),
        "{help}"
    );
}
