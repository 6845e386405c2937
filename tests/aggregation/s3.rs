//! s3-to-sqs in lines mode with aggregation: the lines of an object go in
//! few messages; a refused aggregate fails exactly its lines in the
//! invocation's error, and on FIFO a retried event sends what was missing,
//! the rest deduplicated by SQS.

use std::collections::BTreeMap;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_sqs::types::QueueAttributeName;
use forwarder_e2e::aggregation::{
    Delivered, assert_aggregated, assert_python_agrees, config, copies, fifo_groups, read_all,
};
use forwarder_e2e::{client, connect, create_queue, drain};
use s3_to_sqs::{Handler, HandlerError, Settings, s3_client};
use serde_json::{Value, json};
use sqs_forwarder::{Env, Forwarder, GroupIds, Transport};

const N: usize = 2_000;

fn s3() -> aws_sdk_s3::Client {
    s3_client(&forwarder_e2e::sdk_config(), true)
}

fn line(object: &str, i: usize) -> String {
    format!("{object}-{i:05}")
}

/// A fresh bucket holding `objects`, each of `lines` lines `<object>-<n>`
/// (n from 1), and the notification about them (one record each).
async fn objects(objects: &[&str], lines: usize) -> (String, Value) {
    let s3 = s3();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let bucket = format!("agg-lines-{nanos}");
    s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("create bucket");
    let mut records = Vec::new();
    for (n, object) in objects.iter().enumerate() {
        let data: String = (1..=lines).map(|i| line(object, i) + "\n").collect();
        let out = s3
            .put_object()
            .bucket(&bucket)
            .key(*object)
            .body(ByteStream::from(data.into_bytes()))
            .send()
            .await
            .expect("put object");
        records.push(json!({
            "eventVersion": "2.1",
            "eventSource": "aws:s3",
            "awsRegion": "us-east-1",
            "eventTime": "2026-11-29T10:00:00.000Z",
            "eventName": "ObjectCreated:Put",
            "userIdentity": {"principalId": "AWS:agg"},
            "requestParameters": {"sourceIPAddress": "127.0.0.1"},
            "responseElements": {"x-amz-request-id": "AGG"},
            "s3": {
                "s3SchemaVersion": "1.0",
                "configurationId": "agg",
                "bucket": {"name": bucket, "arn": format!("arn:aws:s3:::{bucket}")},
                "object": {
                    "key": object,
                    "size": 1,
                    "eTag": out.e_tag().expect("etag").trim_matches('"'),
                    "sequencer": format!("0{n}")
                }
            }
        }));
    }
    (bucket, json!({ "Records": records }))
}

/// The function in lines mode over `fwd`.
fn handler<T: Transport>(fwd: Forwarder<T>) -> Handler<T> {
    let env = Env::from_pairs(&[("MODE", "lines"), ("S3_FORCE_PATH_STYLE", "true")]);
    let settings = Settings::from_env(&env).expect("valid settings");
    Handler::new(settings, fwd, s3())
}

/// (object, line number) of a record; its attributes must agree.
fn whose(bucket: &str, d: &[Delivered]) -> Vec<(String, usize)> {
    d.iter()
        .flat_map(|d| &d.records)
        .map(|r| {
            let (object, n) = r.body.rsplit_once('-').expect("a line");
            let n: usize = n.parse().expect("a line number");
            let attr = |name: &str| r.attributes[name].string_value.clone();
            assert_eq!(attr("bucket").as_deref(), Some(bucket));
            assert_eq!(attr("key").as_deref(), Some(object));
            assert_eq!(attr("line"), Some(n.to_string()));
            (object.to_owned(), n)
        })
        .collect()
}

/// The lines of the one aggregate SQS refused (or kept failing): one run,
/// holding line `poison`; the whole call failed once.
fn refused_lines(fake: &sqs_forwarder::test_support::FakeSqs, poison: usize) -> Vec<usize> {
    let (bodies, failed_calls) = crate::refused(fake);
    assert_eq!(failed_calls, 1, "the whole call failed once");
    let span: Vec<usize> = bodies
        .iter()
        .map(|b| b.rsplit_once('-').expect("a line").1.parse().expect("n"))
        .collect();
    assert!(span.len() > 1 && span.contains(&poison), "{span:?}");
    assert_eq!(span, (span[0]..=span[span.len() - 1]).collect::<Vec<_>>());
    span
}

#[tokio::test(flavor = "multi_thread")]
async fn standard_queue_faults_fail_exactly_the_refused_lines() {
    let sqs = client();
    let url = create_queue(&sqs, "agg-s3", &[]).await;
    let (bucket, event) = objects(&["one.txt"], N).await;
    let base = connect(&config(&url, &[]), GroupIds::FromSource).await;
    let poison = format!("\"{}\"", line("one.txt", 1000));
    let (fake, fwd, _) = crate::faulty(&base, Some(&poison), None);

    let err = handler(fwd)
        .handle(event, None)
        .await
        .expect_err("lines failed");
    let span = refused_lines(&fake, 1000);
    let HandlerError::NotForwarded { failures, report } = err else {
        panic!("not a forwarding error");
    };
    assert_eq!(failures.len(), 1);
    assert!(!failures[0].retryable, "{}", failures[0]);
    assert!(
        failures[0].reason.starts_with(&format!(
            "{} of {N} lines not forwarded (line {}: InvalidParameterValue",
            span.len(),
            span[0]
        )),
        "{}",
        failures[0].reason
    );
    assert_eq!(report.messages_sent as usize, N - span.len());

    let delivered = read_all(&drain(&sqs, &url, usize::MAX).await);
    let mut got = whose(&bucket, &delivered);
    got.sort();
    let want: Vec<(String, usize)> = (1..=N)
        .filter(|n| !span.contains(n))
        .map(|n| ("one.txt".to_owned(), n))
        .collect();
    assert_eq!(got, want, "every line sent once; the refused ones not");
    assert_aggregated(&delivered, want.len(), N / 50);
}

#[tokio::test(flavor = "multi_thread")]
async fn fifo_queue_a_failing_aggregate_holds_its_object_and_a_retried_event_completes_it() {
    let sqs = client();
    let url = create_queue(
        &sqs,
        "agg-s3.fifo",
        &[(QueueAttributeName::ContentBasedDeduplication, "false")],
    )
    .await;
    let (bucket, event) = objects(&["one.txt", "two.txt"], N).await;
    let base = connect(&config(&url, &[]), GroupIds::FromSource).await;
    let poison = format!("\"{}\"", line("two.txt", 1000));
    let (fake, fwd, failing) = crate::faulty(&base, None, Some(&poison));
    let h = handler(fwd);

    let err = h
        .handle(event.clone(), None)
        .await
        .expect_err("lines failed");
    failing.store(false, std::sync::atomic::Ordering::SeqCst);
    let span = refused_lines(&fake, 1000);
    let HandlerError::NotForwarded { failures, report } = err else {
        panic!("not a forwarding error");
    };
    // The failing aggregate's lines and every later line of their object
    // (its group) are not forwarded, retryably; the other object is whole.
    let held = N + 1 - span[0];
    assert_eq!(
        failures.iter().map(|f| f.record).collect::<Vec<_>>(),
        vec![1],
        "{failures:?}"
    );
    assert!(failures[0].retryable);
    assert!(
        failures[0]
            .reason
            .starts_with(&format!("{held} of {N} lines not forwarded")),
        "{}",
        failures[0].reason
    );
    assert_eq!(report.messages_sent as usize, 2 * N - held);
    // Lambda retries the event: the same aggregates again, SQS keeps the
    // first copies (moto deduplicates against what is still queued).
    let again = h.handle(event, None).await.expect("the retry goes through");
    assert_eq!(again.messages_sent as usize, 2 * N);

    let messages = drain(&sqs, &url, usize::MAX).await;
    let delivered = read_all(&messages);
    let want: BTreeMap<String, usize> = ["one.txt", "two.txt"]
        .iter()
        .flat_map(|o| (1..=N).map(move |n| (line(o, n), 1)))
        .collect();
    assert_eq!(copies(&delivered), want, "each line once");
    assert_aggregated(&delivered, 2 * N, N / 25);
    let groups = fifo_groups(&delivered);
    assert_eq!(groups.len(), 2);
    for object in ["one.txt", "two.txt"] {
        let got = &groups[&format!("{bucket}/{object}")];
        let order: Vec<String> = got.iter().map(|(b, _)| b.clone()).collect();
        let want: Vec<String> = (1..=N).map(|n| line(object, n)).collect();
        assert_eq!(order, want, "{object}: one group, in order");
        for (n, (_, dedup)) in got.iter().enumerate() {
            assert_eq!(
                dedup,
                &format!(
                    "{bucket}/{object}/null/0{}/{}",
                    (object == "two.txt") as u8,
                    n + 1
                )
            );
        }
    }
    whose(&bucket, &delivered);
    assert_python_agrees(&messages);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_aggregate_each_line_is_a_message_of_its_own() {
    let sqs = client();
    let url = create_queue(&sqs, "agg-s3-off", &[]).await;
    let n = 200;
    let (bucket, event) = objects(&["one.txt"], n).await;
    let fwd = connect(&config(&url, &[("AGGREGATE", "")]), GroupIds::FromSource).await;
    let report = handler(fwd).handle(event, None).await.expect("forwarded");
    assert_eq!(report.messages_sent as usize, n);
    let delivered = read_all(&drain(&sqs, &url, n + 1).await);
    assert_eq!(delivered.len(), n, "one message per line");
    assert!(
        delivered
            .iter()
            .all(|d| !d.aggregate && d.records.len() == 1)
    );
    let mut got = whose(&bucket, &delivered);
    got.sort();
    assert_eq!(
        got,
        (1..=n)
            .map(|i| ("one.txt".to_owned(), i))
            .collect::<Vec<_>>()
    );
}
