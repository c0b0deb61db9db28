//! Where a command's output goes, and what is made safe for a terminal on the way.
//!
//! Three kinds of output, three treatments (see `docs/cli.md`, "Output and terminals"):
//! human renderings (lists, schemas, tables, messages) are always sanitised, since every line of
//! them may carry server-supplied text; JSON (`--json`, structured content) is always lossless,
//! with the characters a terminal could interpret written as `\uXXXX` escapes; a tool's text
//! result is data, passed through untouched to a pipe or a file and sanitised only when stdout is
//! a terminal. Files written with `--out` get the exact bytes.

use std::io::Write;
use std::path::Path;

use serde_json::Value;

use crate::error::Error;
use crate::render;
use crate::sanitize;

/// One piece of a body made of several (`tool-cli chain|many`), each treated by its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    /// A human rendering: always sanitised.
    Rendering(String),
    /// JSON text as `serde_json` wrote it: lossless.
    Json(String),
    /// A tool's text: data, sanitised only for a terminal.
    ResultText(String),
}

/// Where the result body goes: stdout, or the `--out` file with a summary on stdout.
pub(crate) struct Output<'a> {
    pub(crate) json: bool,
    pub(crate) out: Option<&'a Path>,
    pub(crate) stdout: &'a mut dyn Write,
    /// Whether stdout is a terminal (a person reads it) rather than a pipe or a file.
    pub(crate) terminal: bool,
}

impl Output<'_> {
    /// A JSON value, pretty-printed.
    pub(crate) fn emit_json(&mut self, value: &Value) -> Result<(), Error> {
        self.emit_json_text(&render::pretty(value))
    }

    /// JSON text as `serde_json` wrote it.
    pub(crate) fn emit_json_text(&mut self, json: &str) -> Result<(), Error> {
        self.emit_bytes(sanitize::json_for_terminal(json).as_bytes())
    }

    /// A human rendering, built from server-supplied text: always sanitised.
    pub(crate) fn emit_text(&mut self, text: &str) -> Result<(), Error> {
        self.emit_line_ended(&sanitize::text(text))
    }

    /// A tool's (or a resource's) text: data, sanitised only for a terminal.
    pub(crate) fn emit_result_text(&mut self, text: &str) -> Result<(), Error> {
        if self.terminal && self.out.is_none() {
            self.emit_line_ended(&sanitize::text(text))
        } else {
            self.emit_line_ended(text)
        }
    }

    /// Several parts as one body, each on lines of its own and treated by its kind (see
    /// [`Part`]), written at once (so `--out` gets all of them).
    pub(crate) fn emit_parts(&mut self, parts: &[Part]) -> Result<(), Error> {
        let mut body = String::new();
        for part in parts {
            let piece = match part {
                Part::Rendering(text) => sanitize::text(text),
                Part::Json(json) => sanitize::json_for_terminal(json),
                Part::ResultText(text) if self.terminal && self.out.is_none() => {
                    sanitize::text(text)
                }
                Part::ResultText(text) => std::borrow::Cow::Borrowed(text.as_str()),
            };
            body.push_str(&piece);
            if !piece.is_empty() && !piece.ends_with('\n') {
                body.push('\n');
            }
        }
        self.emit_bytes(body.as_bytes())
    }

    /// `--output raw`: these bytes exactly, no newline added and nothing sanitised, to the
    /// `--out` file or stdout.
    pub(crate) fn emit_raw(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.emit_bytes(bytes)
    }

    fn emit_line_ended(&mut self, text: &str) -> Result<(), Error> {
        if text.is_empty() || text.ends_with('\n') {
            self.emit_bytes(text.as_bytes())
        } else {
            self.emit_bytes(format!("{text}\n").as_bytes())
        }
    }

    fn emit_bytes(&mut self, bytes: &[u8]) -> Result<(), Error> {
        match self.out {
            Some(path) => self.write_file(path, bytes),
            None => self.write_stdout(bytes),
        }
    }

    /// Writes `bytes` exactly to `path` and a one-line summary to stdout.
    pub(crate) fn write_file(&mut self, path: &Path, bytes: &[u8]) -> Result<(), Error> {
        std::fs::write(path, bytes).map_err(|source| Error::Io {
            action: format!("write {}", path.display()),
            source,
        })?;
        let summary = format!("wrote {} bytes to {}\n", bytes.len(), path.display());
        self.write_stdout(sanitize::text(&summary).as_bytes())
    }

    /// A closed pipe (`tool-cli ... | head`) is not an error worth reporting.
    fn write_stdout(&mut self, bytes: &[u8]) -> Result<(), Error> {
        match self
            .stdout
            .write_all(bytes)
            .and_then(|()| self.stdout.flush())
        {
            Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Io {
                action: "write to stdout".to_owned(),
                source: error,
            }),
            _ => Ok(()),
        }
    }
}

/// `tool-cli: warning: ...` on stderr, sanitised (it may quote a server).
pub(crate) fn warn(message: &str) {
    eprintln!("tool-cli: warning: {}", sanitize::text(message));
}

/// `tool-cli: note: ...` on stderr, sanitised.
pub(crate) fn note(message: &str) {
    eprintln!("tool-cli: note: {}", sanitize::text(message));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn output(terminal: bool, json: bool, stdout: &mut Vec<u8>) -> Output<'_> {
        Output {
            json,
            out: None,
            stdout,
            terminal,
        }
    }

    const HOSTILE: &str = "ok\u{1b}]0;pwned\u{7}\u{1b}[2J\u{202e}x";

    #[test]
    fn renderings_are_always_sanitised() {
        for terminal in [false, true] {
            let mut stdout = Vec::new();
            output(terminal, false, &mut stdout)
                .emit_text(HOSTILE)
                .unwrap();
            assert_eq!(
                String::from_utf8(stdout).unwrap(),
                "ok^[]0;pwned^G^[[2J<U+202E>x\n"
            );
        }
    }

    #[test]
    fn text_results_are_raw_in_a_pipe_and_sanitised_on_a_terminal() {
        let mut piped = Vec::new();
        output(false, false, &mut piped)
            .emit_result_text(HOSTILE)
            .unwrap();
        assert_eq!(piped, format!("{HOSTILE}\n").into_bytes());
        let mut terminal = Vec::new();
        output(true, false, &mut terminal)
            .emit_result_text(HOSTILE)
            .unwrap();
        assert_eq!(
            String::from_utf8(terminal).unwrap(),
            "ok^[]0;pwned^G^[[2J<U+202E>x\n"
        );
    }

    #[test]
    fn json_is_lossless_and_inert() {
        let value = json!({"text": HOSTILE, "c1": "\u{9b}1m"});
        let mut stdout = Vec::new();
        output(true, true, &mut stdout).emit_json(&value).unwrap();
        let printed = String::from_utf8(stdout).unwrap();
        assert!(
            !printed.contains('\u{1b}') && !printed.contains('\u{9b}'),
            "{printed}"
        );
        assert!(!printed.contains('\u{202e}'), "{printed}");
        assert_eq!(serde_json::from_str::<Value>(&printed).unwrap(), value);
    }

    #[test]
    fn parts_are_each_treated_by_their_kind() {
        let parts = [
            Part::Rendering(format!("== step 0: {HOSTILE}")),
            Part::Json(serde_json::to_string(&json!({"t": HOSTILE})).unwrap()),
            Part::ResultText(HOSTILE.to_owned()),
        ];
        let mut piped = Vec::new();
        output(false, false, &mut piped).emit_parts(&parts).unwrap();
        let piped = String::from_utf8(piped).unwrap();
        let lines: Vec<&str> = piped.lines().collect();
        assert_eq!(lines[0], "== step 0: ok^[]0;pwned^G^[[2J<U+202E>x");
        assert!(!lines[1].contains('\u{202e}') && lines[1].contains("\\u202e"));
        assert_eq!(lines[2], HOSTILE);
        let mut terminal = Vec::new();
        output(true, false, &mut terminal)
            .emit_parts(&parts)
            .unwrap();
        let terminal = String::from_utf8(terminal).unwrap();
        assert_eq!(
            terminal.lines().nth(2),
            Some("ok^[]0;pwned^G^[[2J<U+202E>x")
        );
    }

    #[test]
    fn files_get_the_exact_bytes() {
        let directory = std::env::temp_dir().join(format!("tool-cli-out-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let path = directory.join("result.txt");
        let mut stdout = Vec::new();
        let mut to_file = Output {
            json: false,
            out: Some(&path),
            stdout: &mut stdout,
            terminal: true,
        };
        to_file.emit_result_text(HOSTILE).unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            format!("{HOSTILE}\n").into_bytes()
        );
        let summary = String::from_utf8(stdout).unwrap();
        assert!(summary.starts_with("wrote "), "{summary}");
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
