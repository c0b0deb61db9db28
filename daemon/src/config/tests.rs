//! Unit tests of the config: parsing, loading, the bundled default, every error's path.

use std::path::Path;

use serde_json::{Value, json};

use super::*;

fn servers_of(value: &Value) -> &serde_json::Map<String, Value> {
    value["mcpServers"].as_object().unwrap()
}

fn env(name: &str) -> Option<String> {
    match name {
        "API_KEY" => Some("secret".to_owned()),
        "PORT" => Some("8080".to_owned()),
        _ => None,
    }
}

#[test]
fn the_bundled_default_as_a_file_runs_the_same_servers() {
    let self_exe = Path::new("/opt/tool-cli/bin/tool-cli-daemon");
    let text = bundled_default_text(self_exe);
    let parsed = parse(&text, ConfigSource::File("/c.json".into()), &env).unwrap();
    assert_eq!(parsed.servers, bundled_default(self_exe).servers, "{text}");
}

fn parse_json(value: Value) -> Result<Config, ConfigError> {
    parse(
        &value.to_string(),
        ConfigSource::File("/c.json".into()),
        &env,
    )
}

#[test]
fn tool_overrides_and_priority_are_read_and_their_mistakes_named() {
    let config = parse_json(json!({"mcpServers": {"fs": {"command": "x", "priority": 3,
        "tools": {"read": {"description": "Read a file", "arguments": [
            {"name": "path", "type": "string", "description": "absolute", "required": true}]}}}}}))
    .unwrap();
    assert_eq!(config.servers[0].priority, 3);
    let read = &config.servers[0].tool_overrides["read"];
    assert_eq!(read.description.as_deref(), Some("Read a file"));
    assert_eq!(read.arguments[0].kind.as_deref(), Some("string"));

    let error = parse_json(json!({"mcpServers": {"fs": {"command": "x",
        "tools": {"read": {"arguments": [{"name": "path", "type": "str"}]}}}}}))
    .unwrap_err();
    assert_eq!(error.server.as_deref(), Some("fs"));
    assert_eq!(error.field.as_deref(), Some("tools.read.arguments[0].type"));
    assert!(
        error.to_string().contains("not a JSON Schema type"),
        "{error}"
    );
}

/// The issue: `${TOOL_CLI_TOKEN}` in a server's `args` or `env` put the owner token on a
/// command line and in a child's environment.
#[test]
fn the_daemons_own_variables_are_never_substituted_into_a_server() {
    let env = |name: &str| match name {
        "TOOL_CLI_TOKEN" => Some("a".repeat(64)),
        "TOOL_CLI_PORT" => Some("7179".to_owned()),
        _ => None,
    };
    let refused = |entry: Value, field: &str| {
        let text = json!({"mcpServers": {"s": entry}}).to_string();
        let error = parse(&text, ConfigSource::File("/c.json".into()), &env).unwrap_err();
        assert_eq!(error.field.as_deref(), Some(field), "{error}");
        let message = error.to_string();
        assert!(message.contains("${TOOL_CLI_"), "{message}");
        assert!(message.contains("never substituted"), "{message}");
        assert!(!message.contains(&"a".repeat(64)), "{message}");
    };
    refused(
        json!({"command": "x", "args": ["--token", "${TOOL_CLI_TOKEN}"]}),
        "args[1]",
    );
    refused(
        json!({"command": "x", "env": {"AUTH": "${TOOL_CLI_TOKEN}"}}),
        "env.AUTH",
    );
    refused(
        json!({"command": "x", "env": {"AUTH": "${TOOL_CLI_TOKEN:-none}"}}),
        "env.AUTH",
    );
    refused(json!({"command": "${TOOL_CLI_PORT}"}), "command");
    refused(
        json!({"url": "http://127.0.0.1:${TOOL_CLI_PORT}/mcp"}),
        "url",
    );
    refused(
        json!({"url": "http://127.0.0.1:9/mcp",
               "headers": {"Authorization": "Bearer ${TOOL_CLI_TOKEN}"}}),
        "headers.Authorization",
    );
    // `$$` escapes: the literal text is a server's business.
    let text = json!({"mcpServers": {"s": {"command": "x", "args": ["$${TOOL_CLI_TOKEN}"]}}});
    let config = parse(
        &text.to_string(),
        ConfigSource::File("/c.json".into()),
        &env,
    )
    .unwrap();
    let TransportConfig::Stdio { args, .. } = &config.servers[0].transport else {
        panic!("stdio");
    };
    assert_eq!(args, &["${TOOL_CLI_TOKEN}"]);
}

#[test]
fn a_stdio_server_takes_more_calls_at_once_by_default_than_an_http_one() {
    let config = parse_json(json!({"mcpServers": {
        "local": {"command": "x"},
        "remote": {"url": "https://example.com/mcp"},
        "capped": {"command": "x", "maxConcurrent": 4},
    }}))
    .unwrap();
    let limits: Vec<(&str, usize, usize)> = config
        .servers
        .iter()
        .map(|server| {
            (
                server.name.as_str(),
                server.max_concurrent,
                server.max_queued,
            )
        })
        .collect();
    assert_eq!(
        limits,
        [
            ("local", DEFAULT_MAX_CONCURRENT_STDIO, DEFAULT_MAX_QUEUED),
            ("remote", DEFAULT_MAX_CONCURRENT, DEFAULT_MAX_QUEUED),
            ("capped", 4, DEFAULT_MAX_QUEUED),
        ]
    );
}

#[test]
fn parses_stdio_and_http_servers_in_file_order() {
    let value = json!({"mcpServers": {
        "zeta": {"command": "node", "args": ["x.js"], "env": {"KEY": "${API_KEY}"},
                 "description": "z", "tags": ["a"], "timeoutMs": 5000},
        "alpha": {"url": "http://127.0.0.1:${PORT}/mcp",
                  "headers": {"Authorization": "Bearer ${API_KEY}"}, "enabled": false}
    }});
    assert_eq!(servers_of(&value).len(), 2);
    let config = parse_json(value).unwrap();
    assert_eq!(config.servers[0].name, "zeta");
    assert_eq!(
        config.servers[0].transport,
        TransportConfig::Stdio {
            command: "node".into(),
            args: vec!["x.js".into()],
            env: BTreeMap::from([("KEY".into(), "secret".into())]),
            cwd: None,
        }
    );
    assert_eq!(config.servers[0].call_timeout, Duration::from_secs(5));
    assert_eq!(
        config.servers[1].transport,
        TransportConfig::Http {
            url: "http://127.0.0.1:8080/mcp".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer secret".into())]),
            remote: RemoteOptions::default(),
        }
    );
    assert!(!config.servers[1].enabled);
    // What `${VAR}` put in is remembered, to be redacted from logs and errors.
    assert_eq!(config.servers[0].substituted, ["secret"]);
    assert_eq!(config.servers[1].substituted, ["8080", "secret"]);
}

#[test]
fn the_command_line_takes_variables_and_defaults_too() {
    let config = parse_json(json!({"mcpServers": {"s": {
        "command": "${TOOLS:-/opt/tools}/server",
        "args": ["--port", "${PORT}", "--mode=${MODE:-fast}", "$$literal"],
    }}}))
    .unwrap();
    let TransportConfig::Stdio { command, args, .. } = &config.servers[0].transport else {
        panic!("stdio");
    };
    assert_eq!(command, "/opt/tools/server");
    assert_eq!(args, &["--port", "8080", "--mode=fast", "$literal"]);
    assert_eq!(config.servers[0].substituted, ["8080"]);
    let err = parse_json(json!({"mcpServers": {"s": {"command": "x", "args": ["a", "${NOPE}"]}}}))
        .unwrap_err();
    assert_eq!(err.field.as_deref(), Some("args[1]"));
}

#[test]
fn a_bad_url_is_quoted_as_written_not_as_expanded() {
    let err = parse_json(json!({"mcpServers": {"x": {"url": "ftp://h/?k=${API_KEY}"}}}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("ftp://h/?k=${API_KEY}"), "{err}");
    assert!(!err.contains("secret"), "{err}");
}

#[test]
fn errors_name_the_file_server_and_field() {
    let err = parse_json(json!({"mcpServers": {"s": {"command": "x", "env": {"A": "${NOPE}"}}}}))
        .unwrap_err();
    assert_eq!(err.server.as_deref(), Some("s"));
    assert_eq!(err.field.as_deref(), Some("env.A"));
    assert!(err.to_string().contains("/c.json"), "{err}");
    assert!(err.to_string().contains("${NOPE}"), "{err}");

    let err =
        parse_json(json!({"mcpServers": {"s": {"type": "sse", "url": "http://x"}}})).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("type"));

    let err = parse_json(json!({"mcpServers": {"s": {"type": "carrier-pigeon"}}})).unwrap_err();
    assert!(err.message.contains("unknown transport"), "{err}");

    let err = parse_json(json!({"mcpServers": {"s": {"args": ["a"]}}})).unwrap_err();
    assert!(
        err.message.contains("neither \"command\" nor \"url\""),
        "{err}"
    );

    let err = parse_json(json!({"mcpServers": {"s": {"command": "x", "arg": []}}})).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("arg"));

    let err = parse_json(json!({"mcpServers": {"s": {"command": 7}}})).unwrap_err();
    assert!(err.message.contains("invalid type"), "{err}");
    assert_eq!(err.field.as_deref(), Some("command"), "{err}");

    // A value of the wrong type names its field and the type in the config's words.
    for (entry, field, expected) in [
        (
            json!({"command": "x", "timeoutMs": "fast"}),
            "timeoutMs",
            "expected a whole number ≥ 0",
        ),
        (
            json!({"command": "x", "maxConcurrent": -1}),
            "maxConcurrent",
            "≥ 0",
        ),
        (
            json!({"command": "x", "args": "a b"}),
            "args",
            "expected an array",
        ),
        (
            json!({"command": "x", "env": ["A=1"]}),
            "env",
            "expected an object",
        ),
        (
            json!({"command": "x", "enabled": "yes"}),
            "enabled",
            "expected a boolean",
        ),
    ] {
        let err = parse_json(json!({"mcpServers": {"s": entry}})).unwrap_err();
        assert_eq!(err.field.as_deref(), Some(field), "{err}");
        assert!(err.message.contains(expected), "{err}");
    }

    let err = parse_json(json!({"mcpServers": {"s": {"url": "ftp://x"}}})).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("url"));

    let err = parse_json(json!({"mcpServers": {"s": {"command": "x",
        "env": {"TOOL_CLI_TOKEN": "t"}}}}))
    .unwrap_err();
    assert_eq!(err.field.as_deref(), Some("env.TOOL_CLI_TOKEN"));

    let err = parse_json(json!({"mcpServers": {"bad name": {"command": "x"}}})).unwrap_err();
    assert!(err.message.contains("invalid server name"), "{err}");

    let err = parse_json(json!({"servers": 3})).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("mcpServers"));

    let err = parse_json(json!({})).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("mcpServers"));

    let err = parse(
        "{\"mcpServers\": ",
        ConfigSource::File("/c.json".into()),
        &env,
    )
    .unwrap_err();
    assert!(err.message.contains("invalid JSON at line 1"), "{err}");
}

#[test]
fn fields_of_other_clients_are_read_or_noted_not_refused() {
    let config = parse_json(json!({"mcpServers": {
        "cline": {"command": "x", "autoApprove": ["a"], "disabled": true, "timeout": 30,
                  "transportType": "stdio"},
        "windsurf": {"serverUrl": "https://h/mcp", "disabledTools": ["rm"]}
    }}))
    .unwrap();
    assert!(!config.servers[0].enabled);
    assert_eq!(config.servers[0].call_timeout, Duration::from_secs(30));
    assert_eq!(
        config.servers[1].transport,
        TransportConfig::Http {
            url: "https://h/mcp".into(),
            headers: BTreeMap::new(),
            remote: RemoteOptions::default(),
        }
    );
    let ignored: Vec<String> = config
        .notes
        .iter()
        .filter(|note| note.ignored)
        .map(ToString::to_string)
        .collect();
    assert_eq!(ignored.len(), 1, "{ignored:?}");
    assert!(
        ignored[0].starts_with(r#"config /c.json: server "cline": field "autoApprove" ignored"#),
        "{ignored:?}"
    );
    assert_eq!(config.notes.len(), 5, "{:?}", config.notes);
    // Unknown fields are still refused, with their path.
    let err =
        parse_json(json!({"mcpServers": {"s": {"command": "x", "autoApprov": []}}})).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("autoApprov"));
}

#[test]
fn substitution_handles_escapes_and_bad_references() {
    assert_eq!(substitute("a${PORT}b", &env).unwrap(), "a8080b");
    assert_eq!(
        substitute("cost $$5 and $x", &env).unwrap(),
        "cost $5 and $x"
    );
    assert!(
        substitute("${", &env)
            .unwrap_err()
            .to_string()
            .contains("unterminated")
    );
    assert!(
        substitute("${1A}", &env)
            .unwrap_err()
            .to_string()
            .contains("not a valid")
    );
    assert!(
        substitute("${MISSING}", &env)
            .unwrap_err()
            .to_string()
            .contains("not set")
    );
}

#[test]
fn locate_prefers_cli_then_env() {
    assert_eq!(
        locate(Some("/a".into()), Some("/b".into()), None),
        Some(PathBuf::from("/a"))
    );
    assert_eq!(
        locate(None, Some("/b".into()), None),
        Some(PathBuf::from("/b"))
    );
    assert_eq!(
        locate(None, Some("".into()), Some("/nonexistent-home".into())),
        None
    );
}

#[test]
fn the_traces_section_is_read_beside_the_servers_and_its_errors_name_the_path() {
    let config = parse_json(
        json!({"mcpServers": {}, "traces": {"path": "t/traces.jsonl",
        "verbose": true, "maxBytes": 2048, "keep": 3}}),
    )
    .unwrap();
    assert_eq!(config.traces.path, Some(PathBuf::from("/t/traces.jsonl")));
    assert!(config.traces.verbose && config.traces.enabled);
    assert_eq!((config.traces.max_bytes, config.traces.keep), (2048, 3));
    assert_eq!(
        parse_json(json!({"mcpServers": {}})).unwrap().traces,
        TracesConfig::default()
    );

    let err = parse_json(json!({"mcpServers": {}, "traces": {"keep": "all"}})).unwrap_err();
    assert_eq!(
        (err.server.as_deref(), err.field.as_deref()),
        (None, Some("traces.keep"))
    );
    let text = err.to_string();
    assert!(
        text.starts_with("config /c.json: field \"traces.keep\": expected"),
        "{text}"
    );
}

#[test]
fn a_servers_protocol_is_read_defaults_to_auto_and_a_wrong_one_is_named() {
    let config = parse_json(json!({"mcpServers": {
        "new": {"command": "x", "protocol": "2026-07-28"},
        "old": {"url": "http://127.0.0.1:1/mcp", "protocol": "2025-11-25"},
        "any": {"command": "x"},
    }}))
    .unwrap();
    let protocol_of = |name: &str| {
        config
            .servers
            .iter()
            .find(|server| server.name == name)
            .map(|server| server.protocol)
    };
    assert_eq!(protocol_of("new"), Some(UpstreamProtocol::Stateless));
    assert_eq!(protocol_of("old"), Some(UpstreamProtocol::Session));
    assert_eq!(protocol_of("any"), Some(UpstreamProtocol::Auto));
    let error =
        parse_json(json!({"mcpServers": {"s": {"command": "x", "protocol": "2026"}}})).unwrap_err();
    assert_eq!(error.field.as_deref(), Some("protocol"), "{error}");
    assert!(error.to_string().contains("\"2026-07-28\""), "{error}");
}
