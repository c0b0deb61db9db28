//! Elicitation relayed to the caller (`"elicitation": "ask"`): which call a server's question
//! belongs to, the life of each question (open, then answered once or closed by the daemon),
//! and the check of an answer against the schema the server asked for.
//!
//! Pure: no channel, no clock, no socket. The pool (`pool/requests.rs`) decides with [`route`]
//! where a question goes and waits for the answer; the events buffer of the call
//! (`call_events.rs`) keeps a [`Book`] of its questions, which `answerElicitation` consults.
//!
//! MCP says nothing about which request a question belongs to (over stdio there is no related
//! request id), so a question is relayed only when it cannot be anyone else's: the server has
//! exactly one call in flight, and that call's caller watches its events. Anything else is
//! declined with a reason rather than guessed, since a wrong guess would show one caller's
//! question to another and let it answer for them.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use tool_cli_protocol::elicitation::ElicitationAnswer;

use crate::catalog::validate::ArgumentValidator;

/// Why a question is not relayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoRoute {
    /// The server has no call in flight (it asked on its own, or while listing).
    NoCall,
    /// Its one call in flight was made without a `progressId`: nobody reads its events.
    NotWatched,
    /// It has several calls in flight; MCP does not say which one asks.
    Ambiguous {
        /// How many.
        calls: usize,
    },
}

impl NoRoute {
    /// The reason given to the server (and logged).
    pub(crate) fn reason(&self, server: &str) -> String {
        let why = match self {
            NoRoute::NoCall => "it asked outside any call, so there is no caller to ask".to_owned(),
            NoRoute::NotWatched => "no caller is watching the call (make it with a progressId and \
                                    poll callEvents, or run tool-cli on a terminal)"
                .to_owned(),
            NoRoute::Ambiguous { calls } => format!(
                "it has {calls} calls in flight and MCP does not say which one asks, so no caller \
                 can be chosen safely"
            ),
        };
        format!(
            "declined by the tool-cli daemon: server \"{server}\" has the elicitation policy \"ask\", but {why}"
        )
    }
}

/// Where a question goes: the one call in flight of the server, when its caller watches it.
/// `in_flight` holds, per call, what reaches its caller (`None` when nobody watches it).
pub(crate) fn route<T: Clone>(in_flight: &[Option<T>]) -> Result<T, NoRoute> {
    match in_flight {
        [] => Err(NoRoute::NoCall),
        [Some(watcher)] => Ok(watcher.clone()),
        [None] => Err(NoRoute::NotWatched),
        calls => Err(NoRoute::Ambiguous { calls: calls.len() }),
    }
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Refusal {
    /// No question of this id was asked in this call.
    Unknown {
        /// The ids of the questions it did ask.
        known: Vec<String>,
    },
    /// It was answered already.
    AlreadyAnswered(ElicitationAnswer),
    /// The daemon declined it first (no answer in time, the call ended, the server withdrew).
    Closed(String),
    /// The answer does not fit the question; the question stays open for another answer.
    Invalid(String),
}

impl Refusal {
    /// The message for the caller, naming the question and the call.
    pub(crate) fn message(&self, elicitation_id: &str, progress_id: &str) -> String {
        match self {
            Refusal::Unknown { known } if known.is_empty() => format!(
                "call \"{progress_id}\" has had no elicitation; elicitationId must be one a \
                 callEvents event of type \"elicitation\" gave (\"{}\" is not)",
                shown(elicitation_id)
            ),
            Refusal::Unknown { known } => format!(
                "call \"{progress_id}\" has no elicitation \"{}\"; its elicitations are {}",
                shown(elicitation_id),
                quoted(known)
            ),
            Refusal::AlreadyAnswered(action) => format!(
                "elicitation \"{elicitation_id}\" of call \"{progress_id}\" was already answered \
                 ({}); each takes one answer",
                action.as_str()
            ),
            Refusal::Closed(reason) => format!(
                "elicitation \"{elicitation_id}\" of call \"{progress_id}\" takes no answer any \
                 more: {reason}"
            ),
            Refusal::Invalid(what) => {
                format!("{what} (elicitation \"{elicitation_id}\" is still open: answer again)")
            }
        }
    }
}

enum Entry<W> {
    Open { schema: Value, waiter: W },
    Answered(ElicitationAnswer),
    Closed(String),
}

/// One call's questions by id (`e1`, `e2`, … in the order asked), each with what waits for its
/// answer (`W`: the pool's channel; anything in tests).
pub(crate) struct Book<W> {
    asked: u64,
    entries: BTreeMap<u64, Entry<W>>,
}

impl<W> Default for Book<W> {
    fn default() -> Book<W> {
        Book {
            asked: 0,
            entries: BTreeMap::new(),
        }
    }
}

fn number_of(id: &str) -> Option<u64> {
    id.strip_prefix('e')?.parse().ok()
}

impl<W> Book<W> {
    /// Records a question; its id.
    pub(crate) fn open(&mut self, schema: Value, waiter: W) -> String {
        self.asked += 1;
        self.entries
            .insert(self.asked, Entry::Open { schema, waiter });
        format!("e{}", self.asked)
    }

    /// Takes an answer: checked against the question's schema, it closes the question and
    /// gives back its waiter and the content to send.
    pub(crate) fn answer(
        &mut self,
        id: &str,
        action: ElicitationAnswer,
        content: Option<&Value>,
    ) -> Result<(W, Option<Map<String, Value>>), Refusal> {
        let known = || self.entries.keys().map(|n| format!("e{n}")).collect();
        let Some(number) = number_of(id).filter(|n| self.entries.contains_key(n)) else {
            return Err(Refusal::Unknown { known: known() });
        };
        let content = match &self.entries[&number] {
            Entry::Answered(action) => return Err(Refusal::AlreadyAnswered(*action)),
            Entry::Closed(reason) => return Err(Refusal::Closed(reason.clone())),
            Entry::Open { schema, .. } => {
                check_answer(schema, action, content).map_err(Refusal::Invalid)?
            }
        };
        match self.entries.insert(number, Entry::Answered(action)) {
            Some(Entry::Open { waiter, .. }) => Ok((waiter, content)),
            _ => unreachable!("checked open above"),
        }
    }

    /// Marks an answered question closed after all, with why: its answer reached nobody.
    pub(crate) fn mark_closed(&mut self, id: &str, reason: &str) {
        if let Some(number) = number_of(id) {
            self.entries
                .insert(number, Entry::Closed(reason.to_owned()));
        }
    }

    /// Closes a question that is still open, with why; whether it was open (its waiter is
    /// dropped).
    pub(crate) fn close(&mut self, id: &str, reason: &str) -> bool {
        let Some(number) = number_of(id) else {
            return false;
        };
        match self.entries.get_mut(&number) {
            Some(entry @ Entry::Open { .. }) => {
                *entry = Entry::Closed(reason.to_owned());
                true
            }
            _ => false,
        }
    }
}

/// Checks an answer: `content` only with `accept`, an object of the schema's fields (no
/// others), each valid. The error names the field and what was expected.
pub(crate) fn check_answer(
    schema: &Value,
    action: ElicitationAnswer,
    content: Option<&Value>,
) -> Result<Option<Map<String, Value>>, String> {
    if action != ElicitationAnswer::Accept {
        return match content {
            None => Ok(None),
            Some(_) => Err(format!(
                "content goes only with action \"accept\"; send \"{}\" without content",
                action.as_str()
            )),
        };
    }
    let fields = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let content = match content {
        None => Map::new(),
        Some(Value::Object(content)) => content.clone(),
        Some(other) => {
            return Err(format!(
                "content must be an object of the requested fields ({}), got {}",
                field_list(&fields),
                tool_cli_protocol::json::kind(other)
            ));
        }
    };
    for name in content.keys() {
        if !fields.contains_key(name) {
            let names: Vec<String> = fields.keys().cloned().collect();
            let close = crate::suggest::closest_names(name, &names, 1);
            let hint = match close.first() {
                Some(close) => format!("did you mean \"{close}\"? "),
                None => String::new(),
            };
            return Err(format!(
                "content.{} is not a requested field; {hint}the fields are {}",
                shown(name),
                field_list(&fields)
            ));
        }
    }
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    for name in required {
        if !content.contains_key(name) {
            let expected = fields.get(name).map(expected).unwrap_or_default();
            return Err(format!("content.{name} is required: expected {expected}"));
        }
    }
    let validator = ArgumentValidator::compile(schema)
        .map_err(|err| format!("the server's requested schema cannot be checked ({err})"))?;
    let failures: Vec<String> = validator
        .check(&content)
        .into_iter()
        .map(|violation| {
            let field = violation
                .error
                .path
                .trim_start_matches('/')
                .split('/')
                .next()
                .unwrap_or_default()
                .to_owned();
            match fields.get(&field) {
                Some(property) => format!(
                    "content.{field}: {}; expected {}",
                    violation.error.message,
                    expected(property)
                ),
                None => format!("content: {}", violation.error.message),
            }
        })
        .collect();
    if failures.is_empty() {
        Ok(Some(content))
    } else {
        Err(failures.join("; "))
    }
}

/// What a field of a requested schema takes, in words: `a string in email format`, `an
/// integer from 1 to 100`, `one of "a", "b"`, `true or false`, `1 to 3 of "x", "y"`.
pub(crate) fn expected(property: &Value) -> String {
    let text = |key: &str| property.get(key).and_then(Value::as_str);
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    let choices = |schema: &Value| -> Option<Vec<String>> {
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            return Some(values.iter().map(Value::to_string).collect());
        }
        let titled = schema
            .get("oneOf")
            .or_else(|| schema.get("anyOf"))
            .and_then(Value::as_array)?;
        Some(
            titled
                .iter()
                .filter_map(|choice| choice.get("const"))
                .map(Value::to_string)
                .collect(),
        )
    };
    let range = |lower: Option<f64>, upper: Option<f64>, unit: &str| match (lower, upper) {
        (Some(lower), Some(upper)) => format!(" from {lower}{unit} to {upper}{unit}"),
        (Some(lower), None) => format!(" of at least {lower}{unit}"),
        (None, Some(upper)) => format!(" of at most {upper}{unit}"),
        (None, None) => String::new(),
    };
    match text("type") {
        Some("boolean") => "true or false".to_owned(),
        Some("integer") => format!(
            "an integer{}",
            range(number("minimum"), number("maximum"), "")
        ),
        Some("number") => format!(
            "a number{}",
            range(number("minimum"), number("maximum"), "")
        ),
        Some("array") => {
            let items = property.get("items").and_then(choices).unwrap_or_default();
            let count = match (number("minItems"), number("maxItems")) {
                (Some(lower), Some(upper)) => format!("{lower} to {upper} of"),
                (Some(lower), None) => format!("at least {lower} of"),
                (None, Some(upper)) => format!("at most {upper} of"),
                (None, None) => "any of".to_owned(),
            };
            format!("a list of {count} {}", items.join(", "))
        }
        _ => match choices(property) {
            Some(choices) => format!("one of {}", choices.join(", ")),
            None => {
                let mut words = "a string".to_owned();
                if let Some(format) = text("format") {
                    words.push_str(&format!(" in {format} format"));
                }
                let length = match (number("minLength"), number("maxLength")) {
                    (Some(lower), Some(upper)) => format!(" of {lower} to {upper} characters"),
                    (Some(lower), None) => format!(" of at least {lower} characters"),
                    (None, Some(upper)) => format!(" of at most {upper} characters"),
                    (None, None) => String::new(),
                };
                words + &length
            }
        },
    }
}

fn field_list(fields: &Map<String, Value>) -> String {
    if fields.is_empty() {
        return "none".to_owned();
    }
    quoted(&fields.keys().cloned().collect::<Vec<_>>())
}

/// Most names a message lists: a server chooses how many fields it asks for and how many
/// questions it asks, and a refusal quoting them all would be as large as its schema.
const LISTED_NAMES: usize = 20;

/// Longest name or id a message quotes (a forged id or a field name may be megabytes long).
const SHOWN_CHARS: usize = 64;

fn quoted(names: &[String]) -> String {
    let mut listed = names
        .iter()
        .take(LISTED_NAMES)
        .map(|name| format!("\"{}\"", shown(name)))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > LISTED_NAMES {
        listed.push_str(&format!(" and {} more", names.len() - LISTED_NAMES));
    }
    listed
}

/// `text` cut to [`SHOWN_CHARS`] characters, marked with `…` when cut.
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]).into(),
        None => text.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ElicitationAnswer::{Accept, Cancel, Decline};
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name", "minLength": 2},
                "email": {"type": "string", "format": "email"},
                "age": {"type": "integer", "minimum": 1, "maximum": 100},
                "agree": {"type": "boolean"},
                "pet": {"type": "string", "enum": ["cat", "dog"]},
                "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]},
                "tools": {"type": "array", "minItems": 1, "maxItems": 2,
                          "items": {"type": "string", "enum": ["saw", "drill"]}}
            },
            "required": ["name"]
        })
    }

    #[test]
    fn a_question_goes_only_to_the_one_watched_call_in_flight() {
        assert_eq!(route::<u8>(&[]), Err(NoRoute::NoCall));
        assert_eq!(route(&[Some(7)]), Ok(7));
        assert_eq!(route::<u8>(&[None]), Err(NoRoute::NotWatched));
        assert_eq!(
            route(&[Some(1), None]),
            Err(NoRoute::Ambiguous { calls: 2 }),
            "a plain call beside it may be the one asking"
        );
        assert_eq!(
            route(&[Some(1), Some(2), Some(3)]),
            Err(NoRoute::Ambiguous { calls: 3 })
        );
        let reason = NoRoute::NotWatched.reason("everything");
        assert!(
            reason.contains("\"everything\"") && reason.contains("progressId"),
            "{reason}"
        );
        assert!(
            NoRoute::Ambiguous { calls: 2 }
                .reason("x")
                .contains("2 calls")
        );
    }

    #[test]
    fn a_valid_answer_closes_the_question_and_hands_over_its_waiter() {
        let mut book = Book::default();
        let first = book.open(schema(), "waiter-1");
        let second = book.open(schema(), "waiter-2");
        assert_eq!((first.as_str(), second.as_str()), ("e1", "e2"));
        let (waiter, content) = book
            .answer(
                "e1",
                Accept,
                Some(&json!({"name": "Ada", "age": 36, "tools": ["saw"]})),
            )
            .unwrap();
        assert_eq!(waiter, "waiter-1");
        assert_eq!(content.unwrap()["age"], 36);
        assert_eq!(
            book.answer("e1", Decline, None).err(),
            Some(Refusal::AlreadyAnswered(Accept)),
            "a duplicate answer"
        );
        let (waiter, content) = book.answer("e2", Cancel, None).unwrap();
        assert_eq!((waiter, content), ("waiter-2", None));
    }

    #[test]
    fn an_invalid_answer_leaves_the_question_open_for_another() {
        let mut book = Book::default();
        let id = book.open(schema(), ());
        let Err(Refusal::Invalid(message)) =
            book.answer(&id, Accept, Some(&json!({"name": "Ada", "age": 500})))
        else {
            panic!("out of range")
        };
        assert!(
            message.contains("content.age") && message.contains("from 1 to 100"),
            "{message}"
        );
        assert!(
            book.answer(&id, Accept, Some(&json!({"name": "Ada"})))
                .is_ok()
        );
    }

    #[test]
    fn closed_and_unknown_questions_are_refused_with_what_happened() {
        let mut book = Book::default();
        let id = book.open(schema(), ());
        assert!(book.close(&id, "no answer came within 120000 ms"));
        assert!(!book.close(&id, "again"), "closing twice does nothing");
        let refusal = book
            .answer(&id, Accept, Some(&json!({"name": "Ada"})))
            .unwrap_err();
        assert_eq!(
            refusal,
            Refusal::Closed("no answer came within 120000 ms".into())
        );
        assert!(
            refusal
                .message("e1", "call-1")
                .contains("takes no answer any more: no answer")
        );
        let unknown = book.answer("e9", Decline, None).unwrap_err();
        assert_eq!(
            unknown,
            Refusal::Unknown {
                known: vec!["e1".into()]
            }
        );
        assert!(
            unknown
                .message("e9", "call-1")
                .contains("its elicitations are \"e1\"")
        );
        assert!(matches!(
            book.answer("nonsense", Decline, None),
            Err(Refusal::Unknown { .. })
        ));
        let empty: Book<()> = Book::default();
        let mut empty = empty;
        let message = empty
            .answer("e1", Decline, None)
            .unwrap_err()
            .message("e1", "p");
        assert!(message.contains("has had no elicitation"), "{message}");
    }

    #[test]
    fn each_bad_answer_names_the_field_and_what_was_expected() {
        let schema = schema();
        for (action, content, wanted) in [
            (
                Accept,
                json!({"name": "Ada", "email": "not-an-email"}),
                "content.email: ",
            ),
            (
                Accept,
                json!({"name": "Ada", "email": "x"}),
                "a string in email format",
            ),
            (Accept, json!({"name": "A"}), "of at least 2 characters"),
            (
                Accept,
                json!({"name": "Ada", "pet": "fish"}),
                "one of \"cat\", \"dog\"",
            ),
            (
                Accept,
                json!({"name": "Ada", "hero": "h9"}),
                "one of \"h1\"",
            ),
            (
                Accept,
                json!({"name": "Ada", "agree": "yes"}),
                "true or false",
            ),
            (
                Accept,
                json!({"name": "Ada", "tools": []}),
                "a list of 1 to 2 of \"saw\"",
            ),
            (
                Accept,
                json!({"email": "a@b.c"}),
                "content.name is required: expected a string",
            ),
            (
                Accept,
                json!({"name": "Ada", "nmae": "x"}),
                "did you mean \"name\"",
            ),
            (
                Accept,
                json!(["Ada"]),
                "content must be an object of the requested fields",
            ),
            (
                Decline,
                json!({"name": "Ada"}),
                "content goes only with action \"accept\"",
            ),
        ] {
            let message = check_answer(&schema, action, Some(&content)).unwrap_err();
            assert!(message.contains(wanted), "{content}: {message}");
        }
        assert!(
            check_answer(&schema, Accept, None)
                .unwrap_err()
                .contains("content.name is required")
        );
        assert_eq!(
            check_answer(&json!({"type": "object", "properties": {}}), Accept, None),
            Ok(Some(Map::new()))
        );
    }

    #[test]
    fn refusals_quote_a_bounded_number_of_names_each_cut_short() {
        let properties: Map<String, Value> = (0..5000)
            .map(|n| (format!("field{n}"), json!({"type": "string"})))
            .collect();
        let schema = json!({"type": "object", "properties": properties});
        let forged = "x".repeat(100_000);
        let error = check_answer(&schema, Accept, Some(&json!({forged.clone(): 1}))).unwrap_err();
        assert!(error.len() < 2_000, "{} bytes", error.len());
        assert!(error.contains(" and 4980 more"), "{error}");
        assert!(error.contains(&format!("content.{}… is not", "x".repeat(64))));

        let known: Vec<String> = (1..=1000).map(|n| format!("e{n}")).collect();
        let message = Refusal::Unknown { known }.message(&forged, "p1");
        assert!(message.len() < 1_000, "{} bytes", message.len());
        assert!(message.ends_with("\"e20\" and 980 more"), "{message}");
    }
}
