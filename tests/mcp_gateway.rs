//! Speaking to the daemon's MCP gateway (`/mcp`) as a raw Streamable HTTP client: one POST with
//! the daemon's token, and opening a session. Tests that look at the exact bytes, a header or
//! an error status use these instead of an MCP SDK, so nothing hides what the gateway answers.

use serde_json::{Value, json};

use crate::{Daemon, HttpResponse, http_request_bytes, raw_http_exchange};

impl Daemon {
    /// One POST of `body` to `/mcp` with the daemon's token, as a Streamable HTTP client sends
    /// it (a JSON body, either answer kind accepted), plus `headers` (a session id, a protocol
    /// version); the whole answer, whatever its status.
    pub fn post_mcp(&self, headers: &[(&str, &str)], body: &Value) -> HttpResponse {
        let host = format!("127.0.0.1:{}", self.port);
        let auth = format!("Bearer {}", self.token);
        let mut all = vec![
            ("Host", host.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Authorization", auth.as_str()),
        ];
        all.extend_from_slice(headers);
        raw_http_exchange(
            self.port,
            &http_request_bytes("POST", "/mcp", &all, body.to_string().as_bytes()),
        )
        .expect("an answer")
    }

    /// Opens a gateway session with `initialize` (protocol 2025-11-25, no capabilities); its
    /// `Mcp-Session-Id`.
    pub fn open_mcp_session(&self) -> String {
        let opened = self.post_mcp(
            &[],
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}}),
        );
        opened
            .header("mcp-session-id")
            .expect("a session")
            .to_owned()
    }
}

/// The JSON-RPC answer in a `/mcp` POST's body: the body itself when it is JSON, else (an SSE
/// answer, which a host accepting `text/event-stream` may get) its last `data:` event that is an
/// answer (has `result` or `error`; the events before it are progress, logs or questions).
pub fn mcp_answer(body: &[u8]) -> Value {
    let text = String::from_utf8_lossy(body);
    if let Ok(answer) = serde_json::from_str(&text) {
        return answer;
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .rfind(|event| event.get("result").is_some() || event.get("error").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in the body: {text}"))
}
