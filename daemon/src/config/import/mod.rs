//! Importing the MCP servers other clients already know: Claude Desktop, Claude Code, Cursor,
//! VS Code, Windsurf, Codex and OpenCode.
//!
//! Everything here but [`read`] is pure: where each client keeps its file (`paths.rs`, from an
//! injected home, working directory and OS, so tests never read the real `$HOME`), how each
//! file's text becomes our `mcpServers` entries (`formats.rs`, reusing `client_fields.rs` for the
//! fields other clients write), and how entries merge into our config file (`merge.rs`: new
//! names added, identical ones left, different ones reported as conflicts and never
//! overwritten). Nothing is silently dropped: a field we cannot translate is reported with the
//! server's name, and so is a server we cannot import at all.

pub mod command;
mod formats;
pub(crate) mod live;
mod merge;
mod opencode;
mod paths;
mod variables;

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

pub use merge::{MergeError, MergeOutcome, merge};
pub use paths::{Os, Places, candidates};

/// A client whose config we read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientKind {
    /// Claude Desktop's `claude_desktop_config.json`.
    ClaudeDesktop,
    /// Claude Code's `.mcp.json` (project) and `~/.claude.json` (user, and per project).
    ClaudeCode,
    /// Cursor's `~/.cursor/mcp.json` and `.cursor/mcp.json`.
    Cursor,
    /// VS Code's `.vscode/mcp.json` (`servers`, `inputs`).
    VsCode,
    /// Windsurf's `~/.codeium/windsurf/mcp_config.json`.
    Windsurf,
    /// Codex's `~/.codex/config.toml` (`[mcp_servers.NAME]`).
    Codex,
    /// OpenCode's `opencode.json` (project) and `~/.config/opencode/opencode.json` (`mcp`).
    OpenCode,
}

impl ClientKind {
    /// Every kind, in the order `--from` lists them.
    pub const ALL: [ClientKind; 7] = [
        ClientKind::ClaudeDesktop,
        ClientKind::ClaudeCode,
        ClientKind::Cursor,
        ClientKind::VsCode,
        ClientKind::Windsurf,
        ClientKind::Codex,
        ClientKind::OpenCode,
    ];

    /// The name `--from` and `imports` take.
    pub fn name(self) -> &'static str {
        match self {
            ClientKind::ClaudeDesktop => "claude-desktop",
            ClientKind::ClaudeCode => "claude-code",
            ClientKind::Cursor => "cursor",
            ClientKind::VsCode => "vscode",
            ClientKind::Windsurf => "windsurf",
            ClientKind::Codex => "codex",
            ClientKind::OpenCode => "opencode",
        }
    }

    /// The kind named `name`, or an error listing the names.
    pub fn from_name(name: &str) -> Result<ClientKind, ImportError> {
        ClientKind::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
            .ok_or_else(|| ImportError::UnknownClient(name.to_owned()))
    }
}

impl fmt::Display for ClientKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One server found in another client's file, in our `mcpServers` entry format.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundServer {
    /// Its name.
    pub name: String,
    /// Its entry, in our field names.
    pub entry: Map<String, Value>,
    /// What was translated, and what could not be (with what to do instead).
    pub notes: Vec<String>,
}

/// What one file held.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Found {
    /// The file read.
    pub path: PathBuf,
    /// The servers we can run.
    pub servers: Vec<FoundServer>,
    /// Servers we could not import at all, and why.
    pub skipped: Vec<String>,
    /// Things about the file as a whole (VS Code's `inputs`, other projects' servers).
    pub notes: Vec<String>,
}

/// Why an import failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// `--from` named no client we know.
    #[error(
        "unknown client \"{0}\"; expected one of claude-desktop, claude-code, cursor, vscode, \
         windsurf, codex, opencode"
    )]
    UnknownClient(String),
    /// None of the client's usual files exists.
    #[error("no {kind} config found; looked for {looked}; give the file with --path FILE")]
    NotFound {
        /// The client.
        kind: ClientKind,
        /// Every place looked at, comma-separated.
        looked: String,
    },
    /// The file may be written by someone other than its owner, or is owned by another user:
    /// its servers would run as the daemon's user.
    #[error("refusing {path}: {reason}")]
    Untrusted {
        /// The file.
        path: String,
        /// What is wrong with its owner or mode, and how to fix it.
        reason: String,
    },
    /// The file could not be read.
    #[error("cannot read {path}: {reason}")]
    Unreadable {
        /// The file.
        path: String,
        /// The OS's reason.
        reason: String,
    },
    /// The file is not what the client writes.
    #[error("{path} is not a valid {kind} config: {reason}")]
    Malformed {
        /// The file.
        path: String,
        /// The client.
        kind: ClientKind,
        /// What is wrong, and what was expected.
        reason: String,
    },
    /// The file to import is the config file it would be merged into.
    #[error(
        "{0} is tool-cli's own config file; importing it into itself would change nothing \
         (give another client's file with --path, or another --config)"
    )]
    ImportsItself(String),
    /// Our own config file could not be read, parsed or written.
    #[error("our config file {path}: {reason}")]
    OwnConfig {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
}

/// Parses the text of `kind`'s file at `path`; `project` is the directory a per-project file
/// belongs to (Claude Code's `projects`, VS Code's `${workspaceFolder}`).
pub fn parse(
    kind: ClientKind,
    text: &str,
    path: &Path,
    project: &Path,
) -> Result<Found, ImportError> {
    parse_in(kind, text, path, Some(project))
}

/// [`parse`], with no project at all when `project` is `None`: a user file's per-project
/// servers are then left out (with a note), and `${workspaceFolder}` kept.
fn parse_in(
    kind: ClientKind,
    text: &str,
    path: &Path,
    project: Option<&Path>,
) -> Result<Found, ImportError> {
    let malformed = |error: formats::FormatError| ImportError::Malformed {
        path: path.display().to_string(),
        kind,
        reason: error.to_string(),
    };
    let mut found = match kind {
        ClientKind::Codex => formats::codex(text).map_err(malformed)?,
        ClientKind::OpenCode => opencode::opencode(text).map_err(malformed)?,
        ClientKind::VsCode => {
            // VS Code's file is always a project's: its directory is the project.
            let project = project.unwrap_or_else(|| path.parent().unwrap_or(path));
            formats::vscode(text, project).map_err(malformed)?
        }
        ClientKind::ClaudeCode => formats::claude_code(text, project).map_err(malformed)?,
        ClientKind::ClaudeDesktop | ClientKind::Cursor | ClientKind::Windsurf => {
            formats::mcp_servers(text, kind, project).map_err(malformed)?
        }
    };
    found.path = path.to_path_buf();
    Ok(found)
}

/// Reads `kind`'s file: `explicit` if given, else the first of its usual places that exists
/// (a project's files only when `places` names a project). A file anyone but its owner may
/// write, or that another user owns, is refused, as the config file is: its servers would run
/// as the daemon's user.
pub fn read(
    kind: ClientKind,
    explicit: Option<&Path>,
    places: &Places,
) -> Result<Found, ImportError> {
    let path = match explicit {
        Some(path) => path.to_path_buf(),
        None => {
            let candidates = candidates(kind, places);
            match candidates.iter().find(|path| path.is_file()) {
                Some(path) => path.clone(),
                None => {
                    return Err(ImportError::NotFound {
                        kind,
                        looked: candidates
                            .iter()
                            .map(|path| path.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                    });
                }
            }
        }
    };
    crate::config::check_private(&path, &format!("{kind} config file")).map_err(|reason| {
        ImportError::Untrusted {
            path: path.display().to_string(),
            reason: reason.to_string(),
        }
    })?;
    let text = std::fs::read_to_string(&path).map_err(|error| ImportError::Unreadable {
        path: path.display().to_string(),
        reason: error.to_string(),
    })?;
    // A project file's project is the directory holding its `.vscode` / `.cursor` folder, or
    // the file's own directory (`.mcp.json`); a user file's (`~/.cursor/mcp.json` included) is
    // the project `places` names, if any.
    let project = match path.parent() {
        Some(dir)
            if dir
                .file_name()
                .is_some_and(|name| name == ".vscode" || name == ".cursor")
                && dir.parent().is_some_and(|parent| parent != places.home) =>
        {
            Some(dir.parent().unwrap_or(dir).to_path_buf())
        }
        Some(dir) if path.file_name().is_some_and(|name| name == ".mcp.json") => {
            Some(dir.to_path_buf())
        }
        _ => places.project.clone(),
    };
    parse_in(kind, &text, &path, project.as_deref())
}
