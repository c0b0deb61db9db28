//! Whether a resource URI is one of a URI template's expansions (RFC 6570), so the gateway knows
//! which server to read a URI from that no server listed but whose resource template it fits
//! (`test://template/123/data` for `test://template/{id}/data`).
//!
//! Matching, not expanding: literal text must match exactly; a simple expression `{id}` (and the
//! label, parameter and query forms `{.x}`, `{;x}`, `{?x}`, `{&x}`) stands for at least one
//! character none of which is `/`, `?` or `#`, as a simple expansion percent-encodes those; the
//! reserved forms `{+x}`, `{#x}` and the path form `{/x}` may also hold `/`. A template whose
//! braces do not balance matches nothing: a wrong guess would read a URI from a server that
//! never offered it.

/// Whether `uri` fits `template`.
pub fn matches(template: &str, uri: &str) -> bool {
    match parse(template) {
        Some(parts) => fits(&parts, uri),
        None => false,
    }
}

/// One piece of a template.
#[derive(Debug, PartialEq, Eq)]
enum Part<'a> {
    /// Text that must appear as it is.
    Literal(&'a str),
    /// An expression: whether its expansion may hold `/`.
    Expression { slashes: bool },
}

fn parse(template: &str) -> Option<Vec<Part<'_>>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        match rest.find('{') {
            Some(open) => {
                if rest[..open].contains('}') {
                    return None;
                }
                if open > 0 {
                    parts.push(Part::Literal(&rest[..open]));
                }
                let close = rest[open..].find('}')? + open;
                let expression = &rest[open + 1..close];
                if expression.is_empty() || expression.contains('{') {
                    return None;
                }
                parts.push(Part::Expression {
                    slashes: matches!(expression.as_bytes()[0], b'+' | b'#' | b'/'),
                });
                rest = &rest[close + 1..];
            }
            None => {
                if rest.contains('}') {
                    return None;
                }
                parts.push(Part::Literal(rest));
                rest = "";
            }
        }
    }
    Some(parts)
}

/// Backtracking match; templates are short, and each expression tries each possible end once.
fn fits(parts: &[Part<'_>], uri: &str) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(text), rest)) => uri
            .strip_prefix(text)
            .is_some_and(|remaining| fits(rest, remaining)),
        Some((Part::Expression { slashes }, rest)) => {
            for (index, character) in uri.char_indices() {
                let end = index + character.len_utf8();
                let stop = if *slashes {
                    false
                } else {
                    matches!(character, '/' | '?' | '#')
                };
                if stop {
                    return false;
                }
                if fits(rest, &uri[end..]) {
                    return true;
                }
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn a_simple_expression_stands_for_one_path_segment() {
        assert!(matches(
            "test://template/{id}/data",
            "test://template/123/data"
        ));
        assert!(matches("file:///{name}", "file:///notes.txt"));
        assert!(!matches(
            "test://template/{id}/data",
            "test://template//data"
        ));
        assert!(!matches(
            "test://template/{id}/data",
            "test://template/1/2/data"
        ));
        assert!(!matches(
            "test://template/{id}/data",
            "test://template/123/data/x"
        ));
        assert!(!matches(
            "test://template/{id}/data",
            "test://other/123/data"
        ));
        assert!(matches("db://{table}/{row}", "db://users/42"));
        assert!(!matches("db://{table}/{row}", "db://users"));
    }

    #[test]
    fn reserved_and_path_expressions_may_hold_slashes() {
        assert!(matches("repo://{+path}", "repo://src/main.rs"));
        assert!(matches("repo://root{/path}", "repo://root/a/b"));
        assert!(!matches("repo://{path}", "repo://src/main.rs"));
    }

    #[test]
    fn a_broken_template_matches_nothing() {
        for template in ["test://{id", "test://id}", "test://{}", "test://{a{b}}"] {
            assert!(!matches(template, "test://x"), "{template}");
        }
        assert!(matches("test://plain", "test://plain"));
        assert!(!matches("test://plain", "test://plainer"));
    }
}
