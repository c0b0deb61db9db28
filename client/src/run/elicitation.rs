//! A server's question during a tool call (an MCP elicitation the daemon relays as a
//! `callEvents` event of type `elicitation`), asked of the user as a form on stderr, and the
//! answer sent back with `answerElicitation`.
//!
//! The form is rendered from the `requestedSchema` MCP allows (a flat object of strings with an
//! optional format, length or choices, numbers and integers with bounds, booleans, and lists of
//! choices): one prompt per field with its title, description, type, choices and default,
//! required fields marked `*`. An invalid entry is asked again; an empty optional one is left
//! out; an empty required one without a default, or end of input (Ctrl-D), cancels. The first
//! prompt lets the user decline. [`fill`] reads and writes through any reader and writer, so it
//! is tested without a terminal; [`answer`] runs it on stdin/stderr.

use std::io::{BufRead, Write};

use indicatif::ProgressBar;

use serde_json::{Map, Number, Value, json};
use tool_cli_protocol::elicitation::ElicitationAnswer;
use tool_cli_protocol::methods::name;

use crate::args::ElicitationChoice;
use crate::client::Client;
use crate::error::Error;
use crate::sanitize;

/// How many times the daemon may refuse the answers to one form before the client cancels it.
const MAX_ATTEMPTS: usize = 3;

/// Whether a question is asked of the user (else declined): `--elicitation ask` always,
/// `--elicitation decline` never, no flag when stdin and stderr are terminals.
pub(super) fn asks(choice: ElicitationChoice, stdin_terminal: bool, stderr_terminal: bool) -> bool {
    match choice {
        ElicitationChoice::Ask => true,
        ElicitationChoice::Decline => false,
        ElicitationChoice::Auto => stdin_terminal && stderr_terminal,
    }
}

/// What the user made of the form.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Filled {
    /// The fields, to send with `accept`.
    Accept(Map<String, Value>),
    /// The user declined at the first prompt.
    Decline,
    /// Ctrl-D, or no answer to a required field.
    Cancel,
}

/// Asks the form of `event` (an `elicitation` event) on `output`, reading `input`.
pub(super) fn fill(
    event: &Value,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> std::io::Result<Filled> {
    let server = event
        .get("server")
        .and_then(Value::as_str)
        .unwrap_or("server");
    let message = event.get("message").and_then(Value::as_str).unwrap_or("");
    let schema = event.get("requestedSchema").cloned().unwrap_or(Value::Null);
    writeln!(
        output,
        "{} asks: {}",
        sanitize::line(server),
        sanitize::line(message)
    )?;
    write!(output, "answer? [Y]es, [n]o to decline, [c]ancel: ")?;
    output.flush()?;
    match read_line(input)?
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("c" | "cancel") => return Ok(Filled::Cancel),
        Some("n" | "no" | "decline") => return Ok(Filled::Decline),
        _ => {}
    }
    writeln!(
        output,
        "(* required; Enter takes the [default] or leaves an optional field out; Ctrl-D cancels)"
    )?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut content = Map::new();
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (field, property) in properties {
        let is_required = required.contains(&field.as_str());
        match ask_field(field, property, is_required, input, output)? {
            Field::Value(value) => {
                content.insert(field.clone(), value);
            }
            Field::Omitted => {}
            Field::Cancel => return Ok(Filled::Cancel),
        }
    }
    Ok(Filled::Accept(content))
}

enum Field {
    Value(Value),
    Omitted,
    Cancel,
}

fn ask_field(
    field: &str,
    property: &Value,
    required: bool,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> std::io::Result<Field> {
    let text = |key: &str| property.get(key).and_then(Value::as_str);
    let choices = choices(property);
    let mut heading = sanitize::line(field).into_owned();
    if required {
        heading.push('*');
    }
    if let Some(title) = text("title").filter(|title| *title != field) {
        heading.push_str(&format!(" ({})", sanitize::line(title)));
    }
    writeln!(output, "{heading}: {}", kind_words(property))?;
    if let Some(description) = text("description") {
        writeln!(output, "  {}", sanitize::line(description))?;
    }
    if !choices.is_empty() {
        let listed: Vec<String> = choices
            .iter()
            .enumerate()
            .map(|(index, (value, label))| match label {
                Some(label) => format!(
                    "{}) {} [{}]",
                    index + 1,
                    sanitize::line(label),
                    value_text(value)
                ),
                None => format!("{}) {}", index + 1, value_text(value)),
            })
            .collect();
        writeln!(output, "  {}", listed.join("  "))?;
    }
    let default = property.get("default").cloned();
    let prompt = match &default {
        Some(default) => format!("  [{}]> ", default_text(default)),
        None => "  > ".to_owned(),
    };
    loop {
        write!(output, "{prompt}")?;
        output.flush()?;
        let Some(line) = read_line(input)? else {
            return Ok(Field::Cancel);
        };
        if line.is_empty() {
            return Ok(match (default.clone(), required) {
                (Some(default), _) => Field::Value(default),
                (None, false) => Field::Omitted,
                (None, true) => Field::Cancel,
            });
        }
        match parse_entry(&line, property, &choices) {
            Ok(value) => return Ok(Field::Value(value)),
            Err(expected) => writeln!(output, "  ! expected {expected}; try again")?,
        }
    }
}

/// A line of input without its line ending; `None` at end of input.
fn read_line(input: &mut impl BufRead) -> std::io::Result<Option<String>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim().to_owned()))
}

/// The choices of a field (or of its list's items): each value with its title, if any.
fn choices(property: &Value) -> Vec<(Value, Option<String>)> {
    let schema = match property.get("type").and_then(Value::as_str) {
        Some("array") => property.get("items").unwrap_or(&Value::Null),
        _ => property,
    };
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .map(|(index, value)| {
                let name = names
                    .and_then(|names| names.get(index))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                (value.clone(), name)
            })
            .collect();
    }
    schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|choice| {
            let value = choice.get("const")?.clone();
            let title = choice
                .get("title")
                .and_then(Value::as_str)
                .map(str::to_owned);
            Some((value, title))
        })
        .collect()
}

/// The type of a field in words, with its bounds: `text (email)`, `integer 1-100`, `yes/no`.
fn kind_words(property: &Value) -> String {
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    let bounds = |lower: Option<f64>, upper: Option<f64>| match (lower, upper) {
        (Some(lower), Some(upper)) => format!(" {lower} to {upper}"),
        (Some(lower), None) => format!(" at least {lower}"),
        (None, Some(upper)) => format!(" at most {upper}"),
        (None, None) => String::new(),
    };
    match property.get("type").and_then(Value::as_str) {
        Some("boolean") => "yes/no".to_owned(),
        Some("integer") => format!("integer{}", bounds(number("minimum"), number("maximum"))),
        Some("number") => format!("number{}", bounds(number("minimum"), number("maximum"))),
        Some("array") => format!(
            "choose{} (numbers or values, separated by commas)",
            bounds(number("minItems"), number("maxItems"))
        ),
        _ if !choices(property).is_empty() => "choose one (its number or value)".to_owned(),
        _ => {
            let mut words = "text".to_owned();
            if let Some(format) = property.get("format").and_then(Value::as_str) {
                words.push_str(&format!(" ({})", sanitize::line(format)));
            }
            let length = bounds(number("minLength"), number("maxLength"));
            if !length.is_empty() {
                words.push_str(&format!(",{length} characters"));
            }
            words
        }
    }
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => sanitize::line(text).into_owned(),
        other => other.to_string(),
    }
}

fn default_text(default: &Value) -> String {
    match default {
        Value::Array(items) => items.iter().map(value_text).collect::<Vec<_>>().join(", "),
        Value::Bool(true) => "yes".to_owned(),
        Value::Bool(false) => "no".to_owned(),
        other => value_text(other),
    }
}

/// One entry as the field's value, or what was expected instead.
fn parse_entry(
    line: &str,
    property: &Value,
    choices: &[(Value, Option<String>)],
) -> Result<Value, String> {
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    let within = |value: f64, what: &str| -> Result<(), String> {
        let (lower, upper) = (number("minimum"), number("maximum"));
        if lower.is_some_and(|lower| value < lower) || upper.is_some_and(|upper| value > upper) {
            let range = match (lower, upper) {
                (Some(lower), Some(upper)) => format!(" from {lower} to {upper}"),
                (Some(lower), None) => format!(" of at least {lower}"),
                (None, Some(upper)) => format!(" of at most {upper}"),
                (None, None) => String::new(),
            };
            return Err(format!("{what}{range}"));
        }
        Ok(())
    };
    match property.get("type").and_then(Value::as_str) {
        Some("boolean") => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("yes or no".to_owned()),
        },
        Some("integer") => {
            let value: i64 = line.parse().map_err(|_| "a whole number".to_owned())?;
            within(value as f64, "an integer")?;
            Ok(Value::from(value))
        }
        Some("number") => {
            let value: f64 = line
                .parse()
                .ok()
                .filter(|value: &f64| value.is_finite())
                .ok_or_else(|| "a number".to_owned())?;
            within(value, "a number")?;
            Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
        }
        Some("array") => {
            let mut picked = Vec::new();
            for word in line
                .split(',')
                .map(str::trim)
                .filter(|word| !word.is_empty())
            {
                let value = pick(word, choices)?;
                if !picked.contains(&value) {
                    picked.push(value);
                }
            }
            let count = picked.len() as f64;
            let (lower, upper) = (number("minItems"), number("maxItems"));
            if lower.is_some_and(|lower| count < lower) || upper.is_some_and(|upper| count > upper)
            {
                return Err(format!(
                    "{} choices",
                    match (lower, upper) {
                        (Some(lower), Some(upper)) => format!("{lower} to {upper}"),
                        (Some(lower), None) => format!("at least {lower}"),
                        (None, Some(upper)) => format!("at most {upper}"),
                        (None, None) => unreachable!("a bound failed"),
                    }
                ));
            }
            Ok(Value::Array(picked))
        }
        _ if !choices.is_empty() => pick(line, choices),
        _ => {
            let length = line.chars().count() as f64;
            let (lower, upper) = (number("minLength"), number("maxLength"));
            if lower.is_some_and(|lower| length < lower)
                || upper.is_some_and(|upper| length > upper)
            {
                let range = match (lower, upper) {
                    (Some(lower), Some(upper)) => format!("{lower} to {upper}"),
                    (Some(lower), None) => format!("at least {lower}"),
                    (None, Some(upper)) => format!("at most {upper}"),
                    (None, None) => unreachable!("a bound failed"),
                };
                return Err(format!("text of {range} characters"));
            }
            let format = property.get("format").and_then(Value::as_str);
            if let Some(format) = format
                && !looks_like(format, line)
            {
                return Err(match format {
                    "email" => "an email address, like name@example.com".to_owned(),
                    "uri" => "a URI, like https://example.com/page".to_owned(),
                    "date" => "a date as YYYY-MM-DD".to_owned(),
                    "date-time" => "a date and time as YYYY-MM-DDTHH:MM:SSZ".to_owned(),
                    other => format!("text in {other} format"),
                });
            }
            Ok(Value::String(line.to_owned()))
        }
    }
}

/// One choice by its number (1-based), its value or its title.
fn pick(word: &str, choices: &[(Value, Option<String>)]) -> Result<Value, String> {
    if let Ok(number) = word.parse::<usize>()
        && (1..=choices.len()).contains(&number)
    {
        return Ok(choices[number - 1].0.clone());
    }
    choices
        .iter()
        .find(|(value, title)| {
            value.as_str() == Some(word)
                || value
                    .as_f64()
                    .is_some_and(|number| word.parse::<f64>() == Ok(number))
                || title
                    .as_deref()
                    .is_some_and(|title| title.eq_ignore_ascii_case(word))
        })
        .map(|(value, _)| value.clone())
        .ok_or_else(|| {
            format!(
                "one of the choices (1 to {}, or a value as listed)",
                choices.len()
            )
        })
}

/// A quick check of the formats MCP allows, so a typo is asked again at once; the daemon
/// checks the answer fully.
fn looks_like(format: &str, text: &str) -> bool {
    let digits = |part: &str, length: usize| {
        part.len() == length && part.bytes().all(|byte| byte.is_ascii_digit())
    };
    let date = |text: &str| {
        let parts: Vec<&str> = text.split('-').collect();
        parts.len() == 3 && digits(parts[0], 4) && digits(parts[1], 2) && digits(parts[2], 2)
    };
    match format {
        "email" => text.split_once('@').is_some_and(|(user, domain)| {
            !user.is_empty() && domain.contains('.') && !domain.contains('@')
        }),
        "uri" => text.split_once(':').is_some_and(|(scheme, rest)| {
            !rest.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }),
        "date" => date(text),
        "date-time" => text
            .split_once(['T', 't'])
            .is_some_and(|(day, time)| date(day) && time.len() >= 8),
        _ => true,
    }
}

/// Answers an `elicitation` event of the call `progress_id`: with the form on stderr (stdin
/// read) when `asks`, else a decline. A refused answer (the daemon checks it against the
/// schema) is shown and the form asked again, at most [`MAX_ATTEMPTS`] times. The progress
/// `bar`, if any, is kept out of the form's way.
pub(super) async fn answer(
    client: &Client,
    progress_id: &str,
    event: &Value,
    asks: bool,
    bar: Option<&ProgressBar>,
) -> Result<(), Error> {
    let Some(elicitation_id) = event.get("elicitationId").and_then(Value::as_str) else {
        return Ok(());
    };
    let mut answers = client.sibling();
    let say = |line: &str| match bar {
        Some(bar) => bar.println(line),
        None => eprintln!("{line}"),
    };
    for _ in 0..MAX_ATTEMPTS {
        let filled = if asks {
            let event = event.clone();
            let bar = bar.cloned();
            tokio::task::spawn_blocking(move || {
                let form = || fill(&event, &mut std::io::stdin().lock(), &mut std::io::stderr());
                match bar {
                    Some(bar) => bar.suspend(form),
                    None => form(),
                }
            })
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or(Filled::Cancel)
        } else {
            say(
                "tool-cli: note: the server asked a question; declined (give --elicitation ask \
                 to answer it)",
            );
            Filled::Decline
        };
        let (action, content) = match filled {
            Filled::Accept(content) => (ElicitationAnswer::Accept, Some(Value::Object(content))),
            Filled::Decline => (ElicitationAnswer::Decline, None),
            Filled::Cancel => (ElicitationAnswer::Cancel, None),
        };
        let mut params = json!({"progressId": progress_id, "elicitationId": elicitation_id,
                                "action": action.as_str()});
        if let Some(content) = content {
            params["content"] = content;
        }
        match answers.call(name::ANSWER_ELICITATION, Some(params)).await {
            Ok(_) => return Ok(()),
            // The answers did not fit the schema: the question is still open.
            Err(error) if asks && action == ElicitationAnswer::Accept && still_open(&error) => {
                say(&format!(
                    "tool-cli: the server's form refused the answers: {error}"
                ));
            }
            Err(error) => return Err(error),
        }
    }
    Err(Error::Usage(format!(
        "the answers to the server's form were refused {MAX_ATTEMPTS} times; it stays unanswered \
         until the daemon declines it"
    )))
}

/// Whether the daemon refused the answer but kept the question open.
fn still_open(error: &Error) -> bool {
    error.to_string().contains("is still open")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> Value {
        json!({
            "type": "elicitation", "elicitationId": "e1", "server": "everything",
            "message": "Please provide\ninputs",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "title": "Name", "description": "Your name", "minLength": 2},
                    "check": {"type": "boolean", "title": "Agree"},
                    "email": {"type": "string", "format": "email"},
                    "integer": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
                    "number": {"type": "number", "minimum": 0, "maximum": 1000},
                    "pet": {"type": "string", "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs"]},
                    "hero": {"type": "string", "oneOf": [{"const": "hero-1", "title": "Superman"},
                                                         {"const": "hero-2", "title": "Batman"}]},
                    "tools": {"type": "array", "minItems": 1, "maxItems": 2,
                              "items": {"type": "string", "enum": ["saw", "drill", "hammer"]}}
                },
                "required": ["name"]
            }
        })
    }

    fn run(input: &str) -> (Filled, String) {
        let mut output = Vec::new();
        let filled = fill(&event(), &mut input.as_bytes(), &mut output).unwrap();
        (filled, String::from_utf8(output).unwrap())
    }

    #[test]
    fn a_filled_form_becomes_the_content_with_defaults_and_omissions() {
        let (filled, shown) = run("y\nAda\nyes\n\n\n2.5\n2\nBatman\n1, 3\n");
        let Filled::Accept(content) = filled else {
            panic!("{shown}")
        };
        assert_eq!(
            Value::Object(content),
            json!({"name": "Ada", "check": true, "integer": 42, "number": 2.5,
                   "pet": "pet-2", "hero": "hero-2", "tools": ["saw", "hammer"]}),
            "the empty email is left out, the integer takes its default"
        );
        assert!(
            shown.starts_with("everything asks: Please provide^Jinputs\n"),
            "{shown}"
        );
        assert!(
            shown.contains("name* (Name): text, at least 2 characters"),
            "{shown}"
        );
        assert!(shown.contains("  Your name\n"), "{shown}");
        assert!(
            shown.contains("integer: integer 1 to 100\n  [42]> "),
            "{shown}"
        );
        assert!(
            shown.contains("1) Cats [pet-1]  2) Dogs [pet-2]"),
            "{shown}"
        );
        assert!(shown.contains("1) Superman [hero-1]"), "{shown}");
    }

    #[test]
    fn an_invalid_entry_is_asked_again_with_what_was_expected() {
        let (filled, shown) =
            run("\nA\nAda\nmaybe\nno\nnot-an-email\nada@example.com\n500\n7\n\nx\n1\n\n\n");
        let Filled::Accept(content) = filled else {
            panic!("{shown}")
        };
        assert_eq!(content["name"], "Ada");
        assert_eq!(content["check"], false);
        assert_eq!(content["email"], "ada@example.com");
        assert_eq!(content["integer"], 7);
        assert_eq!(content["pet"], "pet-1");
        assert!(!content.contains_key("hero") && !content.contains_key("tools"));
        for expected in [
            "! expected text of at least 2 characters",
            "! expected yes or no",
            "! expected an email address",
            "! expected an integer from 1 to 100",
            "! expected one of the choices (1 to 2",
        ] {
            assert!(shown.contains(expected), "{expected}: {shown}");
        }
    }

    #[test]
    fn decline_cancel_and_end_of_input() {
        assert_eq!(run("n\n").0, Filled::Decline);
        assert_eq!(run("c\n").0, Filled::Cancel);
        assert_eq!(run("").0, Filled::Cancel, "Ctrl-D at the first prompt");
        assert_eq!(
            run("y\n\n").0,
            Filled::Cancel,
            "empty required field, no default"
        );
        assert_eq!(run("y\nAda\n").0, Filled::Cancel, "Ctrl-D halfway");
        let (filled, _) = run("y\nAda\ny\n\n\n\n\n\n\n");
        assert!(matches!(filled, Filled::Accept(_)));
    }

    #[test]
    fn lists_take_numbers_values_and_their_bounds() {
        let (filled, shown) = run("y\nAda\n\n\n\n\n\n\nsaw, drill, hammer\nnope\ndrill\n");
        let Filled::Accept(content) = filled else {
            panic!("{shown}")
        };
        assert_eq!(content["tools"], json!(["drill"]));
        assert!(shown.contains("! expected 1 to 2 choices"), "{shown}");
        assert!(
            shown.contains("! expected one of the choices (1 to 3"),
            "{shown}"
        );
    }

    #[test]
    fn the_form_is_asked_only_when_chosen_or_on_terminals() {
        use ElicitationChoice::{Ask, Auto, Decline};
        assert!(asks(Ask, false, false));
        assert!(!asks(Decline, true, true));
        assert!(asks(Auto, true, true));
        assert!(!asks(Auto, false, true));
        assert!(!asks(Auto, true, false));
    }

    #[test]
    fn formats_are_checked_roughly() {
        assert!(looks_like("email", "a@b.co"));
        assert!(!looks_like("email", "a@b"));
        assert!(looks_like("uri", "https://x.org"));
        assert!(!looks_like("uri", "x.org"));
        assert!(looks_like("date", "2024-02-29"));
        assert!(!looks_like("date", "29/02/2024"));
        assert!(looks_like("date-time", "2024-02-29T10:00:00Z"));
    }
}
