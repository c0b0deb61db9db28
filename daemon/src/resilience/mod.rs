//! Resilience primitives for tool calls and server supervision: pure, deterministic building blocks
//! that the pipeline and the pool compose.
//!
//! Every piece is a small state machine or a pure function. Time is a `tokio::time::Instant` passed
//! in or read from tokio's clock, so tests drive it with `tokio::time::pause()` and `advance()`;
//! randomness (backoff jitter) is a number passed in, so tests choose it. None of them does I/O.
//!
//! How they fit the call pipeline (resolve → validate → policy → **here** → trace), in order:
//!
//! 1. `bulkhead::Bulkhead`: take one of the server's concurrency permits, waiting in a bounded
//!    FIFO queue or failing fast with `Busy` when the queue is full. It comes first so that a
//!    flood of callers is bounded before anything else is spent on it, and its permit is held for
//!    the whole call, retries included: one call is one slot.
//! 2. `breaker::CircuitBreaker` (behind a `std::sync::Mutex`): `try_acquire` fails fast while the
//!    server is known to be unhealthy, with a `retry_after`; half-open lets one probe through.
//! 3. Execute the call with its timeout and cancellation, then `record` the outcome in the breaker
//!    (only server-health failures count as failures; see `breaker`).
//! 4. `retry::run_with_retries` wraps steps 2 and 3, so every attempt asks the breaker again and
//!    retries stop as soon as it opens (a breaker refusal is classified terminal for the loop). A
//!    transient failure is re-sent after a backoff ([`backoff::Backoff`]) when
//!    `retry::RetryPolicy::should_retry` allows it, which it never does for a call that may have
//!    reached the server unless the tool is read-only or idempotent.
//! 5. `cache::ResultCache`: successful results of read-only tools are remembered; when the call
//!    fails for a server-health reason (busy, breaker open, timeout, server down), a fresh enough
//!    cached result may be served instead, marked as such, rather than an error.
//!
//! Beside the call path, [`restart::RestartTracker`] supervises each stdio server: it decides how
//! long to wait before respawning a server that exited, and when to give up and park it `down`.
//!
//! Callers name the types by path (`resilience::breaker::CircuitBreaker`); nothing is re-exported.

pub mod backoff;
pub(crate) mod breaker;
pub(crate) mod bulkhead;
pub(crate) mod cache;
pub mod restart;
pub(crate) mod retry;
