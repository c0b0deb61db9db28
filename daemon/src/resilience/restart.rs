//! Supervision of a crashing server: when to restart it, and when to stop trying.
//!
//! A stdio server that exits should come back, but a server that crashes on start (bad path,
//! missing dependency, broken config) must not be respawned in a tight loop that burns CPU and
//! floods the logs. [`RestartTracker`] follows the usual supervisor recipe: restarts are spaced by
//! exponential backoff with equal jitter (see [`super::backoff`], the same schedule Kubernetes'
//! CrashLoopBackOff uses in spirit: 500 ms doubling up to 30 s), a run that stayed up longer than a
//! stability period resets the backoff (the crash was a one-off, not a loop), and too many restarts
//! *park* the server `down` (Erlang/OTP's restart intensity, "at most `max_restarts` restarts
//! within `window`", and supervisord's `startretries`).
//!
//! Parked is not forever: the cause is often outside the server (a remote endpoint down for a
//! while, a missing file that someone then creates), so a parked server is still *probed*, on a
//! slow schedule of its own (`probe`: 30 s doubling up to 10 min, with jitter), until a probe
//! connects or an operator restarts it ([`RestartTracker::reset`], the `restartServer` method).
//!
//! Two limits park a server, both measured against `max_restarts`:
//!
//! - **Intensity:** `max_restarts` restarts already happened within the sliding `window`. This is
//!   what catches a flapping server when the backoff is configured short.
//! - **Crash loop:** `max_restarts` restarts in a row, none of which stayed up for `stable_after`.
//!   With the default backoff the intensity limit alone would never fire: the growing delays
//!   (0.25–0.5 s, 0.5–1 s, … up to 15–30 s) fit at most about eight restarts in any 60 s, so a
//!   server that dies at every start would otherwise be retried every 30 s forever. This limit
//!   parks it after ten quick deaths, roughly a minute to two and a half minutes in.
//!
//! The tracker is pure: it is told each exit with the current time (tokio's clock, so tests drive
//! it with `tokio::time::pause()`), how long the process ran and a jitter number, and answers a
//! [`Decision`]. Spawning and sleeping are the caller's job.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use super::backoff::Backoff;

/// How a crashing server is restarted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RestartPolicy {
    /// The delay before each restart; its attempt number counts restarts since the last stable run.
    pub backoff: Backoff,
    /// The most restarts allowed within `window`, and in a row without a stable run.
    pub max_restarts: u32,
    /// The sliding window the intensity limit counts restarts in.
    pub window: Duration,
    /// A run at least this long counts as healthy: it resets the backoff and the crash-loop count.
    pub stable_after: Duration,
    /// The delay before each probe of a parked server; its attempt number counts failed probes.
    pub probe: Backoff,
}

/// How a parked server is probed: first after 15–30 s, doubling up to 5–10 min.
pub const PARKED_PROBE: Backoff = Backoff {
    base: Duration::from_secs(30),
    factor: 2.0,
    max: Duration::from_secs(600),
};

impl Default for RestartPolicy {
    /// Backoff 500 ms ×2 up to 30 s, at most 10 restarts per 60 s, stable after 60 s of uptime;
    /// parked servers probed per [`PARKED_PROBE`].
    fn default() -> RestartPolicy {
        RestartPolicy {
            backoff: Backoff {
                base: Duration::from_millis(500),
                factor: 2.0,
                max: Duration::from_secs(30),
            },
            max_restarts: 10,
            window: Duration::from_secs(60),
            stable_after: Duration::from_secs(60),
            probe: PARKED_PROBE,
        }
    }
}

/// What to do after a server exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Spawn it again after this delay.
    RestartAfter(Duration),
    /// Stop restarting: mark the server `down`, and try it once more (a probe) after this delay.
    /// Each failed probe answers `Park` again, with a longer delay.
    Park {
        /// When to probe it.
        probe_after: Duration,
    },
}

/// The restart history of one server.
#[derive(Debug, Clone)]
pub struct RestartTracker {
    policy: RestartPolicy,
    /// When each restart within the window was decided, oldest first. Bounded: it never holds more
    /// than `max_restarts` entries, because the next one parks instead of being pushed.
    recent_restarts: VecDeque<Instant>,
    /// Restarts since the last stable run: the backoff attempt number and the crash-loop count.
    unstable_restarts: u32,
    parked: bool,
    /// Probes that failed since it was parked: the probe backoff's attempt number.
    failed_probes: u32,
}

impl RestartTracker {
    /// A tracker for a server that has not exited yet.
    pub fn new(policy: RestartPolicy) -> RestartTracker {
        RestartTracker {
            policy,
            recent_restarts: VecDeque::new(),
            unstable_restarts: 0,
            parked: false,
            failed_probes: 0,
        }
    }

    /// The policy it applies.
    pub fn policy(&self) -> &RestartPolicy {
        &self.policy
    }

    /// Records that the server exited at `now` after running for `ran_for`, and decides.
    ///
    /// `jitter` is a uniform random number in `[0, 1)` for the backoff
    /// ([`super::backoff::random_jitter`] in production). Once parked, every exit (a failed
    /// probe) answers [`Decision::Park`] with the next, longer probe delay, until
    /// [`RestartTracker::reset`] (after a probe connected, or an explicit restart).
    pub fn record_exit(&mut self, now: Instant, ran_for: Duration, jitter: f64) -> Decision {
        if self.parked {
            return self.park(jitter);
        }
        if ran_for >= self.policy.stable_after {
            self.unstable_restarts = 0;
        }
        self.forget_restarts_before(now);
        let limit = self.policy.max_restarts as usize;
        if self.recent_restarts.len() >= limit || self.unstable_restarts >= self.policy.max_restarts
        {
            self.parked = true;
            return self.park(jitter);
        }
        let delay = self.policy.backoff.delay(self.unstable_restarts, jitter);
        self.unstable_restarts = self.unstable_restarts.saturating_add(1);
        self.recent_restarts.push_back(now);
        Decision::RestartAfter(delay)
    }

    fn park(&mut self, jitter: f64) -> Decision {
        let probe_after = self.policy.probe.delay(self.failed_probes, jitter);
        self.failed_probes = self.failed_probes.saturating_add(1);
        Decision::Park { probe_after }
    }

    /// Whether the server is parked.
    pub fn is_parked(&self) -> bool {
        self.parked
    }

    /// How many restarts happened within the window ending at `now`.
    pub fn restarts_in_window(&self, now: Instant) -> usize {
        self.recent_restarts
            .iter()
            .filter(|&&at| now.saturating_duration_since(at) < self.policy.window)
            .count()
    }

    /// Restarts since the last stable run (the next backoff attempt number).
    pub fn unstable_restarts(&self) -> u32 {
        self.unstable_restarts
    }

    /// Forgets the history and unparks: the explicit reset after an operator fixed the server.
    pub fn reset(&mut self) {
        self.recent_restarts.clear();
        self.unstable_restarts = 0;
        self.parked = false;
        self.failed_probes = 0;
    }

    fn forget_restarts_before(&mut self, now: Instant) {
        while let Some(&oldest) = self.recent_restarts.front() {
            if now.saturating_duration_since(oldest) >= self.policy.window {
                self.recent_restarts.pop_front();
            } else {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    /// A server that dies `ran_for` after every start, supervised until it is parked or `limit`
    /// of virtual time has passed. Returns the restart delays and the time of the park, if any.
    async fn crash_loop(
        tracker: &mut RestartTracker,
        ran_for: Duration,
        jitter: f64,
        limit: Duration,
    ) -> (Vec<Duration>, Option<Duration>) {
        let start = Instant::now();
        let mut delays = Vec::new();
        while start.elapsed() <= limit {
            tokio::time::advance(ran_for).await;
            match tracker.record_exit(Instant::now(), ran_for, jitter) {
                Decision::RestartAfter(delay) => {
                    delays.push(delay);
                    tokio::time::advance(delay).await;
                }
                Decision::Park { .. } => return (delays, Some(start.elapsed())),
            }
        }
        (delays, None)
    }

    #[test]
    fn defaults() {
        let policy = RestartPolicy::default();
        assert_eq!(policy.backoff.base, millis(500));
        assert_eq!(policy.backoff.factor, 2.0);
        assert_eq!(policy.backoff.max, secs(30));
        assert_eq!(policy.max_restarts, 10);
        assert_eq!(policy.window, secs(60));
        assert_eq!(policy.stable_after, secs(60));
        assert_eq!(policy.probe, PARKED_PROBE);
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_dying_at_start_gets_ten_growing_restarts_then_is_parked() {
        let mut tracker = RestartTracker::new(RestartPolicy::default());
        let (delays, parked_at) = crash_loop(&mut tracker, Duration::ZERO, 0.0, secs(3_600)).await;
        // Jitter 0: half the exponential delay, 250 ms doubling, capped at half of 30 s.
        assert_eq!(
            delays,
            [
                millis(250),
                millis(500),
                millis(1_000),
                millis(2_000),
                millis(4_000),
                millis(8_000),
                millis(15_000),
                millis(15_000),
                millis(15_000),
                millis(15_000),
            ]
        );
        // Parked at the 11th exit, right after the 10th delay.
        assert_eq!(parked_at, Some(delays.iter().sum()));
        assert!(tracker.is_parked());
        assert!(matches!(
            tracker.record_exit(Instant::now(), Duration::ZERO, 0.0),
            Decision::Park { .. }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_parked_server_is_probed_from_30_s_doubling_up_to_10_min() {
        let mut tracker = RestartTracker::new(RestartPolicy::default());
        let (_, parked_at) = crash_loop(&mut tracker, Duration::ZERO, 1.0, secs(3_600)).await;
        assert!(parked_at.is_some());
        // The park itself was the first answer; every failed probe gets the next delay.
        let mut probes = Vec::new();
        for _ in 0..8 {
            match tracker.record_exit(Instant::now(), Duration::ZERO, 1.0) {
                Decision::Park { probe_after } => {
                    probes.push(probe_after.as_secs());
                    tokio::time::advance(probe_after).await;
                }
                other => panic!("a parked server stays parked until reset: {other:?}"),
            }
        }
        // Full jitter: the whole exponential delay (the park's own probe was at 30 s).
        assert_eq!(probes, [60, 120, 240, 480, 600, 600, 600, 600]);
        // Without jitter, half of it: the first probe comes 15 s after parking, never before.
        let mut tracker = RestartTracker::new(RestartPolicy::default());
        let mut first_probe = None;
        while first_probe.is_none() {
            if let Decision::Park { probe_after } =
                tracker.record_exit(Instant::now(), Duration::ZERO, 0.0)
            {
                first_probe = Some(probe_after);
            }
        }
        assert_eq!(first_probe, Some(secs(15)));
        // A probe that connects (or an explicit restart) resets it: back to ordinary restarts.
        tracker.reset();
        assert_eq!(
            tracker.record_exit(Instant::now(), Duration::ZERO, 0.0),
            Decision::RestartAfter(millis(250))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_crash_loop_never_exceeds_max_restarts_within_any_window() {
        for jitter in [0.0, 0.5, 0.999] {
            let mut tracker = RestartTracker::new(RestartPolicy::default());
            let (delays, parked_at) =
                crash_loop(&mut tracker, millis(10), jitter, secs(3_600)).await;
            assert_eq!(delays.len(), 10, "jitter {jitter}");
            assert!(parked_at.is_some(), "jitter {jitter}");
            assert!(delays.windows(2).all(|pair| pair[0] <= pair[1]));
            // With full jitter the delays reach the 30 s cap.
            if jitter > 0.9 {
                assert!(delays[9] > secs(29));
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn intensity_limit_parks_a_flapping_server_when_backoff_is_short() {
        let policy = RestartPolicy {
            backoff: Backoff {
                base: millis(100),
                factor: 1.0,
                max: millis(100),
            },
            max_restarts: 10,
            window: secs(60),
            // A run of 5 s counts as stable, so the crash-loop limit never fires here.
            stable_after: secs(5),
            probe: PARKED_PROBE,
        };
        let mut tracker = RestartTracker::new(policy);
        let (delays, parked_at) = crash_loop(&mut tracker, secs(5), 0.0, secs(3_600)).await;
        // Every run was "stable" (the crash-loop count never built up), yet 10 restarts within
        // 60 s is too many.
        assert_eq!(tracker.unstable_restarts(), 0);
        assert_eq!(delays, vec![millis(50); 10]);
        // The 11th exit comes 10 runs of 5 s plus 10 delays of 50 ms after the start.
        assert_eq!(parked_at, Some(secs(55) + millis(500)));
        assert!(tracker.is_parked());
    }

    #[tokio::test(start_paused = true)]
    async fn restarts_spread_wider_than_the_window_are_forgotten() {
        let policy = RestartPolicy {
            backoff: Backoff {
                base: millis(100),
                factor: 1.0,
                max: millis(100),
            },
            max_restarts: 3,
            window: secs(10),
            stable_after: secs(4),
            probe: PARKED_PROBE,
        };
        let mut tracker = RestartTracker::new(policy);
        // One stable 4 s run per exit: about 2.5 restarts per 10 s, under the limit of 3.
        let (delays, parked_at) = crash_loop(&mut tracker, secs(4), 0.0, secs(600)).await;
        assert_eq!(parked_at, None);
        assert!(delays.len() > 100);
        assert!(tracker.restarts_in_window(Instant::now()) <= 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stable_run_resets_the_backoff() {
        let mut tracker = RestartTracker::new(RestartPolicy::default());
        let mut now = Instant::now();
        let mut delays = Vec::new();
        for _ in 0..4 {
            match tracker.record_exit(now, Duration::ZERO, 0.0) {
                Decision::RestartAfter(delay) => delays.push(delay),
                Decision::Park { .. } => panic!("parked too early"),
            }
            now += secs(1);
        }
        assert_eq!(
            delays,
            [millis(250), millis(500), millis(1_000), millis(2_000)]
        );
        assert_eq!(tracker.unstable_restarts(), 4);

        // It then ran healthy for two minutes: the next crash starts over from the base delay.
        now += secs(120);
        assert_eq!(
            tracker.record_exit(now, secs(120), 0.0),
            Decision::RestartAfter(millis(250))
        );
        assert_eq!(tracker.unstable_restarts(), 1);
        // Exactly the stability period also counts as stable.
        now += secs(60);
        assert_eq!(
            tracker.record_exit(now, secs(60), 0.0),
            Decision::RestartAfter(millis(250))
        );
        // Just under it does not.
        now += secs(60);
        assert_eq!(
            tracker.record_exit(now, secs(60) - millis(1), 0.0),
            Decision::RestartAfter(millis(500))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn reset_unparks_and_forgets_the_history() {
        let mut tracker = RestartTracker::new(RestartPolicy::default());
        let (_, parked_at) = crash_loop(&mut tracker, Duration::ZERO, 0.0, secs(3_600)).await;
        assert!(parked_at.is_some());
        assert!(tracker.is_parked());

        tracker.reset();
        assert!(!tracker.is_parked());
        assert_eq!(tracker.unstable_restarts(), 0);
        assert_eq!(tracker.restarts_in_window(Instant::now()), 0);
        assert_eq!(
            tracker.record_exit(Instant::now(), Duration::ZERO, 0.0),
            Decision::RestartAfter(millis(250))
        );
    }

    #[test]
    fn zero_max_restarts_parks_at_the_first_exit() {
        let policy = RestartPolicy {
            max_restarts: 0,
            ..RestartPolicy::default()
        };
        let mut tracker = RestartTracker::new(policy);
        assert_eq!(
            tracker.record_exit(Instant::now(), secs(3_600), 0.5),
            Decision::Park {
                probe_after: secs(22) + millis(500)
            }
        );
    }

    #[test]
    fn jitter_is_applied_to_restart_delays() {
        let mut tracker = RestartTracker::new(RestartPolicy::default());
        let now = Instant::now();
        assert_eq!(
            tracker.record_exit(now, Duration::ZERO, 0.5),
            Decision::RestartAfter(millis(375))
        );
        assert_eq!(
            tracker.record_exit(now, Duration::ZERO, 0.5),
            Decision::RestartAfter(millis(750))
        );
    }
}
