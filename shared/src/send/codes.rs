//! Failure codes: every code the forwarder writes itself, named once with
//! its cause, and the one reading of an AWS SDK error as (code, message).
//!
//! A [`Failure`](crate::Failure) carries SQS's own code when SQS gave one
//! (`InvalidParameterValue`, `RequestThrottled`, `KmsAccessDenied`, ...) and
//! one of these otherwise. Each constant's doc says what happened and which
//! [`Cause`](crate::Cause) it has ([`Cause::of`](crate::Cause::of) decides,
//! from the code and its retryability); a function acts on the cause, or on
//! a question [`Failure`](crate::Failure) answers (`is_deadline`), never on
//! a code string.

#[cfg(feature = "sdk")]
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};

// Calls that went wrong on the way (transient).

/// A call got no answer within its limit (`CALL_TIMEOUT_MS`, the SDK's
/// operation timeout, the S3 put's). Transient.
pub const TIMEOUT: &str = "Timeout";
/// A call could not be made: no connection, a reset, a proxy or TLS
/// failure. Transient.
pub const CONNECTION_ERROR: &str = "ConnectionError";
/// A call's answer could not be read or made no sense. Transient.
pub const RESPONSE_ERROR: &str = "ResponseError";
/// An error with no code of its own: a service error without a code, or an
/// SDK error of a kind the forwarder does not know. Transient when it comes
/// from a call, else as its caller says.
pub const UNKNOWN_ERROR: &str = "UnknownError";
/// The credentials could not be loaded (a provider failing or timing out).
/// Transient.
pub const CREDENTIALS_ERROR: &str = "CredentialsError";

// The forwarder's own reasons for not sending a message now (transient).

/// The invocation's deadline (less the margin) came before the message was
/// sent or offloaded. Transient; [`Failure::is_deadline`](crate::Failure::is_deadline).
pub const DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
/// An earlier message of the same FIFO group failed, so this one was held
/// back to keep the group's order. Transient.
pub const GROUP_BLOCKED: &str = "GroupBlocked";
/// SQS's answer did not mention an entry of the call. Transient.
pub const MISSING_RESULT: &str = "MissingResult";
/// The send loop could not schedule the message (an internal limit).
/// Transient.
pub const UNSCHEDULABLE: &str = "Unschedulable";

// The message's content (permanent, `Cause::Content`).

/// A message with an empty body (SQS takes none).
pub const EMPTY_BODY: &str = "EmptyBody";
/// A body with characters SQS refuses (under `BODY_ENCODING=reject`).
pub const INVALID_MESSAGE_CONTENTS: &str = "InvalidMessageContents";
/// An attribute name SQS refuses.
pub const INVALID_ATTRIBUTE_NAME: &str = "InvalidAttributeName";
/// An attribute data type SQS refuses.
pub const INVALID_ATTRIBUTE_TYPE: &str = "InvalidAttributeType";
/// An attribute value SQS refuses (text it cannot hold, a bad number).
pub const INVALID_ATTRIBUTE_VALUE: &str = "InvalidAttributeValue";
/// More attributes than SQS allows on one message.
pub const TOO_MANY_ATTRIBUTES: &str = "TooManyAttributes";
/// A group id SQS refuses (too long, or characters outside its set).
pub const INVALID_GROUP_ID: &str = "InvalidGroupId";
/// A deduplication id SQS refuses.
pub const INVALID_DEDUPLICATION_ID: &str = "InvalidDeduplicationId";
/// SQS's code for a parameter it refuses (an entry's content).
pub const INVALID_PARAMETER_VALUE: &str = "InvalidParameterValue";
/// A FIFO message without a group id.
pub const MISSING_GROUP_ID: &str = "MissingGroupId";
/// A FIFO message without a deduplication id on a queue without
/// content-based deduplication.
pub const MISSING_DEDUPLICATION_ID: &str = "MissingDeduplicationId";
/// A delay SQS refuses (out of range, or on a FIFO queue).
pub const INVALID_DELAY: &str = "InvalidDelay";
/// An attribute the SDK refused to build (aws-sdk-sqs client only).
pub const INVALID_ATTRIBUTE: &str = "InvalidAttribute";
/// An entry the SDK refused to build (aws-sdk-sqs client only).
pub const INVALID_ENTRY: &str = "InvalidEntry";
/// A record the routing rules (`ROUTES`) cannot shape as they say: the
/// `body` field it lacks or data that is not JSON, a `Number` attribute
/// whose value is not a number, an `attributes_from` that is not an object
/// of attributes. Made with [`Failure::content`](crate::Failure::content).
pub const SHAPE_FAILED: &str = "ShapeFailed";

// Size (permanent, `Cause::TooLarge`).

/// Larger than the queue's `MaximumMessageSize` under the oversize policy.
pub const MESSAGE_TOO_LARGE: &str = "MessageTooLarge";
/// SQS's code for a message larger than its limit.
pub const MESSAGE_TOO_LONG: &str = "MessageTooLong";
/// SQS's code for a call larger than 1 MiB (the packer never builds one).
pub const BATCH_REQUEST_TOO_LONG: &str = "BatchRequestTooLong";

// The deployment (permanent, `Cause::Deployment`).

/// `OVERSIZE_POLICY=offload` without a payload store (`OFFLOAD_BUCKET`).
pub const OFFLOAD_NOT_CONFIGURED: &str = "OffloadNotConfigured";
/// The claim-check `PutObject` failed (its own code in the message).
/// Permanent or transient as the S3 error is.
pub const OFFLOAD_FAILED: &str = "OffloadFailed";
/// A request could not be built (a queue URL or entry the HTTP layer
/// cannot carry).
pub const REQUEST_CONSTRUCTION_FAILED: &str = "RequestConstructionFailed";
/// A request could not be signed.
pub const SIGNING_FAILED: &str = "SigningFailed";

/// An AWS SDK error as (code, message), one reading for every SDK call the
/// project makes (SQS start-up and receive calls, the S3 put and get,
/// Secrets Manager): a service error's own code and message
/// ([`UNKNOWN_ERROR`] when it has no code); a timeout, [`TIMEOUT`]; a
/// dispatch failure (no connection), [`CONNECTION_ERROR`]; an unreadable
/// answer, [`RESPONSE_ERROR`]; a request that could not be built,
/// [`REQUEST_CONSTRUCTION_FAILED`]; anything else, [`UNKNOWN_ERROR`]. The
/// message of those is the error's source chain ([`error_chain`]), which
/// holds no secret (credentials never appear in SDK errors).
#[cfg(feature = "sdk")]
pub fn sdk_error_parts<E, R>(e: &SdkError<E, R>) -> (String, String)
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + 'static,
{
    match e {
        SdkError::ServiceError(se) => (
            se.err().code().unwrap_or(UNKNOWN_ERROR).to_owned(),
            se.err().message().unwrap_or("").to_owned(),
        ),
        SdkError::TimeoutError(_) => (TIMEOUT.to_owned(), "the call timed out".to_owned()),
        SdkError::DispatchFailure(_) => (
            CONNECTION_ERROR.to_owned(),
            format!("the call could not be made: {}", error_chain(e)),
        ),
        SdkError::ResponseError(_) => (
            RESPONSE_ERROR.to_owned(),
            format!("the answer could not be read: {}", error_chain(e)),
        ),
        SdkError::ConstructionFailure(_) => (
            REQUEST_CONSTRUCTION_FAILED.to_owned(),
            format!("the request could not be built: {}", error_chain(e)),
        ),
        _ => (UNKNOWN_ERROR.to_owned(), error_chain(e)),
    }
}

/// An error and its sources, each once: `loading credentials: service
/// error: ... (AccessDenied): User ... is not authorized ...`, without the
/// raw response the SDK's debug output would add (nor, for the direct
/// client's HTTP errors, any request header).
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    parts.join(": ")
}
