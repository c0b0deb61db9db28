//! Chains and fan-outs: many calls for one request, each through the whole pipeline.
//!
//! `callChain` runs steps in order; a later step's arguments may take values from earlier
//! results by JSON Pointer, and the chain stops at the first step that fails (an error or an
//! `isError` result), answering every step that ran. `callMany` runs calls concurrently (bounded)
//! and answers each, in request order, whatever happened to the others. Every step is a child of
//! the request's context (its own call id, one level deeper, the same caller and session), so
//! traces link steps to their parent and the depth guard stops runaway nesting.
//!
//! Binding is pure ([`bind`]) and checked before anything runs ([`check_bindings`]): a binding
//! may only look back, so a chain can never wait on itself. A step's result is kept for binding
//! only when a later step binds to it.
//!
//! Neither holds its answer: each entry (a typed [`Step`]) goes to a [`StepSink`] as it
//! finishes (the RPC layer's is `answer::EntryAnswers`, which encodes it at once and keeps it,
//! spills it, or fails it within the request's size budget). When the sink has no room left, a fan-out starts no more
//! calls (each gets `answerFull`, nothing sent) and a chain stops: memory stays bounded by the
//! budget, and no answer of a call that ran is refused after the fact.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{Map, Value};
use tokio::time::Instant;
use tool_cli_protocol::ErrorData;
use tool_cli_protocol::orchestration::{CallChainParams, CallManyParams, ChainStep};

use super::{Calls, call_request};
use crate::error::Error;
use crate::pipeline::{CallAnswer, CallContext, CallRequest, caller_timeout};

/// Most steps in one chain.
pub(crate) const MAX_CHAIN_STEPS: usize = 64;

/// Most calls in one fan-out.
pub(crate) const MAX_FANOUT_CALLS: usize = 256;

/// Default and largest concurrency of a fan-out.
const DEFAULT_CONCURRENCY: usize = 8;
const MAX_CONCURRENCY: usize = 64;

/// Whether an answer being built has room for more results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Room {
    /// It does.
    More,
    /// It does not: the entry just taken could be neither kept nor spilled (it was answered
    /// with an error of its own), and nothing more should run. `limit_bytes` is the answer's.
    Full { limit_bytes: usize },
}

/// One finished step of a chain or call of a fan-out.
#[derive(Debug)]
pub(crate) struct Step {
    /// Its place in the request.
    pub(crate) index: usize,
    /// The tool it called.
    pub(crate) tool: String,
    /// The server it named, if it named one.
    pub(crate) requested_server: Option<String>,
    /// What it answered.
    pub(crate) outcome: Result<CallAnswer, Error>,
}

impl Step {
    /// The server of the entry: the one that ran it, else the one it named.
    pub(crate) fn server(&self) -> Option<String> {
        match &self.outcome {
            Ok(answer) => Some(answer.server().to_owned()),
            Err(_) => self.requested_server.clone(),
        }
    }
}

/// Where the entries of a chain or a fan-out go as they finish: the answer being built.
pub(crate) trait StepSink: Send {
    /// Takes one finished entry (in any order for a fan-out; its `index` says where it goes).
    fn take(&mut self, entry: Step) -> impl Future<Output = Room> + Send;
}

/// Every entry, held as it is: for tests, and callers with no size budget.
impl StepSink for Vec<Step> {
    async fn take(&mut self, entry: Step) -> Room {
        self.push(entry);
        Room::More
    }
}

impl Calls {
    /// `callChain`: each step's entry goes to `sink` as the step ends; answers whether every
    /// step ran and succeeded (`completed`).
    pub(crate) async fn call_chain(
        &self,
        params: CallChainParams,
        context: &CallContext,
        sink: &mut impl StepSink,
    ) -> Result<bool, Error> {
        const METHOD: &str = "callChain";
        if params.steps.is_empty() {
            return Err(Error::invalid_params(
                METHOD,
                "steps is empty; expected 1 or more steps",
            ));
        }
        if params.steps.len() > MAX_CHAIN_STEPS {
            return Err(Error::invalid_params(
                METHOD,
                format!(
                    "{} steps is more than the limit of {MAX_CHAIN_STEPS}; split the chain, or use \
                     callMany for independent calls",
                    params.steps.len()
                ),
            ));
        }
        for (index, step) in params.steps.iter().enumerate() {
            check_bindings(index, step)
                .map_err(|message| Error::invalid_params(METHOD, message))?;
        }
        let timeout = caller_timeout(METHOD, params.timeout_ms)?;
        let deadline = timeout.map(|timeout| context.arrived + timeout);
        let mut context = context.clone();
        context.session_id = params.session_id.clone();
        let dry_run = params.dry_run == Some(true);
        let bound = bound_steps(&params.steps);

        // Each step's result, for the bindings of the steps after it; `null` for a step that
        // no later step binds to, so a chain of large results does not hold them all.
        let mut results: Vec<Value> = Vec::new();
        for (index, step) in params.steps.into_iter().enumerate() {
            let child = context.child(index as u32);
            let tool = step.tool.clone();
            let server = step.server.clone();
            let outcome = match bind(index, &step, &results, dry_run) {
                Err(message) => Err(Error::invalid_params(METHOD, message)),
                Ok(arguments) => {
                    let request = CallRequest {
                        server: step.server,
                        tool: step.tool,
                        arguments,
                        timeout: deadline.map(remaining),
                        confirm: params.confirm == Some(true),
                        dry_run,
                        hint: step.hint,
                        idempotency_key: None,
                        progress_resets_timeout: None,
                        task: None,
                    };
                    if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                        Err(Error::timeout(
                            server.as_deref().unwrap_or("*"),
                            &tool,
                            timeout.map_or(0, |t| t.as_millis() as u64),
                        ))
                    } else {
                        self.call(&child, request).await
                    }
                }
            };
            let failed = match &outcome {
                Ok(answer) => !answer.succeeded(),
                Err(_) => true,
            };
            // A later step binds to the tool's result (the server's `CallToolResult`).
            results.push(match outcome.as_ref().ok().and_then(CallAnswer::result) {
                Some(result) if bound[index] => result.clone(),
                _ => Value::Null,
            });
            let entry = Step {
                index,
                tool,
                requested_server: server,
                outcome,
            };
            // A step whose answer found no room fails the chain there, like any failed step.
            let room = sink.take(entry).await;
            if failed || room != Room::More {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `callMany`: each call's entry goes to `sink` as the call ends. Once the sink is full,
    /// the calls not started yet are not run; each is answered `answerFull`.
    pub(crate) async fn call_many(
        &self,
        params: CallManyParams,
        context: &CallContext,
        sink: &mut impl StepSink,
    ) -> Result<(), Error> {
        const METHOD: &str = "callMany";
        if params.calls.is_empty() {
            return Err(Error::invalid_params(
                METHOD,
                "calls is empty; expected 1 or more calls",
            ));
        }
        if params.calls.len() > MAX_FANOUT_CALLS {
            return Err(Error::invalid_params(
                METHOD,
                format!(
                    "{} calls is more than the limit of {MAX_FANOUT_CALLS}; send them in several \
                     requests",
                    params.calls.len()
                ),
            ));
        }
        let concurrency = match params.max_concurrent {
            None => DEFAULT_CONCURRENCY,
            Some(0) => {
                return Err(Error::invalid_params(
                    METHOD,
                    format!("maxConcurrent must be 1-{MAX_CONCURRENCY}"),
                ));
            }
            Some(n) => n.min(MAX_CONCURRENCY),
        };
        let mut context = context.clone();
        context.session_id = params.session_id.clone();
        let context = &context;
        // Set once the answer is full (with its limit): a call not started by then is not run.
        let full = AtomicBool::new(false);
        let full_limit = std::sync::atomic::AtomicUsize::new(0);
        let (full, full_limit) = (&full, &full_limit);
        let mut finished = futures_util::stream::iter(params.calls.into_iter().enumerate())
            .map(|(index, call)| async move {
                let tool = call.tool.clone();
                let server = call.server.clone();
                let outcome = if full.load(Ordering::Acquire) {
                    Err(ErrorData::AnswerFull {
                        method: METHOD.to_owned(),
                        limit_bytes: full_limit.load(Ordering::Acquire),
                    }
                    .into())
                } else {
                    match call_request(call) {
                        Ok(request) => self.call(&context.child(index as u32), request).await,
                        Err(error) => Err(error),
                    }
                };
                Step {
                    index,
                    tool,
                    requested_server: server,
                    outcome,
                }
            })
            // In the order they finish: each is encoded (and its tree freed) at once, not held
            // behind a slower call before it.
            .buffer_unordered(concurrency);
        while let Some(entry) = finished.next().await {
            if let Room::Full { limit_bytes } = sink.take(entry).await {
                full_limit.store(limit_bytes, Ordering::Release);
                full.store(true, Ordering::Release);
            }
        }
        Ok(())
    }
}

fn remaining(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1))
}

/// For each step, whether a later step binds to its result (checked bindings: each looks back).
fn bound_steps(steps: &[ChainStep]) -> Vec<bool> {
    let mut bound = vec![false; steps.len()];
    let mut mark = |value: &Value, _: &str| {
        if let Some(Ok((from, _))) = as_binding(value)
            && let Some(slot) = bound.get_mut(from)
        {
            *slot = true;
        }
    };
    for step in steps {
        walk(&Value::Object(step.arguments.clone()), "", &mut mark);
        for binding in step.bind.iter().flat_map(|bind| bind.values()) {
            mark(binding, "");
        }
    }
    bound
}

/// A binding: `{"$from": "<step>", "pointer": "<JSON Pointer>"}` (`$from` may be a number too).
fn as_binding(value: &Value) -> Option<Result<(usize, &str), String>> {
    let object = value.as_object()?;
    let from = object.get("$from")?;
    let parsed = match from {
        Value::String(text) => text.parse::<usize>().ok(),
        Value::Number(number) => number.as_u64().map(|n| n as usize),
        _ => None,
    };
    let pointer = object.get("pointer").and_then(Value::as_str).unwrap_or("");
    Some(match parsed {
        None => Err(format!(
            "\"$from\" must be the index of an earlier step, such as \"0\", not {from}"
        )),
        Some(_) if !(pointer.is_empty() || pointer.starts_with('/')) => Err(format!(
            "\"pointer\" must be a JSON Pointer starting with '/', not \"{pointer}\""
        )),
        Some(step) => Ok((step, pointer)),
    })
}

/// Checks, before anything runs, that every binding of step `index` is well formed and looks
/// back (to a step before it): a chain cannot bind to itself or to the future.
pub(crate) fn check_bindings(index: usize, step: &ChainStep) -> Result<(), String> {
    let mut problem = None;
    let mut check = |value: &Value, at: &str| {
        if problem.is_some() {
            return;
        }
        if let Some(binding) = as_binding(value) {
            problem = match binding {
                Err(message) => Some(format!("step {index} {at}: {message}")),
                Ok((from, _)) if from >= index => Some(format!(
                    "step {index} {at} binds to step {from}, which has not run by then; a step \
                     can only use the results of earlier steps (0-{})",
                    index.saturating_sub(1)
                )),
                Ok(_) => None,
            };
        }
    };
    walk(
        &Value::Object(step.arguments.clone()),
        "arguments",
        &mut check,
    );
    if let Some(bind) = &step.bind {
        for (target, binding) in bind {
            if !(target.is_empty() || target.starts_with('/')) {
                return Err(format!(
                    "step {index} bind key \"{target}\" must be a JSON Pointer into the arguments, \
                     such as \"/id\""
                ));
            }
            if as_binding(binding).is_none() {
                return Err(format!(
                    "step {index} bind \"{target}\" must be {{\"$from\": \"<step>\", \"pointer\": \
                     \"/...\"}}"
                ));
            }
            check(binding, &format!("bind \"{target}\""));
        }
    }
    problem.map_or(Ok(()), Err)
}

fn walk(value: &Value, at: &str, visit: &mut dyn FnMut(&Value, &str)) {
    visit(value, at);
    match value {
        Value::Object(members) if as_binding(value).is_none() => {
            for (key, member) in members {
                walk(member, &format!("{at}/{key}"), visit);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{at}/{i}"), visit);
            }
        }
        _ => {}
    }
}

/// Replaces a binding found at a location (named for messages) by the value it points at;
/// `None` for a value that is not a binding.
type Resolver<'a> = dyn Fn(&Value, &str) -> Result<Option<Value>, String> + 'a;

/// Step `index`'s arguments with every binding replaced by the value it points at in the
/// results of the steps before it.
pub(crate) fn bind(
    index: usize,
    step: &ChainStep,
    results: &[Value],
    dry_run: bool,
) -> Result<Map<String, Value>, String> {
    // What the bindings of this step have copied so far: a binding is 30 bytes of request and
    // may copy a whole result, so a request of many could build arguments of any size.
    let bound_bytes = std::cell::Cell::new(0usize);
    let resolve = |value: &Value, at: &str| -> Result<Option<Value>, String> {
        let Some(binding) = as_binding(value) else {
            return Ok(None);
        };
        let (from, pointer) = binding?;
        if dry_run {
            return Err(format!(
                "step {index} {at} binds to step {from}'s result, which a dry-run does not have; \
                 dry-run the steps one by one, or run the chain"
            ));
        }
        let source = results
            .get(from)
            .ok_or_else(|| format!("step {index} {at} binds to step {from}, which did not run"))?;
        let bound = source.pointer(pointer).ok_or_else(|| {
            format!("step {index} {at}: pointer \"{pointer}\" is not in step {from}'s result")
        })?;
        let room = MAX_BOUND_BYTES - bound_bytes.get();
        let size = encoded_size_within(bound, room).ok_or_else(|| {
            format!(
                "step {index} {at}: the values bound into step {index}'s arguments would exceed \
                 {MAX_BOUND_BYTES} bytes; bind smaller parts of the results (longer pointers)"
            )
        })?;
        bound_bytes.set(bound_bytes.get() + size);
        Ok(Some(bound.clone()))
    };
    fn substitute(value: &mut Value, at: &str, resolve: &Resolver<'_>) -> Result<(), String> {
        if let Some(bound) = resolve(value, at)? {
            *value = bound;
            return Ok(());
        }
        match value {
            Value::Object(members) => {
                for (key, member) in members.iter_mut() {
                    substitute(member, &format!("{at}/{key}"), resolve)?;
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    substitute(item, &format!("{at}/{i}"), resolve)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
    let mut arguments = Value::Object(step.arguments.clone());
    substitute(&mut arguments, "arguments", &resolve)?;
    if let Some(bind) = &step.bind {
        for (target, binding) in bind {
            let value = resolve(binding, &format!("bind \"{target}\""))?
                .ok_or_else(|| format!("step {index} bind \"{target}\" is not a binding"))?;
            set_pointer(&mut arguments, target, value)
                .map_err(|message| format!("step {index} bind \"{target}\": {message}"))?;
        }
    }
    match arguments {
        Value::Object(map) => Ok(map),
        _ => Err(format!(
            "step {index}: a binding of the whole arguments must give an object"
        )),
    }
}

/// Most bytes (as JSON) the bindings of one step may copy into its arguments, all together.
pub(crate) const MAX_BOUND_BYTES: usize = 16 * 1024 * 1024;

/// About how many bytes `value` takes as compact JSON (escapes not counted), if that is at most
/// `limit`; the walk stops as soon as it is over, so a huge value costs no more than `limit`.
fn encoded_size_within(value: &Value, limit: usize) -> Option<usize> {
    fn add(total: &mut usize, bytes: usize, limit: usize) -> Option<()> {
        *total += bytes;
        (*total <= limit).then_some(())
    }
    fn walk(value: &Value, total: &mut usize, limit: usize) -> Option<()> {
        match value {
            Value::Null | Value::Bool(_) => add(total, 5, limit),
            Value::Number(_) => add(total, 8, limit),
            Value::String(text) => add(total, text.len() + 2, limit),
            Value::Array(items) => {
                add(total, 2 + items.len(), limit)?;
                items.iter().try_for_each(|item| walk(item, total, limit))
            }
            Value::Object(members) => {
                add(total, 2 + members.len(), limit)?;
                members.iter().try_for_each(|(key, member)| {
                    add(total, key.len() + 3, limit)?;
                    walk(member, total, limit)
                })
            }
        }
    }
    let mut total = 0;
    walk(value, &mut total, limit).map(|()| total)
}

/// Sets the value at `pointer` in `target`, creating objects along the way.
fn set_pointer(target: &mut Value, pointer: &str, value: Value) -> Result<(), String> {
    if pointer.is_empty() {
        *target = value;
        return Ok(());
    }
    let mut current = target;
    let tokens: Vec<String> = pointer[1..]
        .split('/')
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect();
    for (i, token) in tokens.iter().enumerate() {
        let last = i + 1 == tokens.len();
        current = match current {
            Value::Object(members) => {
                if last {
                    members.insert(token.clone(), value);
                    return Ok(());
                }
                members
                    .entry(token.clone())
                    .or_insert_with(|| Value::Object(Map::new()))
            }
            Value::Array(items) => {
                let at: usize = token
                    .parse()
                    .map_err(|_| format!("\"{token}\" is not an array index"))?;
                let slot = items
                    .get_mut(at)
                    .ok_or_else(|| format!("index {at} is past the end of the array"))?;
                if last {
                    *slot = value;
                    return Ok(());
                }
                slot
            }
            _ => {
                return Err(format!(
                    "\"{token}\" goes inside a value that is not a container"
                ));
            }
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::pipeline::CallContext;

    fn step(arguments: Value, bind: Option<Value>) -> ChainStep {
        ChainStep {
            server: None,
            tool: "t".into(),
            arguments: arguments.as_object().cloned().unwrap(),
            bind: bind.map(|b| b.as_object().cloned().unwrap()),
            hint: None,
        }
    }

    #[test]
    fn inline_and_located_bindings_take_earlier_results() {
        let results = vec![json!({"structuredContent": {"rows": [{"id": 42, "name": "Ada"}]}})];
        let s = step(
            json!({"sql": "x", "params": [{"$from": "0", "pointer": "/structuredContent/rows/0/id"}]}),
            Some(json!({"/who/name": {"$from": 0, "pointer": "/structuredContent/rows/0/name"}})),
        );
        check_bindings(1, &s).unwrap();
        let bound = bind(1, &s, &results, false).unwrap();
        assert_eq!(
            Value::Object(bound),
            json!({"sql": "x", "params": [42], "who": {"name": "Ada"}})
        );
    }

    #[test]
    fn bindings_may_only_look_back() {
        let s = step(json!({"a": {"$from": "1", "pointer": "/x"}}), None);
        let error = check_bindings(1, &s).unwrap_err();
        assert!(
            error.contains("binds to step 1, which has not run"),
            "{error}"
        );
        let s = step(json!({"a": {"$from": "zero", "pointer": "/x"}}), None);
        assert!(
            check_bindings(1, &s)
                .unwrap_err()
                .contains("\"$from\" must be")
        );
        let s = step(json!({"a": {"$from": "0", "pointer": "x"}}), None);
        assert!(check_bindings(1, &s).unwrap_err().contains("JSON Pointer"));
        let s = step(
            json!({}),
            Some(json!({"a": {"$from": "0", "pointer": "/x"}})),
        );
        assert!(check_bindings(1, &s).unwrap_err().contains("bind key"));
    }

    #[test]
    fn a_missing_pointer_is_a_clear_step_error() {
        let results = vec![json!({"content": []})];
        let s = step(
            json!({"a": {"$from": "0", "pointer": "/structuredContent/id"}}),
            None,
        );
        let error = bind(1, &s, &results, false).unwrap_err();
        assert!(
            error.contains("pointer \"/structuredContent/id\" is not in step 0's result"),
            "{error}"
        );
        let error = bind(1, &s, &results, true).unwrap_err();
        assert!(error.contains("a dry-run does not have"), "{error}");
    }

    #[test]
    fn bindings_cannot_copy_a_result_into_arguments_without_bound() {
        let big = "x".repeat(1_000_000);
        let results = vec![json!({"text": big})];
        let many: Vec<Value> = (0..17)
            .map(|_| json!({"$from": "0", "pointer": "/text"}))
            .collect();
        let error = bind(1, &step(json!({"copies": many}), None), &results, false).unwrap_err();
        assert!(
            error.contains("arguments/copies/16: the values bound into step 1's arguments would exceed 16777216 bytes"),
            "{error}"
        );
        let sixteen: Vec<Value> = (0..16)
            .map(|_| json!({"$from": "0", "pointer": "/text"}))
            .collect();
        let arguments = bind(1, &step(json!({"copies": sixteen}), None), &results, false).unwrap();
        assert_eq!(arguments["copies"].as_array().unwrap().len(), 16);
        assert_eq!(encoded_size_within(&json!({"a": [1, "bc"]}), 100), Some(23));
        assert_eq!(encoded_size_within(&json!({"a": [1, "bc"]}), 22), None);
    }

    #[test]
    fn only_the_steps_bound_to_are_kept_for_binding() {
        let steps = [
            step(json!({}), None),
            step(json!({}), None),
            step(
                json!({"deep": [{"x": {"$from": "0", "pointer": "/a"}}]}),
                None,
            ),
            step(json!({}), Some(json!({"/y": {"$from": 2, "pointer": ""}}))),
        ];
        assert_eq!(bound_steps(&steps), [true, false, true, false]);
    }

    #[test]
    fn results_without_bindings_pass_untouched() {
        let s = step(json!({"nested": {"$from_like": 1, "pointer": "/x"}}), None);
        check_bindings(0, &s).unwrap();
        assert_eq!(
            Value::Object(bind(0, &s, &[], false).unwrap()),
            json!({"nested": {"$from_like": 1, "pointer": "/x"}})
        );
    }
    /// A fan-out of `count` calls of a tool answering `bytes` bytes, one at a time, into an
    /// answer of `budget` bytes whose token may keep `spillable` answers spilled.
    async fn fan_out(count: usize, bytes: usize, budget: usize, spillable: usize) -> (u32, Value) {
        use crate::pipeline::tests::{Behaviour, FakeProvider, FakeServer, owner, tool};
        let server = std::sync::Arc::new(FakeServer::new(
            "s",
            vec![(
                tool(
                    "big",
                    json!({"type": "object"}),
                    json!({"readOnlyHint": true}),
                ),
                Behaviour::Big(bytes),
            )],
        ));
        let services =
            crate::services::Services::for_tests(std::sync::Arc::new(FakeProvider(vec![
                std::sync::Arc::clone(&server),
            ])));
        let dir = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(crate::edge::spill::SpillStore::with_limits(
            dir.path().join("spill"),
            Duration::from_secs(60),
            crate::edge::spill::SpillLimits {
                answers_per_token: spillable,
                ..crate::edge::spill::SpillLimits::default()
            },
        ));
        let budget = crate::edge::answer::Budget {
            bytes: budget,
            in_batch: false,
        };
        let mut answer =
            crate::edge::answer::EntryAnswers::new("callMany", budget, count, &store, "t");
        let calls = (0..count)
            .map(|_| serde_json::from_value(json!({"server": "s", "tool": "big"})).unwrap())
            .collect();
        let params = CallManyParams {
            calls,
            max_concurrent: Some(1),
            session_id: None,
        };
        let context = CallContext::new(owner());
        services
            .calls
            .call_many(params, &context, &mut answer)
            .await
            .unwrap();
        let encoded = answer.finish_many().unwrap();
        (server.calls(), serde_json::from_str(encoded.get()).unwrap())
    }

    #[tokio::test]
    async fn a_full_answer_stops_the_fan_out_before_the_rest_run() {
        // 20 answers of 3 KB, a 4 KiB budget, 2 answers may be spilled: the third call that
        // finds no room fails on its own, and the 17 after it are never sent.
        let (sent, answer) = fan_out(20, 3000, 4096, 2).await;
        assert_eq!(sent, 3, "the refusal came before the rest ran");
        let results = answer["results"].as_array().unwrap();
        assert_eq!(results.len(), 20, "every call answered");
        for (index, entry) in results.iter().enumerate() {
            assert_eq!(entry["index"], index);
            let expected_kind = match index {
                0 | 1 => None,
                2 => Some("resultTooLarge"),
                _ => Some("answerFull"),
            };
            assert_eq!(
                entry["error"]["data"]["kind"].as_str(),
                expected_kind,
                "{entry}"
            );
        }
        assert_eq!(results[5]["error"]["code"], -32008);
        assert!(
            results[5]["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("not run"),
            "{}",
            results[5]
        );
        // With room enough, every call runs and is answered.
        let (sent, answer) = fan_out(20, 3000, 1 << 20, 2).await;
        assert_eq!(sent, 20);
        assert!(answer["results"].as_array().unwrap().iter().all(|entry| {
            entry["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .len()
                == 3000
        }));
    }
}
