//! The OAuth requests themselves: probing the server for its 401 challenge, fetching metadata,
//! registering a client (RFC 7591), and the token endpoint's two grants. Each returns a
//! [`StepError`] naming the step, so the user learns where signing in broke.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::http::{Method, Request, StatusCode};
use serde_json::json;
use url::Url;

use crate::pool::http_client::{Exchange, HttpClient, HttpError};

use super::discovery::{self, Challenge, ResourceMetadata, ServerMetadata};
use super::pkce::{self, TokenResponse};

/// How long one OAuth request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest OAuth answer read (metadata, registration, tokens are a few kilobytes).
const MAX_BODY_BYTES: usize = 256 * 1024;

/// The steps of signing in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Discovery,
    Registration,
    Authorization,
    Token,
    Refresh,
}

impl Step {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Step::Discovery => "discovery",
            Step::Registration => "registration",
            Step::Authorization => "authorization",
            Step::Token => "token",
            Step::Refresh => "refresh",
        }
    }
}

/// A step that failed, and why (what was wrong and, where it helps, what would be right).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub(crate) struct StepError {
    pub(crate) step: Step,
    pub(crate) message: String,
    /// The authorization server refused (an OAuth error answer), as opposed to not answering:
    /// for a refresh, the difference between "sign in again" and "try later".
    pub(crate) refused: bool,
}

fn fail(step: Step, message: impl Into<String>) -> StepError {
    StepError {
        step,
        message: message.into(),
        refused: false,
    }
}

/// A URL fit for a message: no credentials, no query (a configured URL may carry a key there).
pub(crate) fn shown(url: &Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

/// One OAuth request, its answer read whole (status and body), or the step's error.
async fn exchange(
    client: &HttpClient,
    step: Step,
    method: Method,
    url: &Url,
    headers: &[(&str, String)],
    body: Option<String>,
) -> Result<(u16, Vec<u8>), StepError> {
    let request = Exchange {
        method,
        url: url.as_str(),
        headers,
        body: body.map(Bytes::from),
    };
    let answer = client
        .exchange(request, REQUEST_TIMEOUT, MAX_BODY_BYTES)
        .await
        .map_err(|err| network(step, url, &err))?;
    Ok((answer.status.as_u16(), answer.body))
}

fn network(step: Step, url: &Url, err: &HttpError) -> StepError {
    let detail = match crate::pool::tls::certificate_problem(err) {
        Some(problem) => crate::pool::tls::untrusted_message(&problem),
        None if err.is_timeout() => format!("no answer within {} s", REQUEST_TIMEOUT.as_secs()),
        None if err.is_connect() => "cannot connect".to_owned(),
        None => match err {
            HttpError::TooLarge(_) | HttpError::TooManyRedirects(_) => err.to_string(),
            _ => "the request failed".to_owned(),
        },
    };
    fail(step, format!("{}: {detail}", shown(url)))
}

/// Asks the MCP server, without a token, what it wants: the challenge of its 401, or `None` when
/// it answers without asking for authorization.
pub(crate) async fn probe(
    client: &HttpClient,
    server: &Url,
) -> Result<Option<Challenge>, StepError> {
    let initialize = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "tool-cli", "version": env!("CARGO_PKG_VERSION")}}
    });
    // Only the answer's head is read: a server that does not ask for authorization may answer
    // with a stream.
    let request = Request::post(server.as_str())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Full::new(Bytes::from(initialize.to_string())))
        .map_err(|err| fail(Step::Discovery, format!("{}: {err}", shown(server))))?;
    let response = tokio::time::timeout(REQUEST_TIMEOUT, client.send(request))
        .await
        .unwrap_or(Err(HttpError::Timeout(REQUEST_TIMEOUT)))
        .map_err(|err| network(Step::Discovery, server, &err))?;
    if response.status() != StatusCode::UNAUTHORIZED {
        return Ok(None);
    }
    let header = response
        .headers()
        .get("www-authenticate")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    Ok(Some(discovery::parse_challenge(header)))
}

async fn get_json<T: serde::de::DeserializeOwned>(
    client: &HttpClient,
    step: Step,
    url: &Url,
) -> Result<Option<T>, StepError> {
    let accept = [("accept", "application/json".to_owned())];
    let (status, body) = exchange(client, step, Method::GET, url, &accept, None).await?;
    if status == 404 || status == 405 {
        return Ok(None);
    }
    if !(200..300).contains(&status) {
        return Err(fail(step, format!("{} answered HTTP {status}", shown(url))));
    }
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|err| fail(step, format!("{} is not valid metadata: {err}", shown(url))))
}

/// What discovery found: where to send the user and where to get tokens.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    pub(crate) resource: String,
    pub(crate) issuer: String,
    pub(crate) metadata: ServerMetadata,
    pub(crate) scope: Option<String>,
}

/// Finds the authorization server of `server` from its challenge: protected resource metadata
/// (RFC 9728), then that server's metadata (RFC 8414 / OpenID Connect discovery).
pub(crate) async fn discover(
    client: &HttpClient,
    server: &Url,
    challenge: &Challenge,
) -> Result<Discovered, StepError> {
    let candidates = match &challenge.resource_metadata {
        Some(url) => vec![Url::parse(url).map_err(|err| {
            fail(
                Step::Discovery,
                format!("the 401's resource_metadata \"{url}\" is not a URL: {err}"),
            )
        })?],
        None => discovery::resource_metadata_urls(server),
    };
    let mut resource_metadata: Option<ResourceMetadata> = None;
    for url in &candidates {
        if let Some(found) = get_json(client, Step::Discovery, url).await? {
            resource_metadata = Some(found);
            break;
        }
    }
    // A server of the 2025-03-26 spec publishes no protected resource metadata: its own origin
    // is the authorization server. (Not when the 401 named metadata that is not there.)
    if resource_metadata.is_none() && challenge.resource_metadata.is_none() {
        return discover_legacy(client, server, challenge).await;
    }
    let Some(resource_metadata) = resource_metadata else {
        let tried: Vec<String> = candidates.iter().map(shown).collect();
        return Err(fail(
            Step::Discovery,
            format!(
                "the server asks for OAuth but publishes no protected resource metadata (tried {}); \
                 it must serve RFC 9728 metadata naming its authorization server",
                tried.join(", ")
            ),
        ));
    };
    let resource = match &resource_metadata.resource {
        None => discovery::canonical_resource(server),
        Some(named) if discovery::covers(named, server) => named.clone(),
        Some(named) => {
            return Err(fail(
                Step::Discovery,
                format!(
                    "the protected resource metadata is for \"{named}\", which does not cover \
                     this server ({}); refusing to send tokens across resources",
                    shown(server)
                ),
            ));
        }
    };
    let Some(issuer) = resource_metadata.authorization_servers.first() else {
        return Err(fail(
            Step::Discovery,
            "the protected resource metadata names no authorization_servers",
        ));
    };
    let issuer_url = Url::parse(issuer).map_err(|err| {
        fail(
            Step::Discovery,
            format!("authorization server \"{issuer}\" is not a URL: {err}"),
        )
    })?;
    let candidates = discovery::authorization_server_metadata_urls(&issuer_url);
    let mut metadata: Option<ServerMetadata> = None;
    for url in &candidates {
        if let Some(found) = get_json(client, Step::Discovery, url).await? {
            metadata = Some(found);
            break;
        }
    }
    let Some(metadata) = metadata else {
        let tried: Vec<String> = candidates.iter().map(shown).collect();
        return Err(fail(
            Step::Discovery,
            format!(
                "authorization server {issuer} publishes no metadata (tried {})",
                tried.join(", ")
            ),
        ));
    };
    metadata
        .check()
        .map_err(|unusable| fail(Step::Discovery, unusable.to_string()))?;
    let scope = challenge.scope.clone().or_else(|| {
        (!resource_metadata.scopes_supported.is_empty())
            .then(|| resource_metadata.scopes_supported.join(" "))
    });
    Ok(Discovered {
        resource,
        issuer: metadata.issuer.clone().unwrap_or_else(|| issuer.clone()),
        metadata,
        scope,
    })
}

/// Discovery as the 2025-03-26 MCP spec had it, for a server without RFC 9728 metadata: the
/// authorization server's metadata at the MCP server's origin, else the default endpoints
/// `/authorize`, `/token` and `/register` there.
async fn discover_legacy(
    client: &HttpClient,
    server: &Url,
    challenge: &Challenge,
) -> Result<Discovered, StepError> {
    let origin = discovery::origin_of(server);
    let mut metadata: Option<ServerMetadata> = None;
    for url in &discovery::authorization_server_metadata_urls(&origin) {
        if let Some(found) = get_json(client, Step::Discovery, url).await? {
            metadata = Some(found);
            break;
        }
    }
    let metadata = match metadata {
        Some(metadata) => metadata,
        None => {
            tracing::info!(server = %shown(server), "no OAuth metadata published; using the default endpoints of the 2025-03-26 spec");
            discovery::default_endpoints(&origin)
        }
    };
    metadata
        .check()
        .map_err(|unusable| fail(Step::Discovery, unusable.to_string()))?;
    let issuer = discovery::canonical_resource(&origin);
    Ok(Discovered {
        resource: discovery::canonical_resource(server),
        issuer: metadata.issuer.clone().unwrap_or(issuer),
        metadata,
        scope: challenge.scope.clone(),
    })
}

/// A registered (or configured) client. Its `Debug` leaves the secret out.
#[derive(Clone)]
pub(crate) struct RegisteredClient {
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<String>,
    /// The secret goes in the token request's form (`client_secret_post`) rather than in HTTP
    /// Basic authentication (`client_secret_basic`, the default of RFC 6749).
    pub(crate) secret_in_body: bool,
}

impl std::fmt::Debug for RegisteredClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredClient")
            .field("client_id", &self.client_id)
            .field("confidential", &self.client_secret.is_some())
            .field("secret_in_body", &self.secret_in_body)
            .finish()
    }
}

/// Registers tool-cli with the authorization server (RFC 7591) for `redirect_uri`.
pub(crate) async fn register(
    client: &HttpClient,
    metadata: &ServerMetadata,
    redirect_uri: &str,
    scope: Option<&str>,
) -> Result<RegisteredClient, StepError> {
    let Some(endpoint) = &metadata.registration_endpoint else {
        return Err(fail(
            Step::Registration,
            "the authorization server offers no dynamic client registration; register a client \
             with it by hand and set \"oauth\": {\"clientId\": \"…\"} in the server's config",
        ));
    };
    let url = Url::parse(endpoint).map_err(|err| {
        fail(
            Step::Registration,
            format!("registration_endpoint \"{endpoint}\": {err}"),
        )
    })?;
    let mut request = json!({
        "client_name": "tool-cli",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    if let Some(scope) = scope {
        request["scope"] = json!(scope);
    }
    let headers = [
        ("content-type", "application/json".to_owned()),
        ("accept", "application/json".to_owned()),
    ];
    let (status, body) = exchange(
        client,
        Step::Registration,
        Method::POST,
        &url,
        &headers,
        Some(request.to_string()),
    )
    .await?;
    if !(200..300).contains(&status) {
        let reason = serde_json::from_slice::<pkce::ErrorResponse>(&body)
            .map(|error| error.describe())
            .unwrap_or_else(|_| format!("HTTP {status}"));
        return Err(StepError {
            step: Step::Registration,
            message: format!(
                "the authorization server refused to register tool-cli ({reason}); register a \
                 client by hand and set \"oauth\": {{\"clientId\": \"…\"}} in the server's config"
            ),
            refused: true,
        });
    }
    #[derive(serde::Deserialize)]
    struct Registered {
        client_id: String,
        client_secret: Option<String>,
        token_endpoint_auth_method: Option<String>,
    }
    let registered: Registered = serde_json::from_slice(&body).map_err(|err| {
        fail(
            Step::Registration,
            format!("the registration answer has no client_id: {err}"),
        )
    })?;
    Ok(RegisteredClient {
        client_id: registered.client_id,
        client_secret: registered.client_secret,
        secret_in_body: registered.token_endpoint_auth_method.as_deref()
            == Some("client_secret_post"),
    })
}

/// A grant sent to the token endpoint.
pub(crate) enum Grant<'a> {
    Code {
        code: &'a str,
        verifier: &'a str,
        redirect_uri: &'a str,
    },
    Refresh {
        refresh_token: &'a str,
    },
}

/// The form of a token request (built apart: the serializer is not `Send`).
fn form_body(grant: &Grant<'_>, registered: &RegisteredClient, resource: &str) -> String {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    match grant {
        Grant::Code {
            code,
            verifier,
            redirect_uri,
        } => {
            form.append_pair("grant_type", "authorization_code")
                .append_pair("code", code)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("code_verifier", verifier);
        }
        Grant::Refresh { refresh_token } => {
            form.append_pair("grant_type", "refresh_token")
                .append_pair("refresh_token", refresh_token);
        }
    }
    form.append_pair("client_id", &registered.client_id)
        .append_pair("resource", resource);
    if registered.secret_in_body
        && let Some(secret) = &registered.client_secret
    {
        form.append_pair("client_secret", secret);
    }
    form.finish()
}

/// Sends a grant to the token endpoint.
pub(crate) async fn token(
    client: &HttpClient,
    token_endpoint: &str,
    registered: &RegisteredClient,
    resource: &str,
    grant: Grant<'_>,
) -> Result<TokenResponse, StepError> {
    let step = match grant {
        Grant::Code { .. } => Step::Token,
        Grant::Refresh { .. } => Step::Refresh,
    };
    let url = Url::parse(token_endpoint)
        .map_err(|err| fail(step, format!("token_endpoint \"{token_endpoint}\": {err}")))?;
    let body = form_body(&grant, registered, resource);
    let mut headers = vec![
        (
            "content-type",
            "application/x-www-form-urlencoded".to_owned(),
        ),
        ("accept", "application/json".to_owned()),
    ];
    if !registered.secret_in_body
        && let Some(secret) = &registered.client_secret
    {
        headers.push(("authorization", basic_auth(&registered.client_id, secret)));
    }
    let (status, body) = exchange(client, step, Method::POST, &url, &headers, Some(body)).await?;
    pkce::parse_token_response(status, &body).map_err(|message| StepError {
        step,
        refused: (400..500).contains(&status),
        message: format!("the token endpoint refused: {message}"),
    })
}

/// HTTP Basic credentials (RFC 7617) for a confidential client at the token endpoint
/// (`client_secret_basic`, RFC 6749 section 2.3.1).
fn basic_auth(client_id: &str, secret: &str) -> String {
    use base64::Engine as _;
    let pair = format!("{client_id}:{secret}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}
