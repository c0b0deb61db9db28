//! The runtime file: how a client finds a daemon when `TOOL_CLI_PORT` / `TOOL_CLI_TOKEN` are unset.
//!
//! The daemon writes it at start-up (mode 0600, in a 0700 directory) and removes it on exit. Its
//! location is `$TOOL_CLI_RUNTIME_DIR/daemon.json` when that is set, else
//! `$XDG_RUNTIME_DIR/tool-cli/daemon.json`, else `<temp dir>/tool-cli-<uid>/daemon.json`. The
//! directory part is computed here from values the caller reads, so this crate stays free of I/O.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// File name of the runtime file inside its directory.
pub const RUNTIME_FILE_NAME: &str = "daemon.json";

/// Contents of the runtime file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeFile {
    /// Address the daemon listens on.
    pub host: String,
    /// TCP port the daemon listens on.
    pub port: u16,
    /// The bearer token.
    pub token: String,
    /// Process id of the daemon.
    pub pid: u32,
    /// Version of the daemon.
    pub version: String,
    /// The Unix socket the daemon listens on instead of TCP (`--socket`); `port` is 0 then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<String>,
    /// The daemon's instance id ([`DaemonId`]); absent from daemons that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_id: Option<String>,
}

/// Which daemon process this is, in a form a client on the same machine can check without
/// talking to it: the bridge protocol major it speaks, its process id, its start time in clock
/// ticks since boot (field 22 of `/proc/PID/stat`) and the boot's id
/// (`/proc/sys/kernel/random/boot_id`). Written `MAJOR:PID:TICKS:BOOT_ID`.
///
/// A daemon holds its listening port (or socket) for as long as its process lives, even while
/// it drains, so a client that finds that very process alive knows the listener at the address
/// beside this id is that daemon, and can send the token without the identity round trip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonId {
    /// The `tool-cli-bridge` protocol major the daemon speaks.
    pub bridge_major: u32,
    /// Its process id.
    pub pid: u32,
    /// Its start time, in clock ticks after boot.
    pub start_ticks: u64,
    /// The id of the boot it started in.
    pub boot_id: String,
}

impl DaemonId {
    /// Parses `MAJOR:PID:TICKS:BOOT_ID`; `None` for anything else.
    pub fn parse(text: &str) -> Option<DaemonId> {
        let mut parts = text.trim().splitn(4, ':');
        let bridge_major = parts.next()?.parse().ok()?;
        let pid = parts.next()?.parse().ok().filter(|pid| *pid > 0)?;
        let start_ticks = parts.next()?.parse().ok()?;
        let boot_id = parts.next()?.to_owned();
        let boot_id_ok = !boot_id.is_empty()
            && boot_id.len() <= 64
            && boot_id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
        boot_id_ok.then_some(DaemonId {
            bridge_major,
            pid,
            start_ticks,
            boot_id,
        })
    }
}

impl std::fmt::Display for DaemonId {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{}:{}:{}:{}",
            self.bridge_major, self.pid, self.start_ticks, self.boot_id
        )
    }
}

/// The start time (field 22, clock ticks after boot) in the text of a `/proc/PID/stat` file.
/// The command name (field 2) may hold spaces and parentheses, so fields are counted after its
/// last `)`.
pub fn start_ticks_from_stat(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Field 3 (state) is the first after the name, so field 22 is the 20th.
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// The runtime directory, from the values of `TOOL_CLI_RUNTIME_DIR`, `XDG_RUNTIME_DIR`, the
/// system temp directory and the user id.
pub fn runtime_dir(
    tool_cli_runtime_dir: Option<PathBuf>,
    xdg_runtime_dir: Option<PathBuf>,
    temp_dir: PathBuf,
    uid: u32,
) -> PathBuf {
    let non_empty = |dir: &Option<PathBuf>| dir.as_ref().is_some_and(|d| !d.as_os_str().is_empty());
    if non_empty(&tool_cli_runtime_dir) {
        return tool_cli_runtime_dir.unwrap_or_default();
    }
    if non_empty(&xdg_runtime_dir) {
        return xdg_runtime_dir.unwrap_or_default().join("tool-cli");
    }
    temp_dir.join(format!("tool-cli-{uid}"))
}

/// Where the pin store is, for the client (`tool-cli pin`) and the daemon (which holds back what
/// changed) alike: `$TOOL_CLI_PINS`, else `$XDG_CONFIG_HOME/tool-cli/pins.json` (when absolute),
/// else `$HOME/.config/tool-cli/pins.json`; `None` when none of them is set. Computed from
/// values the caller reads (`env`), so this crate stays free of I/O.
pub fn pin_store_path(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let non_empty = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    if let Some(path) = non_empty(crate::env::PINS) {
        return Some(PathBuf::from(path));
    }
    if let Some(config) = non_empty("XDG_CONFIG_HOME").filter(|dir| dir.starts_with('/')) {
        return Some(PathBuf::from(config).join("tool-cli").join("pins.json"));
    }
    non_empty("HOME").map(|home| PathBuf::from(home).join(".config/tool-cli/pins.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemon_ids_round_trip_and_refuse_garbage() {
        let id = DaemonId {
            bridge_major: 1,
            pid: 4242,
            start_ticks: 987_654,
            boot_id: "0f3c2a9e-7d61-4b8e-9a0c-5e2b1d4f6a78".to_owned(),
        };
        assert_eq!(DaemonId::parse(&id.to_string()), Some(id));
        for bad in [
            "",
            "1:4242:987654",
            "x:4242:987654:abc",
            "1:0:987654:abc",
            "1:4242:-1:abc",
            "1:4242:987654:",
            "1:4242:987654:not/hex",
        ] {
            assert_eq!(DaemonId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn start_ticks_are_field_22_even_with_odd_command_names() {
        let stat = "4242 (tool-cli) daemon) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 \
                    4 0 987654 1000 200";
        assert_eq!(start_ticks_from_stat(stat), Some(987_654));
        assert_eq!(start_ticks_from_stat("4242 (x) S 1"), None);
    }

    #[test]
    fn runtime_dir_prefers_override_then_xdg_then_temp() {
        let tmp = PathBuf::from("/tmp");
        assert_eq!(
            runtime_dir(Some("/o".into()), Some("/x".into()), tmp.clone(), 7),
            PathBuf::from("/o")
        );
        assert_eq!(
            runtime_dir(None, Some("/x".into()), tmp.clone(), 7),
            PathBuf::from("/x/tool-cli")
        );
        assert_eq!(
            runtime_dir(Some("".into()), Some("".into()), tmp, 7),
            PathBuf::from("/tmp/tool-cli-7")
        );
    }

    #[test]
    fn the_pin_store_is_the_env_var_then_xdg_then_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            }
        };
        assert_eq!(
            pin_store_path(env(&[("TOOL_CLI_PINS", "/p.json"), ("HOME", "/h")])),
            Some(PathBuf::from("/p.json"))
        );
        assert_eq!(
            pin_store_path(env(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")])),
            Some(PathBuf::from("/x/tool-cli/pins.json"))
        );
        assert_eq!(
            pin_store_path(env(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.config/tool-cli/pins.json"))
        );
        assert_eq!(pin_store_path(env(&[])), None);
    }
}
