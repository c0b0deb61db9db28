//! Scope step-up, pure: what to do when a server that accepted our token answers a request with
//! `403` and `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"` (MCP authorization,
//! "Scope Challenge Handling").
//!
//! The answer is to authorize again with the union of the scope already asked for and the scope
//! the challenge names — but only when that union is larger than what was asked for last time
//! (asking again for the same scope cannot succeed), and at most [`MAX_STEP_UPS`] times per
//! server and daemon run, so a server that keeps moving the goalposts never makes us loop.
//! Signing in needs the user (`tool-cli auth login SERVER`), so "authorize again" is a message
//! naming the command and the scope it will ask for; `mod.rs` keeps the wanted scope for that
//! login.

/// Most re-authorizations for more scope per server and daemon run.
pub(crate) const MAX_STEP_UPS: u32 = 2;

/// The scopes of a space-separated scope string, in order, without repeats.
fn scopes(text: Option<&str>) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for scope in text.unwrap_or_default().split_ascii_whitespace() {
        if !out.contains(&scope) {
            out.push(scope);
        }
    }
    out
}

/// The union of two scope strings, the first's scopes first; `None` when both are empty.
pub(crate) fn scope_union(first: Option<&str>, second: Option<&str>) -> Option<String> {
    let mut all = scopes(first);
    for scope in scopes(second) {
        if !all.contains(&scope) {
            all.push(scope);
        }
    }
    (!all.is_empty()).then(|| all.join(" "))
}

/// What to do about a 403 `insufficient_scope`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StepUp {
    /// Sign in again asking for this scope (the union).
    Reauthorize { scope: String },
    /// Signing in again would not help; the message says why.
    GiveUp(String),
}

/// Decides a step-up. `asked` is the scope the last sign-in asked for (with what the token
/// response granted), `challenged` the scope the 403 names, `done` how many step-ups this server
/// has had already.
pub(crate) fn decide(asked: Option<&str>, challenged: Option<&str>, done: u32) -> StepUp {
    let Some(challenged) = challenged.filter(|scope| !scope.trim().is_empty()) else {
        return StepUp::GiveUp(
            "the server refused the request for insufficient scope (403) without naming the \
             scope it needs, so signing in again cannot ask for it"
                .to_owned(),
        );
    };
    let held = scopes(asked);
    let missing: Vec<&str> = scopes(Some(challenged))
        .into_iter()
        .filter(|scope| !held.contains(scope))
        .collect();
    if missing.is_empty() {
        return StepUp::GiveUp(format!(
            "the server refused the request for insufficient scope (403) and wants \"{challenged}\", \
             which was already asked for and granted; signing in again would not help (the \
             account may lack that permission on the server)"
        ));
    }
    if done >= MAX_STEP_UPS {
        return StepUp::GiveUp(format!(
            "the server refused the request for insufficient scope (403) and now wants \"{}\" \
             too; gave up after {done} re-authorizations for more scope (a limit, so a server \
             that keeps asking cannot loop the sign-in)",
            missing.join(" ")
        ));
    }
    StepUp::Reauthorize {
        scope: scope_union(asked, Some(challenged)).unwrap_or_default(),
    }
}

/// What a server's challenges told us, kept between its requests and the next sign-in.
#[derive(Debug, Default)]
pub(crate) struct Challenges {
    /// The `WWW-Authenticate` of the last 401 the connection saw. A server may let `initialize`
    /// through and ask for authorization only from the next request on, so the sign-in's own
    /// probe (an `initialize`) can find no 401; this one says what the server wanted.
    pub(crate) last_unauthorized: Option<super::discovery::Challenge>,
    /// The scope the last sign-in asked for (and what it was granted).
    pub(crate) asked: Option<String>,
    /// The scope the next sign-in asks for, set by a step-up.
    pub(crate) wanted: Option<String>,
    /// Why the last request was refused for scope, shown by `auth status`.
    pub(crate) refused: Option<String>,
    /// Step-ups so far (at most [`MAX_STEP_UPS`]).
    pub(crate) step_ups: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unions_keep_order_and_drop_repeats() {
        assert_eq!(
            scope_union(Some("mcp:basic"), Some("mcp:basic mcp:write")).as_deref(),
            Some("mcp:basic mcp:write")
        );
        assert_eq!(
            scope_union(Some(" a  b "), Some("c a")).as_deref(),
            Some("a b c")
        );
        assert_eq!(scope_union(None, Some("x")).as_deref(), Some("x"));
        assert_eq!(scope_union(None, None), None);
        assert_eq!(scope_union(Some(" "), Some("")), None);
    }

    #[test]
    fn a_new_scope_is_asked_for_with_the_old_ones() {
        assert_eq!(
            decide(Some("mcp:basic"), Some("mcp:basic mcp:write"), 0),
            StepUp::Reauthorize {
                scope: "mcp:basic mcp:write".to_owned()
            }
        );
        assert_eq!(
            decide(None, Some("mcp:admin"), 1),
            StepUp::Reauthorize {
                scope: "mcp:admin".to_owned()
            }
        );
    }

    #[test]
    fn the_same_scope_again_is_not_asked_for() {
        let StepUp::GiveUp(message) = decide(Some("mcp:admin"), Some("mcp:admin"), 0) else {
            panic!("expected GiveUp");
        };
        assert!(message.contains("already asked for"), "{message}");
        assert!(!message.contains("auth login"), "{message}");
    }

    #[test]
    fn step_ups_are_limited() {
        let StepUp::GiveUp(message) = decide(Some("a"), Some("b"), MAX_STEP_UPS) else {
            panic!("expected GiveUp");
        };
        assert!(message.contains("gave up after 2"), "{message}");
        assert!(message.contains("\"b\""), "{message}");
    }

    #[test]
    fn a_challenge_without_scope_cannot_be_stepped_up() {
        for challenged in [None, Some(""), Some("  ")] {
            assert!(matches!(
                decide(Some("a"), challenged, 0),
                StepUp::GiveUp(message) if message.contains("without naming")
            ));
        }
    }
}
