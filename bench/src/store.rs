//! The soak's queue of record (`bench stub --store`): every message the stub
//! accepts is kept, per queue (the last segment of the call's `QueueUrl`),
//! with its body, attributes, group id and deduplication id, so that the
//! soak can compare the queue with its input. moto is not used for this: it
//! loses a few messages at 100,000-message scale.
//!
//! A queue whose name ends in `.fifo` is FIFO, with content-based
//! deduplication off (as the project's template makes it): an entry needs a
//! `MessageGroupId` and a `MessageDeduplicationId`, and an entry whose
//! deduplication id the queue accepted less than five minutes ago is
//! answered as accepted (with the first copy's message id and sequence
//! number) and not stored again, as SQS does. Standard queues refuse
//! deduplication ids. Those refusals are counted apart (`invalid`): the
//! functions never cause them.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use serde::Serialize;

use bench_support::sqs::{AttributeValue, BatchEntry};

/// SQS's deduplication window.
pub const DEDUP_WINDOW: Duration = Duration::from_secs(300);

/// One stored message.
#[derive(Debug, Serialize)]
pub struct Stored {
    /// Its SQS message id.
    pub message_id: String,
    /// FIFO: its sequence number (increasing in arrival order).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<String>,
    /// The body.
    pub body: String,
    /// Its attributes.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, AttributeValue>,
    /// Its group id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Its deduplication id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedup: Option<String>,
}

/// One queue: what it holds and what happened to its calls.
#[derive(Debug, Default, Serialize)]
pub struct Queue {
    /// Whether it is FIFO (its name ends in `.fifo`).
    pub fifo: bool,
    /// `SendMessageBatch` calls received (faulted ones included).
    pub calls: u64,
    /// Entries accepted (stored or deduplicated).
    pub accepted: u64,
    /// Messages stored.
    pub stored: u64,
    /// FIFO entries accepted but not stored: their deduplication id was seen
    /// within five minutes.
    pub deduplicated: u64,
    /// Faults injected, by kind.
    pub faults: BTreeMap<String, u64>,
    /// Entries failed by the injector, by code.
    pub entry_faults: BTreeMap<String, u64>,
    /// Entries refused by the SQS checks (size, characters, FIFO fields), by
    /// code: the functions should cause none.
    pub invalid: BTreeMap<String, u64>,
    #[serde(skip)]
    messages: Vec<Stored>,
    #[serde(skip)]
    dedup: HashMap<String, (Instant, String, Option<String>)>,
    #[serde(skip)]
    next_sequence: u64,
}

/// What the queue says about one entry that passed the batch checks.
pub enum Accepted {
    /// Stored, or deduplicated: its message id and sequence number.
    Ok(String, Option<String>),
    /// Refused: code and message.
    Refused(&'static str, String),
}

impl Queue {
    /// A queue by name.
    pub fn new(name: &str) -> Queue {
        Queue {
            fifo: name.ends_with(".fifo"),
            next_sequence: 10_000_000_000_000_000_000,
            ..Queue::default()
        }
    }

    /// Take one entry; `message_id` is the id a new message gets.
    pub fn accept(&mut self, e: &BatchEntry, message_id: String, now: Instant) -> Accepted {
        let refuse = |q: &mut Queue, code: &'static str, msg: &str| {
            *q.invalid.entry(code.to_owned()).or_default() += 1;
            Accepted::Refused(code, msg.to_owned())
        };
        if self.fifo {
            if e.message_group_id.as_deref().is_none_or(str::is_empty) {
                return refuse(
                    self,
                    "MissingParameter",
                    "The request must contain the parameter MessageGroupId.",
                );
            }
            let Some(dedup) = e.message_deduplication_id.as_deref() else {
                return refuse(
                    self,
                    "InvalidParameterValue",
                    "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly",
                );
            };
            if e.delay_seconds.is_some_and(|d| d != 0) {
                return refuse(
                    self,
                    "InvalidParameterValue",
                    "DelaySeconds is not allowed on FIFO queue entries.",
                );
            }
            self.accepted += 1;
            if let Some((at, id, seq)) = self.dedup.get(dedup)
                && now.duration_since(*at) < DEDUP_WINDOW
            {
                self.deduplicated += 1;
                return Accepted::Ok(id.clone(), seq.clone());
            }
            self.next_sequence += 1;
            let seq = Some(self.next_sequence.to_string());
            self.dedup
                .insert(dedup.to_owned(), (now, message_id.clone(), seq.clone()));
            self.store(e, message_id.clone(), seq.clone());
            Accepted::Ok(message_id, seq)
        } else {
            if e.message_deduplication_id.is_some() {
                return refuse(
                    self,
                    "InvalidParameterValue",
                    "The request includes a parameter that is not valid for this queue type: MessageDeduplicationId",
                );
            }
            self.accepted += 1;
            self.store(e, message_id.clone(), None);
            Accepted::Ok(message_id, None)
        }
    }

    fn store(&mut self, e: &BatchEntry, message_id: String, sequence_number: Option<String>) {
        self.stored += 1;
        self.messages.push(Stored {
            message_id,
            sequence_number,
            body: e.message_body.clone(),
            attributes: e.message_attributes.clone(),
            group: e.message_group_id.clone(),
            dedup: e.message_deduplication_id.clone(),
        });
    }

    /// Every stored message as NDJSON, in arrival order.
    pub fn dump(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.messages.len() * 256);
        for m in &self.messages {
            if serde_json::to_writer(&mut out, m).is_ok() {
                out.push(b'\n');
            }
        }
        out
    }
}

/// The queue name of a queue URL: its last path segment.
pub fn queue_name(url: &str) -> &str {
    url.trim_end_matches('/').rsplit('/').next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(body: &str, group: Option<&str>, dedup: Option<&str>) -> BatchEntry {
        serde_json::from_value(serde_json::json!({
            "Id": "0", "MessageBody": body,
            "MessageGroupId": group, "MessageDeduplicationId": dedup,
        }))
        .expect("entry")
    }

    #[test]
    fn fifo_deduplicates_within_the_window_only() {
        let mut q = Queue::new("q.fifo");
        let t0 = Instant::now();
        let a = entry("a", Some("g"), Some("d1"));
        let Accepted::Ok(id1, seq1) = q.accept(&a, "m1".into(), t0) else {
            panic!("refused")
        };
        let Accepted::Ok(id2, seq2) = q.accept(&a, "m2".into(), t0 + Duration::from_secs(299))
        else {
            panic!("refused")
        };
        assert_eq!((id1.as_str(), &seq1), (id2.as_str(), &seq2));
        assert_eq!((q.stored, q.deduplicated, q.accepted), (1, 1, 2));
        assert!(matches!(
            q.accept(&a, "m3".into(), t0 + Duration::from_secs(301)),
            Accepted::Ok(id, _) if id == "m3"
        ));
        assert_eq!(q.stored, 2);
        let dump = String::from_utf8(q.dump()).expect("utf-8");
        assert_eq!(dump.lines().count(), 2);
        assert!(dump.contains("\"dedup\":\"d1\""));
    }

    #[test]
    fn fifo_needs_group_and_dedup_ids_and_standard_refuses_dedup_ids() {
        let mut q = Queue::new("q.fifo");
        let now = Instant::now();
        assert!(matches!(
            q.accept(&entry("a", None, Some("d")), "m".into(), now),
            Accepted::Refused("MissingParameter", _)
        ));
        assert!(matches!(
            q.accept(&entry("a", Some("g"), None), "m".into(), now),
            Accepted::Refused("InvalidParameterValue", _)
        ));
        let mut s = Queue::new("q");
        assert!(matches!(
            s.accept(&entry("a", None, Some("d")), "m".into(), now),
            Accepted::Refused(..)
        ));
        assert!(matches!(
            s.accept(&entry("a", Some("g"), None), "m".into(), now),
            Accepted::Ok(..)
        ));
        assert_eq!(
            q.invalid.values().sum::<u64>() + s.invalid.values().sum::<u64>(),
            3
        );
        assert_eq!(queue_name("http://h:1/123456789012/soak.fifo"), "soak.fifo");
    }
}
