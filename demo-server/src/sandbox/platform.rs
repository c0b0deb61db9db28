//! What this machine lets the sandbox do, found out once at startup by trying it: which Python
//! interpreter to use, whether a network namespace can be made (as root, or through a user
//! namespace), and whether a pids cgroup is available.
//!
//! Each capability is probed by running the interpreter's version check under exactly the
//! confinement a run would get, from the strongest combination down, so what the tool later
//! promises is what a real process got. The result is plain data the tool's description and the
//! runs read.

use std::{
    ffi::OsStr,
    path::{Path, PathBuf},
    time::Duration,
};

use super::{
    cgroup::{PidsRoot, RunCgroup},
    process::{self, Confined, Limits, NetworkIsolation},
};

/// The interpreter in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Interpreter {
    pub(crate) path: PathBuf,
    /// `3.11.7`, say.
    pub(crate) version: String,
}

/// What was found.
#[derive(Debug, Clone)]
pub(crate) struct Platform {
    /// The interpreter, or why there is none (a sentence for the tool's description).
    pub(crate) interpreter: Result<Interpreter, String>,
    pub(crate) network: NetworkIsolation,
    pub(crate) pids_root: Option<PidsRoot>,
    pub(crate) running_as_root: bool,
}

/// The oldest Python the guard script supports (audit hooks arrived in 3.8).
const MINIMUM_MINOR: u32 = 8;

/// What the probe runs: print the version, and fail on an interpreter that is too old.
const VERSION_PROBE: &str = "import sys\n\
    print('%d.%d.%d' % sys.version_info[:3])\n\
    sys.exit(0 if sys.version_info >= (3, 8) else 3)";

/// Finds `program` on `path` (a `PATH` value), as a shell would.
pub(crate) fn find_on_path(program: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .filter(|directory| directory.is_absolute())
        .map(|directory| directory.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path)
        .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

impl Platform {
    /// Probes the machine. `python` is the configured interpreter (else `python3`, then
    /// `python`, on `PATH`); probes run in `work_root`.
    pub(crate) async fn detect(python: Option<&Path>, work_root: &Path) -> Self {
        // SAFETY: getuid cannot fail and has no memory effects.
        let running_as_root = unsafe { libc::getuid() } == 0;
        // Orphans of a run (a snippet's children) are re-parented to us instead of init, so we
        // can reap them and be sure they are gone.
        // SAFETY: prctl with integer arguments only.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        let candidates: Vec<PathBuf> = match python {
            Some(path) => vec![path.to_owned()],
            None => {
                let path = std::env::var_os("PATH");
                ["python3", "python"]
                    .iter()
                    .filter_map(|name| find_on_path(name, path.as_deref()))
                    .collect()
            }
        };
        let Some(candidate) = candidates.first() else {
            return Self {
                interpreter: Err(
                    "no Python interpreter was found (looked for python3 and python on PATH); \
                     install Python 3.8 or later, or start the demo server with --python PATH"
                        .to_owned(),
                ),
                network: NetworkIsolation::None,
                pids_root: None,
                running_as_root,
            };
        };
        let program = &resolve(candidate).await;
        let pids_root = tokio::task::spawn_blocking(PidsRoot::detect)
            .await
            .ok()
            .flatten();
        let mut last_failure = String::new();
        for (cgroup, network) in [
            (true, NetworkIsolation::Namespace),
            (true, NetworkIsolation::UserAndNetworkNamespace),
            (false, NetworkIsolation::Namespace),
            (false, NetworkIsolation::UserAndNetworkNamespace),
            (true, NetworkIsolation::None),
            (false, NetworkIsolation::None),
        ] {
            let root = match (cgroup, &pids_root) {
                (true, Some(root)) => Some(root),
                (true, None) => continue,
                (false, _) => None,
            };
            match probe(program, work_root, network, root).await {
                Ok(version) => {
                    let path = program.clone();
                    tracing::debug!(
                        python = %path.display(), %version, ?network, cgroup = root.is_some(),
                        "sandbox ready"
                    );
                    return Self {
                        interpreter: Ok(Interpreter { path, version }),
                        network,
                        pids_root: root.cloned(),
                        running_as_root,
                    };
                }
                Err(failure) => last_failure = failure,
            }
        }
        Self {
            interpreter: Err(format!(
                "the Python interpreter {} cannot be used: {last_failure}",
                program.display()
            )),
            network: NetworkIsolation::None,
            pids_root: None,
            running_as_root,
        }
    }
}

/// The real executable behind `program`: a `python3` on `PATH` may be a pyenv or asdf shim, a
/// shell script that forks, which the confinement (rightly) does not allow. Asked once, without
/// confinement, with an empty environment; `program` itself when the answer is not usable.
async fn resolve(program: &Path) -> PathBuf {
    let asked = tokio::process::Command::new(program)
        .args(["-I", "-S", "-c", "import sys; print(sys.executable)"])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(Duration::from_secs(10), asked).await {
        Ok(Ok(output)) if output.status.success() => {
            let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
            if path.is_absolute() && is_executable(&path) {
                path
            } else {
                program.to_owned()
            }
        }
        _ => program.to_owned(),
    }
}

/// Runs the version probe under one confinement: the version, or why it failed.
async fn probe(
    program: &Path,
    work_root: &Path,
    network: NetworkIsolation,
    pids_root: Option<&PidsRoot>,
) -> Result<String, String> {
    let cgroup = match pids_root {
        Some(root) => Some(RunCgroup::create(root, 4).map_err(|error| error.to_string())?),
        None => None,
    };
    let limits = Limits {
        wall_clock: Duration::from_secs(10),
        cpu_seconds: 10,
        address_space_bytes: super::MEMORY_LIMIT_BYTES,
        file_size_bytes: 0,
        open_files: 32,
        output_bytes: 4096,
    };
    let finished = process::run(
        Confined {
            program,
            args: &["-I", "-S", "-B", "-c", VERSION_PROBE],
            input: Vec::new(),
            work_dir: work_root,
            limits,
            network,
            cgroup: cgroup.as_ref(),
        },
        std::future::pending(),
    )
    .await
    .map_err(|error| format!("it cannot be started with this confinement: {error}"))?;
    let version = String::from_utf8_lossy(&finished.stdout.bytes)
        .trim()
        .to_owned();
    match finished.exit_code {
        Some(0) => Ok(version),
        Some(3) => Err(format!(
            "it is Python {version}; the sandbox needs 3.{MINIMUM_MINOR} or later"
        )),
        _ => Err(format!(
            "its version check failed ({}): {}",
            finished
                .exit_code
                .map_or_else(|| "killed".to_owned(), |code| format!("exit code {code}")),
            String::from_utf8_lossy(&finished.stderr.bytes).trim()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_programs_on_a_path() {
        let found = find_on_path("sh", Some(OsStr::new("/nonexistent:/bin:/usr/bin")));
        assert!(found.is_some_and(|path| path.ends_with("sh")));
        assert_eq!(find_on_path("sh", Some(OsStr::new("relative/bin"))), None);
        assert_eq!(find_on_path("sh", None), None);
        assert_eq!(
            find_on_path("no-such-program-here", Some(OsStr::new("/bin:/usr/bin"))),
            None
        );
    }
}
