//! Answers too large to accept, without ending the connection that carried them.
//!
//! A stdio server's stdout is one stream shared by every caller, so a line over the size limit
//! used to end the connection, and with it every other caller's calls in flight. Instead the
//! reader skips such a line while reading it ([`OversizedLine`]: it keeps no more than a few
//! bytes of it, whatever its length) and learns from the bytes going past which request it
//! answers: the top-level `id` of a JSON-RPC response, wherever in the object it stands (some
//! SDKs write it last). That request alone fails, with `resultTooLarge`; the connection and the
//! other calls on it go on. [`OversizedAnswers`] keeps the ids whose answers were dropped (and
//! their sizes) until the request that waits for each reads it, for stdio and Streamable HTTP
//! alike.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

/// Most ids remembered at once; a request abandoned before its failure was read leaves its id
/// behind, so the set is emptied rather than allowed to grow.
const MAX_REMEMBERED: usize = 64;

/// A line longer than the limit times this is not skipped to its end: it is no answer (nothing
/// legitimate is sixty-four times the largest message accepted) but a server writing without
/// newlines, and the connection ends as before.
pub(crate) const SKIP_CEILING_FACTOR: usize = 64;

/// The request ids whose answers were too large, with the size seen, until the request that
/// waits for each reads it.
pub(crate) struct OversizedAnswers {
    /// The limit they exceeded, in bytes.
    pub(crate) limit_bytes: usize,
    /// Keyed by [`super::raw_results::id_key`]; the answer's size when it was read to its end.
    ids: Mutex<HashMap<String, Option<u64>>>,
}

impl OversizedAnswers {
    pub(crate) fn new(limit_bytes: usize) -> OversizedAnswers {
        OversizedAnswers {
            limit_bytes,
            ids: Mutex::new(HashMap::new()),
        }
    }

    /// Notes that the answer to request `id` was dropped for its size (`bytes`, when known).
    pub(crate) fn record(&self, id: String, bytes: Option<u64>) {
        let mut ids = self.ids.lock().unwrap();
        if ids.len() >= MAX_REMEMBERED {
            ids.clear();
        }
        ids.insert(id, bytes);
    }

    /// Whether the answer to request `id` was too large, and its size if known; forgets it.
    pub(crate) fn take(&self, id: &str) -> Option<Option<u64>> {
        self.ids.lock().unwrap().remove(id)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.ids.lock().unwrap().len()
    }
}

/// Argument names (lower case, without `_` and `-`) that page or bound a tool's answer.
const PAGING_ARGUMENTS: &[&str] = &[
    "limit",
    "offset",
    "cursor",
    "page",
    "pagesize",
    "perpage",
    "pagetoken",
    "maxresults",
    "maxitems",
    "maxrows",
    "maxbytes",
    "maxlength",
    "top",
    "skip",
    "after",
    "before",
    "start",
    "startindex",
];

/// How to get an answer that fits, for a request to `method` (a tool, or an MCP method) whose
/// answer was too large: the paging arguments the tool declares, when it declares any.
pub(crate) fn how_to_ask_for_less(method: &str, input_schema: Option<&Value>) -> String {
    const RAISE: &str = "or have the daemon started with a higher --max-message-bytes";
    match method {
        "resources/read" => {
            return format!(
                "read a smaller resource (or a part of it, if the server offers that), {RAISE}"
            );
        }
        "prompts/get" => return format!("render the prompt with smaller arguments, {RAISE}"),
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
            return format!("the server's listing does not fit one message; {RAISE}");
        }
        _ => {}
    }
    let paging: Vec<&str> = input_schema
        .and_then(|schema| schema.get("properties"))
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .keys()
                .filter(|name| {
                    let folded: String = name
                        .chars()
                        .filter(|c| *c != '_' && *c != '-')
                        .flat_map(char::to_lowercase)
                        .collect();
                    PAGING_ARGUMENTS.contains(&folded.as_str())
                })
                .map(String::as_str)
                .collect()
        })
        .unwrap_or_default();
    if paging.is_empty() {
        format!(
            "ask for less in one call: a narrower query (fewer rows or columns, a LIMIT, a \
             filter), then the rest in further calls, {RAISE}"
        )
    } else {
        format!(
            "ask for less in one call: the tool takes {} to page its answer; or narrow the \
             query (fewer rows or columns, a LIMIT), {RAISE}",
            paging
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// What an oversized line was, once skipped to its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SkippedLine {
    /// The line's length, its newline not counted.
    pub(crate) bytes: u64,
    /// The request it answers: the `id` of a JSON-RPC response (an object with an `id`, a
    /// `result` or an `error`, and no `method`), as [`super::raw_results::id_key`] writes it.
    /// `None` for anything else (a request or notification of the server's, not JSON at all).
    pub(crate) answers: Option<ResponseId>,
}

/// The id of the request an oversized response answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ResponseId {
    /// A number id (ours are all numbers): the value itself.
    Number(i64),
    /// Any other id, as the JSON text of the id (`"\"abc\""`).
    Other(String),
}

impl ResponseId {
    /// The key `raw_results::id_key` makes of the same id.
    pub(crate) fn key(&self) -> String {
        match self {
            ResponseId::Number(number) => number.to_string(),
            ResponseId::Other(text) => text.clone(),
        }
    }
}

/// The longest id (as JSON text) that is kept; ours are at most 20 digits.
const MAX_ID_BYTES: usize = 128;

/// The longest top-level key that is kept: long enough for the keys that matter.
const MAX_KEY_BYTES: usize = 8;

/// Where the scanner is within the top-level object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Before the first byte that is not white space.
    Start,
    /// A member's key (or the end of the object).
    Key,
    /// The `:` after a key.
    Colon,
    /// A member's value.
    Value,
    /// A scalar value (number, `true`, `false`, `null`) running on.
    Scalar,
    /// A `,` or the end of the object.
    CommaOrEnd,
    /// The object has ended, or the line is not an object at all: nothing more is learnt.
    Done,
}

/// Which top-level key the current member has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Id,
    Method,
    Result,
    Error,
    Other,
}

/// Reads an over-long line as it goes past, keeping only what says which request it answers:
/// a small JSON tokenizer that follows strings and nesting, and looks at the top-level members
/// only. It never holds more than [`MAX_ID_BYTES`] of the line.
#[derive(Debug)]
pub(crate) struct OversizedLine {
    bytes: u64,
    expect: Expect,
    /// Nesting below the top-level object (0: between its members).
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The key being read, while it is short enough to matter.
    key_text: Vec<u8>,
    key_too_long: bool,
    key: Key,
    /// The id's text while it is read.
    id_text: Option<Vec<u8>>,
    id: Option<Vec<u8>>,
    has_method: bool,
    has_outcome: bool,
}

impl OversizedLine {
    pub(crate) fn new() -> OversizedLine {
        OversizedLine {
            bytes: 0,
            expect: Expect::Start,
            depth: 0,
            in_string: false,
            escaped: false,
            key_text: Vec::new(),
            key_too_long: false,
            key: Key::Other,
            id_text: None,
            id: None,
            has_method: false,
            has_outcome: false,
        }
    }

    /// How many bytes of the line have gone past.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Takes the next bytes of the line (no newline among them).
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        self.bytes += chunk.len() as u64;
        if self.expect == Expect::Done {
            return;
        }
        for &byte in chunk {
            self.step(byte);
            if self.expect == Expect::Done {
                return;
            }
        }
    }

    /// What the line was.
    pub(crate) fn finish(mut self) -> SkippedLine {
        // A number id at the very end of an unterminated line is still whole.
        if self.expect == Expect::Scalar {
            self.end_scalar();
        }
        let is_response = !self.has_method && self.has_outcome;
        let answers = self
            .id
            .filter(|_| is_response)
            .and_then(|text| serde_json::from_slice::<Value>(&text).ok())
            .and_then(|id| match id {
                Value::Number(number) => match number.as_i64() {
                    Some(number) => Some(ResponseId::Number(number)),
                    None => Some(ResponseId::Other(number.to_string())),
                },
                Value::String(_) => Some(ResponseId::Other(id.to_string())),
                _ => None,
            });
        SkippedLine {
            bytes: self.bytes,
            answers,
        }
    }

    fn step(&mut self, byte: u8) {
        if self.in_string {
            self.string_byte(byte);
            return;
        }
        if self.depth > 0 {
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        self.expect = Expect::CommaOrEnd;
                    }
                }
                _ => {}
            }
            return;
        }
        let blank = byte.is_ascii_whitespace();
        match self.expect {
            Expect::Start => match byte {
                _ if blank => {}
                b'{' => self.expect = Expect::Key,
                _ => self.expect = Expect::Done,
            },
            Expect::Key => match byte {
                _ if blank => {}
                b'"' => {
                    self.in_string = true;
                    self.key_text.clear();
                    self.key_too_long = false;
                }
                _ => self.expect = Expect::Done,
            },
            Expect::Colon => match byte {
                _ if blank => {}
                b':' => self.expect = Expect::Value,
                _ => self.expect = Expect::Done,
            },
            Expect::Value => {
                match self.key {
                    Key::Method => self.has_method = true,
                    Key::Result | Key::Error => self.has_outcome = true,
                    Key::Id | Key::Other => {}
                }
                match byte {
                    _ if blank => {}
                    b'"' => {
                        self.in_string = true;
                        if self.key == Key::Id {
                            self.id_text = Some(vec![byte]);
                        }
                    }
                    b'{' | b'[' => self.depth = 1,
                    _ => {
                        self.expect = Expect::Scalar;
                        if self.key == Key::Id {
                            self.id_text = Some(vec![byte]);
                        }
                    }
                }
            }
            Expect::Scalar => {
                if blank || byte == b',' || byte == b'}' {
                    self.end_scalar();
                    self.expect = Expect::CommaOrEnd;
                    self.step(byte);
                } else {
                    self.keep_id_byte(byte);
                }
            }
            Expect::CommaOrEnd => match byte {
                _ if blank => {}
                b',' => self.expect = Expect::Key,
                _ => self.expect = Expect::Done,
            },
            Expect::Done => {}
        }
    }

    /// A byte inside a string: a key, a value of the top-level object, or anything nested.
    fn string_byte(&mut self, byte: u8) {
        let closing = !self.escaped && byte == b'"';
        self.escaped = !self.escaped && byte == b'\\';
        if self.depth > 0 {
            if closing {
                self.in_string = false;
            }
            return;
        }
        match self.expect {
            Expect::Key if closing => {
                self.in_string = false;
                self.key = if self.key_too_long {
                    Key::Other
                } else {
                    match self.key_text.as_slice() {
                        b"id" => Key::Id,
                        b"method" => Key::Method,
                        b"result" => Key::Result,
                        b"error" => Key::Error,
                        _ => Key::Other,
                    }
                };
                self.expect = Expect::Colon;
            }
            Expect::Key => {
                if self.key_text.len() < MAX_KEY_BYTES {
                    self.key_text.push(byte);
                } else {
                    self.key_too_long = true;
                }
            }
            // A string value of the top-level object.
            _ => {
                self.keep_id_byte(byte);
                if closing {
                    self.in_string = false;
                    if let Some(text) = self.id_text.take() {
                        self.id = Some(text);
                    }
                    self.expect = Expect::CommaOrEnd;
                }
            }
        }
    }

    fn keep_id_byte(&mut self, byte: u8) {
        if let Some(text) = &mut self.id_text {
            if text.len() < MAX_ID_BYTES {
                text.push(byte);
            } else {
                // Too long to be an id of ours: not one to answer.
                self.id_text = None;
            }
        }
    }

    fn end_scalar(&mut self) {
        if let Some(text) = self.id_text.take() {
            self.id = Some(text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scans `line` fed in chunks of `chunk` bytes.
    fn scan(line: &[u8], chunk: usize) -> SkippedLine {
        let mut scanner = OversizedLine::new();
        for part in line.chunks(chunk) {
            scanner.feed(part);
        }
        scanner.finish()
    }

    fn answers(line: &str) -> Option<ResponseId> {
        let whole = scan(line.as_bytes(), usize::MAX).answers;
        // However the bytes arrive, the same answer.
        for chunk in [1, 2, 3, 7] {
            assert_eq!(scan(line.as_bytes(), chunk).answers, whole, "{line}");
        }
        whole
    }

    #[test]
    fn the_id_of_a_response_is_found_wherever_it_stands() {
        let big = "x".repeat(1000);
        assert_eq!(
            answers(&format!(
                r#"{{"jsonrpc":"2.0","id":4294967296,"result":{{"content":[{{"type":"text","text":"{big}"}}]}}}}"#
            )),
            Some(ResponseId::Number(4_294_967_296))
        );
        // Last, as the TypeScript SDK writes it, after nested ids that are not the answer's.
        assert_eq!(
            answers(&format!(
                r#"{{"result":{{"id":1,"rows":[{{"id":2,"t":"{big}"}}],"s":"\"id\":3"}},"jsonrpc":"2.0","id":17}}"#
            )),
            Some(ResponseId::Number(17))
        );
        assert_eq!(
            answers(r#" { "id" : "a\"b" , "error" : {"code":1,"message":"m"} } "#),
            Some(ResponseId::Other(r#""a\"b""#.into()))
        );
        assert_eq!(
            answers(r#"{"jsonrpc":"2.0","result":{},"id":5"#),
            Some(ResponseId::Number(5)),
            "a line cut short after the id still answers it"
        );
        assert_eq!(ResponseId::Other(r#""a""#.into()).key(), r#""a""#);
        assert_eq!(ResponseId::Number(7).key(), "7");
    }

    #[test]
    fn lines_that_answer_nothing_are_told_apart() {
        for line in [
            // A request or notification of the server's.
            r#"{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}"#,
            r#"{"id":3,"params":{"x":"y"},"method":"roots/list"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"zzz"}}"#,
            // No outcome, or no id, or an id that is no id.
            r#"{"jsonrpc":"2.0","id":3}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":{"n":3},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            // Not an object, or garbage.
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            r#"[{"jsonrpc":"2.0","id":3,"result":{}}]"#,
            r#"{"jsonrpc" "2.0","id":3,"result":{}}"#,
        ] {
            assert_eq!(answers(line), None, "{line}");
        }
        // A key that merely starts like one that matters.
        assert_eq!(answers(r#"{"identity":3,"result":{}}"#), None);
        // An id longer than any of ours is not taken.
        let long = format!(r#"{{"id":"{}","result":{{}}}}"#, "9".repeat(200));
        assert_eq!(answers(&long), None);
    }

    #[test]
    fn the_size_counts_every_byte_and_nothing_is_kept() {
        let text = "y".repeat(100_000);
        let line = format!(r#"{{"jsonrpc":"2.0","id":9,"result":{{"t":"{text}"}}}}"#);
        let mut scanner = OversizedLine::new();
        for part in line.as_bytes().chunks(4096) {
            scanner.feed(part);
            assert!(scanner.key_text.capacity() <= MAX_KEY_BYTES.max(16));
            assert!(
                scanner
                    .id
                    .as_ref()
                    .is_none_or(|id| id.len() <= MAX_ID_BYTES)
            );
        }
        assert_eq!(scanner.bytes(), line.len() as u64);
        assert_eq!(
            scanner.finish(),
            SkippedLine {
                bytes: line.len() as u64,
                answers: Some(ResponseId::Number(9)),
            }
        );
    }

    #[test]
    fn the_hint_names_the_tools_own_paging_arguments() {
        let schema = serde_json::json!({"type": "object", "properties": {
            "sql": {"type": "string"}, "max_rows": {"type": "integer"},
            "pageToken": {"type": "string"}, "Offset": {"type": "integer"}}});
        let hint = how_to_ask_for_less("sql_query", Some(&schema));
        assert!(
            hint.contains("the tool takes `max_rows`, `pageToken`, `Offset` to page its answer"),
            "{hint}"
        );
        let plain = how_to_ask_for_less(
            "huge",
            Some(&serde_json::json!({"properties": {"bytes": {}}})),
        );
        assert!(plain.contains("a narrower query"), "{plain}");
        assert!(!plain.contains("the tool takes"), "{plain}");
        assert!(how_to_ask_for_less("resources/read", None).contains("smaller resource"));
        for hint in [plain, hint] {
            assert!(hint.contains("--max-message-bytes"), "{hint}");
        }
    }

    #[test]
    fn remembered_ids_are_taken_once_and_stay_bounded() {
        let oversized = OversizedAnswers::new(10);
        oversized.record("7".into(), Some(20));
        assert_eq!(oversized.take("7"), Some(Some(20)));
        assert_eq!(oversized.take("7"), None);
        for id in 0..(MAX_REMEMBERED * 3) {
            oversized.record(id.to_string(), None);
        }
        assert!(oversized.len() <= MAX_REMEMBERED);
    }
}
