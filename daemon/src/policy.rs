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

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

use crate::catalog::ToolHints;

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

/// What a caller is told when a destructive tool needs confirmation; one wording for the policy's
/// denial and the daemon's error.
pub fn confirmation_message(server: &str, tool: &str) -> String {
    format!(
        "tool \"{tool}\" of server \"{server}\" is destructive; to run it, pass \"confirm\": true \
         in callTool (tool-cli: --yes)"
    )
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
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
                    found: json_type(other),
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
                found: json_type(other),
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
                    found: json_type(other),
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

impl Scope {
    /// The owner token's scope: every server and tool, no expiry.
    pub fn unrestricted() -> Scope {
        Scope {
            servers: None,
            tools: None,
            resources: None,
            prompts: None,
            read_only: false,
            expires_at: None,
        }
    }

    /// A validated scope for a token minted at `now`.
    ///
    /// `servers` are globs on server names and `tools` globs on `"server/tool"`; each list, when
    /// given, needs at least one non-empty glob. A server glob containing `/` and a tool glob with
    /// neither `/` nor a wildcard are refused, since they could never match. `ttl_seconds` sets
    /// the lifetime, from 1 second to [`MAX_SCOPE_TTL`]; `None` means no expiry. `resources` are
    /// globs on `"server/uri"`; `None` grants no resources (resources are never granted by
    /// default: a tool grant on a filesystem server must not expose its files).
    pub fn from_params(
        servers: Option<Vec<String>>,
        tools: Option<Vec<String>>,
        resources: Option<Vec<String>>,
        read_only: bool,
        ttl_seconds: Option<u64>,
        now: SystemTime,
    ) -> Result<Scope, PolicyError> {
        if let Some(globs) = &servers {
            check_globs("servers", globs)?;
            if let Some(index) = globs.iter().position(|glob| glob.contains('/')) {
                return Err(PolicyError::UnmatchableGlob {
                    field: "servers",
                    index,
                    glob: globs[index].clone(),
                    why: "server names never contain '/'; to restrict tools, put \
                          \"server/tool\" globs in \"tools\"",
                });
            }
        }
        if let Some(globs) = &tools {
            check_globs("tools", globs)?;
            let unmatchable = |glob: &String| !glob.contains(['/', '*', '?']);
            if let Some(index) = globs.iter().position(unmatchable) {
                return Err(PolicyError::UnmatchableGlob {
                    field: "tools",
                    index,
                    glob: globs[index].clone(),
                    why: "tool globs match \"server/tool\"; expected a glob such as \
                          \"fs/read_file\" or \"*/read_file\"",
                });
            }
        }
        if let Some(globs) = &resources {
            check_globs("resources", globs)?;
            let unmatchable = |glob: &String| match glob.split_once('/') {
                Some((server, uri)) => server.is_empty() || uri.is_empty(),
                None => true,
            };
            if let Some(index) = globs.iter().position(unmatchable) {
                return Err(PolicyError::UnmatchableGlob {
                    field: "resources",
                    index,
                    glob: globs[index].clone(),
                    why: "resource globs match \"server/uri\"; expected a glob such as \
                          \"fs/file:///home/me/*\" or \"demo/*\"",
                });
            }
        }
        let expires_at = match ttl_seconds {
            None => None,
            Some(0) => return Err(PolicyError::ZeroTtl),
            Some(seconds) => {
                let ttl = Duration::from_secs(seconds);
                if ttl > MAX_SCOPE_TTL {
                    return Err(PolicyError::TtlTooLong { seconds });
                }
                Some(
                    now.checked_add(ttl)
                        .ok_or(PolicyError::TtlTooLong { seconds })?,
                )
            }
        };
        Ok(Scope {
            servers,
            tools,
            resources: Some(resources.unwrap_or_default()),
            prompts: Some(Vec::new()),
            read_only,
            expires_at,
        })
    }

    /// Whether the token may use `server` at all: its server globs include it, and, when the
    /// scope names tools, one of the tool globs could name a tool of it (`fs/read_*` permits
    /// only `fs`; a glob whose server part is a wildcard, such as `*/read_*`, permits any).
    pub fn permits_server(&self, server: &str) -> bool {
        let by_servers = self
            .servers
            .as_deref()
            .is_none_or(|globs| any_glob_matches(globs, server));
        let by_tools = self.tools.as_deref().is_none_or(|globs| {
            globs.iter().any(|glob| match glob.split_once('/') {
                Some((server_part, _)) => glob_match(server_part, server),
                // No slash: a wildcard may span it, so the glob may reach any server.
                None => true,
            })
        });
        by_servers && by_tools
    }

    /// Whether the token may see and call `tool` of `server`, whose behaviour hints are given:
    /// the server is permitted, a `tools` glob
    /// (if any) matches `"server/tool"`, and a read-only scope sees `"readOnlyHint": true`.
    pub fn permits_tool(&self, server: &str, tool: &str, hints: &ToolHints) -> bool {
        self.permits_server(server)
            && self.tools_glob_matches(server, tool)
            && self.read_only_allows(hints)
    }

    fn tools_glob_matches(&self, server: &str, tool: &str) -> bool {
        self.tools
            .as_deref()
            .is_none_or(|globs| any_glob_matches(globs, &format!("{server}/{tool}")))
    }

    fn read_only_allows(&self, hints: &ToolHints) -> bool {
        !self.read_only || hints.read_only
    }

    /// Whether the token may list and read resource `uri` of `server`.
    pub fn permits_resource(&self, server: &str, uri: &str) -> bool {
        self.permits_server(server)
            && self.resources.as_deref().is_none_or(|globs| {
                globs.iter().any(|glob| match glob.split_once('/') {
                    Some((server_glob, uri_glob)) => {
                        glob_match(server_glob, server) && glob_match(uri_glob, uri)
                    }
                    None => false,
                })
            })
    }

    /// Grants the prompts matching `globs` (on `"server/prompt"`); `None` grants none. Used
    /// after [`Scope::from_params`] for a minted token.
    pub fn with_prompts(mut self, globs: Option<Vec<String>>) -> Result<Scope, PolicyError> {
        if let Some(globs) = &globs {
            check_globs("prompts", globs)?;
            let unmatchable = |glob: &String| match glob.split_once('/') {
                Some((server, prompt)) => server.is_empty() || prompt.is_empty(),
                None => true,
            };
            if let Some(index) = globs.iter().position(unmatchable) {
                return Err(PolicyError::UnmatchableGlob {
                    field: "prompts",
                    index,
                    glob: globs[index].clone(),
                    why: "prompt globs match \"server/prompt\"; expected a glob such as \
                          \"everything/simple-prompt\" or \"everything/*\"",
                });
            }
        }
        self.prompts = Some(globs.unwrap_or_default());
        Ok(self)
    }

    /// Whether the token may list and get prompt `prompt` of `server`.
    pub fn permits_prompt(&self, server: &str, prompt: &str) -> bool {
        self.permits_server(server)
            && self.prompts.as_deref().is_none_or(|globs| {
                globs.iter().any(|glob| match glob.split_once('/') {
                    Some((server_glob, prompt_glob)) => {
                        glob_match(server_glob, server) && glob_match(prompt_glob, prompt)
                    }
                    None => false,
                })
            })
    }

    /// Whether the token may see any prompt of `server` (so its prompts are worth listing).
    pub fn permits_any_prompt(&self, server: &str) -> bool {
        self.permits_server(server)
            && self.prompts.as_deref().is_none_or(|globs| {
                globs.iter().any(|glob| {
                    glob.split_once('/')
                        .is_some_and(|(server_glob, _)| glob_match(server_glob, server))
                })
            })
    }

    /// Whether the token may see any resource of `server` (resource templates are shown then).
    pub fn permits_any_resource(&self, server: &str) -> bool {
        self.permits_server(server)
            && self.resources.as_deref().is_none_or(|globs| {
                globs.iter().any(|glob| {
                    glob.split_once('/')
                        .is_some_and(|(server_glob, _)| glob_match(server_glob, server))
                })
            })
    }

    /// Whether the token has expired at `now` (expiry is inclusive: at `expires_at` it no longer
    /// works).
    pub fn is_expired(&self, now: SystemTime) -> bool {
        self.expires_at.is_some_and(|expires_at| now >= expires_at)
    }

    /// One line for messages, such as `servers fs*, tools fs/read_*, read-only, expires in 10m`,
    /// or `unrestricted`. `now` is needed to say how long is left.
    pub fn describe(&self, now: SystemTime) -> String {
        let mut parts = Vec::new();
        if let Some(globs) = &self.servers {
            parts.push(format!("servers {}", describe_globs(globs)));
        }
        if let Some(globs) = &self.tools {
            parts.push(format!("tools {}", describe_globs(globs)));
        }
        if parts.is_empty() && (self.resources.is_some() || self.expires_at.is_some()) {
            parts.push("all servers and tools".to_owned());
        }
        match self.resources.as_deref() {
            None => {}
            Some([]) => parts.push("no resources".to_owned()),
            Some(globs) => parts.push(format!("resources {}", describe_globs(globs))),
        }
        match self.prompts.as_deref() {
            None | Some([]) => {}
            Some(globs) => parts.push(format!("prompts {}", describe_globs(globs))),
        }
        if self.read_only {
            parts.push("read-only".to_owned());
        }
        if let Some(expires_at) = self.expires_at {
            parts.push(match expires_at.duration_since(now) {
                Ok(left) if !left.is_zero() => format!("expires in {}", format_duration(left)),
                _ => "expired".to_owned(),
            });
        }
        if parts.is_empty() {
            return "unrestricted".to_owned();
        }
        parts.join(", ")
    }
}

fn describe_globs(globs: &[String]) -> String {
    let shown = globs[..globs.len().min(DESCRIBED_GLOBS)].join(" or ");
    match globs.len().saturating_sub(DESCRIBED_GLOBS) {
        0 => shown,
        more => format!("{shown} (+{more} more)"),
    }
}

/// A compact remaining time: its two largest units, sub-second remainders rounded up (so a
/// fresh 10-minute token reads `10m`, and one with 0.2 s left reads `1s`, not `0s`).
fn format_duration(duration: Duration) -> String {
    let mut seconds = duration.as_secs();
    if duration.subsec_nanos() > 0 {
        seconds += 1;
    }
    let units = [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)];
    let counts: Vec<(u64, &str)> = units
        .iter()
        .map(|&(suffix, size)| (seconds / size % units_above(size), suffix))
        .collect();
    let Some(first) = counts.iter().position(|&(count, _)| count > 0) else {
        return "0s".to_owned();
    };
    let mut text = format!("{}{}", counts[first].0, counts[first].1);
    if let Some(&(count, suffix)) = counts.get(first + 1).filter(|&&(count, _)| count > 0) {
        text.push_str(&format!("{count}{suffix}"));
    }
    text
}

/// How many of a unit of `size` seconds make the next larger unit (days have no larger unit).
fn units_above(size: u64) -> u64 {
    match size {
        86_400 => u64::MAX,
        3_600 => 24,
        _ => 60,
    }
}

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

#[cfg(test)]
mod server_from_tools_tests {
    use super::*;

    #[test]
    fn seeing_every_tool_agrees_with_asking_tool_by_tool() {
        let now = SystemTime::UNIX_EPOCH;
        let tools = ["echo", "read_file", "delete_all"];
        let read_only = ToolHints {
            read_only: true,
            ..ToolHints::default()
        };
        let scopes = [
            Scope::unrestricted(),
            Scope::from_params(Some(vec!["alpha".into()]), None, None, false, None, now).unwrap(),
            Scope::from_params(
                None,
                Some(vec!["alpha/read_*".into()]),
                None,
                false,
                None,
                now,
            )
            .unwrap(),
            Scope::from_params(None, None, None, true, None, now).unwrap(),
        ];
        let policies = [
            ServerPolicy::default(),
            ServerPolicy {
                deny_tools: vec!["delete_*".into()],
                ..ServerPolicy::default()
            },
            ServerPolicy {
                allow_tools: Some(vec!["*".into()]),
                ..ServerPolicy::default()
            },
        ];
        for scope in &scopes {
            for policy in &policies {
                if sees_every_tool(scope, policy) {
                    for tool in tools {
                        for hints in [ToolHints::default(), read_only] {
                            assert!(
                                visible_tool(scope, policy, "alpha", tool, &hints),
                                "{scope:?} {policy:?} {tool}"
                            );
                        }
                    }
                }
            }
        }
        assert!(sees_every_tool(&scopes[0], &policies[0]));
        assert!(sees_every_tool(&scopes[1], &policies[0]));
        assert!(!sees_every_tool(&scopes[2], &policies[0]));
        assert!(!sees_every_tool(&scopes[3], &policies[0]));
        assert!(!sees_every_tool(&scopes[0], &policies[1]));
    }

    #[test]
    fn tool_globs_narrow_the_servers_a_scope_reaches() {
        let now = SystemTime::UNIX_EPOCH;
        let scope =
            Scope::from_params(None, Some(vec!["alpha/ec*".into()]), None, false, None, now)
                .unwrap();
        assert!(scope.permits_server("alpha"));
        assert!(!scope.permits_server("beta"));
        let scope = Scope::from_params(None, Some(vec!["*/read_*".into()]), None, false, None, now)
            .unwrap();
        assert!(scope.permits_server("beta"));
        let scope = Scope::from_params(
            Some(vec!["a*".into()]),
            Some(vec!["beta/x".into()]),
            None,
            false,
            None,
            now,
        )
        .unwrap();
        assert!(!scope.permits_server("beta"), "server globs still apply");
        assert!(!scope.permits_server("alpha"), "no tool glob reaches alpha");
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn h(annotations: &Value) -> ToolHints {
        ToolHints::from_annotations(annotations)
    }

    fn globs(items: &[&str]) -> Vec<String> {
        items.iter().map(|&item| item.to_owned()).collect()
    }

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
    }

    fn entry(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("test entry must be an object, got {other}"),
        }
    }

    /// The obvious exponential matcher, as the reference for small inputs.
    fn reference_match(pattern: &[char], text: &[char]) -> bool {
        match pattern.split_first() {
            None => text.is_empty(),
            Some(('*', rest)) => (0..=text.len()).any(|skip| reference_match(rest, &text[skip..])),
            Some((&c, rest)) => match text.split_first() {
                Some((&t, text_rest)) if c == '?' || c == t => reference_match(rest, text_rest),
                _ => false,
            },
        }
    }

    /// Every string of length 0..=max_len over `alphabet`.
    fn all_strings(alphabet: &[char], max_len: usize) -> Vec<String> {
        let mut all = vec![String::new()];
        let mut previous = vec![String::new()];
        for _ in 0..max_len {
            let next: Vec<String> = previous
                .iter()
                .flat_map(|prefix| alphabet.iter().map(move |&c| format!("{prefix}{c}")))
                .collect();
            all.extend(next.iter().cloned());
            previous = next;
        }
        all
    }

    // ---- glob_match ----

    #[test]
    fn literal_globs_match_only_themselves() {
        assert!(glob_match("read_file", "read_file"));
        assert!(!glob_match("read_file", "read_files"));
        assert!(!glob_match("read_file", "read_fil"));
        assert!(!glob_match("read_file", "Read_file"));
        assert!(glob_match("", ""));
        assert!(!glob_match("", "a"));
        assert!(!glob_match("a", ""));
    }

    #[test]
    fn star_matches_any_run_including_empty_and_slash() {
        assert!(glob_match("*", ""));
        assert!(glob_match("*", "anything/at/all"));
        assert!(glob_match("read_*", "read_"));
        assert!(glob_match("read_*", "read_file"));
        assert!(glob_match("*_file", "read_file"));
        assert!(glob_match("fs/*", "fs/read/deep"));
        assert!(glob_match("r*d*e", "read_file"));
        assert!(glob_match("**", "x"));
        assert!(glob_match("a**b", "ab"));
        assert!(!glob_match("read_*", "write_file"));
        assert!(!glob_match("*_file", "read_files"));
        assert!(!glob_match("a*b", "a"));
    }

    #[test]
    fn question_mark_matches_exactly_one_char() {
        assert!(glob_match("?", "a"));
        assert!(glob_match("?", "/"));
        assert!(!glob_match("?", ""));
        assert!(!glob_match("?", "ab"));
        assert!(glob_match("v?", "v2"));
        assert!(glob_match("?*", "a"));
        assert!(!glob_match("?*", ""));
        assert!(glob_match("*?", "abc"));
    }

    #[test]
    fn other_characters_are_literal() {
        assert!(glob_match("[a]", "[a]"));
        assert!(!glob_match("[a]", "a"));
        assert!(glob_match("a\\*", "a\\"));
        assert!(glob_match("a\\*", "a\\xyz"));
        assert!(!glob_match("a\\*", "a*"));
        assert!(glob_match("{a,b}", "{a,b}"));
        assert!(!glob_match("{a,b}", "a"));
        assert!(glob_match("a.b", "a.b"));
        assert!(!glob_match("a.b", "axb"));
    }

    #[test]
    fn matching_is_over_unicode_chars() {
        assert!(glob_match("caf?", "café"));
        assert!(!glob_match("caf??", "café"));
        assert!(glob_match("日本*", "日本語"));
        assert!(glob_match("*語", "日本語"));
        assert!(glob_match("?本?", "日本語"));
        assert!(glob_match("?", "🦀"));
        assert!(!glob_match("é", "e"));
    }

    #[test]
    fn pathological_patterns_answer_correctly() {
        let many_a = "a".repeat(20_000);
        assert!(!glob_match("a*a*a*a*a*b", &many_a));
        assert!(glob_match("a*a*a*a*a*b", &format!("{many_a}b")));
        assert!(!glob_match("*a*a*a*a*a*a*a*a*a*a*b", &many_a));
        let star_heavy = "*a".repeat(200) + "*b";
        assert!(!glob_match(&star_heavy, &many_a));
        assert!(glob_match(&star_heavy, &format!("{many_a}b")));
        let question_heavy = "?*".repeat(300);
        assert!(glob_match(&question_heavy, &many_a));
        assert!(!glob_match(&question_heavy, &"a".repeat(299)));
        assert!(glob_match(&format!("{many_a}*"), &many_a));
        assert!(!glob_match(&format!("*{many_a}b"), &many_a));
    }

    #[test]
    fn agrees_with_the_reference_matcher_on_every_small_input() {
        let patterns = all_strings(&['a', 'b', '*', '?'], 5);
        let texts = all_strings(&['a', 'b'], 6);
        for pattern in &patterns {
            let pattern_chars: Vec<char> = pattern.chars().collect();
            for text in &texts {
                let text_chars: Vec<char> = text.chars().collect();
                assert_eq!(
                    glob_match(pattern, text),
                    reference_match(&pattern_chars, &text_chars),
                    "pattern {pattern:?}, text {text:?}"
                );
            }
        }
    }

    // ---- ServerPolicy ----

    #[test]
    fn default_policy_allows_everything_and_confirms_destructive_tools() {
        let policy = ServerPolicy::default();
        assert!(policy.permits_tool("anything"));
        assert!(policy.confirm_destructive);
        assert!(policy.needs_confirmation("drop", &h(&json!({"destructiveHint": true}))));
        assert!(!policy.needs_confirmation("read", &h(&json!({"readOnlyHint": true}))));
    }

    #[test]
    fn allow_list_restricts_tools() {
        let policy = ServerPolicy {
            allow_tools: Some(globs(&["read_*", "list"])),
            ..ServerPolicy::default()
        };
        assert!(policy.permits_tool("read_file"));
        assert!(policy.permits_tool("list"));
        assert!(!policy.permits_tool("write_file"));
        assert!(!policy.permits_tool("list_all"));
    }

    #[test]
    fn deny_wins_over_allow() {
        let policy = ServerPolicy {
            allow_tools: Some(globs(&["*"])),
            deny_tools: globs(&["delete_*", "drop"]),
            ..ServerPolicy::default()
        };
        assert!(policy.permits_tool("read_file"));
        assert!(!policy.permits_tool("delete_file"));
        assert!(!policy.permits_tool("drop"));

        let deny_only = ServerPolicy {
            deny_tools: globs(&["*secret*"]),
            ..ServerPolicy::default()
        };
        assert!(deny_only.permits_tool("read_file"));
        assert!(!deny_only.permits_tool("read_secret_key"));
    }

    #[test]
    fn destructive_by_annotation_needs_exactly_true() {
        let policy = ServerPolicy::default();
        assert!(policy.needs_confirmation("x", &h(&json!({"destructiveHint": true}))));
        assert!(!policy.needs_confirmation("x", &h(&json!({"destructiveHint": false}))));
        assert!(!policy.needs_confirmation("x", &h(&json!({"destructiveHint": "true"}))));
        assert!(!policy.needs_confirmation("x", &h(&json!({"destructiveHint": 1}))));
        assert!(!policy.needs_confirmation("x", &h(&json!({}))));
        assert!(!policy.needs_confirmation("x", &h(&Value::Null)));
        assert!(!policy.needs_confirmation("x", &h(&json!([{"destructiveHint": true}]))));
    }

    #[test]
    fn destructive_by_config_glob() {
        let policy = ServerPolicy {
            destructive_tools: globs(&["delete_*", "send_email"]),
            ..ServerPolicy::default()
        };
        assert!(policy.needs_confirmation("delete_row", &h(&Value::Null)));
        assert!(policy.needs_confirmation("send_email", &h(&json!({"destructiveHint": false}))));
        assert!(!policy.needs_confirmation("read_row", &h(&Value::Null)));
    }

    #[test]
    fn waiver_turns_confirmation_off() {
        let policy = ServerPolicy {
            destructive_tools: globs(&["delete_*"]),
            confirm_destructive: false,
            ..ServerPolicy::default()
        };
        assert!(!policy.needs_confirmation("delete_row", &h(&Value::Null)));
        assert!(!policy.needs_confirmation("drop", &h(&json!({"destructiveHint": true}))));
    }

    #[test]
    fn from_json_reads_the_policy_fields_and_ignores_the_rest() {
        let policy = ServerPolicy::from_json(&entry(json!({
            "command": "npx",
            "args": ["server"],
            "allowTools": ["read_*", "list_*"],
            "denyTools": ["read_secret"],
            "destructiveTools": ["write_*"],
            "confirmDestructive": false,
            "somethingNew": {"nested": true},
        })))
        .unwrap();
        assert_eq!(
            policy,
            ServerPolicy {
                allow_tools: Some(globs(&["read_*", "list_*"])),
                deny_tools: globs(&["read_secret"]),
                destructive_tools: globs(&["write_*"]),
                confirm_destructive: false,
            }
        );
    }

    #[test]
    fn from_json_defaults_missing_and_null_fields() {
        let empty = ServerPolicy::from_json(&entry(json!({"command": "x"}))).unwrap();
        assert_eq!(empty, ServerPolicy::default());
        let nulls = ServerPolicy::from_json(&entry(json!({
            "allowTools": null,
            "denyTools": null,
            "destructiveTools": null,
            "confirmDestructive": null,
        })))
        .unwrap();
        assert_eq!(nulls, ServerPolicy::default());
        // Empty deny and destructive lists simply mean "none".
        let empty_lists =
            ServerPolicy::from_json(&entry(json!({"denyTools": [], "destructiveTools": []})))
                .unwrap();
        assert_eq!(empty_lists, ServerPolicy::default());
    }

    #[test]
    fn from_json_errors_name_the_field_and_what_was_expected() {
        let error_for = |value: Value| {
            ServerPolicy::from_json(&entry(value))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            error_for(json!({"allowTools": "read_*"})),
            "\"allowTools\" must be an array of glob strings such as [\"read_*\"], not a string"
        );
        assert_eq!(
            error_for(json!({"denyTools": {"a": 1}})),
            "\"denyTools\" must be an array of glob strings such as [\"read_*\"], not an object"
        );
        assert_eq!(
            error_for(json!({"destructiveTools": ["ok", 3]})),
            "\"destructiveTools\"[1] must be a glob string such as \"read_*\", not a number"
        );
        assert_eq!(
            error_for(json!({"confirmDestructive": "no"})),
            "\"confirmDestructive\" must be true or false, not a string"
        );
        assert_eq!(
            error_for(json!({"denyTools": ["a", ""]})),
            "\"denyTools\"[1] is an empty glob; expected a pattern such as \"read_*\" \
             (\"*\" matches every name)"
        );
        assert_eq!(
            error_for(json!({"allowTools": []})),
            "\"allowTools\" is an empty list; expected at least one glob, or omit the field"
        );
        assert_eq!(
            ServerPolicy::from_json(&entry(json!({"allowTools": [true]}))),
            Err(PolicyError::GlobNotAString {
                field: "allowTools",
                index: 0,
                found: "a boolean",
            })
        );
    }

    // ---- Scope ----

    #[test]
    fn unrestricted_scope_permits_everything_and_never_expires() {
        let scope = Scope::unrestricted();
        assert!(scope.permits_server("any"));
        assert!(scope.permits_tool("any", "tool", &h(&Value::Null)));
        assert!(!scope.is_expired(at(u64::from(u32::MAX))));
        assert_eq!(scope.describe(at(0)), "unrestricted");
    }

    #[test]
    fn server_globs_restrict_servers_and_their_tools() {
        let scope = Scope {
            servers: Some(globs(&["fs*", "git"])),
            ..Scope::unrestricted()
        };
        assert!(scope.permits_server("fs"));
        assert!(scope.permits_server("fs-home"));
        assert!(scope.permits_server("git"));
        assert!(!scope.permits_server("github"));
        assert!(scope.permits_tool("fs", "write_file", &h(&Value::Null)));
        assert!(!scope.permits_tool("github", "read", &h(&json!({"readOnlyHint": true}))));
    }

    #[test]
    fn tool_globs_match_server_slash_tool() {
        let scope = Scope {
            tools: Some(globs(&["fs/read_*", "*/list"])),
            ..Scope::unrestricted()
        };
        assert!(scope.permits_tool("fs", "read_file", &h(&Value::Null)));
        assert!(scope.permits_tool("git", "list", &h(&Value::Null)));
        assert!(!scope.permits_tool("fs", "write_file", &h(&Value::Null)));
        assert!(!scope.permits_tool("fs2", "read_file", &h(&Value::Null)));
        assert!(!scope.permits_tool("git", "list_all", &h(&Value::Null)));
        // Tools globs do not restrict which servers are reachable, only their tools.
        assert!(scope.permits_server("other"));
    }

    #[test]
    fn tool_permission_also_needs_the_server() {
        let scope = Scope {
            servers: Some(globs(&["git"])),
            tools: Some(globs(&["*/read_*"])),
            resources: None,
            ..Scope::unrestricted()
        };
        assert!(scope.permits_tool("git", "read_log", &h(&Value::Null)));
        assert!(!scope.permits_tool("fs", "read_file", &h(&Value::Null)));
    }

    #[test]
    fn read_only_scope_hides_tools_not_declared_read_only() {
        let scope = Scope {
            read_only: true,
            ..Scope::unrestricted()
        };
        assert!(scope.permits_tool("fs", "read", &h(&json!({"readOnlyHint": true}))));
        assert!(!scope.permits_tool("fs", "write", &h(&json!({"readOnlyHint": false}))));
        assert!(!scope.permits_tool("fs", "write", &h(&json!({"destructiveHint": false}))));
        assert!(!scope.permits_tool("fs", "odd", &h(&json!({"readOnlyHint": "true"}))));
        assert!(!scope.permits_tool("fs", "bare", &h(&json!({}))));
        assert!(!scope.permits_tool("fs", "bare", &h(&Value::Null)));
    }

    #[test]
    fn expiry_is_inclusive() {
        let scope = Scope::from_params(None, None, None, false, Some(600), at(1_000)).unwrap();
        assert_eq!(scope.expires_at, Some(at(1_600)));
        assert!(!scope.is_expired(at(1_000)));
        assert!(!scope.is_expired(at(1_599)));
        assert!(scope.is_expired(at(1_600)));
        assert!(scope.is_expired(at(10_000)));
    }

    #[test]
    fn from_params_builds_the_scope() {
        let scope = Scope::from_params(
            Some(globs(&["fs*"])),
            Some(globs(&["fs/read_*"])),
            None,
            true,
            None,
            at(0),
        )
        .unwrap();
        assert_eq!(
            scope,
            Scope {
                servers: Some(globs(&["fs*"])),
                tools: Some(globs(&["fs/read_*"])),
                resources: Some(Vec::new()),
                prompts: Some(Vec::new()),
                read_only: true,
                expires_at: None,
            }
        );
        let longest = Scope::from_params(None, None, None, false, Some(2_592_000), at(0)).unwrap();
        assert_eq!(longest.expires_at, Some(at(0) + MAX_SCOPE_TTL));
    }

    #[test]
    fn from_params_refuses_bad_inputs() {
        let error = |servers: Option<&[&str]>, tools: Option<&[&str]>, ttl: Option<u64>| {
            Scope::from_params(
                servers.map(globs),
                tools.map(globs),
                None,
                false,
                ttl,
                at(0),
            )
            .unwrap_err()
            .to_string()
        };
        assert_eq!(
            error(Some(&[]), None, None),
            "\"servers\" is an empty list; expected at least one glob, or omit the field"
        );
        assert_eq!(
            error(None, Some(&[]), None),
            "\"tools\" is an empty list; expected at least one glob, or omit the field"
        );
        assert_eq!(
            error(Some(&["fs", ""]), None, None),
            "\"servers\"[1] is an empty glob; expected a pattern such as \"read_*\" \
             (\"*\" matches every name)"
        );
        assert_eq!(
            error(None, None, Some(0)),
            "\"ttlSeconds\" is 0; expected a positive number of seconds, at most 2592000 (30 days)"
        );
        assert_eq!(
            error(None, None, Some(2_592_001)),
            "\"ttlSeconds\" is 2592001; expected at most 2592000 (30 days)"
        );
        assert_eq!(
            error(None, None, Some(u64::MAX)),
            format!(
                "\"ttlSeconds\" is {}; expected at most 2592000 (30 days)",
                u64::MAX
            )
        );
        assert_eq!(
            error(None, Some(&["fs/*", "read_file"]), None),
            "\"tools\"[1] is \"read_file\", which can never match: tool globs match \
             \"server/tool\"; expected a glob such as \"fs/read_file\" or \"*/read_file\""
        );
        assert_eq!(
            error(Some(&["fs/*"]), None, None),
            "\"servers\"[0] is \"fs/*\", which can never match: server names never contain \
             '/'; to restrict tools, put \"server/tool\" globs in \"tools\""
        );
        // Wildcards without a slash can still match "server/tool".
        assert!(
            Scope::from_params(None, Some(globs(&["*read*"])), None, false, None, at(0)).is_ok()
        );
    }

    #[test]
    fn describe_is_one_line() {
        let scope = Scope::from_params(
            Some(globs(&["fs*"])),
            Some(globs(&["fs/read_*"])),
            None,
            true,
            Some(600),
            at(0),
        )
        .unwrap();
        assert_eq!(
            scope.describe(at(0)),
            "servers fs*, tools fs/read_*, no resources, read-only, expires in 10m"
        );
        assert_eq!(
            scope.describe(at(60)),
            "servers fs*, tools fs/read_*, no resources, read-only, expires in 9m"
        );
        assert_eq!(
            scope.describe(at(600)),
            "servers fs*, tools fs/read_*, no resources, read-only, expired"
        );

        let expiring_only =
            Scope::from_params(None, None, None, false, Some(5_400), at(0)).unwrap();
        assert_eq!(
            expiring_only.describe(at(0)),
            "all servers and tools, no resources, expires in 1h30m"
        );

        let many = Scope {
            servers: Some(globs(&["a", "b", "c", "d", "e", "f"])),
            ..Scope::unrestricted()
        };
        assert_eq!(many.describe(at(0)), "servers a or b or c or d (+2 more)");
    }

    #[test]
    fn durations_read_compactly() {
        let text = |seconds: u64| format_duration(Duration::from_secs(seconds));
        assert_eq!(text(0), "0s");
        assert_eq!(text(45), "45s");
        assert_eq!(text(60), "1m");
        assert_eq!(text(61), "1m1s");
        assert_eq!(text(600), "10m");
        assert_eq!(text(3_600), "1h");
        assert_eq!(text(3_659), "1h");
        assert_eq!(text(5_400), "1h30m");
        assert_eq!(text(86_400), "1d");
        assert_eq!(text(90_000), "1d1h");
        assert_eq!(text(2_592_000), "30d");
        assert_eq!(format_duration(Duration::from_millis(200)), "1s");
        assert_eq!(format_duration(Duration::from_millis(59_500)), "1m");
    }

    // ---- check_call and visible_tool ----

    const READ_ONLY: &str = r#"{"readOnlyHint": true}"#;

    fn annotations(text: &str) -> ToolHints {
        h(&serde_json::from_str(text).unwrap())
    }

    fn check(
        scope: &Scope,
        policy: &ServerPolicy,
        tool: &str,
        annotations: &ToolHints,
        confirmed: bool,
    ) -> Result<(), Denial> {
        check_call(scope, policy, "fs", tool, annotations, confirmed, at(0))
    }

    #[test]
    fn unrestricted_owner_calls_a_plain_tool() {
        let result = check(
            &Scope::unrestricted(),
            &ServerPolicy::default(),
            "read_file",
            &h(&Value::Null),
            false,
        );
        assert_eq!(result, Ok(()));
    }

    #[test]
    fn destructive_tools_need_confirmation_unless_waived() {
        let policy = ServerPolicy {
            destructive_tools: globs(&["delete_*"]),
            ..ServerPolicy::default()
        };
        let owner = Scope::unrestricted();
        let denial = check(&owner, &policy, "delete_file", &h(&Value::Null), false).unwrap_err();
        assert_eq!(
            denial,
            Denial::ConfirmationRequired {
                server: "fs".to_owned(),
                tool: "delete_file".to_owned(),
            }
        );
        assert_eq!(
            denial.to_string(),
            "tool \"delete_file\" of server \"fs\" is destructive; to run it, pass \"confirm\": \
             true in callTool (tool-cli: --yes)"
        );
        assert_eq!(
            check(&owner, &policy, "delete_file", &h(&Value::Null), true),
            Ok(())
        );
        let by_hint = h(&json!({"destructiveHint": true}));
        assert!(matches!(
            check(&owner, &policy, "drop", &by_hint, false),
            Err(Denial::ConfirmationRequired { .. })
        ));
        let waived = ServerPolicy {
            confirm_destructive: false,
            ..policy
        };
        assert_eq!(check(&owner, &waived, "drop", &by_hint, false), Ok(()));
    }

    #[test]
    fn config_denial_says_it_is_the_config_and_hides_its_globs() {
        let policy = ServerPolicy {
            allow_tools: Some(globs(&["read_*"])),
            deny_tools: globs(&["read_secret*"]),
            ..ServerPolicy::default()
        };
        let owner = Scope::unrestricted();
        let denied = check(&owner, &policy, "read_secret_key", &h(&Value::Null), true)
            .unwrap_err()
            .to_string();
        assert_eq!(
            denied,
            "tool \"read_secret_key\" of server \"fs\" is not permitted: the config's policy \
             for this server denies it (denyTools); only the daemon's operator can change that \
             in the config"
        );
        let not_allowed = check(&owner, &policy, "write_file", &h(&Value::Null), true)
            .unwrap_err()
            .to_string();
        assert_eq!(
            not_allowed,
            "tool \"write_file\" of server \"fs\" is not permitted: the config's policy for \
             this server does not allow it (allowTools); only the daemon's operator can change \
             that in the config"
        );
        assert!(!denied.contains("read_secret*") && !not_allowed.contains("read_*"));
    }

    #[test]
    fn scope_denials_say_it_is_the_token() {
        let policy = ServerPolicy::default();
        let scope = Scope {
            servers: Some(globs(&["fs*"])),
            tools: Some(globs(&["fs/read_*"])),
            resources: None,
            ..Scope::unrestricted()
        };
        let server_denied = check_call(
            &scope,
            &policy,
            "github",
            "x",
            &h(&Value::Null),
            false,
            at(0),
        )
        .unwrap_err();
        assert_eq!(
            server_denied.to_string(),
            "server \"github\" is not permitted by this token's scope (servers fs*, tools \
             fs/read_*); use a server the scope includes, or a token whose scope includes \
             \"github\""
        );
        let tool_denied = check(&scope, &policy, "write_file", &h(&Value::Null), false)
            .unwrap_err()
            .to_string();
        assert_eq!(
            tool_denied,
            "tool \"write_file\" of server \"fs\" is not permitted: this token's scope does not \
             include it (servers fs*, tools fs/read_*); use a token whose scope includes \
             \"fs/write_file\""
        );
        let read_only = Scope {
            read_only: true,
            ..Scope::unrestricted()
        };
        let write_denied = check(&read_only, &policy, "write_file", &h(&Value::Null), true)
            .unwrap_err()
            .to_string();
        assert_eq!(
            write_denied,
            "tool \"write_file\" of server \"fs\" is not permitted: this token's scope is \
             read-only and the tool does not declare \"readOnlyHint\": true; use a token \
             without the read-only restriction"
        );
        assert_eq!(
            check(
                &read_only,
                &policy,
                "read_file",
                &annotations(READ_ONLY),
                false
            ),
            Ok(())
        );
    }

    #[test]
    fn expired_scope_is_refused_first() {
        let scope =
            Scope::from_params(Some(globs(&["git"])), None, None, false, Some(60), at(0)).unwrap();
        let denial = check_call(
            &scope,
            &ServerPolicy::default(),
            "fs",
            "x",
            &h(&Value::Null),
            false,
            at(60),
        )
        .unwrap_err();
        assert_eq!(
            denial.to_string(),
            "this token has expired (servers git, no resources, expired); ask whoever issued it for a \
             new token"
        );
        assert_eq!(
            check_call(
                &scope,
                &ServerPolicy::default(),
                "git",
                "x",
                &h(&Value::Null),
                false,
                at(59)
            ),
            Ok(())
        );
    }

    #[test]
    fn checks_run_in_order() {
        // Every check fails: the scope's server check comes first.
        let policy = ServerPolicy {
            deny_tools: globs(&["*"]),
            destructive_tools: globs(&["*"]),
            ..ServerPolicy::default()
        };
        let scope = Scope {
            servers: Some(globs(&["git"])),
            tools: Some(globs(&["*/none"])),
            resources: None,
            prompts: None,
            read_only: true,
            expires_at: None,
        };
        assert!(matches!(
            check(&scope, &policy, "drop", &h(&Value::Null), false),
            Err(Denial::ServerNotPermitted { .. })
        ));
        // With the server permitted, the config's policy comes before the scope's tool globs.
        let scope = Scope {
            servers: Some(globs(&["fs"])),
            ..scope
        };
        let Err(Denial::ToolNotPermitted { reason, .. }) =
            check(&scope, &policy, "drop", &h(&Value::Null), false)
        else {
            panic!("expected the config's denial");
        };
        assert!(reason.contains("config's policy"), "{reason}");
        // With the config permitting it, the scope's tool globs come before read-only.
        let policy = ServerPolicy {
            deny_tools: Vec::new(),
            ..policy
        };
        let Err(Denial::ToolNotPermitted { reason, .. }) =
            check(&scope, &policy, "drop", &h(&Value::Null), false)
        else {
            panic!("expected the scope's tools denial");
        };
        assert!(reason.contains("does not include it"), "{reason}");
        // Then read-only, before confirmation.
        let scope = Scope {
            tools: None,
            ..scope
        };
        let Err(Denial::ToolNotPermitted { reason, .. }) =
            check(&scope, &policy, "drop", &h(&Value::Null), false)
        else {
            panic!("expected the read-only denial");
        };
        assert!(reason.contains("read-only"), "{reason}");
        // Finally confirmation, even for a read-only tool the config calls destructive.
        assert!(matches!(
            check(&scope, &policy, "drop", &annotations(READ_ONLY), false),
            Err(Denial::ConfirmationRequired { .. })
        ));
        assert_eq!(
            check(&scope, &policy, "drop", &annotations(READ_ONLY), true),
            Ok(())
        );
    }

    #[test]
    fn visible_tool_needs_both_permissions_but_not_confirmation() {
        let policy = ServerPolicy {
            deny_tools: globs(&["secret"]),
            destructive_tools: globs(&["delete"]),
            ..ServerPolicy::default()
        };
        let owner = Scope::unrestricted();
        assert!(visible_tool(
            &owner,
            &policy,
            "fs",
            "delete",
            &h(&Value::Null)
        ));
        assert!(visible_tool(
            &owner,
            &policy,
            "fs",
            "drop",
            &h(&json!({"destructiveHint": true}))
        ));
        assert!(!visible_tool(
            &owner,
            &policy,
            "fs",
            "secret",
            &h(&Value::Null)
        ));

        let scoped = Scope {
            servers: Some(globs(&["fs"])),
            read_only: true,
            ..Scope::unrestricted()
        };
        let read_only = annotations(READ_ONLY);
        assert!(visible_tool(&scoped, &policy, "fs", "read", &read_only));
        assert!(!visible_tool(
            &scoped,
            &policy,
            "fs",
            "write",
            &h(&Value::Null)
        ));
        assert!(!visible_tool(&scoped, &policy, "git", "read", &read_only));
        assert!(!visible_tool(&scoped, &policy, "fs", "secret", &read_only));
    }
}
