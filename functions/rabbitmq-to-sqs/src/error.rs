//! Why an invocation failed, as Lambda reports it: each kind of failure a
//! variant of its own, with a short name for Lambda's `errorType` and a text
//! that says what to do. No text ever holds a password.

use crate::ERROR_PREFIX;
use crate::broker::BrokerError;
use crate::drain::PollReport;

/// Why an invocation failed. No variant ever holds a password.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// A scheduled event arrived but no broker is configured.
    #[error(
        "got a scheduled event, but RABBITMQ_URL and RABBITMQ_QUEUES are not set: set them to poll a broker (this function only forwards Amazon MQ aws:rmq events without them)"
    )]
    NotConfigured,
    /// The event is neither a schedule nor an `aws:rmq` batch.
    #[error("unusable event: {0}")]
    BadEvent(String),
    /// The broker could not be reached.
    #[error(transparent)]
    Broker(#[from] BrokerError),
    /// A queue's drain ended with a broker error.
    #[error(
        "polling ended with broker errors after taking {received} messages and sending {sent} to SQS; messages not acknowledged stay with the broker, which redelivers them (so SQS may get some twice): {errors}"
    )]
    Poll {
        /// Messages SQS accepted (acked, unless the error came first).
        sent: u64,
        /// Messages taken.
        received: u64,
        /// Each failed queue and its error.
        errors: String,
        /// The full report.
        report: Box<PollReport>,
    },
    /// Some messages of an `aws:rmq` batch did not reach SQS.
    #[error(
        "{failed} of {total} messages were not sent to SQS ({codes}); failing the invocation so that Lambda returns the batch to the broker{}",
        if *permanent > 0 { format!(" ({permanent} can never be sent: give the queue a delivery limit and a dead-letter exchange, or the batch is retried for ever)") } else { String::new() }
    )]
    Unsent {
        /// Messages not sent.
        failed: usize,
        /// Messages in the batch.
        total: usize,
        /// Of which no retry can send.
        permanent: usize,
        /// The failure codes.
        codes: String,
    },
}

impl HandlerError {
    /// A short name for the kind of failure (Lambda's `errorType`).
    pub fn kind(&self) -> &'static str {
        match self {
            HandlerError::NotConfigured => "NotConfigured",
            HandlerError::BadEvent(_) => "BadEvent",
            HandlerError::Broker(BrokerError::AccessRefused { .. }) => "BrokerAccessRefused",
            HandlerError::Broker(BrokerError::Secret { .. }) => "BrokerSecret",
            HandlerError::Broker(_) => "BrokerUnreachable",
            HandlerError::Poll { .. } => "BrokerError",
            HandlerError::Unsent { .. } => "MessagesNotSent",
        }
    }
}

impl From<HandlerError> for lambda_runtime::Diagnostic {
    fn from(e: HandlerError) -> Self {
        lambda_runtime::Diagnostic {
            error_type: format!("{ERROR_PREFIX}.{}", e.kind()),
            error_message: e.to_string(),
        }
    }
}
