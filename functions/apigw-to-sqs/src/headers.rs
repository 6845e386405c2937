//! From request headers to SQS parameters and message attributes.
//!
//! | header | SQS |
//! |---|---|
//! | `X-Message-Group-Id` | `MessageGroupId` of every message |
//! | `X-Message-Deduplication-Id` or `Idempotency-Key` | `MessageDeduplicationId` (FIFO queues only; `-<index>` appended per message of a batch) |
//! | `X-Delay-Seconds` | `DelaySeconds` (standard queues only) |
//! | each header of `ATTRIBUTE_HEADERS` | a `String` attribute |
//!
//! A malformed value is a 400 that names the header, never its value.
//!
//! A REST API event (payload 1.0) carries each header twice: in `headers`
//! (API Gateway keeps the last value of a repeated one) and in
//! `multiValueHeaders` (every value, in order). `lambda_http` lets the
//! former replace the latter, so a header sent twice would read as its last
//! value. [`prefer_multi_value`] makes `multiValueHeaders` win wherever it
//! names a header, before the event becomes a request: attributes, routing
//! and the group, deduplication and delay headers all see every value. An
//! Application Load Balancer event carries `multiValueHeaders` only when
//! its target group has multi-value headers on (then it has no `headers`),
//! read the same way; with them off, `headers` holds the last value of a
//! repeated header, as the load balancer chose it. An HTTP API or function
//! URL event (payload 2.0) has `headers` only, where API Gateway has
//! already joined a repeated header's values with commas.
//!
//! What a FIFO queue needs (a group id, a deduplication id, no delay) is
//! checked here against the one queue the request goes to. Under routing
//! rules each message's queue is known only once the rules have read it:
//! those checks are then the target's, per message ([`Targets::Routed`]).

use lambda_http::http::{HeaderMap, HeaderName, StatusCode};
use lambda_http::request::LambdaRequest;
use sqs_forwarder::message::encode::{EncodeRules, check_attribute};
use sqs_forwarder::message::limits::{MAX_DELAY_SECONDS, MAX_ID_CHARS};
use sqs_forwarder::{Attribute, Body, Message};

use crate::reject::Rejection;
use crate::settings::Settings;

/// The message group id header.
pub const GROUP_ID: HeaderName = HeaderName::from_static("x-message-group-id");
/// The deduplication id header.
pub const DEDUPLICATION_ID: HeaderName = HeaderName::from_static("x-message-deduplication-id");
/// The standard idempotency key header (IETF httpapi draft); its value may be
/// a quoted structured-field string.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
/// The delay header.
pub const DELAY_SECONDS: HeaderName = HeaderName::from_static("x-delay-seconds");

/// What the headers say about every message of a request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    /// `MessageGroupId`.
    pub group_id: Option<String>,
    /// `MessageDeduplicationId` (before the per-message suffix of a batch).
    pub deduplication_id: Option<String>,
    /// `DelaySeconds`.
    pub delay_seconds: Option<i32>,
    /// Attributes from `ATTRIBUTE_HEADERS`.
    pub attributes: Vec<Attribute>,
}

/// Make every header `multiValueHeaders` names read as all its values: in
/// a REST API or load balancer event, each such header of `headers` (one
/// value, the last) is replaced by the list. Headers only in `headers` stay
/// as they are; other events are left alone.
pub fn prefer_multi_value(event: &mut LambdaRequest) {
    let (headers, multi) = match event {
        LambdaRequest::ApiGatewayV1(r) => (&mut r.headers, &r.multi_value_headers),
        LambdaRequest::Alb(r) => (&mut r.headers, &r.multi_value_headers),
        _ => return,
    };
    for name in multi.keys() {
        headers.remove(name);
        for value in multi.get_all(name) {
            headers.append(name.clone(), value.clone());
        }
    }
}

fn invalid(header: &HeaderName, why: impl std::fmt::Display) -> Rejection {
    Rejection::bad_request("InvalidHeader", format!("{header}: {why}"))
}

/// The header's one value, trimmed; `None` when absent. Repeated headers
/// must agree.
fn single(headers: &HeaderMap, name: &HeaderName) -> Result<Option<String>, Rejection> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.any(|v| v != first) {
        return Err(invalid(name, "given more than once with different values"));
    }
    let text = first
        .to_str()
        .map_err(|_| invalid(name, "the value must be visible ASCII"))?
        .trim();
    if text.is_empty() {
        return Err(invalid(name, "the value is empty"));
    }
    Ok(Some(text.to_owned()))
}

fn check_id(name: &HeaderName, id: &str) -> Result<(), Rejection> {
    if sqs_forwarder::message::fifo_id::is_valid(id) {
        Ok(())
    } else {
        Err(invalid(
            name,
            format!("must be 1..={MAX_ID_CHARS} ASCII letters, digits or punctuation"),
        ))
    }
}

/// Where a request's messages go, for the checks that depend on the queue.
#[derive(Debug, Clone, Copy)]
pub enum Targets<'a> {
    /// One queue, with these encoding rules: a FIFO queue's needs are
    /// checked here, for the whole request (`400 MissingHeader`,
    /// `InvalidHeader`).
    One(&'a EncodeRules),
    /// The routing rules pick each message's queue: each target checks its
    /// own needs per message (`MissingGroupId`, `MissingDeduplicationId`,
    /// `InvalidDelay`, content faults); the deduplication id is kept when
    /// any target is FIFO (the router takes it off for standard ones).
    Routed {
        /// Whether any target is a FIFO queue.
        any_fifo: bool,
    },
}

/// Read the headers, given the queue's encoding rules (FIFO or not, default
/// group id, content-based deduplication).
pub fn read(
    headers: &HeaderMap,
    settings: &Settings,
    rules: &EncodeRules,
) -> Result<Params, Rejection> {
    read_for(headers, settings, Targets::One(rules))
}

/// Read the headers for the queue or queues the request goes to.
pub fn read_for(
    headers: &HeaderMap,
    settings: &Settings,
    targets: Targets<'_>,
) -> Result<Params, Rejection> {
    let (rules, keep_deduplication) = match targets {
        Targets::One(rules) => (Some(rules), rules.fifo),
        Targets::Routed { any_fifo } => (None, any_fifo),
    };
    let group_id = single(headers, &GROUP_ID)?;
    if let Some(g) = &group_id {
        check_id(&GROUP_ID, g)?;
    }

    let dedup = single(headers, &DEDUPLICATION_ID)?;
    let key = single(headers, &IDEMPOTENCY_KEY)?.map(|k| {
        match k.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
            Some(inner) if !inner.is_empty() => inner.to_owned(),
            _ => k,
        }
    });
    if let Some(d) = &dedup {
        check_id(&DEDUPLICATION_ID, d)?;
    }
    if let Some(k) = &key {
        check_id(&IDEMPOTENCY_KEY, k)?;
    }
    let deduplication_id = match (dedup, key) {
        (Some(d), Some(k)) if d != k => {
            return Err(invalid(
                &DEDUPLICATION_ID,
                "differs from Idempotency-Key; send one of them, or the same value",
            ));
        }
        (d, k) => d.or(k),
    };

    let delay_seconds = match single(headers, &DELAY_SECONDS)? {
        None => None,
        Some(_) if rules.is_some_and(|r| r.fifo) => {
            return Err(invalid(
                &DELAY_SECONDS,
                "FIFO queues take no per-message delay",
            ));
        }
        Some(v) => match v.parse::<i32>() {
            Ok(d) if (0..=MAX_DELAY_SECONDS).contains(&d) => Some(d),
            _ => {
                return Err(invalid(
                    &DELAY_SECONDS,
                    format!("must be an integer from 0 to {MAX_DELAY_SECONDS}"),
                ));
            }
        },
    };

    if let Some(rules) = rules {
        check_fifo(rules, group_id.as_deref(), deduplication_id.as_deref())?;
    }

    let mut attributes = Vec::new();
    for h in &settings.attribute_headers {
        let mut parts = Vec::new();
        for v in headers.get_all(&h.header) {
            let text = v
                .to_str()
                .map_err(|_| invalid(&h.header, "the value must be visible ASCII"))?
                .trim();
            if !text.is_empty() {
                parts.push(text);
            }
        }
        if parts.is_empty() {
            continue;
        }
        let attribute = Attribute::string(h.attribute.clone(), parts.join(", "));
        check_attribute(&attribute).map_err(|_| {
            invalid(
                &h.header,
                "holds characters a message attribute cannot carry",
            )
        })?;
        attributes.push(attribute);
    }

    Ok(Params {
        group_id,
        // Standard queues take no deduplication id: the headers are ignored.
        deduplication_id: deduplication_id.filter(|_| keep_deduplication),
        delay_seconds,
        attributes,
    })
}

/// A FIFO queue's needs of every message: a group id (or
/// `MESSAGE_GROUP_ID`), and a deduplication id unless the queue
/// deduplicates by content.
fn check_fifo(
    rules: &EncodeRules,
    group_id: Option<&str>,
    deduplication_id: Option<&str>,
) -> Result<(), Rejection> {
    if rules.fifo && group_id.is_none() && rules.default_group_id.is_none() {
        return Err(Rejection::new(
            StatusCode::BAD_REQUEST,
            "MissingHeader",
            format!("{GROUP_ID} is required: the target is a FIFO queue"),
        ));
    }
    if rules.fifo && deduplication_id.is_none() && rules.content_based_deduplication == Some(false)
    {
        return Err(Rejection::new(
            StatusCode::BAD_REQUEST,
            "MissingHeader",
            format!(
                "{IDEMPOTENCY_KEY} or {DEDUPLICATION_ID} is required: the target FIFO queue has no content-based deduplication"
            ),
        ));
    }
    Ok(())
}

impl Params {
    /// The deduplication id of message `index` of a request of `count`
    /// messages: the header's value for a single message, the value with
    /// `-<index>` appended for each message of a batch, so that a retry of
    /// the same request with the same key is deduplicated message by message.
    pub fn deduplication_id(&self, batch: bool, index: usize) -> Option<String> {
        self.deduplication_id.as_ref().map(|d| {
            if batch {
                format!("{d}-{index}")
            } else {
                d.clone()
            }
        })
    }

    /// Check that every derived deduplication id fits SQS's limit.
    pub fn check_batch(&self, batch: bool, count: usize) -> Result<(), Rejection> {
        match self.deduplication_id(batch, count.saturating_sub(1)) {
            Some(last) if last.len() > MAX_ID_CHARS => Err(Rejection::bad_request(
                "InvalidHeader",
                format!(
                    "{IDEMPOTENCY_KEY}/{DEDUPLICATION_ID}: with \"-<index>\" appended for each of the {count} messages it would exceed {MAX_ID_CHARS} characters; use a shorter key"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Message `index` with this body.
    pub fn message(&self, body: Body, batch: bool, index: usize) -> Message<usize> {
        let mut m = Message::new(body, index);
        m.attributes = self.attributes.clone();
        m.group_id = self.group_id.clone();
        m.deduplication_id = self.deduplication_id(batch, index);
        m.delay_seconds = self.delay_seconds;
        m
    }
}

#[cfg(test)]
mod tests;
