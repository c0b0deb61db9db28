//! A server's `protocol`: which MCP lifecycle the pool uses with it. `2025-11-25` is the
//! `initialize` handshake and a session; `2026-07-28` is the stateless revision (no
//! `initialize`, `server/discover`, the version and our capabilities in every request's
//! `_meta`); `auto` (the default) is what works with both kinds of server: the handshake first,
//! as every server of today expects, and `server/discover` only when the server answers the
//! handshake by saying it speaks only the stateless revision.

use std::fmt;

/// How the pool opens its MCP lifecycle with one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpstreamProtocol {
    /// The handshake, then `server/discover` when the server refuses it for a stateless version.
    #[default]
    Auto,
    /// The `initialize` handshake of 2025-11-25 only.
    Session,
    /// The stateless revision 2026-07-28 only (`server/discover`, per-request `_meta`).
    Stateless,
}

impl UpstreamProtocol {
    /// The config's words for it.
    pub const CHOICES: &'static str = "\"auto\", \"2025-11-25\" or \"2026-07-28\"";

    /// Reads the config's `protocol` value.
    pub fn parse(text: &str) -> Result<UpstreamProtocol, String> {
        match text {
            "auto" => Ok(UpstreamProtocol::Auto),
            "2025-11-25" => Ok(UpstreamProtocol::Session),
            "2026-07-28" => Ok(UpstreamProtocol::Stateless),
            other => Err(format!(
                "unknown protocol {other:?}; expected {}",
                UpstreamProtocol::CHOICES
            )),
        }
    }

    /// The config's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamProtocol::Auto => "auto",
            UpstreamProtocol::Session => "2025-11-25",
            UpstreamProtocol::Stateless => "2026-07-28",
        }
    }
}

impl fmt::Display for UpstreamProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_choice_reads_back_as_written_and_others_are_refused_with_the_choices() {
        for choice in [
            UpstreamProtocol::Auto,
            UpstreamProtocol::Session,
            UpstreamProtocol::Stateless,
        ] {
            assert_eq!(UpstreamProtocol::parse(choice.as_str()), Ok(choice));
        }
        let refused = UpstreamProtocol::parse("2025-06-18").unwrap_err();
        assert!(refused.contains("\"2025-06-18\""), "{refused}");
        assert!(refused.contains("\"2026-07-28\""), "{refused}");
        assert_eq!(UpstreamProtocol::default(), UpstreamProtocol::Auto);
    }
}
