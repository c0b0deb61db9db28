//! `${VAR}` in the config: a variable of the daemon's environment, with the shell's defaults
//! (`${VAR:-default}` when unset or empty, `${VAR-default}` when unset) that Claude Code's
//! `.mcp.json` uses, and `$$` for a literal `$`. The daemon's own `TOOL_CLI_*` variables are never
//! substituted: `${TOOL_CLI_TOKEN}` would put the owner token on a server's command line.

/// Why a `${…}` reference in the config cannot be substituted. Each message says what would be
/// right; the caller names the member it was found in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VariableError {
    /// A `${` without its `}`.
    #[error("unterminated \"${{\" in \"{text}\"; expected ${{NAME}} or ${{NAME:-default}}")]
    Unterminated {
        /// The whole text the reference is in.
        text: String,
    },
    /// A reference whose name is not a variable name.
    #[error(
        "\"${{{reference}}}\" is not a valid variable reference; expected ${{NAME}} with \
         letters, digits and '_', or ${{NAME:-default}}"
    )]
    InvalidReference {
        /// What is between the braces.
        reference: String,
    },
    /// One of the daemon's own `TOOL_CLI_*` variables.
    #[error(
        "references ${{{name}}}: {prefix}* variables are the daemon's own (TOOL_CLI_TOKEN is its \
         owner token) and are never substituted into the config, where they would reach a \
         command line, a server's environment or its requests; remove it (a server that must \
         call the daemon can be given a scoped token from `tool-cli token mint`)",
        prefix = tool_cli_protocol::env::PREFIX
    )]
    DaemonVariable {
        /// The variable.
        name: String,
    },
    /// A variable that is not set, without a default.
    #[error(
        "references ${{{name}}}, which is not set in the daemon's environment \
         (${{{name}:-default}} gives a default)"
    )]
    Unset {
        /// The variable.
        name: String,
    },
}

/// Replaces every `${VAR}` with the variable's value. An unset variable is an error rather than
/// an empty string: an empty API key fails later, far from its cause. `${VAR:-default}` gives
/// `default` when `VAR` is unset or empty, `${VAR-default}` when it is unset; a default is taken
/// as written (no `${…}` inside it). `$$` is a literal `$`.
pub fn substitute(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, VariableError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('$') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        if let Some(after_dollar) = after.strip_prefix('$') {
            out.push('$');
            rest = after_dollar;
        } else if let Some(body) = after.strip_prefix('{') {
            let Some(end) = body.find('}') else {
                return Err(VariableError::Unterminated {
                    text: text.to_owned(),
                });
            };
            let reference = &body[..end];
            let (name, default) = split_default(reference);
            let valid = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit());
            if !valid {
                return Err(VariableError::InvalidReference {
                    reference: reference.to_owned(),
                });
            }
            if name.starts_with(tool_cli_protocol::env::PREFIX) {
                return Err(VariableError::DaemonVariable {
                    name: name.to_owned(),
                });
            }
            match (env(name), default) {
                (Some(value), Some(Default::IfUnsetOrEmpty(default))) if value.is_empty() => {
                    out.push_str(default);
                }
                (Some(value), _) => out.push_str(&value),
                (None, Some(Default::IfUnsetOrEmpty(default) | Default::IfUnset(default))) => {
                    out.push_str(default);
                }
                (None, None) => {
                    return Err(VariableError::Unset {
                        name: name.to_owned(),
                    });
                }
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// A default a reference gives, and when it applies.
enum Default<'a> {
    /// `${VAR:-default}`.
    IfUnsetOrEmpty(&'a str),
    /// `${VAR-default}`.
    IfUnset(&'a str),
}

/// `NAME`, `NAME:-default` or `NAME-default` split at the first `:-` or `-`.
fn split_default(reference: &str) -> (&str, Option<Default<'_>>) {
    match reference.find([':', '-']) {
        Some(at) if reference[at..].starts_with(":-") => (
            &reference[..at],
            Some(Default::IfUnsetOrEmpty(&reference[at + 2..])),
        ),
        Some(at) if reference[at..].starts_with('-') => (
            &reference[..at],
            Some(Default::IfUnset(&reference[at + 1..])),
        ),
        _ => (reference, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "API_KEY" => Some("secret".to_owned()),
            "PORT" => Some("8080".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn defaults_apply_as_in_the_shell() {
        assert_eq!(substitute("${PORT:-9000}", &env).unwrap(), "8080");
        assert_eq!(substitute("${NOPE:-9000}", &env).unwrap(), "9000");
        assert_eq!(substitute("${EMPTY:-9000}", &env).unwrap(), "9000");
        assert_eq!(substitute("${EMPTY-9000}", &env).unwrap(), "");
        assert_eq!(substitute("${NOPE-9000}", &env).unwrap(), "9000");
        assert_eq!(
            substitute("http://${HOST:-127.0.0.1}:${PORT:-1}/mcp", &env).unwrap(),
            "http://127.0.0.1:8080/mcp"
        );
        // An empty default, and one with spaces and punctuation, as written.
        assert_eq!(substitute("[${NOPE:-}]", &env).unwrap(), "[]");
        assert_eq!(
            substitute("${NOPE:-Bearer a-b:c d}", &env).unwrap(),
            "Bearer a-b:c d"
        );
        // A bad name is still refused, with the form that would be right.
        let error = substitute("${1X:-a}", &env).unwrap_err().to_string();
        assert!(error.contains("${NAME:-default}"), "{error}");
        let error = substitute("${MISSING}", &env).unwrap_err();
        assert_eq!(
            error.to_string(),
            "references ${MISSING}, which is not set in the daemon's environment \
             (${MISSING:-default} gives a default)"
        );
        assert_eq!(
            substitute("${TOOL_CLI_TOKEN}", &env),
            Err(VariableError::DaemonVariable {
                name: "TOOL_CLI_TOKEN".to_owned()
            })
        );
        assert_eq!(
            substitute("a ${B", &env).unwrap_err().to_string(),
            "unterminated \"${\" in \"a ${B\"; expected ${NAME} or ${NAME:-default}"
        );
    }
}
