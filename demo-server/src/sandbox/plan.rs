//! What confines a run, as data: the layers in force on this machine ([`Layers`]), the plan made
//! once at start-up from them ([`SandboxPlan`]), and the per-run [`ChildPlan`] it turns into
//! before each fork (paths as C strings, the mount steps, the id maps, the rlimits, a fresh
//! Landlock ruleset), so that the child has nothing left to compute.

use std::{
    ffi::CString,
    os::{fd::AsRawFd as _, fd::OwnedFd, fd::RawFd, unix::ffi::OsStrExt as _},
    path::Path,
    time::Duration,
};

use seccompiler::BpfProgram;

use super::{
    cgroup::{CgroupRoots, RunCgroups},
    confine::{ChildPlan, LandlockChild, MAX_ARGUMENTS, MAX_BINDS, MountStep, ResourceLimit},
    landlock::{self, LandlockError},
    layout::{RuntimeLayout, SCRATCH, TreeEntry},
};

/// The unprivileged user and group a snippet runs as when the daemon is root (`nobody`).
pub(crate) const UNPRIVILEGED_ID: u32 = 65_534;
/// The size of the scratch tmpfs (its pages also count against the memory cgroup).
pub(crate) const SCRATCH_BYTES: u64 = 16 * 1024 * 1024;
/// The host name inside the sandbox's UTS namespace.
const HOSTNAME: &[u8] = b"run-python";

/// The layers a run gets. The user, pid, mount and network namespaces, the mount tree, the
/// dropped capabilities, `no_new_privs` and the rlimits are always applied; the rest depends on
/// what the kernel granted at start-up (and tests turn layers off to prove the others alone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layers {
    /// The seccomp filter (essential; off only in tests).
    pub(crate) seccomp: bool,
    /// The Landlock ABI applied, if any.
    pub(crate) landlock_abi: Option<i32>,
    /// A fresh `/proc` for the pid namespace (without it the snippet has no `/proc` at all).
    pub(crate) fresh_proc: bool,
    pub(crate) ipc_namespace: bool,
    pub(crate) uts_namespace: bool,
    pub(crate) cgroup_namespace: bool,
    /// The pids and memory controllers found.
    pub(crate) cgroups: CgroupRoots,
}

impl Layers {
    /// Every layer this machine might grant, to probe from.
    pub(crate) fn everything(landlock_abi: i32, cgroups: CgroupRoots) -> Self {
        Self {
            seccomp: true,
            landlock_abi: (landlock_abi > 0).then_some(landlock_abi),
            fresh_proc: true,
            ipc_namespace: true,
            uts_namespace: true,
            cgroup_namespace: true,
            cgroups,
        }
    }

    fn clone_flags(&self) -> libc::c_int {
        let mut flags =
            libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::CLONE_NEWNET;
        for (enabled, flag) in [
            (self.ipc_namespace, libc::CLONE_NEWIPC),
            (self.uts_namespace, libc::CLONE_NEWUTS),
            (self.cgroup_namespace, libc::CLONE_NEWCGROUP),
        ] {
            if enabled {
                flags |= flag;
            }
        }
        flags
    }
}

/// The resource limits of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) wall_clock: Duration,
    /// RLIMIT_CPU soft limit (SIGXCPU); the hard limit, one second later, is SIGKILL.
    pub(crate) cpu_seconds: u64,
    /// RLIMIT_AS: address space per process, which caps what Python can allocate.
    pub(crate) address_space_bytes: u64,
    /// RLIMIT_FSIZE: the largest file it may write.
    pub(crate) file_size_bytes: u64,
    /// RLIMIT_NOFILE.
    pub(crate) open_files: u64,
    /// RLIMIT_NPROC: processes of the snippet's user in its own user namespace.
    pub(crate) processes: u64,
    /// Bytes of stdout and of stderr kept; more stops the process.
    pub(crate) output_bytes: usize,
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type Resource = libc::c_int;

impl Limits {
    fn resource_limits(&self) -> Vec<ResourceLimit> {
        let limit = |resource: Resource, soft: u64, hard: u64| ResourceLimit {
            resource: resource as libc::c_int,
            soft,
            hard,
        };
        vec![
            limit(libc::RLIMIT_CORE, 0, 0),
            limit(
                libc::RLIMIT_CPU,
                self.cpu_seconds,
                self.cpu_seconds.saturating_add(1),
            ),
            limit(
                libc::RLIMIT_AS,
                self.address_space_bytes,
                self.address_space_bytes,
            ),
            limit(
                libc::RLIMIT_FSIZE,
                self.file_size_bytes,
                self.file_size_bytes,
            ),
            limit(libc::RLIMIT_NOFILE, self.open_files, self.open_files),
            limit(libc::RLIMIT_NPROC, self.processes, self.processes),
        ]
    }
}

/// Who the snippet is, inside and outside its user namespace (the same numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    /// The daemon is root: the snippet becomes `nobody`, and root's supplementary groups are
    /// dropped before the sandbox process exists.
    pub(crate) daemon_is_root: bool,
}

impl Identity {
    /// `nobody` for a root daemon; the daemon's own ids otherwise (an unprivileged process can
    /// only map itself into a user namespace; the mount tree keeps its files out of reach).
    pub(crate) fn for_this_process() -> Self {
        // SAFETY: geteuid and getegid cannot fail and have no memory effects.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        if uid == 0 {
            Self {
                uid: UNPRIVILEGED_ID,
                gid: UNPRIVILEGED_ID,
                daemon_is_root: true,
            }
        } else {
            Self {
                uid,
                gid,
                daemon_is_root: false,
            }
        }
    }
}

/// Why a run's plan could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum PlanError {
    #[error("{0}")]
    Landlock(#[from] LandlockError),
    #[error("a path or argument of the sandbox contains a NUL byte")]
    NulByte,
    #[error("the sandbox tree has {0} binds; at most {MAX_BINDS} are supported")]
    TooManyBinds(usize),
    #[error("the interpreter gets {0} arguments; at most {MAX_ARGUMENTS} are supported")]
    TooManyArguments(usize),
}

/// The plan made at start-up.
#[derive(Debug, Clone)]
pub(crate) struct SandboxPlan {
    pub(crate) layout: RuntimeLayout,
    pub(crate) layers: Layers,
    pub(crate) identity: Identity,
    seccomp: Vec<BpfProgram>,
}

/// A run's child plan and the descriptor it refers to, which must stay open until the spawn.
#[derive(Debug)]
pub(crate) struct PreparedRun {
    pub(crate) child: ChildPlan,
    pub(crate) ruleset: Option<OwnedFd>,
}

fn c_string(bytes: &[u8]) -> Result<CString, PlanError> {
    CString::new(bytes).map_err(|_| PlanError::NulByte)
}

fn c_path(path: &Path) -> Result<CString, PlanError> {
    c_string(path.as_os_str().as_bytes())
}

/// A tree path relative to the new root (`/usr/lib` becomes `usr/lib`).
fn relative(path: &Path) -> Result<CString, PlanError> {
    c_path(path.strip_prefix("/").unwrap_or(path))
}

impl SandboxPlan {
    pub(crate) fn new(
        layout: RuntimeLayout,
        layers: Layers,
        identity: Identity,
        seccomp: Vec<BpfProgram>,
    ) -> Self {
        Self {
            layout,
            layers,
            identity,
            seccomp,
        }
    }

    /// The same plan with other layers (the probe's fallbacks and the layer tests).
    pub(crate) fn with_layers(&self, layers: Layers) -> Self {
        Self {
            layers,
            ..self.clone()
        }
    }

    /// The same plan with other seccomp programs (tests of what a failing layer does).
    #[cfg(test)]
    pub(crate) fn with_seccomp(&self, seccomp: Vec<BpfProgram>) -> Self {
        Self {
            seccomp,
            ..self.clone()
        }
    }

    /// The mount steps of the tree, relative to the new root.
    fn mount_steps(&self) -> Result<Vec<MountStep>, PlanError> {
        let mut creations = Vec::new();
        let mut binds = Vec::new();
        for entry in self.layout.tree() {
            match entry {
                TreeEntry::Directory(path) => {
                    creations.push(MountStep::Directory(relative(&path)?))
                }
                TreeEntry::Symlink { path, target } => creations.push(MountStep::Symlink {
                    target: c_path(&target)?,
                    path: relative(&path)?,
                }),
                TreeEntry::ReadOnlyDirectory(path) => binds.push(MountStep::Bind {
                    source: c_path(&path)?,
                    target: relative(&path)?,
                    read_only: true,
                }),
                TreeEntry::ReadOnlyFile(path) => {
                    creations.push(MountStep::File(relative(&path)?));
                    binds.push(MountStep::Bind {
                        source: c_path(&path)?,
                        target: relative(&path)?,
                        read_only: true,
                    });
                }
                TreeEntry::Device(path) => {
                    creations.push(MountStep::File(relative(&path)?));
                    binds.push(MountStep::Bind {
                        source: c_path(&path)?,
                        target: relative(&path)?,
                        read_only: false,
                    });
                }
            }
        }
        if binds.len() > MAX_BINDS {
            return Err(PlanError::TooManyBinds(binds.len()));
        }
        creations.extend(binds);
        Ok(creations)
    }

    /// The child plan of one run: `run_directory` is where the new root is mounted, `report`
    /// the write end of the report pipe, `arguments` the interpreter's arguments after its path.
    pub(crate) fn prepare(
        &self,
        run_directory: &Path,
        report: RawFd,
        limits: &Limits,
        cgroups: Option<&RunCgroups>,
        arguments: &[&str],
    ) -> Result<PreparedRun, PlanError> {
        let Identity {
            uid,
            gid,
            daemon_is_root,
        } = self.identity;
        if arguments.len() + 1 > MAX_ARGUMENTS {
            return Err(PlanError::TooManyArguments(arguments.len() + 1));
        }
        let ruleset = match self.layers.landlock_abi {
            Some(abi) => Some(landlock::run_ruleset(abi, &self.layout)?),
            None => None,
        };
        let program = c_path(&self.layout.executable)?;
        let mut all_arguments = vec![program.clone()];
        for argument in arguments {
            all_arguments.push(c_string(argument.as_bytes())?);
        }
        let child = ChildPlan {
            report,
            cgroup_procs: cgroups.map_or_else(Vec::new, |cgroups| cgroups.procs_paths().to_vec()),
            clear_supplementary_groups: daemon_is_root,
            clone_flags: self.layers.clone_flags(),
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            root: c_path(run_directory)?,
            root_options: c_string(
                format!("mode=0755,size=1m,nr_inodes=4096,uid={uid},gid={gid}").as_bytes(),
            )?,
            steps: self.mount_steps()?,
            scratch_mount: relative(Path::new(SCRATCH))?,
            scratch_options: c_string(
                format!("mode=0700,size={SCRATCH_BYTES},nr_inodes=1024,uid={uid},gid={gid}")
                    .as_bytes(),
            )?,
            proc_mount: if self.layers.fresh_proc {
                Some(c_string(b"proc")?)
            } else {
                None
            },
            scratch: c_string(SCRATCH.as_bytes())?,
            hostname: self.layers.uts_namespace.then(|| HOSTNAME.to_vec()),
            uid,
            gid,
            limits: limits.resource_limits(),
            landlock: ruleset.as_ref().map(|ruleset| LandlockChild {
                ruleset: ruleset.ruleset.as_raw_fd(),
                scratch_access: ruleset.scratch_access,
            }),
            seccomp: if self.layers.seccomp {
                self.seccomp.clone()
            } else {
                Vec::new()
            },
            program,
            arguments: all_arguments,
        };
        Ok(PreparedRun {
            child,
            ruleset: ruleset.map(|ruleset| ruleset.ruleset),
        })
    }
}
