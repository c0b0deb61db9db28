//! `run_python`: a short Python snippet run in a separate, confined process.
//!
//! Three layers, each of which must fail for a snippet to do harm:
//! 1. **A static check** (`guard.py check`, run by the same interpreter): the snippet is parsed
//!    with `ast` and refused before it runs if it imports anything outside [`ALLOWED_MODULES`],
//!    names a dangerous builtin (`open`, `exec`, `eval`, `getattr`, …), names any dunder, or
//!    touches an attribute starting with `_` or leading to frames and code objects.
//! 2. **A restricted runtime** (`guard.py run`): the snippet's builtins hold only safe functions,
//!    `import` hands out stripped copies of the allowed modules, and an audit hook refuses files,
//!    sockets, subprocesses, new imports and further compilation.
//! 3. **The operating system** (`process.rs`, `cgroup.rs`): a fresh empty working directory that
//!    is removed afterwards, an empty environment, its own process group, a new network namespace
//!    where the platform allows one, CPU / address-space / file-size / open-file rlimits, no new
//!    processes (`RLIMIT_NPROC` 0 for a non-root daemon, a pids cgroup for root), a wall-clock
//!    deadline that kills the whole group, and stdout/stderr capped.
//!
//! `platform.rs` finds out once which of the OS layers this machine allows; the tool's
//! description says what is in force, and `docs/toolkit.md` says what none of it protects against.

mod cgroup;
mod platform;
mod process;

use std::{
    future::Future,
    path::{Path, PathBuf},
    time::Duration,
};

use rand::RngExt as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub(crate) use platform::Platform;
pub(crate) use process::NetworkIsolation;
use process::{Confined, Limits, StopReason};

/// The modules a snippet may import: pure computation, no I/O.
pub(crate) const ALLOWED_MODULES: [&str; 13] = [
    "collections",
    "datetime",
    "decimal",
    "fractions",
    "functools",
    "itertools",
    "json",
    "math",
    "random",
    "re",
    "statistics",
    "string",
    "textwrap",
];

/// The wall-clock limit when the caller gives none.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest wall-clock limit a caller may ask for.
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_secs(10);
/// RLIMIT_AS of the snippet's process.
pub(crate) const MEMORY_LIMIT_BYTES: u64 = 512 * 1024 * 1024;
/// RLIMIT_FSIZE: the snippet cannot open files, so this only backs the other layers up.
pub(crate) const FILE_SIZE_LIMIT_BYTES: u64 = 1024 * 1024;
/// Bytes of stdout and of stderr returned; a snippet that prints more is stopped.
pub(crate) const OUTPUT_LIMIT_BYTES: usize = 64 * 1024;
/// Processes and threads in the run's pids cgroup (the interpreter itself is one).
pub(crate) const PROCESS_LIMIT: u32 = 8;
/// The largest snippet, and the largest stdin, accepted.
pub(crate) const MAX_CODE_BYTES: usize = 64 * 1024;

/// The fixed Python half: the checker and the runner.
const GUARD_SCRIPT: &str = include_str!("guard.py");
/// How long the static check may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a snippet was not run, or its run could not be supervised.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum SandboxError {
    #[error("run_python is unavailable on this machine: {0}")]
    Unavailable(String),
    #[error("{0}")]
    BadRequest(String),
    #[error("the code was refused before running, because it may only compute: {}; allowed imports: {}", .problems.join("; "), ALLOWED_MODULES.join(", "))]
    Refused { problems: Vec<String> },
    #[error("the static check of the code failed: {0}")]
    CheckFailed(String),
    #[error("cannot prepare the run: {0}")]
    Io(#[from] std::io::Error),
}

/// A checked request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CodeRequest {
    pub(crate) code: String,
    pub(crate) timeout: Duration,
    pub(crate) stdin: String,
}

impl CodeRequest {
    pub(crate) fn new(
        code: String,
        timeout_ms: Option<u64>,
        stdin: Option<String>,
    ) -> Result<Self, SandboxError> {
        if code.trim().is_empty() {
            return Err(SandboxError::BadRequest(
                "code is empty; pass the Python source to run, e.g. print(2 + 2)".to_owned(),
            ));
        }
        let too_long = |what: &str, length: usize| {
            SandboxError::BadRequest(format!(
                "{what} is {length} bytes; the limit is {MAX_CODE_BYTES}"
            ))
        };
        if code.len() > MAX_CODE_BYTES {
            return Err(too_long("code", code.len()));
        }
        let stdin = stdin.unwrap_or_default();
        if stdin.len() > MAX_CODE_BYTES {
            return Err(too_long("stdin", stdin.len()));
        }
        let timeout = match timeout_ms {
            None => DEFAULT_TIMEOUT,
            Some(ms) if (1..=MAX_TIMEOUT.as_millis() as u64).contains(&ms) => {
                Duration::from_millis(ms)
            }
            Some(ms) => {
                return Err(SandboxError::BadRequest(format!(
                    "timeoutMs {ms} is out of range; use 1 to {} (default {})",
                    MAX_TIMEOUT.as_millis(),
                    DEFAULT_TIMEOUT.as_millis()
                )));
            }
        };
        Ok(Self {
            code,
            timeout,
            stdin,
        })
    }
}

/// The structured result of `run_python`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CodeRun {
    /// What the snippet printed, up to 64 KiB.
    pub(crate) stdout: String,
    /// Its error output (a traceback, say), up to 64 KiB.
    pub(crate) stderr: String,
    /// The exit code: 0 on success, 1 after an uncaught exception; null when a signal ended it.
    pub(crate) exit_code: Option<i32>,
    /// The signal that ended it (SIGKILL when stopped, SIGXCPU at the CPU limit), or null.
    pub(crate) signal: Option<String>,
    /// Whether the wall-clock limit stopped it.
    pub(crate) timed_out: bool,
    /// What stopped it, if we did; null if it ended on its own.
    pub(crate) stopped_by: Option<StoppedBy>,
    /// Wall-clock milliseconds from start to end.
    pub(crate) duration_ms: u64,
    /// Whether stdout was cut at the limit.
    pub(crate) stdout_truncated: bool,
    /// Whether stderr was cut at the limit.
    pub(crate) stderr_truncated: bool,
}

/// Why we stopped a snippet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) enum StoppedBy {
    /// The wall-clock limit passed.
    Timeout,
    /// It printed more than the output limit.
    OutputLimit,
    /// The caller cancelled the request.
    Cancelled,
}

/// The code tool's state: what the platform allows, and where runs get their directories.
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    platform: Platform,
    work_root: PathBuf,
}

impl Sandbox {
    /// Probes the machine (see `platform.rs`); never fails, an unusable machine is a state.
    pub(crate) async fn detect(python: Option<&Path>, work_root: PathBuf) -> Self {
        let platform = Platform::detect(python, &work_root).await;
        Self {
            platform,
            work_root,
        }
    }

    pub(crate) fn platform(&self) -> &Platform {
        &self.platform
    }

    /// One sentence for the tool description on what is in force here, or why it is unavailable.
    pub(crate) fn describe(&self) -> String {
        let interpreter = match &self.platform.interpreter {
            Ok(interpreter) => interpreter,
            Err(why) => return format!("UNAVAILABLE on this machine: {why}."),
        };
        let network = match self.platform.network {
            NetworkIsolation::None => "network NOT isolated here (no network namespace allowed)",
            _ => "no network",
        };
        let processes = match (&self.platform.pids_root, self.platform.running_as_root) {
            (Some(_), _) => "no new processes (pids cgroup)",
            (None, false) => "no new processes (RLIMIT_NPROC)",
            (None, true) => "process count NOT limited here (root without a pids cgroup)",
        };
        format!(
            "Here: Python {}, {network}, {processes}, {} MiB memory, {} s CPU.",
            interpreter.version,
            MEMORY_LIMIT_BYTES / (1024 * 1024),
            MAX_TIMEOUT.as_secs() + 1,
        )
    }

    /// Checks and runs one snippet. `cancelled` resolves if the caller gives up.
    pub(crate) async fn run(
        &self,
        request: &CodeRequest,
        cancelled: impl Future<Output = ()>,
    ) -> Result<CodeRun, SandboxError> {
        let interpreter = self
            .platform
            .interpreter
            .as_ref()
            .map_err(|why| SandboxError::Unavailable(why.clone()))?;
        let work_dir = WorkDir::create(&self.work_root)?;
        let cgroup = match &self.platform.pids_root {
            Some(root) => Some(cgroup::RunCgroup::create(root, PROCESS_LIMIT)?),
            None => None,
        };
        let modules = ALLOWED_MODULES.join(",");
        let python = |mode: &'static str| ["-I", "-S", "-B", "-c", GUARD_SCRIPT, mode];

        let check_args = python("check");
        let check_args = [check_args.as_slice(), &[modules.as_str()]].concat();
        let checked = process::run(
            Confined {
                program: &interpreter.path,
                args: &check_args,
                input: request.code.clone().into_bytes(),
                work_dir: &work_dir.0,
                limits: limits(CHECK_TIMEOUT),
                network: self.platform.network,
                cgroup: cgroup.as_ref(),
            },
            std::future::pending(),
        )
        .await?;
        let problems = read_verdict(&checked)?;
        if !problems.is_empty() {
            return Err(SandboxError::Refused { problems });
        }

        let run_args = python("run");
        let run_args = [run_args.as_slice(), &[modules.as_str()]].concat();
        let input = serde_json::json!({"code": request.code, "stdin": request.stdin});
        let finished = process::run(
            Confined {
                program: &interpreter.path,
                args: &run_args,
                input: input.to_string().into_bytes(),
                work_dir: &work_dir.0,
                limits: limits(request.timeout),
                network: self.platform.network,
                cgroup: cgroup.as_ref(),
            },
            cancelled,
        )
        .await?;
        tracing::debug!(
            tool = "run_python",
            process_group = finished.process_group,
            exit_code = ?finished.exit_code,
            signal = ?finished.signal,
            stopped_by = ?finished.stopped_by,
            duration_ms = finished.duration.as_millis() as u64,
            "snippet finished"
        );
        Ok(CodeRun {
            stdout: String::from_utf8_lossy(&finished.stdout.bytes).into_owned(),
            stderr: String::from_utf8_lossy(&finished.stderr.bytes).into_owned(),
            exit_code: finished.exit_code,
            signal: finished.signal.map(signal_name),
            timed_out: finished.stopped_by == Some(StopReason::Timeout),
            stopped_by: finished.stopped_by.map(|reason| match reason {
                StopReason::Timeout => StoppedBy::Timeout,
                StopReason::OutputLimit => StoppedBy::OutputLimit,
                StopReason::Cancelled => StoppedBy::Cancelled,
            }),
            duration_ms: finished.duration.as_millis() as u64,
            stdout_truncated: finished.stdout.truncated,
            stderr_truncated: finished.stderr.truncated,
        })
    }
}

/// The checker's problems (empty: the code may run), or why the check itself failed.
fn read_verdict(checked: &process::Finished) -> Result<Vec<String>, SandboxError> {
    #[derive(Deserialize)]
    struct Verdict {
        problems: Vec<Problem>,
    }
    #[derive(Deserialize)]
    struct Problem {
        line: u64,
        message: String,
    }
    let failed = |why: String| {
        let stderr = String::from_utf8_lossy(&checked.stderr.bytes);
        let last_line = stderr.trim().lines().last().unwrap_or_default().to_owned();
        SandboxError::CheckFailed(if last_line.is_empty() {
            why
        } else {
            format!("{why}: {last_line}")
        })
    };
    if let Some(reason) = checked.stopped_by {
        return Err(failed(format!("the checker was stopped ({reason:?})")));
    }
    if checked.exit_code != Some(0) {
        return Err(failed(format!(
            "the checker ended with {}",
            checked.exit_code.map_or_else(
                || signal_name(checked.signal.unwrap_or(0)),
                |code| format!("exit code {code}")
            )
        )));
    }
    let verdict: Verdict = serde_json::from_slice(&checked.stdout.bytes)
        .map_err(|error| failed(format!("its verdict is not JSON ({error})")))?;
    Ok(verdict
        .problems
        .into_iter()
        .map(|problem| format!("line {}: {}", problem.line, problem.message))
        .collect())
}

/// `SIGKILL` for 9, and so on; a number for signals without a name here.
fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGKILL => "SIGKILL",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGBUS => "SIGBUS",
        libc::SIGPIPE => "SIGPIPE",
        other => return format!("signal {other}"),
    };
    name.to_owned()
}

/// The limits of one process with this wall-clock deadline.
fn limits(wall_clock: Duration) -> Limits {
    Limits {
        wall_clock,
        cpu_seconds: wall_clock.as_secs() + 1,
        address_space_bytes: MEMORY_LIMIT_BYTES,
        file_size_bytes: FILE_SIZE_LIMIT_BYTES,
        open_files: 32,
        output_bytes: OUTPUT_LIMIT_BYTES,
    }
}

/// A fresh private directory for one run, removed (with anything written into it) on drop.
#[derive(Debug)]
struct WorkDir(PathBuf);

impl WorkDir {
    fn create(root: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt as _;
        let path = root.join(format!("tool-cli-run-{:016x}", rand::rng().random::<u64>()));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(Self(path))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests;
