//! The pure parts of tool-cli's MCP gateway (issue 27), ready for the daemon to wire in.
//!
//! The gateway serves the daemon's pool of MCP servers as one MCP server to hosts (Claude
//! Desktop and Code, Cursor, VS Code, …). What it decides does not depend on sockets or on the
//! daemon's services, so it lives here, pure and tested on its own:
//!
//! - [`names`]: the `server__tool` names of pass-through mode (`^[a-zA-Z0-9_-]{1,48}$`, stable,
//!   collision-free) and the reverse map that refuses names that are not ours;
//! - [`canonical`]: canonical JSON and the `sha256/v1:` digest;
//! - [`pin`]: pinning against rug pulls — what is pinned, the 0600 fail-closed store,
//!   verification, field-level diffs, hidden-instruction and shadowing detectors, the CI lock
//!   verdict;
//! - [`meta_tools`]: the progressive mode's meta-tools, their renderers and the parsing of their
//!   arguments;
//! - [`provider_schema`]: OpenAI's and Anthropic's tool-name and strict-schema rules as checks;
//! - [`tokens`]: counting tokens (an estimate by default, o200k/cl100k with the `tiktoken`
//!   feature);
//! - [`uri_template`]: whether a resource URI fits a resource template (RFC 6570), to route a
//!   read of a URI no server listed;
//! - [`export`]: tool definitions as an OpenAPI 3.1 document, an OpenAI tools array or an
//!   Anthropic tools array.
//!
//! The only I/O is the pin store's own file ([`pin::store::PinStore::load`] and `save`).
//! `docs/gateway.md` and `docs/pinning.md` describe the schemes and what is left to wire.

#![deny(missing_docs)]

pub mod canonical;
pub mod export;
pub mod meta_tools;
pub mod names;
pub mod pin;
pub mod provider_schema;
pub mod tokens;
pub mod uri_template;
