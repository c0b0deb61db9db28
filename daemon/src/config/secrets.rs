//! Which values of a config are secrets: whatever a `${VAR}` put into a server's `env`,
//! `headers` or `url`, the credentials in its URL, and the values of its credential headers.
//! The log, the errors and the verbose traces are cleaned of them (`crate::redact`).

use crate::redact::Secrets;

use super::{Config, TransportConfig};

/// The secrets of every server of `config`, in each form they may appear in.
pub fn secrets_of(config: &Config) -> Secrets {
    Secrets::new(config_secrets(config))
}

/// The secret values of `config`: whatever a `${VAR}` put into a server's `env`, `headers` or
/// `url`, the credentials in its URL, and the values of its credential headers.
pub fn config_secrets(config: &Config) -> Vec<String> {
    let mut values = Vec::new();
    for server in &config.servers {
        values.extend(server.substituted.iter().cloned());
        match &server.transport {
            TransportConfig::Http {
                url,
                headers,
                remote,
            } => {
                values.extend(url_secrets(url));
                if let Some(secret) = &remote.oauth.client_secret {
                    values.push(secret.expose().to_owned());
                }
                for (name, value) in headers {
                    if is_credential_header(name) {
                        values.push(value.clone());
                        if let Some((_, credential)) = value.split_once(' ') {
                            values.push(credential.trim().to_owned());
                        }
                    }
                }
            }
            TransportConfig::Stdio { .. } => {}
        }
    }
    values
}

/// The values of a URL's query and its userinfo (user and password), as written and decoded.
fn url_secrets(url: &str) -> Vec<String> {
    let mut found = Vec::new();
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority_end = after_scheme
        .find(['/', '?', '#'])
        .unwrap_or(after_scheme.len());
    if let Some((userinfo, _)) = after_scheme[..authority_end].rsplit_once('@') {
        found.extend(userinfo.split(':').map(str::to_owned));
    }
    if let Some((_, query)) = url.split_once('?') {
        let query = query.split('#').next().unwrap_or_default();
        for pair in query.split('&') {
            if let Some((_, value)) = pair.split_once('=') {
                found.push(value.to_owned());
            }
        }
    }
    let decoded: Vec<String> = found
        .iter()
        .filter_map(|value| crate::redact::percent_decode(value))
        .collect();
    found.extend(decoded);
    found
}

/// Whether a header's name says its value is a credential.
fn is_credential_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "auth", "cookie", "key", "token", "secret", "password", "session",
    ]
    .iter()
    .any(|word| name.contains(word))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConfigSource, parse};

    #[test]
    fn every_kind_of_configured_secret_is_found() {
        let env = |name: &str| match name {
            "KEY" => Some("k3y-from-env".to_owned()),
            "TOKEN" => Some("bearer-t0ken".to_owned()),
            "SHORT" => Some("on".to_owned()),
            _ => None,
        };
        let text = serde_json::json!({"mcpServers": {
            "remote": {
                "url": "http://user:pa55word@127.0.0.1:9/mcp?api_key=${KEY}&plain=v%2Fs1&x=${SHORT}",
                "headers": {"Authorization": "Bearer ${TOKEN}", "X-Api-Key": "literal-key",
                            "Accept": "application/json"}
            },
            "local": {"command": "x", "env": {"GITHUB_TOKEN": "${TOKEN}"}}
        }})
        .to_string();
        let config = parse(&text, ConfigSource::File("c.json".into()), &env).unwrap();
        let secrets = secrets_of(&config);
        let said = "GET http://user:pa55word@127.0.0.1:9/mcp?api_key=k3y-from-env&plain=v%2Fs1 \
                    (authorization: Bearer bearer-t0ken, x-api-key: literal-key, \
                    accept: application/json, plain decoded: v/s1, short: on)";
        assert_eq!(
            secrets.redact(said),
            "GET http://[redacted]:[redacted]@127.0.0.1:9/mcp?api_key=[redacted]&plain=[redacted] \
             (authorization: [redacted], x-api-key: [redacted], \
             accept: application/json, plain decoded: [redacted], short: on)"
        );
    }
}
