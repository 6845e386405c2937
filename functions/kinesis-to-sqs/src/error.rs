//! Why an invocation fails, as Lambda reports it: each kind a variant, with
//! the `errorType` Lambda gets (`KinesisToSqs.<kind>`, [`InvocationError::kind`]).
//!
//! A failed invocation makes Lambda deliver the whole batch again; records
//! that merely failed to reach SQS are not errors but `batchItemFailures`.

use crate::ERROR_PREFIX;
use crate::checkpoint::AnswerError;

/// Why an invocation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvocationError {
    /// The event is not a Kinesis event this function can read (the message
    /// names the field at fault: `[Records[1].kinesis.data] invalid value`).
    #[error("malformed Kinesis event: {0}")]
    InvalidEvent(String),
    /// The answer cannot name a record that must be delivered again.
    #[error(transparent)]
    Answer(#[from] AnswerError),
}

impl InvocationError {
    /// The kind of failure: Lambda's `errorType` after the prefix.
    pub fn kind(&self) -> &'static str {
        match self {
            InvocationError::InvalidEvent(_) => "InvalidEvent",
            InvocationError::Answer(AnswerError::NoSequenceNumber { .. }) => "NoSequenceNumber",
        }
    }
}

impl From<InvocationError> for lambda_runtime::Diagnostic {
    fn from(e: InvocationError) -> Self {
        lambda_runtime::Diagnostic {
            error_type: format!("{ERROR_PREFIX}.{}", e.kind()),
            error_message: e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_error_type() {
        let d: lambda_runtime::Diagnostic =
            InvocationError::InvalidEvent("[Records] x".into()).into();
        assert_eq!(d.error_type, "KinesisToSqs.InvalidEvent");
        assert_eq!(d.error_message, "malformed Kinesis event: [Records] x");
        let d: lambda_runtime::Diagnostic = InvocationError::from(AnswerError::NoSequenceNumber {
            index: 2,
            code: "DeadlineExceeded".into(),
        })
        .into();
        assert_eq!(d.error_type, "KinesisToSqs.NoSequenceNumber");
        assert!(d.error_message.contains("record 2"), "{}", d.error_message);
    }
}
