//! Which failures a retry can fix, and how long to wait before trying.
//!
//! AWS does not document which `SendMessageBatch` entry codes are retryable.
//! The forwarder follows common practice: an entry failure is retried when
//! SQS says it was not the sender's fault, or when its code is a throttling
//! code (which SQS may mark as the sender's fault). Whole-call errors are
//! retried when they are throttling, a 5xx, a timeout or a connection error,
//! and not when they are access denied, a missing queue or a malformed
//! request. KMS errors of an encrypted queue are never retried, entry or
//! call, except `KmsThrottled` ([`is_kms_permanent`]).
//!
//! Waits use exponential backoff with full jitter: attempt `n` waits a random
//! time in `[0, min(max, base * 2^(n-1))]`.

use std::time::Duration;

/// Error codes that mean "slow down" even when SQS marks them sender faults.
pub const THROTTLING_CODES: &[&str] = &[
    "RequestThrottled",
    "ThrottlingException",
    "Throttling",
    "ThrottledException",
    "TooManyRequestsException",
    "KmsThrottled",
    "KMS.ThrottlingException",
    "SlowDown",
];

/// Error codes of whole calls that mean a server-side problem worth retrying.
pub const SERVER_CODES: &[&str] = &[
    "InternalError",
    "InternalFailure",
    "ServiceUnavailable",
    "RequestTimeout",
    "RequestTimeoutException",
];

/// A code without the `AWS.SimpleQueueService.` prefix that SQS's
/// query-compatible error codes may carry (`AWS.SimpleQueueService.NonExistentQueue`):
/// classification is by the bare name, whichever spelling arrives.
pub fn bare_code(code: &str) -> &str {
    code.strip_prefix("AWS.SimpleQueueService.").unwrap_or(code)
}

/// Whether a code is a throttling code.
pub fn is_throttling(code: &str) -> bool {
    THROTTLING_CODES.contains(&bare_code(code))
}

/// Whether a code is a KMS error of an encrypted queue that a retry cannot
/// fix: every KMS code but throttling. SQS names them `KmsAccessDenied`,
/// `KmsDisabled`, `KmsInvalidKeyUsage`, `KmsInvalidState`, `KmsNotFound`,
/// `KmsOptInRequired` (or, query-compatible, `KMS.AccessDeniedException`,
/// ...): a key the sender may not use, or one that is disabled, pending
/// deletion or gone. They are reported with their code, not retried,
/// whatever `SenderFault` says.
pub fn is_kms_permanent(code: &str) -> bool {
    let code = bare_code(code);
    (code.starts_with("Kms") || code.starts_with("KMS.")) && !is_throttling(code)
}

/// Whether a failed batch entry should be retried.
pub fn entry_retryable(code: &str, sender_fault: bool) -> bool {
    !is_kms_permanent(code) && (!sender_fault || is_throttling(code))
}

/// Whether a whole-call service error should be retried, from its code and
/// HTTP status.
pub fn call_retryable(code: Option<&str>, http_status: Option<u16>) -> bool {
    if code.is_some_and(is_kms_permanent) {
        return false;
    }
    if code.is_some_and(|c| is_throttling(c) || SERVER_CODES.contains(&bare_code(c))) {
        return true;
    }
    matches!(http_status, Some(429) | Some(500..=599))
}

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total calls a message may ride in, the first included (>= 1).
    pub max_attempts: u32,
    /// Backoff base.
    pub base_delay: Duration,
    /// Backoff cap.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(50),
            max_delay: Duration::from_secs(2),
        }
    }
}

impl RetryPolicy {
    /// The ceiling of the wait after `attempt` failed attempts (1-based).
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let shift = attempt.saturating_sub(1).min(30);
        self.base_delay
            .saturating_mul(1u32 << shift)
            .min(self.max_delay)
    }

    /// A full-jitter wait after `attempt` failed attempts.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let ceiling = self.ceiling(attempt).as_micros() as u64;
        Duration::from_micros(fastrand::u64(0..=ceiling))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        assert!(entry_retryable("InternalError", false));
        assert!(entry_retryable("RequestThrottled", true));
        // Either spelling of a code is classified alike.
        assert!(entry_retryable(
            "AWS.SimpleQueueService.RequestThrottled",
            true
        ));
        assert!(call_retryable(
            Some("AWS.SimpleQueueService.RequestThrottled"),
            Some(400)
        ));
        assert!(call_retryable(
            Some("AWS.SimpleQueueService.InternalError"),
            Some(400)
        ));
        assert!(!entry_retryable(
            "AWS.SimpleQueueService.KmsDisabled",
            false
        ));
        assert!(!call_retryable(
            Some("AWS.SimpleQueueService.NonExistentQueue"),
            Some(400)
        ));
        assert!(entry_retryable("KmsThrottled", true));
        assert!(!entry_retryable("InvalidParameterValue", true));
        assert!(!entry_retryable("InvalidMessageContents", true));
        assert!(call_retryable(Some("ThrottlingException"), Some(400)));
        assert!(call_retryable(None, Some(503)));
        assert!(call_retryable(Some("Whatever"), Some(500)));
        assert!(!call_retryable(Some("AccessDenied"), Some(403)));
        assert!(!call_retryable(
            Some("AWS.SimpleQueueService.NonExistentQueue"),
            Some(400)
        ));
    }

    #[test]
    fn kms_throttling_is_retried_other_kms_errors_are_not() {
        for code in ["KmsThrottled", "KMS.ThrottlingException"] {
            assert!(entry_retryable(code, true), "{code}");
            assert!(call_retryable(Some(code), Some(400)), "{code}");
            assert!(!is_kms_permanent(code), "{code}");
        }
        for code in [
            "KmsAccessDenied",
            "KmsDisabled",
            "KmsInvalidKeyUsage",
            "KmsInvalidState",
            "KmsNotFound",
            "KmsOptInRequired",
            "KMS.AccessDeniedException",
            "KMS.DisabledException",
            "KMS.InvalidKeyUsageException",
            "KMS.InvalidStateException",
            "KMS.NotFoundException",
            "KMS.OptInRequired",
        ] {
            assert!(is_kms_permanent(code), "{code}");
            // Not retried even when SQS does not blame the sender, nor when
            // it answers with a 5xx.
            assert!(!entry_retryable(code, false), "{code}");
            assert!(!entry_retryable(code, true), "{code}");
            assert!(!call_retryable(Some(code), Some(400)), "{code}");
            assert!(!call_retryable(Some(code), Some(500)), "{code}");
        }
        // Codes that merely contain "Kms" elsewhere keep the general rules.
        assert!(!is_kms_permanent("InternalError"));
        assert!(entry_retryable("InternalError", false));
    }

    #[test]
    fn backoff_is_full_jitter_under_a_growing_cap() {
        let p = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(100),
        };
        assert_eq!(p.ceiling(1), Duration::from_millis(10));
        assert_eq!(p.ceiling(2), Duration::from_millis(20));
        assert_eq!(p.ceiling(4), Duration::from_millis(80));
        assert_eq!(p.ceiling(5), Duration::from_millis(100));
        assert_eq!(p.ceiling(40), Duration::from_millis(100));
        let waits: Vec<_> = (0..200).map(|_| p.backoff(3)).collect();
        assert!(waits.iter().all(|w| *w <= Duration::from_millis(40)));
        // Full jitter spreads over the whole range, not just its top.
        assert!(waits.iter().any(|w| *w < Duration::from_millis(10)));
        assert!(waits.iter().any(|w| *w > Duration::from_millis(30)));
    }
}
