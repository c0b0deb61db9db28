//! Which caller owns which MCP task. A server's task ids are its own (two servers may both
//! have a task `1`), and over one shared upstream connection every caller's tasks are in one
//! list, so the daemon keeps the map: the id a caller is given (`server:upstream-id`) → the
//! server, its id there, and the owner (the caller key of the token and session, or of the
//! MCP gateway session, that created it). A task id looked up by anyone else is not found,
//! the same answer as an id never issued, so an id reveals nothing across owners.
//!
//! Bounded: at most [`MAX_TASKS`] entries, the oldest forgotten first (a server forgets its
//! tasks after their `ttl` too).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Most tasks remembered across every owner.
pub(crate) const MAX_TASKS: usize = 4096;

/// One task as the daemon knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskEntry {
    /// The configured server running it.
    pub(crate) server: String,
    /// Its id on that server.
    pub(crate) upstream_id: String,
    /// The tool whose call created it.
    pub(crate) tool: String,
}

/// The tasks every owner created, by the id the owner was given.
#[derive(Default)]
pub(crate) struct TaskRegistry {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Public id → (owner, entry).
    entries: HashMap<String, (String, TaskEntry)>,
    /// Public ids, oldest first.
    order: VecDeque<String>,
}

impl TaskRegistry {
    /// The id a caller is given for task `upstream_id` of `server`.
    pub(crate) fn public_id(server: &str, upstream_id: &str) -> String {
        format!("{server}:{upstream_id}")
    }

    /// Notes that `owner` created `entry`; the id to give the owner.
    pub(crate) fn register(&self, owner: &str, entry: TaskEntry) -> String {
        let public = Self::public_id(&entry.server, &entry.upstream_id);
        let mut inner = self.inner.lock().unwrap();
        if inner
            .entries
            .insert(public.clone(), (owner.to_owned(), entry))
            .is_none()
        {
            inner.order.push_back(public.clone());
        }
        while inner.order.len() > MAX_TASKS {
            if let Some(oldest) = inner.order.pop_front() {
                inner.entries.remove(&oldest);
            }
        }
        public
    }

    /// The task `public_id`, if `owner` created it.
    pub(crate) fn lookup(&self, owner: &str, public_id: &str) -> Option<TaskEntry> {
        let inner = self.inner.lock().unwrap();
        match inner.entries.get(public_id) {
            Some((created_by, entry)) if created_by == owner => Some(entry.clone()),
            _ => None,
        }
    }

    /// Every task `owner` created, oldest first, with its public id.
    pub(crate) fn owned_by(&self, owner: &str) -> Vec<(String, TaskEntry)> {
        let inner = self.inner.lock().unwrap();
        inner
            .order
            .iter()
            .filter_map(|public| {
                let (created_by, entry) = inner.entries.get(public)?;
                (created_by == owner).then(|| (public.clone(), entry.clone()))
            })
            .collect()
    }

    /// Forgets task `public_id` (its server no longer knows it).
    pub(crate) fn forget(&self, public_id: &str) {
        let mut inner = self.inner.lock().unwrap();
        if inner.entries.remove(public_id).is_some() {
            inner.order.retain(|public| public != public_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(server: &str, id: &str) -> TaskEntry {
        TaskEntry {
            server: server.to_owned(),
            upstream_id: id.to_owned(),
            tool: "research".to_owned(),
        }
    }

    #[test]
    fn a_task_is_found_only_by_its_owner() {
        let registry = TaskRegistry::default();
        let id = registry.register("alice", entry("everything", "t1"));
        assert_eq!(id, "everything:t1");
        assert_eq!(
            registry.lookup("alice", &id),
            Some(entry("everything", "t1"))
        );
        assert_eq!(registry.lookup("bob", &id), None);
        assert_eq!(registry.lookup("alice", "everything:t2"), None);
        assert!(registry.owned_by("bob").is_empty());
        assert_eq!(registry.owned_by("alice").len(), 1);
    }

    #[test]
    fn the_same_upstream_id_on_two_servers_is_two_tasks() {
        let registry = TaskRegistry::default();
        let first = registry.register("alice", entry("one", "1"));
        let second = registry.register("alice", entry("two", "1"));
        assert_ne!(first, second);
        assert_eq!(registry.lookup("alice", &second).unwrap().server, "two");
        registry.forget(&first);
        assert_eq!(registry.lookup("alice", &first), None);
        assert_eq!(
            registry.owned_by("alice"),
            vec![(second, entry("two", "1"))]
        );
    }

    #[test]
    fn the_oldest_tasks_are_forgotten_past_the_bound() {
        let registry = TaskRegistry::default();
        for n in 0..MAX_TASKS + 3 {
            registry.register("alice", entry("s", &n.to_string()));
        }
        let owned = registry.owned_by("alice");
        assert_eq!(owned.len(), MAX_TASKS);
        assert_eq!(owned[0].0, "s:3");
        assert_eq!(registry.lookup("alice", "s:0"), None);
    }
}
