//! The field-level differences `tool-cli pin diff` shows: for each item that is not as pinned,
//! what each field was and is, down to one invisible character or one schema default.
//!
//! Text fields (descriptions, titles, instructions) are shown as the part that differs with a
//! little context on each side, every invisible character written `⟨U+XXXX⟩`; JSON fields
//! (schemas, annotations, prompt arguments) as the JSON Pointers whose values differ, each
//! with its old and new value. [`render`] writes a diff as plain text, one line per change,
//! nothing hidden.

use std::fmt::Write as _;

use serde_json::Value;

use super::detect::{escape_pointer_token, make_visible};
use super::verify::ItemStatus;
use super::{ItemKey, PinnedItem, ServerPins};
use crate::canonical::canonical_json;

/// One value that differs at one place inside a JSON field.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonChange {
    /// Where, as a JSON Pointer into the field's value (`""` for the whole value).
    pub pointer: String,
    /// What it was (absent: it was added).
    pub old: Option<Value>,
    /// What it is (absent: it was removed).
    pub new: Option<Value>,
}

/// How one field differs.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldDiff {
    /// Absent when pinned, present now.
    Added {
        /// The field.
        field: String,
        /// Its value now.
        value: Value,
    },
    /// Pinned, absent now.
    Removed {
        /// The field.
        field: String,
        /// Its pinned value.
        value: Value,
    },
    /// A string field that changed.
    Text {
        /// The field.
        field: String,
        /// The pinned text.
        old: String,
        /// The text now.
        new: String,
    },
    /// A JSON field that changed, place by place.
    Json {
        /// The field.
        field: String,
        /// Every place whose value differs.
        changes: Vec<JsonChange>,
    },
}

/// One item that is not as pinned, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemDiff {
    /// Which item.
    pub key: ItemKey,
    /// Changed, new or vanished (never unchanged).
    pub status: ItemStatus,
    /// For a changed item, each field that differs; for a new or vanished one, its fields.
    pub fields: Vec<FieldDiff>,
}

/// Every difference between `pinned` and `current`, in key order; unchanged items are left
/// out.
pub fn diff_server(pinned: &ServerPins, current: &ServerPins) -> Vec<ItemDiff> {
    let verdict = super::verify::verify("", pinned, current);
    verdict
        .drift()
        .map(|item| {
            let was = pinned.item(&item.key);
            let now = current.item(&item.key);
            ItemDiff {
                key: item.key.clone(),
                status: item.status.clone(),
                fields: diff_item(was, now),
            }
        })
        .collect()
}

/// The differences between two versions of an item (either may be absent).
pub fn diff_item(was: Option<&PinnedItem>, now: Option<&PinnedItem>) -> Vec<FieldDiff> {
    let empty = Default::default();
    let was_fields = was.map_or(&empty, |item| &item.fields);
    let now_fields = now.map_or(&empty, |item| &item.fields);
    let mut names: Vec<&String> = was_fields.keys().chain(now_fields.keys()).collect();
    names.sort();
    names.dedup();
    let mut diffs = Vec::new();
    for name in names {
        match (was_fields.get(name), now_fields.get(name)) {
            (Some(old), Some(new)) if old.digest == new.digest => {}
            (Some(old), Some(new)) => match (&old.value, &new.value) {
                (Value::String(old_text), Value::String(new_text)) => diffs.push(FieldDiff::Text {
                    field: name.clone(),
                    old: old_text.clone(),
                    new: new_text.clone(),
                }),
                (old_value, new_value) => {
                    let mut changes = Vec::new();
                    json_changes(old_value, new_value, &mut String::new(), &mut changes);
                    diffs.push(FieldDiff::Json {
                        field: name.clone(),
                        changes,
                    });
                }
            },
            (Some(old), None) => diffs.push(FieldDiff::Removed {
                field: name.clone(),
                value: old.value.clone(),
            }),
            (None, Some(new)) => diffs.push(FieldDiff::Added {
                field: name.clone(),
                value: new.value.clone(),
            }),
            (None, None) => {}
        }
    }
    diffs
}

/// Every place where `old` and `new` differ, as JSON Pointers from `pointer`.
fn json_changes(old: &Value, new: &Value, pointer: &mut String, changes: &mut Vec<JsonChange>) {
    match (old, new) {
        (Value::Object(old_members), Value::Object(new_members)) => {
            let mut keys: Vec<&String> = old_members.keys().chain(new_members.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let length = pointer.len();
                pointer.push('/');
                pointer.push_str(&escape_pointer_token(key));
                match (old_members.get(key), new_members.get(key)) {
                    (Some(old_member), Some(new_member)) => {
                        json_changes(old_member, new_member, pointer, changes)
                    }
                    (old_member, new_member) => changes.push(JsonChange {
                        pointer: pointer.clone(),
                        old: old_member.cloned(),
                        new: new_member.cloned(),
                    }),
                }
                pointer.truncate(length);
            }
        }
        (Value::Array(old_items), Value::Array(new_items)) => {
            for index in 0..old_items.len().max(new_items.len()) {
                let length = pointer.len();
                pointer.push('/');
                pointer.push_str(&index.to_string());
                match (old_items.get(index), new_items.get(index)) {
                    (Some(old_item), Some(new_item)) => {
                        json_changes(old_item, new_item, pointer, changes)
                    }
                    (old_item, new_item) => changes.push(JsonChange {
                        pointer: pointer.clone(),
                        old: old_item.cloned(),
                        new: new_item.cloned(),
                    }),
                }
                pointer.truncate(length);
            }
        }
        // Same canonical form: the same value (1 against 1.0).
        (old_value, new_value) if canonical_json(old_value) == canonical_json(new_value) => {}
        (old_value, new_value) => changes.push(JsonChange {
            pointer: pointer.clone(),
            old: Some(old_value.clone()),
            new: Some(new_value.clone()),
        }),
    }
}

/// How many characters of unchanged text to show on each side of a change.
const CONTEXT_CHARACTERS: usize = 40;

/// The differing middle of two texts with context: `…before[-removed-]{+added+}after…`, every
/// invisible character shown as `⟨U+XXXX⟩`.
pub fn text_change(old: &str, new: &str) -> String {
    let old_chars: Vec<char> = old.chars().collect();
    let new_chars: Vec<char> = new.chars().collect();
    let prefix = old_chars
        .iter()
        .zip(&new_chars)
        .take_while(|(left, right)| left == right)
        .count();
    let suffix = old_chars[prefix..]
        .iter()
        .rev()
        .zip(new_chars[prefix..].iter().rev())
        .take_while(|(left, right)| left == right)
        .count();
    let context_start = prefix.saturating_sub(CONTEXT_CHARACTERS);
    let text = |chars: &[char]| make_visible(&chars.iter().collect::<String>());
    let mut shown = String::new();
    if context_start > 0 {
        shown.push('…');
    }
    shown.push_str(&text(&old_chars[context_start..prefix]));
    let removed = &old_chars[prefix..old_chars.len() - suffix];
    let added = &new_chars[prefix..new_chars.len() - suffix];
    if !removed.is_empty() {
        let _ = write!(shown, "[-{}-]", text(removed));
    }
    if !added.is_empty() {
        let _ = write!(shown, "{{+{}+}}", text(added));
    }
    let after_start = old_chars.len() - suffix;
    let after_end = (after_start + CONTEXT_CHARACTERS).min(old_chars.len());
    shown.push_str(&text(&old_chars[after_start..after_end]));
    if after_end < old_chars.len() {
        shown.push('…');
    }
    shown
}

/// A JSON value on one line, its strings' invisible characters made visible.
fn json_line(value: &Value) -> String {
    make_visible(&canonical_json(value))
}

/// `diffs` of `server` as text, one line per change; empty input gives "no differences".
pub fn render(server: &str, diffs: &[ItemDiff]) -> String {
    let mut out = String::new();
    if diffs.is_empty() {
        let _ = writeln!(out, "server {server:?}: every pinned item is unchanged");
        return out;
    }
    for item in diffs {
        let status = match &item.status {
            ItemStatus::Changed(_) => "changed",
            ItemStatus::New => "new (not pinned)",
            ItemStatus::Vanished => "vanished",
            ItemStatus::Unchanged => "unchanged",
        };
        let _ = writeln!(out, "server {server:?}, {}: {status}", item.key);
        for field in &item.fields {
            match field {
                FieldDiff::Added { field, value } => {
                    let _ = writeln!(out, "  {field}: added {}", json_line(value));
                }
                FieldDiff::Removed { field, value } => {
                    let _ = writeln!(out, "  {field}: removed (was {})", json_line(value));
                }
                FieldDiff::Text { field, old, new } => {
                    let _ = writeln!(out, "  {field}: {}", text_change(old, new));
                }
                FieldDiff::Json { field, changes } => {
                    for change in changes {
                        let place = if change.pointer.is_empty() {
                            field.clone()
                        } else {
                            format!("{field}{}", change.pointer)
                        };
                        let _ = match (&change.old, &change.new) {
                            (Some(old), Some(new)) => {
                                writeln!(out, "  {place}: {} -> {}", json_line(old), json_line(new))
                            }
                            (None, Some(new)) => {
                                writeln!(out, "  {place}: added {}", json_line(new))
                            }
                            (Some(old), None) => {
                                writeln!(out, "  {place}: removed (was {})", json_line(old))
                            }
                            (None, None) => Ok(()),
                        };
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pin::ServerListing;
    use serde_json::json;

    fn pins(tools: Value) -> ServerPins {
        let listing = ServerListing {
            server: "s".to_owned(),
            tools: tools.as_array().unwrap().clone(),
            ..ServerListing::default()
        };
        ServerPins::from_listing(&listing).0
    }

    #[test]
    fn a_zero_width_character_is_shown_where_it_was_added() {
        let change = text_change("Adds two numbers.", "Adds two\u{200b} numbers.");
        assert_eq!(change, "Adds two{+⟨U+200B⟩+} numbers.");
    }

    #[test]
    fn long_texts_are_cut_to_context() {
        let old = format!("{}middle{}", "a".repeat(100), "z".repeat(100));
        let new = format!("{}MIDDLE{}", "a".repeat(100), "z".repeat(100));
        let change = text_change(&old, &new);
        assert_eq!(
            change,
            format!(
                "…{}[-middle-]{{+MIDDLE+}}{}…",
                "a".repeat(40),
                "z".repeat(40)
            )
        );
    }

    #[test]
    fn a_schema_default_is_reported_at_its_pointer() {
        let pinned = pins(
            json!([{"name": "t", "inputSchema": {"type": "object", "properties": {
                "limit": {"type": "integer", "default": 10}
            }}}]),
        );
        let current = pins(
            json!([{"name": "t", "inputSchema": {"type": "object", "properties": {
                "limit": {"type": "integer", "default": 10000}
            }}}]),
        );
        let diffs = diff_server(&pinned, &current);
        assert_eq!(diffs.len(), 1);
        assert_eq!(
            diffs[0].fields,
            [FieldDiff::Json {
                field: "inputSchema".to_owned(),
                changes: vec![JsonChange {
                    pointer: "/properties/limit/default".to_owned(),
                    old: Some(json!(10)),
                    new: Some(json!(10000)),
                }],
            }]
        );
        let shown = render("s", &diffs);
        assert_eq!(
            shown,
            "server \"s\", tool \"t\": changed\n  inputSchema/properties/limit/default: 10 -> 10000\n"
        );
    }

    #[test]
    fn added_removed_new_and_vanished_are_all_rendered() {
        let pinned = pins(json!([
            {"name": "a", "title": "A", "annotations": {"readOnlyHint": true}},
            {"name": "gone", "description": "Old."}
        ]));
        let current = pins(json!([
            {"name": "a", "description": "Now described.", "annotations": {"readOnlyHint": false}},
            {"name": "fresh", "description": "New."}
        ]));
        let shown = render("s", &diff_server(&pinned, &current));
        assert!(shown.contains("tool \"a\": changed"), "{shown}");
        assert!(
            shown.contains("  annotations/readOnlyHint: true -> false"),
            "{shown}"
        );
        assert!(
            shown.contains("  description: added \"Now described.\""),
            "{shown}"
        );
        assert!(shown.contains("  title: removed (was \"A\")"), "{shown}");
        assert!(
            shown.contains("tool \"fresh\": new (not pinned)"),
            "{shown}"
        );
        assert!(shown.contains("tool \"gone\": vanished"), "{shown}");
    }

    #[test]
    fn no_differences_say_so() {
        let same = pins(json!([{"name": "a"}]));
        assert!(diff_server(&same, &same).is_empty());
        assert_eq!(
            render("s", &[]),
            "server \"s\": every pinned item is unchanged\n"
        );
    }
}
