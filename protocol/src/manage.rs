//! Params and results of runtime server management: `addServer`, `removeServer`,
//! `reloadConfig`, `startRecording`, `stopRecording` (owner token only; ours).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::methods::ServerState;

/// Params of `addServer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddServerParams {
    /// The new server's name (not one already running).
    pub name: String,
    /// Its entry, as under `mcpServers` in the config file (`command`/`args`/`env`, or `url`).
    pub config: Value,
}

/// Result of `addServer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AddServerResult {
    /// Its name.
    pub server: String,
    /// Its connection state: `ready` (a server whose first start fails is not added),
    /// `disabled` for an entry with `"disabled": true`, or `down` for a remote server that is
    /// kept to wait for a sign-in (OAuth).
    pub state: ServerState,
    /// How many tools it offers.
    pub tools: usize,
    /// Why it is not ready, for a server kept `down` to wait for a sign-in (naming
    /// `tool-cli auth login NAME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Fields of other clients' formats that were translated or ignored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Params of `removeServer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoveServerParams {
    /// The server's name.
    pub name: String,
}

/// Result of `removeServer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoveServerResult {
    /// Its name.
    pub server: String,
    /// Calls still running when the drain time (its call timeout) ran out and the server was
    /// stopped under them; 0 when every call finished.
    pub abandoned_calls: usize,
}

/// Result of `reloadConfig`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReloadConfigResult {
    /// The file read.
    pub source: String,
    /// Servers started because the file has them and the daemon did not.
    pub added: Vec<String>,
    /// Servers whose entry changed: started anew, the old connection drained and stopped.
    pub changed: Vec<String>,
    /// Servers no longer in the file: drained and stopped.
    pub removed: Vec<String>,
    /// Servers left running as they were, with their calls in flight.
    pub unchanged: Vec<String>,
    /// Servers added or changed that are not `ready` after their first attempt, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<ServerProblem>,
    /// Calls that were still running on a removed or replaced server when its drain time ran
    /// out.
    pub abandoned_calls: usize,
    /// Everything else worth knowing: translated fields, sections that need a daemon restart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A server that did not come up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerProblem {
    /// Its name.
    pub server: String,
    /// Its state.
    pub state: ServerState,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Result of `reloadPins`: what the daemon's pin check holds back now (`docs/pinning.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PinStatusResult {
    /// The pin store the daemon reads; `None` when it has no place for one (no `HOME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// Why the store cannot be trusted (every server's tools are then held back), when it
    /// cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Each server the check applies to: the pinned ones (or every one, when the store cannot
    /// be trusted).
    pub servers: Vec<ServerPinStatus>,
}

/// One server's pin check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerPinStatus {
    /// The server.
    pub server: String,
    /// Its tools held back (hidden from listings and search; calls refused with
    /// `pinRefused`), each with the refusal's words.
    pub held: Vec<HeldTool>,
    /// Pinned tools the server no longer lists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vanished: Vec<String>,
}

/// A tool held back by the pin check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldTool {
    /// The tool.
    pub tool: String,
    /// What a call of it is answered (the `pinRefused` error's message).
    pub message: String,
}

/// Result of `pinListing`: a server's tools, instructions, prompts and resource templates as the
/// pin check reads them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PinListingResult {
    /// The server.
    pub server: String,
    /// Every tool the pin check covers (all but those the config hides), held back or not,
    /// each exactly as `describeTool` would give it, in the server's order.
    pub tools: Vec<Value>,
    /// The `instructions` the server sent in its handshake, held back or not (absent when it
    /// sent none, or is not connected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Every prompt, held back or not, as `prompts/list` gave it.
    #[serde(default)]
    pub prompts: Vec<Value>,
    /// Every resource template, held back or not, as `resources/templates/list` gave it.
    #[serde(default)]
    pub resource_templates: Vec<Value>,
    /// What could not be listed (the prompts, the templates) and why: nothing of it is pinned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Params of `startRecording`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartRecordingParams {
    /// The server to record (a configured stdio server, not recorded already).
    pub server: String,
    /// The NDJSON file to write, an absolute path in an existing, writable directory; created
    /// (or truncated) readable by its owner only.
    pub out: String,
}

/// Result of `startRecording`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartRecordingResult {
    /// The server, restarted under the recording proxy.
    pub server: String,
    /// The file it records to.
    pub out: String,
    /// Its connection state after the restart (`ready`; a server that does not come back is
    /// restarted unrecorded and the method fails).
    pub state: ServerState,
}

/// Params of `stopRecording`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopRecordingParams {
    /// The server being recorded.
    pub server: String,
}

/// Result of `stopRecording`: the server runs unrecorded again and the file is finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StopRecordingResult {
    /// The server.
    pub server: String,
    /// The file written.
    pub out: String,
    /// Its lines (header, messages, end marker).
    pub lines: u64,
    /// Its size in bytes.
    pub bytes: u64,
    /// The MCP messages recorded (both directions).
    pub messages: u64,
    /// Whether the file ends with its end marker (a replay refuses one without).
    pub complete: bool,
}
