//! EMF metrics. Alone in its own test binary: the metrics recorder is global
//! to the process, so no other test may send while this one counts.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqs_forwarder::config::LogFormat;
use sqs_forwarder::encode::EncodeRules;
use sqs_forwarder::limits::Limits;
use sqs_forwarder::transport::{BatchItem, BoxFuture, CallError, EntryResult, Transport};
use sqs_forwarder::{Forwarder, Message, OversizePolicy, SendSettings, observability};

/// Accepts every entry except bodies starting with "bad", which fail for good.
#[derive(Clone, Default)]
struct Endpoint {
    calls: Arc<AtomicUsize>,
    in_flight: Arc<AtomicUsize>,
    max_seen_in_flight: Arc<AtomicUsize>,
    bodies: Arc<Mutex<Vec<String>>>,
    delay: Duration,
}

impl Transport for Endpoint {
    fn send_batch<'a>(
        &'a self,
        items: &'a [BatchItem],
    ) -> BoxFuture<'a, Result<Vec<(String, EntryResult)>, CallError>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_seen_in_flight.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(self.delay).await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            let mut out = Vec::new();
            for item in items {
                self.bodies
                    .lock()
                    .expect("lock")
                    .push(item.entry.body.clone());
                let result = if item.entry.body.starts_with("bad") {
                    EntryResult::Failed {
                        code: "InvalidParameterValue".into(),
                        message: "no".into(),
                        sender_fault: true,
                    }
                } else {
                    EntryResult::Sent {
                        message_id: format!("id-{}", item.id),
                        sequence_number: None,
                    }
                };
                out.push((item.id.clone(), result));
            }
            Ok(out)
        })
    }
}

fn settings(oversize: OversizePolicy) -> SendSettings {
    SendSettings {
        limits: Limits {
            max_entries: 10,
            max_message_bytes: 1024,
            max_request_bytes: 1_048_576,
        },
        oversize,
        ..SendSettings::default()
    }
}

#[tokio::test]
async fn metrics_are_written_as_emf() {
    let obs = observability::init(LogFormat::Text, "SqsForwarderTest", "policies");
    let endpoint = Endpoint::default();
    let fwd = Forwarder::new(
        endpoint,
        settings(OversizePolicy::Drop),
        EncodeRules::default(),
    );
    let _ = obs.flush_to(std::io::sink()); // start from zero
    let msgs = vec![
        Message::new("a", 0),
        Message::new("bad", 1),
        Message::new("z".repeat(2000), 2),
        Message::new("b", 3),
    ];
    fwd.send_all(msgs, None).await;
    let mut out = Vec::new();
    obs.flush_to(&mut out).expect("flush");
    let doc: serde_json::Value = serde_json::from_slice(&out).expect("one EMF JSON document");
    assert_eq!(
        doc["_aws"]["CloudWatchMetrics"][0]["Namespace"],
        "SqsForwarderTest"
    );
    assert_eq!(doc["Service"], "policies");
    assert_eq!(doc["MessagesIn"], 4);
    assert_eq!(doc["MessagesSent"], 2);
    assert_eq!(doc["MessagesFailed"], 1);
    assert_eq!(doc["MessagesDropped"], 1);
    assert_eq!(doc["BatchesSent"], 1);
    assert_eq!(doc["BytesSent"], 2);
}
