//! `tool-cli search "QUERY" [--limit N] [--server S]... [--explain]`: the words of the subcommand and what
//! they become, a `searchTools` request. Pure: no I/O, unit-tested below. The daemon checks the
//! query's length and the limit's range (one rule for every client); what is checked here is only
//! what the command line alone can tell, such as a blank query.

use clap::Args;
use tool_cli_protocol::search::SearchToolsParams;

use crate::error::Error;

/// `tool-cli search`'s words, as clap parses them.
#[derive(Debug, Args)]
pub(crate) struct SearchArgs {
    /// What the tool should do, in a few words: "read a file", "post to a Slack channel"
    /// (several words need no quotes)
    #[arg(value_name = "QUERY", required = true, num_args = 1..)]
    words: Vec<String>,

    /// How many tools to list, 1 to 100 (default 10)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    limit: Option<i64>,

    /// Only tools of this server (repeat for several)
    #[arg(long = "server", value_name = "S")]
    servers: Vec<String>,

    /// Also print what each score is made of (`why`: lexical, semantic and the priors)
    #[arg(long)]
    explain: bool,
}

/// A checked `tool-cli search`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SearchRequest {
    /// What is asked of the daemon.
    pub(crate) params: SearchToolsParams,
    /// Whether to print each hit's `why`.
    pub(crate) explain: bool,
}

/// The request for `args`, or a usage error.
pub(crate) fn request(args: SearchArgs) -> Result<SearchRequest, Error> {
    let query = args.words.join(" ");
    if query.trim().is_empty() {
        return Err(Error::Usage(
            "the search query is empty; say in a few words what the tool should do, e.g. \
             tool-cli search \"read a file\""
                .to_owned(),
        ));
    }
    if let Some(server) = args.servers.iter().find(|server| server.trim().is_empty()) {
        return Err(Error::Usage(format!(
            "--server {server:?} is empty; give a server name as `tool-cli` lists them"
        )));
    }
    Ok(SearchRequest {
        params: SearchToolsParams {
            query,
            limit: args.limit,
            servers: (!args.servers.is_empty()).then_some(args.servers),
            ..SearchToolsParams::default()
        },
        explain: args.explain,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str], limit: Option<i64>, servers: &[&str]) -> SearchArgs {
        SearchArgs {
            words: words.iter().map(|w| (*w).to_owned()).collect(),
            limit,
            servers: servers.iter().map(|s| (*s).to_owned()).collect(),
            explain: false,
        }
    }

    #[test]
    fn words_join_into_one_query_and_options_pass_through() {
        let request = request(args(&["read", "a file"], Some(3), &["fs"])).unwrap();
        assert_eq!(request.params.query, "read a file");
        assert_eq!(request.params.limit, Some(3));
        assert_eq!(request.params.servers, Some(vec!["fs".to_owned()]));
        let plain = super::request(args(&["weather"], None, &[])).unwrap();
        assert_eq!(plain.params.limit, None);
        assert_eq!(plain.params.servers, None);
    }

    #[test]
    fn a_blank_query_or_server_is_a_usage_error() {
        for words in [&[""][..], &["  ", "\t"][..]] {
            match request(args(words, None, &[])) {
                Err(Error::Usage(message)) => assert!(message.contains("query is empty")),
                other => panic!("{other:?}"),
            }
        }
        match request(args(&["x"], None, &[" "])) {
            Err(Error::Usage(message)) => assert!(message.contains("--server")),
            other => panic!("{other:?}"),
        }
    }
}
