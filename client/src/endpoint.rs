//! Finding the daemon: where it listens and which token to present.
//!
//! [`resolve_endpoint`] decides from `TOOL_CLI_SOCKET` / `TOOL_CLI_HOST` / `TOOL_CLI_PORT` /
//! `TOOL_CLI_TOKEN` or, for whatever is unset, the runtime file the daemon writes, and last from
//! the reference bridge's fixed port 7179 ([`tool_cli_protocol::DEFAULT_PORT`]) when a token is
//! set but nothing names a port. It is pure (the environment and the file reader come in as
//! arguments) so every precedence rule is unit-tested. Wherever the address came from, the
//! listener found there must still prove it holds the token before the token is sent
//! ([`crate::link`]).

use std::path::{Path, PathBuf};

use tool_cli_protocol::DEFAULT_HOST;
use tool_cli_protocol::runtime::{RUNTIME_FILE_NAME, RuntimeFile};

use crate::error::Error;

/// Where the daemon is and how to authenticate to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) target: Target,
    pub(crate) token: String,
    /// Set when the address is the default port, tried because nothing else named one: why it
    /// was tried, for the message if nothing answers there.
    pub(crate) fallback: Option<String>,
    /// The daemon's instance id (`TOOL_CLI_DAEMON_ID`, or the runtime file's `daemonId`), when
    /// it came from the same place as the address and the token: while that process lives the
    /// listener there is that daemon ([`crate::vouch`]).
    pub(crate) daemon_id: Option<String>,
}

/// Where the daemon listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A TCP address (`TOOL_CLI_HOST`, `TOOL_CLI_PORT`, or the runtime file's `host`/`port`).
    Tcp { host: String, port: u16 },
    /// A Unix socket (`TOOL_CLI_SOCKET`, or the runtime file's `socket`).
    Unix { path: PathBuf },
}

/// The `Host` header sent over a Unix socket, which has no address of its own.
const UNIX_SOCKET_HOST: &str = "localhost";

impl Target {
    /// The `Host` header value: `host:port`, with brackets around an IPv6 literal, or
    /// `localhost` for a Unix socket. The identity proof is bound to exactly this text.
    pub(crate) fn host_header(&self) -> String {
        match self {
            Target::Tcp { host, port } if host.contains(':') => format!("[{host}]:{port}"),
            Target::Tcp { host, port } => format!("{host}:{port}"),
            Target::Unix { .. } => UNIX_SOCKET_HOST.to_owned(),
        }
    }

    /// Where the daemon is, for messages: `127.0.0.1:4567` or the socket's path.
    pub(crate) fn describe(&self) -> String {
        match self {
            Target::Tcp { .. } => self.host_header(),
            Target::Unix { path } => path.display().to_string(),
        }
    }
}

/// The environment variables that locate the daemon, read by the caller.
#[derive(Debug, Clone, Default)]
pub(crate) struct EndpointEnv {
    /// `TOOL_CLI_HOST`.
    pub(crate) host: Option<String>,
    /// `TOOL_CLI_PORT`.
    pub(crate) port: Option<String>,
    /// `TOOL_CLI_TOKEN`.
    pub(crate) token: Option<String>,
    /// `TOOL_CLI_SOCKET`.
    pub(crate) socket: Option<String>,
    /// The runtime directory, from `tool_cli_protocol::runtime::runtime_dir`.
    pub(crate) runtime_dir: PathBuf,
    /// The port tried last ([`tool_cli_protocol::DEFAULT_PORT`]; tests point it elsewhere).
    pub(crate) default_port: u16,
    /// `TOOL_CLI_DAEMON_ID`.
    pub(crate) daemon_id: Option<String>,
}

impl EndpointEnv {
    /// Reads the process environment.
    pub(crate) fn from_process() -> Self {
        use tool_cli_protocol::env;
        let var = |name: &str| std::env::var(name).ok();
        let runtime_dir = tool_cli_protocol::runtime::runtime_dir(
            std::env::var_os(env::RUNTIME_DIR).map(PathBuf::from),
            std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from),
            std::env::temp_dir(),
            current_uid(),
        );
        EndpointEnv {
            host: var(env::HOST),
            port: var(env::PORT),
            token: var(env::TOKEN),
            socket: var(env::SOCKET),
            runtime_dir,
            default_port: tool_cli_protocol::DEFAULT_PORT,
            daemon_id: var(env::DAEMON_ID),
        }
    }
}

#[cfg(unix)]
fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail (POSIX).
    unsafe { libc::getuid() }
}

#[cfg(not(unix))]
fn current_uid() -> u32 {
    0
}

/// Decides the endpoint. Variables that are set win; whatever is missing (port or token) comes
/// from the runtime file, which is read only then. An empty variable counts as unset, because
/// `TOOL_CLI_TOKEN= tool-cli` is how people unset a variable for one command.
///
/// A Unix socket is used when `TOOL_CLI_SOCKET` is set (it wins over every TCP setting), or when
/// the runtime file names one and `TOOL_CLI_PORT` is unset (a port set by hand means TCP).
///
/// When `TOOL_CLI_TOKEN` is set but neither `TOOL_CLI_PORT`, `TOOL_CLI_SOCKET` nor a runtime
/// file names an address, the reference bridge's default port is tried, as its CLI does (a
/// harness embedding a 1.x bridge on 7179 sets only the token). Without a token there is
/// nothing to try: every bridge requires one.
pub(crate) fn resolve_endpoint(
    env: &EndpointEnv,
    read_file: impl FnOnce(&Path) -> std::io::Result<String>,
) -> Result<Endpoint, Error> {
    let non_empty = |value: &Option<String>| {
        value
            .as_deref()
            .map(str::trim)
            .filter(|value| !value.is_empty())
            .map(str::to_owned)
    };
    let env_host = non_empty(&env.host);
    let env_token = non_empty(&env.token);
    let env_socket = non_empty(&env.socket).map(PathBuf::from);
    let env_port = match non_empty(&env.port) {
        Some(text) => Some(
            text.parse::<u16>()
                .ok()
                .filter(|port| *port != 0)
                .ok_or_else(|| {
                    Error::NoDaemon(format!(
                        "TOOL_CLI_PORT must be a TCP port number between 1 and 65535, got {text:?}"
                    ))
                })?,
        ),
        None => None,
    };

    match (&env_socket, env_port, &env_token) {
        (Some(path), _, Some(token)) => {
            return Ok(Endpoint {
                target: Target::Unix { path: path.clone() },
                token: token.clone(),
                fallback: None,
                daemon_id: non_empty(&env.daemon_id),
            });
        }
        (None, Some(port), Some(token)) => {
            return Ok(Endpoint {
                target: Target::Tcp {
                    host: env_host.unwrap_or_else(|| DEFAULT_HOST.to_owned()),
                    port,
                },
                token: token.clone(),
                fallback: None,
                daemon_id: non_empty(&env.daemon_id),
            });
        }
        _ => {}
    }

    let path = env.runtime_dir.join(RUNTIME_FILE_NAME);
    let missing = match (&env_socket, env_port, &env_token) {
        (None, None, None) => "TOOL_CLI_PORT and TOOL_CLI_TOKEN are unset",
        (None, None, Some(_)) => "TOOL_CLI_PORT is unset",
        _ => "TOOL_CLI_TOKEN is unset",
    };
    let text = match read_file(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let why = format!(
                "{missing} and there is no runtime file at {}",
                path.display()
            );
            return match (&env_socket, env_port, env_token) {
                (None, None, Some(token)) => Ok(Endpoint {
                    target: Target::Tcp {
                        host: env_host.unwrap_or_else(|| DEFAULT_HOST.to_owned()),
                        port: env.default_port,
                    },
                    token,
                    fallback: Some(why),
                    daemon_id: None,
                }),
                _ => Err(Error::NoDaemon(format!("no daemon found: {why}"))),
            };
        }
        Err(error) => return Err(runtime_file_unreadable(missing, &path, &error)),
    };
    let file: RuntimeFile = serde_json::from_str(&text).map_err(|error| {
        Error::NoDaemon(format!(
            "no daemon found: {missing} and the runtime file {} is not valid ({error})",
            path.display()
        ))
    })?;
    let file_socket = file
        .socket
        .filter(|socket| !socket.trim().is_empty())
        .map(PathBuf::from);
    // The file's id vouches for the file's address and token only.
    let all_from_file = env_socket.is_none()
        && env_port.is_none()
        && env_host.is_none()
        && env_token.as_ref().is_none_or(|token| *token == file.token);
    let daemon_id = file.daemon_id.filter(|_| all_from_file);
    let target = match (env_socket, env_port, file_socket) {
        (Some(path), _, _) | (None, None, Some(path)) => Target::Unix { path },
        (None, port, _) => Target::Tcp {
            host: env_host.unwrap_or_else(|| reachable_host(&file.host)),
            port: port.unwrap_or(file.port),
        },
    };
    Ok(Endpoint {
        target,
        token: env_token.unwrap_or(file.token),
        fallback: None,
        daemon_id,
    })
}

fn runtime_file_unreadable(missing: &str, path: &Path, error: &std::io::Error) -> Error {
    Error::NoDaemon(format!(
        "no daemon found: {missing} and the runtime file {} cannot be read ({error})",
        path.display()
    ))
}

/// A daemon bound to every interface is reached on loopback.
fn reachable_host(bound: &str) -> String {
    match bound {
        "" | "0.0.0.0" => DEFAULT_HOST.to_owned(),
        "::" | "[::]" => "::1".to_owned(),
        other => other
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use serde_json::json;

    use super::*;
    use crate::error::exit;

    fn env(port: Option<&str>, token: Option<&str>) -> EndpointEnv {
        EndpointEnv {
            host: None,
            port: port.map(str::to_owned),
            token: token.map(str::to_owned),
            socket: None,
            runtime_dir: PathBuf::from("/run/user/1000/tool-cli"),
            default_port: 7179,
            daemon_id: None,
        }
    }

    fn runtime_file(host: &str) -> String {
        json!({"host": host, "port": 4242, "token": "filetoken", "pid": 1, "version": "0.1.0"})
            .to_string()
    }

    fn runtime_file_with_socket(socket: &str) -> String {
        json!({"host": "127.0.0.1", "port": 0, "token": "filetoken", "pid": 1,
               "version": "0.1.0", "socket": socket})
        .to_string()
    }

    fn no_file(_: &Path) -> io::Result<String> {
        Err(io::Error::from(io::ErrorKind::NotFound))
    }

    fn tcp(host: &str, port: u16) -> Target {
        Target::Tcp {
            host: host.into(),
            port,
        }
    }

    fn unix(path: &str) -> Target {
        Target::Unix { path: path.into() }
    }

    #[test]
    fn environment_wins_and_file_is_not_read() {
        let endpoint = resolve_endpoint(&env(Some("1234"), Some("abc")), |_| {
            panic!("the runtime file must not be read")
        })
        .unwrap();
        assert_eq!(
            endpoint,
            Endpoint {
                target: tcp("127.0.0.1", 1234),
                token: "abc".into(),
                fallback: None,
                daemon_id: None,
            }
        );
    }

    #[test]
    fn runtime_file_fills_what_is_unset() {
        let read = |path: &Path| {
            assert_eq!(path, Path::new("/run/user/1000/tool-cli/daemon.json"));
            Ok(runtime_file("127.0.0.1"))
        };
        let endpoint = resolve_endpoint(&env(None, None), read).unwrap();
        assert_eq!(endpoint.target, tcp("127.0.0.1", 4242));
        assert_eq!(endpoint.token, "filetoken");
        let endpoint =
            resolve_endpoint(&env(Some("5555"), None), |_| Ok(runtime_file("127.0.0.1"))).unwrap();
        assert_eq!(endpoint.target, tcp("127.0.0.1", 5555));
        assert_eq!(endpoint.token, "filetoken");
        // An empty variable is unset.
        let endpoint =
            resolve_endpoint(&env(Some(""), Some("")), |_| Ok(runtime_file("127.0.0.1"))).unwrap();
        assert_eq!(endpoint.target, tcp("127.0.0.1", 4242));
        assert_eq!(endpoint.token, "filetoken");
    }

    #[test]
    fn wildcard_bind_address_is_reached_on_loopback() {
        let endpoint = resolve_endpoint(&env(None, None), |_| Ok(runtime_file("0.0.0.0"))).unwrap();
        assert_eq!(endpoint.target, tcp("127.0.0.1", 4242));
        let endpoint = resolve_endpoint(&env(None, None), |_| Ok(runtime_file("::"))).unwrap();
        assert_eq!(endpoint.target.host_header(), "[::1]:4242");
        let mut with_host = env(None, None);
        with_host.host = Some("10.0.0.2".into());
        let endpoint = resolve_endpoint(&with_host, |_| Ok(runtime_file("0.0.0.0"))).unwrap();
        assert_eq!(endpoint.target, tcp("10.0.0.2", 4242));
    }

    #[test]
    fn socket_variable_wins_over_tcp_settings() {
        let mut with_socket = env(Some("1234"), Some("abc"));
        with_socket.socket = Some("/run/tool-cli.sock".into());
        let endpoint = resolve_endpoint(&with_socket, |_| {
            panic!("the runtime file must not be read")
        })
        .unwrap();
        assert_eq!(endpoint.target, unix("/run/tool-cli.sock"));
        assert_eq!(endpoint.token, "abc");
        // The token still comes from the runtime file when unset; its host and port are ignored.
        with_socket.token = None;
        let endpoint = resolve_endpoint(&with_socket, |_| Ok(runtime_file("127.0.0.1"))).unwrap();
        assert_eq!(endpoint.target, unix("/run/tool-cli.sock"));
        assert_eq!(endpoint.token, "filetoken");
        let message = resolve_endpoint(&with_socket, no_file)
            .unwrap_err()
            .to_string();
        assert!(message.contains("TOOL_CLI_TOKEN is unset"), "{message}");
        // Empty means unset.
        let mut empty_socket = env(Some("1234"), Some("abc"));
        empty_socket.socket = Some(" ".into());
        let endpoint = resolve_endpoint(&empty_socket, no_file).unwrap();
        assert_eq!(endpoint.target, tcp("127.0.0.1", 1234));
    }

    #[test]
    fn runtime_file_socket_is_used_unless_a_port_is_set() {
        let read = |_: &Path| {
            Ok(runtime_file_with_socket(
                "/run/user/1000/tool-cli/daemon.sock",
            ))
        };
        let endpoint = resolve_endpoint(&env(None, None), read).unwrap();
        assert_eq!(endpoint.target, unix("/run/user/1000/tool-cli/daemon.sock"));
        assert_eq!(endpoint.token, "filetoken");
        let endpoint = resolve_endpoint(&env(None, Some("abc")), read).unwrap();
        assert_eq!(endpoint.target, unix("/run/user/1000/tool-cli/daemon.sock"));
        assert_eq!(endpoint.token, "abc");
        // A port set by hand means TCP.
        let endpoint = resolve_endpoint(&env(Some("5555"), None), read).unwrap();
        assert_eq!(endpoint.target, tcp("127.0.0.1", 5555));
        // A null socket is TCP as before.
        let with_null = json!({"host": "127.0.0.1", "port": 4242, "token": "t", "pid": 1,
                               "version": "0.1.0", "socket": null})
        .to_string();
        let endpoint = resolve_endpoint(&env(None, None), |_| Ok(with_null)).unwrap();
        assert_eq!(endpoint.target, tcp("127.0.0.1", 4242));
    }

    #[test]
    fn host_header_and_description_of_each_target() {
        assert_eq!(tcp("127.0.0.1", 4567).host_header(), "127.0.0.1:4567");
        assert_eq!(tcp("::1", 4567).host_header(), "[::1]:4567");
        assert_eq!(tcp("::1", 4567).describe(), "[::1]:4567");
        assert_eq!(unix("/tmp/d.sock").host_header(), "localhost");
        assert_eq!(unix("/tmp/d.sock").describe(), "/tmp/d.sock");
    }

    #[test]
    fn missing_daemon_says_what_is_missing_and_how_to_start_one() {
        let error = resolve_endpoint(&env(None, None), no_file).unwrap_err();
        assert_eq!(error.exit_code(), exit::UNREACHABLE);
        let message = error.to_string();
        assert!(
            message.contains("TOOL_CLI_PORT and TOOL_CLI_TOKEN are unset"),
            "{message}"
        );
        assert!(
            message.contains("/run/user/1000/tool-cli/daemon.json"),
            "{message}"
        );
        assert!(message.contains("tool-cli-daemon --print-env"), "{message}");
        let message = resolve_endpoint(&env(Some("1"), None), no_file)
            .unwrap_err()
            .to_string();
        assert!(message.contains("TOOL_CLI_TOKEN is unset"), "{message}");
    }

    #[test]
    fn bad_port_and_bad_runtime_file_are_reported() {
        for port in ["http", "0", "70000"] {
            let error = resolve_endpoint(&env(Some(port), Some("t")), no_file).unwrap_err();
            assert_eq!(error.exit_code(), exit::UNREACHABLE);
            assert!(
                error.to_string().contains("TOOL_CLI_PORT must be"),
                "{error}"
            );
        }
        let error = resolve_endpoint(&env(None, None), |_| Ok("{".into())).unwrap_err();
        assert!(error.to_string().contains("is not valid"), "{error}");
    }

    #[test]
    fn default_port_is_tried_last_and_only_with_a_token() {
        let endpoint = resolve_endpoint(&env(None, Some("abc")), no_file).unwrap();
        assert_eq!(endpoint.target, tcp("127.0.0.1", 7179));
        assert_eq!(endpoint.token, "abc");
        let why = endpoint.fallback.unwrap();
        assert!(
            why.contains("TOOL_CLI_PORT is unset and there is no runtime file at"),
            "{why}"
        );
        // TOOL_CLI_HOST still applies.
        let mut with_host = env(None, Some("abc"));
        with_host.host = Some("::1".into());
        let endpoint = resolve_endpoint(&with_host, no_file).unwrap();
        assert_eq!(endpoint.target.host_header(), "[::1]:7179");
        // A runtime file wins over the default port.
        let endpoint =
            resolve_endpoint(&env(None, Some("abc")), |_| Ok(runtime_file("127.0.0.1"))).unwrap();
        assert_eq!(endpoint.target, tcp("127.0.0.1", 4242));
        assert_eq!(endpoint.fallback, None);
        // No token: nothing to try. An unreadable runtime file is reported, not skipped.
        assert!(resolve_endpoint(&env(None, None), no_file).is_err());
        let denied = |_: &Path| Err(io::Error::from(io::ErrorKind::PermissionDenied));
        let message = resolve_endpoint(&env(None, Some("abc")), denied)
            .unwrap_err()
            .to_string();
        assert!(message.contains("cannot be read"), "{message}");
    }
}
