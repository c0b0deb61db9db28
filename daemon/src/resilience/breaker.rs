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
pub(crate) enum Outcome {
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
pub(crate) struct Admission {
    probe: bool,
    epoch: u64,
}

impl Admission {
    /// Whether this call is the half-open probe whose outcome closes or re-opens the breaker.
    #[cfg(test)]
    pub(crate) fn is_probe(&self) -> bool {
        self.probe
    }
}

/// Why a call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
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
pub(crate) enum BreakerState {
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
pub(crate) struct WindowCounts {
    /// Calls recorded as [`Outcome::Success`].
    pub successes: u32,
    /// Calls recorded as [`Outcome::Failure`].
    pub failures: u32,
}

impl WindowCounts {
    /// All recorded calls.
    pub(crate) fn calls(&self) -> u32 {
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
pub(crate) struct CircuitBreaker {
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
    pub(crate) fn new(config: BreakerConfig, now: Instant) -> CircuitBreaker {
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

    /// Asks to make a call at `now`.
    ///
    /// Closed: admitted. Open: refused until the cooldown ends, after which the first caller is
    /// admitted as the probe and the breaker is half-open. Half-open: refused while the probe runs
    /// (unless it has been silent for longer than `probe_timeout`, then the caller replaces it).
    pub(crate) fn try_acquire(&mut self, now: Instant) -> Result<Admission, Refusal> {
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
    pub(crate) fn record(&mut self, admission: Admission, outcome: Outcome, now: Instant) {
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
    pub(crate) fn abandon(&mut self, admission: Admission) {
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
    pub(crate) fn state(&self, now: Instant) -> BreakerState {
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
    pub(crate) fn window_counts(&self, now: Instant) -> WindowCounts {
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
mod tests;
