//! The config fields of remote (Streamable HTTP) servers beyond their URL and headers: `caFile`
//! for a private CA and `oauth` for servers behind OAuth 2.1. Pure: values in, settings or an
//! error naming the field out. (`config.rs` calls this; it is long enough already.)

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// How a remote server is reached beyond its URL and headers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoteOptions {
    /// A PEM file of extra trusted CA certificates (besides the platform's), absolute once the
    /// config is parsed (a relative path is taken from the config file's directory).
    pub ca_file: Option<PathBuf>,
    /// Whether and how to authorize with OAuth 2.1 when the server answers 401.
    pub oauth: OAuthSettings,
    /// Record the MCP exchange to this NDJSON file (`"record"`, or `startRecording`), through
    /// the HTTP client's tap (`pool/http_tap.rs`).
    pub record: Option<PathBuf>,
}

/// The `oauth` field of a remote server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthSettings {
    /// `false` (`"oauth": false`) never tries OAuth: a 401 is reported as it is.
    pub enabled: bool,
    /// The scope to ask for; by default the one the server's 401 or metadata names.
    pub scope: Option<String>,
    /// A client id registered by hand with the authorization server; without one the daemon
    /// registers itself dynamically (RFC 7591).
    pub client_id: Option<String>,
    /// The secret of that client (a confidential client), `${VAR}` expanded; never logged.
    pub client_secret: Option<ClientSecret>,
    /// An `https://` URL where the user publishes tool-cli's client ID metadata document; used
    /// as the client id with an authorization server that supports such documents, instead of
    /// registering dynamically.
    pub client_metadata_url: Option<String>,
}

/// A configured client secret. Its `Debug` never shows it, so no `{:?}` of a config or its
/// settings puts it in a log line; it is also one of the config's secrets (`redact.rs`).
#[derive(Clone, PartialEq, Eq)]
pub struct ClientSecret(String);

impl ClientSecret {
    /// The secret itself, for the token request.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientSecret([redacted])")
    }
}

impl Default for OAuthSettings {
    fn default() -> Self {
        OAuthSettings {
            enabled: true,
            scope: None,
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawOAuth {
    scope: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    client_metadata_url: Option<String>,
}

/// A field that was wrong, and the message saying what would be right.
pub(crate) type FieldError = (Option<String>, String);

/// The shape of an `oauth` object, for messages.
const OAUTH_SHAPE: &str = "{\"scope\": \"…\", \"clientId\": \"…\", \"clientSecret\": \"${VAR}\", \"clientMetadataUrl\": \"https://…\"}";

/// Reads `caFile` and `oauth` of a server whose URL is `url`; `env` looks up the variables of a
/// `${VAR}` in `oauth.clientSecret`.
pub(crate) fn parse(
    url: &str,
    ca_file: Option<&str>,
    oauth: Option<&Value>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<RemoteOptions, FieldError> {
    let ca_file = match ca_file {
        None => None,
        Some("") => {
            return Err((
                Some("caFile".to_owned()),
                "is empty; expected the path of a PEM file of CA certificates".to_owned(),
            ));
        }
        Some(_) if !url.starts_with("https://") => {
            return Err((
                Some("caFile".to_owned()),
                "applies to https:// servers only; this server's url is not https://".to_owned(),
            ));
        }
        Some(path) => Some(PathBuf::from(path)),
    };
    let oauth = match oauth {
        None | Some(Value::Null) | Some(Value::Bool(true)) => OAuthSettings::default(),
        Some(Value::Bool(false)) => OAuthSettings {
            enabled: false,
            ..OAuthSettings::default()
        },
        Some(value @ Value::Object(_)) => {
            let raw = RawOAuth::deserialize(value).map_err(|err| {
                (
                    Some("oauth".to_owned()),
                    format!("{err}; expected {OAUTH_SHAPE} or false"),
                )
            })?;
            if raw.client_id.as_deref() == Some("") {
                return Err((
                    Some("oauth.clientId".to_owned()),
                    "is empty; expected a registered client id, or leave it out to register \
                     dynamically"
                        .to_owned(),
                ));
            }
            let client_secret = match raw.client_secret.as_deref() {
                None => None,
                Some(_) if raw.client_id.is_none() => {
                    return Err((
                        Some("oauth.clientSecret".to_owned()),
                        "is set without oauth.clientId; a secret belongs to a client registered \
                         by hand: give its clientId too"
                            .to_owned(),
                    ));
                }
                Some(text) => {
                    // The message names the field, never the value (it may be the secret).
                    let secret = crate::config::substitute(text, env).map_err(|message| {
                        (Some("oauth.clientSecret".to_owned()), message.to_string())
                    })?;
                    if secret.is_empty() {
                        return Err((
                            Some("oauth.clientSecret".to_owned()),
                            "is empty; expected the client's secret, best as \"${VAR}\" naming \
                             an environment variable"
                                .to_owned(),
                        ));
                    }
                    Some(ClientSecret(secret))
                }
            };
            if let Some(text) = &raw.client_metadata_url {
                check_client_metadata_url(text)
                    .map_err(|message| (Some("oauth.clientMetadataUrl".to_owned()), message))?;
            }
            OAuthSettings {
                enabled: true,
                scope: raw.scope.filter(|scope| !scope.trim().is_empty()),
                client_id: raw.client_id,
                client_secret,
                client_metadata_url: raw.client_metadata_url,
            }
        }
        Some(_) => {
            return Err((
                Some("oauth".to_owned()),
                format!("expected true, false or {OAUTH_SHAPE}"),
            ));
        }
    };
    Ok(RemoteOptions {
        ca_file,
        oauth,
        record: None,
    })
}

/// A client ID metadata document's URL must be `https://` with a path (it is the client id; the
/// authorization server fetches the document from it).
fn check_client_metadata_url(text: &str) -> Result<(), String> {
    let shape = "expected the https:// URL of a published client ID metadata document, e.g. \
                 https://example.com/tool-cli/client.json";
    let url =
        url::Url::parse(text).map_err(|err| format!("\"{text}\" is not a URL ({err}); {shape}"))?;
    if url.scheme() != "https"
        || url.path().trim_matches('/').is_empty()
        || url.fragment().is_some()
    {
        return Err(format!(
            "\"{text}\" is not an https:// URL with a path; {shape}"
        ));
    }
    Ok(())
}

/// Makes a relative `caFile` relative to the config file's directory.
pub(crate) fn resolve_paths(options: &mut RemoteOptions, config_dir: Option<&Path>) {
    if let (Some(path), Some(dir)) = (&options.ca_file, config_dir)
        && path.is_relative()
    {
        options.ca_file = Some(dir.join(path));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn defaults_try_oauth_and_trust_only_the_platform() {
        let options = parse("https://h/mcp", None, None, &no_env).unwrap();
        assert_eq!(options, RemoteOptions::default());
        assert!(options.oauth.enabled);
    }

    #[test]
    fn ca_file_is_for_https_only_and_relative_to_the_config() {
        let err = parse("http://h/mcp", Some("ca.pem"), None, &no_env).unwrap_err();
        assert_eq!(err.0.as_deref(), Some("caFile"));
        assert!(err.1.contains("https:// servers only"), "{}", err.1);
        let err = parse("https://h/mcp", Some(""), None, &no_env).unwrap_err();
        assert!(
            err.1.contains("expected the path of a PEM file"),
            "{}",
            err.1
        );
        let mut options = parse("https://h/mcp", Some("certs/ca.pem"), None, &no_env).unwrap();
        resolve_paths(&mut options, Some(Path::new("/etc/tool-cli")));
        assert_eq!(
            options.ca_file,
            Some(PathBuf::from("/etc/tool-cli/certs/ca.pem"))
        );
        let mut options = parse("https://h/mcp", Some("/abs/ca.pem"), None, &no_env).unwrap();
        resolve_paths(&mut options, Some(Path::new("/etc/tool-cli")));
        assert_eq!(options.ca_file, Some(PathBuf::from("/abs/ca.pem")));
    }

    #[test]
    fn oauth_takes_false_or_scope_and_client_id() {
        let off = parse("https://h", None, Some(&json!(false)), &no_env).unwrap();
        assert!(!off.oauth.enabled);
        let set = parse(
            "https://h",
            None,
            Some(&json!({"scope": "mcp:read", "clientId": "abc"})),
            &no_env,
        )
        .unwrap();
        assert_eq!(set.oauth.scope.as_deref(), Some("mcp:read"));
        assert_eq!(set.oauth.client_id.as_deref(), Some("abc"));
        let err = parse("https://h", None, Some(&json!({"scopes": "x"})), &no_env).unwrap_err();
        assert_eq!(err.0.as_deref(), Some("oauth"));
        assert!(err.1.contains("unknown field `scopes`"), "{}", err.1);
        let err = parse("https://h", None, Some(&json!("yes")), &no_env).unwrap_err();
        assert!(err.1.contains("expected true, false"), "{}", err.1);
        let err = parse("https://h", None, Some(&json!({"clientId": ""})), &no_env).unwrap_err();
        assert_eq!(err.0.as_deref(), Some("oauth.clientId"));
    }

    #[test]
    fn a_client_metadata_url_is_https_with_a_path() {
        let set = parse(
            "https://h",
            None,
            Some(&json!({"clientMetadataUrl": "https://example.com/tool-cli/client.json"})),
            &no_env,
        )
        .unwrap();
        assert_eq!(
            set.oauth.client_metadata_url.as_deref(),
            Some("https://example.com/tool-cli/client.json")
        );
        for bad in ["http://example.com/c.json", "https://example.com/", "nope"] {
            let (field, message) = parse(
                "https://h",
                None,
                Some(&json!({"clientMetadataUrl": bad})),
                &no_env,
            )
            .unwrap_err();
            assert_eq!(field.as_deref(), Some("oauth.clientMetadataUrl"));
            assert!(message.contains("expected the https:// URL"), "{message}");
        }
    }

    /// url's IDNA back end is chosen in Cargo.toml (`idna_adapter` 1.1, the unicode-rs crates):
    /// a host name outside ASCII must still parse, to its punycode form (the 1.0 adapter, which
    /// has no Unicode tables, would refuse it).
    #[test]
    fn an_international_host_name_is_accepted_as_its_punycode() {
        check_client_metadata_url("https://bücher.example/tool-cli/client.json").unwrap();
        let url = url::Url::parse("https://BÜCHER.example/c.json").unwrap();
        assert_eq!(url.host_str(), Some("xn--bcher-kva.example"));
    }

    #[test]
    fn a_client_secret_comes_from_the_environment_and_is_never_shown() {
        let env = |name: &str| (name == "SECRET").then(|| "s3cret-value".to_owned());
        let set = parse(
            "https://h",
            None,
            Some(&json!({"clientId": "abc", "clientSecret": "${SECRET}"})),
            &env,
        )
        .unwrap();
        let secret = set.oauth.client_secret.as_ref().unwrap();
        assert_eq!(secret.expose(), "s3cret-value");
        let shown = format!("{:?}", set.oauth);
        assert!(!shown.contains("s3cret-value"), "{shown}");
        // Without a client id, unset, or empty: refused, naming the field and never the value.
        for (oauth, expected) in [
            (
                json!({"clientSecret": "literal-s3cret"}),
                "without oauth.clientId",
            ),
            (
                json!({"clientId": "a", "clientSecret": "${NOPE}"}),
                "not set",
            ),
            (json!({"clientId": "a", "clientSecret": ""}), "is empty"),
        ] {
            let (field, message) = parse("https://h", None, Some(&oauth), &env).unwrap_err();
            assert_eq!(field.as_deref(), Some("oauth.clientSecret"));
            assert!(message.contains(expected), "{message}");
            assert!(!message.contains("literal-s3cret"), "{message}");
        }
    }
}
