//! The recording proxy: it sits between an MCP client and a real stdio server, passes every
//! line through unchanged, and records each JSON-RPC message (redacted) as it goes.
//!
//! `tool-cli-replay record --out FILE --server NAME -- COMMAND ARGS…` is what a client launches
//! instead of the server; the proxy starts the server as its child (which dies with the proxy:
//! `PR_SET_PDEATHSIG`, and `kill_on_drop`), so no server outlives it. The recording is complete
//! (end marker written) when the client closes its side and the server exits, or when the proxy
//! gets SIGTERM or SIGINT (it then stops the server with SIGTERM, waits up to five seconds for
//! its last lines, and kills it). A line the server writes that is not JSON is passed on but not
//! recorded (noted on stderr).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::process::Command;

use crate::recording::{RecordingFacts, RecordingWriter, Sender};
use crate::redact::{Redact, SecretRedactor};

/// How long the server has to finish after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// What to record and how.
#[derive(Debug, Clone)]
pub struct ProxyOptions {
    /// The recording to write.
    pub out: PathBuf,
    /// The server's name, for the header.
    pub server: String,
    /// The server's command and arguments.
    pub command: Vec<OsString>,
    /// Environment variables whose values are secrets, redacted wherever they appear.
    pub redact_env: Vec<String>,
}

/// Why the proxy could not record.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// No command after `--`.
    #[error("no server command: give it after --, e.g. record --out s.ndjson -- npx server")]
    NoCommand,
    /// A `--redact-env` variable is unset.
    #[error(
        "--redact-env {0}: the variable is not set, so its value cannot be redacted; set it or drop the flag"
    )]
    UnsetSecret(String),
    /// The recording file cannot be created.
    #[error("--out {path}: cannot create it ({reason})")]
    Create {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The server cannot be started.
    #[error("cannot start {command:?}: {reason}")]
    Spawn {
        /// The command.
        command: String,
        /// Why.
        reason: String,
    },
    /// Writing the recording failed.
    #[error("writing the recording failed: {0}")]
    Write(std::io::Error),
}

/// Runs the proxy between `client_in`/`client_out` and the server; returns the server's exit
/// code (or 1 when it was killed by a signal).
pub async fn record<R, W>(
    options: ProxyOptions,
    client_in: R,
    mut client_out: W,
    stop: impl std::future::Future<Output = ()>,
) -> Result<i32, ProxyError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin,
{
    let (program, arguments) = options.command.split_first().ok_or(ProxyError::NoCommand)?;
    let mut secrets = Vec::new();
    for name in &options.redact_env {
        secrets.push(std::env::var(name).map_err(|_| ProxyError::UnsetSecret(name.clone()))?);
    }
    let redactor: Arc<dyn Redact> = Arc::new(SecretRedactor::new(secrets));
    let file = create_private(&options.out).map_err(|error| ProxyError::Create {
        path: options.out.display().to_string(),
        reason: error.to_string(),
    })?;
    let env: serde_json::Map<String, Value> = options
        .redact_env
        .iter()
        .map(|name| {
            (
                name.clone(),
                Value::String(std::env::var(name).unwrap_or_default()),
            )
        })
        .collect();
    let facts = RecordingFacts {
        server: options.server.clone(),
        transport: "stdio".to_owned(),
        source: json!({
            "command": program.to_string_lossy(),
            "args": arguments.iter().map(|argument| argument.to_string_lossy()).collect::<Vec<_>>(),
            "env": env,
        }),
    };
    let writer = Arc::new(Mutex::new(Some(RecordingWriter::new(
        std::io::BufWriter::new(file),
        facts,
        redactor,
    ))));

    let mut command = Command::new(program);
    command
        .args(arguments)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent; it asks the
    // kernel to send SIGTERM to the server if the proxy dies, so none outlives it.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|error| ProxyError::Spawn {
        command: program.to_string_lossy().into_owned(),
        reason: error.to_string(),
    })?;
    let mut server_in = child.stdin.take().expect("piped stdin");
    let server_out = child.stdout.take().expect("piped stdout");

    // Client → server, on a task of its own: it ends when the client closes its side.
    let upstream_writer = Arc::clone(&writer);
    let upstream = tokio::spawn(async move {
        let mut lines = BufReader::new(client_in).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            record_line(&upstream_writer, Sender::Client, &line);
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            if server_in.write_all(&bytes).await.is_err() || server_in.flush().await.is_err() {
                break;
            }
        }
        // Dropping `server_in` closes the server's stdin: its cue to exit.
    });

    // Server → client, here, until the server closes its stdout (or a stop signal).
    let mut lines = BufReader::new(server_out).lines();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => {
                    record_line(&writer, Sender::Server, &line);
                    let mut bytes = line.into_bytes();
                    bytes.push(b'\n');
                    if client_out.write_all(&bytes).await.is_err()
                        || client_out.flush().await.is_err()
                    {
                        break;
                    }
                }
                _ => break,
            },
            () = &mut stop => {
                if let Some(pid) = child.id() {
                    // SAFETY: signalling our own child by its pid.
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
                }
                let deadline = tokio::time::sleep(STOP_GRACE);
                tokio::pin!(deadline);
                // Its last lines, within the grace period.
                loop {
                    tokio::select! {
                        line = lines.next_line() => match line {
                            Ok(Some(line)) => {
                                record_line(&writer, Sender::Server, &line);
                                let _ = client_out.write_all(format!("{line}\n").as_bytes()).await;
                            }
                            _ => break,
                        },
                        () = &mut deadline => break,
                    }
                }
                break;
            }
        }
    }
    upstream.abort();
    let status = match tokio::time::timeout(STOP_GRACE, child.wait()).await {
        Ok(Ok(status)) => status.code().unwrap_or(1),
        _ => {
            let _ = child.kill().await;
            1
        }
    };
    let finished = writer
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .take()
        .map(RecordingWriter::finish);
    if let Some(Err(error)) = finished {
        return Err(ProxyError::Write(error));
    }
    Ok(status)
}

fn record_line<W: std::io::Write>(
    writer: &Mutex<Option<RecordingWriter<W>>>,
    from: Sender,
    line: &str,
) {
    let line = line.trim_end_matches('\r');
    if line.trim().is_empty() {
        return;
    }
    let messages = match serde_json::from_str::<Value>(line) {
        Ok(Value::Array(batch)) => batch,
        Ok(message) => vec![message],
        Err(_) => {
            eprintln!(
                "tool-cli-replay record: a {} line that is not JSON was passed on but not recorded",
                match from {
                    Sender::Client => "client",
                    Sender::Server => "server",
                }
            );
            return;
        }
    };
    let mut guard = writer
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(writer) = guard.as_mut() {
        for message in &messages {
            if let Err(error) = writer.record(from, message) {
                eprintln!("tool-cli-replay record: cannot write the recording: {error}");
            }
        }
    }
}

/// Creates (or truncates) `path` readable by its owner only: a recording may hold data the
/// session saw.
fn create_private(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}
