//! The offline planner's document rule: which listed resource a task is about, and which part
//! of its text answers it.
//!
//! A resource is chosen by the words the task shares with its URI, name, title and description
//! (stems, so "statuses" meets "status"); the words that chose it are then set aside, and the
//! rest pick the lines of the text that answer ("the return **window**" → the "Return window"
//! section). With nothing left to pick by ("show me the shipping rates"), the whole text is the
//! answer. Country names also match their ISO codes, since tables and rate sheets use codes.
//! Pure.

use serde_json::Value;

use super::{countries::country_code, words};

/// One listed resource.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Listed {
    pub(crate) uri: String,
    /// Its name.
    pub(crate) name: String,
    /// Name, title and description.
    pub(crate) label: String,
}

/// The resources of a `list_resources` answer (`{resources: [{uri, name, title?,
/// description?}]}`), in order.
pub(crate) fn listed(result: &Value) -> Vec<Listed> {
    let data = result
        .get("structuredContent")
        .cloned()
        .or_else(|| serde_json::from_str(&crate::summary::result_text(result, usize::MAX)).ok())
        .unwrap_or(Value::Null);
    data.get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let uri = entry.get("uri")?.as_str()?.to_owned();
            let label = ["name", "title", "description"]
                .iter()
                .filter_map(|key| entry.get(*key).and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" ");
            let name = entry
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            Some(Listed { uri, name, label })
        })
        .collect()
}

fn stems_of(resource: &Listed) -> Vec<String> {
    words::content_stems(&format!(
        "{} {}",
        resource.uri.replace(['/', ':', '-', '_', '.'], " "),
        resource.label
    ))
}

/// How well a resource fits the task: the task's content stems found in its URI and label.
fn score(task_stems: &[String], resource: &Listed) -> usize {
    let stems = stems_of(resource);
    task_stems
        .iter()
        .filter(|stem| stems.contains(stem) && stem.len() > 2)
        .count()
}

/// Whether the task names the resource itself (a word of its name, "shipping" for
/// `demo://docs/shipping`).
fn names_it(task_stems: &[String], resource: &Listed) -> bool {
    let name = words::content_stems(&resource.name.replace(['-', '_', '.'], " "));
    task_stems
        .iter()
        .any(|stem| stem.len() > 2 && name.contains(stem))
}

/// The best-fitting resource, when one shares at least `least` words with the task, or names
/// it and shares one.
pub(crate) fn choose<'a>(task: &str, resources: &'a [Listed], least: usize) -> Option<&'a Listed> {
    let task_stems = words::content_stems(task);
    let mut best: Option<(&Listed, usize)> = None;
    for resource in resources {
        let score = score(&task_stems, resource);
        let enough = score >= least.max(1) || (score >= 1 && names_it(&task_stems, resource));
        if enough && best.is_none_or(|(_, top)| score > top) {
            best = Some((resource, score));
        }
    }
    best.map(|(resource, _)| resource)
}

/// Whether the task only asks what documents there are.
pub(crate) fn asks_for_the_list(task: &str) -> bool {
    let stems = words::content_stems(task);
    let listing = [
        "document",
        "doc",
        "resource",
        "file",
        "available",
        "exist",
        "have",
    ];
    !stems.is_empty()
        && stems
            .iter()
            .any(|s| ["document", "doc", "resource"].contains(&s.as_str()))
        && stems.iter().all(|s| listing.contains(&s.as_str()))
}

/// Whether the task speaks of documents at all (a policy, notes, a readme, what a word means).
pub(crate) fn about_documents(task: &str) -> bool {
    // Whole words (or a typo of a long one), not crude stems: "not" is no "notes".
    let task_words = words::words(task);
    task_words.iter().any(|word| {
        [
            "policy",
            "policies",
            "document",
            "documents",
            "docs",
            "doc",
            "readme",
            "notes",
            "note",
            "resource",
            "resources",
            "guide",
            "guides",
            "manual",
            "faq",
            "terms",
            "rules",
            "handbook",
        ]
        .iter()
        .any(|target| word == target || (word.len() >= 6 && words::close(word, target)))
    }) || {
        // "What does `returned` mean?" asks for a definition; "the mean price" does not.
        let lower = task.to_lowercase();
        lower.contains(" mean?") || (lower.contains(" does ") && lower.contains(" mean"))
    }
}

/// The part of `text` that answers the task: the lines sharing the most words with it (a
/// heading brings its section, a table row its header), or the whole text when no word is left
/// to pick by. The words are the quoted ones when the task quotes something, else those that
/// do not merely name the document (its URI, name and first line, its title).
pub(crate) fn excerpt(task: &str, chosen: &Listed, text: &str) -> String {
    let title = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("");
    let naming = words::content_stems(&format!(
        "{} {} {title}",
        chosen.uri.replace(['/', ':', '-', '_', '.'], " "),
        chosen.name.replace(['-', '_'], " ")
    ));
    // A quoted term is matched as written ("returned", not every form of "return").
    let quoted = super::parse::quoted(task);
    let exact = quoted.is_some();
    let mut wanted: Vec<String> = match quoted {
        Some(quoted) => words::words(&quoted),
        None => words::content_stems(task)
            .into_iter()
            .filter(|stem| !naming.contains(stem))
            .collect(),
    };
    let codes: Vec<String> = words::words(task)
        .iter()
        .filter_map(|word| country_code(word))
        .map(|code| code.to_lowercase())
        .collect();
    wanted.extend(codes);
    let lines: Vec<&str> = text.lines().collect();
    let line_score = |line: &str| {
        let stems: Vec<String> = words::words(line)
            .iter()
            .map(|w| if exact { w.clone() } else { words::stem(w) })
            .collect();
        wanted.iter().filter(|w| stems.contains(w)).count()
    };
    let scores: Vec<usize> = lines.iter().map(|line| line_score(line)).collect();
    let top = scores.iter().copied().max().unwrap_or(0);
    if wanted.is_empty() || top == 0 {
        return text.trim().to_owned();
    }
    let is_heading = |line: &str| line.trim_start().starts_with('#');
    // A heading that answers wins over scattered lines: its section is the answer.
    let heading_wins = lines
        .iter()
        .zip(&scores)
        .any(|(line, score)| *score == top && is_heading(line));
    let mut keep = vec![false; lines.len()];
    for (index, line) in lines.iter().enumerate() {
        if scores[index] < top || (heading_wins && !is_heading(line)) {
            continue;
        }
        keep[index] = true;
        if line.trim_start().starts_with('#') {
            // A heading: its section, to the next heading.
            for (next, following) in lines.iter().enumerate().skip(index + 1) {
                if following.trim_start().starts_with('#') {
                    break;
                }
                keep[next] = true;
            }
        } else if let Some(header) = table_header(&lines, index) {
            keep[header] = true;
        }
    }
    lines
        .iter()
        .zip(keep)
        .filter(|(line, keep)| *keep && !line.trim().is_empty())
        .map(|(line, _)| line.trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The header line of the table (markdown `|` rows, or aligned columns under a line naming
/// them) that row `index` belongs to.
fn table_header(lines: &[&str], index: usize) -> Option<usize> {
    let row = lines[index];
    if row.trim_start().starts_with('|') {
        let mut header = index;
        while header > 0 && lines[header - 1].trim_start().starts_with('|') {
            header -= 1;
        }
        return (header != index).then_some(header);
    }
    // Aligned columns: the nearest line above, after a blank one or the first line, that starts
    // a block of rows.
    let mut header = index;
    while header > 0 && !lines[header - 1].trim().is_empty() {
        header -= 1;
    }
    (header != index && lines[header].contains("  ")).then_some(header)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn docs() -> Vec<Listed> {
        listed(&json!({"structuredContent": {"resources": [
            {"uri": "demo://docs/returns-policy", "name": "returns-policy",
             "description": "What each order status means and the return window"},
            {"uri": "demo://docs/shipping", "name": "shipping",
             "description": "Shipping prices in US dollars by destination country"},
            {"uri": "demo://docs/currency-notes", "name": "currency-notes",
             "description": "Prices are US dollars; how to convert them"},
            {"uri": "demo://tables/orders", "name": "orders table"}
        ]}}))
    }

    #[test]
    fn the_resource_sharing_most_words_is_chosen() {
        let docs = docs();
        let uri = |task: &str| choose(task, &docs, 1).map(|d| d.uri.as_str());
        assert_eq!(
            uri("What does the returns policy say about the return window?"),
            Some("demo://docs/returns-policy")
        );
        assert_eq!(
            uri("What does the status \"returned\" mean?"),
            Some("demo://docs/returns-policy")
        );
        assert_eq!(
            uri("Show me the shipping rates"),
            Some("demo://docs/shipping")
        );
        assert_eq!(
            uri("Read the currency notes"),
            Some("demo://docs/currency-notes")
        );
        assert_eq!(uri("What is the weather like?"), None);
        assert!(asks_for_the_list("What documents are available?"));
        assert!(!asks_for_the_list("What documents mention shipping?"));
    }

    #[test]
    fn the_excerpt_is_the_lines_left_words_pick_or_the_whole_text() {
        let docs = docs();
        let text = "# Returns and statuses\n\n| status | meaning |\n|---|---|\n| `returned` | sent back |\n\
                    | `shipped` | on its way |\n\n## Return window\n\n- 30 days from delivery.\n\n## Other\nx";
        let excerpt_of = |task: &str, index: usize| excerpt(task, &docs[index], text);
        assert_eq!(
            excerpt_of(
                "What does the returns policy say about the return window?",
                0
            ),
            "## Return window\n- 30 days from delivery."
        );
        assert_eq!(
            excerpt_of("What does the status \"shipped\" mean?", 0),
            "| status | meaning |\n| `shipped` | on its way |"
        );
        // A heading that answers wins over a table row using the same word.
        let policy = "# Returns\n\n| status | meaning |\n| `returned` | sent back within the window |\n\n\
                      ## Return window\n\n- 30 days.\n- Books: 60 days.\n";
        assert_eq!(
            excerpt("What is the return window for books?", &docs[0], policy),
            "## Return window\n- 30 days.\n- Books: 60 days."
        );
        let sheet = "RATES\n\nDestination   Standard   Express\nUS            4.99       14.99\nJP, AU        19.99      44.99\n";
        assert_eq!(
            excerpt("How much is shipping to Japan?", &docs[1], sheet),
            "Destination   Standard   Express\nJP, AU        19.99      44.99"
        );
        assert_eq!(
            excerpt("Show me the shipping document", &docs[1], sheet),
            sheet.trim()
        );
    }
}
