//! End-to-end with `SQS_CLIENT=direct`: the direct `SendMessageBatch`
//! client against the local SQS endpoint (moto speaks the AWS JSON 1.0
//! protocol). Standard and FIFO batches with string, number and binary
//! attributes are read back intact, FIFO group order and deduplication hold,
//! and a missing queue gives the same error code as through the SDK.

use std::collections::HashMap;

use aws_config::SdkConfig;
use aws_credential_types::Credentials;
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_sdk_sqs::config::{BehaviorVersion, Region};
use forwarder_e2e::{attributes, client, create_queue, drain, endpoint};
use sqs_forwarder::call::transport::{BatchItem, CallError, Transport};
use sqs_forwarder::{Attribute, Config, Forwarder, Message, Outcome, SqsTransport, Summary};

fn sdk() -> SdkConfig {
    SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            "test", "test", None, None, "tests",
        )))
        .endpoint_url(endpoint())
        .build()
}

async fn connect(url: &str, group_ids: sqs_forwarder::GroupIds) -> Forwarder<SqsTransport> {
    let config = Config::from_lookup(|k| match k {
        "QUEUE_URL" => Some(url.to_owned()),
        "SQS_CLIENT" => Some("direct".to_owned()),
        _ => None,
    })
    .expect("config");
    let fwd = sqs_forwarder::setup::startup::connect_sdk(&sdk(), &config, group_ids)
        .await
        .expect("connect");
    assert!(fwd.transport().is_direct());
    fwd
}

#[tokio::test(flavor = "multi_thread")]
async fn standard_batches_with_attributes_come_back_intact() {
    let sqs = client();
    let url = create_queue(&sqs, "e2e-direct", &[]).await;
    let fwd = connect(&url, sqs_forwarder::GroupIds::FromConfig).await;
    let mut messages = Vec::new();
    for i in 0..23usize {
        messages.push(
            Message::new(
                format!("{{\"n\":{i},\"text\":\"héllo \\\"wörld\\\" € 🌍\"}}"),
                i,
            )
            .attribute(Attribute::string("kind", "grüße \"q\""))
            .attribute(Attribute::number("n", i))
            .attribute(Attribute::binary("raw", vec![0u8, 159, 146, 150, i as u8])),
        );
    }
    messages.push(Message::new(vec![0xF3, 0x89, 0x9A, 0xC2, 0x00, 0xFF], 23));
    let outcomes = fwd.send_all(messages, None).await;
    assert_eq!(Summary::of(&outcomes).sent, 24, "{outcomes:?}");
    let ids: HashMap<String, usize> = outcomes
        .iter()
        .map(|o| match &o.outcome {
            Outcome::Sent { message_id, .. } => (message_id.clone(), o.position),
            other => panic!("not sent: {other:?}"),
        })
        .collect();
    let received = drain(&sqs, &url, 24).await;
    assert_eq!(received.len(), 24);
    for m in &received {
        let pos = ids[m.message_id().expect("id")];
        let attrs = attributes(m);
        if pos == 23 {
            assert_eq!(m.body(), Some("84mawgD/"));
            assert_eq!(
                attrs["sqs-forwarder.encoding"],
                ("String".to_owned(), b"base64".to_vec())
            );
            continue;
        }
        assert_eq!(
            m.body(),
            Some(format!("{{\"n\":{pos},\"text\":\"héllo \\\"wörld\\\" € 🌍\"}}").as_str())
        );
        assert_eq!(
            attrs["kind"],
            ("String".to_owned(), "grüße \"q\"".as_bytes().to_vec())
        );
        assert_eq!(
            attrs["n"],
            ("Number".to_owned(), pos.to_string().into_bytes())
        );
        assert_eq!(
            attrs["raw"],
            ("Binary".to_owned(), vec![0u8, 159, 146, 150, pos as u8])
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn fifo_batches_keep_group_order_and_deduplicate() {
    let sqs = client();
    let url = create_queue(&sqs, "e2e-direct.fifo", &[]).await;
    let fwd = connect(&url, sqs_forwarder::GroupIds::FromSource).await;
    let make = || {
        (0..30usize)
            .map(|i| {
                Message::new(format!("event {i}"), i)
                    .group_id(format!("g{}", i % 3))
                    .deduplication_id(format!("d{i}"))
                    .attribute(Attribute::string("s", format!("v{i}")))
                    .attribute(Attribute::binary("b", vec![i as u8, 0xff]))
            })
            .collect::<Vec<_>>()
    };
    let outcomes = fwd.send_all(make(), None).await;
    assert_eq!(Summary::of(&outcomes).sent, 30, "{outcomes:?}");
    assert!(outcomes.iter().all(|o| matches!(
        &o.outcome,
        Outcome::Sent {
            sequence_number: Some(_),
            ..
        }
    )));
    let again = fwd.send_all(make(), None).await;
    assert_eq!(Summary::of(&again).sent, 30);
    let received = drain(&sqs, &url, 30).await;
    assert_eq!(received.len(), 30, "the resend was deduplicated");
    let mut per_group: HashMap<String, Vec<usize>> = HashMap::new();
    for m in &received {
        let n: usize = m
            .body()
            .expect("body")
            .trim_start_matches("event ")
            .parse()
            .expect("n");
        let attrs = attributes(m);
        assert_eq!(
            attrs["s"],
            ("String".to_owned(), format!("v{n}").into_bytes())
        );
        assert_eq!(attrs["b"], ("Binary".to_owned(), vec![n as u8, 0xff]));
        per_group.entry(format!("g{}", n % 3)).or_default().push(n);
    }
    for (g, ns) in per_group {
        let mut sorted = ns.clone();
        sorted.sort_unstable();
        assert_eq!(ns, sorted, "group {g} out of order");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_queue_fails_as_through_the_sdk() {
    let sdk = sdk();
    let sqs = sqs_forwarder::setup::client::sqs_client(&sdk);
    let url = format!("{}/123456789012/no-such-queue-direct", endpoint());
    let direct = SqsTransport::direct(
        sqs_forwarder::call::direct::DirectClient::new(&sdk, &sqs).expect("direct"),
        &url,
    );
    let via_sdk = SqsTransport::new(sqs, &url);
    let items = vec![BatchItem {
        id: "0".into(),
        entry: std::sync::Arc::new(sqs_forwarder::Entry {
            body: "x".into(),
            attributes: vec![],
            group_id: None,
            deduplication_id: None,
            delay_seconds: None,
            encoded: false,
            size: 1,
        }),
    }];
    let (a, b) = (
        via_sdk.send_batch(&items).await,
        direct.send_batch(&items).await,
    );
    let failure = |r: Result<_, CallError>| match r {
        Err(CallError::Failed(f)) => (f.code, f.retryable),
        other => panic!("{other:?}"),
    };
    let (sdk_code, direct_code) = (failure(a), failure(b));
    assert_eq!(direct_code, sdk_code);
    assert!(!direct_code.1, "{direct_code:?}");
}
