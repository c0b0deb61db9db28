//! How many of a server's `notifications/message` reach the daemon's log: a fixed window per
//! server, so a server that floods log notifications cannot flood the daemon's log (or the disk
//! it goes to), and what it dropped is said once, not silently lost.
//!
//! Pure and clock-injected: [`LogBudget::admit`] takes `now` and says whether to write the line
//! and whether to first write a line about what the previous window dropped.

use std::time::{Duration, Instant};

/// Log lines one server may write per [`WINDOW`].
pub(crate) const LINES_PER_WINDOW: u32 = 100;
/// The window [`LINES_PER_WINDOW`] counts over.
pub(crate) const WINDOW: Duration = Duration::from_secs(10);

/// One server's log-line budget.
#[derive(Debug, Default)]
pub(crate) struct LogBudget {
    window_start: Option<Instant>,
    written: u32,
    dropped: u64,
}

/// What to do with one log notification.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// Write it to the daemon's log.
    pub(crate) write: bool,
    /// Before it, say that this many of the server's messages were dropped in the window that
    /// ended (`Some` at most once per window that dropped any).
    pub(crate) report_dropped: Option<u64>,
    /// This is the first message dropped in the window: say once that the rest are dropped.
    pub(crate) starts_dropping: bool,
}

impl LogBudget {
    /// Counts one notification arriving at `now`.
    pub(crate) fn admit(&mut self, now: Instant) -> Verdict {
        let mut report_dropped = None;
        let expired = self
            .window_start
            .is_none_or(|start| now.saturating_duration_since(start) >= WINDOW);
        if expired {
            if self.dropped > 0 {
                report_dropped = Some(self.dropped);
            }
            self.window_start = Some(now);
            self.written = 0;
            self.dropped = 0;
        }
        if self.written < LINES_PER_WINDOW {
            self.written += 1;
            Verdict {
                write: true,
                report_dropped,
                starts_dropping: false,
            }
        } else {
            self.dropped += 1;
            Verdict {
                write: false,
                report_dropped,
                starts_dropping: self.dropped == 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_cut_at_the_budget_and_the_drop_reported_once_in_the_next_window() {
        let start = Instant::now();
        let mut budget = LogBudget::default();
        let verdicts: Vec<Verdict> = (0..LINES_PER_WINDOW + 50)
            .map(|_| budget.admit(start))
            .collect();
        let written = verdicts.iter().filter(|verdict| verdict.write).count();
        assert_eq!(written, LINES_PER_WINDOW as usize);
        assert_eq!(
            verdicts
                .iter()
                .filter(|verdict| verdict.starts_dropping)
                .count(),
            1,
            "the start of dropping is said once"
        );
        assert!(verdicts[LINES_PER_WINDOW as usize].starts_dropping);
        assert!(
            verdicts
                .iter()
                .all(|verdict| verdict.report_dropped.is_none())
        );

        // Within the window, still dropped.
        let late = budget.admit(start + WINDOW - Duration::from_millis(1));
        assert!(!late.write && !late.starts_dropping);

        // The next window writes again, first reporting the 51 dropped.
        let next = budget.admit(start + WINDOW);
        assert_eq!(
            next,
            Verdict {
                write: true,
                report_dropped: Some(51),
                starts_dropping: false
            }
        );
        let after = budget.admit(start + WINDOW);
        assert_eq!(after.report_dropped, None, "reported once");
    }

    #[test]
    fn a_quiet_server_loses_nothing() {
        let start = Instant::now();
        let mut budget = LogBudget::default();
        for second in 0..1000 {
            let verdict = budget.admit(start + Duration::from_secs(second));
            assert!(verdict.write);
            assert_eq!(verdict.report_dropped, None);
        }
    }
}
