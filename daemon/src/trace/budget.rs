//! Each token's share of the trace for its refused calls, and the summary lines that stand for
//! what is over it.
//!
//! A refused call (an unknown tool, a name outside the scope, a breaker, a full queue) costs the
//! caller nothing and the trace one line, so a token that sends thousands of them would rotate
//! everyone's history away. Each token therefore gets a budget of bytes for the lines of its
//! refused calls (a token bucket: `capacity` bytes at once, refilled at `capacity` per hour).
//! Lines over it are not written one by one: they are counted, and at most once a minute per
//! token (and on every flush) one summary line says how many there were and of which kinds.
//! A flood of refusals then costs the trace a few kilobytes an hour, whatever its speed.
//!
//! Pure: time comes in as an argument, so every rule is unit-tested without waiting.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// How often a token's summary line is written at most while its refusals are over budget.
pub(crate) const SUMMARY_INTERVAL: Duration = Duration::from_secs(60);

/// The smallest budget: a few dozen refusals of ordinary size.
pub(crate) const MIN_CAPACITY_BYTES: u64 = 16 * 1024;

/// The share of the whole trace history (current file and rotated ones) one token's refusals
/// may take at once, and again each hour: 1/1024 of it (60 KiB of the default 60 MiB).
const HISTORY_SHARE: u64 = 1024;

/// Most tokens followed at once; a token whose bucket is full and that has nothing pending is
/// forgotten first (forgetting it changes nothing).
const MAX_TOKENS: usize = 4096;

/// What to do with one refused call's line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Write it.
    Write,
    /// Count it in the token's next summary instead.
    Summarize,
}

/// The refused calls of one token that were not written one by one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    /// How many.
    pub(crate) calls: u64,
    /// How many of each error kind, by kind.
    pub(crate) kinds: BTreeMap<String, u64>,
    /// The JSON-RPC code of the most common kind.
    pub(crate) code: i32,
}

impl Summary {
    /// The summary line's message: how many, of which kinds, and why they were not written.
    pub(crate) fn message(&self, capacity: u64) -> String {
        let kinds: Vec<String> = self
            .kinds
            .iter()
            .map(|(kind, count)| format!("{kind} ×{count}"))
            .collect();
        format!(
            "{} refused calls of one token were over its share of the trace ({capacity} bytes \
             an hour for refusals) and are summarized here, not written one by one: {}",
            self.calls,
            kinds.join(", ")
        )
    }
}

#[derive(Debug)]
struct Bucket {
    /// Bytes that may be written now.
    available: f64,
    updated: Instant,
    /// Refusals counted since the last summary.
    pending: Option<Pending>,
    last_summary: Option<Instant>,
}

#[derive(Debug)]
struct Pending {
    calls: u64,
    kinds: BTreeMap<String, (u64, i32)>,
}

impl Pending {
    fn into_summary(self) -> Summary {
        let code = self
            .kinds
            .values()
            .max_by_key(|(count, _)| *count)
            .map_or(0, |(_, code)| *code);
        Summary {
            calls: self.calls,
            kinds: self
                .kinds
                .into_iter()
                .map(|(kind, (count, _))| (kind, count))
                .collect(),
            code,
        }
    }
}

/// Every token's budget of refusal lines.
#[derive(Debug)]
pub(crate) struct RefusalBudget {
    capacity: u64,
    tokens: HashMap<String, Bucket>,
}

impl RefusalBudget {
    /// A budget for a trace history of `history_bytes` (the file's `maxBytes` times the files
    /// kept, the current one included).
    pub(crate) fn for_history(history_bytes: u64) -> RefusalBudget {
        RefusalBudget {
            capacity: (history_bytes / HISTORY_SHARE).max(MIN_CAPACITY_BYTES),
            tokens: HashMap::new(),
        }
    }

    /// Bytes a token's refusals may take at once, and again each hour.
    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Decides on a refused call of `token_id` whose line is `bytes` long, with error `kind`
    /// and `code`; also returns the token's summary when one is due now (before this line).
    pub(crate) fn admit(
        &mut self,
        token_id: &str,
        bytes: u64,
        kind: &str,
        code: i32,
        now: Instant,
    ) -> (Verdict, Option<Summary>) {
        if !self.tokens.contains_key(token_id) && self.tokens.len() >= MAX_TOKENS {
            self.forget_idle(now);
        }
        let capacity = self.capacity as f64;
        let bucket = self
            .tokens
            .entry(token_id.to_owned())
            .or_insert_with(|| Bucket {
                available: capacity,
                updated: now,
                pending: None,
                last_summary: None,
            });
        refill(bucket, capacity, now);
        let due = bucket.pending.is_some()
            && bucket
                .last_summary
                .is_none_or(|last| now.saturating_duration_since(last) >= SUMMARY_INTERVAL);
        let summary = if due {
            bucket.last_summary = Some(now);
            bucket.pending.take().map(Pending::into_summary)
        } else {
            None
        };
        // Once over, a token's refusals stay summarized until its bucket has room for them
        // again; a line is written only when it fits whole.
        if bucket.available >= bytes as f64 {
            bucket.available -= bytes as f64;
            return (Verdict::Write, summary);
        }
        let pending = bucket.pending.get_or_insert_with(|| Pending {
            calls: 0,
            kinds: BTreeMap::new(),
        });
        pending.calls += 1;
        let entry = pending.kinds.entry(kind.to_owned()).or_insert((0, code));
        entry.0 += 1;
        // The first refusal over the budget starts the interval, so its summary comes a minute
        // later at the latest (or at the next flush).
        bucket.last_summary.get_or_insert(now);
        (Verdict::Summarize, summary)
    }

    /// Every pending summary, for a flush: nothing counted is left unsaid.
    pub(crate) fn drain(&mut self, now: Instant) -> Vec<Summary> {
        let mut summaries = Vec::new();
        for bucket in self.tokens.values_mut() {
            if let Some(pending) = bucket.pending.take() {
                bucket.last_summary = Some(now);
                summaries.push(pending.into_summary());
            }
        }
        summaries
    }

    /// Forgets tokens whose bucket is full again and that have nothing pending.
    fn forget_idle(&mut self, now: Instant) {
        let capacity = self.capacity as f64;
        self.tokens.retain(|_, bucket| {
            refill(bucket, capacity, now);
            bucket.pending.is_some() || bucket.available < capacity
        });
    }

    #[cfg(test)]
    fn followed(&self) -> usize {
        self.tokens.len()
    }
}

/// Adds what the time since the last update earned, at `capacity` an hour, up to `capacity`.
fn refill(bucket: &mut Bucket, capacity: f64, now: Instant) {
    let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
    bucket.available = (bucket.available + capacity * elapsed / 3600.0).min(capacity);
    bucket.updated = now;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> RefusalBudget {
        RefusalBudget::for_history(0)
    }

    #[test]
    fn the_capacity_is_a_share_of_the_history_with_a_floor() {
        assert_eq!(budget().capacity(), MIN_CAPACITY_BYTES);
        let default_history = 10 * 1024 * 1024 * 6;
        assert_eq!(
            RefusalBudget::for_history(default_history).capacity(),
            60 * 1024
        );
    }

    #[test]
    fn a_token_over_its_budget_is_summarized_and_others_are_not_held_up() {
        let mut budget = budget();
        let now = Instant::now();
        let line = 4096;
        let mut written = 0;
        for _ in 0..7000 {
            if budget.admit("scoped", line, "unknownTool", -32602, now).0 == Verdict::Write {
                written += 1;
            }
        }
        assert_eq!(written, MIN_CAPACITY_BYTES / line);
        // Another token's refusals have their own budget.
        assert_eq!(
            budget.admit("owner", line, "notPermitted", -32006, now).0,
            Verdict::Write
        );
        let summaries = budget.drain(now);
        assert_eq!(summaries.len(), 1);
        let summary = &summaries[0];
        assert_eq!(summary.calls, 7000 - written);
        assert_eq!(summary.kinds["unknownTool"], 7000 - written);
        assert_eq!(summary.code, -32602);
        let message = summary.message(budget.capacity());
        assert!(
            message.starts_with("6996 refused calls of one token"),
            "{message}"
        );
        assert!(budget.drain(now).is_empty(), "said once");
    }

    #[test]
    fn a_summary_is_due_a_minute_after_the_first_refusal_over_budget() {
        let mut budget = budget();
        let start = Instant::now();
        let line = MIN_CAPACITY_BYTES;
        assert_eq!(
            budget.admit("t", line, "busy", -32004, start).0,
            Verdict::Write
        );
        let (verdict, summary) = budget.admit("t", line, "busy", -32004, start);
        assert_eq!((verdict, summary), (Verdict::Summarize, None));
        let later = start + Duration::from_secs(30);
        assert_eq!(budget.admit("t", line, "busy", -32004, later).1, None);
        // A minute on, the next refusal brings the summary of the two before it; the bucket
        // earned a minute's refill, not enough for a whole line.
        let minute = start + SUMMARY_INTERVAL;
        let (verdict, summary) = budget.admit("t", line, "busy", -32004, minute);
        assert_eq!(verdict, Verdict::Summarize);
        assert_eq!(summary.map(|summary| summary.calls), Some(2));
        // An hour refills the bucket: lines are written again.
        let hour = minute + Duration::from_secs(3600);
        let (verdict, summary) = budget.admit("t", line, "busy", -32004, hour);
        assert_eq!(verdict, Verdict::Write);
        assert_eq!(summary.map(|summary| summary.calls), Some(1));
    }

    #[test]
    fn idle_tokens_are_forgotten_when_many_are_followed() {
        let mut budget = budget();
        let start = Instant::now();
        for index in 0..MAX_TOKENS {
            budget.admit(&format!("t{index}"), 100, "busy", -32004, start);
        }
        assert_eq!(budget.followed(), MAX_TOKENS);
        let hour = start + Duration::from_secs(3600);
        budget.admit("new", 100, "busy", -32004, hour);
        assert_eq!(budget.followed(), 1);
    }
}
