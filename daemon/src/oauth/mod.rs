//! OAuth 2.1 for remote (Streamable HTTP) servers that answer 401: discovery, dynamic client
//! registration, authorization code + PKCE, token storage and renewal.
//!
//! [`RemoteAuth`] holds one `ServerAuth` per remote server. Signing in is two steps driven by
//! the client (`tool-cli auth login`): [`RemoteAuth::begin`] discovers the authorization server,
//! registers, and returns the URL to open; [`RemoteAuth::complete`] takes the URL the browser
//! was redirected to, exchanges the code and stores the tokens. After that every request to the
//! server asks `ServerAuth::bearer` for its token, which renews it a minute before it expires.
//! The renewal holds the server's token lock, so concurrent requests wait for the one refresh
//! instead of each sending their own (a refresh token may be single-use). A refresh the
//! authorization server refuses (`invalid_grant`: expired or revoked) deletes the tokens and
//! marks the server as needing `tool-cli auth login SERVER`; nothing retries it.
//!
//! The pure parts are `discovery.rs` and `pkce.rs`; `flow.rs` makes the requests; `store.rs`
//! keeps the 0600 token files.

mod discovery;
mod flow;
mod pkce;
mod step_up;
mod store;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tool_cli_protocol::ErrorData;
use tool_cli_protocol::remote_auth::{AuthLoginResult, ServerAuthStatus};
use url::Url;

use crate::config::{ServerConfig, TransportConfig};
use crate::error::Error;
use crate::remote_config::OAuthSettings;
pub(crate) use flow::Step;
use flow::{Grant, RegisteredClient, StepError};
use store::{StoredTokens, TokenFiles};

/// How long a started login waits for its redirect.
const LOGIN_TTL: Duration = Duration::from_secs(600);

/// The tokens of every remote server, and the logins under way.
pub struct RemoteAuth {
    files: Option<TokenFiles>,
    /// By server name; changed when servers are added or removed at run time.
    servers: RwLock<BTreeMap<String, Arc<ServerAuth>>>,
    /// At most one login under way per server; a new `authLogin` replaces the old one.
    pending: Mutex<HashMap<String, PendingLogin>>,
}

/// What `complete` needs from `begin`.
struct PendingLogin {
    state: String,
    verifier: String,
    redirect_uri: String,
    /// The scope asked for (`None`: none was).
    scope: Option<String>,
    registered: RegisteredClient,
    discovered: flow::Discovered,
    started: Instant,
}

/// One remote server's OAuth state.
pub(crate) struct ServerAuth {
    name: String,
    url: Url,
    settings: OAuthSettings,
    /// Its `caFile`, to tell whether a reloaded config changed it.
    ca_file: Option<std::path::PathBuf>,
    /// The HTTP client with this server's roots (`caFile`), or why it could not be built.
    client: Result<reqwest::Client, String>,
    files: Option<TokenFiles>,
    /// The tokens; a tokio mutex because a refresh is held across its request (single-flight).
    tokens: tokio::sync::Mutex<Option<StoredTokens>>,
    /// Why the server needs `tool-cli auth login`, once it asked for OAuth and no usable token
    /// is held (a std mutex: read and written without awaiting).
    needs_login: Mutex<Option<String>>,
    /// What its 401 and 403 challenges asked for: the scope of the next sign-in (step-up).
    challenges: Mutex<step_up::Challenges>,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0)
}

fn auth_failed(server: &str, step: Step, message: impl Into<String>) -> Error {
    ErrorData::AuthFailed {
        server: server.to_owned(),
        step: step.name().to_owned(),
        message: message.into(),
    }
    .into()
}

fn step_failed(server: &str, error: StepError) -> Error {
    auth_failed(server, error.step, error.message)
}

/// The message of a server that needs a sign-in.
pub(crate) fn login_hint(server: &str, reason: &str) -> String {
    format!("{reason}; run `tool-cli auth login {server}` to sign in")
}

impl RemoteAuth {
    /// The OAuth state of every remote server of `servers`; tokens live under `state_dir/oauth`
    /// (`None`: no state directory, so no sign-in is possible).
    pub fn new(servers: &[ServerConfig], state_dir: Option<&std::path::Path>) -> RemoteAuth {
        let files = state_dir.map(|dir| TokenFiles::new(dir.join("oauth")));
        let by_name = servers
            .iter()
            .filter_map(|server| {
                ServerAuth::for_config(server, files.as_ref())
                    .map(|auth| (server.name.clone(), Arc::new(auth)))
            })
            .collect();
        RemoteAuth {
            files,
            servers: RwLock::new(by_name),
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// A server was added or replaced at run time (`addServer`, `reloadConfig`): its OAuth state
    /// is made for it (its saved tokens loaded), or kept when its URL, `caFile` and `oauth` are
    /// unchanged, so an untouched server keeps its tokens and a refresh under way.
    pub(crate) fn put(&self, server: &ServerConfig) {
        let mut servers = self.servers.write().unwrap();
        let Some(fresh) = ServerAuth::for_config(server, self.files.as_ref()) else {
            servers.remove(&server.name);
            return;
        };
        if servers
            .get(&server.name)
            .is_some_and(|old| old.same_settings(&fresh))
        {
            return;
        }
        servers.insert(server.name.clone(), Arc::new(fresh));
    }

    /// A server was removed at run time: its OAuth state and any login under way go. Its token
    /// file stays, so adding the same server (same URL) again needs no new sign-in.
    pub(crate) fn remove(&self, name: &str) {
        self.servers.write().unwrap().remove(name);
        self.pending.lock().unwrap().remove(name);
    }

    /// A remote server's OAuth state.
    pub(crate) fn server(&self, name: &str) -> Option<Arc<ServerAuth>> {
        self.servers.read().unwrap().get(name).cloned()
    }

    fn signable(&self, server: &str) -> Result<Arc<ServerAuth>, Error> {
        let Some(auth) = self.server(server) else {
            let remote: Vec<String> = self.servers.read().unwrap().keys().cloned().collect();
            return Err(Error::invalid_params(
                tool_cli_protocol::methods::name::AUTH_LOGIN,
                format!(
                    "\"{server}\" is not a remote (http/https) server; remote servers: {}",
                    if remote.is_empty() {
                        "none".to_owned()
                    } else {
                        remote.join(", ")
                    }
                ),
            ));
        };
        if !auth.settings.enabled {
            return Err(auth_failed(
                server,
                Step::Discovery,
                "OAuth is off for this server (\"oauth\": false in its config); remove that to \
                 sign in",
            ));
        }
        if self.files.is_none() {
            return Err(auth_failed(
                server,
                Step::Token,
                "no state directory to keep tokens in; set XDG_STATE_HOME or HOME for the daemon",
            ));
        }
        Ok(auth)
    }

    /// Starts signing in to `server`: discovery, registration, and the URL to open.
    pub async fn begin(
        &self,
        server: &str,
        redirect_uri: &str,
        random: [u8; 48],
    ) -> Result<AuthLoginResult, Error> {
        let auth = self.signable(server)?;
        check_redirect_uri(redirect_uri)
            .map_err(|message| Error::invalid_params("authLogin", message))?;
        let client = auth
            .client
            .as_ref()
            .map_err(|message| auth_failed(server, Step::Discovery, message.clone()))?;
        // A server may let `initialize` (the probe) through and ask from the next request on:
        // then the 401 its connection saw says what it wants.
        let probed = flow::probe(client, &auth.url)
            .await
            .map_err(|err| step_failed(server, err))?;
        let remembered = auth.challenges.lock().unwrap().last_unauthorized.clone();
        let challenge = probed.or(remembered).ok_or_else(|| {
            auth_failed(
                server,
                Step::Discovery,
                "the server answers without asking for authorization (no 401); there is \
                     nothing to sign in to",
            )
        })?;
        let discovered = flow::discover(client, &auth.url, &challenge)
            .await
            .map_err(|err| step_failed(server, err))?;
        // A step-up (403 insufficient_scope) adds the scope the server asked for.
        let wanted = auth.challenges.lock().unwrap().wanted.clone();
        let scope = step_up::scope_union(
            auth.settings
                .scope
                .as_deref()
                .or(discovered.scope.as_deref()),
            wanted.as_deref(),
        );
        let registered = match &auth.settings.client_id {
            // A client registered by hand (a secret makes it confidential: it authenticates at
            // the token endpoint the way the authorization server says it takes).
            Some(client_id) => RegisteredClient {
                client_id: client_id.clone(),
                client_secret: auth
                    .settings
                    .client_secret
                    .as_ref()
                    .map(|secret| secret.expose().to_owned()),
                secret_in_body: discovered.metadata.wants_secret_in_body(),
            },
            // A client ID metadata document: its URL is the client id, no registration.
            None if discovered.metadata.client_id_metadata_document_supported
                && auth.settings.client_metadata_url.is_some() =>
            {
                RegisteredClient {
                    client_id: auth
                        .settings
                        .client_metadata_url
                        .clone()
                        .unwrap_or_default(),
                    client_secret: None,
                    secret_in_body: false,
                }
            }
            None => flow::register(client, &discovered.metadata, redirect_uri, scope.as_deref())
                .await
                .map_err(|err| step_failed(server, err))?,
        };
        let mut verifier_bytes = [0u8; 32];
        verifier_bytes.copy_from_slice(&random[..32]);
        let mut state_bytes = [0u8; 16];
        state_bytes.copy_from_slice(&random[32..]);
        let pkce = pkce::Pkce::from_random(verifier_bytes);
        let state = pkce::state_from_random(state_bytes);
        let url = pkce::authorization_url(&pkce::AuthorizationRequest {
            endpoint: &discovered.metadata.authorization_endpoint,
            client_id: &registered.client_id,
            redirect_uri,
            challenge: &pkce.challenge,
            state: &state,
            resource: &discovered.resource,
            scope: scope.as_deref(),
        })
        .map_err(|message| auth_failed(server, Step::Authorization, message))?;
        let issuer = discovered.issuer.clone();
        let mut pending = self.pending.lock().unwrap();
        pending.retain(|_, login| login.started.elapsed() < LOGIN_TTL);
        pending.insert(
            server.to_owned(),
            PendingLogin {
                state,
                verifier: pkce.verifier,
                redirect_uri: redirect_uri.to_owned(),
                scope,
                registered,
                discovered,
                started: Instant::now(),
            },
        );
        Ok(AuthLoginResult {
            server: server.to_owned(),
            authorization_url: url.to_string(),
            issuer,
            expires_in_secs: LOGIN_TTL.as_secs(),
        })
    }

    /// Finishes signing in to `server` with the URL the browser was redirected to.
    pub async fn complete(
        &self,
        server: &str,
        redirect_url: &str,
    ) -> Result<ServerAuthStatus, Error> {
        let auth = self.signable(server)?;
        let login = self
            .pending
            .lock()
            .unwrap()
            .remove(server)
            .filter(|login| login.started.elapsed() < LOGIN_TTL)
            .ok_or_else(|| {
                auth_failed(
                    server,
                    Step::Authorization,
                    format!(
                        "no sign-in to \"{server}\" is under way (none started, or it is over {} \
                         minutes old); start again with `tool-cli auth login {server}`",
                        LOGIN_TTL.as_secs() / 60
                    ),
                )
            })?;
        let redirect = pkce::parse_redirect(redirect_url, &login.redirect_uri);
        let code = match redirect {
            Err(message) => {
                // A mistyped paste should not cost the user the whole login.
                self.pending
                    .lock()
                    .unwrap()
                    .insert(server.to_owned(), login);
                return Err(Error::invalid_params("authComplete", message));
            }
            Ok(pkce::Redirect::Refused {
                error, description, ..
            }) => {
                let description = description.map(|d| format!(": {d}")).unwrap_or_default();
                return Err(auth_failed(
                    server,
                    Step::Authorization,
                    format!("the authorization server refused: {error}{description}"),
                ));
            }
            Ok(pkce::Redirect::Code { code, state }) => {
                if state != login.state {
                    return Err(auth_failed(
                        server,
                        Step::Authorization,
                        "the redirect's state does not match this login (a stale or forged \
                         redirect); start again with `tool-cli auth login`",
                    ));
                }
                code
            }
        };
        let client = auth
            .client
            .as_ref()
            .map_err(|message| auth_failed(server, Step::Token, message.clone()))?;
        let tokens = flow::token(
            client,
            &login.discovered.metadata.token_endpoint,
            &login.registered,
            &login.discovered.resource,
            Grant::Code {
                code: &code,
                verifier: &login.verifier,
                redirect_uri: &login.redirect_uri,
            },
        )
        .await
        .map_err(|err| step_failed(server, err))?;
        let stored = StoredTokens {
            server_url: auth.url.to_string(),
            resource: login.discovered.resource.clone(),
            issuer: login.discovered.issuer.clone(),
            token_endpoint: login.discovered.metadata.token_endpoint.clone(),
            client_id: login.registered.client_id.clone(),
            client_secret: login.registered.client_secret.clone(),
            secret_in_body: login.registered.secret_in_body,
            access_token: tokens.access_token,
            refresh_token: tokens.refresh_token,
            expires_at: tokens
                .expires_in
                .map(|secs| now_secs().saturating_add(secs)),
            scope: tokens.scope,
        };
        let granted = stored.scope.clone();
        auth.store(Some(stored))
            .await
            .map_err(|message| auth_failed(server, Step::Token, message))?;
        {
            let mut challenges = auth.challenges.lock().unwrap();
            challenges.asked = step_up::scope_union(login.scope.as_deref(), granted.as_deref());
            challenges.wanted = None;
            challenges.refused = None;
        }
        Ok(auth.status().await)
    }

    /// Every remote server's sign-in state.
    pub async fn status(&self) -> Vec<ServerAuthStatus> {
        let servers: Vec<Arc<ServerAuth>> =
            self.servers.read().unwrap().values().cloned().collect();
        let mut all = Vec::with_capacity(servers.len());
        for auth in servers {
            all.push(auth.status().await);
        }
        all
    }

    /// Deletes `server`'s tokens; whether it had any.
    pub async fn logout(&self, server: &str) -> Result<bool, Error> {
        let Some(auth) = self.server(server) else {
            return Err(Error::invalid_params(
                "authLogout",
                format!("\"{server}\" is not a remote (http/https) server"),
            ));
        };
        self.pending.lock().unwrap().remove(server);
        let had = auth.tokens.lock().await.is_some();
        auth.store(None)
            .await
            .map_err(|message| auth_failed(server, Step::Token, message))?;
        *auth.needs_login.lock().unwrap() = None;
        Ok(had)
    }
}

/// The redirect URI must be a loopback `http://` address (RFC 8252 §7.3): the only kind a
/// command-line client can listen on.
fn check_redirect_uri(text: &str) -> Result<(), String> {
    let url = Url::parse(text).map_err(|err| format!("redirectUri \"{text}\": {err}"))?;
    let loopback = matches!(url.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"));
    if url.scheme() != "http" || !loopback || url.port().is_none() {
        return Err(format!(
            "redirectUri \"{text}\" is not a loopback address; expected \
             http://127.0.0.1:PORT/PATH"
        ));
    }
    Ok(())
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
    fn for_config(server: &ServerConfig, files: Option<&TokenFiles>) -> Option<ServerAuth> {
        let TransportConfig::Http { url, remote, .. } = &server.transport else {
            return None;
        };
        let parsed = Url::parse(url).ok()?;
        let client =
            crate::pool::tls::http_client(remote.ca_file.as_deref()).map_err(|err| err.to_string());
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
    fn same_settings(&self, other: &ServerAuth) -> bool {
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
    pub(crate) fn client(&self) -> Result<&reqwest::Client, &str> {
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

    fn forget(&self, guard: &mut Option<StoredTokens>, reason: &str) {
        *guard = None;
        if let Some(files) = &self.files
            && let Err(err) = files.remove(&self.name)
        {
            tracing::warn!(server = %self.name, %err, "cannot delete the token file");
        }
        tracing::warn!(server = %self.name, reason, "sign-in needed");
        *self.needs_login.lock().unwrap() = Some(reason.to_owned());
    }

    async fn store(&self, tokens: Option<StoredTokens>) -> Result<(), String> {
        let mut guard = self.tokens.lock().await;
        if let Some(files) = &self.files {
            match &tokens {
                Some(tokens) => files.save(&self.name, tokens),
                None => files.remove(&self.name).map(|_| ()),
            }
            .map_err(|err| {
                format!(
                    "cannot write the token file in {}: {err}",
                    files.dir().display()
                )
            })?;
        }
        if tokens.is_some() {
            *self.needs_login.lock().unwrap() = None;
        }
        *guard = tokens;
        Ok(())
    }

    async fn status(&self) -> ServerAuthStatus {
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
fn rfc3339(secs: u64) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// A token endpoint on loopback answering every request with `status` and `body`; counts
    /// the requests.
    async fn token_endpoint(status: u16, body: &'static str) -> (String, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&served);
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let counter = Arc::clone(&counter);
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut chunk = [0u8; 1024];
                    // Headers, then the form body (its length from content-length).
                    loop {
                        let read = stream.read(&mut chunk).await.unwrap_or(0);
                        if read == 0 {
                            return;
                        }
                        request.extend_from_slice(&chunk[..read]);
                        let text = String::from_utf8_lossy(&request).to_ascii_lowercase();
                        if let Some(end) = text.find("\r\n\r\n") {
                            let length: usize = text
                                .lines()
                                .find_map(|line| line.strip_prefix("content-length:"))
                                .and_then(|value| value.trim().parse().ok())
                                .unwrap_or(0);
                            if request.len() >= end + 4 + length {
                                break;
                            }
                        }
                    }
                    counter.fetch_add(1, Ordering::SeqCst);
                    let answer = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(answer.as_bytes()).await;
                });
            }
        });
        (format!("http://127.0.0.1:{port}/token"), served)
    }

    fn expiring_auth(token_endpoint: String) -> Arc<ServerAuth> {
        Arc::new(ServerAuth {
            name: "remote".into(),
            url: Url::parse("http://127.0.0.1:1/mcp").unwrap(),
            settings: OAuthSettings::default(),
            ca_file: None,
            client: crate::pool::tls::http_client(None).map_err(|err| err.to_string()),
            files: None,
            tokens: tokio::sync::Mutex::new(Some(StoredTokens {
                server_url: "http://127.0.0.1:1/mcp".into(),
                resource: "http://127.0.0.1:1/mcp".into(),
                issuer: "http://127.0.0.1:1".into(),
                token_endpoint,
                client_id: "client".into(),
                client_secret: None,
                secret_in_body: false,
                access_token: "old".into(),
                refresh_token: Some("refresh-1".into()),
                // Within the renewal margin, not yet expired.
                expires_at: Some(now_secs() + 10),
                scope: None,
            })),
            needs_login: Mutex::new(None),
            challenges: Mutex::new(step_up::Challenges::default()),
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_requests_share_one_refresh() {
        let (endpoint, served) = token_endpoint(
            200,
            r#"{"access_token":"fresh","token_type":"Bearer","expires_in":3600,"refresh_token":"refresh-2"}"#,
        )
        .await;
        let auth = expiring_auth(endpoint);
        let bearers = futures_util::future::join_all((0..8).map(|_| {
            let auth = Arc::clone(&auth);
            async move { auth.bearer().await }
        }))
        .await;
        for bearer in bearers {
            assert_eq!(bearer, Ok(Some("fresh".to_owned())));
        }
        assert_eq!(
            served.load(Ordering::SeqCst),
            1,
            "one refresh for eight requests"
        );
        let tokens = auth.tokens.lock().await;
        assert_eq!(
            tokens.as_ref().unwrap().refresh_token.as_deref(),
            Some("refresh-2")
        );
    }

    #[tokio::test]
    async fn a_refused_refresh_asks_for_login_and_is_not_retried() {
        let (endpoint, served) = token_endpoint(
            400,
            r#"{"error":"invalid_grant","error_description":"refresh token revoked"}"#,
        )
        .await;
        let auth = expiring_auth(endpoint);
        let first = auth.bearer().await.unwrap_err();
        let BearerError::NeedsLogin(reason) = first else {
            panic!("expected NeedsLogin, got {first:?}")
        };
        assert!(
            reason.contains("invalid_grant: refresh token revoked"),
            "{reason}"
        );
        assert!(auth.waits_for_login());
        assert!(matches!(
            auth.bearer().await,
            Err(BearerError::NeedsLogin(_))
        ));
        assert_eq!(
            served.load(Ordering::SeqCst),
            1,
            "the refused refresh is not sent again"
        );
        let status = auth.status().await;
        assert_eq!(status.state, "needsLogin");
        assert!(
            status
                .reason
                .unwrap()
                .contains("tool-cli auth login remote")
        );
    }

    #[tokio::test]
    async fn an_unreachable_token_endpoint_keeps_a_still_valid_token() {
        // Nothing listens on port 1.
        let auth = expiring_auth("http://127.0.0.1:1/token".into());
        assert_eq!(auth.bearer().await, Ok(Some("old".to_owned())));
        assert!(!auth.waits_for_login());
    }

    #[test]
    fn times_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn redirect_uris_must_be_loopback_http_with_a_port() {
        assert!(check_redirect_uri("http://127.0.0.1:5000/callback").is_ok());
        assert!(check_redirect_uri("http://localhost:5000/cb").is_ok());
        for bad in [
            "https://127.0.0.1:5000/callback",
            "http://evil.example:5000/callback",
            "http://127.0.0.1/callback",
            "not a url",
        ] {
            let message = check_redirect_uri(bad).unwrap_err();
            assert!(message.contains("redirectUri"), "{bad}: {message}");
        }
    }
}
