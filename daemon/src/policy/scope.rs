//! A token's [`Scope`]: made from `mintToken`'s params (checked: globs well formed, a lifetime
//! within [`MAX_SCOPE_TTL`]), what it permits (servers, tools, resources, prompts, read-only,
//! expiry), and its description in messages and `listTokens`.

use super::*;

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

    pub(super) fn tools_glob_matches(&self, server: &str, tool: &str) -> bool {
        self.tools
            .as_deref()
            .is_none_or(|globs| any_glob_matches(globs, &format!("{server}/{tool}")))
    }

    pub(super) fn read_only_allows(&self, hints: &ToolHints) -> bool {
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
pub(super) fn format_duration(duration: Duration) -> String {
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
