//! What this machine lets the sandbox do, found out once at start-up by trying it: which Python
//! interpreter, which files its runtime needs, and which kernel layers really apply.
//!
//! The interpreter is asked (unconfined, empty environment) for its version and its files; then
//! a probe runs it under every layer the kernel might grant. If a setup step fails, the layer it
//! belongs to is dropped and the probe runs again, when that layer is optional (Landlock, the
//! fresh `/proc`, the IPC/UTS/cgroup namespaces, the cgroups); a failure of an essential layer
//! (the user, pid, mount and network namespaces, the mount tree, the unprivileged ids, dropped
//! capabilities, `no_new_privs`, seccomp) makes the tool unavailable: it never runs a snippet
//! with less. A probe that starts is also checked from outside, in `/proc/PID/status` and
//! `/proc/PID/ns/*` of the sandbox process: its ids, its five empty capability sets,
//! `NoNewPrivs`, `Seccomp` and namespaces other than ours. The result is plain data the tool's
//! description and the runs read.

use std::{
    ffi::OsStr,
    path::{Path, PathBuf},
    time::Duration,
};

use super::{
    ALLOWED_MODULES, GUARD_IMPORTS, MEMORY_LIMIT_BYTES,
    cgroup::{CgroupLimits, CgroupRoots, RunCgroups},
    confine::Stage,
    landlock,
    layout::{REPORT_SCRIPT, RuntimeLayout, RuntimeReport},
    plan::{Identity, Layers, Limits, SandboxPlan},
    process::{self, Confined, RunError},
    seccomp,
};

/// The oldest Python the guard script supports (audit hooks arrived in 3.8).
const MINIMUM_MINOR: u32 = 8;

/// What the probe runs inside the sandbox: print the version, wait for stdin to close (while the
/// daemon inspects the process from outside), then tell whether the tree's root can be listed,
/// which Landlock forbids (no rule covers it) and the mount tree alone allows.
const PROBE: &str = "import os, sys\n\
    print('%d.%d.%d' % sys.version_info[:3], flush=True)\n\
    sys.stdin.read()\n\
    try:\n    os.listdir('/')\n    print('root listable')\n\
    except PermissionError:\n    print('root not listable')";

/// A layer that is missing here, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MissingLayer {
    pub(crate) layer: &'static str,
    pub(crate) reason: String,
}

/// A machine where snippets can run.
#[derive(Debug, Clone)]
pub(crate) struct Ready {
    /// `3.11.7`, say.
    pub(crate) version: String,
    pub(crate) plan: SandboxPlan,
    /// Optional layers the kernel did not grant (the tool is then "degraded").
    pub(crate) missing: Vec<MissingLayer>,
}

/// What was found: a sandbox ready to run snippets, or why there is none (a sentence for the
/// tool's description).
#[derive(Debug, Clone)]
pub(crate) struct Platform {
    pub(crate) state: Result<Ready, String>,
}

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
        // Orphans of a run are re-parented to us instead of init, so we can reap them and be
        // sure they are gone.
        // SAFETY: prctl with integer arguments only.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        Self {
            state: detect(python, work_root).await,
        }
    }

    /// The sandbox, when snippets can run here.
    pub(crate) fn ready(&self) -> Option<&Ready> {
        self.state.as_ref().ok()
    }
}

async fn detect(python: Option<&Path>, work_root: &Path) -> Result<Ready, String> {
    let candidate = match python {
        Some(path) => path.to_owned(),
        None => {
            let path = std::env::var_os("PATH");
            ["python3", "python"]
                .iter()
                .find_map(|name| find_on_path(name, path.as_deref()))
                .ok_or_else(|| {
                    "no Python interpreter was found (looked for python3 and python on PATH); \
                     install Python 3.8 or later, or start the demo server with --python PATH"
                        .to_owned()
                })?
        }
    };
    let cannot_use = |why: String| {
        format!(
            "the Python interpreter {} cannot be used: {why}",
            candidate.display()
        )
    };
    let report = runtime_report(&candidate).await.map_err(cannot_use)?;
    let minor: u32 = report
        .version
        .split('.')
        .nth(1)
        .and_then(|minor| minor.parse().ok())
        .unwrap_or(0);
    if !report.version.starts_with("3.") || minor < MINIMUM_MINOR {
        return Err(cannot_use(format!(
            "it is Python {}; the sandbox needs 3.{MINIMUM_MINOR} or later",
            report.version
        )));
    }
    let version = report.version.clone();
    let layout =
        RuntimeLayout::from_report(report).map_err(|error| cannot_use(error.to_string()))?;
    let programs = seccomp::programs()
        .map_err(|error| format!("the kernel sandbox cannot be built here: {error}"))?;
    let cgroups = tokio::task::spawn_blocking(CgroupRoots::detect)
        .await
        .unwrap_or_default();
    let abi = landlock::kernel_abi();
    let mut missing = Vec::new();
    if abi == 0 {
        missing.push(MissingLayer {
            layer: "Landlock",
            reason: "the kernel has no Landlock or it is disabled".to_owned(),
        });
    }
    if cgroups.pids.is_none() {
        missing.push(MissingLayer {
            layer: "pids cgroup",
            reason: "no writable cgroup with the pids controller (RLIMIT_NPROC still applies)"
                .to_owned(),
        });
    }
    if cgroups.memory.is_none() {
        missing.push(MissingLayer {
            layer: "memory cgroup",
            reason: "no writable cgroup with the memory controller (RLIMIT_AS still applies)"
                .to_owned(),
        });
    }
    let base = SandboxPlan::new(
        layout,
        Layers::everything(abi, cgroups),
        Identity::for_this_process(),
        programs,
    );
    settle(base, work_root, version, missing).await
}

/// The layer a failed setup step belongs to, turned off in `layers`, when it is optional; `None`
/// when the step is essential (the tool must then refuse to run). Pure.
pub(crate) fn drop_layer(layers: &mut Layers, stage: Stage) -> Option<&'static str> {
    match stage {
        Stage::LandlockScratch | Stage::LandlockRestrict if layers.landlock_abi.is_some() => {
            layers.landlock_abi = None;
            Some("Landlock")
        }
        Stage::MountProc if layers.fresh_proc => {
            layers.fresh_proc = false;
            Some("fresh /proc")
        }
        Stage::JoinCgroup if !layers.cgroups.is_empty() => {
            layers.cgroups = CgroupRoots::default();
            Some("pids and memory cgroups")
        }
        Stage::Hostname if layers.uts_namespace => {
            layers.uts_namespace = false;
            Some("UTS namespace")
        }
        Stage::CloneNamespaces
            if layers.ipc_namespace || layers.uts_namespace || layers.cgroup_namespace =>
        {
            layers.ipc_namespace = false;
            layers.uts_namespace = false;
            layers.cgroup_namespace = false;
            Some("IPC, UTS and cgroup namespaces")
        }
        _ => None,
    }
}

/// Probes `base` and, while an optional layer fails, the plan without it: the plan that works,
/// or why none does.
pub(crate) async fn settle(
    base: SandboxPlan,
    work_root: &Path,
    version: String,
    mut missing: Vec<MissingLayer>,
) -> Result<Ready, String> {
    let mut layers = base.layers.clone();
    for _attempt in 0..8 {
        let plan = base.with_layers(layers.clone());
        match probe(&plan, work_root).await {
            Ok(outcome) => {
                if layers.landlock_abi.is_some() && outcome.root_listable {
                    // Applied without an error, yet not in force: say so and do not claim it.
                    layers.landlock_abi = None;
                    missing.push(MissingLayer {
                        layer: "Landlock",
                        reason: "the ruleset was applied but did not restrict".to_owned(),
                    });
                    continue;
                }
                tracing::debug!(python = %plan.layout.executable.display(), %version,
                    ?layers, "sandbox ready");
                return Ok(Ready {
                    version,
                    plan,
                    missing,
                });
            }
            Err(ProbeFailure::Setup(failure)) => match drop_layer(&mut layers, failure.stage) {
                Some(layer) => missing.push(MissingLayer {
                    layer,
                    reason: failure.to_string(),
                }),
                None => {
                    return Err(format!(
                        "the kernel sandbox cannot be set up here ({failure}); run_python \
                         refuses to run code without it"
                    ));
                }
            },
            Err(ProbeFailure::Other(why)) => {
                return Err(format!(
                    "the kernel sandbox does not work here: {why}; run_python refuses to run \
                     code without it"
                ));
            }
        }
    }
    Err(
        "the kernel sandbox cannot be set up here (the probe did not settle); run_python \
         refuses to run code without it"
            .to_owned(),
    )
}

/// Asks the interpreter, unconfined and with an empty environment, for its [`RuntimeReport`].
async fn runtime_report(program: &Path) -> Result<RuntimeReport, String> {
    let modules: Vec<&str> = ALLOWED_MODULES
        .iter()
        .chain(GUARD_IMPORTS.iter())
        .copied()
        .collect();
    let asked = tokio::process::Command::new(program)
        .args(["-I", "-S", "-B", "-c", REPORT_SCRIPT])
        .args(&modules)
        .env_clear()
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(Duration::from_secs(20), asked).await {
        Ok(Ok(output)) => output,
        Ok(Err(error)) => return Err(error.to_string()),
        Err(_) => return Err("it did not answer within 20 s".to_owned()),
    };
    if !output.status.success() {
        return Err(format!(
            "it ended with {} ({})",
            output.status,
            String::from_utf8_lossy(&output.stderr)
                .trim()
                .lines()
                .last()
                .unwrap_or_default()
        ));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|error| format!("its description of itself is not JSON: {error}"))
}

/// What a probe that ran found.
struct ProbeOutcome {
    root_listable: bool,
}

enum ProbeFailure {
    Setup(process::SetupFailure),
    Other(String),
}

/// Runs [`PROBE`] under `plan` and checks the sandbox process from outside while it waits.
async fn probe(plan: &SandboxPlan, work_root: &Path) -> Result<ProbeOutcome, ProbeFailure> {
    let other = |why: String| ProbeFailure::Other(why);
    let run_directory = super::WorkDir::create(work_root).map_err(|error| {
        other(format!(
            "cannot make a run directory in {}: {error}",
            work_root.display()
        ))
    })?;
    let cgroups = if plan.layers.cgroups.is_empty() {
        None
    } else {
        Some(
            RunCgroups::create(
                &plan.layers.cgroups,
                CgroupLimits {
                    processes: 4,
                    memory_bytes: MEMORY_LIMIT_BYTES,
                },
            )
            .map_err(|error| other(format!("cannot make the run's cgroups: {error}")))?,
        )
    };
    let limits = Limits {
        wall_clock: Duration::from_secs(20),
        cpu_seconds: 10,
        address_space_bytes: MEMORY_LIMIT_BYTES,
        file_size_bytes: 0,
        open_files: 32,
        processes: 2,
        output_bytes: 4096,
    };
    let confined = Confined {
        plan,
        run_directory: run_directory.path(),
        arguments: &["-I", "-S", "-B", "-c", PROBE],
        limits,
        cgroups: cgroups.as_ref(),
    };
    let started = match process::start(&confined).await {
        Ok(started) => started,
        Err(RunError::Setup(failure)) => return Err(ProbeFailure::Setup(failure)),
        Err(error) => return Err(other(error.to_string())),
    };
    let inspected = inspect(started.sandbox_pid(), plan);
    let finished = process::supervise(
        started,
        Vec::new(),
        limits,
        cgroups.as_ref(),
        std::future::pending(),
    )
    .await
    .map_err(|error| other(error.to_string()))?;
    inspected.map_err(|why| other(format!("the probe ran, but {why}")))?;
    let stdout = String::from_utf8_lossy(&finished.stdout.bytes).into_owned();
    if finished.exit_code != Some(0) {
        return Err(other(format!(
            "the interpreter does not run in the sandbox ({}): {}",
            finished.exit_code.map_or_else(
                || format!("signal {}", finished.signal.unwrap_or(0)),
                |code| format!("exit code {code}")
            ),
            String::from_utf8_lossy(&finished.stderr.bytes)
                .trim()
                .lines()
                .last()
                .unwrap_or_default()
        )));
    }
    Ok(ProbeOutcome {
        root_listable: stdout.contains("root listable"),
    })
}

/// Checks from outside that the layers of `plan` are in force on the running sandbox process.
fn inspect(pid: i32, plan: &SandboxPlan) -> Result<(), String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|error| format!("its /proc/{pid}/status cannot be read: {error}"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
            .unwrap_or_default()
    };
    let identity = plan.identity;
    for (name, expected) in [("Uid", identity.uid), ("Gid", identity.gid)] {
        let ids: Vec<&str> = field(name).split_whitespace().collect();
        if ids.len() != 4 || ids.iter().any(|id| *id != expected.to_string()) {
            return Err(format!("its {name} is {ids:?}, not {expected}"));
        }
    }
    for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        if !field(set).trim_start_matches('0').is_empty() {
            return Err(format!("its {set} is {}, not empty", field(set)));
        }
    }
    if field("NoNewPrivs") != "1" {
        return Err("no_new_privs is not set".to_owned());
    }
    if plan.layers.seccomp && field("Seccomp") != "2" {
        return Err(format!("its Seccomp mode is {:?}, not 2", field("Seccomp")));
    }
    let layers = &plan.layers;
    for (namespace, expected) in [
        ("user", true),
        ("pid", true),
        ("mnt", true),
        ("net", true),
        ("ipc", layers.ipc_namespace),
        ("uts", layers.uts_namespace),
        ("cgroup", layers.cgroup_namespace),
    ] {
        if !expected {
            continue;
        }
        let theirs = std::fs::read_link(format!("/proc/{pid}/ns/{namespace}"));
        let ours = std::fs::read_link(format!("/proc/self/ns/{namespace}"));
        match (theirs, ours) {
            (Ok(theirs), Ok(ours)) if theirs != ours => {}
            (Ok(_), Ok(_)) => return Err(format!("it shares our {namespace} namespace")),
            (Err(error), _) | (_, Err(error)) => {
                return Err(format!("its {namespace} namespace cannot be read: {error}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_layers_are_dropped_and_essential_ones_refuse() {
        let everything = Layers::everything(7, CgroupRoots::default());
        for (stage, dropped) in [
            (Stage::LandlockRestrict, Some("Landlock")),
            (Stage::LandlockScratch, Some("Landlock")),
            (Stage::MountProc, Some("fresh /proc")),
            (Stage::Hostname, Some("UTS namespace")),
            (
                Stage::CloneNamespaces,
                Some("IPC, UTS and cgroup namespaces"),
            ),
            // The cgroups were not found, so joining them cannot be what failed.
            (Stage::JoinCgroup, None),
            (Stage::Seccomp, None),
            (Stage::NoNewPrivileges, None),
            (Stage::Capabilities, None),
            (Stage::BoundingSet, None),
            (Stage::UidMap, None),
            (Stage::PivotRoot, None),
            (Stage::TreeBind, None),
            (Stage::SetUserId, None),
            (Stage::Exec, None),
        ] {
            let mut layers = everything.clone();
            assert_eq!(drop_layer(&mut layers, stage), dropped, "{stage:?}");
            assert_eq!(layers == everything, dropped.is_none(), "{stage:?}");
        }
        // Once the optional namespaces are off, a failing clone is the essential ones.
        let mut layers = everything.clone();
        drop_layer(&mut layers, Stage::CloneNamespaces);
        assert_eq!(drop_layer(&mut layers, Stage::CloneNamespaces), None);
        let mut layers = everything;
        drop_layer(&mut layers, Stage::LandlockRestrict);
        assert_eq!(drop_layer(&mut layers, Stage::LandlockRestrict), None);
    }

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
