//! The breaker's state machine under paused time: opening on the failure ratio, cooldowns that
//! grow, the half-open probe.

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
