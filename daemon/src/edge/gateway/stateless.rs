//! Hosts of the stateless revision 2026-07-28 on the same `/mcp` endpoint as 2025-era hosts.
//!
//! A 2026-era request has no `initialize` before it and no `Mcp-Session-Id`: it carries the
//! protocol version, the client's identity and its capabilities in its own
//! `params._meta` (`io.modelcontextprotocol/protocolVersion`, `…/clientInfo`,
//! `…/clientCapabilities`), and `MCP-Protocol-Version` says the same in a header. Such a
//! request is answered at once, from the same services and through the same call pipeline as
//! a session's: `server/discover`, `tools/list`, `tools/call`, resources, prompts and
//! completions. Its results say `"resultType": "complete"`, and a resource that is not there
//! is `-32602` with `data.uri` (SEP-2164), not 2025's `-32002`.
//!
//! Which era a request is of, and what is wrong with a request that mixes them, is decided by
//! [`classify`], pure and tested here: a request declaring 2026-07-28 that names a 2025 session,
//! a header that says one version while `_meta` says another, a 2026 header without the
//! `_meta` the revision requires, or a version we do not speak each get an error saying what
//! was wrong and what would be right.
//!
//! What progressive mode remembers between requests (the tools `describe_tool` showed) is kept
//! per token and mode in a session of the table that no host names (`Stateless`), so a
//! stateless host can describe a tool and then call it, as in a session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hyper::StatusCode;
use hyper::header::HeaderMap;
use serde_json::{Value, json};

use super::messages::{RpcError, excerpt};
use super::sessions::{Session, SessionTable};
use super::{Mode, PROTOCOL_VERSIONS};

/// The stateless revision's version.
pub(crate) const STATELESS_VERSION: &str = "2026-07-28";

/// What a request without a session could be instead, for the error that says so.
pub(super) const STATELESS_HINT: &str = "make it a stateless 2026-07-28 request with \
     \"io.modelcontextprotocol/protocolVersion\", \"…/clientInfo\" and \
     \"…/clientCapabilities\" in params._meta";

/// `_meta` key of a 2026-era request's protocol version.
const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of a 2026-era request's client identity.
const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of a 2026-era request's client capabilities.
const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of a discover result's server identity.
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The `Mcp-Method` header a 2026-era host sends beside the body (SEP-2243).
const METHOD_HEADER: &str = "mcp-method";

/// MCP's code for a request whose headers disagree with its body.
const HEADER_MISMATCH: i64 = -32020;
/// MCP's code for a protocol version the server does not speak.
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The era of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Era {
    /// A 2025-era request: `initialize`, or a request of a session.
    Session,
    /// A 2026-07-28 request, answered without a session.
    Stateless,
}

/// Why a request cannot be answered in either era: the HTTP status and the JSON-RPC error.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Refusal {
    pub(super) status: StatusCode,
    pub(super) error: RpcError,
}

fn refusal(status: StatusCode, code: i64, message: String, data: Option<Value>) -> Refusal {
    Refusal {
        status,
        error: RpcError {
            code,
            message,
            data,
        },
    }
}

/// Every version the endpoint answers, the stateless one first.
fn supported_versions() -> Vec<&'static str> {
    let mut versions = vec![STATELESS_VERSION];
    versions.extend_from_slice(PROTOCOL_VERSIONS);
    versions
}

/// The era of a request, from its `MCP-Protocol-Version` header, its `Mcp-Method` header,
/// whether it names a session, its method and its params; or why it is of neither.
pub(super) fn classify(
    header_version: Option<&str>,
    method_header: Option<&str>,
    has_session: bool,
    method: &str,
    params: &Value,
) -> Result<Era, Refusal> {
    let meta = params.get("_meta");
    let meta_version = meta.and_then(|meta| meta.get(META_PROTOCOL_VERSION));
    let Some(meta_version) = meta_version else {
        if header_version == Some(STATELESS_VERSION) && method != "initialize" {
            return Err(refusal(
                StatusCode::BAD_REQUEST,
                -32602,
                format!(
                    "the MCP-Protocol-Version header says {STATELESS_VERSION}, but params._meta \
                     has no {META_PROTOCOL_VERSION:?}; a {STATELESS_VERSION} request carries \
                     {META_PROTOCOL_VERSION:?}, {META_CLIENT_INFO:?} and \
                     {META_CLIENT_CAPABILITIES:?} in params._meta (or, for a 2025-11-25 \
                     session, send initialize first)"
                ),
                None,
            ));
        }
        return Ok(Era::Session);
    };
    let Some(version) = meta_version.as_str() else {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            -32602,
            format!(
                "params._meta[{META_PROTOCOL_VERSION:?}] must be a string such as \"{STATELESS_VERSION}\""
            ),
            None,
        ));
    };
    // `initialize` is the 2025 handshake whatever its `_meta` says; a session's request may
    // carry a 2025 version in `_meta` too.
    if method == "initialize"
        || (version != STATELESS_VERSION && PROTOCOL_VERSIONS.contains(&version))
    {
        return Ok(Era::Session);
    }
    if version != STATELESS_VERSION {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "unsupported protocol version {:?} in params._meta; this gateway speaks {}",
                excerpt(version),
                supported_versions().join(", ")
            ),
            Some(json!({"requested": excerpt(version), "supported": supported_versions()})),
        ));
    }
    if has_session {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            -32600,
            format!(
                "this request declares protocol {STATELESS_VERSION} in params._meta but names an \
                 Mcp-Session-Id, which is a 2025-11-25 session; {STATELESS_VERSION} is \
                 stateless: send it without Mcp-Session-Id, or leave {META_PROTOCOL_VERSION:?} \
                 out of _meta to use the session"
            ),
            None,
        ));
    }
    if let Some(header) = header_version
        && header != STATELESS_VERSION
    {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            HEADER_MISMATCH,
            format!(
                "the MCP-Protocol-Version header says {:?} but params._meta says \
                 {STATELESS_VERSION}; send the same version in both ({STATELESS_VERSION} for a \
                 stateless request, or initialize first for a {} session)",
                excerpt(header),
                PROTOCOL_VERSIONS[0]
            ),
            None,
        ));
    }
    if let Some(header) = method_header
        && header != method
    {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            HEADER_MISMATCH,
            format!(
                "the Mcp-Method header says {:?} but the body's method is {:?}; they must be \
                 the same",
                excerpt(header),
                excerpt(method)
            ),
            None,
        ));
    }
    let missing: Vec<&str> = [META_CLIENT_INFO, META_CLIENT_CAPABILITIES]
        .into_iter()
        .filter(|key| {
            !meta
                .and_then(|meta| meta.get(*key))
                .is_some_and(Value::is_object)
        })
        .collect();
    if !missing.is_empty() {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            -32602,
            format!(
                "a {STATELESS_VERSION} request carries {} in params._meta as objects; missing or \
                 not an object: {}",
                [
                    META_PROTOCOL_VERSION,
                    META_CLIENT_INFO,
                    META_CLIENT_CAPABILITIES
                ]
                .join(", "),
                missing.join(", ")
            ),
            None,
        ));
    }
    Ok(Era::Stateless)
}

/// [`classify`] for an HTTP request's headers.
pub(super) fn classify_request(
    headers: &HeaderMap,
    has_session: bool,
    method: &str,
    params: &Value,
) -> Result<Era, Refusal> {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    classify(
        header(super::PROTOCOL_VERSION_HEADER),
        header(METHOD_HEADER),
        has_session,
        method,
        params,
    )
}

/// The capabilities a stateless gateway offers: no `subscribe`; `logging`, on a call's SSE
/// answer (`stateless_stream.rs`); `listChanged` is added where it is answered (`listen.rs`'s
/// `advertise`, from `stateless_tasks.rs`).
pub(super) fn discover_result(mode: Mode) -> Value {
    let mut result = json!({
        "resultType": "complete",
        "supportedVersions": supported_versions(),
        "capabilities": {
            "tools": {},
            "resources": {},
            "prompts": {},
            "completions": {},
            "logging": {},
        },
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {
            META_SERVER_INFO: {
                "name": "tool-cli",
                "title": "tool-cli gateway",
                "version": env!("CARGO_PKG_VERSION"),
            }
        },
    });
    if mode == Mode::Progressive {
        result["instructions"] = json!(tool_cli_gateway_core::meta_tools::INSTRUCTIONS);
    }
    result
}

/// Refuses what the stateless revision does not have, or what this gateway does not serve in
/// it; `None` for the methods answered as in a session.
pub(super) fn unserved(method: &str) -> Option<RpcError> {
    let why = match method {
        "ping" => "the 2026-07-28 revision has no ping; server/discover answers the same purpose",
        "logging/setLevel" => {
            "the 2026-07-28 revision has no logging/setLevel; name the level a call's log \
             messages start at in its _meta[\"io.modelcontextprotocol/logLevel\"]"
        }
        "resources/subscribe" | "resources/unsubscribe" => {
            "resource subscriptions are served to 2025-11-25 sessions only (initialize, then \
             resources/subscribe); subscriptions/listen gives a 2026-07-28 host list changes"
        }
        "tools/list"
        | "tools/call"
        | "resources/list"
        | "resources/templates/list"
        | "resources/read"
        | "prompts/list"
        | "prompts/get"
        | "completion/complete" => return None,
        _ => {
            return Some(RpcError {
                code: -32601,
                message: format!(
                    "method {:?} is not served to {STATELESS_VERSION} requests; they may use \
                     server/discover, tools/list, tools/call, resources/list, \
                     resources/templates/list, resources/read, prompts/list, prompts/get, \
                     completion/complete, subscriptions/listen and (with the tasks \
                     extension) tasks/get, tasks/cancel, tasks/update and tasks/list",
                    excerpt(method)
                ),
                data: None,
            });
        }
    };
    Some(RpcError {
        code: -32601,
        message: format!(
            "method {:?} is not served to {STATELESS_VERSION} requests: {why}",
            excerpt(method)
        ),
        data: None,
    })
}

/// What progressive mode remembers for stateless requests, per token and mode: the id of a
/// session no host names.
#[derive(Default)]
pub(super) struct Stateless {
    sessions: Mutex<HashMap<(String, bool), String>>,
    /// The tasks the gateway runs itself for stateless hosts (`task_runs.rs`).
    pub(super) runs: super::task_runs::TaskRuns,
    /// Calls waiting for their hosts' answers (`input_rounds/held.rs`).
    pub(super) held: super::input_rounds::held::HeldTable,
}

impl Stateless {
    /// The session that holds a token's stateless memory in `mode`, opened when it has none
    /// (or its last expired).
    pub(super) fn session(
        &self,
        table: &SessionTable,
        grant: &crate::auth::Grant,
        mode: Mode,
    ) -> Arc<Session> {
        let token_id = grant.token_id.as_str();
        let key = (token_id.to_owned(), mode == Mode::Progressive);
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = sessions.get(&key)
            && let Some(session) = table.get(id, token_id)
        {
            return session;
        }
        let host = super::stream::HostCapabilities::of(None);
        let id = table.open(grant, mode, host);
        let session = table
            .get(&id, token_id)
            .expect("a session just opened is in the table");
        sessions.insert(key, id);
        session
    }
}

impl super::Endpoint {
    /// Answers one 2026-07-28 request: no session named, none opened for the host; a call's
    /// notifications come on its SSE answer when the host accepts one (`stateless_stream.rs`).
    pub(super) async fn answer_stateless(
        self: &Arc<Self>,
        request: &super::GatewayRequest,
        mode: Option<Mode>,
        id: Value,
        method: &str,
        params: &Value,
    ) -> crate::edge::http_body::HttpResponse {
        // The URL or header, else the mode the token was minted with, else pass-through.
        let mode = mode
            .or_else(|| {
                self.services
                    .tokens()
                    .gateway_mode(&request.grant.token_id)
                    .map(Mode::from)
            })
            .unwrap_or(Mode::PassThrough);
        if method == "subscriptions/listen" {
            return self.listen(&request.grant, mode, id, params); // `listen.rs`
        }
        let context = crate::pipeline::CallContext::new(request.grant.clone());
        // The tasks extension's part (`stateless_tasks.rs`), else as before.
        // A retry continues its held call on this response (`input_rounds/held.rs`).
        let resumed = match super::input_rounds::round_retry(method, params) {
            Ok(Some(retry)) => {
                Some(self.resume_round(&request.grant, method, params, &retry, id.clone()))
            }
            Ok(None) => None,
            Err(error) => Some(Err(error)),
        };
        let answer = if let Some(resumed) = resumed {
            match resumed {
                Ok(response) => return response,
                Err(error) => Err(error),
            }
        } else if let Some(answer) = self.answer_tasks(mode, method, params, &context).await {
            answer
        } else if method == "server/discover" {
            Ok(super::Reply::Json(discover_result(mode)))
        } else if let Some(error) = unserved(method) {
            Err(error)
        } else {
            let session = self.stateless.session(&self.sessions, &request.grant, mode);
            match super::stateless_stream::request_log_level(params) {
                Err(error) => Err(error),
                Ok(level) if super::stateless_stream::streams(method, &request.headers) => {
                    let host = super::input_rounds::request_host(params);
                    if host.elicitation || host.sampling {
                        return self
                            .stream_rounds(session, host, method, params, context, level, id);
                    }
                    let worded = move |answer| super::stateless_answer::answer_body(answer, &id);
                    return self.stream_stateless(session, method, params, context, level, worded);
                }
                Ok(_) => self.settle(&session, method, params, &context).await,
            }
        };
        let body = super::stateless_answer::answer_body(answer, &id);
        hyper::Response::builder()
            .status(StatusCode::OK)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(crate::edge::http_body::HttpBody::from(body))
            .expect("static response parts are valid")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stateless_params() -> Value {
        json!({"_meta": {
            META_PROTOCOL_VERSION: STATELESS_VERSION,
            META_CLIENT_INFO: {"name": "host", "version": "1"},
            META_CLIENT_CAPABILITIES: {},
        }})
    }

    #[test]
    fn a_request_with_the_2026_meta_and_no_session_is_stateless() {
        let params = stateless_params();
        assert_eq!(
            classify(
                Some(STATELESS_VERSION),
                Some("tools/list"),
                false,
                "tools/list",
                &params
            ),
            Ok(Era::Stateless)
        );
        assert_eq!(
            classify(None, None, false, "tools/call", &params),
            Ok(Era::Stateless)
        );
    }

    #[test]
    fn requests_without_the_2026_meta_stay_in_the_session_era() {
        assert_eq!(
            classify(None, None, true, "tools/list", &json!({})),
            Ok(Era::Session)
        );
        assert_eq!(
            classify(Some("2025-11-25"), None, true, "tools/list", &Value::Null),
            Ok(Era::Session)
        );
        // initialize is the handshake whatever its _meta says.
        assert_eq!(
            classify(None, None, false, "initialize", &stateless_params()),
            Ok(Era::Session)
        );
        let mut older = stateless_params();
        older["_meta"][META_PROTOCOL_VERSION] = json!("2025-06-18");
        assert_eq!(
            classify(None, None, true, "tools/list", &older),
            Ok(Era::Session)
        );
    }

    #[test]
    fn a_2026_request_on_a_2025_session_is_refused_with_both_ways_out() {
        let refused = classify(None, None, true, "tools/list", &stateless_params()).unwrap_err();
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        assert_eq!(refused.error.code, -32600);
        assert!(
            refused.error.message.contains("without Mcp-Session-Id"),
            "{refused:?}"
        );
        assert!(
            refused.error.message.contains("out of _meta"),
            "{refused:?}"
        );
    }

    #[test]
    fn a_2025_header_on_a_2026_request_and_a_2026_header_without_meta_are_refused() {
        let mismatch = classify(
            Some("2025-11-25"),
            None,
            false,
            "tools/list",
            &stateless_params(),
        )
        .unwrap_err();
        assert_eq!(mismatch.error.code, HEADER_MISMATCH);
        assert!(
            mismatch.error.message.contains("same version"),
            "{mismatch:?}"
        );
        let bare = classify(
            Some(STATELESS_VERSION),
            None,
            false,
            "tools/list",
            &json!({}),
        )
        .unwrap_err();
        assert_eq!(bare.error.code, -32602);
        assert!(bare.error.message.contains("initialize first"), "{bare:?}");
        let method = classify(
            None,
            Some("tools/list"),
            false,
            "tools/call",
            &stateless_params(),
        )
        .unwrap_err();
        assert_eq!(method.error.code, HEADER_MISMATCH);
    }

    #[test]
    fn a_version_we_do_not_speak_and_incomplete_meta_say_what_is_expected() {
        let mut later = stateless_params();
        later["_meta"][META_PROTOCOL_VERSION] = json!("2027-01-01");
        let refused = classify(None, None, false, "tools/list", &later).unwrap_err();
        assert_eq!(refused.error.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            refused.error.data.as_ref().unwrap()["supported"][0],
            STATELESS_VERSION
        );
        let mut partial = stateless_params();
        partial["_meta"]
            .as_object_mut()
            .unwrap()
            .remove(META_CLIENT_CAPABILITIES);
        let refused = classify(None, None, false, "tools/list", &partial).unwrap_err();
        assert_eq!(refused.error.code, -32602);
        assert!(
            refused.error.message.ends_with(META_CLIENT_CAPABILITIES),
            "{refused:?}"
        );
    }

    #[test]
    fn the_discover_result_reads_as_rmcps_in_both_modes() {
        for mode in [Mode::PassThrough, Mode::Progressive] {
            let result = discover_result(mode);
            let read: rmcp::model::DiscoverResult = serde_json::from_value(result.clone())
                .unwrap_or_else(|error| panic!("{error}: {result}"));
            assert!(
                read.supported_versions
                    .contains(&rmcp::model::ProtocolVersion::V_2026_07_28)
            );
            assert_eq!(
                read.server_info().map(|info| info.name),
                Some("tool-cli".to_owned())
            );
            // As an answer of unknown kind, as a client reads it off the wire.
            let answer: rmcp::model::ServerResult = serde_json::from_value(result.clone()).unwrap();
            assert!(
                matches!(answer, rmcp::model::ServerResult::DiscoverResult(_)),
                "{answer:?}"
            );
        }
    }

    #[test]
    fn methods_the_revision_removed_point_to_what_replaces_them() {
        assert!(unserved("tools/call").is_none());
        assert!(
            unserved("ping")
                .unwrap()
                .message
                .contains("server/discover")
        );
        assert_eq!(unserved("roots/list").unwrap().code, -32601);
    }
}
