//! The pin store: the approved pins of every pinned server, in one versioned JSON file.
//!
//! The file is written 0600, atomically (a temporary file in the same directory, synced, then
//! renamed over the old one, and the directory synced), and read back with every digest
//! checked. Reading **fails closed**: a file that does not parse, has a digest that does not
//! match its value, a version this code does not know, is writable by the group or others,
//! belongs to another user, lies in a directory others may write (without the sticky bit), or
//! is larger than [`MAX_STORE_BYTES`] is an error naming the file and the fix, never "nothing
//! pinned". Only a file that does not exist means nothing is pinned.
//!
//! Format (version 1; the header first, then servers, items, fields and every object inside a
//! value sorted by name, two-space indented, so it reads and diffs well in a repository):
//!
//! ```json
//! {
//!   "format": "tool-cli-pins",
//!   "version": 1,
//!   "servers": {
//!     "github": {
//!       "instructions": {"digest": "sha256/v1:…", "fields": {"instructions": {"digest": "sha256/v1:…", "value": "…"}}},
//!       "tools": {"create_issue": {"digest": "sha256/v1:…", "fields": {"name": {…}, "description": {…}, "inputSchema": {…}}}},
//!       "prompts": {},
//!       "resourceTemplates": {}
//!     }
//!   }
//! }
//! ```
//!
//! An item's `digest` is over the canonical object of its fields' values; each field's over
//! its value alone (`crate::canonical`).

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{ItemKey, ItemKind, PinnedItem, ServerListing, ServerPins};
use crate::canonical::{self, Digest};

/// What the file's `format` member says.
pub const STORE_FORMAT: &str = "tool-cli-pins";

/// The version this code writes and reads.
pub const STORE_VERSION: u32 = 1;

/// The largest store read (10,000 tools with large schemas fit several times over).
pub const MAX_STORE_BYTES: u64 = 64 * 1024 * 1024;

/// Why the pin store cannot be used. Every variant means "trust nothing pinned".
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PinStoreError {
    /// The file exists but could not be read.
    #[error("cannot read the pin store {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Not a regular file.
    #[error(
        "the pin store {path} is not a regular file; expected the JSON file tool-cli pin writes"
    )]
    NotAFile {
        /// The path.
        path: String,
    },
    /// Writable by the group or others.
    #[error(
        "the pin store {path} is writable by {who} (mode {mode:04o}); pins others can rewrite \
         protect nothing. Check its contents, then run: chmod 600 {path}"
    )]
    Writable {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
        /// `its group`, `others` or `its group and others`.
        who: &'static str,
    },
    /// Owned by another user than the one reading it (or root).
    #[error(
        "the pin store {path} belongs to uid {owner}, not to you (uid {reader}) or root; \
         expected your own file"
    )]
    Owner {
        /// The file.
        path: String,
        /// Its owner.
        owner: u32,
        /// Who reads it.
        reader: u32,
    },
    /// In a directory others may write without the sticky bit: the file could be swapped.
    #[error(
        "the pin store's directory {directory} is writable by others (mode {mode:04o}) without \
         the sticky bit, so the store could be replaced; keep it in a directory only you can \
         write"
    )]
    WritableDirectory {
        /// The directory.
        directory: String,
        /// Its permission bits.
        mode: u32,
    },
    /// Too large to be a pin store.
    #[error(
        "the pin store {path} is {size} bytes, over the {max}-byte limit; expected the file tool-cli pin writes"
    )]
    TooLarge {
        /// The file.
        path: String,
        /// Its size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// Unreadable as a pin store, or a digest does not match.
    #[error(
        "the pin store {path} is corrupt: {reason}; nothing pinned is trusted until it is \
         restored (from version control or a backup) or written anew with tool-cli pin"
    )]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong, and where.
        reason: String,
    },
    /// A version this code does not read.
    #[error(
        "the pin store {path} has version {found}; this tool-cli reads version {supported}. \
         Upgrade tool-cli to read it"
    )]
    UnknownVersion {
        /// The file.
        path: String,
        /// Its version.
        found: u64,
        /// What this code reads.
        supported: u32,
    },
    /// The store could not be written.
    #[error("cannot write the pin store {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Why a store text is not a valid store (the file-less half of [`PinStoreError::Corrupt`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreTextError {
    /// Corrupt, with the reason.
    Corrupt(String),
    /// A version this code does not read.
    UnknownVersion(u64),
}

/// Every pinned server's pins.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PinStore {
    servers: BTreeMap<String, ServerPins>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    format: String,
    version: u64,
    servers: BTreeMap<String, ServerFile>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ServerFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    instructions: Option<ItemFile>,
    #[serde(default)]
    tools: BTreeMap<String, ItemFile>,
    #[serde(default)]
    prompts: BTreeMap<String, ItemFile>,
    #[serde(default)]
    resource_templates: BTreeMap<String, ItemFile>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ItemFile {
    digest: String,
    fields: BTreeMap<String, FieldFile>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FieldFile {
    digest: String,
    value: Value,
}

impl PinStore {
    /// An empty store.
    pub fn new() -> PinStore {
        PinStore::default()
    }

    /// The pins of `server`, if it is pinned.
    pub fn server(&self, server: &str) -> Option<&ServerPins> {
        self.servers.get(server)
    }

    /// The pinned servers' names, sorted.
    pub fn servers(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// Pins everything `listing` shows now, replacing the server's pins; returns the notes on
    /// items that could not be pinned as they are.
    pub fn pin_server(&mut self, listing: &ServerListing) -> Vec<super::ListingNote> {
        let (pins, notes) = ServerPins::from_listing(listing);
        self.servers.insert(listing.server.clone(), pins);
        notes
    }

    /// Approves one item of `listing` as it is now: pins it if shown, unpins it if it vanished.
    /// Returns whether anything changed. The server must be pinned already (pin it whole
    /// first): approving one item of an unpinned server would pin nothing else of it.
    pub fn approve_item(
        &mut self,
        listing: &ServerListing,
        key: &ItemKey,
    ) -> Result<bool, ApproveError> {
        let Some(pinned) = self.servers.get_mut(&listing.server) else {
            return Err(ApproveError::ServerNotPinned {
                server: listing.server.clone(),
            });
        };
        let (current, _) = ServerPins::from_listing(listing);
        match current.item(key) {
            Some(item) => {
                let changed = pinned.item(key) != Some(item);
                pinned.insert(key.clone(), item.clone());
                Ok(changed)
            }
            None if pinned.item(key).is_some() => {
                pinned.remove(key);
                Ok(true)
            }
            None => Err(ApproveError::NoSuchItem {
                server: listing.server.clone(),
                key: key.to_string(),
            }),
        }
    }

    /// Stops pinning `server`; returns whether it was pinned.
    pub fn unpin_server(&mut self, server: &str) -> bool {
        self.servers.remove(server).is_some()
    }

    /// The store as the file's text (header first, names sorted, two-space indent, final
    /// newline).
    pub fn to_json(&self) -> String {
        let file = StoreFile {
            format: STORE_FORMAT.to_owned(),
            version: u64::from(STORE_VERSION),
            servers: self
                .servers
                .iter()
                .map(|(name, pins)| (name.clone(), server_file(pins)))
                .collect(),
        };
        let mut text = serde_json::to_string_pretty(&file).expect("a store always serializes");
        text.push('\n');
        text
    }

    /// Reads a store from its text, checking every digest.
    pub fn from_json(text: &str) -> Result<PinStore, StoreTextError> {
        // The version first, so that a newer file gets "upgrade", not "corrupt".
        let raw: Value = serde_json::from_str(text)
            .map_err(|error| StoreTextError::Corrupt(format!("not JSON ({error})")))?;
        if raw.get("format").and_then(Value::as_str) != Some(STORE_FORMAT) {
            return Err(StoreTextError::Corrupt(format!(
                "\"format\" is not \"{STORE_FORMAT}\""
            )));
        }
        match raw.get("version").and_then(Value::as_u64) {
            Some(version) if version == u64::from(STORE_VERSION) => {}
            Some(version) => return Err(StoreTextError::UnknownVersion(version)),
            None => {
                return Err(StoreTextError::Corrupt(
                    "\"version\" is missing or not a whole number".to_owned(),
                ));
            }
        }
        let file: StoreFile = serde_json::from_value(raw)
            .map_err(|error| StoreTextError::Corrupt(error.to_string()))?;
        let mut servers = BTreeMap::new();
        for (name, server) in file.servers {
            let pins = server_pins(&name, server).map_err(StoreTextError::Corrupt)?;
            servers.insert(name, pins);
        }
        Ok(PinStore { servers })
    }

    /// Reads the store at `path`: `Ok(None)` when there is no file (nothing is pinned), an
    /// error for anything that makes it untrustworthy (see the module documentation).
    pub fn load(path: &Path) -> Result<Option<PinStore>, PinStoreError> {
        let shown = path.display().to_string();
        let mut file = match File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(PinStoreError::Read {
                    path: shown,
                    source,
                });
            }
        };
        // The checks read the opened file's own metadata, so the file checked is the file read.
        let metadata = file.metadata().map_err(|source| PinStoreError::Read {
            path: shown.clone(),
            source,
        })?;
        check_file(&shown, &metadata, current_uid())?;
        check_directory(path)?;
        let mut text = String::new();
        Read::by_ref(&mut file)
            .take(MAX_STORE_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|source| match source.kind() {
                std::io::ErrorKind::InvalidData => PinStoreError::Corrupt {
                    path: shown.clone(),
                    reason: "not UTF-8 text".to_owned(),
                },
                _ => PinStoreError::Read {
                    path: shown.clone(),
                    source,
                },
            })?;
        if text.len() as u64 > MAX_STORE_BYTES {
            return Err(PinStoreError::TooLarge {
                path: shown,
                size: text.len() as u64,
                max: MAX_STORE_BYTES,
            });
        }
        PinStore::from_json(&text)
            .map(Some)
            .map_err(|error| match error {
                StoreTextError::Corrupt(reason) => PinStoreError::Corrupt {
                    path: shown,
                    reason,
                },
                StoreTextError::UnknownVersion(found) => PinStoreError::UnknownVersion {
                    path: shown,
                    found,
                    supported: STORE_VERSION,
                },
            })
    }

    /// Writes the store to `path` atomically, mode 0600 (the directory must exist).
    pub fn save(&self, path: &Path) -> Result<(), PinStoreError> {
        let shown = path.display().to_string();
        let failed = |source| PinStoreError::Write {
            path: shown.clone(),
            source,
        };
        let directory = parent_directory(path);
        let temporary = temporary_path(path);
        let written = (|| {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temporary)?;
            // The umask can only take bits away; set 0600 outright all the same.
            file.set_permissions(fs::Permissions::from_mode(0o600))?;
            file.write_all(self.to_json().as_bytes())?;
            file.sync_all()?;
            fs::rename(&temporary, path)?;
            File::open(&directory)?.sync_all()
        })();
        if written.is_err() {
            let _ = fs::remove_file(&temporary);
        }
        written.map_err(failed)
    }
}

/// Why one item could not be approved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApproveError {
    /// The server has no pins yet.
    #[error("server {server:?} is not pinned; pin it whole first (tool-cli pin {server})")]
    ServerNotPinned {
        /// The server.
        server: String,
    },
    /// Neither shown nor pinned.
    #[error("server {server:?} neither shows nor pins {key}")]
    NoSuchItem {
        /// The server.
        server: String,
        /// The item, in words.
        key: String,
    },
}

fn server_file(pins: &ServerPins) -> ServerFile {
    let mut file = ServerFile::default();
    for (key, item) in pins.items() {
        let item_file = ItemFile {
            digest: item.digest.as_str().to_owned(),
            fields: item
                .fields
                .iter()
                .map(|(name, field)| {
                    (
                        name.clone(),
                        FieldFile {
                            digest: field.digest.as_str().to_owned(),
                            value: sorted(&field.value),
                        },
                    )
                })
                .collect(),
        };
        match key.kind {
            ItemKind::Instructions => file.instructions = Some(item_file),
            ItemKind::Tool => {
                file.tools.insert(key.name.clone(), item_file);
            }
            ItemKind::Prompt => {
                file.prompts.insert(key.name.clone(), item_file);
            }
            ItemKind::ResourceTemplate => {
                file.resource_templates.insert(key.name.clone(), item_file);
            }
        }
    }
    file
}

/// `value` with every object's keys in canonical order, so the file is the same whatever
/// order the server listed them in.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(members) => {
            let mut entries: Vec<(&String, &Value)> = members.iter().collect();
            entries.sort_by(|(left, _), (right, _)| canonical::compare_utf16(left, right));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, member)| (key.clone(), sorted(member)))
                    .collect::<Map<String, Value>>(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn server_pins(server: &str, file: ServerFile) -> Result<ServerPins, String> {
    let mut pins = ServerPins::default();
    let mut items: Vec<(ItemKey, ItemFile)> = Vec::new();
    if let Some(instructions) = file.instructions {
        items.push((ItemKey::instructions(), instructions));
    }
    for (kind, group) in [
        (ItemKind::Tool, file.tools),
        (ItemKind::Prompt, file.prompts),
        (ItemKind::ResourceTemplate, file.resource_templates),
    ] {
        for (name, item) in group {
            items.push((ItemKey { kind, name }, item));
        }
    }
    for (key, item_file) in items {
        let place = format!("server {server:?}, {key}");
        let item = pinned_item(&key, item_file).map_err(|reason| format!("{place}: {reason}"))?;
        pins.insert(key, item);
    }
    Ok(pins)
}

fn pinned_item(key: &ItemKey, file: ItemFile) -> Result<PinnedItem, String> {
    let item_digest = Digest::parse(&file.digest).ok_or_else(|| {
        format!(
            "item digest {:?} is not sha256/v1:<64 hex digits>",
            file.digest
        )
    })?;
    let mut fields = BTreeMap::new();
    for (name, field) in file.fields {
        if !key.kind.fields().contains(&name.as_str()) {
            return Err(format!(
                "{name:?} is not a field pinned for a {}",
                key.kind.word()
            ));
        }
        let digest = Digest::parse(&field.digest)
            .ok_or_else(|| format!("digest of {name:?} is not sha256/v1:<64 hex digits>"))?;
        if canonical::digest(&field.value) != digest {
            return Err(format!("the value of {name:?} does not match its digest"));
        }
        fields.insert(name, field.value);
    }
    let key_field = key.kind.key_field();
    match fields.get(key_field) {
        // The instructions item is the text itself; its key is empty.
        Some(Value::String(_)) if key.kind == ItemKind::Instructions => {}
        Some(Value::String(named)) if *named == key.name => {}
        _ => {
            return Err(format!(
                "its {key_field:?} field is missing or does not match its key"
            ));
        }
    }
    let item = PinnedItem::from_fields(fields);
    if item.digest != item_digest {
        return Err("the item digest does not match its fields".to_owned());
    }
    Ok(PinnedItem {
        digest: item.digest,
        fields: item.fields,
    })
}

/// The mode, owner and kind checks on the opened store.
fn check_file(path: &str, metadata: &fs::Metadata, reader: u32) -> Result<(), PinStoreError> {
    if !metadata.is_file() {
        return Err(PinStoreError::NotAFile {
            path: path.to_owned(),
        });
    }
    if metadata.len() > MAX_STORE_BYTES {
        return Err(PinStoreError::TooLarge {
            path: path.to_owned(),
            size: metadata.len(),
            max: MAX_STORE_BYTES,
        });
    }
    let mode = metadata.mode() & 0o7777;
    let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (true, true) => Some("its group and others"),
        (true, false) => Some("its group"),
        (false, true) => Some("others"),
        (false, false) => None,
    };
    if let Some(who) = who {
        return Err(PinStoreError::Writable {
            path: path.to_owned(),
            mode,
            who,
        });
    }
    let owner = metadata.uid();
    if owner != reader && owner != 0 {
        return Err(PinStoreError::Owner {
            path: path.to_owned(),
            owner,
            reader,
        });
    }
    Ok(())
}

/// The store's directory must not let others replace it: not writable by group or others
/// unless sticky (as /tmp is, where only a file's owner may rename or remove it).
fn check_directory(path: &Path) -> Result<(), PinStoreError> {
    let directory = parent_directory(path);
    let Ok(metadata) = fs::metadata(&directory) else {
        // The file was just opened through this directory; a failed stat changes nothing.
        return Ok(());
    };
    let mode = metadata.mode() & 0o7777;
    let sticky = mode & 0o1000 != 0;
    if mode & 0o022 != 0 && !sticky {
        return Err(PinStoreError::WritableDirectory {
            directory: directory.display().to_string(),
            mode,
        });
    }
    Ok(())
}

fn parent_directory(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A fresh name beside `path` for the atomic write.
fn temporary_path(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "pins.json".to_owned());
    let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
    parent_directory(path).join(format!(".{file_name}.{}.{unique}.tmp", std::process::id()))
}

fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn listing() -> ServerListing {
        ServerListing {
            server: "github".to_owned(),
            instructions: Some("Use issues for bugs.".to_owned()),
            tools: vec![json!({
                "name": "create_issue",
                "description": "Creates an issue.",
                "inputSchema": {"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}},
                "annotations": {"destructiveHint": false}
            })],
            prompts: vec![
                json!({"name": "triage", "description": "Triage.", "arguments": [{"name": "issue"}]}),
            ],
            resource_templates: vec![
                json!({"uriTemplate": "repo://{owner}/{name}", "name": "repo"}),
            ],
        }
    }

    #[test]
    fn a_store_round_trips_through_its_text() {
        let mut store = PinStore::new();
        assert!(store.pin_server(&listing()).is_empty());
        let text = store.to_json();
        assert!(
            text.starts_with(
                "{\n  \"format\": \"tool-cli-pins\",\n  \"version\": 1,\n  \"servers\""
            ),
            "{text}"
        );
        let read = PinStore::from_json(&text).unwrap();
        assert_eq!(read, store);
        assert_eq!(read.to_json(), text);
    }

    #[test]
    fn a_tampered_value_is_corrupt() {
        let mut store = PinStore::new();
        store.pin_server(&listing());
        let text = store
            .to_json()
            .replace("Creates an issue.", "Creates an issue. BCC me.");
        let error = PinStore::from_json(&text).unwrap_err();
        assert_eq!(
            error,
            StoreTextError::Corrupt(
                "server \"github\", tool \"create_issue\": the value of \"description\" does not \
                 match its digest"
                    .to_owned()
            )
        );
    }

    #[test]
    fn a_tampered_digest_an_unknown_field_or_a_wrong_key_is_corrupt() {
        let mut store = PinStore::new();
        store.pin_server(&listing());
        let text = store.to_json();
        let mut raw: Value = serde_json::from_str(&text).unwrap();
        let tool = &mut raw["servers"]["github"]["tools"]["create_issue"];
        tool["digest"] = json!(format!("sha256/v1:{}", "0".repeat(64)));
        let error = PinStore::from_json(&raw.to_string()).unwrap_err();
        assert!(
            matches!(&error, StoreTextError::Corrupt(reason) if reason.contains("item digest does not match")),
            "{error:?}"
        );

        let mut raw: Value = serde_json::from_str(&text).unwrap();
        raw["servers"]["github"]["tools"]["create_issue"]["fields"]["icons"] =
            json!({"digest": canonical::digest(&json!([])).as_str(), "value": []});
        let error = PinStore::from_json(&raw.to_string()).unwrap_err();
        assert!(
            matches!(&error, StoreTextError::Corrupt(reason) if reason.contains("\"icons\" is not a field")),
            "{error:?}"
        );

        let mut raw: Value = serde_json::from_str(&text).unwrap();
        let tools = raw["servers"]["github"]["tools"].as_object_mut().unwrap();
        let item = tools.remove("create_issue").unwrap();
        tools.insert("delete_repo".to_owned(), item);
        let error = PinStore::from_json(&raw.to_string()).unwrap_err();
        assert!(
            matches!(&error, StoreTextError::Corrupt(reason) if reason.contains("does not match its key")),
            "{error:?}"
        );

        let mut raw: Value = serde_json::from_str(&text).unwrap();
        raw["servers"]["github"]["extra"] = json!(1);
        assert!(matches!(
            PinStore::from_json(&raw.to_string()),
            Err(StoreTextError::Corrupt(_))
        ));
    }

    #[test]
    fn an_item_without_its_key_field_is_corrupt() {
        let mut store = PinStore::new();
        store.pin_server(&listing());
        let mut raw: Value = serde_json::from_str(&store.to_json()).unwrap();
        let instructions = &mut raw["servers"]["github"]["instructions"];
        instructions["fields"] = json!({});
        instructions["digest"] = json!(canonical::digest(&json!({})).as_str());
        let error = PinStore::from_json(&raw.to_string()).unwrap_err();
        assert!(
            matches!(&error, StoreTextError::Corrupt(reason) if reason.contains("\"instructions\" field is missing")),
            "{error:?}"
        );
    }

    #[test]
    fn versions_and_formats_are_checked_first() {
        assert_eq!(
            PinStore::from_json(
                r#"{"format": "tool-cli-pins", "version": 2, "servers": {}, "new": 1}"#
            ),
            Err(StoreTextError::UnknownVersion(2))
        );
        assert!(matches!(
            PinStore::from_json(r#"{"format": "other", "version": 1, "servers": {}}"#),
            Err(StoreTextError::Corrupt(_))
        ));
        assert!(matches!(
            PinStore::from_json("{"),
            Err(StoreTextError::Corrupt(_))
        ));
        assert!(matches!(
            PinStore::from_json(""),
            Err(StoreTextError::Corrupt(_))
        ));
        assert_eq!(
            PinStore::from_json(r#"{"format": "tool-cli-pins", "version": 1, "servers": {}}"#),
            Ok(PinStore::new())
        );
    }

    #[test]
    fn approving_one_item_pins_it_and_nothing_else() {
        let mut store = PinStore::new();
        let mut shown = listing();
        assert!(matches!(
            store.approve_item(&shown, &ItemKey::tool("create_issue")),
            Err(ApproveError::ServerNotPinned { .. })
        ));
        store.pin_server(&shown);
        shown.tools[0]["description"] = json!("Creates an issue, now better.");
        shown.instructions = Some("Changed.".to_owned());
        assert_eq!(
            store.approve_item(&shown, &ItemKey::tool("create_issue")),
            Ok(true)
        );
        let current = ServerPins::from_listing(&shown).0;
        let pinned = store.server("github").unwrap();
        assert_eq!(
            pinned.item(&ItemKey::tool("create_issue")),
            current.item(&ItemKey::tool("create_issue"))
        );
        assert_ne!(
            pinned.item(&ItemKey::instructions()),
            current.item(&ItemKey::instructions())
        );
        assert_eq!(
            store.approve_item(&shown, &ItemKey::tool("create_issue")),
            Ok(false)
        );
        assert!(matches!(
            store.approve_item(&shown, &ItemKey::tool("nope")),
            Err(ApproveError::NoSuchItem { .. })
        ));
        // Approving a vanished item unpins it.
        shown.prompts.clear();
        assert_eq!(
            store.approve_item(&shown, &ItemKey::prompt("triage")),
            Ok(true)
        );
        assert!(
            store
                .server("github")
                .unwrap()
                .item(&ItemKey::prompt("triage"))
                .is_none()
        );
    }

    #[test]
    fn file_checks_refuse_writable_and_foreign_files() {
        /// Removes the directory however the test ends.
        struct Removed(PathBuf);
        impl Drop for Removed {
            fn drop(&mut self) {
                let _ = fs::remove_dir_all(&self.0);
            }
        }
        let directory = std::env::temp_dir().join(format!("pin-store-unit-{}", std::process::id()));
        fs::create_dir_all(&directory).unwrap();
        let _removed = Removed(directory.clone());
        let path = directory.join("pins.json");
        fs::write(&path, "{}").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o664)).unwrap();
        let metadata = fs::metadata(&path).unwrap();
        let error = check_file("pins.json", &metadata, metadata.uid()).unwrap_err();
        assert!(
            matches!(
                error,
                PinStoreError::Writable {
                    who: "its group",
                    ..
                }
            ),
            "{error}"
        );
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let metadata = fs::metadata(&path).unwrap();
        assert!(check_file("pins.json", &metadata, metadata.uid()).is_ok());
        // Another user's file is refused. As root the file is given away to do it; as anyone
        // else, the reader is said to be another uid (root's own files are always accepted).
        let reader = if metadata.uid() == 0 {
            std::os::unix::fs::chown(&path, Some(54321), None).unwrap();
            0
        } else {
            metadata.uid() + 1
        };
        let metadata = fs::metadata(&path).unwrap();
        let error = check_file("pins.json", &metadata, reader).unwrap_err();
        assert!(matches!(error, PinStoreError::Owner { .. }), "{error}");
    }
}
