//! Every file in `events/` parses as the event its name says, with the types
//! Lambda's own Rust libraries use (`aws_lambda_events`, `lambda_http`).

use std::path::Path;

use aws_lambda_events::event::cloudwatch_events::CloudWatchEvent;
use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use aws_lambda_events::event::kinesis::KinesisEvent;
use aws_lambda_events::event::rabbitmq::RabbitMqEvent;
use aws_lambda_events::event::s3::S3Event;

fn parse(name: &str, text: &str) -> Result<String, String> {
    let e = |err: serde_json::Error| format!("{name}: {err}");
    let kind = if name.starts_with("kinesis-") {
        let ev: KinesisEvent = serde_json::from_str(text).map_err(e)?;
        if ev.records.is_empty() {
            return Err(format!("{name}: no records"));
        }
        "KinesisEvent"
    } else if name.starts_with("s3-eventbridge-") {
        let ev: EventBridgeEvent = serde_json::from_str(text).map_err(e)?;
        if ev.source != "aws.s3" {
            return Err(format!("{name}: source {}", ev.source));
        }
        "EventBridgeEvent (aws.s3)"
    } else if name == "s3-test-event.json" {
        let v: serde_json::Value = serde_json::from_str(text).map_err(e)?;
        if v["Event"] != "s3:TestEvent" {
            return Err(format!("{name}: not an s3:TestEvent"));
        }
        "s3:TestEvent"
    } else if name.starts_with("s3-") {
        let ev: S3Event = serde_json::from_str(text).map_err(e)?;
        if ev.records.is_empty() {
            return Err(format!("{name}: no records"));
        }
        "S3Event"
    } else if name.starts_with("replay-kinesis-") {
        // Lambda's on-failure record of a Kinesis batch: metadata only.
        let v: serde_json::Value = serde_json::from_str(text).map_err(e)?;
        let info = &v["KinesisBatchInfo"];
        for field in [
            "shardId",
            "startSequenceNumber",
            "endSequenceNumber",
            "streamArn",
        ] {
            if !info[field].is_string() {
                return Err(format!("{name}: KinesisBatchInfo.{field} missing"));
            }
        }
        "on-failure record (KinesisBatchInfo)"
    } else if name.starts_with("replay-s3-") {
        // Lambda's asynchronous invocation record: the original S3 event.
        let v: serde_json::Value = serde_json::from_str(text).map_err(e)?;
        let ev: S3Event = serde_json::from_value(v["requestPayload"].clone()).map_err(e)?;
        if ev.records.is_empty() || v["requestContext"]["condition"].as_str().is_none() {
            return Err(format!("{name}: no records or no condition"));
        }
        "invocation record (requestPayload: S3Event)"
    } else if name.starts_with("sfn-map-batch-") {
        // A Distributed Map batch (ItemBatcher): Items as the template's
        // ItemSelector makes them, BatchInput naming the object.
        let v: serde_json::Value = serde_json::from_str(text).map_err(e)?;
        let items = v["Items"].as_array().cloned().unwrap_or_default();
        if items.is_empty()
            || items
                .iter()
                .any(|i| !i["index"].is_u64() || i.get("value").is_none())
            || !v["BatchInput"]["bucket"].is_string()
            || !v["BatchInput"]["key"].is_string()
        {
            return Err(format!(
                "{name}: not Items of {{index, value}} with BatchInput {{bucket, key}}"
            ));
        }
        "Distributed Map batch (Items, BatchInput)"
    } else if name.starts_with("apigw-") {
        lambda_http::request::from_str(text).map_err(e)?;
        "API Gateway / function URL / load balancer request"
    } else if name == "rabbitmq-amazon-mq.json" {
        let ev: RabbitMqEvent = serde_json::from_str(text).map_err(e)?;
        if ev.messages_by_queue.is_empty() {
            return Err(format!("{name}: no messages"));
        }
        "RabbitMqEvent (aws:rmq)"
    } else if name == "rabbitmq-schedule.json" {
        let ev: CloudWatchEvent = serde_json::from_str(text).map_err(e)?;
        if ev.detail_type.as_deref() != Some("Scheduled Event") {
            return Err(format!("{name}: detail-type {:?}", ev.detail_type));
        }
        "Scheduled Event"
    } else if name == "rabbitmq-scheduler-input.json" {
        // EventBridge Scheduler sends its configured input unchanged: any JSON.
        let _: serde_json::Value = serde_json::from_str(text).map_err(e)?;
        "EventBridge Scheduler input"
    } else {
        return Err(format!("{name}: no known event type for this name"));
    };
    Ok(kind.to_owned())
}

#[test]
fn every_sample_event_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../events");
    let mut seen = 0;
    let mut errors = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("events/")
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(entry.path()).expect("readable");
        seen += 1;
        match parse(&name, &text) {
            Ok(kind) => println!("{name}: {kind}"),
            Err(e) => errors.push(e),
        }
    }
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(seen >= 20, "only {seen} sample events");
}

#[test]
fn a_wrong_event_is_caught() {
    let kinesis = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../events/kinesis-small.json"
    ))
    .expect("sample");
    assert!(parse("s3-put.json", &kinesis).is_err());
    assert!(parse("apigw-x.json", "{}").is_err());
    assert!(parse("other.json", "{}").is_err());
}
