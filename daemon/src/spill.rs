//! Spilled answers: a `callTool` or `readResource` result too large to send in one response is
//! saved to a file and answered with a small reference, so a tool that ran never loses its
//! answer to a size limit.
//!
//! Files live in a directory of the runtime directory (`spill-<pid>-<random>`, mode 0700, checked to be
//! ours and no symlink), each created new with mode 0600 and `O_NOFOLLOW`, named by a random id.
//! The client that made the call reads the file directly when it is on the same machine, or
//! pages it with `readSpilled`, which only the token that produced the answer may do (to any
//! other token an answer's id is as unknown as a made-up one). Files are removed after a time to
//! live and when the daemon stops; [`remove_stale`] removes those a killed daemon left behind.
//! The store is bounded ([`SpillLimits`]): a token keeps at most 64 answers and 512 MiB, all
//! tokens together 2 GiB; a new answer first removes its own token's oldest, and past the
//! total the oldest of all.
//!
//! The store does blocking file I/O: callers run it on a blocking thread.

use std::collections::HashMap;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use rand::RngExt as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use tool_cli_protocol::methods::{ReadSpilledResult, SpilledAnswer};

/// Default time a spilled answer is kept.
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);

/// Largest page `readSpilled` returns.
pub const MAX_PAGE_BYTES: u64 = 1024 * 1024;

/// The smallest page: one UTF-8 character is at most 4 bytes, so a page always makes progress.
const MIN_PAGE_BYTES: u64 = 4;

/// How much the store keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpillLimits {
    /// Most answers one token may have saved; a new one removes its oldest.
    pub answers_per_token: usize,
    /// Most bytes one token may have saved; a new answer removes its oldest until it fits.
    pub bytes_per_token: u64,
    /// Most bytes saved for all tokens; a new answer removes the oldest of all until it fits.
    pub bytes_total: u64,
}

impl Default for SpillLimits {
    fn default() -> SpillLimits {
        SpillLimits {
            answers_per_token: 64,
            bytes_per_token: 512 * 1024 * 1024,
            bytes_total: 2 * 1024 * 1024 * 1024,
        }
    }
}

/// Prefix of a spill directory's name; the daemon's pid follows.
const DIR_PREFIX: &str = "spill-";

/// Why a spilled answer could not be saved or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpillError {
    /// No answer with this id was saved for this token, or it expired.
    #[error(
        "no spilled answer \"{0}\" for this token (answers are kept for a while after the call, \
         then removed; use the id from _meta[\"tool-cli/spilled\"] with the token that made the \
         call)"
    )]
    UnknownId(String),
    /// The offset is past the end.
    #[error("offset {offset} is past the end of the {total} bytes; expected 0 to {total}")]
    OffsetPastEnd {
        /// The offset asked for.
        offset: u64,
        /// The answer's size.
        total: u64,
    },
    /// The offset falls inside a UTF-8 character.
    #[error(
        "offset {0} falls inside a UTF-8 character; start at 0 or at a nextOffset the previous \
         page gave"
    )]
    InsideCharacter(u64),
    /// The answer alone is larger than what one token may keep.
    #[error("an answer of {bytes} bytes is more than the {limit} bytes a token may keep spilled")]
    TooLarge {
        /// The answer's size.
        bytes: u64,
        /// The limit per token.
        limit: u64,
    },
    /// The spill directory is not a private directory of ours.
    #[error("the spill directory {0} is not a directory only we can enter; refusing it")]
    UnsafeDirectory(PathBuf),
    /// The file system failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
}

fn io_error(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SpillError {
    let path = path.to_path_buf();
    move |source| SpillError::Io {
        action,
        path,
        source,
    }
}

/// One saved answer.
#[derive(Debug)]
struct Entry {
    path: PathBuf,
    bytes: u64,
    token_id: String,
    expires: SystemTime,
}

/// The spilled answers of one daemon.
#[derive(Debug)]
pub struct SpillStore {
    dir: PathBuf,
    ttl: Duration,
    limits: SpillLimits,
    /// A std mutex: held only to look up or change the map, never across I/O or an await.
    entries: Mutex<HashMap<String, Entry>>,
}

impl SpillStore {
    /// A store saving into `dir` (created on first use), keeping answers for `ttl`.
    pub fn new(dir: PathBuf, ttl: Duration) -> SpillStore {
        SpillStore::with_limits(dir, ttl, SpillLimits::default())
    }

    /// [`SpillStore::new`] with other bounds than the defaults.
    pub fn with_limits(dir: PathBuf, ttl: Duration, limits: SpillLimits) -> SpillStore {
        SpillStore {
            dir,
            ttl,
            limits,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// A fresh directory for one store in the runtime directory: `spill-<pid>-<random>`. The pid
    /// lets a later daemon tell a dead daemon's directory; the random part keeps two servers in
    /// one process (tests, an embedding harness) from removing each other's answers.
    pub fn default_dir(runtime_dir: &Path) -> PathBuf {
        let unique: [u8; 4] = rand::rng().random();
        runtime_dir.join(format!(
            "{DIR_PREFIX}{}-{}",
            std::process::id(),
            hex(&unique)
        ))
    }

    /// How much it keeps.
    pub fn limits(&self) -> SpillLimits {
        self.limits
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        // A panic while holding this lock leaves the map consistent (single inserts/removes).
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Saves `encoded` (a result's JSON) for `token_id`, and says where.
    pub fn save(
        &self,
        encoded: &[u8],
        token_id: &str,
        now: SystemTime,
    ) -> Result<SpilledAnswer, SpillError> {
        self.sweep(now);
        let bytes = encoded.len() as u64;
        if bytes > self.limits.bytes_per_token || bytes > self.limits.bytes_total {
            return Err(SpillError::TooLarge {
                bytes,
                limit: self.limits.bytes_per_token.min(self.limits.bytes_total),
            });
        }
        for entry in self.make_room(token_id, bytes) {
            let _ = std::fs::remove_file(&entry.path);
        }
        self.ensure_dir()?;
        let id: [u8; 16] = rand::rng().random();
        let id = hex(&id);
        let path = self.dir.join(format!("{id}.json"));
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(io_error("create", &path))?;
        let written = file
            .write_all(encoded)
            .and_then(|()| file.flush())
            .map_err(io_error("write", &path));
        if let Err(error) = written {
            let _ = std::fs::remove_file(&path);
            return Err(error);
        }
        let expires = now + self.ttl;
        self.entries().insert(
            id.clone(),
            Entry {
                path: path.clone(),
                bytes,
                token_id: token_id.to_owned(),
                expires,
            },
        );
        Ok(SpilledAnswer {
            id,
            path: path.to_string_lossy().into_owned(),
            bytes,
            sha256: hex(&Sha256::digest(encoded)),
            expires_at: expires
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |since| since.as_secs()),
        })
    }

    /// Creates the directory 0700, or checks that an existing one is a private directory of
    /// ours (not a symlink someone planted).
    fn ensure_dir(&self) -> Result<(), SpillError> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(io_error("create the directory", &self.dir))?;
        let meta = std::fs::symlink_metadata(&self.dir)
            .map_err(io_error("inspect the directory", &self.dir))?;
        // SAFETY: getuid cannot fail and has no preconditions.
        let uid = unsafe { libc::getuid() };
        if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
            return Err(SpillError::UnsafeDirectory(self.dir.clone()));
        }
        Ok(())
    }

    /// One page of the answer `id`, for `token_id`: at most `length` bytes from `offset`,
    /// shortened to end on a whole UTF-8 character.
    pub fn read(
        &self,
        id: &str,
        token_id: &str,
        offset: u64,
        length: u64,
        now: SystemTime,
    ) -> Result<ReadSpilledResult, SpillError> {
        self.sweep(now);
        let (path, total) = match self.entries().get(id) {
            // Another token's answer is as unknown as a made-up id.
            Some(entry) if entry.token_id == token_id => (entry.path.clone(), entry.bytes),
            _ => return Err(SpillError::UnknownId(id.to_owned())),
        };
        if offset > total {
            return Err(SpillError::OffsetPastEnd { offset, total });
        }
        let length = length
            .clamp(MIN_PAGE_BYTES, MAX_PAGE_BYTES)
            .min(total - offset);
        let mut file = File::open(&path).map_err(io_error("open", &path))?;
        file.seek(SeekFrom::Start(offset))
            .map_err(io_error("seek in", &path))?;
        let mut page = vec![0u8; length as usize];
        file.read_exact(&mut page)
            .map_err(io_error("read", &path))?;
        if page
            .first()
            .is_some_and(|&byte| byte & 0b1100_0000 == 0b1000_0000)
        {
            return Err(SpillError::InsideCharacter(offset));
        }
        let text = match String::from_utf8(page) {
            Ok(text) => text,
            // The page ends inside a character: stop before it, the next page starts there.
            Err(error) if error.utf8_error().error_len().is_none() => {
                let valid = error.utf8_error().valid_up_to();
                let mut page = error.into_bytes();
                page.truncate(valid);
                String::from_utf8(page).expect("the prefix is valid UTF-8")
            }
            Err(_) => {
                return Err(SpillError::Io {
                    action: "decode",
                    path,
                    source: std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "the saved answer is not UTF-8",
                    ),
                });
            }
        };
        let end = offset + text.len() as u64;
        Ok(ReadSpilledResult {
            id: id.to_owned(),
            offset,
            total_bytes: total,
            text,
            next_offset: (end < total).then_some(end),
        })
    }

    /// Takes out the answers that must go for `token_id` to save `bytes` more: its own oldest
    /// while it is over its count or bytes, then the oldest of all while the total is over.
    /// The caller removes their files (outside the lock).
    fn make_room(&self, token_id: &str, bytes: u64) -> Vec<Entry> {
        let limits = self.limits;
        let mut entries = self.entries();
        let mut removed = Vec::new();
        // Answers are saved with the same time to live, so the one expiring first is the oldest.
        let oldest = |entries: &HashMap<String, Entry>, only: Option<&str>| {
            entries
                .iter()
                .filter(|(_, entry)| only.is_none_or(|token| entry.token_id == token))
                .min_by_key(|(_, entry)| entry.expires)
                .map(|(id, _)| id.clone())
        };
        loop {
            let (count, held) = entries
                .values()
                .filter(|entry| entry.token_id == token_id)
                .fold((0, 0), |(count, held), entry| {
                    (count + 1, held + entry.bytes)
                });
            if count < limits.answers_per_token && held + bytes <= limits.bytes_per_token {
                break;
            }
            let Some(id) = oldest(&entries, Some(token_id)) else {
                break;
            };
            removed.extend(entries.remove(&id));
        }
        while entries.values().map(|entry| entry.bytes).sum::<u64>() + bytes > limits.bytes_total {
            let Some(id) = oldest(&entries, None) else {
                break;
            };
            removed.extend(entries.remove(&id));
        }
        removed
    }

    /// Removes the answers whose time is up; returns how many.
    pub fn sweep(&self, now: SystemTime) -> usize {
        let expired: Vec<Entry> = {
            let mut entries = self.entries();
            let ids: Vec<String> = entries
                .iter()
                .filter(|(_, entry)| entry.expires <= now)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| entries.remove(id)).collect()
        };
        for entry in &expired {
            let _ = std::fs::remove_file(&entry.path);
        }
        expired.len()
    }

    /// Removes every answer and the directory (at shutdown).
    pub fn remove_all(&self) {
        self.entries().clear();
        if std::fs::symlink_metadata(&self.dir).is_ok_and(|meta| meta.is_dir()) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Drop for SpillStore {
    fn drop(&mut self) {
        self.remove_all();
    }
}

/// Removes the spill directories in `runtime_dir` of daemons that are no longer running (killed
/// before they could clean up). Returns how many.
pub fn remove_stale(runtime_dir: &Path) -> usize {
    let Ok(listing) = std::fs::read_dir(runtime_dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in listing.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(DIR_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        let alive = pid > 0 && {
            // SAFETY: kill with signal 0 only checks that the process exists.
            let rc = unsafe { libc::kill(pid, 0) };
            rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
        };
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        if !alive && is_dir && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// What is sent instead of a `callTool` result too large to send: a valid `CallToolResult`
/// whose text says where the whole result is, keeping the original's `isError`.
pub fn call_reference(original: &Value, spilled: &SpilledAnswer) -> Value {
    let mut reference = json!({
        "content": [{"type": "text", "text": describe("result", spilled)}],
        "_meta": {tool_cli_protocol::meta::SPILLED: spilled},
    });
    if let Some(is_error) = original.get("isError") {
        reference["isError"] = is_error.clone();
    }
    reference
}

/// What is sent instead of a `readResource` result too large to send: a valid
/// `ReadResourceResult` with one text content saying where the whole result is.
pub fn resource_reference(uri: &str, spilled: &SpilledAnswer) -> Value {
    json!({
        "contents": [{"uri": uri, "mimeType": "text/plain", "text": describe("resource", spilled)}],
        "_meta": {tool_cli_protocol::meta::SPILLED: spilled},
    })
}

fn describe(what: &str, spilled: &SpilledAnswer) -> String {
    format!(
        "{what} of {} bytes saved to {} (sha256 {}); read it there, page it with readSpilled \
         {{\"id\": \"{}\"}}, or save it with tool-cli --out FILE",
        spilled.bytes, spilled.path, spilled.sha256, spilled.id
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn store(dir: &Path) -> SpillStore {
        SpillStore::new(dir.join("spill-test"), Duration::from_secs(60))
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_saved_answer_is_private_and_read_back_page_by_page() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let now = SystemTime::now();
        // Multi-byte characters straddle the page boundaries.
        let text = format!(r#"{{"text":"{}"}}"#, "é€😀a".repeat(1000));
        let saved = store.save(text.as_bytes(), "tok", now).unwrap();
        assert_eq!(saved.bytes, text.len() as u64);
        assert_eq!(saved.sha256, hex(&Sha256::digest(text.as_bytes())));
        assert_eq!(mode(Path::new(&saved.path)), 0o600);
        assert_eq!(mode(&dir.path().join("spill-test")), 0o700);
        assert_eq!(std::fs::read(&saved.path).unwrap(), text.as_bytes());

        let mut offset = 0;
        let mut joined = String::new();
        loop {
            let page = store.read(&saved.id, "tok", offset, 7, now).unwrap();
            assert_eq!(page.total_bytes, text.len() as u64);
            assert!(!page.text.is_empty());
            joined.push_str(&page.text);
            match page.next_offset {
                Some(next) => offset = next,
                None => break,
            }
        }
        assert_eq!(joined, text);
    }

    #[test]
    fn only_the_producing_token_reads_and_offsets_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let now = SystemTime::now();
        let saved = store.save("aé".as_bytes(), "tok", now).unwrap();
        assert!(matches!(
            store.read(&saved.id, "other", 0, 10, now),
            Err(SpillError::UnknownId(_))
        ));
        assert!(matches!(
            store.read("made-up", "tok", 0, 10, now),
            Err(SpillError::UnknownId(_))
        ));
        assert!(matches!(
            store.read(&saved.id, "tok", 2, 10, now),
            Err(SpillError::InsideCharacter(2))
        ));
        assert!(matches!(
            store.read(&saved.id, "tok", 4, 10, now),
            Err(SpillError::OffsetPastEnd { .. })
        ));
        let end = store.read(&saved.id, "tok", 3, 10, now).unwrap();
        assert_eq!((end.text.as_str(), end.next_offset), ("", None));
    }

    #[test]
    fn answers_expire_and_everything_goes_at_shutdown() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let now = SystemTime::now();
        let early = store.save(b"1", "tok", now).unwrap();
        let later = store
            .save(b"2", "tok", now + Duration::from_secs(30))
            .unwrap();
        assert_eq!(store.sweep(now + Duration::from_secs(61)), 1);
        assert!(!Path::new(&early.path).exists());
        assert!(Path::new(&later.path).exists());
        assert!(matches!(
            store.read(&early.id, "tok", 0, 10, now + Duration::from_secs(61)),
            Err(SpillError::UnknownId(_))
        ));
        drop(store);
        assert!(!dir.path().join("spill-test").exists());
    }

    #[test]
    fn the_store_is_bounded_per_token_and_in_all() {
        let dir = tempfile::tempdir().unwrap();
        let store = SpillStore::with_limits(
            dir.path().join("spill-test"),
            Duration::from_secs(60),
            SpillLimits {
                answers_per_token: 3,
                bytes_per_token: 100,
                bytes_total: 150,
            },
        );
        let start = SystemTime::now();
        let at = |seconds: u64| start + Duration::from_secs(seconds);
        let readable = |id: &str, token: &str| store.read(id, token, 0, 10, at(10)).is_ok();
        let files = || {
            std::fs::read_dir(dir.path().join("spill-test"))
                .unwrap()
                .count()
        };
        // A fourth answer of one token removes its first.
        let a: Vec<String> = (0..4)
            .map(|n| store.save(b"[1]", "tok-a", at(n)).unwrap().id)
            .collect();
        assert!(!readable(&a[0], "tok-a"));
        assert!(a[1..].iter().all(|id| readable(id, "tok-a")));
        assert_eq!(files(), 3);
        // Bytes per token: 60 more removes tok-a's oldest until 3 + 3 + 60 fit in 100.
        let big = store.save(&[b' '; 60], "tok-a", at(5)).unwrap().id;
        assert!(!readable(&a[1], "tok-a") && readable(&a[2], "tok-a"));
        assert!(readable(&big, "tok-a"));
        // The total: tok-b's 90 bytes push out the oldest of all, which are tok-a's.
        let b = store.save(&[b' '; 90], "tok-b", at(6)).unwrap().id;
        assert!(readable(&b, "tok-b"));
        let kept: u64 = [&a[2], &a[3], &big]
            .iter()
            .filter(|id| readable(id, "tok-a"))
            .map(|id| store.read(id, "tok-a", 0, 100, at(10)).unwrap().total_bytes)
            .sum();
        assert!(kept + 90 <= 150, "{kept}");
        // One answer larger than a token may keep is refused, and removes nothing.
        let before = files();
        assert!(matches!(
            store.save(&[b' '; 101], "tok-b", at(7)),
            Err(SpillError::TooLarge {
                bytes: 101,
                limit: 100
            })
        ));
        assert!(readable(&b, "tok-b"));
        assert_eq!(files(), before);
    }

    #[test]
    fn a_planted_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("spill-test")).unwrap();
        let store = store(dir.path());
        assert!(matches!(
            store.save(b"x", "tok", SystemTime::now()),
            Err(SpillError::UnsafeDirectory(_))
        ));
        drop(store);
        assert!(target.exists(), "the symlink's target is left alone");
    }

    #[test]
    fn stale_directories_of_dead_daemons_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let ours = SpillStore::default_dir(dir.path());
        std::fs::create_dir(&ours).unwrap();
        let also_ours = SpillStore::default_dir(dir.path());
        assert_ne!(
            ours, also_ours,
            "two stores of one process never share a directory"
        );
        // Beyond any pid_max: no such process.
        let dead = dir
            .path()
            .join(format!("{DIR_PREFIX}{}-0badf00d", i32::MAX - 1));
        std::fs::create_dir(&dead).unwrap();
        let unrelated = dir.path().join("spill-notes");
        std::fs::create_dir(&unrelated).unwrap();
        assert_eq!(remove_stale(dir.path()), 1);
        assert!(ours.exists() && unrelated.exists() && !dead.exists());
    }

    #[test]
    fn references_are_valid_results_of_their_method() {
        let spilled = SpilledAnswer {
            id: "ab".into(),
            path: "/run/x/ab.json".into(),
            bytes: 20_000_000,
            sha256: "00".repeat(32),
            expires_at: 1,
        };
        let call = call_reference(&json!({"content": [], "isError": true}), &spilled);
        assert_eq!(call["isError"], true);
        assert_eq!(call["content"][0]["type"], "text");
        assert!(
            call["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("result of 20000000 bytes saved to /run/x/ab.json")
        );
        assert_eq!(call["_meta"]["tool-cli/spilled"]["id"], "ab");
        assert_eq!(call["_meta"]["tool-cli/spilled"]["expiresAt"], 1);
        let resource = resource_reference("file:///big", &spilled);
        assert_eq!(resource["contents"][0]["uri"], "file:///big");
        assert_eq!(resource["_meta"]["tool-cli/spilled"]["bytes"], 20_000_000);
    }
}
