//! OAuth 2.1 sign-in for remote servers: `authLogin`, `authComplete`, `authStatus`, `authLogout`
//! (owner token only). The daemon does discovery, registration and the token exchange; the
//! client only opens the authorization URL and hands back the URL the browser was redirected to.

use serde::{Deserialize, Serialize};

/// Params of `authLogin`: start signing in to one server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthLoginParams {
    /// The server's name, as in the config.
    pub server: String,
    /// Where the authorization server sends the browser back: a loopback URL the client listens
    /// on (`http://127.0.0.1:PORT/callback`).
    pub redirect_uri: String,
}

/// Result of `authLogin`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthLoginResult {
    /// The server.
    pub server: String,
    /// The URL the user opens to authorize (authorization code + PKCE S256).
    pub authorization_url: String,
    /// The authorization server (its issuer).
    pub issuer: String,
    /// Seconds the daemon waits for `authComplete` before forgetting this attempt.
    pub expires_in_secs: u64,
}

/// Params of `authComplete`: finish signing in with the URL the browser was redirected to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthCompleteParams {
    /// The server.
    pub server: String,
    /// The full redirect URL, with its `code` and `state` (or `error`) query parameters.
    pub redirect_url: String,
}

/// One server's sign-in state, in `authComplete` and `authStatus`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerAuthStatus {
    /// The server.
    pub server: String,
    /// `"authorized"` (tokens held), `"needsLogin"` (the server asked for OAuth and no usable
    /// token is held), `"notRequired"` (no OAuth seen for it), or `"disabled"` (`"oauth": false`).
    pub state: String,
    /// The authorization server, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The granted scope, when the authorization server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// When the access token expires (RFC 3339, UTC), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Whether a refresh token is held (the access token is renewed without the user).
    pub refreshable: bool,
    /// Why a login is needed, for `needsLogin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Result of `authStatus`: every remote (HTTP) server, in config order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthStatusResult {
    /// One entry per remote server.
    pub servers: Vec<ServerAuthStatus>,
}

/// Result of `authLogout`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthLogoutResult {
    /// The server.
    pub server: String,
    /// Whether tokens were held and are now deleted.
    pub removed: bool,
}
