//! The progressive mode's meta-tools: a host holds six small definitions whatever the pool
//! holds, and finds, reads and calls the pool's tools through them.
//!
//! - `list_servers {}`: the servers, what each is for, how many tools;
//! - `search_tools {query, server}`: the best 8 tools for a task, as compact text;
//! - `describe_tool {tool}`: one tool's description and input schema;
//! - `call_read_only_tool`, `call_write_tool`, `call_destructive_tool` `{tool, arguments}`:
//!   the call, split three ways by what the tool may do.
//!
//! **Why the call is split, not annotated.** A host decides what to ask the user per tool
//! *name* and from that tool's annotations (Claude Code's and Cursor's per-tool permissions,
//! VS Code's confirmation of non-read-only tools). One `call_tool` must carry the worst
//! annotations of everything it can reach (`destructiveHint: true`), so a host would ask for
//! every read, or a user would "always allow" it and with it every delete. Three call tools
//! carry honest annotations each, and the gateway refuses a call whose tool needs more than
//! its call tool admits (a destructive tool through `call_read_only_tool` is refused, naming
//! `call_destructive_tool`). A tool's access comes from its annotations with MCP's defaults
//! (see [`Access::of`]): a tool that says nothing is destructive.
//!
//! **Why `arguments` is a string.** OpenAI's strict mode and Anthropic's strict tool use both
//! require `additionalProperties: false` on every object, so a free-form arguments object
//! cannot be declared; `arguments` is the JSON text of the object, as OpenAI's own function
//! calls carry their arguments. [`MetaToolCall::parse`] also takes an object, for hosts that
//! send one.
//!
//! Every definition is valid under both providers' strict rules ([`crate::provider_schema`]),
//! is marked `_meta["anthropic/alwaysLoad"]` (Claude Code never defers it behind its own tool
//! search), and the six fit the budgets with room to spare (`docs/gateway.md` has the counts).

pub mod render;

use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The tools a host sees in progressive mode.
pub const LIST_SERVERS: &str = "list_servers";
/// Searches the pool.
pub const SEARCH_TOOLS: &str = "search_tools";
/// One tool's schema.
pub const DESCRIBE_TOOL: &str = "describe_tool";
/// Calls a read-only tool.
pub const CALL_READ_ONLY_TOOL: &str = "call_read_only_tool";
/// Calls a tool that writes but does not destroy.
pub const CALL_WRITE_TOOL: &str = "call_write_tool";
/// Calls a tool that may destroy.
pub const CALL_DESTRUCTIVE_TOOL: &str = "call_destructive_tool";

/// How many tools `search_tools` answers with (the 700-token budget is for these).
pub const SEARCH_RESULTS: usize = 8;

/// The server instructions of a progressive gateway (≤ 400 tokens; `docs/gateway.md`).
pub const INSTRUCTIONS: &str = "\
This server is a gateway to the tools of several MCP servers. Their definitions are not \
listed up front: find a tool when you need one.
1. search_tools with what you want to do, in plain words (\"create a GitHub issue\"). \
list_servers shows which servers there are; pass one as `server` to search only its tools.
2. describe_tool with a name from the results (server__tool) to read its input schema.
3. Call it with the call tool its access label names: [read] call_read_only_tool, [write] \
call_write_tool, [destructive] call_destructive_tool. `arguments` is the JSON object of \
arguments written as a string, matching the schema, e.g. \"{\\\"path\\\": \\\"notes.txt\\\"}\".
A call whose arguments do not match the schema is refused with the schema; a tool whose \
definition changed since it was approved is withheld until a person approves it again. \
Results are the tool's own, unchanged.";

/// What a tool may do, from its annotations: which call tool reaches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Access {
    /// `readOnlyHint: true`.
    ReadOnly,
    /// Not read-only, and `destructiveHint: false` said explicitly.
    Write,
    /// Anything else: MCP's defaults are `readOnlyHint: false`, `destructiveHint: true`.
    Destructive,
}

impl Access {
    /// The access of a tool with these `annotations` (`Value::Null` when it has none). Only
    /// the JSON booleans count; a missing or malformed hint takes MCP's default.
    pub fn of(annotations: &Value) -> Access {
        let hint = |name: &str| annotations.get(name).and_then(Value::as_bool);
        if hint("readOnlyHint") == Some(true) {
            Access::ReadOnly
        } else if hint("destructiveHint") == Some(false) {
            Access::Write
        } else {
            Access::Destructive
        }
    }

    /// The label search results carry: `read`, `write`, `destructive`.
    pub fn label(self) -> &'static str {
        match self {
            Access::ReadOnly => "read",
            Access::Write => "write",
            Access::Destructive => "destructive",
        }
    }

    /// The call tool for this access.
    pub fn call_tool(self) -> &'static str {
        match self {
            Access::ReadOnly => CALL_READ_ONLY_TOOL,
            Access::Write => CALL_WRITE_TOOL,
            Access::Destructive => CALL_DESTRUCTIVE_TOOL,
        }
    }

    /// Whether a call tool of this access may call a tool of `tool` access: the same or a
    /// lesser one (a read through `call_destructive_tool` only asked the user for more).
    pub fn admits(self, tool: Access) -> bool {
        tool <= self
    }
}

/// The meta-tools' definitions: the `tools` of a progressive `tools/list`, in a fixed order.
pub fn definitions() -> Vec<Value> {
    let always_load = json!({"anthropic/alwaysLoad": true});
    let tool_parameter = json!({
        "type": "string",
        "description": "A tool name from search_tools (server__tool)."
    });
    let call = |name: &str, access: Access, what: &str| {
        let annotations = match access {
            Access::ReadOnly => json!({"readOnlyHint": true}),
            Access::Write => json!({"readOnlyHint": false, "destructiveHint": false}),
            Access::Destructive => json!({"readOnlyHint": false, "destructiveHint": true}),
        };
        json!({
            "name": name,
            "description": format!(
                "Call a [{}] tool ({what}). Read its schema with describe_tool first.",
                access.label()
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "tool": tool_parameter,
                    "arguments": {
                        "type": "string",
                        "description": "Its arguments: a JSON object as a string, per its schema; \"{}\" for none."
                    }
                },
                "required": ["tool", "arguments"],
                "additionalProperties": false
            },
            "annotations": annotations,
            "_meta": always_load
        })
    };
    let lookup = json!({"readOnlyHint": true, "openWorldHint": false});
    vec![
        json!({
            "name": LIST_SERVERS,
            "description": "List the servers behind this gateway: what each is for and its tool count.",
            "inputSchema": {"type": "object", "properties": {}, "required": [], "additionalProperties": false},
            "annotations": lookup,
            "_meta": always_load
        }),
        json!({
            "name": SEARCH_TOOLS,
            "description": format!(
                "Find tools for a task: the best {SEARCH_RESULTS} across all servers, as \
                 name [access]: description."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What you want to do, in plain words."},
                    "server": {"type": "string", "description": "A server from list_servers to search only it, or \"\"."}
                },
                "required": ["query", "server"],
                "additionalProperties": false
            },
            "annotations": lookup,
            "_meta": always_load
        }),
        json!({
            "name": DESCRIBE_TOOL,
            "description": "One tool's description and input schema, and which call tool to use.",
            "inputSchema": {
                "type": "object",
                "properties": {"tool": tool_parameter},
                "required": ["tool"],
                "additionalProperties": false
            },
            "annotations": lookup,
            "_meta": always_load
        }),
        call(CALL_READ_ONLY_TOOL, Access::ReadOnly, "it only reads"),
        call(
            CALL_WRITE_TOOL,
            Access::Write,
            "it changes but destroys nothing",
        ),
        call(
            CALL_DESTRUCTIVE_TOOL,
            Access::Destructive,
            "it may delete or overwrite",
        ),
    ]
}

/// A call of a meta-tool, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaToolCall {
    /// `list_servers`.
    ListServers,
    /// `search_tools`.
    SearchTools {
        /// What to find.
        query: String,
        /// Only this server (`None` for `""`).
        server: Option<String>,
    },
    /// `describe_tool`.
    DescribeTool {
        /// The gateway name.
        tool: String,
    },
    /// One of the three call tools.
    CallTool {
        /// Which call tool: what it admits.
        access: Access,
        /// The gateway name.
        tool: String,
        /// The arguments object.
        arguments: Map<String, Value>,
    },
}

/// Why a meta-tool call cannot be carried out as sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetaToolError {
    /// Not one of the meta-tools.
    #[error(
        "{name} is not a tool of this gateway; its tools are list_servers, search_tools, \
         describe_tool, call_read_only_tool, call_write_tool and call_destructive_tool"
    )]
    UnknownMetaTool {
        /// The name, quoted and cut.
        name: String,
    },
    /// The parameters do not match the meta-tool's schema.
    #[error("invalid arguments for {meta_tool}: {reason}; expected {expected}")]
    InvalidParameters {
        /// The meta-tool.
        meta_tool: &'static str,
        /// What was wrong.
        reason: String,
        /// The shape it takes.
        expected: &'static str,
    },
    /// `arguments` is not a JSON object or its text.
    #[error(
        "`arguments` must be a JSON object written as a string, such as \"{{\\\"path\\\": \
         \\\"a.txt\\\"}}\" (or \"{{}}\" for none); {found}"
    )]
    ArgumentsNotAnObject {
        /// What was found instead.
        found: String,
    },
    /// The tool needs more access than the call tool used admits.
    #[error(
        "{tool} is a [{needs}] tool: call it with {call_with}, not {called_with}, so the host \
         can ask for the right permission"
    )]
    AccessMismatch {
        /// The gateway name.
        tool: String,
        /// The tool's access label.
        needs: &'static str,
        /// The call tool to use.
        call_with: &'static str,
        /// The call tool used.
        called_with: &'static str,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParameters {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchParameters {
    query: String,
    #[serde(default)]
    server: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DescribeParameters {
    tool: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallParameters {
    tool: String,
    #[serde(default)]
    arguments: Value,
}

impl MetaToolCall {
    /// Parses a `tools/call` of meta-tool `name` with `parameters` (its `arguments` member;
    /// `Value::Null` when absent).
    pub fn parse(name: &str, parameters: &Value) -> Result<MetaToolCall, MetaToolError> {
        let parameters = if parameters.is_null() {
            &Value::Object(Map::new())
        } else {
            parameters
        };
        fn read<T: for<'de> Deserialize<'de>>(
            meta_tool: &'static str,
            expected: &'static str,
            parameters: &Value,
        ) -> Result<T, MetaToolError> {
            T::deserialize(parameters).map_err(|error| MetaToolError::InvalidParameters {
                meta_tool,
                // serde quotes what it did not expect (an unknown member's name), which a
                // host may have made megabytes long.
                reason: cut_message(&error.to_string()),
                expected,
            })
        }
        match name {
            LIST_SERVERS => {
                read::<NoParameters>(LIST_SERVERS, "{}", parameters)?;
                Ok(MetaToolCall::ListServers)
            }
            SEARCH_TOOLS => {
                let parsed: SearchParameters = read(
                    SEARCH_TOOLS,
                    "{\"query\": string, \"server\": string (\"\" for all)}",
                    parameters,
                )?;
                if parsed.query.trim().is_empty() {
                    return Err(MetaToolError::InvalidParameters {
                        meta_tool: SEARCH_TOOLS,
                        reason: "`query` is empty".to_owned(),
                        expected: "what you want to do, in plain words",
                    });
                }
                Ok(MetaToolCall::SearchTools {
                    query: parsed.query,
                    server: parsed.server.filter(|server| !server.is_empty()),
                })
            }
            DESCRIBE_TOOL => {
                let parsed: DescribeParameters =
                    read(DESCRIBE_TOOL, "{\"tool\": \"server__tool\"}", parameters)?;
                Ok(MetaToolCall::DescribeTool { tool: parsed.tool })
            }
            CALL_READ_ONLY_TOOL | CALL_WRITE_TOOL | CALL_DESTRUCTIVE_TOOL => {
                let (access, meta_tool) = match name {
                    CALL_READ_ONLY_TOOL => (Access::ReadOnly, CALL_READ_ONLY_TOOL),
                    CALL_WRITE_TOOL => (Access::Write, CALL_WRITE_TOOL),
                    _ => (Access::Destructive, CALL_DESTRUCTIVE_TOOL),
                };
                let parsed: CallParameters = read(
                    meta_tool,
                    "{\"tool\": \"server__tool\", \"arguments\": \"{...}\"}",
                    parameters,
                )?;
                Ok(MetaToolCall::CallTool {
                    access,
                    tool: parsed.tool,
                    arguments: call_arguments(&parsed.arguments)?,
                })
            }
            other => Err(MetaToolError::UnknownMetaTool {
                name: crate::names::quoted_excerpt(other),
            }),
        }
    }
}

/// The arguments object of a call: the JSON text of an object (what the schema declares), an
/// object itself (hosts not in strict mode may send one), or nothing (`null`, `""`) for `{}`.
pub fn call_arguments(arguments: &Value) -> Result<Map<String, Value>, MetaToolError> {
    match arguments {
        Value::Null => Ok(Map::new()),
        Value::Object(members) => Ok(members.clone()),
        Value::String(text) if text.trim().is_empty() => Ok(Map::new()),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(members)) => Ok(members),
            Ok(other) => Err(MetaToolError::ArgumentsNotAnObject {
                found: format!("the string holds {}", json_kind(&other)),
            }),
            Err(error) => Err(MetaToolError::ArgumentsNotAnObject {
                found: cut_message(&format!("the string is not JSON ({error})")),
            }),
        },
        other => Err(MetaToolError::ArgumentsNotAnObject {
            found: format!("got {}", json_kind(other)),
        }),
    }
}

/// At most 300 characters of `message`, marked when cut.
fn cut_message(message: &str) -> String {
    const LONGEST: usize = 300;
    if message.chars().count() <= LONGEST {
        return message.to_owned();
    }
    let kept: String = message.chars().take(LONGEST).collect();
    format!("{kept}… (cut)")
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Checks that a call through the call tool of `called_with` may reach `tool`, whose access is
/// `needs`.
pub fn check_access(tool: &str, needs: Access, called_with: Access) -> Result<(), MetaToolError> {
    if called_with.admits(needs) {
        Ok(())
    } else {
        Err(MetaToolError::AccessMismatch {
            tool: crate::names::quoted_excerpt(tool),
            needs: needs.label(),
            call_with: needs.call_tool(),
            called_with: called_with.call_tool(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_follows_the_annotations_with_mcp_defaults() {
        assert_eq!(Access::of(&json!({"readOnlyHint": true})), Access::ReadOnly);
        assert_eq!(
            Access::of(&json!({"readOnlyHint": true, "destructiveHint": true})),
            Access::ReadOnly
        );
        assert_eq!(
            Access::of(&json!({"destructiveHint": false})),
            Access::Write
        );
        assert_eq!(
            Access::of(&json!({"destructiveHint": true})),
            Access::Destructive
        );
        assert_eq!(Access::of(&Value::Null), Access::Destructive);
        assert_eq!(Access::of(&json!({})), Access::Destructive);
        assert_eq!(
            Access::of(&json!({"readOnlyHint": "true"})),
            Access::Destructive
        );
    }

    #[test]
    fn a_call_tool_admits_its_access_and_less() {
        assert!(check_access("t", Access::ReadOnly, Access::Destructive).is_ok());
        assert!(check_access("t", Access::Write, Access::Write).is_ok());
        let refused = check_access("fs__rm", Access::Destructive, Access::ReadOnly).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "\"fs__rm\" is a [destructive] tool: call it with call_destructive_tool, not \
             call_read_only_tool, so the host can ask for the right permission"
        );
    }

    #[test]
    fn calls_parse_from_what_the_schemas_declare() {
        assert_eq!(
            MetaToolCall::parse(LIST_SERVERS, &Value::Null),
            Ok(MetaToolCall::ListServers)
        );
        assert_eq!(
            MetaToolCall::parse(SEARCH_TOOLS, &json!({"query": "send mail", "server": ""})),
            Ok(MetaToolCall::SearchTools {
                query: "send mail".to_owned(),
                server: None
            })
        );
        assert_eq!(
            MetaToolCall::parse(SEARCH_TOOLS, &json!({"query": "x", "server": "github"})),
            Ok(MetaToolCall::SearchTools {
                query: "x".to_owned(),
                server: Some("github".to_owned())
            })
        );
        assert_eq!(
            MetaToolCall::parse(
                CALL_WRITE_TOOL,
                &json!({"tool": "a__b", "arguments": "{\"n\": 1}"})
            ),
            Ok(MetaToolCall::CallTool {
                access: Access::Write,
                tool: "a__b".to_owned(),
                arguments: json!({"n": 1}).as_object().unwrap().clone()
            })
        );
        // An object is taken too.
        assert!(matches!(
            MetaToolCall::parse(
                CALL_READ_ONLY_TOOL,
                &json!({"tool": "a__b", "arguments": {"n": 1}})
            ),
            Ok(MetaToolCall::CallTool { .. })
        ));
    }

    #[test]
    fn bad_calls_say_what_was_wrong_and_what_is_expected() {
        let unknown = MetaToolCall::parse("github__create_issue", &json!({})).unwrap_err();
        assert!(
            unknown
                .to_string()
                .starts_with("\"github__create_issue\" is not a tool of this gateway")
        );
        let extra =
            MetaToolCall::parse(DESCRIBE_TOOL, &json!({"tool": "a__b", "x": 1})).unwrap_err();
        assert!(extra.to_string().contains("unknown field `x`"), "{extra}");
        assert!(
            extra
                .to_string()
                .contains("expected {\"tool\": \"server__tool\"}"),
            "{extra}"
        );
        let empty =
            MetaToolCall::parse(SEARCH_TOOLS, &json!({"query": "  ", "server": ""})).unwrap_err();
        assert!(empty.to_string().contains("`query` is empty"), "{empty}");
        for (arguments, found) in [
            (json!("[1]"), "the string holds an array"),
            (json!("{"), "the string is not JSON"),
            (json!(5), "got a number"),
        ] {
            let error = MetaToolCall::parse(
                CALL_WRITE_TOOL,
                &json!({"tool": "a__b", "arguments": arguments}),
            )
            .unwrap_err();
            assert!(error.to_string().contains(found), "{error}");
        }
    }

    #[test]
    fn ten_megabyte_arguments_parse_and_a_ten_megabyte_name_is_not_echoed() {
        let big = "x".repeat(10 * 1024 * 1024);
        let arguments = serde_json::to_string(&json!({"text": big})).unwrap();
        let parsed = MetaToolCall::parse(
            CALL_WRITE_TOOL,
            &json!({"tool": "a__b", "arguments": arguments}),
        )
        .unwrap();
        let MetaToolCall::CallTool { arguments, .. } = parsed else {
            panic!("a call")
        };
        assert_eq!(arguments["text"].as_str().unwrap().len(), 10 * 1024 * 1024);
        let mut parameters = Map::new();
        parameters.insert(big.clone(), json!(1));
        for name in [DESCRIBE_TOOL, SEARCH_TOOLS, CALL_READ_ONLY_TOOL, &big] {
            let error = MetaToolCall::parse(name, &Value::Object(parameters.clone())).unwrap_err();
            assert!(
                error.to_string().len() < 1_000,
                "{name:.20}: {} bytes",
                error.to_string().len()
            );
        }
        let not_json = format!("{{{big}");
        let error = call_arguments(&json!(not_json)).unwrap_err();
        assert!(error.to_string().len() < 1_000);
    }

    #[test]
    fn every_definition_is_marked_always_loaded_and_its_parser_takes_its_schema() {
        for definition in definitions() {
            let name = definition["name"].as_str().unwrap();
            assert_eq!(
                definition["_meta"]["anthropic/alwaysLoad"],
                json!(true),
                "{name}"
            );
            // A call with every declared property, each given a value of its type, parses.
            let mut example = Map::new();
            for (property, schema) in definition["inputSchema"]["properties"].as_object().unwrap() {
                assert_eq!(schema["type"], "string", "{name}.{property}");
                let value = if property == "arguments" { "{}" } else { "x" };
                example.insert(property.clone(), json!(value));
            }
            assert!(
                MetaToolCall::parse(name, &Value::Object(example.clone())).is_ok(),
                "{name}"
            );
            // And one with a property the schema does not declare is refused, as
            // `additionalProperties: false` says.
            example.insert("extra".to_owned(), json!("x"));
            assert!(
                MetaToolCall::parse(name, &Value::Object(example)).is_err(),
                "{name}"
            );
        }
    }
}
