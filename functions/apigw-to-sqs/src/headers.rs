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
//! What a FIFO queue needs (a group id, a deduplication id, no delay) is
//! checked here against the one queue the request goes to. Under routing
//! rules each message's queue is known only once the rules have read it:
//! those checks are then the target's, per message ([`Targets::Routed`]).

use lambda_http::http::{HeaderMap, HeaderName, StatusCode};
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
mod tests {
    use super::*;
    use lambda_http::http::HeaderValue;
    use sqs_forwarder::Env;

    fn settings(pairs: &[(&str, &str)]) -> Settings {
        Settings::from_env(&Env::from_pairs(pairs)).expect("valid settings")
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).expect("name"),
                HeaderValue::from_str(v).expect("value"),
            );
        }
        h
    }

    fn standard() -> EncodeRules {
        EncodeRules::default()
    }

    fn fifo() -> EncodeRules {
        EncodeRules {
            fifo: true,
            content_based_deduplication: Some(false),
            ..EncodeRules::default()
        }
    }

    #[test]
    fn headers_map_to_sqs_parameters() {
        let s = settings(&[("ATTRIBUTE_HEADERS", "x-tenant:tenant,traceparent")]);
        let h = headers(&[
            ("X-Message-Group-Id", "orders-7"),
            ("Idempotency-Key", "\"8e03978e-40d5\""),
            ("x-tenant", "acme"),
            ("x-tenant", "beta"),
            ("Authorization", "Bearer secret"),
            ("traceparent", "00-abc-01"),
        ]);
        let p = read(&h, &s, &fifo()).expect("valid");
        assert_eq!(p.group_id.as_deref(), Some("orders-7"));
        assert_eq!(p.deduplication_id.as_deref(), Some("8e03978e-40d5"));
        assert_eq!(p.delay_seconds, None);
        assert_eq!(
            p.attributes,
            vec![
                Attribute::string("tenant", "acme, beta"),
                Attribute::string("traceparent", "00-abc-01"),
            ]
        );
        let single = p.message(Body::from("b"), false, 0);
        assert_eq!(single.deduplication_id.as_deref(), Some("8e03978e-40d5"));
        let third = p.message(Body::from("b"), true, 2);
        assert_eq!(third.deduplication_id.as_deref(), Some("8e03978e-40d5-2"));
        assert_eq!(third.position, 2);
        assert_eq!(third.attributes.len(), 2);
    }

    #[test]
    fn standard_queues_take_a_delay_and_ignore_deduplication() {
        let h = headers(&[("X-Delay-Seconds", "900"), ("Idempotency-Key", "k")]);
        let p = read(&h, &settings(&[]), &standard()).expect("valid");
        assert_eq!(p.delay_seconds, Some(900));
        assert_eq!(p.deduplication_id, None);
        assert_eq!(p.message(Body::from("b"), true, 1).deduplication_id, None);
    }

    #[test]
    fn bad_values_are_400s_naming_the_header() {
        let s = settings(&[("ATTRIBUTE_HEADERS", "x-tenant")]);
        for (pairs, rules, header) in [
            (
                vec![("X-Delay-Seconds", "901")],
                standard(),
                "x-delay-seconds",
            ),
            (
                vec![("X-Delay-Seconds", "soon")],
                standard(),
                "x-delay-seconds",
            ),
            (
                vec![
                    ("X-Delay-Seconds", "5"),
                    ("X-Message-Group-Id", "g"),
                    ("Idempotency-Key", "k"),
                ],
                fifo(),
                "x-delay-seconds",
            ),
            (
                vec![("X-Message-Group-Id", "")],
                standard(),
                "x-message-group-id",
            ),
            (
                vec![("X-Message-Group-Id", "a"), ("X-Message-Group-Id", "b")],
                standard(),
                "x-message-group-id",
            ),
            (
                vec![("X-Message-Deduplication-Id", "x".repeat(129).leak())],
                fifo(),
                "x-message-deduplication-id",
            ),
            (
                vec![
                    ("X-Message-Group-Id", "g"),
                    ("X-Message-Deduplication-Id", "a"),
                    ("Idempotency-Key", "b"),
                ],
                fifo(),
                "x-message-deduplication-id",
            ),
        ] {
            let r = read(&headers(&pairs), &s, &rules).expect_err(header);
            assert_eq!(
                (r.status, r.code),
                (StatusCode::BAD_REQUEST, "InvalidHeader"),
                "{pairs:?}"
            );
            assert!(r.message.starts_with(header), "{}", r.message);
        }
        let mut h = HeaderMap::new();
        h.insert(
            "x-tenant",
            HeaderValue::from_bytes(b"caf\xE9").expect("obs-text"),
        );
        let r = read(&h, &s, &standard()).expect_err("not ascii");
        assert!(r.message.starts_with("x-tenant"), "{}", r.message);
        assert!(!r.message.contains("caf"), "values are never echoed");
    }

    #[test]
    fn fifo_needs_a_group_and_a_deduplication_id() {
        let s = settings(&[]);
        let r = read(&headers(&[("Idempotency-Key", "k")]), &s, &fifo()).expect_err("no group");
        assert_eq!(r.code, "MissingHeader");
        assert!(r.message.contains("x-message-group-id"));
        let r = read(&headers(&[("X-Message-Group-Id", "g")]), &s, &fifo()).expect_err("no dedup");
        assert_eq!(r.code, "MissingHeader");
        assert!(r.message.contains("idempotency-key"));
        // A default group id and content-based deduplication make both optional.
        let lenient = EncodeRules {
            default_group_id: Some("all".into()),
            content_based_deduplication: Some(true),
            ..fifo()
        };
        assert!(read(&headers(&[]), &s, &lenient).is_ok());
    }

    #[test]
    fn batch_deduplication_ids_must_fit() {
        let p = Params {
            deduplication_id: Some("k".repeat(125)),
            ..Params::default()
        };
        assert!(p.check_batch(false, 1).is_ok());
        assert!(p.check_batch(true, 10).is_ok()); // "-9": 127
        assert!(p.check_batch(true, 100).is_ok()); // "-99": 128
        let r = p.check_batch(true, 101).expect_err("-100: 129");
        assert_eq!(r.code, "InvalidHeader");
    }
}
