//! End-to-end: entries the replay keeps in the on-failure queue, against the
//! local endpoint (moto: SQS, Kinesis).
//!
//! * A range whose start the stream trimmed: what the stream still has is
//!   sent once, and the entry is narrowed to what is lost, so later runs
//!   keep reporting the loss without sending the rest again.
//! * On-failure records of sources the replay does not read (a DynamoDB
//!   stream, a Kafka topic, another function's asynchronous invocation):
//!   named, kept, nothing sent.

use common::{SHARD, batch_info, depth, kinesis, put, replay, send_entry, stream};
use forwarder_e2e::{client, create_queue};
use serde_json::{Value, json};

mod common;

/// The body of the one entry of `queue`, left in it (received and made
/// visible again at once).
async fn peek(queue: &str) -> Value {
    let out = client()
        .receive_message()
        .queue_url(queue)
        .wait_time_seconds(1)
        .send()
        .await
        .expect("receive");
    let m = out.messages().first().expect("an entry");
    client()
        .change_message_visibility()
        .queue_url(queue)
        .receipt_handle(m.receipt_handle().expect("handle"))
        .visibility_timeout(0)
        .send()
        .await
        .expect("make it visible again");
    serde_json::from_str(m.body().expect("body")).expect("a JSON entry")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_partly_expired_range_sends_what_survives_once_and_keeps_reporting_the_loss() {
    let k = kinesis();
    let arn = stream(&k, "replay-partly-expired").await;
    let records: Vec<(String, Vec<u8>)> = (0..20)
        .map(|i| ("p".to_owned(), format!("rec-{i}").into_bytes()))
        .collect();
    let seqs = put(&k, &arn, &records).await;
    let failure_queue = create_queue(&client(), "replay-failures", &[]).await;
    let target = create_queue(&client(), "replay-target", &[]).await;
    // A batch of 16 whose first record the stream trimmed: it starts before
    // the shard's first record (moto cannot age a stream; a sequence number
    // below the oldest one is what a trimmed start looks like to a reader)
    // and ends at the 15th record the stream still has.
    send_entry(&failure_queue, &batch_info(&arn, SHARD, "0", &seqs[14], 16)).await;
    // The lost part ends just before the first record the stream has.
    let before_first = (seqs[0]
        .parse::<u128>()
        .expect("moto's small sequence numbers")
        - 1)
    .to_string();

    let (out, stdout) = replay(&target, &failure_queue, &[], &[]);
    assert_eq!(out.status.code(), Some(1), "the loss is reported: exit 1");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("entry ")).count(),
        1,
        "one entry, reported once (not again as the narrowed one): {stdout}"
    );
    let line = stdout
        .lines()
        .find(|l| l.contains(": EXPIRED: "))
        .unwrap_or_else(|| panic!("an EXPIRED line: {stdout}"));
    assert!(
        line.contains(&format!(
            "the stream no longer has the records of {SHARD} from 0 to before {}",
            seqs[0]
        )) && line.contains("1 of the batch's 16 records are lost")
            && line.contains("15 of 15 records read from the stream sent")
            && line.contains(&format!(
                "narrowed to the records the stream no longer has: {SHARD} 0..{before_first} (batch of 1)"
            ))
            && line.ends_with(
                "; kept, narrowed to what is lost: later runs report it and send nothing again (run with --delete-expired to drop it once you have noted the range)"
            ),
        "{line}"
    );
    assert!(
        stdout.contains("replay: 1 entries: 0 replayed and deleted, 1 expired, 0 failed, 0 unreadable, 0 from other sources; sent 15 Kinesis records"),
        "{stdout}"
    );
    assert_eq!(depth(&target).await, (15, 0), "what survives, sent");
    assert_eq!(depth(&failure_queue).await, (1, 0), "one entry left");

    // The entry left is in Lambda's format, narrowed to what is lost, and
    // says what became of the rest.
    let entry = peek(&failure_queue).await;
    let info = &entry["KinesisBatchInfo"];
    assert_eq!(info["shardId"], SHARD);
    assert_eq!(info["streamArn"], arn.as_str());
    assert_eq!(info["startSequenceNumber"], "0");
    assert_eq!(info["endSequenceNumber"], before_first.as_str());
    assert_eq!(info["batchSize"], 1);
    assert_eq!(
        info["approximateArrivalOfFirstRecord"],
        "2026-11-30T10:38:04.835Z"
    );
    assert_eq!(
        entry["requestContext"]["condition"],
        "RetryAttemptsExhausted"
    );
    let note = &entry["replayNarrowed"];
    assert_eq!(note["sentRecords"], 15);
    assert_eq!(note["sentFromSequenceNumber"], seqs[0].as_str());
    assert_eq!(note["originalEndSequenceNumber"], seqs[14].as_str());
    assert_eq!(note["originalBatchSize"], 16);

    // The next run sends nothing more and still reports the loss.
    let (out, stdout) = replay(&target, &failure_queue, &[], &[]);
    assert_eq!(out.status.code(), Some(1), "still reported: exit 1");
    let line = stdout
        .lines()
        .find(|l| l.contains(": EXPIRED: "))
        .unwrap_or_else(|| panic!("an EXPIRED line: {stdout}"));
    assert!(
        line.contains(&format!(
            "{SHARD} 0..{before_first} (batch of 1; an earlier replay sent the 15 records the stream still had)"
        )) && line.contains(&format!(
            "the stream no longer has any record of 0..{before_first} in {SHARD}: past the retention period; 1 of the batch's 1 records are lost"
        )) && line.contains("0 of 0 records read from the stream sent")
            && line.contains("; kept (run with --delete-expired"),
        "{line}"
    );
    assert!(stdout.contains("sent 0 Kinesis records"), "{stdout}");
    assert_eq!(depth(&target).await, (15, 0), "nothing sent again");
    assert_eq!(depth(&failure_queue).await, (1, 0), "the entry kept");

    // Noted: dropped.
    let (out, stdout) = replay(&target, &failure_queue, &["--delete-expired"], &[]);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("; deleted (--delete-expired)"), "{stdout}");
    assert_eq!(depth(&failure_queue).await, (0, 0));
    assert_eq!(depth(&target).await, (15, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn entries_of_sources_replay_does_not_read_are_named_and_kept() {
    let failure_queue = create_queue(&client(), "replay-failures", &[]).await;
    let target = create_queue(&client(), "replay-target", &[]).await;
    let request_context = json!({
        "requestId": "316aa6d0-8154-xmpl-9af7-85d5f4a6bc81",
        "functionArn": "arn:aws:lambda:us-east-2:123456789012:function:orders-handler",
        "condition": "RetryAttemptsExhausted",
        "approximateInvokeCount": 1
    });
    let response_context =
        json!({"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"});
    // A DynamoDB stream's on-failure record (Lambda developer guide,
    // "Retaining records of stream invocations" for DynamoDB).
    let dynamodb = json!({
        "requestContext": request_context,
        "responseContext": response_context,
        "version": "1.0",
        "timestamp": "2026-11-30T00:13:49.717Z",
        "DDBStreamBatchInfo": {
            "shardId": "shardId-00000001573689847184-864758bb",
            "startSequenceNumber": "800000000003126276362",
            "endSequenceNumber": "800000000003126276362",
            "approximateArrivalOfFirstRecord": "2026-11-30T00:13:19Z",
            "approximateArrivalOfLastRecord": "2026-11-30T00:13:19Z",
            "batchSize": 1,
            "streamArn": "arn:aws:dynamodb:us-east-2:123456789012:table/orders/stream/2026-11-30T00:04:06.388"
        }
    });
    // An Amazon MSK on-failure record.
    let kafka = json!({
        "requestContext": request_context,
        "responseContext": response_context,
        "version": "1.0",
        "timestamp": "2026-11-30T18:16:05.568Z",
        "KafkaBatchInfo": {
            "batchSize": 1,
            "eventSourceArn": "arn:aws:kafka:us-east-1:123456789012:cluster/my-cluster/abc123",
            "bootstrapServers": "b-1.mycluster.abc123.kafka.us-east-1.amazonaws.com:9098",
            "payloadSize": 1162,
            "recordInfo": {"offset": "42", "timestamp": "2026-11-30T18:16:04.835Z"}
        }
    });
    // Another function's asynchronous invocation: an SNS notification.
    let sns = json!({
        "version": "1.0",
        "timestamp": "2026-11-30T18:16:05.568Z",
        "requestContext": {
            "requestId": "e4b46cbf-b738-xmpl-8880-a18cdf61200e",
            "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:notify:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 3
        },
        "requestPayload": {"Records": [{
            "EventSource": "aws:sns", "EventVersion": "1.0",
            "Sns": {"Type": "Notification", "Message": "hello"}
        }]},
        "responseContext": response_context
    });
    for body in [&dynamodb, &kafka, &sns] {
        send_entry(&failure_queue, &body.to_string()).await;
    }

    let (out, stdout) = replay(&target, &failure_queue, &[], &[]);
    assert_eq!(out.status.code(), Some(1), "entries stay: exit 1");
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(": OTHER SOURCE: "))
        .collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(
        !stdout.contains("has no requestPayload") && !stdout.contains("UNREADABLE"),
        "{stdout}"
    );
    let tail = "; kept (replay does not read this source: handle it with that source's own tools, then delete it from the queue)";
    assert!(lines.iter().all(|l| l.ends_with(tail)), "{stdout}");
    assert!(
        lines.iter().any(|l| l.contains(
            "dynamodb stream arn:aws:dynamodb:us-east-2:123456789012:table/orders/stream/2026-11-30T00:04:06.388 shardId-00000001573689847184-864758bb 800000000003126276362..800000000003126276362 (batch of 1) from arn:aws:lambda:us-east-2:123456789012:function:orders-handler (RetryAttemptsExhausted): OTHER SOURCE: the on-failure record of a DynamoDB stream (DDBStreamBatchInfo): replay reads only Kinesis ranges (KinesisBatchInfo) and s3-to-sqs's S3 events; nothing sent"
        )),
        "{stdout}"
    );
    assert!(
        lines.iter().any(|l| l.contains(
            "kafka arn:aws:kafka:us-east-1:123456789012:cluster/my-cluster/abc123 offset 42 (batch of 1)"
        ) && l.contains("the on-failure record of a Kafka topic (KafkaBatchInfo)")),
        "{stdout}"
    );
    assert!(
        lines.iter().any(|l| l.contains(
            "asynchronous invocation of arn:aws:lambda:us-east-1:123456789012:function:notify:$LATEST (RetriesExhausted)"
        ) && l.contains("an aws:sns event, not an S3 event")),
        "{stdout}"
    );
    assert!(
        stdout.contains("replay: 3 entries: 0 replayed and deleted, 0 expired, 0 failed, 0 unreadable, 3 from other sources"),
        "{stdout}"
    );
    assert_eq!(depth(&failure_queue).await, (3, 0), "all kept, visible");
    assert_eq!(depth(&target).await, (0, 0), "nothing sent");
}
