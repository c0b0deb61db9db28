//! `tool-cli config import`: the grammar, pure. The import itself is done by
//! `tool-cli-daemon import` (see `run/config.rs`), so the client stays free of TOML and of the
//! daemon's config parser.

use std::path::PathBuf;

use clap::Subcommand;

/// `tool-cli config import ...`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConfigImport {
    /// The client: claude-desktop, claude-code, cursor, vscode, windsurf, codex.
    pub(crate) from: String,
    /// Its file, instead of the client's usual places.
    pub(crate) path: Option<PathBuf>,
    /// Our config file to merge into.
    pub(crate) config: Option<PathBuf>,
    /// Merge and write.
    pub(crate) write: bool,
}

impl ConfigImport {
    /// The words after `tool-cli-daemon`.
    pub(crate) fn daemon_args(&self, json: bool) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> =
            vec!["import".into(), "--from".into(), self.from.clone().into()];
        if let Some(path) = &self.path {
            args.push("--path".into());
            args.push(path.clone().into());
        }
        if let Some(config) = &self.config {
            args.push("--config".into());
            args.push(config.clone().into());
        }
        if self.write {
            args.push("--write".into());
        }
        if json {
            args.push("--json".into());
        }
        args
    }
}

/// The client names `--from` takes.
pub(crate) const CLIENTS: [&str; 7] = [
    "claude-desktop",
    "claude-code",
    "cursor",
    "vscode",
    "windsurf",
    "codex",
    "opencode",
];

#[derive(Debug, Subcommand)]
pub(super) enum ConfigAction {
    /// Show the MCP servers another client has configured (and what could not be translated);
    /// with --write, add the new ones to tool-cli's config file (conflicts are reported, never
    /// overwritten)
    Import {
        /// The client whose config to read
        #[arg(long, value_name = "CLIENT", value_parser = CLIENTS)]
        from: String,
        /// Its config file, instead of the client's usual places
        #[arg(long, value_name = "FILE")]
        path: Option<PathBuf>,
        /// tool-cli's config file to merge into [default: $TOOL_CLI_CONFIG, else
        /// ~/.config/tool-cli/servers.json]
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Merge the new servers into tool-cli's config file
        #[arg(long)]
        write: bool,
    },
}

pub(super) fn command(action: ConfigAction) -> ConfigImport {
    match action {
        ConfigAction::Import {
            from,
            path,
            config,
            write,
        } => ConfigImport {
            from,
            path,
            config,
            write,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_is_passed_on() {
        let import = ConfigImport {
            from: "vscode".to_owned(),
            path: Some(PathBuf::from("/p/.vscode/mcp.json")),
            config: Some(PathBuf::from("/c.json")),
            write: true,
        };
        let words: Vec<String> = import
            .daemon_args(true)
            .into_iter()
            .map(|word| word.into_string().unwrap())
            .collect();
        assert_eq!(
            words,
            [
                "import",
                "--from",
                "vscode",
                "--path",
                "/p/.vscode/mcp.json",
                "--config",
                "/c.json",
                "--write",
                "--json"
            ]
        );
    }
}
