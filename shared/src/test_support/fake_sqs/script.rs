//! What a test scripts the fake with: the answer for an entry ([`Reply`]),
//! the entry as the rules see it ([`Attempt`]), and the whole-call errors.

use std::borrow::Cow;

use crate::call::transport::CallError;
use crate::message::encode::Entry;
use crate::send::outcome::Failure;

/// What the fake answers for one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Accept it (or, [`FakeSqs::in_front_of`](super::FakeSqs::in_front_of), send it on).
    Accept,
    /// List it under `Failed`.
    Fail {
        /// The SQS error code.
        code: Cow<'static, str>,
        /// The error's message (empty: the forwarder makes one up).
        message: Cow<'static, str>,
        /// SQS's `SenderFault` flag.
        sender_fault: bool,
    },
}

impl Reply {
    /// `InternalError`, not the sender's fault: retryable.
    pub const INTERNAL: Reply = Reply::fail_static("InternalError", false);
    /// `RequestThrottled`, flagged as the sender's fault: retryable.
    pub const THROTTLED: Reply = Reply::fail_static("RequestThrottled", true);
    /// `InvalidParameterValue`, the sender's fault: permanent.
    pub const INVALID: Reply = Reply::fail_static("InvalidParameterValue", true);

    const fn fail_static(code: &'static str, sender_fault: bool) -> Reply {
        Reply::Fail {
            code: Cow::Borrowed(code),
            message: Cow::Borrowed(""),
            sender_fault,
        }
    }

    /// A failure with this code and flag and no message.
    pub fn fail(code: impl Into<Cow<'static, str>>, sender_fault: bool) -> Reply {
        Reply::Fail {
            code: code.into(),
            message: Cow::Borrowed(""),
            sender_fault,
        }
    }

    /// The same failure with this message (no effect on [`Reply::Accept`]).
    pub fn with_message(self, text: impl Into<Cow<'static, str>>) -> Reply {
        match self {
            Reply::Fail {
                code, sender_fault, ..
            } => Reply::Fail {
                code,
                message: text.into(),
                sender_fault,
            },
            Reply::Accept => Reply::Accept,
        }
    }
}

/// A whole-call `ServiceUnavailable`-like failure: retryable.
pub fn transient(code: &str) -> CallError {
    CallError::Failed(Failure::transient(code, format!("{code} from the fake")))
}

/// A whole-call `RequestThrottled`: retryable.
pub fn throttled() -> CallError {
    CallError::Failed(Failure::transient("RequestThrottled", "slow down"))
}

/// A whole-call failure no retry fixes (`AccessDenied`, a missing queue).
pub fn permanent(code: &str) -> CallError {
    CallError::Failed(Failure::permanent(code, format!("{code} from the fake")))
}

/// `BatchRequestTooLong`: the forwarder splits the batch.
pub fn too_long() -> CallError {
    CallError::TooLong("the fake's batch limit".into())
}

/// One entry of a call, as the entry rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    /// The call's number, from 0.
    pub call: usize,
    /// The entry's id within the call.
    pub id: &'a str,
    /// The entry.
    pub entry: &'a Entry,
    /// How many times the fake has seen this body, this time included.
    pub attempt: u32,
}

impl Attempt<'_> {
    /// The entry's body.
    pub fn body(&self) -> &str {
        &self.entry.body
    }
}
