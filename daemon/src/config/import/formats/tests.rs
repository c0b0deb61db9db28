//! Each client's fixture file, and malformed files of each kind.

use std::path::Path;

use serde_json::{Value, json};

use crate::config::import::{ClientKind, Found, ImportError, parse};

fn fixture(kind: ClientKind, file: &str, project: &str) -> Found {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/config/import/fixtures")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    parse(kind, &text, &path, Path::new(project)).unwrap()
}

fn entry(found: &Found, name: &str) -> Value {
    let server = found
        .servers
        .iter()
        .find(|server| server.name == name)
        .unwrap_or_else(|| panic!("{name} not found in {found:#?}"));
    Value::Object(server.entry.clone())
}

fn notes(found: &Found, name: &str) -> String {
    found
        .servers
        .iter()
        .find(|server| server.name == name)
        .unwrap()
        .notes
        .join("\n")
}

fn names(found: &Found) -> Vec<&str> {
    found.servers.iter().map(|s| s.name.as_str()).collect()
}

#[test]
fn claude_desktop() {
    let found = fixture(
        ClientKind::ClaudeDesktop,
        "claude_desktop_config.json",
        "/p",
    );
    assert_eq!(names(&found), ["filesystem", "github"]);
    assert_eq!(
        entry(&found, "github")["env"],
        json!({"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"})
    );
    assert!(found.skipped.is_empty());
}

#[test]
fn claude_code_user_file_with_projects() {
    let found = fixture(ClientKind::ClaudeCode, "claude.json", "/work/app");
    assert_eq!(names(&found), ["memory", "shared", "sentry"]);
    assert_eq!(
        entry(&found, "shared")["command"],
        "project-version",
        "the project wins"
    );
    assert_eq!(entry(&found, "sentry")["type"], "http");
    assert!(
        found
            .notes
            .iter()
            .any(|note| note.contains("defined twice"))
    );
    assert!(
        found
            .notes
            .iter()
            .any(|note| note.contains("/work/other") && note.contains("linear")),
        "{:?}",
        found.notes
    );
    // From elsewhere, only the user's servers.
    let elsewhere = fixture(ClientKind::ClaudeCode, "claude.json", "/somewhere");
    assert_eq!(names(&elsewhere), ["memory", "shared"]);
}

#[test]
fn claude_code_project_file_skips_sse() {
    let found = fixture(ClientKind::ClaudeCode, "mcp.json", "/p");
    assert_eq!(names(&found), ["everything"]);
    assert_eq!(found.skipped.len(), 1);
    assert!(found.skipped[0].contains("old-sse") && found.skipped[0].contains("SSE"));
}

#[test]
fn cursor() {
    let found = fixture(ClientKind::Cursor, "cursor_mcp.json", "/p");
    assert_eq!(names(&found), ["browser", "remote"]);
    assert_eq!(
        entry(&found, "browser"),
        json!({"command": "npx", "args": ["@browsermcp/mcp@latest"]})
    );
    let browser = notes(&found, "browser");
    assert!(
        browser.contains("envFile") && browser.contains("autoApprove"),
        "{browser}"
    );
    assert_eq!(entry(&found, "remote")["headers"]["API_KEY"], "${API_KEY}");
    assert_eq!(found.skipped.len(), 1);
    assert!(found.skipped[0].contains("broken"), "{:?}", found.skipped);
}

#[test]
fn vscode_with_inputs_comments_and_workspace() {
    let found = fixture(ClientKind::VsCode, "vscode_mcp.json", "/work/app");
    assert_eq!(names(&found), ["perplexity", "fetch", "files"]);
    assert_eq!(
        entry(&found, "perplexity")["env"]["PERPLEXITY_API_KEY"],
        "${PERPLEXITY_KEY}"
    );
    assert!(notes(&found, "perplexity").contains("${input:perplexity-key}"));
    assert!(
        found
            .notes
            .iter()
            .any(|note| note.contains("perplexity-key")
                && note.contains("Perplexity API Key")
                && note.contains("${PERPLEXITY_KEY}")),
        "{:?}",
        found.notes
    );
    assert_eq!(
        entry(&found, "files")["args"],
        json!(["/work/app/server.js"])
    );
    assert!(notes(&found, "files").contains("dev"));
    assert!(notes(&found, "fetch").contains("gallery"));
}

#[test]
fn windsurf() {
    let found = fixture(ClientKind::Windsurf, "windsurf_mcp_config.json", "/p");
    assert_eq!(entry(&found, "git")["denyTools"], json!(["git_reset"]));
    assert_eq!(
        entry(&found, "figma"),
        json!({"disabled": true, "url": "http://127.0.0.1:3845/mcp"})
    );
    assert!(notes(&found, "figma").contains("serverUrl"));
}

#[test]
fn codex() {
    let found = fixture(ClientKind::Codex, "codex_config.toml", "/p");
    assert_eq!(names(&found), ["docs", "figma"]);
    let docs = entry(&found, "docs");
    assert_eq!(docs["command"], "docs-server");
    assert_eq!(docs["timeoutMs"], 45_000);
    assert_eq!(docs["allowTools"], json!(["search"]));
    assert_eq!(
        docs["env"],
        json!({"API_KEY": "value", "HOME_TOKEN": "${HOME_TOKEN}"})
    );
    assert!(docs.get("sandbox").is_none());
    let docs_notes = notes(&found, "docs");
    assert!(
        docs_notes.contains("sandbox") && docs_notes.contains("startup_timeout_sec"),
        "{docs_notes}"
    );
    let figma = entry(&found, "figma");
    assert_eq!(
        figma["headers"]["Authorization"],
        "Bearer ${FIGMA_OAUTH_TOKEN}"
    );
    assert_eq!(figma["headers"]["X-Figma-Region"], "us-east-1");
    assert_eq!(figma["disabled"], true);
    assert!(found.skipped[0].contains("nothing"), "{:?}", found.skipped);
}

#[test]
fn malformed_files_of_each_kind_say_what_was_expected() {
    let cases: &[(ClientKind, &str, &str)] = &[
        (
            ClientKind::ClaudeDesktop,
            "{\"mcpServers\": ",
            "invalid JSON",
        ),
        (ClientKind::ClaudeDesktop, "[]", "expected a JSON object"),
        (ClientKind::Cursor, "{\"servers\": {}}", "no \"mcpServers\""),
        (
            ClientKind::Cursor,
            "{\"mcpServers\": [1]}",
            "expected an object",
        ),
        (
            ClientKind::Windsurf,
            "{\"mcpServers\": \"x\"}",
            "expected an object",
        ),
        (ClientKind::ClaudeCode, "{\"numStartups\": 1}", "neither"),
        (ClientKind::ClaudeCode, "{\"projects\": []}", "\"projects\""),
        (ClientKind::VsCode, "{\"mcpServers\": {}}", "no \"servers\""),
        (
            ClientKind::VsCode,
            "{\"servers\": {}, \"inputs\": {}}",
            "\"inputs\"",
        ),
        (
            ClientKind::VsCode,
            "{\"servers\": {}, \"inputs\": [{}]}",
            "\"id\"",
        ),
        (
            ClientKind::Codex,
            "[mcp_servers.x\ncommand = 1",
            "invalid TOML",
        ),
        (ClientKind::Codex, "model = \"o3\"", "no [mcp_servers.NAME]"),
        (ClientKind::Codex, "mcp_servers = 3", "not a table"),
    ];
    for (kind, text, expected) in cases {
        match parse(*kind, text, Path::new("/f"), Path::new("/p")) {
            Err(ImportError::Malformed { reason, .. }) => {
                assert!(reason.contains(expected), "{kind} {text:?}: {reason}");
            }
            other => panic!("{kind} {text:?}: expected malformed, got {other:?}"),
        }
    }
    // A server entry that is not an object is skipped, not fatal.
    let found = parse(
        ClientKind::Cursor,
        r#"{"mcpServers": {"a": 3, "b": {"command": "x"}}}"#,
        Path::new("/f"),
        Path::new("/p"),
    )
    .unwrap();
    assert_eq!(names(&found), ["b"]);
    assert!(found.skipped[0].contains("a number"));
}

#[test]
fn jsonc_keeps_strings_intact() {
    let text = "{\"a\": \"http://x//y\", /* c */ \"b\": [1, 2,], // d\n}";
    let value: Value = serde_json::from_str(&super::strip_jsonc(text)).unwrap();
    assert_eq!(value, json!({"a": "http://x//y", "b": [1, 2]}));
}

#[test]
fn each_format_error_keeps_its_wording() {
    use super::{FormatError, claude_code, codex, mcp_servers, vscode};
    let here = Path::new("/p");
    assert_eq!(
        mcp_servers("{}", ClientKind::Cursor, None)
            .unwrap_err()
            .to_string(),
        r#"no "mcpServers" object; expected {"mcpServers": {"name": {"command": ...}}}"#
    );
    assert_eq!(
        vscode("{}", here).unwrap_err().to_string(),
        r#"no "servers" object; expected {"servers": {"name": {"type": "stdio", "command": ...}}}"#
    );
    assert_eq!(
        claude_code("{}", None).unwrap_err().to_string(),
        r#"neither "mcpServers" nor "projects"; expected Claude Code's .mcp.json or ~/.claude.json"#
    );
    assert_eq!(
        mcp_servers("[1]", ClientKind::Cursor, None).unwrap_err(),
        FormatError::NotAnObject("an array")
    );
    assert_eq!(
        vscode(r#"{"servers": {}, "inputs": [{}]}"#, here)
            .unwrap_err()
            .to_string(),
        r#"an "inputs" item has no string "id""#
    );
    assert_eq!(
        codex("x = 1").unwrap_err().to_string(),
        r#"no [mcp_servers.NAME] table; expected e.g. [mcp_servers.fs] with command = "npx""#
    );
    assert!(
        codex("[[")
            .unwrap_err()
            .to_string()
            .starts_with("invalid TOML: ")
    );
}
