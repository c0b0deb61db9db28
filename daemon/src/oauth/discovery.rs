//! Pure parts of OAuth discovery: the `WWW-Authenticate` challenge of a 401, the well-known URLs
//! to try (RFC 9728 protected resource metadata, RFC 8414 authorization server metadata and
//! OpenID Connect discovery, in the order the MCP authorization spec gives), and the metadata
//! documents themselves.

use serde::Deserialize;
use url::Url;

/// What a `WWW-Authenticate: Bearer …` header said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// `resource_metadata`: where the protected resource metadata is (RFC 9728 §5.1).
    pub(crate) resource_metadata: Option<String>,
    /// `scope`: the scope the resource wants.
    pub(crate) scope: Option<String>,
    /// `error`: why the token was refused (`insufficient_scope` on a 403, RFC 6750 §3.1).
    pub(crate) error: Option<String>,
}

/// Reads the Bearer challenge's parameters (quoted or token values, any order, case-insensitive
/// names). A header without a Bearer challenge gives an empty [`Challenge`].
pub(crate) fn parse_challenge(header: &str) -> Challenge {
    let mut challenge = Challenge::default();
    let Some(start) = header.to_ascii_lowercase().find("bearer") else {
        return challenge;
    };
    let mut rest = &header[start + "bearer".len()..];
    loop {
        rest = rest.trim_start_matches([' ', ',', '\t']);
        let Some(eq) = rest.find('=') else { break };
        let name = rest[..eq].trim().to_ascii_lowercase();
        // Another scheme starts ("…, Basic realm=…"): its parameters are not ours.
        if name.contains(' ') {
            break;
        }
        rest = &rest[eq + 1..];
        let value;
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((index, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            out.push(escaped);
                        }
                    }
                    '"' => {
                        end = index + 1;
                        break;
                    }
                    c => out.push(c),
                }
            }
            value = out;
            rest = &quoted[end.min(quoted.len())..];
        } else {
            let end = rest.find([',', ' ']).unwrap_or(rest.len());
            value = rest[..end].to_owned();
            rest = &rest[end..];
        }
        match name.as_str() {
            "resource_metadata" => challenge.resource_metadata = Some(value),
            "scope" => challenge.scope = Some(value),
            "error" => challenge.error = Some(value),
            _ => {}
        }
    }
    challenge
}

/// Where to look for the protected resource metadata of `resource` when the 401 named none:
/// the path-aware well-known URL first, then the root one (RFC 9728 §3.1).
pub(crate) fn resource_metadata_urls(resource: &Url) -> Vec<Url> {
    let mut urls = Vec::new();
    let path = resource.path().trim_end_matches('/');
    if !path.is_empty() {
        urls.push(with_path(
            resource,
            &format!("/.well-known/oauth-protected-resource{path}"),
        ));
    }
    urls.push(with_path(resource, "/.well-known/oauth-protected-resource"));
    urls
}

/// Where to look for an authorization server's metadata, for issuer `issuer`: RFC 8414 then
/// OpenID Connect discovery, path-inserted and path-appended, as the MCP spec orders them.
pub(crate) fn authorization_server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        vec![
            with_path(issuer, "/.well-known/oauth-authorization-server"),
            with_path(issuer, "/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            with_path(
                issuer,
                &format!("/.well-known/oauth-authorization-server{path}"),
            ),
            with_path(issuer, &format!("/.well-known/openid-configuration{path}")),
            with_path(issuer, &format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

/// The origin of `url` as a URL (scheme, host, port; path `/`).
pub(crate) fn origin_of(url: &Url) -> Url {
    with_path(url, "/")
}

/// The authorization server of a 2025-03-26 server that publishes no metadata at all: the
/// default endpoints at its origin.
pub(crate) fn default_endpoints(origin: &Url) -> ServerMetadata {
    ServerMetadata {
        issuer: None,
        authorization_endpoint: with_path(origin, "/authorize").to_string(),
        token_endpoint: with_path(origin, "/token").to_string(),
        registration_endpoint: Some(with_path(origin, "/register").to_string()),
        code_challenge_methods_supported: None,
        token_endpoint_auth_methods_supported: None,
        client_id_metadata_document_supported: false,
    }
}

fn with_path(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.set_path(path);
    url.set_query(None);
    url.set_fragment(None);
    url
}

/// The canonical URI of an MCP server as an OAuth resource (RFC 8707): scheme and host lower
/// case, no fragment, no trailing slash on the path.
pub(crate) fn canonical_resource(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    let text = url.to_string();
    match text.strip_suffix('/') {
        Some(trimmed) if url.path() == "/" && url.query().is_none() => trimmed.to_owned(),
        _ => text,
    }
}

/// Whether the protected resource `named` covers the server at `server`: the same origin, and a
/// path that is the server's or a parent of it (`https://h` covers `https://h/mcp`), as the MCP
/// SDKs allow.
pub(crate) fn covers(named: &str, server: &Url) -> bool {
    let Ok(named) = Url::parse(named) else {
        return false;
    };
    if named.origin() != server.origin() {
        return false;
    }
    let parent = named.path().trim_end_matches('/');
    let path = server.path().trim_end_matches('/');
    path == parent || path.starts_with(&format!("{parent}/"))
}

/// RFC 9728 protected resource metadata (the fields we use).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResourceMetadata {
    /// The resource these metadata describe.
    pub(crate) resource: Option<String>,
    /// Issuers of the authorization servers that protect it.
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    /// Scopes it understands.
    #[serde(default)]
    pub(crate) scopes_supported: Vec<String>,
}

/// RFC 8414 authorization server metadata (the fields we use).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ServerMetadata {
    pub(crate) issuer: Option<String>,
    pub(crate) authorization_endpoint: String,
    pub(crate) token_endpoint: String,
    pub(crate) registration_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    /// How a confidential client may authenticate at the token endpoint.
    #[serde(default)]
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Whether a client may use the URL of its client ID metadata document as its client id.
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: bool,
}

impl ServerMetadata {
    /// Whether a client secret goes in the token request's form (`client_secret_post`) rather
    /// than in HTTP Basic authentication: only when the server lists post and not basic (basic
    /// is RFC 6749's default, and the one to use when nothing is listed).
    pub(crate) fn wants_secret_in_body(&self) -> bool {
        self.token_endpoint_auth_methods_supported
            .as_ref()
            .is_some_and(|methods| {
                methods.iter().any(|method| method == "client_secret_post")
                    && !methods.iter().any(|method| method == "client_secret_basic")
            })
    }

    /// Refuses metadata we cannot use safely: non-HTTP(S) endpoints, or PKCE without S256.
    pub(crate) fn check(&self) -> Result<(), UnusableMetadata> {
        for (name, value) in [
            ("authorization_endpoint", &self.authorization_endpoint),
            ("token_endpoint", &self.token_endpoint),
        ] {
            let url = Url::parse(value).map_err(|source| UnusableMetadata::NotAUrl {
                name,
                value: value.clone(),
                source,
            })?;
            if !matches!(url.scheme(), "https" | "http") {
                return Err(UnusableMetadata::NotHttp {
                    name,
                    value: value.clone(),
                });
            }
        }
        if let Some(methods) = &self.code_challenge_methods_supported
            && !methods.iter().any(|method| method == "S256")
        {
            return Err(UnusableMetadata::NoS256(methods.clone()));
        }
        Ok(())
    }
}

/// Why an authorization server's metadata cannot be used safely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum UnusableMetadata {
    /// An endpoint that is not a URL.
    #[error("{name} \"{value}\": {source}")]
    NotAUrl {
        name: &'static str,
        value: String,
        source: url::ParseError,
    },
    /// An endpoint of a scheme other than http(s).
    #[error("{name} \"{value}\" is not an http(s) URL")]
    NotHttp { name: &'static str, value: String },
    /// PKCE without S256, which OAuth 2.1 requires.
    #[error("the authorization server supports PKCE methods {0:?}, not S256; OAuth 2.1 needs S256")]
    NoS256(Vec<String>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_read_in_any_order_and_quoting() {
        let challenge = parse_challenge(
            r#"Bearer error="invalid_token", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope="read write""#,
        );
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://a.example/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(challenge.scope.as_deref(), Some("read write"));
        assert_eq!(challenge.error.as_deref(), Some("invalid_token"));
        let step_up = parse_challenge(
            r#"Bearer scope="mcp:basic mcp:write", resource_metadata="http://h/x", error="insufficient_scope""#,
        );
        assert_eq!(step_up.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(step_up.scope.as_deref(), Some("mcp:basic mcp:write"));
        let bare = parse_challenge("bearer scope=files:read");
        assert_eq!(bare.scope.as_deref(), Some("files:read"));
        assert_eq!(parse_challenge("Basic realm=\"x\""), Challenge::default());
        let escaped = parse_challenge(r#"Bearer scope="a\"b""#);
        assert_eq!(escaped.scope.as_deref(), Some("a\"b"));
    }

    #[test]
    fn well_known_urls_follow_the_spec_order() {
        let resource = Url::parse("https://h.example:8443/api/mcp?x=1").unwrap();
        let urls: Vec<String> = resource_metadata_urls(&resource)
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            urls,
            [
                "https://h.example:8443/.well-known/oauth-protected-resource/api/mcp",
                "https://h.example:8443/.well-known/oauth-protected-resource"
            ]
        );
        let issuer = Url::parse("https://as.example/tenant1").unwrap();
        let urls: Vec<String> = authorization_server_metadata_urls(&issuer)
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            urls,
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration"
            ]
        );
        let root = Url::parse("https://as.example").unwrap();
        assert_eq!(authorization_server_metadata_urls(&root).len(), 2);
    }

    #[test]
    fn a_server_without_metadata_gets_the_default_endpoints_at_its_origin() {
        let server = Url::parse("http://127.0.0.1:5123/api/mcp?k=v").unwrap();
        let origin = origin_of(&server);
        assert_eq!(origin.as_str(), "http://127.0.0.1:5123/");
        assert_eq!(
            authorization_server_metadata_urls(&origin)[0].as_str(),
            "http://127.0.0.1:5123/.well-known/oauth-authorization-server"
        );
        let metadata = default_endpoints(&origin);
        assert_eq!(
            metadata.authorization_endpoint,
            "http://127.0.0.1:5123/authorize"
        );
        assert_eq!(metadata.token_endpoint, "http://127.0.0.1:5123/token");
        assert_eq!(
            metadata.registration_endpoint.as_deref(),
            Some("http://127.0.0.1:5123/register")
        );
        assert!(metadata.check().is_ok());
    }

    #[test]
    fn resources_are_canonical() {
        let url = Url::parse("HTTPS://Example.COM/mcp#frag").unwrap();
        assert_eq!(canonical_resource(&url), "https://example.com/mcp");
        let root = Url::parse("https://example.com/").unwrap();
        assert_eq!(canonical_resource(&root), "https://example.com");
    }

    #[test]
    fn a_resource_covers_its_own_path_and_below_on_the_same_origin() {
        let server = Url::parse("https://h.example/api/mcp").unwrap();
        assert!(covers("https://h.example/api/mcp", &server));
        assert!(covers("https://h.example/api/mcp/", &server));
        assert!(covers("https://h.example", &server));
        assert!(covers("https://h.example/api", &server));
        assert!(!covers("https://h.example/ap", &server));
        assert!(!covers("https://h.example/other", &server));
        assert!(!covers("https://evil.example/api/mcp", &server));
        assert!(!covers("http://h.example/api/mcp", &server));
    }

    #[test]
    fn a_secret_goes_in_the_body_only_when_basic_is_not_offered() {
        let with = |methods: serde_json::Value| -> ServerMetadata {
            serde_json::from_value(serde_json::json!({
                "authorization_endpoint": "https://as/authorize",
                "token_endpoint": "https://as/token",
                "token_endpoint_auth_methods_supported": methods,
            }))
            .unwrap()
        };
        assert!(with(serde_json::json!(["client_secret_post"])).wants_secret_in_body());
        assert!(!with(serde_json::json!(["client_secret_basic"])).wants_secret_in_body());
        assert!(
            !with(serde_json::json!([
                "client_secret_post",
                "client_secret_basic"
            ]))
            .wants_secret_in_body()
        );
        assert!(!with(serde_json::json!(null)).wants_secret_in_body());
    }

    #[test]
    fn metadata_without_s256_is_refused() {
        let metadata: ServerMetadata = serde_json::from_value(serde_json::json!({
            "authorization_endpoint": "https://as/authorize",
            "token_endpoint": "https://as/token",
            "code_challenge_methods_supported": ["plain"]
        }))
        .unwrap();
        assert_eq!(
            metadata.check().unwrap_err().to_string(),
            "the authorization server supports PKCE methods [\"plain\"], not S256; OAuth 2.1 \
             needs S256"
        );
        let metadata: ServerMetadata = serde_json::from_value(serde_json::json!({
            "authorization_endpoint": "javascript:alert(1)",
            "token_endpoint": "https://as/token"
        }))
        .unwrap();
        assert!(
            metadata
                .check()
                .unwrap_err()
                .to_string()
                .contains("authorization_endpoint")
        );
    }
}
