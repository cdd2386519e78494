//! Where the allocator puts large blocks while a run is indexed.
//!
//! glibc's `malloc` serves a block of 128 KiB or more from a mapping of its
//! own and unmaps it when it is freed, but each time such a block is freed
//! it raises that threshold to the block's size (up to 32 MiB). From then
//! on the large blocks of a load (the index's column chunks, the loader's
//! batches and read buffers) come from its heaps, where the room freed
//! between them stays resident and is cut up again. At ten million pairs
//! that room was about 13 MB of the peak: 530,408 kB with the moving
//! threshold, 517,136 kB with it fixed at 256 KiB (`docs/performance.md`,
//! "The allocator's threshold"). A fixed threshold keeps every large block
//! in a mapping of its own, given back whole when it is freed.

/// The size from which a block gets a mapping of its own.
const MAPPED_FROM: usize = 256 * 1024;

/// Fix the allocator's threshold for mapped blocks at [`MAPPED_FROM`], once
/// per process; whether the allocator took it (always false where the
/// allocator is not glibc's).
pub fn keep_large_blocks_mapped() -> bool {
    static TAKEN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TAKEN.get_or_init(set_threshold)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_threshold() -> bool {
    // SAFETY: `mallopt` sets one parameter of the allocator under its own
    // lock; any thread may call it at any time.
    unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MAPPED_FROM as libc::c_int) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_threshold() -> bool {
    false
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn glibc_takes_the_threshold() {
        assert!(super::keep_large_blocks_mapped());
        // Asking again changes nothing and says the same.
        assert!(super::keep_large_blocks_mapped());
    }
}
