//! Integration tests of tool-cli-gateway-core: the 10,000-tool name corpus, the pinning
//! corpus (changes that must be detected, reorderings that must not), the meta-tools against
//! the providers' schema rules and token budgets, and export.
//!
//! One test binary (shared helpers in `util.rs`); everything here is pure except the pin
//! store's file tests, which write only to their own temporary directories.

mod export;
mod meta_tools;
mod names;
mod pinning;
mod util;
