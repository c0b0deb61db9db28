//! HTTP/1.1 over loopback, by hand: one request per connection, so a test can send exactly the
//! bytes it wants (a malformed body, a wrong token), and the token helpers of the identity proof.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

use tool_cli_protocol::Response;

use crate::REQUEST_TIMEOUT;

/// POSTs `body` to `127.0.0.1:port` at `path` with `headers`; returns the status and the body.
/// A minimal HTTP/1.1 client: one request per connection, `Content-Length` or chunked bodies.
/// Panics on any I/O failure; [`try_http_post`] returns it instead.
pub fn http_post(port: u16, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, Vec<u8>) {
    try_http_post(port, path, headers, body)
        .unwrap_or_else(|err| panic!("POST {path} to 127.0.0.1:{port}: {err}"))
}

/// [`http_post`] that reports a refused, reset or malformed exchange as an error, for tests where
/// an unanswered request is the outcome under test (a daemon shutting down mid-request).
pub fn try_http_post(
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<(u16, Vec<u8>)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    stream.set_write_timeout(Some(REQUEST_TIMEOUT))?;
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;

    let response = read_http_response(&mut BufReader::new(stream))?;
    Ok((response.status, response.body))
}

/// One HTTP/1.1 response as read off the wire, headers included (for the tests of the HTTP
/// gate, which look at statuses and headers, not only at bodies).
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Every header, in order, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(candidate, _)| candidate.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// Reads one HTTP/1.1 response: the status line, the headers, and a `Content-Length`, chunked or
/// read-until-close body.
pub fn read_http_response(reader: &mut impl BufRead) -> std::io::Result<HttpResponse> {
    let malformed = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    let mut status_line = String::new();
    if reader.read_line(&mut status_line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the connection closed without a response",
        ));
    }
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| malformed(format!("bad HTTP status line {status_line:?}")))?;
    let mut headers = Vec::new();
    let mut content_length = None;
    let mut chunked = false;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(malformed("the connection closed inside the headers".into()));
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            content_length = value.parse::<usize>().ok();
        } else if name.eq_ignore_ascii_case("transfer-encoding")
            && value.to_ascii_lowercase().contains("chunked")
        {
            chunked = true;
        }
        headers.push((name.to_owned(), value.to_owned()));
    }
    let mut body = Vec::new();
    if status == 204 || status == 304 {
        // No body by definition.
    } else if chunked {
        loop {
            let mut size_line = String::new();
            reader.read_line(&mut size_line)?;
            let size_text = size_line.trim().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| malformed(format!("bad chunk size line {size_line:?}")))?;
            if size == 0 {
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..])?;
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf)?;
        }
    } else if let Some(length) = content_length {
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
    } else {
        reader.read_to_end(&mut body)?;
    }
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}

/// Sends one HTTP request whose answer is a stream (an SSE answer, the standalone `GET` stream)
/// and reads its head, asserting a 200; the open connection, positioned at the body, with reads
/// bounded by `wait`, and whether the answer's `Content-Type` is `text/event-stream`.
pub fn open_http_stream(
    port: u16,
    request: &[u8],
    wait: std::time::Duration,
) -> (BufReader<TcpStream>, bool) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(wait)).unwrap();
    stream.write_all(request).unwrap();
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.contains(" 200 "), "{status}");
    let mut event_stream = false;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        event_stream |= line
            .to_ascii_lowercase()
            .starts_with("content-type: text/event-stream");
        if line == "\r\n" || line.is_empty() {
            return (reader, event_stream);
        }
    }
}

/// The bytes of one HTTP/1.1 request with exactly `headers` plus `Content-Length` (the body's)
/// and `Connection: close`: no `Host`, no `Content-Type` unless given, so a test of the HTTP gate
/// controls every header the daemon sees.
pub fn http_request_bytes(
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let mut request = format!("{method} {target} HTTP/1.1\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// Sends the raw bytes of one HTTP request to `127.0.0.1:port` and reads one response. A daemon
/// may answer (413, 401) and close before the whole request is written; the response is read all
/// the same.
pub fn raw_http_exchange(port: u16, request: &[u8]) -> std::io::Result<HttpResponse> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    stream.set_write_timeout(Some(REQUEST_TIMEOUT))?;
    let written = stream.write_all(request).and_then(|()| stream.flush());
    match read_http_response(&mut BufReader::new(stream)) {
        Ok(response) => Ok(response),
        Err(read_error) => Err(written.err().unwrap_or(read_error)),
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `count` random bytes from the OS, as lowercase hex (nonces, unguessable tokens).
pub fn random_hex(count: usize) -> String {
    let mut bytes = vec![0u8; count];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut urandom| urandom.read_exact(&mut bytes))
        .expect("read /dev/urandom");
    hex(&bytes)
}

/// The public id of a token (`tool_cli_protocol::identity::TOKEN_ID_RULE`): the first 8 bytes of
/// its SHA-256, as 16 lowercase hex characters.
pub fn token_id(token: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(token.as_bytes());
    hex(&digest[..8])
}

/// The proof a daemon holding `token` must answer `POST /identity` with: HMAC-SHA256 keyed by
/// the token over `tool_cli_protocol::identity::message(nonce, host)`, as lowercase hex.
pub fn identity_proof(token: &str, nonce: &str, host: &str) -> String {
    use hmac::{KeyInit as _, Mac as _};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(token.as_bytes())
        .expect("HMAC takes a key of any length");
    mac.update(tool_cli_protocol::identity::message(nonce, host).as_bytes());
    hex(&mac.finalize().into_bytes())
}

/// Parses a JSON-RPC 2.0 response body, panicking with the body when it is not one.
pub fn parse_response(body: &[u8]) -> Response {
    let response: Response = serde_json::from_slice(body).unwrap_or_else(|err| {
        panic!(
            "not a JSON-RPC response ({err}): {}",
            String::from_utf8_lossy(body)
        )
    });
    assert_eq!(response.jsonrpc, "2.0", "jsonrpc member");
    assert!(
        response.result.is_some() != response.error.is_some(),
        "exactly one of result and error: {}",
        String::from_utf8_lossy(body)
    );
    response
}
