//! `--progress` and `--no-progress`: whether a tool call asks the daemon for its progress and
//! server log messages (`progressId` and `callEvents`) and shows them on stderr.
//!
//! The choice is made here; where it leads (a bar on a terminal, one line per event for a pipe,
//! nothing) is decided with the terminal's presence in `run/progress.rs`.

use clap::Args;

/// The two flags, accepted anywhere on the line.
#[derive(Debug, Default, Args)]
pub(super) struct ProgressFlags {
    /// Show the call's progress and server log messages on stderr: a bar on a terminal, else
    /// one line per event (`progress 3/10 message`, `[server level] text`) [default: on when
    /// stderr is a terminal]
    #[arg(long, global = true, conflicts_with = "no_progress")]
    progress: bool,

    /// Do not ask for the call's progress, even on a terminal
    #[arg(long, global = true)]
    no_progress: bool,
}

impl ProgressFlags {
    /// Whether either flag was given.
    pub(super) fn given(&self) -> bool {
        self.progress || self.no_progress
    }

    /// The user's choice.
    pub(super) fn choice(&self) -> ProgressChoice {
        match (self.progress, self.no_progress) {
            (true, _) => ProgressChoice::On,
            (_, true) => ProgressChoice::Off,
            _ => ProgressChoice::Auto,
        }
    }
}

/// Whether a call shows its progress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum ProgressChoice {
    /// Neither flag: on when stderr is a terminal.
    #[default]
    Auto,
    /// `--progress`: on, as lines when stderr is not a terminal.
    On,
    /// `--no-progress`: off.
    Off,
}
