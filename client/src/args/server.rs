//! `tool-cli server add|remove|list|reload` (and `restart`, parsed with the rest in `mod.rs`):
//! the grammar of runtime server management, pure.

use std::collections::BTreeMap;

use clap::Subcommand;
use serde_json::{Value, json};

use crate::error::Error;

/// What `tool-cli server ...` asks the daemon to do (besides `restart`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ServerCommand {
    /// `addServer {name, config}`.
    Add { name: String, config: Value },
    /// `removeServer {name}`.
    Remove { name: String },
    /// `reloadConfig`.
    Reload,
}

#[derive(Debug, Subcommand)]
pub(super) enum ServerAction {
    /// Start a server again now, even one parked `down`, and clear its circuit breakers
    Restart {
        /// The server's name, as in `tool-cli`'s list
        name: String,
    },
    /// Start a new server in the running daemon (not written to the config file):
    /// `server add NAME -- COMMAND ARGS...` or `server add NAME --url URL`
    Add {
        /// Its name: letters, digits, '-', '_', '.'
        name: String,
        /// A Streamable HTTP server's URL, instead of a command
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// A variable for the server's environment (repeat); `${VAR}` reads the daemon's
        #[arg(long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// An HTTP header for a --url server (repeat)
        #[arg(long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// The command and its arguments, after `--`
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Stop a server once its calls in flight have finished, and take it out of the daemon
    Remove {
        /// The server's name
        name: String,
    },
    /// List the servers (the same as `tool-cli` with no arguments)
    List,
    /// Read the daemon's config file again: unchanged servers keep running, changed ones
    /// restart, removed ones drain and stop, new ones start (also: send the daemon SIGHUP)
    Reload,
}

/// What a `server` subcommand becomes: a management command, or one the caller maps itself.
pub(super) enum Parsed {
    Manage(ServerCommand),
    Restart(String),
    List,
}

pub(super) fn command(action: ServerAction) -> Result<Parsed, Error> {
    Ok(match action {
        ServerAction::Restart { name } => Parsed::Restart(name),
        ServerAction::List => Parsed::List,
        ServerAction::Reload => Parsed::Manage(ServerCommand::Reload),
        ServerAction::Remove { name } => Parsed::Manage(ServerCommand::Remove { name }),
        ServerAction::Add {
            name,
            url,
            env,
            headers,
            command,
        } => Parsed::Manage(ServerCommand::Add {
            config: add_config(&name, url, &env, &headers, command)?,
            name,
        }),
    })
}

/// The `mcpServers` entry of `server add`.
fn add_config(
    name: &str,
    url: Option<String>,
    env: &[String],
    headers: &[String],
    command: Vec<String>,
) -> Result<Value, Error> {
    let pairs = |items: &[String], separator: char, what: &str, example: &str| {
        items
            .iter()
            .map(|item| match item.split_once(separator) {
                Some((key, value)) if !key.trim().is_empty() => {
                    Ok((key.trim().to_owned(), value.trim_start().to_owned()))
                }
                _ => Err(Error::Usage(format!(
                    "{what} \"{item}\" has no name; expected {example}"
                ))),
            })
            .collect::<Result<BTreeMap<String, String>, Error>>()
    };
    match (url, command.split_first()) {
        (Some(_), Some(_)) => Err(Error::Usage(format!(
            "`server add {name}` takes either --url URL or a command after `--`, not both"
        ))),
        (None, None) => Err(Error::Usage(format!(
            "`server add {name}` needs what to run: `tool-cli server add {name} -- COMMAND \
             ARGS...` for a stdio server, or `tool-cli server add {name} --url URL` for an HTTP one"
        ))),
        (Some(url), None) => {
            if !env.is_empty() {
                return Err(Error::Usage(
                    "--env is for a stdio server (a command); an HTTP server takes --header"
                        .to_owned(),
                ));
            }
            let mut entry = json!({ "url": url });
            if !headers.is_empty() {
                entry["headers"] = json!(pairs(headers, ':', "--header", "NAME: VALUE")?);
            }
            Ok(entry)
        }
        (None, Some((program, args))) => {
            if !headers.is_empty() {
                return Err(Error::Usage(
                    "--header is for an HTTP server (--url); a stdio server takes --env".to_owned(),
                ));
            }
            let mut entry = json!({ "command": program, "args": args });
            if !env.is_empty() {
                entry["env"] = json!(pairs(env, '=', "--env", "KEY=VALUE")?);
            }
            Ok(entry)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(
        url: Option<&str>,
        env: &[&str],
        headers: &[&str],
        command: &[&str],
    ) -> Result<Value, Error> {
        let owned = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        add_config(
            "fs",
            url.map(str::to_owned),
            &owned(env),
            &owned(headers),
            owned(command),
        )
    }

    #[test]
    fn a_command_or_a_url_becomes_an_entry() {
        assert_eq!(
            add(
                None,
                &["ROOT=/tmp", "A=b=c"],
                &[],
                &["npx", "-y", "server", "/tmp"]
            )
            .unwrap(),
            json!({"command": "npx", "args": ["-y", "server", "/tmp"], "env": {"A": "b=c", "ROOT": "/tmp"}})
        );
        assert_eq!(
            add(
                Some("http://127.0.0.1:3000/mcp"),
                &[],
                &["Authorization: Bearer ${T}"],
                &[]
            )
            .unwrap(),
            json!({"url": "http://127.0.0.1:3000/mcp", "headers": {"Authorization": "Bearer ${T}"}})
        );
    }

    #[test]
    fn bad_combinations_say_what_would_be_right() {
        let message = |result: Result<Value, Error>| match result {
            Err(Error::Usage(message)) => message,
            other => panic!("expected a usage error, got {other:?}"),
        };
        assert!(message(add(None, &[], &[], &[])).contains("-- COMMAND"));
        assert!(message(add(Some("http://x"), &[], &[], &["node"])).contains("not both"));
        assert!(message(add(None, &["NOVALUE"], &[], &["node"])).contains("KEY=VALUE"));
        assert!(message(add(None, &["=x"], &[], &["node"])).contains("no name"));
        assert!(message(add(Some("http://x"), &["A=b"], &[], &[])).contains("--header"));
        assert!(message(add(None, &[], &["A: b"], &["node"])).contains("--env"));
    }
}
