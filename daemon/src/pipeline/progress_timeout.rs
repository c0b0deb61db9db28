//! `callTool {resetTimeoutOnProgress: true, maxTotalTimeoutMs?}`: MCP's own semantics for a call
//! that reports progress. The call's timeout (the caller's `timeoutMs`, else the server's) becomes
//! an idle timeout, restarted by each progress notification the server sends for this call; the
//! call's deadline is then arrival plus the most it may take in all (`maxTotalTimeoutMs`, default
//! and at most the protocol's maximum), which still bounds every wait, so every accepted request
//! gets one answer by then.
//!
//! The notifications reach the call through its event relay (its ticket's
//! [`crate::provider::EventRelay`]), whose progress counter [`bounded`] watches: the calls service
//! gives such a call a buffer even without a `progressId` (an unlisted one no poller can read).
//! Log messages do not restart the timeout: they name no request.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tool_cli_protocol::MAX_TIMEOUT_MS;

use crate::error::Error;

/// The most a call with `resetTimeoutOnProgress` may take in all, from its params: `None` for a
/// call without it. `maxTotalTimeoutMs` without the flag, or 0, is refused: it would mean
/// nothing, and the caller surely meant something.
pub(crate) fn max_total(
    reset: Option<bool>,
    max_total_ms: Option<u64>,
) -> Result<Option<Duration>, Error> {
    match (reset, max_total_ms) {
        (Some(true), None) => Ok(Some(Duration::from_millis(MAX_TIMEOUT_MS))),
        (Some(true), Some(0)) => Err(Error::invalid_params(
            "callTool",
            "maxTotalTimeoutMs must be a positive number of milliseconds",
        )),
        (Some(true), Some(ms)) => Ok(Some(Duration::from_millis(ms.min(MAX_TIMEOUT_MS)))),
        (_, Some(_)) => Err(Error::invalid_params(
            "callTool",
            "maxTotalTimeoutMs applies only with \"resetTimeoutOnProgress\": true; add it, or \
             leave maxTotalTimeoutMs out and give the call a larger timeoutMs",
        )),
        (_, None) => Ok(None),
    }
}

/// How a bounded call ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Bounded<T> {
    /// It answered in time.
    Done(T),
    /// No progress for the idle timeout.
    Idle,
    /// The deadline (the most it may take in all) came first.
    Deadline,
}

/// Runs `work` until it answers, `idle` passes without a progress notification (`beats`
/// changing), or `deadline` comes, whichever is first. Without `beats` (no events buffer) the
/// idle timeout is never restarted.
pub(crate) async fn bounded<F: Future>(
    work: F,
    idle: Duration,
    deadline: Instant,
    mut beats: Option<watch::Receiver<u64>>,
) -> Bounded<F::Output> {
    tokio::pin!(work);
    let mut idle_until = Instant::now() + idle;
    loop {
        let beat = async {
            match beats.as_mut() {
                Some(beats) => beats.changed().await.is_ok(),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            output = &mut work => return Bounded::Done(output),
            () = tokio::time::sleep_until(deadline), if deadline <= idle_until => {
                return Bounded::Deadline;
            }
            () = tokio::time::sleep_until(idle_until), if idle_until < deadline => {
                return Bounded::Idle;
            }
            alive = beat => {
                if alive {
                    idle_until = Instant::now() + idle;
                } else {
                    // The buffer is gone: nothing will restart the timeout any more.
                    beats = None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_params_decide_the_most_a_call_may_take() {
        assert_eq!(max_total(None, None).unwrap(), None);
        assert_eq!(max_total(Some(false), None).unwrap(), None);
        assert_eq!(
            max_total(Some(true), None).unwrap(),
            Some(Duration::from_millis(MAX_TIMEOUT_MS))
        );
        assert_eq!(
            max_total(Some(true), Some(5_000)).unwrap(),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            max_total(Some(true), Some(10 * MAX_TIMEOUT_MS)).unwrap(),
            Some(Duration::from_millis(MAX_TIMEOUT_MS)),
            "clamped like timeoutMs"
        );
        let message = max_total(None, Some(5_000)).unwrap_err().to_string();
        assert!(message.contains("applies only with"), "{message}");
        assert!(max_total(Some(false), Some(5_000)).is_err());
        assert!(max_total(Some(true), Some(0)).is_err());
    }

    /// A job of `steps` steps of `step` each, beating after each one.
    async fn job(steps: u32, step: Duration, beat: watch::Sender<u64>) -> &'static str {
        for n in 1..=steps {
            tokio::time::sleep(step).await;
            beat.send_replace(u64::from(n));
        }
        "finished"
    }

    #[tokio::test(start_paused = true)]
    async fn progress_restarts_the_idle_timeout() {
        let (beat, beats) = watch::channel(0);
        let deadline = Instant::now() + Duration::from_secs(300);
        // Four steps of 2 s against an idle timeout of 3 s: 8 s in all, and it finishes.
        let outcome = bounded(
            job(4, Duration::from_secs(2), beat),
            Duration::from_secs(3),
            deadline,
            Some(beats),
        )
        .await;
        assert_eq!(outcome, Bounded::Done("finished"));
    }

    #[tokio::test(start_paused = true)]
    async fn silence_ends_the_call_at_the_idle_timeout() {
        let (beat, beats) = watch::channel(0);
        let started = Instant::now();
        // Steps of 4 s against an idle timeout of 3 s: the first silence is too long.
        let outcome = bounded(
            job(4, Duration::from_secs(4), beat),
            Duration::from_secs(3),
            started + Duration::from_secs(300),
            Some(beats),
        )
        .await;
        assert_eq!(outcome, Bounded::Idle);
        assert_eq!(started.elapsed(), Duration::from_secs(3));
        // Without a buffer nothing restarts it.
        let (beat, _) = watch::channel(0);
        let outcome = bounded(
            job(4, Duration::from_secs(2), beat),
            Duration::from_secs(3),
            Instant::now() + Duration::from_secs(300),
            None,
        )
        .await;
        assert_eq!(outcome, Bounded::Idle);
    }

    #[tokio::test(start_paused = true)]
    async fn the_deadline_bounds_a_call_that_keeps_reporting() {
        let (beat, beats) = watch::channel(0);
        let started = Instant::now();
        let outcome = bounded(
            job(100, Duration::from_secs(1), beat),
            Duration::from_secs(3),
            started + Duration::from_secs(10),
            Some(beats),
        )
        .await;
        assert_eq!(outcome, Bounded::Deadline);
        assert_eq!(started.elapsed(), Duration::from_secs(10));
    }
}
