//! End-to-end: the `replay` binary with the functions' routing rules,
//! against the local SQS, Kinesis and S3 (moto). A routed Kinesis range and
//! a routed S3 event go to three target queues (the default, a FIFO queue,
//! a fair-queue one) exactly as kinesis-to-sqs and s3-to-sqs send the same
//! records with the same rules (compared message by message: body,
//! attributes, group and deduplication ids); a record the filter drops is
//! not sent; a record the rules cannot shape is reported with why, and its
//! entry kept; a dry run says per target what it would send and sends
//! nothing; a second run sends nothing new. Once without and once with
//! aggregation (`AGGREGATE=true`), which the replay applies as the
//! functions do.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_kinesis::types::ShardIteratorType;
use aws_sdk_sqs::types::{Message, MessageSystemAttributeName, QueueAttributeName};
use base64::Engine as _;
use common::{SHARD, batch_info, depth, kinesis, put, replay, send_entry, stream, unique};
use forwarder_e2e::{attributes, client, connect, create_queue, drain, sdk_config};
use kinesis_to_sqs::event::KinesisEvent;
use serde_json::{Value, json};
use sqs_forwarder::Config;
use sqs_forwarder::GroupIds;
use sqs_forwarder::route::Routes;
use sqs_forwarder::setup::startup::connect_router;

mod common;

/// One set of target queues: the default (standard), `orders` (FIFO, no
/// content-based deduplication) and `tenants` (standard: the rules' group
/// ids make it a fair queue).
struct Targets {
    default: String,
    orders: String,
    tenants: String,
}

impl Targets {
    async fn create(tag: &str) -> Targets {
        let sqs = client();
        Targets {
            default: create_queue(&sqs, &format!("replay-routed-{tag}-default"), &[]).await,
            orders: create_queue(
                &sqs,
                &format!("replay-routed-{tag}-orders.fifo"),
                &[(QueueAttributeName::ContentBasedDeduplication, "false")],
            )
            .await,
            tenants: create_queue(&sqs, &format!("replay-routed-{tag}-tenants"), &[]).await,
        }
    }

    fn all(&self) -> [(&'static str, &str); 3] {
        [
            ("default", &self.default),
            ("orders", &self.orders),
            ("tenants", &self.tenants),
        ]
    }

    /// kinesis-to-sqs's rules over these queues: records without a type
    /// filtered out, orders to `orders`, records of a tenant to `tenants`,
    /// the rest to the default; the body is the record's payload, the
    /// tenant an attribute and the group id.
    fn kinesis_rules(&self) -> String {
        json!({
            "targets": {"orders": self.orders, "tenants": self.tenants},
            "filter": [{"field": "/type", "exists": true}],
            "routes": [
                {"when": {"field": "/type", "equals": "order"}, "target": "orders"},
                {"when": {"field": "/tenant", "exists": true}, "target": "tenants"}
            ],
            "body": "/payload",
            "attributes": {"tenant": {"field": "/tenant"}},
            "group_id": {"field": "/tenant"}
        })
        .to_string()
    }

    /// s3-to-sqs's: only created objects; `orders/` keys to `orders`,
    /// `tenants/` keys to `tenants`; the bucket an attribute, the key the
    /// group id.
    fn s3_rules(&self) -> String {
        json!({
            "targets": {"orders": self.orders, "tenants": self.tenants},
            "filter": [{"key": "event_name", "prefix": "ObjectCreated"}],
            "routes": [
                {"when": {"key": "object_key", "prefix": "orders/"}, "target": "orders"},
                {"when": {"key": "object_key", "prefix": "tenants/"}, "target": "tenants"}
            ],
            "attributes": {"bucket": {"key": "bucket"}},
            "group_id": {"key": "object_key"}
        })
        .to_string()
    }
}

/// The stream's records, in order (partition key, data): two orders, two
/// tenants' events (one tenant with a space: its group id is hashed), two
/// others, one without a type and one not JSON (both filtered out); then,
/// alone in a range of its own, one whose payload is missing (it cannot be
/// shaped).
fn records() -> Vec<(String, Vec<u8>)> {
    let json = |pk: &str, v: Value| (pk.to_owned(), v.to_string().into_bytes());
    vec![
        json(
            "p-a",
            json!({"type": "order", "tenant": "t1", "payload": {"id": 0}}),
        ),
        json(
            "p-b",
            json!({"type": "event", "tenant": "t2", "payload": "e1"}),
        ),
        json("p-c", json!({"type": "misc", "payload": "m"})),
        json("p-d", json!({"payload": "not sent: no type"})),
        json(
            "p-a",
            json!({"type": "order", "tenant": "t1", "payload": {"id": 4}}),
        ),
        json(
            "p-e",
            json!({"type": "event", "tenant": "acme corp", "payload": "e5"}),
        ),
        ("p-f".to_owned(), b"not json: filtered out".to_vec()),
        json(
            "p-c",
            json!({"type": "misc", "payload": {"nested": [1, 2]}}),
        ),
        json("p-g", json!({"type": "misc", "tenant": "t3"})),
    ]
}

/// The S3 notification the function failed on: three created objects (one
/// per target) and a deleted one (filtered out).
fn s3_event() -> Value {
    let record = |name: &str, key: &str, sequencer: &str| {
        json!({
            "eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
            "eventTime": "2026-11-30T10:15:58.123Z", "eventName": name,
            "userIdentity": {"principalId": "AWS:AIDAEXAMPLE"},
            "requestParameters": {"sourceIPAddress": "198.51.100.7"},
            "responseElements": {"x-amz-request-id": "C3D13FE58DE4C810", "x-amz-id-2": "FMyUVURIY8"},
            "s3": {
                "s3SchemaVersion": "1.0", "configurationId": "sqs-forwarder-objects",
                "bucket": {"name": "exports", "ownerIdentity": {"principalId": "A3NL1KOZZKExample"},
                           "arn": "arn:aws:s3:::exports"},
                "object": {"key": key, "size": 1024, "eTag": "d41d8cd98f00b204e9800998ecf8427e",
                           "sequencer": sequencer}
            }
        })
    };
    json!({"Records": [
        record("ObjectCreated:Put", "orders/2026-11-30/batch-7.json", "0065A8B2C1D0E1F2A3"),
        record("ObjectCreated:Put", "tenants/acme/day.json", "0065A8B2C1D0E1F2A4"),
        record("ObjectCreated:Copy", "misc/readme.txt", "0065A8B2C1D0E1F2A5"),
        record("ObjectRemoved:Delete", "orders/2026-11-29/old.json", "0065A8B2C1D0E1F2A6"),
    ]})
}

/// The asynchronous invocation record Lambda writes for `event`.
fn invocation_record(event: &Value) -> String {
    json!({
        "version": "1.0",
        "timestamp": "2026-11-30T10:16:05.568Z",
        "requestContext": {
            "requestId": "e4b46cbf-b738-4a3f-8880-a18cdf61200e",
            "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:s3-to-sqs:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 3
        },
        "requestPayload": event,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"}
    })
    .to_string()
}

/// Records `from..to` of the one-shard stream as Lambda delivers them.
async fn lambda_event(
    k: &aws_sdk_kinesis::Client,
    arn: &str,
    from: usize,
    to: usize,
) -> KinesisEvent {
    let it = k
        .get_shard_iterator()
        .stream_arn(arn)
        .shard_id(SHARD)
        .shard_iterator_type(ShardIteratorType::TrimHorizon)
        .send()
        .await
        .expect("iterator");
    let out = k
        .get_records()
        .stream_arn(arn)
        .shard_iterator(it.shard_iterator().expect("iterator"))
        .send()
        .await
        .expect("records");
    let b64 = base64::engine::general_purpose::STANDARD;
    let records: Vec<Value> = out.records()[from..to]
        .iter()
        .map(|r| {
            let t = r.approximate_arrival_timestamp().expect("arrival");
            json!({
                "kinesis": {
                    "kinesisSchemaVersion": "1.0",
                    "partitionKey": r.partition_key(),
                    "sequenceNumber": r.sequence_number(),
                    "data": b64.encode(r.data().as_ref()),
                    "approximateArrivalTimestamp": t.secs() as f64,
                },
                "eventSource": "aws:kinesis",
                "eventVersion": "1.0",
                "eventID": format!("{SHARD}:{}", r.sequence_number()),
                "eventName": "aws:kinesis:record",
                "invokeIdentityArn": "arn:aws:iam::123456789012:role/kinesis-to-sqs",
                "awsRegion": "us-east-1",
                "eventSourceARN": arn,
            })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).expect("a Kinesis event")
}

fn config(vars: &[(&str, &str)]) -> Config {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|k| map.get(k).cloned()).expect("valid test configuration")
}

/// What the functions send for the same records with the same rules (into
/// `to`): kinesis-to-sqs's handler on records 0..8, s3-to-sqs's on the
/// S3 event, each on the router its cold start builds.
async fn functions_send(to: &Targets, event: KinesisEvent, vars: &[(&str, &str)]) {
    let mut all = vec![("QUEUE_URL", to.default.as_str())];
    all.extend_from_slice(vars);
    let config = config(&all);
    let sdk = sdk_config();
    let kinesis_rules = Routes::parse(&to.kinesis_rules(), kinesis_to_sqs::records::SOURCE_KEYS)
        .expect("valid rules");
    let default = connect(&config, GroupIds::FromSource).await;
    let router = connect_router(
        &sdk,
        &config,
        default.clone(),
        Some(kinesis_rules),
        GroupIds::FromSource,
    )
    .await
    .expect("the targets");
    let answer = kinesis_to_sqs::Handler::routed(kinesis_to_sqs::Settings::default(), router)
        .handle(event, None)
        .await
        .expect("an answer");
    assert!(answer.batch_item_failures.is_empty(), "{answer:?}");
    let s3_rules =
        Routes::parse(&to.s3_rules(), s3_to_sqs::routing::SOURCE_KEYS).expect("valid rules");
    let router = connect_router(&sdk, &config, default, Some(s3_rules), GroupIds::FromSource)
        .await
        .expect("the targets");
    let settings =
        s3_to_sqs::Settings::from_env(&sqs_forwarder::Env::from_pairs(&[])).expect("settings");
    let report = s3_to_sqs::Handler::routed(settings, router, s3_to_sqs::s3_client(&sdk, true))
        .handle(s3_event(), None)
        .await
        .expect("all forwarded");
    assert_eq!((report.messages_sent, report.routes_filtered_out), (3, 1));
}

/// A message as a consumer sees it, comparable: body, attributes (name,
/// type, value), group id, deduplication id.
type Seen = (
    String,
    BTreeMap<String, (String, Vec<u8>)>,
    Option<String>,
    Option<String>,
);

fn seen(m: &Message) -> Seen {
    let system = |name| m.attributes().and_then(|a| a.get(&name)).cloned();
    (
        m.body().unwrap_or_default().to_owned(),
        attributes(m).into_iter().collect(),
        system(MessageSystemAttributeName::MessageGroupId),
        system(MessageSystemAttributeName::MessageDeduplicationId),
    )
}

async fn drained(url: &str, expected: usize) -> Vec<Seen> {
    let mut got: Vec<Seen> = drain(&client(), url, expected)
        .await
        .iter()
        .map(seen)
        .collect();
    got.sort();
    got
}

fn write(name: &str, text: &str) -> String {
    let path = std::env::temp_dir().join(unique(name));
    std::fs::write(&path, text).expect("write the rules");
    path.display().to_string()
}

async fn routed_replay(aggregate: bool) {
    let tag = if aggregate { "agg" } else { "plain" };
    let vars: &[(&str, &str)] = if aggregate {
        &[("AGGREGATE", "true")]
    } else {
        &[]
    };
    let k = kinesis();
    let arn = stream(&k, &format!("replay-routed-{tag}")).await;
    let seqs = put(&k, &arn, &records()).await;
    let failure_queue =
        create_queue(&client(), &format!("replay-routed-{tag}-failures"), &[]).await;
    let replayed = Targets::create(&format!("{tag}-r")).await;
    let reference = Targets::create(&format!("{tag}-f")).await;

    // The entries Lambda writes: the range of the first eight records, the
    // S3 event, and the range of the one that cannot be shaped.
    send_entry(
        &failure_queue,
        &batch_info(&arn, SHARD, &seqs[0], &seqs[7], 8),
    )
    .await;
    send_entry(&failure_queue, &invocation_record(&s3_event())).await;
    send_entry(
        &failure_queue,
        &batch_info(&arn, SHARD, &seqs[8], &seqs[8], 1),
    )
    .await;
    let kinesis_file = write("replay-kinesis-routes.json", &replayed.kinesis_rules());
    let s3_rules = replayed.s3_rules();
    let mut env = vec![("S3_ROUTES", s3_rules.as_str())];
    env.extend_from_slice(vars);
    let routes = ["--kinesis-routes", kinesis_file.as_str()];

    // A dry run: per target what would be sent; nothing sent or deleted.
    let args = [&routes[..], &["--dry-run"]].concat();
    let (out, stdout) = replay(&replayed.default, &failure_queue, &args, &env);
    assert_eq!(out.status.code(), Some(1), "one entry fails: {stdout}");
    let per_target = |name: &str, url: &str| format!("would send to {name} ({url}): ");
    for (name, url) in replayed.all() {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&per_target(name, url)))
            .unwrap_or_else(|| panic!("a line for {name}: {stdout}"));
        // Three records each (two from the stream, one from S3), in
        // aggregates or not.
        let n: u64 = line[per_target(name, url).len()..]
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{line}"));
        if aggregate {
            assert!((1..=3).contains(&n), "{line}");
        } else {
            assert_eq!(n, 3, "{line}");
        }
    }
    for (_, url) in replayed.all() {
        assert_eq!(depth(url).await, (0, 0), "a dry run sends nothing");
    }
    assert_eq!(depth(&failure_queue).await.0, 3, "and deletes nothing");

    // The replay.
    let (out, stdout) = replay(&replayed.default, &failure_queue, &routes, &env);
    assert_eq!(out.status.code(), Some(1), "one entry fails: {stdout}");
    assert!(
        stdout.contains("(batch of 8): replayed: 8 of 8 records read from the stream sent (2 of their messages sent nowhere: left out by the routing rules, or OVERSIZE_POLICY=drop); deleted"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "s3 event (RetriesExhausted): replayed: 4 S3 records, 3 messages sent; deleted"
        ),
        "{stdout}"
    );
    let shape = format!(
        "(batch of 1): FAILED: 0 of 1 records read from the stream sent; 1 not sent, from sequence number {} on; the first: ShapeFailed: body \"/payload\": the record's data has no such field; kept for the next run",
        seqs[8]
    );
    assert!(stdout.contains(&shape), "{stdout}");
    assert_eq!(depth(&failure_queue).await.0, 1, "the failed entry stays");

    // Message by message what the functions send for the same records.
    functions_send(&reference, lambda_event(&k, &arn, 0, 8).await, vars).await;
    let mut sent = Vec::new();
    for ((name, replay_url), (_, function_url)) in replayed.all().into_iter().zip(reference.all()) {
        let want = drained(function_url, 100).await;
        let got = drained(replay_url, 100).await;
        assert!(!want.is_empty(), "{name}: the function sent to it");
        assert_eq!(
            got, want,
            "{name}: the replay sends what the function sends"
        );
        sent.extend(got.into_iter().map(|m| (name, m)));
    }
    // The records the filter drops are nowhere; the bodies are the
    // payloads; the tenants are the group ids, hashed when SQS refuses
    // them (a space), on the FIFO and the fair-queue target alike.
    for (_, (body, ..)) in &sent {
        assert!(
            !body.contains("no type") && !body.contains("filtered out"),
            "{body}"
        );
        assert!(!body.contains("\"type\""), "{body}");
    }
    if !aggregate {
        let groups: Vec<(&str, Option<&str>)> = sent
            .iter()
            .filter(|(_, (body, ..))| !body.contains("misc/") && !body.contains("s3"))
            .map(|(name, (_, _, group, _))| (*name, group.as_deref()))
            .collect();
        assert!(groups.contains(&("orders", Some("t1"))), "{groups:?}");
        assert!(groups.contains(&("tenants", Some("t2"))), "{groups:?}");
        assert!(
            groups
                .iter()
                .any(|(name, g)| *name == "tenants" && g.is_some_and(|g| g.starts_with("g-"))),
            "{groups:?}"
        );
        assert!(groups.contains(&("default", None)), "{groups:?}");
    }

    // A second run: the entries sent were deleted; the one that failed
    // fails again and sends nothing.
    let (out, stdout) = replay(&replayed.default, &failure_queue, &routes, &env);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("1 entries: 0 replayed and deleted, 0 expired, 1 failed"),
        "{stdout}"
    );
    for (name, url) in replayed.all() {
        assert_eq!(depth(url).await, (0, 0), "{name}: nothing new");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_routed_range_and_s3_event_go_where_the_functions_send_them() {
    routed_replay(false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn with_aggregation_too() {
    routed_replay(true).await;
}
