//! Reading a trace file and its rotated predecessors into a report: the crate's only I/O, kept
//! thin so that everything it decides is in [`crate::aggregate`].
//!
//! Rotation renames `traces.jsonl` to `traces.jsonl.1`, `.1` to `.2`, and so on, so the rotated
//! files are found by counting up from `.1` until one is missing, and read oldest first. A file
//! that vanishes between listing and reading (the daemon rotated meanwhile) is skipped: a report
//! made during a rotation may miss or repeat one file's lines, never fail.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};

use tool_cli_protocol::trace::TracesReport;

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
    let mut reader = BufReader::new(file);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        if reader.read_until(b'\n', &mut buffer).map_err(failed)? == 0 {
            return Ok(true);
        }
        match std::str::from_utf8(&buffer) {
            Ok(text) => aggregator.add_text(text.trim_end_matches(['\n', '\r'])),
            Err(_) => aggregator.add_corrupt(),
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
}
