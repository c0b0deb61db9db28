//! `tool-cli-daemon import` (what `tool-cli config import` runs): read one client's file, show
//! what was found, and with `--write` merge it into our config file. This is the I/O around the
//! pure parts; [`render`] and [`to_json`] are pure.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{ClientKind, Found, ImportError, MergeOutcome, Places, merge, read};

/// What to import, and where to.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    /// Whose file.
    pub kind: ClientKind,
    /// The file, instead of the client's usual places.
    pub path: Option<PathBuf>,
    /// Our config file, merged into with `write`.
    pub target: PathBuf,
    /// Merge and write (otherwise only show).
    pub write: bool,
    /// Where the client's usual places are.
    pub places: Places,
    /// The config a new file starts from when `target` does not exist yet: the bundled default
    /// the daemon runs without a file, so importing never drops its demo server.
    pub new_file_start: Option<String>,
}

/// What an import found and did.
#[derive(Debug, Clone)]
pub struct ImportReport {
    /// The client.
    pub kind: ClientKind,
    /// What its file held.
    pub found: Found,
    /// Our config file.
    pub target: PathBuf,
    /// How the servers merge into it (what `--write` does, or did).
    pub merge: MergeOutcome,
    /// Whether the file was written.
    pub written: bool,
    /// Whether the target did not exist and the merge started from `new_file_start`.
    pub started_new_file: bool,
}

/// Reads, merges and (with `write`) writes.
pub fn run(request: &ImportRequest) -> Result<ImportReport, ImportError> {
    let own = |reason: String| ImportError::OwnConfig {
        path: request.target.display().to_string(),
        reason,
    };
    if let Some(path) = &request.path
        && same_file(path, &request.target)
    {
        return Err(ImportError::ImportsItself(path.display().to_string()));
    }
    let found = read(request.kind, request.path.as_deref(), &request.places)?;
    if same_file(&found.path, &request.target) {
        return Err(ImportError::ImportsItself(found.path.display().to_string()));
    }
    let ours = match std::fs::read_to_string(&request.target) {
        Ok(text) => Some(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(own(format!("cannot read it: {error}"))),
    };
    let started_new_file = ours.is_none() && request.new_file_start.is_some();
    let start = ours.as_deref().or(request.new_file_start.as_deref());
    let merged = merge(start, &found.servers).map_err(|error| own(error.to_string()))?;
    let mut written = false;
    if request.write
        && let Some(text) = &merged.text
    {
        crate::config::check_private(&request.target, "config file")
            .map_err(|error| own(error.to_string()))?;
        write_private(&request.target, text)
            .map_err(|error| own(format!("cannot write it: {error}")))?;
        written = true;
    }
    Ok(ImportReport {
        kind: request.kind,
        found,
        target: request.target.clone(),
        merge: merged,
        written,
        started_new_file,
    })
}

/// Whether two paths name the same existing file (through symlinks and `..`).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Writes `text` to `path` as a new 0600 file in the same directory, then renames it over
/// `path`, so a reader never sees half a file; the directory is created 0700 if missing.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let temporary = dir.join(format!(
        ".{}.import-{}",
        path.file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("config"),
        std::process::id()
    ));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// The report for a person.
pub fn render(report: &ImportReport) -> String {
    let mut out = format!(
        "{} config {}: {} servers found\n",
        report.kind,
        report.found.path.display(),
        report.found.servers.len()
    );
    for server in &report.found.servers {
        let what = server
            .entry
            .get("command")
            .and_then(Value::as_str)
            .map(|command| {
                let args: Vec<&str> = server
                    .entry
                    .get("args")
                    .and_then(Value::as_array)
                    .map(|args| args.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                format!("{command} {}", args.join(" "))
                    .trim_end()
                    .to_owned()
            })
            .or_else(|| {
                server
                    .entry
                    .get("url")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        let state = if report.merge.added.contains(&server.name) {
            if report.written { "added" } else { "new" }
        } else if report.merge.conflicts.contains(&server.name) {
            "CONFLICT"
        } else {
            "already there"
        };
        out.push_str(&format!("  {} ({state}): {what}\n", server.name));
        for note in &server.notes {
            out.push_str(&format!("    note: {note}\n"));
        }
    }
    for skipped in &report.found.skipped {
        out.push_str(&format!("  not imported: {skipped}\n"));
    }
    for note in &report.found.notes {
        out.push_str(&format!("  note: {note}\n"));
    }
    for name in &report.merge.conflicts {
        out.push_str(&format!(
            "conflict: {} already has a server \"{name}\" with a different entry; it was left \
             as it is (rename or remove one of them to import the other)\n",
            report.target.display()
        ));
    }
    if report.started_new_file && !report.merge.added.is_empty() {
        out.push_str(&format!(
            "{} does not exist yet: it {} with the bundled demo server too, which the daemon \
             runs when there is no config file, so nothing it serves now is dropped\n",
            report.target.display(),
            if report.written {
                "was started"
            } else {
                "will start"
            }
        ));
    }
    if report.written {
        out.push_str(&format!(
            "wrote {} new servers to {}; restart the daemon or run `tool-cli server reload`\n",
            report.merge.added.len(),
            report.target.display()
        ));
    } else if report.merge.added.is_empty() {
        out.push_str(&format!("nothing new for {}\n", report.target.display()));
    } else {
        out.push_str(&format!(
            "run again with --write to add {} servers to {}\n",
            report.merge.added.len(),
            report.target.display()
        ));
    }
    out
}

/// The report as JSON (`--json`).
pub fn to_json(report: &ImportReport) -> Value {
    json!({
        "from": report.kind.name(),
        "path": report.found.path,
        "target": report.target,
        "servers": report.found.servers.iter().map(|server| json!({
            "name": server.name,
            "entry": server.entry,
            "notes": server.notes,
        })).collect::<Vec<_>>(),
        "skipped": report.found.skipped,
        "notes": report.found.notes,
        "added": report.merge.added,
        "unchanged": report.merge.unchanged,
        "conflicts": report.merge.conflicts,
        "written": report.written,
        "startedNewFile": report.started_new_file,
    })
}
