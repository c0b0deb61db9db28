//! The offline planner's last rule before "cannot": a tool the task names by what it is called
//! ("Echo the text hello world" and a tool `echo`), called with arguments read from the task.
//!
//! A tool qualifies only when every meaningful word of its name is in the task and each of its
//! required parameters can be filled from the task's own words: numbers in the order written
//! for number and integer parameters, a quoted string or the rest of the task after the tool's
//! name for a single string parameter, an enum value the task names. Two tools that qualify
//! equally make the choice ambiguous, and then no tool is called; a tool annotated destructive
//! is never called this way. Pure: task and tools in, a call out.

use serde_json::{Map, Value, json};

use super::general::Step;
use super::{Action, Past, parse, tools, words};
use crate::backend::ExposedTool;

/// The rule: call the tool the task names, then answer with what it returned.
pub(super) fn step<'a>(
    task: &str,
    tools: &'a [ExposedTool],
    ranked: &[String],
    past: &[Past<'_>],
) -> Result<Step<'a>, String> {
    let Some(direct) = call(task, tools, ranked) else {
        return Ok(Step::Pass(0));
    };
    let Some(done) = past.first() else {
        return Ok(Step::Act(Action::Call {
            tool: direct.tool,
            arguments: direct.arguments,
        }));
    };
    let value = done
        .value()
        .map_err(|error| format!("{} failed: {error}", tools::label(direct.tool)))?;
    let text = crate::summary::result_text(value, 4000);
    let text = text.trim();
    let mut key_facts = Map::new();
    key_facts.insert("tool".into(), json!(tools::label(direct.tool)));
    key_facts.insert("arguments".into(), direct.arguments);
    if let Some(structured) = value.get("structuredContent") {
        key_facts.insert("result".into(), structured.clone());
    } else {
        key_facts.insert("result".into(), json!(text));
    }
    let answer = if text.is_empty() {
        format!("{} returned nothing.", tools::label(direct.tool))
    } else {
        format!("{} returned: {text}", tools::label(direct.tool))
    };
    Ok(Step::Act(Action::Finish { answer, key_facts }))
}

/// A call the task asks for by the tool's name.
#[derive(Debug, Clone)]
pub(crate) struct DirectCall<'a> {
    pub(crate) tool: &'a ExposedTool,
    pub(crate) arguments: Value,
}

/// The words of a tool's name: `get_tiny-image.v2` and `getTinyImage` both give get, tiny,
/// image (and v2).
pub(crate) fn name_words(name: &str) -> Vec<String> {
    let mut spaced = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if c.is_uppercase() && previous_lower {
            spaced.push(' ');
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        spaced.push(if c.is_alphanumeric() { c } else { ' ' });
    }
    words::words(&spaced)
}

/// Filler between a tool's name and the text it should get ("echo *the text* hello").
const FILLER: [&str; 12] = [
    "text",
    "message",
    "string",
    "word",
    "words",
    "saying",
    "back",
    "phrase",
    "this",
    "following",
    "value",
    "input",
];

/// The call the task names, when exactly one tool qualifies.
pub(crate) fn call<'a>(
    task: &str,
    tools: &'a [ExposedTool],
    ranked: &[String],
) -> Option<DirectCall<'a>> {
    let task_words = words::words(task);
    let mut candidates: Vec<(usize, usize, DirectCall<'a>)> = tools
        .iter()
        // A guess never deletes or overwrites: a tool that says it may is left to a model.
        .filter(|tool| !tool.destructive)
        .filter_map(|tool| {
            let meaningful: Vec<String> = name_words(&tool.tool)
                .into_iter()
                .filter(|w| w.chars().count() >= 3 && !words::is_stop_word(w))
                .collect();
            if meaningful.is_empty() {
                return None;
            }
            let positions: Vec<usize> = meaningful
                .iter()
                .map(|part| {
                    task_words
                        .iter()
                        .position(|w| words::stem(w) == words::stem(part) || words::close(w, part))
                })
                .collect::<Option<Vec<usize>>>()?;
            let after = positions.iter().max().map_or(0, |last| last + 1);
            let arguments = arguments(task, &task_words[after..], tool)?;
            let rank = ranked
                .iter()
                .position(|name| *name == tool.name)
                .unwrap_or(usize::MAX);
            Some((meaningful.len(), rank, DirectCall { tool, arguments }))
        })
        .collect();
    // The tool whose name matches the most words; a tie is ambiguous.
    candidates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    match candidates.as_slice() {
        [] => None,
        [(_, _, only)] => Some(only.clone()),
        [(best, _, first), (next, _, _), ..] => (best > next).then(|| first.clone()),
    }
}

/// The required arguments from the task, or `None` when one cannot be filled.
fn arguments(task: &str, rest: &[String], tool: &ExposedTool) -> Option<Value> {
    let properties = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = tool
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut numbers = words::numbers(task).into_iter();
    let strings = required
        .iter()
        .filter(|name| {
            let schema = properties.get(**name);
            kind(schema) == "string" && enum_values(schema).is_empty()
        })
        .count();
    let mut arguments = Map::new();
    for name in &required {
        let schema = properties.get(*name);
        let values = enum_values(schema);
        let value = if !values.is_empty() {
            let task_words = words::words(task);
            let named: Vec<&Value> = values
                .iter()
                .filter(|value| {
                    value.as_str().is_some_and(|text| {
                        let text = text.to_lowercase();
                        task_words.contains(&text)
                    })
                })
                .collect();
            match named.as_slice() {
                [one] => (*one).clone(),
                _ => return None,
            }
        } else {
            match kind(schema) {
                "number" => json!(numbers.next()?),
                "integer" => {
                    let number = numbers.next()?;
                    if number.fract() != 0.0 {
                        return None;
                    }
                    json!(number as i64)
                }
                "string" if strings == 1 => json!(text_argument(task, rest, name)?),
                _ => return None,
            }
        };
        arguments.insert((*name).to_owned(), value);
    }
    Some(Value::Object(arguments))
}

fn kind(schema: Option<&Value>) -> &str {
    schema
        .and_then(|s| s.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn enum_values(schema: Option<&Value>) -> Vec<Value> {
    schema
        .and_then(|s| s.get("enum"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The text for a single string parameter: what the task quotes, else its words after the
/// tool's name without the filler that introduces them ("the text", "the message").
fn text_argument(task: &str, rest: &[String], parameter: &str) -> Option<String> {
    if let Some(quoted) = parse::quoted(task) {
        return Some(quoted);
    }
    let parameter = parameter.to_lowercase();
    let start = rest.iter().position(|w| {
        !(words::is_stop_word(w) || FILLER.contains(&w.as_str()) || *w == parameter)
    })?;
    // The task's own spelling and case, from the first kept word on.
    let first = &rest[start];
    let lower = task.to_lowercase();
    let from = lower.rfind(first.as_str())?;
    let text = task[from..]
        .trim()
        .trim_end_matches(['.', '?', '!'])
        .trim()
        .to_owned();
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::super::tools::tests::{tool, toolkit};
    use super::*;

    fn everything() -> Vec<ExposedTool> {
        let mut tools = toolkit();
        tools.push(tool(
            "echo",
            "Echoes back the input",
            json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        ));
        tools.push(tool(
            "add",
            "Adds two numbers",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
        ));
        tools.push(tool(
            "annotatedMessage",
            "Shows annotations",
            json!({"type": "object", "properties": {"messageType": {"type": "string", "enum": ["error", "success", "debug"]}, "includeImage": {"type": "boolean"}}, "required": ["messageType"]}),
        ));
        tools.push(tool(
            "getResourceReference",
            "A resource reference",
            json!({"type": "object", "properties": {"resourceId": {"type": "integer"}}, "required": ["resourceId"]}),
        ));
        tools
    }

    fn chosen(task: &str) -> Option<(String, Value)> {
        let tools = everything();
        call(task, &tools, &[]).map(|c| (c.tool.tool.clone(), c.arguments))
    }

    #[test]
    fn a_named_tool_gets_its_arguments_from_the_task() {
        assert_eq!(
            chosen("Echo the text hello world"),
            Some(("echo".into(), json!({"message": "hello world"})))
        );
        assert_eq!(
            chosen("echo \"Hi there\" please"),
            Some(("echo".into(), json!({"message": "Hi there"})))
        );
        assert_eq!(
            chosen("Show an annotated message of type error"),
            Some(("annotatedMessage".into(), json!({"messageType": "error"})))
        );
        assert_eq!(
            chosen("Get the resource reference 7"),
            Some(("getResourceReference".into(), json!({"resourceId": 7})))
        );
        assert_eq!(
            chosen("add 2 and 3"),
            Some(("add".into(), json!({"a": 2.0, "b": 3.0})))
        );
    }

    #[test]
    fn no_call_when_a_parameter_cannot_be_filled_or_the_name_is_not_said() {
        // No text after the name, no number, no enum value named.
        assert!(chosen("echo").is_none());
        assert!(chosen("Get the resource reference").is_none());
        assert!(chosen("Show an annotated message").is_none());
        assert!(chosen("add 2").is_none());
        assert!(chosen("What's the weather in Paris?").is_none());
        // A fractional number is no integer.
        assert!(chosen("Get the resource reference 2.5").is_none());
        assert_eq!(name_words("getTinyImage"), ["get", "tiny", "image"]);
        assert_eq!(name_words("list_allowed-dirs"), ["list", "allowed", "dirs"]);
    }

    #[test]
    fn a_destructive_tool_is_never_called_by_name() {
        let mut tools = everything();
        let mut delete = tool(
            "delete_file",
            "Deletes a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        );
        delete.destructive = true;
        tools.push(delete);
        assert!(call("Delete the file notes.txt", &tools, &[]).is_none());
    }

    #[test]
    fn two_tools_that_match_equally_are_ambiguous() {
        let mut tools = everything();
        tools.push(tool(
            "echo_loud",
            "Echoes loudly",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        ));
        // "echo" alone: echo matches one word, echo_loud does not match "loud": echo wins.
        assert_eq!(
            call("echo hi", &tools, &[]).map(|c| c.tool.tool.clone()),
            Some("echo".into())
        );
        let mut twins = everything();
        twins.push(tool(
            "echo",
            "Another echo",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        ));
        assert!(call("echo hi", &twins, &[]).is_none());
    }
}
