//! What reading a trace file costs in memory, counted by a global allocator of this test binary
//! (bytes allocated and not yet freed, and their peak), not by RSS.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};

use tool_cli_trace_report::aggregate::ReportOptions;
use tool_cli_trace_report::files::read_report;

/// The system allocator, counting what is held.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to `System` unchanged; the counters only observe.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract, which `System` has too.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            let held = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(held, Ordering::Relaxed);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: as for `alloc`.
        unsafe { System.dealloc(pointer, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The issue: `tool-cli traces report --file` (and the daemon's `tracesReport`) read a 400 MB
/// line whole. A verbose line with a large result is now counted while it is read.
#[test]
fn a_huge_verbose_line_is_counted_without_being_held() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("traces.jsonl");
    let payload = 32 * 1024 * 1024;
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        write!(
            file,
            r#"{{"schemaVersion":1,"ts":"2026-05-14T09:00:00.000Z","callId":"c1","server":"s","tool":"big","latencyMs":2.0,"success":true,"executed":true,"result":{{"content":[{{"type":"text","text":""#
        )
        .unwrap();
        let chunk = vec![b'x'; 1024 * 1024];
        for _ in 0..payload / chunk.len() {
            file.write_all(&chunk).unwrap();
        }
        writeln!(file, r#""}}]}}}}"#).unwrap();
        writeln!(
            file,
            r#"{{"schemaVersion":1,"ts":"2026-05-14T09:00:01.000Z","callId":"c2","server":"s","tool":"small","latencyMs":1.0,"success":false,"executed":true}}"#
        )
        .unwrap();
        // A long line that is not a trace line at all: counted as corrupt, not held either.
        file.write_all(&vec![b'y'; 4 * 1024 * 1024]).unwrap();
        writeln!(file).unwrap();
    }
    let before = HELD.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let report = read_report(&path, ReportOptions::default()).unwrap();
    let peak = PEAK.load(Ordering::Relaxed) - before;
    assert_eq!((report.lines, report.corrupt_lines), (2, 1));
    assert_eq!((report.total.calls, report.total.errors), (2, 1));
    assert!(
        peak < 8 * 1024 * 1024,
        "reading held {peak} bytes at its peak for a {payload}-byte line"
    );
}
