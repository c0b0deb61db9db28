//! A bounded cache of compiled argument validators, one per catalog, shared by its tools.
//!
//! A compiled JSON Schema is many times the size of the schema's text, so a server of ten
//! thousand tools cannot keep one per tool once every tool has been called. The cache keeps the
//! `capacity` most recently used (a failed compilation is cached too: the schema will not
//! improve), and when full forgets the least recently used. Compiling happens outside the lock,
//! so a slow schema never holds up calls of other tools; two first calls of the same tool at
//! once may both compile it, and the second result is the one kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::catalog::validate::{ArgumentValidator, InvalidSchema};

/// What compiling a tool's schema gave: its validator, or why the schema is not valid.
pub(crate) type Compiled = Result<Arc<ArgumentValidator>, InvalidSchema>;

/// Compiled validators by tool position, at most `capacity` of them.
pub(crate) struct ValidatorCache {
    capacity: usize,
    /// A std mutex: held only for a map lookup or insert, never across an await.
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Each entry with the tick of its last use.
    entries: HashMap<u32, (u64, Compiled)>,
    /// Counts uses; a larger tick is a more recent use.
    tick: u64,
}

impl ValidatorCache {
    /// An empty cache that keeps at most `capacity` validators (at least one).
    pub(crate) fn new(capacity: usize) -> ValidatorCache {
        ValidatorCache {
            capacity: capacity.max(1),
            state: Mutex::new(State::default()),
        }
    }

    /// The validator of the tool at `position`, compiled by `compile` if it is not cached.
    pub(crate) fn get_or_compile(
        &self,
        position: u32,
        compile: impl FnOnce() -> Compiled,
    ) -> Compiled {
        {
            let mut state = self.state.lock().unwrap();
            state.tick += 1;
            let tick = state.tick;
            if let Some((last_use, compiled)) = state.entries.get_mut(&position) {
                *last_use = tick;
                return compiled.clone();
            }
        }
        let compiled = compile();
        let mut state = self.state.lock().unwrap();
        if state.entries.len() >= self.capacity && !state.entries.contains_key(&position) {
            // Forgetting is rare next to hits, so a scan of at most `capacity` entries for the
            // least recently used one beats keeping a second structure in order on every hit.
            let oldest = state
                .entries
                .iter()
                .min_by_key(|(_, (last_use, _))| *last_use)
                .map(|(&oldest, _)| oldest);
            if let Some(oldest) = oldest {
                state.entries.remove(&oldest);
            }
        }
        state.tick += 1;
        let tick = state.tick;
        state.entries.insert(position, (tick, compiled.clone()));
        compiled
    }

    /// How many validators it holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.state.lock().unwrap().entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compile_counting(count: &std::cell::Cell<usize>) -> impl FnOnce() -> Compiled + '_ {
        move || {
            count.set(count.get() + 1);
            ArgumentValidator::compile(&json!({"type": "object"})).map(Arc::new)
        }
    }

    #[test]
    fn compiles_once_per_tool_while_cached() {
        let cache = ValidatorCache::new(4);
        let compiled = std::cell::Cell::new(0);
        for _ in 0..3 {
            assert!(cache.get_or_compile(7, compile_counting(&compiled)).is_ok());
        }
        assert_eq!(compiled.get(), 1);
    }

    #[test]
    fn keeps_at_most_capacity_and_forgets_the_least_recently_used() {
        let cache = ValidatorCache::new(2);
        let compiled = std::cell::Cell::new(0);
        cache
            .get_or_compile(1, compile_counting(&compiled))
            .unwrap();
        cache
            .get_or_compile(2, compile_counting(&compiled))
            .unwrap();
        // 1 is used again, so 2 is the least recently used when 3 arrives.
        cache
            .get_or_compile(1, compile_counting(&compiled))
            .unwrap();
        cache
            .get_or_compile(3, compile_counting(&compiled))
            .unwrap();
        assert_eq!(cache.len(), 2);
        assert_eq!(compiled.get(), 3);
        cache
            .get_or_compile(1, compile_counting(&compiled))
            .unwrap();
        assert_eq!(compiled.get(), 3, "1 stayed cached");
        cache
            .get_or_compile(2, compile_counting(&compiled))
            .unwrap();
        assert_eq!(compiled.get(), 4, "2 was forgotten and compiled again");
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn an_invalid_schema_is_cached_as_its_reason() {
        let cache = ValidatorCache::new(2);
        let compiled = std::cell::Cell::new(0);
        let bad = || {
            compiled.set(compiled.get() + 1);
            ArgumentValidator::compile(&json!({"type": 12})).map(Arc::new)
        };
        let first = cache.get_or_compile(0, bad);
        assert!(first.is_err(), "a schema whose type is a number is invalid");
        let again = cache.get_or_compile(0, || unreachable!("cached"));
        assert_eq!(again.err(), first.err());
        assert_eq!(compiled.get(), 1);
    }
}
