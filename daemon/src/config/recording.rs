//! A server entry's `record` and `replay` members (docs/record-replay.md): recording a stdio
//! server's MCP exchange to an NDJSON file, and serving such a file as a server, both through
//! the bundled `tool-cli-replay` (its `record` proxy, and its stdio replay). Pure: the entry
//! becomes an ordinary stdio transport whose command is [`REPLAY_COMMAND`], which the pool runs
//! from beside the daemon's own executable (`pool/child.rs`).
//!
//! ```json
//! "everything": { "command": "npx", "args": ["…"], "record": "everything.ndjson" }
//! "everything": { "replay": "everything.ndjson" }
//! ```
//!
//! A recording is redacted as it is written: the value of every variable of the server's
//! `env` (where the config's `${VAR}` secrets go) and every credential-named member are
//! replaced by `[REDACTED]`.

use std::path::Path;

use super::TransportConfig;

/// The bundled record/replay program.
pub const REPLAY_COMMAND: &str = "tool-cli-replay";

/// A path from the config: a relative one is relative to the config file's directory.
fn resolve(path: &str, config_dir: Option<&Path>) -> String {
    match config_dir {
        Some(dir) if Path::new(path).is_relative() => dir.join(path).to_string_lossy().into_owned(),
        _ => path.to_owned(),
    }
}

/// The transport of an entry `{"replay": FILE}`: the recording served as server `name`.
pub(crate) fn replay_transport(
    name: &str,
    file: &str,
    config_dir: Option<&Path>,
) -> TransportConfig {
    TransportConfig::Stdio {
        command: REPLAY_COMMAND.to_owned(),
        args: vec![
            "--server".to_owned(),
            name.to_owned(),
            resolve(file, config_dir),
        ],
        env: Default::default(),
        cwd: None,
    }
}

/// Why a server's `record` cannot be honoured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum RecordingError {
    /// The proxy records stdio only.
    #[error(
        "recording works for stdio servers only; to record an http server, run \
         `tool-cli-replay record` in front of a stdio bridge to it, or leave \"record\" out"
    )]
    NotStdio,
}

/// `transport` run through the recording proxy, writing to `file`; refused for a transport
/// that is not stdio (the message says what would work).
pub(crate) fn recorded_transport(
    name: &str,
    file: &str,
    config_dir: Option<&Path>,
    transport: TransportConfig,
) -> Result<TransportConfig, RecordingError> {
    let TransportConfig::Stdio {
        command,
        args,
        env,
        cwd,
    } = transport
    else {
        return Err(RecordingError::NotStdio);
    };
    let mut proxy = vec![
        "record".to_owned(),
        "--out".to_owned(),
        resolve(file, config_dir),
        "--server".to_owned(),
        name.to_owned(),
    ];
    for variable in env.keys() {
        proxy.push("--redact-env".to_owned());
        proxy.push(variable.clone());
    }
    proxy.push("--".to_owned());
    proxy.push(command);
    proxy.extend(args);
    Ok(TransportConfig::Stdio {
        command: REPLAY_COMMAND.to_owned(),
        args: proxy,
        env,
        cwd,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn a_recorded_server_runs_under_the_proxy_with_its_env_redacted() {
        let transport = TransportConfig::Stdio {
            command: "npx".to_owned(),
            args: vec!["-y".to_owned(), "server".to_owned()],
            env: BTreeMap::from([("API_KEY".to_owned(), "k".to_owned())]),
            cwd: None,
        };
        let TransportConfig::Stdio {
            command, args, env, ..
        } = recorded_transport("s", "rec.ndjson", Some(Path::new("/etc/tc")), transport).unwrap()
        else {
            panic!("stdio");
        };
        assert_eq!(command, REPLAY_COMMAND);
        assert_eq!(
            args,
            [
                "record",
                "--out",
                "/etc/tc/rec.ndjson",
                "--server",
                "s",
                "--redact-env",
                "API_KEY",
                "--",
                "npx",
                "-y",
                "server"
            ]
        );
        assert_eq!(env["API_KEY"], "k", "the server still gets its environment");
    }

    #[test]
    fn a_replay_entry_serves_the_file_as_the_server() {
        let TransportConfig::Stdio { command, args, .. } =
            replay_transport("s", "/abs/rec.ndjson", Some(Path::new("/etc/tc")))
        else {
            panic!("stdio");
        };
        assert_eq!(command, REPLAY_COMMAND);
        assert_eq!(args, ["--server", "s", "/abs/rec.ndjson"]);
    }
}
