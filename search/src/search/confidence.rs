//! Whether a search understood the request. The best hit is claimed `Confident` only when it is
//! close to the request in meaning and clearly ahead of the next tool; otherwise the outcome
//! says why not (`Ambiguous`: another tool scores nearly as well; `Weak`: nothing is close in
//! meaning), so a caller can tell "here is the tool" from "here is the nearest thing, which may
//! not be it" and ask again or say it cannot, instead of calling a confidently wrong tool.
//!
//! The rule was chosen on the dev halves of the five evaluation sets by searching every request
//! twice, with its answer and with its answer hidden (a catalog that cannot answer it): a
//! catalog without the answer leaves several near misses close together, which is what the
//! margin sees (docs/search.md, "Abstention").

/// How sure the search is that its best hit is what was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confidence {
    /// The best hit is close to the request in meaning and clearly ahead of the next one.
    Confident,
    /// Another tool scores within the margin of the best: the request does not say which.
    Ambiguous,
    /// The best hit is clearly ahead but not close to the request in meaning: the catalog may
    /// have no tool for it.
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

/// The best tool's textual score and cosine with the request, and the second's score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Leaders {
    pub best_score: f32,
    pub best_cosine: f32,
    pub second_score: Option<f32>,
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
    } else if leaders.best_cosine < CONFIDENT_COSINE {
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
            second_score,
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
