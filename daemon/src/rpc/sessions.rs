//! Sessions: `openSession`, `sessionSummary`, `listSessions` and `closeSession`, answered by
//! the sessions service.

use tool_cli_protocol::methods::name;
use tool_cli_protocol::params::IgnoredParams;

use super::{Access, Methods};

/// Registers the session methods.
pub(super) fn register(methods: &mut Methods) {
    use Access::Anyone;
    methods.add(name::OPEN_SESSION, Anyone, |s, p, c| async move {
        s.sessions.open_session(p, &c)
    });
    methods.add(name::SESSION_SUMMARY, Anyone, |s, p, c| async move {
        s.sessions.session_summary(p, &c)
    });
    methods.add(
        name::LIST_SESSIONS,
        Anyone,
        |s, _: IgnoredParams, c| async move { Ok(s.sessions.list_sessions(&c)) },
    );
    methods.add(name::CLOSE_SESSION, Anyone, |s, p, c| async move {
        s.sessions.close_session(p, &c)
    });
}
