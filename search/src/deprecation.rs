//! Whether a tool's description says the tool itself is deprecated, so the ranking can demote
//! it below the tool that replaced it (`search::DEPRECATED`).
//!
//! Servers keep old tools for old clients and say so in the description: the filesystem
//! server's `read_file` reads "Read the complete contents of a file as text. DEPRECATED: Use
//! read_text_file instead." Both match "read a file"; the old one, with the shorter name,
//! matched better. The test is deliberately narrow: a description that mentions deprecation of
//! something else ("Ping web tests are deprecated and are not supported") or that recommends
//! itself ("use this instead of grep") does not count.

/// Phrases that, anywhere in the lowercased description, say the tool itself is deprecated.
const SELF_DEPRECATED: &[&str] = &[
    "deprecated:",
    "(deprecated)",
    "[deprecated]",
    "deprecated -",
    "deprecated –",
    "this tool is deprecated",
    "this function is deprecated",
    "this endpoint is deprecated",
    "this method is deprecated",
    "this command is deprecated",
    "this api is deprecated",
    "tool is deprecated",
    "is deprecated and will be removed",
    "deprecated in favor of",
    "deprecated in favour of",
    "deprecated, use",
    "deprecated. use",
];

/// Whether `description` says the tool named `name` is deprecated: an upper-case
/// `DEPRECATED`, a description that opens with "deprecated", one of `SELF_DEPRECATED`, or
/// "use X instead" where X is another tool of the same server (`siblings`).
pub(crate) fn is_deprecated(description: &str, name: &str, siblings: &[String]) -> bool {
    // Only the opening matters: a deprecation notice comes first or right after the summary,
    // and the cap keeps a 8 KiB description cheap.
    let opening = crate::text::truncate_at_char_boundary(description, 1024);
    if opening
        .split(|c: char| !c.is_alphanumeric())
        .any(|word| word == "DEPRECATED")
    {
        return true;
    }
    let lowered = opening.to_lowercase();
    if lowered.trim_start().starts_with("deprecated")
        || SELF_DEPRECATED
            .iter()
            .any(|phrase| lowered.contains(phrase))
    {
        return true;
    }
    uses_sibling_instead(&lowered, name, siblings)
}

/// Whether `lowered` says "use X instead" (or "use X instead of this") with X another tool of
/// the server: X is read as the word after "use", without quotes or backticks.
fn uses_sibling_instead(lowered: &str, name: &str, siblings: &[String]) -> bool {
    let mut rest = lowered;
    while let Some(at) = rest.find("use ") {
        let after = &rest[at + 4..];
        rest = after;
        let mut words = after.split_whitespace();
        let Some(candidate) = words.next() else {
            break;
        };
        let candidate = candidate
            .trim_matches(|c: char| matches!(c, '`' | '\'' | '"' | '*' | ',' | '.' | '(' | ')'));
        let next = words.next().unwrap_or_default();
        if !next.starts_with("instead") {
            continue;
        }
        if candidate != name.to_lowercase()
            && siblings
                .iter()
                .any(|sibling| sibling.to_lowercase() == candidate)
        {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn siblings() -> Vec<String> {
        [
            "read_file",
            "read_text_file",
            "search_code",
            "list_directory",
        ]
        .map(str::to_owned)
        .to_vec()
    }

    #[test]
    fn a_tool_that_says_it_is_deprecated_or_names_its_replacement_is_deprecated() {
        let s = siblings();
        assert!(is_deprecated(
            "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.",
            "read_file",
            &s
        ));
        assert!(is_deprecated(
            "Deprecated. Lists things.",
            "list_directory",
            &s
        ));
        assert!(is_deprecated("Reads a file (deprecated)", "read_file", &s));
        assert!(is_deprecated(
            "Reads a file. Please use `read_text_file` instead.",
            "read_file",
            &s
        ));
        assert!(is_deprecated(
            "This tool is deprecated and will be removed in 2.0.",
            "x",
            &s
        ));
    }

    #[test]
    fn deprecation_of_something_else_or_a_tool_recommending_itself_does_not_count() {
        let s = siblings();
        // Azure MCP: another feature is deprecated, not the tool.
        assert!(!is_deprecated(
            "Creates a new standard web test. Ping/Multstep web tests are deprecated and are not supported.",
            "monitor_webtests_create",
            &s
        ));
        // A desktop-commander tool that recommends itself over a shell command.
        assert!(!is_deprecated(
            "Search for text within file contents. Use this instead of 'execute_command' with grep.",
            "search_code",
            &s
        ));
        // "use X instead" where X is no tool of the server.
        assert!(!is_deprecated(
            "Lists files; for huge trees use find instead.",
            "list_directory",
            &s
        ));
        // A tool that checks whether packages are deprecated.
        assert!(!is_deprecated(
            "Check if packages are deprecated",
            "npmDeprecated",
            &s
        ));
        assert!(!is_deprecated("", "read_file", &s));
    }
}
