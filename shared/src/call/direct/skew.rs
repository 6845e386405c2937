//! The server's clock, learned from the `Date` of its answers, as
//! aws-sdk-sqs learns it (aws-runtime's `ServiceClockSkewInterceptor` and
//! `ServiceClockSkewClassifier`).
//!
//! SQS refuses a request whose SigV4 date is more than 5 minutes from its
//! own clock. Every answer's `Date` gives the server's time; the offset from
//! the midpoint of the call (the server is taken to have answered halfway
//! through it) is kept and added to the local clock for every later
//! signature, date and signing-key day included. As in the SDK, an answer
//! that came from a cache (an `Age` header), has no usable `Date`, or took
//! more than 15 minutes, measures nothing.
//!
//! A call refused with a skew code ([`SKEW_CODES`]) is made once more with
//! the corrected clock when the offset it measured is more than
//! [`DETECTION_THRESHOLD`] away from the one the call was signed with: the
//! SDK's rule (a measured skew over 4 minutes), and never a second time with
//! an offset that did not change.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime};

use crate::send::retry::bare_code;

/// Below this change of offset, a skew code is taken as a real signature
/// error, not a wrong clock (the SDK's threshold).
pub const DETECTION_THRESHOLD: Duration = Duration::from_secs(4 * 60);
/// A call that took longer than this measures nothing (the SDK's limit).
const MAX_TRUSTED_CALL: Duration = Duration::from_secs(15 * 60);

/// The error codes that may mean the request's clock was off: aws-runtime's
/// list (`InvalidSignatureException`, `SignatureDoesNotMatch`,
/// `AuthFailure`, `RequestTimeTooSkewed`, `AccessDeniedException`), and
/// `RequestExpired` and `RequestInTheFuture`, which other AWS SDKs count
/// too. A code counts only with a measured skew over the threshold.
pub const SKEW_CODES: &[&str] = &[
    "InvalidSignatureException",
    "SignatureDoesNotMatch",
    "AuthFailure",
    "RequestTimeTooSkewed",
    "AccessDeniedException",
    "RequestExpired",
    "RequestInTheFuture",
];

/// Whether `code` (query-compatible or not) is one of [`SKEW_CODES`].
pub fn is_skew_code(code: &str) -> bool {
    SKEW_CODES.contains(&bare_code(code))
}

/// The server's clock minus the local one, in milliseconds (positive: the
/// server is ahead), learned from the answers; zero until one is read.
#[derive(Debug, Default)]
pub struct ClockSkew(AtomicI64);

impl ClockSkew {
    /// The offset now kept, in milliseconds.
    pub fn offset_ms(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }

    /// `local` moved by `offset_ms` (saturating at what `SystemTime` holds).
    pub fn apply(offset_ms: i64, local: SystemTime) -> SystemTime {
        let by = Duration::from_millis(offset_ms.unsigned_abs());
        if offset_ms >= 0 {
            local.checked_add(by)
        } else {
            local.checked_sub(by)
        }
        .unwrap_or(local)
    }

    /// Learn the offset from an answer to a call sent at `sent` and read at
    /// `received` (local clock), with `date` (its `Date` header) and whether
    /// it had an `Age` header. The new offset when one was measured (and
    /// kept), else `None`.
    pub fn learn(
        &self,
        sent: SystemTime,
        received: SystemTime,
        date: Option<&str>,
        cached: bool,
    ) -> Option<i64> {
        if cached {
            return None;
        }
        let server = httpdate::parse_http_date(date?.trim()).ok()?;
        let elapsed = received.duration_since(sent).unwrap_or_default();
        if elapsed > MAX_TRUSTED_CALL {
            return None;
        }
        let midpoint = sent.checked_add(elapsed / 2)?;
        let offset = match server.duration_since(midpoint) {
            Ok(d) => i64::try_from(d.as_millis()).ok()?,
            Err(e) => -i64::try_from(e.duration().as_millis()).ok()?,
        };
        self.0.store(offset, Ordering::Relaxed);
        Some(offset)
    }
}

/// Whether a call signed with offset `signed_with` and refused with `code`
/// is to be made once more: the code may mean skew and the answer measured
/// an offset (`measured`) more than [`DETECTION_THRESHOLD`] from it.
pub fn retry_with_new_offset(code: &str, signed_with: i64, measured: Option<i64>) -> bool {
    let Some(measured) = measured else {
        return false;
    };
    let change = Duration::from_millis(measured.abs_diff(signed_with));
    is_skew_code(code) && change > DETECTION_THRESHOLD
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn the_offset_is_the_date_minus_the_midpoint() {
        let skew = ClockSkew::default();
        assert_eq!(skew.offset_ms(), 0);
        // 1_700_000_000 = Tue, 14 Nov 2023 22:13:20 GMT.
        let date = httpdate::fmt_http_date(at(1_700_000_600));
        assert_eq!(date, "Tue, 14 Nov 2023 22:23:20 GMT");
        // Sent at 0, read at +2 s: the midpoint is +1 s.
        let learned = skew.learn(at(1_700_000_000), at(1_700_000_002), Some(&date), false);
        assert_eq!(learned, Some(599_000));
        assert_eq!(skew.offset_ms(), 599_000);
        // A server behind the client.
        let date = httpdate::fmt_http_date(at(1_699_999_700));
        let learned = skew.learn(at(1_700_000_000), at(1_700_000_000), Some(&date), false);
        assert_eq!(learned, Some(-300_000));
        assert_eq!(
            ClockSkew::apply(-300_000, at(1_700_000_000)),
            at(1_699_999_700)
        );
        assert_eq!(
            ClockSkew::apply(599_000, at(1_700_000_000)),
            at(1_700_000_599)
        );
    }

    #[test]
    fn what_measures_nothing_keeps_the_offset() {
        let skew = ClockSkew::default();
        let date = httpdate::fmt_http_date(at(1_700_000_600));
        let (sent, read) = (at(1_700_000_000), at(1_700_000_000));
        assert_eq!(skew.learn(sent, read, Some(&date), true), None, "cached");
        assert_eq!(skew.learn(sent, read, None, false), None, "no Date");
        assert_eq!(
            skew.learn(sent, read, Some("yesterday"), false),
            None,
            "not an HTTP date"
        );
        assert_eq!(
            skew.learn(sent, at(1_700_001_000), Some(&date), false),
            None,
            "a call longer than 15 minutes"
        );
        assert_eq!(skew.offset_ms(), 0);
    }

    #[test]
    fn a_skew_code_is_retried_only_for_a_changed_offset() {
        const TEN_MIN: i64 = 600_000;
        for code in [
            "InvalidSignatureException",
            "SignatureDoesNotMatch",
            "AWS.SimpleQueueService.SignatureDoesNotMatch",
            "RequestTimeTooSkewed",
            "RequestExpired",
            "AccessDeniedException",
        ] {
            assert!(retry_with_new_offset(code, 0, Some(TEN_MIN)), "{code}");
            assert!(retry_with_new_offset(code, 0, Some(-TEN_MIN)), "{code}");
            // Already signed with that offset: a real refusal.
            assert!(!retry_with_new_offset(code, TEN_MIN, Some(TEN_MIN - 900)));
            // A minute is not skew (the SDK's 4-minute threshold).
            assert!(!retry_with_new_offset(code, 0, Some(60_000)));
            assert!(!retry_with_new_offset(code, 0, None));
        }
        for code in ["AccessDenied", "InternalError", "ThrottlingException"] {
            assert!(!retry_with_new_offset(code, 0, Some(TEN_MIN)), "{code}");
        }
    }
}
