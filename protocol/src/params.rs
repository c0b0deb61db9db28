//! Every method's params type as the one statement of its shape: [`MethodParams`] gives each
//! the text an error names as the expected shape (`{"server": string, "tool": string}`) and
//! what a request without params means, and [`check_shape`] holds that text against the type
//! itself (its members, which are required, and their JSON kinds), so the two cannot drift.
//!
//! The shape text is a small notation: an object of `"member": type` (`"member"?:` when it may
//! be left out), where a type is `string`, `integer`, `number`, `boolean`, `object`, `[type]`,
//! `{string: type}` (an object of any keys), `"a" | "b"` (one of these strings), or words that
//! describe a string (`glob`, `"server/tool" glob`) or another method's params (`callTool
//! params`).

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, DeserializeOwned, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::agent::{AgentEventsParams, CancelAgentParams, RunAgentParams};
use crate::elicitation::AnswerElicitationParams;
use crate::manage::{
    AddServerParams, RemoveServerParams, StartRecordingParams, StopRecordingParams,
};
use crate::methods::{
    CallEventsParams, CallToolParams, DescribeToolParams, GetPromptParams, HealthParams,
    ListPromptsParams, ListTasksParams, MintTokenParams, ReadResourceParams, ReadSpilledParams,
    RevokeTokenParams, ServerParams, TaskParams,
};
use crate::orchestration::{CallChainParams, CallManyParams, OpenSessionParams, SessionParams};
use crate::remote_auth::{AuthCompleteParams, AuthLoginParams};
use crate::search::{ListToolsParams, SearchToolsParams};
use crate::trace::TracesReportParams;

/// The params of a method.
pub trait MethodParams: DeserializeOwned + Send + 'static {
    /// The shape an error about these params names as what was expected.
    const SHAPE: &'static str;

    /// Members the type takes in any JSON kind although the shape names one, because the
    /// method checks them itself with a better message than a parse error could give.
    const CHECKED_BY_THE_METHOD: &'static [&'static str] = &[];

    /// What a request without params means: `None` when params are required, else the value
    /// they stand for (every member left out).
    fn when_absent() -> Option<Self> {
        None
    }
}

/// The params of a method that takes none: absent, `{}` or `[]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct NoParams;

impl<'de> Deserialize<'de> for NoParams {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<NoParams, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Object(members) if members.is_empty() => Ok(NoParams),
            Value::Array(items) if items.is_empty() => Ok(NoParams),
            _ => Err(de::Error::custom("this method takes no params")),
        }
    }
}

impl MethodParams for NoParams {
    const SHAPE: &'static str = "no params";

    fn when_absent() -> Option<NoParams> {
        Some(NoParams)
    }
}

/// The params of a method that reads none and accepts any (the discovery methods the reference
/// bridge answers whatever they are sent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct IgnoredParams;

impl<'de> Deserialize<'de> for IgnoredParams {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<IgnoredParams, D::Error> {
        de::IgnoredAny::deserialize(deserializer)?;
        Ok(IgnoredParams)
    }
}

impl MethodParams for IgnoredParams {
    const SHAPE: &'static str = "any params (they are not read)";

    fn when_absent() -> Option<IgnoredParams> {
        Some(IgnoredParams)
    }
}

macro_rules! shapes {
    ($($params:ty: $shape:literal $(, absent = $absent:ident)? $(, checked = $checked:expr)?;)*) => {$(
        impl MethodParams for $params {
            const SHAPE: &'static str = $shape;
            $(const CHECKED_BY_THE_METHOD: &'static [&'static str] = $checked;)?
            $(
                fn when_absent() -> Option<Self> {
                    shapes!(@$absent)
                }
            )?
        }
    )*};
    (@default) => { Some(Default::default()) };
}

// `absent = default`: a request without params is every member left out.
shapes! {
    ServerParams: r#"{"server": string}"#;
    DescribeToolParams: r#"{"server": string, "tool": string}"#;
    CallToolParams: r#"{"server"?: string, "tool": string, "arguments"?: object, "timeoutMs"?: integer, "confirm"?: boolean, "dryRun"?: boolean, "hint"?: string, "sessionId"?: string, "idempotencyKey"?: string, "alternatives"?: boolean, "progress"?: boolean, "progressId"?: string, "resetTimeoutOnProgress"?: boolean, "maxTotalTimeoutMs"?: integer, "task"?: object}"#;
    CallEventsParams: r#"{"progressId": string, "after"?: integer, "waitMs"?: integer}"#;
    TaskParams: r#"{"taskId": string, "sessionId"?: string}"#;
    ListTasksParams: r#"{"sessionId"?: string}"#, absent = default;
    MintTokenParams: r#"{"servers"?: [glob], "tools"?: ["server/tool" glob], "resources"?: ["server/uri" glob], "prompts"?: ["server/prompt" glob], "readOnly"?: boolean, "ttlSeconds"?: integer, "label"?: string, "gatewayMode"?: "pass-through" | "progressive"}"#, absent = default;
    ReadSpilledParams: r#"{"id": string, "offset"?: integer, "length"?: integer}"#;
    RevokeTokenParams: r#"{"tokenId": string}"#;
    ReadResourceParams: r#"{"server": string, "uri": string}"#;
    HealthParams: r#"{"tools"?: boolean}"#, absent = default;
    ListPromptsParams: r#"{"server"?: string}"#, absent = default;
    GetPromptParams: r#"{"server": string, "name": string, "arguments"?: {string: string}}"#;
    OpenSessionParams: r#"{"task"?: string, "labels"?: [string], "sessionId"?: string, "maxCalls"?: integer, "maxWallTimeMs"?: integer}"#, absent = default;
    SessionParams: r#"{"sessionId": string}"#;
    CallChainParams: r#"{"steps": [{"server"?: string, "tool": string, "arguments"?: object, "bind"?: object, "hint"?: string}], "sessionId"?: string, "timeoutMs"?: integer, "confirm"?: boolean, "dryRun"?: boolean}"#;
    CallManyParams: r#"{"calls": [callTool params], "maxConcurrent"?: integer, "sessionId"?: string}"#;
    AuthLoginParams: r#"{"server": string, "redirectUri": "http://127.0.0.1:PORT/PATH"}"#;
    AuthCompleteParams: r#"{"server": string, "redirectUrl": string}"#;
    SearchToolsParams: r#"{"query": string, "limit"?: integer, "servers"?: [string], "tags"?: [string], "sessionId"?: string, "includeSchema"?: boolean}"#;
    ListToolsParams: r#"{"server"?: string, "cursor"?: string, "limit"?: integer}"#, absent = default;
    TracesReportParams: r#"{"since"?: "24h" | "2026-05-01", "by"?: "day" | "server" | "tool" | "session", "executedOnly"?: boolean}"#, absent = default;
    // `answerSchema` is compiled as a JSON Schema by the agent, which says what was wrong with it.
    RunAgentParams: r#"{"task": string, "runId"?: string, "sessionId"?: string, "backend"?: string, "model"?: string, "maxSteps"?: integer, "costCeilingUsd"?: number, "dryRun"?: boolean, "confirmDestructive"?: boolean, "answerSchema"?: object, "servers"?: [string], "tools"?: [string], "toolLimit"?: integer, "timeoutMs"?: integer}"#, checked = &["answerSchema"];
    AgentEventsParams: r#"{"runId": string, "after"?: integer, "waitMs"?: integer}"#;
    CancelAgentParams: r#"{"runId": string}"#;
    // `content` is checked against the question's schema, which says what was wrong with it.
    AnswerElicitationParams: r#"{"progressId": string, "elicitationId": string, "action": "accept" | "decline" | "cancel", "content"?: object}"#, checked = &["content"];
    AddServerParams: r#"{"name": string, "config": {"command": string, "args"?: [string], "env"?: object} | {"url": string, "headers"?: object}}"#;
    RemoveServerParams: r#"{"name": string}"#;
    StartRecordingParams: r#"{"server": string, "out": string}"#;
    StopRecordingParams: r#"{"server": string}"#;
}

/// Holds `P::SHAPE` against `P`: the members it names are the type's members; a value made
/// from the shape (every member, with a value of its kind) is accepted; leaving out a member
/// the shape marks optional is accepted and leaving out one it marks required is refused; and
/// a value of another JSON kind for a member of a plain kind is refused (unless the method
/// checks that member itself: [`MethodParams::CHECKED_BY_THE_METHOD`]). `Err` says what
/// disagrees.
pub fn check_shape<P: MethodParams>() -> Result<(), String> {
    // The generic part is only what needs `P`: its serde members and a deserialize of a
    // candidate. The rest is one function for every params type, not one copy per type (this
    // is instantiated for every method the daemon registers, ~30 of them).
    check_shape_of(
        P::SHAPE,
        P::CHECKED_BY_THE_METHOD,
        serde_fields::<P>,
        accepts::<P>,
    )
}

/// Reads a params type's member names ([`serde_fields`] of that type).
type ReadFields = fn() -> Result<Vec<&'static str>, String>;

/// Deserializes a candidate object as a params type, `Err` with serde's message.
type TryCandidate = fn(&Map<String, Value>) -> Result<(), String>;

/// [`check_shape`] without the type: `fields` reads the type's member names, `accepts` tries
/// a candidate object.
fn check_shape_of(
    shape: &str,
    checked_by_the_method: &[&str],
    fields: ReadFields,
    accepts: TryCandidate,
) -> Result<(), String> {
    if matches!(shape, "no params" | "any params (they are not read)") {
        return Ok(());
    }
    let parsed = Shape::parse(shape).map_err(|error| format!("{shape}: {error}"))?;
    let Shape::Object(members) = &parsed else {
        return Err(format!("{shape}: the params shape is not an object"));
    };
    let declared: BTreeSet<&str> = members.iter().map(|member| member.name.as_str()).collect();
    let fields = fields()?;
    let known: BTreeSet<&str> = fields.iter().copied().collect();
    if declared != known {
        return Err(format!(
            "{shape}: the shape names {declared:?}, the type has {known:?}"
        ));
    }
    let full = parsed
        .sample()
        .ok_or_else(|| format!("{shape}: no value can be made from the shape"))?;
    let Value::Object(full) = full else {
        unreachable!("an object shape makes an object");
    };
    accepts(&full).map_err(|error| format!("{shape}: {full:?} is refused: {error}"))?;
    for member in members {
        let mut without = full.clone();
        without.remove(&member.name);
        match (member.optional, accepts(&without)) {
            (true, Err(error)) => {
                return Err(format!(
                    "{shape}: \"{}\" is marked optional, but leaving it out is refused: {error}",
                    member.name
                ));
            }
            (false, Ok(())) => {
                return Err(format!(
                    "{shape}: \"{}\" is marked required, but leaving it out is accepted",
                    member.name
                ));
            }
            _ => {}
        }
        if let Some(other) = member
            .kind
            .other_kind()
            .filter(|_| !checked_by_the_method.contains(&member.name.as_str()))
        {
            let mut mistyped = full.clone();
            mistyped.insert(member.name.clone(), other.clone());
            if accepts(&mistyped).is_ok() {
                return Err(format!(
                    "{shape}: \"{}\" is {}, but {other} is accepted for it",
                    member.name,
                    member.kind.describe()
                ));
            }
        }
    }
    Ok(())
}

fn accepts<P: DeserializeOwned>(members: &Map<String, Value>) -> Result<(), String> {
    serde_json::from_value::<P>(Value::Object(members.clone()))
        .map(|_| ())
        .map_err(|error| error.to_string())
}

/// The member names a derived `Deserialize` of `P` knows, read from what it hands
/// `deserialize_struct`.
fn serde_fields<P: DeserializeOwned>() -> Result<Vec<&'static str>, String> {
    #[derive(Debug)]
    struct Fields(Result<Vec<&'static str>, String>);
    impl fmt::Display for Fields {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "{:?}", self.0)
        }
    }
    impl std::error::Error for Fields {}
    impl de::Error for Fields {
        fn custom<T: fmt::Display>(message: T) -> Fields {
            Fields(Err(message.to_string()))
        }
    }
    struct Probe;
    impl<'de> de::Deserializer<'de> for Probe {
        type Error = Fields;
        fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Fields> {
            Err(Fields(Err(
                "the type is not a struct with named members".to_owned()
            )))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Fields> {
            Err(Fields(Ok(fields.to_vec())))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    match P::deserialize(Probe) {
        Ok(_) => Err("the type deserialized from nothing".to_owned()),
        Err(Fields(fields)) => fields,
    }
}

/// A parsed shape text.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    /// `{"a": T, "b"?: U}`.
    Object(Vec<Member>),
    /// `{string: T}`.
    Map(Box<Shape>),
    /// `[T]`.
    Array(Box<Shape>),
    /// `string`, `integer`, `number`, `boolean`, `object`.
    Kind(&'static str),
    /// `"a" | "b"`: one of these strings.
    Choice(Vec<String>),
    /// Alternatives of other kinds (`{…} | {…}`): any of them.
    Either(Vec<Shape>),
    /// Words describing a string (`glob`, `"server/tool" glob`).
    Text,
    /// Words naming something else (`callTool params`): not checked.
    Other,
}

/// One member of an object shape.
#[derive(Debug, Clone, PartialEq)]
struct Member {
    name: String,
    optional: bool,
    kind: Shape,
}

impl Shape {
    fn parse(text: &str) -> Result<Shape, String> {
        let tokens = tokenize(text)?;
        let mut parser = Parser { tokens, at: 0 };
        let shape = parser.alternatives()?;
        if parser.at != parser.tokens.len() {
            return Err(format!(
                "unexpected {:?} after the shape",
                parser.tokens[parser.at]
            ));
        }
        Ok(shape)
    }

    /// A value of this shape, when one can be made.
    fn sample(&self) -> Option<Value> {
        Some(match self {
            Shape::Object(members) => {
                let mut object = Map::new();
                for member in members {
                    match member.kind.sample() {
                        Some(value) => {
                            object.insert(member.name.clone(), value);
                        }
                        None if member.optional => {}
                        None => return None,
                    }
                }
                Value::Object(object)
            }
            Shape::Map(value) => {
                let mut object = Map::new();
                object.insert("key".to_owned(), value.sample()?);
                Value::Object(object)
            }
            Shape::Array(item) => Value::Array(item.sample().into_iter().collect()),
            Shape::Kind("string") | Shape::Text => Value::from("text"),
            Shape::Kind("integer") => Value::from(1),
            Shape::Kind("number") => Value::from(1.5),
            Shape::Kind("boolean") => Value::from(true),
            Shape::Kind(_) => Value::Object(Map::new()),
            Shape::Choice(choices) => Value::from(choices.first()?.clone()),
            Shape::Either(shapes) => shapes.first()?.sample()?,
            Shape::Other => return None,
        })
    }

    /// A value of another JSON kind, which a member of this shape must refuse; `None` when
    /// the shape is not of one plain kind.
    fn other_kind(&self) -> Option<Value> {
        match self {
            Shape::Kind("string") | Shape::Text | Shape::Choice(_) | Shape::Array(_) => {
                Some(Value::from(7))
            }
            Shape::Kind("integer" | "number" | "boolean") | Shape::Object(_) | Shape::Map(_) => {
                Some(Value::from("seven"))
            }
            Shape::Kind(_) => Some(Value::from(7)),
            Shape::Either(_) | Shape::Other => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Shape::Kind(kind) => format!("a {kind}"),
            Shape::Text | Shape::Choice(_) => "a string".to_owned(),
            Shape::Array(_) => "an array".to_owned(),
            Shape::Object(_) | Shape::Map(_) => "an object".to_owned(),
            Shape::Either(_) | Shape::Other => "of several kinds".to_owned(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Punct(char),
    Literal(String),
    Word(String),
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&next) = chars.peek() {
        match next {
            ' ' => {
                chars.next();
            }
            '{' | '}' | '[' | ']' | ':' | ',' | '?' | '|' => {
                tokens.push(Token::Punct(next));
                chars.next();
            }
            '"' => {
                chars.next();
                let mut literal = String::new();
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some(c) => literal.push(c),
                        None => return Err("a string that does not end".to_owned()),
                    }
                }
                tokens.push(Token::Literal(literal));
            }
            c if c.is_alphanumeric() => {
                let mut word = String::new();
                while let Some(&c) = chars.peek() {
                    if !c.is_alphanumeric() {
                        break;
                    }
                    word.push(c);
                    chars.next();
                }
                tokens.push(Token::Word(word));
            }
            other => return Err(format!("unexpected character {other:?}")),
        }
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn expect(&mut self, punct: char) -> Result<(), String> {
        match self.tokens.get(self.at) {
            Some(Token::Punct(found)) if *found == punct => {
                self.at += 1;
                Ok(())
            }
            other => Err(format!("expected {punct:?}, found {other:?}")),
        }
    }

    fn alternatives(&mut self) -> Result<Shape, String> {
        let mut terms = vec![self.term()?];
        while self.peek() == Some(&Token::Punct('|')) {
            self.at += 1;
            terms.push(self.term()?);
        }
        if terms.len() == 1 {
            return Ok(terms.remove(0));
        }
        let choices: Option<Vec<String>> = terms
            .iter()
            .map(|term| match term {
                Shape::Choice(choices) if choices.len() == 1 => Some(choices[0].clone()),
                _ => None,
            })
            .collect();
        Ok(match choices {
            Some(choices) => Shape::Choice(choices),
            None => Shape::Either(terms),
        })
    }

    fn term(&mut self) -> Result<Shape, String> {
        match self.peek().cloned() {
            Some(Token::Punct('{')) => self.object(),
            Some(Token::Punct('[')) => {
                self.at += 1;
                let item = self.alternatives()?;
                self.expect(']')?;
                Ok(Shape::Array(Box::new(item)))
            }
            Some(Token::Literal(literal)) => {
                self.at += 1;
                // A string literal followed by words describes a string.
                if matches!(self.peek(), Some(Token::Word(_))) {
                    self.words();
                    return Ok(Shape::Text);
                }
                Ok(Shape::Choice(vec![literal]))
            }
            Some(Token::Word(_)) => {
                let words = self.words();
                Ok(match words.as_slice() {
                    [one] => match one.as_str() {
                        "string" => Shape::Kind("string"),
                        "integer" => Shape::Kind("integer"),
                        "number" => Shape::Kind("number"),
                        "boolean" => Shape::Kind("boolean"),
                        "object" => Shape::Kind("object"),
                        "glob" => Shape::Text,
                        _ => Shape::Other,
                    },
                    _ => Shape::Other,
                })
            }
            other => Err(format!("expected a type, found {other:?}")),
        }
    }

    fn words(&mut self) -> Vec<String> {
        let mut words = Vec::new();
        while let Some(Token::Word(word)) = self.peek() {
            words.push(word.clone());
            self.at += 1;
        }
        words
    }

    fn object(&mut self) -> Result<Shape, String> {
        self.expect('{')?;
        if self.peek() == Some(&Token::Word("string".to_owned())) {
            self.at += 1;
            self.expect(':')?;
            let value = self.alternatives()?;
            self.expect('}')?;
            return Ok(Shape::Map(Box::new(value)));
        }
        let mut members = Vec::new();
        if self.peek() == Some(&Token::Punct('}')) {
            self.at += 1;
            return Ok(Shape::Object(members));
        }
        loop {
            let name = match self.peek().cloned() {
                Some(Token::Literal(name)) => name,
                other => return Err(format!("expected a member name, found {other:?}")),
            };
            self.at += 1;
            let optional = self.peek() == Some(&Token::Punct('?'));
            if optional {
                self.at += 1;
            }
            self.expect(':')?;
            let kind = self.alternatives()?;
            members.push(Member {
                name,
                optional,
                kind,
            });
            match self.peek() {
                Some(Token::Punct(',')) => self.at += 1,
                Some(Token::Punct('}')) => {
                    self.at += 1;
                    return Ok(Shape::Object(members));
                }
                other => return Err(format!("expected ',' or '}}', found {other:?}")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every params type of the protocol: the daemon's registration checks the ones it serves
    /// as well, so a new method's params cannot skip the check.
    #[test]
    fn every_shape_text_agrees_with_its_type() {
        type Check = fn() -> Result<(), String>;
        let checks: &[(&str, Check)] = &[
            ("ServerParams", check_shape::<ServerParams>),
            ("DescribeToolParams", check_shape::<DescribeToolParams>),
            ("CallToolParams", check_shape::<CallToolParams>),
            ("TaskParams", check_shape::<TaskParams>),
            ("ListTasksParams", check_shape::<ListTasksParams>),
            ("CallEventsParams", check_shape::<CallEventsParams>),
            ("MintTokenParams", check_shape::<MintTokenParams>),
            ("ReadSpilledParams", check_shape::<ReadSpilledParams>),
            ("RevokeTokenParams", check_shape::<RevokeTokenParams>),
            ("ReadResourceParams", check_shape::<ReadResourceParams>),
            ("HealthParams", check_shape::<HealthParams>),
            ("ListPromptsParams", check_shape::<ListPromptsParams>),
            ("GetPromptParams", check_shape::<GetPromptParams>),
            ("OpenSessionParams", check_shape::<OpenSessionParams>),
            ("SessionParams", check_shape::<SessionParams>),
            ("CallChainParams", check_shape::<CallChainParams>),
            ("CallManyParams", check_shape::<CallManyParams>),
            ("AuthLoginParams", check_shape::<AuthLoginParams>),
            ("AuthCompleteParams", check_shape::<AuthCompleteParams>),
            ("SearchToolsParams", check_shape::<SearchToolsParams>),
            ("ListToolsParams", check_shape::<ListToolsParams>),
            ("TracesReportParams", check_shape::<TracesReportParams>),
            ("RunAgentParams", check_shape::<RunAgentParams>),
            ("AgentEventsParams", check_shape::<AgentEventsParams>),
            ("CancelAgentParams", check_shape::<CancelAgentParams>),
            (
                "AnswerElicitationParams",
                check_shape::<AnswerElicitationParams>,
            ),
            ("AddServerParams", check_shape::<AddServerParams>),
            ("RemoveServerParams", check_shape::<RemoveServerParams>),
            ("StartRecordingParams", check_shape::<StartRecordingParams>),
            ("StopRecordingParams", check_shape::<StopRecordingParams>),
        ];
        let failures: Vec<String> = checks
            .iter()
            .filter_map(|(name, check)| check().err().map(|error| format!("{name}: {error}")))
            .collect();
        assert!(failures.is_empty(), "{failures:#?}");
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Sample {
        server: String,
        #[serde(default)]
        limit: Option<u32>,
    }

    impl MethodParams for Sample {
        const SHAPE: &'static str = r#"{"server": string, "limit"?: integer}"#;
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Drifted {
        server: String,
        #[serde(default)]
        limit: Option<String>,
        #[serde(default)]
        tools: Option<bool>,
    }

    impl MethodParams for Drifted {
        const SHAPE: &'static str = r#"{"server"?: string, "limit"?: integer}"#;
    }

    #[test]
    fn a_shape_that_drifted_from_its_type_is_caught() {
        assert_eq!(check_shape::<Sample>(), Ok(()));
        let error = check_shape::<Drifted>().unwrap_err();
        assert!(error.contains("\"tools\""), "{error}");
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Required {
            server: String,
        }
        impl MethodParams for Required {
            const SHAPE: &'static str = r#"{"server"?: string}"#;
        }
        let error = check_shape::<Required>().unwrap_err();
        assert!(error.contains("marked optional"), "{error}");
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Kind {
            limit: String,
        }
        impl MethodParams for Kind {
            const SHAPE: &'static str = r#"{"limit": integer}"#;
        }
        let error = check_shape::<Kind>().unwrap_err();
        assert!(error.contains("is refused"), "{error}");
    }

    #[test]
    fn no_params_accepts_nothing_but_empty() {
        assert!(serde_json::from_str::<NoParams>("{}").is_ok());
        assert!(serde_json::from_str::<NoParams>("[]").is_ok());
        assert!(serde_json::from_str::<NoParams>(r#"{"x": 1}"#).is_err());
        assert!(serde_json::from_str::<IgnoredParams>(r#"{"x": [1]}"#).is_ok());
        assert_eq!(NoParams::when_absent(), Some(NoParams));
        assert!(ServerParams::when_absent().is_none());
        assert!(HealthParams::when_absent().is_some());
    }
}
