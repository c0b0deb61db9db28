//! Tests of the registration: params errors, every method registered once, every shape text
//! agreeing with its params type.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;
use tool_cli_protocol::methods::{
    CallToolParams, MintTokenParams, RevokeTokenParams, ServerParams, name,
};
use tool_cli_protocol::params::MethodParams;

use super::*;

fn parse_params<P: FromParams>(method: &str, text: Option<&str>) -> Result<P, ErrorObjectOwned> {
    P::from_params(method, &Params::new(text)).map_err(|error| {
        let data = error.to_data();
        ErrorObjectOwned::owned(error.code(), error.wire_message(), Some(data))
    })
}

#[test]
fn params_errors_name_the_member_and_the_shape() {
    let err = parse_params::<ServerParams>("listTools", Some(r#"{"server": 5}"#)).unwrap_err();
    assert_eq!(err.code(), tool_cli_protocol::code::INVALID_PARAMS);
    let data: Value = serde_json::from_str(err.data().unwrap().get()).unwrap();
    assert_eq!(data["kind"], "invalidParams");
    let message = data["message"].as_str().unwrap();
    assert!(message.contains("invalid type: integer `5`"), "{message}");
    assert!(
        message.contains(r#"expected {"server": string}"#),
        "{message}"
    );

    let err = parse_params::<ServerParams>("listTools", None).unwrap_err();
    assert!(
        err.message().contains("missing params"),
        "{}",
        err.message()
    );
    assert!(
        err.message().contains(ServerParams::SHAPE),
        "{}",
        err.message()
    );

    let err = parse_params::<ServerParams>("listTools", Some("{}")).unwrap_err();
    assert!(
        err.message().contains("missing field `server`"),
        "{}",
        err.message()
    );
}

/// The issue: `mintToken` ignored misspelt restricting members (`readonly`, `server`) and
/// minted a full-scope token.
#[test]
fn security_scoping_params_refuse_unknown_members_naming_the_right_one() {
    for (text, typo, right) in [
        (r#"{"readonly": true}"#, "readonly", "readOnly"),
        (r#"{"server": ["demo"]}"#, "server", "servers"),
        (
            r#"{"servers": ["demo"], "tool": ["demo/q"]}"#,
            "tool",
            "tools",
        ),
    ] {
        let err = parse_params::<MintTokenParams>("mintToken", Some(text)).unwrap_err();
        assert_eq!(err.code(), tool_cli_protocol::code::INVALID_PARAMS);
        let message = err.message();
        assert!(
            message.contains(&format!("unknown field `{typo}`")),
            "{message}"
        );
        assert!(
            message.contains(&format!("did you mean `{right}`?")),
            "{message}"
        );
    }
    let text = r#"{"tokenId": "tk_1", "all": true}"#;
    assert!(parse_params::<RevokeTokenParams>("revokeToken", Some(text)).is_err());
    // No params at all: every member left out, which for mintToken is the default scope.
    assert!(parse_params::<MintTokenParams>("mintToken", None).is_ok());
}

#[test]
fn params_nested_too_deep_say_so_instead_of_naming_a_shape() {
    let depth = 130;
    let text = format!(
        r#"{{"server":"s","tool":"t","arguments":{{"a":{}1{}}}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let err = parse_params::<CallToolParams>("callTool", Some(&text)).unwrap_err();
    assert_eq!(err.code(), tool_cli_protocol::code::INVALID_PARAMS);
    assert!(
        err.message().contains("more than 128 levels deep"),
        "{}",
        err.message()
    );
    assert!(!err.message().contains("expected {"), "{}", err.message());
    // Just under the limit parses.
    let text = format!(
        r#"{{"server":"s","tool":"t","arguments":{{"a":{}1{}}}}}"#,
        "[".repeat(100),
        "]".repeat(100)
    );
    assert!(parse_params::<CallToolParams>("callTool", Some(&text)).is_ok());
}

/// The registrations of a daemon over no servers.
fn registered() -> Vec<Registered> {
    struct Nothing;
    impl crate::provider::ToolProvider for Nothing {
        fn servers(&self) -> Vec<Arc<dyn crate::provider::Upstream>> {
            Vec::new()
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let answers = Answers {
        max_response_bytes: 1 << 20,
        spill: Arc::new(SpillStore::new(
            dir.path().join("spill"),
            std::time::Duration::from_secs(60),
        )),
        grace_over: watch::channel(false).1,
        grace_ms: 0,
        listener: tool_cli_telemetry::spans::Listener::Tcp,
    };
    registrations(Services::for_tests(Arc::new(Nothing)), answers).registered
}

/// Every method the protocol lists (and `getBridgeInfo` announces) is registered, once: a
/// method the protocol names is never left unserved, and nothing is served that it does not
/// name. jsonrpsee refuses a name registered twice.
#[tokio::test]
async fn every_method_of_the_protocol_is_registered_exactly_once() {
    let registered = registered();
    let names: Vec<&str> = registered.iter().map(|method| method.name).collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "registered twice: {names:?}");
    let listed: BTreeSet<&str> = name::ALL.iter().copied().collect();
    assert_eq!(unique, listed, "registered vs the protocol's list");
}

/// Every registered method's shape text (what its params errors name) agrees with its params
/// type: members, which are required, their kinds.
#[tokio::test]
async fn every_shape_text_matches_its_params_type() {
    let failures: Vec<String> = registered()
        .iter()
        .filter_map(|method| {
            (method.check_shape)()
                .err()
                .map(|error| format!("{}: {error}", method.name))
        })
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The owner-only methods are exactly the protocol's owner-only methods.
#[tokio::test]
async fn the_owners_methods_are_registered_owner_only() {
    let owner: BTreeSet<&str> = registered()
        .iter()
        .filter(|method| method.access == Access::Owner)
        .map(|method| method.name)
        .collect();
    let expected: BTreeSet<&str> = [
        name::RESTART_SERVER,
        name::ADD_SERVER,
        name::REMOVE_SERVER,
        name::RELOAD_CONFIG,
        name::RELOAD_PINS,
        name::PIN_LISTING,
        name::START_RECORDING,
        name::STOP_RECORDING,
        name::MINT_TOKEN,
        name::REVOKE_TOKEN,
        name::LIST_TOKENS,
        name::TRACES_REPORT,
        name::AUTH_LOGIN,
        name::AUTH_COMPLETE,
        name::AUTH_STATUS,
        name::AUTH_LOGOUT,
    ]
    .into_iter()
    .collect();
    assert_eq!(owner, expected);
}
