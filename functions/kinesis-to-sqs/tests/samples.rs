//! The sample events in `events/kinesis-*.json`, forwarded through a fake
//! SQS: what arrives, and what the answer reports.

mod common;

use base64::Engine as _;
use common::{accepting, forwarder, forwarder_with, sample, send_settings};
use kinesis_to_sqs::checkpoint::reported;
use kinesis_to_sqs::records::{attribute, sqs_id};
use kinesis_to_sqs::settings::{BodyFormat, PermanentFailures, Settings};
use kinesis_to_sqs::{Handler, kpl};
use serde_json::Value;
use sqs_forwarder::{OversizePolicy, SendSettings};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

#[test]
fn every_sample_event_parses() {
    let dir = format!("{}/../../events", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("events/")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("kinesis-") && n.ends_with(".json"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            "kinesis-kpl.json",
            "kinesis-orders.json",
            "kinesis-oversize.json",
            "kinesis-small.json"
        ]
    );
    for name in names {
        let event = sample(&name);
        assert!(!event.records.is_empty(), "{name}");
        for r in &event.records {
            assert!(!r.kinesis.sequence_number.is_empty(), "{name}");
            assert!(
                r.event_id.is_some() && r.event_source_arn.is_some(),
                "{name}"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_orders_sample_arrives_whole_without_rules() {
    let event = sample("kinesis-orders.json");
    let fake = accepting();
    let response = Handler::new(Settings::default(), forwarder(&fake, false))
        .handle(event, None)
        .await
        .expect("an answer");
    assert!(response.batch_item_failures.is_empty());
    let seen = fake.accepted();
    assert_eq!(seen.len(), 8);
    assert!(seen.iter().all(|s| s.body.starts_with("{\"type\":")));
}

#[tokio::test(start_paused = true)]
async fn the_small_sample_arrives_whole() {
    let event = sample("kinesis-small.json");
    let sequence_numbers: Vec<String> = event
        .records
        .iter()
        .map(|r| r.kinesis.sequence_number.clone())
        .collect();
    let binary = event.records[2].kinesis.data.0.clone();
    let fake = accepting();
    let response = Handler::new(Settings::default(), forwarder(&fake, false))
        .handle(event, None)
        .await
        .expect("an answer");
    assert!(response.batch_item_failures.is_empty());

    let mut seen = fake.accepted();
    seen.sort_by_key(|s| s.string(attribute::SEQUENCE_NUMBER).map(str::to_owned));
    assert_eq!(seen.len(), 4);
    assert!(seen[0].body.starts_with("{\"type\":\"order.created\""));
    assert_eq!(seen[1].body, "Grüße aus Köln 🌍 – plain text, not JSON");
    // Binary data: base64 and the shared crate's marker attribute.
    assert_eq!(B64.decode(&seen[2].body).expect("base64"), binary);
    assert_eq!(seen[2].string("sqs-forwarder.encoding"), Some("base64"));
    assert_eq!(seen[0].string("sqs-forwarder.encoding"), None);
    for (s, seq) in seen.iter().zip(&sequence_numbers) {
        assert_eq!(s.string(attribute::SEQUENCE_NUMBER), Some(seq.as_str()));
        assert_eq!(s.string(attribute::SHARD_ID), Some("shardId-000000000000"));
        assert_eq!(
            s.string(attribute::STREAM_ARN),
            Some("arn:aws:kinesis:eu-west-1:123456789012:stream/orders")
        );
        assert!(s.string(attribute::PARTITION_KEY).is_some());
    }
    assert_eq!(
        seen[0].string(attribute::ARRIVAL_TIMESTAMP),
        Some("1764410000")
    );
    assert_eq!(
        seen[3].string(attribute::ARRIVAL_TIMESTAMP),
        Some("1764410001")
    );
}

/// The user records `aws_kinesis_agg` put into each record of
/// `events/kinesis-kpl.json` (written by the same generator script).
struct Expected {
    sequence_number: String,
    aggregated: bool,
    users: Vec<(String, Option<String>, Vec<u8>)>,
}

fn expected() -> Vec<Expected> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kpl-expected.json");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("JSON");
    v.as_array()
        .expect("a list")
        .iter()
        .map(|r| Expected {
            sequence_number: r["sequenceNumber"].as_str().expect("seq").to_owned(),
            aggregated: r["aggregated"].as_bool().expect("bool"),
            users: r["userRecords"]
                .as_array()
                .expect("user records")
                .iter()
                .map(|u| {
                    (
                        u["partitionKey"].as_str().expect("pk").to_owned(),
                        u["explicitHashKey"].as_str().map(str::to_owned),
                        B64.decode(u["data"].as_str().expect("data"))
                            .expect("base64"),
                    )
                })
                .collect(),
        })
        .collect()
}

#[test]
fn the_kpl_fixture_deaggregates_to_what_the_python_encoder_was_given() {
    let event = sample("kinesis-kpl.json");
    let expected = expected();
    assert_eq!(event.records.len(), expected.len());
    let mut aggregates = 0;
    for (record, want) in event.records.iter().zip(&expected) {
        assert_eq!(record.kinesis.sequence_number, want.sequence_number);
        let data = &record.kinesis.data.0;
        assert_eq!(kpl::is_aggregated(data), want.aggregated);
        if !want.aggregated {
            continue;
        }
        aggregates += 1;
        let got: Vec<(String, Option<String>, Vec<u8>)> = kpl::deaggregate(data)
            .expect("a valid aggregate")
            .into_iter()
            .map(|u| (u.partition_key, u.explicit_hash_key, u.data))
            .collect();
        assert_eq!(got, want.users);
    }
    assert_eq!(aggregates, 3);
}

#[tokio::test(start_paused = true)]
async fn the_kpl_sample_arrives_as_user_records_with_their_own_keys_and_ids() {
    let event = sample("kinesis-kpl.json");
    let expected = expected();
    let fake = accepting();
    let response = Handler::new(Settings::default(), forwarder(&fake, true))
        .handle(event, None)
        .await
        .expect("an answer");
    assert!(response.batch_item_failures.is_empty());

    let seen = fake.accepted();
    let total: usize = expected.iter().map(|e| e.users.len()).sum();
    assert_eq!(seen.len(), total);
    for want in &expected {
        for (sub, (pk, _, data)) in want.users.iter().enumerate() {
            let dedup = if want.aggregated {
                format!("shardId-000000000002:{}:{sub}", want.sequence_number)
            } else {
                format!("shardId-000000000002:{}", want.sequence_number)
            };
            let s = seen
                .iter()
                .find(|s| s.deduplication_id.as_deref() == Some(dedup.as_str()))
                .unwrap_or_else(|| panic!("{dedup} was not sent"));
            let body = if s.string("sqs-forwarder.encoding") == Some("base64") {
                B64.decode(&s.body).expect("base64")
            } else {
                s.body.as_bytes().to_vec()
            };
            assert_eq!(&body, data, "{dedup}");
            // Group ids are printable ASCII: "sensor-α" becomes its md5- form.
            assert_eq!(s.group_id.as_deref(), Some(&*sqs_id(pk)));
            assert_eq!(s.string(attribute::PARTITION_KEY), Some(pk.as_str()));
            assert_eq!(
                s.string(attribute::SEQUENCE_NUMBER),
                Some(want.sequence_number.as_str())
            );
            let sub_attr = s.string(attribute::SUB_SEQUENCE_NUMBER);
            if want.aggregated {
                assert_eq!(sub_attr, Some(sub.to_string().as_str()));
            } else {
                assert_eq!(sub_attr, None);
            }
        }
    }
    // Order within each group is the order of the user records.
    let mut by_group: std::collections::HashMap<String, Vec<String>> = Default::default();
    for s in &seen {
        by_group
            .entry(s.group_id.clone().expect("group"))
            .or_default()
            .push(s.deduplication_id.clone().expect("dedup"));
    }
    let mut want_by_group: std::collections::HashMap<String, Vec<String>> = Default::default();
    for want in &expected {
        for (sub, (pk, _, _)) in want.users.iter().enumerate() {
            want_by_group
                .entry(sqs_id(pk).into_owned())
                .or_default()
                .push(if want.aggregated {
                    format!("shardId-000000000002:{}:{sub}", want.sequence_number)
                } else {
                    format!("shardId-000000000002:{}", want.sequence_number)
                });
        }
    }
    assert_eq!(by_group, want_by_group);
}

#[tokio::test(start_paused = true)]
async fn the_kpl_sample_in_an_envelope_keeps_the_explicit_hash_key() {
    let event = sample("kinesis-kpl.json");
    let fake = accepting();
    let settings = Settings {
        body_format: BodyFormat::Envelope,
        ..Settings::default()
    };
    let response = Handler::new(settings, forwarder(&fake, false))
        .handle(event, None)
        .await
        .expect("an answer");
    assert!(response.batch_item_failures.is_empty());
    let envelopes: Vec<Value> = fake
        .accepted()
        .iter()
        .map(|s| serde_json::from_str(&s.body).expect("an envelope is JSON"))
        .collect();
    let beta: Vec<&Value> = envelopes
        .iter()
        .filter(|e| e["partitionKey"] == "sensor-β")
        .collect();
    assert_eq!(beta.len(), 1);
    assert_eq!(
        beta[0]["explicitHashKey"],
        "170141183460469231731687303715884105728"
    );
    assert_eq!(beta[0]["subSequenceNumber"], 1);
    assert_eq!(beta[0]["data"], "temperature=21.5");
    assert_eq!(beta[0]["dataEncoding"], "text");
    assert_eq!(beta[0]["approximateArrivalTimestamp"], 1_764_410_002);
}

async fn oversize_answer(
    settings: &Settings,
    send: SendSettings,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let event = sample("kinesis-oversize.json");
    let seqs = event
        .records
        .iter()
        .map(|r| r.kinesis.sequence_number.clone())
        .collect();
    let fake = accepting();
    let response = Handler::new(*settings, forwarder_with(&fake, send, false))
        .handle(event, None)
        .await
        .expect("an answer");
    let reported = reported(&response).into_iter().map(str::to_owned).collect();
    (seqs, reported, fake.accepted_bodies())
}

#[tokio::test(start_paused = true)]
async fn the_oversize_record_is_reported_by_default() {
    let (seqs, reported, accepted) = oversize_answer(&Settings::default(), send_settings()).await;
    assert_eq!(reported, vec![seqs[1].clone()]);
    let mut accepted = accepted;
    accepted.sort();
    assert_eq!(
        accepted,
        vec![
            "{\"report\":\"small-after\"}",
            "{\"report\":\"small-before\"}"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn the_oversize_record_is_skipped_when_asked() {
    let skip = Settings {
        permanent_failures: PermanentFailures::Skip,
        ..Settings::default()
    };
    let (_, reported, accepted) = oversize_answer(&skip, send_settings()).await;
    assert!(reported.is_empty());
    assert_eq!(accepted.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_oversize_record_is_dropped_under_the_drop_policy() {
    let drop = SendSettings {
        oversize: OversizePolicy::Drop,
        ..send_settings()
    };
    let (_, reported, accepted) = oversize_answer(&Settings::default(), drop).await;
    assert!(reported.is_empty());
    assert_eq!(accepted.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_ten_mib_record_goes_through_the_oversize_policy() {
    let big = vec![b'x'; 10 * 1024 * 1024];
    let event = common::event(vec![
        common::record(0, "k", b"before"),
        common::record(1, "k", &big),
        common::record(2, "k", b"after"),
    ]);
    drop(big);
    let fake = accepting();
    let response = Handler::new(Settings::default(), forwarder(&fake, false))
        .handle(event, None)
        .await
        .expect("an answer");
    assert_eq!(reported(&response), vec![common::seq(1)]);
    let mut accepted = fake.accepted_bodies();
    accepted.sort();
    assert_eq!(accepted, vec!["after", "before"]);
}
