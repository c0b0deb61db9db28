//! The trace writer end to end within the process: records in, lines (or counted drops) out,
//! with sinks that fail or stall on demand.

use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_cli_protocol::trace::REDACTED;

use super::line::test_record;
use super::*;

const WAIT: Duration = Duration::from_secs(10);

fn settings(path: &Path, verbose: bool) -> TraceSettings {
    TraceSettings {
        path: path.to_path_buf(),
        verbose,
        max_bytes: crate::config::traces::DEFAULT_MAX_BYTES,
        keep: 1,
    }
}

/// Fails every line the way a full disk does.
struct FullDisk;

impl Sink for FullDisk {
    fn append(&mut self, _line: &[u8]) -> Result<(), WriteError> {
        Err(WriteError::Write {
            path: "/full/traces.jsonl".into(),
            source: std::io::Error::from_raw_os_error(libc::ENOSPC),
        })
    }
}

/// Keeps lines in memory; each append first waits for a permit when `gate` is set.
struct Memory {
    lines: Arc<Mutex<Vec<Value>>>,
    gate: Option<std_mpsc::Receiver<()>>,
    /// Told each time the writer starts on a line (before it waits at the gate).
    entered: Option<std_mpsc::Sender<()>>,
}

impl Sink for Memory {
    fn append(&mut self, line: &[u8]) -> Result<(), WriteError> {
        if let Some(entered) = &self.entered {
            let _ = entered.send(());
        }
        if let Some(gate) = &self.gate {
            let _ = gate.recv();
        }
        self.lines
            .lock()
            .unwrap()
            .push(serde_json::from_slice(line).unwrap());
        Ok(())
    }
}

#[tokio::test]
async fn a_failing_disk_counts_every_line_as_dropped_and_says_why() {
    let traces = Traces::start_with(
        settings(Path::new("/full/traces.jsonl"), false),
        Redactor::default(),
        Box::new(FullDisk),
        QUEUE_CAPACITY,
    );
    for _ in 0..3 {
        traces.observe(&test_record());
    }
    assert!(traces.flush(WAIT).await);
    let health = traces.health();
    assert_eq!((health.written, health.dropped), (0, 3));
    let error = health.last_error.unwrap();
    assert!(error.contains("No space left on device"), "{error}");
    assert!(error.contains("/full/traces.jsonl"), "{error}");
}

#[tokio::test]
async fn a_stalled_writer_never_blocks_a_call_and_counts_what_did_not_fit() {
    let (permits, gate) = std_mpsc::channel();
    let (entered, writing) = std_mpsc::channel();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let traces = Traces::start_with(
        settings(Path::new("/memory"), false),
        Redactor::default(),
        Box::new(Memory {
            lines: Arc::clone(&lines),
            gate: Some(gate),
            entered: Some(entered),
        }),
        1,
    );
    // Once the writer is stuck on a first line, the queue holds one more and every other line
    // is dropped at once rather than waited for. (Waited for as an event: before the writer
    // takes the first line off the queue, it could take a second with it.)
    traces.observe(&test_record());
    let stuck = tokio::task::spawn_blocking(move || writing.recv().is_ok())
        .await
        .unwrap();
    assert!(stuck, "the writer never started on the first line");
    for _ in 0..9 {
        traces.observe(&test_record());
    }
    let dropped = traces.health().dropped;
    assert_eq!(dropped, 8);
    let reason = traces.health().last_error.unwrap();
    assert!(reason.contains("fell behind"), "{reason}");
    for _ in 0..10 {
        permits.send(()).unwrap();
    }
    assert!(traces.flush(WAIT).await);
    let health = traces.health();
    assert_eq!(health.written + health.dropped, 10);
    assert_eq!(lines.lock().unwrap().len() as u64, health.written);
}

#[tokio::test]
async fn verbose_lines_carry_redacted_payloads_and_plain_ones_none() {
    for verbose in [true, false] {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let traces = Traces::start_with(
            settings(Path::new("/memory"), verbose),
            Redactor::new(["sk-configured-secret".to_owned()]),
            Box::new(Memory {
                lines: Arc::clone(&lines),
                gate: None,
                entered: None,
            }),
            QUEUE_CAPACITY,
        );
        assert_eq!(traces.wants_payloads(), verbose);
        let mut record = test_record();
        // Another observer may have asked for payloads: plain traces still leave them out.
        record.arguments = Some(json!({"sql": "select 1", "auth": {"api_key": "hunter2"}}));
        record.result = Some(json!({"content": [{"type": "text",
            "text": "the key is sk-configured-secret"}]}));
        // An error's message is in every line, verbose or not: redacted as well.
        record.error = Some(crate::pipeline::RecordedError {
            code: -32003,
            kind: "upstream",
            message: "the server refused the key sk-configured-secret".into(),
        });
        traces.observe(&record);
        assert!(traces.flush(WAIT).await);
        let line = lines.lock().unwrap().pop().unwrap();
        let text = line.to_string();
        assert!(
            !text.contains("hunter2") && !text.contains("sk-configured-secret"),
            "{text}"
        );
        if verbose {
            assert_eq!(line["arguments"]["auth"]["api_key"], REDACTED);
            assert_eq!(line["arguments"]["sql"], "select 1");
            assert_eq!(
                line["result"]["content"][0]["text"],
                format!("the key is {REDACTED}")
            );
        } else {
            assert!(line.get("arguments").is_none() && line.get("result").is_none());
        }
        assert_eq!(traces.health().written, 1);
    }
}

#[tokio::test]
async fn lines_reach_the_real_file_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("traces.jsonl");
    let traces = Traces::start(settings(&path, false), Vec::new());
    let mut records = Vec::new();
    for _ in 0..5 {
        let record = {
            let mut record = test_record();
            record.call_id = crate::pipeline::CallId::next();
            record
        };
        traces.observe(&record);
        records.push(record.call_id.to_string());
    }
    assert!(traces.flush(WAIT).await);
    let text = std::fs::read_to_string(&path).unwrap();
    let ids: Vec<String> = text
        .lines()
        .map(|line| serde_json::from_str::<TraceLine>(line).unwrap().call_id)
        .collect();
    assert_eq!(ids, records);
    let health = traces.health();
    assert_eq!(
        (health.written, health.dropped, health.last_error),
        (5, 0, None)
    );
    assert_eq!(health.path, path.to_string_lossy());
}

/// The issue: ~7,000 refused calls of one token rotated the whole trace history away. Each
/// token's refusals now have a share of the history; past it they are summarized.
#[tokio::test]
async fn one_tokens_refused_calls_cannot_rotate_everyones_history_away() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("traces.jsonl");
    let traces = Traces::start(
        TraceSettings {
            path: path.clone(),
            verbose: false,
            max_bytes: 64 * 1024,
            keep: 1,
        },
        Vec::new(),
    );
    let mut owners = Vec::new();
    for _ in 0..50 {
        let mut record = test_record();
        record.call_id = crate::pipeline::CallId::next();
        record.server = Some("demo".into());
        record.executed = true;
        record.success = true;
        traces.observe(&record);
        owners.push(record.call_id.to_string());
    }
    let flood = 7000;
    for index in 0..flood {
        let mut record = test_record();
        record.token_id = "scoped".into();
        record.tool = format!("no_such_tool_{index}_{}", "x".repeat(4000));
        record.error = Some(crate::pipeline::RecordedError {
            code: -32602,
            kind: "unknownTool",
            message: "no server offers it".into(),
        });
        traces.observe(&record);
    }
    assert!(traces.flush(WAIT).await);
    let mut lines: Vec<TraceLine> = Vec::new();
    for file in tool_cli_trace_report::files::trace_files(&path) {
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            lines.push(serde_json::from_str(line).unwrap());
        }
    }
    let kept: Vec<&str> = lines
        .iter()
        .filter(|line| line.executed)
        .map(|line| line.call_id.as_str())
        .collect();
    assert_eq!(kept, owners, "the owner's history was rotated away");
    let refused = lines
        .iter()
        .filter(|line| !line.executed && line.summarizes == 0)
        .count() as u64;
    let summarized: u64 = lines.iter().map(|line| line.summarizes).sum();
    assert_eq!(
        refused + summarized,
        flood,
        "every refusal is written or counted"
    );
    assert!(refused < 10, "{refused} refusals written one by one");
    let summary = lines.iter().find(|line| line.summarizes > 0).unwrap();
    let error = summary.error.as_ref().unwrap();
    assert_eq!(error.kind, "refusalsSummarized");
    assert!(error.message.contains("unknownTool ×"), "{}", error.message);
    assert_eq!(traces.health().summarized, summarized);
}
