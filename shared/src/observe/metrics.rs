//! Metrics, through the `metrics` facade, emitted as CloudWatch Embedded
//! Metric Format by [`crate::observe`].
//!
//! | metric | meaning |
//! |---|---|
//! | `MessagesIn` | messages handed to the forwarder |
//! | `MessagesSent` | messages SQS accepted |
//! | `MessagesFailed` | messages that ended failed (retryable or not) |
//! | `MessagesDropped` | messages dropped by policy (`OVERSIZE_POLICY=drop`); not the records the rules skip, counted under `FilteredOut` and `Unmatched` only |
//! | `BatchesSent` | `SendMessageBatch` calls made |
//! | `BytesSent` | bytes (as SQS counts them) of accepted messages |
//! | `Retries` | entries put back for another attempt |
//! | `OrderInversions` | FIFO groups whose order a partial failure may have broken |
//! | `PayloadsOffloaded` | payloads stored in S3 under `OVERSIZE_POLICY=offload` |
//! | `BytesOffloaded` | bytes of those payloads |
//! | `FilteredOut` | records a `ROUTES` filter dropped (counted by the function) |
//! | `Unmatched` | records no `ROUTES` route matched, dropped under `"unmatched": "drop"` (counted by the function) |

/// Messages handed to the forwarder.
pub const MESSAGES_IN: &str = "MessagesIn";
/// Messages SQS accepted.
pub const MESSAGES_SENT: &str = "MessagesSent";
/// Messages that ended failed.
pub const MESSAGES_FAILED: &str = "MessagesFailed";
/// Messages dropped by policy (not the records the rules skip).
pub const MESSAGES_DROPPED: &str = "MessagesDropped";
/// Calls made.
pub const BATCHES_SENT: &str = "BatchesSent";
/// Bytes of accepted messages.
pub const BYTES_SENT: &str = "BytesSent";
/// Entries retried.
pub const RETRIES: &str = "Retries";
/// Possible FIFO order inversions.
pub const ORDER_INVERSIONS: &str = "OrderInversions";
/// Payloads stored in S3 (claim check).
pub const PAYLOADS_OFFLOADED: &str = "PayloadsOffloaded";
/// Bytes of payloads stored in S3.
pub const BYTES_OFFLOADED: &str = "BytesOffloaded";
/// Records the routing rules' filter dropped ([`crate::route::Skip::FilteredOut`]);
/// the function that asked the rules counts them.
pub const FILTERED_OUT: &str = "FilteredOut";
/// Records no route matched, dropped ([`crate::route::Skip::Unmatched`]);
/// the function that asked the rules counts them.
pub const UNMATCHED: &str = "Unmatched";

pub(crate) fn messages_in(n: usize) {
    metrics::counter!(MESSAGES_IN).increment(n as u64);
}
pub(crate) fn messages_sent(n: usize) {
    metrics::counter!(MESSAGES_SENT).increment(n as u64);
}
pub(crate) fn messages_failed(n: usize) {
    metrics::counter!(MESSAGES_FAILED).increment(n as u64);
}
pub(crate) fn messages_dropped(n: usize) {
    metrics::counter!(MESSAGES_DROPPED).increment(n as u64);
}
pub(crate) fn batch_sent() {
    metrics::counter!(BATCHES_SENT).increment(1);
}
pub(crate) fn bytes_sent(n: usize) {
    metrics::counter!(BYTES_SENT).increment(n as u64);
}
pub(crate) fn retry() {
    metrics::counter!(RETRIES).increment(1);
}
pub(crate) fn order_inversion() {
    metrics::counter!(ORDER_INVERSIONS).increment(1);
}
pub(crate) fn payload_offloaded(bytes: usize) {
    metrics::counter!(PAYLOADS_OFFLOADED).increment(1);
    metrics::counter!(BYTES_OFFLOADED).increment(bytes as u64);
}
