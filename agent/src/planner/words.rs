//! Word-level helpers the planner's rules share: splitting a task into words, a crude stem so
//! that "statuses" meets "status" and "orders" meets "order", typo-tolerant comparison (one
//! edit for words of five letters or more, two for eight or more, a swap of neighbours counting
//! as one edit), numbers as written ("1,250.50"), and the words that carry no meaning of their
//! own. Pure string work.

/// Words that say nothing about what is wanted: left out when tasks are matched against names,
/// descriptions and text.
const STOP_WORDS: [&str; 78] = [
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "by", "can", "could", "did",
    "do", "does", "for", "from", "get", "give", "has", "have", "how", "i", "in", "into", "is",
    "it", "its", "me", "much", "my", "of", "on", "or", "our", "please", "say", "says", "show",
    "tell", "that", "the", "their", "them", "there", "these", "this", "those", "to", "us", "was",
    "we", "were", "what", "whats", "when", "where", "which", "who", "why", "will", "with", "would",
    "you", "your", "list", "find", "look", "up", "many", "number", "read", "see", "want", "know",
    "need", "let",
];

/// The task's words, lowercased, split at anything that is not a letter or digit (an
/// apostrophe's `s` is dropped: "Ada's" gives "ada").
pub(crate) fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace(['\u{2019}', '\''], "'")
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|word| {
            word.strip_suffix("'s")
                .unwrap_or(word)
                .trim_matches('\'')
                .to_owned()
        })
        .filter(|word| !word.is_empty())
        .collect()
}

/// Whether a word carries no meaning of its own.
pub(crate) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// The words that mean something, stemmed.
pub(crate) fn content_stems(text: &str) -> Vec<String> {
    let mut stems: Vec<String> = words(text)
        .iter()
        .filter(|word| !is_stop_word(word))
        .map(|word| stem(word))
        .collect();
    stems.dedup();
    stems
}

/// A crude English stem: plural and verb endings removed, so that the forms of one word meet.
pub(crate) fn stem(word: &str) -> String {
    let word = word.to_lowercase();
    for (suffix, keep) in [
        ("ies", "y"),
        ("sses", "ss"),
        ("uses", "us"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
    ] {
        if let Some(base) = word.strip_suffix(suffix)
            && base.chars().count() >= 3
            && !(suffix == "s" && (base.ends_with('s') || base.ends_with('u')))
        {
            return format!("{base}{keep}");
        }
    }
    word
}

/// The optimal-string-alignment distance: insertions, deletions, substitutions and swaps of
/// two neighbours each count one.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

/// Whether `word` is `target` or a likely typo of it: one edit for words of five letters or
/// more, two for eight or more. Short words must match exactly (too many near neighbours).
pub(crate) fn close(word: &str, target: &str) -> bool {
    if word == target {
        return true;
    }
    let length = word.chars().count().min(target.chars().count());
    let allowed = match length {
        0..=4 => 0,
        5..=7 => 1,
        _ => 2,
    };
    allowed > 0 && edit_distance(word, target) <= allowed
}

/// Whether any word of the task is (close to) one of `targets`, comparing stems.
pub(crate) fn mentions(task_words: &[String], targets: &[&str]) -> bool {
    task_words.iter().any(|word| {
        let stemmed = stem(word);
        targets
            .iter()
            .any(|target| stemmed == stem(target) || close(word, target))
    })
}

/// The task with every word that is a likely typo of one of `vocabulary` replaced by it; other
/// words keep their case, so names stay capitalised.
pub(crate) fn corrected(task: &str, vocabulary: &[&str]) -> String {
    let mut out = String::with_capacity(task.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.is_empty() {
            return;
        }
        let lower = word.to_lowercase();
        let replacement = if vocabulary.contains(&lower.as_str()) || is_stop_word(&lower) {
            None
        } else {
            vocabulary
                .iter()
                .find(|target| close(&lower, target))
                .map(|target| (*target).to_owned())
        };
        out.push_str(replacement.as_deref().unwrap_or(word.as_str()));
        word.clear();
    };
    for c in task.chars() {
        if c.is_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Every number written in the text, in order: `1,250.50` is 1250.5, `-3` is -3; digits inside
/// a date (`2024-03-15`) or a word (`A5`) are not numbers.
pub(crate) fn numbers(text: &str) -> Vec<f64> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut index = 0;
    while index < chars.len() {
        // A minus sign belongs to the number only after a space ("-3"), not inside "2024-03".
        let after_word = index > 0
            && (chars[index - 1].is_alphanumeric()
                || (chars[index - 1] == '-' && index > 1 && !chars[index - 2].is_whitespace()));
        let starts = chars[index].is_ascii_digit() && !after_word;
        if !starts {
            index += 1;
            continue;
        }
        let begin = index;
        while index < chars.len()
            && (chars[index].is_ascii_digit()
                || ((chars[index] == ',' || chars[index] == '.')
                    && chars.get(index + 1).is_some_and(char::is_ascii_digit)))
        {
            index += 1;
        }
        let glued = chars
            .get(index)
            .is_some_and(|c| c.is_alphabetic() || *c == '-');
        if glued {
            continue;
        }
        let number: String = chars[begin..index].iter().filter(|c| **c != ',').collect();
        let negative = begin > 0
            && chars[begin - 1] == '-'
            && (begin == 1 || chars[begin - 2].is_whitespace());
        if let Ok(value) = number.parse::<f64>() {
            found.push(if negative { -value } else { value });
        }
    }
    found
}

/// A number as people write it: no trailing `.0`, at most six decimals.
pub(crate) fn plain_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        let text = format!("{value:.6}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_drop_possessives_and_punctuation() {
        assert_eq!(
            words("What's Ada Okafor's e-mail, please?"),
            ["what", "ada", "okafor", "e", "mail", "please"]
        );
    }

    #[test]
    fn stems_meet_across_forms() {
        for (a, b) in [
            ("statuses", "status"),
            ("orders", "order"),
            ("categories", "category"),
            ("returned", "return"),
            ("shipping", "shipped"),
            ("means", "mean"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} {b}");
        }
        assert_eq!(stem("bus"), "bus");
        assert_eq!(stem("class"), "class");
    }

    #[test]
    fn typos_are_close_and_short_words_are_not() {
        assert!(close("custmer", "customer"));
        assert!(close("ordres", "orders"));
        assert!(close("convrt", "convert"));
        assert!(close("prodcts", "products"));
        assert!(!close("cost", "most"));
        assert!(!close("order", "total"));
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(
            corrected("Look up custmer Ada's ordres", &["customer", "orders"]),
            "Look up customer Ada's orders"
        );
    }

    #[test]
    fn numbers_as_written_but_not_inside_dates_or_words() {
        assert_eq!(numbers("add 1,250.50 and -3 then 7."), [1250.5, -3.0, 7.0]);
        assert_eq!(
            numbers("on 2024-03-15 buy an A5 notebook"),
            Vec::<f64>::new()
        );
        assert_eq!(plain_number(395.0), "395");
        assert_eq!(plain_number(1.2345678), "1.234568");
    }
}
