//! Where things live: a path written in the config (`${VAR}`, `~/`, relative to the file), the
//! daemon's state directory, and which files the daemon trusts (a config or token file another
//! user may write is refused).

use std::path::{Path, PathBuf};

use super::variables::{VariableError, substitute};

/// Why a path in the config cannot be used; the caller names the member.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ConfigPathError {
    /// A `${VAR}` in it cannot be substituted.
    #[error(transparent)]
    Variable(#[from] VariableError),
    /// `~/…` without a home to expand it from.
    #[error("starts with ~/ but HOME is not set; expected an absolute path")]
    NoHome,
    /// A relative path where no config file gives it a directory.
    #[error("\"{}\" is relative; expected an absolute path", .0.display())]
    Relative(PathBuf),
}

/// Why a file the daemon would trust is refused; each message says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PrivateFileError {
    /// Owned by a user other than the daemon's and not by root.
    #[error(
        "the {what} {} belongs to user id {owner}, not to the daemon's user ({ours}) or root; \
         refusing it (whoever owns it chooses what the daemon runs; copy it into a file of \
         your own)",
        path.display()
    )]
    ForeignOwner {
        /// What the file is for ("config file", "token file").
        what: String,
        /// The file.
        path: PathBuf,
        /// Its owner's user id.
        owner: u32,
        /// The daemon's user id.
        ours: u32,
    },
    /// Writable by its group or by everyone.
    #[error(
        "the {what} {} has mode {mode:o}, writable by other users; refusing it (fix with: \
         chmod go-w {})",
        path.display(),
        path.display()
    )]
    WritableByOthers {
        /// What the file is for.
        what: String,
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

/// Refuses a file that anyone but its owner may write, or that a user other than the daemon's
/// (or root) owns: such a file lets another user choose which programs the daemon runs (a
/// config, another client's config it imports) or its token (a token file). A missing file is
/// left for the reader to report.
pub fn check_private(path: &Path, what: &str) -> Result<(), PrivateFileError> {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    // SAFETY: getuid cannot fail and has no preconditions.
    let ours = unsafe { libc::getuid() };
    if meta.uid() != ours && meta.uid() != 0 {
        return Err(PrivateFileError::ForeignOwner {
            what: what.to_owned(),
            path: path.to_owned(),
            owner: meta.uid(),
            ours,
        });
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(PrivateFileError::WritableByOthers {
            what: what.to_owned(),
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

/// A path from the config: `${VAR}` substituted, `~/` expanded from `HOME`, and a relative path
/// taken relative to the config file's directory (not to wherever the daemon was started).
/// The error says what is wrong, for the caller to name the member.
pub(crate) fn config_path(
    text: &str,
    config_dir: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf, ConfigPathError> {
    let text = substitute(text, env)?;
    let path = match text.strip_prefix("~/") {
        Some(rest) => match env("HOME").filter(|home| !home.is_empty()) {
            Some(home) => Path::new(&home).join(rest),
            None => return Err(ConfigPathError::NoHome),
        },
        None => PathBuf::from(text),
    };
    if path.is_absolute() {
        return Ok(path);
    }
    match config_dir {
        Some(dir) => Ok(dir.join(path)),
        None => Err(ConfigPathError::Relative(path)),
    }
}

/// The daemon's state directory: `$XDG_STATE_HOME/tool-cli`, else `~/.local/state/tool-cli`.
/// A relative `XDG_STATE_HOME` is ignored, as the XDG spec says.
pub fn state_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(state) = env("XDG_STATE_HOME").filter(|dir| Path::new(dir).is_absolute()) {
        return Some(Path::new(&state).join("tool-cli"));
    }
    let home = env("HOME").filter(|home| !home.is_empty())?;
    Some(Path::new(&home).join(".local/state/tool-cli"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "HOME").then(|| "/home/me".to_owned())
    }

    #[test]
    fn the_state_directory_follows_xdg_then_home() {
        let xdg = |name: &str| match name {
            "XDG_STATE_HOME" => Some("/xdg/state".to_owned()),
            other => env(other),
        };
        assert_eq!(state_dir(&xdg), Some("/xdg/state/tool-cli".into()));
        let relative = |name: &str| match name {
            "XDG_STATE_HOME" => Some("state".to_owned()),
            other => env(other),
        };
        assert_eq!(
            state_dir(&relative),
            Some("/home/me/.local/state/tool-cli".into())
        );
        assert_eq!(state_dir(&|_| None), None);
    }
}
