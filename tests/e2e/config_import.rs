//! `tool-cli config import` end to end: the real `tool-cli` runs the real `tool-cli-daemon
//! import` over client files written into a fake home and project directory (never the real
//! `$HOME`), then a real daemon serves what was imported, with real peers.
//!
//! - every client kind found at its usual place (Claude Desktop, Claude Code with per-project
//!   entries, Cursor, VS Code with inputs, Windsurf, Codex TOML):
//!   `each_client_is_read_from_its_usual_place`
//! - `--write` merges into our config, a daemon serves the imported filesystem server, a second
//!   import reports the conflict and leaves the file alone; `server reload` picks up a later
//!   import: `imported_servers_run_and_conflicts_are_never_overwritten`
//! - malformed files of each kind, a config importing itself, an unknown client, a missing file:
//!   `bad_imports_are_refused_with_what_would_be_right`
//! - `imports: ["cursor", …]` in our config: read live at start, the file's own servers win, a
//!   missing client file is a warning, an unknown client refuses the config:
//!   `live_imports_serve_another_clients_servers`
//! - a world-writable `.mcp.json` in the daemon's working directory is never read; a project is
//!   read only when the config names it, only when its file is private, and each imported
//!   server is logged: `live_imports_read_only_named_projects_and_private_files`

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, DaemonOptions, client_command, demo_server, filesystem_server, run_with_timeout,
    scratch,
};

/// A fake home and a project directory inside one temp dir.
struct Places {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

impl Places {
    fn new() -> Places {
        let dir = scratch();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        Places {
            home: home.canonicalize().unwrap(),
            project: project.canonicalize().unwrap(),
            _dir: dir,
        }
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn import(&self, args: &[&str]) -> Output {
        let mut command = client_command();
        command
            .args(["config", "import"])
            .args(args)
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("APPDATA");
        run_with_timeout(command, Duration::from_secs(30))
    }

    fn import_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let output = self.import(&all);
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    }
}

fn names(report: &Value) -> Vec<&str> {
    report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|server| server["name"].as_str().unwrap())
        .collect()
}

#[test]
fn each_client_is_read_from_its_usual_place() {
    let places = Places::new();
    let project = places.project.display().to_string();
    places.write(
        &places
            .home
            .join(".config/Claude/claude_desktop_config.json"),
        r#"{"mcpServers": {"desk": {"command": "npx", "args": ["-y", "x"]}}}"#,
    );
    places.write(
        &places.home.join(".claude.json"),
        &json!({
            "mcpServers": {"user-wide": {"type": "stdio", "command": "a"}},
            "projects": {
                project.clone(): {"mcpServers": {"here": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}},
                "/elsewhere": {"mcpServers": {"there": {"command": "b"}}}
            }
        })
        .to_string(),
    );
    places.write(
        &places.home.join(".cursor/mcp.json"),
        r#"{"mcpServers": {"cur": {"command": "c", "autoApprove": ["x"],
            "args": ["${workspaceFolder}/data", "${userHome}/notes"],
            "env": {"TOKEN": "${env:CURSOR_TOKEN}"}}}}"#,
    );
    places.write(
        &places.project.join(".vscode/mcp.json"),
        "{ // comment\n \"inputs\": [{\"type\": \"promptString\", \"id\": \"key\"}],\n \
         \"servers\": {\"vs\": {\"type\": \"stdio\", \"command\": \"d\", \"env\": {\"K\": \"${input:key}\"}},},}",
    );
    places.write(
        &places.home.join(".codeium/windsurf/mcp_config.json"),
        r#"{"mcpServers": {"surf": {"serverUrl": "http://127.0.0.1:2/mcp",
            "headers": {"Authorization": "Bearer ${env:SURF_KEY}"}}}}"#,
    );
    places.write(
        &places.home.join(".codex/config.toml"),
        "[mcp_servers.cdx]\ncommand = \"e\"\ntool_timeout_sec = 30\n",
    );
    places.write(
        &places.home.join(".config/opencode/opencode.json"),
        r#"{"mcp": {"user-level": {"type": "local", "command": ["u"]}}}"#,
    );
    places.write(
        &places.project.join("opencode.json"),
        r#"{"$schema": "https://opencode.ai/config.json", // a comment
            "mcp": {"oc": {"type": "local", "command": ["npx", "-y", "pkg"],
                           "environment": {"KEY": "{env:OC_KEY}"}},
                    "ocr": {"type": "remote", "url": "http://127.0.0.1:3/mcp",
                            "headers": {"X-Team": "t"}, "enabled": false}}}"#,
    );

    let desktop = places.import_json(&["--from", "claude-desktop"]);
    assert_eq!(names(&desktop), ["desk"]);
    assert_eq!(desktop["written"], false);
    let code = places.import_json(&["--from", "claude-code"]);
    assert_eq!(names(&code), ["user-wide", "here"]);
    assert!(code["notes"].to_string().contains("/elsewhere"), "{code}");
    let cursor = places.import_json(&["--from", "cursor"]);
    assert_eq!(names(&cursor), ["cur"]);
    assert!(
        cursor["servers"][0]["notes"]
            .to_string()
            .contains("autoApprove")
    );
    // Cursor's own variables become ours (`${env:X}` → `${X}`), or the project directory.
    let entry = &cursor["servers"][0]["entry"];
    assert_eq!(entry["env"]["TOKEN"], "${CURSOR_TOKEN}", "{cursor}");
    assert_eq!(entry["args"][0], format!("{project}/data"), "{cursor}");
    assert_eq!(entry["args"][1], "${HOME}/notes", "{cursor}");
    let vscode = places.import_json(&["--from", "vscode"]);
    assert_eq!(vscode["servers"][0]["entry"]["env"]["K"], "${KEY}");
    assert!(
        vscode["notes"].to_string().contains("input \\\"key\\\""),
        "{vscode}"
    );
    let windsurf = places.import_json(&["--from", "windsurf"]);
    assert_eq!(
        windsurf["servers"][0]["entry"]["url"],
        "http://127.0.0.1:2/mcp"
    );
    assert_eq!(
        windsurf["servers"][0]["entry"]["headers"]["Authorization"],
        "Bearer ${SURF_KEY}"
    );
    let codex = places.import_json(&["--from", "codex"]);
    assert_eq!(codex["servers"][0]["entry"]["timeoutMs"], 30_000);
    // OpenCode: the project's opencode.json wins over the user's.
    let opencode = places.import_json(&["--from", "opencode"]);
    assert_eq!(names(&opencode), ["oc", "ocr"], "{opencode}");
    let local = &opencode["servers"][0]["entry"];
    assert_eq!(local["command"], "npx", "{opencode}");
    assert_eq!(local["args"], json!(["-y", "pkg"]), "{opencode}");
    assert_eq!(local["env"]["KEY"], "${OC_KEY}", "{opencode}");
    let remote = &opencode["servers"][1]["entry"];
    assert_eq!(remote["url"], "http://127.0.0.1:3/mcp", "{opencode}");
    assert_eq!(remote["headers"]["X-Team"], "t", "{opencode}");
    assert_eq!(remote["disabled"], true, "{opencode}");

    // The human report says what was found and how to write it.
    let text = places.import(&["--from", "cursor"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("cur (new): c"), "{text}");
    assert!(text.contains("run again with --write"), "{text}");
}

#[test]
fn imported_servers_run_and_conflicts_are_never_overwritten() {
    let places = Places::new();
    let files = places.project.join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("hello.txt"), "imported").unwrap();
    places.write(
        &places
            .home
            .join(".config/Claude/claude_desktop_config.json"),
        &json!({"mcpServers": {"fs": filesystem_server(&files)}}).to_string(),
    );
    // Our config already has the demo server; the daemon runs on it.
    let daemon = Daemon::start_with_dir_and(
        |dir| json!({"mcpServers": {"demo": demo_server(dir)}}),
        DaemonOptions::default(),
    );
    let target = daemon.config_path.display().to_string();
    let written = places.import_json(&["--from", "claude-desktop", "--config", &target, "--write"]);
    assert_eq!(written["added"], json!(["fs"]));
    assert_eq!(written["written"], true);
    let config: Value =
        serde_json::from_slice(&std::fs::read(&daemon.config_path).unwrap()).unwrap();
    assert!(
        config["mcpServers"]["demo"].is_object(),
        "our servers are kept: {config}"
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&daemon.config_path)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "written private");

    // The running daemon picks the import up on reload, and the imported server works.
    let reloaded = daemon.run_client(&["server", "reload"], &[]);
    assert!(
        reloaded.status.success(),
        "{}",
        String::from_utf8_lossy(&reloaded.stderr)
    );
    assert!(String::from_utf8_lossy(&reloaded.stdout).contains("added: fs"));
    let read = daemon.call_tool(
        "fs",
        "read_text_file",
        json!({"path": files.join("hello.txt")}),
    );
    assert_eq!(read["content"][0]["text"], "imported");

    // The same import again changes nothing; a different entry under that name is a conflict.
    let again = places.import_json(&["--from", "claude-desktop", "--config", &target, "--write"]);
    assert_eq!(again["unchanged"], json!(["fs"]));
    assert_eq!(again["written"], false);
    places.write(
        &places
            .home
            .join(".config/Claude/claude_desktop_config.json"),
        r#"{"mcpServers": {"fs": {"command": "something-else"}, "demo": {"command": "theirs"}}}"#,
    );
    let before = std::fs::read(&daemon.config_path).unwrap();
    let conflict = places.import(&["--from", "claude-desktop", "--config", &target, "--write"]);
    assert!(conflict.status.success());
    let text = String::from_utf8_lossy(&conflict.stdout);
    assert!(
        text.contains("conflict:") && text.contains("\"fs\"") && text.contains("\"demo\""),
        "{text}"
    );
    assert_eq!(
        std::fs::read(&daemon.config_path).unwrap(),
        before,
        "never overwritten"
    );
}

#[test]
fn bad_imports_are_refused_with_what_would_be_right() {
    let places = Places::new();
    let refused = |args: &[&str], expected: &str| {
        let output = places.import(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    };
    refused(&["--from", "cursor"], "no cursor config found");
    refused(&["--from", "notepad"], "claude-desktop");
    let malformed: [(&str, &str, &str); 6] = [
        ("claude-desktop", "claude.json", "{\"mcpServers\": "),
        ("claude-code", "claude-code.json", "{\"projects\": 3}"),
        ("cursor", "cursor.json", "[1, 2]"),
        ("vscode", "vscode.json", "{\"mcpServers\": {}}"),
        ("windsurf", "windsurf.json", "{\"mcpServers\": \"all\"}"),
        ("codex", "codex.toml", "[mcp_servers.x\ncommand = 1"),
    ];
    for (kind, file, text) in malformed {
        let path = places.project.join(file);
        std::fs::write(&path, text).unwrap();
        refused(
            &["--from", kind, "--path", path.to_str().unwrap()],
            &format!("is not a valid {kind} config"),
        );
    }
    // A config importing itself, also through another spelling of its path.
    let ours = places.project.join("servers.json");
    std::fs::write(&ours, r#"{"mcpServers": {"a": {"command": "x"}}}"#).unwrap();
    let other_spelling = places.project.join("../project/servers.json");
    refused(
        &[
            "--from",
            "cursor",
            "--path",
            other_spelling.to_str().unwrap(),
            "--config",
            ours.to_str().unwrap(),
            "--write",
        ],
        "importing it into itself",
    );
}

#[test]
fn live_imports_serve_another_clients_servers() {
    let places = Places::new();
    let files = places.project.join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("live.txt"), "read live").unwrap();
    places.write(
        &places.home.join(".cursor/mcp.json"),
        &json!({"mcpServers": {
            "fs": filesystem_server(&files),
            "demo": {"command": "cursor-would-run-this"},
        }})
        .to_string(),
    );
    let home = places.home.display().to_string();
    let daemon = Daemon::start_with_dir_and(
        |dir| json!({"imports": ["cursor", "codex"], "mcpServers": {"demo": demo_server(dir)}}),
        DaemonOptions {
            env: vec![("HOME".to_owned(), home.clone())],
            ..DaemonOptions::default()
        },
    );
    let read = daemon.call_tool(
        "fs",
        "read_text_file",
        json!({"path": files.join("live.txt")}),
    );
    assert_eq!(read["content"][0]["text"], "read live");
    // The file's own "demo" wins; the missing Codex file is a warning, not a failure.
    daemon.call_tool("demo", "describe_schema", json!({}));
    let log = daemon.stderr();
    assert!(log.contains("the config defines it"), "{log}");
    assert!(log.contains("no codex config found"), "{log}");

    // An imports value that is not a list of clients stops the daemon before it starts.
    let refused = Daemon::try_start_with(
        json!({"imports": ["cursor", "notepad"], "mcpServers": {}}),
        DaemonOptions {
            env: vec![("HOME".to_owned(), home)],
            ..DaemonOptions::default()
        },
    );
    let failure = refused.err().expect("the daemon must refuse the config");
    assert!(
        failure.contains("imports[1]") && failure.contains("unknown client \"notepad\""),
        "{failure}"
    );
}

/// The issue: live `imports` ran the servers of a world-writable `./.mcp.json` in the daemon's
/// working directory, silently (as root in the test).
#[test]
fn live_imports_read_only_named_projects_and_private_files() {
    use std::os::unix::fs::PermissionsExt as _;
    let places = Places::new();
    let project_file = places.project.join(".mcp.json");
    places.write(
        &project_file,
        &json!({"mcpServers": {"planted": {"command": "/nonexistent/planted-server"}}}).to_string(),
    );
    std::fs::set_permissions(&project_file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let home = places.home.display().to_string();
    let options = |current_dir: &Path| DaemonOptions {
        env: vec![("HOME".to_owned(), home.clone())],
        current_dir: Some(current_dir.to_path_buf()),
        ..DaemonOptions::default()
    };
    let server_names = |daemon: &Daemon| -> Vec<String> {
        daemon.call("listServers", Value::Null)["servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|server| server["name"].as_str().unwrap().to_owned())
            .collect()
    };

    // Started in the project directory, with the client named: its project file is not read.
    let daemon = Daemon::start_with_dir_and(
        |dir| json!({"imports": ["claude-code"], "mcpServers": {"demo": demo_server(dir)}}),
        options(&places.project),
    );
    assert_eq!(server_names(&daemon), ["demo"]);
    drop(daemon);

    // Named as the project, a file others may write is refused, and the log says why.
    let project = places.project.display().to_string();
    let named = json!({"imports": [{"client": "claude-code", "project": project}],
                       "mcpServers": {}});
    let daemon = Daemon::start_with(named.clone(), options(&places.home));
    assert!(server_names(&daemon).is_empty());
    let log = daemon.stderr();
    assert!(
        log.contains("writable by other users") && log.contains(".mcp.json"),
        "{log}"
    );
    drop(daemon);

    // Private, it is imported, and the log names it, where it came from and what it runs.
    std::fs::set_permissions(&project_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let daemon = Daemon::start_with(named, options(&places.home));
    assert_eq!(server_names(&daemon), ["planted"]);
    let log = daemon.stderr();
    assert!(
        log.contains("server \"planted\"")
            && log.contains("imported from claude-code's")
            && log.contains("runs /nonexistent/planted-server"),
        "{log}"
    );
}

/// Claude Code's `${VAR:-default}` (and `${VAR-default}`) were refused by our parser; they now
/// mean what they mean in the shell, so such an entry imports and runs.
#[test]
fn a_claude_code_default_imports_and_runs() {
    let places = Places::new();
    let files = places.project.join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("hello.txt"), "from the default").unwrap();
    let mut entry = filesystem_server(&files);
    // The root directory, the server's last argument, as a default.
    let args = entry["args"].as_array_mut().expect("args");
    *args.last_mut().expect("the root") = json!(format!(
        "${{UNSET_E2E_ROOT_OF_TOOL_CLI_TESTS:-{}}}",
        files.display()
    ));
    entry["env"] = json!({"SOME_MODE": "${UNSET_E2E_MODE_OF_TOOL_CLI_TESTS-plain}"});
    places.write(
        &places.project.join(".mcp.json"),
        &json!({"mcpServers": {"files": entry}}).to_string(),
    );
    let daemon = Daemon::start_with_dir_and(
        |dir| json!({"mcpServers": {"demo": demo_server(dir)}}),
        DaemonOptions::default(),
    );
    let target = daemon.config_path.display().to_string();
    let written = places.import_json(&["--from", "claude-code", "--config", &target, "--write"]);
    assert_eq!(written["added"], json!(["files"]), "{written}");
    let reloaded = daemon.run_client(&["server", "reload"], &[]);
    assert!(
        reloaded.status.success(),
        "{}",
        String::from_utf8_lossy(&reloaded.stderr)
    );
    let read = daemon.call_tool(
        "files",
        "read_text_file",
        json!({"path": files.join("hello.txt")}),
    );
    assert_eq!(read["content"][0]["text"], "from the default", "{read}");
}
