//! The writing end of traces: a thread that takes lines off the queue and appends them to the
//! trace file, rotating it by size.
//!
//! Writing a file is a blocking system call that can stall (a slow disk, a full one, a network
//! home directory), so it happens on a thread of its own, never on the runtime's workers and
//! never on a call's path: the call side only `try_send`s into a bounded queue. Every failure
//! here is counted and remembered for `health`, and logged once per distinct message, and then
//! the writer carries on with the next line; nothing in this module can fail a call.
//!
//! The file goes through the [`Sink`] trait so that the failures a disk can produce are
//! injected in unit tests; [`FileSink`] is the real one. The decisions of rotation
//! ([`should_rotate`], [`rotation_steps`]) are pure functions.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{
    DirBuilderExt as _, FileTypeExt as _, MetadataExt as _, OpenOptionsExt as _,
    PermissionsExt as _,
};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{mpsc, oneshot};
use tool_cli_protocol::trace::TraceLine;
use tool_cli_trace_report::files::rotated_path;

use super::redact::Redactor;
use crate::config::traces::TraceSettings;

/// What the call side sends the writer.
#[derive(Debug)]
pub(crate) enum Message {
    /// A line to write (its payloads, if any, not yet redacted).
    Line(Box<TraceLine>),
    /// Answer once every line sent before this one has been handled.
    Flush(oneshot::Sender<()>),
}

/// Why a line could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The trace file's directory is missing and cannot be created.
    #[error(
        "cannot create the trace directory {}: {source}; make it creatable, or point \
         traces.path (or --traces PATH) elsewhere",
        dir.display()
    )]
    CreateDirectory {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The trace file cannot be opened for appending.
    #[error(
        "cannot open the trace file {}: {source}; make it writable, or point traces.path \
         (or --traces PATH) elsewhere",
        path.display()
    )]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Something is at the trace file's path that the daemon must not write to: a symlink (it
    /// could point anywhere, another user's planted link included), something other than a
    /// regular file, or a file another user owns.
    #[error(
        "refusing the trace file {}: {reason}; remove it, or point traces.path (or --traces \
         PATH) elsewhere",
        path.display()
    )]
    Unsafe {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Appending to the trace file failed (a full disk, most often).
    #[error(
        "cannot write to the trace file {}: {source}; free some space, or point traces.path \
         (or --traces PATH) elsewhere",
        path.display()
    )]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Renaming or removing files to rotate failed.
    #[error("cannot rotate the trace file {}: {source}", path.display())]
    Rotate {
        /// The file that could not be moved or removed.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The line could not be encoded as JSON.
    #[error("cannot encode a trace line: {0}")]
    Encode(String),
}

/// Where lines go.
pub(crate) trait Sink: Send + 'static {
    /// Appends one complete line (newline included).
    fn append(&mut self, line: &[u8]) -> Result<(), WriteError>;

    /// Appends several lines; on failure, how many were written before it. The default
    /// appends them one by one.
    fn append_lines(&mut self, lines: &[Vec<u8>]) -> Result<(), (usize, WriteError)> {
        for (index, line) in lines.iter().enumerate() {
            self.append(line).map_err(|error| (index, error))?;
        }
        Ok(())
    }
}

/// What `health` reports of the writer; shared by the call side and the writer thread.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) written: AtomicU64,
    pub(crate) dropped: AtomicU64,
    /// Refused calls counted into summary lines instead of written.
    pub(crate) summarized: AtomicU64,
    // A std mutex: held only to swap a string, never across an await or a write.
    pub(crate) last_error: Mutex<Option<String>>,
}

impl Counters {
    /// Counts one lost line and remembers why; logs the reason when it is new, so that a full
    /// disk is one warning rather than one per call.
    pub(crate) fn drop_line(&self, reason: String) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
        let mut last = self.last_error.lock().unwrap();
        if last.as_deref() != Some(reason.as_str()) {
            tracing::warn!(error = %reason, "trace lines are being dropped");
            *last = Some(reason);
        }
    }
}

/// The writer thread's loop: until every sender is gone.
pub(crate) fn run(
    mut receiver: mpsc::Receiver<Message>,
    mut sink: Box<dyn Sink>,
    redactor: &Redactor,
    counters: &Counters,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = receiver.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match receiver.try_recv() {
                Ok(message) => batch.push(message),
                Err(_) => break,
            }
        }
        let drained = batch.len() < MAX_BATCH;
        write_batch(&mut batch, sink.as_mut(), redactor, counters);
        // Once the queue is drained, let the next lines gather instead of waking this thread
        // for each one: under a stream of calls the callers' `try_send`s then rarely wake it,
        // and it writes a batch with one system call. (A backlog is taken at once, without
        // pausing.) A lone call's line waits at most this long to be written.
        if drained {
            std::thread::sleep(GATHER);
        }
    }
}

/// The most messages the writer takes off the queue at once.
const MAX_BATCH: usize = 256;

/// How long the writer lets lines gather after writing a batch.
const GATHER: std::time::Duration = std::time::Duration::from_millis(2);

/// Writes the lines of `batch` (emptying it) and answers each flush once every line queued
/// before it is written or dropped.
fn write_batch(
    batch: &mut Vec<Message>,
    sink: &mut dyn Sink,
    redactor: &Redactor,
    counters: &Counters,
) {
    let mut lines: Vec<Vec<u8>> = Vec::with_capacity(batch.len());
    for message in batch.drain(..) {
        match message {
            Message::Line(mut line) => match encode(&mut line, redactor) {
                Ok(bytes) => lines.push(bytes),
                Err(error) => counters.drop_line(error.to_string()),
            },
            Message::Flush(done) => {
                append_lines(&mut lines, sink, counters);
                let _ = done.send(());
            }
        }
    }
    append_lines(&mut lines, sink, counters);
}

/// Appends `lines` (emptying it) and counts what was written and what was lost.
fn append_lines(lines: &mut Vec<Vec<u8>>, sink: &mut dyn Sink, counters: &Counters) {
    if lines.is_empty() {
        return;
    }
    let written = match sink.append_lines(lines) {
        Ok(()) => lines.len(),
        Err((written, error)) => {
            let reason = error.to_string();
            for _ in written..lines.len() {
                counters.drop_line(reason.clone());
            }
            written
        }
    };
    counters
        .written
        .fetch_add(written as u64, Ordering::Relaxed);
    lines.clear();
}

/// The line's bytes, newline included, with its payloads redacted.
fn encode(line: &mut TraceLine, redactor: &Redactor) -> Result<Vec<u8>, WriteError> {
    for payload in [&mut line.arguments, &mut line.result]
        .into_iter()
        .flatten()
    {
        redactor.redact(payload);
    }
    // An error's message may quote what a server said, configured secrets included; it is in
    // every line, verbose or not.
    if let Some(error) = &mut line.error {
        redactor.redact_text(&mut error.message);
    }
    let mut bytes =
        serde_json::to_vec(line).map_err(|error| WriteError::Encode(error.to_string()))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Whether a file of `size` bytes must be rotated before `incoming` more are appended. A line
/// larger than `max_bytes` still goes into a fresh file rather than nowhere.
pub(crate) fn should_rotate(size: u64, incoming: u64, max_bytes: u64) -> bool {
    size > 0 && size.saturating_add(incoming) > max_bytes
}

/// One file operation of a rotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RotationStep {
    /// Rename `from` to `to`, replacing `to`; a missing `from` is skipped.
    Rename { from: PathBuf, to: PathBuf },
    /// Remove the file; a missing one is skipped.
    Remove(PathBuf),
}

/// How to rotate `current` keeping `keep` old files: shift `.1`…`.keep-1` up by one (the
/// oldest, `.keep`, is replaced), then `current` becomes `.1`. With `keep` 0 the current file
/// is simply removed.
pub(crate) fn rotation_steps(current: &Path, keep: u32) -> Vec<RotationStep> {
    if keep == 0 {
        return vec![RotationStep::Remove(current.to_path_buf())];
    }
    let mut steps: Vec<RotationStep> = (1..keep)
        .rev()
        .map(|index| RotationStep::Rename {
            from: rotated_path(current, index),
            to: rotated_path(current, index + 1),
        })
        .collect();
    steps.push(RotationStep::Rename {
        from: current.to_path_buf(),
        to: rotated_path(current, 1),
    });
    steps
}

/// The trace file on disk.
pub(crate) struct FileSink {
    path: PathBuf,
    max_bytes: u64,
    keep: u32,
    open: Option<OpenFile>,
}

struct OpenFile {
    file: File,
    /// Bytes in the file: its length when opened plus what we appended since.
    size: u64,
    /// `(device, inode)`: when the path names another file (rotated or removed by someone
    /// else), the next line reopens it.
    identity: (u64, u64),
}

impl FileSink {
    /// A sink for `settings`; nothing is touched until the first line.
    pub(crate) fn new(settings: &TraceSettings) -> FileSink {
        FileSink {
            path: settings.path.clone(),
            max_bytes: settings.max_bytes,
            keep: settings.keep,
            open: None,
        }
    }

    /// The open file, (re)opened when the path no longer names it.
    fn file(&mut self) -> Result<&mut OpenFile, WriteError> {
        let still_ours = self.open.as_ref().is_some_and(|open| {
            std::fs::metadata(&self.path)
                .is_ok_and(|meta| (meta.dev(), meta.ino()) == open.identity)
        });
        if !still_ours {
            self.open = Some(self.open_file()?);
        }
        Ok(self.open.as_mut().expect("opened above"))
    }

    fn open_file(&self) -> Result<OpenFile, WriteError> {
        if let Some(dir) = self.path.parent().filter(|dir| !dir.as_os_str().is_empty())
            && !dir.is_dir()
        {
            // Only we may read what our calls did: the directories we create are 0700.
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|source| WriteError::CreateDirectory {
                    dir: dir.to_path_buf(),
                    source,
                })?;
        }
        let open_error = |source| WriteError::Open {
            path: self.path.clone(),
            source,
        };
        let unsafe_file = |reason| WriteError::Unsafe {
            path: self.path.clone(),
            reason,
        };
        // Never through a symlink, and never blocking on a FIFO someone put there.
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&self.path)
            .map_err(|source| match source.raw_os_error() {
                Some(libc::ELOOP) => unsafe_file("it is a symlink"),
                _ => open_error(source),
            })?;
        let meta = file.metadata().map_err(open_error)?;
        // A character device (`/dev/null`) is a deliberate choice; a FIFO or a socket is not a
        // place to keep records.
        if !meta.is_file() && !meta.file_type().is_char_device() {
            return Err(unsafe_file("it is not a regular file"));
        }
        // SAFETY: getuid cannot fail and has no preconditions.
        if meta.is_file() && meta.uid() != unsafe { libc::getuid() } {
            return Err(unsafe_file("another user owns it"));
        }
        // Only we may read what our calls did, whatever mode an older file was left with.
        if meta.is_file() && meta.mode() & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(open_error)?;
        }
        Ok(OpenFile {
            file,
            size: meta.len(),
            identity: (meta.dev(), meta.ino()),
        })
    }

    fn rotate(&mut self) -> Result<(), WriteError> {
        self.open = None;
        for step in rotation_steps(&self.path, self.keep) {
            let (result, path) = match &step {
                RotationStep::Rename { from, to } => (std::fs::rename(from, to), from),
                RotationStep::Remove(path) => (std::fs::remove_file(path), path),
            };
            match result {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                    return Err(WriteError::Rotate {
                        path: path.clone(),
                        source: error,
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }
}

impl Sink for FileSink {
    fn append(&mut self, line: &[u8]) -> Result<(), WriteError> {
        self.append_lines(std::slice::from_ref(&line.to_vec()))
            .map_err(|(_, error)| error)
    }

    /// One check that the path still names the open file, then one write per run of lines
    /// that fits before the next rotation.
    fn append_lines(&mut self, lines: &[Vec<u8>]) -> Result<(), (usize, WriteError)> {
        let mut done = 0;
        let mut buffer: Vec<u8> = Vec::new();
        self.file().map_err(|error| (0, error))?;
        while done < lines.len() {
            let size = self.open.as_ref().expect("opened by file()").size;
            // The run: lines that fit in the file as it is (at least one, into a fresh file).
            buffer.clear();
            let mut end = done;
            while end < lines.len()
                && !should_rotate(
                    size + buffer.len() as u64,
                    lines[end].len() as u64,
                    self.max_bytes,
                )
            {
                buffer.extend_from_slice(&lines[end]);
                end += 1;
            }
            if end == done {
                self.rotate().map_err(|error| (done, error))?;
                self.file().map_err(|error| (done, error))?;
                continue;
            }
            let open = self.open.as_mut().expect("opened by file()");
            open.file.write_all(&buffer).map_err(|source| {
                (
                    done,
                    WriteError::Write {
                        path: self.path.clone(),
                        source,
                    },
                )
            })?;
            open.size += buffer.len() as u64;
            done = end;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn sink(dir: &Path, max_bytes: u64, keep: u32) -> FileSink {
        FileSink::new(&TraceSettings {
            path: dir.join("state/tool-cli/traces.jsonl"),
            verbose: false,
            max_bytes,
            keep,
        })
    }

    fn numbered_line(number: usize) -> Vec<u8> {
        // 100 bytes with its newline, so that 10 fill a 1000-byte file exactly.
        let mut line = format!("{{\"n\":{number:>5}}}").into_bytes();
        line.resize(99, b' ');
        line.push(b'\n');
        line
    }

    fn numbers_in(path: &Path) -> Vec<usize> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|line| line[5..10].trim().parse().unwrap())
            .collect()
    }

    #[test]
    fn rotation_is_decided_by_the_size_after_the_line() {
        assert!(
            !should_rotate(0, 5000, 1000),
            "an empty file takes any line"
        );
        assert!(!should_rotate(900, 100, 1000), "exactly full is not over");
        assert!(should_rotate(901, 100, 1000));
        assert!(should_rotate(1, u64::MAX, 1000), "no overflow");
    }

    #[test]
    fn rotation_shifts_every_kept_file_up_by_one() {
        let current = Path::new("/s/traces.jsonl");
        let rename = |from: &str, to: &str| RotationStep::Rename {
            from: from.into(),
            to: to.into(),
        };
        assert_eq!(
            rotation_steps(current, 3),
            [
                rename("/s/traces.jsonl.2", "/s/traces.jsonl.3"),
                rename("/s/traces.jsonl.1", "/s/traces.jsonl.2"),
                rename("/s/traces.jsonl", "/s/traces.jsonl.1"),
            ]
        );
        assert_eq!(
            rotation_steps(current, 1),
            [rename("/s/traces.jsonl", "/s/traces.jsonl.1")]
        );
        assert_eq!(
            rotation_steps(current, 0),
            [RotationStep::Remove("/s/traces.jsonl".into())]
        );
    }

    #[test]
    fn creates_a_private_directory_and_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = sink(dir.path(), 1000, 2);
        sink.append(&numbered_line(1)).unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("state")), 0o700);
        assert_eq!(mode(&dir.path().join("state/tool-cli")), 0o700);
        assert_eq!(mode(&sink.path), 0o600);
    }

    #[test]
    fn rotates_at_max_bytes_and_keeps_keep_files_with_the_newest_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = sink(dir.path(), 1000, 2);
        for number in 1..=45 {
            sink.append(&numbered_line(number)).unwrap();
        }
        let current = sink.path.clone();
        assert_eq!(numbers_in(&current), (41..=45).collect::<Vec<_>>());
        assert_eq!(
            numbers_in(&rotated_path(&current, 1)),
            (31..=40).collect::<Vec<_>>()
        );
        assert_eq!(
            numbers_in(&rotated_path(&current, 2)),
            (21..=30).collect::<Vec<_>>()
        );
        assert!(!rotated_path(&current, 3).exists(), "only `keep` old files");
        for path in [&current, &rotated_path(&current, 1)] {
            assert!(std::fs::metadata(path).unwrap().len() <= 1000);
        }
    }

    #[test]
    fn a_batch_rotates_where_single_lines_would() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = sink(dir.path(), 1000, 2);
        sink.append(&numbered_line(1)).unwrap();
        // One batch that crosses two rotations: the same files as line by line.
        let batch: Vec<Vec<u8>> = (2..=25).map(numbered_line).collect();
        sink.append_lines(&batch).unwrap();
        let current = sink.path.clone();
        assert_eq!(numbers_in(&current), (21..=25).collect::<Vec<_>>());
        assert_eq!(
            numbers_in(&rotated_path(&current, 1)),
            (11..=20).collect::<Vec<_>>()
        );
        assert_eq!(
            numbers_in(&rotated_path(&current, 2)),
            (1..=10).collect::<Vec<_>>()
        );
    }

    #[test]
    fn keep_zero_starts_the_file_over() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = sink(dir.path(), 1000, 0);
        for number in 1..=12 {
            sink.append(&numbered_line(number)).unwrap();
        }
        assert_eq!(numbers_in(&sink.path), [11, 12]);
        assert!(!rotated_path(&sink.path, 1).exists());
    }

    #[test]
    fn continues_an_existing_file_and_reopens_one_moved_away() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = sink(dir.path(), 1000, 2);
        for number in 1..=5 {
            first.append(&numbered_line(number)).unwrap();
        }
        drop(first);
        // A restarted daemon counts the bytes already there.
        let mut second = sink(dir.path(), 1000, 2);
        for number in 6..=11 {
            second.append(&numbered_line(number)).unwrap();
        }
        assert_eq!(
            numbers_in(&rotated_path(&second.path, 1)),
            (1..=10).collect::<Vec<_>>()
        );
        // Someone (logrotate, a person) moves the file away: the next line starts a new one.
        let moved = dir.path().join("moved.jsonl");
        std::fs::rename(&second.path, &moved).unwrap();
        second.append(&numbered_line(12)).unwrap();
        assert_eq!(numbers_in(&second.path), [12]);
        assert_eq!(numbers_in(&moved), [11]);
    }

    #[test]
    fn a_symlink_planted_at_the_trace_path_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = sink(dir.path(), 1000, 2);
        std::fs::create_dir_all(sink.path.parent().unwrap()).unwrap();
        let target = dir.path().join("someone-elses-file");
        std::fs::write(&target, "theirs\n").unwrap();
        std::os::unix::fs::symlink(&target, &sink.path).unwrap();
        let error = sink.append(&numbered_line(1)).unwrap_err();
        assert!(matches!(error, WriteError::Unsafe { .. }), "{error:?}");
        let message = error.to_string();
        assert!(message.contains("it is a symlink"), "{message}");
        assert!(message.contains("traces.path"), "{message}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs\n");
        // A dangling link would be created through: refused as well.
        std::fs::remove_file(&target).unwrap();
        assert!(matches!(
            sink.append(&numbered_line(2)),
            Err(WriteError::Unsafe { .. })
        ));
        assert!(!target.exists(), "nothing was created through the link");
    }

    #[test]
    fn a_fifo_at_the_trace_path_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = sink(dir.path(), 1000, 2);
        std::fs::create_dir_all(sink.path.parent().unwrap()).unwrap();
        let path = std::ffi::CString::new(sink.path.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; mkfifo has no other preconditions.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        // With no reader, an append open blocks forever or fails: never a line written.
        let error = sink.append(&numbered_line(1)).unwrap_err();
        assert!(
            matches!(error, WriteError::Unsafe { .. } | WriteError::Open { .. }),
            "{error:?}"
        );
    }

    #[test]
    fn an_existing_trace_file_readable_by_others_is_made_private() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = sink(dir.path(), 1000, 2);
        std::fs::create_dir_all(sink.path.parent().unwrap()).unwrap();
        std::fs::write(&sink.path, numbered_line(1)).unwrap();
        std::fs::set_permissions(&sink.path, std::fs::Permissions::from_mode(0o644)).unwrap();
        sink.append(&numbered_line(2)).unwrap();
        let mode = std::fs::metadata(&sink.path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(numbers_in(&sink.path), [1, 2]);
    }

    #[test]
    fn a_directory_that_cannot_be_created_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        // A regular file where the directory should be: no user, not even root, can create it.
        std::fs::write(dir.path().join("state"), "").unwrap();
        let mut sink = sink(dir.path(), 1000, 2);
        let error = sink.append(&numbered_line(1)).unwrap_err();
        assert!(
            matches!(error, WriteError::CreateDirectory { .. }),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(
            message.starts_with("cannot create the trace directory"),
            "{message}"
        );
        assert!(message.contains("traces.path"), "{message}");
    }

    #[test]
    fn a_full_disk_is_a_write_error() {
        // /dev/full accepts the open and fails every write with ENOSPC, like a full disk.
        let mut sink = FileSink::new(&TraceSettings {
            path: "/dev/full".into(),
            verbose: false,
            max_bytes: 1000,
            keep: 2,
        });
        let error = sink.append(&numbered_line(1)).unwrap_err();
        assert!(matches!(error, WriteError::Write { .. }), "{error:?}");
        assert!(
            error.to_string().contains("No space left on device"),
            "{error}"
        );
    }
}
