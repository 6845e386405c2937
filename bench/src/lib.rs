//! What the benchmark's tools (`bench`) share with the SDK floor
//! (`bench/sdk-floor`): CPU accounting and Lambda's CPU share ([`cpu`]), the
//! `SendMessageBatch` request and SQS's checks ([`sqs`]), and the captured
//! request bodies ([`captured`]).

pub mod captured;
pub mod cpu;
pub mod sqs;
