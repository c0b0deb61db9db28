//! The runtime file: how a client finds a daemon when `TOOL_CLI_PORT` / `TOOL_CLI_TOKEN` are unset.
//!
//! The daemon writes it at start-up (mode 0600, in a 0700 directory) and removes it on exit. Its
//! location is `$TOOL_CLI_RUNTIME_DIR/daemon.json` when that is set, else
//! `$XDG_RUNTIME_DIR/tool-cli/daemon.json`, else `<temp dir>/tool-cli-<uid>/daemon.json`. The
//! directory part is computed here from values the caller reads, so this crate stays free of I/O.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// File name of the runtime file inside its directory.
pub const RUNTIME_FILE_NAME: &str = "daemon.json";

/// Contents of the runtime file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeFile {
    /// Address the daemon listens on.
    pub host: String,
    /// TCP port the daemon listens on.
    pub port: u16,
    /// The bearer token.
    pub token: String,
    /// Process id of the daemon.
    pub pid: u32,
    /// Version of the daemon.
    pub version: String,
    /// The Unix socket the daemon listens on instead of TCP (`--socket`); `port` is 0 then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<String>,
}

/// The runtime directory, from the values of `TOOL_CLI_RUNTIME_DIR`, `XDG_RUNTIME_DIR`, the
/// system temp directory and the user id.
pub fn runtime_dir(
    tool_cli_runtime_dir: Option<PathBuf>,
    xdg_runtime_dir: Option<PathBuf>,
    temp_dir: PathBuf,
    uid: u32,
) -> PathBuf {
    let non_empty = |dir: &Option<PathBuf>| dir.as_ref().is_some_and(|d| !d.as_os_str().is_empty());
    if non_empty(&tool_cli_runtime_dir) {
        return tool_cli_runtime_dir.unwrap_or_default();
    }
    if non_empty(&xdg_runtime_dir) {
        return xdg_runtime_dir.unwrap_or_default().join("tool-cli");
    }
    temp_dir.join(format!("tool-cli-{uid}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_dir_prefers_override_then_xdg_then_temp() {
        let tmp = PathBuf::from("/tmp");
        assert_eq!(
            runtime_dir(Some("/o".into()), Some("/x".into()), tmp.clone(), 7),
            PathBuf::from("/o")
        );
        assert_eq!(
            runtime_dir(None, Some("/x".into()), tmp.clone(), 7),
            PathBuf::from("/x/tool-cli")
        );
        assert_eq!(
            runtime_dir(Some("".into()), Some("".into()), tmp, 7),
            PathBuf::from("/tmp/tool-cli-7")
        );
    }
}
