//! `tool-cli prompt list|get`: the grammar of the prompt subcommand, pure.
//!
//! Prompt arguments are strings in MCP, so they are given as `key=value` words; the first `=`
//! splits a word, so a value may itself contain `=`. A word without `=`, an empty key or a key
//! given twice is a usage error before any daemon is needed.

use std::collections::BTreeMap;

use clap::Subcommand;

use crate::error::Error;

/// `tool-cli prompt ...`.
#[derive(Debug, Subcommand)]
pub(super) enum PromptAction {
    /// List prompts, with their arguments (required ones marked)
    List {
        /// Only this server [default: every server]
        #[arg(long, value_name = "S")]
        server: Option<String>,
    },
    /// Render one prompt and print its messages
    Get {
        /// The server offering it
        server: String,
        /// The prompt's name, as shown by `tool-cli prompt list`
        name: String,
        /// Its arguments as key=value words (values are strings)
        #[arg(value_name = "KEY=VALUE")]
        arguments: Vec<String>,
    },
}

/// The prompt commands, validated.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PromptCommand {
    /// `tool-cli prompt list [--server S]`.
    List { server: Option<String> },
    /// `tool-cli prompt get SERVER NAME [key=value...]`.
    Get {
        server: String,
        name: String,
        arguments: BTreeMap<String, String>,
    },
}

/// Checks a `prompt` action and turns it into a [`PromptCommand`].
pub(super) fn command(action: PromptAction) -> Result<PromptCommand, Error> {
    match action {
        PromptAction::List { server } => Ok(PromptCommand::List { server }),
        PromptAction::Get {
            server,
            name,
            arguments,
        } => Ok(PromptCommand::Get {
            server,
            name,
            arguments: key_values(&arguments)?,
        }),
    }
}

/// Parses `key=value` words into a map.
fn key_values(words: &[String]) -> Result<BTreeMap<String, String>, Error> {
    let mut arguments = BTreeMap::new();
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(Error::Usage(format!(
                "prompt arguments are KEY=VALUE words, got {:?}; e.g. `tool-cli prompt get \
                 everything args-prompt city=Paris`",
                crate::render::truncate(word, 80)
            )));
        };
        if key.is_empty() {
            return Err(Error::Usage(format!(
                "the prompt argument {:?} has no name before '='; write KEY=VALUE",
                crate::render::truncate(word, 80)
            )));
        }
        if arguments.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(Error::Usage(format!(
                "the prompt argument {key:?} is given twice; give each argument once"
            )));
        }
    }
    Ok(arguments)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|word| word.to_string()).collect()
    }

    #[test]
    fn key_values_split_on_the_first_equals_sign() {
        let parsed = key_values(&words(&["city=Paris", "q=a=b", "empty="])).unwrap();
        assert_eq!(parsed["city"], "Paris");
        assert_eq!(parsed["q"], "a=b");
        assert_eq!(parsed["empty"], "");
    }

    #[test]
    fn malformed_key_values_are_usage_errors() {
        for (bad, expected) in [
            (words(&["Paris"]), "KEY=VALUE words"),
            (words(&["=Paris"]), "no name before '='"),
            (words(&["city=a", "city=b"]), "given twice"),
        ] {
            let error = key_values(&bad).unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
    }
}
