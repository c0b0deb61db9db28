//! Priors: what the daemon knows about tools beyond their text (which tool tends to follow the
//! one just used in this session, how often a tool succeeds, how fast it answers), as a trait the
//! ranking asks and the daemon implements.
//!
//! Every prior is a number in [0, 1] (values outside are clamped) and enters the score with a
//! small fixed weight (`search.rs`), so together they can move a tool by at most
//! `MAX_PRIOR_BONUS` of the best textual score: they reorder near-ties and never bury a strong
//! textual match.

/// A tool, by server and name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ToolRef<'a> {
    /// The server's name.
    pub server: &'a str,
    /// The tool's name on that server.
    pub tool: &'a str,
}

/// Per-tool evidence the daemon supplies to the ranking. All methods return a value in [0, 1];
/// 0 means "no evidence" and adds nothing.
pub trait Priors {
    /// How likely `candidate` is to be used right after `previous` in this session (for example
    /// the share of `previous` calls that `candidate` followed, smoothed).
    fn inertia(&self, previous: ToolRef<'_>, candidate: ToolRef<'_>) -> f32;

    /// How reliable `candidate` has been (for example a smoothed success rate).
    fn reliability(&self, candidate: ToolRef<'_>) -> f32;

    /// How fast `candidate` answers, 1 for the fastest (for example `1 / (1 + p50 / 1 s)`).
    fn latency(&self, candidate: ToolRef<'_>) -> f32;
}

/// Priors that know nothing: every value is 0, so ranking is purely textual.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoPriors;

impl Priors for NoPriors {
    fn inertia(&self, _previous: ToolRef<'_>, _candidate: ToolRef<'_>) -> f32 {
        0.0
    }

    fn reliability(&self, _candidate: ToolRef<'_>) -> f32 {
        0.0
    }

    fn latency(&self, _candidate: ToolRef<'_>) -> f32 {
        0.0
    }
}
