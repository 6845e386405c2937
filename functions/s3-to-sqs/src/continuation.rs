//! Continuation in lines mode: an object too big for one invocation is
//! read by a chain of them.
//!
//! When the hand-over is due (`CONTINUATION_MARGIN_MS` before the deadline,
//! or after `CONTINUATION_AFTER_LINES` lines), the invocation stops at a
//! line boundary once every line before it is settled (sent, dropped by
//! policy or skipped by the rules), invokes the function itself
//! asynchronously with a [`Continuation`] event, and succeeds. The next
//! invocation reads the object from that offset (a ranged `GetObject`;
//! gzip objects are decompressed from the start and the bytes before the
//! offset skipped), pinned to the version and ETag the first step read: an
//! object replaced mid-chain ends the chain with an error, and versions are
//! never mixed. Lines keep their numbers (the `line` attribute) and FIFO
//! deduplication ids across the chain, so a retried step deduplicates on
//! FIFO queues.
//!
//! The event's text ([`Continuation`], under [`FIELD`]) is read here; the
//! settings are in `continuation/settings.rs`, the self-invocation in
//! `continuation/invoke.rs`, the ranged read in `continuation/resume.rs`.

mod invoke;
mod resume;
mod settings;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use crate::event::{EventError, ObjectEvent, Via};

pub use invoke::{InvokeFuture, LambdaInvoke, SelfInvoke, lambda_client};
pub use resume::{Resumed, open_at};
pub use settings::{
    CONTINUATION, CONTINUATION_AFTER_LINES, CONTINUATION_BUCKETS, CONTINUATION_MARGIN_MS,
    ContinuationSettings, VARIABLES,
};

/// The top-level field that makes an event a continuation event.
pub const FIELD: &str = "s3ToSqsContinuation";

/// The continuation event's format version.
pub const VERSION: u32 = 1;

/// Where a step starts: the byte offset in the object (in the decompressed
/// stream for gzip objects) and the number of the line found there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Start {
    /// Bytes of the (decoded) object before the first line to read.
    pub offset: u64,
    /// The number of the first line to read, from 1.
    pub line: u64,
}

impl Start {
    /// The object's start.
    pub const BEGINNING: Start = Start { offset: 0, line: 1 };
}

/// When a step stops reading and hands the rest on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HandOver {
    /// Hand over once this instant has passed.
    pub at: Option<Instant>,
    /// Hand over after this many lines read in the step.
    pub lines: Option<u64>,
}

impl HandOver {
    /// Never: the object is read to its end.
    pub const NEVER: HandOver = HandOver {
        at: None,
        lines: None,
    };

    /// Whether a step that has read `lines` lines should stop now. A step
    /// reads at least one line, so that a chain always moves on.
    pub fn due(&self, lines: u64) -> bool {
        lines > 0
            && (self.lines.is_some_and(|n| lines >= n)
                || self.at.is_some_and(|at| Instant::now() >= at))
    }
}

/// The continuation event: which object, pinned to which version, from
/// where, and the S3 event the chain started from (its lines' FIFO ids and
/// routing keys are made from it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Continuation {
    /// [`VERSION`].
    pub version: u32,
    /// The chain's id: the same for every step of one object's chain.
    pub chain: String,
    /// This step's number: the first continuation is step 1.
    pub step: u64,
    /// The bucket.
    pub bucket: String,
    /// The object key, decoded.
    pub key: String,
    /// The version the first step read (versioned buckets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    /// The ETag the first step read (no quotes): every step reads the
    /// object only while it still has it.
    pub etag: String,
    /// Bytes of the (decoded) object before the first line to read.
    pub offset: u64,
    /// The number of the first line to read.
    pub line: u64,
    /// The S3 event the chain started from.
    pub event: StartedBy,
}

/// The fields of the S3 event a chain started from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartedBy {
    /// `notification` or `eventbridge`.
    pub via: String,
    /// The event name, `ObjectCreated:Put`.
    pub event_name: String,
    /// When it happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_time: Option<String>,
    /// The bucket's region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// The object size the event gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    /// The event's ETag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The event's version id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    /// The event's sequencer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequencer: Option<String>,
}

/// The version and ETag a chain is pinned to: what the first step's
/// `GetObject` answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pin {
    /// The version id, on versioned buckets.
    pub version_id: Option<String>,
    /// The ETag, without quotes.
    pub etag: Option<String>,
}

/// The chain's id: made from the object and its upload, so that a retried
/// first step names the same chain.
pub fn chain_id(event: &ObjectEvent, pin: &Pin) -> String {
    let mut h = Sha256::new();
    for part in [
        event.bucket.as_str(),
        event.key.as_str(),
        pin.version_id.as_deref().unwrap_or(""),
        pin.etag.as_deref().unwrap_or(""),
        event.sequencer.as_deref().unwrap_or(""),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Continuation {
    /// The event handing the rest of `event`'s object on from `start`.
    /// `None` when the first step's answer carried no ETag to pin to.
    pub fn next(
        event: &ObjectEvent,
        pin: &Pin,
        chain: &str,
        step: u64,
        start: Start,
    ) -> Option<Continuation> {
        Some(Continuation {
            version: VERSION,
            chain: chain.to_owned(),
            step,
            bucket: event.bucket.clone(),
            key: event.key.clone(),
            version_id: pin.version_id.clone(),
            etag: pin.etag.clone()?,
            offset: start.offset,
            line: start.line,
            event: StartedBy {
                via: event.via.as_str().to_owned(),
                event_name: event.event_name.clone(),
                event_time: event.event_time.clone(),
                region: event.region.clone(),
                size: event.size,
                etag: event.etag.clone(),
                version_id: event.version_id.clone(),
                sequencer: event.sequencer.clone(),
            },
        })
    }

    /// The event as the function sends it to itself.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({ FIELD: self })).unwrap_or_default()
    }

    /// Read the value under [`FIELD`], checking every field.
    pub fn parse(raw: &str) -> Result<Continuation, EventError> {
        let bad = |why: String| EventError::Malformed(format!("continuation event: {why}"));
        let mut de = serde_json::Deserializer::from_str(raw);
        let c: Continuation = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| bad(format!("{}: {}", e.path(), e.inner())))?;
        if c.version != VERSION {
            return Err(bad(format!(
                "version {} (this function reads version {VERSION})",
                c.version
            )));
        }
        let checks = [
            (c.chain.is_empty(), "chain is empty"),
            (c.step == 0, "step must be 1 or more"),
            (c.bucket.is_empty(), "bucket is empty"),
            (c.key.is_empty(), "key is empty"),
            (c.etag.is_empty(), "etag is empty"),
            (c.line == 0, "line must be 1 or more"),
            (
                c.offset == 0 && c.line != 1,
                "offset 0 is the object's start: line must be 1",
            ),
            (c.version_id.as_deref() == Some(""), "versionId is empty"),
            (
                c.event.via != Via::Notification.as_str()
                    && c.event.via != Via::EventBridge.as_str(),
                "event.via must be notification or eventbridge",
            ),
            (
                !(c.event.event_name == "ObjectCreated"
                    || c.event.event_name.starts_with("ObjectCreated:")),
                "event.eventName must be an ObjectCreated event",
            ),
        ];
        if let Some((_, why)) = checks.iter().find(|(failed, _)| *failed) {
            return Err(bad((*why).to_owned()));
        }
        Ok(c)
    }

    /// The S3 event the chain started from, as the first step read it.
    pub fn object_event(&self) -> ObjectEvent {
        ObjectEvent {
            via: if self.event.via == Via::EventBridge.as_str() {
                Via::EventBridge
            } else {
                Via::Notification
            },
            event_name: self.event.event_name.clone(),
            event_time: self.event.event_time.clone(),
            region: self.event.region.clone(),
            bucket: self.bucket.clone(),
            key: self.key.clone(),
            size: self.event.size,
            etag: self.event.etag.clone(),
            version_id: self.event.version_id.clone(),
            sequencer: self.event.sequencer.clone(),
            detail_type: None,
            reason: None,
        }
    }

    /// Where this step starts.
    pub fn start(&self) -> Start {
        Start {
            offset: self.offset,
            line: self.line,
        }
    }

    /// The pin: version and ETag.
    pub fn pin(&self) -> Pin {
        Pin {
            version_id: self.version_id.clone(),
            etag: Some(self.etag.clone()),
        }
    }
}

#[cfg(test)]
mod tests;
