//! Recording a Streamable HTTP server (`"record": FILE` on an http entry, or `startRecording`):
//! a tap in the HTTP client (`http.rs`) that writes every JSON-RPC message it posts and every
//! message the server sends back (a JSON answer, or each event of an SSE stream, the `GET`
//! stream's included) in the replay crate's NDJSON format, so `{"replay": FILE}` serves it.
//!
//! Redacted as it is written: request headers are never written (the header's `source` names
//! the URL without its credentials and the headers' names only), and the values of the
//! server's headers and of the config's secrets are replaced wherever they appear in a message,
//! as are credential-named members. The file is finished (its end marker) when the connection
//! is dropped.

use std::fs::File;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_cli_replay::recording::{RecordingFacts, RecordingWriter, Sender};
use tool_cli_replay::redact::{Redact, SecretRedactor};

use crate::redact::Secrets;

/// The daemon's secret values and the replay crate's credential-named members, together.
struct TapRedactor {
    names: SecretRedactor,
    secrets: Arc<Secrets>,
}

impl Redact for TapRedactor {
    fn redact(&self, value: &mut Value) {
        self.names.redact(value);
        self.secrets.redact_value(value);
    }
}

/// One connection's recording.
pub(crate) struct HttpTap {
    writer: Mutex<Option<RecordingWriter<File>>>,
}

impl HttpTap {
    /// Creates (or truncates) `path`, mode `0600`, for server `name` at `url`; `secrets` are
    /// the config's secret values (`${VAR}` expansions, credential headers' values).
    pub(crate) fn open(
        path: &Path,
        name: &str,
        url: &str,
        header_names: Vec<String>,
        secrets: Arc<Secrets>,
    ) -> std::io::Result<HttpTap> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?;
        let facts = RecordingFacts {
            server: name.to_owned(),
            transport: "http".to_owned(),
            source: json!({ "url": url_without_credentials(url), "headers": header_names }),
        };
        let redactor = Arc::new(TapRedactor {
            names: SecretRedactor::new(Vec::new()),
            secrets,
        });
        Ok(HttpTap {
            writer: Mutex::new(Some(RecordingWriter::new(file, facts, redactor))),
        })
    }

    /// Records one message; a write that fails is logged once and ends the recording (the
    /// call itself goes on).
    pub(crate) fn record(&self, from: Sender, message: &impl serde::Serialize) {
        let Ok(message) = serde_json::to_value(message) else {
            return;
        };
        self.record_value(from, &message);
    }

    /// Records one message the server sent as text (an SSE event's data).
    pub(crate) fn record_text(&self, text: &str) {
        if let Ok(message) = serde_json::from_str::<Value>(text) {
            self.record_value(Sender::Server, &message);
        }
    }

    fn record_value(&self, from: Sender, message: &Value) {
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(open) = writer.as_mut()
            && let Err(error) = open.record(from, message)
        {
            tracing::warn!(%error, "the recording cannot be written; recording stopped");
            *writer = None;
        }
    }
}

/// `url` without its user, password, query and fragment (any of which may carry a credential).
fn url_without_credentials(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => "[REDACTED]".to_owned(),
    }
}

impl Drop for HttpTap {
    /// The connection is gone: the recording is complete.
    fn drop(&mut self) {
        let writer = self.writer.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(writer) = writer.take()
            && let Err(error) = writer.finish()
        {
            tracing::warn!(%error, "the recording's end marker cannot be written");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_is_written_without_its_credentials() {
        assert_eq!(
            url_without_credentials("https://user:pw@example.test:8443/mcp?key=sk-1#x"),
            "https://example.test:8443/mcp"
        );
    }
}
