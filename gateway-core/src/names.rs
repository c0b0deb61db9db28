//! The names the gateway gives the pool's tools: `server__tool`, at most 48 characters of
//! `[a-zA-Z0-9_-]`, the same on every run, whatever other tools exist.
//!
//! Hosts put their own prefix before a server's tool names (Claude Code writes
//! `mcp__<server>__<tool>` and breaks past 64 characters; OpenAI and Anthropic accept
//! `^[a-zA-Z0-9_-]{1,64}$`), so a gateway name keeps to 48 characters and that alphabet.
//!
//! # The scheme
//!
//! A tool `T` of server `S` is named **verbatim**, `S__T`, when all of these hold:
//! - `S` is made of `[a-zA-Z0-9_-]`, does not contain `__` and does not end with `_`, so the
//!   first `__` of the name is the separator and `S__T` reads back as exactly (`S`, `T`);
//! - `T` is non-empty and made of `[a-zA-Z0-9_-]`;
//! - `S__T` has at most 48 characters;
//! - `S__T` does not end like a hashed name (`--` and ten characters of `[a-z2-7]`).
//!
//! Otherwise it gets a **hashed** name, `S'__T'--h`, where
//! - `h` is ten characters of lowercase RFC 4648 base32 (50 bits) of SHA-256 over
//!   `"tool-cli/gateway-name/v1"`, a zero byte, the byte length of `S` (8 bytes, big-endian),
//!   the bytes of `S` and the bytes of `T`: an unambiguous encoding of the exact pair;
//! - `S'` and `T'` are `S` and `T` with every character outside `[a-zA-Z0-9_-]` mapped to `_`,
//!   runs of `_` collapsed to one and `_`/`-` trimmed from their ends (`server`/`tool` if
//!   nothing is left), then shortened so the whole name fits 48 characters: they share the 34
//!   characters left after `__`, `--` and `h`; `S'` keeps at least 12 of them when it is that
//!   long, and `T'` takes the rest.
//!
//! # Why no two tools share a name
//!
//! - Two verbatim names are equal only for equal pairs (the first `__` splits them).
//! - A verbatim name never ends like a hashed name, so the two kinds never meet.
//! - Two hashed names are equal only if the 50-bit hashes of two different pairs are equal
//!   *and* their readable parts are: by chance about 1 in 10^15 per pair of tools with the same
//!   readable part. `tests/names.rs` finds no collision on 10,000 tools, adversarial ones
//!   included.
//!
//! A name depends on its own server and tool only, so it is stable across restarts and when
//! servers or tools are added. The one thing that looks at other tools is [`GatewayNames`],
//! the reverse map: should two tools ever get the same name (which takes a server crafting
//! names against a 50-bit hash), it withholds *both* and reports the collision, so a call can
//! never reach the wrong tool; adding a tool can then withhold the one it collides with, and
//! nothing else.

use std::collections::BTreeMap;
use std::fmt;

use sha2::{Digest as _, Sha256};

/// The longest gateway name: 64 (what OpenAI, Anthropic and Claude Code accept) less room for
/// a host's `mcp__<server>__` prefix.
pub const MAX_GATEWAY_NAME_LEN: usize = 48;

/// Between the server part and the tool part of every gateway name.
pub const SEPARATOR: &str = "__";

/// Between the readable part and the hash of a hashed name.
const HASH_MARKER: &str = "--";

/// Characters of hash in a hashed name (5 bits each: 50 bits).
const HASH_CHARS: usize = 10;

/// RFC 4648 base32, lowercase: the hash's alphabet.
const BASE32_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// The readable characters a hashed name has room for.
const READABLE_ROOM: usize =
    MAX_GATEWAY_NAME_LEN - SEPARATOR.len() - HASH_MARKER.len() - HASH_CHARS;

/// What the server part keeps at least in a hashed name, when it is that long.
const MIN_SERVER_ROOM: usize = 12;

/// Domain separation for the hash: names of another scheme would hash differently.
const HASH_DOMAIN: &[u8] = b"tool-cli/gateway-name/v1";

/// Whether `character` may appear in a gateway name (and in an OpenAI or Anthropic tool name).
pub fn is_name_character(character: char) -> bool {
    character.is_ascii_alphanumeric() || character == '_' || character == '-'
}

/// Whether `name` matches `^[a-zA-Z0-9_-]{1,48}$`.
pub fn is_valid_gateway_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_GATEWAY_NAME_LEN && name.chars().all(is_name_character)
}

/// The gateway name of tool `tool` of server `server` (see the module documentation).
pub fn gateway_name(server: &str, tool: &str) -> String {
    if let Some(verbatim) = verbatim_name(server, tool) {
        return verbatim;
    }
    hashed_name(server, tool)
}

/// Whether `tool` of `server` keeps its own name (`server__tool`) rather than a hashed one.
pub fn is_verbatim(server: &str, tool: &str) -> bool {
    verbatim_name(server, tool).is_some()
}

fn verbatim_name(server: &str, tool: &str) -> Option<String> {
    let server_fits = !server.is_empty()
        && server.chars().all(is_name_character)
        && !server.contains(SEPARATOR)
        && !server.ends_with('_');
    let tool_fits = !tool.is_empty() && tool.chars().all(is_name_character);
    if !server_fits || !tool_fits {
        return None;
    }
    let name = format!("{server}{SEPARATOR}{tool}");
    (name.len() <= MAX_GATEWAY_NAME_LEN && !looks_hashed(&name)).then_some(name)
}

/// Whether `name` ends like a hashed name: `--` and ten characters of the hash alphabet.
fn looks_hashed(name: &str) -> bool {
    let bytes = name.as_bytes();
    let suffix = HASH_MARKER.len() + HASH_CHARS;
    bytes.len() >= suffix
        && bytes[bytes.len() - suffix..].starts_with(HASH_MARKER.as_bytes())
        && bytes[bytes.len() - HASH_CHARS..]
            .iter()
            .all(|byte| BASE32_ALPHABET.contains(byte))
}

fn hashed_name(server: &str, tool: &str) -> String {
    let server_part = readable_part(server, "server");
    let tool_part = readable_part(tool, "tool");
    let (server_part, tool_part) = fit_readable_parts(&server_part, &tool_part);
    format!(
        "{server_part}{SEPARATOR}{tool_part}{HASH_MARKER}{}",
        pair_hash(server, tool)
    )
}

/// `text` with characters outside the name alphabet mapped to `_`, runs of `_` collapsed and
/// `_`/`-` trimmed from both ends; `fallback` when nothing is left.
fn readable_part(text: &str, fallback: &str) -> String {
    let mut part = String::with_capacity(text.len().min(64));
    for character in text.chars() {
        let mapped = if is_name_character(character) {
            character
        } else {
            '_'
        };
        if mapped == '_' && part.ends_with('_') {
            continue;
        }
        part.push(mapped);
    }
    let trimmed = part.trim_matches(['_', '-']);
    if trimmed.is_empty() {
        fallback.to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// The two readable parts cut to share [`READABLE_ROOM`] characters.
fn fit_readable_parts<'a>(server: &'a str, tool: &'a str) -> (&'a str, &'a str) {
    if server.len() + tool.len() <= READABLE_ROOM {
        return (server, tool);
    }
    let server_room = server
        .len()
        .min(MIN_SERVER_ROOM.max(READABLE_ROOM.saturating_sub(tool.len())));
    let server = trim_end_separators(&server[..server_room]);
    let tool_room = READABLE_ROOM - server.len();
    let tool = trim_end_separators(&tool[..tool.len().min(tool_room)]);
    (
        if server.is_empty() { "server" } else { server },
        if tool.is_empty() { "tool" } else { tool },
    )
}

/// A cut readable part must not end with `_` (it would run into the separator) or `-`.
fn trim_end_separators(part: &str) -> &str {
    part.trim_end_matches(['_', '-'])
}

/// Ten base32 characters of SHA-256 over the unambiguous encoding of the pair.
fn pair_hash(server: &str, tool: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(HASH_DOMAIN);
    hasher.update([0u8]);
    hasher.update((server.len() as u64).to_be_bytes());
    hasher.update(server.as_bytes());
    hasher.update(tool.as_bytes());
    let hash = hasher.finalize();
    // The first 50 bits, 5 at a time.
    let mut bits = u64::from_be_bytes(hash[..8].try_into().expect("SHA-256 has 32 bytes"));
    let mut text = String::with_capacity(HASH_CHARS);
    for _ in 0..HASH_CHARS {
        text.push(char::from(BASE32_ALPHABET[(bits >> 59) as usize]));
        bits <<= 5;
    }
    text
}

/// A tool of the pool: its server and its own name there.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolAddress {
    /// The server, as configured.
    pub server: String,
    /// The tool's name on that server, as the server lists it.
    pub tool: String,
}

impl fmt::Display for ToolAddress {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}/{}", self.server, self.tool)
    }
}

/// Two or more tools that got the same gateway name; all of them are withheld.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameCollision {
    /// The name they share.
    pub gateway_name: String,
    /// The tools, sorted.
    pub tools: Vec<ToolAddress>,
}

/// Why a name a host sent does not lead to a tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnknownGatewayName {
    /// Not a gateway name at all.
    #[error(
        "{name} is not a tool name of this gateway; expected server__tool as tools/list gives \
         it (1-48 letters, digits, '_' or '-')"
    )]
    Malformed {
        /// The name as sent, quoted and cut for the message.
        name: String,
    },
    /// Shaped like a gateway name, but no tool has it.
    #[error("no tool is named {name} in this gateway; list the tools again for the current names")]
    Unknown {
        /// The name as sent, quoted.
        name: String,
    },
    /// Two tools got this name, so neither is reachable by it.
    #[error(
        "{name} is withheld: it is the gateway name of several tools ({tools}); call them through \
         tool-cli with their server named"
    )]
    Withheld {
        /// The name as sent, quoted.
        name: String,
        /// The tools that share it, `server/tool`, comma-separated.
        tools: String,
    },
}

/// The reverse map, gateway name → tool, for one listing of the pool.
///
/// Build it from the visible tools whenever the pool's tools change; [`GatewayNames::resolve`]
/// turns a host's `tools/call` name back into the tool, and refuses names that are not ours.
/// Iteration is in name order, so a `tools/list` built from it is the same on every call.
#[derive(Debug, Clone, Default)]
pub struct GatewayNames {
    by_name: BTreeMap<String, ToolAddress>,
    withheld: BTreeMap<String, Vec<ToolAddress>>,
}

impl GatewayNames {
    /// The names of `tools` (server, tool pairs); a pair listed twice counts once.
    pub fn build<I, S, T>(tools: I) -> GatewayNames
    where
        I: IntoIterator<Item = (S, T)>,
        S: Into<String>,
        T: Into<String>,
    {
        GatewayNames::build_with_naming(tools, gateway_name)
    }

    /// `build` with the naming function given: tests force collisions with a weak one.
    fn build_with_naming<I, S, T>(tools: I, naming: impl Fn(&str, &str) -> String) -> GatewayNames
    where
        I: IntoIterator<Item = (S, T)>,
        S: Into<String>,
        T: Into<String>,
    {
        let mut by_name: BTreeMap<String, ToolAddress> = BTreeMap::new();
        let mut withheld: BTreeMap<String, Vec<ToolAddress>> = BTreeMap::new();
        for (server, tool) in tools {
            let address = ToolAddress {
                server: server.into(),
                tool: tool.into(),
            };
            let name = naming(&address.server, &address.tool);
            if let Some(sharing) = withheld.get_mut(&name) {
                if !sharing.contains(&address) {
                    sharing.push(address);
                    sharing.sort();
                }
                continue;
            }
            match by_name.get(&name) {
                Some(existing) if *existing == address => {}
                Some(_) => {
                    let existing = by_name.remove(&name).expect("present");
                    let mut sharing = vec![existing, address];
                    sharing.sort();
                    withheld.insert(name, sharing);
                }
                None => {
                    by_name.insert(name, address);
                }
            }
        }
        GatewayNames { by_name, withheld }
    }

    /// The tool a host means by `name`, or why there is none.
    pub fn resolve(&self, name: &str) -> Result<&ToolAddress, UnknownGatewayName> {
        if let Some(address) = self.by_name.get(name) {
            return Ok(address);
        }
        if !is_valid_gateway_name(name) || !name.contains(SEPARATOR) {
            return Err(UnknownGatewayName::Malformed {
                name: quoted_excerpt(name),
            });
        }
        if let Some(sharing) = self.withheld.get(name) {
            let tools = sharing
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            return Err(UnknownGatewayName::Withheld {
                name: quoted_excerpt(name),
                tools,
            });
        }
        Err(UnknownGatewayName::Unknown {
            name: quoted_excerpt(name),
        })
    }

    /// The gateway name of `tool` of `server`, if it is in the map and not withheld.
    pub fn name_of(&self, server: &str, tool: &str) -> Option<String> {
        let name = gateway_name(server, tool);
        let address = self.by_name.get(&name)?;
        (address.server == server && address.tool == tool).then_some(name)
    }

    /// Every reachable tool with its gateway name, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ToolAddress)> {
        self.by_name
            .iter()
            .map(|(name, address)| (name.as_str(), address))
    }

    /// How many tools are reachable by name.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether no tool is reachable.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The names several tools share (each withheld), in name order.
    pub fn collisions(&self) -> Vec<NameCollision> {
        self.withheld
            .iter()
            .map(|(name, tools)| NameCollision {
                gateway_name: name.clone(),
                tools: tools.clone(),
            })
            .collect()
    }
}

/// `text` quoted for an error message: at most 64 characters, escaped (a host may send
/// anything, of any length, as a tool name).
pub(crate) fn quoted_excerpt(text: &str) -> String {
    const LONGEST: usize = 64;
    let mut excerpt: String = text.chars().take(LONGEST).collect();
    let cut = excerpt.len() < text.len();
    excerpt = format!("{excerpt:?}");
    if cut {
        excerpt.push_str(&format!(" (cut; {} bytes in all)", text.len()));
    }
    excerpt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_kept_as_server_double_underscore_tool() {
        assert_eq!(
            gateway_name("github", "create_issue"),
            "github__create_issue"
        );
        assert_eq!(gateway_name("fs", "read-file"), "fs__read-file");
        assert_eq!(gateway_name("a", "_private"), "a___private");
        assert!(is_verbatim("github", "create_issue"));
    }

    #[test]
    fn the_scheme_is_frozen() {
        // These names are what hosts have saved in permissions and conversations: a change of
        // scheme must be deliberate (a new HASH_DOMAIN), never a side effect.
        // Computed by an independent implementation of the scheme as the module documents it
        // (a few lines of Python with hashlib), not by this code.
        let expected = [
            ("github", "create_issue", "github__create_issue"),
            ("my.server", "search", "my_server__search--divyok3gao"),
            ("github", "repos.list", "github__repos_list--cy3bru7lbi"),
            ("a_", "b", "a__b--mrlhhpmaar"),
            ("a", "_b", "a___b"),
            ("docs", "café au lait", "docs__caf_au_lait--ylryf4gg63"),
            (
                "analytics-production-eu-west-1",
                "get_quarterly_revenue_breakdown_by_region_and_product",
                "analytics-pr__get_quarterly_revenue--mm6xnvuc2h",
            ),
            ("s", "", "s__tool--jurgopw3f5"),
            ("", "t", "server__t--v4tl2jqa6s"),
        ];
        for (server, tool, name) in expected {
            assert_eq!(gateway_name(server, tool), name, "({server:?}, {tool:?})");
        }
    }

    #[test]
    fn every_name_fits_the_alphabet_and_the_length() {
        let long = "x".repeat(500);
        let cases = [
            ("github", "create_issue"),
            ("my.server", "a/b/c"),
            (&long[..], &long[..]),
            ("s", &long[..]),
            (&long[..], "t"),
            ("___", "___"),
            ("--", "--"),
            ("\u{200b}", "\u{202e}evil"),
            ("日本", "検索"),
        ];
        for (server, tool) in cases {
            let name = gateway_name(server, tool);
            assert!(is_valid_gateway_name(&name), "{name}");
            assert!(name.contains(SEPARATOR), "{name}");
        }
    }

    #[test]
    fn a_tool_that_looks_hashed_is_hashed_itself() {
        // Its verbatim name would end like a hashed name and could meet another tool's.
        let tool = "report--abcdefghij";
        assert!(!is_verbatim("srv", tool));
        let name = gateway_name("srv", tool);
        assert_ne!(name, format!("srv__{tool}"));
        assert!(looks_hashed(&name));
        // One that only resembles it (a digit outside the alphabet) stays verbatim.
        assert!(is_verbatim("srv", "report--abcdefghi1"));
    }

    #[test]
    fn a_name_does_not_depend_on_other_tools() {
        let alone = GatewayNames::build([("github", "create.issue")]);
        let crowded = GatewayNames::build([
            ("gitlab", "create.issue"),
            ("github", "create_issue"),
            ("github", "create.issue"),
            ("github", "create-issue"),
        ]);
        assert_eq!(
            alone.name_of("github", "create.issue"),
            crowded.name_of("github", "create.issue")
        );
    }

    #[test]
    fn resolve_returns_the_tool_and_refuses_names_that_are_not_ours() {
        let names = GatewayNames::build([("github", "create_issue"), ("docs", "find.page")]);
        let found = names.resolve("github__create_issue").unwrap();
        assert_eq!(found.server, "github");
        assert_eq!(found.tool, "create_issue");
        let hashed = gateway_name("docs", "find.page");
        assert_eq!(names.resolve(&hashed).unwrap().tool, "find.page");

        assert!(matches!(
            names.resolve("create_issue"),
            Err(UnknownGatewayName::Malformed { .. })
        ));
        assert!(matches!(
            names.resolve("github/create_issue"),
            Err(UnknownGatewayName::Malformed { .. })
        ));
        assert!(matches!(
            names.resolve("github__delete_repo"),
            Err(UnknownGatewayName::Unknown { .. })
        ));
        // The raw tool name of a hashed tool is not ours either.
        assert!(names.resolve("docs__find.page").is_err());
        let error = names.resolve(&"z".repeat(10_000_000)).unwrap_err();
        let message = error.to_string();
        assert!(message.len() < 400, "{message}");
        assert!(message.contains("expected server__tool"), "{message}");
    }

    #[test]
    fn a_collision_withholds_every_tool_that_shares_the_name() {
        // A real collision needs two pairs whose 50-bit hashes and readable parts agree, which
        // no test can find; a naming function that keeps only the tool's first letter makes
        // them, so what the map does with one is tested all the same.
        let first_letter = |_: &str, tool: &str| format!("s__{}", &tool[..1]);
        let names = GatewayNames::build_with_naming(
            [
                ("one", "alpha"),
                ("two", "apple"),
                ("three", "avocado"),
                ("one", "beta"),
            ],
            first_letter,
        );
        assert_eq!(
            names.len(),
            1,
            "only the tool without a twin stays reachable"
        );
        assert_eq!(names.resolve("s__b").unwrap().tool, "beta");
        let collisions = names.collisions();
        assert_eq!(collisions.len(), 1);
        assert_eq!(collisions[0].gateway_name, "s__a");
        assert_eq!(collisions[0].tools.len(), 3);
        let error = names.resolve("s__a").unwrap_err();
        assert!(matches!(error, UnknownGatewayName::Withheld { .. }));
        let message = error.to_string();
        assert!(
            message.contains("one/alpha") && message.contains("two/apple"),
            "{message}"
        );
        // The order tools arrive in does not change the outcome.
        let reversed = GatewayNames::build_with_naming(
            [
                ("one", "beta"),
                ("three", "avocado"),
                ("two", "apple"),
                ("one", "alpha"),
            ],
            first_letter,
        );
        assert_eq!(reversed.collisions(), collisions);
    }

    #[test]
    fn the_verbatim_rules_keep_lookalike_pairs_apart() {
        // ("a_", "b") and ("a", "_b") would both be "a___b" verbatim.
        let names = GatewayNames::build([("a_", "b"), ("a", "_b")]);
        assert!(names.collisions().is_empty());
        assert_eq!(names.len(), 2);
        assert_ne!(names.name_of("a_", "b"), names.name_of("a", "_b"));
    }

    #[test]
    fn duplicates_of_one_tool_count_once() {
        let names = GatewayNames::build([("s", "t"), ("s", "t")]);
        assert_eq!(names.len(), 1);
        assert!(names.collisions().is_empty());
    }

    #[test]
    fn iteration_is_in_name_order() {
        let names = GatewayNames::build([("b", "x"), ("a", "y"), ("a", "x")]);
        let order: Vec<&str> = names.iter().map(|(name, _)| name).collect();
        assert_eq!(order, ["a__x", "a__y", "b__x"]);
    }
}
