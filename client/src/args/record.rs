//! `tool-cli record --server S --out FILE [--calls N | --for SECS]` (and `--stop`): what to
//! record and when to stop. The file is the global `--out`, made absolute here because the daemon that writes
//! it does not share the caller's working directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use crate::error::Error;

/// clap's view of `tool-cli record`.
#[derive(Debug, Args)]
pub(crate) struct RecordArgs {
    /// The configured server to record (a stdio server)
    #[arg(long, value_name = "SERVER")]
    pub(crate) server: String,
    /// Stop once N tool calls to the server are answered (by any caller)
    #[arg(long, value_name = "N", conflicts_with = "for_seconds")]
    pub(crate) calls: Option<u64>,
    /// Stop after SECS seconds
    #[arg(long = "for", value_name = "SECS", conflicts_with = "calls")]
    pub(crate) for_seconds: Option<u64>,
    /// End a recording whose `tool-cli record` is gone (killed before it could stop it)
    #[arg(long, conflicts_with_all = ["calls", "for_seconds"])]
    pub(crate) stop: bool,
}

/// When a recording ends (Ctrl-C or SIGTERM end it in any case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordUntil {
    /// Until interrupted.
    Interrupted,
    /// Until this many tool calls are answered.
    Calls(u64),
    /// Until this much time has passed.
    Elapsed(Duration),
    /// At once: `--stop` ends a recording started earlier.
    Now,
}

/// `tool-cli record`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordCommand {
    pub(crate) server: String,
    /// The recording file, absolute.
    pub(crate) out: PathBuf,
    pub(crate) until: RecordUntil,
}

/// Checks `args` with the global `--out` (required) resolved against `cwd`.
pub(crate) fn command(
    args: RecordArgs,
    out: Option<&Path>,
    cwd: &Path,
) -> Result<RecordCommand, Error> {
    if args.stop {
        return Ok(RecordCommand {
            server: args.server,
            out: out.map(|out| cwd.join(out)).unwrap_or_default(),
            until: RecordUntil::Now,
        });
    }
    let Some(out) = out else {
        return Err(Error::Usage(format!(
            "tool-cli record needs the file to write: tool-cli record --server {} --out FILE",
            args.server
        )));
    };
    let until = match (args.calls, args.for_seconds) {
        (Some(0), _) => {
            return Err(Error::Usage(
                "--calls 0 would record nothing; expected a positive count".to_owned(),
            ));
        }
        (_, Some(0)) => {
            return Err(Error::Usage(
                "--for 0 would record nothing; expected a positive number of seconds".to_owned(),
            ));
        }
        (Some(calls), _) => RecordUntil::Calls(calls),
        (_, Some(seconds)) => RecordUntil::Elapsed(Duration::from_secs(seconds)),
        (None, None) => RecordUntil::Interrupted,
    };
    Ok(RecordCommand {
        server: args.server,
        out: cwd.join(out),
        until,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(calls: Option<u64>, for_seconds: Option<u64>) -> RecordArgs {
        RecordArgs {
            server: "everything".to_owned(),
            calls,
            for_seconds,
            stop: false,
        }
    }

    #[test]
    fn the_file_is_made_absolute_and_the_end_is_chosen() {
        let cwd = Path::new("/home/me/work");
        let command = command(args(Some(3), None), Some(Path::new("rec.ndjson")), cwd).unwrap();
        assert_eq!(command.out, Path::new("/home/me/work/rec.ndjson"));
        assert_eq!(command.until, RecordUntil::Calls(3));
        let command = command_for(args(None, Some(5)), "/tmp/rec.ndjson");
        assert_eq!(command.out, Path::new("/tmp/rec.ndjson"));
        assert_eq!(command.until, RecordUntil::Elapsed(Duration::from_secs(5)));
        let command = command_for(args(None, None), "/tmp/rec.ndjson");
        assert_eq!(command.until, RecordUntil::Interrupted);
    }

    fn command_for(args: RecordArgs, out: &str) -> RecordCommand {
        command(args, Some(Path::new(out)), Path::new("/")).unwrap()
    }

    #[test]
    fn a_missing_file_or_an_empty_end_is_refused() {
        let cwd = Path::new("/");
        let missing = command(args(None, None), None, cwd)
            .unwrap_err()
            .to_string();
        assert!(missing.contains("--out FILE"), "{missing}");
        let none = command(args(Some(0), None), Some(Path::new("f")), cwd)
            .unwrap_err()
            .to_string();
        assert!(none.contains("positive"), "{none}");
        let none = command(args(None, Some(0)), Some(Path::new("f")), cwd)
            .unwrap_err()
            .to_string();
        assert!(none.contains("positive"), "{none}");
    }
}
