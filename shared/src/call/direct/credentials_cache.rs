//! The direct client's credentials: the SDK configuration's provider behind
//! a small cache.
//!
//! Credentials are kept until [`REFRESH_BEFORE`] their expiry (credentials
//! without one, such as Lambda's environment variables, are kept for good).
//! When they are due, one caller fetches new ones while the others keep
//! signing with the current ones as long as those have not expired: no
//! thundering herd on the provider (STS, for an assumed role). Only when
//! there are none, or they have expired, do callers wait for the fetch; a
//! failed fetch keeps unexpired credentials and says so in a warning.

use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_smithy_runtime_api::client::identity::Identity;

use crate::send::outcome::Failure;

/// Credentials are renewed this long before they expire.
pub const REFRESH_BEFORE: Duration = Duration::from_secs(30);
/// The longest a fetch may take (the SDK's identity cache allows 5 s).
pub const LOAD_TIMEOUT: Duration = Duration::from_secs(5);

/// Cached credentials for the direct client.
pub struct CredentialsCache {
    provider: SharedCredentialsProvider,
    current: RwLock<Option<Arc<Identity>>>,
    refresh: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for CredentialsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CredentialsCache")
    }
}

/// Whether credentials expiring at `expiry` are due for renewal at `now`
/// (within [`REFRESH_BEFORE`] of it; credentials without an expiry never
/// are). The one rule for this cache and the assumed role's
/// (`crate::setup::credentials`).
pub(crate) fn renewal_due(expiry: Option<SystemTime>, now: SystemTime) -> bool {
    expiry.is_some_and(|e| e <= now + REFRESH_BEFORE)
}

fn due(identity: &Identity, now: SystemTime) -> bool {
    renewal_due(identity.expiration(), now)
}

fn expired(identity: &Identity, now: SystemTime) -> bool {
    identity.expiration().is_some_and(|e| e <= now)
}

impl CredentialsCache {
    /// A cache over `provider`, empty.
    pub fn new(provider: SharedCredentialsProvider) -> Self {
        CredentialsCache {
            provider,
            current: RwLock::new(None),
            refresh: tokio::sync::Mutex::new(()),
        }
    }

    fn cached(&self) -> Option<Arc<Identity>> {
        self.current.read().ok().and_then(|c| c.clone())
    }

    /// Credentials to sign with now.
    pub async fn get(&self) -> Result<Arc<Identity>, Failure> {
        let now = SystemTime::now();
        let current = self.cached();
        if let Some(c) = &current
            && !due(c, now)
        {
            return Ok(c.clone());
        }
        // Due or missing. Someone else refreshing: use the current ones while
        // they are valid, else wait for that refresh.
        let guard = match self.refresh.try_lock() {
            Ok(g) => g,
            Err(_) => {
                if let Some(c) = current
                    && !expired(&c, now)
                {
                    return Ok(c);
                }
                self.refresh.lock().await
            }
        };
        // Refreshed while this caller waited?
        let now = SystemTime::now();
        if let Some(c) = self.cached()
            && !due(&c, now)
        {
            return Ok(c);
        }
        let fetched = tokio::time::timeout(LOAD_TIMEOUT, self.provider.provide_credentials()).await;
        let result = match fetched {
            Ok(Ok(credentials)) => {
                let identity = Arc::new(Identity::from(credentials));
                if let Ok(mut c) = self.current.write() {
                    *c = Some(identity.clone());
                }
                Ok(identity)
            }
            Ok(Err(e)) => Err(format!("the credentials could not be loaded: {e}")),
            Err(_) => Err("loading the credentials timed out".to_owned()),
        };
        drop(guard);
        result.or_else(|message| match self.cached() {
            Some(c) if !expired(&c, SystemTime::now()) => {
                tracing::warn!(error = %message, "SQS_CLIENT=direct: credentials not renewed; signing with the current ones until they expire");
                Ok(c)
            }
            _ => Err(Failure::transient(crate::send::codes::CREDENTIALS_ERROR, message)),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use aws_credential_types::Credentials;
    use aws_credential_types::provider::{error::CredentialsError, future};

    use super::*;

    #[derive(Debug)]
    struct Counting {
        calls: Arc<AtomicUsize>,
        valid_for: Option<Duration>,
        fail: bool,
    }

    impl ProvideCredentials for Counting {
        fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
        where
            Self: 'a,
        {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            if self.fail {
                return future::ProvideCredentials::ready(Err(CredentialsError::not_loaded(
                    "no credentials here",
                )));
            }
            let expiry = self.valid_for.map(|d| SystemTime::now() + d);
            future::ProvideCredentials::ready(Ok(Credentials::new(
                format!("AKID{n}"),
                "secret",
                None,
                expiry,
                "test",
            )))
        }
    }

    fn cache(valid_for: Option<Duration>, fail: bool) -> (CredentialsCache, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let provider = Counting {
            calls: calls.clone(),
            valid_for,
            fail,
        };
        (
            CredentialsCache::new(SharedCredentialsProvider::new(provider)),
            calls,
        )
    }

    fn key(i: &Identity) -> String {
        i.data::<Credentials>()
            .map(|c| c.access_key_id().to_owned())
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn kept_until_shortly_before_expiry() {
        // No expiry: fetched once.
        let (c, calls) = cache(None, false);
        for _ in 0..5 {
            assert_eq!(key(&c.get().await.expect("credentials")), "AKID0");
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // An hour: fetched once.
        let (c, calls) = cache(Some(Duration::from_secs(3600)), false);
        for _ in 0..5 {
            c.get().await.expect("credentials");
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // Inside the refresh margin: every get renews.
        let (c, calls) = cache(Some(Duration::from_secs(10)), false);
        assert_eq!(key(&c.get().await.expect("credentials")), "AKID0");
        assert_eq!(key(&c.get().await.expect("credentials")), "AKID1");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_fetch_for_many_callers() {
        let (c, calls) = cache(Some(Duration::from_secs(3600)), false);
        let c = Arc::new(c);
        let tasks: Vec<_> = (0..50)
            .map(|_| {
                let c = c.clone();
                tokio::spawn(async move { c.get().await.map(|i| key(&i)) })
            })
            .collect();
        for t in tasks {
            assert_eq!(t.await.expect("task"), Ok("AKID0".to_owned()));
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn failure_is_a_transient_call_error_without_secrets() {
        let (c, _) = cache(None, true);
        let e = c.get().await.expect_err("no credentials");
        assert_eq!(e.code, "CredentialsError");
        assert!(e.retryable);
        assert!(!e.message.contains("secret"), "{}", e.message);
    }
}
