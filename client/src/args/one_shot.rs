//! One-shot servers: `tool-cli --stdio "CMD ARGS" [TOOL [ARGS_JSON]]` and `tool-cli --url URL
//! [TOOL [ARGS_JSON]]` reach a server that is not in the config. Pure: the command line split
//! into words (quotes and backslashes as a POSIX shell reads them, nothing expanded), the
//! `mcpServers` entry, and the server's name — `oneshot-WORD-HASH`, WORD from the command's file
//! name or the URL's host and HASH the first 12 hex digits of the entry's `sha256/v1` digest, so
//! the same server gets the same name on every run (its pins and traces line up). The daemon
//! adds it with `addServer` (the same validation, pinning and tracing as a configured one) and
//! the client removes it afterwards (`run/one_shot.rs`).

use serde_json::{Value, json};

use crate::error::Error;

/// A server given on the command line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OneShot {
    /// Its name in the daemon for this run.
    pub(crate) name: String,
    /// Its `mcpServers` entry.
    pub(crate) config: Value,
}

/// The one-shot server of `--stdio COMMAND` or `--url URL` (at most one of them).
pub(crate) fn one_shot(stdio: Option<&str>, url: Option<&str>) -> Result<Option<OneShot>, Error> {
    let (config, word) = match (stdio, url) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => {
            return Err(Error::Usage(
                "give --stdio COMMAND or --url URL, not both: a one-shot call reaches one server"
                    .to_owned(),
            ));
        }
        (Some(command), None) => {
            let words = split_command(command)?;
            let Some((program, args)) = words.split_first() else {
                return Err(Error::Usage(
                    "--stdio needs a command, e.g. --stdio \"npx -y @modelcontextprotocol/server-everything\""
                        .to_owned(),
                ));
            };
            let word = program.rsplit('/').next().unwrap_or(program).to_owned();
            (json!({"command": program, "args": args}), word)
        }
        (None, Some(url)) => {
            let url = url.trim();
            let Some((scheme, rest)) = url.split_once("://") else {
                return Err(Error::Usage(format!(
                    "--url needs an http:// or https:// URL, got {url:?}"
                )));
            };
            if !matches!(scheme, "http" | "https") || rest.is_empty() {
                return Err(Error::Usage(format!(
                    "--url needs an http:// or https:// URL, got {url:?}"
                )));
            }
            let host = rest.split(['/', ':', '?', '#']).next().unwrap_or_default();
            (json!({"url": url}), host.to_owned())
        }
    };
    let digest = tool_cli_gateway_core::canonical::digest(&config);
    let hex: String = digest
        .as_str()
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .chars()
        .take(12)
        .collect();
    let word: String = word
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(24)
        .collect();
    let word = word.trim_matches('-');
    let name = if word.is_empty() {
        format!("oneshot-{hex}")
    } else {
        format!("oneshot-{word}-{hex}")
    };
    Ok(Some(OneShot { name, config }))
}

/// `line` split into words as a POSIX shell would, without expanding anything: single quotes
/// keep everything, double quotes keep all but `\"` and `\\`, a backslash outside quotes keeps
/// the next character.
pub(crate) fn split_command(line: &str) -> Result<Vec<String>, Error> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(unclosed("'", line)),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(unclosed("\"", line)),
                        },
                        Some(c) => word.push(c),
                        None => return Err(unclosed("\"", line)),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

fn unclosed(quote: &str, line: &str) -> Error {
    Error::Usage(format!(
        "--stdio: the quote {quote} is never closed in {line:?}; close it or quote the whole \
         command for your shell once more"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_like_a_shell_without_expansion() {
        assert_eq!(
            split_command(r#"npx -y "@scope/pkg name" 'a b' c\ d $HOME"#).unwrap(),
            ["npx", "-y", "@scope/pkg name", "a b", "c d", "$HOME"]
        );
        assert_eq!(split_command(r#"x "a\"b""#).unwrap(), ["x", "a\"b"]);
        assert_eq!(split_command("  ").unwrap(), Vec::<String>::new());
        assert!(split_command("x 'open").is_err());
    }

    #[test]
    fn a_one_shot_server_has_a_stable_name_and_an_mcp_servers_entry() {
        let first = one_shot(Some("/usr/bin/my-server --flag"), None)
            .unwrap()
            .unwrap();
        let again = one_shot(Some("/usr/bin/my-server   --flag"), None)
            .unwrap()
            .unwrap();
        assert_eq!(first, again);
        assert!(
            first.name.starts_with("oneshot-my-server-"),
            "{}",
            first.name
        );
        assert_eq!(first.name.len(), "oneshot-my-server-".len() + 12);
        assert_eq!(
            first.config,
            json!({"command": "/usr/bin/my-server", "args": ["--flag"]})
        );
        let other = one_shot(Some("/usr/bin/my-server --other"), None)
            .unwrap()
            .unwrap();
        assert_ne!(first.name, other.name);
        let remote = one_shot(None, Some("https://mcp.example.com/mcp"))
            .unwrap()
            .unwrap();
        assert!(remote.name.starts_with("oneshot-mcp-example-com-"));
        assert_eq!(remote.config, json!({"url": "https://mcp.example.com/mcp"}));
    }

    #[test]
    fn bad_one_shot_input_says_what_would_be_right() {
        assert_eq!(one_shot(None, None).unwrap(), None);
        for (stdio, url, expected) in [
            (Some("x"), Some("http://a"), "not both"),
            (Some(""), None, "needs a command"),
            (None, Some("ftp://a"), "http:// or https://"),
            (None, Some("localhost:3000"), "http:// or https://"),
        ] {
            let error = one_shot(stdio, url).unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
    }
}
