//! Where things are: the built binaries, the repository, a scratch directory per test.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// The directory holding the built `tool-cli-daemon` and `tool-cli` binaries: `TOOL_CLI_BIN_DIR`
/// when set, else the profile directory this test binary was built into
/// (`target/<profile>/deps/e2e-…` → `target/<profile>/`).
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TOOL_CLI_BIN_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("the path of the running test binary");
    let mut dir = exe
        .parent()
        .expect("test binary has a directory")
        .to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir
}

pub(crate) fn binary(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.is_file(),
        "{} is missing; build them first: cargo build --workspace \
         (or point TOOL_CLI_BIN_DIR at the directory holding tool-cli-daemon and tool-cli)",
        path.display()
    );
    path
}

/// The `tool-cli-daemon` binary under test.
pub fn daemon_bin() -> PathBuf {
    binary("tool-cli-daemon")
}

/// The `tool-cli` client binary under test.
pub fn client_bin() -> PathBuf {
    binary("tool-cli")
}

/// The `tool-cli-replay` binary (record/replay of MCP sessions; crate `tool-cli-replay`).
pub fn replay_bin() -> PathBuf {
    binary("tool-cli-replay")
}

/// One of the daemon's examples (`daemon/examples/NAME.rs`: test servers and hosts), built with
/// the workspace's examples.
pub fn example_bin(name: &str) -> PathBuf {
    let path = bin_dir().join("examples").join(name);
    assert!(
        path.is_file(),
        "{} is built with the workspace's examples (`cargo build --workspace --examples`)",
        path.display()
    );
    path
}

/// The root of the checkout (where `node_modules/` and `.peers/` are installed).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// A fresh, uniquely named temp dir, removed when dropped.
pub fn scratch() -> TempDir {
    tempfile::Builder::new()
        .prefix("tool-cli-e2e-")
        .tempdir()
        .expect("create a temp dir")
}
