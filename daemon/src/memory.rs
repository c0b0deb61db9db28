//! Giving freed memory back to the operating system after a big, one-off piece of work.
//!
//! Discovering a server of thousands of tools parses megabytes of JSON into short-lived values
//! (rmcp's typed messages, `serde_json::Value` trees) on whichever runtime thread ran it. The
//! allocator keeps what they freed in that thread's arena for reuse, so without this the
//! daemon's resident memory stays at the peak of discovery for its whole life: several times the
//! catalog itself. [`release_freed`] asks glibc to return free pages of every arena; it costs a
//! walk over the heaps (milliseconds), so it runs only after rebuilding a catalog or the search
//! index, never per request.

/// Returns the allocator's free pages to the operating system (glibc's `malloc_trim`); does
/// nothing where that does not exist.
pub(crate) fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only walks the allocator's own free lists; it takes no pointers and
    // is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
