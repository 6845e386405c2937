//! Test helpers shared by the test binaries of this folder (`mod common;`).

#![allow(dead_code)]

use sqs_forwarder::message::limits::Limits;
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{OversizePolicy, SendSettings};

/// Accepts every entry except bodies starting with "bad", which fail for good.
pub fn endpoint() -> FakeSqs {
    FakeSqs::new().fail_where(
        |a| a.body().starts_with("bad"),
        Reply::INVALID.with_message("no"),
    )
}

/// The bodies of every entry the endpoint answered, in the order answered.
pub fn bodies(endpoint: &FakeSqs) -> Vec<String> {
    endpoint.seen().iter().map(|s| s.body.clone()).collect()
}

/// 10 entries, 1 KiB messages, 1 MiB calls, and the given oversize policy.
pub fn settings(oversize: OversizePolicy) -> SendSettings {
    SendSettings {
        limits: Limits {
            max_entries: 10,
            max_message_bytes: 1024,
            max_request_bytes: 1_048_576,
        },
        oversize,
        ..SendSettings::default()
    }
}
