//! A per-server concurrency limit with a bounded wait queue: the bulkhead.
//!
//! One slow or stuck server must not absorb every caller of the daemon, and a server that can
//! handle four calls at once should not be sent forty. The bulkhead pattern (Hystrix's
//! semaphore isolation, named after a ship's watertight compartments) gives each server its own
//! limit of `max_concurrent` calls in flight. Callers beyond it wait in a FIFO queue (a tokio
//! [`Semaphore`], which is fair), but the queue itself is bounded by `max_queued`: once it is full,
//! further callers are turned away at once with [`Busy`] and a hint of when to come back, instead of
//! piling up without bound while their own deadlines run out. A waiting caller that is cancelled
//! (its future dropped, for example by a timeout) leaves the queue immediately.
//!
//! The retry hint is an estimate: how long a call holds its permit, times the number of "rounds" of
//! `max_concurrent` calls ahead of a newcomer. How long a call holds is the larger of a moving
//! average of finished calls' holds and the mean age of the calls in flight: after quick calls, slow
//! ones filling every slot must not be announced as a few milliseconds away. It is read from tokio's
//! clock, so tests control it with paused time.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::time::Instant;

/// The hold time assumed before any call has finished: the retry hint's starting point.
pub const DEFAULT_HOLD_ESTIMATE: Duration = Duration::from_secs(1);

/// Marks "no hold time measured yet" in the moving average.
const NO_SAMPLE: u64 = u64::MAX;

/// A per-server concurrency limit with a bounded FIFO wait queue.
#[derive(Debug)]
pub struct Bulkhead {
    /// Fair (FIFO) permits for calls in flight. Behind an `Arc` so permits are owned and can move
    /// into spawned tasks.
    semaphore: Arc<Semaphore>,
    max_concurrent: usize,
    max_queued: usize,
    /// Callers waiting for a permit. An atomic, not part of the semaphore, because tokio's
    /// semaphore does not report its waiters and we must refuse before joining its queue.
    queued: AtomicUsize,
    /// Moving average of permit hold times in nanoseconds, shared with the permits that update it.
    mean_hold_nanos: Arc<AtomicU64>,
    /// Where the clock of `in_flight_since_nanos` starts.
    origin: Instant,
    /// The sum, over the permits held now, of when each was taken (nanoseconds after `origin`):
    /// with their count, the mean age of the calls in flight. Added and subtracted exactly, so
    /// wrapping arithmetic is exact too.
    in_flight_since_nanos: Arc<AtomicU64>,
}

/// Permission to make one call; the slot is given back when it is dropped.
#[derive(Debug)]
pub struct BulkheadPermit {
    _permit: OwnedSemaphorePermit,
    acquired_at: Instant,
    mean_hold_nanos: Arc<AtomicU64>,
    /// `acquired_at` as counted in the bulkhead's `in_flight_since_nanos`.
    since_nanos: u64,
    in_flight_since_nanos: Arc<AtomicU64>,
}

impl Drop for BulkheadPermit {
    fn drop(&mut self) {
        self.in_flight_since_nanos
            .fetch_sub(self.since_nanos, Ordering::Relaxed);
        let sample = u64::try_from(self.acquired_at.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        // A racy read-modify-write would only blur an estimate, but `fetch_update` is as cheap.
        let _ = self
            .mean_hold_nanos
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |mean| {
                Some(moving_average(mean, sample))
            });
    }
}

/// The caller was turned away because the server's queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "server busy: {in_flight} calls in flight and {queued} waiting (the limit); retry in about {} ms",
    retry_after_hint.as_millis()
)]
pub struct Busy {
    /// Calls holding a permit.
    pub in_flight: usize,
    /// Callers waiting for one.
    pub queued: usize,
    /// Roughly when a retry would find room in the queue.
    pub retry_after_hint: Duration,
}

impl Bulkhead {
    /// A bulkhead allowing `max_concurrent` calls at once (at least 1, at most tokio's
    /// `Semaphore::MAX_PERMITS`) and `max_queued` waiting callers (0: never wait).
    pub fn new(max_concurrent: usize, max_queued: usize) -> Bulkhead {
        let max_concurrent = max_concurrent.clamp(1, Semaphore::MAX_PERMITS);
        Bulkhead {
            semaphore: Arc::new(Semaphore::new(max_concurrent)),
            max_concurrent,
            max_queued,
            queued: AtomicUsize::new(0),
            mean_hold_nanos: Arc::new(AtomicU64::new(NO_SAMPLE)),
            origin: Instant::now(),
            in_flight_since_nanos: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The concurrency limit.
    pub fn max_concurrent(&self) -> usize {
        self.max_concurrent
    }

    /// The queue bound.
    pub fn max_queued(&self) -> usize {
        self.max_queued
    }

    /// Takes a permit: at once if one is free, after waiting in FIFO order if the queue has room,
    /// or fails at once with [`Busy`] if it does not.
    ///
    /// Cancel-safe: dropping the future while it waits removes the caller from the queue.
    pub async fn acquire(&self) -> Result<BulkheadPermit, Busy> {
        let permit = match Arc::clone(&self.semaphore).try_acquire_owned() {
            Ok(permit) => permit,
            Err(TryAcquireError::NoPermits) => {
                let _slot = self.join_queue()?;
                Arc::clone(&self.semaphore)
                    .acquire_owned()
                    .await
                    .expect("the bulkhead never closes its semaphore")
            }
            Err(TryAcquireError::Closed) => unreachable!("the bulkhead never closes its semaphore"),
        };
        let acquired_at = Instant::now();
        let since_nanos = nanos(acquired_at.duration_since(self.origin));
        self.in_flight_since_nanos
            .fetch_add(since_nanos, Ordering::Relaxed);
        Ok(BulkheadPermit {
            _permit: permit,
            acquired_at,
            mean_hold_nanos: Arc::clone(&self.mean_hold_nanos),
            since_nanos,
            in_flight_since_nanos: Arc::clone(&self.in_flight_since_nanos),
        })
    }

    /// `(in_flight, queued)` for the health report. A caller that was just handed a permit but has
    /// not run yet may briefly count in both.
    pub fn snapshot(&self) -> (usize, usize) {
        let in_flight = self.max_concurrent - self.semaphore.available_permits();
        (in_flight, self.queued.load(Ordering::Relaxed))
    }

    /// The current moving average of how long calls hold a permit, or [`DEFAULT_HOLD_ESTIMATE`]
    /// before any has been measured.
    pub fn mean_hold(&self) -> Duration {
        match self.mean_hold_nanos.load(Ordering::Relaxed) {
            NO_SAMPLE => DEFAULT_HOLD_ESTIMATE,
            nanos => Duration::from_nanos(nanos),
        }
    }

    /// How long a call is expected to hold its permit: the moving average of finished holds, or
    /// the mean age of the calls in flight when they have already held longer than that.
    pub fn hold_estimate(&self) -> Duration {
        let in_flight = self.snapshot().0 as u64;
        let mean_age = self
            .in_flight_since_nanos
            .load(Ordering::Relaxed)
            .checked_div(in_flight)
            .map_or(Duration::ZERO, |since| {
                let now = nanos(Instant::now().duration_since(self.origin));
                Duration::from_nanos(now.saturating_sub(since))
            });
        self.mean_hold().max(mean_age)
    }

    /// Reserves a queue place, or reports [`Busy`] if the queue is full.
    fn join_queue(&self) -> Result<QueueSlot<'_>, Busy> {
        self.queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                (queued < self.max_queued).then_some(queued + 1)
            })
            .map(|_| QueueSlot {
                queued: &self.queued,
            })
            .map_err(|queued| {
                let in_flight = self.snapshot().0;
                // Calls ahead of a newcomer: everyone queued, served `max_concurrent` at a time.
                let rounds = (queued + 1).div_ceil(self.max_concurrent);
                let rounds = u32::try_from(rounds).unwrap_or(u32::MAX);
                Busy {
                    in_flight,
                    queued,
                    retry_after_hint: self.hold_estimate().saturating_mul(rounds),
                }
            })
    }
}

/// A place in the wait queue, given back when dropped: on success and on cancellation alike.
struct QueueSlot<'a> {
    queued: &'a AtomicUsize,
}

impl Drop for QueueSlot<'_> {
    fn drop(&mut self) {
        self.queued.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `duration` in nanoseconds, saturating (585 years).
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// An exponential moving average weighting the new sample by a quarter.
fn moving_average(mean: u64, sample: u64) -> u64 {
    if mean == NO_SAMPLE {
        sample
    } else if sample >= mean {
        mean + (sample - mean) / 4
    } else {
        mean - (mean - sample) / 4
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    /// Yields until `bulkhead` has `queued` waiters (the spawned tasks got to run).
    async fn wait_for_queued(bulkhead: &Bulkhead, queued: usize) {
        while bulkhead.snapshot().1 != queued {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn admits_up_to_max_concurrent_at_once() {
        let bulkhead = Bulkhead::new(3, 0);
        let first = bulkhead.acquire().await.expect("free");
        let second = bulkhead.acquire().await.expect("free");
        let third = bulkhead.acquire().await.expect("free");
        assert_eq!(bulkhead.snapshot(), (3, 0));
        // No queue: the fourth is refused at once.
        let busy = bulkhead.acquire().await.expect_err("full");
        assert_eq!(
            busy,
            Busy {
                in_flight: 3,
                queued: 0,
                retry_after_hint: DEFAULT_HOLD_ESTIMATE
            }
        );
        drop((first, second));
        assert_eq!(bulkhead.snapshot(), (1, 0));
        drop(third);
        assert_eq!(bulkhead.snapshot(), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn waiters_are_served_in_fifo_order() {
        let bulkhead = Arc::new(Bulkhead::new(1, 3));
        let held = bulkhead.acquire().await.expect("free");
        let served = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for id in 0..3 {
            let task_bulkhead = Arc::clone(&bulkhead);
            let served = Arc::clone(&served);
            tasks.push(tokio::spawn(async move {
                let _permit = task_bulkhead.acquire().await.expect("queued");
                served.lock().unwrap().push(id);
                tokio::time::sleep(secs(1)).await;
            }));
            wait_for_queued(&bulkhead, id + 1).await;
        }
        assert_eq!(bulkhead.snapshot(), (1, 3));
        drop(held);
        for task in tasks {
            task.await.expect("task");
        }
        assert_eq!(*served.lock().unwrap(), [0, 1, 2]);
        assert_eq!(bulkhead.snapshot(), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_queue_refuses_at_once_with_counts() {
        let bulkhead = Arc::new(Bulkhead::new(2, 1));
        let _first = bulkhead.acquire().await.expect("free");
        let _second = bulkhead.acquire().await.expect("free");
        let waiter = tokio::spawn({
            let bulkhead = Arc::clone(&bulkhead);
            async move { bulkhead.acquire().await.map(drop) }
        });
        wait_for_queued(&bulkhead, 1).await;

        let started = Instant::now();
        let busy = bulkhead.acquire().await.expect_err("queue full");
        assert_eq!(started.elapsed(), Duration::ZERO);
        assert_eq!(
            busy,
            Busy {
                in_flight: 2,
                queued: 1,
                retry_after_hint: DEFAULT_HOLD_ESTIMATE
            }
        );
        assert_eq!(
            busy.to_string(),
            "server busy: 2 calls in flight and 1 waiting (the limit); retry in about 1000 ms"
        );
        waiter.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_waiter_leaves_the_queue() {
        let bulkhead = Bulkhead::new(1, 1);
        let held = bulkhead.acquire().await.expect("free");

        // The waiter gives up after 2 s (paused time auto-advances): its future is dropped.
        let gave_up = tokio::time::timeout(secs(2), bulkhead.acquire()).await;
        assert!(gave_up.is_err());
        assert_eq!(bulkhead.snapshot(), (1, 0));

        // Its place is free again: a new caller can queue, and gets the permit when it is freed.
        let waiter = tokio::time::timeout(secs(2), bulkhead.acquire());
        let release = async {
            tokio::time::sleep(secs(1)).await;
            drop(held);
        };
        let (acquired, ()) = tokio::join!(waiter, release);
        let permit = acquired.expect("no timeout").expect("queued");
        assert_eq!(bulkhead.snapshot(), (1, 0));
        drop(permit);
        assert_eq!(bulkhead.snapshot(), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn an_aborted_waiting_task_leaves_the_queue() {
        let bulkhead = Arc::new(Bulkhead::new(1, 2));
        let _held = bulkhead.acquire().await.expect("free");
        let waiter = tokio::spawn({
            let bulkhead = Arc::clone(&bulkhead);
            async move { bulkhead.acquire().await.map(drop) }
        });
        wait_for_queued(&bulkhead, 1).await;
        waiter.abort();
        assert!(waiter.await.expect_err("aborted").is_cancelled());
        assert_eq!(bulkhead.snapshot(), (1, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn the_retry_hint_follows_measured_hold_times() {
        let bulkhead = Arc::new(Bulkhead::new(2, 2));
        let first = bulkhead.acquire().await.expect("free");
        let second = bulkhead.acquire().await.expect("free");
        tokio::time::advance(secs(4)).await;
        drop(first);
        assert_eq!(bulkhead.mean_hold(), secs(4));
        let third = bulkhead.acquire().await.expect("free");

        let mut waiters = Vec::new();
        for queued in 1..=2 {
            let task_bulkhead = Arc::clone(&bulkhead);
            waiters.push(tokio::spawn(async move {
                task_bulkhead.acquire().await.map(drop)
            }));
            wait_for_queued(&bulkhead, queued).await;
        }
        // Two waiting plus the newcomer, served two at a time: two rounds of 4 s.
        let busy = bulkhead.acquire().await.expect_err("queue full");
        assert_eq!(
            busy,
            Busy {
                in_flight: 2,
                queued: 2,
                retry_after_hint: secs(8)
            }
        );

        // A short hold pulls the average down by a quarter of the difference: 4 s → 3 s.
        drop(third);
        assert_eq!(bulkhead.mean_hold(), secs(3));
        drop(second);
        for waiter in waiters {
            waiter.await.expect("task").expect("queued");
        }
    }

    /// The issue: quick calls set the mean hold to a few milliseconds; then 3 s calls filled
    /// the slots and every refusal said "retry in about 1–18 ms" for seconds on end.
    #[tokio::test(start_paused = true)]
    async fn the_retry_hint_counts_how_long_the_calls_in_flight_have_held() {
        let bulkhead = Bulkhead::new(2, 0);
        let quick = bulkhead.acquire().await.expect("free");
        tokio::time::advance(Duration::from_millis(2)).await;
        drop(quick);
        assert_eq!(bulkhead.mean_hold(), Duration::from_millis(2));
        let _slow = bulkhead.acquire().await.expect("free");
        let _slower = bulkhead.acquire().await.expect("free");
        tokio::time::advance(secs(3)).await;
        let busy = bulkhead.acquire().await.expect_err("full");
        assert_eq!(busy.retry_after_hint, secs(3));
        assert_eq!(bulkhead.hold_estimate(), secs(3));
    }

    #[test]
    fn degenerate_limits_are_clamped() {
        let bulkhead = Bulkhead::new(0, 0);
        assert_eq!(bulkhead.max_concurrent(), 1);
        assert_eq!(bulkhead.snapshot(), (0, 0));
    }

    #[test]
    fn moving_average_weights_new_samples_by_a_quarter() {
        assert_eq!(moving_average(NO_SAMPLE, 100), 100);
        assert_eq!(moving_average(100, 500), 200);
        assert_eq!(moving_average(500, 100), 400);
        assert_eq!(moving_average(7, 7), 7);
    }
}
