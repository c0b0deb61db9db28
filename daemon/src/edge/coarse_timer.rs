//! A coarse timer for hyper's header-read timeout, so a kept-alive request wakes no other thread.
//!
//! hyper starts the header-read timer each time it waits for a request's head and drops it once
//! the head is read. With tokio's timer every such start is an insert into the runtime's timer
//! wheel, and tokio wakes the worker parked in `epoll_wait` whenever the new deadline is earlier
//! than the one that worker went to sleep with: between two requests of one connection the call's
//! own timers are gone, so that was one `eventfd` write and two context switches per request
//! (`perf record` of the daemon under a `callTool` loop: `Sleep::poll → reregister → unpark` from
//! hyper's dispatcher, and as many `eventfd` writes as calls under `strace`).
//!
//! A 10 s timeout needs no microsecond precision. Here a sleep is a deadline and a waker in a
//! list that one ticker task walks every [`GRANULARITY`]: creating or dropping a sleep takes a
//! lock and touches no timer, and a sleep resolves at most one granularity after its deadline.
//! The ticker parks when the list is empty and is woken by the next sleep, at most once per tick.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

// tokio's clock, so that a test with paused time drives the ticker; hyper's deadlines are std's.
use tokio::time::Instant;

/// How often the ticker looks at the sleeps: how late a sleep may resolve.
pub(crate) const GRANULARITY: Duration = Duration::from_millis(250);

/// A [`hyper::rt::Timer`] whose sleeps are checked by one ticker task; clones share the ticker.
#[derive(Clone)]
pub(crate) struct CoarseTimer {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    /// Every sleep not yet resolved; a dropped one is pruned at the next tick.
    waiting: Mutex<Vec<Arc<Waiting>>>,
    /// Wakes the ticker when a sleep arrives in an empty list.
    arrived: tokio::sync::Notify,
}

/// One sleep's state, shared by the sleep and the ticker.
struct Waiting {
    deadline: Instant,
    waker: Mutex<Option<Waker>>,
    fired: AtomicBool,
}

impl CoarseTimer {
    /// A timer and its ticker task (spawned on the current runtime), which ends at its first
    /// tick after the last clone of the timer is gone (or, parked on an empty list, with the
    /// runtime).
    pub(crate) fn start() -> CoarseTimer {
        let shared = Arc::new(Shared::default());
        tokio::spawn(tick(Arc::downgrade(&shared)));
        CoarseTimer { shared }
    }

    fn sleep_until_deadline(&self, deadline: Instant) -> CoarseSleep {
        let waiting = Arc::new(Waiting {
            deadline,
            waker: Mutex::new(None),
            fired: AtomicBool::new(false),
        });
        let mut list = self.shared.waiting.lock().unwrap();
        let was_empty = list.is_empty();
        list.push(Arc::clone(&waiting));
        drop(list);
        if was_empty {
            self.shared.arrived.notify_one();
        }
        CoarseSleep { waiting }
    }
}

/// The ticker: every [`GRANULARITY`], resolves the sleeps whose deadline passed and forgets the
/// dropped ones; parks while there are none.
async fn tick(shared: Weak<Shared>) {
    loop {
        let Some(strong) = shared.upgrade() else {
            return;
        };
        let empty = strong.fire(Instant::now());
        if empty {
            // `notify_one` stores a permit when nobody waits yet, so a sleep pushed between
            // `fire` and here is not missed.
            strong.arrived.notified().await;
        } else {
            drop(strong);
            tokio::time::sleep(GRANULARITY).await;
        }
    }
}

impl Shared {
    /// Wakes the sleeps due at `now`, drops the ones nobody holds; whether none is left.
    fn fire(&self, now: Instant) -> bool {
        let mut list = self.waiting.lock().unwrap();
        list.retain(|waiting| {
            if Arc::strong_count(waiting) == 1 {
                return false;
            }
            if waiting.deadline <= now {
                waiting.fired.store(true, Ordering::Release);
                if let Some(waker) = waiting.waker.lock().unwrap().take() {
                    waker.wake();
                }
                return false;
            }
            true
        });
        list.is_empty()
    }
}

/// A sleep of [`CoarseTimer`]: ready once the ticker saw its deadline pass (or when polled after
/// it).
pub(crate) struct CoarseSleep {
    waiting: Arc<Waiting>,
}

impl Future for CoarseSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        let waiting = &self.waiting;
        if waiting.fired.load(Ordering::Acquire) || Instant::now() >= waiting.deadline {
            return Poll::Ready(());
        }
        *waiting.waker.lock().unwrap() = Some(context.waker().clone());
        // The ticker may have fired between the check and storing the waker.
        if waiting.fired.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

impl hyper::rt::Sleep for CoarseSleep {}

impl hyper::rt::Timer for CoarseTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(self.sleep_until_deadline(Instant::now() + duration))
    }

    fn sleep_until(&self, deadline: std::time::Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(self.sleep_until_deadline(Instant::from_std(deadline)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ticker_wakes_due_sleeps_and_forgets_dropped_ones() {
        let shared = Shared::default();
        let timer = CoarseTimer {
            shared: Arc::new(shared),
        };
        let start = Instant::now();
        let mut due = timer.sleep_until_deadline(start);
        let later = timer.sleep_until_deadline(start + Duration::from_secs(3600));
        let dropped = timer.sleep_until_deadline(start + Duration::from_secs(3600));
        drop(dropped);
        assert_eq!(timer.shared.waiting.lock().unwrap().len(), 3);

        // Polled before its deadline passes for the ticker: its waker is kept.
        let (waker, woken) = counting_waker();
        let mut far = timer.sleep_until_deadline(start + Duration::from_secs(3600));
        let mut context = Context::from_waker(&waker);
        assert!(Pin::new(&mut far).poll(&mut context).is_pending());

        // A tick at the far deadline: `due` and `far` fire (far's waker is woken), `later`
        // fires too, the dropped one is forgotten, and nothing is left.
        assert!(!timer.shared.fire(start));
        assert_eq!(
            timer.shared.waiting.lock().unwrap().len(),
            2,
            "`due` fired and the dropped sleep was forgotten"
        );
        assert!(Pin::new(&mut due).poll(&mut context).is_ready());
        assert_eq!(woken.load(Ordering::Relaxed), 0);
        assert!(timer.shared.fire(start + Duration::from_secs(3600)));
        assert_eq!(woken.load(Ordering::Relaxed), 1, "far's waker was woken");
        assert!(Pin::new(&mut far).poll(&mut context).is_ready());
        drop(later);
    }

    #[tokio::test(start_paused = true)]
    async fn a_hyper_sleep_resolves_within_a_granularity_of_its_deadline() {
        let timer = CoarseTimer::start();
        let started = tokio::time::Instant::now();
        hyper::rt::Timer::sleep(&timer, Duration::from_secs(2)).await;
        // Paused time: the ticker's own sleeps advance the clock, so this reads its ticks.
        let took = started.elapsed();
        assert!(took >= Duration::from_secs(2), "resolved early: {took:?}");
        assert!(
            took <= Duration::from_secs(2) + GRANULARITY,
            "resolved late: {took:?}"
        );
    }

    fn counting_waker() -> (Waker, Arc<std::sync::atomic::AtomicUsize>) {
        struct Counting(Arc<std::sync::atomic::AtomicUsize>);
        impl std::task::Wake for Counting {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        (Waker::from(Arc::new(Counting(Arc::clone(&count)))), count)
    }
}
