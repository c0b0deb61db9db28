//! The same link as [`super::DaemonLink`] over a blocking `std::net` TCP socket, with no async
//! runtime at all: for a command that makes its requests one after another and does nothing
//! beside them (the plain `tool-cli SERVER TOOL ARGS` call, listings, a schema).
//!
//! Building and dropping a tokio runtime (its I/O driver, timer wheel and signal driver) and
//! driving hyper's connection task is a measurable share of a process that lives about a
//! millisecond (docs/benchmarks.md, "P1: client start-up"); a request and its answer over a
//! blocking socket need none of it. Everything that decides something is shared with the async
//! link: the identity proof is asked and checked the same way before the token is sent (or
//! skipped only when the caller vouched for the listener, [`crate::vouch`]), answers are
//! decoded by the same [`super::decode_response`], and failures map to the same [`Error`]s.
//! Each request is bounded by a deadline: every read and write gets the time left as its
//! socket timeout.
//!
//! Only HTTP/1.1 as the daemon speaks it is read: a status line, headers, and a body framed by
//! `Content-Length`, by chunks, or by the end of the connection.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use hyper::StatusCode;
use serde::Serialize;
use serde_json::Value;

use super::{
    IDENTITY_ANSWER_LIMIT, Identity, IdentityAnswer, check_identity_answer, connect_failure,
    decode_response,
};
use crate::endpoint::{Endpoint, Target};
use crate::error::Error;
use crate::identity;

/// Largest response head read: the daemon's are a few hundred bytes.
const HEAD_LIMIT: usize = 64 * 1024;

/// A kept-alive HTTP/1.1 connection on a blocking socket whose listener passed the identity
/// check.
pub(crate) struct BlockingLink {
    stream: TcpStream,
    /// Bytes read past the end of the last answer (none from a daemon that answers one request
    /// at a time, but kept rather than lost).
    unread: Vec<u8>,
    target: Target,
    authorization: String,
    host_header: String,
    identity: Identity,
    next_id: u64,
    /// Set once the daemon said it closes the connection, or closed it.
    closed: bool,
}

/// Why an exchange failed, before it is given its meaning for the request at hand.
#[derive(Debug)]
enum ExchangeError {
    /// The deadline passed.
    TimedOut,
    /// The socket failed or the peer closed it before the answer was whole.
    Io(std::io::Error),
    /// The same, before a single byte of the answer arrived.
    Unanswered(std::io::Error),
    /// The answer is not HTTP/1.1 as expected, or is larger than allowed.
    Malformed(String),
}

/// Whether `target` can be reached by this link: a TCP address given as an IP address (a host
/// name would need a resolver, and a Unix socket has no connect timeout in `std`).
pub(crate) fn can_reach(target: &Target) -> bool {
    socket_address(target).is_some()
}

fn socket_address(target: &Target) -> Option<SocketAddr> {
    match target {
        Target::Tcp { host, port } => host
            .parse::<std::net::IpAddr>()
            .ok()
            .map(|ip| SocketAddr::new(ip, *port)),
        Target::Unix { .. } => None,
    }
}

impl BlockingLink {
    /// [`super::DaemonLink::connect`] on a blocking socket: connects within `connect_timeout`
    /// and, unless `vouched`, has the listener prove it holds the token within
    /// `identity_timeout`. The token is not sent by this function.
    pub(crate) fn connect(
        endpoint: &Endpoint,
        connect_timeout: Duration,
        identity_timeout: Duration,
        require_identity: bool,
        vouched: bool,
    ) -> Result<BlockingLink, Error> {
        let target = &endpoint.target;
        let Some(address) = socket_address(target) else {
            return Err(Error::Other(format!(
                "the blocking transport cannot reach {}",
                target.describe()
            )));
        };
        let stream = TcpStream::connect_timeout(&address, connect_timeout).map_err(|error| {
            let timed_out = error.kind() == std::io::ErrorKind::TimedOut;
            connect_failure(endpoint, connect_timeout, (!timed_out).then_some(error))
        })?;
        // Requests are small and sent whole; waiting for Nagle would only add latency.
        let _ = stream.set_nodelay(true);
        let mut link = BlockingLink {
            stream,
            unread: Vec::new(),
            target: target.clone(),
            authorization: format!("Bearer {}", endpoint.token),
            host_header: target.host_header(),
            identity: Identity::Vouched,
            next_id: 1,
            closed: false,
        };
        if !vouched {
            link.identity =
                link.prove_identity(&endpoint.token, require_identity, identity_timeout)?;
        }
        Ok(link)
    }

    /// How the listener passed the identity check.
    pub(crate) fn identity(&self) -> Identity {
        self.identity
    }

    /// Whether the connection has ended: a new request needs a new link then.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// Sends one JSON-RPC request and waits at most `timeout` for its response. After a
    /// timeout the link must be dropped: its connection still carries the abandoned request.
    pub(crate) fn call<P: Serialize>(
        &mut self,
        method: &str,
        params: Option<P>,
        timeout: Duration,
    ) -> Result<Value, Error> {
        // The header is written by hand here: a token with a control character (a line break
        // pasted with it) must not end the header early, and hyper refuses it the same way.
        if !is_header_value(&self.authorization) {
            return Err(Error::Other(
                "cannot build the HTTP request: failed to parse header value".to_owned(),
            ));
        }
        let id = self.next_id;
        self.next_id += 1;
        let request = tool_cli_protocol::Request::new(id, method, params);
        let body = serde_json::to_vec(&request).map_err(|error| {
            Error::Other(format!("cannot encode the {method} request: {error}"))
        })?;
        let mut headers = format!(
            "authorization: {}\r\ncontent-type: application/json\r\naccept: application/json\r\n",
            self.authorization
        );
        // The script's trace continues through the daemon (`trace_context.rs`); both values
        // were checked to be header values.
        if let Some(context) = crate::trace_context::from_environment() {
            headers.push_str(&format!("traceparent: {}\r\n", context.traceparent));
            if let Some(state) = &context.tracestate {
                headers.push_str(&format!("tracestate: {state}\r\n"));
            }
        }
        let deadline = Instant::now() + timeout;
        // On a vouched link nothing has been asked of the daemon before this first request: a
        // connection it ends before answering was most likely never served (its cap).
        let first_unchecked = id == 1 && matches!(self.identity, Identity::Vouched);
        match self.exchange("/", &headers, &body, deadline, None) {
            Ok((status, bytes)) => decode_response(method, status, &bytes),
            Err(ExchangeError::TimedOut) => Err(Error::Timeout {
                method: method.to_owned(),
                timeout_ms: timeout.as_millis() as u64,
            }),
            Err(ExchangeError::Unanswered(error)) if first_unchecked => {
                Err(Error::ClosedUnanswered {
                    address: self.target.describe(),
                    reason: lost_reason(&error),
                })
            }
            Err(ExchangeError::Io(error) | ExchangeError::Unanswered(error)) => {
                Err(Error::Transport(error.to_string()))
            }
            Err(ExchangeError::Malformed(reason)) => Err(Error::Transport(reason)),
        }
    }

    /// `POST /identity` with a fresh nonce and the token's id, no `Authorization`.
    fn prove_identity(
        &mut self,
        token: &str,
        require_identity: bool,
        timeout: Duration,
    ) -> Result<Identity, Error> {
        use tool_cli_protocol::identity::{NONCE_HEADER, PATH, TOKEN_ID_HEADER};
        let nonce = identity::new_nonce().map_err(|error| {
            Error::Other(format!(
                "cannot read random bytes for the identity check from /dev/urandom: {error}"
            ))
        })?;
        let headers = format!(
            "content-type: application/json\r\naccept: application/json\r\n{NONCE_HEADER}: \
             {nonce}\r\n{TOKEN_ID_HEADER}: {}\r\n",
            identity::token_id(token)
        );
        let deadline = Instant::now() + timeout;
        let (status, body) =
            match self.exchange(PATH, &headers, &[], deadline, Some(IDENTITY_ANSWER_LIMIT)) {
                Ok(answer) => answer,
                Err(ExchangeError::TimedOut) => {
                    return Err(self.unproven(format!(
                        "it did not answer POST {PATH} within {} ms",
                        timeout.as_millis()
                    )));
                }
                // A listener that closes or resets the connection instead of answering is most
                // likely our daemon at its connection limit: "cannot reach", not "impostor".
                Err(ExchangeError::Io(error) | ExchangeError::Unanswered(error)) => {
                    return Err(self.lost(&error));
                }
                Err(ExchangeError::Malformed(reason)) => {
                    return Err(self.unproven(format!("its answer cannot be read: {reason}")));
                }
            };
        match check_identity_answer(status, &body, token, &nonce, &self.host_header) {
            IdentityAnswer::Proven => Ok(Identity::Proven),
            IdentityAnswer::NotServed if !require_identity => Ok(Identity::NotServed {
                status: status.as_u16(),
            }),
            IdentityAnswer::NotServed => Err(Error::NoIdentityProof {
                address: self.target.describe(),
                status: status.as_u16(),
            }),
            IdentityAnswer::UnknownToken => Err(Error::UnknownToken {
                address: self.target.describe(),
            }),
            IdentityAnswer::Wrong(reason) => Err(self.unproven(reason)),
        }
    }

    fn unproven(&self, reason: String) -> Error {
        Error::IdentityUnproven {
            address: self.target.describe(),
            unix_socket: false,
            reason,
        }
    }

    fn lost(&self, error: &std::io::Error) -> Error {
        Error::ConnectionLost {
            address: self.target.describe(),
            reason: lost_reason(error),
        }
    }

    /// Sends `POST path` with `headers` (each line ending in CRLF) and `body`, and reads the
    /// answer's status and body (at most `limit` bytes of it), all before `deadline`.
    fn exchange(
        &mut self,
        path: &str,
        headers: &str,
        body: &[u8],
        deadline: Instant,
        limit: Option<usize>,
    ) -> Result<(StatusCode, Vec<u8>), ExchangeError> {
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nhost: {}\r\n{headers}content-length: {}\r\n\r\n",
            self.host_header,
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        self.stream
            .set_write_timeout(Some(time_left(deadline)?))
            .map_err(ExchangeError::Io)?;
        let written = self.stream.write_all(&request).map_err(io_failure);
        if let Err(ExchangeError::Io(error)) = written {
            // A daemon may answer before it has read the whole request (a body over its limit
            // gets a 413 saying so) and close: that answer is worth more than the broken pipe.
            self.closed = true;
            let mut reader = Reader {
                stream: &self.stream,
                buffer: std::mem::take(&mut self.unread),
                deadline: deadline.min(Instant::now() + EARLY_ANSWER_WAIT),
                received: 0,
            };
            return match read_answer(&mut reader, limit) {
                Ok(answer) => Ok((answer.status, answer.body)),
                Err(_) if reader.received == 0 => Err(ExchangeError::Unanswered(error)),
                Err(_) => Err(ExchangeError::Io(error)),
            };
        }
        written?;
        let mut reader = Reader {
            stream: &self.stream,
            buffer: std::mem::take(&mut self.unread),
            deadline,
            received: 0,
        };
        let answer = read_answer(&mut reader, limit);
        match &answer {
            Ok(answer) => {
                self.closed = answer.closes;
                self.unread = reader.buffer;
            }
            Err(_) => self.closed = true,
        }
        match answer {
            Ok(answer) => Ok((answer.status, answer.body)),
            Err(ExchangeError::Io(error)) if reader.received == 0 => {
                Err(ExchangeError::Unanswered(error))
            }
            Err(other) => Err(other),
        }
    }
}

/// How a connection ended under `error`, for "the connection was … before it answered".
fn lost_reason(error: &std::io::Error) -> String {
    if error.kind() == std::io::ErrorKind::ConnectionReset {
        "reset".to_owned()
    } else {
        format!("closed ({error})")
    }
}

/// How long to look for an answer the daemon sent before it stopped reading a request.
const EARLY_ANSWER_WAIT: Duration = Duration::from_secs(2);

/// Whether `value` may stand as an HTTP header value as it is: visible characters, spaces and
/// tabs (and bytes of UTF-8 text), no line breaks or other controls; the rule of the `http`
/// crate, which hyper's link applies.
fn is_header_value(value: &str) -> bool {
    value
        .bytes()
        .all(|byte| byte == b'\t' || (byte >= 0x20 && byte != 0x7f))
}

/// The time left before `deadline`, or [`ExchangeError::TimedOut`] when none is.
fn time_left(deadline: Instant) -> Result<Duration, ExchangeError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(ExchangeError::TimedOut);
    }
    Ok(left)
}

/// A socket timeout is the deadline passing; anything else is the connection failing.
fn io_failure(error: std::io::Error) -> ExchangeError {
    match error.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => ExchangeError::TimedOut,
        _ => ExchangeError::Io(error),
    }
}

/// Reads from the socket into a buffer, each read bounded by the time left.
struct Reader<'a> {
    stream: &'a TcpStream,
    buffer: Vec<u8>,
    deadline: Instant,
    /// Bytes read from the socket (not counting what was left in the buffer before).
    received: usize,
}

impl Reader<'_> {
    /// Reads more bytes onto the buffer; an end of stream is an error unless `eof_ends` (a
    /// body framed by the connection's end), when it returns `false`.
    fn fill(&mut self, eof_ends: bool) -> Result<bool, ExchangeError> {
        self.stream
            .set_read_timeout(Some(time_left(self.deadline)?))
            .map_err(ExchangeError::Io)?;
        let mut chunk = [0u8; 16 * 1024];
        let mut stream = self.stream;
        let read = loop {
            match stream.read(&mut chunk) {
                Ok(read) => break read,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(io_failure(error)),
            }
        };
        if read == 0 {
            if eof_ends {
                return Ok(false);
            }
            return Err(ExchangeError::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "connection closed before message completed",
            )));
        }
        self.buffer.extend_from_slice(&chunk[..read]);
        self.received += read;
        Ok(true)
    }

    /// The first `count` bytes of the buffer, reading until there are that many.
    fn take(&mut self, count: usize) -> Result<Vec<u8>, ExchangeError> {
        while self.buffer.len() < count {
            self.fill(false)?;
        }
        let rest = self.buffer.split_off(count);
        Ok(std::mem::replace(&mut self.buffer, rest))
    }

    /// One line ending in CRLF, without it.
    fn line(&mut self) -> Result<Vec<u8>, ExchangeError> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|pair| pair == b"\r\n") {
                let mut line = self.take(end + 2)?;
                line.truncate(end);
                return Ok(line);
            }
            if self.buffer.len() > HEAD_LIMIT {
                return Err(ExchangeError::Malformed("a chunk line too long".to_owned()));
            }
            self.fill(false)?;
        }
    }
}

/// An answer read whole.
struct Answer {
    status: StatusCode,
    body: Vec<u8>,
    /// Whether the connection ends with it.
    closes: bool,
}

/// How an answer's body is delimited.
#[derive(Debug, PartialEq, Eq)]
enum Framing {
    Length(usize),
    Chunked,
    UntilClose,
}

/// The head of an answer: status, framing and whether the connection closes after it.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    status: u16,
    framing: Framing,
    closes: bool,
    /// The head's length in bytes.
    length: usize,
}

/// Parses an answer's head from the start of `bytes`; `Ok(None)` when more bytes are needed.
fn parse_head(bytes: &[u8]) -> Result<Option<Head>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let length = match response.parse(bytes) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(error) => return Err(format!("an answer that is not HTTP/1.1: {error}")),
    };
    let status = response.code.unwrap_or(0);
    let mut framing = None;
    let mut closes = response.version == Some(0);
    for header in response.headers.iter() {
        let value = String::from_utf8_lossy(header.value);
        let value = value.trim();
        if header.name.eq_ignore_ascii_case("transfer-encoding") {
            if value.to_ascii_lowercase().ends_with("chunked") {
                framing = Some(Framing::Chunked);
            } else {
                framing = Some(Framing::UntilClose);
            }
        } else if header.name.eq_ignore_ascii_case("content-length") && framing.is_none() {
            let length = value
                .parse::<usize>()
                .map_err(|_| format!("an invalid Content-Length: {value:?}"))?;
            framing = Some(Framing::Length(length));
        } else if header.name.eq_ignore_ascii_case("connection") {
            let value = value.to_ascii_lowercase();
            if value.split(',').any(|token| token.trim() == "close") {
                closes = true;
            }
        }
    }
    let framing = match status {
        204 | 304 => Framing::Length(0),
        _ => framing.unwrap_or(Framing::UntilClose),
    };
    Ok(Some(Head {
        status,
        framing,
        closes,
        length,
    }))
}

/// Reads one answer (skipping interim 1xx heads), its body at most `limit` bytes long.
fn read_answer(reader: &mut Reader<'_>, limit: Option<usize>) -> Result<Answer, ExchangeError> {
    let head = loop {
        match parse_head(&reader.buffer).map_err(ExchangeError::Malformed)? {
            Some(head) if (100..200).contains(&head.status) => {
                reader.take(head.length)?;
            }
            Some(head) => {
                reader.take(head.length)?;
                break head;
            }
            None if reader.buffer.len() > HEAD_LIMIT => {
                return Err(ExchangeError::Malformed(
                    "an answer head over 64 KiB".to_owned(),
                ));
            }
            None => {
                reader.fill(false)?;
            }
        }
    };
    let too_large = || ExchangeError::Malformed("length limit exceeded".to_owned());
    let within = |length: usize| limit.is_none_or(|limit| length <= limit);
    let mut closes = head.closes;
    let body = match head.framing {
        Framing::Length(length) if !within(length) => return Err(too_large()),
        Framing::Length(length) => reader.take(length)?,
        Framing::Chunked => {
            let mut body = Vec::new();
            loop {
                let line = reader.line()?;
                let line = String::from_utf8_lossy(&line);
                let size = line.split(';').next().unwrap_or("").trim();
                let size = usize::from_str_radix(size, 16)
                    .map_err(|_| ExchangeError::Malformed(format!("a bad chunk size: {size:?}")))?;
                if size == 0 {
                    // Trailers, if any, up to the empty line.
                    while !reader.line()?.is_empty() {}
                    break body;
                }
                if !within(body.len() + size) {
                    return Err(too_large());
                }
                body.extend(reader.take(size)?);
                if !reader.line()?.is_empty() {
                    return Err(ExchangeError::Malformed(
                        "a chunk not followed by CRLF".to_owned(),
                    ));
                }
            }
        }
        Framing::UntilClose => {
            closes = true;
            while reader.fill(true)? {
                if !within(reader.buffer.len()) {
                    return Err(too_large());
                }
            }
            std::mem::take(&mut reader.buffer)
        }
    };
    let status = StatusCode::from_u16(head.status)
        .map_err(|_| ExchangeError::Malformed(format!("a bad status {}", head.status)))?;
    Ok(Answer {
        status,
        body,
        closes,
    })
}

#[cfg(test)]
mod tests;
