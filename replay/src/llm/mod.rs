//! Record and replay of LLM HTTP exchanges (the agent's OpenAI-compatible and Anthropic
//! backends, SSE streams included), so an agent run can be replayed with no network and the
//! same bytes every time.
//!
//! The format (NDJSON, version 1, the checksum chain of the MCP format):
//!
//! ```text
//! {"sum":"…","format":"tool-cli-llm-recording","version":1,"upstream":"https://api.openai.com","recordedAt":"…"}
//! {"sum":"…","seq":1,"t":0.8,"request":{"method":"POST","path":"/v1/chat/completions","headers":[["content-type","application/json"]],"body":{"text":"{…}"}},"response":{"status":200,"headers":[["content-type","text/event-stream"]],"chunks":[{"text":"data: {…}\n\n"},…]}}
//! {"sum":"…","end":true,"exchanges":1,"duration":0.9}
//! ```
//!
//! Bodies are text when they are UTF-8, else `{"base64": …}`. The response is kept as the
//! chunks it arrived in, so a replay streams it the same way; their concatenation is the body,
//! byte for byte. Request headers are kept only from an allow-list (content type, accept,
//! provider version headers): an API key header never reaches the file. The request body is
//! redacted as JSON (credential members, secret values); response chunks and header values have
//! secret values replaced (nothing else changes, so the replay stays byte-identical to the
//! recording).
//!
//! [`proxy`] records through a loopback reverse proxy; [`server`] serves a recording back,
//! matching requests by method, path and normalised body.

pub mod proxy;
pub mod server;

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::chain::{Chain, ChainError};
use crate::normalize::{Normalizer, canonical};
use crate::recording::rfc3339;
use crate::redact::Redact;

/// The header's `format`.
pub const FORMAT: &str = "tool-cli-llm-recording";
/// The version this crate writes and reads.
pub const VERSION: u32 = 1;

/// Request headers kept in a recording (lowercase).
pub const KEPT_REQUEST_HEADERS: &[&str] = &[
    "content-type",
    "accept",
    "anthropic-version",
    "anthropic-beta",
    "openai-beta",
];

/// Response headers never recorded or replayed: hop-by-hop ones and what the server sets anew.
pub const DROPPED_RESPONSE_HEADERS: &[&str] = &[
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "content-encoding",
    "date",
    "set-cookie",
    "upgrade",
    "proxy-connection",
];

/// A body or a chunk of one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Bytes {
    /// UTF-8 text.
    Text(String),
    /// Anything else, base64.
    Base64(String),
}

impl Bytes {
    /// Recorded form of `data`.
    pub fn of(data: &[u8]) -> Bytes {
        match std::str::from_utf8(data) {
            Ok(text) => Bytes::Text(text.to_owned()),
            Err(_) => Bytes::Base64(base64::engine::general_purpose::STANDARD.encode(data)),
        }
    }

    /// The bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        match self {
            Bytes::Text(text) => text.clone().into_bytes(),
            Bytes::Base64(encoded) => base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .unwrap_or_default(),
        }
    }
}

/// The request of an exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedRequest {
    /// `POST`.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Allow-listed headers, lowercase names.
    pub headers: Vec<(String, String)>,
    /// The body (redacted).
    pub body: Bytes,
}

/// The response of an exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedResponse {
    /// The HTTP status.
    pub status: u16,
    /// Its headers, lowercase names, minus [`DROPPED_RESPONSE_HEADERS`].
    pub headers: Vec<(String, String)>,
    /// The body as it arrived, chunk by chunk.
    pub chunks: Vec<Bytes>,
}

impl RecordedResponse {
    /// The whole body.
    pub fn body(&self) -> Vec<u8> {
        self.chunks.iter().flat_map(Bytes::to_vec).collect()
    }
}

/// One exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    /// Its position, from 1.
    pub seq: u64,
    /// Seconds from the recording's start to the request.
    pub t: f64,
    /// The request.
    pub request: RecordedRequest,
    /// The response.
    pub response: RecordedResponse,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Header {
    format: String,
    version: u32,
    upstream: String,
    recorded_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Trailer {
    end: bool,
    exchanges: u64,
    duration: f64,
}

fn members(value: &impl Serialize) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(members)) => members,
        _ => Map::new(),
    }
}

/// Writes an LLM recording, redacting as it goes.
pub struct LlmWriter<W: Write> {
    out: W,
    chain: Chain,
    redactor: Arc<dyn Redact>,
    started: Instant,
    exchanges: u64,
}

impl<W: Write> LlmWriter<W> {
    /// Starts a recording of exchanges with `upstream` (its base URL, no credentials).
    pub fn new(out: W, upstream: &str, redactor: Arc<dyn Redact>) -> std::io::Result<LlmWriter<W>> {
        let mut writer = LlmWriter {
            out,
            chain: Chain::default(),
            redactor,
            started: Instant::now(),
            exchanges: 0,
        };
        writer.line(&members(&Header {
            format: FORMAT.to_owned(),
            version: VERSION,
            upstream: upstream.to_owned(),
            recorded_at: rfc3339(SystemTime::now()),
        }))?;
        Ok(writer)
    }

    /// Records one exchange; `started` is when its request began.
    pub fn record(
        &mut self,
        started: Instant,
        request: RecordedRequest,
        response: RecordedResponse,
    ) -> std::io::Result<()> {
        self.exchanges += 1;
        let exchange = Exchange {
            seq: self.exchanges,
            t: (started
                .saturating_duration_since(self.started)
                .as_secs_f64()
                * 1e6)
                .round()
                / 1e6,
            request: self.redact_request(request),
            response: self.redact_response(response),
        };
        self.line(&members(&exchange))
    }

    fn redact_request(&self, mut request: RecordedRequest) -> RecordedRequest {
        request
            .headers
            .retain(|(name, _)| KEPT_REQUEST_HEADERS.contains(&name.as_str()));
        for (_, value) in &mut request.headers {
            *value = self.redactor.redact_text(value);
        }
        request.body = match &request.body {
            Bytes::Text(text) => match serde_json::from_str::<Value>(text) {
                Ok(mut json) => {
                    self.redactor.redact(&mut json);
                    Bytes::Text(json.to_string())
                }
                Err(_) => Bytes::Text(self.redactor.redact_text(text)),
            },
            binary => binary.clone(),
        };
        request
    }

    fn redact_response(&self, mut response: RecordedResponse) -> RecordedResponse {
        response
            .headers
            .retain(|(name, _)| !DROPPED_RESPONSE_HEADERS.contains(&name.as_str()));
        for (_, value) in &mut response.headers {
            *value = self.redactor.redact_text(value);
        }
        for chunk in &mut response.chunks {
            if let Bytes::Text(text) = chunk {
                *text = self.redactor.redact_text(text);
            }
        }
        response
    }

    fn line(&mut self, members: &Map<String, Value>) -> std::io::Result<()> {
        let mut line = self.chain.seal(members);
        line.push('\n');
        self.out.write_all(line.as_bytes())?;
        self.out.flush()
    }

    /// Writes the end marker.
    pub fn finish(mut self) -> std::io::Result<W> {
        let trailer = Trailer {
            end: true,
            exchanges: self.exchanges,
            duration: (self.started.elapsed().as_secs_f64() * 1e3).round() / 1e3,
        };
        self.line(&members(&trailer))?;
        Ok(self.out)
    }
}

/// A loaded LLM recording.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmRecording {
    /// The upstream it was recorded against.
    pub upstream: String,
    /// Its exchanges, in order.
    pub exchanges: Vec<Exchange>,
}

/// Why an LLM recording was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LlmLoadError {
    /// The file could not be read.
    #[error("{path}: cannot read it ({reason})")]
    Read {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// Not an LLM recording of a version this crate reads.
    #[error(
        "{path}: line 1 is not a tool-cli LLM recording header (format tool-cli-llm-recording, version 1)"
    )]
    NotARecording {
        /// The file.
        path: String,
    },
    /// A line changed after recording.
    #[error(
        "{path}: line {line} was changed, moved or inserted after recording (its checksum does not follow the line before); re-record"
    )]
    Tampered {
        /// The file.
        path: String,
        /// The line.
        line: usize,
    },
    /// A malformed line.
    #[error("{path}: line {line} is malformed: {reason}")]
    Malformed {
        /// The file.
        path: String,
        /// The line.
        line: usize,
        /// Why.
        reason: String,
    },
    /// No end marker.
    #[error(
        "{path}: the recording stops after line {line} without its end marker: it was cut short; re-record"
    )]
    Truncated {
        /// The file.
        path: String,
        /// The last line present.
        line: usize,
    },
}

impl LlmRecording {
    /// Reads and verifies the recording at `path`.
    pub fn load(path: &Path) -> Result<LlmRecording, LlmLoadError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| LlmLoadError::Read {
            path: name.clone(),
            reason: error.to_string(),
        })?;
        LlmRecording::parse(&text, &name)
    }

    /// Verifies a recording's text.
    pub fn parse(text: &str, path: &str) -> Result<LlmRecording, LlmLoadError> {
        let path = path.to_owned();
        let mut chain = Chain::default();
        let lines: Vec<&str> = text.split('\n').collect();
        let not_a_recording = || LlmLoadError::NotARecording { path: path.clone() };
        let first = chain.verify(lines[0]).map_err(|error| match error {
            ChainError::NoSum => not_a_recording(),
            ChainError::Mismatch => LlmLoadError::Tampered {
                path: path.clone(),
                line: 1,
            },
        })?;
        let header: Header = serde_json::from_str(&first).map_err(|_| not_a_recording())?;
        if header.format != FORMAT || header.version != VERSION {
            return Err(not_a_recording());
        }
        let mut exchanges = Vec::new();
        for (index, line) in lines.iter().enumerate().skip(1) {
            let number = index + 1;
            if line.is_empty() {
                continue;
            }
            let malformed = |reason: String| LlmLoadError::Malformed {
                path: path.clone(),
                line: number,
                reason,
            };
            let body = chain.verify(line).map_err(|error| match error {
                ChainError::NoSum => malformed("it does not start with a sum".to_owned()),
                ChainError::Mismatch => LlmLoadError::Tampered {
                    path: path.clone(),
                    line: number,
                },
            })?;
            let value: Value =
                serde_json::from_str(&body).map_err(|error| malformed(error.to_string()))?;
            if value.get("end").is_some() {
                let trailer: Trailer =
                    serde_json::from_value(value).map_err(|error| malformed(error.to_string()))?;
                if trailer.exchanges != exchanges.len() as u64 {
                    return Err(malformed(format!(
                        "the end marker counts {} exchanges, the file holds {}",
                        trailer.exchanges,
                        exchanges.len()
                    )));
                }
                if lines[index + 1..].iter().any(|rest| !rest.is_empty()) {
                    return Err(LlmLoadError::Malformed {
                        path: path.clone(),
                        line: number + 1,
                        reason: "there is content after the end marker".to_owned(),
                    });
                }
                return Ok(LlmRecording {
                    upstream: header.upstream,
                    exchanges,
                });
            }
            let exchange: Exchange =
                serde_json::from_value(value).map_err(|error| malformed(error.to_string()))?;
            if exchange.seq != exchanges.len() as u64 + 1 {
                return Err(malformed(format!(
                    "seq {} where {} was expected (a line is missing)",
                    exchange.seq,
                    exchanges.len() + 1
                )));
            }
            exchanges.push(exchange);
        }
        let last = lines.iter().rposition(|line| !line.is_empty()).unwrap_or(0) + 1;
        Err(LlmLoadError::Truncated { path, line: last })
    }
}

/// The key a request is matched by: method, path and normalised body (JSON without timestamps
/// and ignored pointers, canonical; other bodies as they are).
pub fn request_key(method: &str, path: &str, body: &[u8], normalizer: &Normalizer) -> String {
    let body = match serde_json::from_slice::<Value>(body) {
        Ok(json) => {
            let mut copy = json;
            for pointer in &normalizer.ignore {
                remove(&mut copy, pointer);
            }
            canonical(&copy)
        }
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    format!("{method} {path} {body}")
}

fn remove(value: &mut Value, pointer: &str) {
    if let Some((parent, last)) = pointer.rsplit_once('/') {
        let target = if parent.is_empty() {
            Some(value)
        } else {
            value.pointer_mut(parent)
        };
        if let Some(Value::Object(members)) = target {
            members.remove(last);
        }
    }
}

/// `llm-record`: a recording proxy until `stop`; prints the base URL to use.
pub async fn run_record(
    upstream: &str,
    out: &Path,
    redact_env: &[String],
    stop: impl std::future::Future<Output = ()>,
) -> i32 {
    match proxy::run(upstream, out, redact_env, stop).await {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("tool-cli-replay: {error}");
            2
        }
    }
}

/// `llm-serve`: a replay server until `stop`; prints the base URL to use.
pub async fn run_serve(
    file: &Path,
    ignore: Vec<String>,
    stop: impl std::future::Future<Output = ()>,
) -> i32 {
    let recording = match LlmRecording::load(file) {
        Ok(recording) => recording,
        Err(error) => {
            eprintln!("tool-cli-replay: {error}");
            return 2;
        }
    };
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("tool-cli-replay: cannot listen on 127.0.0.1: {error}");
            return 1;
        }
    };
    let base_path = server::base_path(&recording.upstream);
    match listener.local_addr() {
        Ok(address) => println!("http://{address}{base_path}"),
        Err(error) => {
            eprintln!("tool-cli-replay: {error}");
            return 1;
        }
    }
    let replay = Arc::new(server::LlmReplay::new(recording, Normalizer { ignore }));
    server::serve(replay, listener, stop).await;
    0
}

#[cfg(test)]
mod tests;
