//! The admin service: the owner token's methods. Servers at run time (`addServer`,
//! `removeServer`, `reloadConfig` and SIGHUP, through the [`ServerManager`] of `servers.rs`;
//! `restartServer`; `startRecording`/`stopRecording`, in `servers/recording.rs`), tokens (`mintToken`, `revokeToken`, `listTokens`), the trace report
//! (`traces.rs`), signing in to remote servers (`remote.rs`) and the pin check (`pins.rs`:
//! `reloadPins`, `pinListing`).
//!
//! The edge refuses a scoped token before any of these runs (their registration is
//! owner-only); the service does the work.

mod pins;
mod remote;
mod servers;
mod traces;

pub(crate) use servers::ServiceSettings;
pub use servers::{EnvLookup, ServerManager};

use std::sync::Arc;
use std::time::SystemTime;

use tool_cli_protocol::manage::{
    AddServerParams, AddServerResult, ReloadConfigResult, RemoveServerParams, RemoveServerResult,
    StartRecordingParams, StartRecordingResult, StopRecordingParams, StopRecordingResult,
};
use tool_cli_protocol::methods::{
    ListTokensResult, MintTokenParams, MintTokenResult, RestartServerResult, RevokeTokenParams,
    RevokeTokenResult, ServerParams, name,
};

use super::metrics::Metrics;
use crate::auth::TokenStore;
use crate::error::Error;
use crate::oauth::RemoteAuth;
use crate::pipeline::{CallContext, Pipeline};
use crate::trace::Traces;
use servers::Followers;

/// What the admin service is built from.
pub(crate) struct AdminParts {
    pub(crate) pipeline: Arc<Pipeline>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) tokens: Arc<TokenStore>,
    pub(crate) traces: Option<Arc<Traces>>,
    pub(crate) remote_auth: Option<Arc<RemoteAuth>>,
    pub(crate) manager: Option<Arc<ServerManager>>,
}

/// The owner's methods.
pub(crate) struct Admin {
    pipeline: Arc<Pipeline>,
    /// Forgets the series of removed servers.
    metrics: Arc<Metrics>,
    /// Every token: the owner's and the minted ones.
    tokens: Arc<TokenStore>,
    /// The trace writer, when traces are on (`tracesReport` reads its files).
    traces: Option<Arc<Traces>>,
    /// The remote servers' OAuth state (the pool owns it; a daemon over another provider has
    /// none).
    remote_auth: Option<Arc<RemoteAuth>>,
    /// Adds, removes and reloads servers, when the provider is the daemon's pool.
    manager: Option<Arc<ServerManager>>,
}

impl Admin {
    pub(crate) fn new(parts: AdminParts) -> Admin {
        let AdminParts {
            pipeline,
            metrics,
            tokens,
            traces,
            remote_auth,
            manager,
        } = parts;
        Admin {
            pipeline,
            metrics,
            tokens,
            traces,
            remote_auth,
            manager,
        }
    }

    /// The tokens requests authenticate with.
    pub(crate) fn tokens(&self) -> &Arc<TokenStore> {
        &self.tokens
    }

    fn manager(&self, method: &str) -> Result<&ServerManager, Error> {
        self.manager.as_deref().ok_or_else(|| {
            Error::invalid_params(
                method,
                "this daemon's servers cannot be changed at run time (it was embedded without a \
                 server manager)",
            )
        })
    }

    fn followers(&self) -> Followers<'_> {
        Followers {
            pipeline: &self.pipeline,
            metrics: &self.metrics,
        }
    }

    /// `restartServer`.
    pub(crate) async fn restart_server(
        &self,
        params: ServerParams,
        context: &CallContext,
    ) -> Result<RestartServerResult, Error> {
        let (server, status) = self
            .pipeline
            .restart_server(context, &params.server)
            .await?;
        Ok(RestartServerResult {
            server,
            state: status.state,
            restarts: status.restarts,
            error: status.error,
        })
    }

    /// `addServer`: starts a server from an `mcpServers` entry; refused if the name is taken,
    /// the entry is invalid, or the server does not start.
    pub(crate) async fn add_server(
        &self,
        params: AddServerParams,
        _context: &CallContext,
    ) -> Result<AddServerResult, Error> {
        self.manager(name::ADD_SERVER)?
            .add_server(&params.name, params.config, &self.followers())
            .await
    }

    /// `removeServer`: takes a server out at once, lets its calls finish (at most its call
    /// timeout), then stops it.
    pub(crate) async fn remove_server(
        &self,
        params: RemoveServerParams,
        _context: &CallContext,
    ) -> Result<RemoveServerResult, Error> {
        self.manager(name::REMOVE_SERVER)?
            .remove_server(&params.name, &self.followers())
            .await
    }

    /// `reloadConfig` and SIGHUP: reads the config file again and applies the difference.
    pub(crate) async fn reload_config(
        &self,
        _context: &CallContext,
    ) -> Result<ReloadConfigResult, Error> {
        self.manager(name::RELOAD_CONFIG)?
            .reload_config(&self.followers())
            .await
    }

    /// The sections of the running config the other services apply (`flags.gateway`,
    /// `sessions`); `None` without a server manager (an embedded daemon has no config file).
    pub(crate) async fn service_settings(&self) -> Option<ServiceSettings> {
        Some(self.manager.as_ref()?.service_settings().await)
    }

    /// `startRecording`: restarts a stdio server under the recording proxy writing a file.
    pub(crate) async fn start_recording(
        &self,
        params: StartRecordingParams,
        _context: &CallContext,
    ) -> Result<StartRecordingResult, Error> {
        self.manager(name::START_RECORDING)?
            .start_recording(params, &self.followers())
            .await
    }

    /// `stopRecording`: restarts the recorded server unrecorded and sums up the file.
    pub(crate) async fn stop_recording(
        &self,
        params: StopRecordingParams,
        _context: &CallContext,
    ) -> Result<StopRecordingResult, Error> {
        self.manager(name::STOP_RECORDING)?
            .stop_recording(params, &self.followers())
            .await
    }

    /// `mintToken`.
    pub(crate) fn mint_token(
        &self,
        params: MintTokenParams,
        _context: &CallContext,
    ) -> Result<MintTokenResult, Error> {
        self.tokens
            .mint(params, SystemTime::now())
            .map_err(|error| Error::invalid_params(name::MINT_TOKEN, error.to_string()))
    }

    /// `revokeToken`.
    pub(crate) fn revoke_token(
        &self,
        params: RevokeTokenParams,
        _context: &CallContext,
    ) -> RevokeTokenResult {
        RevokeTokenResult {
            revoked: self.tokens.revoke(&params.token_id),
        }
    }

    /// `listTokens`.
    pub(crate) fn list_tokens(&self, _context: &CallContext) -> ListTokensResult {
        ListTokensResult {
            tokens: self.tokens.list(SystemTime::now()),
        }
    }
}
