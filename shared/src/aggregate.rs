//! Aggregation: several small records in one SQS message, and back.
//!
//! SQS bills a request per 64 KiB chunk, and a message per record costs one
//! request per ten records however small they are. With `AGGREGATE=true` the
//! forwarder packs records bound for the same queue, group and delay into
//! one message of up to `AGGREGATE_BYTES` ([`crate::send`] does the packing;
//! this module owns the format):
//!
//! * the message carries the attribute [`MARKER_ATTRIBUTE`]
//!   (`sqs-forwarder.aggregate`, `String`, the format's [`VERSION`], `1`), so
//!   a consumer tells an aggregate from a plain message;
//! * its body is one JSON object, `{"v":1,"records":[...]}`, each record
//!   `{"body":"...","attributes":{...},"deduplicationId":"..."}`: the body it
//!   would have had as a message of its own (base64 and marked when the
//!   encoding policy says so), its attributes in the shape Lambda's SQS
//!   event gives `messageAttributes` (`dataType`, `stringValue`,
//!   `binaryValue` in base64), and, on FIFO targets, its own deduplication
//!   id; the last two only when the record has them.
//!
//! [`read::records`] is the consumer's side: an aggregate or a plain
//! message in, its records out, each with an id (`<message id>:<index>`).
//! `docs/aggregation.md` states the format and the rules of what is
//! aggregated; `examples/consumer-python` reads it in Python.

pub mod read;
pub(crate) mod write;

/// The attribute that marks an aggregate.
pub const MARKER_ATTRIBUTE: &str = "sqs-forwarder.aggregate";
/// The format's version: the marker's value and the body's `v`.
pub const VERSION: &str = "1";

/// Whether an aggregate ends after the record with this deduplication id:
/// for about one record in [`CUT_EVERY`], chosen by the id alone (FNV-1a,
/// a hash that never changes with the toolchain). The records between two
/// such cuts are packed from the last one back, so their aggregates depend
/// on where they end, not on where a run starts: a retried batch starting
/// from a later record (a Kinesis retry from its checkpoint) makes the same
/// aggregates with the same deduplication ids, which SQS deduplicates, but
/// for its first one in each group.
pub fn cuts_after(id: &str) -> bool {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h.is_multiple_of(CUT_EVERY)
}

/// On average, records per aggregate at most when records carry
/// deduplication ids (FIFO targets); see [`cuts_after`].
pub const CUT_EVERY: u64 = 64;
