//! Token files: one per server, `<state dir>/oauth/<server>.json`, 0600 in a 0700 directory,
//! written to a temporary file and renamed so a crash never leaves half a token behind.
//!
//! A file holds what a refresh needs (token endpoint, client id and secret, refresh token) besides
//! the access token, and the server URL it was issued for: after the URL changes in the config,
//! the old tokens are not sent to the new address.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A server's tokens and what is needed to renew them.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StoredTokens {
    /// The MCP server URL the tokens were issued for.
    pub(crate) server_url: String,
    /// The resource indicator sent with every grant (RFC 8707).
    pub(crate) resource: String,
    pub(crate) issuer: String,
    pub(crate) token_endpoint: String,
    pub(crate) client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
    /// The secret goes in the token request's form (`client_secret_post`).
    #[serde(default)]
    pub(crate) secret_in_body: bool,
    pub(crate) access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refresh_token: Option<String>,
    /// Unix seconds; `None` when the authorization server did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) scope: Option<String>,
}

impl std::fmt::Debug for StoredTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Tokens and secrets never reach a log line through `{:?}`.
        f.debug_struct("StoredTokens")
            .field("server_url", &self.server_url)
            .field("issuer", &self.issuer)
            .field("expires_at", &self.expires_at)
            .field("refreshable", &self.refresh_token.is_some())
            .finish_non_exhaustive()
    }
}

/// A token whose remaining life is under this is renewed before it is sent.
pub(crate) const REFRESH_MARGIN_SECS: u64 = 60;

impl StoredTokens {
    /// Whether the access token should be renewed before use at `now` (Unix seconds).
    pub(crate) fn needs_refresh(&self, now: u64) -> bool {
        self.expires_at
            .is_some_and(|expires_at| expires_at <= now.saturating_add(REFRESH_MARGIN_SECS))
    }

    /// Whether the access token has expired at `now`.
    pub(crate) fn expired(&self, now: u64) -> bool {
        self.expires_at.is_some_and(|expires_at| expires_at <= now)
    }
}

/// The directory of token files.
#[derive(Debug, Clone)]
pub(crate) struct TokenFiles {
    dir: PathBuf,
}

impl TokenFiles {
    pub(crate) fn new(dir: PathBuf) -> TokenFiles {
        TokenFiles { dir }
    }

    /// Where a server's tokens live (server names are a safe alphabet: `config.rs` checks).
    pub(crate) fn path(&self, server: &str) -> PathBuf {
        self.dir.join(format!("{server}.json"))
    }

    /// A server's tokens, if a readable file holds them; a corrupt file counts as none (and is
    /// reported in the log).
    pub(crate) fn load(&self, server: &str) -> Option<StoredTokens> {
        let path = self.path(server);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
            Err(err) => {
                tracing::warn!(server, path = %path.display(), %err, "cannot read the token file");
                return None;
            }
        };
        match serde_json::from_slice(&bytes) {
            Ok(tokens) => Some(tokens),
            Err(err) => {
                tracing::warn!(server, path = %path.display(), %err, "ignoring a corrupt token file");
                None
            }
        }
    }

    /// Writes a server's tokens (0600, atomically).
    pub(crate) fn save(&self, server: &str, tokens: &StoredTokens) -> std::io::Result<()> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let path = self.path(server);
        let temporary = self
            .dir
            .join(format!(".{server}.json.{}", std::process::id()));
        let _ = std::fs::remove_file(&temporary);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temporary)?;
        let text = serde_json::to_vec_pretty(tokens).map_err(std::io::Error::other)?;
        file.write_all(&text)?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)
    }

    /// Deletes a server's tokens; whether there were any.
    pub(crate) fn remove(&self, server: &str) -> std::io::Result<bool> {
        match std::fs::remove_file(self.path(server)) {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// The directory (for messages).
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn tokens(expires_at: Option<u64>) -> StoredTokens {
        StoredTokens {
            server_url: "https://h/mcp".into(),
            resource: "https://h/mcp".into(),
            issuer: "https://as".into(),
            token_endpoint: "https://as/token".into(),
            client_id: "c".into(),
            client_secret: None,
            secret_in_body: false,
            access_token: "secret-access".into(),
            refresh_token: Some("secret-refresh".into()),
            expires_at,
            scope: None,
        }
    }

    #[test]
    fn tokens_are_renewed_a_minute_before_they_expire() {
        assert!(!tokens(None).needs_refresh(1_000));
        assert!(!tokens(Some(1_061)).needs_refresh(1_000));
        assert!(tokens(Some(1_060)).needs_refresh(1_000));
        assert!(!tokens(Some(1_001)).expired(1_000));
        assert!(tokens(Some(1_000)).expired(1_000));
    }

    #[test]
    fn files_are_private_and_round_trip() {
        let dir = std::env::temp_dir().join(format!("oauth-store-{}", std::process::id()));
        let files = TokenFiles::new(dir.join("oauth"));
        assert!(files.load("s").is_none());
        files.save("s", &tokens(Some(5))).unwrap();
        assert_eq!(files.load("s"), Some(tokens(Some(5))));
        let mode = std::fs::metadata(files.path("s"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = std::fs::metadata(files.dir()).unwrap().permissions().mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        assert!(!format!("{:?}", tokens(None)).contains("secret"));
        assert!(files.remove("s").unwrap());
        assert!(!files.remove("s").unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
