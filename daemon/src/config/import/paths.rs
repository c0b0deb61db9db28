//! Where each client keeps its MCP servers, from injected places (home, working directory,
//! `APPDATA`, OS), so tests never look at the real home directory. Pure.

use std::path::PathBuf;

use super::ClientKind;

/// The operating system, for Claude Desktop's per-OS location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    /// Linux and the other Unixes.
    Linux,
    /// macOS.
    MacOs,
    /// Windows.
    Windows,
}

impl Os {
    /// The one this was built for.
    pub fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::MacOs
        } else if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }
}

/// The directories the locations are relative to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// The user's home directory.
    pub home: PathBuf,
    /// The project whose own files (`.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json`) are
    /// looked for: the working directory of `tool-cli config import`, the directory a live
    /// import names, or none (then only the user's own files are read).
    pub project: Option<PathBuf>,
    /// `XDG_CONFIG_HOME`, when set.
    pub xdg_config_home: Option<PathBuf>,
    /// `APPDATA` (Windows), when set.
    pub app_data: Option<PathBuf>,
    /// The OS.
    pub os: Os,
}

/// Every file `kind` may keep its servers in, most specific (the project's) first.
pub fn candidates(kind: ClientKind, places: &Places) -> Vec<PathBuf> {
    let home = &places.home;
    let project = |file: &str| places.project.as_ref().map(|project| project.join(file));
    match kind {
        ClientKind::ClaudeDesktop => vec![match places.os {
            Os::MacOs => home.join("Library/Application Support/Claude/claude_desktop_config.json"),
            Os::Windows => places
                .app_data
                .clone()
                .unwrap_or_else(|| home.join("AppData/Roaming"))
                .join("Claude/claude_desktop_config.json"),
            Os::Linux => places
                .xdg_config_home
                .clone()
                .unwrap_or_else(|| home.join(".config"))
                .join("Claude/claude_desktop_config.json"),
        }],
        ClientKind::ClaudeCode => project(".mcp.json")
            .into_iter()
            .chain([home.join(".claude.json")])
            .collect(),
        ClientKind::Cursor => project(".cursor/mcp.json")
            .into_iter()
            .chain([home.join(".cursor/mcp.json")])
            .collect(),
        ClientKind::VsCode => project(".vscode/mcp.json").into_iter().collect(),
        ClientKind::Windsurf => vec![home.join(".codeium/windsurf/mcp_config.json")],
        ClientKind::Codex => vec![home.join(".codex/config.toml")],
        ClientKind::OpenCode => project("opencode.json")
            .into_iter()
            .chain([places
                .xdg_config_home
                .clone()
                .unwrap_or_else(|| home.join(".config"))
                .join("opencode/opencode.json")])
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(os: Os) -> Places {
        Places {
            home: PathBuf::from("/h"),
            project: Some(PathBuf::from("/p")),
            xdg_config_home: None,
            app_data: Some(PathBuf::from("C:/Users/u/AppData/Roaming")),
            os,
        }
    }

    #[test]
    fn each_client_has_its_places() {
        let first = |kind, os| candidates(kind, &places(os))[0].clone();
        assert_eq!(
            first(ClientKind::ClaudeDesktop, Os::Linux),
            PathBuf::from("/h/.config/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            first(ClientKind::ClaudeDesktop, Os::MacOs),
            PathBuf::from("/h/Library/Application Support/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            first(ClientKind::ClaudeDesktop, Os::Windows),
            PathBuf::from("C:/Users/u/AppData/Roaming/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            candidates(ClientKind::ClaudeCode, &places(Os::Linux)),
            [
                PathBuf::from("/p/.mcp.json"),
                PathBuf::from("/h/.claude.json")
            ]
        );
        assert_eq!(
            candidates(ClientKind::Cursor, &places(Os::Linux)),
            [
                PathBuf::from("/p/.cursor/mcp.json"),
                PathBuf::from("/h/.cursor/mcp.json")
            ]
        );
        assert_eq!(
            first(ClientKind::VsCode, Os::Linux),
            PathBuf::from("/p/.vscode/mcp.json")
        );
        assert_eq!(
            first(ClientKind::Windsurf, Os::Linux),
            PathBuf::from("/h/.codeium/windsurf/mcp_config.json")
        );
        assert_eq!(
            first(ClientKind::Codex, Os::Linux),
            PathBuf::from("/h/.codex/config.toml")
        );
    }
}
