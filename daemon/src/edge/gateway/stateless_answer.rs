//! How a 2026-07-28 answer is worded, whether it goes as one JSON body (`stateless.rs`) or ends
//! a call's SSE stream (`stateless_stream.rs`): results say `"resultType": "complete"`, errors
//! use the revision's codes.

use serde_json::{Value, json};

use super::messages::RpcError;

/// A result as the 2026 revision words it: `"resultType": "complete"` first, unless it has
/// its `resultType` already (a key twice would make the result unreadable).
pub(super) fn complete(result: &str) -> String {
    if result.starts_with(r#"{"resultType":"#) {
        return result.to_owned();
    }
    match result.strip_prefix('{') {
        Some("}") => r#"{"resultType":"complete"}"#.to_owned(),
        Some(rest) => format!(r#"{{"resultType":"complete",{rest}"#),
        // Every result is an object; anything else is passed as it is.
        None => result.to_owned(),
    }
}

/// An error as the 2026 revision words it: resource-not-found is `-32602` (SEP-2164).
pub(super) fn error_of_revision(mut error: RpcError) -> RpcError {
    if error.code == -32002 {
        error.code = -32602;
    }
    error
}

/// The JSON-RPC response to one 2026-07-28 request, encoded: results say `"resultType":
/// "complete"`, errors are worded as the revision words them.
pub(super) fn answer_body(answer: Result<super::Reply, RpcError>, id: &Value) -> String {
    match answer {
        Ok(super::Reply::Json(mut result)) => {
            if let Some(members) = result.as_object_mut() {
                members.entry("resultType").or_insert(json!("complete"));
            }
            json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
        }
        Ok(super::Reply::Encoded(result)) => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{}}}"#,
            complete(&result)
        ),
        Err(error) => {
            json!({"jsonrpc": "2.0", "id": id, "error": error_of_revision(error).to_json()})
                .to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_and_errors_are_worded_as_the_revision_says() {
        assert_eq!(complete("{}"), r#"{"resultType":"complete"}"#);
        let already = r#"{"resultType":"complete","tools":[]}"#;
        assert_eq!(complete(already), already);
        assert_eq!(
            complete(r#"{"tools":[]}"#),
            r#"{"resultType":"complete","tools":[]}"#
        );
        let missing = RpcError::resource_not_found("memo://x");
        assert_eq!(error_of_revision(missing).code, -32602);
    }
}
