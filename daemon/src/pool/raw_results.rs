//! Raw results tapped from a stdio server's answers to rmcp's requests, so listings, resource
//! reads and the calls that keep rmcp's path (`callEvents`) reach clients unnarrowed by rmcp's
//! types. The transport (`stdio.rs`) registers an id when the request is sent and offers the
//! result when a valid answer arrives; the connection takes it.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use serde_json::Value;

/// Raw JSON results of the requests whose results we pass through unnarrowed, keyed by the
/// JSON text of the request id. Only ids registered when the request was sent are kept, and the
/// caller takes (or forgets) each one, so the map holds at most the requests in flight.
#[derive(Default)]
pub(crate) struct RawResults {
    inner: Mutex<RawResultsInner>,
}

#[derive(Default)]
struct RawResultsInner {
    wanted: HashSet<String>,
    results: HashMap<String, Value>,
}

impl RawResults {
    pub(super) fn want(&self, id: String) {
        self.inner.lock().unwrap().wanted.insert(id);
    }

    pub(super) fn is_wanted(&self, id: &str) -> bool {
        self.inner.lock().unwrap().wanted.contains(id)
    }

    pub(super) fn offer(&self, id: String, result: Value) {
        let mut inner = self.inner.lock().unwrap();
        if inner.wanted.remove(&id) {
            inner.results.insert(id, result);
        }
    }

    /// The raw result of request `id`, if it arrived.
    pub(crate) fn take(&self, id: &str) -> Option<Value> {
        let mut inner = self.inner.lock().unwrap();
        inner.wanted.remove(id);
        inner.results.remove(id)
    }

    /// How many entries are held; for tests of boundedness.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        let inner = self.inner.lock().unwrap();
        inner.wanted.len() + inner.results.len()
    }
}

/// The JSON text of an rmcp request id, matching `Value::to_string` of the id on the wire.
pub(crate) fn id_key(id: &rmcp::model::RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_wanted_raw_results_are_kept() {
        let raw = RawResults::default();
        raw.offer("1".into(), serde_json::json!({"a": 1}));
        assert_eq!(raw.len(), 0);
        raw.want("2".into());
        raw.offer("2".into(), serde_json::json!({"b": 2}));
        assert_eq!(raw.take("2"), Some(serde_json::json!({"b": 2})));
        raw.want("3".into());
        assert_eq!(raw.take("3"), None);
        assert_eq!(raw.len(), 0);
    }
}
