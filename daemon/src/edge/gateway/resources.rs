//! Resources, resource templates and prompts of every server the token may see, aggregated.
//! Resources keep their URIs (a host reads them back by URI; the session remembers which
//! server listed each, the first in name order when two list the same URI; a URI no server
//! listed goes to the first server with a resource template it fits); prompts are named
//! `server__prompt` like tools. Each server is asked through the pipeline's protection, at
//! most [`PER_SERVER`] each, concurrently: a server that fails or hangs is left out of the
//! list, never fails it.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tool_cli_gateway_core::names::GatewayNames;
use tool_cli_protocol::methods::{
    GetPromptParams, ListPromptsParams, ReadResourceParams, ServerParams,
};

use super::messages::{RpcError, excerpt};
use super::sessions::Session;
use crate::pipeline::CallContext;
use crate::services::Services;

/// How long one server may take to list its resources or prompts for an aggregated list.
const PER_SERVER: Duration = Duration::from_secs(5);

/// The servers the token may see that are usable now, in name order.
fn usable_servers(services: &Services, context: &CallContext) -> Vec<String> {
    let mut servers: Vec<String> = services
        .discovery
        .visible_servers(context)
        .into_iter()
        .filter(|server| server.unavailable.is_none())
        .map(|server| server.name)
        .collect();
    servers.sort();
    servers
}

/// `resources/list`.
pub(super) async fn list(
    services: &Services,
    session: &Session,
    context: &CallContext,
) -> Result<Value, RpcError> {
    let servers = usable_servers(services, context);
    let listings = servers.iter().map(|server| async move {
        let params = ServerParams {
            server: server.clone(),
        };
        let listed = tokio::time::timeout(
            PER_SERVER,
            services.discovery.list_resources(params, context),
        )
        .await;
        (server, listed)
    });
    let mut resources = Vec::new();
    let mut uris: HashMap<String, String> = HashMap::new();
    for (server, listed) in futures_util::future::join_all(listings).await {
        let Ok(Ok(listed)) = listed else {
            continue;
        };
        for resource in listed.resources {
            let Some(uri) = resource.get("uri").and_then(Value::as_str) else {
                continue;
            };
            if uris.contains_key(uri) {
                continue;
            }
            uris.insert(uri.to_owned(), server.clone());
            resources.push(resource);
        }
    }
    session.note_resources(uris);
    Ok(json!({"resources": resources}))
}

/// `resources/templates/list`.
pub(super) async fn templates(
    services: &Services,
    context: &CallContext,
) -> Result<Value, RpcError> {
    let templates: Vec<Value> = templates_by_server(services, context)
        .await
        .into_iter()
        .flat_map(|(_, templates)| templates)
        .collect();
    Ok(json!({"resourceTemplates": templates}))
}

/// The resource templates of each usable server, in server name order; a server that fails or
/// takes over [`PER_SERVER`] is left out.
async fn templates_by_server(
    services: &Services,
    context: &CallContext,
) -> Vec<(String, Vec<Value>)> {
    let servers = usable_servers(services, context);
    let listings = servers.iter().map(|server| async move {
        let params = ServerParams {
            server: server.clone(),
        };
        let listed = tokio::time::timeout(
            PER_SERVER,
            services.discovery.list_resource_templates(params, context),
        )
        .await;
        (server.clone(), listed)
    });
    futures_util::future::join_all(listings)
        .await
        .into_iter()
        .filter_map(|(server, listed)| match listed {
            Ok(Ok(listed)) => Some((server, listed.templates)),
            _ => None,
        })
        .collect()
}

/// The first server, in name order, with a resource template that `uri` fits.
async fn template_server(services: &Services, uri: &str, context: &CallContext) -> Option<String> {
    templates_by_server(services, context)
        .await
        .into_iter()
        .find(|(_, templates)| {
            templates.iter().any(|template| {
                template
                    .get("uriTemplate")
                    .and_then(Value::as_str)
                    .is_some_and(|template| {
                        tool_cli_gateway_core::uri_template::matches(template, uri)
                    })
            })
        })
        .map(|(server, _)| server)
}

/// `resources/read`: the server that listed the URI in this session reads it.
pub(super) async fn read(
    services: &Services,
    session: &Session,
    params: &Value,
    context: &CallContext,
) -> Result<Value, RpcError> {
    let uri = params.get("uri").and_then(Value::as_str).ok_or_else(|| {
        RpcError::invalid_params("resources/read needs \"uri\", a string".to_owned())
    })?;
    let server = match session.resource_server(uri) {
        Some(server) => server,
        None => {
            // Not listed in this session yet (a host may read a URI it knows): list, then look;
            // else the first server (in name order) with a template the URI fits.
            list(services, session, context).await?;
            match session.resource_server(uri) {
                Some(server) => server,
                None => template_server(services, uri, context)
                    .await
                    .ok_or_else(|| RpcError::resource_not_found(uri))?,
            }
        }
    };
    let params = ReadResourceParams {
        server,
        uri: uri.to_owned(),
    };
    services
        .discovery
        .read_resource(&params, context)
        .await
        .map_err(|error| daemon_error(services, error))
}

/// The server a resource URI is read from: the one that listed it in this session, else (after
/// listing) the first with a template it fits.
async fn server_of_uri(
    services: &Services,
    session: &Session,
    uri: &str,
    context: &CallContext,
) -> Result<String, RpcError> {
    if let Some(server) = session.resource_server(uri) {
        return Ok(server);
    }
    list(services, session, context).await?;
    match session.resource_server(uri) {
        Some(server) => Ok(server),
        None => template_server(services, uri, context)
            .await
            .ok_or_else(|| RpcError::resource_not_found(uri)),
    }
}

/// `resources/subscribe` and `resources/unsubscribe`: passed to the server of the URI.
pub(super) async fn subscription(
    services: &Services,
    session: &Session,
    method: &str,
    params: &Value,
    context: &CallContext,
) -> Result<Value, RpcError> {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("{method} needs \"uri\", a string")))?;
    let server = server_of_uri(services, session, uri, context).await?;
    // One subscription per session and URI: the pool counts subscriptions across sessions
    // (`pool/connection/subscribed.rs`), so a repeat, or an unsubscribe of nothing, stops here.
    let subscribe = method == "resources/subscribe";
    if session.is_subscribed(uri, &server) == subscribe {
        return Ok(json!({}));
    }
    // Every subscription is recorded, to be released when the session ends: past the cap one
    // is refused rather than passed on unrecorded.
    if subscribe {
        session.may_subscribe().map_err(RpcError::invalid_params)?;
    }
    let answer = services
        .discovery
        .pass_request(&server, method, params, Some(uri), context)
        .await
        .map_err(|error| daemon_error(services, error))?;
    // The standalone stream passes on the server's updates of the URIs subscribed to.
    if !session.note_subscription(uri, &server, subscribe) && subscribe {
        // The session ended while the server subscribed: released at once, as its other
        // subscriptions were.
        let released = super::sessions::Released {
            grant: context.grant.clone(),
            subscriptions: vec![(uri.to_owned(), server)],
        };
        super::released::release(services, released).await;
    }
    Ok(answer)
}

/// `completion/complete`: a prompt's argument (`ref/prompt` with its gateway name, which the
/// server gets back as its own) or a resource template's (`ref/resource` with the template),
/// completed by the server that has it.
pub(super) async fn complete(
    services: &Services,
    params: &Value,
    context: &CallContext,
) -> Result<Value, RpcError> {
    let reference = params.get("ref").unwrap_or(&Value::Null);
    let kind = reference.get("type").and_then(Value::as_str).unwrap_or("");
    let mut params = params.clone();
    let (server, uri) = match kind {
        "ref/prompt" => {
            let name = reference.get("name").and_then(Value::as_str).unwrap_or("");
            let listed = all_prompts(services, context).await?;
            let names = prompt_names(&listed.prompts);
            let address = names.resolve(name).map_err(|_| {
                RpcError::invalid_params(format!(
                    "no prompt is named {:?} in this gateway; prompts/list gives the current \
                     names (server__prompt)",
                    excerpt(name)
                ))
            })?;
            params["ref"]["name"] = Value::String(address.tool.clone());
            (address.server.clone(), None)
        }
        "ref/resource" => {
            let template = reference.get("uri").and_then(Value::as_str).unwrap_or("");
            let server = templates_by_server(services, context)
                .await
                .into_iter()
                .find(|(_, templates)| {
                    templates.iter().any(|listed| {
                        listed.get("uriTemplate").and_then(Value::as_str) == Some(template)
                    })
                })
                .map(|(server, _)| server)
                .ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "no resource template is {:?} in this gateway; \
                         resources/templates/list gives them",
                        excerpt(template)
                    ))
                })?;
            (server, Some(template.to_owned()))
        }
        _ => {
            return Err(RpcError::invalid_params(
                "completion/complete needs \"ref\" of type \"ref/prompt\" (with \"name\") or \
                 \"ref/resource\" (with \"uri\")"
                    .to_owned(),
            ));
        }
    };
    services
        .discovery
        .pass_request(
            &server,
            "completion/complete",
            &params,
            uri.as_deref(),
            context,
        )
        .await
        .map_err(|error| daemon_error(services, error))
}

/// Every prompt the token may see on the servers usable now, each server asked within
/// [`PER_SERVER`]; one that fails or hangs is left out.
async fn all_prompts(
    services: &Services,
    context: &CallContext,
) -> Result<tool_cli_protocol::methods::ListPromptsResult, RpcError> {
    let servers = usable_servers(services, context);
    let listings = servers.iter().map(|server| async move {
        let params = ListPromptsParams {
            server: Some(server.clone()),
        };
        tokio::time::timeout(PER_SERVER, services.discovery.list_prompts(params, context)).await
    });
    let mut prompts = Vec::new();
    for listed in futures_util::future::join_all(listings).await {
        if let Ok(Ok(listed)) = listed {
            prompts.extend(listed.prompts);
        }
    }
    Ok(tool_cli_protocol::methods::ListPromptsResult {
        prompts,
        unavailable: Vec::new(),
    })
}

/// `prompts/list`: every prompt as `server__prompt`.
pub(super) async fn prompts(services: &Services, context: &CallContext) -> Result<Value, RpcError> {
    let listed = all_prompts(services, context).await?;
    let names = prompt_names(&listed.prompts);
    let mut prompts: Vec<(String, Value)> = Vec::new();
    for entry in &listed.prompts {
        let Some(name) = entry.prompt.get("name").and_then(Value::as_str) else {
            continue;
        };
        let Some(gateway_name) = names.name_of(&entry.server, name) else {
            continue;
        };
        let mut prompt: Map<String, Value> = match &entry.prompt {
            Value::Object(members) => members.clone(),
            _ => continue,
        };
        prompt.insert("name".to_owned(), Value::String(gateway_name.clone()));
        prompts.push((gateway_name, Value::Object(prompt)));
    }
    prompts.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(json!({"prompts": prompts.into_iter().map(|(_, prompt)| prompt).collect::<Vec<_>>()}))
}

/// `prompts/get`: `server__prompt` rendered by its server.
pub(super) async fn get_prompt(
    services: &Services,
    params: &Value,
    context: &CallContext,
) -> Result<Value, RpcError> {
    let name = params.get("name").and_then(Value::as_str).ok_or_else(|| {
        RpcError::invalid_params("prompts/get needs \"name\", a string".to_owned())
    })?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => None,
        Some(value) => Some(serde_json::from_value(value.clone()).map_err(|_| {
            RpcError::invalid_params(format!(
                "the arguments of prompt {:?} must be an object of strings",
                excerpt(name)
            ))
        })?),
    };
    let listed = all_prompts(services, context).await?;
    let names = prompt_names(&listed.prompts);
    let Ok(address) = names.resolve(name) else {
        // A prompt its pin holds back is not listed, so its name does not resolve: its
        // refusal (naming the approve command) says more than "no such prompt".
        if let Some((server, prompt)) = name.split_once("__") {
            let params = GetPromptParams {
                server: server.to_owned(),
                name: prompt.to_owned(),
                arguments: arguments.clone(),
            };
            match services.discovery.get_prompt(params, context).await {
                // Listed late (its server was slow to list): rendered as asked.
                Ok(rendered) => return Ok(rendered),
                Err(error)
                    if matches!(
                        error.data(),
                        Some(tool_cli_protocol::ErrorData::PinRefused { .. })
                    ) =>
                {
                    return Err(daemon_error(services, error));
                }
                Err(_) => {}
            }
        }
        return Err(RpcError::invalid_params(format!(
            "no prompt is named {:?} in this gateway; prompts/list gives the current names \
             (server__prompt)",
            excerpt(name)
        )));
    };
    let params = GetPromptParams {
        server: address.server.clone(),
        name: address.tool.clone(),
        arguments,
    };
    services
        .discovery
        .get_prompt(params, context)
        .await
        .map_err(|error| daemon_error(services, error))
}

fn prompt_names(prompts: &[tool_cli_protocol::methods::ServerPrompt]) -> GatewayNames {
    GatewayNames::build(prompts.iter().filter_map(|entry| {
        let name = entry.prompt.get("name").and_then(Value::as_str)?;
        Some((entry.server.clone(), name.to_owned()))
    }))
}

/// A daemon error as a JSON-RPC error, cleaned of the configured secrets.
pub(super) fn daemon_error(services: &Services, error: crate::error::Error) -> RpcError {
    if let crate::error::Error::Internal(detail) = &error {
        tracing::error!(%detail, "internal error in the gateway");
    }
    let error = match services.secrets().current() {
        Some(secrets) => secrets.clean_error(error),
        None => error,
    };
    RpcError {
        code: i64::from(error.code()),
        message: error.wire_message(),
        data: serde_json::to_value(error.to_data()).ok(),
    }
}
