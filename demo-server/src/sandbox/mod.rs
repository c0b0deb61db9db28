//! `run_python`: a short Python snippet run in a separate process that the kernel confines.
//!
//! The boundary is the kernel's (`confine.rs`, `plan.rs`, `seccomp.rs`, `landlock.rs`,
//! `cgroup.rs`): the snippet runs as an unprivileged user in fresh user, pid, mount, network,
//! IPC, UTS and cgroup namespaces (no network at all), in a mount tree holding only the Python
//! runtime (read-only), three device nodes, a fresh `/proc` and a private scratch tmpfs, with
//! every capability dropped, `no_new_privs`, Landlock, a seccomp filter, a pids and memory cgroup
//! it cannot leave, rlimits, no inherited file descriptors and an empty environment. Whatever
//! Python it runs, the daemon's files, environment, network and processes are out of its reach.
//!
//! In front of that, the Python guard (`guard.py`, run by the same interpreter inside the
//! sandbox) is a first layer that gives an agent useful refusals: it parses the snippet with
//! `ast` and refuses imports outside [`ALLOWED_MODULES`], dangerous builtins, dunder names and
//! private attributes; then it runs the snippet with restricted builtins and an audit hook. It
//! is not the boundary: a snippet that talks its way past it meets the kernel.
//!
//! `platform.rs` finds out once which layers this machine grants, by really running under them;
//! the tool's description says what is in force (degraded when an optional layer is missing),
//! and the tool refuses to run at all without the essential ones. Runs queue behind a
//! concurrency cap (one per CPU), so that snippets do not share cores and time out; the time a
//! run waited is reported, and its own time limit starts when it starts. `docs/toolkit.md` has
//! the table of which layer stops which attack.

mod cgroup;
mod confine;
mod landlock;
mod layout;
mod plan;
mod platform;
mod process;
mod seccomp;

use std::{
    future::Future,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use rand::RngExt as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

use plan::Limits;
pub(crate) use platform::Platform;
use process::{Confined, RunError, StopReason};

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

/// Modules the guard itself imports, and `ctypes`: the runtime's files are laid out from what
/// the interpreter maps after importing these and [`ALLOWED_MODULES`]. `ctypes` is part of what
/// any Python ships; leaving its library out would hide nothing from an attacker who got past
/// the guard, and the kernel layers are tested with it.
pub(crate) const GUARD_IMPORTS: [&str; 8] = [
    "ast",
    "builtins",
    "json",
    "traceback",
    "types",
    "heapq",
    "_strptime",
    "ctypes",
];

/// The wall-clock limit when the caller gives none.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest wall-clock limit a caller may ask for.
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_secs(10);
/// RLIMIT_AS of each process, and the memory cgroup's limit for the whole run.
pub(crate) const MEMORY_LIMIT_BYTES: u64 = 512 * 1024 * 1024;
/// RLIMIT_FSIZE: the largest file a snippet may write in its scratch directory.
pub(crate) const FILE_SIZE_LIMIT_BYTES: u64 = 1024 * 1024;
/// Bytes of stdout and of stderr returned; a snippet that prints more is stopped.
pub(crate) const OUTPUT_LIMIT_BYTES: usize = 64 * 1024;
/// Processes and threads a snippet may have (the interpreter itself is one): RLIMIT_NPROC in its
/// own user namespace, and the pids cgroup (plus one for the sandbox's intermediate process).
pub(crate) const PROCESS_LIMIT: u32 = 8;
/// The largest snippet, and the largest stdin, accepted.
pub(crate) const MAX_CODE_BYTES: usize = 64 * 1024;
/// Snippets that may wait for a run slot; more are refused at once.
pub(crate) const MAX_QUEUED: usize = 64;

/// The fixed Python half: the checker and the runner.
const GUARD_SCRIPT: &str = include_str!("guard.py");
/// The guard's exit code when the static check refused the snippet (its verdict is on stdout).
const REFUSED_EXIT: i32 = 86;

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
    #[error(
        "run_python is busy: {running} snippets are running and {waiting} are waiting, the most this server queues; try again in a few seconds"
    )]
    Busy { running: usize, waiting: usize },
    #[error("the request was cancelled after waiting {waited_ms} ms for a run slot; nothing ran")]
    CancelledWhileQueued { waited_ms: u64 },
    #[error("the snippet did not run: {0}")]
    Run(#[from] RunError),
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
    /// Wall-clock milliseconds from start to end (the wait for a run slot not included).
    pub(crate) duration_ms: u64,
    /// Milliseconds it waited for a run slot before starting (runs beyond one per CPU queue; the wait does not count against timeoutMs).
    pub(crate) queued_ms: u64,
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
    /// Its processes together used more memory than the limit, and the kernel killed one.
    MemoryLimit,
}

/// The code tool's state: what the platform allows, where runs get their directories, and the
/// run slots.
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    platform: Platform,
    work_root: PathBuf,
    /// One permit per concurrent run. A snippet that waits for CPU behind nine others would
    /// spend its time limit waiting; a queue in front keeps each run's limit its own.
    slots: Arc<Semaphore>,
    slot_count: usize,
    /// Snippets waiting for a slot, bounded by [`MAX_QUEUED`].
    waiting: Arc<AtomicUsize>,
}

impl Sandbox {
    /// Probes the machine (see `platform.rs`); never fails, an unusable machine is a state.
    pub(crate) async fn detect(python: Option<&Path>, work_root: PathBuf) -> Self {
        let platform = Platform::detect(python, &work_root).await;
        let slot_count = std::thread::available_parallelism().map_or(1, |count| count.get());
        Self::with_slots(platform, work_root, slot_count)
    }

    fn with_slots(platform: Platform, work_root: PathBuf, slot_count: usize) -> Self {
        Self {
            platform,
            work_root,
            slots: Arc::new(Semaphore::new(slot_count)),
            slot_count,
            waiting: Arc::new(AtomicUsize::new(0)),
        }
    }

    #[cfg(test)]
    pub(crate) fn platform(&self) -> &Platform {
        &self.platform
    }

    /// Whether snippets run here, and with every layer.
    pub(crate) fn health(&self) -> SandboxHealth {
        match &self.platform.state {
            Err(_) => SandboxHealth::Unavailable,
            Ok(ready) if ready.missing.is_empty() => SandboxHealth::Complete,
            Ok(_) => SandboxHealth::Degraded,
        }
    }

    /// The layers in force, by name (for the tool's `_meta`).
    pub(crate) fn layers(&self) -> Vec<String> {
        let Some(ready) = self.platform.ready() else {
            return Vec::new();
        };
        let layers = &ready.plan.layers;
        let mut names: Vec<String> = [
            "user namespace",
            "pid namespace",
            "mount namespace",
            "network namespace",
        ]
        .map(str::to_owned)
        .to_vec();
        for (present, name) in [
            (layers.ipc_namespace, "IPC namespace"),
            (layers.uts_namespace, "UTS namespace"),
            (layers.cgroup_namespace, "cgroup namespace"),
        ] {
            if present {
                names.push(name.to_owned());
            }
        }
        names.push(format!("unprivileged user {}", ready.plan.identity.uid));
        names.extend(
            [
                "no capabilities",
                "no_new_privs",
                "read-only runtime tree (pivot_root)",
            ]
            .map(str::to_owned),
        );
        if layers.fresh_proc {
            names.push("fresh /proc".to_owned());
        }
        if let Some(abi) = layers.landlock_abi {
            names.push(format!("Landlock ABI {abi}"));
        }
        if layers.seccomp {
            names.push("seccomp".to_owned());
        }
        if layers.cgroups.pids.is_some() {
            names.push("pids cgroup".to_owned());
        }
        if layers.cgroups.memory.is_some() {
            names.push("memory cgroup".to_owned());
        }
        names.push("rlimits".to_owned());
        names
    }

    /// One or two sentences for the tool description on what is in force here, or why the tool
    /// is unavailable.
    pub(crate) fn describe(&self) -> String {
        let ready = match &self.platform.state {
            Ok(ready) => ready,
            Err(why) => return format!("UNAVAILABLE on this machine: {why}."),
        };
        let layers = &ready.plan.layers;
        let mut sentence = format!(
            "Here: Python {} in a kernel sandbox (own user, pid, mount and network namespaces: no network, no other processes; only the Python runtime read-only and a private {} MiB scratch directory /scratch; unprivileged, no capabilities, seccomp{}{}), at most {} processes, {} MiB memory, {} s CPU; runs beyond {} at once queue.",
            ready.version,
            plan::SCRATCH_BYTES / (1024 * 1024),
            layers
                .landlock_abi
                .map_or_else(String::new, |abi| format!(", Landlock ABI {abi}")),
            if layers.cgroups.pids.is_some() && layers.cgroups.memory.is_some() {
                ", pids and memory cgroup"
            } else {
                ""
            },
            PROCESS_LIMIT,
            MEMORY_LIMIT_BYTES / (1024 * 1024),
            MAX_TIMEOUT.as_secs() + 1,
            self.slot_count,
        );
        if !ready.missing.is_empty() {
            let missing: Vec<String> = ready
                .missing
                .iter()
                .map(|missing| format!("no {} ({})", missing.layer, missing.reason))
                .collect();
            sentence.push_str(&format!(" DEGRADED here: {}.", missing.join("; ")));
        }
        sentence
    }

    /// Queues, checks and runs one snippet. `cancelled` resolves if the caller gives up.
    pub(crate) async fn run(
        &self,
        request: &CodeRequest,
        cancelled: impl Future<Output = ()>,
    ) -> Result<CodeRun, SandboxError> {
        let ready = self.platform.ready().ok_or_else(|| {
            SandboxError::Unavailable(
                self.platform
                    .state
                    .as_ref()
                    .err()
                    .cloned()
                    .unwrap_or_default(),
            )
        })?;
        tokio::pin!(cancelled);
        let queued_at = Instant::now();
        let waiting = self.waiting.fetch_add(1, Ordering::SeqCst);
        let leave_queue = WaitingGuard(&self.waiting);
        if waiting >= MAX_QUEUED && self.slots.available_permits() == 0 {
            return Err(SandboxError::Busy {
                running: self.slot_count,
                waiting,
            });
        }
        let permit = tokio::select! {
            permit = self.slots.acquire() => permit.expect("the run slots are never closed"),
            () = &mut cancelled => {
                return Err(SandboxError::CancelledWhileQueued {
                    waited_ms: queued_at.elapsed().as_millis() as u64,
                });
            }
        };
        drop(leave_queue);
        let queued = queued_at.elapsed();
        let result = self.run_now(ready, request, cancelled, queued).await;
        drop(permit);
        result
    }

    async fn run_now(
        &self,
        ready: &platform::Ready,
        request: &CodeRequest,
        cancelled: impl Future<Output = ()>,
        queued: Duration,
    ) -> Result<CodeRun, SandboxError> {
        let run_directory = WorkDir::create(&self.work_root)?;
        let cgroups = if ready.plan.layers.cgroups.is_empty() {
            None
        } else {
            Some(cgroup::RunCgroups::create(
                &ready.plan.layers.cgroups,
                cgroup::CgroupLimits {
                    processes: PROCESS_LIMIT + 1,
                    memory_bytes: MEMORY_LIMIT_BYTES,
                },
            )?)
        };
        let modules = ALLOWED_MODULES.join(",");
        let marker = run_directory.path().to_string_lossy().into_owned();
        let nonce = format!("{:016x}", rand::rng().random::<u64>());
        let arguments = [
            "-I",
            "-S",
            "-B",
            "-c",
            GUARD_SCRIPT,
            "run",
            modules.as_str(),
            marker.as_str(),
        ];
        let input =
            serde_json::json!({"code": request.code, "stdin": request.stdin, "nonce": nonce});
        let finished = process::run(
            Confined {
                plan: &ready.plan,
                run_directory: run_directory.path(),
                arguments: &arguments,
                limits: limits(request.timeout),
                cgroups: cgroups.as_ref(),
            },
            input.to_string().into_bytes(),
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
            queued_ms = queued.as_millis() as u64,
            "snippet finished"
        );
        if finished.stopped_by.is_none()
            && finished.exit_code == Some(REFUSED_EXIT)
            && let Some(problems) = read_verdict(&finished.stdout.bytes, &nonce)
        {
            return Err(SandboxError::Refused { problems });
        }
        Ok(code_run(finished, queued))
    }
}

/// Takes a snippet off the waiting count when it leaves the queue, however it leaves.
struct WaitingGuard<'a>(&'a AtomicUsize);

impl Drop for WaitingGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether `run_python` runs here with every layer, with fewer, or not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SandboxHealth {
    Complete,
    Degraded,
    Unavailable,
}

/// The result an agent gets from a finished run.
fn code_run(finished: process::Finished, queued: Duration) -> CodeRun {
    let stopped_by = match finished.stopped_by {
        Some(StopReason::Timeout) => Some(StoppedBy::Timeout),
        Some(StopReason::OutputLimit) => Some(StoppedBy::OutputLimit),
        Some(StopReason::Cancelled) => Some(StoppedBy::Cancelled),
        None if finished.out_of_memory => Some(StoppedBy::MemoryLimit),
        None => None,
    };
    CodeRun {
        stdout: String::from_utf8_lossy(&finished.stdout.bytes).into_owned(),
        stderr: String::from_utf8_lossy(&finished.stderr.bytes).into_owned(),
        exit_code: finished.exit_code,
        signal: finished.signal.map(signal_name),
        timed_out: finished.stopped_by == Some(StopReason::Timeout),
        stopped_by,
        duration_ms: finished.duration.as_millis() as u64,
        queued_ms: queued.as_millis() as u64,
        stdout_truncated: finished.stdout.truncated,
        stderr_truncated: finished.stderr.truncated,
    }
}

/// The static check's problems, when `stdout` is the guard's verdict for this run's `nonce`.
fn read_verdict(stdout: &[u8], nonce: &str) -> Option<Vec<String>> {
    #[derive(Deserialize)]
    struct Verdict {
        nonce: String,
        problems: Vec<Problem>,
    }
    #[derive(Deserialize)]
    struct Problem {
        line: u64,
        message: String,
    }
    let verdict: Verdict = serde_json::from_slice(stdout).ok()?;
    (verdict.nonce == nonce && !verdict.problems.is_empty()).then(|| {
        verdict
            .problems
            .into_iter()
            .map(|problem| format!("line {}: {}", problem.line, problem.message))
            .collect()
    })
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
        libc::SIGSYS => "SIGSYS",
        other => return format!("signal {other}"),
    };
    name.to_owned()
}

/// The limits of one run with this wall-clock deadline.
fn limits(wall_clock: Duration) -> Limits {
    Limits {
        wall_clock,
        cpu_seconds: wall_clock.as_secs() + 1,
        address_space_bytes: MEMORY_LIMIT_BYTES,
        file_size_bytes: FILE_SIZE_LIMIT_BYTES,
        open_files: 32,
        processes: u64::from(PROCESS_LIMIT),
        output_bytes: OUTPUT_LIMIT_BYTES,
    }
}

/// A fresh private directory for one run (the new root's mount point, and the intermediate's
/// working directory), removed on drop.
#[derive(Debug)]
pub(crate) struct WorkDir(PathBuf);

impl WorkDir {
    pub(crate) fn create(root: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt as _;
        let path = root.join(format!("tool-cli-run-{:016x}", rand::rng().random::<u64>()));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(Self(path))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests;
