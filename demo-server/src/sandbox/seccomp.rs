//! The system-call filter of a run: what a snippet may not ask the kernel for, whatever Python
//! (or machine code loaded through `ctypes`) it runs.
//!
//! The filter denies the calls that reach beyond the sandbox or into the kernel's privileged
//! corners: new namespaces and joining others (`unshare`, `setns`, `clone` with a namespace flag;
//! `clone3`, whose flags live in memory a filter cannot read, answers `ENOSYS` so the C library
//! falls back to `clone`), the whole mount family, `ptrace` and cross-process memory access,
//! `bpf`, the key-ring, `perf_event_open`, kernel modules, `kexec`, `reboot`, `io_uring` (whose
//! operations bypass seccomp) and the clock and host-name setters. Everything else is allowed:
//! the other layers (namespaces, no capabilities, Landlock, the mount tree) decide what those
//! calls can reach. Denied calls fail with `EPERM`, which Python reports as a plain
//! `PermissionError`, rather than killing the process, so a snippet probing its limits gets an
//! answer and the run a result.
//!
//! The programs are compiled once at start-up with `seccompiler` (rust-vmm's crate, the one
//! Firecracker uses) and installed in the child between fork and exec with a plain `prctl`, the
//! only step there that must be async-signal-safe. On x86-64 a small hand-written program in
//! front refuses the x32 system-call numbers, which share the architecture tag and would
//! otherwise reach the same calls under other numbers.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// Why the filter could not be built (an architecture seccompiler does not know, say).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum FilterError {
    #[error("no seccomp filter for the {0} architecture")]
    UnsupportedArchitecture(&'static str),
    #[error("the seccomp filter does not compile: {0}")]
    Compile(#[from] seccompiler::Error),
    #[error("the seccomp filter does not compile: {0}")]
    Backend(#[from] seccompiler::BackendError),
}

/// The namespace flags `clone` may not carry.
const NAMESPACE_FLAGS: [libc::c_int; 8] = [
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
    // CLONE_NEWTIME shares its bit with CSIGNAL's range and is only valid for clone3/unshare,
    // but refusing it costs nothing.
    0x0000_0080,
];

/// Calls denied outright, on every architecture.
const DENIED: &[libc::c_long] = &[
    // Namespaces: making new ones and joining others.
    libc::SYS_unshare,
    libc::SYS_setns,
    // The mount family, old and new API.
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    // Other processes' memory and file descriptors.
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_process_madvise,
    libc::SYS_kcmp,
    libc::SYS_pidfd_getfd,
    // Kernel programming and kernel state.
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_syslog,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_fanotify_init,
    libc::SYS_vhangup,
    // io_uring runs file and socket operations the filter never sees.
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    // Clocks and names shared with the host.
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
];

/// Calls only x86-64 has.
#[cfg(target_arch = "x86_64")]
const DENIED_HERE: &[libc::c_long] = &[
    libc::SYS_iopl,
    libc::SYS_ioperm,
    libc::SYS_uselib,
    libc::SYS_ustat,
    libc::SYS_sysfs,
    libc::SYS_lookup_dcookie,
    libc::SYS_nfsservctl,
];
#[cfg(not(target_arch = "x86_64"))]
const DENIED_HERE: &[libc::c_long] = &[];

/// `ioctl` requests denied: pushing input into a terminal, which would reach the daemon's
/// controlling terminal if a snippet ever got one.
const DENIED_IOCTLS: [libc::c_ulong; 2] = [libc::TIOCSTI, libc::TIOCLINUX];

/// The architecture seccompiler should compile for.
fn target() -> Result<TargetArch, FilterError> {
    match std::env::consts::ARCH {
        "x86_64" => Ok(TargetArch::x86_64),
        "aarch64" => Ok(TargetArch::aarch64),
        "riscv64" => Ok(TargetArch::riscv64),
        other => Err(FilterError::UnsupportedArchitecture(other)),
    }
}

/// The syscall numbers this filter denies outright (for the tests and the docs).
pub(crate) fn denied_calls() -> impl Iterator<Item = libc::c_long> {
    DENIED.iter().chain(DENIED_HERE).copied()
}

/// The programs to install, in order (the kernel runs every installed filter and the most
/// restrictive answer wins).
pub(crate) fn programs() -> Result<Vec<BpfProgram>, FilterError> {
    let arch = target()?;
    let mut denied: BTreeMap<i64, Vec<SeccompRule>> =
        denied_calls().map(|call| (call, Vec::new())).collect();
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            let flag = flag as u64;
            SeccompRule::new(vec![SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )?])
        })
        .collect::<Result<Vec<_>, _>>()?;
    denied.insert(libc::SYS_clone, clone_rules);
    let ioctl_rules = DENIED_IOCTLS
        .iter()
        .map(|&request| {
            SeccompRule::new(vec![SeccompCondition::new(
                1,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                request,
            )?])
        })
        .collect::<Result<Vec<_>, _>>()?;
    denied.insert(libc::SYS_ioctl, ioctl_rules);
    let deny: BpfProgram = SeccompFilter::new(
        denied,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?
    .try_into()?;
    let no_clone3: BpfProgram = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )?
    .try_into()?;
    let mut programs = Vec::new();
    if let Some(guard) = x32_guard() {
        programs.push(guard);
    }
    programs.push(deny);
    programs.push(no_clone3);
    Ok(programs)
}

/// On x86-64: refuse every system call with the x32 bit set (`ENOSYS`, as on a kernel built
/// without x32). seccompiler matches call numbers exactly, and x32 calls carry the x86-64
/// architecture tag, so without this `unshare | 0x40000000` would pass the filter above.
#[cfg(target_arch = "x86_64")]
fn x32_guard() -> Option<BpfProgram> {
    use seccompiler::sock_filter;
    const LOAD_WORD_ABSOLUTE: u16 = 0x20; // BPF_LD (0) | BPF_W (0) | BPF_ABS (0x20)
    const JUMP_IF_GREATER_OR_EQUAL: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
    const RETURN: u16 = 0x06; // BPF_RET | BPF_K
    const NUMBER_OFFSET: u32 = 0; // offsetof(struct seccomp_data, nr)
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let statement = |code, k| sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    Some(vec![
        statement(LOAD_WORD_ABSOLUTE, NUMBER_OFFSET),
        sock_filter {
            code: JUMP_IF_GREATER_OR_EQUAL,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        statement(
            RETURN,
            libc::SECCOMP_RET_ERRNO | (libc::ENOSYS as u32 & libc::SECCOMP_RET_DATA),
        ),
        statement(RETURN, libc::SECCOMP_RET_ALLOW),
    ])
}

#[cfg(not(target_arch = "x86_64"))]
fn x32_guard() -> Option<BpfProgram> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_and_names_the_issue_s_calls() {
        let programs = programs().unwrap();
        assert!(programs.iter().all(|program| !program.is_empty()));
        let denied: Vec<_> = denied_calls().collect();
        for call in [
            libc::SYS_unshare,
            libc::SYS_setns,
            libc::SYS_mount,
            libc::SYS_pivot_root,
            libc::SYS_move_mount,
            libc::SYS_open_tree,
            libc::SYS_fsopen,
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_bpf,
            libc::SYS_keyctl,
            libc::SYS_add_key,
            libc::SYS_request_key,
            libc::SYS_perf_event_open,
            libc::SYS_init_module,
            libc::SYS_finit_module,
            libc::SYS_delete_module,
            libc::SYS_kexec_load,
            libc::SYS_reboot,
        ] {
            assert!(denied.contains(&call), "syscall {call} is not denied");
        }
        // Threads still start: clone without namespace flags and the calls Python needs are not
        // in the list.
        for call in [
            libc::SYS_clone,
            libc::SYS_execve,
            libc::SYS_openat,
            libc::SYS_socket,
        ] {
            assert!(!denied.contains(&call), "syscall {call} must stay allowed");
        }
    }
}
