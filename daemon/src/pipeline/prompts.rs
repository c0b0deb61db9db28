//! Prompts: `listPrompts` and `getPrompt`, scoped by the grant like resources.
//!
//! A prompt is listed and rendered through the same protection as a tool call (bulkhead,
//! breakers, retries, statistics) after three checks that send nothing to the server's `prompts/get`: the grant's
//! prompt scope, that the prompt exists (with "did you mean"), and that every required
//! argument is given and every given one is declared. The checks are pure
//! ([`check_arguments`]) and unit-tested; the prompt's declaration comes from `prompts/list`.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde_json::{Map, Value};
use tool_cli_gateway_core::pin::ItemKind;
use tool_cli_protocol::ErrorData;
use tool_cli_protocol::methods::{ListPromptsResult, ServerPrompt, UnavailableServer, name};

use super::execute::{Bounds, Operation};
use super::{CallContext, Pipeline, Slot, resolve_server};
use crate::auth::Grant;
use crate::error::Error;
use crate::policy::Denial;

/// How many close names an unknown-prompt error suggests.
const SUGGESTIONS: usize = 3;

impl Pipeline {
    /// The prompts of `server` (or of every server the grant may see), filtered by the grant's
    /// prompt scope. A server that cannot be asked is named in `unavailable` when listing across
    /// servers; asked by name, its error is the answer.
    pub async fn list_prompts(
        &self,
        context: &CallContext,
        server: Option<&str>,
    ) -> Result<ListPromptsResult, Error> {
        let grant = &context.grant;
        let slots = self.slots();
        let chosen: Vec<&std::sync::Arc<Slot>> = match server {
            Some(server) => vec![resolve_server(&slots, server, grant, None)?],
            None => slots
                .iter()
                .filter(|slot| grant.scope.permits_any_prompt(&slot.upstream.info().name))
                .collect(),
        };
        let listings = chosen.iter().map(|slot| async move {
            let name = slot.upstream.info().name.clone();
            if !grant.scope.permits_any_prompt(&name) {
                return (name, Ok(Vec::new()));
            }
            // A prompt the pin check holds back is not listed (`docs/pinning.md`).
            let listed = self.list_of(context, slot).await.map(|prompts| {
                slot.upstream
                    .pin_item_hold(ItemKind::Prompt, &prompts)
                    .retain_admitted(ItemKind::Prompt, prompts)
            });
            (name, listed)
        });
        let mut result = ListPromptsResult {
            prompts: Vec::new(),
            unavailable: Vec::new(),
        };
        for (server_name, listed) in futures_util::future::join_all(listings).await {
            match listed {
                Ok(prompts) => result.prompts.extend(
                    prompts
                        .into_iter()
                        .filter(|prompt| {
                            prompt_name(prompt)
                                .is_some_and(|name| grant.scope.permits_prompt(&server_name, name))
                        })
                        .map(|prompt| ServerPrompt {
                            server: server_name.clone(),
                            prompt,
                        }),
                ),
                Err(error) if server.is_some() => return Err(error),
                Err(error) => result.unavailable.push(UnavailableServer {
                    server: server_name,
                    error: error.wire_message(),
                }),
            }
        }
        Ok(result)
    }

    /// Renders prompt `prompt` of `server` with `arguments`: the complete `GetPromptResult`.
    pub async fn get_prompt(
        &self,
        context: &CallContext,
        server: &str,
        prompt: &str,
        arguments: &BTreeMap<String, String>,
    ) -> Result<Value, Error> {
        let (grant, arrived) = (&context.grant, context.arrived);
        let slots = self.slots();
        let slot = resolve_server(&slots, server, grant, None)?;
        check_prompt_scope(grant, server, prompt)?;
        let declared = self.list_of(context, slot).await?;
        let Some(declaration) = declared
            .iter()
            .find(|item| prompt_name(item) == Some(prompt))
        else {
            return Err(unknown_prompt(server, prompt, &declared, grant));
        };
        // Held back by its pin: refused before anything is sent, naming the approve command.
        let hold = slot.upstream.pin_item_hold(ItemKind::Prompt, &declared);
        if let Some(refusal) = hold.refusal(server, ItemKind::Prompt, prompt) {
            return Err(refusal.into());
        }
        check_arguments(declaration, arguments)
            .map_err(|message| Error::invalid_params(name::GET_PROMPT, message))?;
        let arguments: Map<String, Value> = arguments
            .iter()
            .map(|(key, value)| (key.clone(), Value::String(value.clone())))
            .collect();
        let timeout = slot.upstream.info().settings.call_timeout;
        let outcome = self
            .protected_operation(
                context,
                slot,
                &Operation::GetPrompt {
                    name: prompt,
                    arguments: &arguments,
                },
                Bounds::fixed(timeout, arrived + timeout),
                true,
            )
            .await;
        outcome.result
    }

    /// Every prompt `slot`'s server declares, those the pin check holds back included
    /// (`pinListing`: a person must see what changed to approve it).
    pub(crate) async fn prompts_for_pins(
        &self,
        context: &CallContext,
        slot: &Slot,
    ) -> Result<Vec<Value>, Error> {
        self.list_of(context, slot).await
    }

    /// Every prompt a server declares, within its call timeout, through the same protection as
    /// a call (a slot, the breakers, retries, statistics), under `context`'s span.
    async fn list_of(&self, context: &CallContext, slot: &Slot) -> Result<Vec<Value>, Error> {
        let timeout = slot.upstream.info().settings.call_timeout;
        let deadline = context.arrived + timeout;
        slot.upstream.wait_ready(deadline).await?;
        if !slot.upstream.supports_prompts() {
            return Ok(Vec::new());
        }
        let outcome = self
            .protected_operation(
                context,
                slot,
                &Operation::ListPrompts,
                Bounds::fixed(timeout, deadline),
                false,
            )
            .await;
        Ok(super::listed_items(outcome.result?))
    }
}

fn prompt_name(prompt: &Value) -> Option<&str> {
    prompt.get("name").and_then(Value::as_str)
}

/// Refuses a prompt the grant's prompt scope does not include.
fn check_prompt_scope(grant: &Grant, server: &str, prompt: &str) -> Result<(), Error> {
    let now = SystemTime::now();
    if grant.scope.is_expired(now) {
        return Err(Denial::ScopeExpired {
            scope: grant.scope.describe(now),
        }
        .into());
    }
    if grant.scope.permits_prompt(server, prompt) {
        return Ok(());
    }
    Err(ErrorData::NotPermitted {
        server: server.to_owned(),
        tool: None,
        reason: format!(
            "this token's scope ({}) does not include the prompt \"{prompt}\"; use a token \
             minted with a prompt grant such as --prompt \"{server}/{prompt}\"",
            grant.scope.describe(now)
        ),
    }
    .into())
}

/// The error for a prompt the server does not declare, naming the closest it does (among those
/// the grant may see).
fn unknown_prompt(server: &str, prompt: &str, declared: &[Value], grant: &Grant) -> Error {
    let names: Vec<String> = declared
        .iter()
        .filter_map(prompt_name)
        .filter(|name| grant.scope.permits_prompt(server, name))
        .map(str::to_owned)
        .collect();
    let message = if names.is_empty() {
        format!("server \"{server}\" has no prompt \"{prompt}\" (it offers no prompts)")
    } else {
        let close = crate::suggest::closest_names(prompt, &names, SUGGESTIONS);
        format!(
            "server \"{server}\" has no prompt \"{prompt}\"; did you mean {}? \
             (`tool-cli prompt list --server {server}` lists them)",
            quoted(&close)
        )
    };
    Error::invalid_params(name::GET_PROMPT, message)
}

/// Checks `arguments` against the prompt's declared `arguments`: every required one given,
/// none undeclared. The error names each missing (with its description) or unknown argument.
pub(crate) fn check_arguments(
    declaration: &Value,
    arguments: &BTreeMap<String, String>,
) -> Result<(), String> {
    let prompt = prompt_name(declaration).unwrap_or("?");
    let declared: Vec<&Map<String, Value>> = declaration
        .get("arguments")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default();
    let missing: Vec<String> = declared
        .iter()
        .filter(|arg| arg.get("required").and_then(Value::as_bool) == Some(true))
        .filter_map(|arg| {
            let name = argument_name(arg)?;
            (!arguments.contains_key(name)).then(|| {
                match arg.get("description").and_then(Value::as_str) {
                    Some(description) => format!("\"{name}\" ({description})"),
                    None => format!("\"{name}\""),
                }
            })
        })
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "prompt \"{prompt}\" needs the argument{} {}; give {} as NAME=VALUE (nothing was \
             sent to the server)",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            if missing.len() == 1 { "it" } else { "them" },
        ));
    }
    let known: Vec<String> = declared
        .iter()
        .filter_map(|arg| argument_name(arg))
        .map(str::to_owned)
        .collect();
    let unknown: Vec<&String> = arguments
        .keys()
        .filter(|given| !known.contains(given))
        .collect();
    if let Some(first) = unknown.first() {
        let accepted = if known.is_empty() {
            "it takes no arguments".to_owned()
        } else {
            let close = crate::suggest::closest_names(first, &known, SUGGESTIONS);
            format!(
                "it takes {}; did you mean {}?",
                quoted(&known),
                quoted(&close)
            )
        };
        return Err(format!(
            "prompt \"{prompt}\" has no argument {}; {accepted}",
            quoted(&unknown.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
        ));
    }
    Ok(())
}

fn argument_name(argument: &Map<String, Value>) -> Option<&str> {
    argument.get("name").and_then(Value::as_str)
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|name| format!("\"{name}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn declaration() -> Value {
        json!({
            "name": "args-prompt",
            "arguments": [
                {"name": "city", "description": "Name of the city", "required": true},
                {"name": "state", "required": false}
            ]
        })
    }

    #[test]
    fn required_arguments_must_be_given() {
        let err = check_arguments(&declaration(), &args(&[("state", "CA")])).unwrap_err();
        assert_eq!(
            err,
            "prompt \"args-prompt\" needs the argument \"city\" (Name of the city); give it as \
             NAME=VALUE (nothing was sent to the server)"
        );
        assert!(check_arguments(&declaration(), &args(&[("city", "Paris")])).is_ok());
        assert!(
            check_arguments(&declaration(), &args(&[("city", "Paris"), ("state", "TX")])).is_ok()
        );
    }

    #[test]
    fn undeclared_arguments_are_named_with_a_suggestion() {
        let err =
            check_arguments(&declaration(), &args(&[("city", "x"), ("stat", "y")])).unwrap_err();
        assert!(err.contains("has no argument \"stat\""), "{err}");
        assert!(err.contains("did you mean \"state\""), "{err}");
        let none = json!({"name": "simple"});
        let err = check_arguments(&none, &args(&[("a", "b")])).unwrap_err();
        assert!(err.ends_with("it takes no arguments"), "{err}");
        assert!(check_arguments(&none, &BTreeMap::new()).is_ok());
    }
}
