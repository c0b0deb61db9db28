//! The JSON-RPC methods: params in, results or errors out.
//!
//! Every method is registered in one line by [`Methods::add`]: its name, who may call it, and
//! the service method that answers it. The registration does the rest, the same for every
//! method: it refuses a scoped token before reading the params of an owner-only method, parses
//! the params into their type (an error names the member and the shape the type declares,
//! `MethodParams::SHAPE`), makes the request's call context, races the service against the end
//! of the shutdown grace period (a request still running then gets a shutdown error, not a
//! closed connection), and encodes the answer once within the response size limit
//! ([`Answer`], `answer.rs`: a large `callTool` or `readResource` result is spilled to a file).
//! This is the only place a daemon [`Error`] becomes a JSON-RPC error object, cleaned of the
//! configured secrets.
//!
//! The registrations live in `rpc/` by area, one file per service: `discovery`, `calls`,
//! `events`, `resources` (and `readSpilled`, the edge's own), `prompts`, `sessions`, `agent`,
//! `admin` (the owner token's) and `auth_methods` (OAuth for remote servers). A new method is a
//! params type in the protocol, a method in the service of its area, and one line there.

mod admin;
mod agent;
mod auth_methods;
mod calls;
mod discovery;
mod events;
mod prompts;
mod resources;
mod sessions;

use std::future::Future;
use std::sync::Arc;

use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::{Extensions, RpcModule};
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::watch;
use tool_cli_protocol::params::MethodParams;

use crate::answer::{Budget, Spillable, fit, fit_or_spill};
use crate::auth::Grant;
use crate::error::Error;
use crate::pipeline::{CallAnswer, CallContext};
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
    fn budget(&self, extensions: &Extensions) -> Budget {
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
    fn until_grace_over<'a, T: 'a>(
        &'a self,
        work: impl Future<Output = Result<T, Error>> + 'a,
    ) -> impl Future<Output = Result<T, Error>> + 'a {
        let work = Box::pin(work);
        async move {
            let mut grace_over = self.answers.grace_over.clone();
            tokio::select! {
                result = work => result,
                // A dropped sender (no shutdown will come) disables this branch.
                Ok(_) = grace_over.wait_for(|over| *over) => Err(
                    tool_cli_protocol::ErrorData::ShuttingDown {
                        grace_ms: self.answers.grace_ms,
                    }
                    .into(),
                ),
            }
        }
    }

    /// The one conversion of daemon errors into JSON-RPC errors: an internal fault's detail is
    /// logged, never sent, and no configured secret leaves in an error, wherever it was made.
    fn to_rpc_error(&self, error: Error) -> ErrorObjectOwned {
        if let Error::Internal(detail) = &error {
            // The detail stays here; the caller is told only that something failed inside.
            tracing::error!(%detail, "internal error");
        }
        let error = match self.services.secrets().current() {
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
}

/// Who may call a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Any token, its scope deciding what it sees.
    Anyone,
    /// The daemon's owner token only: a scoped token is refused before its params are read.
    Owner,
}

/// What an answering handler gets besides the services: where its answer goes and within what.
pub(crate) struct Answering {
    /// This request's share of the response size limit.
    pub(crate) budget: Budget,
    /// Where results over it are saved.
    pub(crate) spill: Arc<SpillStore>,
}

/// A method's params as the registration parses them.
pub(crate) trait FromParams: Sized + Send + 'static {
    /// Parses the request's params (absent params too) for `method`.
    fn from_params(method: &str, params: &Params<'_>) -> Result<Self, Error>;

    /// Holds the shape errors name against the type (`tool_cli_protocol::params`).
    fn check_shape() -> Result<(), String>;
}

impl<P: MethodParams> FromParams for P {
    fn from_params(method: &str, params: &Params<'_>) -> Result<P, Error> {
        match params.as_str() {
            None => P::when_absent().ok_or_else(|| {
                Error::invalid_params(method, format!("missing params; expected {}", P::SHAPE))
            }),
            Some(text) => parse(method, text, P::SHAPE),
        }
    }

    fn check_shape() -> Result<(), String> {
        tool_cli_protocol::params::check_shape::<P>()
    }
}

/// What a method answers, encoded once within the request's budget.
pub(crate) trait Answer: Send + 'static {
    /// The encoded answer, or why there is none (`responseTooLarge`).
    fn encode(
        self,
        method: &'static str,
        answering: Answering,
        token_id: String,
    ) -> impl Future<Output = Result<Box<RawValue>, Error>> + Send;
}

/// Any plain result: encoded once, refused when it does not fit (nothing was done by computing
/// it, so the caller may ask again alone).
impl<T: Serialize + Send + 'static> Answer for T {
    async fn encode(
        self,
        method: &'static str,
        answering: Answering,
        _token_id: String,
    ) -> Result<Box<RawValue>, Error> {
        fit(method, &self, answering.budget)
    }
}

/// A call's answer: the result with the call's facts in its `_meta`; a result too large to send
/// is saved, never dropped (the tool has run).
impl Answer for CallAnswer {
    async fn encode(
        self,
        _method: &'static str,
        answering: Answering,
        token_id: String,
    ) -> Result<Box<RawValue>, Error> {
        fit_or_spill(
            crate::answer::call_result(self),
            Spillable::Call,
            answering.budget,
            &answering.spill,
            &token_id,
        )
        .await
    }
}

/// A resource's contents: too large to send, they are saved like a call's result.
pub(crate) struct ResourceContents {
    pub(crate) uri: String,
    pub(crate) contents: serde_json::Value,
}

impl Answer for ResourceContents {
    async fn encode(
        self,
        _method: &'static str,
        answering: Answering,
        token_id: String,
    ) -> Result<Box<RawValue>, Error> {
        fit_or_spill(
            self.contents,
            Spillable::Resource { uri: &self.uri },
            answering.budget,
            &answering.spill,
            &token_id,
        )
        .await
    }
}

/// An answer the handler encoded itself (one built entry by entry, a page of a file).
pub(crate) struct Encoded(pub(crate) Box<RawValue>);

impl Answer for Encoded {
    async fn encode(
        self,
        _method: &'static str,
        _answering: Answering,
        _token_id: String,
    ) -> Result<Box<RawValue>, Error> {
        Ok(self.0)
    }
}

/// One registered method, for the checks that every method is registered once and that every
/// shape text agrees with its params type (`rpc/tests`).
#[derive(Debug, Clone, Copy)]
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "read by the registration tests")
)]
pub(crate) struct Registered {
    pub(crate) name: &'static str,
    pub(crate) access: Access,
    pub(crate) check_shape: fn() -> Result<(), String>,
}

/// The module being built and what has been registered in it.
pub(crate) struct Methods {
    module: RpcModule<Context>,
    registered: Vec<Registered>,
}

impl Methods {
    /// Registers `name`, open to `access`, answered by `handler` with the services, the parsed
    /// params and the request's call context.
    pub(crate) fn add<P, A, F, Fut>(&mut self, name: &'static str, access: Access, handler: F)
    where
        P: FromParams,
        A: Answer,
        F: Fn(Arc<Services>, P, CallContext) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<A, Error>> + Send + 'static,
    {
        self.add_answering(name, access, move |services, params, call, _answering| {
            handler(services, params, call)
        });
    }

    /// [`Methods::add`] for a handler that builds its answer itself, as it goes: it gets where
    /// the answer goes and its budget too (`callChain`, `callMany`, `readSpilled`).
    pub(crate) fn add_answering<P, A, F, Fut>(
        &mut self,
        name: &'static str,
        access: Access,
        handler: F,
    ) where
        P: FromParams,
        A: Answer,
        F: Fn(Arc<Services>, P, CallContext, &Answering) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<A, Error>> + Send + 'static,
    {
        self.module
            .register_async_method(name, move |params, context, extensions| {
                let handler = handler.clone();
                async move {
                    let answer = async {
                        let grant = grant(&extensions)?;
                        if access == Access::Owner {
                            owner_only(grant, name)?;
                        }
                        let params = P::from_params(name, &params)?;
                        let call = CallContext::new(grant.clone());
                        let token_id = grant.token_id.clone();
                        let answering = Answering {
                            budget: context.budget(&extensions),
                            spill: Arc::clone(&context.answers.spill),
                        };
                        let work = handler(Arc::clone(&context.services), params, call, &answering);
                        let answer = context.until_grace_over(work).await?;
                        answer.encode(name, answering, token_id).await
                    };
                    answer.await.map_err(|error| context.to_rpc_error(error))
                }
            })
            .expect("method names are unique");
        self.registered.push(Registered {
            name,
            access,
            check_shape: P::check_shape,
        });
    }
}

/// The grant the gate attached to the request. Every request that reaches a handler has one;
/// a missing grant (a bug) is refused rather than treated as the owner.
fn grant(extensions: &Extensions) -> Result<&Grant, Error> {
    extensions
        .get::<Grant>()
        .ok_or_else(|| Error::internal("request without a grant"))
}

/// Refuses token management, server restarts and the trace report to anything but the owner
/// token.
fn owner_only(grant: &Grant, method: &str) -> Result<(), Error> {
    if grant.is_owner {
        return Ok(());
    }
    Err(tool_cli_protocol::ErrorData::NotPermitted {
        server: String::new(),
        tool: None,
        reason: format!(
            "{method} needs the daemon's owner token; a scoped token cannot mint, revoke or \
             list tokens, restart, add, remove or reload servers, or read the daemon's traces"
        ),
    }
    .into())
}

/// Builds the module serving every method of the protocol.
pub(crate) fn module(services: Arc<Services>, answers: Answers) -> RpcModule<Context> {
    registrations(services, answers).module
}

/// Every registration, with the list of what was registered.
fn registrations(services: Arc<Services>, answers: Answers) -> Methods {
    let mut methods = Methods {
        module: RpcModule::new(Context { services, answers }),
        registered: Vec::new(),
    };
    discovery::register(&mut methods);
    calls::register(&mut methods);
    events::register(&mut methods);
    resources::register(&mut methods);
    prompts::register(&mut methods);
    sessions::register(&mut methods);
    agent::register(&mut methods);
    admin::register(&mut methods);
    auth_methods::register(&mut methods);
    methods
}

/// The deepest nesting serde_json parses (its recursion limit), counted from the params object.
const MAX_PARAMS_DEPTH: usize = 128;

/// Parses params text into `T`, with an error that names the member and the expected shape.
fn parse<T: serde::de::DeserializeOwned>(
    method: &str,
    text: &str,
    expected: &str,
) -> Result<T, Error> {
    let invalid = |message: String| Error::invalid_params(method, message);
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

#[cfg(test)]
mod tests;
