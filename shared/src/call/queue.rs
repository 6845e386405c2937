//! The queue the calls go to: its [`QueueTarget`] (a URL, or a name to look
//! up) and what the start-up calls read of it ([`QueueInfo`]), the same for
//! both clients (`sdk.rs`, [`crate::call::direct::discover`]).

use crate::setup::error::SetupError;

/// Where to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueTarget {
    /// A queue URL (`QUEUE_URL`).
    Url(String),
    /// A queue name, optionally in another account, resolved with
    /// `GetQueueUrl` (`QUEUE_NAME`, `QUEUE_OWNER_ACCOUNT_ID`).
    Name {
        /// Queue name.
        name: String,
        /// Owner's AWS account id, for cross-account queues.
        owner_account_id: Option<String>,
    },
}

impl QueueTarget {
    /// Whether the queue is FIFO (its name ends in `.fifo`).
    pub fn is_fifo(&self) -> bool {
        match self {
            QueueTarget::Url(u) => u.trim_end_matches('/').ends_with(".fifo"),
            QueueTarget::Name { name, .. } => name.ends_with(".fifo"),
        }
    }
}

/// What the forwarder knows about its queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueInfo {
    /// The queue URL.
    pub url: String,
    /// Whether it is a FIFO queue.
    pub fifo: bool,
    /// `MaximumMessageSize`, when it could be read.
    pub max_message_bytes: Option<usize>,
    /// `ContentBasedDeduplication` (FIFO), when it could be read.
    pub content_based_deduplication: Option<bool>,
}

/// Whether `code` says the caller may not make the call.
pub(crate) fn is_access_denied(code: &str) -> bool {
    code.contains("AccessDenied")
        || code.contains("NotAuthorized")
        || code == "UnauthorizedOperation"
}

/// The attribute names the start-up calls ask `GetQueueAttributes` for.
pub(crate) fn attribute_names(fifo: bool) -> &'static [&'static str] {
    if fifo {
        &["MaximumMessageSize", "ContentBasedDeduplication"]
    } else {
        &["MaximumMessageSize"]
    }
}

/// What the forwarder knows of the queue at `url` from the attributes
/// `get` returns by name.
pub(crate) fn queue_info<'a>(
    url: String,
    fifo: bool,
    get: impl Fn(&str) -> Option<&'a str>,
) -> QueueInfo {
    let max_message_bytes = get("MaximumMessageSize").and_then(|v| v.parse().ok());
    let content_based_deduplication =
        get("ContentBasedDeduplication").map(|v| v.eq_ignore_ascii_case("true"));
    QueueInfo {
        url,
        fifo,
        max_message_bytes,
        content_based_deduplication,
    }
}

/// `GetQueueAttributes` refused with `code`: without its limits when the
/// refusal is access denied (a warning says so), else the start's error.
pub(crate) fn attributes_refused(
    url: String,
    fifo: bool,
    code: String,
    message: String,
) -> Result<QueueInfo, SetupError> {
    if is_access_denied(&code) {
        tracing::warn!(queue = %url, %code, "GetQueueAttributes is not allowed; using FALLBACK_MESSAGE_BYTES as the queue's message limit (grant sqs:GetQueueAttributes to read the real one)");
        Ok(QueueInfo {
            url,
            fifo,
            max_message_bytes: None,
            content_based_deduplication: None,
        })
    } else {
        Err(SetupError::Queue {
            queue: url,
            code,
            message: format!("GetQueueAttributes failed: {message}"),
        })
    }
}
