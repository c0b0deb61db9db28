//! `tool-cli traces report`: its options, the report from a trace file when `--file` names one
//! (no daemon needed), and the report's rendering as an aligned table or a Markdown table.
//!
//! Everything that decides lives here, so the hooks in `args.rs` (the subcommand), `lib.rs`
//! (the `--file` path, taken before any daemon is looked for) and `run.rs` (the `tracesReport`
//! call) stay one line or so each. The figures come from the `tool-cli-trace-report` crate, the
//! very code the daemon runs for `tracesReport`, so both ways give the same report.

use std::path::{Path, PathBuf};

use clap::{Subcommand, ValueEnum};
use tool_cli_protocol::trace::{ReportGroup, ReportGrouping, TracesReport, TracesReportParams};
use tool_cli_trace_report::aggregate::ReportOptions;
use tool_cli_trace_report::{files, since};

use crate::error::Error;
use crate::run::Output;

/// `tool-cli traces ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum TracesAction {
    /// Calls, errors, success rate, p50/p95 latency, tokens and cost per day, server, tool or
    /// session, from the daemon's trace files (or from --file, without a daemon)
    Report {
        /// Only calls since then: a duration back from now (30m, 24h, 7d, 1h30m) or an
        /// RFC 3339 date or time (2026-05-01, 2026-05-01T12:00:00Z)
        #[arg(long, value_name = "DURATION|DATE")]
        since: Option<String>,

        /// How to group the calls
        #[arg(long, value_enum, default_value_t = By::Day)]
        by: By,

        /// Only calls that reached a server (no dry-runs, no refusals)
        #[arg(long)]
        executed_only: bool,

        /// Print a Markdown table instead of an aligned one
        #[arg(long, conflicts_with = "json")]
        markdown: bool,

        /// Read this trace file (and its rotated PATH.1, PATH.2, ...) instead of asking the
        /// daemon; no daemon is needed
        #[arg(long, value_name = "PATH")]
        file: Option<PathBuf>,
    },
}

/// `--by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum By {
    /// UTC day
    Day,
    /// Server
    Server,
    /// server/tool
    Tool,
    /// Session id, with the tools used and the routing rules fired
    Session,
}

impl From<By> for ReportGrouping {
    fn from(by: By) -> ReportGrouping {
        match by {
            By::Day => ReportGrouping::Day,
            By::Server => ReportGrouping::Server,
            By::Tool => ReportGrouping::Tool,
            By::Session => ReportGrouping::Session,
        }
    }
}

/// A checked `tool-cli traces report`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReportRequest {
    /// What is asked of the daemon (or of the file); `since` already checked.
    pub(crate) params: TracesReportParams,
    /// `--markdown`.
    pub(crate) markdown: bool,
    /// `--file`.
    pub(crate) file: Option<PathBuf>,
}

/// Checks the options: a `--since` that is neither a duration nor a date is a usage error
/// here, before any daemon or file is touched.
pub(crate) fn request(action: TracesAction) -> Result<ReportRequest, Error> {
    let TracesAction::Report {
        since,
        by,
        executed_only,
        markdown,
        file,
    } = action;
    if let Some(text) = &since {
        since::parse_since(text, now_ms()).map_err(|error| Error::Usage(format!("--{error}")))?;
    }
    Ok(ReportRequest {
        params: TracesReportParams {
            since,
            by: Some(by.into()),
            executed_only: executed_only.then_some(true),
        },
        markdown,
        file,
    })
}

/// The report from `path` and its rotated files, through `output` (so the `--out` file, and
/// what is sanitised for a terminal, are decided where every other command's are).
pub(crate) fn report_from_file(
    request: &ReportRequest,
    path: &Path,
    output: &mut Output<'_>,
) -> Result<(), Error> {
    let since_ms = request
        .params
        .since
        .as_deref()
        .map(|text| since::parse_since(text, now_ms()))
        .transpose()
        .map_err(|error| Error::Usage(format!("--{error}")))?;
    let options = ReportOptions {
        by: request.params.by.unwrap_or_default(),
        since_ms,
        executed_only: request.params.executed_only.unwrap_or(false),
    };
    let report = files::read_report(path, options).map_err(|error| match error {
        files::ReadError::Read { path, source } => Error::Io {
            action: format!("read the trace file {}", path.display()),
            source,
        },
        other => Error::Other(other.to_string()),
    })?;
    if report.files.is_empty() {
        // Nothing was read: say why in the system's words (usually: no such file).
        return Err(match std::fs::metadata(path) {
            Err(source) => Error::Io {
                action: format!("read the trace file {}", path.display()),
                source,
            },
            Ok(_) => Error::Usage(format!(
                "{} is not a file; --file takes the path of a trace file such as \
                 ~/.local/state/tool-cli/traces.jsonl",
                path.display()
            )),
        });
    }
    if output.json {
        let value = serde_json::to_value(&report)
            .map_err(|error| Error::Other(format!("cannot encode the report: {error}")))?;
        return output.emit_json(&value);
    }
    output.emit_text(&render(&report, request.markdown))
}

/// The report as an aligned table (or a Markdown one), a total row, and a line saying what was
/// read.
pub(crate) fn render(report: &TracesReport, markdown: bool) -> String {
    let sessions = report.by == ReportGrouping::Session;
    let mut header = vec![
        report.by.as_str().to_owned(),
        "calls".to_owned(),
        "errors".to_owned(),
        "success".to_owned(),
        "p50 ms".to_owned(),
        "p95 ms".to_owned(),
        "tokens in".to_owned(),
        "tokens out".to_owned(),
        "cost $".to_owned(),
    ];
    if sessions {
        header.push("tools".to_owned());
        header.push("rules".to_owned());
    }
    let mut rows: Vec<Vec<String>> = report
        .groups
        .iter()
        .map(|group| row(group, sessions))
        .collect();
    let mut text = String::new();
    if rows.is_empty() {
        text.push_str("no calls in the trace files");
        if report.since.is_some() || report.executed_only {
            text.push_str(" match");
        }
        text.push('\n');
    } else {
        let mut total = row(&report.total, false);
        if sessions {
            total.extend([String::new(), String::new()]);
        }
        rows.push(total);
        text.push_str(&if markdown {
            markdown_table(&header, &rows)
        } else {
            aligned_table(&header, &rows)
        });
    }
    text.push_str(&summary(report));
    text
}

/// The cells of one group. A key or a tool name came from a trace file or a daemon, so it is
/// made safe for a terminal here, before the columns are measured.
fn row(group: &ReportGroup, sessions: bool) -> Vec<String> {
    let latency = |pick: fn(&tool_cli_protocol::methods::LatencySummary) -> f64| {
        group
            .latency_ms
            .as_ref()
            .map_or_else(|| "-".to_owned(), |latency| format!("{:.1}", pick(latency)))
    };
    let mut cells = vec![
        crate::sanitize::line(&group.key).into_owned(),
        group.calls.to_string(),
        group.errors.to_string(),
        group
            .success_rate
            .map_or_else(|| "-".to_owned(), |rate| format!("{:.1}%", rate * 100.0)),
        latency(|latency| latency.p50),
        latency(|latency| latency.p95),
        group.tokens_in.to_string(),
        group.tokens_out.to_string(),
        format!("{:.4}", group.cost_usd),
    ];
    if sessions {
        let counted = |counts: &Option<std::collections::BTreeMap<String, u64>>| {
            counts
                .iter()
                .flatten()
                .map(|(name, count)| format!("{} ×{count}", crate::sanitize::line(name)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        cells.push(counted(&group.tools));
        cells.push(counted(&group.selection_rules));
    }
    cells
}

/// Columns padded to their widest cell: the first (and the session lists) left-aligned,
/// numbers right-aligned.
fn aligned_table(header: &[String], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            std::iter::once(header)
                .chain(rows.iter().map(Vec::as_slice))
                .map(|cells| cells[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let left = |column: usize| column == 0 || column >= 9;
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(column, cell)| {
                let pad = " ".repeat(widths[column] - cell.chars().count());
                if left(column) {
                    format!("{cell}{pad}")
                } else {
                    format!("{pad}{cell}")
                }
            })
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut text = line(header);
    for cells in rows {
        text.push_str(&line(cells));
    }
    text
}

/// A GitHub-flavoured Markdown table, numbers right-aligned, the total row in bold.
fn markdown_table(header: &[String], rows: &[Vec<String>]) -> String {
    let escape = |cell: &str| cell.replace('|', "\\|");
    let mut text = format!("| {} |\n", header.join(" | "));
    let rule: Vec<&str> = (0..header.len())
        .map(|column| {
            if column == 0 || column >= 9 {
                "---"
            } else {
                "---:"
            }
        })
        .collect();
    text.push_str(&format!("|{}|\n", rule.join("|")));
    for (index, cells) in rows.iter().enumerate() {
        let mut cells: Vec<String> = cells.iter().map(|cell| escape(cell)).collect();
        if index + 1 == rows.len() {
            cells[0] = format!("**{}**", cells[0]);
        }
        text.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    text.push('\n');
    text
}

/// What the report was made from, and what was skipped.
fn summary(report: &TracesReport) -> String {
    let plural =
        |count: u64, word: &str| format!("{count} {word}{}", if count == 1 { "" } else { "s" });
    let mut text = format!(
        "{} from {} ({} read",
        plural(report.total.calls, "call"),
        plural(report.files.len() as u64, "file"),
        plural(report.lines, "line"),
    );
    if report.corrupt_lines > 0 {
        text.push_str(&format!(
            ", {} skipped",
            plural(report.corrupt_lines, "corrupt line")
        ));
    }
    text.push(')');
    if let Some(since) = &report.since {
        text.push_str(&format!("; since {since}"));
    }
    if report.executed_only {
        text.push_str("; executed calls only");
    }
    text.push('\n');
    text
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use tool_cli_protocol::methods::LatencySummary;

    use super::*;
    use crate::args::{ArgsEnv, Command, ParseOutcome, parse};

    fn parsed(args: &[&str]) -> Result<(ReportRequest, bool), ParseOutcome> {
        let argv = std::iter::once("tool-cli").chain(args.iter().copied());
        parse(argv, &ArgsEnv::default(), || Ok(String::new())).map(|invocation| {
            match invocation.command {
                Command::TracesReport(request) => (request, invocation.json),
                other => panic!("not a traces report: {other:?}"),
            }
        })
    }

    fn group(key: &str, calls: u64, errors: u64) -> ReportGroup {
        ReportGroup {
            key: key.to_owned(),
            calls,
            errors,
            success_rate: Some((calls - errors) as f64 / calls as f64),
            executed: calls,
            dry_runs: 0,
            latency_ms: Some(LatencySummary {
                p50: 1.25,
                p95: 120.0,
                samples: calls as usize,
            }),
            tokens_in: 1847,
            tokens_out: 62,
            cost_usd: 0.000941,
            tools: None,
            selection_rules: None,
        }
    }

    fn report(by: ReportGrouping, groups: Vec<ReportGroup>) -> TracesReport {
        TracesReport {
            by,
            since: None,
            executed_only: false,
            files: vec!["/s/traces.jsonl".into()],
            lines: 13,
            corrupt_lines: 1,
            total: ReportGroup {
                key: "total".into(),
                ..group("total", 12, 3)
            },
            groups,
        }
    }

    #[test]
    fn options_anywhere_on_the_line() {
        let (request, json) = parsed(&[
            "--json",
            "traces",
            "report",
            "--since",
            "24h",
            "--by",
            "tool",
            "--executed-only",
            "--file",
            "/tmp/t.jsonl",
        ])
        .unwrap();
        assert!(json);
        assert_eq!(request.params.since.as_deref(), Some("24h"));
        assert_eq!(request.params.by, Some(ReportGrouping::Tool));
        assert_eq!(request.params.executed_only, Some(true));
        assert_eq!(request.file, Some(PathBuf::from("/tmp/t.jsonl")));
        let (request, _) = parsed(&["traces", "report"]).unwrap();
        assert_eq!(request.params.by, Some(ReportGrouping::Day));
        assert_eq!(request.params.executed_only, None);
    }

    #[test]
    fn bad_options_are_usage_errors_that_say_what_would_be_right() {
        match parsed(&["traces", "report", "--since", "yesterday"]) {
            Err(ParseOutcome::Usage(Error::Usage(message))) => {
                assert!(message.starts_with("--since \"yesterday\""), "{message}");
                assert!(
                    message.contains("24h") && message.contains("2026-05-01"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
        for args in [
            &["traces", "report", "--by", "week"][..],
            &["traces", "report", "--markdown", "--json"],
            &["traces"],
        ] {
            match parsed(args) {
                Err(ParseOutcome::Clap(error)) => assert_eq!(error.exit_code(), 2, "{args:?}"),
                other => panic!("{args:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn plain_output_is_an_aligned_table_with_a_total_and_what_was_read() {
        let text = render(
            &report(
                ReportGrouping::Server,
                vec![group("demo", 10, 1), group("a-long-server-name", 2, 2)],
            ),
            false,
        );
        let expected = "\
server              calls  errors  success  p50 ms  p95 ms  tokens in  tokens out  cost $
demo                   10       1    90.0%     1.2   120.0       1847          62  0.0009
a-long-server-name      2       2     0.0%     1.2   120.0       1847          62  0.0009
total                  12       3    75.0%     1.2   120.0       1847          62  0.0009
12 calls from 1 file (13 lines read, 1 corrupt line skipped)
";
        assert_eq!(text, expected);
    }

    #[test]
    fn markdown_output_is_a_table_with_numbers_right_aligned() {
        let mut session = group("s|1", 12, 3);
        session.tools = Some(BTreeMap::from([("demo/q".to_owned(), 12)]));
        session.selection_rules = Some(BTreeMap::from([("named".to_owned(), 12)]));
        let text = render(&report(ReportGrouping::Session, vec![session]), true);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "| session | calls | errors | success | p50 ms | p95 ms | tokens in | tokens out \
             | cost $ | tools | rules |"
        );
        assert_eq!(
            lines[1],
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
        );
        assert_eq!(
            lines[2],
            "| s\\|1 | 12 | 3 | 75.0% | 1.2 | 120.0 | 1847 | 62 | 0.0009 | demo/q ×12 | named ×12 |"
        );
        assert!(lines[3].starts_with("| **total** | 12 |"), "{}", lines[3]);
    }

    #[test]
    fn an_empty_report_says_so() {
        let mut empty = report(ReportGrouping::Day, Vec::new());
        empty.total = ReportGroup {
            success_rate: None,
            latency_ms: None,
            ..group("total", 0, 0)
        };
        empty.lines = 0;
        empty.corrupt_lines = 0;
        assert_eq!(
            render(&empty, false),
            "no calls in the trace files\n0 calls from 1 file (0 lines read)\n"
        );
        empty.executed_only = true;
        assert!(render(&empty, true).starts_with("no calls in the trace files match\n"));
    }

    /// The issue: `tool-cli traces report --file` printed trace text (server and tool names,
    /// which come from servers and clients) raw to the terminal.
    #[test]
    fn a_report_from_a_file_never_prints_raw_controls() {
        let dir = std::env::temp_dir().join(format!("tool-cli-traces-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("traces.jsonl");
        let line = serde_json::json!({
            "schemaVersion": 1, "ts": "2026-05-14T09:00:00.000Z", "callId": "c1",
            "server": "evil\u{1b}]0;pwned\u{7}", "tool": "t\u{202e}gnp.exe\u{1b}[2J",
            "latencyMs": 1.0, "success": true, "executed": true
        });
        std::fs::write(&path, format!("{line}\n")).unwrap();
        let (request, _) = parsed(&["traces", "report", "--by", "tool"]).unwrap();
        let mut stdout = Vec::new();
        let mut output = Output {
            json: false,
            out: None,
            stdout: &mut stdout,
            terminal: true,
        };
        report_from_file(&request, &path, &mut output).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let text = String::from_utf8(stdout).unwrap();
        assert!(
            !text
                .chars()
                .any(|c| c == '\u{1b}' || c == '\u{7}' || c == '\u{202e}'),
            "{text:?}"
        );
        assert!(
            text.contains("evil^[]0;pwned^G/t<U+202E>gnp.exe^[[2J"),
            "{text}"
        );
    }
}
