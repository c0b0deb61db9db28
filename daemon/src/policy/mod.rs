//! Access policy: which tools a caller may see and call, decided by pure functions.
//!
//! Two independent sources restrict a call, and a call must pass both. The **config's policy**
//! ([`ServerPolicy`], read from one `mcpServers` entry) is the operator's word on a server: which
//! tools exist for agents at all (`allowTools`, `denyTools`, deny winning over allow) and which
//! tools are destructive enough to need an explicit confirmation (`destructiveTools`, on top of
//! the server's own `destructiveHint`, waived with `confirmDestructive: false`). The **token's
//! scope** ([`Scope`]) narrows what one bearer token may do, so that an agent can hand a
//! sub-agent a token limited to some servers, some `server/tool` names, read-only tools, and a
//! lifetime; the owner's token carries [`Scope::unrestricted`]. Every pattern is a [`glob_match`]
//! glob (`*` and `?` only). The call pipeline asks [`check_call`] before a call and
//! [`visible_tool`] when listing tools; both take the clock as a parameter and do no I/O, so every
//! rule here is unit-tested without a daemon.
//!
//! Tool annotations come from an untrusted server, so they are only ever used to be *more*
//! careful: a tool counts as read-only only when it says `"readOnlyHint": true` exactly, while
//! `"destructiveHint": true` (again exactly) or a `destructiveTools` glob makes it need
//! confirmation. MCP's own default for a missing `destructiveHint` is `true`; following it would
//! put a confirmation prompt in front of every unannotated tool, so a missing hint is not enough.
//!
//! This file holds the globs, the config's [`ServerPolicy`] and the decisions ([`check_call`],
//! [`visible_tool`]); `scope.rs` holds what a token's [`Scope`] permits and how it reads, and
//! `tests.rs` and `server_from_tools_tests.rs` the unit tests.

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

use tool_cli_protocol::ErrorData;

use crate::catalog::ToolHints;
use crate::error::Error;

/// The longest lifetime a scoped token may be given: 30 days.
pub const MAX_SCOPE_TTL: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// How many globs [`Scope::describe`] lists per field before summarising the rest.
const DESCRIBED_GLOBS: usize = 4;

/// Whether `text` matches the glob `pattern`.
///
/// `*` matches any run of characters, including the empty run and `/`; `?` matches exactly one
/// character; every other character, `[`, `]` and `\` included, matches itself (case-sensitive).
/// Matching is over Unicode scalar values, so `?` matches `é` whole.
///
/// The algorithm walks both strings once, remembering only the most recent `*` to fall back to,
/// which is enough because a later `*` can absorb anything an earlier one could. It therefore
/// never backtracks exponentially: the worst case is O(pattern × text), and typical globs run in
/// linear time.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    // After a `*`: the pattern index just past it, and the text index it currently extends to.
    let mut fallback: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                fallback = Some((p + 1, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match fallback {
                // Let the last `*` swallow one more character and retry the rest from there.
                Some((after_star, star_end)) => {
                    fallback = Some((after_star, star_end + 1));
                    p = after_star;
                    t = star_end + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

fn any_glob_matches(globs: &[String], text: &str) -> bool {
    globs.iter().any(|glob| glob_match(glob, text))
}

/// A policy input that cannot be used, naming the field and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// A field has the wrong JSON type.
    #[error("\"{field}\" must be {expected}, not {found}")]
    WrongType {
        /// The field, as spelled in the input.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
        /// The JSON type it had.
        found: &'static str,
    },
    /// One entry of a glob list is not a string.
    #[error("\"{field}\"[{index}] must be a glob string such as \"read_*\", not {found}")]
    GlobNotAString {
        /// The field, as spelled in the input.
        field: &'static str,
        /// The entry's position in the list, from 0.
        index: usize,
        /// The JSON type it had.
        found: &'static str,
    },
    /// One entry of a glob list is the empty string.
    #[error(
        "\"{field}\"[{index}] is an empty glob; expected a pattern such as \"read_*\" \
         (\"*\" matches every name)"
    )]
    EmptyGlob {
        /// The field, as spelled in the input.
        field: &'static str,
        /// The entry's position in the list, from 0.
        index: usize,
    },
    /// A glob that can never match what the field is matched against.
    #[error("\"{field}\"[{index}] is \"{glob}\", which can never match: {why}")]
    UnmatchableGlob {
        /// The field, as spelled in the input.
        field: &'static str,
        /// The entry's position in the list, from 0.
        index: usize,
        /// The glob.
        glob: String,
        /// Why it cannot match and what to write instead.
        why: &'static str,
    },
    /// A glob list that is present but empty, which would permit nothing.
    #[error("\"{field}\" is an empty list; expected at least one glob, or omit the field")]
    EmptyGlobList {
        /// The field, as spelled in the input.
        field: &'static str,
    },
    /// A scope lifetime of zero seconds.
    #[error(
        "\"ttlSeconds\" is 0; expected a positive number of seconds, at most 2592000 (30 days)"
    )]
    ZeroTtl,
    /// A scope lifetime beyond [`MAX_SCOPE_TTL`].
    #[error("\"ttlSeconds\" is {seconds}; expected at most 2592000 (30 days)")]
    TtlTooLong {
        /// The lifetime asked for.
        seconds: u64,
    },
}

/// What a caller is told when a destructive tool needs confirmation: the protocol's wording of
/// the error it becomes.
fn confirmation_message(server: &str, tool: &str) -> String {
    ErrorData::ConfirmationRequired {
        server: server.to_owned(),
        tool: tool.to_owned(),
    }
    .to_string()
}

/// Checks every glob of a list: non-empty list, non-empty globs.
fn check_globs(field: &'static str, globs: &[String]) -> Result<(), PolicyError> {
    if globs.is_empty() {
        return Err(PolicyError::EmptyGlobList { field });
    }
    match globs.iter().position(String::is_empty) {
        Some(index) => Err(PolicyError::EmptyGlob { field, index }),
        None => Ok(()),
    }
}

/// What the config says about one server's tools.
///
/// Read from the server's `mcpServers` entry by [`ServerPolicy::from_json`]; the
/// [`Default`] allows every tool and asks for confirmation of destructive ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerPolicy {
    /// `allowTools`: globs on the tool name; only matching tools are permitted. `None` permits
    /// every tool (subject to `deny_tools`).
    pub allow_tools: Option<Vec<String>>,
    /// `denyTools`: globs on the tool name; a matching tool is refused even when `allow_tools`
    /// matches it too.
    pub deny_tools: Vec<String>,
    /// `destructiveTools`: globs on the tool name of tools to treat as destructive even though
    /// the server does not annotate them with `destructiveHint: true`.
    pub destructive_tools: Vec<String>,
    /// `confirmDestructive`: whether a destructive tool runs only with an explicit confirmation
    /// from the caller. `false` waives the confirmation for this server.
    pub confirm_destructive: bool,
}

impl Default for ServerPolicy {
    fn default() -> ServerPolicy {
        ServerPolicy {
            allow_tools: None,
            deny_tools: Vec::new(),
            destructive_tools: Vec::new(),
            confirm_destructive: true,
        }
    }
}

impl ServerPolicy {
    /// Reads `allowTools`, `denyTools`, `destructiveTools` and `confirmDestructive` from one
    /// `mcpServers` entry, ignoring every other field. A missing or `null` field takes its default.
    ///
    /// An empty `allowTools` list is refused rather than read as "no tool at all": that is more
    /// likely a mistake, and a server can be switched off with `"enabled": false` instead.
    pub fn from_json(entry: &Map<String, Value>) -> Result<ServerPolicy, PolicyError> {
        let allow_tools = glob_list(entry, "allowTools")?;
        if let Some(globs) = &allow_tools {
            check_globs("allowTools", globs)?;
        }
        let deny_tools = glob_list(entry, "denyTools")?.unwrap_or_default();
        let destructive_tools = glob_list(entry, "destructiveTools")?.unwrap_or_default();
        let confirm_destructive = match entry.get("confirmDestructive") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(confirm)) => *confirm,
            Some(other) => {
                return Err(PolicyError::WrongType {
                    field: "confirmDestructive",
                    expected: "true or false",
                    found: tool_cli_protocol::json::kind(other),
                });
            }
        };
        Ok(ServerPolicy {
            allow_tools,
            deny_tools,
            destructive_tools,
            confirm_destructive,
        })
    }

    /// Whether the config lets callers see and call `tool`: allowed (or no allow list) and not
    /// denied.
    pub fn permits_tool(&self, tool: &str) -> bool {
        self.is_allowed(tool) && !self.is_denied(tool)
    }

    fn is_allowed(&self, tool: &str) -> bool {
        self.allow_tools
            .as_deref()
            .is_none_or(|globs| any_glob_matches(globs, tool))
    }

    fn is_denied(&self, tool: &str) -> bool {
        any_glob_matches(&self.deny_tools, tool)
    }

    /// Whether calling `tool`, whose behaviour hints are given, needs the caller's explicit
    /// confirmation: confirmation is on for this
    /// server, and the tool says `"destructiveHint": true` or matches `destructiveTools`.
    pub fn needs_confirmation(&self, tool: &str, hints: &ToolHints) -> bool {
        self.confirm_destructive
            && (hints.destructive || any_glob_matches(&self.destructive_tools, tool))
    }
}

/// Reads an optional list of non-empty glob strings; `null` counts as absent.
fn glob_list(
    entry: &Map<String, Value>,
    field: &'static str,
) -> Result<Option<Vec<String>>, PolicyError> {
    let items = match entry.get(field) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(PolicyError::WrongType {
                field,
                expected: "an array of glob strings such as [\"read_*\"]",
                found: tool_cli_protocol::json::kind(other),
            });
        }
    };
    let mut globs = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        match item {
            Value::String(glob) if glob.is_empty() => {
                return Err(PolicyError::EmptyGlob { field, index });
            }
            Value::String(glob) => globs.push(glob.clone()),
            other => {
                return Err(PolicyError::GlobNotAString {
                    field,
                    index,
                    found: tool_cli_protocol::json::kind(other),
                });
            }
        }
    }
    Ok(Some(globs))
}

/// What one bearer token may do: the owner's token is [`Scope::unrestricted`], a token minted
/// for a sub-agent is narrower (see [`Scope::from_params`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// Globs on server names; `None` permits every server.
    pub servers: Option<Vec<String>>,
    /// Globs on `"server/tool"`; `None` permits every tool of a permitted server.
    pub tools: Option<Vec<String>>,
    /// Globs on `"server/uri"` (the server part before the first `/`, the URI after it);
    /// `None` permits every resource of a permitted server. A minted token has `Some`: without
    /// a resource grant it sees no resources at all.
    pub resources: Option<Vec<String>>,
    /// Globs on `"server/prompt"`; `None` permits every prompt of a permitted server. A minted
    /// token has `Some`: without a prompt grant it sees no prompts at all.
    pub prompts: Option<Vec<String>>,
    /// Only tools annotated `"readOnlyHint": true` are permitted.
    pub read_only: bool,
    /// When the token stops working; `None` never expires.
    pub expires_at: Option<SystemTime>,
}

mod scope;

/// Why a call is refused, with what to do about it.
///
/// The `Display` message says which side refused (the token's scope or the config's policy) and
/// how to proceed. It never lists the config's globs; it may repeat the token's own scope, which
/// its holder already knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Denial {
    /// The token has expired.
    #[error("this token has expired ({scope}); ask whoever issued it for a new token")]
    ScopeExpired {
        /// [`Scope::describe`] of the token's scope.
        scope: String,
    },
    /// The token's scope does not include the server.
    #[error(
        "server \"{server}\" is not permitted by this token's scope ({scope}); use a server \
         the scope includes, or a token whose scope includes \"{server}\""
    )]
    ServerNotPermitted {
        /// The server asked for.
        server: String,
        /// [`Scope::describe`] of the token's scope.
        scope: String,
    },
    /// The config's policy or the token's scope does not permit the tool.
    #[error("tool \"{tool}\" of server \"{server}\" is not permitted: {reason}")]
    ToolNotPermitted {
        /// The server.
        server: String,
        /// The tool asked for.
        tool: String,
        /// Which side refused it, why, and what would permit it.
        reason: String,
    },
    /// The tool is destructive and the call was not confirmed.
    #[error("{}", confirmation_message(server, tool))]
    ConfirmationRequired {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
}

/// Decides whether a call of `tool` on `server` may go ahead.
///
/// `hints` are the tool's behaviour hints (from its MCP annotations), and
/// `confirmed` whether the caller confirmed a destructive call. The checks run in this order and
/// the first failure is returned: the token has not expired; the scope permits the server; the
/// config's `allowTools`/`denyTools` permit the tool; the scope's `tools` globs and read-only
/// restriction permit it; a destructive tool is confirmed. Checking the scope's server first
/// means a token confined to some servers learns nothing about the policies of the others.
pub fn check_call(
    scope: &Scope,
    policy: &ServerPolicy,
    server: &str,
    tool: &str,
    hints: &ToolHints,
    confirmed: bool,
    now: SystemTime,
) -> Result<(), Denial> {
    if scope.is_expired(now) {
        return Err(Denial::ScopeExpired {
            scope: scope.describe(now),
        });
    }
    if !scope.permits_server(server) {
        return Err(Denial::ServerNotPermitted {
            server: server.to_owned(),
            scope: scope.describe(now),
        });
    }
    let tool_denied = |reason: String| Denial::ToolNotPermitted {
        server: server.to_owned(),
        tool: tool.to_owned(),
        reason,
    };
    if policy.is_denied(tool) {
        return Err(tool_denied(
            "the config's policy for this server denies it (denyTools); only the daemon's \
             operator can change that in the config"
                .to_owned(),
        ));
    }
    if !policy.is_allowed(tool) {
        return Err(tool_denied(
            "the config's policy for this server does not allow it (allowTools); only the \
             daemon's operator can change that in the config"
                .to_owned(),
        ));
    }
    if !scope.tools_glob_matches(server, tool) {
        return Err(tool_denied(format!(
            "this token's scope does not include it ({}); use a token whose scope includes \
             \"{server}/{tool}\"",
            scope.describe(now)
        )));
    }
    if !scope.read_only_allows(hints) {
        return Err(tool_denied(
            "this token's scope is read-only and the tool does not declare \"readOnlyHint\": \
             true; use a token without the read-only restriction"
                .to_owned(),
        ));
    }
    if !confirmed && policy.needs_confirmation(tool, hints) {
        return Err(Denial::ConfirmationRequired {
            server: server.to_owned(),
            tool: tool.to_owned(),
        });
    }
    Ok(())
}

/// Whether `scope` and `policy` together let every tool of a server the scope permits be seen:
/// no tool globs, no read-only restriction, no `allowTools`/`denyTools`. Then `visible_tool` is
/// true for each of its tools, and a listing need not ask tool by tool.
pub fn sees_every_tool(scope: &Scope, policy: &ServerPolicy) -> bool {
    scope.tools.is_none()
        && !scope.read_only
        && policy.allow_tools.is_none()
        && policy.deny_tools.is_empty()
}

/// Whether discovery (`listTools`, `describeTool`, examples in `listServers`) shows `tool` of
/// `server` to a caller with `scope`: both the scope and the config's policy permit it.
/// Needing confirmation does not hide a tool. Expiry is not checked here; an expired token is
/// refused before discovery, by [`check_call`] or the caller.
pub fn visible_tool(
    scope: &Scope,
    policy: &ServerPolicy,
    server: &str,
    tool: &str,
    hints: &ToolHints,
) -> bool {
    scope.permits_tool(server, tool, hints) && policy.permits_tool(tool)
}

/// A denial as the error the caller is told.
impl From<Denial> for Error {
    fn from(denial: Denial) -> Error {
        let reason = denial.to_string();
        let data = match denial {
            Denial::ConfirmationRequired { server, tool } => {
                ErrorData::ConfirmationRequired { server, tool }
            }
            Denial::ServerNotPermitted { server, scope } => ErrorData::NotPermitted {
                server,
                tool: None,
                reason: format!(
                    "this token's scope ({scope}) does not include it; use a token whose scope \
                     does"
                ),
            },
            Denial::ToolNotPermitted {
                server,
                tool,
                reason,
            } => ErrorData::NotPermitted {
                server,
                tool: Some(tool),
                reason,
            },
            // Expired, resource refusals and any later kind: the denial's own words.
            _ => ErrorData::NotPermitted {
                server: String::new(),
                tool: None,
                reason,
            },
        };
        data.into()
    }
}

#[cfg(test)]
mod server_from_tools_tests;
#[cfg(test)]
mod tests;
