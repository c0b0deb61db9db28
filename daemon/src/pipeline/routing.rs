//! Routing: which server takes a call that names a tool but not its server.
//!
//! Pure and deterministic. The candidates are the servers (visible to the caller) whose catalogs
//! offer the tool, in config order. Five rules run in strict order; each either singles out one
//! candidate (it *decides*), narrows the field to the candidates it prefers (the others are
//! recorded as rejected by it, and the next rule looks at the rest), or does not apply:
//!
//! 1. **explicit-mention**: the session's task or the call's `hint` names a server or one of its
//!    tags (as a whole word, case-insensitively).
//! 2. **argument-type**: the arguments pass some candidates' `inputSchema`s and not others'.
//! 3. **session-recency**: the server used most recently in this session for this tool name.
//! 4. **similarity**: the candidate whose tool description is closest to the task / hint, when
//!    it leads the next one by at least [`SIMILARITY_MARGIN`].
//! 5. **priority**: the highest configured `priority`, then config order. It always decides, so
//!    an ambiguous call that no rule separates is impossible by construction.
//!
//! A call that names its server is not routed: its rule is `named`.

use std::fmt;

/// How far the best similarity must lead the second for rule 4 to decide.
pub(crate) const SIMILARITY_MARGIN: f32 = 0.05;

/// The rule that chose a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// The caller named the server.
    Named,
    /// The task or hint names the server or a tag of it.
    ExplicitMention,
    /// Only its schema accepts the arguments.
    ArgumentType,
    /// It served this tool most recently in the session.
    SessionRecency,
    /// Its tool description is closest to the task.
    Similarity,
    /// Configured priority, then config order.
    Priority,
    /// The chosen server failed and an equivalent tool on another server was used.
    Alternative,
}

impl Rule {
    /// The rule's name on the wire and in traces.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Named => "named",
            Rule::ExplicitMention => "explicit-mention",
            Rule::ArgumentType => "argument-type",
            Rule::SessionRecency => "session-recency",
            Rule::Similarity => "similarity",
            Rule::Priority => "priority",
            Rule::Alternative => "alternative",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of routing: the server, the rule that chose it, and why each other candidate
/// lost.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// The chosen server.
    pub server: String,
    /// The rule that decided.
    pub rule: Rule,
    /// Every other candidate and the rule that rejected it, in config order.
    pub alternatives: Vec<Rejected>,
}

/// A candidate that lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// Its server.
    pub server: String,
    /// The rule that rejected it.
    pub rejected_by: Rule,
}

impl Selection {
    /// The selection of a call that named its server.
    pub fn named(server: &str) -> Selection {
        Selection {
            server: server.to_owned(),
            rule: Rule::Named,
            alternatives: Vec::new(),
        }
    }
}

/// One server offering the tool, with what the rules need to know of it.
#[derive(Debug, Clone)]
pub(crate) struct Candidate<'a> {
    /// Its name.
    pub server: &'a str,
    /// Its tags.
    pub tags: &'a [String],
    /// Its configured priority.
    pub priority: i64,
    /// Whether the call's arguments pass its tool's `inputSchema`.
    pub arguments_valid: bool,
    /// Cosine similarity of its tool's description to the task / hint, when there is text to
    /// compare with.
    pub similarity: Option<f32>,
}

/// What the session and the call say, beyond the candidates.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RoutingInput<'a> {
    /// The session's task and the call's hint, for explicit mentions.
    pub mention_text: Option<&'a str>,
    /// The server the session used most recently for this tool name.
    pub most_recent: Option<&'a str>,
}

/// Chooses among `candidates` (in config order, at least one). Returns the index of the chosen
/// candidate and the selection.
///
/// # Panics
///
/// When `candidates` is empty: the caller reports an unknown tool instead of routing.
pub(crate) fn route(candidates: &[Candidate<'_>], input: RoutingInput<'_>) -> (usize, Selection) {
    assert!(
        !candidates.is_empty(),
        "routing needs at least one candidate"
    );
    let mut remaining: Vec<usize> = (0..candidates.len()).collect();
    let mut rejected: Vec<(usize, Rule)> = Vec::new();

    // Applies a rule's preference: `keep` says which remaining candidates it prefers. Returns the
    // decided index when exactly one is preferred; narrows when a proper subset is.
    let mut apply = |rule: Rule, keep: &dyn Fn(usize) -> bool, remaining: &mut Vec<usize>| {
        let preferred: Vec<usize> = remaining.iter().copied().filter(|&i| keep(i)).collect();
        if preferred.is_empty() || preferred.len() == remaining.len() {
            return None;
        }
        for &i in remaining.iter().filter(|i| !preferred.contains(i)) {
            rejected.push((i, rule));
        }
        *remaining = preferred;
        (remaining.len() == 1).then(|| remaining[0])
    };

    let decided = (|| {
        if let Some(text) = input.mention_text {
            let spans = mention_spans(text, candidates);
            let mentioned = |i: usize| spans[i];
            if remaining.len() == 1 && mentioned(remaining[0]) {
                return Some((remaining[0], Rule::ExplicitMention));
            }
            if let Some(i) = apply(Rule::ExplicitMention, &mentioned, &mut remaining) {
                return Some((i, Rule::ExplicitMention));
            }
        }
        let valid = |i: usize| candidates[i].arguments_valid;
        if remaining.len() == 1 && valid(remaining[0]) {
            return Some((remaining[0], Rule::ArgumentType));
        }
        if let Some(i) = apply(Rule::ArgumentType, &valid, &mut remaining) {
            return Some((i, Rule::ArgumentType));
        }
        if let Some(recent) = input.most_recent {
            let is_recent = |i: usize| candidates[i].server == recent;
            if remaining.len() == 1 && is_recent(remaining[0]) {
                return Some((remaining[0], Rule::SessionRecency));
            }
            if let Some(i) = apply(Rule::SessionRecency, &is_recent, &mut remaining) {
                return Some((i, Rule::SessionRecency));
            }
        }
        if remaining.len() > 1
            && let Some(best) = similarity_leader(candidates, &remaining)
        {
            let leader = |i: usize| i == best;
            if let Some(i) = apply(Rule::Similarity, &leader, &mut remaining) {
                return Some((i, Rule::Similarity));
            }
        }
        None
    })();

    let (chosen, rule) = decided.unwrap_or_else(|| {
        // Priority, then config order (the candidates are in config order, so the first of the
        // highest priority).
        let top = remaining
            .iter()
            .copied()
            .max_by(|&a, &b| {
                candidates[a]
                    .priority
                    .cmp(&candidates[b].priority)
                    .then(b.cmp(&a))
            })
            .expect("at least one candidate remains");
        for &i in remaining.iter().filter(|&&i| i != top) {
            rejected.push((i, Rule::Priority));
        }
        (top, Rule::Priority)
    });

    rejected.sort_by_key(|&(i, _)| i);
    let selection = Selection {
        server: candidates[chosen].server.to_owned(),
        rule,
        alternatives: rejected
            .into_iter()
            .map(|(i, rule)| Rejected {
                server: candidates[i].server.to_owned(),
                rejected_by: rule,
            })
            .collect(),
    };
    (chosen, selection)
}

/// The remaining candidate whose similarity leads every other by at least the margin.
fn similarity_leader(candidates: &[Candidate<'_>], remaining: &[usize]) -> Option<usize> {
    let mut scored: Vec<(usize, f32)> = remaining
        .iter()
        .map(|&i| candidates[i].similarity.map(|s| (i, s)))
        .collect::<Option<Vec<_>>>()?;
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let (best, best_score) = scored[0];
    let second = scored.get(1).map_or(f32::NEG_INFINITY, |&(_, s)| s);
    (best_score - second >= SIMILARITY_MARGIN).then_some(best)
}

/// Which candidates `text` mentions, by server name or tag. A mention inside a longer mention of
/// another candidate does not count: in "read it from files-a", the tag `files` of one server is
/// part of the name `files-a` of another, and only `files-a` is meant.
fn mention_spans(text: &str, candidates: &[Candidate<'_>]) -> Vec<bool> {
    let lower = text.to_lowercase();
    let spans: Vec<Vec<(usize, usize)>> = candidates
        .iter()
        .map(|candidate| {
            std::iter::once(candidate.server)
                .chain(candidate.tags.iter().map(String::as_str))
                .flat_map(|word| word_spans(&lower, &word.trim().to_lowercase()))
                .collect()
        })
        .collect();
    let inside_longer = |owner: usize, (start, end): (usize, usize)| {
        spans.iter().enumerate().any(|(other, theirs)| {
            other != owner
                && theirs
                    .iter()
                    .any(|&(s, e)| s <= start && end <= e && (e - s) > (end - start))
        })
    };
    spans
        .iter()
        .enumerate()
        .map(|(i, mine)| mine.iter().any(|&span| !inside_longer(i, span)))
        .collect()
}

/// Whether `text` names `word` as a whole word, ignoring case: the characters around it are not
/// letters or digits (so `fs` is not found in `offset`, but is in `fs:`, `the fs server`).
#[cfg(test)]
pub(crate) fn mentions(text: &str, word: &str) -> bool {
    !word_spans(&text.to_lowercase(), &word.trim().to_lowercase()).is_empty()
}

/// Where lowercase `word` occurs as a whole word in lowercase `text`.
fn word_spans(text: &str, word: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    if word.is_empty() {
        return spans;
    }
    let is_word_char = |c: char| c.is_alphanumeric();
    let mut start = 0;
    while let Some(found) = text[start..].find(word) {
        let at = start + found;
        let end = at + word.len();
        let before_ok = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !is_word_char(c));
        let after_ok = text[end..].chars().next().is_none_or(|c| !is_word_char(c));
        if before_ok && after_ok {
            spans.push((at, end));
        }
        start = at + text[at..].chars().next().map_or(1, char::len_utf8);
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate<'a>(server: &'a str, tags: &'a [String]) -> Candidate<'a> {
        Candidate {
            server,
            tags,
            priority: 0,
            arguments_valid: true,
            similarity: None,
        }
    }

    #[test]
    fn mentions_are_whole_words_ignoring_case() {
        assert!(mentions("Use the filesystem server", "filesystem"));
        assert!(mentions("on GitHub, read it", "github"));
        assert!(mentions("fs: read it", "fs"));
        assert!(!mentions("offset the files", "fs"));
        assert!(!mentions("githubby", "github"));
        assert!(mentions("via files-a please", "files-a"));
        assert!(!mentions("via files-ab please", "files-a"));
        assert!(!mentions("anything", ""));
        assert!(mentions("ünïcode fs", "fs"));
    }

    #[test]
    fn a_mention_inside_a_longer_mention_does_not_count() {
        let files: Vec<String> = vec!["files".into()];
        let none: Vec<String> = Vec::new();
        let candidates = [candidate("fs", &files), candidate("files-a", &none)];
        assert_eq!(
            mention_spans("read it from files-a", &candidates),
            vec![false, true]
        );
        assert_eq!(
            mention_spans("read it from my files", &candidates),
            vec![true, false]
        );
    }

    #[test]
    fn priority_decides_when_nothing_else_does_then_config_order() {
        let none: Vec<String> = Vec::new();
        let mut a = candidate("a", &none);
        let b = candidate("b", &none);
        let (i, selection) = route(&[a.clone(), b.clone()], RoutingInput::default());
        assert_eq!((i, selection.rule), (0, Rule::Priority));
        assert_eq!(selection.alternatives[0].rejected_by, Rule::Priority);
        a.priority = -1;
        let (i, selection) = route(&[a, b], RoutingInput::default());
        assert_eq!((i, selection.server.as_str()), (1, "b"));
    }

    #[test]
    fn rules_narrow_in_order_and_record_who_rejected_whom() {
        let tags: Vec<String> = vec!["files".into()];
        let none: Vec<String> = Vec::new();
        let mut a = candidate("a", &tags);
        let mut b = candidate("b", &tags);
        let c = candidate("c", &none);
        a.arguments_valid = false;
        b.similarity = Some(0.9);
        a.similarity = Some(0.1);
        let (i, selection) = route(
            &[a, b, c],
            RoutingInput {
                mention_text: Some("read it from my files"),
                most_recent: Some("c"),
            },
        );
        // The mention keeps a and b (c rejected), argument-type drops a, b is decided.
        assert_eq!(i, 1);
        assert_eq!(selection.rule, Rule::ArgumentType);
        assert_eq!(
            selection.alternatives,
            vec![
                Rejected {
                    server: "a".into(),
                    rejected_by: Rule::ArgumentType
                },
                Rejected {
                    server: "c".into(),
                    rejected_by: Rule::ExplicitMention
                },
            ]
        );
    }

    #[test]
    fn similarity_needs_its_margin() {
        let none: Vec<String> = Vec::new();
        let mut a = candidate("a", &none);
        let mut b = candidate("b", &none);
        a.similarity = Some(0.50);
        b.similarity = Some(0.54);
        let (_, selection) = route(&[a.clone(), b.clone()], RoutingInput::default());
        assert_eq!(selection.rule, Rule::Priority);
        b.similarity = Some(0.56);
        let (i, selection) = route(&[a, b], RoutingInput::default());
        assert_eq!((i, selection.rule), (1, Rule::Similarity));
    }

    #[test]
    fn a_single_candidate_is_still_explained() {
        let none: Vec<String> = Vec::new();
        let only = candidate("only", &none);
        let (_, selection) = route(std::slice::from_ref(&only), RoutingInput::default());
        assert_eq!(selection.rule, Rule::ArgumentType);
        let mut invalid = only;
        invalid.arguments_valid = false;
        let (_, selection) = route(&[invalid], RoutingInput::default());
        assert_eq!(selection.rule, Rule::Priority);
        assert!(selection.alternatives.is_empty());
    }
}
