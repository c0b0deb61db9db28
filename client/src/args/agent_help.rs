//! `tool-cli --agent-help`: a one-page primer for a coding agent on using tool-cli's servers
//! by progressive discovery (list servers → list one server's tools or search → read one
//! schema → call), instead of loading every tool's definition up front. Static text, printed
//! without a daemon.

/// The primer (kept to one page: [`tests::the_primer_fits_one_page`]).
pub(crate) const PRIMER: &str = "\
tool-cli: MCP servers from the shell, discovered progressively

Do not load every tool's schema. Go from broad to narrow, and read a schema only for the tool
you are about to call:

  1. tool-cli                          the servers, with a tool count and a few tool names each
  2. tool-cli search \"what you need\"   the best tools across every server, ranked (no schemas)
     tool-cli SERVER                   one server's tools, one line each
  3. tool-cli SERVER TOOL --help       that one tool's input schema
  4. tool-cli SERVER TOOL '{\"arg\": 1}'  call it (or key=value words: tool-cli SERVER TOOL arg=1)

Calls are checked before they are sent: arguments that do not fit the schema are refused with
each failing path (exit 5); fix them and call again. A destructive tool needs --yes (exit 9
without it). --json prints the full result; --out FILE writes it to a file.

Useful next:
  tool-cli --stdio \"CMD ARGS\" TOOL '{...}'   a server that is not configured, for one call
  tool-cli --url URL TOOL '{...}'            the same over Streamable HTTP
  tool-cli session open --task \"...\"         attach calls to a session (--session ID)
  tool-cli chain / tool-cli many             several calls in one request
  tool-cli health                            which servers are ready

Exit codes: 0 ok, 3 no daemon, 5 invalid arguments or unknown tool, 6 the tool reported an
error, 7 timed out, 9 not permitted (policy, --yes, or a tool held back by its pin).
The daemon starts on first use (TOOL_CLI_NO_AUTOSTART=1 turns that off).
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_primer_fits_one_page() {
        let lines = PRIMER.lines().count();
        assert!(lines <= 40, "{lines} lines");
        assert!(PRIMER.lines().all(|line| line.chars().count() <= 100));
        for step in ["tool-cli search", "--help", "--stdio", "exit"] {
            assert!(PRIMER.contains(step), "{step}");
        }
    }
}
