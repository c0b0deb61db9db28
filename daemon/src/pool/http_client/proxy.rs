//! Proxies from the environment for remote servers' HTTP traffic (MCP and OAuth), as curl and
//! reqwest read them: `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY` (each also in
//! lowercase, the uppercase name first). The variables are read once, at the daemon's first
//! remote client, and travel as a [`Proxies`] value so tests build theirs from a map and never
//! touch the process's environment.
//!
//! The matching (which URL goes through which proxy, `NO_PROXY`'s hosts, domains and CIDR
//! ranges) is hyper-util's `Matcher`, the one reqwest 0.13 itself uses. An `https://` destination
//! is reached through a `CONNECT` tunnel (hyper-util's `Tunnel`, rustls on top as without a
//! proxy); a plain `http://` one is sent to the proxy in absolute form, with
//! `Proxy-Authorization` when the proxy URL has `user:password@`. Only `http://` proxy URLs are
//! taken: an `https://` or `socks5://` proxy is refused with the variable's name rather than
//! silently bypassed. A value is never echoed in an error (it may hold a password).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll};

use hyper::http::{HeaderValue, Uri};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// The proxy variables, in the order they are read; the uppercase name wins over the lowercase.
const VARIABLES: [(&str, &str); 4] = [
    ("ALL_PROXY", "all_proxy"),
    ("HTTPS_PROXY", "https_proxy"),
    ("HTTP_PROXY", "http_proxy"),
    ("NO_PROXY", "no_proxy"),
];

/// Why the proxy variables cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyConfigError {
    /// The variable's value is not a URL (the value is not repeated: it may hold a password).
    #[error(
        "the environment variable {variable} is not a valid proxy URL (expected http://host:port, optionally http://user:password@host:port)"
    )]
    Malformed { variable: String },
    /// The variable names a proxy of a kind this client does not speak.
    #[error(
        "the environment variable {variable} names a {scheme}:// proxy; only http:// proxies are supported (unset it or point it at an http:// proxy)"
    )]
    UnsupportedScheme { variable: String, scheme: String },
}

/// Which requests go through which proxy: a value built once from the environment.
#[derive(Clone, Debug)]
pub struct Proxies {
    matcher: Option<Arc<Matcher>>,
}

impl Proxies {
    /// No proxy at all.
    pub fn none() -> Proxies {
        Proxies { matcher: None }
    }

    /// The proxies the variables name, read through `lookup` (the environment in the daemon, a
    /// map in tests). Under CGI (`REQUEST_METHOD` set) `HTTP_PROXY` is ignored, as curl and
    /// reqwest do: there it may come from a request's `Proxy:` header ("httpoxy").
    pub fn from_variables(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Proxies, ProxyConfigError> {
        let under_cgi = lookup("REQUEST_METHOD").is_some();
        let mut values: [String; 4] = Default::default();
        for (slot, (upper, lower)) in values.iter_mut().zip(VARIABLES) {
            if under_cgi && upper == "HTTP_PROXY" {
                continue;
            }
            let found = [upper, lower]
                .into_iter()
                .find_map(|name| lookup(name).map(|value| (name, value)));
            if let Some((name, value)) = found {
                if upper != "NO_PROXY" {
                    check_proxy_url(name, &value)?;
                }
                *slot = value;
            }
        }
        let [all, https, http, no] = values;
        if all.is_empty() && https.is_empty() && http.is_empty() {
            return Ok(Proxies::none());
        }
        let matcher = Matcher::builder()
            .all(all)
            .https(https)
            .http(http)
            .no(no)
            .build();
        Ok(Proxies {
            matcher: Some(Arc::new(matcher)),
        })
    }

    /// The daemon's proxies, read from its environment once (on first use).
    pub fn from_process_environment() -> Result<Proxies, ProxyConfigError> {
        static READ_ONCE: LazyLock<Result<Proxies, ProxyConfigError>> =
            LazyLock::new(|| Proxies::from_variables(|name| std::env::var(name).ok()));
        READ_ONCE.clone()
    }

    /// The proxy a request to `destination` goes through, if any.
    fn intercept(&self, destination: &Uri) -> Option<Route> {
        let intercept = self.matcher.as_ref()?.intercept(destination)?;
        Some(Route {
            proxy: intercept.uri().clone(),
            authorization: intercept.basic_auth().cloned(),
        })
    }

    /// The `Proxy-Authorization` a plain-HTTP request to `destination` carries (the proxy sees
    /// the request itself; a tunnelled request carries it on the `CONNECT` instead).
    pub(super) fn authorization_for_plain_http(&self, destination: &Uri) -> Option<HeaderValue> {
        if destination.scheme_str() != Some("http") {
            return None;
        }
        self.intercept(destination)?.authorization
    }
}

/// Where one connection goes: the proxy's URL and its credentials.
struct Route {
    proxy: Uri,
    authorization: Option<HeaderValue>,
}

/// Refuses a proxy variable's value that is not an `http://` URL with a host (no scheme means
/// `http://`, as curl reads it). The value itself never enters the error.
fn check_proxy_url(variable: &str, value: &str) -> Result<(), ProxyConfigError> {
    if value.is_empty() {
        return Ok(());
    }
    let malformed = || ProxyConfigError::Malformed {
        variable: variable.to_owned(),
    };
    let uri: Uri = value.parse().map_err(|_| malformed())?;
    match uri.scheme_str() {
        None | Some("http") => {}
        Some(scheme) => {
            return Err(ProxyConfigError::UnsupportedScheme {
                variable: variable.to_owned(),
                scheme: scheme.to_ascii_lowercase(),
            });
        }
    }
    let authority = uri.authority().ok_or_else(malformed)?;
    let host = authority.host();
    if host.is_empty() {
        return Err(malformed());
    }
    Ok(())
}

/// The TCP connector under rustls: straight to the destination, or to the proxy (a `CONNECT`
/// tunnel for `https://`, the proxy itself for `http://`).
#[derive(Clone)]
pub(super) struct ProxyConnector {
    direct: HttpConnector,
    proxies: Proxies,
}

impl ProxyConnector {
    pub(super) fn new(proxies: Proxies) -> ProxyConnector {
        let mut direct = HttpConnector::new();
        // rustls above decides whether an https:// destination gets TLS; this one only dials.
        direct.enforce_http(false);
        ProxyConnector { direct, proxies }
    }
}

/// A connection from [`ProxyConnector`]: a TCP stream that tells hyper whether it goes to a
/// plain-HTTP proxy (then requests are written in absolute form).
pub(super) struct ProxiedStream {
    stream: TokioIo<TcpStream>,
    to_plain_http_proxy: bool,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower::Service<Uri> for ProxyConnector {
    type Response = ProxiedStream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<ProxiedStream, BoxError>> + Send>>;

    fn poll_ready(&mut self, context: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.direct.poll_ready(context).map_err(Into::into)
    }

    fn call(&mut self, destination: Uri) -> Self::Future {
        let mut direct = self.direct.clone();
        let route = self.proxies.intercept(&destination);
        Box::pin(async move {
            let Some(route) = route else {
                let stream = direct.call(destination).await?;
                return Ok(ProxiedStream {
                    stream,
                    to_plain_http_proxy: false,
                });
            };
            if destination.scheme_str() == Some("https") {
                let mut tunnel = Tunnel::new(route.proxy, direct);
                if let Some(authorization) = route.authorization {
                    tunnel = tunnel.with_auth(authorization);
                }
                let stream = tunnel.call(destination).await?;
                return Ok(ProxiedStream {
                    stream,
                    to_plain_http_proxy: false,
                });
            }
            let stream = direct.call(route.proxy).await?;
            Ok(ProxiedStream {
                stream,
                to_plain_http_proxy: true,
            })
        })
    }
}

impl Connection for ProxiedStream {
    fn connected(&self) -> Connected {
        self.stream.connected().proxy(self.to_plain_http_proxy)
    }
}

impl hyper::rt::Read for ProxiedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(context, buffer)
    }
}

impl hyper::rt::Write for ProxiedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(context, buffer)
    }

    fn poll_flush(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(context)
    }

    fn poll_shutdown(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(context)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffers: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(context, buffers)
    }
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
