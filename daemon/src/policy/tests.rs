//! Unit tests of the policy: globs, the config's policy, scopes and the decisions.

use serde_json::json;

use super::scope::format_duration;
use super::*;

fn h(annotations: &Value) -> ToolHints {
    ToolHints::from_annotations(annotations)
}

fn globs(items: &[&str]) -> Vec<String> {
    items.iter().map(|&item| item.to_owned()).collect()
}

fn at(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
}

fn entry(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("test entry must be an object, got {other}"),
    }
}

/// The obvious exponential matcher, as the reference for small inputs.
fn reference_match(pattern: &[char], text: &[char]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some(('*', rest)) => (0..=text.len()).any(|skip| reference_match(rest, &text[skip..])),
        Some((&c, rest)) => match text.split_first() {
            Some((&t, text_rest)) if c == '?' || c == t => reference_match(rest, text_rest),
            _ => false,
        },
    }
}

/// Every string of length 0..=max_len over `alphabet`.
fn all_strings(alphabet: &[char], max_len: usize) -> Vec<String> {
    let mut all = vec![String::new()];
    let mut previous = vec![String::new()];
    for _ in 0..max_len {
        let next: Vec<String> = previous
            .iter()
            .flat_map(|prefix| alphabet.iter().map(move |&c| format!("{prefix}{c}")))
            .collect();
        all.extend(next.iter().cloned());
        previous = next;
    }
    all
}

// ---- glob_match ----

#[test]
fn literal_globs_match_only_themselves() {
    assert!(glob_match("read_file", "read_file"));
    assert!(!glob_match("read_file", "read_files"));
    assert!(!glob_match("read_file", "read_fil"));
    assert!(!glob_match("read_file", "Read_file"));
    assert!(glob_match("", ""));
    assert!(!glob_match("", "a"));
    assert!(!glob_match("a", ""));
}

#[test]
fn star_matches_any_run_including_empty_and_slash() {
    assert!(glob_match("*", ""));
    assert!(glob_match("*", "anything/at/all"));
    assert!(glob_match("read_*", "read_"));
    assert!(glob_match("read_*", "read_file"));
    assert!(glob_match("*_file", "read_file"));
    assert!(glob_match("fs/*", "fs/read/deep"));
    assert!(glob_match("r*d*e", "read_file"));
    assert!(glob_match("**", "x"));
    assert!(glob_match("a**b", "ab"));
    assert!(!glob_match("read_*", "write_file"));
    assert!(!glob_match("*_file", "read_files"));
    assert!(!glob_match("a*b", "a"));
}

#[test]
fn question_mark_matches_exactly_one_char() {
    assert!(glob_match("?", "a"));
    assert!(glob_match("?", "/"));
    assert!(!glob_match("?", ""));
    assert!(!glob_match("?", "ab"));
    assert!(glob_match("v?", "v2"));
    assert!(glob_match("?*", "a"));
    assert!(!glob_match("?*", ""));
    assert!(glob_match("*?", "abc"));
}

#[test]
fn other_characters_are_literal() {
    assert!(glob_match("[a]", "[a]"));
    assert!(!glob_match("[a]", "a"));
    assert!(glob_match("a\\*", "a\\"));
    assert!(glob_match("a\\*", "a\\xyz"));
    assert!(!glob_match("a\\*", "a*"));
    assert!(glob_match("{a,b}", "{a,b}"));
    assert!(!glob_match("{a,b}", "a"));
    assert!(glob_match("a.b", "a.b"));
    assert!(!glob_match("a.b", "axb"));
}

#[test]
fn matching_is_over_unicode_chars() {
    assert!(glob_match("caf?", "café"));
    assert!(!glob_match("caf??", "café"));
    assert!(glob_match("日本*", "日本語"));
    assert!(glob_match("*語", "日本語"));
    assert!(glob_match("?本?", "日本語"));
    assert!(glob_match("?", "🦀"));
    assert!(!glob_match("é", "e"));
}

#[test]
fn pathological_patterns_answer_correctly() {
    let many_a = "a".repeat(20_000);
    assert!(!glob_match("a*a*a*a*a*b", &many_a));
    assert!(glob_match("a*a*a*a*a*b", &format!("{many_a}b")));
    assert!(!glob_match("*a*a*a*a*a*a*a*a*a*a*b", &many_a));
    let star_heavy = "*a".repeat(200) + "*b";
    assert!(!glob_match(&star_heavy, &many_a));
    assert!(glob_match(&star_heavy, &format!("{many_a}b")));
    let question_heavy = "?*".repeat(300);
    assert!(glob_match(&question_heavy, &many_a));
    assert!(!glob_match(&question_heavy, &"a".repeat(299)));
    assert!(glob_match(&format!("{many_a}*"), &many_a));
    assert!(!glob_match(&format!("*{many_a}b"), &many_a));
}

#[test]
fn agrees_with_the_reference_matcher_on_every_small_input() {
    let patterns = all_strings(&['a', 'b', '*', '?'], 5);
    let texts = all_strings(&['a', 'b'], 6);
    for pattern in &patterns {
        let pattern_chars: Vec<char> = pattern.chars().collect();
        for text in &texts {
            let text_chars: Vec<char> = text.chars().collect();
            assert_eq!(
                glob_match(pattern, text),
                reference_match(&pattern_chars, &text_chars),
                "pattern {pattern:?}, text {text:?}"
            );
        }
    }
}

// ---- ServerPolicy ----

#[test]
fn default_policy_allows_everything_and_confirms_destructive_tools() {
    let policy = ServerPolicy::default();
    assert!(policy.permits_tool("anything"));
    assert!(policy.confirm_destructive);
    assert!(policy.needs_confirmation("drop", &h(&json!({"destructiveHint": true}))));
    assert!(!policy.needs_confirmation("read", &h(&json!({"readOnlyHint": true}))));
}

#[test]
fn allow_list_restricts_tools() {
    let policy = ServerPolicy {
        allow_tools: Some(globs(&["read_*", "list"])),
        ..ServerPolicy::default()
    };
    assert!(policy.permits_tool("read_file"));
    assert!(policy.permits_tool("list"));
    assert!(!policy.permits_tool("write_file"));
    assert!(!policy.permits_tool("list_all"));
}

#[test]
fn deny_wins_over_allow() {
    let policy = ServerPolicy {
        allow_tools: Some(globs(&["*"])),
        deny_tools: globs(&["delete_*", "drop"]),
        ..ServerPolicy::default()
    };
    assert!(policy.permits_tool("read_file"));
    assert!(!policy.permits_tool("delete_file"));
    assert!(!policy.permits_tool("drop"));

    let deny_only = ServerPolicy {
        deny_tools: globs(&["*secret*"]),
        ..ServerPolicy::default()
    };
    assert!(deny_only.permits_tool("read_file"));
    assert!(!deny_only.permits_tool("read_secret_key"));
}

#[test]
fn destructive_by_annotation_needs_exactly_true() {
    let policy = ServerPolicy::default();
    assert!(policy.needs_confirmation("x", &h(&json!({"destructiveHint": true}))));
    assert!(!policy.needs_confirmation("x", &h(&json!({"destructiveHint": false}))));
    assert!(!policy.needs_confirmation("x", &h(&json!({"destructiveHint": "true"}))));
    assert!(!policy.needs_confirmation("x", &h(&json!({"destructiveHint": 1}))));
    assert!(!policy.needs_confirmation("x", &h(&json!({}))));
    assert!(!policy.needs_confirmation("x", &h(&Value::Null)));
    assert!(!policy.needs_confirmation("x", &h(&json!([{"destructiveHint": true}]))));
}

#[test]
fn destructive_by_config_glob() {
    let policy = ServerPolicy {
        destructive_tools: globs(&["delete_*", "send_email"]),
        ..ServerPolicy::default()
    };
    assert!(policy.needs_confirmation("delete_row", &h(&Value::Null)));
    assert!(policy.needs_confirmation("send_email", &h(&json!({"destructiveHint": false}))));
    assert!(!policy.needs_confirmation("read_row", &h(&Value::Null)));
}

#[test]
fn waiver_turns_confirmation_off() {
    let policy = ServerPolicy {
        destructive_tools: globs(&["delete_*"]),
        confirm_destructive: false,
        ..ServerPolicy::default()
    };
    assert!(!policy.needs_confirmation("delete_row", &h(&Value::Null)));
    assert!(!policy.needs_confirmation("drop", &h(&json!({"destructiveHint": true}))));
}

#[test]
fn from_json_reads_the_policy_fields_and_ignores_the_rest() {
    let policy = ServerPolicy::from_json(&entry(json!({
        "command": "npx",
        "args": ["server"],
        "allowTools": ["read_*", "list_*"],
        "denyTools": ["read_secret"],
        "destructiveTools": ["write_*"],
        "confirmDestructive": false,
        "somethingNew": {"nested": true},
    })))
    .unwrap();
    assert_eq!(
        policy,
        ServerPolicy {
            allow_tools: Some(globs(&["read_*", "list_*"])),
            deny_tools: globs(&["read_secret"]),
            destructive_tools: globs(&["write_*"]),
            confirm_destructive: false,
        }
    );
}

#[test]
fn from_json_defaults_missing_and_null_fields() {
    let empty = ServerPolicy::from_json(&entry(json!({"command": "x"}))).unwrap();
    assert_eq!(empty, ServerPolicy::default());
    let nulls = ServerPolicy::from_json(&entry(json!({
        "allowTools": null,
        "denyTools": null,
        "destructiveTools": null,
        "confirmDestructive": null,
    })))
    .unwrap();
    assert_eq!(nulls, ServerPolicy::default());
    // Empty deny and destructive lists simply mean "none".
    let empty_lists =
        ServerPolicy::from_json(&entry(json!({"denyTools": [], "destructiveTools": []}))).unwrap();
    assert_eq!(empty_lists, ServerPolicy::default());
}

#[test]
fn from_json_errors_name_the_field_and_what_was_expected() {
    let error_for = |value: Value| {
        ServerPolicy::from_json(&entry(value))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        error_for(json!({"allowTools": "read_*"})),
        "\"allowTools\" must be an array of glob strings such as [\"read_*\"], not a string"
    );
    assert_eq!(
        error_for(json!({"denyTools": {"a": 1}})),
        "\"denyTools\" must be an array of glob strings such as [\"read_*\"], not an object"
    );
    assert_eq!(
        error_for(json!({"destructiveTools": ["ok", 3]})),
        "\"destructiveTools\"[1] must be a glob string such as \"read_*\", not a number"
    );
    assert_eq!(
        error_for(json!({"confirmDestructive": "no"})),
        "\"confirmDestructive\" must be true or false, not a string"
    );
    assert_eq!(
        error_for(json!({"denyTools": ["a", ""]})),
        "\"denyTools\"[1] is an empty glob; expected a pattern such as \"read_*\" \
         (\"*\" matches every name)"
    );
    assert_eq!(
        error_for(json!({"allowTools": []})),
        "\"allowTools\" is an empty list; expected at least one glob, or omit the field"
    );
    assert_eq!(
        ServerPolicy::from_json(&entry(json!({"allowTools": [true]}))),
        Err(PolicyError::GlobNotAString {
            field: "allowTools",
            index: 0,
            found: "a boolean",
        })
    );
}

// ---- Scope ----

#[test]
fn unrestricted_scope_permits_everything_and_never_expires() {
    let scope = Scope::unrestricted();
    assert!(scope.permits_server("any"));
    assert!(scope.permits_tool("any", "tool", &h(&Value::Null)));
    assert!(!scope.is_expired(at(u64::from(u32::MAX))));
    assert_eq!(scope.describe(at(0)), "unrestricted");
}

#[test]
fn server_globs_restrict_servers_and_their_tools() {
    let scope = Scope {
        servers: Some(globs(&["fs*", "git"])),
        ..Scope::unrestricted()
    };
    assert!(scope.permits_server("fs"));
    assert!(scope.permits_server("fs-home"));
    assert!(scope.permits_server("git"));
    assert!(!scope.permits_server("github"));
    assert!(scope.permits_tool("fs", "write_file", &h(&Value::Null)));
    assert!(!scope.permits_tool("github", "read", &h(&json!({"readOnlyHint": true}))));
}

#[test]
fn tool_globs_match_server_slash_tool() {
    let scope = Scope {
        tools: Some(globs(&["fs/read_*", "*/list"])),
        ..Scope::unrestricted()
    };
    assert!(scope.permits_tool("fs", "read_file", &h(&Value::Null)));
    assert!(scope.permits_tool("git", "list", &h(&Value::Null)));
    assert!(!scope.permits_tool("fs", "write_file", &h(&Value::Null)));
    assert!(!scope.permits_tool("fs2", "read_file", &h(&Value::Null)));
    assert!(!scope.permits_tool("git", "list_all", &h(&Value::Null)));
    // Tools globs do not restrict which servers are reachable, only their tools.
    assert!(scope.permits_server("other"));
}

#[test]
fn tool_permission_also_needs_the_server() {
    let scope = Scope {
        servers: Some(globs(&["git"])),
        tools: Some(globs(&["*/read_*"])),
        resources: None,
        ..Scope::unrestricted()
    };
    assert!(scope.permits_tool("git", "read_log", &h(&Value::Null)));
    assert!(!scope.permits_tool("fs", "read_file", &h(&Value::Null)));
}

#[test]
fn read_only_scope_hides_tools_not_declared_read_only() {
    let scope = Scope {
        read_only: true,
        ..Scope::unrestricted()
    };
    assert!(scope.permits_tool("fs", "read", &h(&json!({"readOnlyHint": true}))));
    assert!(!scope.permits_tool("fs", "write", &h(&json!({"readOnlyHint": false}))));
    assert!(!scope.permits_tool("fs", "write", &h(&json!({"destructiveHint": false}))));
    assert!(!scope.permits_tool("fs", "odd", &h(&json!({"readOnlyHint": "true"}))));
    assert!(!scope.permits_tool("fs", "bare", &h(&json!({}))));
    assert!(!scope.permits_tool("fs", "bare", &h(&Value::Null)));
}

#[test]
fn expiry_is_inclusive() {
    let scope = Scope::from_params(None, None, None, false, Some(600), at(1_000)).unwrap();
    assert_eq!(scope.expires_at, Some(at(1_600)));
    assert!(!scope.is_expired(at(1_000)));
    assert!(!scope.is_expired(at(1_599)));
    assert!(scope.is_expired(at(1_600)));
    assert!(scope.is_expired(at(10_000)));
}

#[test]
fn from_params_builds_the_scope() {
    let scope = Scope::from_params(
        Some(globs(&["fs*"])),
        Some(globs(&["fs/read_*"])),
        None,
        true,
        None,
        at(0),
    )
    .unwrap();
    assert_eq!(
        scope,
        Scope {
            servers: Some(globs(&["fs*"])),
            tools: Some(globs(&["fs/read_*"])),
            resources: Some(Vec::new()),
            prompts: Some(Vec::new()),
            read_only: true,
            expires_at: None,
        }
    );
    let longest = Scope::from_params(None, None, None, false, Some(2_592_000), at(0)).unwrap();
    assert_eq!(longest.expires_at, Some(at(0) + MAX_SCOPE_TTL));
}

#[test]
fn from_params_refuses_bad_inputs() {
    let error = |servers: Option<&[&str]>, tools: Option<&[&str]>, ttl: Option<u64>| {
        Scope::from_params(
            servers.map(globs),
            tools.map(globs),
            None,
            false,
            ttl,
            at(0),
        )
        .unwrap_err()
        .to_string()
    };
    assert_eq!(
        error(Some(&[]), None, None),
        "\"servers\" is an empty list; expected at least one glob, or omit the field"
    );
    assert_eq!(
        error(None, Some(&[]), None),
        "\"tools\" is an empty list; expected at least one glob, or omit the field"
    );
    assert_eq!(
        error(Some(&["fs", ""]), None, None),
        "\"servers\"[1] is an empty glob; expected a pattern such as \"read_*\" \
         (\"*\" matches every name)"
    );
    assert_eq!(
        error(None, None, Some(0)),
        "\"ttlSeconds\" is 0; expected a positive number of seconds, at most 2592000 (30 days)"
    );
    assert_eq!(
        error(None, None, Some(2_592_001)),
        "\"ttlSeconds\" is 2592001; expected at most 2592000 (30 days)"
    );
    assert_eq!(
        error(None, None, Some(u64::MAX)),
        format!(
            "\"ttlSeconds\" is {}; expected at most 2592000 (30 days)",
            u64::MAX
        )
    );
    assert_eq!(
        error(None, Some(&["fs/*", "read_file"]), None),
        "\"tools\"[1] is \"read_file\", which can never match: tool globs match \
         \"server/tool\"; expected a glob such as \"fs/read_file\" or \"*/read_file\""
    );
    assert_eq!(
        error(Some(&["fs/*"]), None, None),
        "\"servers\"[0] is \"fs/*\", which can never match: server names never contain \
         '/'; to restrict tools, put \"server/tool\" globs in \"tools\""
    );
    // Wildcards without a slash can still match "server/tool".
    assert!(Scope::from_params(None, Some(globs(&["*read*"])), None, false, None, at(0)).is_ok());
}

#[test]
fn describe_is_one_line() {
    let scope = Scope::from_params(
        Some(globs(&["fs*"])),
        Some(globs(&["fs/read_*"])),
        None,
        true,
        Some(600),
        at(0),
    )
    .unwrap();
    assert_eq!(
        scope.describe(at(0)),
        "servers fs*, tools fs/read_*, no resources, read-only, expires in 10m"
    );
    assert_eq!(
        scope.describe(at(60)),
        "servers fs*, tools fs/read_*, no resources, read-only, expires in 9m"
    );
    assert_eq!(
        scope.describe(at(600)),
        "servers fs*, tools fs/read_*, no resources, read-only, expired"
    );

    let expiring_only = Scope::from_params(None, None, None, false, Some(5_400), at(0)).unwrap();
    assert_eq!(
        expiring_only.describe(at(0)),
        "all servers and tools, no resources, expires in 1h30m"
    );

    let many = Scope {
        servers: Some(globs(&["a", "b", "c", "d", "e", "f"])),
        ..Scope::unrestricted()
    };
    assert_eq!(many.describe(at(0)), "servers a or b or c or d (+2 more)");
}

#[test]
fn durations_read_compactly() {
    let text = |seconds: u64| format_duration(Duration::from_secs(seconds));
    assert_eq!(text(0), "0s");
    assert_eq!(text(45), "45s");
    assert_eq!(text(60), "1m");
    assert_eq!(text(61), "1m1s");
    assert_eq!(text(600), "10m");
    assert_eq!(text(3_600), "1h");
    assert_eq!(text(3_659), "1h");
    assert_eq!(text(5_400), "1h30m");
    assert_eq!(text(86_400), "1d");
    assert_eq!(text(90_000), "1d1h");
    assert_eq!(text(2_592_000), "30d");
    assert_eq!(format_duration(Duration::from_millis(200)), "1s");
    assert_eq!(format_duration(Duration::from_millis(59_500)), "1m");
}

// ---- check_call and visible_tool ----

const READ_ONLY: &str = r#"{"readOnlyHint": true}"#;

fn annotations(text: &str) -> ToolHints {
    h(&serde_json::from_str(text).unwrap())
}

fn check(
    scope: &Scope,
    policy: &ServerPolicy,
    tool: &str,
    annotations: &ToolHints,
    confirmed: bool,
) -> Result<(), Denial> {
    check_call(scope, policy, "fs", tool, annotations, confirmed, at(0))
}

#[test]
fn unrestricted_owner_calls_a_plain_tool() {
    let result = check(
        &Scope::unrestricted(),
        &ServerPolicy::default(),
        "read_file",
        &h(&Value::Null),
        false,
    );
    assert_eq!(result, Ok(()));
}

#[test]
fn destructive_tools_need_confirmation_unless_waived() {
    let policy = ServerPolicy {
        destructive_tools: globs(&["delete_*"]),
        ..ServerPolicy::default()
    };
    let owner = Scope::unrestricted();
    let denial = check(&owner, &policy, "delete_file", &h(&Value::Null), false).unwrap_err();
    assert_eq!(
        denial,
        Denial::ConfirmationRequired {
            server: "fs".to_owned(),
            tool: "delete_file".to_owned(),
        }
    );
    assert_eq!(
        denial.to_string(),
        "tool \"delete_file\" of server \"fs\" is destructive; to run it, pass \"confirm\": \
         true in callTool (tool-cli: --yes)"
    );
    assert_eq!(
        check(&owner, &policy, "delete_file", &h(&Value::Null), true),
        Ok(())
    );
    let by_hint = h(&json!({"destructiveHint": true}));
    assert!(matches!(
        check(&owner, &policy, "drop", &by_hint, false),
        Err(Denial::ConfirmationRequired { .. })
    ));
    let waived = ServerPolicy {
        confirm_destructive: false,
        ..policy
    };
    assert_eq!(check(&owner, &waived, "drop", &by_hint, false), Ok(()));
}

#[test]
fn config_denial_says_it_is_the_config_and_hides_its_globs() {
    let policy = ServerPolicy {
        allow_tools: Some(globs(&["read_*"])),
        deny_tools: globs(&["read_secret*"]),
        ..ServerPolicy::default()
    };
    let owner = Scope::unrestricted();
    let denied = check(&owner, &policy, "read_secret_key", &h(&Value::Null), true)
        .unwrap_err()
        .to_string();
    assert_eq!(
        denied,
        "tool \"read_secret_key\" of server \"fs\" is not permitted: the config's policy \
         for this server denies it (denyTools); only the daemon's operator can change that \
         in the config"
    );
    let not_allowed = check(&owner, &policy, "write_file", &h(&Value::Null), true)
        .unwrap_err()
        .to_string();
    assert_eq!(
        not_allowed,
        "tool \"write_file\" of server \"fs\" is not permitted: the config's policy for \
         this server does not allow it (allowTools); only the daemon's operator can change \
         that in the config"
    );
    assert!(!denied.contains("read_secret*") && !not_allowed.contains("read_*"));
}

#[test]
fn scope_denials_say_it_is_the_token() {
    let policy = ServerPolicy::default();
    let scope = Scope {
        servers: Some(globs(&["fs*"])),
        tools: Some(globs(&["fs/read_*"])),
        resources: None,
        ..Scope::unrestricted()
    };
    let server_denied = check_call(
        &scope,
        &policy,
        "github",
        "x",
        &h(&Value::Null),
        false,
        at(0),
    )
    .unwrap_err();
    assert_eq!(
        server_denied.to_string(),
        "server \"github\" is not permitted by this token's scope (servers fs*, tools \
         fs/read_*); use a server the scope includes, or a token whose scope includes \
         \"github\""
    );
    let tool_denied = check(&scope, &policy, "write_file", &h(&Value::Null), false)
        .unwrap_err()
        .to_string();
    assert_eq!(
        tool_denied,
        "tool \"write_file\" of server \"fs\" is not permitted: this token's scope does not \
         include it (servers fs*, tools fs/read_*); use a token whose scope includes \
         \"fs/write_file\""
    );
    let read_only = Scope {
        read_only: true,
        ..Scope::unrestricted()
    };
    let write_denied = check(&read_only, &policy, "write_file", &h(&Value::Null), true)
        .unwrap_err()
        .to_string();
    assert_eq!(
        write_denied,
        "tool \"write_file\" of server \"fs\" is not permitted: this token's scope is \
         read-only and the tool does not declare \"readOnlyHint\": true; use a token \
         without the read-only restriction"
    );
    assert_eq!(
        check(
            &read_only,
            &policy,
            "read_file",
            &annotations(READ_ONLY),
            false
        ),
        Ok(())
    );
}

#[test]
fn expired_scope_is_refused_first() {
    let scope =
        Scope::from_params(Some(globs(&["git"])), None, None, false, Some(60), at(0)).unwrap();
    let denial = check_call(
        &scope,
        &ServerPolicy::default(),
        "fs",
        "x",
        &h(&Value::Null),
        false,
        at(60),
    )
    .unwrap_err();
    assert_eq!(
        denial.to_string(),
        "this token has expired (servers git, no resources, expired); ask whoever issued it for a \
         new token"
    );
    assert_eq!(
        check_call(
            &scope,
            &ServerPolicy::default(),
            "git",
            "x",
            &h(&Value::Null),
            false,
            at(59)
        ),
        Ok(())
    );
}

#[test]
fn checks_run_in_order() {
    // Every check fails: the scope's server check comes first.
    let policy = ServerPolicy {
        deny_tools: globs(&["*"]),
        destructive_tools: globs(&["*"]),
        ..ServerPolicy::default()
    };
    let scope = Scope {
        servers: Some(globs(&["git"])),
        tools: Some(globs(&["*/none"])),
        resources: None,
        prompts: None,
        read_only: true,
        expires_at: None,
    };
    assert!(matches!(
        check(&scope, &policy, "drop", &h(&Value::Null), false),
        Err(Denial::ServerNotPermitted { .. })
    ));
    // With the server permitted, the config's policy comes before the scope's tool globs.
    let scope = Scope {
        servers: Some(globs(&["fs"])),
        ..scope
    };
    let Err(Denial::ToolNotPermitted { reason, .. }) =
        check(&scope, &policy, "drop", &h(&Value::Null), false)
    else {
        panic!("expected the config's denial");
    };
    assert!(reason.contains("config's policy"), "{reason}");
    // With the config permitting it, the scope's tool globs come before read-only.
    let policy = ServerPolicy {
        deny_tools: Vec::new(),
        ..policy
    };
    let Err(Denial::ToolNotPermitted { reason, .. }) =
        check(&scope, &policy, "drop", &h(&Value::Null), false)
    else {
        panic!("expected the scope's tools denial");
    };
    assert!(reason.contains("does not include it"), "{reason}");
    // Then read-only, before confirmation.
    let scope = Scope {
        tools: None,
        ..scope
    };
    let Err(Denial::ToolNotPermitted { reason, .. }) =
        check(&scope, &policy, "drop", &h(&Value::Null), false)
    else {
        panic!("expected the read-only denial");
    };
    assert!(reason.contains("read-only"), "{reason}");
    // Finally confirmation, even for a read-only tool the config calls destructive.
    assert!(matches!(
        check(&scope, &policy, "drop", &annotations(READ_ONLY), false),
        Err(Denial::ConfirmationRequired { .. })
    ));
    assert_eq!(
        check(&scope, &policy, "drop", &annotations(READ_ONLY), true),
        Ok(())
    );
}

#[test]
fn visible_tool_needs_both_permissions_but_not_confirmation() {
    let policy = ServerPolicy {
        deny_tools: globs(&["secret"]),
        destructive_tools: globs(&["delete"]),
        ..ServerPolicy::default()
    };
    let owner = Scope::unrestricted();
    assert!(visible_tool(
        &owner,
        &policy,
        "fs",
        "delete",
        &h(&Value::Null)
    ));
    assert!(visible_tool(
        &owner,
        &policy,
        "fs",
        "drop",
        &h(&json!({"destructiveHint": true}))
    ));
    assert!(!visible_tool(
        &owner,
        &policy,
        "fs",
        "secret",
        &h(&Value::Null)
    ));

    let scoped = Scope {
        servers: Some(globs(&["fs"])),
        read_only: true,
        ..Scope::unrestricted()
    };
    let read_only = annotations(READ_ONLY);
    assert!(visible_tool(&scoped, &policy, "fs", "read", &read_only));
    assert!(!visible_tool(
        &scoped,
        &policy,
        "fs",
        "write",
        &h(&Value::Null)
    ));
    assert!(!visible_tool(&scoped, &policy, "git", "read", &read_only));
    assert!(!visible_tool(&scoped, &policy, "fs", "secret", &read_only));
}
