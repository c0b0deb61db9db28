//! The physical floor of one HTTP exchange on loopback: a std-only HTTP/1.1 echo server. The
//! call-latency bench (row (r)) times one kept-alive POST round trip to it with a JSON body the
//! size of a `callTool` request; the daemon's `callTool` is held against that plus a direct stdio
//! call (P2 of issue 26: ours − floor).
//!
//! It prints `port <N>` on stdout once it listens on `127.0.0.1:0`, serves each connection on a
//! thread of its own (blocking reads, `TCP_NODELAY`, one `write` per response, as the daemon's
//! answers go), and answers every request with `200` and the request's own body. It does nothing
//! else (no routing, no header checks) and exits when stdin closes, so the bench that spawned it
//! cannot leave it behind.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};

fn main() -> std::io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    println!("port {}", listener.local_addr()?.port());
    // Exit when the parent closes our stdin (or dies).
    std::thread::spawn(|| {
        let mut sink = [0u8; 64];
        while matches!(std::io::stdin().read(&mut sink), Ok(read) if read > 0) {}
        std::process::exit(0);
    });
    for stream in listener.incoming() {
        let stream = stream?;
        std::thread::spawn(move || {
            let _ = serve(stream);
        });
    }
    Ok(())
}

/// Answers each request on one kept-alive connection with its own body, until the client closes.
fn serve(mut stream: TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buffer: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut chunk = [0u8; 16 * 1024];
    let mut response: Vec<u8> = Vec::with_capacity(16 * 1024);
    loop {
        let head_end = loop {
            if let Some(at) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
                break at + 4;
            }
            let read = stream.read(&mut chunk)?;
            if read == 0 {
                return Ok(());
            }
            buffer.extend_from_slice(&chunk[..read]);
        };
        let length = content_length(&buffer[..head_end]).unwrap_or(0);
        while buffer.len() < head_end + length {
            let read = stream.read(&mut chunk)?;
            if read == 0 {
                return Ok(());
            }
            buffer.extend_from_slice(&chunk[..read]);
        }
        response.clear();
        write!(
            response,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n\r\n"
        )?;
        response.extend_from_slice(&buffer[head_end..head_end + length]);
        stream.write_all(&response)?;
        buffer.drain(..head_end + length);
    }
}

/// The `Content-Length` of a request head, if it has one.
fn content_length(head: &[u8]) -> Option<usize> {
    let head = std::str::from_utf8(head).ok()?;
    head.split("\r\n").find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })
}
