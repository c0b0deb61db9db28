//! The JSON-RPC methods: params in, results or errors out.
//!
//! This is the only place a daemon [`Error`] becomes a JSON-RPC error object; handlers stay thin
//! and delegate to the services (`crate::services`). Every result leaves through [`crate::answer`], which
//! holds it to the response size limit (spilling a large `callTool`/`readResource` result to a
//! file), and every handler that waits is raced against the end of the shutdown grace period,
//! so a request still running then gets a shutdown error instead of a closed connection.
//!
//! Here: what every handler shares (the [`Context`], params parsing, the error conversion, the
//! owner check) and the registration of every method. The handlers live in `rpc/` by area:
//! `discovery` (bridge info, health, servers, tools, search), `calls` (callTool, callChain,
//! callMany), `events` (callEvents), `elicitation`, `resources` (and readSpilled), `prompts`,
//! `sessions`, `agent`, `admin` (the owner token's: servers, tokens, traces report) and
//! `auth_methods` (OAuth for remote servers).

mod admin;
mod agent;
mod auth_methods;
mod calls;
mod discovery;
mod elicitation;
mod events;
mod prompts;
mod resources;
mod sessions;

use std::future::Future;
use std::sync::Arc;

use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::{Extensions, RpcModule};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::watch;

use crate::answer::{Budget, fit, fit_or_spill};
use crate::auth::Grant;
use crate::error::Error;
use crate::pipeline::CallContext;
use crate::services::Services;
use crate::shape::BatchLen;
use crate::spill::SpillStore;

/// How answers leave: their size limit, where large ones are saved, and when the daemon stops
/// waiting for them.
pub(crate) struct Answers {
    /// `--max-response-bytes`.
    pub(crate) max_response_bytes: usize,
    /// Where results over the limit are saved.
    pub(crate) spill: Arc<SpillStore>,
    /// Turns `true` when the shutdown grace period is over.
    pub(crate) grace_over: watch::Receiver<bool>,
    /// The grace period, for the error message.
    pub(crate) grace_ms: u64,
}

/// What every handler can reach.
pub(crate) struct Context {
    pub(crate) services: Arc<Services>,
    answers: Answers,
}

impl Context {
    /// This request's share of the response size limit.
    pub(crate) fn budget(&self, extensions: &Extensions) -> Budget {
        Budget::new(
            self.answers.max_response_bytes,
            extensions.get::<BatchLen>().copied(),
        )
    }

    /// Runs `work` until it ends or the shutdown grace period does, whichever comes first. In
    /// the second case the work is dropped (a call in flight is cancelled upstream) and the
    /// request is answered with a shutdown error, so it gets exactly one answer before its
    /// connection closes.
    ///
    /// `work` is boxed here, before the handler's own future holds it: a tool call's future is
    /// tens of kilobytes (the whole pipeline's state), and held inline it was copied whole each
    /// time jsonrpsee moved the handler's future (into its wrapper, into a box), which callgrind
    /// showed as the largest cost of a `callTool` (38 % of the daemon's instructions, all
    /// `memcpy`). Boxed, those moves copy a pointer.
    pub(crate) fn until_grace_over<'a, T: 'a>(
        &'a self,
        work: impl Future<Output = Result<T, Error>> + 'a,
    ) -> impl Future<Output = Result<T, ErrorObjectOwned>> + 'a {
        let work = Box::pin(work);
        async move {
            let mut grace_over = self.answers.grace_over.clone();
            tokio::select! {
                result = work => result.map_err(to_rpc_error),
                // A dropped sender (no shutdown will come) disables this branch.
                Ok(_) = grace_over.wait_for(|over| *over) => Err(to_rpc_error(
                    tool_cli_protocol::ErrorData::ShuttingDown {
                        grace_ms: self.answers.grace_ms,
                    }
                    .into(),
                )),
            }
        }
    }
}

pub(crate) type Answer = Result<Box<RawValue>, ErrorObjectOwned>;

/// The grant the gate attached to the request. Every request that reaches a handler has one;
/// a missing grant (a bug) is refused rather than treated as the owner.
fn grant(extensions: &Extensions) -> Result<&Grant, ErrorObjectOwned> {
    extensions
        .get::<Grant>()
        .ok_or_else(|| to_rpc_error(Error::internal("request without a grant")))
}

/// The context of a call that arrives now, for the request's grant.
pub(crate) fn call_context(extensions: &Extensions) -> Result<CallContext, ErrorObjectOwned> {
    Ok(CallContext::new(grant(extensions)?.clone()))
}

/// Refuses token management, server restarts and the trace report to anything but the owner
/// token.
fn owner_only(grant: &Grant, method: &str) -> Result<(), ErrorObjectOwned> {
    if grant.is_owner {
        return Ok(());
    }
    Err(to_rpc_error(
        tool_cli_protocol::ErrorData::NotPermitted {
            server: String::new(),
            tool: None,
            reason: format!(
                "{method} needs the daemon's owner token; a scoped token cannot mint, revoke or \
                 list tokens, restart, add, remove or reload servers, or read the daemon's traces"
            ),
        }
        .into(),
    ))
}

/// Builds the module serving every method of the protocol.
pub(crate) fn module(services: Arc<Services>, answers: Answers) -> RpcModule<Context> {
    let mut module = RpcModule::new(Context { services, answers });
    discovery::register(&mut module);
    calls::register(&mut module);
    events::register(&mut module);
    elicitation::register(&mut module);
    resources::register(&mut module);
    prompts::register(&mut module);
    sessions::register(&mut module);
    agent::register(&mut module);
    admin::register(&mut module);
    auth_methods::register(&mut module);
    module
}

/// The params shape of methods that name one server.
const SERVER_SHAPE: &str = r#"{"server": string}"#;

/// The deepest nesting serde_json parses (its recursion limit), counted from the params object.
const MAX_PARAMS_DEPTH: usize = 128;

/// Parses params into `T`, with an error that names the member and the expected shape.
pub(crate) fn parse<T: DeserializeOwned>(
    method: &str,
    params: &Params<'_>,
    expected: &str,
) -> Result<T, ErrorObjectOwned> {
    let invalid = |message: String| to_rpc_error(Error::invalid_params(method, message));
    let Some(text) = params.as_str() else {
        return Err(invalid(format!("missing params; expected {expected}")));
    };
    serde_json::from_str(text).map_err(|err| {
        let message = err.to_string();
        // serde_json stops at 128 levels of arrays and objects (a guard against stack
        // exhaustion); the shape is not what is wrong, so do not say what shape was expected.
        if message.starts_with("recursion limit exceeded") {
            return invalid(format!(
                "the params nest arrays and objects more than {MAX_PARAMS_DEPTH} levels deep \
                 (the arguments about {} levels below them), deeper than the daemon parses; \
                 send flatter arguments",
                MAX_PARAMS_DEPTH - 2
            ));
        }
        // serde_json appends a position inside the params text, which helps nobody here.
        let message = message
            .split(" at line ")
            .next()
            .unwrap_or(&message)
            .to_owned();
        let hint = unknown_field_hint(&message).unwrap_or_default();
        invalid(format!("{message}{hint}; expected {expected}"))
    })
}

/// For serde's "unknown field `readonly`, expected one of `servers`, …, `readOnly`, …": the
/// known member closest to the unknown one, as "; did you mean `readOnly`?".
fn unknown_field_hint(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (unknown, rest) = rest.split_once('`')?;
    let known: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    let closest = crate::suggest::closest(unknown, known, 1);
    closest
        .first()
        .map(|name| format!("; did you mean `{name}`?"))
}

/// The one conversion of daemon errors into JSON-RPC errors.
pub(crate) fn to_rpc_error(error: Error) -> ErrorObjectOwned {
    if let Error::Internal(detail) = &error {
        // The detail stays here; the caller is told only that something failed inside.
        tracing::error!(%detail, "internal error");
    }
    // No configured secret leaves in an error, wherever the error was made.
    let error = match crate::redact::installed() {
        Some(secrets) => secrets.clean_error(error),
        None => error,
    };
    let data = error.to_data();
    match error.alternatives() {
        None => ErrorObjectOwned::owned(error.code(), error.wire_message(), Some(data)),
        Some(alternatives) => {
            // The data stays the failure's own, tagged by `kind`, with one member added.
            let mut data = serde_json::to_value(&data).unwrap_or_default();
            if let Some(members) = data.as_object_mut() {
                members.insert(
                    "alternatives".to_owned(),
                    serde_json::to_value(alternatives).unwrap_or_default(),
                );
            }
            ErrorObjectOwned::owned(error.code(), error.wire_message(), Some(data))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use tool_cli_protocol::methods::{CallToolParams, ServerParams};

    #[test]
    fn params_errors_name_the_member_and_the_shape() {
        let params = Params::new(Some(r#"{"server": 5}"#));
        let err = parse::<ServerParams>("listTools", &params, SERVER_SHAPE).unwrap_err();
        assert_eq!(err.code(), tool_cli_protocol::code::INVALID_PARAMS);
        let data: Value = serde_json::from_str(err.data().unwrap().get()).unwrap();
        assert_eq!(data["kind"], "invalidParams");
        let message = data["message"].as_str().unwrap();
        assert!(message.contains("invalid type: integer `5`"), "{message}");
        assert!(
            message.contains(r#"expected {"server": string}"#),
            "{message}"
        );

        let err = parse::<ServerParams>("listTools", &Params::new(None), SERVER_SHAPE).unwrap_err();
        assert!(
            err.message().contains("missing params"),
            "{}",
            err.message()
        );

        let params = Params::new(Some("{}"));
        let err = parse::<ServerParams>("listTools", &params, SERVER_SHAPE).unwrap_err();
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
        use tool_cli_protocol::methods::{MintTokenParams, RevokeTokenParams};
        for (text, typo, right) in [
            (r#"{"readonly": true}"#, "readonly", "readOnly"),
            (r#"{"server": ["demo"]}"#, "server", "servers"),
            (
                r#"{"servers": ["demo"], "tool": ["demo/q"]}"#,
                "tool",
                "tools",
            ),
        ] {
            let params = Params::new(Some(text));
            let err = parse::<MintTokenParams>("mintToken", &params, "{...}").unwrap_err();
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
        let params = Params::new(Some(r#"{"tokenId": "tk_1", "all": true}"#));
        assert!(parse::<RevokeTokenParams>("revokeToken", &params, "{...}").is_err());
    }

    #[test]
    fn params_nested_too_deep_say_so_instead_of_naming_a_shape() {
        let depth = 130;
        let text = format!(
            r#"{{"server":"s","tool":"t","arguments":{{"a":{}1{}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let params = Params::new(Some(&text));
        let err = parse::<CallToolParams>("callTool", &params, "{...}").unwrap_err();
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
        assert!(parse::<CallToolParams>("callTool", &Params::new(Some(&text)), "").is_ok());
    }
}
