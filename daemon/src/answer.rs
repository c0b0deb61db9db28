//! Fitting answers into a response: every result is encoded once, here, and held to the
//! response size limit (`--max-response-bytes`), or to its share of it in a batch.
//!
//! What does not fit is never lost after the fact: a `callTool` or `readResource` result (the
//! tool has run; its answer cannot be had again for free) is spilled to a file ([`crate::spill`])
//! and answered with a small reference; any other result (discovery, health, a page of a spilled
//! answer: nothing was changed by computing it) is refused with `-32008 responseTooLarge`, so the
//! client can ask again alone. jsonrpsee's own limit, which would swap an answer for an error
//! after the work was done, is set beyond reach; this module is the limit.

use std::sync::Arc;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::Error;
use crate::shape::BatchLen;
use crate::spill::{self, SpillStore};

/// Default `--max-response-bytes`: the default cap on a stdio server's message, so that by
/// default whatever result a server may send is sent whole (as the reference bridge does), and
/// spilling is for batches, Streamable HTTP servers and clients that asked for a lower limit.
/// The daemon uses `--max-message-bytes` when that is given and this is not.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// How many bytes one request's result may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    /// The most bytes of the encoded result.
    pub(crate) bytes: usize,
    /// Whether this is a share of a batch's limit.
    pub(crate) in_batch: bool,
}

impl Budget {
    /// The budget of a request: the whole limit, or an equal share of it for each entry of a
    /// batch, so that the batch's answer, all its entries together, fits the limit too.
    pub(crate) fn new(max_response_bytes: usize, batch: Option<BatchLen>) -> Budget {
        match batch {
            Some(BatchLen(len)) if len > 1 => Budget {
                bytes: max_response_bytes / len,
                in_batch: true,
            },
            _ => Budget {
                bytes: max_response_bytes,
                in_batch: false,
            },
        }
    }
}

/// Which kind of result a spilled answer stands in for.
pub(crate) enum Spillable<'a> {
    /// A `CallToolResult`.
    Call,
    /// A `ReadResourceResult` of this URI.
    Resource {
        /// The URI read.
        uri: &'a str,
    },
}

/// `result` encoded once, straight into the `RawValue` jsonrpsee sends: our own encoder's output
/// is JSON, so it is not parsed again to be checked (`RawValue::from_string` would walk every
/// byte of the answer a second time).
fn encode<T: Serialize>(result: &T) -> Result<Box<RawValue>, Error> {
    serde_json::value::to_raw_value(result)
        .map_err(|error| Error::Internal(format!("cannot encode an answer: {error}")))
}

/// `result`, encoded, if it fits `budget`; `responseTooLarge` if not.
pub(crate) fn fit<T: Serialize>(
    method: &str,
    result: &T,
    budget: Budget,
) -> Result<Box<RawValue>, Error> {
    let encoded = encode(result)?;
    let bytes = encoded.get().len();
    if bytes > budget.bytes {
        return Err(tool_cli_protocol::ErrorData::ResponseTooLarge {
            method: method.to_owned(),
            bytes,
            limit_bytes: budget.bytes,
        }
        .into());
    }
    Ok(encoded)
}

/// `result`, encoded, if it fits `budget`; else saved for `token_id` and answered with a
/// reference. If it cannot be saved, it is sent whole all the same: an answer over the limit
/// beats a lost one.
pub(crate) async fn fit_or_spill(
    result: Value,
    kind: Spillable<'_>,
    budget: Budget,
    store: &Arc<SpillStore>,
    token_id: &str,
) -> Result<Box<RawValue>, Error> {
    let encoded = encode(&result)?;
    if encoded.get().len() <= budget.bytes {
        return Ok(encoded);
    }
    let saving = {
        let store = Arc::clone(store);
        let token_id = token_id.to_owned();
        tokio::task::spawn_blocking(move || {
            let saved = store.save(encoded.get().as_bytes(), &token_id, SystemTime::now());
            (encoded, saved)
        })
    };
    let (encoded, saved) = saving
        .await
        .map_err(|error| Error::Internal(format!("saving a large answer failed: {error}")))?;
    match saved {
        Ok(spilled) => {
            let reference = match kind {
                Spillable::Call => spill::call_reference(&result, &spilled),
                Spillable::Resource { uri } => spill::resource_reference(uri, &spilled),
            };
            encode(&reference)
        }
        Err(error) => {
            tracing::warn!(
                %error,
                bytes = encoded.get().len(),
                limit = budget.bytes,
                "cannot save a large answer; sending it whole"
            );
            Ok(encoded)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn a_batch_shares_the_limit() {
        assert_eq!(
            Budget::new(1000, None),
            Budget {
                bytes: 1000,
                in_batch: false
            }
        );
        assert_eq!(Budget::new(1000, Some(BatchLen(1))).bytes, 1000);
        assert_eq!(
            Budget::new(1000, Some(BatchLen(4))),
            Budget {
                bytes: 250,
                in_batch: true
            }
        );
    }

    #[test]
    fn what_does_not_fit_is_refused_unless_it_can_be_spilled() {
        let budget = Budget {
            bytes: 20,
            in_batch: true,
        };
        assert_eq!(
            fit("health", &json!({"a": 1}), budget).unwrap().get(),
            r#"{"a":1}"#
        );
        let error = fit("listTools", &json!({"a": "x".repeat(30)}), budget).unwrap_err();
        assert!(
            matches!(
                error.data(),
                Some(tool_cli_protocol::ErrorData::ResponseTooLarge {
                    bytes: 38,
                    limit_bytes: 20,
                    ..
                })
            ),
            "{error:?}"
        );
    }

    #[test]
    fn an_answer_is_the_encoder_s_text_unchanged() {
        // Encoded once, not parsed again: the text sent is what `serde_json` writes, for
        // escapes, non-ASCII text, numbers and nesting alike, and it is valid JSON.
        let budget = Budget {
            bytes: 1 << 20,
            in_batch: false,
        };
        for value in [
            json!(null),
            json!({"content": [{"type": "text", "text": "quote \" backslash \\ nl \n é 😀 \u{1}"}]}),
            json!({"n": [0, -1, 1.5, 1e300, u64::MAX, i64::MIN], "b": [true, false], "o": {}}),
            json!([[[[{"deep": [{"er": "x".repeat(1000)}]}]]]]),
        ] {
            let answer = fit("callTool", &value, budget).unwrap();
            assert_eq!(answer.get(), serde_json::to_string(&value).unwrap());
            assert_eq!(serde_json::from_str::<Value>(answer.get()).unwrap(), value);
        }
    }

    #[tokio::test]
    async fn a_large_result_is_spilled_and_a_small_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SpillStore::new(
            dir.path().join("spill"),
            Duration::from_secs(60),
        ));
        let budget = Budget {
            bytes: 100,
            in_batch: false,
        };
        let small = json!({"content": [{"type": "text", "text": "hi"}]});
        let answer = fit_or_spill(small.clone(), Spillable::Call, budget, &store, "tok")
            .await
            .unwrap();
        assert_eq!(serde_json::from_str::<Value>(answer.get()).unwrap(), small);

        let large =
            json!({"content": [{"type": "text", "text": "x".repeat(500)}], "isError": true});
        let answer = fit_or_spill(large.clone(), Spillable::Call, budget, &store, "tok")
            .await
            .unwrap();
        let reference: Value = serde_json::from_str(answer.get()).unwrap();
        assert_eq!(reference["isError"], true);
        let path = reference["_meta"]["tool-cli/spilled"]["path"]
            .as_str()
            .unwrap();
        let saved: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        assert_eq!(saved, large);
    }
}
