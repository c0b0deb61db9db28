//! Abstention: does the search know when it does not know? Each dev request is searched twice,
//! once over the whole catalog and once with its answer hidden (a catalog that cannot answer
//! it); the first is judged by whether a hit claimed `Confident` is right, the second by how
//! often its best hit is still claimed `Confident` (every such claim is wrong). `search-eval
//! --abstention` prints these figures per set; `tests/eval.rs` guards them on our set.

use super::Request;
use crate::index::Index;
use crate::search::{Confidence, Query, SearchOutcome};

/// The abstention figures of one set (or their macro-average), each a share in [0, 1].
#[derive(Clone, Copy, Debug, Default)]
pub struct Abstention {
    /// With the answer present: the share of requests whose best hit is claimed confident.
    pub claimed: f64,
    /// Of those, the share whose best hit is right.
    pub precision: f64,
    /// R@1 of the requests not claimed confident.
    pub unsure_right: f64,
    /// With the answer hidden: the share of requests whose (necessarily wrong) best hit is
    /// still claimed confident.
    pub false_confidence: f64,
}

fn search(index: &Index, text: &str, hidden: Option<&[(String, String)]>) -> Option<SearchOutcome> {
    let visible = |server: &str, tool: &str| {
        hidden.is_none_or(|hidden| !hidden.iter().any(|(s, t)| s == server && t == tool))
    };
    let query = Query {
        limit: 10,
        visible: hidden.map(|_| &visible as &dyn Fn(&str, &str) -> bool),
        ..Query::new(text)
    };
    index.search(&query).ok()
}

/// The abstention figures of `requests` over `index`; with `dump`, one line per request and
/// condition (`present|hidden`, right at 1, the confidence, the best hit's cosine and score,
/// the second's score) for choosing the rule's thresholds.
pub fn abstention(index: &Index, requests: &[Request], dump: &mut Option<String>) -> Abstention {
    let mut claimed = 0usize;
    let mut claimed_right = 0usize;
    let mut unsure = 0usize;
    let mut unsure_right = 0usize;
    let mut false_claims = 0usize;
    for request in requests {
        for hidden in [None, Some(request.expected.as_slice())] {
            let Some(outcome) = search(index, &request.query, hidden) else {
                continue;
            };
            let right = outcome.hits.first().is_some_and(|hit| {
                request
                    .expected
                    .iter()
                    .any(|(s, t)| *s == hit.server && *t == hit.tool)
            });
            let confident = outcome.confidence == Confidence::Confident;
            if let Some(dump) = dump {
                let best = outcome.hits.first();
                dump.push_str(&format!(
                    "{}\t{}\t{:?}\t{:.4}\t{:.4}\t{:.4}\t{:.4}\n",
                    if hidden.is_some() {
                        "hidden"
                    } else {
                        "present"
                    },
                    u8::from(right),
                    outcome.confidence,
                    best.map_or(0.0, |h| h.why.semantic),
                    best.map_or(0.0, |h| h.score),
                    outcome.hits.get(1).map_or(0.0, |h| h.score),
                    outcome.evidence.map_or(0.0, |e| e.best_coverage),
                ));
            }
            match (hidden, confident) {
                (Some(_), true) => false_claims += 1,
                (Some(_), false) => {}
                (None, true) => {
                    claimed += 1;
                    claimed_right += usize::from(right);
                }
                (None, false) => {
                    unsure += 1;
                    unsure_right += usize::from(right);
                }
            }
        }
    }
    let share = |part: usize, whole: usize| {
        if whole == 0 {
            0.0
        } else {
            part as f64 / whole as f64
        }
    };
    Abstention {
        claimed: share(claimed, requests.len()),
        precision: share(claimed_right, claimed),
        unsure_right: share(unsure_right, unsure),
        false_confidence: share(false_claims, requests.len()),
    }
}
