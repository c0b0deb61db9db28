//! Which callers have requests in flight on a connection, so that a server's last words reach
//! only a caller they can concern.
//!
//! When a server dies, every request in flight fails with `serverExited`, and its stderr tail
//! says why, often quoting the request that killed it (a traceback with the query, the
//! arguments). On a connection shared by several callers (tokens, or sessions of one), nobody
//! can tell whose request that was, so the tail goes only to a caller that had the connection to
//! itself when it ended; the others learn how it ended (`exit`), not what it said. Who was in
//! flight is fixed by the first failure read after the end, before any of them has gone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The callers (keys of `crate::caller`) with requests in flight, counted.
#[derive(Default)]
pub(crate) struct CallersInFlight {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    in_flight: HashMap<Arc<str>, usize>,
    /// The callers in flight when the connection ended, once someone asked.
    at_end: Option<Vec<Arc<str>>>,
}

/// One request in flight, counted until it is dropped.
pub(crate) struct InFlightCaller<'a> {
    callers: &'a CallersInFlight,
    caller: Option<Arc<str>>,
}

impl CallersInFlight {
    /// Counts a request of `caller` (none: the daemon's own) until the guard is dropped.
    pub(crate) fn enter(&self, caller: Option<Arc<str>>) -> InFlightCaller<'_> {
        if let Some(caller) = &caller {
            *self
                .inner
                .lock()
                .unwrap()
                .in_flight
                .entry(Arc::clone(caller))
                .or_default() += 1;
        }
        InFlightCaller {
            callers: self,
            caller,
        }
    }

    /// Whether `caller` had the connection to itself when it ended: no other caller's request
    /// was in flight. Asked once the connection has ended; the first to ask fixes who was.
    pub(crate) fn alone_at_end(&self, caller: Option<&str>) -> bool {
        let mut inner = self.inner.lock().unwrap();
        let inner = &mut *inner;
        let at_end = inner
            .at_end
            .get_or_insert_with(|| inner.in_flight.keys().cloned().collect());
        at_end.iter().all(|other| Some(&**other) == caller)
    }
}

impl Drop for InFlightCaller<'_> {
    fn drop(&mut self) {
        let Some(caller) = &self.caller else {
            return;
        };
        let mut inner = self.callers.inner.lock().unwrap();
        if let Some(count) = inner.in_flight.get_mut(caller) {
            *count -= 1;
            if *count == 0 {
                inner.in_flight.remove(caller);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Option<Arc<str>> {
        Some(Arc::from(name))
    }

    #[test]
    fn a_caller_alone_at_the_end_is_told_and_the_others_are_not() {
        let alone = CallersInFlight::default();
        let _first = alone.enter(key("a"));
        let _second = alone.enter(key("a"));
        // The daemon's own requests (no caller) do not count.
        let _own = alone.enter(None);
        assert!(alone.alone_at_end(Some("a")));
        assert!(!alone.alone_at_end(Some("b")));

        let shared = CallersInFlight::default();
        let first = shared.enter(key("a"));
        let second = shared.enter(key("b"));
        // Fixed by the first to ask: "b" finishing first does not make "a" alone after all.
        assert!(!shared.alone_at_end(Some("b")));
        drop(second);
        assert!(!shared.alone_at_end(Some("a")));
        assert!(!shared.alone_at_end(None));
        drop(first);
    }

    #[test]
    fn finished_requests_leave_no_trace() {
        let callers = CallersInFlight::default();
        drop(callers.enter(key("a")));
        drop(callers.enter(key("a")));
        assert!(callers.alone_at_end(Some("b")));
        assert!(callers.inner.lock().unwrap().in_flight.is_empty());
    }
}
