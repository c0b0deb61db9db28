//! A pids cgroup per run: the process-count limit that holds even when the daemon runs as root.
//!
//! `RLIMIT_NPROC` counts every process of the *user*, and the kernel does not apply it to root at
//! all, so for a daemon running as root it limits nothing. A cgroup's `pids.max` counts the
//! processes and threads *in the cgroup*, whoever owns them. When the pids controller is mounted
//! and our own cgroup directory is writable (root on cgroup v1, or a delegated v2 subtree), every
//! run gets a fresh child cgroup with `pids.max` set; the child joins it in `pre_exec` before
//! `exec`, so nothing it forks can start outside it; and at the end every process still listed
//! is killed and the directory removed. Where that is not possible, the run goes ahead without it
//! and the tool's description says so.

use rand::RngExt as _;
use std::{
    ffi::CString,
    io,
    os::unix::ffi::OsStrExt as _,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

/// Where new per-run cgroups are made: our own cgroup's directory in the pids hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PidsRoot(PathBuf);

impl PidsRoot {
    /// Our cgroup directories in the hierarchies that may have the pids controller, from the
    /// text of `/proc/self/mountinfo` and `/proc/self/cgroup`: a v1 pids hierarchy first, then a
    /// v2 one (where pids may or may not be enabled). Pure; whether one is usable is tested by
    /// [`PidsRoot::usable`].
    pub(crate) fn locate(mountinfo: &str, own_cgroups: &str) -> Vec<Self> {
        let mut version_1 = Vec::new();
        let mut version_2 = Vec::new();
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
            let (found, path) = match *fs_type {
                "cgroup" if super_options.split(',').any(|option| option == "pids") => (
                    &mut version_1,
                    own_cgroups.lines().find_map(|line| {
                        let mut parts = line.splitn(3, ':');
                        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
                        controllers
                            .split(',')
                            .any(|controller| controller == "pids")
                            .then_some(path)
                    }),
                ),
                "cgroup2" => (
                    &mut version_2,
                    own_cgroups
                        .lines()
                        .find_map(|line| line.strip_prefix("0::")),
                ),
                _ => continue,
            };
            if let Some(path) = path {
                // Inside a container the mount's root may itself be a cgroup path; our path is
                // relative to the hierarchy, so take the mount's root off first.
                let path = path.strip_prefix(mount_root).unwrap_or(path);
                let relative = path.trim_start_matches('/');
                found.push(Self(Path::new(mount_point).join(relative)));
            }
        }
        version_1.extend(version_2);
        version_1
    }

    /// The root for this process, if the pids controller is mounted and we can use it.
    pub(crate) fn detect() -> Option<Self> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        Self::locate(&mountinfo, &own)
            .into_iter()
            .find(Self::usable)
    }

    /// Whether a child cgroup with a `pids.max` can be made here (and is removed again).
    fn usable(&self) -> bool {
        match RunCgroup::create(self, 1) {
            Ok(cgroup) => {
                drop(cgroup);
                true
            }
            Err(error) => {
                tracing::debug!(root = %self.0.display(), %error, "no pids cgroup for the sandbox");
                false
            }
        }
    }
}

/// One run's cgroup; dropping it kills whatever is left inside and removes it.
#[derive(Debug)]
pub(crate) struct RunCgroup {
    directory: PathBuf,
    /// `cgroup.procs` as a C string, so `pre_exec` can open it without allocating.
    procs: CString,
}

impl RunCgroup {
    /// Makes a fresh child cgroup allowing at most `max_processes` tasks.
    pub(crate) fn create(root: &PidsRoot, max_processes: u32) -> io::Result<Self> {
        let name = format!(
            "tool-cli-run-{}-{:016x}",
            std::process::id(),
            rand::rng().random::<u64>()
        );
        let directory = root.0.join(name);
        std::fs::create_dir(&directory)?;
        let cgroup = Self {
            procs: CString::new(directory.join("cgroup.procs").as_os_str().as_bytes())
                .map_err(io::Error::other)?,
            directory,
        };
        // Without pids.max (controller not enabled here) the cgroup limits nothing: refuse it.
        std::fs::write(cgroup.directory.join("pids.max"), max_processes.to_string())?;
        Ok(cgroup)
    }

    /// The path a child writes `0` to in order to join.
    pub(crate) fn procs_path(&self) -> &CString {
        &self.procs
    }

    /// The processes in the cgroup now.
    pub(crate) fn members(&self) -> Vec<i32> {
        std::fs::read_to_string(self.directory.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.trim().parse().ok())
            .collect()
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

impl Drop for RunCgroup {
    fn drop(&mut self) {
        self.kill_all(Duration::from_secs(2));
        // rmdir fails while a killed task is still exiting; it is gone within moments.
        let started = Instant::now();
        while let Err(error) = std::fs::remove_dir(&self.directory) {
            if error.kind() == io::ErrorKind::NotFound || started.elapsed() > Duration::from_secs(2)
            {
                break;
            }
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_the_v1_pids_hierarchy() {
        let mountinfo = "\
24 31 0:22 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs rw,mode=755
30 24 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
32 24 0:29 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
33 24 0:30 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";
        let own = "8:pids:/jobs/42\n4:memory:/x\n0::/";
        assert_eq!(
            PidsRoot::locate(mountinfo, own),
            [
                PidsRoot(PathBuf::from("/sys/fs/cgroup/pids/jobs/42")),
                PidsRoot(PathBuf::from("/sys/fs/cgroup/unified")),
            ]
        );
    }

    #[test]
    fn locates_a_v2_hierarchy_and_nothing_without_one() {
        let mountinfo = "35 24 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate";
        assert_eq!(
            PidsRoot::locate(mountinfo, "0::/user.slice/session-1.scope"),
            [PidsRoot(PathBuf::from(
                "/sys/fs/cgroup/user.slice/session-1.scope"
            ))]
        );
        assert_eq!(
            PidsRoot::locate("30 24 0:27 / /proc rw - proc proc rw", "0::/"),
            []
        );
        // A container whose cgroup namespace root is mounted at /sys/fs/cgroup.
        let mountinfo = "35 24 0:30 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw";
        assert_eq!(
            PidsRoot::locate(mountinfo, "0::/docker/abc/job"),
            [PidsRoot(PathBuf::from("/sys/fs/cgroup/job"))]
        );
    }
}
