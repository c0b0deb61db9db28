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
//! keeps the 0600 token files; `server_auth.rs` is one server's state (its tokens, their
//! renewal, its challenges); this file is the sign-in (`begin`, `complete`, `logout`).

mod discovery;
mod flow;
mod pkce;
mod server_auth;
mod step_up;
mod store;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tool_cli_protocol::ErrorData;
use tool_cli_protocol::remote_auth::{AuthLoginResult, ServerAuthStatus};
use url::Url;

use crate::config::ServerConfig;
use crate::error::Error;
pub(crate) use flow::Step;
use flow::{Grant, RegisteredClient, StepError};
pub(crate) use server_auth::{BearerError, ServerAuth, rfc3339};
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
        .map_err(|error| auth_failed(server, Step::Authorization, error.to_string()))?;
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
                return Err(Error::invalid_params("authComplete", message.to_string()));
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
            .map_err(|error| auth_failed(server, Step::Token, error.to_string()))?;
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
            .map_err(|error| auth_failed(server, Step::Token, error.to_string()))?;
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

#[cfg(test)]
mod tests;
