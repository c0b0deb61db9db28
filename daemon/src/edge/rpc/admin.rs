//! The owner token's methods (a scoped token is refused before its params are read): server
//! management (`restartServer`, `addServer`, `removeServer`, `reloadConfig`,
//! `startRecording`, `stopRecording`), pins
//! (`reloadPins`, `pinListing`), tokens
//! (`mintToken`, `revokeToken`, `listTokens`) and `tracesReport`, answered by the admin
//! service.

use tool_cli_protocol::methods::name;
use tool_cli_protocol::params::{IgnoredParams, NoParams};

use super::{Access, Methods};

/// Registers the owner-only methods.
pub(super) fn register(methods: &mut Methods) {
    use Access::Owner;
    methods.add(name::RESTART_SERVER, Owner, |s, p, c| async move {
        s.admin.restart_server(p, &c).await
    });
    methods.add(name::ADD_SERVER, Owner, |s, p, c| async move {
        s.admin.add_server(p, &c).await
    });
    methods.add(name::REMOVE_SERVER, Owner, |s, p, c| async move {
        s.admin.remove_server(p, &c).await
    });
    methods.add(name::START_RECORDING, Owner, |s, p, c| async move {
        s.admin.start_recording(p, &c).await
    });
    methods.add(name::STOP_RECORDING, Owner, |s, p, c| async move {
        s.admin.stop_recording(p, &c).await
    });
    methods.add(name::RELOAD_CONFIG, Owner, |s, _: NoParams, c| async move {
        s.reload_config_as(&c).await
    });
    methods.add(name::RELOAD_PINS, Owner, |s, _: NoParams, c| async move {
        s.admin.reload_pins(&c)
    });
    methods.add(name::PIN_LISTING, Owner, |s, p, c| async move {
        s.admin.pin_listing(p, &c).await
    });
    methods.add(name::MINT_TOKEN, Owner, |s, p, c| async move {
        s.admin.mint_token(p, &c)
    });
    methods.add(name::REVOKE_TOKEN, Owner, |s, p, c| async move {
        Ok(s.admin.revoke_token(p, &c))
    });
    methods.add(
        name::LIST_TOKENS,
        Owner,
        |s, _: IgnoredParams, c| async move { Ok(s.admin.list_tokens(&c)) },
    );
    methods.add(name::TRACES_REPORT, Owner, |s, p, c| async move {
        s.admin.traces_report(p, &c).await
    });
}
