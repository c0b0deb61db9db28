//! What the meta-tools answer, as compact text for a model: the server list, search results
//! within a token budget, one tool's description and schema, and the refusal of a call whose
//! arguments do not match.
//!
//! Text from servers is cleaned before a model reads it here: invisible and bidirectional
//! characters are removed (a hidden payload never reaches the model through these answers;
//! pinning flags it for a person) and whitespace runs become one space. Schemas are passed as
//! the server wrote them, in its member order, since they are what calls are checked against.

use std::fmt::Write as _;

use serde_json::Value;

use super::{Access, SEARCH_RESULTS};
use crate::pin::detect::invisible_class;
use crate::tokens::TokenCounter;

/// The budget of one `search_tools` answer, in tokens (issue 27: top 8 in ≤ 700).
pub const SEARCH_TOKEN_BUDGET: usize = 700;

/// One server in `list_servers`.
#[derive(Debug, Clone, Copy)]
pub struct ServerSummary<'a> {
    /// Its name.
    pub name: &'a str,
    /// What it is for (its configured description; may be empty).
    pub description: &'a str,
    /// How many of its tools the caller may see.
    pub tool_count: usize,
    /// Why it cannot be used now, when it cannot.
    pub unavailable: Option<&'a str>,
}

/// The `list_servers` answer.
pub fn server_list(servers: &[ServerSummary<'_>]) -> String {
    let mut out = String::new();
    if servers.is_empty() {
        out.push_str("No servers are available to you.");
        return out;
    }
    let _ = writeln!(
        out,
        "{} server{} (search_tools finds their tools):",
        servers.len(),
        plural(servers.len())
    );
    for server in servers {
        let _ = write!(out, "{}", clean(server.name, 64));
        let description = clean(server.description, 120);
        if !description.is_empty() {
            let _ = write!(out, ": {description}");
        }
        let _ = match server.unavailable {
            Some(reason) => writeln!(out, " (unavailable: {})", clean(reason, 120)),
            None => writeln!(
                out,
                " ({} tool{})",
                server.tool_count,
                plural(server.tool_count)
            ),
        };
    }
    out.truncate(out.trim_end().len());
    out
}

/// One tool found by `search_tools`.
#[derive(Debug, Clone, Copy)]
pub struct SearchEntry<'a> {
    /// Its gateway name (`server__tool`).
    pub gateway_name: &'a str,
    /// Which call tool reaches it.
    pub access: Access,
    /// Its description as the server wrote it.
    pub description: &'a str,
}

/// A rendered `search_tools` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchAnswer {
    /// The text.
    pub text: String,
    /// How many entries it shows.
    pub shown: usize,
    /// Its tokens by the counter it was fitted with.
    pub tokens: usize,
}

/// Why a search is not sure of its best hit (the daemon's `searchTools` confidence when it is
/// neither confident nor empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doubt {
    /// Other tools score nearly as well as the first.
    Ambiguous,
    /// The first tool leads but is far from the request in meaning.
    Weak,
}

/// How long descriptions may be, tried in turn until the answer fits its budget.
const DESCRIPTION_CUTS: &[usize] = &[240, 160, 110, 70, 40, 0];

/// The `search_tools` answer: at most [`SEARCH_RESULTS`] entries, best first, one line each
/// (`name [access]: description`), fitted within `budget` tokens as `counter` counts them by
/// cutting descriptions shorter and, only if names alone do not fit, showing fewer entries.
/// Should not even one name fit, the answer is the smallest possible one and its `tokens` say
/// by how much it exceeds `budget`.
pub fn search_results(
    query: &str,
    entries: &[SearchEntry<'_>],
    catalog_size: usize,
    doubt: Option<Doubt>,
    budget: usize,
    counter: &dyn TokenCounter,
) -> SearchAnswer {
    let query = clean(query, 80);
    if entries.is_empty() {
        let text = format!(
            "No tool matches \"{query}\" among {catalog_size} tool{}. Try other words, or \
             list_servers to see what there is.",
            plural(catalog_size)
        );
        let tokens = counter.count(&text);
        return SearchAnswer {
            text,
            shown: 0,
            tokens,
        };
    }
    let entries = &entries[..entries.len().min(SEARCH_RESULTS)];
    let mut last = None;
    for shown in (1..=entries.len()).rev() {
        for &cut in DESCRIPTION_CUTS {
            let text = search_text(
                &query,
                &entries[..shown],
                entries.len(),
                catalog_size,
                doubt,
                cut,
            );
            let tokens = counter.count(&text);
            if tokens <= budget {
                return SearchAnswer {
                    text,
                    shown,
                    tokens,
                };
            }
            last = Some(SearchAnswer {
                text,
                shown,
                tokens,
            });
        }
    }
    // Not even one name fits: the budget is smaller than any answer; give the smallest.
    last.expect("at least one entry was rendered")
}

fn search_text(
    query: &str,
    entries: &[SearchEntry<'_>],
    found: usize,
    catalog_size: usize,
    doubt: Option<Doubt>,
    description_cut: usize,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} of {catalog_size} tools for \"{query}\", best first:",
        entries.len()
    );
    for entry in entries {
        let _ = write!(out, "{} [{}]", entry.gateway_name, entry.access.label());
        let description = clean(entry.description, description_cut);
        if !description.is_empty() {
            let _ = write!(out, ": {description}");
        }
        out.push('\n');
    }
    if entries.len() < found {
        let _ = writeln!(
            out,
            "({} more not shown; search with more words or a server.)",
            found - entries.len()
        );
    }
    // The search's own doubt, so an agent does not take the first line as the answer when the
    // search is not sure of it (the same rule `tool-cli search` prints as "not sure").
    match doubt {
        Some(Doubt::Ambiguous) => out.push_str(
            "Not sure: the first tools score nearly alike; compare them with describe_tool \
             before calling.\n",
        ),
        Some(Doubt::Weak) => out.push_str(
            "Not sure: the best tool matches the request only loosely; there may be no tool \
             for it here.\n",
        ),
        None => {}
    }
    out.push_str("describe_tool NAME gives a tool's schema.");
    out
}

/// The `describe_tool` answer: the tool's name, access and call tool, its description, and
/// its one input schema.
pub fn description(gateway_name: &str, tool: &Value) -> String {
    let access = Access::of(tool.get("annotations").unwrap_or(&Value::Null));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{gateway_name} [{}]: call it with {}.",
        access.label(),
        access.call_tool()
    );
    if let Some(title) = tool.get("title").and_then(Value::as_str) {
        let title = clean(title, 200);
        if !title.is_empty() {
            let _ = writeln!(out, "Title: {title}");
        }
    }
    let description = clean(
        tool.get("description")
            .and_then(Value::as_str)
            .unwrap_or(""),
        4_000,
    );
    if !description.is_empty() {
        let _ = writeln!(out, "{description}");
    }
    let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
    let _ = write!(out, "Input schema: {schema}");
    if tool.get("outputSchema").is_some_and(Value::is_object) {
        out.push_str("\nIt returns structured content (it declares an output schema).");
    }
    out
}

/// The answer to a call whose arguments do not match the tool's schema (or that came before
/// any `describe_tool` of it): what was wrong, that nothing was called, and the schema.
pub fn validation_refusal(gateway_name: &str, tool: &Value, problems: &[String]) -> String {
    let access = Access::of(tool.get("annotations").unwrap_or(&Value::Null));
    let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
    let mut out = String::new();
    let _ = write!(
        out,
        "The arguments do not match the input schema of {gateway_name}, so it was not called"
    );
    if problems.is_empty() {
        out.push('.');
    } else {
        out.push_str(": ");
        let shown: Vec<String> = problems
            .iter()
            .take(8)
            .map(|problem| clean(problem, 200))
            .collect();
        out.push_str(&shown.join("; "));
        if problems.len() > shown.len() {
            let _ = write!(out, "; and {} more", problems.len() - shown.len());
        }
        out.push('.');
    }
    let _ = write!(
        out,
        "\nCall {} again with `arguments` matching this schema: {schema}",
        access.call_tool()
    );
    out
}

/// `text` for a model: invisible and bidirectional characters removed, whitespace runs made
/// one space, cut at a word boundary to at most `longest` characters (with `…`).
pub fn clean(text: &str, longest: usize) -> String {
    let characters: Vec<char> = text.chars().collect();
    let mut cleaned = String::with_capacity(text.len().min(longest * 4));
    let mut pending_space = false;
    for (index, &character) in characters.iter().enumerate() {
        let previous = index.checked_sub(1).map(|i| characters[i]);
        let next = characters.get(index + 1).copied();
        if character.is_whitespace() {
            pending_space = !cleaned.is_empty();
            continue;
        }
        if invisible_class(character, previous, next).is_some() {
            continue;
        }
        if pending_space {
            cleaned.push(' ');
            pending_space = false;
        }
        cleaned.push(character);
    }
    cut_at_word(&cleaned, longest)
}

fn cut_at_word(text: &str, longest: usize) -> String {
    if text.chars().count() <= longest {
        return text.to_owned();
    }
    if longest == 0 {
        return String::new();
    }
    let cut: String = text.chars().take(longest.saturating_sub(1)).collect();
    let at_word = match cut.rfind(' ') {
        Some(space) if space >= cut.len() / 2 => &cut[..space],
        _ => &cut,
    };
    format!("{}…", at_word.trim_end_matches([' ', ',', ';', ':', '.']))
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Estimate;
    use serde_json::json;

    #[test]
    fn clean_removes_hidden_characters_and_cuts_at_words() {
        assert_eq!(
            clean("Reads\u{200b} a\n\nfile.\u{202e}", 100),
            "Reads a file."
        );
        assert_eq!(clean("one two three four five", 12), "one two…");
        assert_eq!(clean("abcdefghijklmnop", 6), "abcde…");
        assert_eq!(clean("anything", 0), "");
        assert_eq!(clean("  spaced  ", 20), "spaced");
    }

    #[test]
    fn search_results_are_one_line_each_with_access() {
        let entries = [
            SearchEntry {
                gateway_name: "github__create_issue",
                access: Access::Write,
                description: "Create an issue in a repository.",
            },
            SearchEntry {
                gateway_name: "github__delete_repo",
                access: Access::Destructive,
                description: "Permanently delete a repository.",
            },
        ];
        let answer = search_results(
            "open a bug",
            &entries,
            2042,
            None,
            SEARCH_TOKEN_BUDGET,
            &Estimate,
        );
        assert_eq!(
            answer.text,
            "2 of 2042 tools for \"open a bug\", best first:\n\
             github__create_issue [write]: Create an issue in a repository.\n\
             github__delete_repo [destructive]: Permanently delete a repository.\n\
             describe_tool NAME gives a tool's schema."
        );
        assert_eq!(answer.shown, 2);
    }

    #[test]
    fn a_search_that_is_not_sure_says_so_within_the_budget() {
        let entries = [
            SearchEntry {
                gateway_name: "time__convert_time",
                access: Access::ReadOnly,
                description: "Convert time between timezones.",
            },
            SearchEntry {
                gateway_name: "time__get_current_time",
                access: Access::ReadOnly,
                description: "Get the current time in a timezone.",
            },
        ];
        let sure = search_results("time in Tokyo", &entries, 40, None, 700, &Estimate);
        assert!(!sure.text.contains("Not sure"), "{}", sure.text);
        let ambiguous = search_results(
            "time in Tokyo",
            &entries,
            40,
            Some(Doubt::Ambiguous),
            700,
            &Estimate,
        );
        assert!(
            ambiguous.text.ends_with(
                "Not sure: the first tools score nearly alike; compare them with describe_tool \
                 before calling.\ndescribe_tool NAME gives a tool's schema."
            ),
            "{}",
            ambiguous.text
        );
        let weak = search_results(
            "time in Tokyo",
            &entries,
            40,
            Some(Doubt::Weak),
            700,
            &Estimate,
        );
        assert!(
            weak.text.contains("matches the request only loosely"),
            "{}",
            weak.text
        );
        // The note is counted against the budget and never dropped: a budget that fits the sure
        // answer exactly makes the doubtful one cut descriptions or entries instead.
        let tight = search_results(
            "time in Tokyo",
            &entries,
            40,
            Some(Doubt::Weak),
            sure.tokens,
            &Estimate,
        );
        assert!(tight.text.contains("Not sure"), "{tight:?}");
        assert!(tight.text.len() < weak.text.len(), "{tight:?}");
    }

    #[test]
    fn a_tight_budget_cuts_descriptions_before_entries() {
        let long = "word ".repeat(100);
        let names: Vec<String> = (0..8).map(|i| format!("server__tool_{i}")).collect();
        let entries: Vec<SearchEntry<'_>> = names
            .iter()
            .map(|name| SearchEntry {
                gateway_name: name,
                access: Access::ReadOnly,
                description: &long,
            })
            .collect();
        let roomy = search_results("q", &entries, 100, None, 10_000, &Estimate);
        let tight = search_results("q", &entries, 100, None, 150, &Estimate);
        assert_eq!(roomy.shown, 8);
        assert_eq!(tight.shown, 8);
        assert!(tight.tokens <= 150, "{}", tight.tokens);
        assert!(tight.text.len() < roomy.text.len());
        let tiny = search_results("q", &entries, 100, None, 60, &Estimate);
        assert!(tiny.shown < 8 && tiny.tokens <= 60, "{tiny:?}");
        assert!(tiny.text.contains("more not shown"), "{}", tiny.text);
    }

    #[test]
    fn no_results_say_what_to_try() {
        let answer = search_results("zzz", &[], 5, None, 700, &Estimate);
        assert_eq!(
            answer.text,
            "No tool matches \"zzz\" among 5 tools. Try other words, or list_servers to see what there is."
        );
    }

    #[test]
    fn a_description_carries_one_schema_and_the_call_tool() {
        let tool = json!({
            "name": "create_issue",
            "description": "Create an issue.",
            "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
            "outputSchema": {"type": "object"},
            "annotations": {"destructiveHint": false}
        });
        assert_eq!(
            description("github__create_issue", &tool),
            "github__create_issue [write]: call it with call_write_tool.\nCreate an issue.\n\
             Input schema: {\"type\":\"object\",\"properties\":{\"title\":{\"type\":\"string\"}},\"required\":[\"title\"]}\n\
             It returns structured content (it declares an output schema)."
        );
    }

    #[test]
    fn a_refusal_lists_problems_and_gives_the_schema() {
        let tool =
            json!({"inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}});
        assert_eq!(
            validation_refusal("fs__read", &tool, &["/path: required".to_owned()]),
            "The arguments do not match the input schema of fs__read, so it was not called: \
             /path: required.\nCall call_read_only_tool again with `arguments` matching this \
             schema: {\"type\":\"object\"}"
        );
    }

    #[test]
    fn the_server_list_says_counts_and_unavailability() {
        let text = server_list(&[
            ServerSummary {
                name: "github",
                description: "GitHub: issues and code",
                tool_count: 42,
                unavailable: None,
            },
            ServerSummary {
                name: "db",
                description: "",
                tool_count: 1,
                unavailable: None,
            },
            ServerSummary {
                name: "down",
                description: "x",
                tool_count: 0,
                unavailable: Some("connection refused"),
            },
        ]);
        assert_eq!(
            text,
            "3 servers (search_tools finds their tools):\ngithub: GitHub: issues and code (42 tools)\n\
             db (1 tool)\ndown: x (unavailable: connection refused)"
        );
        assert_eq!(server_list(&[]), "No servers are available to you.");
    }
}
