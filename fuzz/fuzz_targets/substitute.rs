//! `config::substitute` (`${VAR}` in `command`, `args`, `env`, `headers` and `url`; the shell's
//! `${VAR:-default}` and `${VAR-default}`; `$$` is a literal `$`) against a reference model
//! written from its documentation. The two must agree on every input: the same
//! output, or both an error.
//!
//! The client's argument parser (`client/src/args.rs`) would be the natural second target here,
//! but the client is a binary crate with `pub(crate)` items, so a fuzz target cannot reach it.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tool_cli_daemon::config::substitute;

fn environment(name: &str) -> Option<String> {
    match name {
        "A" => Some("alpha".into()),
        "B_2" => Some(String::new()),
        "DOLLAR" => Some("$".into()),
        "NESTED" => Some("${A}".into()),
        "_U" => Some("é".into()),
        _ => None,
    }
}

/// The documented rules, char by char: `$$` → `$`; `${NAME}` with NAME of ASCII letters, digits
/// and `_`, not starting with a digit, → its value, or an error when unset; `${NAME:-default}` →
/// the default when unset or empty, `${NAME-default}` → the default when unset (the default as
/// written, up to the first `}`); an unterminated or invalid `${…}`, or a `TOOL_CLI_*` name (the
/// daemon's own), → an error; any other `$` stays.
fn model(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '$' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        match chars.get(i + 1) {
            Some('$') => {
                out.push('$');
                i += 2;
            }
            Some('{') => {
                let close = chars[i + 2..].iter().position(|&c| c == '}')? + i + 2;
                let body: String = chars[i + 2..close].iter().collect();
                // The name ends at the first ':' or '-'; ":-" or "-" starts a default.
                let (name, default, when_empty) = match body.find([':', '-']) {
                    Some(at) if body[at..].starts_with(":-") => {
                        (&body[..at], Some(&body[at + 2..]), true)
                    }
                    Some(at) if body[at..].starts_with('-') => {
                        (&body[..at], Some(&body[at + 1..]), false)
                    }
                    _ => (body.as_str(), None, false),
                };
                let valid = !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !name.starts_with(|c: char| c.is_ascii_digit());
                // The daemon's own TOOL_CLI_* variables are never substituted, default or not.
                if !valid || name.starts_with("TOOL_CLI_") {
                    return None;
                }
                match (environment(name), default) {
                    (Some(value), Some(default)) if value.is_empty() && when_empty => {
                        out.push_str(default)
                    }
                    (Some(value), _) => out.push_str(&value),
                    (None, Some(default)) => out.push_str(default),
                    (None, None) => return None,
                }
                i = close + 1;
            }
            _ => {
                out.push('$');
                i += 1;
            }
        }
    }
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let actual = substitute(text, &environment);
    let expected = model(text);
    assert_eq!(
        actual.as_ref().ok(),
        expected.as_ref(),
        "substitute({text:?}) = {actual:?}"
    );
    if !text.contains('$') {
        assert_eq!(actual.as_deref(), Ok(text));
    }
});
