//! The Landlock layer of a run: file access only to the Python runtime (read, and execute for the
//! interpreter and its loader), three device nodes, and the run's scratch directory; no TCP
//! `bind`/`connect` at all (ABI 4); no signals to and no abstract Unix sockets of processes
//! outside the sandbox (ABI 6).
//!
//! Landlock's rules name inodes, not paths, so the ruleset is made here, by the daemon, on the
//! host paths the mount tree later binds (a bind shows the same inodes), with the Landlock
//! project's own crate, which knows which access rights each ABI has. The scratch directory is a
//! tmpfs that only exists inside the sandbox, so its one rule is added by the sandbox process
//! with a raw `landlock_add_rule` before `landlock_restrict_self` (see `confine.rs`); the access
//! bits for it are computed here from the same ABI, so they are a subset of what the ruleset
//! handles, as the kernel requires.

use std::{os::fd::OwnedFd, path::Path};

use landlock::{
    ABI, Access as _, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible as _, PathBeneath,
    PathFd, Ruleset, RulesetAttr as _, RulesetCreatedAttr as _, Scope,
};

use super::layout::{DEVICES, RuntimeLayout};

/// Why the ruleset could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum LandlockError {
    #[error("the Landlock ruleset cannot be made: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    #[error("cannot open {path} for a Landlock rule: {source}")]
    Path {
        path: String,
        source: landlock::PathFdError,
    },
    #[error("the kernel made no Landlock ruleset")]
    NoRuleset,
}

/// The Landlock ABI this kernel offers (0 when it has none or it is disabled).
pub(crate) fn kernel_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the version query reads no memory (null attributes, size 0).
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(version).unwrap_or(0).max(0)
}

/// A run's ruleset, and the access bits the sandbox process grants its scratch directory.
#[derive(Debug)]
pub(crate) struct RunRuleset {
    pub(crate) ruleset: OwnedFd,
    pub(crate) scratch_access: u64,
}

/// Makes the ruleset for one run on a kernel with Landlock ABI `abi` (from [`kernel_abi`]).
/// Every access right and scope the ABI knows is handled, so whatever has no rule is denied.
pub(crate) fn run_ruleset(abi: i32, layout: &RuntimeLayout) -> Result<RunRuleset, LandlockError> {
    // The crate clamps an ABI newer than it knows to the newest it knows, which the kernel
    // supports too (Landlock ABIs only add).
    let abi = ABI::from(abi);
    let handled_fs = AccessFs::from_all(abi);
    let read_directory: BitFlags<AccessFs> = AccessFs::ReadFile | AccessFs::ReadDir;
    let execute: BitFlags<AccessFs> = AccessFs::ReadFile | AccessFs::Execute;
    let device: BitFlags<AccessFs> = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
    let scratch: BitFlags<AccessFs> = (AccessFs::from_all(abi)
        & !(AccessFs::Execute
            | AccessFs::MakeChar
            | AccessFs::MakeBlock
            | AccessFs::MakeSock
            | AccessFs::MakeFifo
            | AccessFs::IoctlDev))
        & handled_fs;

    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled_fs)?;
    let handled_net = AccessNet::from_all(abi);
    if !handled_net.is_empty() {
        ruleset = ruleset.handle_access(handled_net)?;
    }
    let scopes = Scope::from_all(abi);
    if !scopes.is_empty() {
        ruleset = ruleset.scope(scopes)?;
    }
    let mut created = ruleset.create()?;
    let rule = |path: &Path, access: BitFlags<AccessFs>| {
        let descriptor = PathFd::new(path).map_err(|source| LandlockError::Path {
            path: path.display().to_string(),
            source,
        })?;
        Ok::<_, LandlockError>(PathBeneath::new(descriptor, access & handled_fs))
    };
    for directory in &layout.directories {
        created = created.add_rule(rule(directory, read_directory)?)?;
    }
    for executable in layout.executables() {
        created = created.add_rule(rule(&executable, execute)?)?;
    }
    for device_path in DEVICES {
        let access = if device_path == "/dev/urandom" {
            AccessFs::ReadFile.into()
        } else {
            device
        };
        created = created.add_rule(rule(Path::new(device_path), access)?)?;
    }
    let ruleset: Option<OwnedFd> = created.into();
    Ok(RunRuleset {
        ruleset: ruleset.ok_or(LandlockError::NoRuleset)?,
        scratch_access: scratch.bits(),
    })
}
