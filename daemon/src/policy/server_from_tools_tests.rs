//! Unit tests: whether a scope and a policy let a caller see every tool of a server agrees
//! with asking tool by tool.

use super::*;

#[test]
fn seeing_every_tool_agrees_with_asking_tool_by_tool() {
    let now = SystemTime::UNIX_EPOCH;
    let tools = ["echo", "read_file", "delete_all"];
    let read_only = ToolHints {
        read_only: true,
        ..ToolHints::default()
    };
    let scopes = [
        Scope::unrestricted(),
        Scope::from_params(Some(vec!["alpha".into()]), None, None, false, None, now).unwrap(),
        Scope::from_params(
            None,
            Some(vec!["alpha/read_*".into()]),
            None,
            false,
            None,
            now,
        )
        .unwrap(),
        Scope::from_params(None, None, None, true, None, now).unwrap(),
    ];
    let policies = [
        ServerPolicy::default(),
        ServerPolicy {
            deny_tools: vec!["delete_*".into()],
            ..ServerPolicy::default()
        },
        ServerPolicy {
            allow_tools: Some(vec!["*".into()]),
            ..ServerPolicy::default()
        },
    ];
    for scope in &scopes {
        for policy in &policies {
            if sees_every_tool(scope, policy) {
                for tool in tools {
                    for hints in [ToolHints::default(), read_only] {
                        assert!(
                            visible_tool(scope, policy, "alpha", tool, &hints),
                            "{scope:?} {policy:?} {tool}"
                        );
                    }
                }
            }
        }
    }
    assert!(sees_every_tool(&scopes[0], &policies[0]));
    assert!(sees_every_tool(&scopes[1], &policies[0]));
    assert!(!sees_every_tool(&scopes[2], &policies[0]));
    assert!(!sees_every_tool(&scopes[3], &policies[0]));
    assert!(!sees_every_tool(&scopes[0], &policies[1]));
}

#[test]
fn tool_globs_narrow_the_servers_a_scope_reaches() {
    let now = SystemTime::UNIX_EPOCH;
    let scope =
        Scope::from_params(None, Some(vec!["alpha/ec*".into()]), None, false, None, now).unwrap();
    assert!(scope.permits_server("alpha"));
    assert!(!scope.permits_server("beta"));
    let scope =
        Scope::from_params(None, Some(vec!["*/read_*".into()]), None, false, None, now).unwrap();
    assert!(scope.permits_server("beta"));
    let scope = Scope::from_params(
        Some(vec!["a*".into()]),
        Some(vec!["beta/x".into()]),
        None,
        false,
        None,
        now,
    )
    .unwrap();
    assert!(!scope.permits_server("beta"), "server globs still apply");
    assert!(!scope.permits_server("alpha"), "no tool glob reaches alpha");
}
