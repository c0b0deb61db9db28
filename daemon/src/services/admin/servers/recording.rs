//! `startRecording` and `stopRecording`: a configured server restarted recording (a stdio one
//! under the bundled recording proxy, an http one with the HTTP client's tap:
//! `config/recording.rs`), so that every caller's traffic to it (the CLI,
//! scripts, the agent, the gateway: they all go through the pool) is written to an NDJSON file,
//! and restarted unrecorded when the recording stops. The restart is an ordinary replacement
//! (`ServerManager::apply`): the old connection drains and stops, the new one starts with a
//! fresh `initialize`, so the file is a whole session that `{"replay": FILE}` can serve.
//!
//! The running config is not changed: a reload compares the file with the server as
//! configured, and a reload that changes the server's entry replaces the recorded connection
//! (which ends the recording, complete).

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tool_cli_protocol::ErrorData;
use tool_cli_protocol::manage::{
    StartRecordingParams, StartRecordingResult, StopRecordingParams, StopRecordingResult,
};
use tool_cli_protocol::methods::{ServerState, name};

use super::{Followers, ServerManager};
use crate::config::recording::{REPLAY_COMMAND, recorded_transport};
use crate::config::{ServerConfig, TransportConfig};
use crate::error::Error;
use crate::provider::Upstream as _;

impl ServerManager {
    fn recordings(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<String, PathBuf>> {
        self.recordings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `startRecording`: restarts `server` under the recording proxy writing `out`.
    pub(crate) async fn start_recording(
        &self,
        params: StartRecordingParams,
        followers: &Followers<'_>,
    ) -> Result<StartRecordingResult, Error> {
        let method = name::START_RECORDING;
        let running = self.running.lock().await;
        let Some(configured) = running
            .servers
            .iter()
            .find(|server| server.name == params.server)
            .cloned()
        else {
            return Err(ErrorData::UnknownServer {
                server: params.server.clone(),
                known_servers: running.servers.iter().map(|s| s.name.clone()).collect(),
            }
            .into());
        };
        if let Some(file) = self.recordings().get(&params.server) {
            return Err(Error::invalid_params(
                method,
                format!(
                    "server \"{}\" is being recorded already, to {}; stop that recording first \
                     (stopRecording, or Ctrl-C in the `tool-cli record` that started it)",
                    params.server,
                    file.display()
                ),
            ));
        }
        let recorded = recordable(&configured).map_err(|why| {
            Error::invalid_params(
                method,
                format!("cannot record \"{}\": {why}", params.server),
            )
        })?;
        let out = PathBuf::from(&params.out);
        let created = prepare_file(&out)
            .map_err(|why| Error::invalid_params(method, format!("out {}: {why}", params.out)))?;
        let recorded = ServerConfig {
            transport: recorded_transport(&params.server, &params.out, None, recorded),
            ..configured.clone()
        };
        let secrets = Arc::new(crate::config::secrets_of(&running));
        self.restart_as(method, followers, &recorded, Arc::clone(&secrets))
            .await?;
        let status = self.status_of(&params.server);
        if configured.enabled && status.0 != ServerState::Ready {
            // Put the server back as it was, so a failed recording costs the callers nothing.
            self.restart_as(method, followers, &configured, secrets)
                .await?;
            if created {
                let _ = std::fs::remove_file(&out);
            }
            return Err(Error::invalid_params(
                method,
                format!(
                    "server \"{}\" did not start under the recording proxy ({}), so it runs \
                     unrecorded as before",
                    params.server,
                    status.1.unwrap_or_else(|| status.0.as_str().to_owned())
                ),
            ));
        }
        self.recordings().insert(params.server.clone(), out);
        tracing::info!(server = %params.server, "recording started");
        Ok(StartRecordingResult {
            server: params.server,
            out: params.out,
            state: status.0,
        })
    }

    /// `stopRecording`: restarts `server` unrecorded (the proxy finishes its file as its
    /// connection closes) and sums the file up.
    pub(crate) async fn stop_recording(
        &self,
        params: StopRecordingParams,
        followers: &Followers<'_>,
    ) -> Result<StopRecordingResult, Error> {
        let method = name::STOP_RECORDING;
        let running = self.running.lock().await;
        let Some(out) = self.recordings().remove(&params.server) else {
            return Err(Error::invalid_params(
                method,
                format!(
                    "server \"{}\" is not being recorded; start a recording with \
                     startRecording (`tool-cli record --server {} --out FILE`)",
                    params.server, params.server
                ),
            ));
        };
        // A server removed while it was recorded was stopped already, its file finished.
        if let Some(configured) = running
            .servers
            .iter()
            .find(|server| server.name == params.server)
            .cloned()
        {
            let secrets = Arc::new(crate::config::secrets_of(&running));
            self.restart_as(method, followers, &configured, secrets)
                .await?;
        }
        tracing::info!(server = %params.server, "recording stopped");
        let summary = summarise(&out).map_err(|error| {
            Error::invalid_params(
                method,
                format!("the recording {} cannot be read: {error}", out.display()),
            )
        })?;
        Ok(StopRecordingResult {
            server: params.server,
            out: out.display().to_string(),
            lines: summary.lines,
            bytes: summary.bytes,
            messages: summary.messages,
            complete: summary.complete,
        })
    }

    /// Restarts the running server `server.name` as `server` (recorded, or as configured): an
    /// ordinary replacement, the old connection drained and stopped, the new one started.
    async fn restart_as(
        &self,
        method: &str,
        followers: &Followers<'_>,
        server: &ServerConfig,
        secrets: Arc<crate::redact::Secrets>,
    ) -> Result<(), Error> {
        self.apply(
            method,
            followers,
            std::slice::from_ref(server),
            &[],
            secrets,
        )
        .await
        .map(|_abandoned_calls| ())
    }

    /// The state of the running server `name`, and its error.
    fn status_of(&self, name: &str) -> (ServerState, Option<String>) {
        self.pool
            .servers()
            .iter()
            .find(|server| server.config.name == name)
            .map(|server| {
                let status = server.status();
                (status.state, status.error.clone())
            })
            .unwrap_or((ServerState::Down, Some("it is gone".to_owned())))
    }
}

/// The transport to put behind the proxy, or why the server cannot be recorded.
fn recordable(server: &ServerConfig) -> Result<TransportConfig, String> {
    match &server.transport {
        TransportConfig::Stdio { command, .. } if command == REPLAY_COMMAND => Err(
            "it runs through tool-cli-replay already (its config's \"record\" or \"replay\" \
             member); its recording is the file that member names"
                .to_owned(),
        ),
        TransportConfig::Http { remote, .. } if remote.record.is_some() => Err(
            "its config's \"record\" member records it already, to the file that member names"
                .to_owned(),
        ),
        TransportConfig::Stdio { .. } | TransportConfig::Http { .. } => {
            Ok(server.transport.clone())
        }
    }
}

/// Checks that `out` can be written (an absolute path, in an existing directory, writable)
/// and creates it `0600` if it does not exist; says whether it was created.
fn prepare_file(out: &Path) -> Result<bool, String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    if !out.is_absolute() {
        return Err(
            "expected an absolute path (the daemon's working directory is not yours)".to_owned(),
        );
    }
    let Some(directory) = out.parent().filter(|parent| !parent.as_os_str().is_empty()) else {
        return Err("expected a file path, not a directory".to_owned());
    };
    if !directory.is_dir() {
        return Err(format!(
            "the directory {} does not exist; create it first or choose another",
            directory.display()
        ));
    }
    if out.is_dir() {
        return Err("is a directory; expected a file path".to_owned());
    }
    let existed = out.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        // The proxy truncates it when it starts; a refused recording leaves it as it was.
        .truncate(false)
        .mode(0o600)
        .open(out)
        .map_err(|error| format!("cannot be written ({error}); choose a writable place"))?;
    Ok(!existed)
}

/// What a finished recording holds.
struct Summary {
    lines: u64,
    bytes: u64,
    messages: u64,
    complete: bool,
}

/// Counts `out`'s lines and messages and checks for the end marker (its checksums are the
/// replay's to check).
fn summarise(out: &Path) -> std::io::Result<Summary> {
    let file = std::fs::File::open(out)?;
    let bytes = file.metadata()?.len();
    let mut summary = Summary {
        lines: 0,
        bytes,
        messages: 0,
        complete: false,
    };
    for line in BufReader::new(file).lines() {
        let line = line?;
        summary.lines += 1;
        let value: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        summary.complete = value.get("end").and_then(serde_json::Value::as_bool) == Some(true);
        if value.get("message").is_some() {
            summary.messages += 1;
        }
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_file_must_be_absolute_in_an_existing_directory() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            prepare_file(Path::new("relative.ndjson"))
                .unwrap_err()
                .contains("absolute")
        );
        let missing = dir.path().join("no-such-dir").join("rec.ndjson");
        assert!(
            prepare_file(&missing)
                .unwrap_err()
                .contains("does not exist")
        );
        assert!(prepare_file(dir.path()).unwrap_err().contains("directory"));
        let file = dir.path().join("rec.ndjson");
        assert!(prepare_file(&file).unwrap(), "created");
        assert!(!prepare_file(&file).unwrap(), "there already");
    }

    #[test]
    fn a_summary_counts_messages_and_sees_the_end_marker() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rec.ndjson");
        std::fs::write(
            &file,
            "{\"sum\":\"a\",\"format\":\"x\"}\n{\"sum\":\"b\",\"message\":{}}\n{\"sum\":\"c\",\"end\":true}\n",
        )
        .unwrap();
        let summary = summarise(&file).unwrap();
        assert_eq!((summary.lines, summary.messages), (3, 1));
        assert!(summary.complete);
        assert_eq!(summary.bytes, std::fs::metadata(&file).unwrap().len());
    }
}
