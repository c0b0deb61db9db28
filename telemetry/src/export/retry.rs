//! What to do with a collector's answer (pure): delivered, retried after a delay, or dropped.
//!
//! The OTLP/HTTP specification makes 429, 502, 503 and 504 retryable and asks the client to honour
//! `Retry-After`; a connection that failed or timed out is retried too (the collector may be
//! restarting). Anything else (400 malformed, 413 too large, 500, …) would fail again: the batch
//! is dropped and counted. Retries back off exponentially with equal jitter and stop when the
//! export's budget (`OTEL_BSP_EXPORT_TIMEOUT`) or the attempt cap is spent, so a collector that
//! stays down costs a bounded time per batch while later spans wait in the queue (and are dropped,
//! counted, when it is full).

use std::time::{Duration, SystemTime};

/// How retries are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The delay before the first retry, before jitter.
    pub initial_backoff: Duration,
    /// The cap on a backoff delay.
    pub max_backoff: Duration,
    /// Most attempts of one request (the first included).
    pub max_attempts: u32,
}

impl Default for RetryPolicy {
    /// 1 s, doubling, capped at 30 s; 6 attempts.
    fn default() -> RetryPolicy {
        RetryPolicy {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            max_attempts: 6,
        }
    }
}

/// How one attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt<'a> {
    /// The collector answered with this status and `Retry-After` header, if any.
    Answered {
        /// The HTTP status.
        status: u16,
        /// The `Retry-After` header, unparsed.
        retry_after: Option<&'a str>,
    },
    /// No answer: the connection failed, broke or timed out.
    NoAnswer,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The collector took the data.
    Delivered,
    /// Send it again after this delay.
    RetryAfter(Duration),
    /// Give up on this data.
    Drop(DropReason),
}

/// Why data was given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The collector refused it and would again (400, 413, 500, …).
    Refused(u16),
    /// Retries ran out (attempts or time) while the collector was unavailable.
    GaveUp,
}

/// Whether an answer's status is one the specification says to retry.
pub fn is_retryable(status: u16) -> bool {
    matches!(status, 429 | 502 | 503 | 504)
}

/// The decision after attempt number `attempt` (1 for the first) ended as `outcome`, `elapsed`
/// into an export allowed `budget`. `jitter` is a uniform number in `[0, 1)`.
pub fn decide(
    outcome: &Attempt<'_>,
    attempt: u32,
    elapsed: Duration,
    budget: Duration,
    policy: &RetryPolicy,
    jitter: f64,
    now: SystemTime,
) -> Decision {
    let retry_after = match outcome {
        Attempt::Answered { status, .. } if (200..300).contains(status) => {
            return Decision::Delivered;
        }
        Attempt::Answered {
            status,
            retry_after,
        } => {
            if !is_retryable(*status) {
                return Decision::Drop(DropReason::Refused(*status));
            }
            retry_after.and_then(|header| parse_retry_after(header, now))
        }
        Attempt::NoAnswer => None,
    };
    if attempt >= policy.max_attempts {
        return Decision::Drop(DropReason::GaveUp);
    }
    let delay = retry_after.unwrap_or_else(|| backoff(policy, attempt, jitter));
    if elapsed.saturating_add(delay) >= budget {
        return Decision::Drop(DropReason::GaveUp);
    }
    Decision::RetryAfter(delay)
}

/// Equal-jitter exponential backoff: half of `initial × 2^(attempt-1)` (capped) fixed, half random.
fn backoff(policy: &RetryPolicy, attempt: u32, jitter: f64) -> Duration {
    let jitter = if jitter.is_nan() {
        0.0
    } else {
        jitter.clamp(0.0, 1.0)
    };
    let exponent = attempt.saturating_sub(1).min(32);
    let grown = policy
        .initial_backoff
        .saturating_mul(1u32 << exponent.min(31))
        .min(policy.max_backoff);
    let half = grown / 2;
    half + half.mul_f64(jitter)
}

/// `Retry-After` as seconds or an HTTP date; `None` when it is neither.
pub fn parse_retry_after(header: &str, now: SystemTime) -> Option<Duration> {
    let header = header.trim();
    if let Ok(seconds) = header.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let when = httpdate::parse_http_date(header).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: RetryPolicy = RetryPolicy {
        initial_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_secs(2),
        max_attempts: 4,
    };
    const BUDGET: Duration = Duration::from_secs(30);

    fn answered(status: u16, retry_after: Option<&str>) -> Attempt<'_> {
        Attempt::Answered {
            status,
            retry_after,
        }
    }

    fn decide_now(outcome: &Attempt<'_>, attempt: u32, elapsed: Duration) -> Decision {
        decide(
            outcome,
            attempt,
            elapsed,
            BUDGET,
            &POLICY,
            0.0,
            SystemTime::UNIX_EPOCH,
        )
    }

    #[test]
    fn success_is_delivered_and_refusals_are_dropped_at_once() {
        assert_eq!(
            decide_now(&answered(200, None), 1, Duration::ZERO),
            Decision::Delivered
        );
        for status in [400, 401, 404, 413, 500] {
            assert_eq!(
                decide_now(&answered(status, None), 1, Duration::ZERO),
                Decision::Drop(DropReason::Refused(status)),
                "{status}"
            );
        }
    }

    #[test]
    fn throttling_and_unavailability_are_retried_with_growing_backoff() {
        for status in [429, 502, 503, 504] {
            assert_eq!(
                decide_now(&answered(status, None), 1, Duration::ZERO),
                Decision::RetryAfter(Duration::from_millis(50)),
                "{status}"
            );
        }
        assert_eq!(
            decide_now(&Attempt::NoAnswer, 3, Duration::ZERO),
            Decision::RetryAfter(Duration::from_millis(200))
        );
    }

    #[test]
    fn retry_after_is_honoured_in_seconds_and_as_a_date() {
        assert_eq!(
            decide_now(&answered(429, Some("7")), 1, Duration::ZERO),
            Decision::RetryAfter(Duration::from_secs(7))
        );
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:40 GMT", now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(parse_retry_after("soon", now), None);
        // An unreadable header falls back to the backoff.
        assert_eq!(
            decide_now(&answered(503, Some("soon")), 1, Duration::ZERO),
            Decision::RetryAfter(Duration::from_millis(50))
        );
    }

    #[test]
    fn retries_stop_at_the_attempt_cap_and_at_the_budget() {
        assert_eq!(
            decide_now(&answered(503, None), 4, Duration::ZERO),
            Decision::Drop(DropReason::GaveUp)
        );
        assert_eq!(
            decide_now(&answered(429, Some("40")), 1, Duration::ZERO),
            Decision::Drop(DropReason::GaveUp),
            "a Retry-After past the budget is not waited for"
        );
        assert_eq!(
            decide_now(&Attempt::NoAnswer, 1, Duration::from_secs(30)),
            Decision::Drop(DropReason::GaveUp)
        );
    }

    #[test]
    fn backoff_is_capped_and_jitter_stays_within_half_to_full() {
        let policy = RetryPolicy {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(8),
            max_attempts: 100,
        };
        assert_eq!(backoff(&policy, 1, 0.0), Duration::from_millis(500));
        assert_eq!(
            backoff(&policy, 2, 0.999_999),
            Duration::from_millis(1999) + Duration::from_nanos(999_000)
        );
        assert_eq!(backoff(&policy, 50, 0.0), Duration::from_secs(4));
        assert_eq!(backoff(&policy, 50, f64::NAN), Duration::from_secs(4));
    }
}
