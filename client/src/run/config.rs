//! `tool-cli config import`: runs `tool-cli-daemon import` (found as `daemon start` finds it)
//! and passes its report on; its refusal becomes a usage error (exit 2) with its message.

use std::process::Stdio;

use super::daemon::daemon_binary;
use super::output::Output;
use crate::args::ConfigImport;
use crate::error::Error;

/// The prefix `tool-cli-daemon` puts before its error messages.
const DAEMON_ERROR_PREFIX: &str = "tool-cli-daemon: error: ";

pub(crate) fn import(import: &ConfigImport, output: &mut Output<'_>) -> Result<(), Error> {
    let binary = daemon_binary()?;
    let ran = std::process::Command::new(&binary)
        .args(import.daemon_args(output.json))
        .stdin(Stdio::null())
        .output()
        .map_err(|error| Error::Other(format!("cannot run {}: {error}", binary.display())))?;
    let stdout = String::from_utf8_lossy(&ran.stdout);
    if !ran.status.success() {
        let stderr = String::from_utf8_lossy(&ran.stderr);
        let message = stderr.trim();
        let message = message.strip_prefix(DAEMON_ERROR_PREFIX).unwrap_or(message);
        return Err(Error::Usage(message.to_owned()));
    }
    if output.json {
        let value: serde_json::Value = serde_json::from_str(&stdout).map_err(|error| {
            Error::Other(format!(
                "tool-cli-daemon import printed invalid JSON: {error}"
            ))
        })?;
        return output.emit_json(&value);
    }
    output.emit_text(stdout.trim_end())
}
