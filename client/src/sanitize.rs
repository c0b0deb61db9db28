//! Making server-supplied text safe to show on a terminal.
//!
//! Tool names, descriptions, resource names and server errors come from MCP servers the user
//! does not control. Printed raw, an escape sequence in them can retitle the terminal, clear the
//! screen, hide text or (with some terminals) type into the shell; a bidi override can make a
//! line read differently from what it says. So every human-readable line built from such text
//! goes through [`text`] (or [`line`] for a single-line field) at the edge where it is printed:
//! control characters become visible `^X` / `<U+XXXX>` notations, so nothing is hidden and
//! nothing is interpreted.
//!
//! What is *data* is treated differently (see `docs/cli.md`): a tool's text result written to a
//! pipe or a file is passed through untouched, and sanitised only when stdout is a terminal;
//! `--json` output stays lossless JSON, with the characters a terminal could interpret written
//! as `\uXXXX` escapes ([`json_for_terminal`]), which parse back to the very same value.

use std::borrow::Cow;

/// Whether `c` must not reach a terminal as is. Newline and tab are decided by the caller.
fn is_dangerous(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// The Unicode bidirectional formatting characters (embeddings, overrides, isolates, marks):
/// they reorder what follows them, so a line can display differently from its bytes.
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

/// The visible stand-in for a dangerous character: caret notation for C0 controls and DEL
/// (`^[` for ESC, `^@` for NUL, as `cat -v` shows them), `<U+XXXX>` for the others.
fn push_visible(out: &mut String, c: char) {
    match c {
        '\u{0}'..='\u{1f}' => {
            out.push('^');
            out.push(char::from(b'@' + c as u8));
        }
        '\u{7f}' => out.push_str("^?"),
        other => out.push_str(&format!("<U+{:04X}>", u32::from(other))),
    }
}

fn sanitize(input: &str, keep_newlines: bool) -> Cow<'_, str> {
    let keep = |c: char| keep_newlines && (c == '\n' || c == '\t');
    if !input.chars().any(|c| is_dangerous(c) && !keep(c)) {
        return Cow::Borrowed(input);
    }
    let mut out = String::with_capacity(input.len() + 8);
    for c in input.chars() {
        if is_dangerous(c) && !keep(c) {
            push_visible(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Multi-line text for a terminal: every control character except newline and tab, and every
/// bidi control, made visible.
pub(crate) fn text(input: &str) -> Cow<'_, str> {
    sanitize(input, true)
}

/// One line for a terminal (a name, a list entry): like [`text`], and newlines and tabs are made
/// visible too, so a name cannot forge a line of its own.
pub(crate) fn line(input: &str) -> Cow<'_, str> {
    sanitize(input, false)
}

/// JSON text (as `serde_json` writes it) with the characters a terminal could interpret and
/// that JSON allows raw (DEL, C1 controls, bidi controls) written as `\uXXXX` escapes. C0
/// controls are already escaped by `serde_json`. Such characters can only occur inside JSON
/// strings, where a raw character and its escape mean the same, so the value is unchanged.
pub(crate) fn json_for_terminal(json: &str) -> Cow<'_, str> {
    let escape =
        |c: char| c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) || is_bidi_control(c);
    if !json.chars().any(escape) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if escape(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let plain = "sql_query  Run one read-only SQL SELECT — über 3 µs\n\tnext";
        assert!(matches!(text(plain), Cow::Borrowed(_)));
        assert_eq!(text(plain), plain);
        assert!(matches!(line("sql_query"), Cow::Borrowed(_)));
    }

    #[test]
    fn escape_sequences_become_visible() {
        // Window title (OSC), screen clear (CSI), bell, NUL, DEL.
        let hostile = "a\u{1b}]0;pwned\u{7}b\u{1b}[2J\u{1b}[Hc\u{0}d\u{7f}e";
        assert_eq!(text(hostile), "a^[]0;pwned^Gb^[[2J^[[Hc^@d^?e");
        // A carriage return would let a line overwrite itself.
        assert_eq!(text("safe\rEVIL"), "safe^MEVIL");
    }

    #[test]
    fn c1_and_bidi_controls_become_visible() {
        // U+009B is a one-character CSI for terminals that honour C1 controls.
        assert_eq!(text("x\u{9b}31mred"), "x<U+009B>31mred");
        assert_eq!(
            text("access\u{202E}\u{2066}level"),
            "access<U+202E><U+2066>level"
        );
        assert_eq!(text("\u{200F}\u{061C}"), "<U+200F><U+061C>");
    }

    #[test]
    fn line_also_shows_newlines_and_tabs() {
        assert_eq!(text("a\nb\tc"), "a\nb\tc");
        assert_eq!(line("a\nb\tc"), "a^Jb^Ic");
    }

    #[test]
    fn json_for_terminal_is_lossless() {
        let value = json!({"s": "a\u{1b}[2J\u{9b}b\u{202e}c\u{7f}", "n": 1});
        let raw = serde_json::to_string(&value).unwrap();
        let safe = json_for_terminal(&raw);
        assert!(
            !safe.chars().any(|c| is_dangerous(c) && c != '\n'),
            "{safe}"
        );
        assert!(safe.contains("\\u001b"), "serde_json escapes C0: {safe}");
        assert!(safe.contains("\\u009b") && safe.contains("\\u202e") && safe.contains("\\u007f"));
        assert_eq!(serde_json::from_str::<Value>(&safe).unwrap(), value);
        let plain = r#"{"a":"b"}"#;
        assert!(matches!(json_for_terminal(plain), Cow::Borrowed(_)));
    }
}
