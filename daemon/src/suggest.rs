//! "Did you mean": the known names closest to a mistyped one.
//!
//! Pure. Distance is the Levenshtein edit distance over characters, case-insensitive, with a
//! bonus for names that contain the typed one (or are contained in it), so `read` suggests
//! `read_file` before `head`. Ties keep the input order.

/// At most `limit` of `names` closest to `typed`, best first; names too far away to be a typo
/// (more edits than half their length, and no containment) are left out.
pub(crate) fn closest<'a>(
    typed: &str,
    names: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<&'a str> {
    let typed = typed.to_lowercase();
    let mut scored: Vec<(usize, usize, &str)> = names
        .into_iter()
        .enumerate()
        .filter_map(|(order, name)| {
            let lower = name.to_lowercase();
            let contained = !typed.is_empty() && (lower.contains(&typed) || typed.contains(&lower));
            let distance = levenshtein(&typed, &lower);
            let longest = typed.chars().count().max(lower.chars().count());
            let score = if contained { distance.min(1) } else { distance };
            (contained || distance * 2 <= longest).then_some((score, order, name))
        })
        .collect();
    scored.sort_by_key(|&(score, order, _)| (score, order));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, _, name)| name)
        .collect()
}

/// The `limit` names closest to `wanted` by edit distance, nearest first, ties in the given
/// order; unlike [`closest`], never empty while there are names (an unknown-tool error lists the
/// nearest the server has, however far).
pub(crate) fn closest_names(wanted: &str, names: &[String], limit: usize) -> Vec<String> {
    if limit == 0 {
        return Vec::new();
    }
    // (distance, position): unique, so sorting them breaks ties by the server's order.
    let mut scored: Vec<(usize, usize)> = names
        .iter()
        .enumerate()
        .map(|(index, name)| (levenshtein(wanted, name), index))
        .collect();
    if scored.len() > limit {
        scored.select_nth_unstable(limit - 1);
        scored.truncate(limit);
    }
    scored.sort_unstable();
    scored
        .into_iter()
        .map(|(_, index)| names[index].clone())
        .collect()
}

/// The edit distance between `a` and `b`, in characters (the first 128 of each: names longer
/// than that are not typos, and the cost stays bounded).
fn levenshtein(a: &str, b: &str) -> usize {
    const CONSIDERED: usize = 128;
    let a: String = a.chars().take(CONSIDERED).collect();
    let a = a.as_str();
    let b: Vec<char> = b.chars().take(CONSIDERED).collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_and_fragments_find_their_names() {
        let names = [
            "read_file",
            "write_file",
            "list_directory",
            "head",
            "sql_query",
        ];
        assert_eq!(closest("read_fiel", names, 3), vec!["read_file"]);
        assert_eq!(closest("file", names, 3), vec!["read_file", "write_file"]);
        assert_eq!(closest("SQL_QUERY", names, 3), vec!["sql_query"]);
        assert!(closest("zzzzzzzzzz", names, 3).is_empty());
        assert_eq!(closest("a", ["a", "b"], 10), vec!["a"]);
    }

    #[test]
    fn closest_names_are_capped_and_nearest_first() {
        let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(
            closest_names("describe", &names(&["sql_query", "describe_schema"]), 10),
            names(&["describe_schema", "sql_query"])
        );
        let many: Vec<String> = (0..10_000).map(|i| format!("tool_{i}")).collect();
        let closest = closest_names("tool_42", &many, 10);
        assert_eq!(closest.len(), 10);
        assert_eq!(closest[0], "tool_42");
        assert_eq!(
            closest_names("x", &names(&["b", "a", "c"]), 2),
            names(&["b", "a"])
        );
    }

    #[test]
    fn levenshtein_counts_edits() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("ab", "ab"), 0);
    }
}
