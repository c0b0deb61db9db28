//! Shell completion: `tool-cli completions bash|zsh|fish` and the hidden `tool-cli __complete`.
//!
//! The static part of each script (subcommands, flags, their values) is what `clap_complete`
//! generates from the grammar, so it never drifts from it. What clap cannot know are the live
//! names: the servers in the SERVER position, a server's tools after it, and a tool's
//! parameters (as `key=`) after that. For those the script runs `tool-cli __complete servers`,
//! `__complete tools SERVER` or `__complete params SERVER TOOL`, which asks the daemon with a
//! short timeout and prints one name a line — or nothing, with exit 0, when no daemon answers,
//! so a shell without a daemon completes as if there were no servers. This module builds the
//! scripts and parses the hidden command's words; `run::complete` asks the daemon.

use clap::{CommandFactory as _, ValueEnum};

/// The shells `tool-cli completions` writes a script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// What `tool-cli __complete WORDS...` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    /// `servers`: every server's name.
    Servers,
    /// `tools SERVER`: the server's tool names.
    Tools { server: String },
    /// `params SERVER TOOL`: the tool's parameter names, each followed by `=`.
    Params { server: String, tool: String },
    /// Anything else: nothing to print (the scripts never send it, so no error either).
    Nothing,
}

/// Parses the words after `__complete`.
pub(crate) fn request(words: &[String]) -> Request {
    match words {
        [kind] if kind == "servers" => Request::Servers,
        [kind, server] if kind == "tools" => Request::Tools {
            server: server.clone(),
        },
        [kind, server, tool] if kind == "params" => Request::Params {
            server: server.clone(),
            tool: tool.clone(),
        },
        _ => Request::Nothing,
    }
}

/// The completion script for `shell`.
pub(crate) fn script(shell: Shell) -> String {
    let mut command = super::Cli::command();
    let mut generated = Vec::new();
    let generator = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(generator, &mut command, "tool-cli", &mut generated);
    let mut generated = String::from_utf8_lossy(&generated).into_owned();
    if shell == Shell::Bash {
        // clap_complete 4.6 spells the state of a hyphenated binary two ways in bash
        // (`tool__cli__subcmd__daemon` when it sets it, `tool__subcmd__cli__subcmd__daemon` in
        // the `case` that reads it), so no subcommand's flags or values would complete.
        generated = generated.replace("tool__subcmd__cli", "tool__cli");
    }
    let subcommands = subcommand_names();
    let live = match shell {
        Shell::Bash => BASH_LIVE,
        Shell::Zsh => ZSH_LIVE,
        Shell::Fish => FISH_LIVE,
    }
    .replace("@SUBCOMMANDS@", &subcommands.join(" "))
    .replace("@FLAGS_WITH_VALUE@", &flags_with_value().join("|"));
    format!("{generated}\n{live}")
}

/// The visible subcommands, which take the SERVER position's place.
fn subcommand_names() -> Vec<String> {
    super::Cli::command()
        .get_subcommands()
        .filter(|subcommand| !subcommand.is_hide_set())
        .map(|subcommand| subcommand.get_name().to_owned())
        .collect()
}

/// The global flags that take a value, so the scripts can skip it when counting positionals.
fn flags_with_value() -> Vec<String> {
    super::Cli::command()
        .get_arguments()
        .filter(|argument| argument.get_action().takes_values() && !argument.is_positional())
        .filter_map(|argument| argument.get_long().map(|long| format!("--{long}")))
        .collect()
}

/// Bash: live names in the SERVER, TOOL and argument positions, clap's completion elsewhere.
const BASH_LIVE: &str = r#"# Live server, tool and parameter names (tool-cli __complete asks the daemon; no daemon: none).
_tool_cli_live() {
    local cur="${COMP_WORDS[COMP_CWORD]}" i words=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${COMP_WORDS[i]}" in
            @FLAGS_WITH_VALUE@) ((i++)) ;;
            --) ;;
            -*) ;;
            *) words+=("${COMP_WORDS[i]}") ;;
        esac
    done
    case " @SUBCOMMANDS@ " in
        *" ${words[0]:-} "*) _tool__cli "$@"; return ;;
    esac
    case "${COMP_WORDS[COMP_CWORD - 1]}" in
        @FLAGS_WITH_VALUE@) _tool__cli "$@"; return ;;
    esac
    if [[ "$cur" != -* ]]; then
        local IFS=$'\n' names
        case ${#words[@]} in
            0) names="$(tool-cli __complete servers 2>/dev/null)"$'\n'"$(printf '%s\n' @SUBCOMMANDS@)" ;;
            1) names="$(tool-cli __complete tools "${words[0]}" 2>/dev/null)" ;;
            *) names="$(tool-cli __complete params "${words[0]}" "${words[1]}" 2>/dev/null)"
               compopt -o nospace 2>/dev/null ;;
        esac
        COMPREPLY=($(compgen -W "$names" -- "$cur"))
        return
    fi
    _tool__cli "$@"
}
complete -F _tool_cli_live -o bashdefault -o default tool-cli
"#;

/// Zsh: the same, around the `_tool-cli` function clap generates. Load with
/// `source <(tool-cli completions zsh)` after `compinit`.
const ZSH_LIVE: &str = r#"# Live server, tool and parameter names (tool-cli __complete asks the daemon; no daemon: none).
_tool_cli_live() {
    local -a positionals names
    local i skip=0
    for ((i = 2; i < CURRENT; i++)); do
        if ((skip)); then skip=0; continue; fi
        case "${words[i]}" in
            @FLAGS_WITH_VALUE@) skip=1 ;;
            -*) ;;
            *) positionals+=("${words[i]}") ;;
        esac
    done
    if [[ " @SUBCOMMANDS@ " == *" ${positionals[1]:-} "* ]] || [[ "${words[CURRENT]}" == -* ]] \
        || ((skip)); then
        _tool-cli "$@"
        return
    fi
    case ${#positionals[@]} in
        0) names=(${(f)"$(tool-cli __complete servers 2>/dev/null)"} @SUBCOMMANDS@)
           compadd -a names ;;
        1) names=(${(f)"$(tool-cli __complete tools "${positionals[1]}" 2>/dev/null)"})
           compadd -a names ;;
        *) names=(${(f)"$(tool-cli __complete params "${positionals[1]}" "${positionals[2]}" 2>/dev/null)"})
           compadd -S '' -a names ;;
    esac
}
compdef _tool_cli_live tool-cli
"#;

/// Fish: extra candidates next to clap's, by position.
const FISH_LIVE: &str = r#"# Live server, tool and parameter names (tool-cli __complete asks the daemon; no daemon: none).
function __tool_cli_positionals
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l skip 0
    for token in $tokens
        if test $skip -eq 1
            set skip 0
            continue
        end
        switch $token
            case @FLAGS_WITH_VALUE@
                set skip 1
            case '-*'
            case '*'
                echo $token
        end
    end
end
function __tool_cli_live
    set -l positionals (__tool_cli_positionals)
    if contains -- "$positionals[1]" @SUBCOMMANDS@
        return
    end
    switch (count $positionals)
        case 0
            tool-cli __complete servers 2>/dev/null
        case 1
            tool-cli __complete tools $positionals[1] 2>/dev/null
        case '*'
            tool-cli __complete params $positionals[1] $positionals[2] 2>/dev/null
    end
end
complete -c tool-cli -f -a '(__tool_cli_live)'
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn words(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| (*word).to_owned()).collect()
    }

    #[test]
    fn requests_parse_and_anything_else_is_nothing() {
        assert_eq!(request(&words(&["servers"])), Request::Servers);
        assert_eq!(
            request(&words(&["tools", "demo"])),
            Request::Tools {
                server: "demo".into()
            }
        );
        assert_eq!(
            request(&words(&["params", "demo", "sql_query"])),
            Request::Params {
                server: "demo".into(),
                tool: "sql_query".into()
            }
        );
        assert_eq!(request(&words(&[])), Request::Nothing);
        assert_eq!(request(&words(&["tools"])), Request::Nothing);
        assert_eq!(request(&words(&["bogus", "x"])), Request::Nothing);
    }

    #[test]
    fn each_script_has_clap_part_and_live_names() {
        for (shell, registration) in [
            (Shell::Bash, "complete -F _tool_cli_live"),
            (Shell::Zsh, "compdef _tool_cli_live tool-cli"),
            (
                Shell::Fish,
                "complete -c tool-cli -f -a '(__tool_cli_live)'",
            ),
        ] {
            let script = script(shell);
            assert!(script.contains(registration), "{shell:?}: {script}");
            assert!(script.contains("tool-cli __complete servers"), "{shell:?}");
            assert!(script.contains("__complete tools"), "{shell:?}");
            // The subcommands and the flags that take a value were filled in from the grammar.
            assert!(!script.contains("@SUBCOMMANDS@"), "{shell:?}");
            assert!(!script.contains("@FLAGS_WITH_VALUE@"), "{shell:?}");
            assert!(script.contains("resource prompt health token"), "{shell:?}");
            assert!(script.contains("--timeout"), "{shell:?}");
            // The hidden helper is never offered as a subcommand.
            assert!(
                !script.contains(" __complete servers __complete"),
                "{shell:?}"
            );
        }
    }

    #[test]
    fn flags_with_a_value_are_the_ones_that_take_one() {
        let flags = flags_with_value();
        for flag in ["--out", "--timeout", "--output", "--args-file"] {
            assert!(flags.contains(&flag.to_owned()), "{flags:?}");
        }
        assert!(!flags.contains(&"--json".to_owned()), "{flags:?}");
    }
}
