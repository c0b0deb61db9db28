//! Arbitrary bytes as a JSON-RPC request body, parsed the way a client or the daemon would: the
//! envelope, then the params of the method it names into that method's params struct. Whatever
//! parses must serialize and parse back to the same value, and nothing may panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tool_cli_protocol::methods::{
    CallToolParams, DescribeToolParams, MintTokenParams, ReadResourceParams, RevokeTokenParams,
    ServerParams, name,
};
use tool_cli_protocol::{Request, Response};

/// Parses `params` as `T`; when that works, the value must survive a round-trip unchanged.
fn round_trip<T>(params: &Value)
where
    T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug,
{
    let Ok(parsed) = serde_json::from_value::<T>(params.clone()) else {
        return;
    };
    let text = serde_json::to_string(&parsed).expect("a parsed params struct serializes");
    let again: T = serde_json::from_str(&text).expect("a serialized params struct parses");
    assert_eq!(parsed, again, "params round-trip through {text}");
}

fn check_params(method: &str, params: &Value) {
    match method {
        name::LIST_TOOLS | name::LIST_RESOURCES | name::LIST_RESOURCE_TEMPLATES => {
            round_trip::<ServerParams>(params)
        }
        name::DESCRIBE_TOOL => round_trip::<DescribeToolParams>(params),
        name::CALL_TOOL => round_trip::<CallToolParams>(params),
        name::READ_RESOURCE => round_trip::<ReadResourceParams>(params),
        name::MINT_TOKEN => round_trip::<MintTokenParams>(params),
        name::REVOKE_TOKEN => round_trip::<RevokeTokenParams>(params),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = serde_json::from_slice::<Request<Value>>(data) {
        if let Some(params) = &request.params {
            check_params(&request.method, params);
        }
        let text = serde_json::to_string(&request).expect("a parsed request serializes");
        let again: Request<Value> = serde_json::from_str(&text).expect("and parses back");
        assert_eq!(again.id, request.id);
        assert_eq!(again.method, request.method);
    }
    // Every params struct against any JSON value, whatever the method member says.
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        for method in name::ALL {
            check_params(method, &value);
        }
        if let Some(params) = value.get("params") {
            for method in name::ALL {
                check_params(method, params);
            }
        }
    }
    // A client parses responses with the same crate.
    if let Ok(response) = serde_json::from_slice::<Response>(data) {
        if let Some(error) = &response.error {
            let _ = error.error_data();
            let _ = error.to_string();
        }
        let _ = response.into_result();
    }
});
