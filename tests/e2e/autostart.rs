//! Auto-start and idle shutdown (issue 27, item 4): `tool-cli` starts the daemon of the runtime
//! file on first use, twenty racing first calls start exactly one, a stale runtime file is
//! replaced, `TOOL_CLI_NO_AUTOSTART=1` opts out, and a daemon with `--idle-shutdown-secs` stops
//! by itself with its servers. Every daemon a test starts here is stopped by [`Stopper`].

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::json;
use tool_cli_protocol::runtime::{RUNTIME_FILE_NAME, RuntimeFile};
use tool_cli_tests::{
    CLIENT_TIMEOUT, client_command, eventually, fault_server, run_with_timeout, scratch,
};

/// A scratch home for auto-started daemons: config, runtime dir, state, pins.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    /// A home whose config has one fault server, `flaky`, marked (in its environment) with
    /// this home's directory so the test can find it among the machine's processes.
    fn new() -> Home {
        let dir = scratch();
        let mut server = fault_server(&[]);
        server["env"] = json!({"AUTOSTART_TEST_HOME": dir.path()});
        let config = json!({"mcpServers": {"flaky": server}});
        std::fs::write(dir.path().join("servers.json"), config.to_string()).unwrap();
        Home { dir }
    }

    /// The live servers this home's daemons started.
    fn servers(&self) -> Vec<i32> {
        let needle = format!("AUTOSTART_TEST_HOME={}", self.dir.path().display());
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| alive(*pid as u32))
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                    environ
                        .split(|byte| *byte == 0)
                        .any(|pair| pair == needle.as_bytes())
                })
            })
            .collect()
    }

    fn runtime_dir(&self) -> PathBuf {
        self.dir.path().join("runtime")
    }

    /// `tool-cli` with auto-start on, finding (or starting) the daemon of this home.
    fn client(&self, args: &[&str]) -> Command {
        let mut command = client_command();
        command
            .env_remove(tool_cli_protocol::env::NO_AUTOSTART)
            .env(tool_cli_protocol::env::RUNTIME_DIR, self.runtime_dir())
            .env(
                tool_cli_protocol::env::CONFIG,
                self.dir.path().join("servers.json"),
            )
            .env("XDG_STATE_HOME", self.dir.path().join("state"))
            .env(
                tool_cli_protocol::env::PINS,
                self.dir.path().join("pins.json"),
            )
            .env(tool_cli_protocol::env::SEARCH_MODEL, "off")
            .args(args);
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        run_with_timeout(self.client(args), CLIENT_TIMEOUT)
    }

    fn runtime_file(&self) -> Option<RuntimeFile> {
        let text = std::fs::read_to_string(self.runtime_dir().join(RUNTIME_FILE_NAME)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// How many daemons were started here (each logs one `starting` line to `daemon.log`).
    fn starts(&self) -> usize {
        std::fs::read_to_string(self.runtime_dir().join("daemon.log"))
            .unwrap_or_default()
            .lines()
            .filter(|line| line.contains("tool-cli-daemon starting"))
            .count()
    }
}

/// Stops the daemon of a home when the test ends, however it ends.
struct Stopper<'a>(&'a Home);

impl Drop for Stopper<'_> {
    fn drop(&mut self) {
        if let Some(file) = self.0.runtime_file()
            && alive(file.pid)
        {
            let _ = self.0.run(&["daemon", "stop"]);
        }
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn twenty_racing_first_calls_start_one_daemon_and_a_stale_runtime_file_is_replaced() {
    let home = Home::new();
    let _stopper = Stopper(&home);

    // Opted out: nothing is started, and the error says there is no daemon.
    let mut opted_out = home.client(&["servers"]);
    opted_out.env(tool_cli_protocol::env::NO_AUTOSTART, "1");
    let output = run_with_timeout(opted_out, CLIENT_TIMEOUT);
    assert_eq!(output.status.code(), Some(3), "{}", text(&output));
    assert_eq!(home.starts(), 0);

    let racers: Vec<_> = (0..20)
        .map(|index| {
            let nonce = format!("nonce={index}");
            let mut command = home.client(&["flaky", "echo", &nonce]);
            command
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            command.spawn().unwrap()
        })
        .collect();
    for racer in racers {
        let output = racer.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", text(&output));
    }
    assert_eq!(
        home.starts(),
        1,
        "exactly one daemon for twenty first calls"
    );
    let first = home.runtime_file().expect("a runtime file");
    assert!(alive(first.pid));

    // Stale: the daemon is killed without cleaning up; its runtime file stays behind.
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe { libc::kill(first.pid as i32, libc::SIGKILL) };
    assert!(eventually(Duration::from_secs(10), || !alive(first.pid)));
    // Its server, in its own process group, is orphaned by SIGKILL: stop it here.
    for pid in home.servers() {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(
        home.runtime_file().is_some(),
        "the stale file is still there"
    );
    let output = home.run(&["flaky", "echo", "nonce=again"]);
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(home.starts(), 2);
    let second = home.runtime_file().unwrap();
    assert_ne!(second.pid, first.pid);
}

#[test]
fn an_idle_auto_started_daemon_shuts_down_with_its_servers() {
    let home = Home::new();
    let _stopper = Stopper(&home);
    let mut first = home.client(&["flaky", "echo", "nonce=1"]);
    first.env(tool_cli_protocol::env::AUTOSTART_IDLE_SECS, "1");
    let output = run_with_timeout(first, CLIENT_TIMEOUT);
    assert!(output.status.success(), "{}", text(&output));
    let file = home.runtime_file().expect("a runtime file");
    let children = home.servers();
    assert!(!children.is_empty(), "its server runs");
    // Waited on as an event (the process gone), never a fixed sleep.
    assert!(
        eventually(Duration::from_secs(30), || !alive(file.pid)),
        "the idle daemon is still running"
    );
    assert!(
        eventually(Duration::from_secs(10), || home.servers().is_empty()),
        "its servers outlived it"
    );
    assert!(home.runtime_file().is_none(), "it removed its runtime file");
    let log = std::fs::read_to_string(home.runtime_dir().join("daemon.log")).unwrap();
    assert!(log.contains("idle"), "{log}");
}

#[test]
fn the_agent_primer_needs_no_daemon_and_starts_none() {
    let home = Home::new();
    let output = home.run(&["--agent-help"]);
    assert!(output.status.success(), "{}", text(&output));
    let primer = String::from_utf8_lossy(&output.stdout);
    assert!(primer.contains("progressive"), "{primer}");
    assert!(primer.contains("tool-cli SERVER TOOL --help"), "{primer}");
    assert_eq!(home.starts(), 0, "no daemon for the primer");
}
