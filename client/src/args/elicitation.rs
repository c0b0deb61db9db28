//! `--elicitation ask|decline`: what a tool call does when its server asks the user something
//! in the middle of the call (an MCP elicitation the daemon relays, `"elicitation": "ask"` in
//! the server's config).
//!
//! The choice is made here; where it leads (a form on stderr, or a decline) is decided with the
//! terminals' presence in `run/elicitation.rs`.

use clap::{Args, ValueEnum};

/// The flag, accepted anywhere on the line.
#[derive(Debug, Default, Args)]
pub(super) struct ElicitationFlags {
    /// When the server asks a question during the call: `ask` shows a form on stderr and reads
    /// the answers from stdin (even when they are not terminals), `decline` declines it
    /// [default: ask when stdin and stderr are terminals, else decline]
    #[arg(long, global = true, value_name = "WHAT")]
    elicitation: Option<ElicitationFlag>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ElicitationFlag {
    Ask,
    Decline,
}

impl ElicitationFlags {
    /// Whether the flag was given.
    pub(super) fn given(&self) -> bool {
        self.elicitation.is_some()
    }

    /// The user's choice.
    pub(super) fn choice(&self) -> ElicitationChoice {
        match self.elicitation {
            None => ElicitationChoice::Auto,
            Some(ElicitationFlag::Ask) => ElicitationChoice::Ask,
            Some(ElicitationFlag::Decline) => ElicitationChoice::Decline,
        }
    }
}

/// What a call does with a server's question.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum ElicitationChoice {
    /// No flag: ask when stdin and stderr are terminals, else decline.
    #[default]
    Auto,
    /// `--elicitation ask`: show the form and read stdin, terminal or not.
    Ask,
    /// `--elicitation decline`.
    Decline,
}
