//! Reading a trace file and its rotated predecessors into a report: the crate's only I/O, kept
//! thin so that everything it decides is in [`crate::aggregate`].
//!
//! Rotation renames `traces.jsonl` to `traces.jsonl.1`, `.1` to `.2`, and so on, so the rotated
//! files are found by counting up from `.1` until one is missing, and read oldest first. A file
//! that vanishes between listing and reading (the daemon rotated meanwhile) is skipped: a report
//! made during a rotation may miss or repeat one file's lines, never fail.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use tool_cli_protocol::trace::{TraceLine, TracesReport};

use crate::aggregate::{Aggregator, ReportOptions};

/// Most rotated files looked for: far more than any sensible `keep`, and a bound on the scan.
pub const MAX_ROTATED: u32 = 1000;

/// Why trace files could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Opening or reading a file failed (other than it being absent).
    #[error("cannot read the trace file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The path of rotated file `index` (1 is the newest) of the trace file `current`.
pub fn rotated_path(current: &Path, index: u32) -> PathBuf {
    let mut name = current.as_os_str().to_owned();
    name.push(format!(".{index}"));
    PathBuf::from(name)
}

/// The trace file `current` and its rotated predecessors that exist, oldest first.
pub fn trace_files(current: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = (1..=MAX_ROTATED)
        .map(|index| rotated_path(current, index))
        .take_while(|path| path.is_file())
        .collect();
    files.reverse();
    if current.is_file() {
        files.push(current.to_path_buf());
    }
    files
}

/// The report over `current` and its rotated files. When none exists the report is empty and
/// names no files (a daemon that has traced nothing yet); a caller that expected a file says
/// so itself.
pub fn read_report(current: &Path, options: ReportOptions) -> Result<TracesReport, ReadError> {
    let mut aggregator = Aggregator::new(options);
    let mut read = Vec::new();
    for path in trace_files(current) {
        if add_file(&mut aggregator, &path)? {
            read.push(path.to_string_lossy().into_owned());
        }
    }
    Ok(aggregator.finish(read))
}

/// Adds every line of `path`; `false` when it vanished before it could be opened.
fn add_file(aggregator: &mut Aggregator, path: &Path) -> Result<bool, ReadError> {
    let failed = |source| ReadError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(failed(error)),
    };
    add_lines(aggregator, &mut BufReader::new(file)).map_err(failed)?;
    Ok(true)
}

/// Longest line read into memory before it is parsed. A longer one (a verbose line with a large
/// result) is parsed as it is read, its payloads skipped without being kept: a report never holds
/// more than this much of a line, however long the line.
pub const MAX_BUFFERED_LINE: usize = 1024 * 1024;

/// Adds every line `reader` holds.
fn add_lines(aggregator: &mut Aggregator, reader: &mut impl BufRead) -> std::io::Result<()> {
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        match read_line_start(reader, &mut buffer, MAX_BUFFERED_LINE)? {
            LineStart::End => return Ok(()),
            LineStart::Whole => match std::str::from_utf8(&buffer) {
                Ok(text) => aggregator.add_text(text.trim_end_matches(['\n', '\r'])),
                Err(_) => aggregator.add_corrupt(),
            },
            LineStart::Longer => {
                let mut rest = RestOfLine {
                    reader: &mut *reader,
                    done: false,
                };
                let parsed = {
                    // serde_json reads a reader a byte at a time: buffered, each byte is a
                    // copy, not a call down to the file.
                    let mut deserializer =
                        serde_json::Deserializer::from_reader(BufReader::with_capacity(
                            64 * 1024,
                            std::io::Read::chain(buffer.as_slice(), &mut rest),
                        ));
                    <SkimmedLine as serde::Deserialize>::deserialize(&mut deserializer)
                        .and_then(|line| deserializer.end().map(|()| line))
                };
                // Whatever the parser left of the line (all of it, after an error) is skipped.
                std::io::copy(&mut rest, &mut std::io::sink())?;
                match parsed {
                    Ok(line) => aggregator.add(&line.into_trace_line()),
                    // A broken read is the file's failure, not the line's.
                    Err(error) if error.is_io() => return Err(error.into()),
                    Err(_) => aggregator.add_corrupt(),
                }
            }
        }
    }
}

/// How much of a line [`read_line_start`] read.
enum LineStart {
    /// Nothing: the end of the file.
    End,
    /// The whole line, its newline included (unless the file ends without one).
    Whole,
    /// Its first `limit` bytes; the rest is still to be read.
    Longer,
}

/// Reads a line into `buffer`, or its first `limit` bytes when it is longer.
fn read_line_start(
    reader: &mut impl BufRead,
    buffer: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<LineStart> {
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if available.is_empty() {
            return Ok(if buffer.is_empty() {
                LineStart::End
            } else {
                LineStart::Whole
            });
        }
        let room = limit - buffer.len();
        let (taken, whole) = match available.iter().position(|&byte| byte == b'\n') {
            Some(newline) if newline < room => (newline + 1, true),
            _ => (available.len().min(room), false),
        };
        buffer.extend_from_slice(&available[..taken]);
        reader.consume(taken);
        if whole {
            return Ok(LineStart::Whole);
        }
        if buffer.len() == limit {
            return Ok(LineStart::Longer);
        }
    }
}

/// The rest of the current line: reads up to its newline (consumed, not returned), then ends.
struct RestOfLine<'a, R> {
    reader: &'a mut R,
    done: bool,
}

impl<R: BufRead> std::io::Read for RestOfLine<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.done || out.is_empty() {
            return Ok(0);
        }
        let available = self.reader.fill_buf()?;
        if available.is_empty() {
            self.done = true;
            return Ok(0);
        }
        let (count, newline) = match available.iter().position(|&byte| byte == b'\n') {
            Some(at) => (at.min(out.len()), at < out.len()),
            None => (available.len().min(out.len()), false),
        };
        out[..count].copy_from_slice(&available[..count]);
        if newline {
            self.reader.consume(count + 1);
            self.done = true;
        } else {
            self.reader.consume(count);
        }
        Ok(count)
    }
}

/// A trace line without its verbose payloads (`arguments`, `result`), which serde skips
/// without keeping: what a long line is read into. Its members and their defaults are
/// [`tool_cli_protocol::trace::TraceLine`]'s.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct SkimmedLine {
    schema_version: u32,
    ts: String,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    step: Option<u32>,
    call_id: String,
    #[serde(default)]
    parent_call_id: Option<String>,
    #[serde(default)]
    depth: u32,
    #[serde(default)]
    server: Option<String>,
    tool: String,
    #[serde(default)]
    arguments_hash: String,
    latency_ms: f64,
    success: bool,
    executed: bool,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    selection_rule: Option<String>,
    #[serde(default)]
    alternatives: Vec<tool_cli_protocol::trace::TraceAlternative>,
    #[serde(default)]
    attempt: u32,
    #[serde(default)]
    retries: u32,
    #[serde(default)]
    retry_reason: Option<String>,
    #[serde(default)]
    corrective_retry: bool,
    #[serde(default)]
    error: Option<tool_cli_protocol::trace::TraceError>,
    #[serde(default)]
    degraded: bool,
    #[serde(default)]
    tokens_in: u64,
    #[serde(default)]
    tokens_out: u64,
    #[serde(default)]
    cost_usd: f64,
    #[serde(default)]
    summarizes: u64,
}

impl SkimmedLine {
    fn into_trace_line(self) -> TraceLine {
        TraceLine {
            schema_version: self.schema_version,
            ts: self.ts,
            session_id: self.session_id,
            step: self.step,
            call_id: self.call_id,
            parent_call_id: self.parent_call_id,
            depth: self.depth,
            server: self.server,
            tool: self.tool,
            arguments_hash: self.arguments_hash,
            latency_ms: self.latency_ms,
            success: self.success,
            executed: self.executed,
            dry_run: self.dry_run,
            selection_rule: self.selection_rule,
            alternatives: self.alternatives,
            attempt: self.attempt,
            retries: self.retries,
            retry_reason: self.retry_reason,
            corrective_retry: self.corrective_retry,
            task_id: None,
            error: self.error,
            degraded: self.degraded,
            tokens_in: self.tokens_in,
            tokens_out: self.tokens_out,
            cost_usd: self.cost_usd,
            summarizes: self.summarizes,
            arguments: None,
            result: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use tool_cli_protocol::trace::ReportGrouping;

    use super::*;

    fn line(ts: &str, server: &str) -> String {
        format!(
            "{{\"schemaVersion\":1,\"ts\":\"{ts}\",\"callId\":\"c1\",\"server\":\"{server}\",\
             \"tool\":\"q\",\"latencyMs\":1.0,\"success\":true,\"executed\":true}}\n"
        )
    }

    #[test]
    fn reads_the_rotated_files_oldest_first_and_stops_at_a_gap() {
        let dir = tempfile::tempdir().unwrap();
        let current = dir.path().join("traces.jsonl");
        std::fs::write(&current, line("2026-05-14T09:00:00.000Z", "a")).unwrap();
        std::fs::write(
            rotated_path(&current, 1),
            line("2026-05-13T09:00:00.000Z", "b"),
        )
        .unwrap();
        std::fs::write(
            rotated_path(&current, 2),
            line("2026-05-12T09:00:00.000Z", "c") + "garbage\n" + "\u{0}\u{ff}\n",
        )
        .unwrap();
        // Beyond a gap: left over from a larger `keep`, not part of the chain.
        std::fs::write(
            rotated_path(&current, 4),
            line("2026-05-10T09:00:00.000Z", "d"),
        )
        .unwrap();
        // Invalid UTF-8 is a corrupt line too.
        let mut bytes = std::fs::read(rotated_path(&current, 1)).unwrap();
        bytes.extend_from_slice(b"\xff\xfe\n");
        std::fs::write(rotated_path(&current, 1), bytes).unwrap();

        let report = read_report(
            &current,
            ReportOptions {
                by: ReportGrouping::Day,
                ..ReportOptions::default()
            },
        )
        .unwrap();
        let names: Vec<String> = report
            .files
            .iter()
            .map(|file| file.rsplit('/').next().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["traces.jsonl.2", "traces.jsonl.1", "traces.jsonl"]);
        assert_eq!(report.lines, 3);
        assert_eq!(report.corrupt_lines, 3);
        let days: Vec<&str> = report
            .groups
            .iter()
            .map(|group| group.key.as_str())
            .collect();
        assert_eq!(days, ["2026-05-12", "2026-05-13", "2026-05-14"]);
    }

    #[test]
    fn an_empty_file_is_an_empty_report_and_no_file_names_none() {
        let dir = tempfile::tempdir().unwrap();
        let current = dir.path().join("traces.jsonl");
        let report = read_report(&current, ReportOptions::default()).unwrap();
        assert!(report.files.is_empty());
        std::fs::write(&current, "").unwrap();
        let report = read_report(&current, ReportOptions::default()).unwrap();
        assert_eq!(report.files.len(), 1);
        assert_eq!(
            (report.lines, report.corrupt_lines, report.total.calls),
            (0, 0, 0)
        );
        assert!(report.groups.is_empty());
    }

    #[test]
    fn a_last_line_without_its_newline_still_counts() {
        let dir = tempfile::tempdir().unwrap();
        let current = dir.path().join("traces.jsonl");
        let text = line("2026-05-14T09:00:00.000Z", "a");
        std::fs::write(&current, format!("{text}{}", text.trim_end())).unwrap();
        let report = read_report(&current, ReportOptions::default()).unwrap();
        assert_eq!(report.lines, 2);
    }

    #[test]
    fn lines_longer_than_the_buffer_are_parsed_as_they_are_read() {
        let long = |text: &str| {
            format!(
                "{{\"schemaVersion\":1,\"ts\":\"2026-05-14T09:00:00.000Z\",\"callId\":\"c1\",\
                 \"tool\":\"{text}\",\"latencyMs\":1.0,\"success\":true,\"executed\":true,\
                 \"result\":\"{}\"}}",
                "x".repeat(MAX_BUFFERED_LINE * 2)
            )
        };
        // A long line, a long one with garbage after its object, a normal one, and a long one
        // that ends the file without a newline.
        let text = format!(
            "{}\n{}garbage\n{}{}",
            long("first"),
            long("broken"),
            line("2026-05-14T09:00:00.000Z", "a"),
            long("last")
        );
        let mut aggregator = Aggregator::new(ReportOptions {
            by: ReportGrouping::Tool,
            ..ReportOptions::default()
        });
        add_lines(
            &mut aggregator,
            &mut std::io::Cursor::new(text.into_bytes()),
        )
        .unwrap();
        let report = aggregator.finish(Vec::new());
        assert_eq!((report.lines, report.corrupt_lines), (3, 1));
        let mut keys: Vec<&str> = report.groups.iter().map(|g| g.key.as_str()).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["(unresolved)/first", "(unresolved)/last", "a/q"]);
    }
}
