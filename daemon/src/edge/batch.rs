//! JSON-RPC batches, answered concurrently and in order: the split and the join.
//!
//! jsonrpsee's server ran a batch's requests one after the other, so five one-second tool calls
//! in one batch took five seconds. The dispatch (`dispatch/jsonrpc.rs`) runs them at once
//! instead: [`plan`] splits a batch into its entries, each entry that is a request runs as it
//! would alone (same grant, the batch's length attached so each answer keeps to its share of the
//! response limit), and [`join`] puts their answers into one array in request order. What each
//! entry answers does not change: an error stays that entry's error, a notification is not run
//! and gets no entry, and an entry that is not a request object gets `-32600`.
//!
//! Both are pure; the dispatch does the running.

use hyper::body::Bytes;
use serde_json::value::RawValue;

use crate::edge::shape::{self, Shape};

/// What to do with one entry of a batch.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Entry<'a> {
    /// Run it as a request of its own (a request, or an object answered with an error naming
    /// its id).
    Run(&'a str),
    /// A notification: not run, no answer (as for a notification sent alone).
    Skip,
    /// Not a request object (a number, a string, a nested array, an object without a usable
    /// id): answered `-32600` with a null id.
    Invalid,
}

/// Splits a batch body into its entries and says what to do with each; `None` if the body is not
/// a JSON array (the dispatch has already checked it is).
pub(crate) fn plan(body: &[u8]) -> Option<Vec<Entry<'_>>> {
    let entries: Vec<&RawValue> = serde_json::from_slice(body).ok()?;
    Some(
        entries
            .into_iter()
            .map(|entry| {
                let text = entry.get();
                match shape::shape(text.as_bytes()) {
                    Shape::PassThrough => Entry::Run(text),
                    Shape::Notifications if text.starts_with('{') => Entry::Skip,
                    // A nested array is not a request, whatever it holds.
                    _ => Entry::Invalid,
                }
            })
            .collect(),
    )
}

/// Joins the entries' answers, in request order, into the batch's answer array.
pub(crate) fn join(answers: &[Bytes]) -> Vec<u8> {
    let total: usize = answers.iter().map(|answer| answer.len() + 1).sum();
    let mut body = Vec::with_capacity(total + 1);
    body.push(b'[');
    for (index, answer) in answers.iter().enumerate() {
        if index > 0 {
            body.push(b',');
        }
        body.extend_from_slice(answer);
    }
    body.push(b']');
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_run_skipped_or_refused_in_order() {
        let body = br#"[{"jsonrpc":"2.0","id":1,"method":"a"}, {"jsonrpc":"2.0","method":"note"},
            42, [1], {"hello":1}, {"jsonrpc":"2.0","id":"x","method":"b","params":{"k":[1,2]}}]"#;
        let entries = plan(body).expect("an array");
        assert_eq!(
            entries,
            vec![
                Entry::Run(r#"{"jsonrpc":"2.0","id":1,"method":"a"}"#),
                Entry::Skip,
                Entry::Invalid,
                Entry::Invalid,
                Entry::Invalid,
                Entry::Run(r#"{"jsonrpc":"2.0","id":"x","method":"b","params":{"k":[1,2]}}"#),
            ]
        );
        assert_eq!(plan(b"{\"id\":1}"), None);
    }

    #[test]
    fn answers_join_into_one_array_in_order() {
        let answers = [
            Bytes::from_static(br#"{"id":2}"#),
            Bytes::from_static(br#"{"id":1}"#),
        ];
        assert_eq!(join(&answers), br#"[{"id":2},{"id":1}]"#);
        let parsed: serde_json::Value = serde_json::from_slice(&join(&answers)).unwrap();
        assert_eq!(parsed[0]["id"], 2);
    }
}
