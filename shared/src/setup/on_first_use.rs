//! A client built the first time it is used, not at cold start.
//!
//! The first AWS SDK client a process builds loads and parses every system
//! root certificate (aws-smithy-http-client does it when a client is
//! built, so that the first request does not): millions of instructions,
//! tens of milliseconds under the 128 MB CPU share
//! (bench/results/profile-init.md). The S3 clients of the claim check
//! (`OVERSIZE_POLICY=offload`) and of s3-to-sqs's lines mode are needed
//! only by some invocations, if any, so they are made from their settings
//! on their first call instead.

use std::fmt;
use std::sync::{Arc, OnceLock};

/// A `C` made by a function the first time [`OnFirstUse::get`] asks for
/// it, then kept; clones share it.
pub struct OnFirstUse<C> {
    inner: Arc<Inner<C>>,
}

struct Inner<C> {
    client: OnceLock<C>,
    make: Box<dyn Fn() -> C + Send + Sync>,
}

impl<C> OnFirstUse<C> {
    /// A client `make` will build when it is first asked for.
    pub fn new(make: impl Fn() -> C + Send + Sync + 'static) -> Self {
        OnFirstUse {
            inner: Arc::new(Inner {
                client: OnceLock::new(),
                make: Box::new(make),
            }),
        }
    }

    /// A client already built.
    pub fn built(client: C) -> Self
    where
        C: Clone + Send + Sync + 'static,
    {
        let this = Self::new({
            let client = client.clone();
            move || client.clone()
        });
        let _ = this.inner.client.set(client);
        this
    }

    /// The client, built now if it was not yet.
    pub fn get(&self) -> &C {
        self.inner.client.get_or_init(|| (self.inner.make)())
    }

    /// Whether it has been built.
    pub fn is_built(&self) -> bool {
        self.inner.client.get().is_some()
    }
}

impl<C> Clone for OnFirstUse<C> {
    fn clone(&self) -> Self {
        OnFirstUse {
            inner: self.inner.clone(),
        }
    }
}

impl<C: fmt::Debug> fmt::Debug for OnFirstUse<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.inner.client.get() {
            Some(c) => f.debug_tuple("OnFirstUse").field(c).finish(),
            None => f.write_str("OnFirstUse(not built yet)"),
        }
    }
}

impl<C: Clone + Send + Sync + 'static> From<C> for OnFirstUse<C> {
    fn from(client: C) -> Self {
        Self::built(client)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn built_once_on_the_first_get_and_shared_by_clones() {
        let made = Arc::new(AtomicUsize::new(0));
        let counter = made.clone();
        let lazy = OnFirstUse::new(move || counter.fetch_add(1, Ordering::SeqCst) + 10);
        let copy = lazy.clone();
        assert!(!lazy.is_built());
        assert_eq!(made.load(Ordering::SeqCst), 0, "nothing built before use");
        assert_eq!(*copy.get(), 10);
        assert_eq!(*lazy.get(), 10);
        assert!(lazy.is_built());
        assert_eq!(made.load(Ordering::SeqCst), 1);
        let given = OnFirstUse::from(7_usize);
        assert!(given.is_built());
        assert_eq!(*given.get(), 7);
    }
}
