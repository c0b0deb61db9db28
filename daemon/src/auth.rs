//! Tokens: the owner token, scoped child tokens minted from it, and looking a request's token up.
//!
//! A presented token is hashed (SHA-256) before anything is compared, so every comparison is of
//! two fixed-length digests: the owner's in constant time (`subtle`), minted ones by a map lookup
//! on the digest, which tells an attacker nothing because choosing a digest would mean inverting
//! SHA-256. Token secrets never leave this module except in `mintToken`'s answer, and `Token`'s
//! `Debug` is redacted so none reaches a log.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit as _, Mac as _};
use rand::RngExt as _;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq;
use tool_cli_protocol::TOKEN_BYTES;
use tool_cli_protocol::methods::{MintTokenParams, MintTokenResult, TokenInfo};

use crate::policy::{PolicyError, Scope};

/// A bearer token, kept out of `Debug` output so it never reaches a log.
#[derive(Clone)]
pub struct Token(Arc<str>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// Why a token given by the harness cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// Too short to be unguessable.
    #[error("the token is {length} characters; expected at least 32 (e.g. 64 hex characters)")]
    TooShort { length: usize },
    /// It would not survive an HTTP header.
    #[error("the token must be printable ASCII without spaces")]
    NotPrintable,
    /// The token file may be written by someone else (the message names the file and why).
    #[error(transparent)]
    UnsafeFile(#[from] crate::config::PrivateFileError),
    /// The token file could not be read.
    #[error("cannot read token file {}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The token file's first line is not a usable token.
    #[error("token file {}: {source}", path.display())]
    InFile {
        path: PathBuf,
        source: Box<TokenError>,
    },
}

impl Token {
    /// 32 bytes from the OS random number generator, as 64 hex characters.
    pub fn generate() -> Token {
        let bytes: [u8; TOKEN_BYTES] = rand::rng().random();
        Token(hex(&bytes).into())
    }

    /// A token given by the harness. It must be long enough to be unguessable and printable,
    /// because it travels in an HTTP header.
    pub fn from_text(text: &str) -> Result<Token, TokenError> {
        let text = text.trim();
        if text.len() < 32 {
            return Err(TokenError::TooShort { length: text.len() });
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(TokenError::NotPrintable);
        }
        Ok(Token(text.into()))
    }

    /// Reads a token from a file (its first line). The file must not be writable by anyone but
    /// its owner: whoever can write it can choose the daemon's token.
    pub fn from_file(path: &Path) -> Result<Token, TokenError> {
        crate::config::check_private(path, "token file").map_err(TokenError::UnsafeFile)?;
        let text = std::fs::read_to_string(path).map_err(|source| TokenError::Unreadable {
            path: path.to_owned(),
            source,
        })?;
        Token::from_text(text.lines().next().unwrap_or("")).map_err(|source| TokenError::InFile {
            path: path.to_owned(),
            source: Box::new(source),
        })
    }

    /// The token text.
    pub fn expose(&self) -> &str {
        &self.0
    }

    fn digest(&self) -> [u8; 32] {
        Sha256::digest(self.0.as_bytes()).into()
    }

    /// The public id: the first 8 bytes of the SHA-256 digest, as hex.
    pub fn id(&self) -> String {
        hex(&self.digest()[..8])
    }

    /// The identity proof for a nonce and the `Host` the client dialed.
    pub fn prove(&self, nonce_hex: &str, host: &str) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(self.0.as_bytes())
            .expect("HMAC takes keys of any length");
        mac.update(tool_cli_protocol::identity::message(nonce_hex, host).as_bytes());
        hex(&mac.finalize().into_bytes())
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)] as char);
        out.push(DIGITS[usize::from(byte & 0xf)] as char);
    }
    out
}

/// What a request's token allows: attached to the request by the gate, read by the handlers.
#[derive(Debug, Clone)]
pub struct Grant {
    /// The token's public id.
    pub token_id: String,
    /// Whether it is the owner token (which alone may mint and revoke).
    pub is_owner: bool,
    /// What it may see and call.
    pub scope: Arc<Scope>,
}

struct Minted {
    token: Token,
    /// `token.id()`, kept: every request with this token needs it.
    id: String,
    scope: Arc<Scope>,
    label: Option<String>,
    /// The MCP gateway's mode for its sessions when the host names none.
    gateway_mode: Option<tool_cli_protocol::methods::GatewayMode>,
}

/// The owner token and every minted token.
pub struct TokenStore {
    owner: Token,
    /// `owner.id()`, kept: every request with the owner token needs it.
    owner_id: String,
    owner_scope: Arc<Scope>,
    /// Minted tokens by the digest of their secret; a std lock, never held across an await.
    minted: RwLock<HashMap<[u8; 32], Minted>>,
}

impl std::fmt::Debug for TokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenStore").finish_non_exhaustive()
    }
}

/// Seconds since the Unix epoch.
fn epoch_seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl TokenStore {
    /// A store whose owner token is `owner`.
    pub fn new(owner: Token) -> TokenStore {
        TokenStore {
            owner_id: owner.id(),
            owner,
            owner_scope: Arc::new(Scope::unrestricted()),
            minted: RwLock::new(HashMap::new()),
        }
    }

    /// The owner token.
    pub fn owner(&self) -> &Token {
        &self.owner
    }

    /// The owner's grant, for work the daemon does on the owner's behalf (a reload on SIGHUP).
    pub fn owner_grant(&self) -> Grant {
        Grant {
            token_id: self.owner_id.clone(),
            is_owner: true,
            scope: Arc::clone(&self.owner_scope),
        }
    }

    /// The grant of an `Authorization` header value, if it carries a live token.
    pub fn authenticate(&self, header_value: &[u8], now: SystemTime) -> Option<Grant> {
        let presented = header_value.strip_prefix(b"Bearer ")?;
        // The owner token, on nearly every request, is compared as it is, in constant time
        // (a length that differs answers at once: the length is no secret). Minted tokens are
        // found by the digest of their secret.
        if bool::from(presented.ct_eq(self.owner.expose().as_bytes())) {
            return Some(Grant {
                token_id: self.owner_id.clone(),
                is_owner: true,
                scope: Arc::clone(&self.owner_scope),
            });
        }
        let digest: [u8; 32] = Sha256::digest(presented).into();
        let minted = self.minted.read().unwrap();
        let entry = minted.get(&digest)?;
        if entry.scope.is_expired(now) {
            return None;
        }
        Some(Grant {
            token_id: entry.id.clone(),
            is_owner: false,
            scope: Arc::clone(&entry.scope),
        })
    }

    /// The live token with this public id, for the identity proof.
    pub fn by_id(&self, id: &str, now: SystemTime) -> Option<Token> {
        if self.owner_id == id {
            return Some(self.owner.clone());
        }
        self.minted
            .read()
            .unwrap()
            .values()
            .find(|entry| entry.id == id && !entry.scope.is_expired(now))
            .map(|entry| entry.token.clone())
    }

    /// Mints a scoped token.
    pub fn mint(
        &self,
        params: MintTokenParams,
        now: SystemTime,
    ) -> Result<MintTokenResult, PolicyError> {
        let scope = Scope::from_params(
            params.servers,
            params.tools,
            params.resources,
            params.read_only,
            params.ttl_seconds,
            now,
        )?
        .with_prompts(params.prompts)?;
        let token = Token::generate();
        let result = MintTokenResult {
            token: token.expose().to_owned(),
            token_id: token.id(),
            scope: scope.describe(now),
            expires_at: scope.expires_at.map(epoch_seconds),
        };
        let mut minted = self.minted.write().unwrap();
        // Forget expired tokens while we are here, so the map never grows without bound.
        minted.retain(|_, entry| !entry.scope.is_expired(now));
        minted.insert(
            token.digest(),
            Minted {
                id: token.id(),
                token,
                scope: Arc::new(scope),
                label: params.label,
                gateway_mode: params.gateway_mode,
            },
        );
        Ok(result)
    }

    /// The MCP gateway mode minted with the live token `token_id`, if one was.
    pub fn gateway_mode(&self, token_id: &str) -> Option<tool_cli_protocol::methods::GatewayMode> {
        let minted = self.minted.read().unwrap();
        minted
            .values()
            .find(|entry| entry.id == token_id)
            .and_then(|entry| entry.gateway_mode)
    }

    /// Revokes a minted token; false when no live token has that id.
    pub fn revoke(&self, token_id: &str) -> bool {
        let mut minted = self.minted.write().unwrap();
        let before = minted.len();
        minted.retain(|_, entry| entry.id != token_id);
        minted.len() != before
    }

    /// Every live minted token, without secrets.
    pub fn list(&self, now: SystemTime) -> Vec<TokenInfo> {
        let minted = self.minted.read().unwrap();
        let mut tokens: Vec<TokenInfo> = minted
            .values()
            .filter(|entry| !entry.scope.is_expired(now))
            .map(|entry| TokenInfo {
                token_id: entry.id.clone(),
                scope: entry.scope.describe(now),
                label: entry.label.clone(),
                expires_at: entry.scope.expires_at.map(epoch_seconds),
            })
            .collect();
        tokens.sort_by(|a, b| a.token_id.cmp(&b.token_id));
        tokens
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn generated_tokens_are_64_hex_and_distinct() {
        let a = Token::generate();
        let b = Token::generate();
        assert_eq!(a.expose().len(), 64);
        assert!(a.expose().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.expose(), b.expose());
        assert_eq!(format!("{a:?}"), "Token(<redacted>)");
        assert_eq!(a.id().len(), 16);
    }

    #[test]
    fn a_token_that_cannot_be_used_says_why() {
        let short = Token::from_text("abc").unwrap_err();
        assert!(
            matches!(short, TokenError::TooShort { length: 3 }),
            "{short:?}"
        );
        assert_eq!(
            short.to_string(),
            "the token is 3 characters; expected at least 32 (e.g. 64 hex characters)"
        );
        let spaced =
            Token::from_text(&format!("{} {}", "a".repeat(20), "b".repeat(20))).unwrap_err();
        assert!(matches!(spaced, TokenError::NotPrintable), "{spaced:?}");
        let missing = Token::from_file(Path::new("/nonexistent/tool-cli/token")).unwrap_err();
        assert!(
            missing.to_string().contains("/nonexistent/tool-cli/token"),
            "{missing}"
        );
    }

    #[test]
    fn proof_and_id_match_independent_vectors() {
        // Computed with Python: hashlib.sha256(b"a"*64).hexdigest()[:16], and
        // hmac.new(b"a"*64, b"tool-cli-identity-v1\n" + b"0"*64 + b"\n127.0.0.1:4000",
        //          hashlib.sha256).hexdigest()
        let token = Token::from_text(&"a".repeat(64)).unwrap();
        assert_eq!(token.id(), EXPECTED_ID);
        assert_eq!(
            token.prove(&"0".repeat(64), "127.0.0.1:4000"),
            EXPECTED_PROOF
        );
    }

    const EXPECTED_ID: &str = "ffe054fe7ae0cb6d";
    const EXPECTED_PROOF: &str = "05aa51204e0feab9a11826a8769a1bef4911a9da701ad4c591c44e984ce478b0";

    #[test]
    fn only_exact_live_tokens_authenticate() {
        let store = TokenStore::new(Token::from_text(&"ab".repeat(32)).unwrap());
        let now = SystemTime::now();
        let good = format!("Bearer {}", "ab".repeat(32));
        let owner = store.authenticate(good.as_bytes(), now).unwrap();
        assert!(owner.is_owner);
        assert_eq!(owner.token_id, store.owner().id());
        for bad in [
            good.to_uppercase(),
            good[..good.len() - 1].to_owned(),
            format!("{good}a"),
            format!("{good} "),
            "ab".repeat(32),
            "Bearer ".to_owned(),
            format!("bearer {}", "ab".repeat(32)),
        ] {
            assert!(store.authenticate(bad.as_bytes(), now).is_none(), "{bad}");
        }

        let minted = store
            .mint(
                MintTokenParams {
                    servers: Some(vec!["demo".into()]),
                    read_only: true,
                    ttl_seconds: Some(60),
                    label: Some("sub-agent".into()),
                    gateway_mode: Some(tool_cli_protocol::methods::GatewayMode::Progressive),
                    ..MintTokenParams::default()
                },
                now,
            )
            .unwrap();
        assert_eq!(
            store.gateway_mode(&minted.token_id),
            Some(tool_cli_protocol::methods::GatewayMode::Progressive)
        );
        assert_eq!(store.gateway_mode("0000000000000000"), None);
        let header = format!("Bearer {}", minted.token);
        let grant = store.authenticate(header.as_bytes(), now).unwrap();
        assert!(!grant.is_owner);
        assert_eq!(grant.token_id, minted.token_id);
        assert!(grant.scope.permits_server("demo"));
        assert!(!grant.scope.permits_server("other"));
        assert_eq!(store.list(now).len(), 1);
        assert_eq!(store.list(now)[0].label.as_deref(), Some("sub-agent"));
        assert!(store.by_id(&minted.token_id, now).is_some());

        // Expired: refused, and not offered for the identity proof.
        let later = now + Duration::from_secs(61);
        assert!(store.authenticate(header.as_bytes(), later).is_none());
        assert!(store.by_id(&minted.token_id, later).is_none());

        // Revoked: refused.
        assert!(store.revoke(&minted.token_id));
        assert!(!store.revoke(&minted.token_id));
        assert!(store.authenticate(header.as_bytes(), now).is_none());
    }
}
