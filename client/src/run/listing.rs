//! `tool-cli SERVER` on a large server: ask for the first page only, and say how to see more.
//!
//! Pure. A server of thousands of tools would otherwise print thousands of lines, which no
//! person reads and which cost an agent its context; the first [`PAGE`] tools (in the server's
//! order, as always) are printed, then a note on stderr with the count of the rest and the two
//! ways on: `--all`, or a search within the server.

use serde_json::{Value, json};
use tool_cli_protocol::methods::ListToolsResult;

use crate::render::shell_word;

/// How many tools `tool-cli SERVER` prints without `--all`.
pub(crate) const PAGE: usize = 200;

/// The `listTools` params: the first page, or the whole list.
pub(crate) fn params(server: &str, paged: bool) -> Value {
    if paged {
        json!({ "server": server, "limit": PAGE })
    } else {
        json!({ "server": server })
    }
}

/// The note for a page that is not the whole list, or `None` when nothing was left out.
pub(crate) fn more_note(page: &ListToolsResult) -> Option<String> {
    let total = page.tool_count?;
    let left_out = total.checked_sub(page.tools.len()).filter(|&n| n > 0)?;
    let server = shell_word(&page.server);
    Some(format!(
        "{left_out} more tools not shown ({} of {total}); `tool-cli {server} --all` lists them \
         all, `tool-cli search \"WHAT YOU WANT TO DO\" --server {server}` finds one",
        page.tools.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tool_cli_protocol::methods::ToolSummary;

    fn page(server: &str, shown: usize, total: Option<usize>) -> ListToolsResult {
        ListToolsResult {
            server: server.to_owned(),
            tools: (0..shown)
                .map(|i| ToolSummary {
                    server: None,
                    name: format!("t{i}"),
                    description: String::new(),
                    has_structured_output: false,
                    overridden: false,
                    flags: Vec::new(),
                })
                .collect(),
            next_cursor: None,
            tool_count: total,
        }
    }

    #[test]
    fn a_cut_list_says_how_many_more_and_how_to_see_them() {
        let note = more_note(&page("big", 200, Some(10_016))).unwrap();
        assert_eq!(
            note,
            "9816 more tools not shown (200 of 10016); `tool-cli big --all` lists them all, \
             `tool-cli search \"WHAT YOU WANT TO DO\" --server big` finds one"
        );
        assert!(
            more_note(&page("my server", 1, Some(2)))
                .unwrap()
                .contains("'my server' --all")
        );
    }

    #[test]
    fn a_whole_list_has_no_note() {
        assert_eq!(more_note(&page("small", 12, Some(12))), None);
        // A daemon that does not page (an older one, or a 1.x bridge) gives no count.
        assert_eq!(more_note(&page("old", 500, None)), None);
    }

    #[test]
    fn only_a_person_reading_text_gets_a_page() {
        assert_eq!(params("s", true), json!({"server": "s", "limit": 200}));
        assert_eq!(params("s", false), json!({"server": "s"}));
    }
}
