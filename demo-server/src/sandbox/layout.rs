//! Which files the snippet's world holds: the Python runtime it needs, read-only, and nothing
//! else of the host.
//!
//! At start-up the interpreter is asked once (unconfined, empty environment) where its standard
//! library is and, after importing what snippets may import, which shared objects it has mapped
//! (`/proc/self/maps`). From that answer and the interpreter's ELF program interpreter (the
//! dynamic loader, usually reached through `/lib64` symlinks) [`RuntimeLayout::tree`] computes
//! the mount tree as plain data: directories to create, symlinks to copy, host directories and
//! files to bind read-only, three device nodes, a private scratch directory and a fresh `/proc`.
//! The child builds it from that list (see `confine.rs`); nothing here touches the host.

use std::{
    collections::BTreeSet,
    io::Read as _,
    path::{Component, Path, PathBuf},
};

/// Where the snippet's writable directory is, inside its world; also its working directory.
pub(crate) const SCRATCH: &str = "/scratch";
/// The device nodes a snippet gets (Python reads `/dev/urandom` when `getrandom` is missing).
pub(crate) const DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/urandom"];

/// What the interpreter told about itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub(crate) struct RuntimeReport {
    /// `3.11.7`, say.
    pub(crate) version: String,
    /// The real path of the executable.
    pub(crate) executable: PathBuf,
    /// The standard library directories (sysconfig's `stdlib` and `platstdlib`).
    pub(crate) stdlib: Vec<PathBuf>,
    /// Every file mapped after importing the allowed modules.
    pub(crate) mapped: Vec<PathBuf>,
}

/// The script that produces a [`RuntimeReport`]: run with `-I -S -B -c`, the allowed modules
/// (and the guard's own imports) as its arguments.
pub(crate) const REPORT_SCRIPT: &str = r#"
import json, os, sys, sysconfig
for name in sys.argv[1:]:
    try:
        __import__(name)
    except ImportError:
        pass
mapped = set()
with open("/proc/self/maps") as maps:
    for line in maps:
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/"):
            mapped.add(parts[5].rstrip("\n"))
print(json.dumps({
    "version": "%d.%d.%d" % sys.version_info[:3],
    "executable": os.path.realpath(sys.executable),
    "stdlib": sorted({os.path.realpath(sysconfig.get_path(key)) for key in ("stdlib", "platstdlib")}),
    "mapped": sorted(path for path in mapped if not path.endswith(" (deleted)")),
}))
"#;

/// One step of building the tree, with paths as they appear inside the snippet's world.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TreeEntry {
    /// An empty directory (mode 0755) on the tree's tmpfs.
    Directory(PathBuf),
    /// A symlink copied from the host: `path` points at `target`.
    Symlink { path: PathBuf, target: PathBuf },
    /// The host directory at the same path, bound read-only (with everything mounted below it).
    ReadOnlyDirectory(PathBuf),
    /// The host file at the same path, bound read-only.
    ReadOnlyFile(PathBuf),
    /// The host device node at the same path, bound as it is (read and write).
    Device(PathBuf),
}

/// Why the runtime could not be laid out.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum LayoutError {
    #[error("cannot read the interpreter {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the interpreter {0} is not a 64-bit little-endian ELF executable")]
    NotElf(PathBuf),
    #[error("resolving {path} meets a symlink loop")]
    SymlinkLoop { path: PathBuf },
    #[error("{0} is not an absolute path")]
    Relative(PathBuf),
}

/// The files the sandbox exposes, found at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RuntimeLayout {
    pub(crate) version: String,
    /// The interpreter, by its real path (the same path inside).
    pub(crate) executable: PathBuf,
    /// The dynamic loader as the executable names it (`/lib64/ld-linux-x86-64.so.2`), if any.
    pub(crate) loader: Option<PathBuf>,
    /// Symlinks on the way to the loader, copied into the tree.
    pub(crate) loader_links: Vec<(PathBuf, PathBuf)>,
    /// The loader's real path.
    pub(crate) loader_file: Option<PathBuf>,
    /// Host directories bound read-only: the standard library and the directories of the
    /// mapped shared objects, none inside another.
    pub(crate) directories: Vec<PathBuf>,
}

impl RuntimeLayout {
    /// Lays out the runtime from the interpreter's report and the loader chain on this host.
    pub(crate) fn from_report(report: RuntimeReport) -> Result<Self, LayoutError> {
        let loader = elf_interpreter(&report.executable)?;
        let (loader_links, loader_file) = match &loader {
            Some(loader) => {
                let (links, real) = resolve_links(loader, |path| std::fs::read_link(path).ok())?;
                (links, Some(real))
            }
            None => (Vec::new(), None),
        };
        Ok(Self::plan(report, loader, loader_links, loader_file))
    }

    /// The pure half of [`RuntimeLayout::from_report`].
    pub(crate) fn plan(
        report: RuntimeReport,
        loader: Option<PathBuf>,
        loader_links: Vec<(PathBuf, PathBuf)>,
        loader_file: Option<PathBuf>,
    ) -> Self {
        let mut candidates: BTreeSet<PathBuf> = report
            .stdlib
            .iter()
            .filter(|path| path.is_absolute())
            .cloned()
            .collect();
        for file in report
            .mapped
            .iter()
            .chain(loader_file.iter())
            .filter(|path| path.is_absolute() && **path != report.executable)
        {
            if let Some(directory) = file.parent() {
                candidates.insert(directory.to_owned());
            }
        }
        // Keep only the outermost: a directory inside one already bound comes with it. Never
        // bind the host's root or the tree's own places.
        let directories: Vec<PathBuf> = candidates
            .iter()
            .filter(|candidate| {
                !candidates
                    .iter()
                    .any(|other| other != *candidate && candidate.starts_with(other))
            })
            .filter(|candidate| {
                *candidate != Path::new("/")
                    && !["/proc", "/dev", SCRATCH]
                        .iter()
                        .any(|reserved| candidate.starts_with(reserved))
            })
            .cloned()
            .collect();
        Self {
            version: report.version,
            executable: report.executable,
            loader,
            loader_links,
            loader_file,
            directories,
        }
    }

    /// The read-only directories and files the snippet may read (for Landlock), and the files it
    /// may execute: the interpreter and the loader.
    pub(crate) fn executables(&self) -> Vec<PathBuf> {
        std::iter::once(self.executable.clone())
            .chain(self.loader_file.clone())
            .collect()
    }

    /// The tree, in the order it is built: parents before children, binds after the directories
    /// they land in, symlinks last. Every path is absolute, inside the snippet's world.
    pub(crate) fn tree(&self) -> Vec<TreeEntry> {
        let under_a_bind =
            |path: &Path| self.directories.iter().any(|bound| path.starts_with(bound));
        let mut directories = BTreeSet::new();
        let add_parents = |path: &Path, directories: &mut BTreeSet<PathBuf>| {
            let mut parent = path.parent();
            while let Some(directory) = parent {
                if directory == Path::new("/") {
                    break;
                }
                directories.insert(directory.to_owned());
                parent = directory.parent();
            }
        };
        let mut binds = Vec::new();
        for directory in &self.directories {
            add_parents(directory, &mut directories);
            directories.insert(directory.clone());
            binds.push(TreeEntry::ReadOnlyDirectory(directory.clone()));
        }
        let mut files = Vec::new();
        for file in self.executables() {
            if !under_a_bind(&file) {
                add_parents(&file, &mut directories);
                files.push(TreeEntry::ReadOnlyFile(file));
            }
        }
        let mut links = Vec::new();
        for (path, target) in &self.loader_links {
            if !under_a_bind(path) {
                add_parents(path, &mut directories);
                links.push(TreeEntry::Symlink {
                    path: path.clone(),
                    target: target.clone(),
                });
            }
        }
        for device in DEVICES {
            add_parents(Path::new(device), &mut directories);
            files.push(TreeEntry::Device(PathBuf::from(device)));
        }
        // A bound directory's path is made as an empty mount point; the ones above it are plain
        // directories. Both come first, shortest path first, so parents exist before children.
        let mut tree: Vec<TreeEntry> = directories
            .into_iter()
            .filter(|directory| !under_a_bind(directory) || self.directories.contains(directory))
            .map(TreeEntry::Directory)
            .collect();
        tree.sort_by_key(|entry| match entry {
            TreeEntry::Directory(path) => path.components().count(),
            _ => usize::MAX,
        });
        tree.extend(binds);
        tree.extend(files);
        tree.extend(links);
        tree
    }
}

/// The program interpreter (`PT_INTERP`) of a 64-bit little-endian ELF file; `None` for a static
/// executable.
pub(crate) fn elf_interpreter(path: &Path) -> Result<Option<PathBuf>, LayoutError> {
    let read_error = |source| LayoutError::Read {
        path: path.to_owned(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(read_error)?;
    // Program headers sit near the start; 64 KiB covers any executable's header table.
    let mut head = Vec::new();
    file.by_ref()
        .take(64 * 1024)
        .read_to_end(&mut head)
        .map_err(read_error)?;
    parse_elf_interpreter(&head).ok_or_else(|| LayoutError::NotElf(path.to_owned()))
}

/// The pure half of [`elf_interpreter`]: `None` when `head` is not a 64-bit little-endian ELF
/// header with its program headers; `Some(None)` when it has no `PT_INTERP`.
pub(crate) fn parse_elf_interpreter(head: &[u8]) -> Option<Option<PathBuf>> {
    use std::os::unix::ffi::OsStrExt as _;
    const PT_INTERP: u32 = 3;
    let u16_at = |at: usize| Some(u16::from_le_bytes(head.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(head.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |at: usize| Some(u64::from_le_bytes(head.get(at..at + 8)?.try_into().ok()?));
    if head.get(..4)? != b"\x7fELF" || head.get(4)? != &2 || head.get(5)? != &1 {
        return None;
    }
    let table = usize::try_from(u64_at(0x20)?).ok()?;
    let entry_size = usize::from(u16_at(0x36)?);
    let entries = usize::from(u16_at(0x38)?);
    for index in 0..entries {
        let entry = table.checked_add(index.checked_mul(entry_size)?)?;
        if u32_at(entry)? != PT_INTERP {
            continue;
        }
        let offset = usize::try_from(u64_at(entry + 8)?).ok()?;
        let size = usize::try_from(u64_at(entry + 32)?).ok()?;
        let bytes = head.get(offset..offset.checked_add(size)?)?;
        let bytes = bytes.split(|&byte| byte == 0).next()?;
        return Some(Some(PathBuf::from(std::ffi::OsStr::from_bytes(bytes))));
    }
    Some(None)
}

/// Follows `path` component by component as the kernel would, returning each symlink met
/// (where it is, what it says) and the real path. `read_link` answers `None` for anything that
/// is not a symlink.
pub(crate) fn resolve_links(
    path: &Path,
    read_link: impl Fn(&Path) -> Option<PathBuf>,
) -> Result<(Vec<(PathBuf, PathBuf)>, PathBuf), LayoutError> {
    if !path.is_absolute() {
        return Err(LayoutError::Relative(path.to_owned()));
    }
    let mut links = Vec::new();
    let mut resolved = PathBuf::from("/");
    let mut pending: Vec<PathBuf> = path
        .components()
        .rev()
        .map(|component| PathBuf::from(component.as_os_str()))
        .collect();
    while let Some(component) = pending.pop() {
        match component.components().next() {
            Some(Component::RootDir) => resolved = PathBuf::from("/"),
            Some(Component::CurDir) | None => {}
            Some(Component::ParentDir) => {
                resolved.pop();
            }
            Some(Component::Normal(name)) => {
                let candidate = resolved.join(name);
                match read_link(&candidate) {
                    Some(target) => {
                        if links.len() >= 40 {
                            return Err(LayoutError::SymlinkLoop {
                                path: path.to_owned(),
                            });
                        }
                        links.push((candidate, target.clone()));
                        pending.extend(
                            target
                                .components()
                                .rev()
                                .map(|component| PathBuf::from(component.as_os_str())),
                        );
                    }
                    None => resolved = candidate,
                }
            }
            Some(Component::Prefix(_)) => {}
        }
    }
    Ok((links, resolved))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> RuntimeReport {
        RuntimeReport {
            version: "3.11.7".into(),
            executable: "/root/.pyenv/versions/3.11.7/bin/python3.11".into(),
            stdlib: vec!["/root/.pyenv/versions/3.11.7/lib/python3.11".into()],
            mapped: vec![
                "/root/.pyenv/versions/3.11.7/bin/python3.11".into(),
                "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0".into(),
                "/root/.pyenv/versions/3.11.7/lib/python3.11/lib-dynload/_json.so".into(),
                "/usr/lib/locale/C.utf8/LC_CTYPE".into(),
                "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2".into(),
                "/usr/lib/x86_64-linux-gnu/libc.so.6".into(),
                "/usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache".into(),
            ],
        }
    }

    fn debian_loader_links(path: &Path) -> Option<PathBuf> {
        match path.to_str()? {
            "/lib64" => Some("usr/lib64".into()),
            "/usr/lib64/ld-linux-x86-64.so.2" => {
                Some("../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2".into())
            }
            _ => None,
        }
    }

    #[test]
    fn follows_the_loader_s_symlinks_like_the_kernel() {
        let (links, real) = resolve_links(
            Path::new("/lib64/ld-linux-x86-64.so.2"),
            debian_loader_links,
        )
        .unwrap();
        assert_eq!(
            links,
            [
                (PathBuf::from("/lib64"), PathBuf::from("usr/lib64")),
                (
                    PathBuf::from("/usr/lib64/ld-linux-x86-64.so.2"),
                    PathBuf::from("../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
                ),
            ]
        );
        assert_eq!(
            real,
            Path::new("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
        );
        let looping = |path: &Path| (path == Path::new("/a")).then(|| PathBuf::from("/a"));
        assert!(matches!(
            resolve_links(Path::new("/a/b"), looping),
            Err(LayoutError::SymlinkLoop { .. })
        ));
        assert!(resolve_links(Path::new("relative"), |_| None).is_err());
    }

    #[test]
    fn binds_only_the_runtime_and_the_outermost_directories() {
        let (links, real) = resolve_links(
            Path::new("/lib64/ld-linux-x86-64.so.2"),
            debian_loader_links,
        )
        .unwrap();
        let layout = RuntimeLayout::plan(
            report(),
            Some("/lib64/ld-linux-x86-64.so.2".into()),
            links,
            Some(real),
        );
        assert_eq!(
            layout.directories,
            [
                PathBuf::from("/root/.pyenv/versions/3.11.7/lib"),
                PathBuf::from("/usr/lib/locale/C.utf8"),
                PathBuf::from("/usr/lib/x86_64-linux-gnu"),
            ]
        );
        let tree = layout.tree();
        let directory = |path: &str| TreeEntry::Directory(path.into());
        assert_eq!(
            tree,
            [
                directory("/dev"),
                directory("/root"),
                directory("/usr"),
                directory("/root/.pyenv"),
                directory("/usr/lib"),
                directory("/usr/lib64"),
                directory("/root/.pyenv/versions"),
                directory("/usr/lib/locale"),
                directory("/usr/lib/x86_64-linux-gnu"),
                directory("/root/.pyenv/versions/3.11.7"),
                directory("/usr/lib/locale/C.utf8"),
                directory("/root/.pyenv/versions/3.11.7/bin"),
                directory("/root/.pyenv/versions/3.11.7/lib"),
                TreeEntry::ReadOnlyDirectory("/root/.pyenv/versions/3.11.7/lib".into()),
                TreeEntry::ReadOnlyDirectory("/usr/lib/locale/C.utf8".into()),
                TreeEntry::ReadOnlyDirectory("/usr/lib/x86_64-linux-gnu".into()),
                TreeEntry::ReadOnlyFile("/root/.pyenv/versions/3.11.7/bin/python3.11".into()),
                TreeEntry::Device("/dev/null".into()),
                TreeEntry::Device("/dev/zero".into()),
                TreeEntry::Device("/dev/urandom".into()),
                TreeEntry::Symlink {
                    path: "/lib64".into(),
                    target: "usr/lib64".into()
                },
                TreeEntry::Symlink {
                    path: "/usr/lib64/ld-linux-x86-64.so.2".into(),
                    target: "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2".into()
                },
            ]
        );
    }

    #[test]
    fn never_binds_the_root_or_the_tree_s_own_places() {
        let mut report = report();
        report.stdlib = vec!["/".into(), "/proc/self".into(), "/dev/shm".into()];
        report.mapped = vec![];
        let layout = RuntimeLayout::plan(report, None, Vec::new(), None);
        assert_eq!(layout.directories, Vec::<PathBuf>::new());
    }

    #[test]
    fn reads_the_program_interpreter_of_real_executables() {
        let shell = Path::new("/bin/sh");
        let interpreter = elf_interpreter(shell).unwrap();
        assert!(
            interpreter
                .as_ref()
                .is_some_and(|path| path.to_string_lossy().contains("ld-linux")),
            "{interpreter:?}"
        );
        assert!(parse_elf_interpreter(b"#!/bin/sh\n").is_none());
        assert!(parse_elf_interpreter(b"\x7fELF").is_none());
    }
}
