//! `tool-cli daemon start|stop|status`: managing the daemon of the runtime file, so a user needs
//! neither `eval "$(tool-cli-daemon --print-env &)"` nor a process manager.
//!
//! `start` runs `tool-cli-daemon` (found next to this binary, else on `PATH`) in a new session,
//! detached from the terminal, with stdin and stdout on `/dev/null` and stderr appended to
//! `daemon.log` in the runtime directory; it is ready when the runtime file names its pid and
//! `health` shows no server still connecting. `stop` sends SIGTERM to the pid of the runtime
//! file, after checking it is a `tool-cli-daemon` (a pid in a stale file may have been reused),
//! and waits until it has exited. `status` reports pid, address, uptime and servers. All three
//! act on the runtime file only, never on `TOOL_CLI_PORT`: a daemon started by a harness with
//! `--print-env` belongs to that harness.

use std::fs::{DirBuilder, OpenOptions};
use std::io::Read as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use tool_cli_protocol::env;
use tool_cli_protocol::methods::{HealthResult, ServerState, name};
use tool_cli_protocol::runtime::{DaemonId, RUNTIME_FILE_NAME, RuntimeFile, start_ticks_from_stat};

use super::output::{self, Output};
use crate::args::DaemonCommand;
use crate::client::{Client, parse_result};
use crate::endpoint::{EndpointEnv, resolve_endpoint};
use crate::error::Error;
use crate::render;

/// The daemon's log, in the runtime directory.
pub(crate) const LOG_FILE_NAME: &str = "daemon.log";

/// The daemon's executable name (also its `/proc/<pid>/comm`, which is cut at 15 bytes: the
/// name fits exactly).
const DAEMON_NAME: &str = "tool-cli-daemon";

/// How long `start` waits for the servers to settle, unless `--timeout` says otherwise: a Node
/// or Python server may take seconds to start, more when `npx` downloads it first.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long `stop` waits for the exit, unless `--timeout` says otherwise: the daemon's default
/// shutdown grace is 10 s, then its servers get a few seconds to stop.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// How often the runtime file, `health` and a pid are looked at while waiting. A start-up takes
/// hundreds of milliseconds, so 50 ms costs no noticeable wait and little CPU.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Client-side variables, not passed to the daemon: they describe the daemon the user talks to
/// now, not the new one (a `TOOL_CLI_TOKEN` there would become the new daemon's token).
const CLIENT_VARIABLES: [&str; 6] = [
    env::PORT,
    env::TOKEN,
    env::HOST,
    env::SOCKET,
    env::TIMEOUT_MS,
    env::REQUIRE_IDENTITY,
];

/// Runs `tool-cli daemon ...` with the runtime directory `runtime_dir`.
pub(crate) async fn run(
    command: DaemonCommand,
    runtime_dir: &Path,
    timeout: Option<Duration>,
    output: &mut Output<'_>,
) -> Result<(), Error> {
    match command {
        DaemonCommand::Status => {
            let running = running_daemon(runtime_dir)?;
            report(&running, runtime_dir, timeout, output).await
        }
        DaemonCommand::Stop => stop(runtime_dir, timeout.unwrap_or(STOP_TIMEOUT), output),
        DaemonCommand::Start {
            config,
            daemon_args,
        } => {
            if let Ok(running) = running_daemon(runtime_dir) {
                output::note(&format!(
                    "a daemon is already running (pid {}); not starting another",
                    running.file.pid
                ));
                return report(&running, runtime_dir, timeout, output).await;
            }
            let deadline = Instant::now() + timeout.unwrap_or(START_TIMEOUT);
            start(
                runtime_dir,
                config.as_deref(),
                &daemon_args,
                deadline,
                output,
            )
            .await
        }
    }
}

/// The daemon the runtime file names, known to be running.
struct Running {
    file: RuntimeFile,
    /// When the runtime file was written, which is when the daemon started listening.
    started: Option<SystemTime>,
}

/// The daemon of the runtime file, or "no daemon is running" (exit 3).
fn running_daemon(runtime_dir: &Path) -> Result<Running, Error> {
    let path = runtime_dir.join(RUNTIME_FILE_NAME);
    let (file, started) = read_runtime_file(&path)?.ok_or_else(|| {
        Error::NoDaemon(format!(
            "no daemon is running: there is no runtime file at {}{}",
            path.display(),
            print_env_hint(&|name| std::env::var(name).ok())
        ))
    })?;
    if !is_daemon(file.pid) {
        return Err(Error::NoDaemon(format!(
            "no daemon is running: the runtime file {} names pid {}, which is not a running \
             {DAEMON_NAME} (it was killed without a chance to remove the file)",
            path.display(),
            file.pid
        )));
    }
    Ok(Running { file, started })
}

/// What to add to "no daemon is running" when the environment names a daemon all the same: one
/// started with `--print-env`, whose variables these are. `tool-cli daemon` manages the daemon
/// of the runtime file only (that one belongs to whoever started it), so the user is told where
/// the two part ways instead of being left to wonder why the daemon they use "is not running".
fn print_env_hint(var: &dyn Fn(&str) -> Option<String>) -> String {
    const MANAGES: &str = "`tool-cli daemon` manages only the daemon of the runtime file; \
                           set TOOL_CLI_RUNTIME_DIR to the directory that daemon was started with";
    // The very process the id names (a pid may have been reused since).
    let named = var(env::DAEMON_ID)
        .and_then(|id| DaemonId::parse(&id))
        .filter(|id| {
            is_daemon(id.pid)
                && std::fs::read_to_string(format!("/proc/{}/stat", id.pid))
                    .ok()
                    .and_then(|stat| start_ticks_from_stat(&stat))
                    == Some(id.start_ticks)
        });
    if let Some(id) = named {
        return format!(
            " (TOOL_CLI_DAEMON_ID names {DAEMON_NAME} pid {pid}, started with --print-env; \
             {MANAGES}, or stop it with `kill {pid}`)",
            pid = id.pid
        );
    }
    match var(env::PORT).or_else(|| var(env::SOCKET)) {
        Some(address) => format!(
            " (TOOL_CLI_PORT or TOOL_CLI_SOCKET ({address}) names a daemon started with \
             --print-env; {MANAGES})"
        ),
        None => String::new(),
    }
}

pub(crate) fn read_runtime_file(
    path: &Path,
) -> Result<Option<(RuntimeFile, Option<SystemTime>)>, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(Error::Io {
                action: format!("read the runtime file {}", path.display()),
                source,
            });
        }
    };
    // A file caught half-written cannot happen (the daemon renames it into place), so a
    // malformed one is reported rather than waited for.
    let file: RuntimeFile = serde_json::from_str(&text).map_err(|error| {
        Error::Other(format!(
            "the runtime file {} is not valid ({error}); remove it if no daemon runs",
            path.display()
        ))
    })?;
    let started = std::fs::metadata(path)
        .and_then(|metadata| metadata.modified())
        .ok();
    Ok(Some((file, started)))
}

/// A client for the daemon of the runtime file in `runtime_dir`.
fn client_for(runtime_dir: &Path, timeout: Option<Duration>) -> Result<Client, Error> {
    let only_the_file = EndpointEnv {
        runtime_dir: runtime_dir.to_path_buf(),
        ..EndpointEnv::default()
    };
    let endpoint = resolve_endpoint(&only_the_file, |path| std::fs::read_to_string(path))?;
    let client = Client::from_endpoint(endpoint);
    Ok(match timeout {
        Some(timeout) => client.with_timeout(timeout),
        None => client,
    })
}

/// `status`, and the report after `start`: one line about the daemon, one about its servers,
/// one naming its log; `--json` prints the same as an object.
async fn report(
    running: &Running,
    runtime_dir: &Path,
    timeout: Option<Duration>,
    output: &mut Output<'_>,
) -> Result<(), Error> {
    let mut client = client_for(runtime_dir, timeout)?;
    let health = client.call(name::HEALTH, None).await?;
    let servers: HealthResult = parse_result(name::HEALTH, health.clone())?;
    let file = &running.file;
    let address = match &file.socket {
        Some(socket) => socket.clone(),
        None => client.address(),
    };
    let uptime_ms = running
        .started
        .and_then(|started| started.elapsed().ok())
        .map(|elapsed| elapsed.as_millis() as u64);
    let log = runtime_dir.join(LOG_FILE_NAME);
    let log = log.exists().then_some(log);
    if output.json {
        return output.emit_json(&json!({
            "running": true,
            "pid": file.pid,
            "address": address,
            "port": (file.socket.is_none()).then_some(file.port),
            "socket": file.socket,
            "version": file.version,
            "uptimeMs": uptime_ms,
            "log": log.as_ref().map(|log| log.display().to_string()),
            "servers": health.get("servers").cloned().unwrap_or(Value::Array(Vec::new())),
        }));
    }
    let mut text = format!(
        "{DAEMON_NAME} {} is running: pid {}, {address}",
        file.version, file.pid
    );
    if let Some(uptime_ms) = uptime_ms {
        text.push_str(&format!(", up {}", render::human_duration(uptime_ms)));
    }
    text.push('\n');
    text.push_str(&servers_line(&servers));
    text.push('\n');
    if let Some(log) = log {
        text.push_str(&format!("log: {}\n", log.display()));
    }
    output.emit_text(&text)
}

/// `servers: 2 of 3 ready (gh: down)`, `servers: none configured`.
fn servers_line(health: &HealthResult) -> String {
    if health.servers.is_empty() {
        return "servers: none (the config lists none, or this token sees none)".to_owned();
    }
    let ready = health
        .servers
        .iter()
        .filter(|server| server.state == ServerState::Ready)
        .count();
    let others: Vec<String> = health
        .servers
        .iter()
        .filter(|server| server.state != ServerState::Ready)
        .map(|server| format!("{}: {}", server.name, server.state.as_str()))
        .collect();
    let mut line = format!("servers: {ready} of {} ready", health.servers.len());
    if !others.is_empty() {
        line.push_str(&format!(" ({})", others.join(", ")));
    }
    line
}

async fn start(
    runtime_dir: &Path,
    config: Option<&Path>,
    daemon_args: &[String],
    deadline: Instant,
    output: &mut Output<'_>,
) -> Result<(), Error> {
    let (mut child, log_path, log_start) = spawn_detached(runtime_dir, config, daemon_args)?;
    let pid = child.id();

    // Ready, step 1: the daemon wrote the runtime file (it listens then).
    let file_path = runtime_dir.join(RUNTIME_FILE_NAME);
    loop {
        if let Some(status) = child.try_wait().map_err(|source| Error::Io {
            action: format!("wait for {DAEMON_NAME} (pid {pid})"),
            source,
        })? {
            return Err(Error::Other(format!(
                "{DAEMON_NAME} exited during start-up ({status}); {}",
                log_tail(&log_path, log_start)
            )));
        }
        if let Ok(Some((file, _))) = read_runtime_file(&file_path)
            && file.pid == pid
        {
            break;
        }
        if Instant::now() >= deadline {
            // Not left running unseen: nobody could find it without its runtime file.
            // SAFETY: kill(2) has no memory-safety preconditions; the pid is our child's.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
            return Err(Error::Other(format!(
                "{DAEMON_NAME} (pid {pid}) wrote no runtime file at {} in time, so it was \
                 stopped; {}",
                file_path.display(),
                log_tail(&log_path, log_start)
            )));
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }

    // Step 2: every server has settled (none is still connecting).
    let mut client = client_for(runtime_dir, None)?;
    loop {
        let health = client.call(name::HEALTH, None).await?;
        let servers: HealthResult = parse_result(name::HEALTH, health)?;
        let connecting = servers
            .servers
            .iter()
            .filter(|server| server.state == ServerState::Connecting)
            .count();
        if connecting == 0 {
            break;
        }
        if Instant::now() >= deadline {
            output::warn(&format!(
                "{connecting} {} still connecting; `tool-cli daemon status` shows when they \
                 are ready",
                if connecting == 1 {
                    "server is"
                } else {
                    "servers are"
                }
            ));
            break;
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
    if std::env::var_os(env::PORT).is_some_and(|port| !port.is_empty()) {
        output::warn(
            "TOOL_CLI_PORT is set, so `tool-cli` will use it rather than this daemon; unset \
             TOOL_CLI_PORT and TOOL_CLI_TOKEN to use the daemon of the runtime file",
        );
    }
    let running = Running {
        file: read_runtime_file(&file_path)?
            .map(|(file, _)| file)
            .ok_or_else(|| {
                Error::Other(format!(
                    "{DAEMON_NAME} (pid {pid}) removed its runtime file while starting; {}",
                    log_tail(&log_path, log_start)
                ))
            })?,
        started: Some(SystemTime::now()),
    };
    if !output.json {
        output.emit_text(&format!("started {DAEMON_NAME} (pid {pid})"))?;
    }
    report(&running, runtime_dir, None, output).await
}

/// Creates the runtime directory (owner-only) with its parents, if it is not there yet.
pub(crate) fn create_runtime_dir(runtime_dir: &Path) -> Result<(), Error> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(runtime_dir)
        .map_err(|source| Error::Io {
            action: format!("create the runtime directory {}", runtime_dir.display()),
            source,
        })
}

/// Runs `tool-cli-daemon` detached (a new session, stdin and stdout on `/dev/null`, stderr
/// appended to `daemon.log` in `runtime_dir`) with the runtime directory `runtime_dir`; answers
/// the child, the log's path and where this start's lines begin in it. Shared by `daemon start`
/// and the auto-start of `autostart.rs`.
pub(crate) fn spawn_detached(
    runtime_dir: &Path,
    config: Option<&Path>,
    daemon_args: &[String],
) -> Result<(std::process::Child, PathBuf, u64), Error> {
    let binary = daemon_binary()?;
    create_runtime_dir(runtime_dir)?;
    let log_path = runtime_dir.join(LOG_FILE_NAME);
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&log_path)
        .map_err(|source| Error::Io {
            action: format!("open the daemon's log {}", log_path.display()),
            source,
        })?;
    let log_start = log.metadata().map(|metadata| metadata.len()).unwrap_or(0);

    let mut command = Command::new(&binary);
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    command
        .args(daemon_args)
        .env(env::RUNTIME_DIR, runtime_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    for variable in CLIENT_VARIABLES {
        command.env_remove(variable);
    }
    // SAFETY: setsid is async-signal-safe and touches only the child between fork and exec.
    // A new session has no controlling terminal: closing the terminal (SIGHUP) or pressing
    // Ctrl-C in it (SIGINT to the foreground group) does not reach the daemon.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn().map_err(|source| Error::Io {
        action: format!("start {}", binary.display()),
        source,
    })?;
    Ok((child, log_path, log_start))
}

fn stop(runtime_dir: &Path, timeout: Duration, output: &mut Output<'_>) -> Result<(), Error> {
    let running = running_daemon(runtime_dir)?;
    let pid = running.file.pid;
    // SAFETY: kill(2) has no memory-safety preconditions.
    if unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) } == -1 {
        return Err(Error::Io {
            action: format!("send SIGTERM to {DAEMON_NAME} (pid {pid})"),
            source: std::io::Error::last_os_error(),
        });
    }
    let deadline = Instant::now() + timeout;
    while is_alive(pid) {
        if Instant::now() >= deadline {
            return Err(Error::Other(format!(
                "{DAEMON_NAME} (pid {pid}) did not exit within {} s of SIGTERM; it may still be \
                 finishing calls (its grace is --shutdown-grace-ms); `kill -KILL {pid}` stops it \
                 at once",
                timeout.as_secs()
            )));
        }
        // Not our child (it was started detached), so there is no exit status to wait for.
        std::thread::sleep(POLL_INTERVAL);
    }
    if output.json {
        return output.emit_json(&json!({"stopped": true, "pid": pid}));
    }
    output.emit_text(&format!("stopped {DAEMON_NAME} (pid {pid})"))
}

/// Whether `pid` is a live process (not a zombie waiting to be reaped).
fn is_alive(pid: u32) -> bool {
    let Ok(pid_t) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill(2) with signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(pid_t, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !exists {
        return false;
    }
    // `/proc/<pid>/stat` is `pid (comm) state ...`; the comm may hold spaces and parentheses,
    // so the state is read after the last `)`.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_none_or(|state| state != 'Z'),
        Err(_) => true,
    }
}

/// Whether `pid` is a live `tool-cli-daemon`. Where `/proc` is missing, a live pid is taken at
/// its word.
pub(crate) fn is_daemon(pid: u32) -> bool {
    if !is_alive(pid) {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
        Ok(comm) => comm.trim_end() == DAEMON_NAME,
        Err(_) => !Path::new("/proc/self").exists(),
    }
}

/// `tool-cli-daemon` next to this executable (an install puts both in one directory), else the
/// first on `PATH`.
pub(crate) fn daemon_binary() -> Result<PathBuf, Error> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(DAEMON_NAME)))
        .filter(|path| path.is_file());
    if let Some(path) = beside {
        return Ok(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(DAEMON_NAME))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            Error::Other(format!(
                "cannot find {DAEMON_NAME} next to tool-cli or on PATH; install it beside \
                 tool-cli (`cargo install --path daemon`) or put it on PATH"
            ))
        })
}

/// What the daemon logged since `from`, for a failed start: its last lines.
pub(crate) fn log_tail(path: &Path, from: u64) -> String {
    const LINES: usize = 10;
    let mut text = String::new();
    let read = std::fs::File::open(path).and_then(|mut file| {
        use std::io::Seek as _;
        file.seek(std::io::SeekFrom::Start(from))?;
        file.take(64 * 1024).read_to_string(&mut text)
    });
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    if read.is_err() || lines.is_empty() {
        return format!("its log {} says nothing", path.display());
    }
    let tail = &lines[lines.len().saturating_sub(LINES)..];
    format!(
        "the end of its log {}:\n  {}",
        path.display(),
        tail.join("\n  ")
    )
}

#[cfg(test)]
mod tests {
    use tool_cli_protocol::methods::ServerHealth;

    use super::*;

    fn server(name: &str, state: ServerState) -> ServerHealth {
        serde_json::from_value(json!({
            "name": name, "state": state.as_str(), "transport": "stdio", "restarts": 0,
            "calls": 0, "errors": 0, "inFlight": 0, "queued": 0,
            "breaker": {"state": "closed"}
        }))
        .unwrap()
    }

    #[test]
    fn servers_line_counts_ready_and_names_the_others() {
        let health = HealthResult {
            servers: vec![
                server("demo", ServerState::Ready),
                server("gh", ServerState::Down),
                server("off", ServerState::Disabled),
            ],
            traces: None,
            search: None,
            telemetry: None,
        };
        assert_eq!(
            servers_line(&health),
            "servers: 1 of 3 ready (gh: down, off: disabled)"
        );
        let none = HealthResult {
            servers: Vec::new(),
            traces: None,
            search: None,
            telemetry: None,
        };
        assert!(servers_line(&none).starts_with("servers: none"));
    }

    #[test]
    fn liveness_of_this_process_a_zombie_and_a_reaped_child() {
        assert!(is_alive(std::process::id()));
        // This test binary is not a daemon.
        assert!(!is_daemon(std::process::id()));
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Wait for the exit without reaping it: the child is a zombie, which is not alive.
        // SAFETY: waitid on our own child with a zeroed siginfo out-parameter.
        let waited = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        assert_eq!(waited, 0);
        assert!(!is_alive(pid), "a zombie is not alive");
        child.wait().unwrap();
        assert!(!is_alive(pid), "a reaped child is gone");
    }

    #[test]
    fn no_runtime_file_means_no_daemon() {
        let directory =
            std::env::temp_dir().join(format!("tool-cli-status-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let error = running_daemon(&directory).err().unwrap();
        assert_eq!(error.exit_code(), crate::error::exit::UNREACHABLE);
        assert!(error.to_string().contains("no runtime file"), "{error}");
        // A file naming a pid that is not a daemon (ours): stale.
        let file = RuntimeFile {
            host: "127.0.0.1".into(),
            port: 1,
            token: "t".into(),
            pid: std::process::id(),
            version: "0".into(),
            socket: None,
            daemon_id: None,
        };
        std::fs::write(
            directory.join(RUNTIME_FILE_NAME),
            serde_json::to_string(&file).unwrap(),
        )
        .unwrap();
        let error = running_daemon(&directory).err().unwrap();
        assert_eq!(error.exit_code(), crate::error::exit::UNREACHABLE);
        assert!(error.to_string().contains("not a running"), "{error}");
        std::fs::remove_dir_all(&directory).unwrap();
    }

    #[test]
    fn log_tail_shows_only_what_this_start_logged() {
        let directory = std::env::temp_dir().join(format!("tool-cli-log-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let path = directory.join(LOG_FILE_NAME);
        std::fs::write(&path, "old run\n").unwrap();
        let from = std::fs::metadata(&path).unwrap().len();
        std::fs::write(&path, "old run\nerror: bad config\n").unwrap();
        let tail = log_tail(&path, from);
        assert!(tail.ends_with("\n  error: bad config"), "{tail}");
        assert!(!tail.contains("old run"), "{tail}");
        std::fs::remove_dir_all(&directory).unwrap();
    }

    #[test]
    fn no_daemon_says_where_a_print_env_daemon_parts_ways_with_the_runtime_file() {
        let nothing = |_: &str| None;
        assert_eq!(print_env_hint(&nothing), "");
        let port = |name: &str| (name == env::PORT).then(|| "45089".to_owned());
        let hint = print_env_hint(&port);
        assert!(
            hint.contains("(45089) names a daemon started with --print-env")
                && hint.contains("set TOOL_CLI_RUNTIME_DIR"),
            "{hint}"
        );
        // An id whose pid is no tool-cli-daemon (this test's own process) is not taken at its
        // word: the port is what is left to name.
        let own_id = format!("1:{}:0:abc", std::process::id());
        let id_and_port = |name: &str| match name {
            env::DAEMON_ID => Some(own_id.clone()),
            env::PORT => Some("45089".to_owned()),
            _ => None,
        };
        let hint = print_env_hint(&id_and_port);
        assert!(!hint.contains("kill"), "{hint}");
        assert!(hint.contains("(45089)"), "{hint}");
    }
}
