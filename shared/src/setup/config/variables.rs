//! The shared crate's table of variables: each one's name, default ("" =
//! none) and what is allowed, written once. [`super::Config::read`] reads
//! them through it, its errors say its `allowed`, and the configuration
//! table of `docs/configuration.md` is checked against [`VARIABLES`], in order.

use crate::call::SqsClient;
use crate::message::encode::{BodyEncoding, DEFAULT_ENCODING_ATTRIBUTE};
use crate::message::limits::MIN_MESSAGE_BYTES as MIN;
use crate::message::limits::{
    MAX_BATCH_ENTRIES as ENTRIES, MAX_MESSAGE_BYTES as MESSAGE, MAX_REQUEST_BYTES,
};
use crate::send::OversizePolicy;
use crate::send::batch::FifoOrder;
use crate::send::offload::{LEGACY_SIZE_ATTRIBUTE, SIZE_ATTRIBUTE, SizeAttribute};
use crate::setup::env::{Variable, Word};

use super::LogFormat;

const ENTRIES_U: u64 = ENTRIES as u64;
const MIN_U: u64 = MIN as u64;
const MESSAGE_U: u64 = MESSAGE as u64;

/// `QUEUE_URL`.
pub const QUEUE_URL: Variable = Variable::text(
    "QUEUE_URL",
    "",
    "an SQS queue URL such as https://sqs.us-east-1.amazonaws.com/123456789012/my-queue",
);
/// `QUEUE_NAME`.
pub const QUEUE_NAME: Variable = Variable::text(
    "QUEUE_NAME",
    "",
    "a queue name: 1..80 of A-Z a-z 0-9 - _, with .fifo at the end for FIFO queues",
);
/// `QUEUE_OWNER_ACCOUNT_ID`.
pub const QUEUE_OWNER_ACCOUNT_ID: Variable =
    Variable::text("QUEUE_OWNER_ACCOUNT_ID", "", "a 12-digit AWS account id");
/// `SQS_REGION`.
pub const SQS_REGION: Variable = Variable::text(
    "SQS_REGION",
    "",
    "an AWS region name such as eu-west-1 or cn-north-1",
);
/// `SQS_CLIENT`.
pub const SQS_CLIENT: Variable = Variable::words::<SqsClient>("SQS_CLIENT", "direct");

/// `SQS_CLIENT`'s words.
impl Word for SqsClient {
    const WORDS: &'static [(&'static str, Self)] =
        &[("sdk", SqsClient::Sdk), ("direct", SqsClient::Direct)];
}

// The words of the other enums the variables set, beside their table.
impl Word for BodyEncoding {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("auto", BodyEncoding::Auto),
        ("always", BodyEncoding::Always),
        ("never", BodyEncoding::Never),
    ];
}

impl Word for FifoOrder {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("strict", FifoOrder::Strict),
        ("batched", FifoOrder::Batched),
    ];
}

impl Word for OversizePolicy {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("fail", OversizePolicy::Fail),
        ("drop", OversizePolicy::Drop),
        ("offload", OversizePolicy::Offload),
    ];
}

impl Word for SizeAttribute {
    const WORDS: &'static [(&'static str, Self)] = &[
        (SIZE_ATTRIBUTE, SizeAttribute::Extended),
        (LEGACY_SIZE_ATTRIBUTE, SizeAttribute::Legacy),
    ];
}

/// `ASSUME_ROLE_ARN`.
pub const ASSUME_ROLE_ARN: Variable = Variable::text(
    "ASSUME_ROLE_ARN",
    "",
    "an IAM role ARN such as arn:aws:iam::123456789012:role/sqs-sender",
);
/// `ASSUME_ROLE_SESSION_NAME`.
pub const ASSUME_ROLE_SESSION_NAME: Variable = Variable::text(
    "ASSUME_ROLE_SESSION_NAME",
    "sqs-forwarder",
    "2..64 of A-Z a-z 0-9 _ + = , . @ -",
);
/// `ASSUME_ROLE_EXTERNAL_ID`.
pub const ASSUME_ROLE_EXTERNAL_ID: Variable = Variable::text(
    "ASSUME_ROLE_EXTERNAL_ID",
    "",
    "2..1224 of A-Z a-z 0-9 _ + = , . @ : / -",
);
/// `MAX_BATCH_ENTRIES`.
pub const MAX_BATCH_ENTRIES: Variable =
    Variable::number("MAX_BATCH_ENTRIES", "10", 1, ENTRIES_U, "");
/// `MAX_MESSAGE_BYTES`.
pub const MAX_MESSAGE_BYTES: Variable =
    Variable::number("MAX_MESSAGE_BYTES", "", MIN_U, MESSAGE_U, " bytes");
/// `FALLBACK_MESSAGE_BYTES`.
pub const FALLBACK_MESSAGE_BYTES: Variable = Variable::number(
    "FALLBACK_MESSAGE_BYTES",
    "1048576",
    MIN_U,
    MESSAGE_U,
    " bytes",
);
/// `MAX_BATCH_BYTES`.
pub const MAX_BATCH_BYTES: Variable = Variable::number(
    "MAX_BATCH_BYTES",
    "1048576",
    MIN_U,
    MAX_REQUEST_BYTES as u64,
    " bytes",
);
/// `MAX_IN_FLIGHT` (unset: [`default_max_in_flight`]).
pub const MAX_IN_FLIGHT: Variable = Variable::number("MAX_IN_FLIGHT", "", 1, 64, "");
/// `WINDOW_MESSAGES`.
pub const WINDOW_MESSAGES: Variable = Variable::number("WINDOW_MESSAGES", "1000", 1, 1_000_000, "");
/// `WINDOW_BYTES`.
pub const WINDOW_BYTES: Variable = Variable::number(
    "WINDOW_BYTES",
    "8388608",
    1_048_576,
    1_073_741_824,
    " bytes",
);
/// `RETRY_MAX_ATTEMPTS`.
pub const RETRY_MAX_ATTEMPTS: Variable = Variable::number("RETRY_MAX_ATTEMPTS", "5", 1, 20, "");
/// `RETRY_BASE_DELAY_MS`.
pub const RETRY_BASE_DELAY_MS: Variable =
    Variable::number("RETRY_BASE_DELAY_MS", "50", 1, 60_000, " ms");
/// `RETRY_MAX_DELAY_MS`.
pub const RETRY_MAX_DELAY_MS: Variable =
    Variable::number("RETRY_MAX_DELAY_MS", "2000", 1, 300_000, " ms");
/// `CALL_TIMEOUT_MS`.
pub const CALL_TIMEOUT_MS: Variable =
    Variable::number("CALL_TIMEOUT_MS", "10000", 100, 900_000, " ms");
/// `DEADLINE_MARGIN_MS`.
pub const DEADLINE_MARGIN_MS: Variable =
    Variable::number("DEADLINE_MARGIN_MS", "500", 0, 60_000, " ms");
/// `OVERSIZE_POLICY`.
pub const OVERSIZE_POLICY: Variable = Variable::words::<OversizePolicy>("OVERSIZE_POLICY", "fail");
/// `OFFLOAD_BUCKET`.
pub const OFFLOAD_BUCKET: Variable = Variable::text(
    "OFFLOAD_BUCKET",
    "",
    "an S3 bucket name: 3..63 of a-z 0-9 . -, starting and ending with a letter or digit",
);
/// `OFFLOAD_KEY_PREFIX`.
pub const OFFLOAD_KEY_PREFIX: Variable = Variable::text(
    "OFFLOAD_KEY_PREFIX",
    "",
    "at most 512 of A-Z a-z 0-9 ! - _ . * ' ( ) /",
);
/// `OFFLOAD_THRESHOLD_BYTES`.
pub const OFFLOAD_THRESHOLD_BYTES: Variable =
    Variable::number("OFFLOAD_THRESHOLD_BYTES", "", MIN_U, MESSAGE_U, " bytes");
/// `OFFLOAD_ALWAYS`.
pub const OFFLOAD_ALWAYS: Variable = Variable::flag("OFFLOAD_ALWAYS", "false");
/// `OFFLOAD_SIZE_ATTRIBUTE`.
pub const OFFLOAD_SIZE_ATTRIBUTE: Variable =
    Variable::words::<SizeAttribute>("OFFLOAD_SIZE_ATTRIBUTE", SIZE_ATTRIBUTE);
/// `OFFLOAD_FORCE_PATH_STYLE`.
pub const OFFLOAD_FORCE_PATH_STYLE: Variable = Variable::flag("OFFLOAD_FORCE_PATH_STYLE", "false");
/// `AGGREGATE`.
pub const AGGREGATE: Variable = Variable::flag("AGGREGATE", "false");
/// `AGGREGATE_BYTES`.
pub const AGGREGATE_BYTES: Variable =
    Variable::number("AGGREGATE_BYTES", "65536", MIN_U, MESSAGE_U, " bytes");
/// `BODY_ENCODING`.
pub const BODY_ENCODING: Variable = Variable::words::<BodyEncoding>("BODY_ENCODING", "auto");
/// `ENCODING_ATTRIBUTE`.
pub const ENCODING_ATTRIBUTE: Variable = Variable::text(
    "ENCODING_ATTRIBUTE",
    DEFAULT_ENCODING_ATTRIBUTE,
    "an SQS attribute name: 1..256 of A-Z a-z 0-9 _ - ., no leading, trailing or double period, no AWS./Amazon. prefix",
);
/// `FIFO_ORDER`.
pub const FIFO_ORDER: Variable = Variable::words::<FifoOrder>("FIFO_ORDER", "strict");
/// `MESSAGE_GROUP_ID`.
pub const MESSAGE_GROUP_ID: Variable = Variable::text(
    "MESSAGE_GROUP_ID",
    "",
    "1..128 ASCII letters, digits or punctuation",
);
/// `METRICS_NAMESPACE`.
pub const METRICS_NAMESPACE: Variable = Variable::text(
    "METRICS_NAMESPACE",
    "SqsForwarder",
    "1..255 printable ASCII characters",
);
/// `LOG_FORMAT`.
pub const LOG_FORMAT: Variable = Variable::words::<LogFormat>("LOG_FORMAT", "auto");

/// Every variable [`super::Config::read`] reads, in the order of the table
/// in `docs/configuration.md`.
pub const VARIABLES: &[Variable] = &[
    QUEUE_URL,
    QUEUE_NAME,
    QUEUE_OWNER_ACCOUNT_ID,
    SQS_REGION,
    SQS_CLIENT,
    ASSUME_ROLE_ARN,
    ASSUME_ROLE_SESSION_NAME,
    ASSUME_ROLE_EXTERNAL_ID,
    MAX_BATCH_ENTRIES,
    MAX_MESSAGE_BYTES,
    FALLBACK_MESSAGE_BYTES,
    MAX_BATCH_BYTES,
    MAX_IN_FLIGHT,
    WINDOW_MESSAGES,
    WINDOW_BYTES,
    RETRY_MAX_ATTEMPTS,
    RETRY_BASE_DELAY_MS,
    RETRY_MAX_DELAY_MS,
    CALL_TIMEOUT_MS,
    DEADLINE_MARGIN_MS,
    OVERSIZE_POLICY,
    OFFLOAD_BUCKET,
    OFFLOAD_KEY_PREFIX,
    OFFLOAD_THRESHOLD_BYTES,
    OFFLOAD_ALWAYS,
    OFFLOAD_SIZE_ATTRIBUTE,
    OFFLOAD_FORCE_PATH_STYLE,
    AGGREGATE,
    AGGREGATE_BYTES,
    BODY_ENCODING,
    ENCODING_ATTRIBUTE,
    FIFO_ORDER,
    MESSAGE_GROUP_ID,
    METRICS_NAMESPACE,
    LOG_FORMAT,
];

/// The variable Lambda sets to the function's memory, in MB; read for
/// `MAX_IN_FLIGHT`'s default (not a setting of ours: not in [`VARIABLES`]).
pub const MEMORY_SIZE_VARIABLE: &str = "AWS_LAMBDA_FUNCTION_MEMORY_SIZE";

/// `MAX_IN_FLIGHT` when it is not set: one call in flight per 64 MB of the
/// function's memory, at least 16 and at most 64 (16 up to 1,024 MB, 27 at
/// 1,769 MB); 4 outside Lambda. Lambda gives a function CPU in proportion to
/// its memory (1,769 MB = one vCPU), so the CPU a call costs takes less wall
/// time on a larger function, and more calls must be in flight to keep it
/// busy while answers are a round trip away: at 1,769 MB and 10 ms round
/// trips, 4 calls in flight kept a 10,000-record event waiting on the
/// network. On a small function, calls of small messages cost little
/// memory, and more of them out means more answers back at each wake-up:
/// at 128 MB with 10 ms round trips, 16 in flight cost 1.3× the CPU per
/// record of instant answers, where 4 cost 1.8× (see
/// `bench/notes/2026-12-03-slow-answer-tax.md`). What large calls may hold at once is
/// bounded by [`default_in_flight_bytes`] instead.
pub fn default_max_in_flight(memory_mb: Option<u64>) -> usize {
    memory_mb.map_or(4, |mb| (mb / 64).clamp(16, 64) as usize)
}

/// The bytes the calls in flight may carry together when `MAX_IN_FLIGHT`
/// is not set: one full call (`max_batch_bytes`) per 64 MB of the
/// function's memory, at least 4 and at most 64 (4 MiB of 1 MiB calls up to
/// 256 MB): what the calls in flight could hold when at most that many were
/// out, so memory stays where it was while small calls go out 16 at a time.
/// `None` outside Lambda (the count alone bounds them).
pub fn default_in_flight_bytes(memory_mb: Option<u64>, max_batch_bytes: usize) -> Option<usize> {
    memory_mb.map(|mb| ((mb / 64).clamp(4, 64) as usize).saturating_mul(max_batch_bytes))
}
