//! The checksum chain of the recording formats: every line starts with a `sum` member, the
//! SHA-256 of the previous line's sum, a newline, and the line's own text without its `sum`.
//!
//! A line changed after recording, a line removed or moved, or lines from another recording
//! spliced in all break the chain at a line the loader can name; the end marker (a last line
//! with the count) catches a file cut short. This is integrity against accidents and naive
//! edits (a hand-edited fixture, a truncated copy), not a signature: whoever wants to forge a
//! recording can recompute the sums.

use std::fmt::Write as _;

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

const PREFIX: &str = "{\"sum\":\"";
const SUM_HEX: usize = 64;

/// The running chain.
#[derive(Debug, Clone, Default)]
pub(crate) struct Chain {
    previous: String,
}

/// Why a line does not continue the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ChainError {
    /// The line does not start with a `sum` member.
    NoSum,
    /// The sum does not match the line.
    Mismatch,
}

impl Chain {
    fn digest(&self, body: &str) -> String {
        let mut hasher = Sha256::new();
        hasher.update(self.previous.as_bytes());
        hasher.update(b"\n");
        hasher.update(body.as_bytes());
        let mut hex = String::with_capacity(SUM_HEX);
        for byte in hasher.finalize() {
            let _ = write!(hex, "{byte:02x}");
        }
        hex
    }

    /// The line (without a newline) for the object `members`, which must not hold `sum`.
    pub(crate) fn seal(&mut self, members: &Map<String, Value>) -> String {
        let body = Value::Object(members.clone()).to_string();
        let sum = self.digest(&body);
        let mut line = String::with_capacity(body.len() + SUM_HEX + 10);
        line.push_str(PREFIX);
        line.push_str(&sum);
        line.push('"');
        if body.len() > 2 {
            line.push(',');
        }
        line.push_str(&body[1..]);
        self.previous = sum;
        line
    }

    /// Checks `line` against the chain and returns its text without the `sum` member.
    pub(crate) fn verify(&mut self, line: &str) -> Result<String, ChainError> {
        let rest = line.strip_prefix(PREFIX).ok_or(ChainError::NoSum)?;
        if rest.len() < SUM_HEX + 1 {
            return Err(ChainError::NoSum);
        }
        let (sum, after) = rest.split_at(SUM_HEX);
        if !sum.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return Err(ChainError::NoSum);
        }
        let body = match after.strip_prefix("\",") {
            Some(members) => format!("{{{members}"),
            None => match after.strip_prefix("\"}") {
                Some("") => "{}".to_owned(),
                _ => return Err(ChainError::NoSum),
            },
        };
        if self.digest(&body) != sum {
            return Err(ChainError::Mismatch);
        }
        self.previous = sum.to_owned();
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn sealed_lines_verify_in_order() {
        let mut writer = Chain::default();
        let first = writer.seal(&object(json!({"a": 1})));
        let second = writer.seal(&object(json!({"b": "two"})));
        assert!(first.starts_with("{\"sum\":\""));
        let mut reader = Chain::default();
        assert_eq!(reader.verify(&first).unwrap(), r#"{"a":1}"#);
        assert_eq!(reader.verify(&second).unwrap(), r#"{"b":"two"}"#);
    }

    #[test]
    fn an_edited_dropped_or_reordered_line_breaks_the_chain() {
        let mut writer = Chain::default();
        let lines: Vec<String> = (0..3)
            .map(|index| writer.seal(&object(json!({"n": index}))))
            .collect();
        let mut reader = Chain::default();
        reader.verify(&lines[0]).unwrap();
        assert_eq!(
            reader.clone().verify(&lines[1].replace("1", "7")),
            Err(ChainError::Mismatch)
        );
        assert_eq!(reader.clone().verify(&lines[2]), Err(ChainError::Mismatch));
        assert_eq!(reader.verify("{\"n\":1}"), Err(ChainError::NoSum));
    }
}
