//! When a failed tool call is re-sent, and the loop that does it.
//!
//! Retrying turns a transient fault (a server restarting, a dropped connection) into a success the
//! agent never sees, but re-sending is only safe when a duplicate cannot do harm. The rule here:
//!
//! - A **terminal** failure is never retried: it would fail the same way. Terminal means the
//!   caller's request was wrong (invalid params, unknown tool, arguments failing the schema) or
//!   the server answered deliberately (an upstream JSON-RPC error, a tool result with
//!   `isError: true`), and internal daemon errors.
//! - A **transient** failure that certainly never reached the server (it was not connected) is
//!   always safe to retry.
//! - A transient failure that **may have reached the server** (a timeout, the server exiting or the
//!   connection breaking while the call was pending) is re-sent only if the tool declares itself
//!   safe to repeat: MCP's `readOnlyHint` or `idempotentHint` annotation ([`crate::catalog::ToolHints::safe_to_resend`]).
//!   Otherwise the call might already have written a row or sent an email, and sending it again
//!   would do it twice.
//! - At most `max_attempts` attempts in total, spaced by exponential backoff with equal jitter
//!   ([`super::backoff`]).
//!
//! [`RetryPolicy::should_retry`] is that rule as a pure function; [`run_with_retries`] is the loop
//! around an attempt, sleeping on tokio's clock so tests run it with paused time. The caller maps
//! its errors to a [`FailureClass`]; for the daemon's `Error` that is: `ServerUnavailable` →
//! transient, not reached; `Timeout` and `ServerExited` → transient, may have reached; everything
//! else (`InvalidParams`, `UnknownServer`, `UnknownTool`, `InvalidArguments`, `InvalidSchema`,
//! `Upstream`, `Internal`) → terminal.

use std::future::Future;
use std::time::Duration;

use super::backoff::Backoff;

/// How many times, and how far apart, a failed call is attempted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in total, the first included (1 = never retry; 0 is treated as 1).
    pub max_attempts: u32,
    /// The delay before each retry; its attempt 0 is the delay before the second attempt.
    pub backoff: Backoff,
}

impl Default for RetryPolicy {
    /// 3 attempts, backoff [`Backoff::CALLS`] (500 ms ×2, capped at 10 s, equal jitter).
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 3,
            backoff: Backoff::CALLS,
        }
    }
}

/// What kind of failure an attempt ended in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    /// It might work if tried again.
    Transient {
        /// Whether the request may have been delivered before the failure (a timeout or a
        /// connection lost mid-call), so the server may have acted on it.
        may_have_reached_server: bool,
    },
    /// It will fail the same way again.
    Terminal,
}

impl RetryPolicy {
    /// After attempt number `attempt_number` (1 = the first) failed with `class`, how long to wait
    /// before the next attempt, or `None` to give up.
    ///
    /// `tool_is_safe_to_resend` is [`crate::catalog::ToolHints::safe_to_resend`] of the tool; `jitter` is a
    /// uniform random number in `[0, 1)`.
    pub fn should_retry(
        &self,
        attempt_number: u32,
        class: FailureClass,
        tool_is_safe_to_resend: bool,
        jitter: f64,
    ) -> Option<Duration> {
        let attempt_number = attempt_number.max(1);
        if attempt_number >= self.max_attempts {
            return None;
        }
        match class {
            FailureClass::Terminal => None,
            FailureClass::Transient {
                may_have_reached_server: true,
            } if !tool_is_safe_to_resend => None,
            FailureClass::Transient { .. } => Some(self.backoff.delay(attempt_number - 1, jitter)),
        }
    }
}

/// Runs `attempt` until it succeeds, fails in a way [`RetryPolicy::should_retry`] will not retry,
/// or runs out of attempts; sleeps (tokio's clock) between attempts.
///
/// `attempt` receives the attempt number, starting at 1. `classify` maps an error to its
/// [`FailureClass`], and `jitter` supplies one random number in `[0, 1)` per retry. Returns the
/// last outcome and how many attempts were made.
///
/// Cancel-safe in the sense that dropping the returned future stops between attempts or inside the
/// current one; there is no state to clean up here.
pub(crate) async fn run_with_retries<T, E, F, Fut>(
    policy: &RetryPolicy,
    safe_to_resend: bool,
    classify: impl Fn(&E) -> FailureClass,
    mut attempt: F,
    mut jitter: impl FnMut() -> f64,
) -> (Result<T, E>, u32)
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut attempt_number = 1;
    loop {
        let error = match attempt(attempt_number).await {
            Ok(value) => return (Ok(value), attempt_number),
            Err(error) => error,
        };
        let class = classify(&error);
        match policy.should_retry(attempt_number, class, safe_to_resend, jitter()) {
            Some(delay) => {
                tracing::debug!(
                    attempt = attempt_number,
                    ?class,
                    delay_ms = delay.as_millis() as u64,
                    "attempt failed; retrying"
                );
                tokio::time::sleep(delay).await;
                attempt_number += 1;
            }
            None => return (Err(error), attempt_number),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use tokio::time::Instant;

    use super::*;

    fn millis(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    const NOT_REACHED: FailureClass = FailureClass::Transient {
        may_have_reached_server: false,
    };
    const MAY_HAVE_REACHED: FailureClass = FailureClass::Transient {
        may_have_reached_server: true,
    };

    #[derive(Debug, PartialEq)]
    enum TestError {
        NotConnected,
        TimedOut,
        Rejected,
    }

    fn classify(error: &TestError) -> FailureClass {
        match error {
            TestError::NotConnected => NOT_REACHED,
            TestError::TimedOut => MAY_HAVE_REACHED,
            TestError::Rejected => FailureClass::Terminal,
        }
    }

    #[test]
    fn defaults() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.max_attempts, 3);
        assert_eq!(policy.backoff, Backoff::CALLS);
    }

    #[test]
    fn transient_not_reached_is_retried_with_growing_delays_up_to_max_attempts() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.should_retry(1, NOT_REACHED, false, 0.0),
            Some(millis(250))
        );
        assert_eq!(
            policy.should_retry(2, NOT_REACHED, false, 0.0),
            Some(millis(500))
        );
        assert_eq!(
            policy.should_retry(2, NOT_REACHED, false, 0.5),
            Some(millis(750))
        );
        assert_eq!(policy.should_retry(3, NOT_REACHED, false, 0.0), None);
        assert_eq!(policy.should_retry(u32::MAX, NOT_REACHED, true, 0.0), None);
    }

    #[test]
    fn may_have_reached_is_retried_only_for_tools_safe_to_resend() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.should_retry(1, MAY_HAVE_REACHED, false, 0.0), None);
        assert_eq!(
            policy.should_retry(1, MAY_HAVE_REACHED, true, 0.0),
            Some(millis(250))
        );
    }

    #[test]
    fn terminal_is_never_retried() {
        let policy = RetryPolicy::default();
        for safe in [false, true] {
            assert_eq!(
                policy.should_retry(1, FailureClass::Terminal, safe, 0.0),
                None
            );
        }
    }

    #[test]
    fn one_or_zero_max_attempts_never_retries() {
        for max_attempts in [0, 1] {
            let policy = RetryPolicy {
                max_attempts,
                ..RetryPolicy::default()
            };
            assert_eq!(policy.should_retry(1, NOT_REACHED, true, 0.0), None);
            // Attempt 0 is read as the first attempt.
            assert_eq!(policy.should_retry(0, NOT_REACHED, true, 0.0), None);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn success_on_the_first_attempt_does_not_wait() {
        let started = Instant::now();
        let (result, attempts) = run_with_retries(
            &RetryPolicy::default(),
            false,
            classify,
            |_| async { Ok::<_, TestError>("done") },
            || 0.0,
        )
        .await;
        assert_eq!(result, Ok("done"));
        assert_eq!(attempts, 1);
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn transient_failures_are_retried_and_virtual_time_is_the_backoff_sum() {
        let started = Instant::now();
        let seen = Cell::new(Vec::new());
        let (result, attempts) = run_with_retries(
            &RetryPolicy::default(),
            false,
            classify,
            |number| {
                let mut numbers = seen.take();
                numbers.push((number, started.elapsed()));
                seen.set(numbers);
                async move {
                    if number < 3 {
                        Err(TestError::NotConnected)
                    } else {
                        Ok(number)
                    }
                }
            },
            || 0.5,
        )
        .await;
        assert_eq!(result, Ok(3));
        assert_eq!(attempts, 3);
        // Jitter 0.5: 375 ms before the 2nd attempt, 750 ms before the 3rd.
        assert_eq!(
            seen.take(),
            [(1, millis(0)), (2, millis(375)), (3, millis(1_125))]
        );
        assert_eq!(started.elapsed(), millis(1_125));
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_after_max_attempts_with_the_last_error() {
        let started = Instant::now();
        let mut jitters = [0.0, 1.0].into_iter();
        let (result, attempts) = run_with_retries(
            &RetryPolicy::default(),
            true,
            classify,
            |_| async { Err::<(), _>(TestError::TimedOut) },
            || jitters.next().unwrap_or(0.0),
        )
        .await;
        assert_eq!(result, Err(TestError::TimedOut));
        assert_eq!(attempts, 3);
        // 250 ms (jitter 0) + 1 s (jitter 1); no sleep after the last attempt.
        assert_eq!(started.elapsed(), millis(1_250));
    }

    #[tokio::test(start_paused = true)]
    async fn a_tool_unsafe_to_resend_gets_exactly_one_attempt_after_it_may_have_reached() {
        let started = Instant::now();
        let (result, attempts) = run_with_retries(
            &RetryPolicy::default(),
            false,
            classify,
            |_| async { Err::<(), _>(TestError::TimedOut) },
            || 0.0,
        )
        .await;
        assert_eq!(result, Err(TestError::TimedOut));
        assert_eq!(attempts, 1);
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_terminal_failure_stops_the_loop_at_once() {
        let started = Instant::now();
        let calls = Cell::new(0);
        let (result, attempts) = run_with_retries(
            &RetryPolicy::default(),
            true,
            classify,
            |number| {
                calls.set(calls.get() + 1);
                async move {
                    if number == 1 {
                        Err::<(), _>(TestError::NotConnected)
                    } else {
                        Err(TestError::Rejected)
                    }
                }
            },
            || 0.0,
        )
        .await;
        assert_eq!(result, Err(TestError::Rejected));
        assert_eq!(attempts, 2);
        assert_eq!(calls.get(), 2);
        assert_eq!(started.elapsed(), millis(250));
    }
}
