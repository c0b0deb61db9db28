//! The fast path of the grammar: the plain positional lines read without clap.
//!
//! `tool-cli`, `tool-cli SERVER`, `tool-cli SERVER TOOL`, `tool-cli SERVER TOOL '{json}'` (and
//! the same with `key=value` words or the routed forms) are what agents run in a loop, and for
//! them clap's work is pure overhead: building the whole command tree (every subcommand, every
//! flag, their help) costs about a fifth of such a process (docs/benchmarks.md, "P1: client
//! start-up"). A line qualifies only when clap could read nothing else into it than those
//! positionals: every word is valid UTF-8, not empty, does not start with `-` (no flag, no `--`,
//! no `-` for stdin, no `-h`), and the first is no subcommand's name. Anything else is left to
//! clap, so help, versions, flags, grammar errors and their exit codes are clap's own. The
//! [`Cli`] built here is the one clap would build for the same words (the unit tests compare the
//! two over a table of lines), and both go through the same checks in [`super::interpret`].

use std::ffi::OsString;

use super::grammar::Cli;

/// The names that make a first word a subcommand rather than a server (`grammar.rs`); a unit
/// test checks that this list is clap's.
pub(super) const SUBCOMMANDS: [&str; 22] = [
    "resource",
    "prompt",
    "health",
    "token",
    "daemon",
    "server",
    "config",
    "traces",
    "session",
    "agent",
    "completions",
    "__complete",
    "search",
    "auth",
    "chain",
    "many",
    "mcp",
    "export",
    "pin",
    "skill",
    "record",
    "help",
];

/// The positional words of `args` (after the program name) when the line is a plain one that
/// needs no clap; `None` otherwise.
pub(super) fn positionals(args: &[OsString]) -> Option<Vec<&str>> {
    let (_program, words) = args.split_first()?;
    let words: Vec<&str> = words
        .iter()
        .map(|word| word.to_str())
        .collect::<Option<_>>()?;
    let plain = |word: &&str| !word.is_empty() && !word.starts_with('-');
    if !words.iter().all(plain) {
        return None;
    }
    if words
        .first()
        .is_some_and(|first| SUBCOMMANDS.contains(first))
    {
        return None;
    }
    Some(words)
}

/// The [`Cli`] clap would read from a plain line, or `None` when the line is not one.
pub(super) fn plain(args: &[OsString]) -> Option<Cli> {
    let mut words = positionals(args)?.into_iter().map(str::to_owned);
    Some(Cli {
        subcommand: None,
        server: words.next(),
        tool: words.next(),
        arguments: words.collect(),
        global: Default::default(),
        call: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStringExt as _;

    use clap::CommandFactory as _;

    use super::*;

    fn line(words: &[&str]) -> Vec<OsString> {
        std::iter::once("tool-cli")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect()
    }

    #[test]
    fn the_plain_forms_are_read_without_clap() {
        assert_eq!(positionals(&line(&[])), Some(vec![]));
        assert_eq!(positionals(&line(&["demo"])), Some(vec!["demo"]));
        assert_eq!(
            positionals(&line(&["demo", "sql_query", "{\"sql\": \"select 1\"}"])),
            Some(vec!["demo", "sql_query", "{\"sql\": \"select 1\"}"])
        );
        assert_eq!(
            positionals(&line(&["demo", "sql_query", "sql=select 1", "limit:=3"])),
            Some(vec!["demo", "sql_query", "sql=select 1", "limit:=3"])
        );
        // A subcommand's name later on the line is a tool's or an argument's.
        assert_eq!(
            positionals(&line(&["demo", "health", "search"])),
            Some(vec!["demo", "health", "search"])
        );
        // Names close to a subcommand's are servers.
        assert_eq!(positionals(&line(&["helth"])), Some(vec!["helth"]));
    }

    #[test]
    fn anything_clap_might_read_otherwise_is_left_to_it() {
        for words in [
            &["--json"][..],
            &["demo", "--json"],
            &["demo", "sql_query", "-"],
            &["--", "health"],
            &["-h"],
            &["demo", "-h"],
            &["--version"],
            &["demo", "tool", "-5"],
            &["health"],
            &["resource", "list"],
            &["__complete", "servers"],
            &[""],
            &["demo", ""],
        ] {
            assert_eq!(positionals(&line(words)), None, "{words:?}");
        }
        let not_utf8 = vec![
            OsString::from("tool-cli"),
            OsString::from_vec(vec![b'd', 0xff]),
        ];
        assert_eq!(positionals(&not_utf8), None);
        assert_eq!(positionals(&[]), None);
    }

    #[test]
    fn the_subcommand_names_are_clap_s() {
        // Built, so the list holds clap's own `help` subcommand too.
        let mut command = Cli::command();
        command.build();
        let mut clap_names: Vec<String> = command
            .get_subcommands()
            .flat_map(|subcommand| {
                std::iter::once(subcommand.get_name().to_owned())
                    .chain(subcommand.get_all_aliases().map(str::to_owned))
            })
            .collect();
        clap_names.sort();
        let mut ours: Vec<String> = SUBCOMMANDS.iter().map(|name| name.to_string()).collect();
        ours.sort();
        assert_eq!(ours, clap_names);
    }

    /// What a parse came to, as text: the invocation, or the message and exit code.
    fn outcome(result: Result<super::super::Invocation, super::super::ParseOutcome>) -> String {
        use super::super::ParseOutcome;
        match result {
            Ok(invocation) => format!("{invocation:?}"),
            Err(ParseOutcome::Clap(error)) => {
                format!("clap exit {}: {}", error.exit_code(), error.render())
            }
            Err(ParseOutcome::Usage(error)) => {
                format!("usage exit {}: {error}", error.exit_code())
            }
        }
    }

    #[test]
    fn the_fast_path_reads_every_line_as_clap_does() {
        use super::super::{ArgsEnv, hoist_subcommand, parse, parse_with_clap};
        let lines: &[&[&str]] = &[
            &[],
            &["demo"],
            &["demo", "sql_query"],
            &["demo", "sql_query", "{\"sql\": \"select 1\"}"],
            &["demo", "sql_query", "{}"],
            &["demo", "sql_query", "  {\"sql\": 1}  "],
            // Bad JSON, JSON that is no object, an object the shell split.
            &["demo", "sql_query", "{\"sql\": "],
            &["demo", "sql_query", "{sql: x}"],
            &["demo", "sql_query", "[1, 2]"],
            &["demo", "sql_query", "{\"a\":", "1}"],
            // key=value words, good and bad.
            &["demo", "sql_query", "sql=select 1"],
            &[
                "demo",
                "sql_query",
                "sql=select 1",
                "limit:=3",
                "flag:=true",
            ],
            &["demo", "sql_query", "limit:=nope"],
            &["demo", "sql_query", "novalue"],
            &["demo", "sql_query", "=x"],
            // Routed forms.
            &["sql_query", "{\"sql\": \"select 1\"}"],
            &["sql_query", "{\"sql\": ", "x"],
            &["*", "sql_query"],
            &["*", "sql_query", "{}"],
            &["*", "{}"],
            // Unknown servers and tools are the daemon's to refuse: parsed alike.
            &["no_such_server"],
            &["demo", "no_such_tool"],
            // Names that look like subcommands, or nearly.
            &["helth"],
            &["resources"],
            &["help"],
            &["version"],
            &["demo", "health"],
            &["demo", "resource", "list"],
            &["Health"],
            // Unicode and odd characters.
            &["dëmo", "outil", "{\"é\": \"✓\"}"],
            &["demo", "a b", "{}"],
            &["demo", "sql_query", "@file"],
            // Lines the fast path leaves to clap, for completeness.
            &["--", "health"],
            &["demo", "sql_query", "-"],
            &["--json", "demo"],
            &["demo", "--help"],
            &["-h"],
            &[""],
            &["demo", "sql_query", ""],
        ];
        let envs = [
            ArgsEnv::default(),
            ArgsEnv {
                timeout_ms: Some("999999".into()),
                require_identity: Some("0".into()),
                session: Some("s-1".into()),
            },
            ArgsEnv {
                timeout_ms: Some("soon".into()),
                ..ArgsEnv::default()
            },
            ArgsEnv {
                session: Some("not a session!".into()),
                ..ArgsEnv::default()
            },
        ];
        let stdin = || Ok("{\"from\": \"stdin\"}".to_owned());
        let mut fast = 0;
        for env in &envs {
            for words in lines {
                let args = line(words);
                fast += usize::from(plain(&hoist_subcommand(args.clone())).is_some());
                let ours = outcome(parse(args.clone(), env, stdin));
                let clap = outcome(parse_with_clap(hoist_subcommand(args), env, stdin));
                assert_eq!(ours, clap, "{words:?} with {env:?}");
            }
        }
        // Most of the table took the fast path (the rest checks the fallback).
        assert!(fast >= 4 * 30, "{fast}");
        let not_utf8 = vec![
            OsString::from("tool-cli"),
            OsString::from("demo"),
            OsString::from_vec(vec![b't', 0xff]),
        ];
        assert_eq!(
            outcome(parse(not_utf8.clone(), &envs[0], stdin)),
            outcome(parse_with_clap(not_utf8, &envs[0], stdin))
        );
    }
}
