//! One remote server's OAuth state ([`ServerAuth`]): its tokens, the bearer every request asks
//! for (renewed a minute before it expires, one refresh at a time), and what its 401 and 403
//! challenges asked for.

use std::sync::Mutex;

use tool_cli_protocol::remote_auth::ServerAuthStatus;
use url::Url;

use super::flow::{Grant, RegisteredClient};
use super::store::{StoredTokens, TokenFiles};
use super::{discovery, flow, login_hint, now_secs, step_up};
use crate::config::remote::OAuthSettings;
use crate::config::{ServerConfig, TransportConfig};

/// One remote server's OAuth state.
pub(crate) struct ServerAuth {
    pub(super) name: String,
    pub(super) url: Url,
    pub(super) settings: OAuthSettings,
    /// Its `caFile`, to tell whether a reloaded config changed it.
    pub(super) ca_file: Option<std::path::PathBuf>,
    /// The HTTP client with this server's roots (`caFile`), or why it could not be built.
    pub(super) client: Result<crate::pool::http_client::HttpClient, String>,
    pub(super) files: Option<TokenFiles>,
    /// The tokens; a tokio mutex because a refresh is held across its request (single-flight).
    pub(super) tokens: tokio::sync::Mutex<Option<StoredTokens>>,
    /// Why the server needs `tool-cli auth login`, once it asked for OAuth and no usable token
    /// is held (a std mutex: read and written without awaiting).
    pub(super) needs_login: Mutex<Option<String>>,
    /// What its 401 and 403 challenges asked for: the scope of the next sign-in (step-up).
    pub(super) challenges: Mutex<step_up::Challenges>,
}

/// The server's tokens could not be saved (or deleted) in the token directory.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the token file in {}: {source}", dir.display())]
pub(super) struct TokenFileError {
    /// The token directory.
    dir: std::path::PathBuf,
    /// What the file system said.
    source: std::io::Error,
}

/// Why a request to a server went without a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BearerError {
    /// The user must sign in again (`tool-cli auth login`); the reason says why.
    NeedsLogin(String),
    /// The token needed renewing and the authorization server did not answer; the next request
    /// tries again.
    Unavailable(String),
}

impl ServerAuth {
    /// The OAuth state of a remote server (`None` for a stdio server or a URL that does not
    /// parse), with its saved tokens when they were issued for this URL.
    pub(super) fn for_config(
        server: &ServerConfig,
        files: Option<&TokenFiles>,
    ) -> Option<ServerAuth> {
        let TransportConfig::Http { url, remote, .. } = &server.transport else {
            return None;
        };
        let parsed = Url::parse(url).ok()?;
        let client = crate::pool::http_client::HttpClient::new(remote.ca_file.as_deref())
            .map_err(|err| err.to_string());
        let tokens = files
            .filter(|_| remote.oauth.enabled)
            .and_then(|files| files.load(&server.name))
            .filter(|tokens| tokens.server_url == *url);
        Some(ServerAuth {
            name: server.name.clone(),
            url: parsed,
            settings: remote.oauth.clone(),
            ca_file: remote.ca_file.clone(),
            client,
            files: files.cloned(),
            tokens: tokio::sync::Mutex::new(tokens),
            needs_login: Mutex::new(None),
            challenges: Mutex::new(step_up::Challenges::default()),
        })
    }

    /// Whether `other` is for the same URL with the same `caFile` and `oauth` settings.
    pub(super) fn same_settings(&self, other: &ServerAuth) -> bool {
        self.url == other.url && self.settings == other.settings && self.ca_file == other.ca_file
    }

    /// Whether OAuth is on for this server.
    pub(crate) fn enabled(&self) -> bool {
        self.settings.enabled
    }

    /// Whether the server can only be reached after the user signs in again, or was refused
    /// for scope (403 `insufficient_scope`): retrying on a timer changes neither, so its
    /// supervisor waits for a sign-in or `tool-cli server restart`.
    pub(crate) fn waits_for_login(&self) -> bool {
        self.settings.enabled
            && (self.needs_login.lock().unwrap().is_some()
                || self.challenges.lock().unwrap().refused.is_some())
    }

    /// The server's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The HTTP client for this server (its roots), when it could be built.
    pub(crate) fn client(&self) -> Result<&crate::pool::http_client::HttpClient, &str> {
        self.client.as_ref().map_err(String::as_str)
    }

    /// The access token to send now, renewed first when it expires within a minute; `None` when
    /// no token is held (the request goes without, and a 401 then marks the server as needing a
    /// sign-in).
    pub(crate) async fn bearer(&self) -> Result<Option<String>, BearerError> {
        if !self.settings.enabled {
            return Ok(None);
        }
        let mut guard = self.tokens.lock().await;
        let Some(tokens) = guard.as_ref() else {
            return match self.needs_login.lock().unwrap().clone() {
                Some(reason) => Err(BearerError::NeedsLogin(reason)),
                None => Ok(None),
            };
        };
        let now = now_secs();
        if !tokens.needs_refresh(now) {
            return Ok(Some(tokens.access_token.clone()));
        }
        let Some(refresh_token) = tokens.refresh_token.clone() else {
            if tokens.expired(now) {
                let reason = "the access token expired and no refresh token was issued".to_owned();
                self.forget(&mut guard, &reason);
                return Err(BearerError::NeedsLogin(reason));
            }
            return Ok(Some(tokens.access_token.clone()));
        };
        let client = self
            .client
            .as_ref()
            .map_err(|message| BearerError::Unavailable(message.clone()))?;
        let registered = RegisteredClient {
            client_id: tokens.client_id.clone(),
            client_secret: tokens.client_secret.clone(),
            secret_in_body: tokens.secret_in_body,
        };
        let answer = flow::token(
            client,
            &tokens.token_endpoint,
            &registered,
            &tokens.resource,
            Grant::Refresh {
                refresh_token: &refresh_token,
            },
        )
        .await;
        match answer {
            Ok(fresh) => {
                let mut renewed = tokens.clone();
                renewed.access_token = fresh.access_token;
                // A server that rotates refresh tokens sends a new one; otherwise keep ours.
                if let Some(refresh_token) = fresh.refresh_token {
                    renewed.refresh_token = Some(refresh_token);
                }
                renewed.expires_at = fresh.expires_in.map(|secs| now.saturating_add(secs));
                if fresh.scope.is_some() {
                    renewed.scope = fresh.scope;
                }
                let access = renewed.access_token.clone();
                if let Some(files) = &self.files
                    && let Err(err) = files.save(&self.name, &renewed)
                {
                    tracing::warn!(server = %self.name, %err, "cannot save the renewed tokens");
                }
                tracing::info!(server = %self.name, "access token renewed");
                *guard = Some(renewed);
                Ok(Some(access))
            }
            Err(error) if error.refused => {
                let reason = format!("the refresh token was refused ({})", error.message);
                self.forget(&mut guard, &reason);
                Err(BearerError::NeedsLogin(reason))
            }
            Err(error) if !tokens.expired(now) => {
                tracing::warn!(server = %self.name, error = %error.message, "cannot renew the access token yet");
                Ok(Some(tokens.access_token.clone()))
            }
            Err(error) => Err(BearerError::Unavailable(format!(
                "cannot renew the access token: {}",
                error.message
            ))),
        }
    }

    /// The server answered 401: a token it refused is renewed at the next request; with no token
    /// the server needs a sign-in.
    pub(crate) async fn unauthorized(&self) -> String {
        let mut guard = self.tokens.lock().await;
        match guard.as_mut() {
            Some(tokens) if tokens.refresh_token.is_some() => {
                tokens.expires_at = Some(0);
                "the server refused the access token; it is renewed at the next attempt".to_owned()
            }
            Some(_) => {
                let reason = "the server refused the access token".to_owned();
                self.forget(&mut guard, &reason);
                login_hint(&self.name, &reason)
            }
            None => {
                let reason = "the server requires OAuth authorization".to_owned();
                *self.needs_login.lock().unwrap() = Some(reason.clone());
                login_hint(&self.name, &reason)
            }
        }
    }

    /// Remembers the challenge of a 401 the connection saw (for the next sign-in's discovery).
    pub(crate) fn remember_unauthorized(&self, www_authenticate: &str) {
        if !www_authenticate.is_empty() {
            self.challenges.lock().unwrap().last_unauthorized =
                Some(discovery::parse_challenge(www_authenticate));
        }
    }

    /// The server answered 403 `insufficient_scope`: decides whether signing in again with more
    /// scope can help (`step_up.rs`) and says so. The token is kept: it still serves the
    /// requests it was enough for.
    pub(crate) fn insufficient_scope(&self, www_authenticate: &str) -> String {
        let challenge = discovery::parse_challenge(www_authenticate);
        let mut challenges = self.challenges.lock().unwrap();
        // Asked again before the user signed in: the step-up under way already covers it.
        if let Some(wanted) = &challenges.wanted
            && step_up::scope_union(Some(wanted), challenge.scope.as_deref()).as_deref()
                == Some(wanted.as_str())
            && let Some(refused) = &challenges.refused
        {
            return refused.clone();
        }
        let message = match step_up::decide(
            challenges.asked.as_deref(),
            challenge.scope.as_deref(),
            challenges.step_ups,
        ) {
            step_up::StepUp::Reauthorize { scope } => {
                challenges.step_ups += 1;
                challenges.wanted = Some(scope.clone());
                tracing::warn!(server = %self.name, %scope, "the server wants more scope; sign-in needed");
                login_hint(
                    &self.name,
                    &format!(
                        "the server refused the request for insufficient scope (403) and wants                          \"{scope}\""
                    ),
                )
            }
            step_up::StepUp::GiveUp(message) => {
                tracing::warn!(server = %self.name, reason = %message, "insufficient scope");
                message
            }
        };
        challenges.refused = Some(message.clone());
        message
    }

    pub(super) fn forget(&self, guard: &mut Option<StoredTokens>, reason: &str) {
        *guard = None;
        if let Some(files) = &self.files
            && let Err(err) = files.remove(&self.name)
        {
            tracing::warn!(server = %self.name, %err, "cannot delete the token file");
        }
        tracing::warn!(server = %self.name, reason, "sign-in needed");
        *self.needs_login.lock().unwrap() = Some(reason.to_owned());
    }

    pub(super) async fn store(&self, tokens: Option<StoredTokens>) -> Result<(), TokenFileError> {
        let mut guard = self.tokens.lock().await;
        if let Some(files) = &self.files {
            match &tokens {
                Some(tokens) => files.save(&self.name, tokens),
                None => files.remove(&self.name).map(|_| ()),
            }
            .map_err(|source| TokenFileError {
                dir: files.dir().to_owned(),
                source,
            })?;
        }
        if tokens.is_some() {
            *self.needs_login.lock().unwrap() = None;
        }
        *guard = tokens;
        Ok(())
    }

    pub(super) async fn status(&self) -> ServerAuthStatus {
        let tokens = self.tokens.lock().await;
        let needs_login = self.needs_login.lock().unwrap().clone();
        let state = if !self.settings.enabled {
            "disabled"
        } else if tokens.is_some() {
            "authorized"
        } else if needs_login.is_some() {
            "needsLogin"
        } else {
            "notRequired"
        };
        ServerAuthStatus {
            server: self.name.clone(),
            state: state.to_owned(),
            issuer: tokens.as_ref().map(|tokens| tokens.issuer.clone()),
            scope: tokens.as_ref().and_then(|tokens| tokens.scope.clone()),
            expires_at: tokens
                .as_ref()
                .and_then(|tokens| tokens.expires_at)
                .map(rfc3339),
            refreshable: tokens
                .as_ref()
                .is_some_and(|tokens| tokens.refresh_token.is_some()),
            reason: needs_login
                .map(|reason| login_hint(&self.name, &reason))
                .or_else(|| self.challenges.lock().unwrap().refused.clone()),
        }
    }
}

/// Unix seconds as RFC 3339 UTC (civil-from-days, Howard Hinnant's algorithm).
pub(crate) fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rest = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}
