//! The `auth*` methods: signing in to remote servers over OAuth 2.1 and reading or deleting
//! their tokens. The work is `oauth/`'s; this holds it to the admin service.

use std::sync::Arc;

use tool_cli_protocol::methods::ServerParams;
use tool_cli_protocol::remote_auth::{
    AuthCompleteParams, AuthLoginParams, AuthLoginResult, AuthLogoutResult, AuthStatusResult,
    ServerAuthStatus,
};

use super::Admin;
use crate::error::Error;
use crate::oauth::RemoteAuth;
use crate::pipeline::CallContext;

impl Admin {
    fn remote_auth(&self) -> Result<&Arc<RemoteAuth>, Error> {
        self.remote_auth
            .as_ref()
            .ok_or_else(|| Error::internal("no remote server OAuth state in this daemon"))
    }

    /// `authLogin`: discovery, registration, and the URL to open.
    pub(crate) async fn auth_login(
        &self,
        params: AuthLoginParams,
        _context: &CallContext,
    ) -> Result<AuthLoginResult, Error> {
        let random: [u8; 48] = rand::random();
        self.remote_auth()?
            .begin(&params.server, &params.redirect_uri, random)
            .await
    }

    /// `authComplete`: finishes signing in, then reconnects the server with the new token (its
    /// outcome shows in `listServers`).
    pub(crate) async fn auth_complete(
        &self,
        params: AuthCompleteParams,
        context: &CallContext,
    ) -> Result<ServerAuthStatus, Error> {
        let status = self
            .remote_auth()?
            .complete(&params.server, &params.redirect_url)
            .await?;
        let restart = ServerParams {
            server: params.server.clone(),
        };
        if let Err(err) = self.restart_server(restart, context).await {
            tracing::warn!(server = %params.server, error = %err.wire_message(), "reconnecting after sign-in failed");
        }
        Ok(status)
    }

    /// `authStatus`.
    pub(crate) async fn auth_status(
        &self,
        _context: &CallContext,
    ) -> Result<AuthStatusResult, Error> {
        Ok(AuthStatusResult {
            servers: self.remote_auth()?.status().await,
        })
    }

    /// `authLogout`.
    pub(crate) async fn auth_logout(
        &self,
        params: ServerParams,
        _context: &CallContext,
    ) -> Result<AuthLogoutResult, Error> {
        let removed = self.remote_auth()?.logout(&params.server).await?;
        Ok(AuthLogoutResult {
            server: params.server,
            removed,
        })
    }
}
