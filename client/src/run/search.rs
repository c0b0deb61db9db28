//! Running `tool-cli search`: one `searchTools` request, then either its raw result (`--json`)
//! or one line per hit (rank, score, `server tool`, the first line of the description) and how
//! to go on with the best one. The rendering is pure and unit-tested below.

use tool_cli_protocol::methods::name;
use tool_cli_protocol::search::SearchToolsResult;

use super::Output;
use crate::args::search::SearchRequest;
use crate::client::{Client, parse_result};
use crate::error::Error;

/// The most characters of a description shown on a hit's line.
const DESCRIPTION_CHARS: usize = 100;

pub(super) async fn search(
    client: &mut Client,
    output: &mut Output<'_>,
    request: SearchRequest,
) -> Result<(), Error> {
    let params = serde_json::to_value(&request.params)
        .map_err(|error| Error::Other(format!("cannot encode the params: {error}")))?;
    let result = client.call(name::SEARCH_TOOLS, Some(params)).await?;
    if output.json {
        return output.emit_json(&result);
    }
    let found: SearchToolsResult = parse_result(name::SEARCH_TOOLS, result)?;
    output.emit_text(&render(&request.params.query, &found))
}

/// The hits, one per line, and the commands that use the best one.
pub(crate) fn render(query: &str, found: &SearchToolsResult) -> String {
    let Some(best) = found.results.first() else {
        return format!(
            "no tool matches {query:?} among the {} tools this token can see; try other words, \
             or list them with `tool-cli SERVER`",
            found.catalog_size
        );
    };
    let mut text = String::new();
    for (rank, hit) in found.results.iter().enumerate() {
        let description = one_line(&hit.description);
        let separator = if description.is_empty() { "" } else { " — " };
        text.push_str(&format!(
            "{:>3}  {:>5.3}  {} {}{separator}{description}\n",
            rank + 1,
            hit.score,
            shell_word(&hit.server),
            shell_word(&hit.tool),
        ));
    }
    let (server, tool) = (shell_word(&best.server), shell_word(&best.tool));
    text.push_str(&format!(
        "\nbest: {}/{} — its schema: tool-cli {server} {tool}; call it: tool-cli {server} {tool} \
         '{{...}}'",
        best.server, best.tool
    ));
    text
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
    fn hits_are_ranked_lines_with_how_to_use_the_best() {
        let found = SearchToolsResult {
            results: vec![
                hit("fs", "read_text_file", "Read a file.\nMore detail.", 0.91),
                hit("my server", "get", "", 0.5),
            ],
            catalog_size: 12,
            took_us: 40,
            semantic: Default::default(),
        };
        let text = render("read a file", &found);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "  1  0.910  fs read_text_file — Read a file.");
        assert_eq!(lines[1], "  2  0.500  'my server' get");
        assert_eq!(
            lines[3],
            "best: fs/read_text_file — its schema: tool-cli fs read_text_file; call it: \
             tool-cli fs read_text_file '{...}'"
        );
    }

    #[test]
    fn no_hits_says_so_with_the_catalog_size() {
        let found = SearchToolsResult {
            results: Vec::new(),
            catalog_size: 7,
            took_us: 1,
            semantic: Default::default(),
        };
        let text = render("who are you", &found);
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
