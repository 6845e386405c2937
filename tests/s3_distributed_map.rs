//! End-to-end: Distributed Map batches through the built s3-to-sqs binary,
//! against the local endpoint (moto: S3 and SQS). A JSON-lines object and a
//! CSV object are put in the local S3, read, selected and batched as the
//! template's state machine does (`tests/distributed_map/driver.rs`, a
//! stand-in for Step Functions), and each batch is handed to the function
//! through a local Lambda runtime API. Every item arrives once, with its
//! attributes and (FIFO) ids; a batch SQS refuses is answered as a failure
//! naming its items, and its retry delivers them; malformed batches are
//! refused clearly; the sample batches in `events/` are answered.

#[path = "distributed_map/driver.rs"]
mod driver;

use std::collections::{BTreeMap, HashMap};

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_sqs::types::{Message, MessageSystemAttributeName};
use driver::{Batching, Format, Function, batches, read_items};
use forwarder_e2e::fault_proxy::{FaultProxy, Mode};
use forwarder_e2e::{attributes, client, create_queue, drain, endpoint, sdk_config};
use serde_json::{Value, json};
use sqs_forwarder::test_support::runtime_api::Posted;

fn s3() -> aws_sdk_s3::Client {
    s3_to_sqs::s3_client(&sdk_config(), true)
}

/// The object, as the map's input names it.
struct Object {
    bucket: String,
    key: String,
    etag: String,
}

impl Object {
    /// `BatchInput`, as the template's ItemBatcher gives it.
    fn batch_input(&self) -> Value {
        json!({ "bucket": self.bucket, "key": self.key, "etag": self.etag })
    }
}

/// Put `data` in a fresh bucket of the local S3.
async fn put(key: &str, data: Vec<u8>) -> Object {
    let s3 = s3();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let bucket = format!("e2e-map-{nanos}");
    s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("create bucket");
    let out = s3
        .put_object()
        .bucket(&bucket)
        .key(key)
        .body(ByteStream::from(data))
        .send()
        .await
        .expect("put object");
    Object {
        bucket,
        key: key.to_owned(),
        etag: out.e_tag().expect("etag").trim_matches('"').to_owned(),
    }
}

/// The object's items, read from the local S3 as ItemReader reads them.
async fn items(object: &Object, format: Format) -> Vec<Value> {
    let out = s3()
        .get_object()
        .bucket(&object.bucket)
        .key(&object.key)
        .send()
        .await
        .expect("get object");
    let bytes = out.body.collect().await.expect("body").into_bytes();
    read_items(format, &bytes).expect("items")
}

/// The function against `queue` (SQS at `sqs`, the local endpoint unless a
/// proxy stands in front of it), with `extra` variables.
async fn function(queue: &str, sqs: &str, extra: &[(&str, &str)]) -> Function {
    let endpoint = endpoint();
    let mut env = vec![
        ("QUEUE_URL", queue),
        ("AWS_ENDPOINT_URL_SQS", sqs),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
    ];
    env.extend_from_slice(extra);
    Function::start(&env).await
}

/// The answer to a batch that went through.
fn answered(posted: &Posted) -> &Value {
    match posted {
        Posted::Response { body, .. } => body,
        other => panic!("expected an answer, got {other:?}"),
    }
}

fn string_attr(m: &Message, name: &str) -> Option<String> {
    attributes(m)
        .get(name)
        .map(|(_, v)| String::from_utf8(v.clone()).expect("utf8"))
}

/// Every message's item index, each checked against `items` (the body is
/// the item) and the object's attributes; panics on an item twice.
fn by_index(got: &[Message], object: &Object, items: &[Value]) -> BTreeMap<u64, Value> {
    let mut seen = BTreeMap::new();
    for m in got {
        let index: u64 = string_attr(m, "item")
            .expect("item attribute")
            .parse()
            .expect("a number");
        assert_eq!(attributes(m)["item"].0, "Number");
        assert_eq!(
            string_attr(m, "bucket").as_deref(),
            Some(object.bucket.as_str())
        );
        assert_eq!(string_attr(m, "key").as_deref(), Some(object.key.as_str()));
        let body: Value = serde_json::from_str(m.body().expect("body")).expect("JSON body");
        assert_eq!(&body, &items[index as usize], "item {index}'s body");
        assert!(seen.insert(index, body).is_none(), "item {index} twice");
    }
    seen
}

fn jsonl(n: usize) -> Vec<u8> {
    let mut text = String::new();
    for i in 0..n {
        let line = json!({
            "id": format!("o-{i}"),
            "kind": if i % 3 == 0 { "refund" } else { "order" },
            // Short items first, then long ones: batches of the first half
            // are cut by their count, of the second by their bytes.
            "note": "é, \"quoted\" ☃".repeat(if i < n / 2 { i % 2 } else { 6 + i % 3 }),
        });
        text.push_str(&line.to_string());
        text.push('\n');
        if i == 10 {
            text.push('\n'); // a blank line, skipped by the reader
        }
    }
    text.into_bytes()
}

#[tokio::test(flavor = "multi_thread")]
async fn json_lines_items_each_arrive_once_on_a_standard_queue() {
    let sqs = client();
    let queue = create_queue(&sqs, "e2e-map-jsonl", &[]).await;
    let object = put("exports/orders.jsonl", jsonl(500)).await;
    let items = items(&object, Format::Jsonl).await;
    assert_eq!(items.len(), 500);
    let limits = Batching {
        max_items: 60,
        max_bytes: 8 * 1024,
    };
    let batches = batches(&items, &object.batch_input(), limits).expect("batches");
    // Both limits cut batches: some by their count, some by their bytes.
    let counts: Vec<usize> = batches
        .iter()
        .map(|b| b["Items"].as_array().map_or(0, Vec::len))
        .collect();
    assert!(counts.iter().all(|&c| c <= limits.max_items));
    assert!(
        batches
            .iter()
            .all(|b| b.to_string().len() <= limits.max_bytes)
    );
    assert!(
        counts.contains(&limits.max_items) && counts.iter().any(|&c| c < limits.max_items - 1),
        "{counts:?}"
    );
    let f = function(&queue, &endpoint(), &[]).await;
    for batch in &batches {
        let posted = f.api.invoke(batch).await;
        let answer = answered(&posted);
        let n = batch["Items"].as_array().map_or(0, Vec::len);
        assert_eq!(answer["records"], n);
        assert_eq!(answer["messagesSent"], n);
        assert_eq!(answer["mapBatch"]["bucket"], object.bucket.as_str());
        assert_eq!(answer["mapBatch"]["firstIndex"], batch["Items"][0]["index"]);
    }
    let got = drain(&sqs, &queue, items.len()).await;
    let seen = by_index(&got, &object, &items);
    assert_eq!(seen.len(), items.len());
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        (0..500).collect::<Vec<u64>>()
    );
    assert!(
        got.iter()
            .all(|m| system_attr(m, MessageSystemAttributeName::MessageGroupId).is_none())
    );
}

fn system_attr(m: &Message, name: MessageSystemAttributeName) -> Option<String> {
    m.attributes().and_then(|a| a.get(&name)).cloned()
}

const CSV: &str = "verdict,statement_date,statement_source\n\
true,6/11/2008,speech\n\
false,6/7/2022,television\n\
mostly-true,5/18/2016,\"news, \"\"quoted\"\"\"\n";

fn csv(rows: usize) -> Vec<u8> {
    let mut text = String::from(CSV);
    for i in 3..rows {
        text.push_str(&format!("half-true,1/{}/2020,row {i}\n", i % 28 + 1));
    }
    text.into_bytes()
}

#[tokio::test(flavor = "multi_thread")]
async fn csv_rows_reach_a_fifo_queue_in_order_and_a_retried_batch_is_deduplicated() {
    let sqs = client();
    let queue = create_queue(&sqs, "e2e-map-csv.fifo", &[]).await;
    let object = put("csvDataset/ratings.csv", csv(120)).await;
    let items = items(&object, Format::Csv).await;
    assert_eq!(items.len(), 120);
    assert_eq!(
        items[2],
        json!({"verdict": "mostly-true", "statement_date": "5/18/2016", "statement_source": "news, \"quoted\""})
    );
    let batches = batches(
        &items,
        &object.batch_input(),
        Batching {
            max_items: 50,
            max_bytes: 262_144,
        },
    )
    .expect("batches");
    assert_eq!(batches.len(), 3);
    let f = function(&queue, &endpoint(), &[]).await;
    for batch in &batches {
        answered(&f.api.invoke(batch).await);
    }
    // The map's Retry sends a batch again: SQS drops the copies.
    let again = f.api.invoke(&batches[1]).await;
    assert_eq!(answered(&again)["messagesSent"], 50);
    let got = drain(&sqs, &queue, items.len() + 50).await;
    let seen = by_index(&got, &object, &items);
    assert_eq!(seen.len(), 120, "each row once");
    // One group (the object), in the items' order.
    let order: Vec<u64> = got
        .iter()
        .map(|m| string_attr(m, "item").expect("item").parse().expect("n"))
        .collect();
    assert_eq!(order, (0..120).collect::<Vec<u64>>());
    let group = format!("{}/{}", object.bucket, object.key);
    for m in &got {
        assert_eq!(
            system_attr(m, MessageSystemAttributeName::MessageGroupId).as_deref(),
            Some(group.as_str())
        );
        let index = string_attr(m, "item").expect("item");
        assert_eq!(
            system_attr(m, MessageSystemAttributeName::MessageDeduplicationId),
            Some(format!(
                "{}/{}/null/{}/item-{index}",
                object.bucket, object.key, object.etag
            ))
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_sqs_refuses_fails_naming_its_items_and_its_retry_delivers() {
    let sqs = client();
    let queue = create_queue(&sqs, "e2e-map-refused.fifo", &[]).await;
    let object = put("exports/refused.jsonl", jsonl(60)).await;
    let items = items(&object, Format::Jsonl).await;
    let batches = batches(
        &items,
        &object.batch_input(),
        Batching {
            max_items: 20,
            max_bytes: 262_144,
        },
    )
    .expect("batches");
    let upstream = endpoint()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .expect("host:port");
    let proxy = FaultProxy::start(upstream).await;
    let via_proxy = format!("http://{}", proxy.addr);
    let f = function(
        &queue,
        &via_proxy,
        &[
            ("RETRY_MAX_ATTEMPTS", "2"),
            ("RETRY_BASE_DELAY_MS", "1"),
            ("RETRY_MAX_DELAY_MS", "5"),
            ("CALL_TIMEOUT_MS", "2000"),
        ],
    )
    .await;
    answered(&f.api.invoke(&batches[0]).await);
    proxy.set(Mode::Refuse);
    let posted = f.api.invoke(&batches[1]).await;
    let error = posted.error();
    assert_eq!(error.error_type, "S3ToSqs.NotForwarded", "{posted:?}");
    assert!(
        error.error_message.starts_with(&format!(
            "20 of 20 items of s3://{}/{} (a Distributed Map batch) were not forwarded to SQS: item 20: ",
            object.bucket, object.key
        )) && error.error_message.contains("(retryable)")
            && error.error_message.ends_with("; and 10 more"),
        "{}",
        error.error_message
    );
    // The map's Retry, once SQS takes messages again.
    proxy.set(Mode::Pass);
    for batch in &batches[1..] {
        answered(&f.api.invoke(batch).await);
    }
    let got = drain(&sqs, &queue, items.len()).await;
    assert_eq!(by_index(&got, &object, &items).len(), 60);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_item_too_large_for_the_queue_fails_its_batch_for_good() {
    let sqs = client();
    let queue = create_queue(&sqs, "e2e-map-large", &[]).await;
    let mut data = jsonl(5);
    data.extend_from_slice(
        json!({"id": "big", "pad": "x".repeat(3000)})
            .to_string()
            .as_bytes(),
    );
    data.push(b'\n');
    let object = put("exports/large.jsonl", data).await;
    let items = items(&object, Format::Jsonl).await;
    let batches = batches(
        &items,
        &object.batch_input(),
        Batching {
            max_items: 100,
            max_bytes: 262_144,
        },
    )
    .expect("batches");
    assert_eq!(batches.len(), 1);
    let f = function(&queue, &endpoint(), &[("MAX_MESSAGE_BYTES", "2048")]).await;
    let posted = f.api.invoke(&batches[0]).await;
    let error = posted.error();
    assert_eq!(error.error_type, "S3ToSqs.NotForwardable", "{posted:?}");
    assert!(
        error.error_message.contains("1 of 6 items")
            && error.error_message.contains("item 5: MessageTooLarge"),
        "{}",
        error.error_message
    );
    let got = drain(&sqs, &queue, 5).await;
    assert_eq!(by_index(&got, &object, &items).len(), 5, "the others went");
}

#[tokio::test(flavor = "multi_thread")]
async fn sample_batches_are_answered_and_malformed_batches_refused() {
    let sqs = client();
    let queue = create_queue(&sqs, "e2e-map-samples", &[]).await;
    let f = function(&queue, &endpoint(), &[]).await;
    let sample = |name: &str| -> Value {
        let path = format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(path).expect("sample")).expect("json")
    };
    let posted = f.api.invoke(&sample("sfn-map-batch-jsonl.json")).await;
    assert_eq!(
        answered(&posted)["mapBatch"],
        json!({"bucket": "acme-exports", "key": "exports/2026/12/05/orders-0001.jsonl",
               "firstIndex": 40, "lastIndex": 42})
    );
    let posted = f.api.invoke(&sample("sfn-map-batch-csv.json")).await;
    assert_eq!(answered(&posted)["messagesSent"], 3);
    let got = drain(&sqs, &queue, 6).await;
    let mut bodies: HashMap<String, Value> = HashMap::new();
    for m in &got {
        let key = format!(
            "{}#{}",
            string_attr(m, "key").expect("key"),
            string_attr(m, "item").expect("item")
        );
        bodies.insert(
            key,
            serde_json::from_str(m.body().expect("body")).expect("json"),
        );
    }
    assert_eq!(bodies.len(), 6);
    assert_eq!(
        bodies["csvDataset/ratings.csv#1"],
        json!({"verdict": "false", "statement_date": "6/7/2022", "statement_source": "television"})
    );

    for (event, says) in [
        (
            json!({"Items": [1, 2], "BatchInput": {"bucket": "b", "key": "k"}}),
            "malformed S3 event: Distributed Map batch: Items[0]: expected {\"index\": $$.Map.Item.Index, \"value\": $$.Map.Item.Value} (the ItemSelector), got a number",
        ),
        (
            json!({"Items": [{"index": 0, "value": {}}]}),
            "malformed S3 event: Distributed Map batch: no \"BatchInput\"",
        ),
        (
            json!({"Items": [], "BatchInput": {"bucket": "b"}}),
            "malformed S3 event: Distributed Map batch: BatchInput.key: missing or empty",
        ),
    ] {
        let posted = f.api.invoke(&event).await;
        let error = posted.error();
        assert_eq!(error.error_type, "S3ToSqs.InvalidEvent", "{posted:?}");
        assert!(
            error.error_message.starts_with(says),
            "{}",
            error.error_message
        );
    }
    let left = drain(&sqs, &queue, 1).await;
    assert!(left.is_empty(), "a refused batch sends nothing");
}
