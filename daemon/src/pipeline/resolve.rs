//! The first stage: which server and which tool a call means.
//!
//! Pure over a snapshot of the servers (their settings and last-known catalogs). A call that
//! names its server is looked up there, with the caller's scope deciding what it may even learn
//! exists; a call without a server is routed among the servers whose catalogs offer the tool
//! ([`super::routing`]). A tool nobody offers is an unknown-tool error with the closest names.

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Map, Value};
use tool_cli_protocol::ErrorData;

use super::Slot;
use super::routing::{Candidate, Rejected, RoutingInput, Rule, Selection, route};
use crate::auth::Grant;
use crate::catalog::{CatalogTool, ToolHints};
use crate::error::Error;
use crate::policy::{Denial, check_call, visible_tool};
use tool_cli_search::embed::{Embedder, cosine};

/// How many names an unknown-tool error suggests.
const SUGGESTIONS: usize = 10;

/// A resolved call: the server's slot, the tool as its catalog has it, and how it was chosen.
#[derive(Clone)]
pub(crate) struct Resolved {
    pub(crate) slot: Arc<Slot>,
    pub(crate) tool: Arc<CatalogTool>,
    pub(crate) selection: Selection,
}

/// What routing may consult beyond the catalogs.
#[derive(Debug, Default)]
pub(crate) struct RoutingFacts {
    /// The session's task and the call's hint: read for explicit mentions, and compared with
    /// each candidate's tool description for similarity.
    pub(crate) mention_text: Option<String>,
    /// The server this session used most recently for this tool name.
    pub(crate) most_recent: Option<String>,
    /// A server that just failed this call persistently (breaker open, down): route to
    /// another server's read-only tool of the same name whose schema accepts the arguments,
    /// recorded as rule `alternative` (`callTool {alternatives: true}`).
    pub(crate) instead_of: Option<String>,
}

/// Whether `grant` may see `tool` of the server in `slot`.
pub(crate) fn visible(grant: &Grant, slot: &Slot, tool: &CatalogTool) -> bool {
    let info = slot.upstream.info();
    visible_tool(
        &grant.scope,
        &info.settings.policy,
        &info.name,
        tool.name(),
        &tool.hints,
    )
}

/// Whether `grant` sees `tool` in listings, search and routing: it is visible, the config does
/// not hide it (a hidden tool is still callable by its exact server and name) and the pin check
/// does not hold it back (a held tool's calls are refused by the plan stage).
pub(crate) fn listed(grant: &Grant, slot: &Slot, tool: &CatalogTool) -> bool {
    tool.is_listed() && visible(grant, slot, tool)
}

/// The `pinRefused` error of `tool` of the server in `slot`, if the pin check holds it back.
pub(crate) fn pin_refusal(slot: &Slot, tool: &CatalogTool) -> Option<Error> {
    if tool.is_listed() || tool.hidden {
        return None;
    }
    let info = slot.upstream.info();
    slot.upstream
        .catalog()
        .pin_hold()
        .refusal(&info.name, tool.name())
        .map(Error::from)
}

/// The slot of server `name`, if `grant` may use it. A server outside the scope is refused as
/// not permitted (naming the tool when one was asked for); an unknown one lists only the servers
/// the grant may see.
pub(crate) fn server<'a>(
    slots: &'a [Arc<Slot>],
    name: &str,
    grant: &Grant,
    tool: Option<&str>,
) -> Result<&'a Arc<Slot>, Error> {
    // The scope first, whether or not the server exists: a scoped token learns nothing of the
    // servers outside its scope, not even which names exist (its scope it knows already).
    let now = SystemTime::now();
    if grant.scope.is_expired(now) || !grant.scope.permits_server(name) {
        let scope = grant.scope.describe(now);
        return Err(match tool {
            // Asked for a tool: say the tool is out of scope, which is what the caller tried.
            Some(tool) => Denial::ToolNotPermitted {
                server: name.to_owned(),
                tool: tool.to_owned(),
                reason: format!(
                    "this token's scope ({scope}) does not include it; use a token whose scope \
                     includes \"{name}/{tool}\""
                ),
            },
            None => Denial::ServerNotPermitted {
                server: name.to_owned(),
                scope,
            },
        }
        .into());
    }
    let Some(slot) = slots.iter().find(|slot| slot.upstream.info().name == name) else {
        return Err(ErrorData::UnknownServer {
            server: name.to_owned(),
            known_servers: slots
                .iter()
                .map(|slot| &slot.upstream.info().name)
                .filter(|name| grant.scope.permits_server(name))
                .cloned()
                .collect(),
        }
        .into());
    };
    Ok(slot)
}

/// Tool `name` of the server in `slot`, if `grant` may see it: an unknown one lists only the
/// visible tools, a hidden one says why it is not permitted.
pub(crate) fn tool(slot: &Slot, name: &str, grant: &Grant) -> Result<Arc<CatalogTool>, Error> {
    let catalog = slot.upstream.catalog();
    let server = &slot.upstream.info().name;
    let Some(found) = catalog.get(name) else {
        // A scoped token must not learn which names exist among the tools it may not call: a
        // name it could not call even if the server offered it (outside its tool globs, a
        // read-only scope, the config's denyTools) is refused exactly as an existing tool
        // would be, whether or not it exists. The owner knows the config: it is told the
        // tool does not exist.
        if !grant.is_owner {
            check_call(
                &grant.scope,
                &slot.upstream.info().settings.policy,
                server,
                name,
                &ToolHints::default(),
                true,
                SystemTime::now(),
            )?;
        }
        let known: Vec<String> = catalog
            .tools()
            .iter()
            .filter(|tool| listed(grant, slot, tool))
            .map(|tool| tool.name().to_owned())
            .collect();
        return Err(Error::unknown_tool(server, name, &known));
    };
    if !visible(grant, slot, found) {
        // Confirmation never hides a tool, so this is a scope or policy refusal.
        check_call(
            &grant.scope,
            &slot.upstream.info().settings.policy,
            server,
            found.name(),
            &found.hints,
            true,
            SystemTime::now(),
        )?;
    }
    Ok(Arc::clone(found))
}

/// Resolves a call: the named server's tool, or the routed choice among the servers offering it.
pub(crate) fn resolve(
    slots: &[Arc<Slot>],
    grant: &Grant,
    server_name: Option<&str>,
    tool_name: &str,
    arguments: &Map<String, Value>,
    facts: &RoutingFacts,
    embedder: &dyn Embedder,
) -> Result<Resolved, Error> {
    if let Some(name) = server_name {
        let slot = server(slots, name, grant, Some(tool_name))?;
        let tool = tool(slot, tool_name, grant)?;
        return Ok(Resolved {
            slot: Arc::clone(slot),
            tool,
            selection: Selection::named(name),
        });
    }
    let now = SystemTime::now();
    if grant.scope.is_expired(now) {
        return Err(Denial::ScopeExpired {
            scope: grant.scope.describe(now),
        }
        .into());
    }
    // The candidates: servers the grant may use whose catalog has a visible tool of that name.
    let offers: Vec<(&Arc<Slot>, Arc<CatalogTool>)> = slots
        .iter()
        .filter(|slot| grant.scope.permits_server(&slot.upstream.info().name))
        .filter_map(|slot| {
            let tool = Arc::clone(slot.upstream.catalog().get(tool_name)?);
            listed(grant, slot, &tool).then_some((slot, tool))
        })
        .collect();
    if offers.is_empty() {
        return Err(unknown_everywhere(slots, grant, tool_name));
    }
    // Each offer with whether the arguments pass its schema.
    let mut offers: Vec<(&Arc<Slot>, Arc<CatalogTool>, bool)> = offers
        .into_iter()
        .map(|(slot, tool)| {
            let valid = tool
                .validator()
                .map(|validator| validator.check(arguments).is_empty())
                .unwrap_or(false);
            (slot, tool, valid)
        })
        .collect();
    if let Some(failed) = facts.instead_of.as_deref() {
        offers.retain(|(slot, tool, valid)| {
            alternative_qualifies(&slot.upstream.info().name, tool, *valid, failed)
        });
        if offers.is_empty() {
            return Err(Error::invalid_params(
                "callTool",
                format!(
                    "no other server offers a read-only \"{tool_name}\" whose schema accepts \
                     these arguments"
                ),
            ));
        }
    }
    // Similarity needs text to compare with, and something to separate.
    let text = facts
        .mention_text
        .as_deref()
        .filter(|_| offers.len() > 1)
        .map(|text| embedder.embed(text));
    let candidates: Vec<Candidate<'_>> = offers
        .iter()
        .map(|&(slot, ref tool, valid)| {
            let info = slot.upstream.info();
            Candidate {
                server: &info.name,
                tags: &info.tags,
                priority: tool.priority.unwrap_or(info.settings.priority),
                arguments_valid: valid,
                similarity: text
                    .as_ref()
                    .map(|text| cosine(text, &embedder.embed(tool.description()))),
            }
        })
        .collect();
    let (chosen, selection) = route(
        &candidates,
        RoutingInput {
            mention_text: facts.mention_text.as_deref(),
            most_recent: facts.most_recent.as_deref(),
        },
    );
    let (slot, tool, _) = &offers[chosen];
    let selection = match facts.instead_of.as_deref() {
        Some(failed) => as_alternative(selection, failed),
        None => selection,
    };
    Ok(Resolved {
        slot: Arc::clone(slot),
        tool: Arc::clone(tool),
        selection,
    })
}

/// Whether the tool of server `server` may stand in for the same-named tool of `failed`: another
/// server, a read-only tool (trying it has no side effect the caller did not ask for), and a
/// schema that accepts the call's arguments.
pub(crate) fn alternative_qualifies(
    server: &str,
    tool: &CatalogTool,
    arguments_valid: bool,
    failed: &str,
) -> bool {
    server != failed && tool.hints.read_only && arguments_valid
}

/// A routing outcome among the stand-ins, recorded as rule `alternative`, with the failed
/// server first among the alternatives (`rejectedBy: "alternative"`).
pub(crate) fn as_alternative(selection: Selection, failed: &str) -> Selection {
    let mut alternatives = vec![Rejected {
        server: failed.to_owned(),
        rejected_by: Rule::Alternative,
    }];
    alternatives.extend(selection.alternatives);
    Selection {
        server: selection.server,
        rule: Rule::Alternative,
        alternatives,
    }
}

/// No visible server offers `tool_name`: suggest the closest visible tools, as `server/tool`.
fn unknown_everywhere(slots: &[Arc<Slot>], grant: &Grant, tool_name: &str) -> Error {
    let mut qualified: Vec<(String, String)> = Vec::new();
    for slot in slots {
        let info = slot.upstream.info();
        if !grant.scope.permits_server(&info.name) {
            continue;
        }
        for tool in slot.upstream.catalog().tools() {
            if listed(grant, slot, tool) {
                qualified.push((
                    tool.name().to_owned(),
                    format!("{}/{}", info.name, tool.name()),
                ));
            }
        }
    }
    let suggestions = crate::suggest::closest(
        tool_name,
        qualified.iter().map(|(name, _)| name.as_str()),
        SUGGESTIONS,
    );
    let mut known_tools: Vec<String> = Vec::new();
    for suggestion in suggestions {
        for (name, full) in &qualified {
            if name == suggestion && !known_tools.contains(full) {
                known_tools.push(full.clone());
            }
        }
    }
    known_tools.truncate(SUGGESTIONS);
    ErrorData::UnknownTool {
        server: "*".to_owned(),
        tool: tool_name.to_owned(),
        discovered_tools: known_tools.clone(),
        known_tools,
        tool_count: qualified.len(),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog::Catalog;

    fn tool(annotations: serde_json::Value) -> Arc<CatalogTool> {
        let catalog = Catalog::new(vec![json!({
            "name": "read_file",
            "inputSchema": {"type": "object"},
            "annotations": annotations,
        })]);
        Arc::clone(catalog.get("read_file").unwrap())
    }

    #[test]
    fn a_stand_in_is_another_servers_read_only_tool_that_accepts_the_arguments() {
        let read_only = tool(json!({"readOnlyHint": true}));
        let writes = tool(json!({}));
        assert!(alternative_qualifies("b", &read_only, true, "a"));
        assert!(
            !alternative_qualifies("a", &read_only, true, "a"),
            "not the failed one"
        );
        assert!(
            !alternative_qualifies("b", &writes, true, "a"),
            "only read-only tools"
        );
        assert!(
            !alternative_qualifies("b", &read_only, false, "a"),
            "the schema must fit"
        );
    }

    #[test]
    fn a_stand_in_is_recorded_as_rule_alternative_with_the_failed_server_first() {
        let routed = Selection {
            server: "b".into(),
            rule: Rule::Priority,
            alternatives: vec![Rejected {
                server: "c".into(),
                rejected_by: Rule::Priority,
            }],
        };
        let selection = as_alternative(routed, "a");
        assert_eq!(selection.server, "b");
        assert_eq!(selection.rule, Rule::Alternative);
        assert_eq!(
            selection.alternatives,
            vec![
                Rejected {
                    server: "a".into(),
                    rejected_by: Rule::Alternative,
                },
                Rejected {
                    server: "c".into(),
                    rejected_by: Rule::Priority,
                },
            ]
        );
    }
}
