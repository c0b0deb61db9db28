//! A server entry's `record` and `replay` members (docs/record-replay.md): recording a server's
//! MCP exchange to an NDJSON file, and serving such a file as a server. Pure: a recorded stdio
//! entry and a replayed one become stdio transports whose command is [`REPLAY_COMMAND`] (its
//! `record` proxy, its stdio replay), which the pool runs from beside the daemon's own
//! executable (`pool/child.rs`); a recorded http entry keeps its transport with the file named
//! in its options, which the HTTP client's tap writes (`pool/http_tap.rs`).
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

/// `transport` recording to `file`: a stdio server run through the recording proxy, an http
/// server with the HTTP client's tap (`pool/http_tap.rs`).
pub(crate) fn recorded_transport(
    name: &str,
    file: &str,
    config_dir: Option<&Path>,
    transport: TransportConfig,
) -> TransportConfig {
    let (command, args, env, cwd) = match transport {
        TransportConfig::Stdio {
            command,
            args,
            env,
            cwd,
        } => (command, args, env, cwd),
        TransportConfig::Http {
            url,
            headers,
            mut remote,
        } => {
            remote.record = Some(resolve(file, config_dir).into());
            return TransportConfig::Http {
                url,
                headers,
                remote,
            };
        }
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
    TransportConfig::Stdio {
        command: REPLAY_COMMAND.to_owned(),
        args: proxy,
        env,
        cwd,
    }
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
        } = recorded_transport("s", "rec.ndjson", Some(Path::new("/etc/tc")), transport)
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
    fn a_recorded_http_server_keeps_its_transport_with_the_file_in_its_options() {
        let transport = TransportConfig::Http {
            url: "https://example.test/mcp".to_owned(),
            headers: BTreeMap::new(),
            remote: Default::default(),
        };
        let TransportConfig::Http { url, remote, .. } =
            recorded_transport("s", "rec.ndjson", Some(Path::new("/etc/tc")), transport)
        else {
            panic!("http");
        };
        assert_eq!(url, "https://example.test/mcp");
        assert_eq!(
            remote.record.as_deref(),
            Some(Path::new("/etc/tc/rec.ndjson"))
        );
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
