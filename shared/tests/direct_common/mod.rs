//! What the direct client's test binaries share (`direct_client.rs`,
//! `direct_signature.rs`, `direct_clock_skew.rs`, `direct_tls.rs`,
//! `direct_proxy.rs`, ...): the SigV4 verifier ([`sigv4`]), the AWS settings
//! of a fake endpoint (and, in `tls`, a stand-in endpoint and its
//! certificates) and a batch whose entries carry what the wire format must
//! carry (escapes, control characters, emoji, the three attribute types,
//! FIFO group and deduplication ids).

#![allow(dead_code)] // each test binary uses its part

pub mod sigv4;
pub mod tls;

use std::sync::Arc;

use aws_config::SdkConfig;
use aws_credential_types::Credentials;
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_sdk_sqs::config::{BehaviorVersion, Region};
use sqs_forwarder::call::transport::BatchItem;
use sqs_forwarder::message::encode::Entry;
use sqs_forwarder::{Attribute, SqsTransport};

/// The access key the fake endpoint's requests are signed with.
pub const ACCESS_KEY: &str = "AKIDTEST";
/// The secret: AWS's documentation example key, never a real one.
pub const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
/// The region the requests are signed for.
pub const REGION: &str = "eu-west-1";

/// AWS settings with these credentials (and `session_token`), every call
/// to `endpoint`.
pub fn sdk(endpoint: &str, session_token: Option<&str>) -> SdkConfig {
    SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            ACCESS_KEY,
            SECRET,
            session_token.map(str::to_owned),
            None,
            "test",
        )))
        .endpoint_url(endpoint)
        .build()
}

/// Two FIFO entries, ids "0" and "1".
pub fn items() -> Vec<BatchItem> {
    let entry = |id: &str, body: &str, attributes: Vec<Attribute>, group: &str| BatchItem {
        id: id.into(),
        entry: Arc::new(Entry {
            body: body.into(),
            attributes,
            group_id: Some(group.into()),
            deduplication_id: Some(format!("dedup-{id}")),
            delay_seconds: None,
            encoded: false,
            size: body.len(),
        }),
    };
    vec![
        entry(
            "0",
            "héllo \"quoted\" \\ 🌍 \u{7f} \t tab",
            vec![
                Attribute::string("s", "v w  x"),
                Attribute::number("n", 7),
                Attribute::binary("b", vec![0u8, 1, 254, 255]),
            ],
            "g/1 + space",
        ),
        entry("1", "plain", vec![], "g2"),
    ]
}

/// The same queue through the direct client and through aws-sdk-sqs, both
/// built from `sdk` as the functions build them: (direct, SDK).
pub fn both_clients(sdk: &SdkConfig, queue_url: &str) -> (SqsTransport, SqsTransport) {
    let client = sqs_forwarder::setup::client::sqs_client(sdk);
    let direct = SqsTransport::direct(
        sqs_forwarder::call::direct::DirectClient::new(sdk, &client).expect("direct client"),
        queue_url,
    );
    (direct, SqsTransport::new(client, queue_url))
}
