//! LLM usage a tool call causes inside the daemon: the sampling requests its server makes
//! while the call runs (`sampling/createMessage`, answered by the agent backend), so the call's
//! record (its trace line, its session's totals) carries their tokens and cost.
//!
//! The pipeline runs each execution inside [`metered`]; the pool registers the meter of the
//! running call with the server's calls in flight (`pool/requests.rs`), and a sampling answer
//! is added to the meter of the server's one call in flight. With several in flight, MCP does
//! not say which one asked, so the usage stays in the server's totals (`health`) only.

use std::future::Future;
use std::sync::{Arc, Mutex};

tokio::task_local! {
    /// The meter of the call running in this task.
    static CURRENT: Arc<CallUsage>;
}

/// Tokens and cost attributed to one call.
#[derive(Debug, Default)]
pub(crate) struct CallUsage {
    totals: Mutex<UsageTotals>,
}

/// What a [`CallUsage`] has counted.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct UsageTotals {
    /// LLM input tokens.
    pub(crate) tokens_in: u64,
    /// LLM output tokens.
    pub(crate) tokens_out: u64,
    /// Cost in US dollars (0 when the model has no price).
    pub(crate) cost_usd: f64,
}

impl CallUsage {
    /// Adds one LLM request's usage.
    pub(crate) fn add(&self, tokens_in: u64, tokens_out: u64, cost_usd: Option<f64>) {
        let mut totals = self.totals.lock().unwrap();
        totals.tokens_in += tokens_in;
        totals.tokens_out += tokens_out;
        totals.cost_usd += cost_usd.unwrap_or(0.0);
    }

    /// What was counted.
    pub(crate) fn totals(&self) -> UsageTotals {
        *self.totals.lock().unwrap()
    }
}

/// Runs `work` (an execution of a call) with `usage` as its meter.
pub(crate) async fn metered<T>(usage: Arc<CallUsage>, work: impl Future<Output = T>) -> T {
    CURRENT.scope(usage, work).await
}

/// The meter of the call running in this task, if any.
pub(crate) fn current() -> Option<Arc<CallUsage>> {
    CURRENT.try_with(Arc::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn usage_inside_the_call_is_counted_on_its_meter() {
        let usage = Arc::new(CallUsage::default());
        metered(Arc::clone(&usage), async {
            current().unwrap().add(100, 20, Some(0.5));
            current().unwrap().add(1, 2, None);
        })
        .await;
        assert!(current().is_none(), "only inside the call");
        assert_eq!(
            usage.totals(),
            UsageTotals {
                tokens_in: 101,
                tokens_out: 22,
                cost_usd: 0.5
            }
        );
    }
}
