//! The `auth*` methods (owner token only): signing in to remote servers over OAuth 2.1 and
//! reading or deleting their tokens, answered by the admin service.

use tool_cli_protocol::methods::name;
use tool_cli_protocol::params::IgnoredParams;

use super::{Access, Methods};

/// Registers the `auth*` methods.
pub(super) fn register(methods: &mut Methods) {
    use Access::Owner;
    methods.add(name::AUTH_LOGIN, Owner, |s, p, c| async move {
        s.admin.auth_login(p, &c).await
    });
    methods.add(name::AUTH_COMPLETE, Owner, |s, p, c| async move {
        s.admin.auth_complete(p, &c).await
    });
    methods.add(
        name::AUTH_STATUS,
        Owner,
        |s, _: IgnoredParams, c| async move { s.admin.auth_status(&c).await },
    );
    methods.add(name::AUTH_LOGOUT, Owner, |s, p, c| async move {
        s.admin.auth_logout(p, &c).await
    });
}
