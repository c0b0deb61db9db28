//! `tool-cli pin [SERVER]`, `pin diff [SERVER]` and `pin verify [--lock]`: pinning against rug
//! pulls (`docs/pinning.md`) from the client, over `tool_cli_gateway_core::pin`. The listings
//! come from the daemon (`pinListing`, the owner token's). The store is a JSON file
//! (`--pins PATH`, else `$TOOL_CLI_PINS`, else `$XDG_CONFIG_HOME/tool-cli/pins.json`, else
//! `~/.config/tool-cli/pins.json`), written 0600 and read failing closed.
//!
//! `pin approve SERVER --tool NAME` (or `--prompt`, `--resource-template`, `--instructions`)
//! re-pins one item as it is now, and `pin remove SERVER` stops pinning a server.
//!
//! The daemon checks every listing against the same store (`TOOL_CLI_PINS` or the default
//! location) and holds back changed tools; after writing the store this sends `reloadPins` so
//! the change takes effect at once.

use std::path::{Path, PathBuf};

use serde_json::json;
use tool_cli_gateway_core::pin::lock::{LockOptions, verify_lock};
use tool_cli_gateway_core::pin::store::PinStore;
use tool_cli_gateway_core::pin::{ItemKey, ServerListing, ServerPins, detect, diff};
use tool_cli_protocol::manage::{PinListingResult, PinStatusResult};
use tool_cli_protocol::methods::{ListServersResult, name};

use super::output::note;
use super::{Output, warn};
use crate::args::{PinCommand, PinItem};
use crate::client::{Client, parse_result};
use crate::error::Error;

/// Where the pin store is: `--pins`, else `TOOL_CLI_PINS`, else the XDG config directory's
/// `tool-cli/pins.json`, else `~/.config/tool-cli/pins.json`.
pub(crate) fn store_path(
    given: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<PathBuf, Error> {
    if let Some(path) = given {
        return Ok(path.to_owned());
    }
    tool_cli_protocol::runtime::pin_store_path(env).ok_or_else(|| {
        Error::Usage(
            "no place for the pin store: give --pins PATH (or set TOOL_CLI_PINS)".to_owned(),
        )
    })
}

/// Runs a `tool-cli pin` command.
pub(super) async fn run(
    client: &mut Client,
    output: &mut Output<'_>,
    command: PinCommand,
) -> Result<(), Error> {
    let path = store_path(command.pins.as_deref(), |name| std::env::var(name).ok())?;
    let stored = PinStore::load(&path).map_err(|error| Error::Usage(error.to_string()))?;
    match command.action {
        crate::args::PinAction::Pin { server } => {
            let mut store = stored.unwrap_or_default();
            let servers = servers_to_read(client, server.as_deref()).await?;
            let mut pinned = Vec::new();
            for server in &servers {
                let listing = listing(client, server).await?;
                for listing_note in store.pin_server(&listing) {
                    warn(&format!(
                        "server {server}, {}: {}",
                        listing_note.position, listing_note.message
                    ));
                }
                pinned.push(server.clone());
            }
            store
                .save(&path)
                .map_err(|error| Error::Usage(error.to_string()))?;
            tell_the_daemon(client, &path).await;
            // What the detectors flag in what was just pinned: for a person to review.
            let pins: Vec<(String, ServerPins)> = pinned
                .iter()
                .filter_map(|server| Some((server.clone(), store.server(server)?.clone())))
                .collect();
            let scanned: Vec<(&str, &ServerPins)> = pins
                .iter()
                .map(|(server, pins)| (server.as_str(), pins))
                .collect();
            for finding in detect::scan(&scanned) {
                warn(&finding.to_string());
            }
            if output.json {
                return output.emit_json(&json!({"pinned": pinned, "store": path}));
            }
            output.emit_text(&format!(
                "pinned {} server{} ({}) in {}",
                pinned.len(),
                if pinned.len() == 1 { "" } else { "s" },
                pinned.join(", "),
                path.display()
            ))
        }
        crate::args::PinAction::Diff { server } => {
            let store = stored.ok_or_else(|| nothing_pinned(&path))?;
            let servers: Vec<String> = match server {
                Some(server) => vec![server],
                None => store.servers().map(str::to_owned).collect(),
            };
            let mut text = String::new();
            for server in &servers {
                let Some(pinned) = store.server(server) else {
                    return Err(Error::Usage(format!(
                        "server {server} is not pinned in {}; pin it with `tool-cli pin {server}`",
                        path.display()
                    )));
                };
                let (current, _) = ServerPins::from_listing(&listing(client, server).await?);
                text.push_str(&diff::render(server, &diff::diff_server(pinned, &current)));
            }
            if text.trim().is_empty() {
                text = format!("no differences from the pins in {}", path.display());
            }
            output.emit_text(text.trim_end())
        }
        crate::args::PinAction::Approve { server, item } => {
            let mut store = stored.ok_or_else(|| nothing_pinned(&path))?;
            let key = match item {
                PinItem::Tool(name) => ItemKey::tool(name),
                PinItem::Prompt(name) => ItemKey::prompt(name),
                PinItem::ResourceTemplate(template) => ItemKey::resource_template(template),
                PinItem::Instructions => ItemKey::instructions(),
            };
            let listing = listing(client, &server).await?;
            let changed = store
                .approve_item(&listing, &key)
                .map_err(|error| Error::Usage(error.to_string()))?;
            store
                .save(&path)
                .map_err(|error| Error::Usage(error.to_string()))?;
            tell_the_daemon(client, &path).await;
            output.emit_text(&if changed {
                format!("approved {key} of server {server} as it is now")
            } else {
                format!("{key} of server {server} was already pinned as it is")
            })
        }
        crate::args::PinAction::Remove { server } => {
            let mut store = stored.ok_or_else(|| nothing_pinned(&path))?;
            if !store.unpin_server(&server) {
                return Err(Error::Usage(format!(
                    "server {server} is not pinned in {}",
                    path.display()
                )));
            }
            store
                .save(&path)
                .map_err(|error| Error::Usage(error.to_string()))?;
            tell_the_daemon(client, &path).await;
            output.emit_text(&format!("server {server} is no longer pinned"))
        }
        crate::args::PinAction::Verify { lock } => {
            let store = stored.ok_or_else(|| nothing_pinned(&path))?;
            // Without --lock only the pinned servers are checked; with it every server the
            // daemon has must be pinned too.
            let servers: Vec<String> = if lock {
                servers_to_read(client, None).await?
            } else {
                store.servers().map(str::to_owned).collect()
            };
            let mut current = Vec::new();
            let mut unreachable = Vec::new();
            for server in &servers {
                match listing(client, server).await {
                    Ok(listing) => {
                        current.push((server.clone(), ServerPins::from_listing(&listing).0))
                    }
                    Err(error) => unreachable.push((server.clone(), error.to_string())),
                }
            }
            let current: Vec<(&str, &ServerPins)> = current
                .iter()
                .map(|(server, pins)| (server.as_str(), pins))
                .collect();
            let unreachable: Vec<(&str, &str)> = unreachable
                .iter()
                .map(|(server, reason)| (server.as_str(), reason.as_str()))
                .collect();
            let verdict = verify_lock(&store, &current, &unreachable, LockOptions::default());
            output.emit_text(verdict.render().trim_end())?;
            if verdict.passed() {
                Ok(())
            } else {
                Err(Error::PinsDiffer {
                    problems: verdict.problems.len(),
                })
            }
        }
    }
}

fn nothing_pinned(path: &Path) -> Error {
    Error::Usage(format!(
        "nothing is pinned: {} does not exist; pin the servers first with `tool-cli pin`",
        path.display()
    ))
}

/// `server`, or every server the daemon lists.
async fn servers_to_read(client: &mut Client, server: Option<&str>) -> Result<Vec<String>, Error> {
    if let Some(server) = server {
        return Ok(vec![server.to_owned()]);
    }
    let listed: ListServersResult = parse_result(
        name::LIST_SERVERS,
        client.call(name::LIST_SERVERS, None).await?,
    )?;
    Ok(listed
        .servers
        .into_iter()
        .map(|server| server.name)
        .collect())
}

/// Asks the daemon to read the store again (`reloadPins`), so what was just pinned or approved
/// is held back or let through at once; warns when the daemon checks another store than this
/// one (it then holds back nothing by it) or cannot be told.
async fn tell_the_daemon(client: &mut Client, path: &Path) {
    let answer = client.call(name::RELOAD_PINS, None).await;
    match answer.and_then(|answer| parse_result::<PinStatusResult>(name::RELOAD_PINS, answer)) {
        Ok(status) => {
            let same = status
                .store
                .as_deref()
                .is_some_and(|store| same_file(Path::new(store), path));
            if !same {
                warn(&format!(
                    "the daemon checks calls against the pins in {}, not {}: it does not hold \
                     back what changes against this store (give both the same TOOL_CLI_PINS)",
                    status.store.as_deref().unwrap_or("no store"),
                    path.display()
                ));
            } else if let Some(error) = status.error {
                warn(&format!("the daemon cannot trust the pin store: {error}"));
            }
        }
        Err(error) => warn(&format!(
            "the daemon was not told to read the pins again ({error}); it will at the next \
             listing of each server"
        )),
    }
}

/// Whether `a` and `b` name one file (the same path, or the same file once resolved).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(a), Ok(b)) if a == b)
}

/// What `server` shows now, held back or not (`pinListing`: a person must see what changed to
/// approve it): every tool the daemon's pin check covers, its instructions, its prompts and its
/// resource templates.
async fn listing(client: &mut Client, server: &str) -> Result<ServerListing, Error> {
    let listed: PinListingResult = parse_result(
        name::PIN_LISTING,
        client
            .call(name::PIN_LISTING, Some(json!({"server": server})))
            .await?,
    )?;
    for problem in &listed.notes {
        note(&format!("server {server}: {problem}; none pinned"));
    }
    Ok(ServerListing {
        server: server.to_owned(),
        instructions: listed.instructions,
        tools: listed.tools,
        prompts: listed.prompts,
        resource_templates: listed.resource_templates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_the_flag_else_the_protocols_lookup_else_a_usage_error() {
        // The lookup's order (TOOL_CLI_PINS, XDG, HOME) is tested in `tool_cli_protocol::runtime`.
        let home_only = |name: &str| (name == "HOME").then(|| "/h".to_owned());
        let given = Path::new("/tmp/p.json");
        assert_eq!(store_path(Some(given), home_only).unwrap(), given);
        assert_eq!(
            store_path(None, home_only).unwrap(),
            Path::new("/h/.config/tool-cli/pins.json")
        );
        let error = store_path(None, |_: &str| None).unwrap_err();
        assert!(error.to_string().contains("--pins"), "{error}");
    }
}
