//! A request refused before anything was sent, with the HTTP status, a
//! machine-readable code and a human message.

use lambda_http::http::StatusCode;

/// Why a request was refused before anything was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The HTTP status.
    pub status: StatusCode,
    /// A machine-readable code (`InvalidJson`, `BodyTooLarge`, ...).
    pub code: &'static str,
    /// A human-readable message. Never holds a body or a header value.
    pub message: String,
}

impl Rejection {
    /// A rejection with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Rejection {
            status,
            code,
            message: message.into(),
        }
    }

    /// 400: something in the request is malformed.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Rejection::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 413: the body, or one message in it, is too large, or holds too many
    /// messages.
    pub fn too_large(code: &'static str, message: impl Into<String>) -> Self {
        Rejection::new(StatusCode::PAYLOAD_TOO_LARGE, code, message)
    }
}
