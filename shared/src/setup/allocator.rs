//! The functions' global allocator: mimalloc, with freed memory returned to
//! the system after every [`PURGE_EVERY`] bytes a thread allocates or frees
//! while the process holds more than [`KEEP_RESIDENT`], rather than by the
//! clock (feature `mimalloc`, which the four functions turn on).
//!
//! Profiled on the 10,000-record Kinesis event
//! (bench/notes/2026-11-30-sdk-per-call-cost.md), a quarter of the process's CPU was glibc's `malloc` and
//! `free`; mimalloc took 11-17% off the CPU per record.
//!
//! When freed memory goes back to the system is a trade of CPU for RSS:
//! - mimalloc's default, 10 ms after the free, let the same event peak at
//!   57-65 MiB against glibc's 37.5 MiB: a clock counts more work between
//!   two purges the faster the process runs.
//! - At once (`purge_delay` 0, this module's setting until 2026-12-04) kept
//!   it near 35 MiB, but every page a call freed and the next call took was faulted
//!   in again: 4,000-5,000 page faults in each warm 10,000-record
//!   invocation, plus the `madvise` calls that return the pages
//!   (bench/notes/2026-12-03-memory-returned-at-once.md).
//! - Now the clock never purges ([`configure`]), and the [`Allocator`]
//!   counts the bytes each thread allocates and the bytes it frees: when
//!   either count reaches [`PURGE_EVERY`], it has mimalloc return all the
//!   thread's free memory (`mi_collect`) and both start again. The memory
//!   kept is bounded by the work done since the last purge, not by how fast
//!   it was done, so the peak is the same capped or not; the same
//!   invocations take a third to a half fewer page faults. Counting
//!   allocations alone let memory freed in bulk (a batch of aggregates, an
//!   event's buffers) wait for the next 4 MiB of allocations, and the
//!   aggregated KPL event peaked 3-7 MiB higher.
//! - A purge is skipped while the process's resident set is at most
//!   [`KEEP_RESIDENT`] (36 MiB; read from `/proc/self/statm` at each count
//!   that reaches the line): below it, memory freed by one call is kept for
//!   the next, with no page fault and no `madvise`. Under the 128 MB cap,
//!   A/B against the 4 MiB purge alone, the 10,000-record event took
//!   60-70% fewer page faults and 11% less CPU per record with 10 ms
//!   answers, and peaked at 38-41 MiB instead of 31-35
//!   (bench/notes/2026-12-04-memory-kept-below-36-mib.md). Above it the purges are as before, so a
//!   workload that needs more peaks where it did.
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: sqs_forwarder::setup::allocator::Allocator = sqs_forwarder::setup::allocator::ALLOCATOR;
//! ```

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

/// The bytes a thread allocates, or frees, between two purges of its free
/// memory: 4 MiB. Measured with allocations counted alone, 2 MiB faulted
/// more and saved nothing, and 8 MiB let the 10,000-record event peak over
/// the 48 MB line under the 128 MB cap
/// (bench/notes/2026-12-04-memory-returned-with-the-work.md).
pub const PURGE_EVERY: usize = 4 << 20;

/// The resident set (of the whole process) at or below which a purge is
/// skipped: 36 MiB, about 10 MiB under the 48 MB line the benchmark holds
/// every workload to, room for the [`PURGE_EVERY`] allocated before the next
/// count and a large block. At 32 MiB the 10,000-record event still
/// purged and faulted on every warm invocation; at 40 MiB it peaked at up
/// to 44.8 MiB.
pub const KEEP_RESIDENT: usize = 36 << 20;

/// The page size `/proc/self/statm` counts in: 4 KiB on Lambda (x86_64 and
/// arm64).
const PAGE_BYTES: usize = 4096;

/// mimalloc's `mi_option_purge_delay` (the same position in its v2 and v3
/// option lists; the Rust bindings do not name it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// The purge delay [`configure`] sets, in milliseconds: a day, so that the
/// clock never purges a function's memory (-1 would also stop the purges
/// that [`Allocator`] asks for).
const NEVER_MS: std::ffi::c_long = 24 * 60 * 60 * 1000;

thread_local! {
    /// The bytes this thread has allocated since its last purge.
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
    /// The bytes this thread has freed since its last purge.
    static FREED: Cell<usize> = const { Cell::new(0) };
}

/// mimalloc, purging a thread's free memory after every [`PURGE_EVERY`]
/// bytes it allocates or frees.
#[derive(Debug, Clone, Copy)]
pub struct Allocator;

/// The allocator, for a `#[global_allocator]` static.
pub const ALLOCATOR: Allocator = Allocator;

impl Allocator {
    /// Count `bytes` about to be allocated or just freed (`count` is
    /// [`ALLOCATED`] or [`FREED`]); when it reaches [`PURGE_EVERY`], purge
    /// and start both counts again.
    #[inline]
    fn count(count: &'static std::thread::LocalKey<Cell<usize>>, bytes: usize) {
        // `try_with` cannot fail for a `const` local without a destructor;
        // if it ever did, nothing is counted and nothing purged.
        let _ = count.try_with(|since| {
            let total = since.get().saturating_add(bytes);
            if total >= PURGE_EVERY {
                purge();
            } else {
                since.set(total);
            }
        });
    }
}

/// Start both counts again and, unless the process's resident set is at
/// most [`KEEP_RESIDENT`], return every free page of this thread's heap
/// (and of mimalloc's arenas) to the system now. When the resident set
/// cannot be read, the purge is made.
fn purge() {
    let _ = ALLOCATED.try_with(|c| c.set(0));
    let _ = FREED.try_with(|c| c.set(0));
    if resident_bytes().is_some_and(|rss| rss <= KEEP_RESIDENT) {
        return;
    }
    collect();
}

/// Have mimalloc return every free page of this thread's heap (and of its
/// arenas) to the system.
fn collect() {
    // SAFETY: `mi_collect` takes no pointer and calls no Rust code; it is
    // called before an allocation or after a free of this thread, never
    // inside one.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// The process's resident set in bytes, from `/proc/self/statm`. Called
/// from inside the allocator, so it allocates nothing: the path is made a C
/// string on the stack, and the file is read into a stack buffer.
fn resident_bytes() -> Option<usize> {
    use std::io::Read;
    let mut file = std::fs::File::open("/proc/self/statm").ok()?;
    let mut buf = [0u8; 128];
    let n = file.read(&mut buf).ok()?;
    resident_of_statm(buf.get(..n)?)
}

/// The resident bytes `statm` says (its second field, in pages).
fn resident_of_statm(statm: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(statm).ok()?;
    let pages: usize = text.split_ascii_whitespace().nth(1)?.parse().ok()?;
    pages.checked_mul(PAGE_BYTES)
}

// SAFETY: every method hands its arguments to mimalloc's own `GlobalAlloc`,
// whose contract is the same; counting adds no allocation.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::count(&ALLOCATED, layout.size());
        // SAFETY: the caller's guarantees, passed on.
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::count(&ALLOCATED, layout.size());
        // SAFETY: the caller's guarantees, passed on.
        unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's guarantees, passed on.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
        // Counted once the block is back: a purge now can return its page.
        Self::count(&FREED, layout.size());
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A reallocation may move: counted as the new size allocated (the
        // old block, when it moves, is not counted as freed).
        Self::count(&ALLOCATED, new_size);
        // SAFETY: the caller's guarantees, passed on.
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}

/// Stop the clock from purging freed memory: from here on only the
/// [`Allocator`]'s count does. Takes effect from the next free; harmless
/// when mimalloc is not the global allocator.
pub fn configure() {
    // SAFETY: sets one of mimalloc's options, which it allows at any time
    // from any thread; no pointer is involved.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, NEVER_MS) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configure_stops_the_clock() {
        // SAFETY: reading and setting mimalloc options, no pointers.
        unsafe {
            libmimalloc_sys::mi_option_set(PURGE_DELAY, 7);
            assert_eq!(libmimalloc_sys::mi_option_get(PURGE_DELAY), 7);
        }
        configure();
        // SAFETY: as above.
        assert_eq!(
            unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) },
            NEVER_MS
        );
    }

    #[test]
    fn either_count_purges_at_the_line_and_starts_both_again() {
        let counts = || (ALLOCATED.with(Cell::get), FREED.with(Cell::get));
        purge();
        Allocator::count(&ALLOCATED, PURGE_EVERY - 10);
        assert_eq!(counts(), (PURGE_EVERY - 10, 0));
        Allocator::count(&ALLOCATED, 9);
        Allocator::count(&FREED, PURGE_EVERY - 1);
        assert_eq!(counts(), (PURGE_EVERY - 1, PURGE_EVERY - 1));
        Allocator::count(&FREED, 1);
        assert_eq!(
            counts(),
            (0, 0),
            "the freed bytes reaching the line purge and reset both"
        );
        Allocator::count(&FREED, 5);
        Allocator::count(&ALLOCATED, PURGE_EVERY);
        assert_eq!(counts(), (0, 0), "so do the allocated bytes");
        Allocator::count(&ALLOCATED, usize::MAX);
        assert_eq!(counts(), (0, 0), "one huge request purges, never overflows");
    }

    #[test]
    fn the_resident_set_is_read_from_statm() {
        assert_eq!(
            resident_of_statm(b"9338 3021 1624 1905 0 1532 0\n"),
            Some(3021 * 4096)
        );
        assert_eq!(resident_of_statm(b"9338"), None);
        assert_eq!(resident_of_statm(b"9338 lots 1"), None);
        assert_eq!(resident_of_statm(b""), None);
        assert_eq!(resident_of_statm(&[0xff, b' ', b'1']), None);
        // This process's: at least the 16 MiB just touched.
        let touched = vec![1u8; 16 << 20];
        let rss = resident_bytes().expect("/proc/self/statm is readable on Linux");
        assert!(rss >= touched.len(), "{rss} bytes resident");
        drop(touched);
    }

    #[test]
    fn allocations_through_it_are_counted_and_usable() {
        purge();
        let layout = Layout::from_size_align(1000, 8).unwrap();
        // SAFETY: a non-zero layout; the block is written within its size,
        // reallocated and freed with the layouts it has.
        unsafe {
            let p = ALLOCATOR.alloc_zeroed(layout);
            assert!(!p.is_null());
            assert!(std::slice::from_raw_parts(p, 1000).iter().all(|b| *b == 0));
            p.write_bytes(7, 1000);
            let q = ALLOCATOR.realloc(p, layout, 3000);
            assert!(!q.is_null());
            assert!(std::slice::from_raw_parts(q, 1000).iter().all(|b| *b == 7));
            ALLOCATOR.dealloc(q, Layout::from_size_align(3000, 8).unwrap());
        }
        // Other allocations and frees of this test thread may be counted
        // too.
        assert!(ALLOCATED.with(Cell::get) >= 4000);
        assert!(FREED.with(Cell::get) >= 3000);
    }

    #[test]
    fn a_purge_keeps_live_blocks_intact() {
        let layout = Layout::from_size_align(64, 8).unwrap();
        // SAFETY: as above; the live block is read after the purge, then freed.
        unsafe {
            let live = ALLOCATOR.alloc(layout);
            assert!(!live.is_null());
            live.write_bytes(0xab, 64);
            for _ in 0..(PURGE_EVERY / (256 << 10) + 2) {
                let big = Layout::from_size_align(256 << 10, 8).unwrap();
                let p = ALLOCATOR.alloc(big);
                assert!(!p.is_null());
                p.write_bytes(1, 256 << 10);
                ALLOCATOR.dealloc(p, big);
                // The purges above are skipped while the test process is
                // small; this one is not.
                collect();
            }
            assert!(
                std::slice::from_raw_parts(live, 64)
                    .iter()
                    .all(|b| *b == 0xab)
            );
            ALLOCATOR.dealloc(live, layout);
        }
    }
}
