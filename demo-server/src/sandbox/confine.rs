//! The code that runs between `fork` and `exec`: it puts the snippet's interpreter into its own
//! namespaces, mount tree, credentials and filters. Only raw system calls on data prepared
//! before the fork ([`ChildPlan`]) happen here: the parent is a multithreaded Tokio process, so
//! its forked copy may not allocate, lock, or run anything that is not async-signal-safe.
//!
//! Two processes take part (the shape of bubblewrap, without a second binary):
//!
//! - The **intermediate** is the child `std::process::Command` forks (its `pre_exec` hook is
//!   [`intermediate`], which never returns). It stays in the daemon's namespaces: it sets
//!   `PR_SET_PDEATHSIG`, joins the run's cgroups, drops supplementary groups when root, and
//!   `clone`s the sandbox process into fresh user, pid, mount, network, IPC, UTS and cgroup
//!   namespaces. From outside it writes the child's `uid_map`/`gid_map` (only the outside root
//!   may map the snippet to an unprivileged id such as `nobody`; the child itself could only map
//!   to its own uid), lets the child go on, reports the child's pid, closes every descriptor and
//!   waits, ending with the child's exit status (or signal). Killing it kills the child through
//!   its parent-death signal.
//! - The **sandbox process** ([`sandbox_process`]) is pid 1 of the new pid namespace, so when it
//!   ends the kernel kills everything the snippet started, `setsid` or not. It makes its mounts
//!   private, mounts the new root (a tmpfs) on the run's directory and works from inside it, takes
//!   detached copies of the runtime's directories with `open_tree` while it still has the daemon's
//!   file-system identity (the interpreter may live under `/root`), then switches to the
//!   unprivileged ids (it keeps its capabilities in its own user namespace: the old ids were not
//!   that namespace's root), creates the tree's directories, files and symlinks (a file on the
//!   tmpfs must be owned by a mapped id), attaches the runtime read-only (`mount_setattr`,
//!   `move_mount`) and the three devices, mounts the scratch tmpfs and a fresh `/proc`,
//!   `pivot_root`s and detaches the old root, makes `/` read-only, locks the secure bits, empties
//!   the bounding, ambient, effective, permitted and inheritable capability sets, sets
//!   `no_new_privs`, applies Landlock, closes every descriptor but stdio, sets the rlimits (after
//!   the descriptors: `RLIMIT_NOFILE` would refuse new ones while the daemon's are still open),
//!   installs the seccomp filters last and `execve`s the interpreter with an empty environment.
//!
//! Failures are written as fixed-size records to a report pipe the parent reads (the stage, the
//! errno, the index of the tree step), and the process exits with [`SETUP_FAILED`]; the pipe is
//! close-on-exec, so its end of file tells the parent the interpreter is running.

use std::{ffi::CString, io, os::fd::RawFd};

use seccompiler::BpfProgram;

/// The exit code of a sandbox whose setup failed (the report pipe says where).
pub(crate) const SETUP_FAILED: i32 = 125;

/// The steps of the setup, for the report and for deciding which layer a failure belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Stage {
    ParentDeathSignal = 1,
    JoinCgroup,
    ClearGroups,
    SyncPipe,
    CloneNamespaces,
    DenySetgroups,
    UidMap,
    GidMap,
    Release,
    MountPrivate,
    MountRoot,
    TreeDirectory,
    TreeSymlink,
    TreeFile,
    TreeBind,
    TreeReadOnly,
    MountScratch,
    MountProc,
    PivotRoot,
    DetachOldRoot,
    RootReadOnly,
    EnterScratch,
    Hostname,
    SetGroupId,
    SetUserId,
    ResourceLimit,
    SecureBits,
    BoundingSet,
    AmbientSet,
    Capabilities,
    NoNewPrivileges,
    LandlockScratch,
    LandlockRestrict,
    CloseDescriptors,
    Seccomp,
    Exec,
}

impl Stage {
    const ALL: [Stage; 36] = [
        Self::ParentDeathSignal,
        Self::JoinCgroup,
        Self::ClearGroups,
        Self::SyncPipe,
        Self::CloneNamespaces,
        Self::DenySetgroups,
        Self::UidMap,
        Self::GidMap,
        Self::Release,
        Self::MountPrivate,
        Self::MountRoot,
        Self::TreeDirectory,
        Self::TreeSymlink,
        Self::TreeFile,
        Self::TreeBind,
        Self::TreeReadOnly,
        Self::MountScratch,
        Self::MountProc,
        Self::PivotRoot,
        Self::DetachOldRoot,
        Self::RootReadOnly,
        Self::EnterScratch,
        Self::Hostname,
        Self::SetGroupId,
        Self::SetUserId,
        Self::ResourceLimit,
        Self::SecureBits,
        Self::BoundingSet,
        Self::AmbientSet,
        Self::Capabilities,
        Self::NoNewPrivileges,
        Self::LandlockScratch,
        Self::LandlockRestrict,
        Self::CloseDescriptors,
        Self::Seccomp,
        Self::Exec,
    ];

    fn from_u32(value: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|stage| *stage as u32 == value)
    }

    /// What the step does, for an error message.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::ParentDeathSignal => "setting the parent-death signal",
            Self::JoinCgroup => "joining the run's cgroup",
            Self::ClearGroups => "dropping supplementary groups",
            Self::SyncPipe => "making the setup pipe",
            Self::CloneNamespaces => "creating the user, pid, mount and network namespaces",
            Self::DenySetgroups => "writing setgroups",
            Self::UidMap => "writing the uid map",
            Self::GidMap => "writing the gid map",
            Self::Release => "releasing the sandbox process",
            Self::MountPrivate => "making the mount tree private",
            Self::MountRoot => "mounting the new root tmpfs",
            Self::TreeDirectory => "creating a directory of the tree",
            Self::TreeSymlink => "creating a symlink of the tree",
            Self::TreeFile => "creating a file mount point",
            Self::TreeBind => "binding a runtime path",
            Self::TreeReadOnly => "making a runtime path read-only",
            Self::MountScratch => "mounting the scratch tmpfs",
            Self::MountProc => "mounting a fresh /proc",
            Self::PivotRoot => "pivot_root into the new tree",
            Self::DetachOldRoot => "detaching the old root",
            Self::RootReadOnly => "making the new root read-only",
            Self::EnterScratch => "entering the scratch directory",
            Self::Hostname => "setting the host name",
            Self::SetGroupId => "switching to the unprivileged group",
            Self::SetUserId => "switching to the unprivileged user",
            Self::ResourceLimit => "setting a resource limit",
            Self::SecureBits => "locking the secure bits",
            Self::BoundingSet => "emptying the capability bounding set",
            Self::AmbientSet => "emptying the ambient capabilities",
            Self::Capabilities => "dropping every capability",
            Self::NoNewPrivileges => "setting no_new_privs",
            Self::LandlockScratch => "adding the scratch directory to the Landlock rules",
            Self::LandlockRestrict => "applying Landlock",
            Self::CloseDescriptors => "closing inherited file descriptors",
            Self::Seccomp => "installing the seccomp filter",
            Self::Exec => "starting the interpreter",
        }
    }
}

/// What the report pipe carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Report {
    /// The sandbox process exists; its pid as the daemon sees it.
    Started { pid: i32 },
    /// A setup step failed.
    Failed {
        stage: Stage,
        errno: i32,
        /// The index of the tree step, rlimit or filter concerned (0 otherwise).
        step: u32,
    },
}

/// The size of one record: kind, stage, value, step as four native-endian u32.
pub(crate) const RECORD_BYTES: usize = 16;

impl Report {
    fn encode(self) -> [u8; RECORD_BYTES] {
        let (kind, stage, value, step) = match self {
            Self::Started { pid } => (1u32, 0u32, pid, 0u32),
            Self::Failed { stage, errno, step } => (2, stage as u32, errno, step),
        };
        let mut record = [0; RECORD_BYTES];
        record[0..4].copy_from_slice(&kind.to_ne_bytes());
        record[4..8].copy_from_slice(&stage.to_ne_bytes());
        record[8..12].copy_from_slice(&value.to_ne_bytes());
        record[12..16].copy_from_slice(&step.to_ne_bytes());
        record
    }

    /// The records in what the pipe delivered; a torn or unknown record ends the list.
    pub(crate) fn decode_all(bytes: &[u8]) -> Vec<Self> {
        let word = |record: &[u8], at: usize| {
            u32::from_ne_bytes(record[at..at + 4].try_into().expect("four bytes"))
        };
        bytes
            .chunks_exact(RECORD_BYTES)
            .map_while(|record| match word(record, 0) {
                1 => Some(Self::Started {
                    pid: word(record, 8) as i32,
                }),
                2 => Some(Self::Failed {
                    stage: Stage::from_u32(word(record, 4))?,
                    errno: word(record, 8) as i32,
                    step: word(record, 12),
                }),
                _ => None,
            })
            .collect()
    }
}

/// One step of the mount tree; paths are relative to the new root (the sandbox process works
/// from inside it), sources are host paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MountStep {
    Directory(CString),
    /// An empty file to bind a file over.
    File(CString),
    Symlink {
        target: CString,
        path: CString,
    },
    /// Bind the host's `source` (with everything mounted below it) at `target`, read-only, or
    /// for a device node as it is.
    Bind {
        source: CString,
        target: CString,
        read_only: bool,
    },
}

/// The most binds a tree may have (their descriptors live on the stack).
pub(crate) const MAX_BINDS: usize = 64;

/// Landlock's part of the plan: the ruleset made by the parent (Landlock's crate, host paths),
/// and the access rights for the scratch directory, added by the child once it is mounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LandlockChild {
    pub(crate) ruleset: RawFd,
    pub(crate) scratch_access: u64,
}

/// One rlimit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResourceLimit {
    pub(crate) resource: libc::c_int,
    pub(crate) soft: u64,
    pub(crate) hard: u64,
}

/// Everything both processes need, prepared before the fork.
#[derive(Debug)]
pub(crate) struct ChildPlan {
    pub(crate) report: RawFd,
    pub(crate) cgroup_procs: Vec<CString>,
    pub(crate) clear_supplementary_groups: bool,
    pub(crate) clone_flags: libc::c_int,
    /// `/proc/PID/uid_map` contents, e.g. `65534 65534 1\n`.
    pub(crate) uid_map: Vec<u8>,
    pub(crate) gid_map: Vec<u8>,
    /// The host directory the new root is mounted on (the run's own directory).
    pub(crate) root: CString,
    pub(crate) root_options: CString,
    pub(crate) steps: Vec<MountStep>,
    /// The scratch and `/proc` mount points, relative to the new root.
    pub(crate) scratch_mount: CString,
    pub(crate) scratch_options: CString,
    pub(crate) proc_mount: Option<CString>,
    /// The scratch directory as the snippet sees it.
    pub(crate) scratch: CString,
    pub(crate) hostname: Option<Vec<u8>>,
    pub(crate) uid: libc::uid_t,
    pub(crate) gid: libc::gid_t,
    pub(crate) limits: Vec<ResourceLimit>,
    pub(crate) landlock: Option<LandlockChild>,
    pub(crate) seccomp: Vec<BpfProgram>,
    pub(crate) program: CString,
    pub(crate) arguments: Vec<CString>,
}

/// The most arguments the interpreter gets (the pointer array lives on the stack).
pub(crate) const MAX_ARGUMENTS: usize = 24;

/// Writes a report record; nothing to do if it fails (the parent then sees no record).
fn report(fd: RawFd, record: Report) {
    let bytes = record.encode();
    // SAFETY: write from a stack buffer we own; one write of 16 bytes to a pipe is atomic.
    unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Reports a failed step with the current errno and exits.
fn fail(fd: RawFd, stage: Stage, step: u32) -> ! {
    report(
        fd,
        Report::Failed {
            stage,
            errno: errno(),
            step,
        },
    );
    // SAFETY: _exit ends the process without running anything of the parent's.
    unsafe { libc::_exit(SETUP_FAILED) }
}

/// Writes `contents` to the file at `path` (a C string), in one write.
///
/// # Safety
/// Async-signal-safe: open, write and close only.
unsafe fn write_file(path: *const libc::c_char, contents: &[u8]) -> bool {
    // SAFETY: path is a NUL-terminated string; the buffer is ours.
    unsafe {
        let fd = libc::open(path, libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let written = libc::write(fd, contents.as_ptr().cast(), contents.len());
        let saved = errno();
        libc::close(fd);
        if written != contents.len() as isize {
            *libc::__errno_location() = saved;
            return false;
        }
        true
    }
}

/// `/proc/PID/NAME` in a stack buffer, NUL-terminated.
fn proc_path(buffer: &mut [u8; 64], pid: i32, name: &[u8]) -> *const libc::c_char {
    let mut digits = [0u8; 12];
    let mut count = 0;
    let mut value = pid.unsigned_abs();
    loop {
        digits[count] = b'0' + (value % 10) as u8;
        count += 1;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    let mut at = 0;
    for &byte in b"/proc/" {
        buffer[at] = byte;
        at += 1;
    }
    for index in (0..count).rev() {
        buffer[at] = digits[index];
        at += 1;
    }
    buffer[at] = b'/';
    at += 1;
    for &byte in name.iter().take(buffer.len() - at - 1) {
        buffer[at] = byte;
        at += 1;
    }
    buffer[at] = 0;
    buffer.as_ptr().cast()
}

/// Closes every descriptor from `first` up, with `close_range` where the kernel has it.
///
/// # Safety
/// Async-signal-safe system calls only.
unsafe fn close_from(first: libc::c_uint) -> bool {
    // SAFETY: close_range and close have no memory effects.
    unsafe {
        if libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0) == 0 {
            return true;
        }
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        let top = limit.rlim_cur.min(65_536) as libc::c_int;
        for fd in first as libc::c_int..top {
            libc::close(fd);
        }
        true
    }
}

/// The intermediate process (see the module docs): never returns; it exits with the sandbox
/// process's status, or with [`SETUP_FAILED`] after reporting a failed step.
pub(crate) fn intermediate(plan: &ChildPlan) -> io::Result<()> {
    let report_fd = plan.report;
    // SAFETY (whole block): raw system calls on data prepared before the fork; no allocation.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            fail(report_fd, Stage::ParentDeathSignal, 0);
        }
        // Mirroring a fatal signal below must not dump this copy of the daemon's memory.
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        for (index, procs) in plan.cgroup_procs.iter().enumerate() {
            // Join before the sandbox process exists, so nothing of the snippet starts outside.
            if !write_file(procs.as_ptr(), b"0") {
                fail(report_fd, Stage::JoinCgroup, index as u32);
            }
        }
        if plan.clear_supplementary_groups && libc::setgroups(0, std::ptr::null()) != 0 {
            fail(report_fd, Stage::ClearGroups, 0);
        }
        let mut sync = [0 as libc::c_int; 2];
        if libc::pipe2(sync.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            fail(report_fd, Stage::SyncPipe, 0);
        }
        // A raw clone, not fork(): the C library's fork runs at-fork handlers and takes locks
        // another thread of the daemon may have held when we were forked.
        let pid = libc::syscall(
            libc::SYS_clone,
            (plan.clone_flags | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        );
        if pid < 0 {
            fail(report_fd, Stage::CloneNamespaces, 0);
        }
        if pid == 0 {
            sandbox_process(plan, sync);
        }
        let pid = pid as libc::pid_t;
        libc::close(sync[0]);
        let mut path = [0u8; 64];
        let maps = [
            (&b"setgroups"[..], &b"deny"[..], Stage::DenySetgroups),
            (b"uid_map", &plan.uid_map, Stage::UidMap),
            (b"gid_map", &plan.gid_map, Stage::GidMap),
        ];
        for (name, contents, stage) in maps {
            if !write_file(proc_path(&mut path, pid, name), contents) {
                let saved = errno();
                libc::kill(pid, libc::SIGKILL);
                *libc::__errno_location() = saved;
                fail(report_fd, stage, 0);
            }
        }
        if libc::write(sync[1], b"g".as_ptr().cast(), 1) != 1 {
            libc::kill(pid, libc::SIGKILL);
            fail(report_fd, Stage::Release, 0);
        }
        libc::close(sync[1]);
        report(report_fd, Report::Started { pid });
        // Nothing of the daemon stays open here: not its pipes, not the report pipe (whose end
        // of file the parent waits for), not the snippet's stdio.
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        close_from(0);
        let mut status = 0;
        loop {
            let waited = libc::waitpid(pid, &mut status, 0);
            if waited == pid {
                break;
            }
            if waited < 0 && errno() != libc::EINTR {
                libc::_exit(SETUP_FAILED);
            }
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        if libc::WIFSIGNALED(status) {
            // End the same way, so the parent sees the signal that ended the snippet.
            let signal = libc::WTERMSIG(status);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(SETUP_FAILED)
    }
}

/// The new mount API's flags and `struct mount_attr` (Linux 5.12), which the libc crate lacks.
const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const MOUNT_ATTR_NOEXEC: u64 = 0x8;
#[repr(C)]
struct MountAttributes {
    set: u64,
    clear: u64,
    propagation: u64,
    user_namespace: u64,
}

/// `struct landlock_path_beneath_attr`, which the kernel declares packed.
#[repr(C, packed)]
struct PathBeneathAttribute {
    allowed_access: u64,
    parent_fd: i32,
}

/// `struct __user_cap_header_struct` and `struct __user_cap_data_struct` for `capset`.
#[repr(C)]
struct CapabilityHeader {
    version: u32,
    pid: libc::c_int,
}
#[repr(C)]
#[derive(Clone, Copy)]
struct CapabilityData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Secure bits: uid 0 gets no capabilities at exec, set*uid never grants any, none can be made
/// ambient, and all of it locked.
const SECURE_BITS: libc::c_ulong = (1 << 0) // SECBIT_NOROOT
    | (1 << 1) // SECBIT_NOROOT_LOCKED
    | (1 << 2) // SECBIT_NO_SETUID_FIXUP
    | (1 << 3) // SECBIT_NO_SETUID_FIXUP_LOCKED
    | (1 << 5) // SECBIT_KEEP_CAPS_LOCKED
    | (1 << 6) // SECBIT_NO_CAP_AMBIENT_RAISE
    | (1 << 7); // SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED

/// The sandbox process (see the module docs): never returns.
///
/// # Safety
/// Called only in the freshly cloned child; raw system calls on `plan` only.
unsafe fn sandbox_process(plan: &ChildPlan, sync: [libc::c_int; 2]) -> ! {
    let mut report_fd = plan.report;
    // SAFETY (whole block): raw system calls on data prepared before the fork; no allocation.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            fail(report_fd, Stage::ParentDeathSignal, 0);
        }
        // Wait until the intermediate wrote our id maps. End of file instead of the byte means
        // it died first (and the parent-death signal may have been set too late to tell us).
        libc::close(sync[1]);
        let mut byte = 0u8;
        loop {
            let read = libc::read(sync[0], (&raw mut byte).cast(), 1);
            if read == 1 {
                break;
            }
            if read < 0 && errno() == libc::EINTR {
                continue;
            }
            libc::_exit(SETUP_FAILED);
        }
        libc::close(sync[0]);

        // The mount tree. Nothing propagates back to the host from here on.
        let none = std::ptr::null::<libc::c_char>();
        if libc::mount(
            none,
            c"/".as_ptr(),
            none,
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            fail(report_fd, Stage::MountPrivate, 0);
        }
        if libc::mount(
            c"tmpfs".as_ptr(),
            plan.root.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            plan.root_options.as_ptr().cast(),
        ) != 0
        {
            fail(report_fd, Stage::MountRoot, 0);
        }
        // Work from inside the new root: every tree path below is relative to it, so nothing
        // needs to look up the host path again once we are the unprivileged user.
        if libc::chdir(plan.root.as_ptr()) != 0 {
            fail(report_fd, Stage::MountRoot, 1);
        }
        // Take the runtime's mounts while we still hold the daemon's file-system identity (the
        // interpreter may live under a directory only its owner can enter, such as /root)...
        let mut trees = [-1 as libc::c_int; MAX_BINDS];
        let binds = plan
            .steps
            .iter()
            .enumerate()
            .filter_map(|(index, step)| match step {
                MountStep::Bind {
                    source,
                    target,
                    read_only,
                } => Some((index as u32, source, target, *read_only)),
                _ => None,
            });
        for (slot, (index, source, _, _)) in trees.iter_mut().zip(binds.clone()) {
            *slot = libc::syscall(
                libc::SYS_open_tree,
                libc::AT_FDCWD,
                source.as_ptr(),
                OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | AT_RECURSIVE,
            ) as libc::c_int;
            if *slot < 0 {
                fail(report_fd, Stage::TreeBind, index);
            }
        }
        // ...then become the unprivileged ids (still with every capability in our own user
        // namespace: the old ids were not its root, so the kernel clears nothing), because a
        // file created on our tmpfs must be owned by an id the namespace maps.
        if libc::setresgid(plan.gid, plan.gid, plan.gid) != 0 {
            fail(report_fd, Stage::SetGroupId, 0);
        }
        if libc::setresuid(plan.uid, plan.uid, plan.uid) != 0 {
            fail(report_fd, Stage::SetUserId, 0);
        }
        for (index, step) in plan.steps.iter().enumerate() {
            let index = index as u32;
            match step {
                MountStep::Directory(path) => {
                    if libc::mkdir(path.as_ptr(), 0o755) != 0 && errno() != libc::EEXIST {
                        fail(report_fd, Stage::TreeDirectory, index);
                    }
                }
                MountStep::File(path) => {
                    if !create_file(path) {
                        fail(report_fd, Stage::TreeFile, index);
                    }
                }
                MountStep::Symlink { target, path } => {
                    if libc::symlink(target.as_ptr(), path.as_ptr()) != 0 {
                        fail(report_fd, Stage::TreeSymlink, index);
                    }
                }
                MountStep::Bind { .. } => {}
            }
        }
        for (&tree, (index, _, target, read_only)) in trees.iter().zip(binds) {
            let attributes = MountAttributes {
                set: if read_only {
                    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV
                } else {
                    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC
                },
                clear: 0,
                propagation: 0,
                user_namespace: 0,
            };
            if libc::syscall(
                libc::SYS_mount_setattr,
                tree,
                c"".as_ptr(),
                libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
                &attributes,
                size_of::<MountAttributes>(),
            ) != 0
            {
                fail(report_fd, Stage::TreeReadOnly, index);
            }
            if libc::syscall(
                libc::SYS_move_mount,
                tree,
                c"".as_ptr(),
                libc::AT_FDCWD,
                target.as_ptr(),
                MOVE_MOUNT_F_EMPTY_PATH,
            ) != 0
            {
                fail(report_fd, Stage::TreeBind, index);
            }
            libc::close(tree);
        }
        if (libc::mkdir(plan.scratch_mount.as_ptr(), 0o755) != 0 && errno() != libc::EEXIST)
            || libc::mount(
                c"tmpfs".as_ptr(),
                plan.scratch_mount.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                plan.scratch_options.as_ptr().cast(),
            ) != 0
        {
            fail(report_fd, Stage::MountScratch, 0);
        }
        if let Some(proc_mount) = &plan.proc_mount
            && ((libc::mkdir(proc_mount.as_ptr(), 0o555) != 0 && errno() != libc::EEXIST)
                || libc::mount(
                    c"proc".as_ptr(),
                    proc_mount.as_ptr(),
                    c"proc".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    std::ptr::null(),
                ) != 0)
        {
            fail(report_fd, Stage::MountProc, 0);
        }
        // pivot_root(".", ".") stacks the old root on top of the new one; detaching it leaves
        // the new tree as all there is.
        if libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) != 0 {
            fail(report_fd, Stage::PivotRoot, 0);
        }
        if libc::umount2(c".".as_ptr(), libc::MNT_DETACH) != 0 {
            fail(report_fd, Stage::DetachOldRoot, 0);
        }
        if libc::chdir(c"/".as_ptr()) != 0
            || libc::mount(
                none,
                c"/".as_ptr(),
                none,
                libc::MS_REMOUNT
                    | libc::MS_BIND
                    | libc::MS_RDONLY
                    | libc::MS_NOSUID
                    | libc::MS_NODEV,
                std::ptr::null(),
            ) != 0
        {
            fail(report_fd, Stage::RootReadOnly, 0);
        }
        if libc::chdir(plan.scratch.as_ptr()) != 0 {
            fail(report_fd, Stage::EnterScratch, 0);
        }
        if let Some(hostname) = &plan.hostname
            && libc::sethostname(hostname.as_ptr().cast(), hostname.len()) != 0
        {
            fail(report_fd, Stage::Hostname, 0);
        }

        // Credentials: no capability anywhere, for good.
        if libc::prctl(libc::PR_SET_SECUREBITS, SECURE_BITS, 0, 0, 0) != 0 {
            fail(report_fd, Stage::SecureBits, 0);
        }
        for capability in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) != 0 {
                if errno() == libc::EINVAL {
                    // Past the kernel's last capability.
                    break;
                }
                fail(report_fd, Stage::BoundingSet, capability as u32);
            }
        }
        if libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        ) != 0
            && errno() != libc::EINVAL
        {
            fail(report_fd, Stage::AmbientSet, 0);
        }
        let header = CapabilityHeader {
            version: CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [CapabilityData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capset, &header, data.as_ptr()) != 0 {
            fail(report_fd, Stage::Capabilities, 0);
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            fail(report_fd, Stage::NoNewPrivileges, 0);
        }

        if let Some(landlock) = plan.landlock {
            const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
            let scratch = libc::open(
                plan.scratch.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            );
            let attribute = PathBeneathAttribute {
                allowed_access: landlock.scratch_access,
                parent_fd: scratch,
            };
            if scratch < 0
                || libc::syscall(
                    libc::SYS_landlock_add_rule,
                    landlock.ruleset,
                    LANDLOCK_RULE_PATH_BENEATH,
                    &attribute,
                    0,
                ) != 0
            {
                fail(report_fd, Stage::LandlockScratch, 0);
            }
            libc::close(scratch);
            if libc::syscall(libc::SYS_landlock_restrict_self, landlock.ruleset, 0) != 0 {
                fail(report_fd, Stage::LandlockRestrict, 0);
            }
            libc::close(landlock.ruleset);
        }

        // Only stdio reaches the snippet; the report pipe moves to 3 and closes at exec.
        if report_fd != 3 {
            if libc::dup3(report_fd, 3, libc::O_CLOEXEC) != 3 {
                fail(report_fd, Stage::CloseDescriptors, 0);
            }
            report_fd = 3;
        }
        if !close_from(4) {
            fail(report_fd, Stage::CloseDescriptors, 1);
        }

        // The rlimits last but one: RLIMIT_NOFILE would refuse the descriptors opened above
        // when the daemon had many open.
        for (index, limit) in plan.limits.iter().enumerate() {
            let value = libc::rlimit {
                rlim_cur: limit.soft as libc::rlim_t,
                rlim_max: limit.hard as libc::rlim_t,
            };
            #[allow(clippy::useless_conversion)]
            if libc::setrlimit(limit.resource as _, &value) != 0 {
                fail(report_fd, Stage::ResourceLimit, index as u32);
            }
        }
        for (index, program) in plan.seccomp.iter().enumerate() {
            let program = libc::sock_fprog {
                len: program.len() as libc::c_ushort,
                filter: program.as_ptr().cast_mut().cast(),
            };
            if libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &program as *const libc::sock_fprog,
            ) != 0
            {
                fail(report_fd, Stage::Seccomp, index as u32);
            }
        }

        let mut arguments = [std::ptr::null::<libc::c_char>(); MAX_ARGUMENTS + 1];
        for (slot, argument) in arguments
            .iter_mut()
            .zip(plan.arguments.iter().take(MAX_ARGUMENTS))
        {
            *slot = argument.as_ptr();
        }
        let environment = [std::ptr::null::<libc::c_char>()];
        libc::execve(
            plan.program.as_ptr(),
            arguments.as_ptr(),
            environment.as_ptr(),
        );
        fail(report_fd, Stage::Exec, 0)
    }
}

/// Creates an empty file to bind a file over.
///
/// # Safety
/// Async-signal-safe system calls only.
unsafe fn create_file(path: &CString) -> bool {
    // SAFETY: open and close on a NUL-terminated path.
    unsafe {
        let fd = libc::open(
            path.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
            0o644,
        );
        if fd < 0 {
            return false;
        }
        libc::close(fd);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_records_round_trip() {
        let records = [
            Report::Started { pid: 4242 },
            Report::Failed {
                stage: Stage::MountProc,
                errno: libc::EPERM,
                step: 0,
            },
            Report::Failed {
                stage: Stage::TreeBind,
                errno: libc::ENOENT,
                step: 7,
            },
        ];
        let bytes: Vec<u8> = records.iter().flat_map(|record| record.encode()).collect();
        assert_eq!(Report::decode_all(&bytes), records);
        // A torn record at the end is ignored.
        assert_eq!(Report::decode_all(&bytes[..20]), records[..1]);
        for stage in Stage::ALL {
            assert_eq!(Stage::from_u32(stage as u32), Some(stage));
            assert!(!stage.describe().is_empty());
        }
    }

    #[test]
    fn proc_paths_are_built_without_allocating() {
        let mut buffer = [0u8; 64];
        let path = proc_path(&mut buffer, 123_456, b"uid_map");
        // SAFETY: proc_path NUL-terminates the buffer it returns.
        let path = unsafe { std::ffi::CStr::from_ptr(path) };
        assert_eq!(path.to_str().unwrap(), "/proc/123456/uid_map");
        let path = proc_path(&mut buffer, 7, b"setgroups");
        // SAFETY: as above.
        let path = unsafe { std::ffi::CStr::from_ptr(path) };
        assert_eq!(path.to_str().unwrap(), "/proc/7/setgroups");
    }
}
