//! From a request body to message bodies.
//!
//! The `Content-Type` decides how a body is read:
//!
//! * `application/json` (and `application/*+json`): the body must be JSON.
//!   An array is a batch: each element, as its JSON text, is one message.
//!   Anything else is one message, the body as it came.
//! * `application/x-ndjson` (also `application/ndjson`, `application/jsonl`):
//!   each non-blank line must be JSON and is one message.
//! * any other accepted type, or none: the body is one message, its bytes as
//!   they came; the shared body-encoding policy decides whether they go as
//!   text or base64 (binary bodies arrive here already decoded from API
//!   Gateway's base64).
//!
//! JSON must be UTF-8 (RFC 8259); a leading byte-order mark is dropped.

use std::cell::Cell;
use std::fmt;

use lambda_http::Body;
use lambda_http::http::{HeaderValue, StatusCode};
use serde::Deserializer as _;
use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde_json::value::RawValue;
use sqs_forwarder::send::codes::MESSAGE_TOO_LARGE;

use crate::reject::Rejection;
use crate::settings::Settings;

/// Subtypes of `application/` read as NDJSON.
pub const NDJSON_SUBTYPES: &[&str] = &["x-ndjson", "ndjson", "jsonl"];

/// How a body is read, from its content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// JSON: an array is a batch, anything else one message.
    Json,
    /// One JSON text per line.
    Ndjson,
    /// One message, the bytes as they came.
    Opaque,
}

/// What the client sent: one message or a batch of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The body is one message.
    Single,
    /// A JSON array: one message per element.
    JsonArray,
    /// NDJSON: one message per non-blank line.
    Ndjson,
}

impl Format {
    /// Whether the body held a batch (an array or lines), even of one.
    pub fn is_batch(self) -> bool {
        self != Format::Single
    }
}

fn unsupported(message: impl Into<String>) -> Rejection {
    Rejection::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "UnsupportedMediaType",
        message,
    )
}

/// How to read a body with this `Content-Type` (none counts as
/// `application/octet-stream`, as RFC 9110 allows), or a 415.
pub fn kind(content_type: Option<&HeaderValue>, settings: &Settings) -> Result<Kind, Rejection> {
    let accepted = || {
        settings
            .content_types
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(value) = content_type else {
        return if settings.accepts("application", "octet-stream") {
            Ok(Kind::Opaque)
        } else {
            Err(unsupported(format!(
                "the request has no Content-Type; accepted: {}",
                accepted()
            )))
        };
    };
    let mime: mime::Mime = value
        .to_str()
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| unsupported("Content-Type is not a valid media type"))?;
    // The essence keeps a structured suffix (`cloudevents+json`).
    let essence = mime.essence_str().to_ascii_lowercase();
    let (type_, subtype) = essence.split_once('/').unwrap_or((essence.as_str(), ""));
    if !settings.accepts(type_, subtype) {
        return Err(unsupported(format!(
            "Content-Type {type_}/{subtype} is not accepted; accepted: {}",
            accepted()
        )));
    }
    let json = type_ == "application" && (subtype == "json" || subtype.ends_with("+json"));
    let ndjson = type_ == "application" && NDJSON_SUBTYPES.contains(&subtype);
    if json || ndjson {
        let charset = mime
            .get_param(mime::CHARSET)
            .map(|c| c.as_str().to_ascii_lowercase());
        if charset.is_some_and(|c| c != "utf-8" && c != "utf8") {
            return Err(unsupported(
                "JSON and NDJSON bodies must be UTF-8 (charset=utf-8 or none)",
            ));
        }
    }
    Ok(if json {
        Kind::Json
    } else if ndjson {
        Kind::Ndjson
    } else {
        Kind::Opaque
    })
}

/// The limits a body is split under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitLimits {
    /// Most messages in the body.
    pub max_messages: usize,
    /// Largest message body, when oversize messages are to be refused at
    /// once (a lower bound of the size SQS counts: attributes and encoding
    /// only add to it).
    pub max_message_bytes: Option<usize>,
}

fn too_many(max: usize) -> Rejection {
    Rejection::too_large(
        "TooManyMessages",
        format!("the body holds more than {max} messages (MAX_MESSAGES); split it"),
    )
}

fn check_size(index: Option<usize>, len: usize, limits: &SplitLimits) -> Result<(), Rejection> {
    match limits.max_message_bytes {
        Some(max) if len > max => Err(Rejection::too_large(
            MESSAGE_TOO_LARGE,
            match index {
                Some(i) => format!(
                    "message {i} is {len} bytes; the queue takes at most {max} bytes per message"
                ),
                None => format!(
                    "the message is {len} bytes; the queue takes at most {max} bytes per message"
                ),
            },
        )),
        _ => Ok(()),
    }
}

fn utf8(body: Body) -> Result<String, Rejection> {
    let text = match body {
        Body::Text(s) => s,
        Body::Binary(b) => String::from_utf8(b)
            .map_err(|_| Rejection::bad_request("InvalidJson", "the body is not UTF-8 text"))?,
        _ => String::new(),
    };
    Ok(match text.strip_prefix('\u{FEFF}') {
        Some(rest) => rest.to_owned(),
        None => text,
    })
}

fn invalid_json(what: &str, e: &serde_json::Error) -> Rejection {
    // serde_json's message names the line and column, never the content.
    Rejection::bad_request("InvalidJson", format!("{what} is not valid JSON: {e}"))
}

/// Collects an array's elements as raw JSON, stopping after `max` of them.
struct Elements<'m> {
    max: usize,
    overflow: &'m Cell<bool>,
}

impl<'de> Visitor<'de> for Elements<'_> {
    type Value = Vec<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(element) = seq.next_element::<&'de RawValue>()? {
            if out.len() == self.max {
                self.overflow.set(true);
                return Err(serde::de::Error::custom("too many elements"));
            }
            out.push(element);
        }
        Ok(out)
    }
}

fn json_array(text: &str, limits: &SplitLimits) -> Result<Vec<sqs_forwarder::Body>, Rejection> {
    let overflow = Cell::new(false);
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = de
        .deserialize_seq(Elements {
            max: limits.max_messages,
            overflow: &overflow,
        })
        .and_then(|v| de.end().map(|()| v));
    let elements = match parsed {
        Ok(v) => v,
        Err(_) if overflow.get() => return Err(too_many(limits.max_messages)),
        Err(e) => return Err(invalid_json("the body", &e)),
    };
    if elements.is_empty() {
        return Err(Rejection::bad_request(
            "NoMessages",
            "the JSON array is empty",
        ));
    }
    let mut out = Vec::with_capacity(elements.len());
    for (i, e) in elements.iter().enumerate() {
        check_size(Some(i), e.get().len(), limits)?;
    }
    for e in elements {
        out.push(sqs_forwarder::Body::Text(e.get().to_owned()));
    }
    Ok(out)
}

fn ndjson(text: &str, limits: &SplitLimits) -> Result<Vec<sqs_forwarder::Body>, Rejection> {
    let mut lines = Vec::new();
    for (n, line) in text.split('\n').enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if lines.len() == limits.max_messages {
            return Err(too_many(limits.max_messages));
        }
        serde_json::from_str::<IgnoredAny>(line)
            .map_err(|e| invalid_json(&format!("line {}", n + 1), &e))?;
        check_size(Some(lines.len()), line.len(), limits)?;
        lines.push(line);
    }
    if lines.is_empty() {
        return Err(Rejection::bad_request(
            "NoMessages",
            "the NDJSON body has no lines",
        ));
    }
    Ok(lines
        .into_iter()
        .map(|l| sqs_forwarder::Body::Text(l.to_owned()))
        .collect())
}

/// Split a non-empty body into message bodies.
pub fn split(
    body: Body,
    kind: Kind,
    limits: &SplitLimits,
) -> Result<(Format, Vec<sqs_forwarder::Body>), Rejection> {
    match kind {
        Kind::Opaque => {
            let body = match body {
                Body::Text(s) => sqs_forwarder::Body::Text(s),
                Body::Binary(b) => sqs_forwarder::Body::Bytes(b),
                _ => sqs_forwarder::Body::Bytes(Vec::new()),
            };
            check_size(None, body.len(), limits)?;
            Ok((Format::Single, vec![body]))
        }
        Kind::Ndjson => {
            let text = utf8(body)?;
            Ok((Format::Ndjson, ndjson(&text, limits)?))
        }
        Kind::Json => {
            let text = utf8(body)?;
            if text.trim_start().starts_with('[') {
                Ok((Format::JsonArray, json_array(&text, limits)?))
            } else {
                serde_json::from_str::<IgnoredAny>(&text)
                    .map_err(|e| invalid_json("the body", &e))?;
                check_size(None, text.len(), limits)?;
                Ok((Format::Single, vec![sqs_forwarder::Body::Text(text)]))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqs_forwarder::Env;

    fn settings(pairs: &[(&str, &str)]) -> Settings {
        Settings::from_env(&Env::from_pairs(pairs)).expect("valid settings")
    }

    fn limits(max_messages: usize, max_message_bytes: Option<usize>) -> SplitLimits {
        SplitLimits {
            max_messages,
            max_message_bytes,
        }
    }

    fn texts(bodies: &[sqs_forwarder::Body]) -> Vec<String> {
        bodies
            .iter()
            .map(|b| match b {
                sqs_forwarder::Body::Text(s) => s.clone(),
                sqs_forwarder::Body::Bytes(b) => format!("bytes:{b:?}"),
            })
            .collect()
    }

    #[test]
    fn content_types_choose_the_reading() {
        let s = settings(&[(
            "CONTENT_TYPES",
            "application/json,application/x-ndjson,application/cloudevents+json,text/*,application/octet-stream",
        )]);
        let k = |v: &str| kind(Some(&HeaderValue::from_str(v).expect("header")), &s);
        assert_eq!(k("application/json"), Ok(Kind::Json));
        assert_eq!(k("Application/JSON; charset=UTF-8"), Ok(Kind::Json));
        assert_eq!(k("application/cloudevents+json"), Ok(Kind::Json));
        assert_eq!(k("application/x-ndjson"), Ok(Kind::Ndjson));
        assert_eq!(k("text/csv; charset=latin1"), Ok(Kind::Opaque));
        assert_eq!(kind(None, &s), Ok(Kind::Opaque));
        for bad in [
            "image/png",
            "application/json; charset=utf-16",
            "not a type",
        ] {
            let r = k(bad).expect_err(bad);
            assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{bad}");
            assert_eq!(r.code, "UnsupportedMediaType");
        }
        let json_only = settings(&[("CONTENT_TYPES", "application/json")]);
        let r = kind(None, &json_only).expect_err("no type");
        assert!(r.message.contains("application/json"), "{}", r.message);
    }

    #[test]
    fn json_array_elements_keep_their_text() {
        let body = Body::from("\u{FEFF} [ {\"a\": 1.000,  \"b\":[1,2]}, \"text\", 42, null ] ");
        let (format, bodies) = split(body, Kind::Json, &limits(10, None)).expect("array");
        assert_eq!(format, Format::JsonArray);
        assert_eq!(
            texts(&bodies),
            vec!["{\"a\": 1.000,  \"b\":[1,2]}", "\"text\"", "42", "null"]
        );
    }

    #[test]
    fn a_json_object_is_one_message_as_it_came() {
        let text = "{\r\n\t\"a\": 1\r\n}";
        let (format, bodies) = split(Body::from(text), Kind::Json, &limits(10, None)).expect("one");
        assert_eq!(format, Format::Single);
        assert_eq!(texts(&bodies), vec![text]);
        // Base64-decoded bodies arrive as bytes; JSON reads them as UTF-8.
        let (_, bodies) = split(
            Body::from(text.as_bytes().to_vec()),
            Kind::Json,
            &limits(10, None),
        )
        .expect("one");
        assert_eq!(texts(&bodies), vec![text]);
    }

    #[test]
    fn ndjson_lines_are_messages_and_blank_lines_are_skipped() {
        let body = Body::from("{\"n\":1}\r\n\n  \n[2]\n\"three\"\n");
        let (format, bodies) = split(body, Kind::Ndjson, &limits(10, None)).expect("lines");
        assert_eq!(format, Format::Ndjson);
        assert_eq!(texts(&bodies), vec!["{\"n\":1}", "[2]", "\"three\""]);
    }

    #[test]
    fn bad_json_is_a_400_naming_where() {
        for (body, kind_, hint) in [
            ("{\"a\":", Kind::Json, "the body"),
            ("[1, 2,]", Kind::Json, "the body"),
            ("[1] [2]", Kind::Json, "the body"),
            ("{\"a\":1}\n{oops}\n", Kind::Ndjson, "line 2"),
        ] {
            let r = split(Body::from(body), kind_, &limits(10, None)).expect_err(body);
            assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(r.code, "InvalidJson");
            assert!(r.message.contains(hint), "{}", r.message);
        }
        let r = split(
            Body::from(vec![0xFFu8, 0xFE]),
            Kind::Json,
            &limits(10, None),
        )
        .expect_err("not utf-8");
        assert_eq!(r.code, "InvalidJson");
        for (body, kind_) in [("[]", Kind::Json), ("\n \n", Kind::Ndjson)] {
            let r = split(Body::from(body), kind_, &limits(10, None)).expect_err(body);
            assert_eq!((r.status, r.code), (StatusCode::BAD_REQUEST, "NoMessages"));
        }
    }

    #[test]
    fn limits_on_count_and_size_are_413() {
        let r = split(Body::from("[1,2,3]"), Kind::Json, &limits(2, None)).expect_err("3 > 2");
        assert_eq!(
            (r.status, r.code),
            (StatusCode::PAYLOAD_TOO_LARGE, "TooManyMessages")
        );
        let (_, ok) = split(Body::from("[1,2]"), Kind::Json, &limits(2, None)).expect("2");
        assert_eq!(ok.len(), 2);
        let r = split(Body::from("1\n2\n3"), Kind::Ndjson, &limits(2, None)).expect_err("3 > 2");
        assert_eq!(r.code, "TooManyMessages");
        let r = split(Body::from("[1,\"long\"]"), Kind::Json, &limits(10, Some(5)))
            .expect_err("too long");
        assert_eq!(
            (r.status, r.code),
            (StatusCode::PAYLOAD_TOO_LARGE, "MessageTooLarge")
        );
        assert!(r.message.contains("message 1 is 6 bytes"), "{}", r.message);
        let r = split(Body::from(vec![0u8; 6]), Kind::Opaque, &limits(10, Some(5)))
            .expect_err("too long");
        assert_eq!(r.code, "MessageTooLarge");
    }

    #[test]
    fn opaque_bodies_pass_through_as_they_came() {
        let (f, bodies) = split(
            Body::from(vec![0xF3u8, 0x89, 0x00]),
            Kind::Opaque,
            &limits(1, None),
        )
        .expect("binary");
        assert_eq!(f, Format::Single);
        assert_eq!(
            bodies,
            vec![sqs_forwarder::Body::Bytes(vec![0xF3, 0x89, 0x00])]
        );
        // Not JSON, so a bracket means nothing.
        let (_, bodies) =
            split(Body::from("[not json"), Kind::Opaque, &limits(1, None)).expect("text");
        assert_eq!(texts(&bodies), vec!["[not json"]);
    }
}
