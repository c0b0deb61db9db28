//! The reaper: a small watchdog process that stops every MCP server's process group if the
//! daemon dies without doing it (SIGKILL, a crash, the OOM killer).
//!
//! `PR_SET_PDEATHSIG` kills a server when the daemon dies, but not what that server spawned
//! (`npx` runs the real server as a grandchild). So the daemon starts `tool-cli-daemon reaper`,
//! tells it over a pipe which process groups exist (`+pgid` / `-pgid` lines), and when the pipe
//! reaches end-of-file, which happens however the daemon ends, the reaper sends SIGTERM to every
//! group still registered, waits for them to empty (at most `GROUP_GRACE`), and SIGKILLs what is
//! left. On a clean shutdown the daemon has already stopped them all, so the reaper finds nothing
//! left to do.
//!
//! A group holds only what stayed in it. What a server moves to a new session is out of reach
//! of group signals; the per-server subreaper (`subreaper.rs`), which leads each group, is what
//! stops those, on the SIGTERM it gets from here or from its parent-death signal.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

static REAPER: OnceLock<Mutex<ChildStdin>> = OnceLock::new();

/// How long the groups get between SIGTERM and SIGKILL: longer than a subreaper's own grace
/// ([`crate::subreaper::TERMINATION_GRACE`]), so it finishes its cleanup first.
const GROUP_GRACE: Duration = Duration::from_secs(3);

/// Whether a live (non-zombie) process is left in group `pgid`. Zombies wait for a parent (or
/// init) to reap them and run nothing, so they are not waited for.
pub(crate) fn group_exists(pgid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence.
    if unsafe { libc::kill(-pgid, 0) } != 0 {
        return false;
    }
    crate::subreaper::process_table()
        .iter()
        .any(|row| row.group == pgid && !row.zombie)
}

/// Starts the reaper process for this daemon. Without it, only `PR_SET_PDEATHSIG` protects
/// against orphans.
pub fn install(self_exe: &Path) -> std::io::Result<()> {
    use std::os::unix::process::CommandExt as _;
    let mut child = Command::new(self_exe)
        .arg("reaper")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        // Its own group: a terminal's Ctrl-C, meant for the daemon, must not stop the reaper.
        .process_group(0)
        .spawn()?;
    let stdin = child.stdin.take().expect("stdin is piped");
    // The reaper exits on its own when our end of the pipe closes; reap it in the background
    // so it never lingers as a zombie while we run.
    std::thread::spawn(move || child.wait());
    let _ = REAPER.set(Mutex::new(stdin));
    Ok(())
}

/// Tells the reaper about a new process group.
pub(crate) fn register(pgid: i32) {
    send(&format!("+{pgid}\n"));
}

/// Tells the reaper a process group is gone.
pub(crate) fn unregister(pgid: i32) {
    send(&format!("-{pgid}\n"));
}

fn send(line: &str) {
    if let Some(pipe) = REAPER.get() {
        // A few bytes into a pipe: it does not block in practice, and a failed write only means
        // the reaper is gone, which the daemon survives.
        let _ = pipe.lock().unwrap().write_all(line.as_bytes());
    }
}

/// Applies one line of the reaper protocol to the set of live groups.
fn apply(groups: &mut BTreeSet<i32>, line: &str) {
    let line = line.trim();
    let (sign, number) = line.split_at(line.len().min(1));
    let Ok(pgid) = number.parse::<i32>() else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    match sign {
        "+" => {
            groups.insert(pgid);
        }
        "-" => {
            groups.remove(&pgid);
        }
        _ => {}
    }
}

/// The reaper process: reads registrations until end-of-file, then stops what is left.
pub fn run(input: impl BufRead) {
    let mut groups = BTreeSet::new();
    for line in input.lines() {
        let Ok(line) = line else { break };
        apply(&mut groups, &line);
    }
    if groups.is_empty() {
        return;
    }
    for &pgid in &groups {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe {
            libc::kill(-pgid, libc::SIGTERM);
        }
    }
    // A group led by a subreaper (`subreaper.rs`) cleans up below itself on SIGTERM, including
    // what left the group; give it the time to do so before the group is SIGKILLed.
    let deadline = std::time::Instant::now() + GROUP_GRACE;
    while std::time::Instant::now() < deadline && groups.iter().any(|&pgid| group_exists(pgid)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    for &pgid in &groups {
        // SAFETY: as above; a group that is gone gives ESRCH.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrations_add_and_remove_groups_and_ignore_garbage() {
        let mut groups = BTreeSet::new();
        for line in [
            "+100", "+200", "-100", "+1", "+0", "x5", "+-3", "", "+abc", " +300 ",
        ] {
            apply(&mut groups, line);
        }
        assert_eq!(groups.into_iter().collect::<Vec<_>>(), vec![200, 300]);
    }

    #[test]
    fn the_reaper_stops_the_groups_left_at_end_of_file() {
        use std::os::unix::process::CommandExt as _;
        let mut sleeper = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = sleeper.id() as i32;
        run(format!("+{pgid}\n").as_bytes());
        let status = sleeper.wait().unwrap();
        assert!(!status.success(), "the sleeper was killed: {status:?}");
    }
}
