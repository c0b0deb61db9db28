//! Tool calls: `callTool` (one call through the pipeline), `callChain` (steps that feed each
//! other) and `callMany` (a bounded fan-out), answered by the calls service. Chains and
//! fan-outs build their answer as their calls end (`answer::EntryAnswers`), within the
//! request's budget.

use jsonrpsee::types::Params;
use serde_json::Value;
use tool_cli_protocol::methods::{CallToolParams, name};
use tool_cli_protocol::orchestration::{CallChainParams, CallManyParams};

use super::{Access, Encoded, FromParams, Methods};
use crate::answer::EntryAnswers;
use crate::error::Error;

/// Registers the call methods.
pub(super) fn register(methods: &mut Methods) {
    use Access::Anyone;
    methods.add(name::CALL_TOOL, Anyone, |s, p, c| async move {
        match p {
            CallToolInput::Call(params) => s.calls.call_tool(params, &c).await,
            CallToolInput::NonObjectArguments {
                server,
                tool,
                arguments,
            } => Err(s
                .calls
                .refuse_non_object_arguments(server, &tool, &arguments, &c)
                .await),
        }
    });
    methods.add_answering(name::CALL_CHAIN, Anyone, |s, p: CallChainParams, c, a| {
        // Built as the steps end, within the budget: a result that does not fit is spilled,
        // never refused after its step ran.
        let mut answer = EntryAnswers::new(
            name::CALL_CHAIN,
            a.budget,
            p.steps.len(),
            &a.spill,
            &c.grant.token_id,
        );
        async move {
            let completed = s.calls.call_chain(p, &c, &mut answer).await?;
            answer.finish_chain(completed).map(Encoded)
        }
    });
    methods.add_answering(name::CALL_MANY, Anyone, |s, p: CallManyParams, c, a| {
        // Built as the calls end, within the budget; once full, no more calls start.
        let mut answer = EntryAnswers::new(
            name::CALL_MANY,
            a.budget,
            p.calls.len(),
            &a.spill,
            &c.grant.token_id,
        );
        async move {
            s.calls.call_many(p, &c, &mut answer).await?;
            answer.finish_many().map(Encoded)
        }
    });
}

/// `callTool`'s params, or params that did not parse only because `arguments` is not an
/// object (nor null): those get the error the reference bridge gives, `invalidArguments` with
/// ajv's "must be object", once the tool is known to exist.
enum CallToolInput {
    Call(CallToolParams),
    NonObjectArguments {
        server: Option<String>,
        tool: String,
        arguments: Value,
    },
}

impl FromParams for CallToolInput {
    fn from_params(method: &str, params: &Params<'_>) -> Result<CallToolInput, Error> {
        let error = match CallToolParams::from_params(method, params) {
            Ok(params) => return Ok(CallToolInput::Call(params)),
            Err(error) => error,
        };
        #[derive(serde::Deserialize)]
        struct Probe {
            #[serde(default)]
            server: Option<String>,
            tool: String,
            arguments: Value,
        }
        let probe = params
            .as_str()
            .and_then(|text| serde_json::from_str::<Probe>(text).ok());
        match probe {
            Some(probe) if !probe.arguments.is_object() && !probe.arguments.is_null() => {
                Ok(CallToolInput::NonObjectArguments {
                    server: probe.server.filter(|server| server != "*"),
                    tool: probe.tool,
                    arguments: probe.arguments,
                })
            }
            _ => Err(error),
        }
    }

    fn check_shape() -> Result<(), String> {
        tool_cli_protocol::params::check_shape::<CallToolParams>()
    }
}
