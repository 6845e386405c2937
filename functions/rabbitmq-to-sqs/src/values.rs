//! Header and property values: AMQP field values (polled deliveries) and
//! the JSON of `aws:rmq` events both become a [`FieldValue`], so that one
//! mapping serves both sources; a value becomes an SQS attribute only when
//! SQS has a form for it. Tables and arrays become JSON text, cut at
//! [`MAX_DEPTH`] whatever a publisher sends.

use amq_protocol::types::{AMQPValue, FieldTable};
use base64::Engine as _;
use serde_json::{Map, Number, Value};
use sqs_forwarder::Attribute;
use sqs_forwarder::message::encode::{is_sqs_number, is_sqs_text};

/// A header or property value, whatever the source.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue {
    /// Text.
    Text(String),
    /// Bytes (AMQP long strings and byte arrays).
    Bytes(Vec<u8>),
    /// A number, as text.
    Number(String),
    /// A boolean.
    Bool(bool),
    /// A table or an array, as JSON text.
    Json(String),
    /// No value.
    Void,
}

pub(crate) fn table_fields(t: &FieldTable) -> Vec<(String, FieldValue)> {
    t.into_iter()
        .map(|(k, v)| (k.as_str().to_owned(), amqp_value(v)))
        .collect()
}

/// An AMQP field value as a [`FieldValue`].
pub fn amqp_value(v: &AMQPValue) -> FieldValue {
    match v {
        AMQPValue::Boolean(b) => FieldValue::Bool(*b),
        AMQPValue::ShortShortInt(n) => FieldValue::Number(n.to_string()),
        AMQPValue::ShortShortUInt(n) => FieldValue::Number(n.to_string()),
        AMQPValue::ShortInt(n) => FieldValue::Number(n.to_string()),
        AMQPValue::ShortUInt(n) => FieldValue::Number(n.to_string()),
        AMQPValue::LongInt(n) => FieldValue::Number(n.to_string()),
        AMQPValue::LongUInt(n) => FieldValue::Number(n.to_string()),
        AMQPValue::LongLongInt(n) => FieldValue::Number(n.to_string()),
        AMQPValue::Timestamp(n) => FieldValue::Number(n.to_string()),
        AMQPValue::Float(f) => float(*f, f.is_finite()),
        AMQPValue::Double(f) => float(*f, f.is_finite()),
        AMQPValue::DecimalValue(d) => decimal_value(d.value, d.scale),
        AMQPValue::ShortString(s) => FieldValue::Text(s.as_str().to_owned()),
        AMQPValue::LongString(s) => FieldValue::Bytes(s.as_bytes().to_vec()),
        AMQPValue::ByteArray(b) => FieldValue::Bytes(b.as_slice().to_vec()),
        AMQPValue::FieldArray(_) | AMQPValue::FieldTable(_) => {
            let mut cut = false;
            let json = amqp_json(v, 0, &mut cut).to_string();
            warn_cut(cut);
            FieldValue::Json(json)
        }
        AMQPValue::Void => FieldValue::Void,
    }
}

/// A float: a number when SQS takes it as one (at most 38 digits, between
/// 10^-128 and 10^126), else text in exponent form (`1e200`, `5e-324`,
/// `inf`, `NaN`), which no header can then cost a message.
/// Written with the float's own shortest digits (an `f32` as an `f32`).
fn float<F: std::fmt::Display + std::fmt::LowerExp>(f: F, finite: bool) -> FieldValue {
    let text = f.to_string();
    if finite && is_sqs_number(&text) {
        FieldValue::Number(text)
    } else if finite {
        FieldValue::Text(format!("{f:e}"))
    } else {
        FieldValue::Text(text)
    }
}

/// A decimal: a number when SQS takes it as one, else text in exponent form
/// (`123e-200`).
fn decimal_value(value: u32, scale: u8) -> FieldValue {
    let text = decimal(value, scale);
    if is_sqs_number(&text) {
        FieldValue::Number(text)
    } else {
        FieldValue::Text(format!("{value}e-{scale}"))
    }
}

fn decimal(value: u32, scale: u8) -> String {
    let digits = value.to_string();
    let scale = scale as usize;
    if scale == 0 {
        return digits;
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{int}.{frac}")
}

/// How deep tables and arrays nest in a header's JSON. Deeper values are
/// replaced by [`TOO_DEEP`]: no real header nests this far (`x-death` is an
/// array of tables of arrays, three levels), and the conversion never
/// recurses further, whatever a publisher sends.
pub const MAX_DEPTH: usize = 16;

/// What stands in for a table or array nested deeper than [`MAX_DEPTH`].
pub const TOO_DEEP: &str = "(nested deeper than 16 levels: left out)";

/// An AMQP value as JSON: text stays text, bytes that are not UTF-8 become
/// `{"base64": "..."}`; tables and arrays deeper than [`MAX_DEPTH`] become
/// [`TOO_DEEP`] (and `cut` is set).
fn amqp_json(v: &AMQPValue, depth: usize, cut: &mut bool) -> Value {
    match v {
        AMQPValue::Boolean(b) => Value::Bool(*b),
        AMQPValue::ShortShortInt(n) => Value::from(*n),
        AMQPValue::ShortShortUInt(n) => Value::from(*n),
        AMQPValue::ShortInt(n) => Value::from(*n),
        AMQPValue::ShortUInt(n) => Value::from(*n),
        AMQPValue::LongInt(n) => Value::from(*n),
        AMQPValue::LongUInt(n) => Value::from(*n),
        AMQPValue::LongLongInt(n) => Value::from(*n),
        AMQPValue::Timestamp(n) => Value::from(*n),
        AMQPValue::Float(f) => Number::from_f64(f64::from(*f)).map_or(Value::Null, Value::Number),
        AMQPValue::Double(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
        AMQPValue::DecimalValue(d) => Value::String(decimal(d.value, d.scale)),
        AMQPValue::ShortString(s) => Value::String(s.as_str().to_owned()),
        AMQPValue::LongString(s) => bytes_json(s.as_bytes()),
        AMQPValue::ByteArray(b) => bytes_json(b.as_slice()),
        AMQPValue::FieldArray(_) | AMQPValue::FieldTable(_) if depth >= MAX_DEPTH => {
            *cut = true;
            Value::String(TOO_DEEP.to_owned())
        }
        AMQPValue::FieldArray(a) => Value::Array(
            a.as_slice()
                .iter()
                .map(|v| amqp_json(v, depth + 1, cut))
                .collect(),
        ),
        AMQPValue::FieldTable(t) => Value::Object(
            t.into_iter()
                .map(|(k, v)| (k.as_str().to_owned(), amqp_json(v, depth + 1, cut)))
                .collect(),
        ),
        AMQPValue::Void => Value::Null,
    }
}

/// A JSON value with tables and arrays deeper than [`MAX_DEPTH`] replaced
/// by [`TOO_DEEP`] (and `cut` set).
fn capped(v: &Value, depth: usize, cut: &mut bool) -> Value {
    match v {
        Value::Array(_) | Value::Object(_) if depth >= MAX_DEPTH => {
            *cut = true;
            Value::String(TOO_DEEP.to_owned())
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| capped(v, depth + 1, cut)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), capped(v, depth + 1, cut)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn warn_cut(cut: bool) {
    if cut {
        tracing::warn!(
            max_depth = MAX_DEPTH,
            "a header nests tables or arrays deeper than {MAX_DEPTH} levels; the deeper part is replaced by {TOO_DEEP:?}"
        );
    }
}

/// A header value of an `aws:rmq` event as a [`FieldValue`]. Amazon MQ
/// writes string headers as `{"bytes": [...]}`.
pub fn json_value(v: &Value) -> FieldValue {
    match v {
        Value::Null => FieldValue::Void,
        Value::Bool(b) => FieldValue::Bool(*b),
        Value::Number(n) => FieldValue::Number(n.to_string()),
        Value::String(s) => FieldValue::Text(s.clone()),
        Value::Object(m) if m.len() == 1 && m.get("bytes").is_some_and(Value::is_array) => {
            let bytes: Option<Vec<u8>> = m
                .get("bytes")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|b| b.as_u64().and_then(|n| u8::try_from(n).ok()))
                        .collect()
                })
                .unwrap_or_default();
            match bytes {
                Some(b) => FieldValue::Bytes(b),
                None => {
                    let mut cut = false;
                    let json = capped(v, 0, &mut cut).to_string();
                    warn_cut(cut);
                    FieldValue::Json(json)
                }
            }
        }
        Value::Object(_) | Value::Array(_) => {
            let mut cut = false;
            let json = capped(v, 0, &mut cut).to_string();
            warn_cut(cut);
            FieldValue::Json(json)
        }
    }
}

/// An attribute for this value, or `None` when SQS has no form for it
/// (empty or void).
pub(crate) fn attribute(name: &str, value: &FieldValue) -> Option<Attribute> {
    // The name is copied once, into the attribute made.
    let text_or_binary = |s: &str| {
        if s.is_empty() {
            None
        } else if is_sqs_text(s) {
            Some(Attribute::string(name.to_owned(), s))
        } else {
            Some(Attribute::binary(name.to_owned(), s.as_bytes().to_vec()))
        }
    };
    match value {
        FieldValue::Text(s) | FieldValue::Json(s) => text_or_binary(s),
        FieldValue::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => text_or_binary(s),
            Err(_) => Some(Attribute::binary(name.to_owned(), b.clone())),
        },
        // A number SQS would refuse as a Number (an `aws:rmq` event's JSON
        // can hold any) goes as its text.
        FieldValue::Number(n) if is_sqs_number(n) => Some(Attribute::number(name.to_owned(), n)),
        FieldValue::Number(n) => text_or_binary(n),
        FieldValue::Bool(b) => Some(Attribute::string(name.to_owned(), b.to_string())),
        FieldValue::Void => None,
    }
}

/// `s`, unless it is empty.
pub(crate) fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

pub(crate) fn header_text(value: &FieldValue) -> Option<String> {
    match value {
        FieldValue::Text(s) | FieldValue::Number(s) | FieldValue::Json(s) => non_empty(s),
        FieldValue::Bytes(b) => std::str::from_utf8(b).ok().and_then(non_empty),
        FieldValue::Bool(b) => Some(b.to_string()),
        FieldValue::Void => None,
    }
}

/// Bytes as JSON: text when they are UTF-8, else `{"base64": "..."}`.
pub(crate) fn bytes_json(b: &[u8]) -> Value {
    match std::str::from_utf8(b) {
        Ok(s) => Value::String(s.to_owned()),
        Err(_) => {
            let mut m = Map::new();
            m.insert(
                "base64".into(),
                Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
            );
            Value::Object(m)
        }
    }
}
