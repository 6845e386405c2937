//! Test helpers shared by the test binaries of this folder (`mod common;`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqs_forwarder::limits::Limits;
use sqs_forwarder::transport::{BatchItem, BoxFuture, CallError, EntryResult, Transport};
use sqs_forwarder::{OversizePolicy, SendSettings};

/// Accepts every entry except bodies starting with "bad", which fail for good.
#[derive(Clone, Default)]
pub struct Endpoint {
    pub calls: Arc<AtomicUsize>,
    pub in_flight: Arc<AtomicUsize>,
    pub max_seen_in_flight: Arc<AtomicUsize>,
    pub bodies: Arc<Mutex<Vec<String>>>,
    pub delay: Duration,
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

/// 10 entries, 1 KiB messages, 1 MiB calls, and the given oversize policy.
pub fn settings(oversize: OversizePolicy) -> SendSettings {
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
