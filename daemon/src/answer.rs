//! Fitting answers into a response: every result is encoded once, here, and held to the
//! response size limit (`--max-response-bytes`), or to its share of it in a batch.
//!
//! What does not fit is never lost after the fact: a `callTool` or `readResource` result (the
//! tool has run; its answer cannot be had again for free) is spilled to a file ([`crate::spill`])
//! and answered with a small reference; any other result (discovery, health, a page of a spilled
//! answer: nothing was changed by computing it) is refused with `-32008 responseTooLarge`, so the
//! client can ask again alone. jsonrpsee's own limit, which would swap an answer for an error
//! after the work was done, is set beyond reach; this module is the limit.
//!
//! A `callMany` or `callChain` answer is built as its calls finish (`EntryAnswers`): each
//! entry is encoded at once (its tree freed) and kept while it fits what is left of the budget,
//! its result spilled when it does not. When even that is not possible (the token's share of
//! the spill store would have to drop this answer's own files), that entry gets an error of its
//! own and the answer is full: nothing more is run. So every call that ran is answered, none is
//! refused after the fact, and the answer never holds more than its budget.

use std::sync::Arc;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use tool_cli_protocol::orchestration::StepResult;
use tool_cli_protocol::{ErrorData, ErrorObject};

use crate::error::Error;
use crate::pipeline::{CallAnswer, RanCall, selection_info};
use crate::services::calls::{Room, Step, StepSink};
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

/// Room kept in a fan-out's or chain's answer for each entry not in yet: about what a spilled
/// result's reference or an error takes, so that the entries to come can always be answered.
const RESERVED_PER_ENTRY: usize = 1024;

/// The answer of a `callMany` or `callChain`, built as its entries finish, within `budget`.
pub(crate) struct EntryAnswers {
    method: &'static str,
    budget: Budget,
    /// How many entries the answer will have at most (calls, or steps).
    expected: usize,
    /// The entries kept, encoded, with their indexes (a fan-out's finish in any order).
    kept: Vec<(usize, Box<RawValue>)>,
    /// Their bytes, with a separator each.
    kept_bytes: usize,
    store: Arc<SpillStore>,
    token_id: String,
    /// What this answer has spilled: kept under the token's share of the store, so that no
    /// spilled result of this answer is dropped to make room for another of it.
    spilled_answers: usize,
    spilled_bytes: u64,
    full: bool,
}

/// One entry of the answer, with its result already encoded: the same JSON as the protocol's
/// `StepResult` (checked by the tests against it), written without re-encoding the result.
#[derive(Serialize)]
struct EncodedEntry<'a> {
    index: usize,
    tool: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorObject>,
}

/// `callMany`'s answer: `{"results": [...]}`, in request order.
#[derive(Serialize)]
struct ManyAnswer<'a> {
    results: Vec<&'a RawValue>,
}

/// `callChain`'s answer: `{"steps": [...], "completed": bool}`.
#[derive(Serialize)]
struct ChainAnswer<'a> {
    steps: Vec<&'a RawValue>,
    completed: bool,
}

impl EntryAnswers {
    /// An empty answer to `method` of at most `expected` entries, spilling for `token_id`.
    pub(crate) fn new(
        method: &'static str,
        budget: Budget,
        expected: usize,
        store: &Arc<SpillStore>,
        token_id: &str,
    ) -> EntryAnswers {
        EntryAnswers {
            method,
            budget,
            expected,
            kept: Vec::with_capacity(expected),
            kept_bytes: 0,
            store: Arc::clone(store),
            token_id: token_id.to_owned(),
            spilled_answers: 0,
            spilled_bytes: 0,
            full: false,
        }
    }

    /// How many bytes the entries kept so far take.
    #[cfg(test)]
    pub(crate) fn kept_bytes(&self) -> usize {
        self.kept_bytes
    }

    /// The most the next entry may take inline: what the budget has left once every entry
    /// still to come has its reserve, and at least its own reserve.
    fn room(&self) -> usize {
        let to_come = self.expected.saturating_sub(self.kept.len() + 1);
        self.budget
            .bytes
            .saturating_sub(self.kept_bytes + to_come * RESERVED_PER_ENTRY)
            .max(RESERVED_PER_ENTRY)
    }

    fn keep(&mut self, index: usize, encoded: Box<RawValue>) {
        self.kept_bytes += encoded.get().len() + 1;
        self.kept.push((index, encoded));
    }

    /// Whether this answer may spill `bytes` more without the store dropping a file of its own.
    fn may_spill(&self, bytes: u64) -> bool {
        let limits = self.store.limits();
        self.spilled_answers < limits.answers_per_token
            && self.spilled_bytes + bytes <= limits.bytes_per_token.min(limits.bytes_total)
    }

    /// Takes one finished entry: kept as it is when it fits, else with its result spilled, else
    /// (no room in the store either) with an error of its own, and the answer is then full.
    async fn take_entry(&mut self, entry: StepResult) -> Room {
        let room = self.room();
        let result = entry.result.as_ref().map(encode::<Value>).transpose();
        let result = match result {
            Ok(result) => result,
            Err(error) => {
                // Our own encoder failing is a fault; the entry still gets an answer.
                tracing::error!(%error, "cannot encode an entry's result");
                let entry = StepResult {
                    result: None,
                    error: Some(error_object(&error)),
                    ..entry
                };
                return self.keep_small(entry);
            }
        };
        let encoded = encode_entry(&entry, result.as_deref());
        if let Ok(encoded) = encoded
            && (encoded.get().len() <= room || result.is_none())
        {
            // An error entry is always small (upstream text is capped): kept as it is.
            self.keep(entry.index, encoded);
            return Room::More;
        }
        let Some(result) = result else {
            return self.keep_small(entry);
        };
        let bytes = result.get().len() as u64;
        if self.may_spill(bytes) {
            match self.spill(result, entry.result.as_ref()).await {
                Ok(reference) => {
                    self.spilled_answers += 1;
                    self.spilled_bytes += bytes;
                    let entry = StepResult {
                        result: Some(reference),
                        ..entry
                    };
                    return self.keep_small(entry);
                }
                Err(error) => {
                    tracing::warn!(%error, bytes, "cannot save an entry's large result");
                }
            }
        }
        // Neither kept nor spilled: this entry's error, and nothing more is run.
        self.full = true;
        let error: Error = ErrorData::ResultTooLarge {
            server: entry.server.clone().unwrap_or_else(|| "*".to_owned()),
            method: entry.tool.clone(),
            bytes: Some(bytes),
            limit_bytes: room as u64,
            hint: format!(
                "the {method} answer had no room left for it and this token's spilled answers \
                 are at their limit; call it on its own (callTool spills a large result whole), \
                 or ask for less",
                method = self.method
            ),
        }
        .into();
        let entry = StepResult {
            result: None,
            error: Some(error_object(&error)),
            ..entry
        };
        self.keep_small(entry);
        Room::Full {
            limit_bytes: self.budget.bytes,
        }
    }

    /// Keeps an entry that is small by construction (an error, a reference).
    fn keep_small(&mut self, entry: StepResult) -> Room {
        match encode(&entry) {
            Ok(encoded) => self.keep(entry.index, encoded),
            Err(error) => tracing::error!(%error, "cannot encode an entry"),
        }
        Room::More
    }

    /// Saves `encoded` (an entry's result) and gives the reference that stands in for it.
    async fn spill(
        &self,
        encoded: Box<RawValue>,
        original: Option<&Value>,
    ) -> Result<Value, Error> {
        let store = Arc::clone(&self.store);
        let token_id = self.token_id.clone();
        let saved = tokio::task::spawn_blocking(move || {
            store.save(encoded.get().as_bytes(), &token_id, SystemTime::now())
        })
        .await
        .map_err(|error| Error::Internal(format!("saving a large answer failed: {error}")))?
        .map_err(|error| Error::Internal(error.to_string()))?;
        Ok(spill::call_reference(
            original.unwrap_or(&Value::Null),
            &saved,
        ))
    }

    /// The answer, entries in index order: `{"results": [...]}` for a fan-out.
    pub(crate) fn finish_many(mut self) -> Result<Box<RawValue>, Error> {
        self.sort();
        let results = self.kept.iter().map(|(_, entry)| &**entry).collect();
        self.finished(encode(&ManyAnswer { results }))
    }

    /// The answer of a chain: `{"steps": [...], "completed": …}`.
    pub(crate) fn finish_chain(mut self, completed: bool) -> Result<Box<RawValue>, Error> {
        self.sort();
        let steps = self.kept.iter().map(|(_, entry)| &**entry).collect();
        self.finished(encode(&ChainAnswer { steps, completed }))
    }

    fn sort(&mut self) {
        self.kept.sort_by_key(|(index, _)| *index);
    }

    /// An answer over the budget is still sent (the references of a tiny budget can outgrow
    /// it): an answer of calls that ran is never refused.
    fn finished(&self, answer: Result<Box<RawValue>, Error>) -> Result<Box<RawValue>, Error> {
        if let Ok(answer) = &answer
            && answer.get().len() > self.budget.bytes
        {
            tracing::warn!(
                method = self.method,
                bytes = answer.get().len(),
                limit = self.budget.bytes,
                "an answer of calls that ran is over the limit; sending it whole"
            );
        }
        answer
    }
}

impl StepSink for EntryAnswers {
    async fn take(&mut self, step: Step) -> Room {
        let entry = step_result(step);
        let room = self.take_entry(entry).await;
        // Once full, it stays full: the calls still running are answered as they end, and no
        // other is started.
        if self.full {
            Room::Full {
                limit_bytes: self.budget.bytes,
            }
        } else {
            room
        }
    }
}

/// An entry encoded around its already-encoded result.
fn encode_entry(entry: &StepResult, result: Option<&RawValue>) -> Result<Box<RawValue>, Error> {
    encode(&EncodedEntry {
        index: entry.index,
        tool: &entry.tool,
        server: entry.server.as_deref(),
        result,
        error: entry.error.as_ref(),
    })
}

/// The wire entry of one step or fanned-out call.
fn step_result(step: Step) -> StepResult {
    let server = step.server();
    let Step {
        index,
        tool,
        outcome,
        ..
    } = step;
    match outcome {
        Ok(answer) => StepResult {
            index,
            tool,
            server,
            result: Some(call_result(answer)),
            error: None,
        },
        Err(error) => StepResult {
            index,
            tool,
            server,
            result: None,
            error: Some(error_object(&error)),
        },
    }
}

/// The wire form of a call's answer: the server's result with the facts of the call in its
/// `_meta` (attempts, selection, call id; degraded, replayed and alternatives when they apply),
/// or a dry run's verdict. The one place those facts become JSON.
pub(crate) fn call_result(answer: CallAnswer) -> Value {
    use tool_cli_protocol::meta;
    let ran = match answer {
        CallAnswer::DryRun(verdict) => return serde_json::to_value(verdict).unwrap_or_default(),
        CallAnswer::Ran(ran) => ran,
    };
    let RanCall {
        mut result,
        facts,
        alternatives,
    } = ran;
    let Some(members) = result.as_object_mut() else {
        return result;
    };
    let meta = members
        .entry("_meta")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return result;
    };
    if let Some(degraded) = &facts.degraded {
        meta.insert(
            meta::DEGRADED.to_owned(),
            serde_json::json!({
                "reason": degraded.reason,
                "ageMs": degraded.age.as_millis() as u64,
            }),
        );
    }
    meta.insert(meta::ATTEMPTS.to_owned(), facts.attempts.into());
    if let Ok(selection) = serde_json::to_value(selection_info(&facts.selection)) {
        meta.insert(meta::SELECTION.to_owned(), selection);
    }
    meta.insert(meta::CALL_ID.to_owned(), facts.call_id.to_string().into());
    if facts.replayed {
        meta.insert(meta::REPLAYED.to_owned(), true.into());
    }
    if let Some(alternatives) = alternatives {
        meta.insert(
            tool_cli_protocol::search::ALTERNATIVES_META.to_owned(),
            serde_json::to_value(alternatives).unwrap_or_default(),
        );
    }
    result
}

/// An error as an entry carries it.
fn error_object(error: &Error) -> ErrorObject {
    ErrorObject {
        code: error.code(),
        message: error.wire_message(),
        data: serde_json::to_value(error.to_data()).ok(),
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
    fn store_with(dir: &std::path::Path, answers_per_token: usize) -> Arc<SpillStore> {
        Arc::new(SpillStore::with_limits(
            dir.join("spill"),
            Duration::from_secs(60),
            crate::spill::SpillLimits {
                answers_per_token,
                ..crate::spill::SpillLimits::default()
            },
        ))
    }

    /// A tool result of a text block of `text_bytes` bytes.
    fn text(text_bytes: usize) -> Value {
        json!({"content": [{"type": "text", "text": "x".repeat(text_bytes)}]})
    }

    /// The entry of a call of `big` on `s` that answered [`text`].
    fn entry(index: usize, text_bytes: usize) -> Step {
        Step {
            index,
            tool: "big".into(),
            requested_server: Some("s".into()),
            outcome: Ok(CallAnswer::Ran(RanCall {
                result: text(text_bytes),
                facts: crate::pipeline::CallFacts {
                    server: "s".into(),
                    selection: crate::pipeline::routing::Selection::named("s"),
                    attempts: 1,
                    is_error: false,
                    degraded: None,
                    call_id: crate::pipeline::CallId::next(),
                    replayed: false,
                },
                alternatives: None,
            })),
        }
    }

    /// The content of an entry's result.
    fn content(result: Option<&Value>) -> &Value {
        &result.expect("a result")["content"]
    }

    #[tokio::test]
    async fn entries_are_kept_while_they_fit_and_spilled_when_not() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with(dir.path(), 64);
        let budget = Budget {
            bytes: 8 * 1024,
            in_batch: false,
        };
        let mut answer = EntryAnswers::new("callMany", budget, 3, &store, "tok");
        // Out of order, as a fan-out's calls finish: small, too large for what is left, small.
        assert_eq!(answer.take(entry(2, 100)).await, Room::More);
        assert_eq!(answer.take(entry(0, 20_000)).await, Room::More);
        let error = Step {
            outcome: Err(Error::invalid_params("callMany", "bad")),
            ..entry(1, 0)
        };
        assert_eq!(answer.take(error).await, Room::More);
        assert!(answer.kept_bytes() <= budget.bytes);
        let encoded = answer.finish_many().unwrap();
        assert!(
            encoded.get().len() <= budget.bytes,
            "{}",
            encoded.get().len()
        );
        // The protocol's own type reads it: the same shape as before.
        let many: tool_cli_protocol::orchestration::CallManyResult =
            serde_json::from_str(encoded.get()).unwrap();
        let indexes: Vec<usize> = many.results.iter().map(|r| r.index).collect();
        assert_eq!(indexes, [0, 1, 2], "in request order");
        assert_eq!(
            content(many.results[2].result.as_ref()),
            &text(100)["content"]
        );
        assert_eq!(
            many.results[2].result.as_ref().unwrap()["_meta"]["tool-cli/attempts"],
            1
        );
        let error = many.results[1].error.as_ref().unwrap();
        assert_eq!(error.message, "invalid params for callMany: bad");
        let reference = many.results[0].result.as_ref().unwrap();
        let path = reference["_meta"]["tool-cli/spilled"]["path"]
            .as_str()
            .unwrap();
        let saved: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        assert_eq!(
            saved["content"],
            text(20_000)["content"],
            "the whole result, spilled"
        );
    }

    #[tokio::test]
    async fn an_answer_with_no_room_left_fails_that_entry_and_says_it_is_full() {
        let dir = tempfile::tempdir().unwrap();
        // Room for two spilled answers of this token.
        let store = store_with(dir.path(), 2);
        let budget = Budget {
            bytes: 4 * 1024,
            in_batch: false,
        };
        let mut answer = EntryAnswers::new("callMany", budget, 10, &store, "tok");
        assert_eq!(answer.take(entry(0, 3000)).await, Room::More);
        assert_eq!(answer.take(entry(1, 3000)).await, Room::More);
        let full = Room::Full {
            limit_bytes: budget.bytes,
        };
        assert_eq!(answer.take(entry(2, 3000)).await, full);
        // Whatever still comes (a call that was already running) is answered, and it stays full.
        assert_eq!(answer.take(entry(3, 10)).await, full);
        let many: tool_cli_protocol::orchestration::CallManyResult =
            serde_json::from_str(answer.finish_many().unwrap().get()).unwrap();
        assert_eq!(many.results.len(), 4);
        for spilled in &many.results[..2] {
            assert!(spilled.result.as_ref().unwrap()["_meta"]["tool-cli/spilled"].is_object());
        }
        let refused = many.results[2].error.as_ref().expect("an error of its own");
        assert_eq!(refused.code, tool_cli_protocol::code::UPSTREAM_ERROR);
        let data: ErrorData = serde_json::from_value(refused.data.clone().unwrap()).unwrap();
        assert!(
            matches!(data, ErrorData::ResultTooLarge { ref method, bytes: Some(_), .. } if method == "big"),
            "{data:?}"
        );
        assert!(
            !refused.message.contains("nothing was changed"),
            "{}",
            refused.message
        );
        assert_eq!(
            content(many.results[3].result.as_ref()),
            &text(10)["content"]
        );
    }

    #[tokio::test]
    async fn a_chain_answer_has_its_steps_and_whether_it_completed() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with(dir.path(), 64);
        let budget = Budget {
            bytes: 1 << 20,
            in_batch: false,
        };
        let mut answer = EntryAnswers::new("callChain", budget, 2, &store, "tok");
        answer.take(entry(0, 5)).await;
        let chain: tool_cli_protocol::orchestration::CallChainResult =
            serde_json::from_str(answer.finish_chain(false).unwrap().get()).unwrap();
        assert!(!chain.completed);
        assert_eq!(chain.steps.len(), 1);
        assert_eq!(chain.steps[0].server.as_deref(), Some("s"));
    }
}
