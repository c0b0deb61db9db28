//! The runtime file through which clients find a daemon without environment variables.
//!
//! It holds the token, so it is created 0600 in a 0700 directory, never through a symlink, and
//! written under a temporary name then renamed into place so a reader never sees half a file.
//! A file left by a daemon that no longer runs is replaced; one owned by a live daemon is left
//! alone (this daemon is then reachable through `TOOL_CLI_PORT`/`TOOL_CLI_TOKEN` only).

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use tool_cli_protocol::runtime::{RUNTIME_FILE_NAME, RuntimeFile, runtime_dir};

/// Removes the runtime file on drop, if it is still ours.
#[derive(Debug)]
pub struct RuntimeFileGuard {
    path: PathBuf,
    pid: u32,
}

/// The runtime directory for this user and environment.
pub fn default_dir() -> PathBuf {
    runtime_dir(
        std::env::var_os(tool_cli_protocol::env::RUNTIME_DIR).map(PathBuf::from),
        std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from),
        std::env::temp_dir(),
        // SAFETY: getuid cannot fail and has no preconditions.
        unsafe { libc::getuid() },
    )
}

/// This process's instance id (`MAJOR:PID:TICKS:BOOT_ID`, see
/// [`tool_cli_protocol::runtime::DaemonId`]), or `None` where `/proc` cannot tell it (then
/// clients keep proving the daemon's identity on every connection).
pub fn own_daemon_id() -> Option<String> {
    let stat = fs::read_to_string("/proc/self/stat").ok()?;
    let start_ticks = tool_cli_protocol::runtime::start_ticks_from_stat(&stat)?;
    let boot_id = fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = tool_cli_protocol::runtime::DaemonId {
        bridge_major: tool_cli_protocol::BRIDGE_PROTOCOL_MAJOR,
        pid: std::process::id(),
        start_ticks,
        boot_id: boot_id.trim().to_owned(),
    };
    // Only what a client can parse back is handed out.
    tool_cli_protocol::runtime::DaemonId::parse(&id.to_string()).map(|id| id.to_string())
}

/// Why the runtime file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeFileError {
    /// A step on the file or its directory failed.
    #[error("cannot {step} {}: {source}", path.display())]
    Io {
        step: RuntimeFileStep,
        path: PathBuf,
        source: std::io::Error,
    },
    /// The runtime directory is a symlink or not a directory.
    #[error("runtime directory {} is not a plain directory", .0.display())]
    NotADirectory(PathBuf),
}

/// The step of [`write()`] that failed, worded as what could not be done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeFileStep {
    /// Creating the runtime directory.
    CreateDirectory,
    /// Reading the runtime directory's metadata.
    InspectDirectory,
    /// Making the runtime directory 0700.
    RestrictDirectory,
    /// Creating the temporary file.
    CreateFile,
    /// Writing and syncing the temporary file.
    WriteFile,
    /// Renaming it over the runtime file.
    MoveIntoPlace,
}

impl std::fmt::Display for RuntimeFileStep {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            RuntimeFileStep::CreateDirectory => "create runtime directory",
            RuntimeFileStep::InspectDirectory => "inspect runtime directory",
            RuntimeFileStep::RestrictDirectory => "restrict to 0700 the runtime directory",
            RuntimeFileStep::CreateFile => "create",
            RuntimeFileStep::WriteFile => "write",
            RuntimeFileStep::MoveIntoPlace => "move the runtime file into",
        })
    }
}

/// Writes the runtime file in `dir`. Returns `Ok(None)` when a live daemon owns it already.
pub fn write(
    dir: &Path,
    contents: &RuntimeFile,
) -> Result<Option<RuntimeFileGuard>, RuntimeFileError> {
    let at = |step: RuntimeFileStep| {
        let path = dir.to_owned();
        move |source| RuntimeFileError::Io { step, path, source }
    };
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(at(RuntimeFileStep::CreateDirectory))?;
    let meta = fs::symlink_metadata(dir).map_err(at(RuntimeFileStep::InspectDirectory))?;
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Err(RuntimeFileError::NotADirectory(dir.to_owned()));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(at(RuntimeFileStep::RestrictDirectory))?;
    }

    let path = dir.join(RUNTIME_FILE_NAME);
    if let Some(owner) =
        read(&path).filter(|other| other.pid != contents.pid && pid_alive(other.pid))
    {
        tracing::warn!(
            path = %path.display(),
            pid = owner.pid,
            "another running daemon owns the runtime file; leaving it in place"
        );
        return Ok(None);
    }

    let temp = dir.join(format!(".{RUNTIME_FILE_NAME}.{}.tmp", contents.pid));
    let _ = fs::remove_file(&temp);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&temp)
        .map_err(|source| RuntimeFileError::Io {
            step: RuntimeFileStep::CreateFile,
            path: temp.clone(),
            source,
        })?;
    let json = serde_json::to_vec_pretty(contents).expect("runtime file serializes");
    file.write_all(&json)
        .and_then(|()| file.sync_all())
        .map_err(|source| RuntimeFileError::Io {
            step: RuntimeFileStep::WriteFile,
            path: temp.clone(),
            source,
        })?;
    fs::rename(&temp, &path).map_err(|source| RuntimeFileError::Io {
        step: RuntimeFileStep::MoveIntoPlace,
        path: path.clone(),
        source,
    })?;
    Ok(Some(RuntimeFileGuard {
        path,
        pid: contents.pid,
    }))
}

/// The runtime file in `dir` when a live daemon other than this process owns it.
pub fn live_owner(dir: &Path) -> Option<RuntimeFile> {
    read(&dir.join(RUNTIME_FILE_NAME))
        .filter(|owner| owner.pid != std::process::id() && pid_alive(owner.pid))
}

fn read(path: &Path) -> Option<RuntimeFile> {
    serde_json::from_slice(&fs::read(path).ok()?).ok()
}

fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks for existence and permission.
    pid > 0 && unsafe { libc::kill(pid, 0) } == 0 && !is_zombie(pid)
}

/// Whether `pid` has exited and waits to be reaped: a daemon killed under a parent that has
/// not reaped it yet owns nothing (`/proc/PID/stat` is `pid (comm) state …`; the comm may hold
/// parentheses, so the state is read after the last `)`).
fn is_zombie(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

impl RuntimeFileGuard {
    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RuntimeFileGuard {
    fn drop(&mut self) {
        if read(&self.path).is_some_and(|file| file.pid == self.pid) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_zombie_owns_no_runtime_file() {
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        // Not waited for: it is a zombie once it has exited.
        let exited = (0..2000).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(1));
            is_zombie(pid)
        });
        assert!(exited, "true did not exit");
        assert!(!pid_alive(pid as u32));
        assert!(pid_alive(std::process::id()));
        let mut child = child;
        child.wait().unwrap();
    }
    use super::*;

    #[test]
    fn our_own_id_names_this_process_as_proc_shows_it() {
        let id = own_daemon_id().expect("/proc is mounted on Linux");
        let id = tool_cli_protocol::runtime::DaemonId::parse(&id).expect("parses back");
        assert_eq!(id.pid, std::process::id());
        let stat = fs::read_to_string(format!("/proc/{}/stat", id.pid)).unwrap();
        assert_eq!(
            tool_cli_protocol::runtime::start_ticks_from_stat(&stat),
            Some(id.start_ticks)
        );
    }

    fn contents(pid: u32) -> RuntimeFile {
        RuntimeFile {
            host: "127.0.0.1".into(),
            port: 4000,
            token: "t".repeat(64),
            pid,
            version: "0".into(),
            socket: None,
            daemon_id: None,
        }
    }

    #[test]
    fn a_runtime_directory_that_cannot_be_used_says_which_and_why() {
        let scratch = tempfile::tempdir().unwrap();
        let target = scratch.path().join("real");
        fs::create_dir(&target).unwrap();
        let link = scratch.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let error = write(&link, &contents(std::process::id())).unwrap_err();
        assert!(
            matches!(&error, RuntimeFileError::NotADirectory(path) if *path == link),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "runtime directory {} is not a plain directory",
                link.display()
            )
        );
        // A file where the directory should be.
        let file = scratch.path().join("file");
        fs::write(&file, b"x").unwrap();
        let error = write(&file.join("runtime"), &contents(std::process::id())).unwrap_err();
        assert!(
            matches!(
                &error,
                RuntimeFileError::Io {
                    step: RuntimeFileStep::CreateDirectory,
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(
            error
                .to_string()
                .starts_with("cannot create runtime directory "),
            "{error}"
        );
    }

    #[test]
    fn written_private_and_removed_on_drop_and_stale_files_replaced() {
        let dir = std::env::temp_dir().join(format!("tool-cli-rt-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        // A stale file from a dead daemon (pid beyond the kernel's maximum) is replaced.
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join(RUNTIME_FILE_NAME),
            serde_json::to_vec(&contents(u32::MAX - 1)).unwrap(),
        )
        .unwrap();

        let me = std::process::id();
        let guard = write(&dir, &contents(me)).unwrap().unwrap();
        let mode = fs::metadata(guard.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(read(guard.path()).unwrap().pid, me);
        let path = guard.path().to_path_buf();
        drop(guard);
        assert!(!path.exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_live_owner_is_left_alone() {
        let dir = std::env::temp_dir().join(format!("tool-cli-rt-live-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        // pid 1 is always alive.
        fs::write(
            dir.join(RUNTIME_FILE_NAME),
            serde_json::to_vec(&contents(1)).unwrap(),
        )
        .unwrap();
        assert!(
            write(&dir, &contents(std::process::id()))
                .unwrap()
                .is_none()
        );
        assert_eq!(read(&dir.join(RUNTIME_FILE_NAME)).unwrap().pid, 1);
        fs::remove_dir_all(&dir).unwrap();
    }
}
