//! Field-aware late interaction over the built-in static token table: each token of the request
//! is compared with every token of a tool's name and of its description's opening, and counts by
//! its best match (MaxSim, as ColBERT scores, above a noise floor), the name's matches weighing more than the
//! description's. A mean of token vectors (the built-in embedding) blurs a request's few telling
//! tokens into its chatter; token by token, "remember" meets "memory" in a name even when the
//! rest of the request is about something else.
//!
//! The score of a tool is `Σ_q a_q · max_f (w_f · max_{t ∈ f} cos(q, t)) / Σ_q a_q` over the
//! request's distinct tokens `q` (weight `a_q`: the length of the token's row, which the table
//! scales by rarity), the fields `f` (name, description) and their tokens `t`, each best match
//! `m` counting `max(0, (m − 0.3) / 0.7)`; in [0, 1].

use crate::static_embed::TokenVectors;

/// The weight of the score in the rerank stage (times the lexical share 1 − σ, as the rerank
/// correction): the best of 0.05, 0.1, 0.2 and 0.4 on the five dev halves.
pub(crate) const WEIGHT: f32 = 0.2;
/// A token of the request found in the tool's name counts fully; in its description, 0.8 of
/// that (0.5 and 1.0 measured: within a request of each other).
pub(crate) const NAME_WEIGHT: f32 = 1.0;
pub(crate) const DESCRIPTION_WEIGHT: f32 = 0.8;
/// Best matches below this cosine count nothing and the rest are rescaled to [0, 1]: most
/// tokens have a weak likeness to most others, which otherwise adds the same to every tool.
/// (0 / 0.3 / 0.5 / 0.7 measured; 0.3 best, by a request.)
const NOISE_FLOOR: f32 = 0.3;

/// A tool's fields as the scorer sees them, each with its weight.
pub(crate) struct Fields<'a> {
    pub(crate) fields: &'a [(&'a TokenVectors, f32)],
}

/// The late-interaction score of a tool of fields `fields` for the request's tokens `query`;
/// 0 when the request has no token.
pub(crate) fn score(query: &TokenVectors, fields: &Fields<'_>) -> f32 {
    let mut weighted = 0.0f32;
    let mut total = 0.0f32;
    for n in 0..query.len() {
        let weight = query.weights[n];
        total += weight;
        let q = query.unit(n);
        let mut best = 0.0f32;
        for &(field, field_weight) in fields.fields {
            for m in 0..field.len() {
                let t = field.unit(m);
                let cosine: f32 = q.iter().zip(t).map(|(a, b)| a * b).sum();
                best = best.max(field_weight * cosine);
            }
        }
        let best = ((best - NOISE_FLOOR) / (1.0 - NOISE_FLOOR)).max(0.0);
        weighted += weight * best;
    }
    if total > 0.0 { weighted / total } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::static_embed::built_in;

    fn tokens(text: &str) -> TokenVectors {
        let mut out = TokenVectors::default();
        built_in().token_vectors(text, &mut out);
        out
    }

    #[test]
    fn a_tool_naming_the_request_s_tokens_scores_highest_and_scores_stay_in_0_1() {
        let query = tokens("remember this fact about me");
        let memory_name = tokens("create memory");
        let memory_description = tokens("Store a new memory for later recall");
        let time_name = tokens("get current time");
        let time_description = tokens("Get the current time in a timezone");
        let memory = score(
            &query,
            &Fields {
                fields: &[(&memory_name, 1.0), (&memory_description, 0.8)],
            },
        );
        let time = score(
            &query,
            &Fields {
                fields: &[(&time_name, 1.0), (&time_description, 0.8)],
            },
        );
        assert!(memory > time, "{memory} {time}");
        assert!((0.0..=1.0).contains(&memory) && (0.0..=1.0).contains(&time));
        // Identical text: every token finds itself.
        let same = score(
            &query,
            &Fields {
                fields: &[(&query, 1.0)],
            },
        );
        assert!((same - 1.0).abs() < 1e-4, "{same}");
    }

    #[test]
    fn a_request_of_only_stop_words_scores_zero() {
        let query = tokens("who are you");
        assert_eq!(query.len(), 0);
        let name = tokens("whoami");
        assert_eq!(
            score(
                &query,
                &Fields {
                    fields: &[(&name, 1.0)]
                }
            ),
            0.0
        );
    }
}
