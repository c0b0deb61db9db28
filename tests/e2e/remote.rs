//! Remote servers: `https://` with the test's own CA (with and without `caFile`), and OAuth 2.1
//! against a real authorization server on loopback (`tool-cli-remote-server`, in front of the
//! real server-everything): sign-in through the loopback redirect and through a pasted URL,
//! refresh before expiry, a refused refresh, and an error at each step of the sign-in; the
//! redirect listener against a stalled connection and forged redirects.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_cli_tests::{
    CLIENT_TIMEOUT, Daemon, DaemonOptions, HttpPeer, STARTUP_TIMEOUT, bin_dir, eventually, scratch,
    text_content,
};

/// The fixture in front of a real MCP server; stopped on drop.
struct RemoteServer {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl RemoteServer {
    fn start(upstream: &HttpPeer, args: &[&str]) -> RemoteServer {
        let dir = scratch();
        let port_file = dir.path().join("port");
        let binary = bin_dir().join("tool-cli-remote-server");
        assert!(
            binary.is_file(),
            "{} is missing; build it: cargo build -p tool-cli-remote-server",
            binary.display()
        );
        let mut child = Command::new(binary)
            .arg("--port-file")
            .arg(&port_file)
            .arg("--upstream")
            .arg(upstream.url())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .expect("start tool-cli-remote-server");
        let found = eventually(STARTUP_TIMEOUT, || port_file.exists());
        if !found {
            let _ = child.kill();
            panic!("tool-cli-remote-server wrote no port");
        }
        let port = std::fs::read_to_string(&port_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        RemoteServer {
            child,
            port,
            _dir: dir,
        }
    }

    fn url(&self, scheme: &str) -> String {
        format!("{scheme}://127.0.0.1:{}/mcp", self.port)
    }

    /// What the authorization server has seen (`GET /stats`, plain HTTP only).
    fn stats(&self) -> Value {
        let (_, _, body) = http_get(self.port, "/stats");
        serde_json::from_str(&body).expect("stats are JSON")
    }
}

impl Drop for RemoteServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP/1.1 GET on loopback: status, headers (lower-case names), body.
fn http_get(port: u16, target: &str) -> (u16, Vec<(String, String)>, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("read the answer");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

/// A CA and a certificate for 127.0.0.1 signed by it, written as PEM files into `dir`:
/// (ca.pem, cert.pem, key.pem).
fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "tool-cli test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    let cert = params.signed_by(&key, &ca).unwrap();
    let paths = (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    );
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

/// The server's state and last error, as `listServers` says.
fn server_state(daemon: &Daemon, server: &str) -> (String, String) {
    let servers = daemon.call("listServers", json!({}));
    let entry = servers["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["name"] == server)
        .cloned()
        .unwrap_or_default();
    (
        entry["state"].as_str().unwrap_or_default().to_owned(),
        entry["error"].as_str().unwrap_or_default().to_owned(),
    )
}

/// Waits until the server's last error contains `needle`; returns it.
fn wait_for_error(daemon: &Daemon, server: &str, needle: &str) -> String {
    let mut last = String::new();
    let seen = eventually(STARTUP_TIMEOUT, || {
        last = server_state(daemon, server).1;
        last.contains(needle)
    });
    assert!(seen, "no error containing {needle:?}; last: {last:?}");
    last
}

#[test]
fn an_https_server_is_reached_with_its_ca_file() {
    let dir = scratch();
    let (ca, cert, key) = certificates(dir.path());
    let upstream = HttpPeer::everything();
    let remote = RemoteServer::start(
        &upstream,
        &["--tls", cert.to_str().unwrap(), key.to_str().unwrap()],
    );
    let daemon = Daemon::start(json!({"mcpServers": {
        "remote": {"url": remote.url("https"), "caFile": ca}
    }}));
    let result = daemon.call_tool("remote", "echo", json!({"message": "over tls"}));
    assert!(text_content(&result).contains("over tls"), "{result}");
}

#[test]
fn a_self_signed_https_server_fails_naming_ca_file_and_no_secret() {
    let dir = scratch();
    let (_, cert, key) = certificates(dir.path());
    let upstream = HttpPeer::everything();
    let remote = RemoteServer::start(
        &upstream,
        &["--tls", cert.to_str().unwrap(), key.to_str().unwrap()],
    );
    let secret = "k3y-that-must-not-leak";
    let daemon = Daemon::start_with(
        json!({"mcpServers": {
            "remote": {"url": format!("{}?key=${{REMOTE_KEY}}", remote.url("https"))}
        }}),
        DaemonOptions {
            env: vec![("REMOTE_KEY".into(), secret.into())],
            ..DaemonOptions::default()
        },
    );
    let error = wait_for_error(&daemon, "remote", "caFile");
    assert!(error.contains("not trusted"), "{error}");
    assert!(error.contains("unknown issuer"), "{error}");
    assert!(!error.contains(secret), "{error}");
    // The CLI's server list shows the same reason (the server retries with backoff meanwhile:
    // the certificate may be fixed on the server's side).
    let listed = daemon.run_client(&[], &[]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("caFile"), "{listed}");
    assert!(!listed.contains(secret), "{listed}");
    assert!(
        !daemon.stderr().contains(secret),
        "the daemon logged the secret"
    );
}

/// `tool-cli auth login remote --no-browser`, started; its stderr lines come through a channel.
struct Login {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Login {
    fn start(daemon: &Daemon, server: &str) -> Login {
        let mut command = daemon.client_command();
        let mut child = command
            .args(["auth", "login", server, "--no-browser"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tool-cli auth login");
        let stderr = child.stderr.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Login { child, lines }
    }

    /// The authorization URL it printed, or everything it said if it printed none.
    fn authorization_url(&self) -> Result<String, String> {
        let deadline = Instant::now() + CLIENT_TIMEOUT;
        let mut said = Vec::new();
        while let Ok(line) = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            if let Some(url) = line.trim().strip_prefix("http") {
                return Ok(format!("http{url}"));
            }
            said.push(line);
        }
        Err(said.join("\n"))
    }

    /// Waits for it to exit: success, stdout, and the rest of stderr.
    fn finish(mut self) -> (bool, String, String) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + CLIENT_TIMEOUT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "tool-cli auth login did not exit"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        let stderr: Vec<String> = self.lines.try_iter().collect();
        (status.success(), stdout, stderr.join("\n"))
    }
}

/// Follows the authorization URL as a browser would (the fixture approves at once) and returns
/// where it redirects.
fn authorize(url: &str) -> String {
    let parsed = url
        .strip_prefix("http://127.0.0.1:")
        .expect("a loopback URL");
    let (port, target) = parsed.split_once('/').unwrap();
    let (status, headers, body) = http_get(port.parse().unwrap(), &format!("/{target}"));
    assert_eq!(
        status, 302,
        "the authorization endpoint answered {status}: {body}"
    );
    header(&headers, "location").expect("a Location").to_owned()
}

fn oauth_daemon(remote: &RemoteServer) -> Daemon {
    Daemon::start(json!({"mcpServers": {"remote": {"url": remote.url("http")}}}))
}

fn token_file(daemon: &Daemon) -> PathBuf {
    daemon
        .runtime_dir
        .with_file_name("state")
        .join("tool-cli/oauth/remote.json")
}

#[test]
fn oauth_sign_in_through_the_loopback_redirect_then_calls_work_and_logout_forgets() {
    let upstream = HttpPeer::everything();
    // The first access token lives 30 s, under the one-minute margin: the first request
    // renews it, once, before it expires.
    let remote = RemoteServer::start(&upstream, &["--oauth", "--first-token-lifetime", "30"]);
    let daemon = oauth_daemon(&remote);
    let error = wait_for_error(&daemon, "remote", "tool-cli auth login remote");
    assert!(error.contains("requires OAuth"), "{error}");
    let status = daemon.call("authStatus", json!({}));
    assert_eq!(status["servers"][0]["state"], "needsLogin", "{status}");
    // A call before signing in is told what is missing, in a kind of its own.
    let refused = daemon.call_err(
        "callTool",
        json!({"server": "remote", "tool": "echo", "arguments": {"message": "x"}}),
    );
    assert_eq!(refused.code, tool_cli_protocol::code::SERVER_UNAVAILABLE);
    assert_eq!(
        refused.data.as_ref().unwrap()["kind"],
        "authRequired",
        "{refused:?}"
    );
    assert!(
        refused.message.contains("needs authorization")
            && refused.message.contains("tool-cli auth login remote"),
        "{}",
        refused.message
    );

    let login = Login::start(&daemon, "remote");
    let url = login.authorization_url().expect("an authorization URL");
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    let redirect = authorize(&url);
    // The browser follows the redirect to the CLI's loopback listener.
    let target = redirect
        .strip_prefix("http://127.0.0.1:")
        .expect("a loopback redirect");
    let (port, path) = target.split_once('/').unwrap();
    let (status, _, page) = http_get(port.parse().unwrap(), &format!("/{path}"));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Signed in to remote"), "{page}");
    let (ok, stdout, stderr) = login.finish();
    assert!(ok, "login failed: {stdout}\n{stderr}");
    assert!(stdout.contains("signed in: remote: authorized"), "{stdout}");

    let result = daemon.call_tool("remote", "echo", json!({"message": "signed in"}));
    assert!(text_content(&result).contains("signed in"), "{result}");
    let stats = remote.stats();
    assert_eq!(stats["registrations"], 1, "{stats}");
    assert_eq!(stats["codeGrants"], 1, "{stats}");
    assert_eq!(stats["refreshes"], 1, "renewed once before expiry: {stats}");

    let file = token_file(&daemon);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    let status = daemon.run_client(&["auth", "status"], &[]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("remote: authorized"), "{text}");
    assert!(text.contains("refreshable"), "{text}");

    let logout = daemon.run_client(&["auth", "logout", "remote"], &[]);
    assert!(logout.status.success());
    assert!(String::from_utf8_lossy(&logout.stdout).contains("signed out of remote"));
    assert!(!file.exists(), "logout left the token file");
}

#[test]
fn the_redirect_listener_outlasts_a_stalled_connection_and_a_forged_redirect() {
    let upstream = HttpPeer::everything();
    let remote = RemoteServer::start(&upstream, &["--oauth"]);
    let daemon = oauth_daemon(&remote);
    wait_for_error(&daemon, "remote", "tool-cli auth login remote");

    let login = Login::start(&daemon, "remote");
    let url = login.authorization_url().expect("an authorization URL");
    let redirect = authorize(&url);
    let target = redirect
        .strip_prefix("http://127.0.0.1:")
        .expect("a loopback redirect");
    let (port, path) = target.split_once('/').unwrap();
    let port: u16 = port.parse().unwrap();

    // Another local process connects first and sends nothing (it used to hold the listener
    // until it hung up), then one sends half a head, then one guesses a redirect.
    let _stalled = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut half = TcpStream::connect(("127.0.0.1", port)).unwrap();
    half.write_all(b"GET /callback?code=x&state=").unwrap();
    let (status, _, page) = http_get(port, "/callback?code=forged&state=guessed");
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("its state differs"), "{page}");
    let (status, _, _) = http_get(port, "/callback?code=forged");
    assert_eq!(status, 400, "a redirect without the state is refused too");

    // The real redirect still completes the sign-in.
    let (status, _, page) = http_get(port, &format!("/{path}"));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Signed in to remote"), "{page}");
    let (ok, stdout, stderr) = login.finish();
    assert!(ok, "login failed: {stdout}\n{stderr}");
    assert_eq!(
        remote.stats()["codeGrants"],
        1,
        "the forged codes never reached the server"
    );
}

#[test]
fn oauth_headless_paste_then_a_refused_refresh_asks_for_login_once() {
    let upstream = HttpPeer::everything();
    let remote = RemoteServer::start(
        &upstream,
        &[
            "--oauth",
            "--first-token-lifetime",
            "30",
            "--fail",
            "refresh",
        ],
    );
    let daemon = oauth_daemon(&remote);
    wait_for_error(&daemon, "remote", "tool-cli auth login remote");

    let mut login = Login::start(&daemon, "remote");
    let url = login.authorization_url().expect("an authorization URL");
    let redirect = authorize(&url);
    // Headless: the user pastes the address the browser was sent to.
    let stdin = login.child.stdin.as_mut().unwrap();
    writeln!(stdin, "{redirect}").unwrap();
    let (ok, stdout, stderr) = login.finish();
    assert!(ok, "login failed: {stdout}\n{stderr}");

    // The short-lived token is renewed at once, and the refresh is refused: the server needs a
    // new sign-in, the tokens are gone, and nothing keeps retrying the refresh.
    let error = wait_for_error(&daemon, "remote", "refresh token was refused");
    assert!(error.contains("invalid_grant"), "{error}");
    assert!(error.contains("tool-cli auth login remote"), "{error}");
    assert!(!token_file(&daemon).exists());
    let status = daemon.call("authStatus", json!({}));
    assert_eq!(status["servers"][0]["state"], "needsLogin", "{status}");
    let call = daemon.call_err(
        "callTool",
        json!({"server": "remote", "tool": "echo", "arguments": {"message": "x"}}),
    );
    assert!(
        call.message.contains("tool-cli auth login remote"),
        "{}",
        call.message
    );
    assert_eq!(
        call.data.as_ref().unwrap()["kind"],
        "authRequired",
        "{call:?}"
    );
    assert_eq!(
        remote.stats()["refusedRefreshes"],
        1,
        "one refresh, not a loop"
    );
}

#[test]
fn oauth_errors_at_each_step_say_which_step_and_what_to_do() {
    let upstream = HttpPeer::everything();

    let remote = RemoteServer::start(&upstream, &["--oauth", "--fail", "metadata"]);
    let daemon = oauth_daemon(&remote);
    let login = Login::start(&daemon, "remote");
    let said = login.authorization_url().unwrap_err();
    assert!(said.contains("failed at discovery"), "{said}");
    assert!(said.contains("protected resource metadata"), "{said}");
    let (ok, _, _) = login.finish();
    assert!(!ok);
    drop((daemon, remote));

    let remote = RemoteServer::start(&upstream, &["--oauth", "--fail", "registration"]);
    let daemon = oauth_daemon(&remote);
    let login = Login::start(&daemon, "remote");
    let said = login.authorization_url().unwrap_err();
    assert!(said.contains("failed at registration"), "{said}");
    assert!(said.contains("invalid_client_metadata"), "{said}");
    assert!(said.contains("\"clientId\""), "{said}");
    drop(login.finish());
    drop((daemon, remote));

    let remote = RemoteServer::start(&upstream, &["--oauth", "--fail", "token"]);
    let daemon = oauth_daemon(&remote);
    let mut login = Login::start(&daemon, "remote");
    let redirect = authorize(&login.authorization_url().unwrap());
    writeln!(login.child.stdin.as_mut().unwrap(), "{redirect}").unwrap();
    let (ok, _, stderr) = login.finish();
    assert!(!ok);
    assert!(stderr.contains("failed at token"), "{stderr}");
    assert!(stderr.contains("invalid_client"), "{stderr}");

    // Bad input to the methods themselves: not a remote server, a non-loopback redirect, a
    // completion with no login under way.
    let error = daemon.call_err(
        "authLogin",
        json!({"server": "nope", "redirectUri": "http://127.0.0.1:1/cb"}),
    );
    assert!(error.message.contains("not a remote"), "{}", error.message);
    let error = daemon.call_err(
        "authLogin",
        json!({"server": "remote", "redirectUri": "https://evil.example/cb"}),
    );
    assert!(error.message.contains("loopback"), "{}", error.message);
    let error = daemon.call_err(
        "authComplete",
        json!({"server": "remote", "redirectUrl": "http://127.0.0.1:1/cb?code=x&state=y"}),
    );
    assert!(error.message.contains("no sign-in"), "{}", error.message);
}

#[test]
fn an_oauth_server_added_at_run_time_is_kept_for_sign_in_and_removal_forgets_it() {
    let upstream = HttpPeer::everything();
    let remote = RemoteServer::start(&upstream, &["--oauth"]);
    let daemon = Daemon::start(json!({"mcpServers": {}}));
    // Not in the file: added at run time, it asks for OAuth and is kept, waiting for a sign-in.
    let added = daemon.call(
        "addServer",
        json!({"name": "remote", "config": {"url": remote.url("http")}}),
    );
    assert_eq!(added["state"], "down", "{added}");
    let error = added["error"].as_str().unwrap_or_default();
    assert!(error.contains("tool-cli auth login remote"), "{added}");
    // One WARN of the daemon's own names the server and the command; rmcp's ERROR per 401 is
    // not logged.
    assert!(
        eventually(STARTUP_TIMEOUT, || daemon
            .stderr()
            .contains("server waits for a sign-in")),
        "{}",
        daemon.stderr()
    );
    let log = daemon.stderr();
    let hints: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("tool-cli auth login remote"))
        .collect();
    assert_eq!(hints.len(), 1, "{log}");
    assert!(
        hints[0].contains("WARN") && hints[0].contains("server=remote"),
        "{log}"
    );
    assert!(!log.contains("ERROR"), "{log}");
    assert!(!log.contains("worker quit"), "{log}");
    let status = daemon.call("authStatus", json!({}));
    assert_eq!(status["servers"][0]["server"], "remote", "{status}");
    assert_eq!(status["servers"][0]["state"], "needsLogin", "{status}");

    let login = Login::start(&daemon, "remote");
    let url = login.authorization_url().expect("an authorization URL");
    let redirect = authorize(&url);
    let target = redirect
        .strip_prefix("http://127.0.0.1:")
        .expect("a loopback redirect");
    let (port, path) = target.split_once('/').unwrap();
    let (status, _, page) = http_get(port.parse().unwrap(), &format!("/{path}"));
    assert_eq!(status, 200, "{page}");
    let (ok, stdout, stderr) = login.finish();
    assert!(ok, "login failed: {stdout}\n{stderr}");
    assert!(stdout.contains("signed in: remote: authorized"), "{stdout}");
    let result = daemon.call_tool("remote", "echo", json!({"message": "added and signed in"}));
    assert!(
        text_content(&result).contains("added and signed in"),
        "{result}"
    );
    assert_eq!(remote.stats()["codeGrants"], 1);

    // Removed: its OAuth state goes with it (its token file stays for a later add).
    let removed = daemon.call("removeServer", json!({"name": "remote"}));
    assert_eq!(removed["server"], "remote", "{removed}");
    let status = daemon.call("authStatus", json!({}));
    assert_eq!(status["servers"], json!([]), "{status}");
    assert!(token_file(&daemon).exists());
    // Added again with the same URL: the saved tokens serve it at once, no new sign-in.
    let again = daemon.call(
        "addServer",
        json!({"name": "remote", "config": {"url": remote.url("http")}}),
    );
    assert_eq!(again["state"], "ready", "{again}");
    assert_eq!(remote.stats()["codeGrants"], 1);
}
