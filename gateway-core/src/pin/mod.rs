//! Pinning against rug pulls: what a server showed when it was approved, kept as digests and
//! values, so that any later change of what it shows a model is noticed before a model sees it.
//!
//! Per server, each **item** is pinned field by field (`docs/pinning.md` has the full story):
//! - a tool (keyed by name): `name`, `title`, `description`, `inputSchema`, `outputSchema`,
//!   `annotations`;
//! - a prompt (keyed by name): `name`, `title`, `description`, `arguments`;
//! - a resource template (keyed by `uriTemplate`): `uriTemplate`, `name`, `title`,
//!   `description`, `mimeType`;
//! - the server's `instructions` (one item).
//!
//! Each field's value is normalized ([`normalize`]), written as canonical JSON and hashed
//! ([`crate::canonical`], `sha256/v1:`); the item's digest covers all its fields. The stages:
//! - [`ServerListing`] (what the pool got from a server) → [`ServerPins::from_listing`]: the
//!   pins of what it shows now, pure;
//! - [`store::PinStore`]: the approved pins, a versioned 0600 file that fails closed;
//! - [`verify::verify`]: pinned against current → each item unchanged / changed (which fields)
//!   / new / vanished, and [`verify::ServerVerdict::admission`], what the gateway hides;
//! - [`diff`]: the field-level differences `tool-cli pin diff` shows;
//! - [`detect`]: hidden instructions and cross-server shadowing in what servers show;
//! - [`lock`]: the verdict of `tool-cli pin verify --lock` for CI.

pub mod detect;
pub mod diff;
pub mod lock;
pub mod normalize;
pub mod store;
pub mod verify;

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::canonical::{self, Digest};

/// The kinds of item a server shows a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ItemKind {
    /// The server's `instructions` from `initialize`.
    Instructions,
    /// A tool from `tools/list`.
    Tool,
    /// A prompt from `prompts/list`.
    Prompt,
    /// A resource template from `resources/templates/list`.
    ResourceTemplate,
}

impl ItemKind {
    /// The fields pinned for this kind, in the order they are shown.
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            ItemKind::Instructions => &["instructions"],
            ItemKind::Tool => &[
                "name",
                "title",
                "description",
                "inputSchema",
                "outputSchema",
                "annotations",
            ],
            ItemKind::Prompt => &["name", "title", "description", "arguments"],
            ItemKind::ResourceTemplate => {
                &["uriTemplate", "name", "title", "description", "mimeType"]
            }
        }
    }

    /// The field that names an item of this kind (its key in the store).
    pub fn key_field(self) -> &'static str {
        match self {
            ItemKind::Instructions => "instructions",
            ItemKind::Tool | ItemKind::Prompt => "name",
            ItemKind::ResourceTemplate => "uriTemplate",
        }
    }

    /// The word for it in messages: `tool`, `prompt`, `resource template`, `instructions`.
    pub fn word(self) -> &'static str {
        match self {
            ItemKind::Instructions => "instructions",
            ItemKind::Tool => "tool",
            ItemKind::Prompt => "prompt",
            ItemKind::ResourceTemplate => "resource template",
        }
    }
}

/// Which item of a server: its kind and its name (empty for the instructions).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ItemKey {
    /// Tool, prompt, resource template or instructions.
    pub kind: ItemKind,
    /// The tool's or prompt's name, the template's `uriTemplate`; empty for instructions.
    pub name: String,
}

impl ItemKey {
    /// The key of a tool.
    pub fn tool(name: impl Into<String>) -> ItemKey {
        ItemKey {
            kind: ItemKind::Tool,
            name: name.into(),
        }
    }

    /// The key of a prompt.
    pub fn prompt(name: impl Into<String>) -> ItemKey {
        ItemKey {
            kind: ItemKind::Prompt,
            name: name.into(),
        }
    }

    /// The key of a resource template.
    pub fn resource_template(uri_template: impl Into<String>) -> ItemKey {
        ItemKey {
            kind: ItemKind::ResourceTemplate,
            name: uri_template.into(),
        }
    }

    /// The key of a server's instructions.
    pub fn instructions() -> ItemKey {
        ItemKey {
            kind: ItemKind::Instructions,
            name: String::new(),
        }
    }
}

impl fmt::Display for ItemKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ItemKind::Instructions => formatter.write_str("instructions"),
            kind => write!(formatter, "{} {:?}", kind.word(), self.name),
        }
    }
}

/// One pinned field: its normalized value and that value's digest.
#[derive(Debug, Clone, PartialEq)]
pub struct PinnedField {
    /// `sha256/v1:` of the value's canonical JSON.
    pub digest: Digest,
    /// The normalized value (what `pin diff` shows the old side of).
    pub value: Value,
}

impl PinnedField {
    fn new(value: Value) -> PinnedField {
        PinnedField {
            digest: canonical::digest(&value),
            value,
        }
    }
}

/// One pinned item: its fields (absent ones left out) and a digest over all of them.
#[derive(Debug, Clone, PartialEq)]
pub struct PinnedItem {
    /// `sha256/v1:` of the canonical JSON object `{field: value, …}`.
    pub digest: Digest,
    /// The fields present, by name.
    pub fields: BTreeMap<String, PinnedField>,
}

impl PinnedItem {
    /// The item made of these fields (already normalized).
    pub(crate) fn from_fields(fields: BTreeMap<String, Value>) -> PinnedItem {
        let whole: Map<String, Value> = fields
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        PinnedItem {
            digest: canonical::digest(&Value::Object(whole)),
            fields: fields
                .into_iter()
                .map(|(name, value)| (name, PinnedField::new(value)))
                .collect(),
        }
    }
}

/// What the pool got from one server: the raw MCP JSON of its listings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerListing {
    /// The server's name in the config.
    pub server: String,
    /// `instructions` from its `initialize` answer.
    pub instructions: Option<String>,
    /// `tools/list` items.
    pub tools: Vec<Value>,
    /// `prompts/list` items.
    pub prompts: Vec<Value>,
    /// `resources/templates/list` items.
    pub resource_templates: Vec<Value>,
}

/// Something about a listing that pinning could not take as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingNote {
    /// Where: `tools[3]`, `prompts[0]`, ….
    pub position: String,
    /// What was wrong and what was done about it.
    pub message: String,
}

/// The pins of one server: approved ones (from the store) or current ones (from a listing).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerPins {
    items: BTreeMap<ItemKey, PinnedItem>,
}

impl ServerPins {
    /// The pins of what `listing` shows now, and notes on items that could not be pinned as
    /// they are: an item that is not an object or lacks its string key is skipped (the daemon's
    /// catalog skips it too); of two items with the same key the first is pinned (as the
    /// catalog keeps the first).
    pub fn from_listing(listing: &ServerListing) -> (ServerPins, Vec<ListingNote>) {
        let mut pins = ServerPins::default();
        let mut notes = Vec::new();
        if let Some(instructions) = &listing.instructions {
            let mut fields = BTreeMap::new();
            fields.insert(
                "instructions".to_owned(),
                Value::String(instructions.clone()),
            );
            pins.items
                .insert(ItemKey::instructions(), PinnedItem::from_fields(fields));
        }
        let groups = [
            (ItemKind::Tool, "tools", &listing.tools),
            (ItemKind::Prompt, "prompts", &listing.prompts),
            (
                ItemKind::ResourceTemplate,
                "resourceTemplates",
                &listing.resource_templates,
            ),
        ];
        for (kind, list_name, items) in groups {
            for (index, item) in items.iter().enumerate() {
                let position = format!("{list_name}[{index}]");
                match item_fields(kind, item) {
                    Ok((key, fields)) => {
                        if pins.items.contains_key(&key) {
                            notes.push(ListingNote {
                                position,
                                message: format!(
                                    "{key} is listed more than once; the first one is pinned"
                                ),
                            });
                            continue;
                        }
                        pins.items.insert(key, PinnedItem::from_fields(fields));
                    }
                    Err(message) => notes.push(ListingNote { position, message }),
                }
            }
        }
        (pins, notes)
    }

    /// The items, by key.
    pub fn items(&self) -> &BTreeMap<ItemKey, PinnedItem> {
        &self.items
    }

    /// One item.
    pub fn item(&self, key: &ItemKey) -> Option<&PinnedItem> {
        self.items.get(key)
    }

    /// Whether nothing is pinned.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Pins `item` under `key` (replacing what was there).
    pub(crate) fn insert(&mut self, key: ItemKey, item: PinnedItem) {
        self.items.insert(key, item);
    }

    /// Unpins `key`.
    pub(crate) fn remove(&mut self, key: &ItemKey) -> Option<PinnedItem> {
        self.items.remove(key)
    }
}

/// The key and the normalized fields of one listed item, or why it cannot be pinned.
fn item_fields(kind: ItemKind, item: &Value) -> Result<(ItemKey, BTreeMap<String, Value>), String> {
    let Some(object) = item.as_object() else {
        return Err(format!(
            "a {} must be a JSON object; this one is skipped",
            kind.word()
        ));
    };
    let key_field = kind.key_field();
    let Some(name) = object.get(key_field).and_then(Value::as_str) else {
        return Err(format!(
            "a {} without a string \"{key_field}\" cannot be pinned; it is skipped",
            kind.word()
        ));
    };
    let key = ItemKey {
        kind,
        name: name.to_owned(),
    };
    let mut fields = BTreeMap::new();
    for field in kind.fields() {
        if let Some(value) = object.get(*field)
            && let Some(normalized) = normalize::field(kind, field, value)
        {
            fields.insert((*field).to_owned(), normalized);
        }
    }
    Ok((key, fields))
}
