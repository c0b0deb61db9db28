//! Whether a search understood the request. The best hit is claimed `Confident` only when it is
//! close to the request in meaning and clearly ahead of the next tool; otherwise the outcome
//! says why not (`Ambiguous`: another tool scores nearly as well; `Weak`: nothing is close in
//! meaning), so a caller can tell "here is the tool" from "here is the nearest thing, which may
//! not be it" and ask again or say it cannot, instead of calling a confidently wrong tool.
//!
//! The rule was chosen on the dev halves of the five evaluation sets by searching every request
//! twice, with its answer and with its answer hidden (a catalog that cannot answer it): a
//! catalog without the answer leaves several near misses close together, which is what the
//! margin sees (docs/search.md, "Abstention"). Without a sentence model, a best hit that
//! matches at most half of the request's words is not claimed confident either, unless its
//! cosine alone is high: "remember a fact" led by `get_company_facts` on the one word "fact"
//! was claimed confident before (docs/search.md, "Fifth round").

/// How sure the search is that its best hit is what was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confidence {
    /// The best hit is close to the request in meaning and clearly ahead of the next one.
    Confident,
    /// Another tool scores within the margin of the best: the request does not say which.
    Ambiguous,
    /// The best hit is clearly ahead but not close to the request in meaning, or (without a
    /// sentence model) it matches at most half of the request's words: the catalog may have no
    /// tool for it.
    Weak,
    /// No tool matched at all.
    NoMatch,
}

impl Confidence {
    /// The name used on the wire and in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Confident => "confident",
            Confidence::Ambiguous => "ambiguous",
            Confidence::Weak => "weak",
            Confidence::NoMatch => "noMatch",
        }
    }
}

/// The least cosine between the request and the best hit (by the embedding that ranked) for a
/// confident answer.
pub const CONFIDENT_COSINE: f32 = 0.5;
/// The least lead of the best textual score over the second for a confident answer (the best
/// textual score is about 1). The same for the built-in embeddings and for a sentence model:
/// with the model 0.1 told answered from unanswerable requests slightly better on dev (Youden's
/// J 0.256 against 0.220) but claimed twice as many of the unanswerable ones (0.185 against
/// 0.104); one rule, on the side of saying "not sure".
pub const CONFIDENT_MARGIN: f32 = 0.2;
/// Without a sentence model, the best hit must match more than this share of the request's
/// words (or their synonyms) to be claimed confident, unless its cosine reaches
/// `CONFIDENT_COSINE_ALONE`. Chosen on the five dev halves as the rule that claimed fewest
/// unanswerable requests (0.181 → 0.127) without lowering Youden's J (0.216 both); with the
/// model every coverage floor lowered J (0.220 → 0.185 at this one), so it ranks as before.
pub const CONFIDENT_COVERAGE: f32 = 0.5;
/// The cosine at which a best hit is confident however few of the request's words it
/// matches (a paraphrase that shares no word with the tool).
pub const CONFIDENT_COSINE_ALONE: f32 = 0.65;

/// The best tool's textual score, its cosine with the request and the share of the request's
/// words (or their synonyms) it matched, the second's score, and whether a sentence model's
/// cosine ranked (`Embedder::is_sentence_model`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Leaders {
    pub best_score: f32,
    pub best_cosine: f32,
    pub best_coverage: f32,
    pub second_score: Option<f32>,
    pub by_model: bool,
}

/// The confidence of a ranking led by `leaders` (`None`: no hit).
pub fn assess(leaders: Option<Leaders>) -> Confidence {
    let Some(leaders) = leaders else {
        return Confidence::NoMatch;
    };
    if leaders
        .second_score
        .is_some_and(|second| leaders.best_score - second < CONFIDENT_MARGIN)
    {
        Confidence::Ambiguous
    } else if leaders.best_cosine < CONFIDENT_COSINE
        || (!leaders.by_model
            && leaders.best_coverage <= CONFIDENT_COVERAGE
            && leaders.best_cosine < CONFIDENT_COSINE_ALONE)
    {
        Confidence::Weak
    } else {
        Confidence::Confident
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaders(best_score: f32, best_cosine: f32, second_score: Option<f32>) -> Option<Leaders> {
        Some(Leaders {
            best_score,
            best_cosine,
            best_coverage: 1.0,
            second_score,
            by_model: false,
        })
    }

    #[test]
    fn no_hit_is_no_match() {
        assert_eq!(assess(None), Confidence::NoMatch);
    }

    #[test]
    fn a_clear_lead_close_in_meaning_is_confident() {
        assert_eq!(assess(leaders(1.0, 0.6, Some(0.7))), Confidence::Confident);
        // A single hit has no rival.
        assert_eq!(assess(leaders(0.4, 0.6, None)), Confidence::Confident);
    }

    #[test]
    fn a_near_tie_is_ambiguous_even_when_close_in_meaning() {
        assert_eq!(assess(leaders(1.0, 0.9, Some(0.85))), Confidence::Ambiguous);
    }

    #[test]
    fn a_clear_lead_far_in_meaning_is_weak() {
        assert_eq!(assess(leaders(1.0, 0.3, Some(0.5))), Confidence::Weak);
    }

    #[test]
    fn the_margin_and_the_cosine_floor_decide_at_their_values() {
        let lead = |margin: f32, cosine: f32| assess(leaders(1.0, cosine, Some(1.0 - margin)));
        assert_eq!(
            lead(CONFIDENT_MARGIN + 0.01, CONFIDENT_COSINE),
            Confidence::Confident
        );
        assert_eq!(lead(CONFIDENT_MARGIN - 0.01, 0.99), Confidence::Ambiguous);
        assert_eq!(
            lead(CONFIDENT_MARGIN + 0.01, CONFIDENT_COSINE - 0.01),
            Confidence::Weak
        );
    }

    fn covering(coverage: f32, cosine: f32, by_model: bool) -> Confidence {
        assess(Some(Leaders {
            best_score: 1.0,
            best_cosine: cosine,
            best_coverage: coverage,
            second_score: Some(0.5),
            by_model,
        }))
    }

    #[test]
    fn a_clear_lead_on_half_the_words_is_weak_unless_its_meaning_is_close() {
        // "remember a fact" led by get_company_facts on "fact" alone (cosine 0.56).
        assert_eq!(covering(0.5, 0.56, false), Confidence::Weak);
        assert_eq!(covering(0.67, 0.56, false), Confidence::Confident);
        assert_eq!(
            covering(0.0, CONFIDENT_COSINE_ALONE, false),
            Confidence::Confident
        );
        assert_eq!(
            covering(CONFIDENT_COVERAGE, CONFIDENT_COSINE_ALONE - 0.01, false),
            Confidence::Weak
        );
    }

    #[test]
    fn with_a_sentence_model_the_coverage_does_not_count() {
        assert_eq!(covering(0.5, 0.56, true), Confidence::Confident);
        assert_eq!(
            covering(0.5, CONFIDENT_COSINE - 0.01, true),
            Confidence::Weak
        );
    }

    #[test]
    fn the_names_are_those_of_the_wire() {
        let names: Vec<&str> = [
            Confidence::Confident,
            Confidence::Ambiguous,
            Confidence::Weak,
            Confidence::NoMatch,
        ]
        .iter()
        .map(|c| c.as_str())
        .collect();
        assert_eq!(names, ["confident", "ambiguous", "weak", "noMatch"]);
    }
}
