//! Knowing the daemon without asking it: the check that lets a call skip two round trips.
//!
//! Before the token leaves, the listener must be shown to be our daemon: a port left behind by a
//! daemon that stopped may since have been taken by any program. The identity proof
//! (`POST /identity`, [`crate::link`]) shows it with a round trip, and `getBridgeInfo` then
//! checks the protocol with another. A daemon that hands out its [`DaemonId`] (in the 0600
//! runtime file, or with `--print-env`) holds its address for as long as its process lives, so
//! when the process that id names is still alive (same pid, same start time, same boot), the
//! listener at that address is that daemon and speaks that protocol major: both round trips can
//! be skipped. Anything that does not match exactly (another process under that pid, a reboot,
//! another protocol major, a host that is not loopback, no `/proc`) falls back to the proof.
//!
//! [`vouches`] is pure over a file reader, so every case is unit-tested.

use std::path::Path;

use tool_cli_protocol::runtime::{DaemonId, start_ticks_from_stat};

use crate::endpoint::Target;

/// Whether `daemon_id` names a live daemon that speaks our protocol major and listens at
/// `target` on this machine, reading `/proc` through `read_file`.
pub(crate) fn vouches(
    daemon_id: &str,
    target: &Target,
    read_file: impl Fn(&Path) -> std::io::Result<String>,
) -> bool {
    let Some(id) = DaemonId::parse(daemon_id) else {
        return false;
    };
    if id.bridge_major != tool_cli_protocol::BRIDGE_PROTOCOL_MAJOR || !is_local(target) {
        return false;
    }
    let stat = read_file(&Path::new("/proc").join(id.pid.to_string()).join("stat"));
    let boot_id = read_file(Path::new("/proc/sys/kernel/random/boot_id"));
    match (stat, boot_id) {
        (Ok(stat), Ok(boot_id)) => {
            start_ticks_from_stat(&stat) == Some(id.start_ticks) && boot_id.trim() == id.boot_id
        }
        _ => false,
    }
}

/// A Unix socket or a loopback address: the only places a daemon id can speak for.
fn is_local(target: &Target) -> bool {
    match target {
        Target::Unix { .. } => true,
        Target::Tcp { host, .. } => {
            host == "localhost"
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::path::PathBuf;

    use super::*;

    const BOOT: &str = "0f3c2a9e-7d61-4b8e-9a0c-5e2b1d4f6a78";

    fn stat(ticks: u64) -> String {
        format!("4242 (tool-cli-daemon) S 1 4242 4242 0 -1 0 0 0 0 0 1 2 0 0 20 0 4 0 {ticks} 1 2")
    }

    fn proc_with(ticks: u64, boot: &'static str) -> impl Fn(&Path) -> io::Result<String> {
        move |path: &Path| match path.to_str() {
            Some("/proc/4242/stat") => Ok(stat(ticks)),
            Some("/proc/sys/kernel/random/boot_id") => Ok(format!("{boot}\n")),
            _ => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }

    fn local() -> Target {
        Target::Tcp {
            host: "127.0.0.1".into(),
            port: 4000,
        }
    }

    #[test]
    fn the_live_daemon_it_names_vouches_for_a_local_address() {
        let id = format!("1:4242:777:{BOOT}");
        assert!(vouches(&id, &local(), proc_with(777, BOOT)));
        let socket = Target::Unix {
            path: PathBuf::from("/run/tool-cli.sock"),
        };
        assert!(vouches(&id, &socket, proc_with(777, BOOT)));
        let localhost = Target::Tcp {
            host: "localhost".into(),
            port: 4000,
        };
        assert!(vouches(&id, &localhost, proc_with(777, BOOT)));
    }

    #[test]
    fn anything_else_falls_back_to_the_proof() {
        let id = format!("1:4242:777:{BOOT}");
        // Another process under the same pid (the daemon stopped, the pid was reused).
        assert!(!vouches(&id, &local(), proc_with(778, BOOT)));
        // Another boot.
        let other_boot = "11111111-2222-3333-4444-555555555555";
        assert!(!vouches(&id, &local(), proc_with(777, other_boot)));
        // No such process.
        assert!(!vouches(
            &format!("1:99:777:{BOOT}"),
            &local(),
            proc_with(777, BOOT)
        ));
        // Another protocol major, a garbled id.
        assert!(!vouches(
            &format!("2:4242:777:{BOOT}"),
            &local(),
            proc_with(777, BOOT)
        ));
        assert!(!vouches("garbage", &local(), proc_with(777, BOOT)));
        // An address beyond loopback: the id cannot speak for another machine.
        let remote = Target::Tcp {
            host: "192.0.2.7".into(),
            port: 4000,
        };
        assert!(!vouches(&id, &remote, proc_with(777, BOOT)));
    }

    #[test]
    fn this_very_process_is_recognised_through_the_real_proc() {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
        let id = DaemonId {
            bridge_major: tool_cli_protocol::BRIDGE_PROTOCOL_MAJOR,
            pid: std::process::id(),
            start_ticks: start_ticks_from_stat(&stat).unwrap(),
            boot_id: boot.trim().to_owned(),
        };
        assert!(vouches(&id.to_string(), &local(), |path| {
            std::fs::read_to_string(path)
        }));
    }
}
