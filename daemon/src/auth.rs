//! The bearer token: generating it, loading one a harness passes in, and checking requests.
//!
//! The check runs in a tower layer in front of jsonrpsee, so a request without the token is
//! answered 401 before its body is read. Tokens are compared in constant time over fixed-length
//! SHA-free digests: both sides are hex strings of a known length, so we compare the presented
//! bytes against the expected bytes with `subtle` after checking the length, which leaks only the
//! length (public: every token is 64 hex characters).

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::{Request, Response, StatusCode, header};
use jsonrpsee::server::{HttpBody, HttpRequest, HttpResponse};
use rand::RngExt as _;
use subtle::ConstantTimeEq;
use tool_cli_protocol::TOKEN_BYTES;

/// A bearer token, kept out of `Debug` output so it never reaches a log.
#[derive(Clone)]
pub struct Token(Arc<str>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// 32 bytes from the OS random number generator, as 64 hex characters.
    pub fn generate() -> Token {
        let bytes: [u8; TOKEN_BYTES] = rand::rng().random();
        Token(hex(&bytes).into())
    }

    /// A token given by the harness. It must be long enough to be unguessable and printable,
    /// because it travels in an HTTP header.
    pub fn from_text(text: &str) -> Result<Token, String> {
        let text = text.trim();
        if text.len() < 32 {
            return Err(format!(
                "the token is {} characters; expected at least 32 (e.g. 64 hex characters)",
                text.len()
            ));
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the token must be printable ASCII without spaces".to_owned());
        }
        Ok(Token(text.into()))
    }

    /// Reads a token from a file (its first line).
    pub fn from_file(path: &Path) -> Result<Token, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|err| format!("cannot read token file {}: {err}", path.display()))?;
        Token::from_text(text.lines().next().unwrap_or(""))
            .map_err(|err| format!("token file {}: {err}", path.display()))
    }

    /// The token text.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether an `Authorization` header value carries this token.
    pub fn matches_header(&self, header_value: &[u8]) -> bool {
        let Some(presented) = header_value.strip_prefix(b"Bearer ") else {
            return false;
        };
        let expected = self.0.as_bytes();
        // Length is not secret (all our tokens have the same length); the content is.
        presented.len() == expected.len() && bool::from(presented.ct_eq(expected))
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

/// Tower layer that refuses requests without the token.
#[derive(Clone)]
pub struct AuthLayer {
    token: Token,
}

impl AuthLayer {
    /// A layer checking for `token`.
    pub fn new(token: Token) -> AuthLayer {
        AuthLayer { token }
    }
}

impl<S> tower::Layer<S> for AuthLayer {
    type Service = AuthService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        AuthService {
            inner,
            token: self.token.clone(),
        }
    }
}

/// The service [`AuthLayer`] wraps around the RPC server.
#[derive(Clone)]
pub struct AuthService<S> {
    inner: S,
    token: Token,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> tower::Service<HttpRequest<B>> for AuthService<S>
where
    S: tower::Service<HttpRequest<B>, Response = HttpResponse> + Send,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = HttpResponse;
    type Error = S::Error;
    type Future = BoxFuture<Result<HttpResponse, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let mut authorized = request
            .headers()
            .get_all(header::AUTHORIZATION)
            .iter()
            .map(|value| self.token.matches_header(value.as_bytes()));
        // Exactly one Authorization header, and it must match: a duplicated header is refused
        // rather than letting either copy win.
        let ok = matches!((authorized.next(), authorized.next()), (Some(true), None));
        if !ok {
            return Box::pin(async { Ok(unauthorized()) });
        }
        Box::pin(self.inner.call(request))
    }
}

fn unauthorized() -> HttpResponse {
    Response::builder()
        .status(StatusCode::UNAUTHORIZED)
        .header(header::WWW_AUTHENTICATE, "Bearer")
        .body(HttpBody::empty())
        .expect("static response parts are valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_64_hex_and_distinct() {
        let a = Token::generate();
        let b = Token::generate();
        assert_eq!(a.expose().len(), 64);
        assert!(a.expose().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.expose(), b.expose());
        assert_eq!(format!("{a:?}"), "Token(<redacted>)");
    }

    #[test]
    fn header_must_match_exactly() {
        let token = Token::from_text(&"ab".repeat(32)).unwrap();
        let good = format!("Bearer {}", "ab".repeat(32));
        assert!(token.matches_header(good.as_bytes()));
        assert!(!token.matches_header(good.to_uppercase().as_bytes()));
        assert!(!token.matches_header(&good.as_bytes()[..good.len() - 1]));
        assert!(!token.matches_header(format!("{good}a").as_bytes()));
        assert!(!token.matches_header(format!("{good} ").as_bytes()));
        assert!(!token.matches_header("ab".repeat(32).as_bytes()));
        assert!(!token.matches_header(b"Bearer "));
    }

    #[test]
    fn harness_tokens_must_be_long_and_printable() {
        assert!(Token::from_text("short").is_err());
        assert!(Token::from_text(&format!("{} x", "a".repeat(40))).is_err());
        assert!(Token::from_text(&format!("  {}\n", "a".repeat(40))).is_ok());
    }
}
