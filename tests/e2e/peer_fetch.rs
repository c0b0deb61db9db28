//! `mcp-server-fetch` (PyPI, the reference fetch server) through the daemon and the `tool-cli`
//! binary: discovery, a page turned into markdown, the raw page, a page cut to `max_length`,
//! arguments the schema refuses (before anything reaches the server), and a fetch that fails
//! (the server's error, exit 6). Pages come from a small HTTP server on loopback started here.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::thread;

use serde_json::json;
use tool_cli_tests::{Daemon, fetch_server};

const PAGE: &str = "<!doctype html><html><head><title>Shop notes</title></head><body>\
    <h1>Opening hours</h1><p>The shop opens at <b>nine</b> every weekday.</p>\
    <ul><li>Monday</li><li>Friday</li></ul></body></html>";

/// Serves `PAGE` at every path over HTTP/1.1 on loopback until the test process ends; its port.
fn serve_page() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
                let mut line = String::new();
                // The request line and headers, up to the blank line.
                while reader.read_line(&mut line).is_ok_and(|read| read > 0) {
                    if line == "\r\n" || line == "\n" {
                        break;
                    }
                    line.clear();
                }
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{PAGE}",
                    PAGE.len()
                );
            });
        }
    });
    port
}

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    listener.local_addr().unwrap().port()
}

fn run(daemon: &Daemon, args: &[&str]) -> (Option<i32>, String, String) {
    let output = daemon.run_client(args, &[]);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_fetch_server_fetches_loopback_pages_and_its_arguments_are_checked() {
    let port = serve_page();
    let url = format!("http://127.0.0.1:{port}/hours.html");
    let daemon = Daemon::start(json!({ "mcpServers": { "fetch": fetch_server() } }));

    // Discovery: one tool, `url` required, `max_length` an integer.
    let described = daemon.call("describeTool", json!({"server": "fetch", "tool": "fetch"}));
    let schema = &described["inputSchema"];
    assert_eq!(schema["required"], json!(["url"]), "{described}");
    assert_eq!(
        schema["properties"]["max_length"]["type"], "integer",
        "{described}"
    );

    // A page becomes markdown.
    let (code, stdout, stderr) = run(&daemon, &["fetch", "fetch", &format!("url={url}")]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("Opening hours"), "{stdout}");
    assert!(stdout.contains("**nine**"), "markdown bold: {stdout}");
    assert!(!stdout.contains("<p>"), "no HTML left: {stdout}");

    // `raw=true` gives the HTML as served.
    let (code, stdout, stderr) = run(
        &daemon,
        &["fetch", "fetch", &format!("url={url}"), "raw=true"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("<b>nine</b>"), "{stdout}");

    // `max_length` cuts the content, and the server says how to read on.
    let reply = daemon.call(
        "callTool",
        json!({"server": "fetch", "tool": "fetch", "arguments": {"url": url, "max_length": 20, "raw": true}}),
    );
    let text = reply["content"][0]["text"].as_str().expect("a text result");
    assert!(text.contains(&PAGE[..20]), "{text}");
    assert!(!text.contains("Friday"), "cut at 20 characters: {text}");
    assert!(text.contains("start_index"), "{text}");

    // Arguments the schema refuses never reach the server: exit 5, naming the field.
    let (code, _, stderr) = run(
        &daemon,
        &["fetch", "fetch", &format!("url={url}"), "max_length=many"],
    );
    assert_eq!(code, Some(5), "{stderr}");
    assert!(stderr.contains("/max_length"), "{stderr}");
    assert!(stderr.contains("integer"), "{stderr}");
    let (code, _, stderr) = run(&daemon, &["fetch", "fetch", "{}"]);
    assert_eq!(code, Some(5), "{stderr}");
    assert!(stderr.contains("url"), "{stderr}");

    // A fetch that fails is the server's error, exit 6, and the daemon keeps serving.
    let nowhere = format!("http://127.0.0.1:{}/", closed_port());
    let (code, _, stderr) = run(&daemon, &["fetch", "fetch", &format!("url={nowhere}")]);
    assert_eq!(code, Some(6), "{stderr}");
    assert!(stderr.contains("Failed to fetch"), "{stderr}");
    let (code, stdout, stderr) = run(&daemon, &["fetch", "fetch", &format!("url={url}")]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("Opening hours"), "{stdout}");
}
