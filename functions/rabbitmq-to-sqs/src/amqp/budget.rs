//! The bytes a consumer's deliveries hold until the drain has settled them,
//! and the bound on them: past it the reader stops reading the socket (the
//! broker's deliveries wait in TCP's buffers and then at the broker) until
//! the drain releases what it settled. Prefetch bounds a consumer's
//! deliveries by count only (RabbitMQ does not implement a prefetch size),
//! so this is what bounds them by bytes.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// A consumer's bytes held and their bound.
#[derive(Debug)]
pub(crate) struct Budget {
    held: AtomicUsize,
    limit: usize,
    released: Notify,
}

impl Budget {
    pub(crate) fn new(limit: usize) -> Self {
        Budget {
            held: AtomicUsize::new(0),
            limit: limit.max(1),
            released: Notify::new(),
        }
    }

    /// A delivery of `bytes` handed to the consumer.
    pub(crate) fn take(&self, bytes: usize) {
        self.held.fetch_add(bytes, Ordering::AcqRel);
    }

    /// `bytes` settled (or given up) by the drain: the reader may read on.
    pub(crate) fn release(&self, bytes: usize) {
        let _ = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| {
                Some(h.saturating_sub(bytes))
            });
        self.released.notify_one();
    }

    /// Whether the bound is reached: the reader waits for [`Budget::released`].
    pub(crate) fn exceeded(&self) -> bool {
        self.held.load(Ordering::Acquire) >= self.limit
    }

    /// Wait until the drain releases bytes (at once if it did since the
    /// last wait).
    pub(crate) async fn released(&self) {
        self.released.notified().await;
    }

    /// The bytes held now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_bound_is_reached_by_what_is_taken_and_left_by_what_is_released() {
        let b = Budget::new(100);
        b.take(60);
        assert!(!b.exceeded());
        b.take(40);
        assert!(b.exceeded());
        b.release(30);
        assert!(!b.exceeded());
        assert_eq!(b.held(), 70);
        // The release left a permit: the wait that follows ends at once.
        tokio::time::timeout(std::time::Duration::from_secs(1), b.released())
            .await
            .expect("released");
        b.release(1_000);
        assert_eq!(b.held(), 0, "never below nothing");
    }
}
