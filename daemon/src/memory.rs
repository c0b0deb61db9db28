//! Giving freed memory back to the operating system after a big, one-off piece of work.
//!
//! Discovering a server of thousands of tools parses megabytes of JSON into short-lived values
//! (rmcp's typed messages, `serde_json::Value` trees) on whichever runtime thread ran it. The
//! allocator keeps what they freed in that thread's arena for reuse, so without this the
//! daemon's resident memory stays at the peak of discovery for its whole life: several times the
//! catalog itself. `release_freed` asks glibc to return free pages of every arena; it costs a
//! walk over the heaps (milliseconds), so it runs only after rebuilding a catalog or the search
//! index, never per request.
//!
//! [`return_freed_promptly`], called once at start, keeps glibc from holding on to freed memory
//! in the first place. By default glibc raises its mmap and trim thresholds each time a large
//! block is freed (up to 32 and 64 MiB): after discovery frees a 4 MiB stdio line or a large
//! `Vec`, every later block of that size comes from an arena instead of its own mapping, and
//! the free top of each thread's arena stays resident up to the raised trim threshold, which
//! `malloc_trim` does not shrink for thread arenas. Fixing both thresholds at glibc's defaults
//! (128 KiB) cut the daemon's growth with a 10,000-tool catalog from 21.1 to 14.2 MiB
//! (docs/benchmarks.md, "Catalog memory (P6)").
//!
//! At `debug` level for this module (`RUST_LOG=tool_cli_daemon::memory=debug`) each release
//! also logs the allocator's state around it: the bytes in use, the free bytes the allocator
//! keeps, and the process's resident set before and after. That is how `catalog_memory` (an
//! example of this crate) tells live structures from allocator slack in a real daemon.

/// What glibc's allocator holds, over all its arenas, and the process's resident set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AllocatorState {
    /// Bytes handed out and not freed (`uordblks` + `hblkhd` of `mallinfo2`).
    in_use: usize,
    /// Free bytes the arenas keep for reuse (`fordblks`): resident unless trimmed.
    free: usize,
    /// The process's resident set (`/proc/self/statm`), when it can be read.
    resident: Option<usize>,
}

/// The mmap and trim thresholds the daemon keeps: glibc's own defaults, held fixed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const ALLOCATOR_THRESHOLD_BYTES: libc::c_int = 128 * 1024;

/// Fixes glibc's mmap and trim thresholds at their defaults, so that they do not grow after a
/// large block is freed (which leaves every thread arena's free top resident); does nothing
/// where glibc is not the allocator. Call once at start, before any thread is spawned.
pub fn return_freed_promptly() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets the allocator's parameters; both values are in range.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, ALLOCATOR_THRESHOLD_BYTES);
        libc::mallopt(libc::M_TRIM_THRESHOLD, ALLOCATOR_THRESHOLD_BYTES);
    }
}

/// Returns the allocator's free pages to the operating system (glibc's `malloc_trim`); does
/// nothing where that does not exist. `after` names the work that freed them, for the log.
pub(crate) fn release_freed(after: &str) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let logged = tracing::enabled!(tracing::Level::DEBUG);
        let before = logged.then(allocator_state);
        // SAFETY: `malloc_trim` only walks the allocator's own free lists; it takes no pointers
        // and is safe to call from any thread at any time.
        unsafe {
            libc::malloc_trim(0);
        }
        if let Some(before) = before {
            let now = allocator_state();
            tracing::debug!(
                after,
                in_use_bytes = now.in_use,
                free_bytes = now.free,
                resident_before = before.resident.unwrap_or(0),
                resident_after = now.resident.unwrap_or(0),
                returned_bytes = returned(before, now),
                "freed memory returned to the system"
            );
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = after;
}

/// How much the resident set shrank from `before` to `now` (0 when unknown or when it grew).
fn returned(before: AllocatorState, now: AllocatorState) -> usize {
    match (before.resident, now.resident) {
        (Some(before), Some(now)) => before.saturating_sub(now),
        _ => 0,
    }
}

/// The allocator's state now (glibc's `mallinfo2`, which walks every arena).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn allocator_state() -> AllocatorState {
    // SAFETY: `mallinfo2` takes no arguments and returns a plain struct by value.
    let info = unsafe { libc::mallinfo2() };
    AllocatorState {
        in_use: info.uordblks + info.hblkhd,
        free: info.fordblks,
        resident: std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|statm| resident_of_statm(&statm, page_size())),
    }
}

/// The memory page size.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn page_size() -> usize {
    // SAFETY: `sysconf` reads a constant of the system.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}

/// The resident set in bytes from the text of `/proc/PID/statm` (its second field, in pages).
fn resident_of_statm(statm: &str, page_size: usize) -> Option<usize> {
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    pages.checked_mul(page_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resident_set_is_the_second_field_of_statm_in_pages() {
        assert_eq!(
            resident_of_statm("5000 1200 300 10 0 900 0\n", 4096),
            Some(1200 * 4096)
        );
        assert_eq!(resident_of_statm("5000\n", 4096), None);
        assert_eq!(resident_of_statm("5000 many 3\n", 4096), None);
        assert_eq!(resident_of_statm("", 4096), None);
    }

    #[test]
    fn what_was_returned_is_the_drop_of_the_resident_set() {
        let state = |resident| AllocatorState {
            in_use: 0,
            free: 0,
            resident,
        };
        assert_eq!(
            returned(state(Some(10 << 20)), state(Some(4 << 20))),
            6 << 20
        );
        assert_eq!(returned(state(Some(4 << 20)), state(Some(10 << 20))), 0);
        assert_eq!(returned(state(None), state(Some(4 << 20))), 0);
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn the_allocator_state_counts_a_live_allocation() {
        // Absolute, not a difference from before: other tests of this process allocate and free
        // at the same time, so only "at least the live block" holds whatever they do.
        let block = vec![1u8; 32 << 20];
        let during = allocator_state();
        assert!(during.in_use >= 32 << 20, "{during:?}");
        assert!(during.resident.is_some_and(|resident| resident >= 28 << 20));
        drop(block);
        release_freed("a test");
    }
}
