//! Arbitrary JSON as an error's `data` and as a runtime file: whatever parses must round-trip to
//! an equal value, and an error's code must be one of the protocol's.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tool_cli_protocol::runtime::RuntimeFile;
use tool_cli_protocol::{ErrorData, ErrorObject, code};

const CODES: &[i32] = &[
    code::PARSE_ERROR,
    code::INVALID_REQUEST,
    code::METHOD_NOT_FOUND,
    code::INVALID_PARAMS,
    code::INTERNAL_ERROR,
    code::SERVER_UNAVAILABLE,
    code::TIMEOUT,
    code::UPSTREAM_ERROR,
    code::BUSY,
    code::CIRCUIT_OPEN,
    code::FORBIDDEN,
    code::SHUTTING_DOWN,
    code::RESPONSE_TOO_LARGE,
];

fuzz_target!(|data: &[u8]| {
    if let Ok(error_data) = serde_json::from_slice::<ErrorData>(data) {
        assert!(CODES.contains(&error_data.code()), "{error_data:?}");
        let value = serde_json::to_value(&error_data).expect("error data serializes");
        let again: ErrorData = serde_json::from_value(value.clone()).expect("and parses back");
        assert_eq!(error_data, again, "round-trip through {value}");
        // Carried in an error object, it is found again.
        let object = ErrorObject {
            code: error_data.code(),
            message: "m".into(),
            data: Some(value),
        };
        assert_eq!(object.error_data(), Some(error_data));
    }
    if let Ok(runtime) = serde_json::from_slice::<RuntimeFile>(data) {
        let text = serde_json::to_string(&runtime).expect("runtime file serializes");
        let again: RuntimeFile = serde_json::from_str(&text).expect("and parses back");
        assert_eq!(runtime, again);
    }
});
