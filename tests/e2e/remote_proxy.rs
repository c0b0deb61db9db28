//! Remote servers through the proxies of the daemon's environment: a real daemon with
//! `HTTP_PROXY` set for its process only, a forwarding proxy on loopback (threads, absolute form
//! spliced to the origin), and the real server-everything behind it.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::methods::ListServersResult;
use tool_cli_tests::{Daemon, DaemonOptions, HttpPeer, eventually_some, text_content};

/// A forwarding proxy on loopback for plain-HTTP requests in absolute form; returns its port and
/// the request lines it read. Its threads end with the test process.
fn forwarding_proxy() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
    let port = listener.local_addr().expect("proxy address").port();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&lines);
    thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let log = Arc::clone(&log);
            thread::spawn(move || forward(client, &log));
        }
    });
    (port, lines)
}

/// Forwards a connection: reads the first request's head, logs its request line, connects to
/// the origin it names in absolute form and splices the connection both ways, the head as read
/// (an HTTP/1.1 server takes absolute form, RFC 9112 3.2.2; later requests on the kept-alive
/// connection go the same way, unlogged).
fn forward(mut client: TcpStream, log: &Mutex<Vec<String>>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match client.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let request_line = String::from_utf8_lossy(&head)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    log.lock().unwrap().push(request_line.clone());
    let target = request_line.split(' ').nth(1).unwrap_or("");
    let Some(rest) = target.strip_prefix("http://") else {
        let _ = client.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
        return;
    };
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    let Ok(mut upstream) = TcpStream::connect(authority) else {
        return;
    };
    if upstream.write_all(&head).is_err() {
        return;
    }
    let (Ok(mut client_reader), Ok(mut upstream_writer)) =
        (client.try_clone(), upstream.try_clone())
    else {
        return;
    };
    thread::spawn(move || {
        let _ = std::io::copy(&mut client_reader, &mut upstream_writer);
        let _ = upstream_writer.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut upstream, &mut client);
    let _ = client.shutdown(std::net::Shutdown::Both);
}

fn options(env: &[(&str, String)]) -> DaemonOptions {
    DaemonOptions {
        env: env
            .iter()
            .map(|(name, value)| ((*name).to_owned(), value.clone()))
            .collect(),
        remove_env: ["no_proxy", "http_proxy", "all_proxy", "https_proxy"]
            .map(str::to_owned)
            .to_vec(),
        ..DaemonOptions::default()
    }
}

#[test]
fn a_remote_server_is_reached_through_the_http_proxy_of_the_environment() {
    let peer = HttpPeer::everything();
    let (proxy_port, lines) = forwarding_proxy();
    let daemon = Daemon::start_with(
        json!({"mcpServers": {"everything": peer.server_config()}}),
        options(&[
            ("HTTP_PROXY", format!("http://127.0.0.1:{proxy_port}")),
            ("NO_PROXY", String::new()),
        ]),
    );
    let echoed = daemon.call(
        "callTool",
        json!({"server": "everything", "tool": "echo", "arguments": {"message": "via the proxy"}}),
    );
    assert!(
        text_content(&echoed).contains("via the proxy"),
        "{echoed:#}"
    );
    let lines = lines.lock().unwrap();
    assert!(
        lines
            .iter()
            .any(|line| line == &format!("POST {} HTTP/1.1", peer.url())),
        "the proxy saw {lines:?}"
    );
}

#[test]
fn a_malformed_proxy_variable_is_named_without_its_value() {
    let peer = HttpPeer::everything();
    let daemon = Daemon::start_with(
        json!({"mcpServers": {"everything": peer.server_config()}}),
        options(&[("HTTP_PROXY", "http://bob:hunter2@[::1".to_owned())]),
    );
    let why = eventually_some(Duration::from_secs(30), || {
        let listed: ListServersResult =
            serde_json::from_value(daemon.call("listServers", Value::Null)).expect("listServers");
        listed.servers[0].error.clone()
    })
    .expect("the server says why it is not connected");
    assert!(
        why.contains("HTTP_PROXY") && why.contains("not a valid proxy URL"),
        "{why}"
    );
    assert!(!why.contains("hunter2"), "{why}");
}
