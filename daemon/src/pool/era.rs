//! Which protocol era the pool speaks with one server, and when to change its mind: pure
//! decisions, tested here, made from the config's `protocol` (`config/upstream_protocol.rs`),
//! what the pool learned of the server earlier, and how the server answered the handshake.
//!
//! `auto` never costs a server of today a round trip: the `initialize` handshake goes first, as
//! before. A server that speaks only 2026-07-28 refuses it with `-32022` (unsupported protocol
//! version) listing the versions it supports, none of which has a handshake; that answer, and
//! only that one, makes the pool reconnect with `server/discover` and remember the era for the
//! server's later restarts. rmcp's own `Auto` mode (discover first) is not used: it sends a
//! 2025 server a request it does not know before `initialize`, which today's conformance
//! scenarios and some servers do not accept (docs/peers.md).

use rmcp::model::{ClientCapabilities, ErrorCode, ErrorData, ProtocolVersion, TASKS_EXTENSION_ID};
use rmcp::service::ClientLifecycleMode;

use crate::config::UpstreamProtocol;

/// The version of the stateless revision we speak.
pub(crate) const STATELESS_VERSION: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// The lifecycle to open with a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lifecycle {
    /// `initialize` (2025-11-25) and a session.
    Handshake,
    /// `server/discover` and per-request `_meta` (2026-07-28).
    Discover,
}

impl Lifecycle {
    /// The lifecycle for a server configured with `protocol` that the pool has (or has not)
    /// seen refuse the handshake for the stateless revision.
    pub(crate) fn choose(protocol: UpstreamProtocol, learned_stateless: bool) -> Lifecycle {
        match protocol {
            UpstreamProtocol::Session => Lifecycle::Handshake,
            UpstreamProtocol::Stateless => Lifecycle::Discover,
            UpstreamProtocol::Auto if learned_stateless => Lifecycle::Discover,
            UpstreamProtocol::Auto => Lifecycle::Handshake,
        }
    }

    /// Declares the extensions the pool follows in this lifecycle: for 2026-07-28, tasks
    /// (`connection/tasks.rs`), sent in every request's `_meta` client capabilities; a server
    /// answers a call it would run as a task with `-32021` to a client without it. Nothing for
    /// the handshake: 2025-11-25 tasks are a capability of their own, and the pool asks for
    /// them per call (`provider/tasks.rs`).
    pub(crate) fn declare_extensions(self, capabilities: &mut ClientCapabilities) {
        if self == Lifecycle::Discover {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(TASKS_EXTENSION_ID.to_owned(), Default::default());
        }
    }

    /// rmcp's name for it.
    pub(crate) fn rmcp_mode(self) -> ClientLifecycleMode {
        match self {
            Lifecycle::Handshake => ClientLifecycleMode::Initialize,
            Lifecycle::Discover => ClientLifecycleMode::Discover {
                preferred_versions: vec![STATELESS_VERSION],
            },
        }
    }
}

/// Whether a server's error answer to `initialize` says it speaks only versions without the
/// handshake (`-32022` with `data.supported` naming at least one version, none of which has
/// `initialize`). Any other refusal is a real handshake failure and stays one.
pub(crate) fn refuses_handshake_for_stateless(error: &ErrorData) -> bool {
    if error.code != ErrorCode::UNSUPPORTED_PROTOCOL_VERSION {
        return false;
    }
    let Some(supported) = error
        .data
        .as_ref()
        .and_then(|data| data.get("supported"))
        .and_then(|supported| supported.as_array())
    else {
        return false;
    };
    let versions: Vec<ProtocolVersion> = supported
        .iter()
        .filter_map(|version| serde_json::from_value(version.clone()).ok())
        .collect();
    !versions.is_empty()
        && versions.iter().all(|version| !version.has_initialize())
        && versions.contains(&STATELESS_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn auto_starts_with_the_handshake_until_the_server_is_known_stateless() {
        use UpstreamProtocol::*;
        assert_eq!(Lifecycle::choose(Auto, false), Lifecycle::Handshake);
        assert_eq!(Lifecycle::choose(Auto, true), Lifecycle::Discover);
        assert_eq!(Lifecycle::choose(Session, true), Lifecycle::Handshake);
        assert_eq!(Lifecycle::choose(Stateless, false), Lifecycle::Discover);
    }

    #[test]
    fn only_the_stateless_lifecycle_declares_the_tasks_extension() {
        let mut discover = ClientCapabilities::default();
        Lifecycle::Discover.declare_extensions(&mut discover);
        assert!(discover.supports_tasks());
        let mut handshake = ClientCapabilities::default();
        Lifecycle::Handshake.declare_extensions(&mut handshake);
        assert_eq!(handshake, ClientCapabilities::default());
    }

    fn refusal(code: i32, data: Option<serde_json::Value>) -> ErrorData {
        ErrorData::new(ErrorCode(code), "Unsupported protocol version", data)
    }

    #[test]
    fn only_an_unsupported_version_answer_listing_stateless_versions_alone_switches() {
        let stateless_only = refusal(
            -32022,
            Some(json!({"requested": "2025-11-25", "supported": ["2026-07-28"]})),
        );
        assert!(refuses_handshake_for_stateless(&stateless_only));
        // A server that also has a handshake version is a handshake problem, not an era one.
        let both = refusal(
            -32022,
            Some(json!({"supported": ["2025-06-18", "2026-07-28"]})),
        );
        assert!(!refuses_handshake_for_stateless(&both));
        // A later stateless revision we do not speak: discover would fail as well.
        let later = refusal(-32022, Some(json!({"supported": ["2027-01-01"]})));
        assert!(!refuses_handshake_for_stateless(&later));
        assert!(!refuses_handshake_for_stateless(&refusal(-32022, None)));
        assert!(!refuses_handshake_for_stateless(&refusal(
            -32602,
            Some(json!({"supported": ["2026-07-28"]}))
        )));
        assert!(!refuses_handshake_for_stateless(&refusal(
            -32022,
            Some(json!({"supported": []}))
        )));
    }
}
