//! A circuit breaker per server: stop sending calls to a server that keeps failing, then probe it.
//!
//! When a server is unhealthy (hung, crashing, overloaded), every call to it waits for a timeout
//! and then fails; callers pile up and the agent learns nothing useful. A breaker notices the
//! failure rate and fails fast instead, for a cooldown, so the server gets room to recover and
//! callers get an immediate, explicit answer with a `retry_after`. This is the Hystrix-style
//! breaker (Netflix Hystrix, "How it Works: Circuit Breaker"):
//!
//! - **Closed:** calls flow. Outcomes are counted in a sliding time window of buckets (Hystrix's
//!   rolling statistical window). When the window holds at least `min_calls` calls and at least
//!   `failure_ratio` of them failed, the breaker opens. Requiring a minimum volume keeps one unlucky
//!   call on an idle server from tripping it.
//! - **Open { until }:** every call is refused at once with [`Refusal::Open`] until the cooldown
//!   ends. The cooldown starts at `cooldown.base` and grows by `cooldown.factor` each time the
//!   breaker re-opens without having closed in between (up to `cooldown.max`), so a server that
//!   stays broken is probed less and less often.
//! - **HalfOpen:** after the cooldown, exactly one call is let through as a probe; others are
//!   refused with [`Refusal::ProbeInFlight`] while it runs. A successful probe closes the breaker,
//!   clears the window and resets the cooldown to its base; a failed probe re-opens it with a longer
//!   cooldown.
//!
//! **What counts as a failure is the caller's decision**, and only failures that say the *server*
//! is unhealthy should be recorded as [`Outcome::Failure`]: timeouts, the server exiting or its
//! transport breaking mid-call. A call the daemon refused before sending (validation errors,
//! unknown tool) must not be recorded at all, and a tool result with `isError: true` or an upstream
//! JSON-RPC error is the server answering properly, so it is an [`Outcome::Success`] for the
//! breaker: counting a bad SQL query as server failure would let one agent's mistakes cut everyone
//! off from a healthy server.
//!
//! [`CircuitBreaker`] is a plain struct with pure, clock-injected methods (`now` is a
//! `tokio::time::Instant`, so tests drive it with paused time). The caller shares it as
//! `std::sync::Mutex<CircuitBreaker>`: every method is a few arithmetic operations and the lock is
//! never held across an `.await` (acquire, drop the guard, await the call, lock again to record), so
//! a std mutex is cheaper than tokio's async one and cannot deadlock the executor (the tokio docs
//! recommend exactly this for short critical sections).

use std::time::Duration;

use tokio::time::Instant;

use super::backoff::Backoff;

/// How a breaker decides to open and for how long.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerConfig {
    /// The sliding window outcomes are counted in.
    pub window: Duration,
    /// How many buckets the window is split into. The window slides one bucket at a time, so
    /// outcomes are forgotten between `window × (buckets − 1) / buckets` and `window` after they
    /// happened. More buckets track the window more precisely; memory is one small slot per bucket.
    pub buckets: u32,
    /// The fewest calls in the window before the failure ratio is considered at all.
    pub min_calls: u32,
    /// The failure ratio (failures / calls in the window) at or above which the breaker opens.
    pub failure_ratio: f64,
    /// The open period: `base` at the first opening, growing by `factor` at each re-opening after a
    /// failed probe, capped at `max`, back to `base` once a probe succeeds. No jitter: there is one
    /// breaker per server, so there is no herd of breakers to spread apart.
    pub cooldown: Backoff,
    /// How long a probe may stay unanswered before it is presumed lost and another call may probe.
    /// A safety net for a caller that drops its probe without recording or abandoning it; it should
    /// be at least the longest call timeout.
    pub probe_timeout: Duration,
}

impl Default for BreakerConfig {
    /// A 30 s window of 10 buckets, at least 5 calls, 50 % failures; cooldown 5 s ×2 up to 5 min;
    /// probes presumed lost after the protocol's longest call timeout (5 min).
    fn default() -> BreakerConfig {
        BreakerConfig {
            window: Duration::from_secs(30),
            buckets: 10,
            min_calls: 5,
            failure_ratio: 0.5,
            cooldown: Backoff {
                base: Duration::from_secs(5),
                factor: 2.0,
                max: Duration::from_secs(300),
            },
            probe_timeout: Duration::from_millis(tool_cli_protocol::MAX_TIMEOUT_MS),
        }
    }
}

/// How a call went, as far as the server's health is concerned (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The server answered (including `isError` results and JSON-RPC errors).
    Success,
    /// The server did not answer properly: timeout, exit, broken transport.
    Failure,
}

/// Permission to make one call, returned by [`CircuitBreaker::try_acquire`] and handed back to
/// [`CircuitBreaker::record`] or [`CircuitBreaker::abandon`].
///
/// It remembers which breaker period it was issued in, so a slow call that finishes after the
/// breaker changed state (opened, closed again) cannot skew the new period.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "record the outcome of the call, or abandon it"]
pub struct Admission {
    probe: bool,
    epoch: u64,
}

impl Admission {
    /// Whether this call is the half-open probe whose outcome closes or re-opens the breaker.
    pub fn is_probe(&self) -> bool {
        self.probe
    }
}

/// Why a call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The breaker is open.
    #[error("circuit open after repeated failures; retry in {} ms", retry_after.as_millis())]
    Open {
        /// When the cooldown ends and a probe will be allowed.
        until: Instant,
        /// `until − now`: how long the caller should wait.
        retry_after: Duration,
    },
    /// The breaker is half-open and its one probe call is still running.
    #[error("circuit half-open and its probe call is still running; retry shortly")]
    ProbeInFlight,
}

/// The breaker's state for the health report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls flow.
    Closed,
    /// Calls are refused until `until`.
    Open {
        /// When the cooldown ends.
        until: Instant,
    },
    /// The cooldown is over: one probe call decides.
    HalfOpen {
        /// Whether the probe is running now (otherwise the next call becomes the probe).
        probe_in_flight: bool,
    },
}

/// Successes and failures in the current window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WindowCounts {
    /// Calls recorded as [`Outcome::Success`].
    pub successes: u32,
    /// Calls recorded as [`Outcome::Failure`].
    pub failures: u32,
}

impl WindowCounts {
    /// All recorded calls.
    pub fn calls(&self) -> u32 {
        self.successes.saturating_add(self.failures)
    }
}

/// One bucket of the sliding window: the counts of the bucket with absolute index `index`.
#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    index: u64,
    counts: WindowCounts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed,
    Open { until: Instant },
    HalfOpen { probe_started: Option<Instant> },
}

/// A circuit breaker for one server (see the module docs). Wrap it in a `std::sync::Mutex`.
#[derive(Debug, Clone)]
pub struct CircuitBreaker {
    config: BreakerConfig,
    state: State,
    /// Bumped at every state change and every new probe; admissions from an older epoch are stale.
    epoch: u64,
    /// Openings since the breaker last closed: the cooldown's backoff attempt number.
    reopenings: u32,
    /// The time bucket indexes count from.
    origin: Instant,
    bucket_width: Duration,
    /// A ring of `config.buckets` slots; slot `i % len` holds bucket `i` if it is recent.
    buckets: Vec<Bucket>,
}

impl CircuitBreaker {
    /// A closed breaker. `now` anchors its time buckets. A `buckets` of 0 is treated as 1, and a
    /// zero `window` as one nanosecond (a window that forgets almost at once).
    pub fn new(config: BreakerConfig, now: Instant) -> CircuitBreaker {
        let buckets = config.buckets.max(1);
        let bucket_width = (config.window / buckets).max(Duration::from_nanos(1));
        CircuitBreaker {
            config,
            state: State::Closed,
            epoch: 0,
            reopenings: 0,
            origin: now,
            bucket_width,
            buckets: vec![Bucket::default(); buckets as usize],
        }
    }

    /// The configuration.
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    /// Asks to make a call at `now`.
    ///
    /// Closed: admitted. Open: refused until the cooldown ends, after which the first caller is
    /// admitted as the probe and the breaker is half-open. Half-open: refused while the probe runs
    /// (unless it has been silent for longer than `probe_timeout`, then the caller replaces it).
    pub fn try_acquire(&mut self, now: Instant) -> Result<Admission, Refusal> {
        match self.state {
            State::Closed => Ok(Admission {
                probe: false,
                epoch: self.epoch,
            }),
            State::Open { until } if now < until => Err(Refusal::Open {
                until,
                retry_after: until - now,
            }),
            State::HalfOpen {
                probe_started: Some(started),
            } if now.saturating_duration_since(started) < self.config.probe_timeout => {
                Err(Refusal::ProbeInFlight)
            }
            State::Open { .. } | State::HalfOpen { .. } => {
                self.epoch += 1;
                self.state = State::HalfOpen {
                    probe_started: Some(now),
                };
                Ok(Admission {
                    probe: true,
                    epoch: self.epoch,
                })
            }
        }
    }

    /// Records how an admitted call went.
    ///
    /// While closed, the outcome joins the window and may open the breaker. For the probe,
    /// success closes the breaker (window cleared, cooldown back to base) and failure re-opens it
    /// with a longer cooldown. Outcomes of stale admissions (issued before the last state change)
    /// are ignored.
    pub fn record(&mut self, admission: Admission, outcome: Outcome, now: Instant) {
        if admission.epoch != self.epoch {
            return;
        }
        match (self.state, admission.probe) {
            (State::Closed, false) => {
                self.count(outcome, now);
                if self.should_open(now) {
                    self.open(now);
                }
            }
            (State::HalfOpen { .. }, true) => match outcome {
                Outcome::Success => self.close(),
                Outcome::Failure => self.open(now),
            },
            _ => {}
        }
    }

    /// Gives back an admission whose call ended without saying anything about the server's
    /// health: it was cancelled, or refused by a later stage before reaching the server. An
    /// abandoned probe lets the next caller probe at once; other admissions change nothing.
    pub fn abandon(&mut self, admission: Admission) {
        if admission.probe
            && admission.epoch == self.epoch
            && matches!(self.state, State::HalfOpen { .. })
        {
            self.state = State::HalfOpen {
                probe_started: None,
            };
        }
    }

    /// The state at `now`, for the health report. An open breaker whose cooldown has ended reports
    /// half-open (the next call would be the probe), and a probe silent for longer than
    /// `probe_timeout` is reported as not in flight.
    pub fn state(&self, now: Instant) -> BreakerState {
        match self.state {
            State::Closed => BreakerState::Closed,
            State::Open { until } if now < until => BreakerState::Open { until },
            State::Open { .. } => BreakerState::HalfOpen {
                probe_in_flight: false,
            },
            State::HalfOpen { probe_started } => BreakerState::HalfOpen {
                probe_in_flight: probe_started.is_some_and(|started| {
                    now.saturating_duration_since(started) < self.config.probe_timeout
                }),
            },
        }
    }

    /// The outcomes counted in the window ending at `now` (empty unless closed: opening clears it).
    pub fn window_counts(&self, now: Instant) -> WindowCounts {
        let current = self.bucket_index(now);
        let span = self.buckets.len() as u64;
        self.buckets
            .iter()
            .filter(|bucket| bucket.index <= current && current - bucket.index < span)
            .fold(WindowCounts::default(), |total, bucket| WindowCounts {
                successes: total.successes.saturating_add(bucket.counts.successes),
                failures: total.failures.saturating_add(bucket.counts.failures),
            })
    }

    fn bucket_index(&self, now: Instant) -> u64 {
        let elapsed = now.saturating_duration_since(self.origin).as_nanos();
        u64::try_from(elapsed / self.bucket_width.as_nanos()).unwrap_or(u64::MAX)
    }

    fn count(&mut self, outcome: Outcome, now: Instant) {
        let index = self.bucket_index(now);
        let slot = (index % self.buckets.len() as u64) as usize;
        let bucket = &mut self.buckets[slot];
        if bucket.index != index {
            *bucket = Bucket {
                index,
                counts: WindowCounts::default(),
            };
        }
        match outcome {
            Outcome::Success => bucket.counts.successes = bucket.counts.successes.saturating_add(1),
            Outcome::Failure => bucket.counts.failures = bucket.counts.failures.saturating_add(1),
        }
    }

    fn should_open(&self, now: Instant) -> bool {
        let counts = self.window_counts(now);
        let calls = counts.calls();
        calls > 0
            && calls >= self.config.min_calls
            && f64::from(counts.failures) / f64::from(calls) >= self.config.failure_ratio
    }

    fn open(&mut self, now: Instant) {
        let cooldown = self.config.cooldown.exponential(self.reopenings);
        self.reopenings = self.reopenings.saturating_add(1);
        self.epoch += 1;
        self.state = State::Open {
            until: now + cooldown,
        };
        self.clear_window();
    }

    fn close(&mut self) {
        self.reopenings = 0;
        self.epoch += 1;
        self.state = State::Closed;
        self.clear_window();
    }

    fn clear_window(&mut self) {
        // Empty counts under an index no real bucket reaches, so no slot passes as current.
        self.buckets.fill(Bucket {
            index: u64::MAX,
            counts: WindowCounts::default(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn millis(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn breaker() -> CircuitBreaker {
        CircuitBreaker::new(BreakerConfig::default(), Instant::now())
    }

    /// Admits and records one call at `now`, which must be admitted and not a probe.
    fn call(breaker: &mut CircuitBreaker, outcome: Outcome, now: Instant) {
        let admission = breaker.try_acquire(now).expect("closed breaker admits");
        assert!(!admission.is_probe());
        breaker.record(admission, outcome, now);
    }

    /// Opens a fresh default breaker with five failures at `now`.
    fn trip(breaker: &mut CircuitBreaker, now: Instant) {
        for _ in 0..5 {
            call(breaker, Outcome::Failure, now);
        }
        assert!(matches!(breaker.state(now), BreakerState::Open { .. }));
    }

    #[test]
    fn defaults() {
        let config = BreakerConfig::default();
        assert_eq!(config.window, secs(30));
        assert_eq!(config.min_calls, 5);
        assert_eq!(config.failure_ratio, 0.5);
        assert_eq!(config.cooldown.base, secs(5));
        assert_eq!(config.cooldown.factor, 2.0);
        assert_eq!(config.cooldown.max, secs(300));
        assert_eq!(config.probe_timeout, secs(300));
    }

    #[test]
    fn stays_closed_below_min_calls_even_if_all_fail() {
        let mut breaker = breaker();
        let now = Instant::now();
        for _ in 0..4 {
            call(&mut breaker, Outcome::Failure, now);
        }
        assert_eq!(breaker.state(now), BreakerState::Closed);
        assert_eq!(
            breaker.window_counts(now),
            WindowCounts {
                successes: 0,
                failures: 4
            }
        );
    }

    #[test]
    fn stays_closed_below_the_failure_ratio() {
        let mut breaker = breaker();
        let now = Instant::now();
        // 4 failures out of 9 calls: 44 %, under 50 %.
        for _ in 0..5 {
            call(&mut breaker, Outcome::Success, now);
        }
        for _ in 0..4 {
            call(&mut breaker, Outcome::Failure, now);
        }
        assert_eq!(breaker.state(now), BreakerState::Closed);
        // The 10th call makes it 5 of 10: exactly the ratio opens.
        call(&mut breaker, Outcome::Failure, now);
        assert_eq!(
            breaker.state(now),
            BreakerState::Open {
                until: now + secs(5)
            }
        );
    }

    #[test]
    fn opens_at_min_calls_with_enough_failures_and_refuses_with_retry_after() {
        let mut breaker = breaker();
        let start = Instant::now();
        call(&mut breaker, Outcome::Success, start);
        call(&mut breaker, Outcome::Success, start);
        call(&mut breaker, Outcome::Failure, start);
        call(&mut breaker, Outcome::Failure, start);
        assert_eq!(breaker.state(start), BreakerState::Closed);
        call(&mut breaker, Outcome::Failure, start);
        let until = start + secs(5);
        assert_eq!(breaker.state(start), BreakerState::Open { until });

        assert_eq!(
            breaker.try_acquire(start + secs(2)),
            Err(Refusal::Open {
                until,
                retry_after: secs(3)
            })
        );
        assert_eq!(
            breaker.try_acquire(start + secs(5) - millis(1)),
            Err(Refusal::Open {
                until,
                retry_after: millis(1)
            })
        );
        // Opening cleared the window.
        assert_eq!(breaker.window_counts(start), WindowCounts::default());
    }

    #[tokio::test(start_paused = true)]
    async fn failures_older_than_the_window_are_forgotten() {
        let mut breaker = breaker();
        for _ in 0..4 {
            call(&mut breaker, Outcome::Failure, Instant::now());
        }
        // 31 s later the old failures have slid out: 4 new failures are not enough.
        tokio::time::advance(secs(31)).await;
        assert_eq!(
            breaker.window_counts(Instant::now()),
            WindowCounts::default()
        );
        for _ in 0..4 {
            call(&mut breaker, Outcome::Failure, Instant::now());
        }
        assert_eq!(breaker.state(Instant::now()), BreakerState::Closed);
        // Within the window they add up: 2 s later the 5th failure opens it.
        tokio::time::advance(secs(2)).await;
        call(&mut breaker, Outcome::Failure, Instant::now());
        assert!(matches!(
            breaker.state(Instant::now()),
            BreakerState::Open { .. }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn the_window_slides_bucket_by_bucket() {
        let mut breaker = breaker();
        // Buckets are 3 s wide. Six successes in bucket 0, then one failure in each of buckets
        // 1 to 4: 4 of 10 calls failed, under 50 %.
        for _ in 0..6 {
            call(&mut breaker, Outcome::Success, Instant::now());
        }
        for _ in 0..4 {
            tokio::time::advance(secs(3)).await;
            call(&mut breaker, Outcome::Failure, Instant::now());
        }
        assert_eq!(breaker.state(Instant::now()), BreakerState::Closed);
        assert_eq!(
            breaker.window_counts(Instant::now()),
            WindowCounts {
                successes: 6,
                failures: 4
            }
        );
        // At 39 s (bucket 13) the window is buckets 4 to 13: only the last failure remains.
        tokio::time::advance(secs(27)).await;
        assert_eq!(
            breaker.window_counts(Instant::now()),
            WindowCounts {
                successes: 0,
                failures: 1
            }
        );
        tokio::time::advance(secs(3)).await;
        assert_eq!(
            breaker.window_counts(Instant::now()),
            WindowCounts::default()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn half_open_admits_exactly_one_probe_and_success_closes() {
        let mut breaker = breaker();
        trip(&mut breaker, Instant::now());
        tokio::time::advance(secs(5)).await;
        let now = Instant::now();
        assert_eq!(
            breaker.state(now),
            BreakerState::HalfOpen {
                probe_in_flight: false
            }
        );

        let probe = breaker.try_acquire(now).expect("the probe is admitted");
        assert!(probe.is_probe());
        assert_eq!(
            breaker.state(now),
            BreakerState::HalfOpen {
                probe_in_flight: true
            }
        );
        for _ in 0..3 {
            assert_eq!(breaker.try_acquire(now), Err(Refusal::ProbeInFlight));
        }

        tokio::time::advance(secs(1)).await;
        breaker.record(probe, Outcome::Success, Instant::now());
        assert_eq!(breaker.state(Instant::now()), BreakerState::Closed);
        assert_eq!(
            breaker.window_counts(Instant::now()),
            WindowCounts::default()
        );
        call(&mut breaker, Outcome::Success, Instant::now());
    }

    #[tokio::test(start_paused = true)]
    async fn failed_probes_double_the_cooldown_up_to_five_minutes() {
        let mut breaker = breaker();
        trip(&mut breaker, Instant::now());
        let mut cooldowns = Vec::new();
        for _ in 0..9 {
            let BreakerState::Open { until } = breaker.state(Instant::now()) else {
                panic!("expected open");
            };
            let cooldown = until - Instant::now();
            cooldowns.push(cooldown);
            tokio::time::advance(cooldown).await;
            let probe = breaker.try_acquire(Instant::now()).expect("probe");
            assert!(probe.is_probe());
            breaker.record(probe, Outcome::Failure, Instant::now());
        }
        assert_eq!(
            cooldowns,
            [
                secs(5),
                secs(10),
                secs(20),
                secs(40),
                secs(80),
                secs(160),
                secs(300),
                secs(300),
                secs(300)
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_successful_probe_resets_the_cooldown_to_base() {
        let mut breaker = breaker();
        trip(&mut breaker, Instant::now());
        // Fail two probes: the cooldown is now 20 s.
        for expected in [secs(5), secs(10)] {
            tokio::time::advance(expected).await;
            let probe = breaker.try_acquire(Instant::now()).expect("probe");
            breaker.record(probe, Outcome::Failure, Instant::now());
        }
        tokio::time::advance(secs(20)).await;
        let probe = breaker.try_acquire(Instant::now()).expect("probe");
        breaker.record(probe, Outcome::Success, Instant::now());
        assert_eq!(breaker.state(Instant::now()), BreakerState::Closed);

        // Tripping again starts from 5 s.
        let now = Instant::now();
        trip(&mut breaker, now);
        assert_eq!(
            breaker.state(now),
            BreakerState::Open {
                until: now + secs(5)
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn stale_outcomes_do_not_affect_a_later_period() {
        let mut breaker = breaker();
        let now = Instant::now();
        // Seven calls in flight; five fail and open the breaker.
        let slow = breaker.try_acquire(now).expect("admitted");
        let slower = breaker.try_acquire(now).expect("admitted");
        trip(&mut breaker, now);
        // The sixth fails late, while open: ignored, the cooldown does not grow.
        breaker.record(slow, Outcome::Failure, now + secs(1));
        assert_eq!(
            breaker.state(now),
            BreakerState::Open {
                until: now + secs(5)
            }
        );

        // The seventh fails after the breaker closed again: it does not count in the new window.
        tokio::time::advance(secs(5)).await;
        let probe = breaker.try_acquire(Instant::now()).expect("probe");
        breaker.record(probe, Outcome::Success, Instant::now());
        breaker.record(slower, Outcome::Failure, Instant::now());
        assert_eq!(breaker.state(Instant::now()), BreakerState::Closed);
        assert_eq!(
            breaker.window_counts(Instant::now()),
            WindowCounts::default()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_abandoned_probe_lets_the_next_caller_probe() {
        let mut breaker = breaker();
        trip(&mut breaker, Instant::now());
        tokio::time::advance(secs(5)).await;
        let probe = breaker.try_acquire(Instant::now()).expect("probe");
        assert_eq!(
            breaker.try_acquire(Instant::now()),
            Err(Refusal::ProbeInFlight)
        );
        breaker.abandon(probe);
        assert_eq!(
            breaker.state(Instant::now()),
            BreakerState::HalfOpen {
                probe_in_flight: false
            }
        );
        let next = breaker.try_acquire(Instant::now()).expect("new probe");
        assert!(next.is_probe());
        breaker.record(next, Outcome::Success, Instant::now());
        assert_eq!(breaker.state(Instant::now()), BreakerState::Closed);

        // Abandoning an ordinary admission changes nothing.
        let ordinary = breaker.try_acquire(Instant::now()).expect("admitted");
        breaker.abandon(ordinary);
        assert_eq!(breaker.state(Instant::now()), BreakerState::Closed);
        assert_eq!(
            breaker.window_counts(Instant::now()),
            WindowCounts::default()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_lost_probe_is_replaced_after_the_probe_timeout() {
        let mut breaker = breaker();
        trip(&mut breaker, Instant::now());
        tokio::time::advance(secs(5)).await;
        let lost = breaker.try_acquire(Instant::now()).expect("probe");

        tokio::time::advance(secs(300) - millis(1)).await;
        assert_eq!(
            breaker.try_acquire(Instant::now()),
            Err(Refusal::ProbeInFlight)
        );
        tokio::time::advance(millis(1)).await;
        assert_eq!(
            breaker.state(Instant::now()),
            BreakerState::HalfOpen {
                probe_in_flight: false
            }
        );
        let replacement = breaker.try_acquire(Instant::now()).expect("new probe");
        assert!(replacement.is_probe());

        // The lost probe answering late decides nothing; the replacement does.
        breaker.record(lost, Outcome::Success, Instant::now());
        assert_eq!(
            breaker.state(Instant::now()),
            BreakerState::HalfOpen {
                probe_in_flight: true
            }
        );
        breaker.record(replacement, Outcome::Failure, Instant::now());
        let now = Instant::now();
        assert_eq!(
            breaker.state(now),
            BreakerState::Open {
                until: now + secs(10)
            }
        );
    }

    #[test]
    fn refusal_messages_say_what_to_do() {
        let now = Instant::now();
        let open = Refusal::Open {
            until: now + millis(1_500),
            retry_after: millis(1_500),
        };
        assert_eq!(
            open.to_string(),
            "circuit open after repeated failures; retry in 1500 ms"
        );
        assert_eq!(
            Refusal::ProbeInFlight.to_string(),
            "circuit half-open and its probe call is still running; retry shortly"
        );
    }

    #[test]
    fn degenerate_configs_do_not_panic() {
        let config = BreakerConfig {
            window: Duration::ZERO,
            buckets: 0,
            min_calls: 0,
            ..BreakerConfig::default()
        };
        let mut breaker = CircuitBreaker::new(config, Instant::now());
        let now = Instant::now();
        call(&mut breaker, Outcome::Success, now);
        assert_eq!(breaker.state(now), BreakerState::Closed);
        call(&mut breaker, Outcome::Failure, now);
        assert!(matches!(breaker.state(now), BreakerState::Open { .. }));
    }
}
