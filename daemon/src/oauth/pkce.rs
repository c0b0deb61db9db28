//! Pure parts of the authorization code flow: PKCE (S256, RFC 7636), the authorization URL, the
//! redirect the browser comes back with, and the token endpoint's answer.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};
use url::Url;

/// Why a step of the authorization code flow cannot go on; each message says what was wrong
/// and, where the user can act, what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum FlowError {
    /// The discovered authorization endpoint is not a URL.
    #[error("authorization_endpoint \"{endpoint}\": {source}")]
    AuthorizationEndpoint {
        endpoint: String,
        source: url::ParseError,
    },
    /// What the user pasted is not a URL.
    #[error("the redirect URL is not a URL ({0}); paste the whole address, starting http://")]
    RedirectNotAUrl(url::ParseError),
    /// The login's own redirect address is not a URL.
    #[error("{0}")]
    RedirectUri(url::ParseError),
    /// The pasted URL goes somewhere else than this login's redirect address.
    #[error(
        "the URL does not go to this login's redirect address {redirect_uri}; paste the \
         address the browser was sent to after authorizing"
    )]
    OtherRedirect { redirect_uri: String },
    /// The redirect has no `code`.
    #[error(
        "the redirect URL has no \"code\" parameter; paste the address the browser was sent to \
         after authorizing"
    )]
    NoCode,
    /// The redirect has no `state`.
    #[error("the redirect URL has no \"state\" parameter; it does not answer this login")]
    NoState,
    /// A 2xx answer of the token endpoint that is not a token response.
    #[error("the token endpoint's answer is not a token response: {0}")]
    NotATokenResponse(String),
    /// A token of a type other than Bearer.
    #[error("the token endpoint issued a \"{0}\" token; only Bearer tokens are supported")]
    NotBearer(String),
    /// The token endpoint refused, saying why (`error: description`, made safe to show).
    #[error("{0}")]
    Refused(String),
    /// The token endpoint failed without an OAuth error body.
    #[error("HTTP {0} without an OAuth error body")]
    Status(u16),
}

/// A PKCE verifier and its S256 challenge.
pub(crate) struct Pkce {
    pub(crate) verifier: String,
    pub(crate) challenge: String,
}

impl Pkce {
    /// A verifier from 32 random bytes (43 characters of base64url, within RFC 7636's 43-128).
    pub(crate) fn from_random(bytes: [u8; 32]) -> Pkce {
        let verifier = URL_SAFE_NO_PAD.encode(bytes);
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Pkce {
            verifier,
            challenge,
        }
    }
}

/// A random `state` value from 16 bytes.
pub(crate) fn state_from_random(bytes: [u8; 16]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// What goes into an authorization request.
pub(crate) struct AuthorizationRequest<'a> {
    pub(crate) endpoint: &'a str,
    pub(crate) client_id: &'a str,
    pub(crate) redirect_uri: &'a str,
    pub(crate) challenge: &'a str,
    pub(crate) state: &'a str,
    pub(crate) resource: &'a str,
    pub(crate) scope: Option<&'a str>,
}

/// The URL the user opens (RFC 6749 §4.1.1 with PKCE and RFC 8707's `resource`).
pub(crate) fn authorization_url(request: &AuthorizationRequest<'_>) -> Result<Url, FlowError> {
    let mut url =
        Url::parse(request.endpoint).map_err(|source| FlowError::AuthorizationEndpoint {
            endpoint: request.endpoint.to_owned(),
            source,
        })?;
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", request.client_id)
            .append_pair("redirect_uri", request.redirect_uri)
            .append_pair("code_challenge", request.challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", request.state)
            .append_pair("resource", request.resource);
        if let Some(scope) = request.scope {
            query.append_pair("scope", scope);
        }
    }
    Ok(url)
}

/// What the browser came back with.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Redirect {
    /// An authorization code and the state it answers.
    Code { code: String, state: String },
    /// The authorization server refused (`error`, `error_description`).
    Refused {
        error: String,
        description: Option<String>,
        state: Option<String>,
    },
}

/// Reads a redirect URL (pasted by the user or caught by the loopback listener). It must go to
/// `redirect_uri` (same scheme, host, port and path).
pub(crate) fn parse_redirect(text: &str, redirect_uri: &str) -> Result<Redirect, FlowError> {
    let url = Url::parse(text.trim()).map_err(FlowError::RedirectNotAUrl)?;
    let expected = Url::parse(redirect_uri).map_err(FlowError::RedirectUri)?;
    if (url.scheme(), url.host_str(), url.port(), url.path())
        != (
            expected.scheme(),
            expected.host_str(),
            expected.port(),
            expected.path(),
        )
    {
        return Err(FlowError::OtherRedirect {
            redirect_uri: redirect_uri.to_owned(),
        });
    }
    let get = |name: &str| {
        url.query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    };
    if let Some(error) = get("error") {
        return Ok(Redirect::Refused {
            error,
            description: get("error_description"),
            state: get("state"),
        });
    }
    match (get("code"), get("state")) {
        (Some(code), Some(state)) => Ok(Redirect::Code { code, state }),
        (None, _) => Err(FlowError::NoCode),
        (Some(_), None) => Err(FlowError::NoState),
    }
}

/// A successful token endpoint answer (RFC 6749 §5.1).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct TokenResponse {
    pub(crate) access_token: String,
    pub(crate) token_type: String,
    pub(crate) expires_in: Option<u64>,
    pub(crate) refresh_token: Option<String>,
    pub(crate) scope: Option<String>,
}

/// An error answer of the token or registration endpoint (RFC 6749 §5.2, RFC 7591 §3.2.2).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ErrorResponse {
    pub(crate) error: String,
    pub(crate) error_description: Option<String>,
}

impl ErrorResponse {
    /// `error: description`, as text safe to show (control characters dropped, capped).
    pub(crate) fn describe(&self) -> String {
        let text = match &self.error_description {
            Some(description) => format!("{}: {description}", self.error),
            None => self.error.clone(),
        };
        text.chars().filter(|c| !c.is_control()).take(300).collect()
    }
}

/// Reads a token endpoint answer: its tokens, or what it refused.
pub(crate) fn parse_token_response(status: u16, body: &[u8]) -> Result<TokenResponse, FlowError> {
    if (200..300).contains(&status) {
        let tokens: TokenResponse = serde_json::from_slice(body)
            .map_err(|err| FlowError::NotATokenResponse(err.to_string()))?;
        if !tokens.token_type.eq_ignore_ascii_case("bearer") {
            return Err(FlowError::NotBearer(tokens.token_type));
        }
        return Ok(tokens);
    }
    match serde_json::from_slice::<ErrorResponse>(body) {
        Ok(error) => Err(FlowError::Refused(error.describe())),
        Err(_) => Err(FlowError::Status(status)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_matches_rfc_7636_appendix_b() {
        // The verifier and challenge of RFC 7636 Appendix B.
        let bytes = [
            116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186, 22, 212,
            37, 77, 105, 214, 191, 240, 91, 88, 5, 88, 83, 132, 141, 121,
        ];
        let pkce = Pkce::from_random(bytes);
        assert_eq!(pkce.verifier, "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk");
        assert_eq!(
            pkce.challenge,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn authorization_urls_carry_pkce_state_and_resource() {
        let url = authorization_url(&AuthorizationRequest {
            endpoint: "https://as.example/authorize?tenant=a",
            client_id: "c 1",
            redirect_uri: "http://127.0.0.1:5000/callback",
            challenge: "abc",
            state: "xyz",
            resource: "https://h.example/mcp",
            scope: Some("read write"),
        })
        .unwrap();
        let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        let get = |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("tenant"), Some("a"));
        assert_eq!(get("response_type"), Some("code"));
        assert_eq!(get("client_id"), Some("c 1"));
        assert_eq!(get("code_challenge_method"), Some("S256"));
        assert_eq!(get("resource"), Some("https://h.example/mcp"));
        assert_eq!(get("scope"), Some("read write"));
    }

    #[test]
    fn redirects_are_checked_against_the_redirect_uri() {
        let uri = "http://127.0.0.1:5000/callback";
        assert_eq!(
            parse_redirect("http://127.0.0.1:5000/callback?code=c&state=s", uri).unwrap(),
            Redirect::Code {
                code: "c".into(),
                state: "s".into()
            }
        );
        assert!(matches!(
            parse_redirect("http://127.0.0.1:5000/callback?error=access_denied&state=s", uri),
            Ok(Redirect::Refused { error, .. }) if error == "access_denied"
        ));
        let wrong_port = parse_redirect("http://127.0.0.1:5001/callback?code=c&state=s", uri);
        assert!(
            wrong_port
                .unwrap_err()
                .to_string()
                .contains("redirect address")
        );
        assert!(
            parse_redirect("not a url", uri)
                .unwrap_err()
                .to_string()
                .contains("not a URL")
        );
        assert_eq!(
            parse_redirect("http://127.0.0.1:5000/callback?state=s", uri)
                .unwrap_err()
                .to_string(),
            "the redirect URL has no \"code\" parameter; paste the address the browser was sent \
             to after authorizing"
        );
    }

    #[test]
    fn token_answers_are_read_or_explained() {
        let ok = parse_token_response(
            200,
            br#"{"access_token":"a","token_type":"bearer","expires_in":60,"refresh_token":"r"}"#,
        )
        .unwrap();
        assert_eq!(ok.expires_in, Some(60));
        let refused = parse_token_response(
            400,
            br#"{"error":"invalid_grant","error_description":"refresh token revoked"}"#,
        )
        .unwrap_err();
        assert_eq!(refused.to_string(), "invalid_grant: refresh token revoked");
        assert_eq!(
            parse_token_response(500, b"oops").unwrap_err(),
            FlowError::Status(500)
        );
        let mac = parse_token_response(200, br#"{"access_token":"a","token_type":"mac"}"#);
        assert_eq!(
            mac.unwrap_err().to_string(),
            "the token endpoint issued a \"mac\" token; only Bearer tokens are supported"
        );
    }
}
