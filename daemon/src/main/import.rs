//! `tool-cli-daemon import`: show another client's MCP servers and, with `--write`, merge them
//! into our config file (the work is in the library's `import` module; this is its front).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use tool_cli_daemon::config::import::{ClientKind, Os, Places, command};
use tool_cli_protocol::env;

use crate::{EXIT_CONFIG, fail};

/// `tool-cli-daemon import`: the report on stdout; exit 2 for anything it could not do.
pub(crate) fn run_import(
    config: Option<PathBuf>,
    from: String,
    path: Option<PathBuf>,
    write: bool,
    json: bool,
) -> ExitCode {
    let kind = match ClientKind::from_name(&from) {
        Ok(kind) => kind,
        Err(error) => return fail(EXIT_CONFIG, error),
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let Some(home) = home else {
        return fail(
            EXIT_CONFIG,
            "HOME is not set; give the file with --path and our config with --config",
        );
    };
    // Where `--write` goes: the file the daemon would read, or the user default (created).
    let target = config
        .or_else(|| {
            std::env::var_os(env::CONFIG)
                .filter(|path| !path.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| home.join(".config/tool-cli/servers.json"));
    let request = command::ImportRequest {
        kind,
        path,
        target,
        write,
        places: Places {
            // Run by the user in a directory: that project's files are theirs to import.
            project: Some(std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))),
            xdg_config_home: std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from),
            app_data: std::env::var_os("APPDATA").map(PathBuf::from),
            os: Os::current(),
            home,
        },
        // A new file keeps what the daemon serves without one (the demo server, run from this
        // executable).
        new_file_start: std::env::current_exe()
            .ok()
            .map(|self_exe| tool_cli_daemon::config::bundled_default_text(&self_exe)),
    };
    match command::run(&request) {
        Ok(report) => {
            let text = if json {
                format!("{:#}\n", command::to_json(&report))
            } else {
                command::render(&report)
            };
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(text.as_bytes());
            let _ = stdout.flush();
            ExitCode::SUCCESS
        }
        Err(error) => fail(EXIT_CONFIG, error),
    }
}
