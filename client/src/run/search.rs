//! Running `tool-cli search`: one `searchTools` request, then either its raw result (`--json`)
//! or, for people and agents, the call to make first (`tool-cli SERVER TOOL key=…` with the
//! best tool's required parameters), then one line per hit (rank, score, `server tool`, the
//! first line of the description), ties and near-duplicates across servers marked as such, and
//! with `--explain` what each score is made of. The rendering is pure and unit-tested below.

use tool_cli_protocol::methods::name;
use tool_cli_protocol::search::{SearchConfidence, SearchHit, SearchToolsResult};

use super::Output;
use crate::args::search::SearchRequest;
use crate::client::{Client, parse_result};
use crate::error::Error;

/// The most characters of a description shown on a hit's line.
const DESCRIPTION_CHARS: usize = 100;

/// Two hits whose scores differ by less than this are a tie: the ranking cannot tell them
/// apart, and the reader should choose (scores are about 1 for a good match).
const TIE: f32 = 0.01;

pub(super) async fn search(
    client: &mut Client,
    output: &mut Output<'_>,
    request: SearchRequest,
) -> Result<(), Error> {
    let mut params = request.params.clone();
    // The schemas say which parameters the best tool requires, for the call on the first line.
    if !output.json {
        params.include_schema = true;
    }
    let params = serde_json::to_value(&params)
        .map_err(|error| Error::Other(format!("cannot encode the params: {error}")))?;
    let result = client.call(name::SEARCH_TOOLS, Some(params)).await?;
    if output.json {
        return output.emit_json(&result);
    }
    let found: SearchToolsResult = parse_result(name::SEARCH_TOOLS, result)?;
    output.emit_text(&render(&request.params.query, &found, request.explain))
}

/// The call to make, the hits one per line (ties and near-duplicates marked), and with
/// `explain` the parts of each score.
pub(crate) fn render(query: &str, found: &SearchToolsResult, explain: bool) -> String {
    let Some(best) = found.results.first() else {
        return format!(
            "no tool matches {query:?} among the {} tools this token can see; try other words, \
             or list them with `tool-cli SERVER`",
            found.catalog_size
        );
    };
    let mut text = call_line(best);
    text.push('\n');
    for (rank, hit) in found.results.iter().enumerate() {
        let description = one_line(&hit.description);
        let separator = if description.is_empty() { "" } else { " — " };
        text.push_str(&format!(
            "{:>3}  {:>5.3}  {} {}{separator}{description}{}\n",
            rank + 1,
            hit.score,
            shell_word(&hit.server),
            shell_word(&hit.tool),
            relation_note(&found.results, rank),
        ));
        if explain {
            let why = &hit.why;
            text.push_str(&format!(
                "            why: lexical {:.2}, semantic {:.2}, inertia {:.3}, reliability {:.3}, \
                 latency {:.3}\n",
                why.lexical, why.semantic, why.inertia, why.reliability, why.latency
            ));
        }
    }
    let ties: Vec<&SearchHit> = found
        .results
        .iter()
        .skip(1)
        .filter(|hit| best.score - hit.score < TIE)
        .collect();
    if !ties.is_empty() {
        let others: Vec<String> = ties
            .iter()
            .map(|hit| format!("{}/{}", hit.server, hit.tool))
            .collect();
        text.push_str(&format!(
            "\ntie: {}/{} and {} score the same; choose by the descriptions, or narrow with --server\n",
            best.server,
            best.tool,
            others.join(", ")
        ));
    }
    // What the daemon said about its own answer: an agent or a person should not take the first
    // line as the answer when the search itself is not sure of it.
    match found.confidence {
        Some(SearchConfidence::Ambiguous) if ties.is_empty() => text.push_str(&format!(
            "\nnot sure: other tools score nearly as well as {}/{}; choose by the descriptions, \
             or narrow with --server\n",
            best.server, best.tool
        )),
        Some(SearchConfidence::Weak) => text.push_str(&format!(
            "\nnot sure: {}/{} matches the request only loosely; there may be no tool for it \
             among those this token can see, try other words\n",
            best.server, best.tool
        )),
        _ => {}
    }
    text.truncate(text.trim_end().len());
    text
}

/// The command that calls `hit`: `tool-cli SERVER TOOL` and `key=…` for each parameter its
/// schema requires (in the schema's order), or `'{...}'` when the schema was not sent.
fn call_line(hit: &SearchHit) -> String {
    let mut line = format!(
        "tool-cli {} {}",
        shell_word(&hit.server),
        shell_word(&hit.tool)
    );
    match &hit.input_schema {
        Some(schema) => {
            let required = schema
                .get("required")
                .and_then(|required| required.as_array())
                .into_iter()
                .flatten()
                .filter_map(|key| key.as_str());
            for key in required {
                line.push(' ');
                line.push_str(&shell_word(&format!("{key}=…")));
            }
        }
        None => line.push_str(" '{...}'"),
    }
    line
}

/// What a hit is to the hits above it: the same tool as an earlier hit on another server (a
/// near-duplicate: same name, or same description), or a tie with the hit just above it.
fn relation_note(hits: &[SearchHit], rank: usize) -> String {
    let hit = &hits[rank];
    if let Some(twin) = hits[..rank].iter().position(|other| {
        other.server != hit.server
            && (other.tool.eq_ignore_ascii_case(&hit.tool)
                || (!hit.description.trim().is_empty()
                    && one_line(&other.description) == one_line(&hit.description)))
    }) {
        return format!("  (same tool as {}, on another server)", twin + 1);
    }
    if rank > 0 && hits[rank - 1].score - hit.score < TIE {
        return format!("  (tie with {})", rank);
    }
    String::new()
}

/// The first line of `text`, whitespace collapsed, cut at [`DESCRIPTION_CHARS`] characters.
fn one_line(text: &str) -> String {
    let line = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("");
    let words: Vec<&str> = line.split_whitespace().collect();
    let line = words.join(" ");
    if line.chars().count() <= DESCRIPTION_CHARS {
        return line;
    }
    let cut: String = line.chars().take(DESCRIPTION_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// `word` as one shell word: as it is when it has only safe characters, else single-quoted.
fn shell_word(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':' | '@'));
    if safe {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tool_cli_protocol::search::{SearchHit, SearchWhy};

    fn hit(server: &str, tool: &str, description: &str, score: f32) -> SearchHit {
        SearchHit {
            server: server.to_owned(),
            tool: tool.to_owned(),
            description: description.to_owned(),
            score,
            why: SearchWhy::default(),
            input_schema: None,
        }
    }

    #[test]
    fn the_first_line_is_the_call_with_the_required_parameters_then_ranked_lines() {
        let mut best = hit("fs", "read_text_file", "Read a file.\nMore detail.", 0.91);
        best.input_schema = Some(serde_json::json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "head": {"type": "number"}},
            "required": ["path"]
        }));
        let found = SearchToolsResult {
            results: vec![best, hit("my server", "get", "", 0.5)],
            catalog_size: 12,
            took_us: 40,
            semantic: Default::default(),
            confidence: None,
        };
        let text = render("read a file", &found, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "tool-cli fs read_text_file 'path=…'");
        assert_eq!(lines[1], "  1  0.910  fs read_text_file — Read a file.");
        assert_eq!(lines[2], "  2  0.500  'my server' get");
        assert_eq!(lines.len(), 3, "{text}");
        // Without the schema (an old daemon), the call takes the arguments as JSON.
        let found = SearchToolsResult {
            results: vec![hit("fs", "stat", "", 0.9)],
            catalog_size: 1,
            took_us: 1,
            semantic: Default::default(),
            confidence: None,
        };
        assert_eq!(
            render("x", &found, false).lines().next(),
            Some("tool-cli fs stat '{...}'")
        );
    }

    #[test]
    fn ties_and_near_duplicates_across_servers_are_marked() {
        let found = SearchToolsResult {
            results: vec![
                hit("slack", "post_message", "Post a message to a channel", 0.95),
                hit(
                    "teams",
                    "post_message",
                    "Post a message to a Teams channel",
                    0.948,
                ),
                hit("mirror", "send", "Post a message to a channel", 0.7),
                hit("mail", "send_email", "Send an email", 0.695),
            ],
            catalog_size: 40,
            took_us: 1,
            semantic: Default::default(),
            confidence: None,
        };
        let text = render("post a message", &found, false);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[2].ends_with("(same tool as 1, on another server)"),
            "{text}"
        );
        assert!(
            lines[3].ends_with("(same tool as 1, on another server)"),
            "{text}"
        );
        assert!(lines[4].ends_with("(tie with 3)"), "{text}");
        assert!(
            text.contains("tie: slack/post_message and teams/post_message score the same"),
            "{text}"
        );
    }

    #[test]
    fn explain_prints_why_under_each_hit() {
        let mut first = hit("time", "get_current_time", "Now", 1.2);
        first.why = SearchWhy {
            lexical: 3.5,
            semantic: 0.61,
            inertia: 0.0,
            reliability: 0.03,
            latency: 0.02,
        };
        let found = SearchToolsResult {
            results: vec![first],
            catalog_size: 2,
            took_us: 1,
            semantic: Default::default(),
            confidence: None,
        };
        let text = render("time", &found, true);
        assert!(
            text.contains(
                "why: lexical 3.50, semantic 0.61, inertia 0.000, reliability 0.030, latency 0.020"
            ),
            "{text}"
        );
        assert!(!render("time", &found, false).contains("why:"));
    }

    #[test]
    fn an_answer_the_daemon_is_not_sure_of_says_so_under_the_hits() {
        let found = |confidence| SearchToolsResult {
            results: vec![
                hit(
                    "time",
                    "convert_time",
                    "Convert time between timezones",
                    0.95,
                ),
                hit("time", "get_current_time", "Get the current time", 0.8),
            ],
            catalog_size: 2,
            took_us: 1,
            semantic: Default::default(),
            confidence,
        };
        let ambiguous = render(
            "time in Tokyo",
            &found(Some(SearchConfidence::Ambiguous)),
            false,
        );
        assert!(
            ambiguous.ends_with(
                "not sure: other tools score nearly as well as time/convert_time; choose by the \
                 descriptions, or narrow with --server"
            ),
            "{ambiguous}"
        );
        let weak = render("time in Tokyo", &found(Some(SearchConfidence::Weak)), false);
        assert!(
            weak.contains("not sure: time/convert_time matches the request only loosely"),
            "{weak}"
        );
        // Confident, or an older daemon that does not say: no note.
        for confidence in [Some(SearchConfidence::Confident), None] {
            let text = render("time in Tokyo", &found(confidence), false);
            assert!(!text.contains("not sure"), "{text}");
        }
    }

    #[test]
    fn no_hits_says_so_with_the_catalog_size() {
        let found = SearchToolsResult {
            results: Vec::new(),
            catalog_size: 7,
            took_us: 1,
            semantic: Default::default(),
            confidence: None,
        };
        let text = render("who are you", &found, false);
        assert!(
            text.contains("no tool matches \"who are you\" among the 7 tools"),
            "{text}"
        );
    }

    #[test]
    fn long_descriptions_are_cut_to_one_line() {
        let long = "word ".repeat(100);
        let line = one_line(&format!("\n  {long}\nsecond"));
        assert_eq!(line.chars().count(), DESCRIPTION_CHARS);
        assert!(line.ends_with('…'));
        assert_eq!(one_line("a\tb   c"), "a b c");
    }
}
