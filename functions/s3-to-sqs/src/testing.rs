//! What the unit tests share: a fake SQS that fails chosen entries, the
//! entries it accepted, a forwarder over it, and an S3 client that is never
//! called.

use sqs_forwarder::message::encode::{EncodeRules, Entry};
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Forwarder, SendSettings};

/// The workspace's fake SQS: accepts every entry except those `fail` picks
/// (code, sender fault), and keeps what it accepted.
pub(crate) fn failing(
    fail: impl Fn(&Entry) -> Option<(&'static str, bool)> + Send + Sync + 'static,
) -> FakeSqs {
    FakeSqs::new().answer(move |a| {
        fail(a.entry).map(|(code, sender_fault)| {
            Reply::fail(code, sender_fault).with_message(format!("fake {code}"))
        })
    })
}

/// The entries the fake accepted.
pub(crate) fn accepted_by(fake: &FakeSqs) -> Vec<Entry> {
    fake.accepted().iter().map(|s| (*s.entry).clone()).collect()
}

pub(crate) fn forwarder(fake: FakeSqs, fifo: bool) -> Forwarder<FakeSqs> {
    let settings = SendSettings {
        retry: sqs_forwarder::RetryPolicy {
            max_attempts: 2,
            base_delay: std::time::Duration::from_millis(1),
            max_delay: std::time::Duration::from_millis(2),
        },
        ..SendSettings::default()
    };
    Forwarder::new(
        fake,
        settings,
        EncodeRules {
            fifo,
            content_based_deduplication: fifo.then_some(false),
            ..EncodeRules::default()
        },
    )
}

/// An S3 client for handlers whose tests read no object.
pub(crate) fn offline_s3() -> aws_sdk_s3::Client {
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}
