//! Makes a formatted log event safe to write: one event is one line, and nothing in it drives
//! the terminal the daemon may be logging to.
//!
//! Log events carry text that anyone can choose: a tool or server name a client sent, an error
//! that quotes them, a line an MCP server wrote to stderr. Written raw, a newline in such text
//! forges a whole log line (with its own timestamp and level), a carriage return overwrites the
//! line on a terminal, and escape sequences retitle or clear the terminal or hide text. So every
//! control character of an event is written escaped (`\n`, `\r`, `\u{1b}`), as Rust's `Debug`
//! writes them, except the newline that ends the event, tabs, and, when the log goes to a
//! terminal in colour, the colour codes tracing's formatter itself writes (SGR sequences whose
//! parameters are plain colours and weights; a "conceal" or any other sequence is escaped).
//! Unicode bidirectional controls, which can reorder what a reader sees, are escaped too.
//!
//! Pure text in, text out: [`crate::redact::LogWriter`] does the writing.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` (one formatted event) with every control character but its final newline escaped;
/// `keep_colours` keeps the formatter's own colour codes (a log going to a terminal).
pub(crate) fn neutralize(text: &str, keep_colours: bool) -> Cow<'_, str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    if !body.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = body;
    while let Some(c) = rest.chars().next() {
        if c == '\u{1b}'
            && keep_colours
            && let Some(length) = colour_code_length(rest)
        {
            out.push_str(&rest[..length]);
            rest = &rest[length..];
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    if body.len() < text.len() {
        out.push('\n');
    }
    Cow::Owned(out)
}

/// C0 controls but tab, DEL, C1 controls, and the bidirectional formatting characters.
fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The length of the SGR colour sequence at the start of `text` (`ESC [ 2 m`, `ESC [ 0 ; 32 m`),
/// if it is one made only of the parameters a log formatter uses: reset, bold, dim, italic,
/// underline, their resets, and the sixteen foreground colours.
fn colour_code_length(text: &str) -> Option<usize> {
    let parameters = text.strip_prefix("\u{1b}[")?;
    let end = parameters.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
    if !parameters[end..].starts_with('m') {
        return None;
    }
    let allowed = parameters[..end].split(';').all(|parameter| {
        parameter.is_empty()
            || parameter
                .parse::<u8>()
                .is_ok_and(|value| matches!(value, 0..=4 | 22..=24 | 30..=37 | 39 | 90..=97))
    });
    allowed.then_some(2 + end + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_are_untouched() {
        let line = "2026-01-01T00:00:00Z  INFO call failed\ttool=echo é ✓\n";
        assert!(matches!(neutralize(line, false), Cow::Borrowed(_)));
        assert!(matches!(neutralize("no newline", true), Cow::Borrowed(_)));
    }

    #[test]
    fn an_event_stays_one_line() {
        assert_eq!(
            neutralize("INFO tool=x\n2026 ERROR forged\rover\n", false),
            "INFO tool=x\\n2026 ERROR forged\\rover\n"
        );
        assert_eq!(neutralize("a\nb", false), "a\\nb");
    }

    #[test]
    fn escape_sequences_and_other_controls_are_escaped() {
        assert_eq!(
            neutralize("t\u{1b}]0;pwned\u{7}\u{1b}[2J\0\u{7f}\u{9b}31m\n", false),
            "t\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{0}\\u{7f}\\u{9b}31m\n"
        );
        assert_eq!(
            neutralize("evil\u{202e}txt.exe\u{2066}", false),
            "evil\\u{202e}txt.exe\\u{2066}"
        );
    }

    #[test]
    fn only_the_formatters_colour_codes_survive_and_only_in_colour() {
        let coloured = "\u{1b}[2m2026\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m \u{1b}[1;31mx\u{1b}[0m\n";
        assert_eq!(neutralize(coloured, true), coloured);
        assert_eq!(
            neutralize("\u{1b}[2mtime\u{1b}[0m\n", false),
            "\\u{1b}[2mtime\\u{1b}[0m\n"
        );
        // Conceal (8), cursor moves and screen clears are not colours.
        assert_eq!(
            neutralize("\u{1b}[8mhidden\u{1b}[2J\u{1b}[1A\u{1b}[\n", true),
            "\\u{1b}[8mhidden\\u{1b}[2J\\u{1b}[1A\\u{1b}[\n"
        );
    }
}
