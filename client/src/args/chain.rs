//! `tool-cli chain ...` and `tool-cli many ...`: the command-line forms of `callChain` (steps in
//! order, later ones taking values from earlier results) and `callMany` (calls at once).
//!
//! Both take their calls the same two ways:
//!
//! - one word, `FILE` or `-` (stdin): a JSON document, the method's params as
//!   `docs/protocol.md` defines them (`{"steps": [...]}`, `{"calls": [...]}`) or just the array
//!   of steps or calls; `chain_document.rs` checks it;
//! - one word per call, `'SERVER TOOL [ARGS_JSON]'` (`*` as SERVER lets the daemon route it),
//!   so `tool-cli many 'demo schema' 'demo sql_query {"sql": "SELECT 1"}'` needs no file. A
//!   chain's bindings (`{"$from": "0", "pointer": "/..."}`) go inside ARGS_JSON as usual.
//!
//! A single word without blanks is the document's path (a path with blanks: `- < FILE`); any
//! word with blanks is a call. Pure: stdin comes in as a function, the file is read when the
//! command runs (`run/chain.rs`), and the flags are merged into the params by
//! `chain_document::request`.

use std::path::PathBuf;

use clap::Args;
use serde_json::{Map, Value};

use super::parse_arguments;
use crate::error::Error;

/// Most calls a fan-out runs at once (the daemon's limit too).
pub(crate) const MAX_CONCURRENT: usize = 64;

/// `tool-cli chain`'s words.
#[derive(Debug, Args)]
pub(crate) struct ChainArgs {
    /// A JSON file of steps (callChain's params, or an array of steps), `-` to read it from
    /// stdin, or one quoted word per step: 'SERVER TOOL {json}' ('*' as SERVER routes the step)
    #[arg(value_name = "FILE | - | 'SERVER TOOL {json}'", required = true, num_args = 1..)]
    words: Vec<String>,
}

/// `tool-cli many`'s words.
#[derive(Debug, Args)]
pub(crate) struct ManyArgs {
    /// A JSON file of calls (callMany's params, or an array of callTool params), `-` to read it
    /// from stdin, or one quoted word per call: 'SERVER TOOL {json}' ('*' as SERVER routes it)
    #[arg(value_name = "FILE | - | 'SERVER TOOL {json}'", required = true, num_args = 1..)]
    words: Vec<String>,

    /// At most N calls at once, 1 to 64 [default: the daemon's, 8]
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    max_concurrent: Option<i64>,
}

/// Which method the command sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchKind {
    /// `callChain`.
    Chain,
    /// `callMany`.
    Many,
}

impl BatchKind {
    /// The command's name, for messages.
    pub(crate) fn command(self) -> &'static str {
        match self {
            BatchKind::Chain => "chain",
            BatchKind::Many => "many",
        }
    }

    /// What one of its calls is called in messages and output: `step` or `call`.
    pub(crate) fn item(self) -> &'static str {
        match self {
            BatchKind::Chain => "step",
            BatchKind::Many => "call",
        }
    }
}

/// Where the calls come from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Source {
    /// A JSON document read from stdin.
    Stdin(String),
    /// A JSON document in this file, read when the command runs.
    File(PathBuf),
    /// One call per word.
    Words(Vec<CallWord>),
}

/// One `'SERVER TOOL [ARGS_JSON]'` word.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallWord {
    /// `None` for `*`: routed.
    pub(crate) server: Option<String>,
    pub(crate) tool: String,
    pub(crate) arguments: Map<String, Value>,
}

/// A checked `tool-cli chain` or `tool-cli many`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BatchCommand {
    pub(crate) kind: BatchKind,
    pub(crate) source: Source,
    /// `--max-concurrent` (`many` only).
    pub(crate) max_concurrent: Option<usize>,
}

/// `tool-cli chain ...`.
pub(crate) fn chain(
    args: ChainArgs,
    read_stdin: impl FnOnce() -> std::io::Result<String>,
) -> Result<BatchCommand, Error> {
    Ok(BatchCommand {
        kind: BatchKind::Chain,
        source: source(BatchKind::Chain, &args.words, read_stdin)?,
        max_concurrent: None,
    })
}

/// `tool-cli many ...`.
pub(crate) fn many(
    args: ManyArgs,
    read_stdin: impl FnOnce() -> std::io::Result<String>,
) -> Result<BatchCommand, Error> {
    let max_concurrent = match args.max_concurrent {
        None => None,
        Some(n) if (1..=MAX_CONCURRENT as i64).contains(&n) => Some(n as usize),
        Some(n) => {
            return Err(Error::Usage(format!(
                "--max-concurrent must be 1 to {MAX_CONCURRENT}, got {n}; leave it out for the \
                 daemon's default of 8"
            )));
        }
    };
    Ok(BatchCommand {
        kind: BatchKind::Many,
        source: source(BatchKind::Many, &args.words, read_stdin)?,
        max_concurrent,
    })
}

/// The words as a document (one word without blanks) or as calls (every word).
fn source(
    kind: BatchKind,
    words: &[String],
    read_stdin: impl FnOnce() -> std::io::Result<String>,
) -> Result<Source, Error> {
    match words {
        [] => Err(Error::Usage(format!(
            "`tool-cli {}` needs its calls: a JSON FILE, `-` for stdin, or one quoted word per \
             {}: 'SERVER TOOL {{json}}'",
            kind.command(),
            kind.item()
        ))),
        [word] if word == "-" => read_stdin().map(Source::Stdin).map_err(|error| {
            Error::Usage(format!(
                "cannot read the {} document from stdin: {error}",
                kind.command()
            ))
        }),
        [word] if !word.trim().is_empty() && !word.contains(char::is_whitespace) => {
            Ok(Source::File(PathBuf::from(word)))
        }
        words => words
            .iter()
            .enumerate()
            .map(|(index, word)| call_word(kind, index, word, words.len()))
            .collect::<Result<_, _>>()
            .map(Source::Words),
    }
}

/// One `'SERVER TOOL [ARGS_JSON]'` word.
fn call_word(kind: BatchKind, index: usize, word: &str, count: usize) -> Result<CallWord, Error> {
    let shape = || {
        let mut message = format!(
            "{} {index} ({:?}) must be one quoted word 'SERVER TOOL [ARGS_JSON]', e.g. 'demo \
             sql_query {{\"sql\": \"SELECT 1\"}}' ('*' as SERVER lets the daemon route it)",
            kind.item(),
            crate::render::truncate(word, 80)
        );
        if count > 1 && !word.contains(char::is_whitespace) {
            message.push_str(
                "; a FILE or `-` must be the only word, and a path with blanks is read with \
                 `- < FILE`",
            );
        }
        Error::Usage(message)
    };
    let (server, rest) = first_word(word);
    let (tool, rest) = first_word(rest);
    if server.is_empty() || tool.is_empty() || server.starts_with('{') || tool.starts_with('{') {
        return Err(shape());
    }
    let arguments = if rest.trim().is_empty() {
        Map::new()
    } else {
        parse_arguments(
            rest,
            &format!("of {} {index} ({server} {tool})", kind.item()),
        )?
    };
    Ok(CallWord {
        server: (server != "*").then(|| server.to_owned()),
        tool: tool.to_owned(),
        arguments,
    })
}

/// The first blank-separated word of `text` and what follows it.
fn first_word(text: &str) -> (&str, &str) {
    let text = text.trim_start();
    match text.find(char::is_whitespace) {
        Some(end) => (&text[..end], &text[end..]),
        None => (text, ""),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn words(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| (*word).to_owned()).collect()
    }

    fn no_stdin() -> std::io::Result<String> {
        panic!("stdin must not be read")
    }

    fn usage(result: Result<BatchCommand, Error>) -> String {
        match result {
            Err(Error::Usage(message)) => message,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn one_word_without_blanks_is_a_file_and_a_dash_is_stdin() {
        let command = chain(
            ChainArgs {
                words: words(&["steps.json"]),
            },
            no_stdin,
        )
        .unwrap();
        assert_eq!(command.kind, BatchKind::Chain);
        assert_eq!(command.source, Source::File(PathBuf::from("steps.json")));
        let command = many(
            ManyArgs {
                words: words(&["-"]),
                max_concurrent: Some(4),
            },
            || Ok("[]".to_owned()),
        )
        .unwrap();
        assert_eq!(command.source, Source::Stdin("[]".to_owned()));
        assert_eq!(command.max_concurrent, Some(4));
    }

    #[test]
    fn words_with_blanks_are_calls_and_a_star_routes() {
        let command = many(
            ManyArgs {
                words: words(&[
                    "demo schema",
                    r#"  demo   sql_query {"sql": "SELECT 1"} "#,
                    "* read_text_file\t{\"path\": \"/tmp/x\"}",
                ]),
                max_concurrent: None,
            },
            no_stdin,
        )
        .unwrap();
        let Source::Words(calls) = command.source else {
            panic!("{:?}", command.source)
        };
        assert_eq!(
            calls,
            vec![
                CallWord {
                    server: Some("demo".into()),
                    tool: "schema".into(),
                    arguments: Map::new(),
                },
                CallWord {
                    server: Some("demo".into()),
                    tool: "sql_query".into(),
                    arguments: json!({"sql": "SELECT 1"}).as_object().unwrap().clone(),
                },
                CallWord {
                    server: None,
                    tool: "read_text_file".into(),
                    arguments: json!({"path": "/tmp/x"}).as_object().unwrap().clone(),
                },
            ]
        );
    }

    #[test]
    fn malformed_call_words_say_the_shape_expected() {
        let chain_of = |list: &[&str]| chain(ChainArgs { words: words(list) }, no_stdin);
        let message = usage(chain_of(&["demo {\"sql\": 1}"]));
        assert!(
            message.starts_with("step 0 (\"demo {\\\"sql\\\": 1}\") must be one quoted word"),
            "{message}"
        );
        // A path next to other words is a call word without a tool.
        let message = usage(chain_of(&["demo schema", "steps.json"]));
        assert!(message.contains("step 1"), "{message}");
        assert!(message.contains("`- < FILE`"), "{message}");
        let message = usage(chain_of(&["demo sql_query {\"sql\": "]));
        assert!(
            message.contains("the tool arguments of step 0 (demo sql_query) are not valid JSON"),
            "{message}"
        );
        let message = usage(chain_of(&["demo sql_query [1, 2]"]));
        assert!(message.contains("must be a JSON object"), "{message}");
        let message = usage(chain_of(&["   "]));
        assert!(message.contains("must be one quoted word"), "{message}");
    }

    #[test]
    fn max_concurrent_is_checked_before_any_daemon() {
        for bad in [0, -1, 65] {
            let message = usage(many(
                ManyArgs {
                    words: words(&["demo schema"]),
                    max_concurrent: Some(bad),
                },
                no_stdin,
            ));
            assert!(
                message.starts_with(&format!("--max-concurrent must be 1 to 64, got {bad}")),
                "{message}"
            );
        }
    }

    #[test]
    fn an_unreadable_stdin_is_a_usage_error() {
        let message = usage(chain(
            ChainArgs {
                words: words(&["-"]),
            },
            || Err(std::io::Error::other("closed")),
        ));
        assert_eq!(message, "cannot read the chain document from stdin: closed");
    }
}
