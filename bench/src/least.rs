//! The least work: what any SQS forwarder must do beyond the HTTP floor's
//! posting, measured on the workload's own event and request bodies.
//!
//! The HTTP floor ([`crate::floor`]) posts bodies already made, unsigned. A
//! forwarder must also read its event and sign every request (SQS refuses
//! an unsigned one). This measures the least of each, single-threaded, in
//! this process:
//!
//! - **scan**: the event read by serde_json with nothing kept
//!   ([`serde::de::IgnoredAny`]): every byte looked at once, every string
//!   checked for escapes and UTF-8, no value built. A reader that keeps the
//!   fields it needs does this and more; decoding Kinesis base64 is left
//!   out too.
//! - **sign**: SigV4 for each captured request body: the body's SHA-256,
//!   the canonical request of `POST /` with its signed headers and its
//!   SHA-256, and the HMAC of the string to sign with the day's key kept
//!   (derived once, as the direct client keeps it).
//!
//! Writing the request JSON, checking each message against SQS's rules,
//! packing, the outcomes and the allocations are not counted: a forwarder
//! does them too, so the sum (HTTP floor + scan + sign) is a lower bound
//! for any forwarder reading this event with serde_json, not an estimate.

use std::time::{Duration, SystemTime};

use aws_sigv4::sign::v4::{calculate_signature, generate_signing_key};
use bytes::Bytes;
use serde::Serialize;
use sha2::{Digest, Sha256};

use bench_support::cpu;

/// The least work's figures, per round.
#[derive(Debug, Serialize)]
pub struct LeastReport {
    /// Bytes of the event.
    pub event_bytes: usize,
    /// Requests signed per round.
    pub requests: usize,
    /// Bytes of request bodies per round.
    pub request_bytes: usize,
    /// Each round's CPU time scanning the event once, in milliseconds (the
    /// mean of as many scans as fill [`MEASURED_MS`]).
    pub rounds_scan_cpu_ms: Vec<f64>,
    /// Each round's CPU time signing every request once, in milliseconds.
    pub rounds_sign_cpu_ms: Vec<f64>,
}

const REGION: &str = "us-east-1";
const HOST: &str = "sqs.us-east-1.amazonaws.com";
const SCOPE_TAIL: &str = "us-east-1/sqs/aws4_request";

/// The SigV4 signing key of `at`'s day for `service` in `region`, as the
/// direct client derives and keeps it (aws-sigv4's own derivation).
fn day_key(secret: &str, at: SystemTime, region: &str, service: &str) -> Vec<u8> {
    generate_signing_key(secret, at, region, service)
        .as_ref()
        .to_vec()
}

/// The `Authorization` header's signature of one `SendMessageBatch`
/// request with `body`, at `amz_date` (`YYYYMMDDTHHMMSSZ`).
fn signature(key: &[u8], amz_date: &str, target: &str, body: &[u8]) -> String {
    let payload = hex::encode(Sha256::digest(body));
    let canonical = format!(
        "POST\n/\n\ncontent-length:{}\ncontent-type:application/x-amz-json-1.0\nhost:{HOST}\n\
         x-amz-date:{amz_date}\nx-amz-target:{target}\n\n\
         content-length;content-type;host;x-amz-date;x-amz-target\n{payload}",
        body.len()
    );
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{}/{SCOPE_TAIL}\n{}",
        amz_date.get(..8).unwrap_or(amz_date),
        hex::encode(Sha256::digest(canonical.as_bytes()))
    );
    calculate_signature(key, string_to_sign.as_bytes())
}

/// The signature's date and time (any one costs the same work), as text
/// and as the time the signing key is derived for.
const AMZ_DATE: &str = "20261201T120000Z";
const AMZ_DATE_SECS: u64 = 1_796_126_400;

/// CPU time the process spends on one `work`, in milliseconds. The
/// process's CPU clock moves by the scheduler's tick, so `work` is repeated
/// until at least [`MEASURED_MS`] have passed, and the mean is returned.
fn cpu_ms_of(mut work: impl FnMut() -> Result<(), String>) -> Result<f64, String> {
    let before = cpu::self_cpu_ns().ok_or("no CPU time for this process")?;
    let mut times = 0u32;
    loop {
        work()?;
        times += 1;
        let spent = cpu::self_cpu_ns()
            .ok_or("no CPU time for this process")?
            .saturating_sub(before);
        if spent as f64 >= MEASURED_MS * 1e6 {
            return Ok(spent as f64 / 1e6 / f64::from(times));
        }
    }
}

/// How much CPU each measurement spends at least (see [`cpu_ms_of`]).
const MEASURED_MS: f64 = 200.0;

/// Scan `event` and sign `bodies`, `rounds` times each.
pub fn run(event: &[u8], bodies: &[(String, Bytes)], rounds: usize) -> Result<LeastReport, String> {
    if bodies.is_empty() {
        return Err("no request bodies to sign".into());
    }
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(AMZ_DATE_SECS);
    let key = day_key("bench-secret-not-a-real-one", at, REGION, "sqs");
    let mut report = LeastReport {
        event_bytes: event.len(),
        requests: bodies.len(),
        request_bytes: bodies.iter().map(|(_, b)| b.len()).sum(),
        rounds_scan_cpu_ms: Vec::new(),
        rounds_sign_cpu_ms: Vec::new(),
    };
    for _ in 0..rounds.max(1) {
        report.rounds_scan_cpu_ms.push(cpu_ms_of(|| {
            serde_json::from_slice::<serde::de::IgnoredAny>(event)
                .map(drop)
                .map_err(|e| format!("the event is not JSON: {e}"))
        })?);
        report.rounds_sign_cpu_ms.push(cpu_ms_of(|| {
            let mut kept = 0usize;
            for (target, body) in bodies {
                kept += signature(&key, AMZ_DATE, target, body).len();
            }
            // The signatures are used, so none of the work is optimised away.
            if kept == 0 {
                return Err("no signature".into());
            }
            Ok(())
        })?);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key is derived for the day, region and service given: AWS's
    /// published example ("Derive a signing key for Signature Version 4":
    /// the example secret, 20120215, us-east-1, iam); the signature's date
    /// constants agree; and the signature covers the body.
    #[test]
    fn the_day_key_is_sigv4s_and_the_body_is_signed() {
        let key = day_key(
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_329_264_000),
            "us-east-1",
            "iam",
        );
        assert_eq!(
            hex::encode(key),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d"
        );
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(AMZ_DATE_SECS);
        let t = time::OffsetDateTime::from_unix_timestamp(AMZ_DATE_SECS as i64).expect("a time");
        let text = format!(
            "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        );
        assert_eq!(text, AMZ_DATE, "AMZ_DATE_SECS is AMZ_DATE");
        let key = day_key("secret", at, REGION, "sqs");
        let a = signature(&key, AMZ_DATE, "AmazonSQS.SendMessageBatch", b"{}");
        let b = signature(&key, AMZ_DATE, "AmazonSQS.SendMessageBatch", b"{ }");
        assert_eq!(a.len(), 64);
        assert_ne!(a, b, "the body is signed");
    }

    #[test]
    fn a_round_scans_and_signs() {
        let bodies = vec![(
            "AmazonSQS.SendMessageBatch".to_owned(),
            Bytes::from_static(b"{\"Entries\":[]}"),
        )];
        let r = run(br#"{"Records":[{"a":"b"}]}"#, &bodies, 2).expect("runs");
        assert_eq!(r.rounds_scan_cpu_ms.len(), 2);
        assert_eq!(r.rounds_sign_cpu_ms.len(), 2);
        assert_eq!(r.requests, 1);
        assert!(run(b"{not json", &bodies, 1).is_err());
        assert!(run(b"{}", &[], 1).is_err());
    }
}
