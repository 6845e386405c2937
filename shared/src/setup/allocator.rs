//! The functions' global allocator: mimalloc, with freed memory returned to
//! the system at once (feature `mimalloc`, which the four functions turn on).
//!
//! Profiled on the 10,000-record Kinesis event (bench/README.md,
//! "Profiling"), a quarter of the process's CPU was glibc's `malloc` and
//! `free`; mimalloc took 11-17% off the CPU per record. With its default
//! `purge_delay` of 10 ms, memory freed during an invocation stayed resident
//! and the same event peaked at 57-65 MiB against glibc's 37.5 MiB; purged at
//! once ([`configure`], called by [`crate::setup::startup::start_with`]), 35 MiB.
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: sqs_forwarder::setup::allocator::Allocator = sqs_forwarder::setup::allocator::ALLOCATOR;
//! ```

/// The allocator type, for a `#[global_allocator]` static.
pub type Allocator = mimalloc::MiMalloc;

/// The allocator, for a `#[global_allocator]` static.
pub const ALLOCATOR: Allocator = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (the same position in its v2 and v3
/// option lists; the Rust bindings do not name it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Return freed memory to the system at once rather than 10 ms later. Takes
/// effect from the next free; harmless when mimalloc is not the global
/// allocator.
pub fn configure() {
    // SAFETY: sets one of mimalloc's options, which it allows at any time
    // from any thread; no pointer is involved.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configure_sets_the_purge_delay_to_zero() {
        // SAFETY: reading and setting mimalloc options, no pointers.
        unsafe {
            libmimalloc_sys::mi_option_set(PURGE_DELAY, 7);
            assert_eq!(libmimalloc_sys::mi_option_get(PURGE_DELAY), 7);
        }
        configure();
        // SAFETY: as above.
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) }, 0);
    }
}
