//! `tool-cli skill [SERVER]`: a SKILL.md for a coding agent — for each server (or one), what it
//! is for, its tools one line each, and how to read a schema and call, within a budget of
//! [`TOKENS_PER_SERVER`] tokens per server. Tokens are estimated as characters / 4, rounded up
//! (the usual rule of thumb for English text under BPE tokenizers; the estimate is stated in
//! the file). [`render`] is pure; `run` reads the listings from the daemon.

use serde_json::json;
use tool_cli_protocol::methods::{ListServersResult, ListToolsResult, name};

use super::Output;
use crate::client::{Client, parse_result};
use crate::error::Error;

/// The most each server's section may take, in estimated tokens.
pub(crate) const TOKENS_PER_SERVER: usize = 400;

/// Estimated tokens of `text`: characters / 4, rounded up.
pub(crate) fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// One server as the skill file shows it.
pub(crate) struct SkillServer {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    /// Its tools: name and description.
    pub(crate) tools: Vec<(String, String)>,
}

/// The SKILL.md text for `servers`.
pub(crate) fn render(servers: &[SkillServer]) -> String {
    let mut text = String::from(
        "---\nname: tool-cli\ndescription: Call the MCP tools of the tool-cli daemon from the \
         shell, discovering them progressively.\n---\n\n# tool-cli\n\nList servers with \
         `tool-cli`, search with `tool-cli search \"…\"`, read one schema with `tool-cli SERVER \
         TOOL --help`, call with `tool-cli SERVER TOOL '{…}'`. Invalid arguments exit 5 with \
         each failing path: fix and call again.\n",
    );
    for server in servers {
        text.push_str(&section(server));
    }
    text
}

/// One server's section, within [`TOKENS_PER_SERVER`].
fn section(server: &SkillServer) -> String {
    let mut section = format!("\n## {}\n\n", server.name);
    if let Some(description) = server.description.as_deref().filter(|d| !d.is_empty()) {
        section.push_str(&one_line(description, 160));
        section.push_str("\n\n");
    }
    let closing = |left: usize| {
        if left == 0 {
            String::new()
        } else {
            format!(
                "- … and {left} more: `tool-cli {}` lists them all\n",
                server.name
            )
        }
    };
    for (index, (tool, description)) in server.tools.iter().enumerate() {
        let line = if description.is_empty() {
            format!("- `{tool}`\n")
        } else {
            format!("- `{tool}`: {}\n", one_line(description, 90))
        };
        let left_after = server.tools.len() - index - 1;
        let reserve = estimate_tokens(&closing(left_after.max(1)));
        if estimate_tokens(&section) + estimate_tokens(&line) + reserve > TOKENS_PER_SERVER {
            section.push_str(&closing(server.tools.len() - index));
            return section;
        }
        section.push_str(&line);
    }
    section
}

/// `text`'s first line, cut to `max` characters with an ellipsis.
fn one_line(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() <= max {
        return line.to_owned();
    }
    let cut: String = line.chars().take(max - 1).collect();
    format!("{}…", cut.trim_end())
}

/// Runs `tool-cli skill [SERVER]`.
pub(super) async fn run(
    client: &mut Client,
    output: &mut Output<'_>,
    only: Option<String>,
) -> Result<(), Error> {
    let listed: ListServersResult = parse_result(
        name::LIST_SERVERS,
        client.call(name::LIST_SERVERS, None).await?,
    )?;
    let mut servers = Vec::new();
    for summary in listed.servers {
        if only.as_deref().is_some_and(|only| only != summary.name) {
            continue;
        }
        let tools: ListToolsResult = parse_result(
            name::LIST_TOOLS,
            client
                .call(name::LIST_TOOLS, Some(json!({"server": summary.name})))
                .await?,
        )?;
        servers.push(SkillServer {
            name: summary.name,
            description: summary.description,
            tools: tools
                .tools
                .into_iter()
                .map(|tool| (tool.name, tool.description))
                .collect(),
        });
    }
    if let Some(only) = &only
        && servers.is_empty()
    {
        return Err(Error::Usage(format!(
            "no server named {only}; `tool-cli` lists the servers"
        )));
    }
    output.emit_text(render(&servers).trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_server_stays_within_its_token_budget_and_says_what_it_left_out() {
        let big = SkillServer {
            name: "big".to_owned(),
            description: Some("A server with many tools.".to_owned()),
            tools: (0..500)
                .map(|index| {
                    (
                        format!("tool_{index}"),
                        format!("Does thing number {index} with care and returns a long answer about it."),
                    )
                })
                .collect(),
        };
        let small = SkillServer {
            name: "small".to_owned(),
            description: None,
            tools: vec![("echo".to_owned(), "Echoes.".to_owned())],
        };
        let text = render(&[big, small]);
        let big_section = &text[text.find("## big").unwrap()..text.find("## small").unwrap()];
        assert!(
            estimate_tokens(big_section) <= TOKENS_PER_SERVER,
            "{big_section}"
        );
        assert!(
            big_section.contains("more: `tool-cli big` lists them all"),
            "{big_section}"
        );
        assert!(text.contains("- `echo`: Echoes."), "{text}");
        assert!(text.starts_with("---\nname: tool-cli\n"));
    }

    #[test]
    fn tokens_are_estimated_as_characters_over_four() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
    }
}
