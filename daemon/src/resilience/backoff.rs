//! Exponential backoff with "equal jitter": how long to wait before trying something again.
//!
//! Retrying at once after a failure hammers a server that is already struggling, and retrying on a
//! fixed schedule makes every client that failed together come back together. Exponential backoff
//! spaces attempts out (`base × factor^attempt`, capped at `max`), and jitter spreads the clients
//! apart. We use the "equal jitter" variant from the AWS Architecture Blog's *Exponential Backoff
//! And Jitter*: half of the exponential delay is kept fixed, so a retry never comes back almost
//! immediately, and the other half is random. The computation is pure: the random number is passed
//! in as a `f64` in `[0, 1)` ([`random_jitter`] is the one production source), so tests pick it.

use std::time::Duration;

use rand::RngExt;

/// An exponential backoff schedule with equal jitter.
///
/// `delay(attempt, jitter)` is `e/2 + e/2 × jitter` where `e = min(base × factor^attempt, max)`,
/// so it always lies in `[e/2, e]` and never exceeds `max`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The exponential delay of attempt 0 (the first retry), before jitter.
    pub base: Duration,
    /// How much the exponential delay grows per attempt. Values below 1 (or NaN) are treated as 1:
    /// a backoff never shrinks.
    pub factor: f64,
    /// The cap on the exponential delay, and therefore on every delay.
    pub max: Duration,
}

impl Backoff {
    /// The schedule for re-sending a failed tool call: 500 ms, then 1 s, 2 s, … capped at 10 s
    /// (before jitter). Calls are interactive, so the cap is short.
    pub const CALLS: Backoff = Backoff {
        base: Duration::from_millis(500),
        factor: 2.0,
        max: Duration::from_secs(10),
    };

    /// The exponential delay of `attempt` (0 = first retry) without jitter, capped at `max`.
    ///
    /// Saturates instead of overflowing: any attempt number, however large, gives at most `max`.
    pub fn exponential(&self, attempt: u32) -> Duration {
        Duration::from_nanos(self.exponential_nanos(attempt).round() as u64)
    }

    /// The delay before retry number `attempt` (0 = the first retry), with equal jitter.
    ///
    /// `jitter` is a uniform random number in `[0, 1)`; values outside are clamped into `[0, 1]`
    /// and NaN counts as 0. With jitter 0 the delay is half the exponential delay, with jitter
    /// close to 1 it approaches the full exponential delay. Never more than `max`.
    pub fn delay(&self, attempt: u32, jitter: f64) -> Duration {
        let jitter = if jitter.is_nan() {
            0.0
        } else {
            jitter.clamp(0.0, 1.0)
        };
        let half = self.exponential_nanos(attempt) / 2.0;
        let nanos = (half + half * jitter).round().min(self.max_nanos());
        Duration::from_nanos(nanos as u64)
    }

    /// The capped exponential delay in nanoseconds, as a finite `f64` in `[0, max]`.
    fn exponential_nanos(&self, attempt: u32) -> f64 {
        let max = self.max_nanos();
        let base = (self.base.as_nanos() as f64).min(max);
        if base == 0.0 {
            return 0.0;
        }
        let factor = if self.factor.is_nan() {
            1.0
        } else {
            self.factor.max(1.0)
        };
        // `powf` of a huge exponent is +inf, never a panic or a wrap; `min` then caps it.
        let grown = base * factor.powf(f64::from(attempt));
        if grown.is_finite() {
            grown.min(max)
        } else {
            max
        }
    }

    /// `max` in nanoseconds, saturated to what a `u64` of nanoseconds holds (about 584 years).
    fn max_nanos(&self) -> f64 {
        u64::try_from(self.max.as_nanos()).unwrap_or(u64::MAX) as f64
    }
}

impl Default for Backoff {
    /// [`Backoff::CALLS`].
    fn default() -> Backoff {
        Backoff::CALLS
    }
}

/// A uniform random number in `[0, 1)` from the thread-local RNG: the jitter source for
/// production callers. Tests pass fixed numbers instead.
pub fn random_jitter() -> f64 {
    rand::rng().random::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[test]
    fn call_defaults_are_500ms_doubling_capped_at_10s() {
        let backoff = Backoff::default();
        assert_eq!(backoff.base, millis(500));
        assert_eq!(backoff.factor, 2.0);
        assert_eq!(backoff.max, Duration::from_secs(10));
    }

    #[test]
    fn exponential_doubles_from_base_then_caps() {
        let backoff = Backoff::CALLS;
        let delays: Vec<Duration> = (0..7).map(|attempt| backoff.exponential(attempt)).collect();
        assert_eq!(
            delays,
            [
                millis(500),
                millis(1_000),
                millis(2_000),
                millis(4_000),
                millis(8_000),
                millis(10_000),
                millis(10_000)
            ]
        );
    }

    #[test]
    fn equal_jitter_keeps_half_fixed_and_randomizes_the_other_half() {
        let backoff = Backoff::CALLS;
        // Attempt 1: exponential delay 1 s, so the delay lies in [500 ms, 1 s].
        assert_eq!(backoff.delay(1, 0.0), millis(500));
        assert_eq!(backoff.delay(1, 0.5), millis(750));
        assert_eq!(backoff.delay(1, 0.25), millis(625));
        assert!(backoff.delay(1, 0.999_999) < millis(1_000));
        assert!(backoff.delay(1, 0.999_999) > millis(999));
        // Attempt 0 is the first retry: base 500 ms, so [250 ms, 500 ms].
        assert_eq!(backoff.delay(0, 0.0), millis(250));
        assert_eq!(backoff.delay(0, 0.5), millis(375));
    }

    #[test]
    fn delay_never_exceeds_max_even_with_full_jitter() {
        let backoff = Backoff::CALLS;
        assert_eq!(backoff.delay(10, 0.0), millis(5_000));
        assert_eq!(backoff.delay(10, 1.0), millis(10_000));
        assert_eq!(backoff.delay(10, 0.5), millis(7_500));
    }

    #[test]
    fn huge_attempt_numbers_saturate_at_max_without_overflow() {
        let backoff = Backoff::CALLS;
        assert_eq!(backoff.exponential(u32::MAX), millis(10_000));
        assert_eq!(backoff.delay(u32::MAX, 1.0), millis(10_000));
        assert_eq!(backoff.delay(1_000_000, 0.0), millis(5_000));

        let unbounded = Backoff {
            base: Duration::from_secs(1),
            factor: 10.0,
            max: Duration::MAX,
        };
        // Capped at what fits in u64 nanoseconds instead of panicking.
        assert_eq!(
            unbounded.delay(u32::MAX, 1.0),
            Duration::from_nanos(u64::MAX)
        );
    }

    #[test]
    fn out_of_range_jitter_is_clamped() {
        let backoff = Backoff::CALLS;
        assert_eq!(backoff.delay(1, -3.0), millis(500));
        assert_eq!(backoff.delay(1, 7.0), millis(1_000));
        assert_eq!(backoff.delay(1, f64::NAN), millis(500));
    }

    #[test]
    fn degenerate_parameters_stay_sane() {
        let zero = Backoff {
            base: Duration::ZERO,
            factor: 2.0,
            max: Duration::from_secs(1),
        };
        assert_eq!(zero.delay(u32::MAX, 0.9), Duration::ZERO);

        let shrinking = Backoff {
            base: millis(400),
            factor: 0.5,
            max: Duration::from_secs(1),
        };
        assert_eq!(shrinking.exponential(5), millis(400));

        let nan_factor = Backoff {
            base: millis(400),
            factor: f64::NAN,
            max: Duration::from_secs(1),
        };
        assert_eq!(nan_factor.exponential(5), millis(400));

        let base_above_max = Backoff {
            base: Duration::from_secs(60),
            factor: 2.0,
            max: Duration::from_secs(1),
        };
        assert_eq!(base_above_max.exponential(0), Duration::from_secs(1));
    }

    #[test]
    fn random_jitter_is_in_unit_interval() {
        for _ in 0..1_000 {
            let jitter = random_jitter();
            assert!((0.0..1.0).contains(&jitter), "{jitter}");
        }
    }
}
