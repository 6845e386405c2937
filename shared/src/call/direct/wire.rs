//! `SendMessageBatch` on the wire, AWS JSON 1.0: the request body
//! (`request.rs`), the answer (`answer.rs`) and the error answer
//! (`error_answer.rs`), mapped to
//! [`EntryResult`](crate::call::transport::EntryResult)s and
//! [`CallError`](crate::call::transport::CallError)s exactly as
//! [`crate::call::sdk::classify_sdk_error`] maps the SDK's.
//!
//! Pure functions, no I/O: every answer shape is unit-tested beside its
//! step. Nothing here panics on what the network sends.

mod answer;
mod error_answer;
mod request;

pub use answer::parse_answer;
pub use error_answer::{call_error, call_error_of, sanitize_error_code};
pub use request::request_body;

/// `X-Amz-Target` of the call.
pub const TARGET: &str = "AmazonSQS.SendMessageBatch";
/// `Content-Type` of AWS JSON 1.0.
pub const CONTENT_TYPE: &str = "application/x-amz-json-1.0";
/// The header of SQS's query-compatible error code (`Code;Sender`).
pub const QUERY_ERROR_HEADER: &str = "x-amzn-query-error";
