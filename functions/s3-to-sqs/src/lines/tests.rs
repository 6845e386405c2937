//! Reading and forwarding an object's lines against a fake SQS transport.

use std::collections::HashSet;
use std::sync::Mutex;

use async_compression::tokio::bufread::GzipEncoder;
use sqs_forwarder::call::transport::BoxFuture;
use sqs_forwarder::message::encode::{EncodeRules, Entry};
use sqs_forwarder::route::Router;
use sqs_forwarder::test_support::FakeSqs;
use sqs_forwarder::{Forwarder, Limits, OversizePolicy, SendSettings, Transport};
use tokio::io::{AsyncBufRead, AsyncReadExt};

use crate::event::{ObjectEvent, Via};
use crate::lines::{Chunking, LinesReport, forward_lines};
use crate::messages::Fifo;
use crate::object::decoded;
use crate::settings::GroupBy;
use crate::testing::{accepted_by, failing, forwarder};

use super::*;

fn object_event() -> ObjectEvent {
    ObjectEvent {
        via: Via::Notification,
        event_name: "ObjectCreated:Put".into(),
        event_time: None,
        region: None,
        bucket: "logs".into(),
        key: "app/2026-11-29.log".into(),
        size: None,
        etag: Some("e1".into()),
        version_id: None,
        sequencer: Some("00F1".into()),
        detail_type: None,
        reason: None,
    }
}

/// `forward_lines` of the test object's `reader` into a standard queue,
/// without a deadline, in chunks of at most `(lines, bytes)`.
async fn lines_into<R, T>(reader: R, fwd: &Forwarder<T>, chunking: (usize, usize)) -> LinesReport
where
    R: AsyncBufRead + Unpin,
    T: Transport + Clone,
{
    routed_lines(reader, &Router::single(fwd.clone()), STANDARD, chunking).await
}

/// `forward_lines` of the test object's `reader` through `router`.
async fn routed_lines<R, T>(
    reader: R,
    router: &Router<T>,
    fifo: Fifo,
    (lines, bytes): (usize, usize),
) -> LinesReport
where
    R: AsyncBufRead + Unpin,
    T: Transport,
{
    forward_lines(
        reader,
        &object_event(),
        router,
        fifo,
        Chunking { lines, bytes },
        None,
    )
    .await
}

const STANDARD: Fifo = Fifo {
    enabled: false,
    group_by: GroupBy::Object,
};

#[tokio::test]
async fn every_line_once_in_bounded_chunks() {
    let mut text = String::new();
    for i in 1..=12_345 {
        if i % 1000 == 0 {
            text.push_str("\r\n"); // blank line, CRLF
        } else {
            text.push_str(&format!("{{\"n\":{i}}}\n"));
        }
    }
    let fwd = forwarder(FakeSqs::new(), false);
    let report = lines_into(text.as_bytes(), &fwd, (1000, 8 << 20)).await;
    assert_eq!(report.lines, 12_345);
    assert_eq!(report.blank, 12);
    assert_eq!(report.sent, 12_333);
    assert!(report.complete());
    let got = accepted_by(fwd.transport());
    assert_eq!(got.len(), 12_333);
    let bodies: HashSet<&str> = got.iter().map(|e| e.body.as_str()).collect();
    assert_eq!(bodies.len(), 12_333, "no line twice");
    for i in (1..=12_345).filter(|i| i % 1000 != 0) {
        assert!(
            bodies.contains(format!("{{\"n\":{i}}}").as_str()),
            "line {i}"
        );
    }
    let line_attr = got[0]
        .attributes
        .iter()
        .find(|a| a.name == "line")
        .expect("line attribute");
    assert_eq!(
        line_attr.value,
        sqs_forwarder::AttributeValue::Number("1".into())
    );
}

#[tokio::test]
async fn gzip_bodies_are_decompressed_including_multiple_members() {
    let mut compressed = Vec::new();
    for part in ["alpha\nbeta\n", "gamma\n"] {
        let mut enc = GzipEncoder::new(part.as_bytes());
        enc.read_to_end(&mut compressed).await.expect("gzip");
    }
    let body = decoded(std::io::Cursor::new(compressed), true);
    let fwd = forwarder(FakeSqs::new(), false);
    let report = lines_into(body, &fwd, (10, 1 << 20)).await;
    assert_eq!(report.sent, 3);
    let bodies: Vec<String> = accepted_by(fwd.transport())
        .iter()
        .map(|e| e.body.clone())
        .collect();
    assert_eq!(bodies, ["alpha", "beta", "gamma"]);

    let not_gzip = decoded(std::io::Cursor::new(b"plain text\n".to_vec()), true);
    let fwd = forwarder(FakeSqs::new(), false);
    let report = lines_into(not_gzip, &fwd, (10, 1 << 20)).await;
    let e = report.read_error.expect("not gzip");
    assert_eq!((e.code, e.retryable), ("InvalidGzip", false));
}

#[tokio::test]
async fn oversize_lines_follow_the_policy() {
    let mut text = "short line\n".to_string();
    text.push_str(&"x".repeat(5000));
    text.push_str("\nlast line\n");
    let small = |oversize| {
        let settings = SendSettings {
            limits: Limits {
                max_message_bytes: 1024,
                ..Limits::default()
            },
            oversize,
            ..SendSettings::default()
        };
        Forwarder::new(FakeSqs::new(), settings, EncodeRules::default())
    };
    let chunking = (100, 1 << 20);

    let fwd = small(OversizePolicy::Fail);
    let report = lines_into(text.as_bytes(), &fwd, chunking).await;
    assert_eq!((report.sent, report.failed), (2, 1));
    let (line, failure) = &report.failures[0];
    assert_eq!(*line, 2);
    assert_eq!(failure.code, "MessageTooLarge");
    assert!(
        failure.message.starts_with("the line is 5000 bytes"),
        "{failure}"
    );
    assert!(!report.retryable);

    let fwd = small(OversizePolicy::Drop);
    let report = lines_into(text.as_bytes(), &fwd, chunking).await;
    assert_eq!((report.sent, report.dropped, report.failed), (2, 1, 0));
    assert!(report.complete());
}

/// Stores payloads in memory, for `OVERSIZE_POLICY=offload`.
#[derive(Debug, Default, Clone)]
struct Store(std::sync::Arc<Mutex<Vec<String>>>);

impl sqs_forwarder::PayloadStore for Store {
    fn bucket(&self) -> &str {
        "payloads"
    }
    fn put<'a>(
        &'a self,
        _key: &'a str,
        payload: String,
    ) -> BoxFuture<'a, Result<(), sqs_forwarder::Failure>> {
        self.0.lock().expect("lock").push(payload);
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn under_offload_lines_above_the_threshold_go_to_s3_but_cut_lines_never() {
    let mut text = "short line\n".to_string();
    text.push_str(&"y".repeat(900));
    text.push('\n');
    text.push_str(&"x".repeat(5000));
    text.push_str("\nlast line\n");
    let store = Store::default();
    let settings = SendSettings {
        limits: Limits {
            max_message_bytes: 1024,
            ..Limits::default()
        },
        oversize: OversizePolicy::Offload,
        offload: sqs_forwarder::OffloadSettings {
            threshold: Some(512),
            ..Default::default()
        },
        ..SendSettings::default()
    };
    let fwd = Forwarder::new(FakeSqs::new(), settings, EncodeRules::default())
        .with_payload_store(store.clone());
    let report = lines_into(text.as_bytes(), &fwd, (100, 1 << 20)).await;
    assert_eq!((report.sent, report.failed), (3, 1));
    // The 900-byte line is in S3 whole; the 5000-byte one, cut at 1025
    // bytes by the reader, is nowhere.
    assert_eq!(*store.0.lock().expect("lock"), vec!["y".repeat(900)]);
    let (line, failure) = &report.failures[0];
    assert_eq!((*line, failure.code.as_str()), (3, "MessageTooLarge"));
    assert!(!failure.retryable);
}

#[tokio::test]
async fn a_retryable_failure_stops_reading() {
    let text: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    let fake = failing(|e: &Entry| (e.body == "line 15").then_some(("ServiceUnavailable", false)));
    let fwd = forwarder(fake, false);
    let report = lines_into(text.as_bytes(), &fwd, (10, 1 << 20)).await;
    assert!(report.retryable);
    assert_eq!(report.failed, 1);
    assert_eq!(report.failures[0].0, 15);
    assert_eq!(
        report.stopped_after,
        Some(20),
        "the chunk of lines 11..=20 failed"
    );
    assert_eq!(report.sent, 19);
}

async fn lines(data: &[u8], cap: usize) -> Vec<Line> {
    let mut r = LineReader::new(data, cap);
    let mut out = Vec::new();
    while let Some(l) = r.next_line().await.expect("read") {
        out.push(l);
    }
    out
}

fn texts(lines: &[Line]) -> Vec<String> {
    lines
        .iter()
        .map(|l| String::from_utf8_lossy(&l.bytes).into_owned())
        .collect()
}

#[tokio::test]
async fn splits_lines_of_every_ending() {
    let got = lines(b"\xEF\xBB\xBFa\r\nbb\n\nccc", 100).await;
    assert_eq!(texts(&got), ["a", "bb", "", "ccc"]);
    let numbers: Vec<u64> = got.iter().map(|l| l.number).collect();
    assert_eq!(numbers, [1, 2, 3, 4]);
    let lens: Vec<u64> = got.iter().map(|l| l.len).collect();
    assert_eq!(lens, [1, 2, 0, 3]);
    assert_eq!(texts(&lines(b"x\n", 100).await), ["x"]);
    assert!(lines(b"", 100).await.is_empty());
    assert_eq!(texts(&lines(b"\n", 100).await), [""]);
    // Only the first line loses a byte order mark, and only at its start.
    assert_eq!(
        lines(b"a\n\xEF\xBB\xBFb", 100).await[1].bytes,
        b"\xEF\xBB\xBFb"
    );
}

#[tokio::test]
async fn long_lines_are_cut_at_the_cap_with_their_length_kept() {
    let mut data = vec![b'x'; 50];
    data.extend_from_slice(b"\r\nshort\n");
    let got = lines(&data, 10).await;
    assert_eq!(got[0].bytes, vec![b'x'; 10]);
    assert_eq!(got[0].len, 51, "the \\r of a cut line counts");
    assert_eq!(texts(&got[1..]), ["short"]);
}

#[tokio::test]
async fn lines_across_small_buffers() {
    let data = b"first line\nsecond line\nthird";
    let reader = tokio::io::BufReader::with_capacity(3, &data[..]);
    let mut r = LineReader::new(reader, 1000);
    let mut got = Vec::new();
    while let Some(l) = r.next_line().await.expect("read") {
        got.push(String::from_utf8(l.bytes).expect("utf8"));
    }
    assert_eq!(got, ["first line", "second line", "third"]);
}

#[test]
fn read_errors_are_classified() {
    let e = read_error(&io::Error::new(io::ErrorKind::InvalidData, "bad header"));
    assert_eq!((e.code, e.retryable), ("InvalidGzip", false));
    let e = read_error(&io::Error::new(io::ErrorKind::ConnectionReset, "reset"));
    assert_eq!((e.code, e.retryable), ("ReadFailed", true));
}
