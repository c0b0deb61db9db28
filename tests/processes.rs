//! Processes: capturing a child's output, stopping it (and its group) within a timeout, and
//! reading `/proc` to find what a test left running; [`eventually`] waits for a condition.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::{SHUTDOWN_TIMEOUT, random_hex};

pub(crate) fn capture(mut stream: impl Read + Send + 'static) -> Arc<Mutex<Vec<u8>>> {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&buffer);
    thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => sink
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(&chunk[..n]),
            }
        }
    });
    buffer
}

pub(crate) fn text_of(buffer: &Arc<Mutex<Vec<u8>>>) -> String {
    String::from_utf8_lossy(&buffer.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
}

pub(crate) fn lines_of(stream: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        // Keeps draining after the receiver is gone so the daemon never blocks on stdout.
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            let _ = sender.send(line);
        }
    });
    receiver
}

pub(crate) fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// SIGTERM, wait up to [`SHUTDOWN_TIMEOUT`], then SIGKILL.
pub(crate) fn stop_process(mut child: Child) {
    if child.try_wait().ok().flatten().is_some() {
        return;
    }
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our unreaped child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    if wait_timeout(&mut child, SHUTDOWN_TIMEOUT).is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// SIGTERM to the child's whole process group, a short wait, then SIGKILL to the group.
pub(crate) fn stop_process_group(mut child: Child) {
    let pgid = child.id() as libc::pid_t;
    // SAFETY: kill(2) has no memory-safety preconditions; the group is the child's own.
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    if wait_timeout(&mut child, Duration::from_secs(5)).is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    if !live_processes_in_group(pgid).is_empty() {
        // SAFETY: as above.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

/// Runs `command` with stdout and stderr captured; kills it and panics after `timeout`.
pub fn run_with_timeout(mut command: Command, timeout: Duration) -> Output {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .unwrap_or_else(|err| panic!("spawn {command:?}: {err}"));
    let stdout = capture(child.stdout.take().expect("piped stdout"));
    let stderr = capture(child.stderr.take().expect("piped stderr"));
    let Some(status) = wait_timeout(&mut child, timeout) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "{command:?} did not finish within {timeout:?}; stderr so far:\n{}",
            text_of(&stderr)
        );
    };
    // The reader threads finish at EOF, right after the exit; give them a moment.
    let drained = Instant::now() + Duration::from_secs(5);
    while Arc::strong_count(&stdout) > 1 || Arc::strong_count(&stderr) > 1 {
        if Instant::now() >= drained {
            break;
        }
        thread::sleep(Duration::from_millis(5));
    }
    let take = |buffer: &Arc<Mutex<Vec<u8>>>| {
        std::mem::take(&mut *buffer.lock().unwrap_or_else(|e| e.into_inner()))
    };
    Output {
        status,
        stdout: take(&stdout),
        stderr: take(&stderr),
    }
}

/// One line of `/proc/<pid>/stat`: `(state, parent pid, process group)`.
fn proc_stat(pid: i32) -> Option<(char, i32, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces; fields follow the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

fn all_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Live (non-zombie) direct children of `parent`, as `(pid, process group)`.
pub fn children_of(parent: i32) -> Vec<(i32, i32)> {
    all_pids()
        .into_iter()
        .filter_map(|pid| {
            let (state, ppid, pgrp) = proc_stat(pid)?;
            (ppid == parent && state != 'Z').then_some((pid, pgrp))
        })
        .collect()
}

/// Live (non-zombie) processes in process group `pgid`. `kill(-pgid, 0)` answers first; the
/// `/proc` scan then leaves out zombies, which an init that does not reap would keep around.
pub fn live_processes_in_group(pgid: i32) -> Vec<i32> {
    // SAFETY: kill(2) with signal 0 only checks for existence.
    let exists = unsafe { libc::kill(-pgid, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !exists {
        return Vec::new();
    }
    all_pids()
        .into_iter()
        .filter(
            |&pid| matches!(proc_stat(pid), Some((state, _, pgrp)) if pgrp == pgid && state != 'Z'),
        )
        .collect()
}

/// Whether `pid` is a live (non-zombie) process. A zombie counts as gone: it runs nothing, and
/// an init that does not reap would keep it around for ever.
pub fn process_is_alive(pid: i32) -> bool {
    matches!(proc_stat(pid), Some((state, _, _)) if state != 'Z')
}

/// Live (non-zombie) processes with `marker` as one of their command-line arguments: how a test
/// finds what a fault server detached (`tool-cli-fault-server --linger MARKER`), wherever in the
/// process tree it ended up.
pub fn processes_with_marker(marker: &str) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
                cmdline
                    .split(|&b| b == 0)
                    .any(|arg| arg == marker.as_bytes())
            }) && process_is_alive(pid)
        })
        .collect()
}

/// A fresh marker for [`processes_with_marker`], unique to this test run.
pub fn unique_marker(what: &str) -> String {
    format!(
        "tool-cli-test-{what}-{}-{}",
        std::process::id(),
        random_hex(4)
    )
}

/// SIGKILLs every process carrying the marker when dropped, so a failing test leaves nothing
/// behind that escaped its daemon.
pub struct KillMarkedOnDrop(pub String);

impl Drop for KillMarkedOnDrop {
    fn drop(&mut self) {
        for pid in processes_with_marker(&self.0) {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The parent of `pid` (zombies included), if it exists.
pub fn parent_of(pid: i32) -> Option<i32> {
    proc_stat(pid).map(|(_, ppid, _)| ppid)
}

/// The resident set size of `pid` in KiB, from `VmRSS` in `/proc/<pid>/status`.
pub fn vm_rss_kib(pid: u32) -> u64 {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("read {path}: {err}"));
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS line in {path}:\n{status}"))
}

/// Waits up to `timeout` for `condition`, polling; returns whether it became true.
pub fn eventually(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    eventually_some(timeout, || condition().then_some(())).is_some()
}

/// Waits up to `timeout` for `check` to give a value, polling; returns the value, or `None`
/// when the time ran out (the caller says what never happened).
pub fn eventually_some<T>(timeout: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(Duration::from_millis(20));
    }
}
