//! A pids and memory cgroup per run: the limits on how many processes a snippet may have and how
//! much memory they may use together, which hold whoever the processes run as.
//!
//! `RLIMIT_NPROC` and `RLIMIT_AS` are per user and per process; a cgroup's `pids.max` and memory
//! limit count every process *in the cgroup*, and the snippet's children inherit it. Each
//! controller is found where this machine has it: a cgroup v1 hierarchy that mounts it, or the
//! v2 unified hierarchy when our cgroup delegates it to children (`cgroup.subtree_control`);
//! machines mix both (here: v1 pids and memory, an empty v2). Every run gets fresh child
//! cgroups with the limits written, the sandbox's intermediate process joins them before it
//! makes the snippet's namespaces (so nothing the snippet starts begins outside), the snippet's
//! cgroup namespace hides the hierarchy above, and at the end every process still listed is
//! killed and the directories removed. Where a controller is missing the run goes ahead with the
//! rlimits alone and the tool's description says so.

use rand::RngExt as _;
use std::{
    ffi::CString,
    io,
    os::unix::ffi::OsStrExt as _,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

/// A controller the sandbox uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Controller {
    Pids,
    Memory,
}

impl Controller {
    fn name(self) -> &'static str {
        match self {
            Self::Pids => "pids",
            Self::Memory => "memory",
        }
    }
}

/// Which cgroup version a directory belongs to (the limit files are named differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    V1,
    V2,
}

/// Where new per-run cgroups of one controller are made: our own cgroup's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ControllerRoot {
    pub(crate) directory: PathBuf,
    pub(crate) version: Version,
}

/// The controllers found usable at start-up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CgroupRoots {
    pub(crate) pids: Option<ControllerRoot>,
    pub(crate) memory: Option<ControllerRoot>,
}

/// The limits written into a run's cgroups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CgroupLimits {
    /// `pids.max`: processes and threads, the sandbox's own intermediate process included.
    pub(crate) processes: u32,
    /// The memory limit, with no swap on top.
    pub(crate) memory_bytes: u64,
}

/// One mount line of `/proc/self/mountinfo` that is a cgroup hierarchy.
struct Hierarchy<'a> {
    mount_root: &'a str,
    mount_point: &'a str,
    version: Version,
    /// The v1 controllers it carries (empty for v2).
    controllers: Vec<&'a str>,
}

fn hierarchies(mountinfo: &str) -> Vec<Hierarchy<'_>> {
    let mut found = Vec::new();
    for line in mountinfo.lines() {
        // mountinfo: ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS... - FSTYPE SOURCE SUPER_OPTIONS
        let Some((before, after)) = line.split_once(" - ") else {
            continue;
        };
        let fields: Vec<&str> = before.split(' ').collect();
        let rest: Vec<&str> = after.split(' ').collect();
        let (Some(mount_root), Some(mount_point), Some(fs_type)) =
            (fields.get(3), fields.get(4), rest.first())
        else {
            continue;
        };
        let super_options = rest.get(2).copied().unwrap_or("");
        let (version, controllers) = match *fs_type {
            "cgroup" => (Version::V1, super_options.split(',').collect()),
            "cgroup2" => (Version::V2, Vec::new()),
            _ => continue,
        };
        found.push(Hierarchy {
            mount_root,
            mount_point,
            version,
            controllers,
        });
    }
    found
}

/// Our cgroup path in a v1 hierarchy carrying `controller`, or in the v2 hierarchy.
fn own_path<'a>(own_cgroups: &'a str, version: Version, controller: &str) -> Option<&'a str> {
    own_cgroups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        match version {
            Version::V2 => (id == "0" && controllers.is_empty()).then_some(path),
            Version::V1 => controllers
                .split(',')
                .any(|name| name == controller)
                .then_some(path),
        }
    })
}

impl CgroupRoots {
    /// The candidate directories for `controller`, from the text of `/proc/self/mountinfo` and
    /// `/proc/self/cgroup`: a v1 hierarchy that mounts it first, then the v2 one (where it may or
    /// may not be delegated; [`CgroupRoots::detect`] tries). Pure.
    pub(crate) fn candidates(
        mountinfo: &str,
        own_cgroups: &str,
        controller: Controller,
    ) -> Vec<ControllerRoot> {
        let name = controller.name();
        let mut version_1 = Vec::new();
        let mut version_2 = Vec::new();
        for hierarchy in hierarchies(mountinfo) {
            let carries = match hierarchy.version {
                Version::V1 => hierarchy.controllers.contains(&name),
                Version::V2 => true,
            };
            if !carries {
                continue;
            }
            let Some(path) = own_path(own_cgroups, hierarchy.version, name) else {
                continue;
            };
            // Inside a container the mount's root may itself be a cgroup path; our path is
            // relative to the hierarchy, so take the mount's root off first.
            let path = path.strip_prefix(hierarchy.mount_root).unwrap_or(path);
            let root = ControllerRoot {
                directory: Path::new(hierarchy.mount_point).join(path.trim_start_matches('/')),
                version: hierarchy.version,
            };
            match hierarchy.version {
                Version::V1 => version_1.push(root),
                Version::V2 => version_2.push(root),
            }
        }
        version_1.extend(version_2);
        version_1
    }

    /// The usable controllers of this process: for each, the first candidate where a child
    /// cgroup with the limit written can really be made (and is removed again).
    pub(crate) fn detect() -> Self {
        let (Ok(mountinfo), Ok(own)) = (
            std::fs::read_to_string("/proc/self/mountinfo"),
            std::fs::read_to_string("/proc/self/cgroup"),
        ) else {
            return Self::default();
        };
        let usable = |controller| {
            Self::candidates(&mountinfo, &own, controller)
                .into_iter()
                .find(|root| {
                    let single = match controller {
                        Controller::Pids => Self {
                            pids: Some(root.clone()),
                            memory: None,
                        },
                        Controller::Memory => Self {
                            pids: None,
                            memory: Some(root.clone()),
                        },
                    };
                    let limits = CgroupLimits {
                        processes: 4,
                        memory_bytes: 64 * 1024 * 1024,
                    };
                    match RunCgroups::create(&single, limits) {
                        Ok(cgroups) => {
                            drop(cgroups);
                            true
                        }
                        Err(error) => {
                            tracing::debug!(
                                root = %root.directory.display(), controller = controller.name(),
                                %error, "cgroup not usable for the sandbox"
                            );
                            false
                        }
                    }
                })
        };
        Self {
            pids: usable(Controller::Pids),
            memory: usable(Controller::Memory),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pids.is_none() && self.memory.is_none()
    }
}

/// One run's cgroups; dropping them kills whatever is left inside and removes them.
#[derive(Debug)]
pub(crate) struct RunCgroups {
    /// The directories made (one for v2 carrying both controllers, else one per controller).
    directories: Vec<(PathBuf, Version)>,
    /// Each directory's `cgroup.procs` as a C string, so the child can join without allocating.
    procs: Vec<CString>,
    /// The directory whose memory files tell about out-of-memory kills.
    memory: Option<(PathBuf, Version)>,
}

impl RunCgroups {
    /// Makes fresh child cgroups of every root in `roots` with `limits` written. A limit that
    /// cannot be written (the controller is not enabled there) is an error: such a cgroup would
    /// limit nothing.
    pub(crate) fn create(roots: &CgroupRoots, limits: CgroupLimits) -> io::Result<Self> {
        let name = format!(
            "tool-cli-run-{}-{:016x}",
            std::process::id(),
            rand::rng().random::<u64>()
        );
        let mut cgroups = Self {
            directories: Vec::new(),
            procs: Vec::new(),
            memory: None,
        };
        for (controller, root) in [
            (Controller::Pids, &roots.pids),
            (Controller::Memory, &roots.memory),
        ] {
            let Some(root) = root else { continue };
            let directory = root.directory.join(&name);
            if !cgroups
                .directories
                .iter()
                .any(|(made, _)| made == &directory)
            {
                std::fs::create_dir(&directory)?;
                cgroups.procs.push(
                    CString::new(directory.join("cgroup.procs").as_os_str().as_bytes())
                        .map_err(io::Error::other)?,
                );
                cgroups.directories.push((directory.clone(), root.version));
            }
            match (controller, root.version) {
                (Controller::Pids, _) => {
                    std::fs::write(directory.join("pids.max"), limits.processes.to_string())?;
                }
                (Controller::Memory, Version::V1) => {
                    let bytes = limits.memory_bytes.to_string();
                    std::fs::write(directory.join("memory.limit_in_bytes"), &bytes)?;
                    // Memory plus swap, where swap accounting exists: no swapping around the
                    // limit.
                    let _ = std::fs::write(directory.join("memory.memsw.limit_in_bytes"), &bytes);
                    cgroups.memory = Some((directory.clone(), Version::V1));
                }
                (Controller::Memory, Version::V2) => {
                    std::fs::write(
                        directory.join("memory.max"),
                        limits.memory_bytes.to_string(),
                    )?;
                    let _ = std::fs::write(directory.join("memory.swap.max"), "0");
                    cgroups.memory = Some((directory.clone(), Version::V2));
                }
            }
        }
        Ok(cgroups)
    }

    /// The files a process writes `0` to in order to join every cgroup of the run.
    pub(crate) fn procs_paths(&self) -> &[CString] {
        &self.procs
    }

    /// The processes in the run's cgroups now.
    pub(crate) fn members(&self) -> Vec<i32> {
        let mut members: Vec<i32> = self
            .directories
            .iter()
            .flat_map(|(directory, _)| {
                std::fs::read_to_string(directory.join("cgroup.procs"))
                    .unwrap_or_default()
                    .lines()
                    .filter_map(|line| line.trim().parse().ok())
                    .collect::<Vec<i32>>()
            })
            .collect();
        members.sort_unstable();
        members.dedup();
        members
    }

    /// How many processes the memory controller killed for going over the limit.
    pub(crate) fn out_of_memory_kills(&self) -> u64 {
        let Some((directory, version)) = &self.memory else {
            return 0;
        };
        let file = match version {
            Version::V1 => "memory.oom_control",
            Version::V2 => "memory.events",
        };
        std::fs::read_to_string(directory.join(file))
            .unwrap_or_default()
            .lines()
            .find_map(|line| line.strip_prefix("oom_kill "))
            .and_then(|count| count.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Kills every member until none is left (a member may fork between listing and killing, but
    /// `pids.max` bounds how often), for at most `patience`. Returns the pids it signalled, so the
    /// caller can reap any that are its own children.
    pub(crate) fn kill_all(&self, patience: Duration) -> Vec<i32> {
        let started = Instant::now();
        let mut signalled = Vec::new();
        loop {
            let members = self.members();
            if members.is_empty() || started.elapsed() > patience {
                return signalled;
            }
            for pid in members {
                // SAFETY: kill has no memory effects; a stale pid is refused with ESRCH.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                signalled.push(pid);
            }
            std::thread::yield_now();
        }
    }
}

impl Drop for RunCgroups {
    fn drop(&mut self) {
        self.kill_all(Duration::from_secs(2));
        for (directory, _) in &self.directories {
            // rmdir fails while a killed task is still exiting; it is gone within moments.
            let started = Instant::now();
            while let Err(error) = std::fs::remove_dir(directory) {
                if error.kind() == io::ErrorKind::NotFound
                    || started.elapsed() > Duration::from_secs(2)
                {
                    break;
                }
                std::thread::yield_now();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MACHINE_LIKE_THIS_ONE: &str = "\
24 31 0:22 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs rw,mode=755
30 24 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
32 24 0:29 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
33 24 0:30 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";

    fn root(directory: &str, version: Version) -> ControllerRoot {
        ControllerRoot {
            directory: PathBuf::from(directory),
            version,
        }
    }

    #[test]
    fn locates_the_v1_hierarchies_before_the_v2_one() {
        let own = "8:pids:/jobs/42\n4:memory:/process_api/abc\n0::/";
        assert_eq!(
            CgroupRoots::candidates(MACHINE_LIKE_THIS_ONE, own, Controller::Pids),
            [
                root("/sys/fs/cgroup/pids/jobs/42", Version::V1),
                root("/sys/fs/cgroup/unified", Version::V2),
            ]
        );
        assert_eq!(
            CgroupRoots::candidates(MACHINE_LIKE_THIS_ONE, own, Controller::Memory),
            [
                root("/sys/fs/cgroup/memory/process_api/abc", Version::V1),
                root("/sys/fs/cgroup/unified", Version::V2),
            ]
        );
    }

    #[test]
    fn locates_a_v2_hierarchy_and_nothing_without_one() {
        let mountinfo = "35 24 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate";
        for controller in [Controller::Pids, Controller::Memory] {
            assert_eq!(
                CgroupRoots::candidates(mountinfo, "0::/user.slice/session-1.scope", controller),
                [root(
                    "/sys/fs/cgroup/user.slice/session-1.scope",
                    Version::V2
                )]
            );
        }
        assert_eq!(
            CgroupRoots::candidates(
                "30 24 0:27 / /proc rw - proc proc rw",
                "0::/",
                Controller::Pids
            ),
            []
        );
        // A container whose cgroup namespace root is mounted at /sys/fs/cgroup.
        let mountinfo = "35 24 0:30 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw";
        assert_eq!(
            CgroupRoots::candidates(mountinfo, "0::/docker/abc/job", Controller::Memory),
            [root("/sys/fs/cgroup/job", Version::V2)]
        );
    }

    #[test]
    fn this_machine_s_controllers_are_found_and_usable() {
        // The CI machine runs as root with cgroup v1 pids and memory mounted and an empty v2
        // hierarchy: both controllers must be found on v1. A machine without them would make
        // run_python report itself degraded, which the platform tests check separately.
        let roots = CgroupRoots::detect();
        assert_eq!(
            roots.pids.as_ref().map(|root| root.version),
            Some(Version::V1),
            "this test needs root and a cgroup v1 pids hierarchy: {roots:?}"
        );
        assert_eq!(
            roots.memory.as_ref().map(|root| root.version),
            Some(Version::V1),
            "this test needs root and a cgroup v1 memory hierarchy: {roots:?}"
        );
        let cgroups = RunCgroups::create(
            &roots,
            CgroupLimits {
                processes: 3,
                memory_bytes: 32 * 1024 * 1024,
            },
        )
        .unwrap();
        assert_eq!(cgroups.procs_paths().len(), 2);
        assert_eq!(cgroups.members(), Vec::<i32>::new());
        assert_eq!(cgroups.out_of_memory_kills(), 0);
    }
}
