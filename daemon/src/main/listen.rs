//! Binding the endpoint before anything starts: a TCP port or a Unix socket created safely.

use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;

use tool_cli_daemon::server::Listener;

use crate::args::Cli;

/// Where clients reach us.
pub(crate) enum Endpoint {
    Tcp(std::net::SocketAddr),
    Socket(PathBuf),
}

/// Binds the endpoint the flags name: `--socket`, else `--host`:`--port`.
pub(crate) fn bind(cli: &Cli) -> Result<(Listener, Endpoint), String> {
    match &cli.socket {
        Some(path) => {
            let listener = bind_socket(path)?;
            Ok((Listener::Unix(listener), Endpoint::Socket(path.clone())))
        }
        None => {
            let listener = TcpListener::bind((cli.host.as_str(), cli.port))
                .map_err(|err| format!("cannot listen on {}:{}: {err}", cli.host, cli.port))?;
            let local = listener
                .local_addr()
                .map_err(|err| format!("cannot read the bound address: {err}"))?;
            Ok((Listener::Tcp(listener), Endpoint::Tcp(local)))
        }
    }
}

/// Creates the Unix socket safely: its directory is a real directory (not a symlink) that only
/// we can enter, and no existing file is reused (a stale socket nobody listens on is replaced).
fn bind_socket(path: &std::path::Path) -> Result<UnixListener, String> {
    use std::os::unix::fs::{
        DirBuilderExt as _, FileTypeExt as _, MetadataExt as _, PermissionsExt as _,
    };
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|err| {
                format!(
                    "cannot create the socket directory {}: {err}",
                    dir.display()
                )
            })?;
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|err| {
        format!(
            "cannot inspect the socket directory {}: {err}",
            dir.display()
        )
    })?;
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Err(format!(
            "the socket directory {} is not a plain directory (a symlink?); refusing it",
            dir.display()
        ));
    }
    if meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "the socket directory {} must be owned by you and mode 0700 (it is {:o}); \
             fix with: chmod 700 {}",
            dir.display(),
            meta.permissions().mode() & 0o777,
            dir.display()
        ));
    }
    if let Ok(existing) = std::fs::symlink_metadata(path) {
        let stale = existing.file_type().is_socket()
            && std::os::unix::net::UnixStream::connect(path).is_err();
        if !stale {
            return Err(format!(
                "{} already exists; refusing to reuse it (another daemon's socket, or not a \
                 socket at all)",
                path.display()
            ));
        }
        std::fs::remove_file(path)
            .map_err(|err| format!("cannot remove the stale socket {}: {err}", path.display()))?;
    }
    // Created 0600 from the start: no window in which another user could connect.
    // SAFETY: umask only changes this process's file creation mask; we restore it at once,
    // before any other thread exists.
    let previous = unsafe { libc::umask(0o177) };
    let bound = UnixListener::bind(path);
    unsafe { libc::umask(previous) };
    bound.map_err(|err| format!("cannot listen on {}: {err}", path.display()))
}
